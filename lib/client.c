// SPDX-License-Identifier: (GPL-2.0 WITH Linux-syscall-note) OR MIT
/*
 * libdfkv client: dfkv_open_v2/dfkv_close, the synchronous operations,
 * routing of keys to members by the Ketama ring, the choice of transport
 * per member (/dev/dfkv, TCP or RDMA: the ops tables of local.c, tcp.c and
 * rdma.c), what a failed member means for a request (health.c skips it
 * for a cooldown: reads become misses, writes are dropped and counted),
 * lease handles, and the client's counters.  The transports only execute
 * routed requests; async.c runs the same requests from its own thread.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <time.h>

#include "names_gen.h"
#include "discovery.h"
#include "ops.h"
#include "transport.h"
#include "rdma.h"
#include "token.h"

static_assert(sizeof(struct dfkv_client_options_v2) ==
	      DFKV_CLIENT_OPTIONS_V2_SIZE_VER5, "options layout");

#define DEF_BATCH_CONCURRENCY	16
#define DEF_CONNS_PER_PEER	2
#define DEF_CONNECT_TIMEOUT_MS	1000
#define DEF_IO_TIMEOUT_MS	10000
#define DEF_COOLDOWN_MS		2000
#define MAX_BATCH_CONCURRENCY	1024
#define MAX_CONNS_PER_PEER	64

struct lease_part {
	struct dfkv_peer *peer;
	uint64_t id;
	struct dfkv_conn *conn;		/* TCP: the connection holding it */
};

struct dfkv_lease {
	struct dfkv_lease *next, *prev;	/* the client's live leases */
	size_t n;
	struct lease_part part[];
};

/* Live leases, so dfkv_close can drop what the caller did not release. */
struct lease_list {
	pthread_mutex_t lock;
	struct dfkv_lease head;
};

struct client_priv {
	struct dfkv_client c;
	struct lease_list leases;
};

/* ------------------------------------------------------- open / close */

static void peers_fini(struct dfkv_client *c)
{
	for (size_t i = 0; i < c->npeers; i++) {
		struct dfkv_peer *p = &c->peers[i];

		if (p->t)
			p->t->fini(c, p);
		pthread_mutex_destroy(&p->pool_lock);
		pthread_rwlock_destroy(&p->local_lock);
	}
}

static struct lease_list *leases_of(struct dfkv_client *c)
{
	return &((struct client_priv *)c)->leases;
}

/* Close the connection a lease held (TCP or RDMA). */
static void lease_conn_put(struct dfkv_client *c, struct dfkv_conn *conn)
{
	if (conn)
		conn->t->conn_put(c, conn, false);
}

DFKV_API void dfkv_close(struct dfkv_client *c)
{
	struct lease_list *ll;

	if (!c)
		return;
	dfkv_async_close(c);		/* every batch completed and freed */
	dfkv_disc_close(c);		/* no more ring changes */
	ll = leases_of(c);
	while (ll->head.next != &ll->head) {
		struct dfkv_lease *l = ll->head.next;

		l->prev->next = l->next;
		l->next->prev = l->prev;
		for (size_t i = 0; i < l->n; i++)
			lease_conn_put(c, l->part[i].conn);
		free(l);
	}
	pthread_mutex_destroy(&ll->lock);
	peers_fini(c);
	dfkv_rdma_client_fini(c);
	dfkv_ring_free(c->ring);
	free(c->peers);
	free(c->ns);
	free(c->local_dev);
	explicit_bzero(c->secret, sizeof(c->secret));
	free(c);
}

static int options_load(struct dfkv_client_options_v2 *o,
			const struct dfkv_client_options_v2 *user)
{
	int err = dfkv_copy_struct(o, sizeof(*o), user,
				   DFKV_CLIENT_OPTIONS_V2_SIZE_VER0);

	if (err)
		return err;
	if (o->transport >= __DFKV_TRANSPORT_MAX || o->__reserved ||
	    !dfkv_span_ok(o->ns, o->ns_len) || !o->members == !o->mds_endpoints ||
	    o->__reserved2 || o->__reserved3 ||
	    (!o->mds_endpoints && (o->group || o->client_id ||
				   o->mds_token_file)))
		return DFKV_E_INVAL;
	if (o->batch_concurrency > MAX_BATCH_CONCURRENCY ||
	    o->conns_per_peer > MAX_CONNS_PER_PEER || o->rdma_port > 65535 ||
	    o->rdma_expose >= __DFKV_RDMA_EXPOSE_MAX || o->__reserved4 ||
	    (o->tenant_secret && o->tenant_secret_file))
		return DFKV_E_INVAL;
#define DEF(f, v) do { if (!o->f) o->f = (v); } while (0)
	DEF(batch_concurrency, DEF_BATCH_CONCURRENCY);
	DEF(conns_per_peer, DEF_CONNS_PER_PEER);
	DEF(connect_timeout_ms, DEF_CONNECT_TIMEOUT_MS);
	DEF(io_timeout_ms, DEF_IO_TIMEOUT_MS);
	DEF(cooldown_ms, DEF_COOLDOWN_MS);
#undef DEF
	return 0;
}

/* The tenant's secret from the options, which are let go of. */
static int secret_load(struct dfkv_client *c)
{
	char why[512];
	int err = 0;

	if (c->opt.tenant_secret)
		memcpy(c->secret, c->opt.tenant_secret, sizeof(c->secret));
	else if (c->opt.tenant_secret_file)
		err = dfkv_secret_read(c->opt.tenant_secret_file, c->secret,
				       why, sizeof(why));
	c->has_secret = (c->opt.tenant_secret || c->opt.tenant_secret_file) &&
			!err;
	c->opt.tenant_secret = NULL;
	c->opt.tenant_secret_file = NULL;
	if (err) {
		errno = -err;
		return DFKV_E_AUTH;
	}
	return 0;
}

