/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What the TCP and RDMA transports keep alike per node: the listeners,
 * known by their address, and the connections they accepted, counted
 * against the node's limit and by the peer address they come from; and
 * the order in which a node's shutdown ends them (listeners first, then
 * every connection, then the wait for the last).  A transport's per-node
 * side starts with its struct dfkv_listeners (transport.c sets it up,
 * shuts it down and dumps it) and each of its listeners embeds a struct
 * dfkv_listener; sockets, CM ids and the connections' own state stay in
 * the transport.
 */
#ifndef _DFKV_LISTENER_H
#define _DFKV_LISTENER_H

#include <linux/atomic.h>
#include <linux/bitops.h>
#include <linux/hashtable.h>
#include <linux/list.h>
#include <linux/mutex.h>
#include <linux/socket.h>
#include <linux/types.h>
#include <linux/wait.h>
#include <linux/workqueue.h>

#include "transport.h"

struct dfkv_node;
struct sk_buff;
struct netlink_ext_ack;

/* One listening address of a node; embedded in the transport's listener. */
struct dfkv_listener {
	struct list_head list;		/* dfkv_listeners.listeners */
	struct dfkv_node *node;
	struct sockaddr_storage addr;
};

enum { DFKV_CONN_DEAD };

/*
 * A peer address (its port aside) with connections to a transport of a
 * node: what it may hold is capped whatever number of connections it
 * opens.  It lives while it has connections.
 */
struct dfkv_peer {
	struct hlist_node node;		/* dfkv_listeners.peers */
	u8 addr[16];			/* IPv4: the first 4 bytes */
	u16 family;
	u32 conns;			/* under the listeners' lock */
	atomic64_t recv_reserved;	/* by its PUTs still receiving */
	atomic64_t staged;		/* stages its requests hold */
};

/*
 * An accepted connection as the bookkeeping knows it; embedded in the
 * transport's.  It dies once: the first dfkv_conn_kill() queues its
 * release work on the transport's workqueue, which ends with
 * dfkv_listeners_conn_del().
 */
struct dfkv_conn_core {
	struct list_head list;		/* dfkv_listeners.conns */
	struct dfkv_peer *peer;		/* while listed */
	unsigned long flags;		/* DFKV_CONN_DEAD */
	struct workqueue_struct *wq;
	struct work_struct release_work;

	/* the node's deadlines (dfkv_conn_deadline()), checked when due */
	struct dfkv_conn_clock clk;	/* the transport moves it */
	struct delayed_work deadline_work;
	struct workqueue_struct *deadline_wq;
	struct dfkv_conn_limits *limits;
	u8 kind;			/* enum dfkv_listener_kind */
	/* what the connection is doing now */
	enum dfkv_conn_phase (*phase)(struct dfkv_conn_core *cc);
};

void dfkv_conn_deadline_work(struct work_struct *work);

static inline void dfkv_conn_core_init(struct dfkv_conn_core *cc,
				       struct workqueue_struct *wq,
				       work_func_t release)
{
	cc->peer = NULL;
	cc->flags = 0;
	cc->wq = wq;
	INIT_WORK(&cc->release_work, release);
	INIT_DELAYED_WORK(&cc->deadline_work, dfkv_conn_deadline_work);
}

/*
 * Hold the connection to the node's limits from now on (its clock runs
 * from dfkv_conn_clock_init()): a work on wq checks the deadlines when due, killing the connection
 * (and counting the drop for its kind) past one.  The transport starts
 * it where a kill racing the start cannot have stopped it already, and
 * stops it in its release work, after which it is never queued again.
 */
void dfkv_conn_deadline_start(struct dfkv_conn_core *cc,
			      struct workqueue_struct *wq,
			      struct dfkv_conn_limits *limits, u8 kind,
			      enum dfkv_conn_phase (*phase)(struct dfkv_conn_core *));

static inline void dfkv_conn_deadline_stop(struct dfkv_conn_core *cc)
{
	cancel_delayed_work_sync(&cc->deadline_work);
}

static inline bool dfkv_conn_dead(const struct dfkv_conn_core *cc)
{
	return test_bit(DFKV_CONN_DEAD, &cc->flags);
}

