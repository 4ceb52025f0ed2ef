/* SPDX-License-Identifier: (GPL-2.0 WITH Linux-syscall-note) OR MIT */
/*
 * libdfkv execution of routed requests (exec.c): each request goes to
 * the transport of its peer, and what a failed member means for it is
 * applied afterwards (health.c skips the member for a cooldown: reads
 * become misses, writes are dropped).  The synchronous calls (client.c)
 * and the asynchronous batches (async.c) both run their requests here.
 */
#ifndef DFKV_LIB_EXEC_H
#define DFKV_LIB_EXEC_H

#include "client.h"

/*
 * Run routed requests on their transports, then apply peer health: a
 * request that could not reach its node is a miss when it reads and a
 * dropped write otherwise.  Counts every result.
 */
void dfkv_execute(struct dfkv_client *c, struct dfkv_req **reqs, size_t n);

#endif /* DFKV_LIB_EXEC_H */