/* Whether remote members go over RDMA: asked for, and a device is up. */
static bool use_rdma(struct dfkv_client *c)
{
	return c->rdma && (c->opt.transport == DFKV_TRANSPORT_RDMA ||
			   (c->opt.transport == DFKV_TRANSPORT_AUTO &&
			    c->opt.rdma_port));
}

/* A peer slot's locks and state, before any transport sets it up. */
static void peer_slot_init(struct dfkv_peer *p)
{
	p->local_fd = -1;
	pthread_mutex_init(&p->pool_lock, NULL);
	pthread_rwlock_init(&p->local_lock, NULL);
	atomic_init(&p->down_until_ms, 0);
	atomic_init(&p->max_value, 0);
	atomic_init(&p->auth_failures, 0);
}

/* Set up p over transport t (its fini runs at close even on failure). */
static int peer_use(struct dfkv_client *c, struct dfkv_peer *p,
		    const struct dfkv_transport_ops *t)
{
	p->t = t;
	return t->init(c, p);
}

/*
 * The transport of one peer: /dev/dfkv when asked for, or with AUTO
 * when the node is in this network namespace; else RDMA when it is on,
 * else TCP.
 */
static int peer_choose(struct dfkv_client *c, struct dfkv_peer *p)
{
	if (c->opt.transport == DFKV_TRANSPORT_LOCAL)
		return peer_use(c, p, &dfkv_local_transport);
	if (c->opt.transport == DFKV_TRANSPORT_AUTO &&
	    !peer_use(c, p, &dfkv_local_transport))
		return 0;
	return peer_use(c, p, use_rdma(c) ? &dfkv_rdma_transport :
			&dfkv_tcp_transport);
}

static int peers_init(struct dfkv_client *c)
{
	size_t i;
	int err = 0;

	for (i = 0; i < c->npeers; i++)
		peer_slot_init(&c->peers[i]);
	for (i = 0; i < c->npeers && !err; i++)
		err = peer_choose(c, &c->peers[i]);
	return err;
}

/* One peer slot added by discovery: the per-peer part of peers_init.  A
 * member that cannot be reached by the chosen transport stays unusable. */
int dfkv_peer_setup(struct dfkv_client *c, struct dfkv_peer *p)
{
	int err;

	peer_slot_init(p);
	err = peer_choose(c, p);
	if (err)
		dfkv_peer_disable(p);
	return err;
}

DFKV_API int dfkv_open_v2(const struct dfkv_client_options_v2 *opts,
			  struct dfkv_client **out)
{
	struct client_priv *cp;
	struct dfkv_client *c;
	struct dfkv_ring_member *rm = NULL;
	int err;

	if (!out)
		return DFKV_E_INVAL;
	*out = NULL;
	cp = calloc(1, sizeof(*cp));
	if (!cp)
		return DFKV_E_NOMEM;
	c = &cp->c;
	pthread_mutex_init(&cp->leases.lock, NULL);
	cp->leases.head.next = cp->leases.head.prev = &cp->leases.head;
	err = options_load(&c->opt, opts);
	if (!err)
		err = dfkv_async_open(c);
	if (err)
		goto fail;
	c->ns_len = c->opt.ns_len;
	c->ns = malloc((size_t)c->ns_len);
	c->local_dev = strdup(c->opt.local_dev ? c->opt.local_dev : "/dev/dfkv");
	if (!c->ns || !c->local_dev) {
		err = DFKV_E_NOMEM;
		goto fail;
	}
	memcpy(c->ns, c->opt.ns, (size_t)c->ns_len);
	c->opt.ns = NULL;		/* never look at the caller's copies */
	c->opt.members = NULL;
	c->opt.local_dev = NULL;
	err = dfkv_tenant_hash(c->ns, c->ns_len, &c->tenant);
	if (!err)
		err = secret_load(c);
	if (err)
		goto fail;
	if (c->opt.transport == DFKV_TRANSPORT_RDMA ||
	    (c->opt.transport == DFKV_TRANSPORT_AUTO && c->opt.rdma_port)) {
		err = dfkv_rdma_client_init(c);
		/* auto goes on over TCP without a device */
		if (err && (c->opt.transport == DFKV_TRANSPORT_RDMA ||
			    err != DFKV_E_NODEV))
			goto fail;
		if (err)
			dfkv_rdma_client_fini(c);
		err = 0;
	}
	c->opt.rdma_devices = NULL;
	if (c->opt.mds_endpoints) {
		err = dfkv_disc_open(c);	/* copies the strings */
		c->opt.mds_endpoints = c->opt.group = c->opt.client_id = NULL;
		c->opt.mds_token_file = NULL;
		if (err)
			goto fail;
		*out = c;
		return 0;
	}
	{
		size_t np;

		err = dfkv_members_parse(opts->members, &c->peers, &np);
		c->npeers = np;
	}
	if (err)
		goto fail;
	rm = calloc(c->npeers, sizeof(*rm));
	if (!rm) {
		err = DFKV_E_NOMEM;
		goto fail;
	}
	for (size_t i = 0; i < c->npeers; i++)
		rm[i] = (struct dfkv_ring_member){ c->peers[i].name,
						   c->peers[i].weight };
	err = dfkv_ring_build(rm, c->npeers, &c->ring);
	free(rm);
	if (err)
		goto fail;
	err = peers_init(c);
	if (err)
		goto fail;
	*out = c;
	return 0;
fail:
	{
		int e = errno;	/* what DFKV_E_SYS and DFKV_E_AUTH tell */

		dfkv_close(c);
		errno = e;
	}
	return err;
}

/* ------------------------------------------------------------ routing */

