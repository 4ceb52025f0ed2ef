// SPDX-License-Identifier: (GPL-2.0 WITH Linux-syscall-note) OR MIT
/*
 * libdfkv connection handling shared by the TCP and RDMA transports (see
 * conn.h and transport.h): their per-peer state (the resolved address,
 * the pool of idle connections), the growth of an exec's work queues, the connections
 * leases keep, and the one mapping of requests to wire prefixes and of
 * replies back into requests.
 */
#include <netdb.h>
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

bool dfkv_lease_keeps(struct dfkv_req *r, struct dfkv_conn *conn,
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
