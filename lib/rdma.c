// SPDX-License-Identifier: (GPL-2.0 WITH Linux-syscall-note) OR MIT
/*
 * libdfkv RDMA transport (SPEC.md section 3, epoch 7) on librdmacm and
 * libibverbs.
 *
 * Rails: at open the client lists the RDMA devices with an active port,
 * filtered by the rdma_devices whitelist (authoritative: only those are
 * candidates); none means DFKV_E_NODEV for the RDMA preference (auto
 * falls back to TCP).  Each is a rail (rail.c), chosen per request, not
 * per connection: every request an exec admits takes a credit on the
 * rail rail.c picks for the calling thread's NUMA node (libnuma) and
 * goes on a connection to its peer over that rail, made lazily and
 * pooled per (peer, rail).  With several rails a connection is bound to
 * an address of its rail's netdev; the device rdma_cm resolves must be
 * the rail's (else the rail cannot reach that peer: the request goes to
 * another rail).  Host-local evidence against a rail (a verbs call on
 * its device, a QP transition, a post or a completion failing, its port
 * leaving ACTIVE, seen through the rail's own device context's async
 * events at each exec) quarantines it (rail.c); the requests it failed
 * are run once more over another rail in the same exec, so a rail lost
 * is neither a client error nor a miss.  An unreachable, refusing or
 * malformed peer (address or route resolution, the CM connect and its
 * grant, the handshake, a reply that does not parse) feeds the peer's
 * health (health.c) and never a rail's.  Each device context gets one
 * protection domain shared by its connections and by the memory
 * registrations.
 *
 * Memory: dfkv_register_memory() records a pool (an engine's whole KV
 * pool, say; one containing pools replaces them, so a pool may be
 * re-declared larger); it is registered with a device's PD the first time a
 * request uses it there and stays registered until
 * dfkv_unregister_memory().  A buffer outside every pool gets a
 * registration that lives only for its request: it is deregistered once
 * the reply came (or its connection was torn down), never cached.
 * rdma_expose decides what a pool's requests send (lib/README.md): POOL
 * (an explicit opt-in) the pool's own rkey (registered for remote read
 * and write); REQUEST (the default) a
 * type-2 window per descriptor over exactly its range, bound by a
 * BIND_MW work request ahead of the request's SEND on the same QP and
 * deallocated with the request's other keys (the pool then registered
 * for binding only), or, on a device without type-2B windows or one that
 * does not check their bounds (rxe), and with REQUEST_MR, a registration
 * of the range as for buffers outside pools; REQUEST_MW windows wherever
 * the device has them.
 *
 * Requests: one SEND each (the 50-byte prefix, a u32 descriptor count,
 * then descriptors or the inline payload); PUT values and key lists up to
 * the negotiated inline size go inline, larger ones as source
 * descriptors the node RDMA-READs; a GET whose capacity fits inline gets
 * its data in the reply, a larger one gives destination descriptors the
 * node RDMA-WRITEs.  Scatter-gather buffers map one-to-one onto
 * descriptors (a list longer than the negotiated maximum goes through one
 * bounce buffer).  Up to depth requests are in flight per connection and
 * replies come back in order; one exec call drives the connections of
 * every peer from one poll() loop (conn.c's, through the callbacks here)
 * on their completion channels, under the batch's single deadline.
 *
 * Tenants (SPEC.md 9): with a tenant secret, a new connection runs the
 * AUTH2 handshake, HELLO and AUTH (SENDs with inline payloads, as key
 * lists), and waits for each reply before it is used; a node that fails
 * it (a name not the member's, a refused AUTH, a wrong proof) fails the
 * connection attempt as an unreachable node does.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE		/* sched_getcpu */
#endif
#include <errno.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <numa.h>
#include <poll.h>
#include <sched.h>
#include <stdio.h>
#include <unistd.h>
#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#include "conn.h"
#include "rail.h"
#include "transport.h"

/* What the client asks for (the HELLO, request and descriptor layouts:
 * uapi/linux/dfkv.h). */
#define DFKV_RDMA_INLINE_WANT		4096
#define DFKV_RDMA_DESC_WANT		256

#define RDEV_MAX	DFKV_RAIL_MAX
#define RDMA_DEPTH_WANT	64

/*
 * Requests in flight one rail admits (its credits), and its first
 * quarantine, doubling with each failure in a row up to the client's
 * cooldown_ms (the time a failed node is skipped).
 */
#define RAIL_CREDITS		4096
#define RAIL_QUARANTINE_MS	100

/*
 * A failure that is host-local evidence against the connection's rail
 * (rail.h); rdma.c's own, never a request's status.
 */
#define DFKV_E_RAIL		(__DFKV_E_MIN - 1)

/*
 * rdma_rxe's vendor id.  Its responder (6.1 rxe_resp.c, check_rkey) checks
 * a memory window's key, state and access but the range of an access
 * against the window's MR only, so REQUEST exposure uses registrations
 * there (REQUEST_MW still binds windows).
 */
#define RXE_VENDOR_ID	0xffffff

/* What a send-queue completion (wr_id >> 32) is for; receives are 0. */
#define WR_SEND		1ull
#define WR_BIND		2ull

/* A device context this client uses, with its protection domain. */
struct rdev {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	bool mw;			/* request exposure through type-2
					 * memory windows on it */
};

/* A registered pool: one MR per device it was used on. */
struct pool {
	struct pool *next;
	uint8_t *base;
	uint64_t len;
	struct ibv_mr *mr[RDEV_MAX];
};

struct dfkv_rdma {
	pthread_mutex_t lock;		/* devs */
	struct rdev devs[RDEV_MAX];
	size_t ndev;
	pthread_rwlock_t pools_lock;	/* readers: requests using pools */
	struct pool *pools;
	char allow[RDEV_MAX][64];	/* whitelist; empty: any */
	size_t nallow;
	char cand[RDEV_MAX][64];	/* active allowed devices: rail i is
					 * cand[i] */
	int cand_numa[RDEV_MAX];
	struct ibv_context *rctx[RDEV_MAX];	/* each rail's own context:
						 * its ports, its async
						 * events (non-blocking) */
	size_t ncand;
	struct dfkv_rails rails;
	uint32_t expose;		/* enum dfkv_rdma_expose */
};

/* The client's RDMA state (c->tstate), or NULL when RDMA is off. */
static struct dfkv_rdma *rdma_of(const struct dfkv_client *c)
{
	return c->tstate[DFKV_T_RDMA];
}

struct rconn {
	struct dfkv_conn base;		/* &dfkv_rdma_transport, the peer */
	struct rdma_event_channel *ch;
	struct rdma_cm_id *id;
	struct rdev *dev;
	size_t dev_idx;
	int rail;			/* the rail it was opened over */
	struct ibv_comp_channel *cc;
	struct ibv_cq *cq;
	uint32_t depth, inline_max, max_desc;
	uint64_t max_value;
	uint8_t *sbuf, *rbuf;		/* depth slots each */
	size_t slen, rlen;
	struct ibv_mr *smr, *rmr;
	bool *send_busy;		/* slot's SEND not completed yet */
	uint32_t sq_cap, sq_used;	/* send queue: WRs posted, unreported */
	bool broken;
};

/* A request-scoped memory window and the bind that gives it its key. */
struct rwin {
	struct ibv_mw *mw;
	struct ibv_mw_bind_info bind;
	uint32_t rkey;
};

struct ritem {
	struct dfkv_item base;		/* the request */
	struct dfkv_wire_req w;
	struct ibv_mr **mrs;		/* request-scoped registrations */
	size_t nmr, mrcap;
	struct rwin *wins;		/* request-scoped windows, bound by
					 * WRs posted before the request */
	size_t nwin, wincap;
	uint8_t *bounce;		/* PUT/GET through one buffer */
	uint8_t *keys;			/* encoded key list */
	uint8_t *desc;			/* descriptors (ndesc) */
	uint32_t ndesc;
	bool inline_payload;
	const uint8_t *payload;		/* inline payload source */
	int rail;			/* the rail its credit is on,
					 * -1: none */
};

/* What RDMA keeps per peer: its address and its idle connections per
 * rail (the one pool of net stays empty). */
struct rpeer {
	struct dfkv_net_peer net;
	struct dfkv_pool rail[RDEV_MAX];
	/* a rail whose route to the peer is another device's is not
	 * tried for it until then (ms) */
	_Atomic uint64_t noroute_until[RDEV_MAX];
};

static struct rpeer *rpeer_of(const struct dfkv_peer *p)
{
	return p->tp;
}

static struct ritem *ritem_of(struct dfkv_item *it)
{
	return dfkv_container_of(it, struct ritem, base);
}

static struct rconn *rconn_of(struct dfkv_conn *conn)
{
	return dfkv_container_of(conn, struct rconn, base);
}

/* ------------------------------------------------------------ devices */