int dfkv_route(struct dfkv_client *c, const void *key, uint64_t key_len,
	       struct dfkv_key *bk, struct dfkv_peer **peer)
{
	size_t m;
	int err = dfkv_object_id(c->ns, c->ns_len, key, key_len, bk->id);

	if (err)
		return err;
	bk->tenant = c->tenant;
	if (c->disc)
		return dfkv_disc_route(c, bk->id, peer);
	err = dfkv_ring_route(c->ring, bk->id, DFKV_PROBE_NODE, &m);
	if (err)
		return err;
	*peer = &c->peers[m];
	return 0;
}

DFKV_API int dfkv_locate(struct dfkv_client *c, const void *key,
			 uint64_t key_len, const char **member,
			 struct dfkv_key *block)
{
	struct dfkv_key bk = { 0 };
	struct dfkv_peer *p;
	int err;

	if (member)
		*member = NULL;
	if (block)
		memset(block, 0, sizeof(*block));
	if (!c || !member)
		return DFKV_E_INVAL;
	err = dfkv_route(c, key, key_len, &bk, &p);
	if (err)
		return err;
	*member = p->name;
	if (block)
		*block = bk;
	return 0;
}

/* ---------------------------------------------------------- execution */

static bool is_transport_error(int s)
{
	return s == DFKV_E_UNAVAILABLE || s == DFKV_E_TIMEOUT ||
	       s == DFKV_E_PROTO;
}

/* A PUT longer than its node's max_value_bytes, once the node told it. */
static bool too_large(const struct dfkv_req *r)
{
	uint64_t max = atomic_load(&r->peer->max_value);

	return r->op == DFKV_OP_PUT && max && r->val_len > max;
}

/* Requests of one transport, for dfkv_execute. */
struct tgroup {
	const struct dfkv_transport_ops *t;
	struct dfkv_req **reqs;
	size_t n;
};

#define TRANSPORTS_MAX	3	/* local, TCP, RDMA */

void dfkv_execute(struct dfkv_client *c, struct dfkv_req **reqs, size_t n)
{
	struct tgroup g[TRANSPORTS_MAX] = { 0 };
	size_t ng = 0;

	for (size_t i = 0; i < n; i++) {
		struct dfkv_req *r = reqs[i];
		size_t k = 0;

		r->status = DFKV_E_NOT_RUN;
		if (!dfkv_peer_usable(c, r->peer) || !r->peer->t) {
			r->status = DFKV_E_UNAVAILABLE;
			atomic_fetch_add(&c->peer_skips, 1);
			continue;
		}
		if (too_large(r)) {
			r->status = DFKV_STATUS_TOO_LARGE;
			continue;
		}
		while (k < ng && g[k].t != r->peer->t)
			k++;
		if (k == ng) {
			g[ng].t = r->peer->t;
			g[ng].reqs = calloc(n - i, sizeof(*g[ng].reqs));
			if (!g[ng].reqs) {
				r->status = DFKV_E_NOMEM;
				continue;
			}
			ng++;
		}
		g[k].reqs[g[k].n++] = r;
	}
	for (size_t k = 0; k < ng; k++)
		g[k].t->exec(c, g[k].reqs, g[k].n,
			     dfkv_now_ms() + c->opt.io_timeout_ms);
	for (size_t i = 0; i < n; i++) {
		struct dfkv_req *r = reqs[i];
		int s = r->status;

		if (is_transport_error(s)) {
			switch (r->op) {
			case DFKV_OP_GET:
			case DFKV_OP_EXIST:
			case DFKV_OP_PROBE:
			case DFKV_OP_LEASE:
				r->status = DFKV_STATUS_NOT_FOUND;
				r->stored_len = r->data_len = 0;
				r->nr_hits = 0;
				r->lease_id = 0;
				atomic_fetch_add(&c->degraded_reads, 1);
				break;
			default:
				r->status = DFKV_E_UNAVAILABLE;
				atomic_fetch_add(&c->dropped_writes, 1);
			}
		}
		if (r->op < __DFKV_OP_MAX && r->status < __DFKV_STATUS_MAX &&
		    r->status > __DFKV_E_MIN)
			atomic_fetch_add(&c->ops[r->op][r->status - __DFKV_E_MIN], 1);
	}
	for (size_t k = 0; k < ng; k++)
		free(g[k].reqs);
}

/* A single data operation on key. */
static int run_one(struct dfkv_client *c, struct dfkv_req *r,
		   const void *key, uint64_t key_len)
{
	struct dfkv_req *rp = r;
	int err;

	if (!c)
		return DFKV_E_INVAL;
	err = dfkv_route(c, key, key_len, &r->key, &r->peer);
	if (err)
		return err;
	dfkv_execute(c, &rp, 1);
	return r->status;
}

/* ------------------------------------------------------------- scalar */

DFKV_API int dfkv_put(struct dfkv_client *c, const void *key, uint64_t key_len,
		      const void *val, uint64_t val_len)
{
	struct dfkv_req r = { .op = DFKV_OP_PUT, .val = val, .val_len = val_len };

	if (!dfkv_span_ok(val, val_len))
		return val_len ? DFKV_E_INVAL : DFKV_STATUS_INVALID;
	return run_one(c, &r, key, key_len);
}

DFKV_API int dfkv_get_range(struct dfkv_client *c, const void *key,
			    uint64_t key_len, uint64_t offset, uint64_t length,
			    void *buf, uint64_t cap, uint64_t *len,
			    uint64_t *stored_len)
{
	struct dfkv_req r = { .op = DFKV_OP_GET, .offset = offset,
			      .length = length, .buf = buf, .cap = cap };
	int s;

	if (len)
		*len = 0;
	if (stored_len)
		*stored_len = 0;
	if (!len || !dfkv_span_ok(buf, cap))
		return DFKV_E_INVAL;
	s = run_one(c, &r, key, key_len);
	if (stored_len)
		*stored_len = r.stored_len;
	if (s == DFKV_STATUS_OK)
		*len = r.data_len;
	return s;
}

