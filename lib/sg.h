/* SPDX-License-Identifier: (GPL-2.0 WITH Linux-syscall-note) OR MIT */
/*
 * libdfkv scatter-gather requests (sg.c): a caller's dfkv_iov array
 * checked and loaded into a routed PUT or GET request, for the
 * synchronous calls (client.c) and the asynchronous batches (async.c).
 */
#ifndef DFKV_LIB_SG_H
#define DFKV_LIB_SG_H

#include "client.h"

/* Scatter-gather requests: 0 or the slot's failure; r->iov is allocated
 * (the caller frees it once the request ran). */
int dfkv_put_sg_load(struct dfkv_req *r, const struct dfkv_iov *iov,
		     size_t n);
int dfkv_get_sg_load(struct dfkv_req *r, const struct dfkv_iov *iov,
		     size_t n);

#endif /* DFKV_LIB_SG_H */