static bool dev_allowed(struct dfkv_rdma *rd, const char *name)
{
	if (!rd->nallow)
		return true;
	for (size_t i = 0; i < rd->nallow; i++)
		if (!strcmp(rd->allow[i], name))
			return true;
	return false;
}

static int dev_numa(const char *name)
{
	char path[256];
	FILE *f;
	int n = -1;

	snprintf(path, sizeof(path), "/sys/class/infiniband/%s/device/numa_node",
		 name);
	f = fopen(path, "r");
	if (f) {
		if (fscanf(f, "%d", &n) != 1)
			n = -1;
		fclose(f);
	}
	return n;
}

/* A port of the device is ACTIVE. */
static bool ctx_up(struct ibv_context *ctx)
{
	struct ibv_device_attr da;
	bool up = false;

	if (!ibv_query_device(ctx, &da))
		for (uint8_t p = 1; p <= da.phys_port_cnt && !up; p++) {
			struct ibv_port_attr pa;

			up = !ibv_query_port(ctx, p, &pa) &&
			     pa.state == IBV_PORT_ACTIVE;
		}
	return up;
}

/* A context of d, its async events non-blocking, when a port is ACTIVE;
 * else NULL. */
static struct ibv_context *dev_open_active(struct ibv_device *d)
{
	struct ibv_context *ctx = ibv_open_device(d);
	int fl;

	if (!ctx)
		return NULL;
	fl = fcntl(ctx->async_fd, F_GETFL);
	if (ctx_up(ctx) && fl >= 0 &&
	    !fcntl(ctx->async_fd, F_SETFL, fl | O_NONBLOCK))
		return ctx;
	ibv_close_device(ctx);
	return NULL;
}

static int rdma_client_init(struct dfkv_client *c)
{
	struct dfkv_rdma *rd = calloc(1, sizeof(*rd));
	struct ibv_device **list;
	int n = 0;

	if (!rd)
		return DFKV_E_NOMEM;
	pthread_mutex_init(&rd->lock, NULL);
	pthread_rwlock_init(&rd->pools_lock, NULL);
	rd->expose = c->opt.rdma_expose ? c->opt.rdma_expose :
		     DFKV_RDMA_EXPOSE_REQUEST;
	c->tstate[DFKV_T_RDMA] = rd;
	if (c->opt.rdma_devices) {
		const char *s = c->opt.rdma_devices;

		while (*s && rd->nallow < RDEV_MAX) {
			size_t k = strcspn(s, ",");

			if (k && k < sizeof(rd->allow[0])) {
				memcpy(rd->allow[rd->nallow], s, k);
				rd->allow[rd->nallow++][k] = 0;
			} else if (k) {
				return DFKV_E_INVAL;
			}
			s += k + (s[k] == ',');
		}
	}
	list = ibv_get_device_list(&n);
	for (int i = 0; list && i < n && rd->ncand < RDEV_MAX; i++) {
		const char *name = ibv_get_device_name(list[i]);

		if (!dev_allowed(rd, name))
			continue;
		rd->rctx[rd->ncand] = dev_open_active(list[i]);
		if (!rd->rctx[rd->ncand])
			continue;
		snprintf(rd->cand[rd->ncand], sizeof(rd->cand[0]), "%s", name);
		rd->cand_numa[rd->ncand++] = dev_numa(name);
	}
	if (list)
		ibv_free_device_list(list);
	dfkv_rails_init(&rd->rails, rd->ncand, rd->cand_numa, RAIL_CREDITS,
			RAIL_QUARANTINE_MS,
			c->opt.cooldown_ms > RAIL_QUARANTINE_MS ?
			c->opt.cooldown_ms : RAIL_QUARANTINE_MS);
	return rd->ncand ? 0 : DFKV_E_NODEV;
}

/* Pool o lies within the range of pool p. */
static bool pool_within(const struct pool *o, const struct pool *p)
{
	return o->base >= p->base && o->base + o->len <= p->base + p->len;
}

static void pool_free(struct pool *p)
{
	for (size_t i = 0; i < RDEV_MAX; i++)
		if (p->mr[i])
			ibv_dereg_mr(p->mr[i]);
	free(p);
}

static void rdma_client_fini(struct dfkv_client *c)
{
	struct dfkv_rdma *rd = rdma_of(c);

	if (!rd)
		return;
	while (rd->pools) {
		struct pool *p = rd->pools;

		rd->pools = p->next;
		pool_free(p);
	}
	for (size_t i = 0; i < rd->ndev; i++)
		ibv_dealloc_pd(rd->devs[i].pd);
	for (size_t i = 0; i < rd->ncand; i++)
		ibv_close_device(rd->rctx[i]);
	pthread_mutex_destroy(&rd->lock);
	pthread_rwlock_destroy(&rd->pools_lock);
	free(rd);
	c->tstate[DFKV_T_RDMA] = NULL;
}

/* The client's entry for a device context; NULL when it cannot get one. */
static struct rdev *dev_of(struct dfkv_rdma *rd, struct ibv_context *ctx,
			   size_t *idx)
{
	struct rdev *d = NULL;

	pthread_mutex_lock(&rd->lock);
	for (size_t i = 0; i < rd->ndev; i++)
		if (rd->devs[i].ctx == ctx) {
			d = &rd->devs[i];
			*idx = i;
		}
	if (!d && rd->ndev < RDEV_MAX) {
		struct ibv_pd *pd = ibv_alloc_pd(ctx);
		struct ibv_device_attr da;

		if (pd) {
			*idx = rd->ndev;
			d = &rd->devs[rd->ndev++];
			d->ctx = ctx;
			d->pd = pd;
			d->mw = !ibv_query_device(ctx, &da) && da.max_mw > 0 &&
				(da.device_cap_flags &
				 IBV_DEVICE_MEM_WINDOW_TYPE_2B) &&
				(rd->expose == DFKV_RDMA_EXPOSE_REQUEST_MW ||
				 (rd->expose == DFKV_RDMA_EXPOSE_REQUEST &&
				  da.vendor_id != RXE_VENDOR_ID));
		}
	}
	pthread_mutex_unlock(&rd->lock);
	return d;
}

/* ------------------------------------------------------------- memory */

/*
 * The access a pool is registered with on device d: for remote read and
 * write when its rkey is what requests send (POOL), for binding windows
 * (REQUEST on a device with them); 0 when requests there register their
 * ranges instead and the pool needs no registration.
 */
static int pool_access(const struct dfkv_rdma *rd, const struct rdev *d)
{
	if (rd->expose == DFKV_RDMA_EXPOSE_POOL)
		return IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ |
		       IBV_ACCESS_REMOTE_WRITE;
	return d->mw ? IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_MW_BIND : 0;
}

/* Pool p's registration on device i (rd->lock held), made on first use. */
static struct ibv_mr *pool_mr(struct dfkv_rdma *rd, struct pool *p, size_t i)
{
	if (!p->mr[i])
		p->mr[i] = ibv_reg_mr(rd->devs[i].pd, p->base, p->len,
				      pool_access(rd, &rd->devs[i]));
	return p->mr[i];
}

DFKV_API int dfkv_register_memory(struct dfkv_client *c, void *base,
				  uint64_t len)
{
	struct dfkv_rdma *rd;
	struct pool *p;

	if (!c || !dfkv_span_ok(base, len))
		return DFKV_E_INVAL;
	rd = rdma_of(c);
	if (!rd)
		return DFKV_E_NODEV;
	p = calloc(1, sizeof(*p));
	if (!p)
		return DFKV_E_NOMEM;
	p->base = base;
	p->len = len;
	pthread_rwlock_wrlock(&rd->pools_lock);
	for (struct pool *o = rd->pools; o; o = o->next)
		if ((uint8_t *)base < o->base + o->len &&
		    o->base < (uint8_t *)base + len && !pool_within(o, p)) {
			pthread_rwlock_unlock(&rd->pools_lock);
			free(p);
			return DFKV_E_INVAL;	/* overlaps a pool */
		}
	/* register with the devices in use now; others on first use */
	pthread_mutex_lock(&rd->lock);
	for (size_t i = 0; i < rd->ndev; i++) {
		if (pool_access(rd, &rd->devs[i]) && !pool_mr(rd, p, i)) {
			for (size_t j = 0; j < i; j++)
				if (p->mr[j])
					ibv_dereg_mr(p->mr[j]);
			pthread_mutex_unlock(&rd->lock);
			pthread_rwlock_unlock(&rd->pools_lock);
			free(p);
			return DFKV_E_SYS;
		}
	}
	pthread_mutex_unlock(&rd->lock);
	/* the pools it contains are replaced (a pool re-declared larger) */
	for (struct pool **pp = &rd->pools, *o; (o = *pp);) {
		if (!pool_within(o, p)) {
			pp = &o->next;
			continue;
		}
		*pp = o->next;
		pool_free(o);
	}
	p->next = rd->pools;
	rd->pools = p;
	pthread_rwlock_unlock(&rd->pools_lock);
	return 0;
}