DFKV_API int dfkv_get(struct dfkv_client *c, const void *key, uint64_t key_len,
		      void *buf, uint64_t cap, uint64_t *len)
{
	uint64_t stored = 0;
	int s = dfkv_get_range(c, key, key_len, 0, 0, buf, cap, len, &stored);

	if (s == DFKV_STATUS_TOO_LARGE)
		*len = stored;
	return s;
}

DFKV_API int dfkv_exist(struct dfkv_client *c, const void *key,
			uint64_t key_len, uint64_t *stored_len)
{
	struct dfkv_req r = { .op = DFKV_OP_EXIST };
	int s;

	if (stored_len)
		*stored_len = 0;
	s = run_one(c, &r, key, key_len);
	if (s == DFKV_STATUS_OK && stored_len)
		*stored_len = r.stored_len;
	return s;
}

DFKV_API int dfkv_remove(struct dfkv_client *c, const void *key,
			 uint64_t key_len)
{
	struct dfkv_req r = { .op = DFKV_OP_REMOVE };

	return run_one(c, &r, key, key_len);
}

/* ----------------------------------------------------- scatter-gather */

/*
 * Check a caller's dfkv_iov array and load its non-empty entries into
 * r->iov (allocated; the caller frees it after execute), their total
 * into *total.  A total of 0 is left for the caller to judge.
 */
static int iov_load(struct dfkv_req *r, const struct dfkv_iov *iov, size_t n,
		    uint64_t *total)
{
	uint64_t sum = 0;
	size_t k = 0;

	*total = 0;
	r->iov = NULL;
	r->iovcnt = 0;
	if (!iov || !n || n > DFKV_IOV_MAX)
		return DFKV_E_INVAL;
	for (size_t i = 0; i < n; i++) {
		if (!iov[i].len)
			continue;
		if (!dfkv_span_ok(iov[i].base, iov[i].len) ||
		    iov[i].len > (uint64_t)(SIZE_MAX / 2) - sum)
			return DFKV_E_INVAL;
		sum += iov[i].len;
		k++;
	}
	if (!k)
		return 0;
	r->iov = malloc(k * sizeof(*r->iov));
	if (!r->iov)
		return DFKV_E_NOMEM;
	for (size_t i = 0, j = 0; i < n; i++)
		if (iov[i].len)
			r->iov[j++] = (struct iovec){ iov[i].base,
						      (size_t)iov[i].len };
	r->iovcnt = (uint32_t)k;
	*total = sum;
	return 0;
}

/* A scatter-gather PUT request: 0 or the slot's failure. */
int dfkv_put_sg_load(struct dfkv_req *r, const struct dfkv_iov *iov,
		     size_t n)
{
	int s = iov_load(r, iov, n, &r->val_len);

	return s ? s : r->val_len ? 0 : DFKV_STATUS_INVALID;
}

/* A scatter-gather GET request. */
int dfkv_get_sg_load(struct dfkv_req *r, const struct dfkv_iov *iov,
		     size_t n)
{
	int s = iov_load(r, iov, n, &r->cap);

	return s ? s : r->cap ? 0 : DFKV_E_INVAL;
}

DFKV_API int dfkv_put_sg(struct dfkv_client *c, const void *key,
			 uint64_t key_len, const struct dfkv_iov *iov, size_t n)
{
	struct dfkv_req r = { .op = DFKV_OP_PUT };
	int s = dfkv_put_sg_load(&r, iov, n);

	if (!s)
		s = run_one(c, &r, key, key_len);
	free(r.iov);
	return s;
}

DFKV_API int dfkv_get_sg(struct dfkv_client *c, const void *key,
			 uint64_t key_len, uint64_t offset, uint64_t length,
			 const struct dfkv_iov *iov, size_t n,
			 uint64_t *data_len, uint64_t *stored_len)
{
	struct dfkv_req r = { .op = DFKV_OP_GET, .offset = offset,
			      .length = length };
	int s;

	if (data_len)
		*data_len = 0;
	if (stored_len)
		*stored_len = 0;
	if (!data_len)
		return DFKV_E_INVAL;
	s = dfkv_get_sg_load(&r, iov, n);
	if (!s) {
		s = run_one(c, &r, key, key_len);
		if (stored_len)
			*stored_len = r.stored_len;
		if (s == DFKV_STATUS_OK)
			*data_len = r.data_len;
	}
	free(r.iov);
	return s;
}

/* ------------------------------------------------------------ batches */

/* The parts every batch shares: requests routed, bad keys marked. */
static int batch_prepare(struct dfkv_client *c, size_t n,
			 const void *const *keys, const uint64_t *key_lens,
			 int *statuses, uint8_t op, struct dfkv_req **rv,
			 struct dfkv_req ***rp)
{
	struct dfkv_req *r;
	struct dfkv_req **p;

	*rv = NULL;
	*rp = NULL;
	if (statuses && n && n <= DFKV_CLIENT_BATCH_MAX)
		for (size_t i = 0; i < n; i++)
			statuses[i] = DFKV_E_NOT_RUN;
	if (!c || !keys || !key_lens || !statuses || !n ||
	    n > DFKV_CLIENT_BATCH_MAX)
		return DFKV_E_INVAL;
	r = calloc(n, sizeof(*r));
	p = calloc(n, sizeof(*p));
	if (!r || !p) {
		free(r);
		free(p);
		return DFKV_E_NOMEM;
	}
	for (size_t i = 0; i < n; i++) {
		r[i].op = op;
		statuses[i] = dfkv_route(c, keys[i], key_lens[i], &r[i].key,
				    &r[i].peer);
	}
	*rv = r;
	*rp = p;
	return 0;
}

