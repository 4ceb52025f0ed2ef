// SPDX-License-Identifier: (GPL-2.0 WITH Linux-syscall-note) OR MIT
/*
 * libdfkv connection handling shared by the TCP and RDMA transports (see
 * conn.h and transport.h): their per-peer state (the resolved address,
 * the pool of idle connections), the request loop of an exec with its
 * work queues and the connections leases keep, and the one mapping of
 * requests to wire prefixes and of replies back into requests.
 */
#include <errno.h>
#include <netdb.h>
#include <poll.h>
#include <stdio.h>

#include "conn.h"
#include "transport.h"

int dfkv_pool_init(struct dfkv_pool *pool, size_t cap)
{
	pool->idle = calloc(cap, sizeof(*pool->idle));
	pool->n = 0;
	if (!pool->idle)
		return DFKV_E_NOMEM;
	pthread_mutex_init(&pool->lock, NULL);
	return 0;
}

void dfkv_pool_fini(struct dfkv_pool *pool)
{
	if (!pool->idle)
		return;
	pthread_mutex_destroy(&pool->lock);
	free(pool->idle);
	pool->idle = NULL;
	pool->n = 0;
}

void *dfkv_pool_take(struct dfkv_pool *pool)
{
	void *conn = NULL;

	pthread_mutex_lock(&pool->lock);
	if (pool->n)
		conn = pool->idle[--pool->n];
	pthread_mutex_unlock(&pool->lock);
	return conn;
}

bool dfkv_pool_give(struct dfkv_pool *pool, size_t cap, void *conn)
{
	bool pooled = false;

	pthread_mutex_lock(&pool->lock);
	if (pool->n < cap) {
		pool->idle[pool->n++] = conn;
		pooled = true;
	}
	pthread_mutex_unlock(&pool->lock);
	return pooled;
}

/* The peer's host at port (numeric), into ss and *len; 0 or DFKV_E_MEMBERS. */
static int peer_resolve(const struct dfkv_peer *p, uint16_t port,
			struct sockaddr_storage *ss, socklen_t *len)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM,
				  .ai_flags = AI_NUMERICSERV };
	struct addrinfo *res = NULL;
	char serv[8];

	if (!p->host[0])
		return DFKV_E_MEMBERS;
	snprintf(serv, sizeof(serv), "%u", port);
	if (getaddrinfo(p->host, serv, &hints, &res) || !res) {
		if (res)
			freeaddrinfo(res);
		return DFKV_E_MEMBERS;
	}
	memcpy(ss, res->ai_addr, res->ai_addrlen);
	*len = res->ai_addrlen;
	freeaddrinfo(res);
	return 0;
}

int dfkv_net_peer_init(struct dfkv_client *c, struct dfkv_peer *p,
		       uint16_t port)
{
	struct dfkv_net_peer *np = dfkv_net_peer(p);
	int err = dfkv_pool_init(&np->pool, c->opt.conns_per_peer);

	if (err)
		return err;
	return peer_resolve(p, port, &np->addr, &np->addrlen);
}

void dfkv_net_peer_fini(struct dfkv_peer *p, void (*close_conn)(void *conn))
{
	struct dfkv_net_peer *np = dfkv_net_peer(p);
	void *conn;

	if (!np->pool.idle)
		return;
	while ((conn = dfkv_pool_take(&np->pool)))
		close_conn(conn);
	dfkv_pool_fini(&np->pool);
}

void *dfkv_grow(void *arr, size_t *alloc, size_t size)
{
	size_t cap = *alloc ? 2 * *alloc : 16;
	void *q = realloc(arr, cap * size);

	if (q)
		*alloc = cap;
	return q;
}

void dfkv_conn_reset(struct dfkv_conn *conn, bool active)
{
	conn->nq = conn->sent = conn->recvd = 0;
	conn->active = active;
}

bool dfkv_conn_push(struct dfkv_conn *conn, struct dfkv_item *it)
{
	return dfkv_push(conn->q, conn->nq, conn->qcap, it);
}

void dfkv_conn_fail(struct dfkv_client *c, struct dfkv_conn *conn,
		    int status)
{
	for (size_t i = conn->recvd; i < conn->nq; i++)
		conn->q[i]->r->status = status;
	conn->recvd = conn->nq;
	atomic_fetch_add(&c->conn_failures, 1);
	dfkv_peer_failed(c, conn->peer, status);
}