DFKV_API int dfkv_unregister_memory(struct dfkv_client *c, void *base)
{
	struct dfkv_rdma *rd;
	struct pool **pp, *p;

	if (!c || !base)
		return DFKV_E_INVAL;
	rd = rdma_of(c);
	if (!rd)
		return DFKV_E_NODEV;
	/* the write lock waits for the requests using any pool */
	pthread_rwlock_wrlock(&rd->pools_lock);
	for (pp = &rd->pools; (p = *pp); pp = &p->next)
		if (p->base == base)
			break;
	if (p)
		*pp = p->next;
	pthread_rwlock_unlock(&rd->pools_lock);
	if (!p)
		return DFKV_E_INVAL;
	pool_free(p);
	return 0;
}

/*
 * A type-2 window over [ptr, ptr + len) of mr, for the item only: its key
 * is the window's with the next key byte, the bind is posted on the
 * connection's QP before the request (conn_send).
 */
static int mem_window(struct dfkv_client *c, struct rconn *conn,
		      struct ritem *it, struct ibv_mr *mr, void *ptr,
		      uint64_t len, int access, uint32_t *rkey)
{
	struct rwin w = {
		.bind = { .mr = mr, .addr = (uintptr_t)ptr, .length = len,
			  .mw_access_flags = access & (IBV_ACCESS_REMOTE_READ |
						       IBV_ACCESS_REMOTE_WRITE) },
	};

	w.mw = ibv_alloc_mw(conn->dev->pd, IBV_MW_TYPE_2);
	if (!w.mw)
		return DFKV_E_SYS;
	w.rkey = ibv_inc_rkey(w.mw->rkey);
	if (!dfkv_push(it->wins, it->nwin, it->wincap, w)) {
		ibv_dealloc_mw(w.mw);
		return DFKV_E_NOMEM;
	}
	atomic_fetch_add(&c->rdma_windows, 1);
	*rkey = w.rkey;
	return 0;
}

/*
 * The rkey covering [ptr, ptr + len) on conn's device (pools read-locked
 * by the caller): with POOL exposure a pool's own; with REQUEST a window
 * of the pool's registration where the device has windows; otherwise a
 * registration of the range scoped to the item.
 */
static int mem_key(struct dfkv_client *c, struct rconn *conn,
		   struct ritem *it, void *ptr, uint64_t len, int access,
		   uint32_t *rkey)
{
	struct dfkv_rdma *rd = rdma_of(c);
	struct ibv_mr *mr;

	for (struct pool *p = rd->pools; p; p = p->next) {
		if ((uint8_t *)ptr < p->base ||
		    (uint8_t *)ptr + len > p->base + p->len)
			continue;
		if (!pool_access(rd, conn->dev))
			break;
		/* first use on this device: register the pool there */
		pthread_mutex_lock(&rd->lock);
		mr = pool_mr(rd, p, conn->dev_idx);
		pthread_mutex_unlock(&rd->lock);
		if (!mr)
			return DFKV_E_SYS;
		if (rd->expose != DFKV_RDMA_EXPOSE_POOL)
			return mem_window(c, conn, it, mr, ptr, len, access,
					  rkey);
		*rkey = mr->rkey;
		return 0;
	}
	mr = ibv_reg_mr(conn->dev->pd, ptr, len, access);
	if (!mr)
		return DFKV_E_SYS;
	if (!dfkv_push(it->mrs, it->nmr, it->mrcap, mr)) {
		ibv_dereg_mr(mr);
		return DFKV_E_NOMEM;
	}
	atomic_fetch_add(&c->rdma_req_mrs, 1);
	*rkey = mr->rkey;
	return 0;
}

/*
 * The item's keys die in these two, before its request is reported done:
 * deallocating a bound window and deregistering a registration both
 * invalidate the key (a node's access with it fails from then on).
 * Windows go before their connection is closed: a bound type-2 window
 * holds its QP (rxe waits for it when the QP is destroyed).
 */
static void item_windows_release(struct ritem *it)
{
	for (size_t i = 0; i < it->nwin; i++)
		ibv_dealloc_mw(it->wins[i].mw);
	free(it->wins);
	it->wins = NULL;
	it->nwin = it->wincap = 0;
}

static void item_release(struct ritem *it)
{
	item_windows_release(it);
	for (size_t i = 0; i < it->nmr; i++)
		ibv_dereg_mr(it->mrs[i]);
	free(it->mrs);
	it->mrs = NULL;
	it->nmr = it->mrcap = 0;
	free(it->bounce);
	free(it->keys);
	free(it->desc);
	it->bounce = it->keys = it->desc = NULL;
}

/* -------------------------------------------------------- connections */

static void conn_close(struct rconn *conn)
{
	if (!conn)
		return;
	if (conn->id) {
		if (conn->id->qp)
			rdma_disconnect(conn->id);
		if (conn->id->qp)
			rdma_destroy_qp(conn->id);
	}
	if (conn->smr)
		ibv_dereg_mr(conn->smr);
	if (conn->rmr)
		ibv_dereg_mr(conn->rmr);
	if (conn->cq)
		ibv_destroy_cq(conn->cq);
	if (conn->cc)
		ibv_destroy_comp_channel(conn->cc);
	if (conn->id)
		rdma_destroy_id(conn->id);
	if (conn->ch)
		rdma_destroy_event_channel(conn->ch);
	free(conn->sbuf);
	free(conn->rbuf);
	free(conn->send_busy);
	free(conn->base.q);
	free(conn);
}

/* Wait for the next CM event of the id; 0 and *ev, or an error. */
static int cm_wait(struct rconn *conn, uint64_t deadline,
		   enum rdma_cm_event_type want, struct rdma_cm_event **ev)
{
	struct pollfd pfd = { .fd = conn->ch->fd, .events = POLLIN };

	for (;;) {
		uint64_t now = dfkv_now_ms();
		int rc;

		if (now >= deadline)
			return DFKV_E_UNAVAILABLE;
		rc = poll(&pfd, 1, (int)(deadline - now));
		if (rc < 0 && errno != EINTR)
			return DFKV_E_SYS;
		if (rc <= 0)
			continue;
		if (rdma_get_cm_event(conn->ch, ev))
			return DFKV_E_SYS;
		if ((*ev)->event == want && !(*ev)->status)
			return 0;
		rdma_ack_cm_event(*ev);
		return DFKV_E_UNAVAILABLE;
	}
}

/*
 * A source address on rail's device when several rails could carry the
 * connection: the netdev of its first GID, an address of family fam.
 */
static bool rail_src(struct dfkv_rdma *rd, int rail, int fam,
		     struct sockaddr_storage *src)
{
	char path[256], ndev[64] = "";
	struct ifaddrs *ifa, *a;
	bool found = false;
	FILE *f;

	if (rd->ncand < 2)
		return false;
	snprintf(path, sizeof(path),
		 "/sys/class/infiniband/%s/ports/1/gid_attrs/ndevs/0",
		 rd->cand[rail]);
	f = fopen(path, "r");
	if (!f)
		return false;
	if (!fgets(ndev, sizeof(ndev), f))
		ndev[0] = 0;
	fclose(f);
	ndev[strcspn(ndev, "\n")] = 0;
	if (!ndev[0] || getifaddrs(&ifa))
		return false;
	for (a = ifa; a && !found; a = a->ifa_next) {
		if (!a->ifa_addr || a->ifa_addr->sa_family != fam ||
		    strcmp(a->ifa_name, ndev))
			continue;
		memset(src, 0, sizeof(*src));
		memcpy(src, a->ifa_addr, fam == AF_INET ?
		       sizeof(struct sockaddr_in) : sizeof(struct sockaddr_in6));
		found = true;
	}
	freeifaddrs(ifa);
	return found;
}

static int conn_resolve(struct dfkv_client *c, struct rconn *conn,
			struct sockaddr *src, uint64_t deadline)
{
	struct dfkv_peer *p = conn->base.peer;
	struct rdma_cm_event *ev;
	int tmo = (int)c->opt.connect_timeout_ms, err;

	conn->ch = rdma_create_event_channel();
	if (!conn->ch)
		return DFKV_E_SYS;
	if (rdma_create_id(conn->ch, &conn->id, conn, RDMA_PS_TCP))
		return DFKV_E_SYS;
	if (rdma_resolve_addr(conn->id, src,
			      (struct sockaddr *)&dfkv_net_peer(p)->addr, tmo))
		return DFKV_E_UNAVAILABLE;
	err = cm_wait(conn, deadline, RDMA_CM_EVENT_ADDR_RESOLVED, &ev);
	if (err)
		return err;
	rdma_ack_cm_event(ev);
	if (rdma_resolve_route(conn->id, tmo))
		return DFKV_E_UNAVAILABLE;
	err = cm_wait(conn, deadline, RDMA_CM_EVENT_ROUTE_RESOLVED, &ev);
	if (err)
		return err;
	rdma_ack_cm_event(ev);
	return 0;
}

