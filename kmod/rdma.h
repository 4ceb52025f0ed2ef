/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The in-kernel RDMA transport (wire epoch 7, SPEC.md section 3): per-node
 * rdma_cm listeners and the RC connections they accept, registered as the
 * DFKV_LISTENER_RDMA transport.
 */
#ifndef _DFKV_RDMA_H
#define _DFKV_RDMA_H

#include <linux/types.h>
#include <linux/dfkv.h>

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

/* Module init and exit: workqueues, ib_client, the transport's registration. */
int dfkv_rdma_init(void);
void dfkv_rdma_exit(void);

#endif /* _DFKV_RDMA_H */
