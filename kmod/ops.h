/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Transport-independent operations on a node: the SPEC.md rules (range
 * contract, zero-length PUT, immutability, size limits), the tenant check
 * (every tenant-scoped op takes the caller's struct dfkv_auth and answers
 * FORBIDDEN before touching anything) and the per-op accounting live here
 * once; their one caller is the request executor (req.c), which every
 * transport goes through.
 * Every function returns an enum dfkv_status, or a negative errno when
 * the caller's memory faulted or the wait was interrupted.
 */
#ifndef _DFKV_OPS_H
#define _DFKV_OPS_H

#include <linux/dfkv.h>

struct dfkv_node;
struct dfkv_lease_owner;
struct dfkv_auth;
struct dfkv_peer;
struct dfkv_entry;

/*
 * Resolve a GET range against the stored length: length 0 = remainder,
 * offset == stored_len gives 0 bytes, offset > stored_len is INVALID, an
 * oversized length is clamped.
 */
int dfkv_range(u64 stored_len, u64 offset, u64 length, u64 *out_len);

struct dfkv_put;
struct dfkv_read;
struct dfkv_waiter;
struct bio_vec;
struct iov_iter;

/*
 * PUT in two steps, the value received in between (a leader's entry has
 * RAM for its first ahead bytes, dfkv_store_put_begin()): begin returns
 * the final status unless put->e is set (the caller then fills a leader's
 * entry and calls end, err 0 to commit or why not; a follower calls end,
 * which sleeps until the leader finished, or parks with
 * dfkv_op_put_park() and takes dfkv_op_put_result() when woken).  An
 * err of -EFAULT aborts without counting and is returned.  A leader's
 * commit that waits for the disk parks put->w (-EINPROGRESS) and takes
 * dfkv_op_put_flushed() when woken, or sleeps killably (-EINTR).
 */
int dfkv_op_put_begin(struct dfkv_node *node, const struct dfkv_auth *auth,
		      const struct dfkv_key *key, u64 len, u64 ahead,
		      struct dfkv_put *put);
int dfkv_op_put_end(struct dfkv_node *node, struct dfkv_put *put, int err);
/* A parked follower's result once its leader finished (dfkv_op_put_park). */
int dfkv_op_put_result(struct dfkv_node *node, struct dfkv_put *put);
/* A parked leader's result once its flush ended; else -EINPROGRESS. */
int dfkv_op_put_flushed(struct dfkv_node *node, struct dfkv_put *put);
/*
 * RAM reserved by PUTs whose payload is still arriving from a peer is
 * bounded per node and per peer address (SPEC.md section 2; peer may be
 * NULL): admit len bytes of it before the reservation (false: answer
 * BUSY), give them back once they are filled or the PUT is abandoned.
 */
/* A receiving PUT's next part of the left bytes: at most an extent. */
u64 dfkv_op_recv_part(struct dfkv_node *node, u64 left);
bool dfkv_op_recv_admit(struct dfkv_node *node, struct dfkv_peer *peer,
			u64 len);
void dfkv_op_recv_done(struct dfkv_node *node, struct dfkv_peer *peer,
		       u64 len);
/*
 * A leader whose RAM is filled needs it for its next len bytes: admitted
 * as above and reserved (dfkv_store_put_reserve()).  Else the PUT is
 * aborted with the status that says why (BUSY, CACHE_FULL), which is
 * returned; on OK the caller holds len admitted bytes.
 */
int dfkv_op_put_more(struct dfkv_node *node, struct dfkv_peer *peer,
		     struct dfkv_put *put, u64 len);
/* Abort a leader's PUT with status (its followers get it too); returned. */
int dfkv_op_put_abort(struct dfkv_node *node, struct dfkv_put *put,
		      int status);
/*
 * The stages a peer's requests hold (a PUT leader's value staged on its
 * way to disk, a GET's pinned value read into a stage) are bounded per
 * peer address (peer may be NULL: unbounded): charge e's stage, if it
 * has one, to peer, in *held (0: nothing charged).  False: the peer is
 * over its share (one more of the node's stage_busy), the caller answers
 * BUSY and lets e go.  Give *held back with dfkv_op_stage_done() once the
 * request lets the stage go.
 */
bool dfkv_op_stage_admit(struct dfkv_node *node, struct dfkv_peer *peer,
			 struct dfkv_entry *e, u64 *held);
void dfkv_op_stage_done(struct dfkv_peer *peer, u64 held);
/*
 * GET in two steps: on OK the entry stays pinned in rd with the resolved
 * range length in *data_len until dfkv_op_get_end().  A value being read
 * from disk parks w and returns -EINPROGRESS (dfkv_store_get_begin());
 * once w was woken, dfkv_op_get_resume() finishes the begin.  Without w,
 * -EINTR: the caller's task was killed waiting.
 */
int dfkv_op_get_begin(struct dfkv_node *node, const struct dfkv_auth *auth,
		      const struct dfkv_key *key, u64 offset, u64 length,
		      u64 cap, struct dfkv_read *rd, struct dfkv_waiter *w,
		      u64 *stored_len, u64 *data_len);
int dfkv_op_get_resume(struct dfkv_node *node, u64 offset, u64 length,
		       u64 cap, struct dfkv_read *rd, struct dfkv_waiter *w,
		       u64 *stored_len, u64 *data_len);