static int conn_handshake(struct dfkv_client *c, struct rconn *conn,
			  uint64_t deadline);

/* A fresh connection to p over rail, nothing set up yet. */
static struct rconn *conn_alloc(struct dfkv_peer *p, int rail)
{
	struct rconn *conn = calloc(1, sizeof(*conn));

	if (conn) {
		conn->base.t = &dfkv_rdma_transport;
		conn->base.peer = p;
		conn->rail = rail;
	}
	return conn;
}

/*
 * Resolve conn's route from an address of its rail's netdev when several
 * rails could carry it, else where CM chooses; DFKV_E_NODEV when that is
 * another device, DFKV_E_RAIL when the rail's port is down.
 */
static int conn_route(struct dfkv_client *c, struct rconn *conn,
		      uint64_t deadline)
{
	struct dfkv_rdma *rd = rdma_of(c);
	struct sockaddr_storage src;
	bool bound = rail_src(rd, conn->rail,
			      dfkv_net_peer(conn->base.peer)->addr.ss_family,
			      &src);
	int err = conn_resolve(c, conn, bound ? (struct sockaddr *)&src : NULL,
			       deadline);

	/* no route while its port is down: the rail's, not the peer's */
	if (err && !ctx_up(rd->rctx[conn->rail]))
		return DFKV_E_RAIL;
	if (!err && strcmp(ibv_get_device_name(conn->id->verbs->device),
			   rd->cand[conn->rail]))
		err = DFKV_E_NODEV;
	return err;
}

/*
 * The resolved connection's verbs on its rail's device: the device's PD,
 * a completion channel and CQ, the QP, and receives for the largest
 * grant of depth, posted before the connect; DFKV_E_RAIL when the device
 * failed one of them.
 */
static int conn_verbs(struct dfkv_client *c, struct rconn *conn,
		      uint32_t depth)
{
	struct dfkv_rdma *rd = rdma_of(c);
	struct ibv_qp_init_attr qa = { 0 };

	conn->dev = dev_of(rd, conn->id->verbs, &conn->dev_idx);
	if (!conn->dev)
		return DFKV_E_RAIL;
	conn->cc = ibv_create_comp_channel(conn->id->verbs);
	if (!conn->cc)
		return DFKV_E_RAIL;
	/* a request's window binds go ahead of its SEND */
	conn->sq_cap = depth + 1 + (conn->dev->mw ? DFKV_RDMA_DESC_WANT : 0);
	conn->cq = ibv_create_cq(conn->id->verbs, (int)(conn->sq_cap + depth + 1),
				 NULL, conn->cc, 0);
	if (!conn->cq || ibv_req_notify_cq(conn->cq, 0))
		return DFKV_E_RAIL;
	qa.send_cq = conn->cq;
	qa.recv_cq = conn->cq;
	qa.qp_type = IBV_QPT_RC;
	qa.sq_sig_all = 1;
	qa.cap.max_send_wr = conn->sq_cap;
	qa.cap.max_recv_wr = depth + 1;
	qa.cap.max_send_sge = 1;
	qa.cap.max_recv_sge = 1;
	if (rdma_create_qp(conn->id, conn->dev->pd, &qa))
		return DFKV_E_RAIL;
	conn->depth = depth;
	conn->rlen = DFKV_RESP_PREFIX_LEN +
		(DFKV_RDMA_REPLY_DATA_MAX > DFKV_RDMA_INLINE_WANT ?
		 DFKV_RDMA_REPLY_DATA_MAX : DFKV_RDMA_INLINE_WANT);
	conn->rbuf = malloc(conn->rlen * depth);
	if (!conn->rbuf)
		return DFKV_E_NOMEM;
	conn->rmr = ibv_reg_mr(conn->dev->pd, conn->rbuf, conn->rlen * depth,
			       IBV_ACCESS_LOCAL_WRITE);
	if (!conn->rmr)
		return DFKV_E_RAIL;
	for (uint32_t i = 0; i < depth; i++) {
		struct ibv_sge sge = { (uintptr_t)(conn->rbuf + i * conn->rlen),
				       (uint32_t)conn->rlen, conn->rmr->lkey };
		struct ibv_recv_wr wr = { .wr_id = i, .sg_list = &sge,
					  .num_sge = 1 }, *bad;

		if (ibv_post_recv(conn->id->qp, &wr, &bad))
			return DFKV_E_RAIL;
	}
	return 0;
}

/*
 * Connect with the RDMA HELLO asking for depth, and take what the node
 * grants (depth, inline size, descriptors, max_value_bytes);
 * DFKV_E_PROTO when its reply or grant is not one we can use.
 */
static int conn_establish(struct rconn *conn, uint32_t depth,
			  uint64_t deadline)
{
	struct rdma_conn_param cp = { 0 };
	uint8_t h[DFKV_RDMA_HELLO_LEN] = { 0 };
	struct rdma_cm_event *ev;
	const uint8_t *sh;

	h[0] = DFKV_EPOCH_RDMA;
	h[2] = (uint8_t)depth;
	h[3] = (uint8_t)(depth >> 8);
	dfkv_put_le32(h + 4, DFKV_RDMA_INLINE_WANT);
	dfkv_put_le32(h + 8, DFKV_RDMA_DESC_WANT);
	cp.private_data = h;
	cp.private_data_len = sizeof(h);
	cp.responder_resources = 16;
	cp.initiator_depth = 16;
	cp.retry_count = 7;
	cp.rnr_retry_count = 6;		/* the node refuses 7 (infinite) */
	if (rdma_connect(conn->id, &cp))
		return DFKV_E_UNAVAILABLE;
	if (cm_wait(conn, deadline, RDMA_CM_EVENT_ESTABLISHED, &ev))
		return DFKV_E_UNAVAILABLE;
	sh = ev->param.conn.private_data;
	if (!sh || ev->param.conn.private_data_len < DFKV_RDMA_HELLO_LEN ||
	    sh[0] != DFKV_EPOCH_RDMA || sh[1] != DFKV_STATUS_OK) {
		rdma_ack_cm_event(ev);
		return DFKV_E_PROTO;
	}
	conn->depth = sh[2] | (uint32_t)sh[3] << 8;
	conn->inline_max = dfkv_get_le32(sh + 4);
	conn->max_desc = dfkv_get_le32(sh + 8);
	conn->max_value = dfkv_get_le64(sh + 24);
	rdma_ack_cm_event(ev);
	if (!conn->depth || conn->depth > depth || !conn->max_desc ||
	    conn->inline_max > DFKV_RDMA_INLINE_WANT ||
	    conn->max_desc > DFKV_RDMA_DESC_WANT)
		return DFKV_E_PROTO;
	return 0;
}

/* The send slots for the granted depth, inline size and descriptors. */
static int conn_sends(struct rconn *conn)
{
	conn->slen = DFKV_RDMA_REQ_HDR_LEN +
		(conn->inline_max > conn->max_desc * DFKV_RDMA_DESC_LEN ?
		 conn->inline_max : conn->max_desc * DFKV_RDMA_DESC_LEN);
	conn->sbuf = malloc(conn->slen * conn->depth);
	conn->send_busy = calloc(conn->depth, sizeof(*conn->send_busy));
	if (!conn->sbuf || !conn->send_busy)
		return DFKV_E_NOMEM;
	conn->smr = ibv_reg_mr(conn->dev->pd, conn->sbuf,
			       conn->slen * conn->depth, 0);
	return conn->smr ? 0 : DFKV_E_RAIL;
}

/*
 * A new connection to p over rail, established and (with a tenant
 * secret) through the handshake; NULL and *status when it could not be
 * made: DFKV_E_NOMEM, DFKV_E_PROTO for a node whose grant we cannot use,
 * DFKV_E_AUTH for a node that failed the handshake (the peer answered),
 * DFKV_E_RAIL when the rail's device failed, else DFKV_E_NODEV: p was
 * not reached over this rail (no route, a route over another device, no
 * answer), which another rail may still do.
 */
