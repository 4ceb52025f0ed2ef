/* SPDX-License-Identifier: (GPL-2.0 WITH Linux-syscall-note) OR MIT */
/*
 * libdfkv connection handling the network transports (tcp.c, rdma.c) share:
 * resolving a peer's address, a peer's pool of idle connections (one per
 * transport, under the peer's pool_lock), the queue of an exec's work on
 * a connection, and which connections granted leases keep.  What a
 * connection is and how it moves bytes stays in the transport.
 */
#ifndef DFKV_LIB_CONN_H
#define DFKV_LIB_CONN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

struct dfkv_peer;
struct dfkv_req;
struct dfkv_conn;

/* A peer's idle connections of one transport. */
struct dfkv_pool {
	void **idle;			/* conns_per_peer slots */
	size_t n;
};

/* Slots for cap idle connections; 0 or DFKV_E_NOMEM. */
int dfkv_pool_init(struct dfkv_pool *pool, size_t cap);
/* Free the slots of a pool that was emptied with dfkv_pool_take(). */
void dfkv_pool_fini(struct dfkv_pool *pool);
/* The connection pooled last, or NULL. */
void *dfkv_pool_take(struct dfkv_peer *p, struct dfkv_pool *pool);
/* Pool conn if one of the cap slots is free; false: the caller closes it. */
bool dfkv_pool_give(struct dfkv_peer *p, struct dfkv_pool *pool, size_t cap,
		    void *conn);

/*
 * The peer's host at port (numeric), into ss and, if len is not NULL,
 * *len; 0 or DFKV_E_MEMBERS.
 */
int dfkv_peer_resolve(const struct dfkv_peer *p, uint16_t port,
		      struct sockaddr_storage *ss, socklen_t *len);

/*
 * Append item to the array arr of nr entries and alloc slots (lvalues,
 * evaluated more than once), growing it to twice the size (16 at first)
 * when full; false when memory ran out, the array unchanged.
 */
#define dfkv_push(arr, nr, alloc, item) __extension__ ({		\
	__typeof__(arr) q_ = (nr) < (alloc) ? (arr) :			\
		dfkv_grow((arr), &(alloc), sizeof(*(arr)));		\
									\
	if (q_) {							\
		(arr) = q_;						\
		(arr)[(nr)++] = (item);					\
	}								\
	q_ != NULL;							\
})
/* arr reallocated to twice *alloc entries (16 at first), or NULL. */
void *dfkv_grow(void *arr, size_t *alloc, size_t size);

/*
 * A request of an exec that conn carried, once the exec is over: a
 * granted lease keeps the connection if it is healthy (r->conn names it,
 * true); a RELEASE lets go of the connection it named.
 */
bool dfkv_lease_keeps(struct dfkv_req *r, struct dfkv_conn *conn,
		      bool healthy);

#endif /* DFKV_LIB_CONN_H */
