/* SPDX-License-Identifier: (GPL-2.0 WITH Linux-syscall-note) OR MIT */
/*
 * libdfkv connection handling the network transports (tcp.c, rdma.c) share:
 * the state they keep per peer (its address and its pool of idle
 * connections, under the pool's lock), the one request loop of an exec
 * (the transport moves the bytes through callbacks), the queue of an
 * exec's work on a connection, and which connections granted leases
 * keep.  What a connection is and how it moves bytes stays in the
 * transport.
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
struct dfkv_item;
struct pollfd;

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
 * A network transport's part in an exec (dfkv_conn_exec): its items and
 * connections, moved from one poll() loop under the exec's deadline.
 * The loop asks each busy connection (active, requests unanswered) to
 * advance without waiting, then to arm its pollfds, waits, hands it what
 * poll() reported, and at the end fails what is still unanswered as
 * timed out; a granted lease keeps its connection, the others go back
 * through the transport's conn_put.
 */
struct dfkv_net_ops {
	size_t item_size;	/* the transport's item, a struct dfkv_item
				 * first */
	size_t nfds;		/* pollfds per connection */
	/* The exec starts with n requests / is over (optional). */
	void (*begin)(struct dfkv_client *c, size_t n);
	void (*end)(struct dfkv_client *c);
	/* The item of a request (it->r set) before the connections are
	 * chosen; 0 or the request's failure (optional). */
	int (*item_init)(struct dfkv_item *it);
	/*
	 * Connections for the requests of p among reqs[0..n) into conns,
	 * each of their items (items[i] is reqs[i]'s) queued on one of
	 * them or its request failed; how many.
	 */
	size_t (*assign)(struct dfkv_client *c, struct dfkv_peer *p,
			 struct dfkv_req *const *reqs, void *items, size_t n,
			 struct dfkv_conn **conns, uint64_t now);
	/* Move what moves without waiting; an error fails conn. */
	void (*advance)(struct dfkv_client *c, struct dfkv_conn *conn,
			uint64_t now);
	/*
	 * Before the wait: fail conn when it is past deadline (or a
	 * deadline of its own) or cannot be armed (<0); else fill its nfds
	 * pollfds and lower *wait (ms) as it needs, 1 when it made progress
	 * meanwhile (the loop then does not wait), else 0.
	 */
	int (*arm)(struct dfkv_client *c, struct dfkv_conn *conn, uint64_t now,
		   uint64_t deadline, struct pollfd *pfd, uint64_t *wait);
	/* What poll() reported on conn's pollfds. */
	void (*events)(struct dfkv_client *c, struct dfkv_conn *conn,
		       const struct pollfd *pfd);
	/* Fail conn's unanswered requests with status (dfkv_conn_fail). */
	void (*fail)(struct dfkv_client *c, struct dfkv_conn *conn, int status);
	/* The loop is over: whether conn is healthy (may be pooled). */
	bool (*settle)(struct dfkv_client *c, struct dfkv_conn *conn);
	/* Let go of an item's resources, every connection settled. */
	void (*item_release)(struct dfkv_client *c, struct dfkv_item *it);
	/* Connections an exec may take per peer (optional; else
	 * conns_per_peer). */
	size_t (*peer_conns)(struct dfkv_client *c);
};

/*
 * The exec of a network transport (struct dfkv_transport_ops.exec): run
 * reqs, all routed to peers of that transport, through its net ops until
 * each has a status or deadline passes.
 */
void dfkv_conn_exec(struct dfkv_client *c, struct dfkv_req **reqs, size_t n,
		    uint64_t deadline);

/* conn carries no work; active: it is to carry the current exec's. */
void dfkv_conn_reset(struct dfkv_conn *conn, bool active);
/* Queue it on conn for the current exec; false when memory ran out. */
bool dfkv_conn_push(struct dfkv_conn *conn, struct dfkv_item *it);
/*
 * conn failed: its unanswered requests get status, it counts as a
 * failed connection and its peer cools down.  The transport then drops
 * what the connection was (closes it or marks it broken).
 */
void dfkv_conn_fail(struct dfkv_client *c, struct dfkv_conn *conn,
		    int status);
/*
 * How many connections the requests of p among reqs[0..n) want (none:
 * p has none; at most conns_per_peer, one per request), and the one a
 * lease holds, which they then all take (*held, or NULL).
 */
size_t dfkv_conn_want(struct dfkv_client *c, struct dfkv_peer *p,
		      struct dfkv_req *const *reqs, size_t n,
		      struct dfkv_conn **held);

#endif /* DFKV_LIB_CONN_H */