static struct rconn *conn_open(struct dfkv_client *c, struct dfkv_peer *p,
			       int rail, int *status)
{
	uint64_t deadline = dfkv_now_ms() + c->opt.connect_timeout_ms;
	uint32_t depth = c->opt.batch_concurrency > RDMA_DEPTH_WANT ?
		c->opt.batch_concurrency : RDMA_DEPTH_WANT;
	struct rconn *conn = conn_alloc(p, rail);
	int err;

	*status = DFKV_E_NODEV;
	if (!conn) {
		*status = DFKV_E_NOMEM;
		return NULL;
	}
	atomic_fetch_add(&c->connects, 1);
	err = conn_route(c, conn, deadline);
	/* sized for what the server may grant at most */
	if (depth > 128)
		depth = 128;
	if (!err)
		err = conn_verbs(c, conn, depth);
	if (!err) {
		err = conn_establish(conn, depth, deadline);
		if (err == DFKV_E_PROTO) {
			*status = err;
			conn_close(conn);
			return NULL;
		}
	}
	if (!err)
		err = conn_sends(conn);
	if (!err) {
		atomic_store(&p->max_value, conn->max_value);
		err = c->has_secret ? conn_handshake(c, conn, deadline) : 0;
		if (!err)
			return conn;
	}
	if (err == DFKV_E_AUTH || err == DFKV_E_RAIL || err == DFKV_E_NOMEM)
		*status = err;
	atomic_fetch_add(&c->conn_failures, 1);
	conn_close(conn);
	return NULL;
}

static int rdma_peer_init(struct dfkv_client *c, struct dfkv_peer *p)
{
	uint16_t port = (uint16_t)(c->opt.rdma_port ? c->opt.rdma_port :
				   DFKV_PORT_RDMA);

	struct dfkv_rdma *rd = rdma_of(c);
	int err;

	if (!rd)
		return DFKV_E_NODEV;
	for (size_t i = 0; i < rd->ncand; i++) {
		err = dfkv_pool_init(&rpeer_of(p)->rail[i],
				     c->opt.conns_per_peer);
		if (err)
			return err;
	}
	return dfkv_net_peer_init(c, p, port);
}

static void conn_close_pooled(void *conn)
{
	conn_close(conn);
}

static void rdma_peer_fini(struct dfkv_client *c, struct dfkv_peer *p)
{
	struct rpeer *rp = rpeer_of(p);
	void *conn;

	(void)c;
	for (size_t i = 0; i < RDEV_MAX; i++) {
		if (!rp->rail[i].idle)
			continue;
		while ((conn = dfkv_pool_take(&rp->rail[i])))
			conn_close(conn);
		dfkv_pool_fini(&rp->rail[i]);
	}
	dfkv_net_peer_fini(p, conn_close_pooled);
}

/* A pooled connection the node has not disconnected meanwhile. */
static bool idle_ok(struct rconn *conn)
{
	struct pollfd pfd = { .fd = conn->ch->fd, .events = POLLIN };

	return poll(&pfd, 1, 0) == 0;	/* no CM event (DISCONNECTED) */
}

/* A connection to p over rail: pooled, or made now (conn_open). */
static struct rconn *conn_get(struct dfkv_client *c, struct dfkv_peer *p,
			      int rail, int *status)
{
	struct rconn *conn;

	while ((conn = dfkv_pool_take(&rpeer_of(p)->rail[rail])) &&
	       !idle_ok(conn))
		conn_close(conn);
	if (conn)
		return conn;
	return conn_open(c, p, rail, status);
}

static void rconn_put(struct dfkv_client *c, struct rconn *conn, bool healthy)
{
	struct dfkv_pool *pool = &rpeer_of(conn->base.peer)->rail[conn->rail];

	dfkv_conn_reset(&conn->base, false);
	for (uint32_t i = 0; healthy && i < conn->depth; i++)
		if (conn->send_busy[i])
			healthy = false;	/* a SEND still unreported */
	if (healthy && !conn->broken &&
	    dfkv_pool_give(pool, c->opt.conns_per_peer, conn))
		return;
	conn_close(conn);
}

static void rdma_conn_put(struct dfkv_client *c, struct dfkv_conn *conn,
			  bool healthy)
{
	rconn_put(c, rconn_of(conn), healthy);
}

/* ------------------------------------------------------------- framing */

/* Descriptors for the segments of a value; 0 or a status. */
static int item_descs(struct dfkv_client *c, struct rconn *conn,
		      struct ritem *it, const struct iovec *seg, size_t nseg,
		      uint64_t total, bool to_server)
{
	int access = to_server ? IBV_ACCESS_REMOTE_READ :
		IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE;
	size_t nd = 0;
	int err;

	/* segments of at most 2^31 bytes each */
	for (size_t s = 0; s < nseg; s++)
		nd += (seg[s].iov_len + (1u << 31) - 1) >> 31;
	if (nd > conn->max_desc) {
		/* too many pieces: one bounce buffer */
		it->bounce = malloc(total ? total : 1);
		if (!it->bounce)
			return DFKV_E_NOMEM;
		if (to_server)
			for (size_t s = 0, o = 0; s < nseg; o += seg[s].iov_len, s++)
				memcpy(it->bounce + o, seg[s].iov_base,
				       seg[s].iov_len);
		nd = (total + (1u << 31) - 1) >> 31;
	}
	it->desc = malloc(nd * DFKV_RDMA_DESC_LEN);
	if (!it->desc)
		return DFKV_E_NOMEM;
	it->ndesc = 0;
	for (size_t s = 0; s < (it->bounce ? 1 : nseg); s++) {
		uint8_t *base = it->bounce ? it->bounce : seg[s].iov_base;
		uint64_t len = it->bounce ? total : seg[s].iov_len;
		uint32_t rkey;

		err = mem_key(c, conn, it, base, len, access, &rkey);
		if (err)
			return err;
		for (uint64_t o = 0; o < len; o += 1u << 31) {
			uint8_t *d = it->desc + it->ndesc++ * DFKV_RDMA_DESC_LEN;
			uint64_t k = len - o > (1u << 31) ? 1u << 31 : len - o;

			dfkv_put_le64(d, (uintptr_t)(base + o));
			dfkv_put_le32(d + 8, rkey);
			dfkv_put_le32(d + 12, (uint32_t)k);
		}
	}
	return 0;
}

/* The segments of a request's value or buffer. */
static size_t item_segs(struct dfkv_req *r, bool put, struct iovec *one,
			const struct iovec **segs)
{
	if (r->iov) {
		*segs = r->iov;
		return r->iovcnt;
	}
	*one = put ? (struct iovec){ (void *)r->val, (size_t)r->val_len } :
		(struct iovec){ r->buf, (size_t)r->cap };
	*segs = one;
	return 1;
}

/* A small payload (key list, handshake) inline, else as a descriptor. */
static int item_payload(struct dfkv_client *c, struct rconn *conn,
			struct ritem *it, uint8_t *buf, uint64_t len)
{
	struct iovec v = { buf, (size_t)len };

	it->w.payload_len = len;
	if (len <= conn->inline_max) {
		it->inline_payload = true;
		it->payload = buf;
		return 0;
	}
	return item_descs(c, conn, it, &v, 1, len, true);
}

/* Encode the request; the payload inline or as descriptors. */
static int item_prepare(struct dfkv_client *c, struct rconn *conn,
			struct ritem *it)
{
	struct dfkv_req *r = it->base.r;
	const struct iovec *segs;
	struct iovec one;
	size_t nseg;

	dfkv_req_wire(r, DFKV_EPOCH_RDMA, &it->w);
	switch (r->op) {
	case DFKV_OP_PUT:
		nseg = item_segs(r, true, &one, &segs);
		if (r->val_len <= conn->inline_max) {
			it->inline_payload = true;
			if (nseg == 1) {
				it->payload = segs[0].iov_base;
				return 0;
			}
			it->bounce = malloc(r->val_len);
			if (!it->bounce)
				return DFKV_E_NOMEM;
			for (size_t s = 0, o = 0; s < nseg; o += segs[s].iov_len, s++)
				memcpy(it->bounce + o, segs[s].iov_base,
				       segs[s].iov_len);
			it->payload = it->bounce;
			return 0;
		}
		return item_descs(c, conn, it, segs, nseg, r->val_len, true);
	case DFKV_OP_GET:
		if (r->cap <= conn->inline_max)
			return 0;	/* the data comes in the reply */
		nseg = item_segs(r, false, &one, &segs);
		return item_descs(c, conn, it, segs, nseg, r->cap, false);
	case DFKV_OP_TOUCH:
	case DFKV_OP_PROBE:
	case DFKV_OP_LEASE: {
		uint64_t kl = (uint64_t)r->nkeys * DFKV_BLOCK_KEY_LEN;

		it->keys = malloc(kl);
		if (!it->keys)
			return DFKV_E_NOMEM;
		dfkv_wire_keys_encode(r->keys, r->nkeys, it->keys);
		return item_payload(c, conn, it, it->keys, kl);
	}
	case DFKV_OP_HELLO:
	case DFKV_OP_AUTH:
		return item_payload(c, conn, it, (void *)r->val, r->val_len);
	default:
		return 0;
	}
}

/* Copy reply data (inline) into the request's destination. */
static void data_scatter(struct dfkv_req *r, const uint8_t *src, uint64_t n)
{
	const struct iovec *segs;
	struct iovec one;
	size_t nseg = item_segs(r, false, &one, &segs);

	for (size_t s = 0; s < nseg && n; s++) {
		uint64_t k = segs[s].iov_len < n ? segs[s].iov_len : n;

		memcpy(segs[s].iov_base, src, k);
		src += k;
		n -= k;
	}
}