size_t dfkv_conn_want(struct dfkv_client *c, struct dfkv_peer *p,
		      struct dfkv_req *const *reqs, size_t n,
		      struct dfkv_conn **held)
{
	size_t cnt = 0;

	*held = NULL;
	for (size_t i = 0; i < n; i++)
		if (reqs[i]->peer == p) {
			cnt++;
			if (reqs[i]->conn)
				*held = reqs[i]->conn;
		}
	if (!cnt)
		return 0;
	return *held ? 1 : cnt < c->opt.conns_per_peer ? cnt :
		c->opt.conns_per_peer;
}

/*
 * A request of an exec that conn carried, once the exec is over: a
 * granted lease keeps the connection if it is healthy (r->conn names it,
 * true); a RELEASE lets go of the connection it named.
 */
static bool lease_keeps(struct dfkv_req *r, struct dfkv_conn *conn,
			bool healthy)
{
	if (r->op == DFKV_OP_RELEASE) {
		r->conn = NULL;
		return false;
	}
	if (!healthy || r->op != DFKV_OP_LEASE ||
	    r->status != DFKV_STATUS_OK || !r->lease_id)
		return false;
	r->conn = conn;
	return true;
}

static bool conn_busy(const struct dfkv_conn *conn)
{
	return conn->active && conn->recvd < conn->nq;
}

/* One exec: its items, its connections and their pollfds. */
struct exec {
	struct dfkv_client *c;
	const struct dfkv_net_ops *ops;
	uint8_t *items;			/* n of ops->item_size */
	struct dfkv_conn **conns;
	size_t nc;
	struct pollfd *pfd;		/* ops->nfds per polled connection */
	struct dfkv_conn **pconn;	/* the polled connections */
};

static struct dfkv_item *exec_item(const struct exec *e, size_t i)
{
	return (struct dfkv_item *)(void *)(e->items + i * e->ops->item_size);
}

/*
 * One round: advance every busy connection, arm the ones still busy,
 * wait for them; false when none is left busy, or poll() failed.
 */
static bool exec_round(struct exec *e, uint64_t deadline)
{
	const struct dfkv_net_ops *ops = e->ops;
	uint64_t now = dfkv_now_ms();
	uint64_t wait = deadline > now ? deadline - now : 0;
	bool progress = false;
	size_t np = 0;
	int rc;

	for (size_t i = 0; i < e->nc; i++)
		if (conn_busy(e->conns[i]))
			ops->advance(e->c, e->conns[i], now);
	for (size_t i = 0; i < e->nc; i++) {
		struct dfkv_conn *conn = e->conns[i];

		if (!conn_busy(conn))
			continue;
		rc = ops->arm(e->c, conn, now, deadline,
			      e->pfd + np * ops->nfds, &wait);
		if (rc < 0)
			continue;
		progress |= rc > 0;
		e->pconn[np++] = conn;
	}
	if (!np)
		return false;
	if (progress)
		return true;
	rc = poll(e->pfd, np * ops->nfds, wait > INT32_MAX ? INT32_MAX :
		  (int)wait);
	if (rc < 0 && errno != EINTR)
		return false;
	for (size_t i = 0; i < np && rc > 0; i++)
		ops->events(e->c, e->pconn[i], e->pfd + i * ops->nfds);
	return true;
}

/* The exec is over: what is still pending timed out; leases keep their
 * connections, the others go back to their transport. */
static void exec_settle(struct exec *e)
{
	for (size_t i = 0; i < e->nc; i++)
		if (conn_busy(e->conns[i]))
			e->ops->fail(e->c, e->conns[i], DFKV_E_TIMEOUT);
	for (size_t i = 0; i < e->nc; i++) {
		struct dfkv_conn *conn = e->conns[i];
		bool healthy = e->ops->settle(e->c, conn);
		bool keep = false;

		/* a granted lease keeps its connection until RELEASE */
		for (size_t j = 0; j < conn->nq; j++)
			keep |= lease_keeps(conn->q[j]->r, conn, healthy);
		if (keep)
			conn->active = false;
		else
			conn->t->conn_put(e->c, conn, healthy);
	}
}