/* Execute the requests whose slot is still clean; count the OKs. */
static int batch_run(struct dfkv_client *c, size_t n, struct dfkv_req *r,
		     struct dfkv_req **p, int *statuses)
{
	size_t m = 0;
	int ok = 0;

	for (size_t i = 0; i < n; i++)
		if (statuses[i] == 0)
			p[m++] = &r[i];
	if (m)
		dfkv_execute(c, p, m);
	for (size_t i = 0; i < n; i++) {
		if (statuses[i] == 0)
			statuses[i] = r[i].status;
		ok += statuses[i] == DFKV_STATUS_OK;
	}
	return ok;
}

DFKV_API int dfkv_put_batch(struct dfkv_client *c, size_t n,
			    const void *const *keys, const uint64_t *key_lens,
			    const void *const *vals, const uint64_t *val_lens,
			    int *statuses)
{
	struct dfkv_req *r, **p;
	int err, ok;

	if (!vals || !val_lens)
		keys = NULL;		/* fail the whole batch below */
	err = batch_prepare(c, n, keys, key_lens, statuses, DFKV_OP_PUT, &r, &p);
	if (err)
		return err;
	for (size_t i = 0; i < n; i++) {
		r[i].val = vals[i];
		r[i].val_len = val_lens[i];
		if (!statuses[i] && !dfkv_span_ok(vals[i], val_lens[i]))
			statuses[i] = val_lens[i] ? DFKV_E_INVAL :
				DFKV_STATUS_INVALID;
	}
	ok = batch_run(c, n, r, p, statuses);
	free(r);
	free(p);
	return ok;
}

DFKV_API int dfkv_get_batch(struct dfkv_client *c, size_t n,
			    const void *const *keys, const uint64_t *key_lens,
			    void *const *bufs, const uint64_t *caps,
			    uint64_t *lens, int *statuses)
{
	struct dfkv_req *r, **p;
	int err, ok;

	if (lens && n <= DFKV_CLIENT_BATCH_MAX)
		memset(lens, 0, n * sizeof(*lens));
	if (!bufs || !caps || !lens)
		keys = NULL;
	err = batch_prepare(c, n, keys, key_lens, statuses, DFKV_OP_GET, &r, &p);
	if (err)
		return err;
	for (size_t i = 0; i < n; i++) {
		r[i].buf = bufs[i];
		r[i].cap = caps[i];
		if (!statuses[i] && !dfkv_span_ok(bufs[i], caps[i]))
			statuses[i] = DFKV_E_INVAL;
	}
	ok = batch_run(c, n, r, p, statuses);
	for (size_t i = 0; i < n; i++)
		if (statuses[i] == DFKV_STATUS_OK)
			lens[i] = r[i].data_len;
		else if (statuses[i] == DFKV_STATUS_TOO_LARGE)
			lens[i] = r[i].stored_len;
	free(r);
	free(p);
	return ok;
}

DFKV_API int dfkv_exist_batch(struct dfkv_client *c, size_t n,
			      const void *const *keys, const uint64_t *key_lens,
			      uint64_t *stored_lens, int *statuses)
{
	struct dfkv_req *r, **p;
	int err, ok;

	if (stored_lens && n <= DFKV_CLIENT_BATCH_MAX)
		memset(stored_lens, 0, n * sizeof(*stored_lens));
	if (!stored_lens)
		keys = NULL;
	err = batch_prepare(c, n, keys, key_lens, statuses, DFKV_OP_EXIST,
			    &r, &p);
	if (err)
		return err;
	ok = batch_run(c, n, r, p, statuses);
	for (size_t i = 0; i < n; i++)
		if (statuses[i] == DFKV_STATUS_OK)
			stored_lens[i] = r[i].stored_len;
	free(r);
	free(p);
	return ok;
}

DFKV_API int dfkv_remove_batch(struct dfkv_client *c, size_t n,
			       const void *const *keys, const uint64_t *key_lens,
			       int *statuses)
{
	struct dfkv_req *r, **p;
	int err, ok;

	err = batch_prepare(c, n, keys, key_lens, statuses, DFKV_OP_REMOVE,
			    &r, &p);
	if (err)
		return err;
	ok = batch_run(c, n, r, p, statuses);
	free(r);
	free(p);
	return ok;
}

DFKV_API int dfkv_put_sg_batch(struct dfkv_client *c, size_t n,
			       const void *const *keys, const uint64_t *key_lens,
			       const struct dfkv_iov *const *iovs,
			       const size_t *iovcnts, int *statuses)
{
	struct dfkv_req *r, **p;
	int err, ok;

	if (!iovs || !iovcnts)
		keys = NULL;
	err = batch_prepare(c, n, keys, key_lens, statuses, DFKV_OP_PUT, &r, &p);
	if (err)
		return err;
	for (size_t i = 0; i < n; i++)
		if (!statuses[i])
			statuses[i] = dfkv_put_sg_load(&r[i], iovs[i], iovcnts[i]);
	ok = batch_run(c, n, r, p, statuses);
	for (size_t i = 0; i < n; i++)
		free(r[i].iov);
	free(r);
	free(p);
	return ok;
}

