/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The in-kernel TCP transport (wire epoch 6): per-node listeners and the
 * connections they accept.
 */
#ifndef _DFKV_TCP_H
#define _DFKV_TCP_H

#include <linux/types.h>
#include <linux/atomic.h>

#include "listener.h"

struct dfkv_node;
struct sk_buff;
struct netlink_ext_ack;

#define DFKV_FIRST_REQUEST_MS_DEFAULT	30000
#define DFKV_IDLE_MS_DEFAULT		300000
#define DFKV_MAX_CONNS_DEFAULT		1024

/* A node's network side; lives inside struct dfkv_node. */
struct dfkv_tcp_node {
	struct dfkv_listeners ls;
	u32 nr_conns;			/* under ls.lock; READ_ONCE */
	u32 first_request_ms;		/* READ_ONCE */
	u32 idle_ms;			/* READ_ONCE */
	u32 max_conns;			/* READ_ONCE */
	atomic64_t accepts;
	atomic64_t refused;
	atomic64_t deadline_drops;
	atomic64_t proto_errors;
};

int dfkv_tcp_init(void);
void dfkv_tcp_exit(void);

void dfkv_tcp_node_init(struct dfkv_tcp_node *tn);
/* Close every listener and connection of the node; waits for them. */
void dfkv_tcp_node_shutdown(struct dfkv_node *node);

int dfkv_tcp_listener_add(struct dfkv_node *node, const char *addr, u16 port,
			  struct netlink_ext_ack *extack);
int dfkv_tcp_listener_del(struct dfkv_node *node, const char *addr, u16 port,
			  struct netlink_ext_ack *extack);
/* Put the node's listeners as DFKV_A_LISTENERS; -EMSGSIZE when full. */
int dfkv_tcp_fill_listeners(struct sk_buff *skb, struct dfkv_node *node);

#endif /* _DFKV_TCP_H */
