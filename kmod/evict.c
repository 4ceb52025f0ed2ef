// SPDX-License-Identifier: GPL-2.0
/*
 * Recency and eviction (evict.h).  Every use stamps an entry with the
 * monotonic clock, without a lock.  Committed entries in RAM sit on one of
 * several shard lists in the order they were queued; a pick takes the
 * shard whose head was queued first, gives a second chance to a head used
 * since it was queued (or pinned, dirty, loading), and otherwise hands it
 * out to be evicted.  When recency frees nothing for a size class, the
 * slab names an extent of the coldest other class and its unpinned owners
 * are evicted.
 *
 * Lock order: the entry's lock, then a shard lock.  Eviction itself (what
 * leaving a slab means for an entry) is the evictor owner's: the store for
 * RAM, tier.c for a disk.
 */
#include <linux/slab.h>
#include <linux/log2.h>
#include <linux/cpumask.h>
#include <linux/jhash.h>
#include <linux/sched.h>
#include <linux/mm.h>
#include <linux/timekeeping.h>

#include "store.h"
#include "evict.h"

/* How many entries one pick may look at before giving up. */
#define EVICT_SCAN_MAX	256
/* Evictions by recency before naming a whole extent to empty. */
#define EVICT_BY_RECENCY 16

int dfkv_lru_init(struct dfkv_lru *lru)
{
	u32 i;

	lru->nr_shards = clamp_t(u32,
				 roundup_pow_of_two(2 * num_possible_cpus()),
				 4, 64);
	lru->shards = kcalloc(lru->nr_shards, sizeof(*lru->shards),
			      GFP_KERNEL);
	if (!lru->shards)
		return -ENOMEM;
	for (i = 0; i < lru->nr_shards; i++) {
		spin_lock_init(&lru->shards[i].lock);
		INIT_LIST_HEAD(&lru->shards[i].list);
	}
	return 0;
}

void dfkv_lru_destroy(struct dfkv_lru *lru)
{
	kfree(lru->shards);
}

static struct dfkv_lru_shard *lru_shard(struct dfkv_lru *lru,
					const struct dfkv_entry *e)
{
	u32 h = jhash(&e->key, sizeof(e->key), 0);

	return &lru->shards[h & (lru->nr_shards - 1)];
}

void dfkv_lru_add_locked(struct dfkv_lru *lru, struct dfkv_entry *e)
{
	struct dfkv_lru_shard *sh = lru_shard(lru, e);

	lockdep_assert_held(&e->lock);
	spin_lock(&sh->lock);
	e->queued = e->stamp;
	list_add_tail(&e->lru, &sh->list);
	WRITE_ONCE(sh->nr, sh->nr + 1);
	WRITE_ONCE(sh->bytes, sh->bytes + e->len);
	spin_unlock(&sh->lock);
}

void dfkv_lru_del_locked(struct dfkv_lru *lru, struct dfkv_entry *e)
{
	struct dfkv_lru_shard *sh = lru_shard(lru, e);

	lockdep_assert_held(&e->lock);
	spin_lock(&sh->lock);
	if (!list_empty(&e->lru)) {
		WRITE_ONCE(sh->nr, sh->nr - 1);
		WRITE_ONCE(sh->bytes, sh->bytes - e->len);
	}
	list_del_init(&e->lru);
	spin_unlock(&sh->lock);
}

void dfkv_lru_usage(struct dfkv_lru *lru, u64 *objects, u64 *bytes)
{
	u32 i;

	*objects = 0;
	*bytes = 0;
	for (i = 0; i < lru->nr_shards; i++) {
		*objects += READ_ONCE(lru->shards[i].nr);
		*bytes += READ_ONCE(lru->shards[i].bytes);
	}
}

struct dfkv_entry *dfkv_lru_pick(struct dfkv_lru *lru)
{
	unsigned int scanned = 0;

	while (scanned++ < EVICT_SCAN_MAX) {
		struct dfkv_lru_shard *best = NULL;
		struct dfkv_entry *e;
		u64 best_q = U64_MAX;
		u32 i;

		for (i = 0; i < lru->nr_shards; i++) {
			struct dfkv_lru_shard *sh = &lru->shards[i];

			spin_lock(&sh->lock);
			e = list_first_entry_or_null(&sh->list,
						     struct dfkv_entry, lru);
			if (e && e->queued < best_q) {
				best_q = e->queued;
				best = sh;
			}
			spin_unlock(&sh->lock);
		}
		if (!best)
			return NULL;

		spin_lock(&best->lock);
		e = list_first_entry_or_null(&best->list, struct dfkv_entry,
					     lru);
		if (!e) {
			spin_unlock(&best->lock);
			continue;
		}
		if (READ_ONCE(e->stamp) > e->queued || READ_ONCE(e->pins) ||
		    READ_ONCE(e->state) == DFKV_E_DIRTY ||
		    READ_ONCE(e->where) == DFKV_W_LOADING) {
			/* Used since queued, pinned or not durable: later. */
			e->queued = max(READ_ONCE(e->stamp), ktime_get_ns());
			list_move_tail(&e->lru, &best->list);
			spin_unlock(&best->lock);
			continue;
		}
		if (!kref_get_unless_zero(&e->ref)) {
			spin_unlock(&best->lock);
			continue;
		}
		spin_unlock(&best->lock);
		return e;
	}
	return NULL;
}