/* A reply arrived for it: check its inline data, decode it into the request. */
static int item_complete(struct ritem *it, const uint8_t *buf, uint32_t len)
{
	struct dfkv_req *r = it->base.r;
	const uint8_t *data = buf + DFKV_RESP_PREFIX_LEN;
	struct dfkv_wire_resp resp;
	uint64_t inl;

	if (len < DFKV_RESP_PREFIX_LEN ||
	    dfkv_wire_resp_decode(buf, len, &it->w, &resp) ||
	    resp.epoch != DFKV_EPOCH_RDMA)
		return DFKV_E_PROTO;
	inl = len - DFKV_RESP_PREFIX_LEN;
	/* data comes inline unless a GET gave descriptors */
	if (resp.status == DFKV_STATUS_OK &&
	    ((r->op == DFKV_OP_GET && (resp.data_len > r->cap ||
				       (!it->ndesc && inl != resp.data_len))) ||
	     ((r->op == DFKV_OP_PROBE || r->op == DFKV_OP_LEASE ||
	       r->op == DFKV_OP_HELLO || r->op == DFKV_OP_AUTH) &&
	      inl != resp.data_len) ||
	     ((r->op == DFKV_OP_HELLO || r->op == DFKV_OP_AUTH) &&
	      inl > r->cap)))
		return DFKV_E_PROTO;
	dfkv_req_answer(r, &resp, data);
	if (r->status != DFKV_STATUS_OK)
		return 0;
	if (r->op == DFKV_OP_GET && !it->ndesc)
		data_scatter(r, data, inl);
	else if (r->op == DFKV_OP_GET && it->bounce)
		data_scatter(r, it->bounce, resp.data_len);
	else if (r->op == DFKV_OP_HELLO || r->op == DFKV_OP_AUTH)
		memcpy(r->buf, data, inl);
	return 0;
}

/* ---------------------------------------------------------------- exec */

/*
 * r could not go over rail: once more over another rail (rdma_exec), or
 * unavailable when it already had its second try or a lease holds its
 * connection.
 */
static void req_rail_failed(struct dfkv_req *r, int rail)
{
	if (r->rail_skip || r->conn) {
		r->status = DFKV_E_UNAVAILABLE;
		return;
	}
	r->status = DFKV_E_NOT_RUN;
	r->rail_skip = 1u << rail;
}

/*
 * conn failed: on evidence against its rail (DFKV_E_RAIL) the rail is
 * charged and the unanswered requests go to another rail; anything else
 * is the peer's (conn.c).
 */
static void conn_fail(struct dfkv_client *c, struct rconn *conn, int status)
{
	conn->broken = true;
	if (status != DFKV_E_RAIL) {
		dfkv_conn_fail(c, &conn->base, status);
		return;
	}
	dfkv_rail_failed(&rdma_of(c)->rails, conn->rail, dfkv_now_ms());
	atomic_fetch_add(&c->conn_failures, 1);
	for (size_t i = conn->base.recvd; i < conn->base.nq; i++)
		req_rail_failed(conn->base.q[i]->r, conn->rail);
	conn->base.recvd = conn->base.nq;
}

/* Post the SENDs the window and the send slots allow. */
static int conn_send(struct dfkv_client *c, struct rconn *conn)
{
	while (conn->base.sent < conn->base.nq &&
	       conn->base.sent - conn->base.recvd < conn->depth) {
		struct ritem *it = ritem_of(conn->base.q[conn->base.sent]);
		uint32_t slot = conn->base.sent % conn->depth;
		uint8_t *b = conn->sbuf + (size_t)slot * conn->slen;
		uint32_t len = DFKV_RDMA_REQ_HDR_LEN;
		struct ibv_sge sge;
		struct ibv_send_wr wr = { 0 }, *bad;

		/* the slot's last SEND, or too much of the send queue, is
		 * not reported yet */
		if (conn->send_busy[slot] ||
		    conn->sq_used + it->nwin + 1 > conn->sq_cap)
			return 0;
		for (size_t i = 0; i < it->nwin; i++) {
			struct ibv_send_wr bw = {
				.wr_id = WR_BIND << 32,
				.opcode = IBV_WR_BIND_MW,
				.send_flags = IBV_SEND_SIGNALED,
				.bind_mw = { .mw = it->wins[i].mw,
					     .rkey = it->wins[i].rkey,
					     .bind_info = it->wins[i].bind },
			};

			if (ibv_post_send(conn->id->qp, &bw, &bad))
				return DFKV_E_RAIL;
			conn->sq_used++;
		}
		dfkv_wire_req_encode(&it->w, b);
		dfkv_put_le32(b + DFKV_REQ_PREFIX_LEN,
			      it->inline_payload ? 0 : it->ndesc);
		if (it->inline_payload) {
			memcpy(b + len, it->payload, it->w.payload_len);
			len += (uint32_t)it->w.payload_len;
		} else if (it->ndesc) {
			memcpy(b + len, it->desc, it->ndesc * DFKV_RDMA_DESC_LEN);
			len += it->ndesc * DFKV_RDMA_DESC_LEN;
		}
		sge = (struct ibv_sge){ (uintptr_t)b, len, conn->smr->lkey };
		wr.wr_id = WR_SEND << 32 | slot;
		wr.sg_list = &sge;
		wr.num_sge = 1;
		wr.opcode = IBV_WR_SEND;
		wr.send_flags = IBV_SEND_SIGNALED;
		if (ibv_post_send(conn->id->qp, &wr, &bad))
			return DFKV_E_RAIL;
		conn->send_busy[slot] = true;
		conn->sq_used++;
		if (it->base.r->op == DFKV_OP_PUT)
			atomic_fetch_add(&c->bytes_out, it->w.payload_len);
		conn->base.sent++;
	}
	(void)c;
	return 0;
}

/*
 * A completion's failure: the node refusing the access or the request is
 * the peer's doing, anything else (retries exhausted, a local error, a
 * flushed work request) is evidence against the rail.
 */
static int wc_failure(enum ibv_wc_status st)
{
	switch (st) {
	case IBV_WC_REM_ACCESS_ERR:
	case IBV_WC_REM_INV_REQ_ERR:
	case IBV_WC_REM_OP_ERR:
	case IBV_WC_REM_ABORT_ERR:
	case IBV_WC_REM_INV_RD_REQ_ERR:
		return DFKV_E_UNAVAILABLE;
	default:
		return DFKV_E_RAIL;
	}
}

/* Reap completions: how many, or a negative status on failure. */
static int conn_poll(struct dfkv_client *c, struct rconn *conn)
{
	struct ibv_wc wc[16];
	int n, got = 0;

	while ((n = ibv_poll_cq(conn->cq, 16, wc)) > 0) {
		got += n;
		for (int i = 0; i < n; i++) {
			uint32_t idx = (uint32_t)wc[i].wr_id;
			uint64_t kind = wc[i].wr_id >> 32;

			if (wc[i].status != IBV_WC_SUCCESS)
				return wc_failure(wc[i].status);
			if (kind) {	/* a SEND or a window's bind */
				conn->sq_used--;
				if (kind == WR_SEND)
					conn->send_busy[idx] = false;
				continue;
			}
			if (conn->base.recvd >= conn->base.sent)
				return DFKV_E_PROTO;	/* unasked reply */
			{
				struct ritem *it =
					ritem_of(conn->base.q[conn->base.recvd]);
				uint8_t *b = conn->rbuf + (size_t)idx * conn->rlen;
				struct ibv_sge sge = { (uintptr_t)b,
						       (uint32_t)conn->rlen,
						       conn->rmr->lkey };
				struct ibv_recv_wr wr = { .wr_id = idx,
							  .sg_list = &sge,
							  .num_sge = 1 }, *bad;
				int err = item_complete(it, b,
							wc[i].byte_len);

				if (err)
					return err;
				if (it->base.r->op == DFKV_OP_GET &&
				    it->base.r->status == DFKV_STATUS_OK)
					atomic_fetch_add(&c->bytes_in,
							 it->base.r->data_len);
				conn->base.recvd++;
				if (ibv_post_recv(conn->id->qp, &wr, &bad))
					return DFKV_E_RAIL;
			}
		}
	}
	return n < 0 ? DFKV_E_RAIL : got;
}

/*
 * Send r alone on a connection that carries nothing else yet, and wait
 * for its reply until deadline (the handshake's requests).
 */
static int conn_call(struct dfkv_client *c, struct rconn *conn,
		     struct dfkv_req *r, uint64_t deadline)
{
	struct pollfd pfd = { .fd = conn->cc->fd, .events = POLLIN };
	struct ritem it = { .base.r = r };
	int err = item_prepare(c, conn, &it);