/* True for the call that killed it. */
static inline bool dfkv_conn_kill(struct dfkv_conn_core *cc)
{
	if (test_and_set_bit(DFKV_CONN_DEAD, &cc->flags))
		return false;
	queue_work(cc->wq, &cc->release_work);
	return true;
}

/*
 * A transport's listeners and connections of one node, at the start of
 * its node->transports[kind] side.
 */
struct dfkv_listeners {
	const struct dfkv_transport_ops *ops;
	struct mutex lock;	/* listeners, conns, peers, nr_conns, closing */
	struct list_head listeners;
	struct list_head conns;		/* struct dfkv_conn_core.list */
	DECLARE_HASHTABLE(peers, 6);	/* struct dfkv_peer, by address */
	u32 nr_conns;			/* and reserved slots; READ_ONCE */
	wait_queue_head_t conns_gone;	/* shutdown waits for nr_conns 0 */
	bool closing;
};

void dfkv_listeners_init(struct dfkv_listeners *ls,
			 const struct dfkv_transport_ops *ops);
/*
 * Close every listener, then kill every connection, then wait until the
 * last connection has called dfkv_listeners_conn_del() and every reserved
 * slot is given back.  Nothing is added afterwards.
 */
void dfkv_listeners_shutdown(struct dfkv_listeners *ls);

/*
 * Set up l for addr:port in the node's namespace; -EEXIST when the node
 * already listens there.  The transport then opens its socket or CM id
 * and adds l with dfkv_listeners_add().
 */
int dfkv_listener_init(struct dfkv_listeners *ls, struct dfkv_listener *l,
		       struct dfkv_node *node, const char *addr, u16 port,
		       struct netlink_ext_ack *extack);
/* -EEXIST, or -ENODEV when the node is shutting down; else l is listed. */
int dfkv_listeners_add(struct dfkv_listeners *ls, struct dfkv_listener *l,
		       struct netlink_ext_ack *extack);
/*
 * Unlist the listener of addr:port and free it; -ENOENT when none (the
 * transport says so in extack).
 */
int dfkv_listeners_del(struct dfkv_listeners *ls, struct dfkv_node *node,
		       const char *addr, u16 port,
		       struct netlink_ext_ack *extack);
/* Put each listener as a DFKV_A_LISTENER nest; -EMSGSIZE when full. */
int dfkv_listeners_fill(struct sk_buff *skb, struct dfkv_listeners *ls);

/*
 * Admit a connection from peer (an IPv4 or IPv6 socket address), with the
 * lock held: -ESHUTDOWN when the node is shutting down, -EBUSY when it
 * has max connections, -ENOMEM; else cc is listed, counted, holds a
 * reference on node and is counted in its peer's struct (cc->peer).
 */
int dfkv_listeners_conn_add(struct dfkv_listeners *ls,
			    struct dfkv_conn_core *cc, struct dfkv_node *node,
			    u32 max, const struct sockaddr_storage *peer);
/*
 * For a transport that must not build a connection over the limit:
 * count a connection before allocating it.  -ESHUTDOWN or -EBUSY as
 * above; else the slot is counted (shutdown waits for it) and is either
 * given back with dfkv_listeners_conn_unreserve() or filled with
 * dfkv_listeners_conn_add_reserved().
 */
int dfkv_listeners_conn_reserve(struct dfkv_listeners *ls, u32 max);
void dfkv_listeners_conn_unreserve(struct dfkv_listeners *ls);
/*
 * List the connection of a reserved slot: -ESHUTDOWN when the node is
 * shutting down, -ENOMEM (the slot stays reserved either way); else as
 * dfkv_listeners_conn_add().
 */
int dfkv_listeners_conn_add_reserved(struct dfkv_listeners *ls,
				     struct dfkv_conn_core *cc,
				     struct dfkv_node *node,
				     const struct sockaddr_storage *peer);
/*
 * A connection is gone: unlist it and wake shutdown; the transport then
 * puts the node reference its admission took (dfkv_node_put()).
 */
void dfkv_listeners_conn_del(struct dfkv_listeners *ls,
			     struct dfkv_conn_core *cc);

#endif /* _DFKV_LISTENER_H */
