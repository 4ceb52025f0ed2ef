// SPDX-License-Identifier: (GPL-2.0 WITH Linux-syscall-note) OR MIT
/*
 * libdfkv local transport: the /dev/dfkv fast path (SPEC.md section 4).
 * Each local peer has one file bound (DFKV_IOC_BIND) to the node of the
 * same name in the caller's network namespace; PUT/GET/EXIST/REMOVE go in
 * DFKV_IOC_BATCH ioctls (one plain ioctl for a single operation), keyed
 * operations in DFKV_IOC_TOUCH/PROBE/LEASE/RELEASE.  With a tenant secret
 * the file is authorized for the client's tenant (DFKV_IOC_AUTH) right
 * after the bind, before any operation.  Values move in one
 * copy between the caller's buffer (or, scatter-gather, its iovec array:
 * DFKV_OP_F_IOV) and the node's pages.
 */
#include <errno.h>
#include <fcntl.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "transport.h"

static_assert(sizeof(struct dfkv_ioc_op) == DFKV_IOC_OP_SIZE_VER1, "ABI");
static_assert(sizeof(struct dfkv_ioc_keys) == DFKV_IOC_KEYS_SIZE_VER0, "ABI");
static_assert(sizeof(struct dfkv_ioc_batch) == DFKV_IOC_BATCH_SIZE_VER0, "ABI");
static_assert(sizeof(struct dfkv_ioc_bind) == DFKV_IOC_BIND_SIZE_VER0, "ABI");
static_assert(sizeof(struct dfkv_ioc_auth) == DFKV_IOC_AUTH_SIZE_VER0, "ABI");

/* What the transport keeps per peer: the bound file, stable across a
 * rebind under the rwlock. */
struct lpeer {
	pthread_rwlock_t lock;
	int fd;
};

static struct lpeer *lpeer(const struct dfkv_peer *p)
{
	return p->tp;
}

/* The client's state: the path of /dev/dfkv. */
static const char *local_dev(const struct dfkv_client *c)
{
	return c->tstate[DFKV_T_LOCAL];
}

static int local_client_init(struct dfkv_client *c)
{
	c->tstate[DFKV_T_LOCAL] = strdup(c->opt.local_dev ? c->opt.local_dev :
					 "/dev/dfkv");
	return c->tstate[DFKV_T_LOCAL] ? 0 : DFKV_E_NOMEM;
}

static void local_client_fini(struct dfkv_client *c)
{
	free(c->tstate[DFKV_T_LOCAL]);
	c->tstate[DFKV_T_LOCAL] = NULL;
}

/*
 * Authorize a bound file for the client's tenant (SPEC.md 9).  A refusal
 * (EACCES), or a module without tenants (ENOTTY), leaves it unauthorized:
 * a node that requires auth then answers its operations FORBIDDEN, one
 * that does not serves them.
 */
static void auth(const struct dfkv_client *c, int fd)
{
	struct dfkv_ioc_auth a = { .size = sizeof(a),
				   .tenant_hash = c->tenant };

	memcpy(a.secret, c->secret, sizeof(a.secret));
	ioctl(fd, DFKV_IOC_AUTH, &a);	/* a refusal: see above */
	explicit_bzero(&a, sizeof(a));
}

/* Open dev and bind it to node; the fd, or a negative dfkv_error. */
static int open_bound(const struct dfkv_client *c, const char *node)
{
	struct dfkv_ioc_bind b = { .size = sizeof(b) };
	int fd = open(local_dev(c), O_RDWR | O_CLOEXEC);

	if (fd < 0)
		return DFKV_E_NODEV;
	strncpy(b.node, node, sizeof(b.node) - 1);
	if (ioctl(fd, DFKV_IOC_BIND, &b)) {
		close(fd);
		return DFKV_E_NODEV;
	}
	if (c->has_secret)
		auth(c, fd);
	return fd;
}

static int local_peer_init(struct dfkv_client *c, struct dfkv_peer *p)
{
	struct lpeer *lp = lpeer(p);

	pthread_rwlock_init(&lp->lock, NULL);
	lp->fd = open_bound(c, p->name);
	return lp->fd < 0 ? lp->fd : 0;
}