DFKV_API int dfkv_get_sg_batch(struct dfkv_client *c, size_t n,
			       const void *const *keys, const uint64_t *key_lens,
			       const struct dfkv_iov *const *iovs,
			       const size_t *iovcnts, uint64_t *lens,
			       int *statuses)
{
	struct dfkv_req *r, **p;
	int err, ok;

	if (lens && n <= DFKV_CLIENT_BATCH_MAX)
		memset(lens, 0, n * sizeof(*lens));
	if (!iovs || !iovcnts || !lens)
		keys = NULL;
	err = batch_prepare(c, n, keys, key_lens, statuses, DFKV_OP_GET, &r, &p);
	if (err)
		return err;
	for (size_t i = 0; i < n; i++)
		if (!statuses[i])
			statuses[i] = dfkv_get_sg_load(&r[i], iovs[i], iovcnts[i]);
	ok = batch_run(c, n, r, p, statuses);
	for (size_t i = 0; i < n; i++) {
		if (statuses[i] == DFKV_STATUS_OK)
			lens[i] = r[i].data_len;
		else if (statuses[i] == DFKV_STATUS_TOO_LARGE)
			lens[i] = r[i].stored_len;
		free(r[i].iov);
	}
	free(r);
	free(p);
	return ok;
}

/* ---------------------------------------------------------- keyed ops */

void dfkv_keyed_free(struct dfkv_keyed *k)
{
	free(k->gkeys);
	free(k->gres);
	free(k->pos);
	free(k->peer_of);
	free(k->reqs);
	free(k->rp);
	memset(k, 0, sizeof(*k));
}

int dfkv_keyed_prepare(struct dfkv_client *c, uint8_t op,
		       const void *const *keys, const uint64_t *key_lens,
		       size_t n, struct dfkv_keyed *k)
{
	struct dfkv_key *bk;
	size_t *count = NULL, off = 0, np = 0;
	int err = 0;

	memset(k, 0, sizeof(*k));
	if (!c || !keys || !key_lens || !n || n > DFKV_KEYS_MAX)
		return DFKV_E_INVAL;
	k->n = n;
	bk = calloc(n, sizeof(*bk));
	k->gkeys = calloc(n, sizeof(*k->gkeys));
	k->gres = calloc(n, sizeof(*k->gres));
	k->pos = calloc(n, sizeof(*k->pos));
	k->peer_of = calloc(n, sizeof(*k->peer_of));
	if (!bk || !k->gkeys || !k->gres || !k->pos || !k->peer_of) {
		err = DFKV_E_NOMEM;
		goto out;
	}
	/* route first: under discovery the peer table may grow meanwhile */
	for (size_t i = 0; i < n && !err; i++) {
		err = dfkv_route(c, keys[i], key_lens[i], &bk[i], &k->peer_of[i]);
		if (!err && k->peer_of[i]->index >= np)
			np = k->peer_of[i]->index + 1;
	}
	if (err)
		goto out;
	count = calloc(np + 1, sizeof(*count));
	k->reqs = calloc(np, sizeof(*k->reqs));
	k->rp = calloc(np, sizeof(*k->rp));
	if (!count || !k->reqs || !k->rp) {
		err = DFKV_E_NOMEM;
		goto out;
	}
	for (size_t i = 0; i < n; i++)
		count[k->peer_of[i]->index]++;
	/* slices: peer p starts at start[p]; count[] becomes a cursor */
	for (size_t p = 0; p < np; p++) {
		size_t cnt = count[p];

		if (cnt) {
			struct dfkv_req *r = &k->reqs[k->nreq];

			r->op = op;
			r->peer = &c->peers[p];
			r->keys = k->gkeys + off;
			r->results = k->gres + off;
			r->nkeys = (uint32_t)cnt;
			k->rp[k->nreq++] = r;
		}
		count[p] = off;
		off += cnt;
	}
	for (size_t i = 0; i < n; i++) {
		size_t p = k->peer_of[i]->index;

		k->pos[i] = count[p]++;
		k->gkeys[k->pos[i]] = bk[i];
	}
out:
	free(bk);
	free(count);
	if (err)
		dfkv_keyed_free(k);
	return err;
}

int dfkv_keyed_status(const struct dfkv_keyed *k)
{
	for (size_t i = 0; i < k->nreq; i++)
		if (k->reqs[i].status != DFKV_STATUS_OK &&
		    k->reqs[i].status != DFKV_STATUS_NOT_FOUND)
			return k->reqs[i].status;
	return DFKV_STATUS_OK;
}

/* The request that carried key i. */
static const struct dfkv_req *keyed_req(const struct dfkv_keyed *k, size_t i)
{
	const struct dfkv_req *r = &k->reqs[0];

	for (size_t j = 0; j < k->nreq; j++)
		if (k->reqs[j].peer == k->peer_of[i])
			r = &k->reqs[j];
	return r;
}

DFKV_API int dfkv_touch_walk(struct dfkv_client *c, const void *const *keys,
			     const uint64_t *key_lens, size_t n,
			     uint32_t flags)
{
	struct dfkv_keyed k;
	int err;

	if (flags & ~DFKV_TOUCH_REVERSE)
		return DFKV_E_INVAL;
	err = dfkv_keyed_prepare(c, DFKV_OP_TOUCH, keys, key_lens, n, &k);
	if (err)
		return err;
	for (size_t j = 0; j < k.nreq; j++)
		k.reqs[j].offset = flags & DFKV_TOUCH_REVERSE ? 1 : 0;
	dfkv_execute(c, k.rp, k.nreq);
	err = dfkv_keyed_status(&k);
	dfkv_keyed_free(&k);
	return err;
}

DFKV_API int dfkv_touch(struct dfkv_client *c, const void *const *keys,
			const uint64_t *key_lens, size_t n)
{
	return dfkv_touch_walk(c, keys, key_lens, n, 0);
}

void dfkv_probe_results(const struct dfkv_keyed *k, uint64_t *stored_lens)
{
	for (size_t i = 0; i < k->n; i++)
		stored_lens[i] = keyed_req(k, i)->status == DFKV_STATUS_OK ?
			k->gres[k->pos[i]] : 0;
}

