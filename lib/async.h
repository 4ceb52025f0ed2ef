/* SPDX-License-Identifier: (GPL-2.0 WITH Linux-syscall-note) OR MIT */
/*
 * libdfkv asynchronous batches (async.c): the client's batch queue and
 * its completion thread, opened and closed with the client.  The batch
 * calls themselves are the public API of dfkv.h.
 */
#ifndef DFKV_LIB_ASYNC_H
#define DFKV_LIB_ASYNC_H

#include "client.h"

/* The client's batch queue (dfkv_open_v2); stop its completion thread
 * and free every batch (dfkv_close). */
int dfkv_async_open(struct dfkv_client *c);
void dfkv_async_close(struct dfkv_client *c);

#endif /* DFKV_LIB_ASYNC_H */
