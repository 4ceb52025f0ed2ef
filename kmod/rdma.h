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
 * What the server offers at most; a connection gets the minimum.  The
 * HELLO, request and descriptor layouts are in uapi/linux/dfkv.h.
 */
#define DFKV_RDMA_DEPTH_MAX	128
#define DFKV_RDMA_INLINE_MAX	4096
#define DFKV_RDMA_DESC_MAX	256

/* Module init and exit: workqueues, ib_client, the transport's registration. */
int dfkv_rdma_init(void);
void dfkv_rdma_exit(void);

#endif /* _DFKV_RDMA_H */
