/* SPDX-License-Identifier: (GPL-2.0 WITH Linux-syscall-note) OR MIT */
/*
 * libdfkv RDMA transport (SPEC.md section 3, epoch 7) on librdmacm and
 * libibverbs: the client's devices and registered memory pools, each
 * peer's pool of connections, and exec of routed requests.
 */
#ifndef DFKV_LIB_RDMA_H
#define DFKV_LIB_RDMA_H

#include "client.h"

/* The HELLO, request and descriptor layouts: uapi/linux/dfkv.h. */

/* What the client asks for. */
#define DFKV_RDMA_INLINE_WANT		4096
#define DFKV_RDMA_DESC_WANT		256

/*
 * Set up the client's RDMA side (device list, whitelist).  Returns 0, or
 * DFKV_E_NODEV when no allowed device has an active port.
 */
int dfkv_rdma_client_init(struct dfkv_client *c);
void dfkv_rdma_client_fini(struct dfkv_client *c);

#endif /* DFKV_LIB_RDMA_H */