DFKV_API int dfkv_probe(struct dfkv_client *c, const void *const *keys,
			const uint64_t *key_lens, size_t n,
			uint64_t *stored_lens)
{
	struct dfkv_keyed k;
	int err;

	if (stored_lens && n <= DFKV_KEYS_MAX)
		memset(stored_lens, 0, n * sizeof(*stored_lens));
	if (!stored_lens)
		return DFKV_E_INVAL;
	err = dfkv_keyed_prepare(c, DFKV_OP_PROBE, keys, key_lens, n, &k);
	if (err)
		return err;
	dfkv_execute(c, k.rp, k.nreq);
	dfkv_probe_results(&k, stored_lens);
	err = dfkv_keyed_status(&k);
	dfkv_keyed_free(&k);
	return err;
}

static void lease_link(struct dfkv_client *c, struct dfkv_lease *l)
{
	struct lease_list *ll = leases_of(c);

	pthread_mutex_lock(&ll->lock);
	l->next = ll->head.next;
	l->prev = &ll->head;
	ll->head.next->prev = l;
	ll->head.next = l;
	pthread_mutex_unlock(&ll->lock);
}

static void lease_unlink(struct dfkv_client *c, struct dfkv_lease *l)
{
	struct lease_list *ll = leases_of(c);

	pthread_mutex_lock(&ll->lock);
	l->prev->next = l->next;
	l->next->prev = l->prev;
	pthread_mutex_unlock(&ll->lock);
}

int dfkv_lease_results(struct dfkv_client *c, const struct dfkv_keyed *k,
		       uint64_t *stored_lens, size_t *nr_hits,
		       struct dfkv_lease **lease)
{
	struct dfkv_lease *l = calloc(1, sizeof(*l) +
				      k->nreq * sizeof(l->part[0]));
	size_t hits = 0;

	*lease = NULL;
	*nr_hits = 0;
	memset(stored_lens, 0, k->n * sizeof(*stored_lens));
	if (!l) {
		/* the nodes drop what they granted with the connections */
		for (size_t j = 0; j < k->nreq; j++)
			if (k->reqs[j].conn)
				lease_conn_put(c, k->reqs[j].conn);
		return DFKV_E_NOMEM;
	}
	/* the leading run of keys each within its node's leading hits */
	for (; hits < k->n; hits++) {
		const struct dfkv_req *r = keyed_req(k, hits);
		size_t slot = k->pos[hits];

		if (r->status != DFKV_STATUS_OK ||
		    slot - (size_t)(r->keys - k->gkeys) >= r->nr_hits)
			break;
		stored_lens[hits] = k->gres[slot];
	}
	for (size_t j = 0; j < k->nreq; j++) {
		const struct dfkv_req *r = &k->reqs[j];

		if (r->status == DFKV_STATUS_OK && r->lease_id)
			l->part[l->n++] = (struct lease_part){ r->peer,
							       r->lease_id,
							       r->conn };
	}
	*nr_hits = hits;
	lease_link(c, l);
	*lease = l;
	return 0;
}

DFKV_API int dfkv_lease(struct dfkv_client *c, const void *const *keys,
			const uint64_t *key_lens, size_t n, uint32_t ttl_ms,
			uint64_t *stored_lens, size_t *nr_hits,
			struct dfkv_lease **lease)
{
	struct dfkv_keyed k;
	int err;

	if (lease)
		*lease = NULL;
	if (nr_hits)
		*nr_hits = 0;
	if (stored_lens && n <= DFKV_KEYS_MAX)
		memset(stored_lens, 0, n * sizeof(*stored_lens));
	if (!stored_lens || !nr_hits || !lease || ttl_ms > DFKV_LEASE_TTL_MAX_MS)
		return DFKV_E_INVAL;
	err = dfkv_keyed_prepare(c, DFKV_OP_LEASE, keys, key_lens, n, &k);
	if (err)
		return err;
	for (size_t j = 0; j < k.nreq; j++)
		k.reqs[j].length = ttl_ms;
	dfkv_execute(c, k.rp, k.nreq);
	err = dfkv_lease_results(c, &k, stored_lens, nr_hits, lease);
	if (!err)
		err = dfkv_keyed_status(&k);
	dfkv_keyed_free(&k);
	return err;
}

DFKV_API int dfkv_release(struct dfkv_client *c, struct dfkv_lease *l)
{
	struct dfkv_req *reqs, **rp;
	int err = DFKV_STATUS_OK;

	if (!c || !l)
		return DFKV_E_INVAL;
	lease_unlink(c, l);
	reqs = calloc(l->n + 1, sizeof(*reqs));
	rp = calloc(l->n + 1, sizeof(*rp));
	if (!reqs || !rp) {
		err = DFKV_E_NOMEM;
	} else {
		for (size_t i = 0; i < l->n; i++) {
			reqs[i] = (struct dfkv_req){
				.op = DFKV_OP_RELEASE, .peer = l->part[i].peer,
				.lease_id = l->part[i].id,
				.conn = l->part[i].conn };
			rp[i] = &reqs[i];
		}
		if (l->n)
			dfkv_execute(c, rp, l->n);
		for (size_t i = 0; i < l->n; i++) {
			/* a connection the transport did not take back */
			if (reqs[i].conn)
				lease_conn_put(c, reqs[i].conn);
			if (reqs[i].status != DFKV_STATUS_OK && !err)
				err = reqs[i].status;
		}
	}
	if (err == DFKV_E_NOMEM)
		for (size_t i = 0; i < l->n; i++)
			lease_conn_put(c, l->part[i].conn);
	free(reqs);
	free(rp);
	free(l);
	return err;
}

/* -------------------------------------------------------------- stats */