	conn->base.nq = conn->base.sent = conn->base.recvd = 0;
	if (!err && !dfkv_conn_push(&conn->base, &it.base))
		err = DFKV_E_NOMEM;
	while (!err && conn->base.recvd < conn->base.nq) {
		uint64_t now = dfkv_now_ms();
		struct ibv_cq *cq;
		void *ctx;
		int rc = conn_send(c, conn);

		/* arm, then look: no completion slips by */
		if (!rc && ibv_req_notify_cq(conn->cq, 0))
			rc = DFKV_E_RAIL;
		if (!rc)
			rc = conn_poll(c, conn);
		if (rc < 0)
			err = rc;
		else if (!rc && now >= deadline)
			err = DFKV_E_TIMEOUT;
		else if (!rc && poll(&pfd, 1, (int)(deadline - now)) > 0 &&
			 !ibv_get_cq_event(conn->cc, &cq, &ctx))
			ibv_ack_cq_events(cq, 1);
	}
	item_release(&it);
	conn->base.nq = conn->base.sent = conn->base.recvd = 0;
	return err;
}

/*
 * The AUTH2 handshake (SPEC.md 9): HELLO, then AUTH for the client's
 * tenant; DFKV_E_AUTH when the node failed it.
 */
static int conn_handshake(struct dfkv_client *c, struct rconn *conn,
			  uint64_t deadline)
{
	struct dfkv_handshake h;
	enum dfkv_hs_next next;
	int err;

	if (!dfkv_handshake_start(&h, conn->base.peer))
		return DFKV_E_SYS;
	err = conn_call(c, conn, &h.hello, deadline);
	if (err)
		return err;
	next = dfkv_handshake_hello(c, &h);
	if (next == DFKV_HS_AUTH) {
		err = conn_call(c, conn, &h.auth, deadline);
		if (err)
			return err;
		next = dfkv_handshake_auth(&h);
	}
	return next == DFKV_HS_DONE ? 0 : DFKV_E_AUTH;
}

static bool conn_sends_busy(const struct rconn *conn)
{
	for (uint32_t i = 0; i < conn->depth; i++)
		if (conn->send_busy[i])
			return true;
	return false;
}

/*
 * The port events of every rail since the last look (its own context's
 * async events): a port that left ACTIVE takes its rail out, and the
 * rail's idle connections go (whatever the link loss did to them, the
 * peer is not to blame for it); one ACTIVE again brings it back
 * (rail.c).
 */
static void rails_watch(struct dfkv_client *c)
{
	struct dfkv_rdma *rd = rdma_of(c);

	for (size_t i = 0; i < rd->ncand; i++) {
		struct ibv_async_event ev;
		bool seen = false, up;

		while (!ibv_get_async_event(rd->rctx[i], &ev)) {
			seen |= ev.event_type == IBV_EVENT_PORT_ERR ||
				ev.event_type == IBV_EVENT_PORT_ACTIVE ||
				ev.event_type == IBV_EVENT_DEVICE_FATAL;
			ibv_ack_async_event(&ev);
		}
		if (!seen)
			continue;
		up = ctx_up(rd->rctx[i]);
		dfkv_rail_port(&rd->rails, (int)i, up, dfkv_now_ms());
		for (size_t k = 0; !up && k < c->npeers; k++) {
			struct dfkv_pool *pool;
			struct rconn *conn;

			if (c->peers[k].t != &dfkv_rdma_transport)
				continue;
			pool = &rpeer_of(&c->peers[k])->rail[i];
			while (pool->idle && (conn = dfkv_pool_take(pool)))
				conn_close(conn);
		}
	}
}

static void rdma_begin(struct dfkv_client *c, size_t n)
{
	(void)n;
	rails_watch(c);
	pthread_rwlock_rdlock(&rdma_of(c)->pools_lock);
}

static void rdma_end(struct dfkv_client *c)
{
	pthread_rwlock_unlock(&rdma_of(c)->pools_lock);
}

/* The NUMA node of the calling thread, -1 when unknown. */
static int caller_node(void)
{
	int cpu = sched_getcpu();

	return numa_available() >= 0 && cpu >= 0 ? numa_node_of_cpu(cpu) : -1;
}

/* One peer's admissions in an exec: the connections taken per rail. */
struct admit {
	struct dfkv_conn **conns;	/* the exec's slots for this peer */
	size_t k;			/* used */
	size_t per_rail;		/* connections a rail may take */
	size_t n[RDEV_MAX], rr[RDEV_MAX];
	bool full[RDEV_MAX];		/* no more for this rail */
	int status[RDEV_MAX];		/* 0, or why rail gave none */
};

/*
 * A connection over rail for the next request: a new one while the rail
 * has fewer than per_rail, else the rail's next in turn; NULL with
 * a->status[rail] set when the rail gives none.
 */
static struct rconn *admit_conn(struct dfkv_client *c, struct dfkv_peer *p,
				struct admit *a, int rail)
{
	size_t want, seen = 0;
	struct rconn *conn;
	int status;

	if (a->status[rail])
		return NULL;
	if (!a->full[rail] && a->n[rail] < a->per_rail) {
		conn = conn_get(c, p, rail, &status);
		if (conn) {
			dfkv_conn_reset(&conn->base, true);
			a->conns[a->k++] = &conn->base;
			a->n[rail]++;
			return conn;
		}
		a->status[rail] = status;
		if (a->status[rail] == DFKV_E_RAIL)
			dfkv_rail_failed(&rdma_of(c)->rails, rail,
					 dfkv_now_ms());
		if (a->status[rail] == DFKV_E_NODEV)
			atomic_store(&rpeer_of(p)->noroute_until[rail],
				     dfkv_now_ms() + c->opt.cooldown_ms);
		if (!a->n[rail])
			return NULL;
		/* what the rail has will do */
		a->status[rail] = 0;
		a->full[rail] = true;
	}
	want = a->rr[rail]++ % a->n[rail];
	for (size_t i = 0; i < a->k; i++) {
		conn = rconn_of(a->conns[i]);
		if (conn->rail == rail && seen++ == want)
			return conn;
	}
	return NULL;
}

/*
 * The requests of one peer: each admitted on a rail (its credit taken),
 * queued on a connection over that rail and prepared for it; the ones a
 * lease's connection holds go there.  A rail that gives no connection
 * sends its requests to another rail (once), a peer that refuses one
 * fails the peer's remaining requests.  Returns the connections used.
 */
static size_t rdma_assign(struct dfkv_client *c, struct dfkv_peer *p,
			  struct dfkv_req *const *reqs, void *items, size_t n,
			  struct dfkv_conn **conns, uint64_t now)
{
	struct dfkv_rdma *rd = rdma_of(c);
	struct ritem *it = items;
	struct dfkv_conn *held;
	size_t want = dfkv_conn_want(c, p, reqs, n, &held);
	struct admit a = { .conns = conns, .per_rail = want };
	int node = caller_node();
	uint32_t noroute = 0;

	if (!want)
		return 0;
	for (size_t i = 0; i < rd->ncand; i++)
		if (now < atomic_load(&rpeer_of(p)->noroute_until[i]))
			noroute |= 1u << i;
	if (held) {
		conns[a.k++] = held;
		dfkv_conn_reset(held, true);
	}
	for (size_t i = 0; i < n; i++) {
		struct dfkv_req *r = it[i].base.r;
		struct rconn *conn;
		int rail, err;

		if (r->peer != p)
			continue;
		if (held) {
			conn = rconn_of(held);
		} else {
			rail = dfkv_rail_admit(&rd->rails, node,
					       r->rail_skip | noroute, now);
			if (rail < 0) {
				r->status = DFKV_E_UNAVAILABLE;
				/* no rail reaches it: the peer is down */
				if (noroute == (1u << rd->ncand) - 1)
					dfkv_peer_failed(c, p, r->status);
				continue;
			}
			it[i].rail = rail;
			conn = admit_conn(c, p, &a, rail);
			if (!conn && (a.status[rail] == DFKV_E_RAIL ||
				      a.status[rail] == DFKV_E_NODEV)) {
				if (a.status[rail] == DFKV_E_NODEV)
					noroute |= 1u << rail;
				req_rail_failed(r, rail);
				continue;
			}
			if (!conn) {
				/* the peer answered no (grant, handshake) */
				for (size_t j = i; j < n; j++)
					if (it[j].base.r->peer == p)
						it[j].base.r->status =
							a.status[rail];
				if (a.status[rail] != DFKV_E_NOMEM)
					dfkv_peer_failed(c, p, a.status[rail]);
				break;
			}
		}
		err = item_prepare(c, conn, &it[i]);
		if (err)
			r->status = err;
		else if (!dfkv_conn_push(&conn->base, &it[i].base))
			r->status = DFKV_E_NOMEM;
	}
	return a.k;
}

