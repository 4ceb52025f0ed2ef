/* SPDX-License-Identifier: (GPL-2.0 WITH Linux-syscall-note) OR MIT */
/*
 * libdfkv connection handling the network transports (tcp.c, rdma.c) share:
 * the state they keep per peer (its address and its pool of idle
 * connections, under the pool's lock), the queue of an exec's work on
 * a connection, and which connections granted leases keep.  What a
 * connection is and how it moves bytes stays in the transport.
 */
#ifndef DFKV_LIB_CONN_H
#define DFKV_LIB_CONN_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "client.h"

struct dfkv_conn;

/* A peer's idle connections of one transport, under its lock. */
struct dfkv_pool {
	pthread_mutex_t lock;		/* idle, n */
	void **idle;			/* conns_per_peer slots */
	size_t n;
};

/* Slots for cap idle connections; 0 or DFKV_E_NOMEM. */
int dfkv_pool_init(struct dfkv_pool *pool, size_t cap);
/* Free the slots of a pool that was emptied with dfkv_pool_take()
 * (nothing when dfkv_pool_init() did not succeed). */
void dfkv_pool_fini(struct dfkv_pool *pool);
/* The connection pooled last, or NULL. */
void *dfkv_pool_take(struct dfkv_pool *pool);
/* Pool conn if one of the cap slots is free; false: the caller closes it. */
bool dfkv_pool_give(struct dfkv_pool *pool, size_t cap, void *conn);

/* What a network transport keeps per peer (struct dfkv_peer.tp). */
struct dfkv_net_peer {
	struct sockaddr_storage addr;	/* the node's, at the transport's port */
	socklen_t addrlen;
	struct dfkv_pool pool;
};

static inline struct dfkv_net_peer *dfkv_net_peer(const struct dfkv_peer *p)
{
	return p->tp;
}

/*
 * The network state of p (zeroed): its pool of conns_per_peer idle
 * connections and the peer's host at port (numeric); 0, DFKV_E_NOMEM or
 * DFKV_E_MEMBERS.  dfkv_net_peer_fini() undoes it even when it failed,
 * closing what the pool still holds with close_conn.
 */
int dfkv_net_peer_init(struct dfkv_client *c, struct dfkv_peer *p,
		       uint16_t port);
void dfkv_net_peer_fini(struct dfkv_peer *p, void (*close_conn)(void *conn));

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
