/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Transports behind one ops table (the nvmet_fabrics_ops model).  Each
 * listener kind registers a struct dfkv_transport_ops at module init,
 * before any node exists, and unregisters it at exit, after the last node
 * is gone.  A node sets up and shuts down every registered transport's
 * side of it, and netlink adds, removes and dumps listeners and counters
 * through the table, so neither names a transport: adding one is one
 * file and one ops struct.
 *
 * The limits and deadlines every transport holds its connections to, and
 * the counters of what they refused or dropped, are the node's own
 * (struct dfkv_conn_limits); a transport keeps its listeners, its
 * connections and its own counters in its side of the node,
 * node->transports[kind], which this layer allocates, sets up, shuts down
 * (listeners, then connections), dumps and frees for it.
 */
#ifndef _DFKV_TRANSPORT_H
#define _DFKV_TRANSPORT_H

#include <linux/types.h>
#include <linux/atomic.h>
#include <linux/dfkv.h>

struct dfkv_node;
struct dfkv_listener;
struct dfkv_listeners;
struct sk_buff;
struct netlink_ext_ack;

#define DFKV_FIRST_REQUEST_MS_DEFAULT	30000
#define DFKV_IDLE_MS_DEFAULT		300000
#define DFKV_MAX_CONNS_DEFAULT		1024
/* The kind of a listener that names none (the uapi's default). */
#define DFKV_TRANSPORT_DEFAULT		DFKV_LISTENER_TCP

/* A node's connection limits and deadlines (SPEC.md section 2). */
struct dfkv_conn_limits {
	u32 first_request_ms;		/* READ_ONCE; 0: none */
	u32 idle_ms;			/* READ_ONCE; 0: none */
	u32 max_conns;			/* READ_ONCE; per transport */
	atomic64_t refused;		/* connections over max_conns */
	/* connections past a deadline, by enum dfkv_listener_kind */
	atomic64_t deadline_drops[__DFKV_LISTENER_MAX];
};

struct dfkv_transport_ops {
	u32 kind;			/* enum dfkv_listener_kind */
	u16 default_port;		/* of a listener that names none */
	/*
	 * Bytes of a node's side, node->transports[kind]: a struct that
	 * starts with its struct dfkv_listeners, zeroed at node creation;
	 * its listeners and connections are closed at node shutdown.
	 */
	size_t node_size;
	/*
	 * Under the listeners' lock, once a listener is sure to be added
	 * (may be NULL).
	 */
	void (*listener_start)(struct dfkv_listener *l);
	/* Close a listener that is off the list and free it. */
	void (*listener_free)(struct dfkv_listener *l);
	int (*listener_add)(struct dfkv_node *node, const char *addr, u16 port,
			    struct netlink_ext_ack *extack);
	int (*listener_del)(struct dfkv_node *node, const char *addr, u16 port,
			    struct netlink_ext_ack *extack);
	/* Put the transport's counters into the open node stats nest. */
	int (*fill_stats)(struct sk_buff *skb, struct dfkv_node *node);
};

int dfkv_transport_register(const struct dfkv_transport_ops *ops);
void dfkv_transport_unregister(const struct dfkv_transport_ops *ops);
/* The transport of a listener kind, or NULL. */
const struct dfkv_transport_ops *dfkv_transport_get(u32 kind);

/* Every registered transport's side of a node, by kind. */
int dfkv_transports_node_init(struct dfkv_node *node);
void dfkv_transports_node_shutdown(struct dfkv_node *node);
void dfkv_transports_node_free(struct dfkv_node *node);
/* Every listener of the node as DFKV_A_LISTENERS; -EMSGSIZE when full. */
int dfkv_transports_fill_listeners(struct sk_buff *skb,
				   struct dfkv_node *node);
/* Every transport's counters into the open node stats nest. */
int dfkv_transports_fill_stats(struct sk_buff *skb, struct dfkv_node *node);

#endif /* _DFKV_TRANSPORT_H */
