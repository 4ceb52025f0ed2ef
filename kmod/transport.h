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
#include <linux/jiffies.h>
#include <linux/string.h>
#include <linux/dfkv.h>

struct dfkv_node;
struct dfkv_listener;
struct dfkv_listeners;
struct sk_buff;
struct netlink_ext_ack;

#define DFKV_FIRST_REQUEST_MS_DEFAULT	30000
#define DFKV_IDLE_MS_DEFAULT		300000
#define DFKV_MAX_CONNS_DEFAULT		1024
#define DFKV_FRAME_MS_DEFAULT		30000
#define DFKV_FRAME_MS_MIN		1000	/* the uapi's floor */
#define DFKV_MIN_RATE_DEFAULT		65536	/* bytes/s */
/* The window over which a frame must keep up with min_rate. */
#define DFKV_MIN_RATE_GRACE_MS		5000
/* The kind of a listener that names none (the uapi's default). */
#define DFKV_TRANSPORT_DEFAULT		DFKV_LISTENER_TCP

/* A node's connection limits and deadlines (SPEC.md section 2). */
struct dfkv_conn_limits {
	u32 first_request_ms;		/* READ_ONCE; 0: none */
	u32 idle_ms;			/* READ_ONCE; 0: none */
	u32 max_conns;			/* READ_ONCE; per transport */
	u32 frame_ms;			/* READ_ONCE; >= DFKV_FRAME_MS_MIN */
	u32 min_rate;			/* READ_ONCE; bytes/s, 0: none */
	atomic64_t refused;		/* connections over max_conns */
	/* connections past a deadline, by enum dfkv_listener_kind */
	atomic64_t deadline_drops[__DFKV_LISTENER_MAX];
};

/*
 * Where a connection stands for its deadlines, in jiffies: the transport
 * writes the times and counts (WRITE_ONCE) as it moves bytes, the check
 * below reads them and keeps the rate window for itself.
 */
struct dfkv_conn_clock {
	unsigned long accepted;
	unsigned long frame_start;	/* the started frame's first byte */
	unsigned long last_active;	/* the last byte moved either way */
	u64 bytes;			/* moved either way since accept */
	bool got_request;
	/* the deadline check's own */
	bool win_open;
	unsigned long win_start;
	u64 win_bytes;			/* bytes at win_start */
};

/* The transport moved n bytes of the connection, either way. */
static inline void dfkv_conn_clock_moved(struct dfkv_conn_clock *ck, u64 n)
{
	WRITE_ONCE(ck->last_active, jiffies);
	WRITE_ONCE(ck->bytes, ck->bytes + n);
}

/* What a connection is doing, for its deadlines (listener.c). */
enum dfkv_conn_phase {
	DFKV_CONN_WAIT,		/* between frames, or a PUT follower parked */
	DFKV_CONN_RX,		/* a frame started and is not all in */
	DFKV_CONN_TX,		/* a reply is going out */
};

static inline void dfkv_conn_clock_init(struct dfkv_conn_clock *ck,
					unsigned long now)
{
	memset(ck, 0, sizeof(*ck));
	ck->accepted = now;
	ck->last_active = now;
}

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
	/* Put the transport's counters into the open node stats nest. */
	int (*fill_stats)(struct sk_buff *skb, struct dfkv_node *node);
};

int dfkv_transport_register(const struct dfkv_transport_ops *ops);
void dfkv_transport_unregister(const struct dfkv_transport_ops *ops);
/* The transport of a listener kind, or NULL. */
const struct dfkv_transport_ops *dfkv_transport_get(u32 kind);

/*
 * Remove and free the node's listener of that kind at addr:port (the
 * transport's listener_free() closes it); -ENOENT with extack when there
 * is none.
 */
int dfkv_transport_listener_del(struct dfkv_node *node, u32 kind,
				const char *addr, u16 port,
				struct netlink_ext_ack *extack);

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