static void rdma_advance(struct dfkv_client *c, struct dfkv_conn *base,
			 uint64_t now)
{
	struct rconn *conn = rconn_of(base);
	int rc = conn_poll(c, conn);

	(void)now;
	if (rc >= 0)
		rc = conn_send(c, conn);
	if (rc < 0)
		conn_fail(c, conn, rc);
}

/*
 * Arm the completion channel, then look again (no completion slips by);
 * the connection's pollfds are that channel and its CM event channel,
 * and the loop looks again after 100 ms at the most.  A connection whose
 * rail's port went down fails now (its requests go to another rail)
 * rather than when the transport's retries run out.
 */
static int rdma_arm(struct dfkv_client *c, struct dfkv_conn *base,
		    uint64_t now, uint64_t deadline, struct pollfd *pfd,
		    uint64_t *wait)
{
	struct dfkv_rdma *rd = rdma_of(c);
	struct rconn *conn = rconn_of(base);
	int rc;

	rails_watch(c);
	if (atomic_load(&rd->rails.r[conn->rail].down)) {
		conn_fail(c, conn, DFKV_E_RAIL);
		return -1;
	}
	if (now >= deadline) {
		conn_fail(c, conn, DFKV_E_TIMEOUT);
		return -1;
	}
	if (ibv_req_notify_cq(conn->cq, 0)) {
		conn_fail(c, conn, DFKV_E_RAIL);
		return -1;
	}
	rc = conn_poll(c, conn);
	if (rc < 0) {
		conn_fail(c, conn, rc);
		return -1;
	}
	pfd[0].fd = conn->cc->fd;
	pfd[1].fd = conn->ch->fd;
	pfd[0].events = pfd[1].events = POLLIN;
	pfd[0].revents = pfd[1].revents = 0;
	if (*wait > 100)
		*wait = 100;
	return rc > 0;
}

static void rdma_events(struct dfkv_client *c, struct dfkv_conn *base,
			const struct pollfd *pfd)
{
	struct rconn *conn = rconn_of(base);
	struct rdma_cm_event *ev;
	struct ibv_cq *cq;
	void *ctx;

	if ((pfd[0].revents & POLLIN) &&
	    !ibv_get_cq_event(conn->cc, &cq, &ctx))
		ibv_ack_cq_events(cq, 1);
	/*
	 * A CM event on an established connection is its end (the node
	 * disconnected: the peer's; the device went away: the rail's): fail
	 * now rather than after the transport's retries.
	 */
	if ((pfd[1].revents & POLLIN) && !rdma_get_cm_event(conn->ch, &ev)) {
		int status = ev->event == RDMA_CM_EVENT_DEVICE_REMOVAL ?
			DFKV_E_RAIL : DFKV_E_UNAVAILABLE;

		rdma_ack_cm_event(ev);
		conn_fail(c, conn, status);
	}
}

static void rdma_fail(struct dfkv_client *c, struct dfkv_conn *base,
		      int status)
{
	conn_fail(c, rconn_of(base), status);
}

/*
 * The last SENDs' completions are due (their replies came); the
 * requests' windows go now, their other keys and buffers once a broken
 * connection was closed (item_release after conn_put).
 */
static bool rdma_settle(struct dfkv_client *c, struct dfkv_conn *base)
{
	struct rconn *conn = rconn_of(base);
	bool healthy = !conn->broken && base->recvd == base->nq;

	for (int t = 0; healthy && t < 1000 && conn_sends_busy(conn); t++)
		if (conn_poll(c, conn) < 0)
			healthy = false;
	for (size_t j = 0; j < base->nq; j++)
		item_windows_release(ritem_of(base->q[j]));
	return healthy;
}

/* Connections an exec may take per peer: as many per rail as TCP's. */
static size_t rdma_peer_conns(struct dfkv_client *c)
{
	return rdma_of(c)->ncand * c->opt.conns_per_peer;
}

static int rdma_item_init(struct dfkv_item *it)
{
	ritem_of(it)->rail = -1;
	return 0;
}

/* The request is over: its rail's credit back, a reply ends the rail's
 * failure streak. */
static void rdma_item_release(struct dfkv_client *c, struct dfkv_item *it)
{
	struct ritem *ri = ritem_of(it);

	if (ri->rail >= 0)
		dfkv_rail_done(&rdma_of(c)->rails, ri->rail,
			       it->r->status >= 0);
	item_release(ri);
}

/*
 * Run reqs (dfkv_conn_exec), then once more those a rail failed, over
 * another rail under the same deadline; what is still not run then was
 * not delivered.
 */
static void rdma_exec(struct dfkv_client *c, struct dfkv_req **reqs, size_t n,
		      uint64_t deadline)
{
	struct dfkv_req **again = NULL;
	size_t na = 0, cap = 0;

	atomic_fetch_add(&c->rdma_reqs, n);
	for (size_t i = 0; i < n; i++)
		reqs[i]->rail_skip = 0;
	dfkv_conn_exec(c, reqs, n, deadline);
	for (size_t i = 0; i < n; i++)
		if (reqs[i]->status == DFKV_E_NOT_RUN && reqs[i]->rail_skip &&
		    !dfkv_push(again, na, cap, reqs[i]))
			reqs[i]->status = DFKV_E_NOMEM;
	if (na)
		dfkv_conn_exec(c, again, na, deadline);
	free(again);
	for (size_t i = 0; i < n; i++)
		if (reqs[i]->status == DFKV_E_NOT_RUN)
			reqs[i]->status = DFKV_E_UNAVAILABLE;
}

static const struct dfkv_net_ops rdma_net_ops = {
	.item_size = sizeof(struct ritem),
	.nfds = 2,
	.peer_conns = rdma_peer_conns,
	.item_init = rdma_item_init,
	.begin = rdma_begin,
	.end = rdma_end,
	.assign = rdma_assign,
	.advance = rdma_advance,
	.arm = rdma_arm,
	.events = rdma_events,
	.fail = rdma_fail,
	.settle = rdma_settle,
	.item_release = rdma_item_release,
};

const struct dfkv_transport_ops dfkv_rdma_transport = {
	.name = "rdma",
	.id = DFKV_T_RDMA,
	.client_init = rdma_client_init,
	.client_fini = rdma_client_fini,
	.peer_size = sizeof(struct rpeer),
	.init = rdma_peer_init,
	.fini = rdma_peer_fini,
	.exec = rdma_exec,
	.net = &rdma_net_ops,
	.conn_put = rdma_conn_put,
};

/* ------------------------------------------------------------- stats */

size_t dfkv_rdma_stats(struct dfkv_client *c, char *buf, size_t cap)
{
	static const char *const kind[] = { "requests", "failures",
					    "quarantines" };
	static const char *const help[] = {
		"Requests admitted on each RDMA rail.",
		"Host-local failures charged to each RDMA rail.",
		"Times each RDMA rail was quarantined.",
	};
	struct dfkv_rdma *rd = rdma_of(c);
	uint64_t now = dfkv_now_ms();
	size_t len = 0;

#define OUT(...) (len += (size_t)snprintf(buf + (len < cap ? len : cap), \
					  len < cap ? cap - len : 0, \
					  __VA_ARGS__))
	if (!rd)
		return 0;
	for (size_t k = 0; k < 3; k++) {
		OUT("# HELP dfkv_client_rdma_rail_%s_total %s\n"
		    "# TYPE dfkv_client_rdma_rail_%s_total counter\n",
		    kind[k], help[k], kind[k]);
		for (size_t i = 0; i < rd->ncand; i++) {
			struct dfkv_rail *r = &rd->rails.r[i];
			_Atomic uint64_t *v[] = { &r->admitted, &r->failures,
						  &r->quarantines };

			OUT("dfkv_client_rdma_rail_%s_total{rail=\"%s\"} "
			    "%llu\n", kind[k], rd->cand[i],
			    (unsigned long long)atomic_load(v[k]));
		}
	}
	OUT("# HELP dfkv_client_rdma_rail_up Whether each RDMA rail admits "
	    "requests now (0: quarantined or its port down).\n"
	    "# TYPE dfkv_client_rdma_rail_up gauge\n");
	for (size_t i = 0; i < rd->ncand; i++)
		OUT("dfkv_client_rdma_rail_up{rail=\"%s\"} %d\n", rd->cand[i],
		    dfkv_rail_admissible(&rd->rails, (int)i, now));
	OUT("# HELP dfkv_client_rdma_numa_fallbacks_total Admissions that "
	    "found no NUMA-local rail admissible and went to another.\n"
	    "# TYPE dfkv_client_rdma_numa_fallbacks_total counter\n"
	    "dfkv_client_rdma_numa_fallbacks_total %llu\n",
	    (unsigned long long)atomic_load(&rd->rails.numa_fallbacks));
#undef OUT
	return len;
}
