/* SPDX-License-Identifier: (GPL-2.0 WITH Linux-syscall-note) OR MIT */
/*
 * libdfkv operations shared by the synchronous calls (client.c) and the
 * asynchronous batches (async.c): routing a key, executing routed
 * requests with peer health applied, loading scatter-gather buffers, and
 * the keyed operations (TOUCH, PROBE, LEASE) grouped by peer with their
 * results.  Both faces build the same requests and read the same results;
 * only when the requests run differs.
 */
#ifndef DFKV_LIB_OPS_H
#define DFKV_LIB_OPS_H

#include "client.h"

/* The block key of key and the peer it routes to. */
int dfkv_route(struct dfkv_client *c, const void *key, uint64_t key_len,
	       struct dfkv_key *bk, struct dfkv_peer **peer);

/*
 * Run routed requests on their transports, then apply peer health: a
 * request that could not reach its node is a miss when it reads and a
 * dropped write otherwise.  Counts every result.
 */
void dfkv_execute(struct dfkv_client *c, struct dfkv_req **reqs, size_t n);

/* Scatter-gather requests: 0 or the slot's failure; r->iov is allocated
 * (the caller frees it once the request ran). */
int dfkv_put_sg_load(struct dfkv_req *r, const struct dfkv_iov *iov,
		     size_t n);
int dfkv_get_sg_load(struct dfkv_req *r, const struct dfkv_iov *iov,
		     size_t n);

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
/* PROBE ran: stored_lens[i] per key (0 when absent or unreachable). */
void dfkv_probe_results(const struct dfkv_keyed *k, uint64_t *stored_lens);
/*
 * LEASE ran: the leading hits' stored lengths into stored_lens, their
 * count into *nr_hits, and the lease handle (linked to the client's live
 * leases) into *lease; DFKV_E_NOMEM leaves *lease NULL after letting go
 * of what the nodes granted.
 */
int dfkv_lease_results(struct dfkv_client *c, const struct dfkv_keyed *k,
		       uint64_t *stored_lens, size_t *nr_hits,
		       struct dfkv_lease **lease);

/* async.c: the client's batch queue (dfkv_open_v2); stop its completion
 * thread and free every batch (dfkv_close). */
int dfkv_async_open(struct dfkv_client *c);
void dfkv_async_close(struct dfkv_client *c);

#endif /* DFKV_LIB_OPS_H */
