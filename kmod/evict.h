/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Recency and eviction: the store's RAM recency lists (sharded by key, so
 * no lock is global), picking the least recently used evictable entry
 * with a second chance, emptying a cold extent a size class needs, and
 * the allocation loop that evicts until a slot is free.  The loop runs
 * over any slab (the RAM arena, a disk) through a dfkv_evictor, whose
 * owner decides what evicting an entry means; this file changes no
 * entry state itself.
 */
#ifndef _DFKV_EVICT_H
#define _DFKV_EVICT_H

#include <linux/spinlock.h>
#include <linux/list.h>
#include <linux/cache.h>

#include "slab.h"

struct dfkv_entry;

/* One recency list; entries are sharded by key so no lock is global. */
struct dfkv_lru_shard {
	spinlock_t lock;	/* list and its entries' queued stamps */
	struct list_head list;
	u64 nr, bytes;		/* entries on list and their bytes (WRITE_ONCE) */
} ____cacheline_aligned_in_smp;

struct dfkv_lru {
	struct dfkv_lru_shard *shards;
	u32 nr_shards;
};

int dfkv_lru_init(struct dfkv_lru *lru);
void dfkv_lru_destroy(struct dfkv_lru *lru);
/* Under e->lock: queue e at its shard's tail (stamped e->stamp) or take it off. */
void dfkv_lru_add_locked(struct dfkv_lru *lru, struct dfkv_entry *e);
void dfkv_lru_del_locked(struct dfkv_lru *lru, struct dfkv_entry *e);
/* Entries on the lists (committed, in RAM) and their bytes, racy sums. */
void dfkv_lru_usage(struct dfkv_lru *lru, u64 *objects, u64 *bytes);
/*
 * The least recently queued entry over all shards, with a reference;
 * heads used since they were queued, pinned, dirty or loading go back to
 * the tail.  NULL when nothing is evictable.
 */
struct dfkv_entry *dfkv_lru_pick(struct dfkv_lru *lru);

/* How the owner of a slab evicts from it. */
struct dfkv_evict_ops {
	/* The next victim by recency, with a reference, or NULL. */
	struct dfkv_entry *(*pick)(void *ctx);
	/* Try to free e's slots of this slab (e referenced); true if freed. */
	bool (*evict)(void *ctx, struct dfkv_entry *e);
	/* Drop a reference pick() or the extent walk took. */
	void (*put)(struct dfkv_entry *e);
};

struct dfkv_evictor {
	struct dfkv_slab *slab;
	const struct dfkv_evict_ops *ops;
	void *ctx;
	const bool *enabled;	/* READ_ONCE; NULL: always evict */
};

/*
 * Allocate a slot of len bytes for owner e, evicting by recency, then a
 * cold extent's owners, until one is free; -ENOSPC when nothing can go.
 */
int dfkv_evict_alloc(const struct dfkv_evictor *ev, struct dfkv_entry *e,
		     u64 len, struct dfkv_slot *slot);
/*
 * Give e slots for its whole value in parts of one extent: *slots is
 * slot0 for one part, else an array of n slots followed by n * extra
 * bytes (kvfree it).  On failure the slots allocated so far stay in
 * (*slots, *nr) for the caller to free.
 */
int dfkv_evict_alloc_parts(const struct dfkv_evictor *ev,
			   struct dfkv_entry *e, struct dfkv_slot **slots,
			   u32 *nr, struct dfkv_slot *slot0, size_t extra);
/*
 * The same with the array for every part but slots only for the parts
 * that cover the value's first upto bytes (*nr of them); the rest come
 * with dfkv_evict_alloc_more().
 */
int dfkv_evict_alloc_parts_upto(const struct dfkv_evictor *ev,
				struct dfkv_entry *e, struct dfkv_slot **slots,
				u32 *nr, struct dfkv_slot *slot0, size_t extra,
				u64 upto);
/* Allocate parts after the first *nr, until they cover upto bytes. */
int dfkv_evict_alloc_more(const struct dfkv_evictor *ev,
			  struct dfkv_entry *e, struct dfkv_slot *slots,
			  u32 *nr, u64 upto);

#endif /* _DFKV_EVICT_H */