static void local_peer_fini(struct dfkv_client *c, struct dfkv_peer *p)
{
	struct lpeer *lp = lpeer(p);

	(void)c;
	if (lp->fd >= 0)
		close(lp->fd);
	lp->fd = -1;
	pthread_rwlock_destroy(&lp->lock);
}

/* After a cooldown, a peer whose node went away is bound afresh. */
static void rebind(struct dfkv_client *c, struct dfkv_peer *p, int stale_fd)
{
	struct lpeer *lp = lpeer(p);
	int fd;

	pthread_rwlock_wrlock(&lp->lock);
	if (lp->fd == stale_fd) {
		fd = open_bound(c, p->name);
		if (fd >= 0) {
			close(lp->fd);
			lp->fd = fd;
		}
	}
	pthread_rwlock_unlock(&lp->lock);
}

/* An ioctl's errno as the request's status. */
static int errno_status(int err)
{
	switch (err) {
	case ENODEV:
	case ENOTCONN:
		return DFKV_E_UNAVAILABLE;
	case EINVAL:
	case EFAULT:
	case E2BIG:
		return DFKV_E_INVAL;
	case ENOMEM:
		return DFKV_E_NOMEM;
	default:
		return DFKV_E_SYS;
	}
}

static void op_fill(struct dfkv_ioc_op *o, const struct dfkv_req *r)
{
	memset(o, 0, sizeof(*o));
	o->size = sizeof(*o);
	o->op = r->op;
	o->key = r->key;
	o->offset = r->offset;
	if (r->op == DFKV_OP_PUT) {
		o->buf = (uint64_t)(uintptr_t)r->val;
		o->length = r->val_len;
	} else if (r->op == DFKV_OP_GET) {
		o->buf = (uint64_t)(uintptr_t)r->buf;
		o->length = r->length;
		o->cap = r->cap;
	}
	/* scatter-gather: the kernel walks the iovecs; cap is their total */
	if (r->iov) {
		o->flags = DFKV_OP_F_IOV;
		o->buf = (uint64_t)(uintptr_t)r->iov;
		o->iovcnt = r->iovcnt;
		o->cap = 0;
	}
}

static void op_done(struct dfkv_req *r, const struct dfkv_ioc_op *o)
{
	r->status = (int)o->status;
	r->stored_len = o->stored_len;
	r->data_len = o->data_len;
}

static const unsigned long op_ioctl[] = {
	[DFKV_OP_PUT] = DFKV_IOC_PUT,
	[DFKV_OP_GET] = DFKV_IOC_GET,
	[DFKV_OP_EXIST] = DFKV_IOC_EXIST,
	[DFKV_OP_REMOVE] = DFKV_IOC_REMOVE,
	[DFKV_OP_TOUCH] = DFKV_IOC_TOUCH,
	[DFKV_OP_PROBE] = DFKV_IOC_PROBE,
	[DFKV_OP_LEASE] = DFKV_IOC_LEASE,
	[DFKV_OP_RELEASE] = DFKV_IOC_RELEASE,
};

static void keys_op(int fd, struct dfkv_req *r)
{
	struct dfkv_ioc_keys k = {
		.size = sizeof(k),
		.count = r->op == DFKV_OP_RELEASE ? 0 : r->nkeys,
		.keys = (uint64_t)(uintptr_t)r->keys,
		.results = (uint64_t)(uintptr_t)r->results,
		.ttl_ms = r->length,
		.lease_id = r->lease_id,
	};

	if (r->op == DFKV_OP_TOUCH && r->offset)
		k.flags = DFKV_TOUCH_REVERSE;

	if (r->op == DFKV_OP_RELEASE)
		k.keys = 0;
	if (ioctl(fd, op_ioctl[r->op], &k)) {
		r->status = errno_status(errno);
		return;
	}
	r->status = (int)k.status;
	r->nr_hits = k.nr_hits;
	if (r->op == DFKV_OP_LEASE)
		r->lease_id = k.lease_id;
}

