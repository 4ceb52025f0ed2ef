// SPDX-License-Identifier: (GPL-2.0 WITH Linux-syscall-note) OR MIT
/*
 * libdfkv connection handling shared by the TCP and RDMA transports (see
 * conn.h): peer address resolution, the peers' pools of idle connections,
 * the growth of an exec's work queues, and the connections leases keep.
 */
#include <netdb.h>
#include <stdio.h>

#include "client.h"
#include "conn.h"

int dfkv_pool_init(struct dfkv_pool *pool, size_t cap)
{
	pool->idle = calloc(cap, sizeof(*pool->idle));
	pool->n = 0;
	return pool->idle ? 0 : DFKV_E_NOMEM;
}

void dfkv_pool_fini(struct dfkv_pool *pool)
{
	free(pool->idle);
	pool->idle = NULL;
	pool->n = 0;
}

void *dfkv_pool_take(struct dfkv_peer *p, struct dfkv_pool *pool)
{
	void *conn = NULL;

	pthread_mutex_lock(&p->pool_lock);
	if (pool->n)
		conn = pool->idle[--pool->n];
	pthread_mutex_unlock(&p->pool_lock);
	return conn;
}

bool dfkv_pool_give(struct dfkv_peer *p, struct dfkv_pool *pool, size_t cap,
		    void *conn)
{
	bool pooled = false;

	pthread_mutex_lock(&p->pool_lock);
	if (pool->n < cap) {
		pool->idle[pool->n++] = conn;
		pooled = true;
	}
	pthread_mutex_unlock(&p->pool_lock);
	return pooled;
}

int dfkv_peer_resolve(const struct dfkv_peer *p, uint16_t port,
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
	if (len)
		*len = res->ai_addrlen;
	freeaddrinfo(res);
	return 0;
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
