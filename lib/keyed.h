/* SPDX-License-Identifier: (GPL-2.0 WITH Linux-syscall-note) OR MIT */
/*
 * libdfkv keyed operations (keyed.c): TOUCH, PROBE and LEASE keys routed
 * and grouped by peer, one request per peer, and their results read back
 * per key.  The synchronous calls (client.c) and the asynchronous
 * batches (async.c) build the same requests and read the same results.
 */
#ifndef DFKV_LIB_KEYED_H
#define DFKV_LIB_KEYED_H

#include "client.h"

/*
 * Keys grouped by peer (order kept within a peer): one request per peer
 * over a contiguous slice of gkeys/gres; pos[i] = key i's slot there.
 */
struct dfkv_keyed {
	struct dfkv_key *gkeys;
	uint64_t *gres;
	size_t *pos;
	struct dfkv_peer **peer_of;
	struct dfkv_req *reqs;
	struct dfkv_req **rp;
	size_t n, nreq;
};

int dfkv_keyed_prepare(struct dfkv_client *c, uint8_t op,
		       const void *const *keys, const uint64_t *key_lens,
		       size_t n, struct dfkv_keyed *k);
void dfkv_keyed_free(struct dfkv_keyed *k);
/* The first non-OK status of the requests (a miss is not a failure). */
int dfkv_keyed_status(const struct dfkv_keyed *k);
/* The request that carried key i. */
const struct dfkv_req *dfkv_keyed_req(const struct dfkv_keyed *k, size_t i);
/* PROBE ran: stored_lens[i] per key (0 when absent or unreachable). */
void dfkv_probe_results(const struct dfkv_keyed *k, uint64_t *stored_lens);

#endif /* DFKV_LIB_KEYED_H */