/* Data operations of one peer, reqs[i] for i in idx[0..n), in batches. */
static void data_ops(int fd, struct dfkv_req **reqs, const size_t *idx,
		     size_t n, struct dfkv_ioc_op *ops)
{
	size_t done = 0;

	if (n == 1) {
		struct dfkv_req *r = reqs[idx[0]];

		op_fill(&ops[0], r);
		if (ioctl(fd, op_ioctl[r->op], &ops[0]))
			r->status = errno_status(errno);
		else
			op_done(r, &ops[0]);
		return;
	}
	while (done < n) {
		size_t cnt = n - done < DFKV_BATCH_MAX ? n - done : DFKV_BATCH_MAX;
		struct dfkv_ioc_batch b = {
			.size = sizeof(b), .count = (uint32_t)cnt,
			.op_size = sizeof(struct dfkv_ioc_op),
			.ops = (uint64_t)(uintptr_t)ops,
		};
		int rc;

		for (size_t i = 0; i < cnt; i++)
			op_fill(&ops[i], reqs[idx[done + i]]);
		rc = ioctl(fd, DFKV_IOC_BATCH, &b);
		for (size_t i = 0; i < b.nr_done && i < cnt; i++)
			op_done(reqs[idx[done + i]], &ops[i]);
		if (!rc) {
			done += cnt;
			continue;
		}
		/* entry nr_done failed as a whole; the rest run next round */
		if (b.nr_done < cnt)
			reqs[idx[done + b.nr_done]]->status = errno_status(errno);
		if (errno_status(errno) == DFKV_E_UNAVAILABLE) {
			for (size_t i = done + b.nr_done; i < n; i++)
				reqs[idx[i]]->status = DFKV_E_UNAVAILABLE;
			return;
		}
		done += b.nr_done + 1;
	}
}

/* ioctls run to completion: no deadline of the transport's own */
static void local_exec(struct dfkv_client *c, struct dfkv_req **reqs, size_t n,
		       uint64_t deadline_ms)
{
	struct dfkv_ioc_op *ops = calloc(n < DFKV_BATCH_MAX ? n : DFKV_BATCH_MAX,
					 sizeof(*ops));
	size_t *idx = calloc(n, sizeof(*idx));

	(void)deadline_ms;
	if (!ops || !idx) {
		for (size_t i = 0; i < n; i++)
			reqs[i]->status = DFKV_E_NOMEM;
		goto out;
	}
	for (size_t p = 0; p < c->npeers; p++) {
		struct dfkv_peer *peer = &c->peers[p];
		size_t cnt = 0;
		bool failed = false;
		int fd;

		for (size_t i = 0; i < n; i++)
			if (reqs[i]->peer == peer)
				idx[cnt++] = i;
		if (!cnt)
			continue;
		pthread_rwlock_rdlock(&lpeer(peer)->lock);
		fd = lpeer(peer)->fd;
		/* data ops batched, keyed ops one by one, in request order */
		{
			size_t nd = 0;

			for (size_t i = 0; i < cnt; i++) {
				struct dfkv_req *r = reqs[idx[i]];

				if (r->op <= DFKV_OP_REMOVE)
					idx[nd++] = idx[i];
				else
					keys_op(fd, r);
			}
			if (nd)
				data_ops(fd, reqs, idx, nd, ops);
			for (size_t i = 0; i < n; i++)
				if (reqs[i]->peer == peer &&
				    reqs[i]->status == DFKV_E_UNAVAILABLE)
					failed = true;
		}
		pthread_rwlock_unlock(&lpeer(peer)->lock);
		if (failed) {
			dfkv_peer_failed(c, peer, DFKV_E_UNAVAILABLE);
			rebind(c, peer, fd);
		}
	}
out:
	free(ops);
	free(idx);
	atomic_fetch_add(&c->local_reqs, n);
}

const struct dfkv_transport_ops dfkv_local_transport = {
	.name = "local",
	.id = DFKV_T_LOCAL,
	.client_init = local_client_init,
	.client_fini = local_client_fini,
	.peer_size = sizeof(struct lpeer),
	.init = local_peer_init,
	.fini = local_peer_fini,
	.exec = local_exec,
	/* no connection holds a lease: the bound file does */
};