int dfkv_op_get_end(struct dfkv_node *node, struct dfkv_read *rd, int status);
/*
 * The bytes a GET of key's range would read now, for a caller that sizes
 * its buffer before the GET (/dev/dfkv): 0 for a key of a tenant auth may
 * not act for, so that nothing about another tenant's key (not even that
 * it exists) shows before the GET itself answers FORBIDDEN.
 */
u64 dfkv_op_get_want(struct dfkv_node *node, const struct dfkv_auth *auth,
		     const struct dfkv_key *key, u64 offset, u64 length);
/*
 * A request's data, which the executor (req.c) moves for its transport
 * only through these.  The buffer of a payload that is not a PUT's
 * (HELLO, AUTH, a key list), charged as the node's allocations are.
 */
void *dfkv_op_payload_alloc(struct dfkv_node *node, size_t len);
/*
 * A PUT follower parks w on its leader's entry; false when the leader
 * already finished (take dfkv_op_put_result() now).
 */
bool dfkv_op_put_park(struct dfkv_put *put, struct dfkv_waiter *w);
/*
 * A PUT leader's value as pages from byte off, as far as its entry has
 * RAM yet (put->reserved), or a pinned GET's from byte off of the entry:
 * at most max segments covering at most len bytes; returns their number,
 * *mapped the bytes they cover.
 */
unsigned int dfkv_op_put_map(struct dfkv_put *put, u64 off, size_t len,
			     struct bio_vec *bv, unsigned int max,
			     size_t *mapped);
unsigned int dfkv_op_get_map(struct dfkv_read *rd, u64 off, size_t len,
			     struct bio_vec *bv, unsigned int max,
			     size_t *mapped);
/* A PUT leader's first len bytes from @from: false when fewer came. */
bool dfkv_op_put_copy_in(struct dfkv_put *put, size_t len,
			 struct iov_iter *from);
/* A GET's n bytes went out from the mapped pages: count them, end it OK. */
void dfkv_op_get_sent(struct dfkv_node *node, struct dfkv_read *rd, u64 n);
/*
 * A GET's n bytes from byte off of its entry into @to, and its end: OK
 * when all came, else @fail.  Returns whether all came.
 */
bool dfkv_op_get_copy_out(struct dfkv_node *node, struct dfkv_read *rd,
			  u64 off, u64 n, struct iov_iter *to, int fail);
/*
 * Another pin on a GET's entry, in @lent, for pages lent past the reply;
 * dfkv_op_get_lent_back() drops it (not counted as an operation).
 */
void dfkv_op_get_lend(const struct dfkv_read *rd, struct dfkv_read *lent);
void dfkv_op_get_lent_back(struct dfkv_read *lent);
/*
 * A request torn down before its end: its waiter w off the entry, and a
 * PUT follower's or parked leader's entry dropped, a GET ended IO_ERROR.
 */
void dfkv_op_put_abandon(struct dfkv_put *put, struct dfkv_waiter *w);
void dfkv_op_get_abandon(struct dfkv_node *node, struct dfkv_read *rd,
			 struct dfkv_waiter *w);

/*
 * STATS: "name value\n" lines in a kmalloc'd buffer the caller frees;
 * with auth=required only for a caller with at least one grant.
 */
int dfkv_op_stats(struct dfkv_node *node, const struct dfkv_auth *auth,
		  char **text, size_t *len);

int dfkv_op_exist(struct dfkv_node *node, const struct dfkv_auth *auth,
		  const struct dfkv_key *key, u64 *stored_len);
int dfkv_op_remove(struct dfkv_node *node, const struct dfkv_auth *auth,
		   const struct dfkv_key *key);
/* walk: enum dfkv_touch_walk, any other value is INVALID */
int dfkv_op_touch(struct dfkv_node *node, const struct dfkv_auth *auth,
		  const struct dfkv_key *keys, u32 n, u64 walk);
int dfkv_op_probe(struct dfkv_node *node, const struct dfkv_auth *auth,
		  const struct dfkv_key *keys, u32 n, u64 *lens);
int dfkv_op_lease(struct dfkv_node *node, const struct dfkv_auth *auth,
		  struct dfkv_lease_owner *owner, const struct dfkv_key *keys,
		  u32 n, u64 ttl_ms, u64 *lens, u32 *nr_hits, u64 *lease_id);
int dfkv_op_release(struct dfkv_node *node, struct dfkv_lease_owner *owner,
		    u64 lease_id);
/*
 * HELLO with its payload of len bytes: on OK, *reply (kmalloc'd) holds
 * its *reply_len bytes.
 */
int dfkv_op_hello(struct dfkv_node *node, struct dfkv_auth *auth,
		  const u8 *payload, u64 len, u8 **reply, size_t *reply_len);
/*
 * AUTH with a proof of len bytes: on OK, *reply (kmalloc'd) holds the
 * server proof, DFKV_AUTH_PROOF_LEN bytes; *close tells whether this
 * failure is the one that closes the connection (after its reply).
 */
int dfkv_op_auth(struct dfkv_node *node, struct dfkv_auth *auth, u64 tenant,
		 const u8 *proof, u64 len, u8 **reply, bool *close);

#endif /* _DFKV_OPS_H */
