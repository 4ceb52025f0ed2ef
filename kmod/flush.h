/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The write-back flush engine below a node's tier (flush.c) and the bytes
 * it shares with the tier's cold reads, rebuild and release.  The tier
 * (tier.c) is its only user and calls in; the flush engine reads the
 * tier's fields (its ring, policy, counters: struct dfkv_tier) and calls
 * nothing of tier.c.
 */
#ifndef _DFKV_FLUSH_H
#define _DFKV_FLUSH_H

#include <linux/blk_types.h>
#include <linux/types.h>

struct dfkv_tier;
struct dfkv_store;
struct dfkv_entry;
struct dfkv_disk;
struct dfkv_slot;
struct dfkv_dio;

/* The flush workers of t (t->wq, the counters), named after its node. */
int dfkv_flush_init(struct dfkv_tier *t, const char *name);
/* As many flush workers as set, or 4 per disk; at most 16.  Under t->lock. */
void dfkv_flush_apply_workers(struct dfkv_tier *t);
/*
 * Wait for every flush queued to end, bounded by DFKV_TIER_STOP_TIMEOUT_MS;
 * past it (reported), the flushes still queued are given up (t->abandon).
 */
void dfkv_flush_stop(struct dfkv_tier *t);
void dfkv_flush_destroy(struct dfkv_tier *t);

/*
 * The store's lower commit op: queue a DIRTY entry's flush; the PUT waits
 * for it (-EINPROGRESS, the flush's end gives its status through
 * dfkv_entry_flushed()) with ack=disk, write-around, watermark 0 or a
 * staged value; else DFKV_STATUS_OK.
 */
int dfkv_flush_commit(void *ctx, struct dfkv_entry *e, bool staged);

/*
 * Move e's value between its RAM pages and its disk slots (e->disk,
 * e->dslots): every bio submitted to io under one plug; a chunk that
 * cannot be mapped fails io.  A write zeroes the tail of the value's last
 * page first.
 */
void dfkv_flush_io_submit(struct dfkv_store *st, struct dfkv_entry *e,
			  enum req_op op, struct dfkv_dio *io);
/* A cold read's (rd) or a flush's payload I/O finished: time and trace it. */
void dfkv_flush_io_done(struct dfkv_store *st, struct dfkv_entry *e, bool rd,
			int err, u64 ns);
/* Where the payload CRCs of e's n disk parts in slots go. */
u32 *dfkv_flush_dcrcs(struct dfkv_entry *e, struct dfkv_slot *slots, u32 n);
/* Every disk part of e in RAM matches the CRC its record carries. */
bool dfkv_flush_parts_intact(struct dfkv_entry *e);

/*
 * Free disk slots taken out of e, clearing their records first when
 * asked, and drop what they held of disk d (its users count, a reference).
 */
void dfkv_flush_slots_free(struct dfkv_entry *e, struct dfkv_disk *d,
			   struct dfkv_slot *slots, u32 nr, bool clear);
/* e became DURABLE on e->disk: the most recently used there. */
void dfkv_flush_lru_add_locked(struct dfkv_entry *e);

#endif /* _DFKV_FLUSH_H */