static const char *result_name(int s)
{
	static const char *const er[] = {
		"", "inval", "nomem", "range", "unavailable", "timeout",
		"proto", "not_run", "members", "nodev", "sys", "auth",
		"cancelled",
	};

	static_assert(sizeof(er) / sizeof(er[0]) == -__DFKV_E_MIN, "er");
	return s >= 0 ? dfkv_status_str(s) : er[-s];
}

struct sbuf {
	char *p;
	uint64_t cap, len;
};

static void __attribute__((format(printf, 2, 3)))
emit(struct sbuf *b, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(b->len < b->cap ? b->p + b->len : NULL,
		      b->len < b->cap ? (size_t)(b->cap - b->len) : 0, fmt, ap);
	va_end(ap);
	if (n > 0)
		b->len += (uint64_t)n;
}

static void counter(struct sbuf *b, const char *name, const char *help,
		    uint64_t v)
{
	emit(b, "# HELP dfkv_client_%s %s\n# TYPE dfkv_client_%s counter\n"
	     "dfkv_client_%s %llu\n", name, help, name, name,
	     (unsigned long long)v);
}

DFKV_API int dfkv_stats_snapshot(struct dfkv_client *c, char *buf,
				 uint64_t cap, uint64_t *len)
{
	struct sbuf b = { buf, cap, 0 };
	uint64_t now = dfkv_now_ms();
	size_t down = 0, local = 0;

	if (!len)
		return DFKV_E_INVAL;
	*len = 0;
	if (!c || (!buf && cap))
		return DFKV_E_INVAL;
	emit(&b, "# HELP dfkv_client_ops_total Client requests by op and "
	     "result.\n# TYPE dfkv_client_ops_total counter\n");
	for (int op = 0; op < __DFKV_OP_MAX; op++)
		for (int s = __DFKV_E_MIN + 1; s < __DFKV_STATUS_MAX; s++) {
			uint64_t v = atomic_load(&c->ops[op][s - __DFKV_E_MIN]);

			if (v && dfkv_op_str(op))
				emit(&b, "dfkv_client_ops_total{op=\"%s\","
				     "result=\"%s\"} %llu\n", dfkv_op_str(op),
				     result_name(s), (unsigned long long)v);
		}
	counter(&b, "put_bytes_total",
		"Value bytes sent by PUT over the network (TCP and RDMA).",
		atomic_load(&c->bytes_out));
	counter(&b, "get_bytes_total",
		"Value bytes received by GET over the network (TCP and RDMA).",
		atomic_load(&c->bytes_in));
	emit(&b, "# HELP dfkv_client_requests_total Requests by transport.\n"
	     "# TYPE dfkv_client_requests_total counter\n"
	     "dfkv_client_requests_total{transport=\"tcp\"} %llu\n"
	     "dfkv_client_requests_total{transport=\"local\"} %llu\n"
	     "dfkv_client_requests_total{transport=\"rdma\"} %llu\n",
	     (unsigned long long)atomic_load(&c->tcp_reqs),
	     (unsigned long long)atomic_load(&c->local_reqs),
	     (unsigned long long)atomic_load(&c->rdma_reqs));
	emit(&b, "# HELP dfkv_client_rdma_request_keys_total RDMA keys made "
	     "for one request's range.\n"
	     "# TYPE dfkv_client_rdma_request_keys_total counter\n"
	     "dfkv_client_rdma_request_keys_total{kind=\"window\"} %llu\n"
	     "dfkv_client_rdma_request_keys_total{kind=\"registration\"} "
	     "%llu\n",
	     (unsigned long long)atomic_load(&c->rdma_windows),
	     (unsigned long long)atomic_load(&c->rdma_req_mrs));
	counter(&b, "connects_total", "TCP connections opened.",
		atomic_load(&c->connects));
	counter(&b, "connection_failures_total", "TCP connections that failed.",
		atomic_load(&c->conn_failures));
	counter(&b, "peer_skips_total",
		"Requests not sent because their member was cooling down.",
		atomic_load(&c->peer_skips));
	counter(&b, "dropped_writes_total",
		"Writes dropped because their member was unavailable.",
		atomic_load(&c->dropped_writes));
	counter(&b, "degraded_reads_total",
		"Reads answered as misses because their member was unavailable.",
		atomic_load(&c->degraded_reads));
	for (size_t i = 0; i < c->npeers; i++) {
		down += now < atomic_load(&c->peers[i].down_until_ms);
		local += c->peers[i].local;
	}
	emit(&b, "# HELP dfkv_client_members Members of the ring.\n"
	     "# TYPE dfkv_client_members gauge\n"
	     "dfkv_client_members{state=\"up\"} %zu\n"
	     "dfkv_client_members{state=\"cooling_down\"} %zu\n"
	     "# HELP dfkv_client_local_members Members reached through "
	     "/dev/dfkv.\n# TYPE dfkv_client_local_members gauge\n"
	     "dfkv_client_local_members %zu\n", c->npeers - down, down, local);
	emit(&b, "# HELP dfkv_client_node_auth_failures_total Handshakes the "
	     "member failed: its name, AUTH or proof (SPEC.md 9).\n"
	     "# TYPE dfkv_client_node_auth_failures_total counter\n");
	for (size_t i = 0; i < c->npeers; i++)
		emit(&b, "dfkv_client_node_auth_failures_total{node=\"%s\"} "
		     "%llu\n", c->peers[i].name, (unsigned long long)
		     atomic_load(&c->peers[i].auth_failures));
	if (c->disc) {
		char d[2048];

		dfkv_disc_stats(c, d, sizeof(d));
		emit(&b, "%s", d);
	}
	*len = b.len;
	return b.len <= cap ? 0 : DFKV_E_RANGE;
}
