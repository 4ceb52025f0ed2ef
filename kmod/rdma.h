/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The in-kernel RDMA transport (wire epoch 7, SPEC.md section 3): per-node
 * rdma_cm listeners and the RC connections they accept.
 */
#ifndef _DFKV_RDMA_H
#define _DFKV_RDMA_H

#include <linux/types.h>
#include <linux/atomic.h>
#include <linux/dfkv.h>

#include "listener.h"

struct dfkv_node;
struct sk_buff;
struct netlink_ext_ack;

/*
 * The HELLO carried in the CM private data, both ways, little-endian:
 *  0 u8  epoch (7)          1 u8  status (reply: enum dfkv_status)
 *  2 u16 queue depth        4 u32 inline_max
 *  8 u32 max descriptors   12 u32 reserved (0)
 * 16 u64 capabilities      24 u64 max_value_bytes (reply; 0 in the request)
 */
#define DFKV_RDMA_HELLO_LEN	32
/* What the server offers at most; a connection gets the minimum. */
#define DFKV_RDMA_DEPTH_MAX	128
#define DFKV_RDMA_INLINE_MAX	4096
#define DFKV_RDMA_DESC_MAX	256
/* Bytes of one descriptor: u64le addr, u32le rkey, u32le len. */
#define DFKV_RDMA_DESC_LEN	16
/*
 * Reply data other than GET's is always inline; a client's receive
 * buffers hold this much after the prefix (PROBE/LEASE of DFKV_KEYS_MAX).
 */
#define DFKV_RDMA_REPLY_DATA_MAX	(8 * (DFKV_KEYS_MAX + 1))

/* A node's RDMA side; lives inside struct dfkv_node. */
struct dfkv_rdma_node {
	struct dfkv_listeners ls;
	u32 nr_conns;			/* under ls.lock; READ_ONCE */
	atomic64_t accepts;
	atomic64_t reads;		/* RDMA READ work requests posted */
	atomic64_t writes;		/* RDMA WRITE work requests posted */
	atomic64_t read_bytes;
	atomic64_t write_bytes;
	atomic64_t cq_errors;		/* failed work completions */
};

int dfkv_rdma_init(void);
void dfkv_rdma_exit(void);

void dfkv_rdma_node_init(struct dfkv_rdma_node *rn);
/* Close every listener and connection of the node; waits for them. */
void dfkv_rdma_node_shutdown(struct dfkv_node *node);

int dfkv_rdma_listener_add(struct dfkv_node *node, const char *addr, u16 port,
			   struct netlink_ext_ack *extack);
int dfkv_rdma_listener_del(struct dfkv_node *node, const char *addr, u16 port,
			   struct netlink_ext_ack *extack);
/*
 * Put the node's RDMA listeners as DFKV_A_LISTENER entries of the open
 * DFKV_A_LISTENERS nest; -EMSGSIZE when full.
 */
int dfkv_rdma_fill_listeners(struct sk_buff *skb, struct dfkv_node *node);
/* Put the DFKV_STAT_RDMA_* counters into the open node stats nest. */
int dfkv_rdma_fill_stats(struct sk_buff *skb, struct dfkv_node *node);

#endif /* _DFKV_RDMA_H */