/*
 * Empty one extent of a cold class that the slab names, so the class in
 * need can bind it; true if any entry was evicted.  Pinned owners stay and
 * the extent goes back to its class.
 */
static bool evict_extent(const struct dfkv_evictor *ev, int cls)
{
	struct dfkv_slab *slab = ev->slab;
	void *owners[32];
	unsigned int n, i;
	bool any = false;
	u32 extent, pos = 0;

	if (dfkv_slab_victim_extent(slab, cls, &extent))
		return false;
	do {
		rcu_read_lock();
		n = dfkv_slab_extent_owners(slab, extent, &pos, owners,
					    ARRAY_SIZE(owners));
		for (i = 0; i < n; i++) {
			struct dfkv_entry *e = owners[i];

			if (!kref_get_unless_zero(&e->ref))
				owners[i] = NULL;
		}
		rcu_read_unlock();
		for (i = 0; i < n; i++) {
			if (!owners[i])
				continue;
			any |= ev->ops->evict(ev->ctx, owners[i]);
			ev->ops->put(owners[i]);
		}
	} while (n == ARRAY_SIZE(owners));
	dfkv_slab_undrain(slab, extent);
	return any;
}

int dfkv_evict_alloc(const struct dfkv_evictor *ev, struct dfkv_entry *e,
		     u64 len, struct dfkv_slot *slot)
{
	unsigned int evicted = 0;
	int cls = dfkv_slab_class(ev->slab, len);

	if (cls < 0)
		return cls;
	for (;;) {
		struct dfkv_entry *victim;
		int err = dfkv_slab_alloc(ev->slab, len, e, slot);

		if (err != -ENOSPC)
			return err;
		if (ev->enabled && !READ_ONCE(*ev->enabled))
			return -ENOSPC;
		if (evicted < EVICT_BY_RECENCY) {
			victim = ev->ops->pick(ev->ctx);
			if (victim) {
				ev->ops->evict(ev->ctx, victim);
				ev->ops->put(victim);
				evicted++;
				continue;
			}
		}
		if (!evict_extent(ev, cls))
			return -ENOSPC;
		evicted = 0;
		cond_resched();
	}
}

int dfkv_evict_alloc_more(const struct dfkv_evictor *ev,
			  struct dfkv_entry *e, struct dfkv_slot *slots,
			  u32 *nr, u64 upto)
{
	u64 ext = ev->slab->extent_bytes;
	u32 n = div64_u64(min(upto, e->len) + ext - 1, ext);
	u32 i;
	int err;

	for (i = *nr; i < n; i++) {
		u64 part = min_t(u64, ext, e->len - (u64)i * ext);

		err = dfkv_evict_alloc(ev, e, part, &slots[i]);
		if (err)
			return err;
		*nr = i + 1;
	}
	return 0;
}

int dfkv_evict_alloc_parts_upto(const struct dfkv_evictor *ev,
				struct dfkv_entry *e, struct dfkv_slot **slots,
				u32 *nr, struct dfkv_slot *slot0, size_t extra,
				u64 upto)
{
	u64 ext = ev->slab->extent_bytes;
	u32 n = div64_u64(e->len + ext - 1, ext);

	*slots = slot0;
	*nr = 0;
	if (n > 1) {
		/* A large value on small extents has many parts: kvcalloc. */
		*slots = kvcalloc(n, sizeof(struct dfkv_slot) + extra,
				  GFP_KERNEL_ACCOUNT);
		if (!*slots) {
			*slots = slot0;
			return -ENOMEM;
		}
	}
	return dfkv_evict_alloc_more(ev, e, *slots, nr, upto);
}

int dfkv_evict_alloc_parts(const struct dfkv_evictor *ev,
			   struct dfkv_entry *e, struct dfkv_slot **slots,
			   u32 *nr, struct dfkv_slot *slot0, size_t extra)
{
	return dfkv_evict_alloc_parts_upto(ev, e, slots, nr, slot0, extra,
					   e->len);
}