void dfkv_conn_exec(struct dfkv_client *c, struct dfkv_req **reqs, size_t n,
		    uint64_t deadline)
{
	const struct dfkv_net_ops *ops = reqs[0]->peer->t->net;
	size_t maxc = c->npeers * (ops->peer_conns ? ops->peer_conns(c) :
				   c->opt.conns_per_peer);
	struct exec e = {
		.c = c, .ops = ops,
		.items = calloc(n, ops->item_size),
		.conns = calloc(maxc ? maxc : 1, sizeof(*e.conns)),
		.pfd = calloc(maxc ? ops->nfds * maxc : ops->nfds,
			      sizeof(*e.pfd)),
		.pconn = calloc(maxc ? maxc : 1, sizeof(*e.pconn)),
	};
	uint64_t now;

	if (!e.items || !e.conns || !e.pfd || !e.pconn) {
		for (size_t i = 0; i < n; i++)
			reqs[i]->status = DFKV_E_NOMEM;
		goto out;
	}
	if (ops->begin)
		ops->begin(c, n);
	for (size_t i = 0; i < n; i++) {
		struct dfkv_item *it = exec_item(&e, i);
		int err = 0;

		it->r = reqs[i];
		if (ops->item_init)
			err = ops->item_init(it);
		if (err)
			reqs[i]->status = err;
	}
	now = dfkv_now_ms();
	for (size_t p = 0; p < c->npeers; p++)
		e.nc += ops->assign(c, &c->peers[p], reqs, e.items, n,
				    e.conns + e.nc, now);
	while (exec_round(&e, deadline))
		;
	exec_settle(&e);
	for (size_t i = 0; i < n; i++)
		ops->item_release(c, exec_item(&e, i));
	if (ops->end)
		ops->end(c);
out:
	free(e.items);
	free(e.conns);
	free(e.pfd);
	free(e.pconn);
}

void dfkv_req_wire(const struct dfkv_req *r, uint8_t epoch,
		   struct dfkv_wire_req *w)
{
	memset(w, 0, sizeof(*w));
	w->epoch = epoch;
	w->op = r->op;
	memcpy(w->id, r->key.id, DFKV_OBJECT_ID_LEN);
	w->tenant = r->key.tenant;
	switch (r->op) {
	case DFKV_OP_PUT:
	case DFKV_OP_HELLO:
	case DFKV_OP_AUTH:
		w->payload_len = r->val_len;
		break;
	case DFKV_OP_GET:
		/* never ask for more than fits: a wider range is TOO_LARGE */
		w->offset = r->offset;
		w->length = !r->length || r->length > r->cap ? r->cap :
			r->length;
		break;
	case DFKV_OP_TOUCH:
	case DFKV_OP_PROBE:
	case DFKV_OP_LEASE:
		w->payload_len = (uint64_t)r->nkeys * DFKV_BLOCK_KEY_LEN;
		if (r->op == DFKV_OP_TOUCH)
			w->offset = r->offset;		/* the walk */
		if (r->op == DFKV_OP_LEASE)
			w->length = r->length;		/* ttl */
		break;
	case DFKV_OP_RELEASE:
		w->offset = r->lease_id;
		break;
	default:
		break;
	}
	/* the keyed ops carry their keys in the payload */
	if (r->op == DFKV_OP_TOUCH || r->op == DFKV_OP_PROBE ||
	    r->op == DFKV_OP_LEASE || r->op == DFKV_OP_RELEASE) {
		memset(w->id, 0, sizeof(w->id));
		w->tenant = 0;
	}
}

void dfkv_req_answer(struct dfkv_req *r, const struct dfkv_wire_resp *resp,
		     const uint8_t *data)
{
	r->status = resp->status;
	r->stored_len = resp->stored_len;
	r->data_len = resp->data_len;
	if (r->status != DFKV_STATUS_OK)
		return;
	if (r->op == DFKV_OP_GET) {
		uint64_t range = r->stored_len - r->offset;

		if (r->length && r->length < range)
			range = r->length;
		if (range > r->cap) {
			r->status = DFKV_STATUS_TOO_LARGE;
			r->data_len = 0;
		}
	} else if (r->op == DFKV_OP_PROBE) {
		dfkv_wire_u64s_decode(data, r->nkeys, r->results);
		r->nr_hits = r->nkeys;
	} else if (r->op == DFKV_OP_LEASE) {
		r->lease_id = dfkv_get_le64(data);
		r->nr_hits = (uint32_t)(resp->data_len / 8 - 1);
		dfkv_wire_u64s_decode(data + 8, r->nr_hits, r->results);
	}
}
