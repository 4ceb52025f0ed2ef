// SPDX-License-Identifier: GPL-2.0
/*
 * The store: an rhashtable of entries keyed by the 24-byte block key, read
 * under RCU with kref_get_unless_zero; each entry's state, pins and recency
 * list membership change under its own spinlock.  Visibility is decided
 * here only: a GET sees an entry once its PUT leader committed it, never
 * while RESERVED, never after a REMOVE or an eviction made it DEAD.
 *
 * Whoever moves an entry to DEAD (a failed leader, REMOVE, eviction) unlinks
 * it from the index and drops the index's reference; the slots are freed
 * by the release of the last reference, so a slot is never reused while a
 * reader or a lease still holds the entry.
 *
 * Recency: every use stamps the entry with the monotonic clock, without a
 * lock.  Committed entries sit on one of several shard lists in the order
 * they were queued; eviction takes the shard whose head was queued first,
 * gives a second chance to a head used since it was queued, skips pinned
 * ones, and otherwise evicts it.  TOUCH re-queues at the tail in the
 * order of its keys, so a touched prefix ends most recently used.
 *
 * With disks (tier.c) a committed value is in RAM, on its disk, or both
 * (entry->tier).  A write-back PUT commits into RAM as DIRTY and queues a
 * flush: payload bios from the RAM pages, then the records; only then is it
 * DURABLE, and only a durable, unpinned entry may leave RAM (RAM eviction
 * keeps the entry and its disk copy).  A GET of an entry that is not in RAM
 * reserves RAM slots, marks it LOADING and reads the disk into them; GETs
 * arriving meanwhile wait for that read.  Disk eviction kills the entry.
 * The records of a killed entry are cleared by the release of its last
 * reference, before its disk slots are freed; a graceful stop marks the
 * entries KEEP first so their records survive.
 *
 * Lock order: entry lock, then shard lock or a disk's lru lock.  Nothing
 * sleeps under either; references are never dropped under them (the
 * release frees slots, which takes the slab's class locks, and may write
 * records).
 */
#include <linux/rhashtable.h>
#include <linux/slab.h>
#include <linux/sched.h>
#include <linux/timekeeping.h>
#include <linux/log2.h>
#include <linux/cpumask.h>
#include <linux/jhash.h>
#include <linux/sizes.h>
#include <linux/delay.h>

#include "store.h"
#include "disk.h"
#include "ring.h"
#include "trace.h"

/* How many entries one eviction pass may look at before giving up. */
#define EVICT_SCAN_MAX	256
/* Evictions by recency before naming a whole extent to empty. */
#define EVICT_BY_RECENCY 16

static struct kmem_cache *entry_cache;

static const struct rhashtable_params index_params = {
	.key_len = sizeof(struct dfkv_key),
	.key_offset = offsetof(struct dfkv_entry, key),
	.head_offset = offsetof(struct dfkv_entry, hnode),
	.automatic_shrinking = true,
};

int dfkv_store_cache_init(void)
{
	entry_cache = KMEM_CACHE(dfkv_entry, SLAB_ACCOUNT);
	return entry_cache ? 0 : -ENOMEM;
}

void dfkv_store_cache_exit(void)
{
	kmem_cache_destroy(entry_cache);
}

static struct dfkv_lru_shard *entry_shard(struct dfkv_store *st,
					  const struct dfkv_entry *e)
{
	u32 h = jhash(&e->key, sizeof(e->key), 0);

	return &st->shards[h & (st->nr_shards - 1)];
}

static void entry_free_rcu(struct rcu_head *head)
{
	struct dfkv_entry *e = container_of(head, struct dfkv_entry, rcu);

	kmem_cache_free(entry_cache, e);
}

/* Free RAM slots taken out of an entry; array: slots is kmalloc'd. */
static void ram_slots_free(struct dfkv_store *st, struct dfkv_slot *slots,
			   u32 nr, bool array)
{
	u32 i;

	for (i = 0; i < nr; i++)
		dfkv_slab_free(&st->slab, slots[i]);
	if (array)
		kvfree(slots);
}

/*
 * Take RAM slots out of e under its lock, to free after it.  A one-part
 * value's slot lives inline (e->slot0), which a promotion of e may refill
 * as soon as the lock is dropped: it is copied out, so the slot freed is
 * the one taken, never the new one (another entry would get it while the
 * promotion reads disk data into it).
 */
static struct dfkv_slot *ram_slots_take_locked(struct dfkv_entry *e,
					       struct dfkv_slot *slots,
					       struct dfkv_slot *copy)
{
	lockdep_assert_held(&e->lock);
	if (slots != &e->slot0)
		return slots;
	*copy = e->slot0;
	return copy;
}

/*
 * Stage e's value outside the arena (every RAM slot pinned or dirty):
 * charged to the node's staged bytes, at most an eighth of its budget.
 */
static int entry_stage(struct dfkv_store *st, struct dfkv_entry *e)
{
	struct dfkv_stage *stage;

	if (atomic64_add_return(e->len, &st->staged_bytes) >
	    div_u64(st->capacity, 8))
		goto full;
	stage = dfkv_stage_alloc(e->len);
	if (!stage)
		goto full;
	spin_lock(&e->lock);
	e->stage = stage;
	spin_unlock(&e->lock);
	return 0;
full:
	atomic64_sub(e->len, &st->staged_bytes);
	return -ENOSPC;
}

static void stage_free(struct dfkv_store *st, struct dfkv_stage *stage)
{
	if (!stage)
		return;
	atomic64_sub(stage->len, &st->staged_bytes);
	dfkv_stage_free(stage);
}

/*
 * Free disk slots taken out of entry e (slots of a rebuild that were never
 * found have extent U32_MAX), clearing their records first when asked,
 * and drop what they held of disk d.
 */
static void disk_slots_free(struct dfkv_entry *e, struct dfkv_disk *d,
			    struct dfkv_slot *slots, u32 nr, bool clear)
{
	u32 i, n = 0;

	for (i = 0; i < nr; i++)
		if (slots[i].extent != U32_MAX)
			slots[n++] = slots[i];
	if (clear && n)
		dfkv_disk_rec_clear(d, slots, n);
	for (i = 0; i < n; i++)
		dfkv_slab_free(&d->slab, slots[i]);
	if (slots != &e->dslot0)
		kvfree(slots);
	if (atomic_dec_and_test(&d->users))
		wake_up_var(&d->users);
	dfkv_disk_put(d);
}

static void entry_release(struct kref *ref)
{
	struct dfkv_entry *e = container_of(ref, struct dfkv_entry, ref);

	ram_slots_free(e->store, e->slots, e->nr_slots,
		       e->slots != &e->slot0);
	stage_free(e->store, e->stage);
	if (e->disk)
		disk_slots_free(e, e->disk, e->dslots, e->nr_dslots,
				(e->tier & DFKV_T_RECS) &&
				!(e->tier & DFKV_T_KEEP));
	if (e->tenant)
		dfkv_tenant_put(e->store->tenants, e->tenant);
	call_rcu(&e->rcu, entry_free_rcu);
}

static void entry_put(struct dfkv_entry *e)
{
	kref_put(&e->ref, entry_release);
}

/* Look up a linked entry and take a reference, or NULL. */
static struct dfkv_entry *entry_lookup(struct dfkv_store *st,
				       const struct dfkv_key *key)
{
	struct dfkv_entry *e;

	rcu_read_lock();
	e = rhashtable_lookup(&st->index, key, index_params);
	if (e && !kref_get_unless_zero(&e->ref))
		e = NULL;
	rcu_read_unlock();
	return e;
}

static u64 now_stamp(void)
{
	return ktime_get_ns();
}

static void entry_clear_dirty_locked(struct dfkv_store *st,
				     struct dfkv_entry *e)
{
	if (e->tier & DFKV_T_DIRTY) {
		e->tier &= ~DFKV_T_DIRTY;
		atomic64_sub(e->len, &st->tier.dirty_bytes);
	}
}

static void entry_ram_lru_del_locked(struct dfkv_store *st,
				     struct dfkv_entry *e)
{
	struct dfkv_lru_shard *sh = entry_shard(st, e);

	spin_lock(&sh->lock);
	if (!list_empty(&e->lru)) {
		WRITE_ONCE(sh->nr, sh->nr - 1);
		WRITE_ONCE(sh->bytes, sh->bytes - e->len);
	}
	list_del_init(&e->lru);
	spin_unlock(&sh->lock);
}

static void entry_ram_lru_add_locked(struct dfkv_store *st,
				     struct dfkv_entry *e)
{
	struct dfkv_lru_shard *sh = entry_shard(st, e);

	spin_lock(&sh->lock);
	e->queued = e->stamp;
	list_add_tail(&e->lru, &sh->list);
	WRITE_ONCE(sh->nr, sh->nr + 1);
	WRITE_ONCE(sh->bytes, sh->bytes + e->len);
	spin_unlock(&sh->lock);
}

void dfkv_store_ram_usage(struct dfkv_store *st, u64 *objects, u64 *bytes)
{
	u32 i;

	*objects = 0;
	*bytes = 0;
	for (i = 0; i < st->nr_shards; i++) {
		*objects += READ_ONCE(st->shards[i].nr);
		*bytes += READ_ONCE(st->shards[i].bytes);
	}
}

static void entry_disk_lru_del_locked(struct dfkv_entry *e)
{
	struct dfkv_disk *d = e->disk;

	if (!d)
		return;
	spin_lock(&d->lru_lock);
	if (!list_empty(&e->dlru)) {
		list_del_init(&e->dlru);
		atomic64_dec(&d->objects);
		atomic64_sub(e->len, &d->used_bytes);
	}
	spin_unlock(&d->lru_lock);
}

/* e became durable on its disk: the most recently used there. */
static void entry_disk_lru_add_locked(struct dfkv_entry *e)
{
	struct dfkv_disk *d = e->disk;

	e->tier |= DFKV_T_DURABLE;
	spin_lock(&d->lru_lock);
	e->dqueued = READ_ONCE(e->stamp);
	list_add_tail(&e->dlru, &d->lru);
	atomic64_inc(&d->objects);
	atomic64_add(e->len, &d->used_bytes);
	spin_unlock(&d->lru_lock);
}

/*
 * Move a linked entry to DEAD.  Called with e->lock held; the caller then
 * calls entry_unlink() without the lock.  Returns false if it was already
 * dead (someone else unlinks it).
 */
static bool entry_kill_locked(struct dfkv_store *st, struct dfkv_entry *e)
{
	if (e->state == DFKV_E_DEAD)
		return false;
	if (e->state == DFKV_E_COMMITTED) {
		entry_ram_lru_del_locked(st, e);
		entry_disk_lru_del_locked(e);
		entry_clear_dirty_locked(st, e);
		atomic64_dec(&st->objects);
		atomic64_sub(e->len, &st->used_bytes);
		atomic64_dec(&e->tenant->objects);
		atomic64_sub(e->len, &e->tenant->used_bytes);
	}
	if (e->charged) {
		dfkv_tenant_uncharge(e->tenant, e->len);
		e->charged = false;
	}
	e->state = DFKV_E_DEAD;
	return true;
}

static void entry_unlink(struct dfkv_store *st, struct dfkv_entry *e)
{
	rhashtable_remove_fast(&st->index, &e->hnode, index_params);
	entry_put(e);	/* the index's reference */
}

/*
 * Evict e (referenced by the caller) from RAM: a durable entry only leaves
 * RAM, one that has no disk copy (no disk, or its flush was given up) is
 * killed, a dirty or loading one stays.  True when RAM was freed.
 */
static bool entry_try_evict(struct dfkv_store *st, struct dfkv_entry *e)
{
	struct dfkv_slot *slots = NULL, one;
	struct dfkv_stage *stage = NULL;
	bool killed = false;
	u32 nr = 0;

	spin_lock(&e->lock);
	if (e->state == DFKV_E_COMMITTED && !e->pins &&
	    (e->tier & DFKV_T_RAM) &&
	    !(e->tier & (DFKV_T_DIRTY | DFKV_T_LOADING))) {
		if (e->tier & DFKV_T_DURABLE) {
			entry_ram_lru_del_locked(st, e);
			e->tier &= ~DFKV_T_RAM;
			slots = ram_slots_take_locked(e, e->slots, &one);
			nr = e->nr_slots;
			e->slots = &e->slot0;
			e->nr_slots = 0;
			stage = e->stage;
			e->stage = NULL;
		} else {
			killed = entry_kill_locked(st, e);
		}
	}
	spin_unlock(&e->lock);
	if (stage) {
		stage_free(st, stage);
		return true;
	}
	if (slots) {
		ram_slots_free(st, slots, nr, slots != &one);
		this_cpu_inc(st->stats->pcpu->ram_evictions);
		trace_dfkv_evict(e->key.tenant, e->len, true);
		return true;
	}
	if (killed) {
		entry_unlink(st, e);
		this_cpu_inc(st->stats->pcpu->evictions);
		trace_dfkv_evict(e->key.tenant, e->len, false);
	}
	return killed;
}

/* Kill e (referenced by the caller) to free its disk slots. */
static bool entry_try_evict_disk(struct dfkv_store *st, struct dfkv_entry *e)
{
	bool killed = false;

	spin_lock(&e->lock);
	if (e->state == DFKV_E_COMMITTED && !e->pins &&
	    (e->tier & DFKV_T_DURABLE) && !(e->tier & DFKV_T_LOADING))
		killed = entry_kill_locked(st, e);
	spin_unlock(&e->lock);
	if (killed) {
		/* DURABLE: e->disk is set for good; the caller's ref keeps it */
		atomic64_inc(&e->disk->evictions);
		entry_unlink(st, e);
		this_cpu_inc(st->stats->pcpu->evictions);
		trace_dfkv_evict(e->key.tenant, e->len, false);
	}
	return killed;
}

/*
 * Pick the least recently queued entry over all shards, re-queueing heads
 * that were used since they were queued or are pinned.  Returns it with a
 * reference, or NULL when nothing is evictable.
 */
static struct dfkv_entry *evict_pick(struct dfkv_store *st)
{
	unsigned int scanned = 0;

	while (scanned++ < EVICT_SCAN_MAX) {
		struct dfkv_lru_shard *best = NULL;
		struct dfkv_entry *e;
		u64 best_q = U64_MAX;
		u32 i;

		for (i = 0; i < st->nr_shards; i++) {
			struct dfkv_lru_shard *sh = &st->shards[i];

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
		    (READ_ONCE(e->tier) & (DFKV_T_DIRTY | DFKV_T_LOADING))) {
			/* Used since queued, pinned or not durable: later. */
			e->queued = max(READ_ONCE(e->stamp), now_stamp());
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
static bool evict_extent(struct dfkv_store *st, struct dfkv_slab *slab,
			 int cls, bool disk)
{
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
			if (disk)
				any |= entry_try_evict_disk(st, owners[i]);
			else
				any |= entry_try_evict(st, owners[i]);
			entry_put(owners[i]);
		}
	} while (n == ARRAY_SIZE(owners));
	dfkv_slab_undrain(slab, extent);
	return any;
}

/*
 * The least recently used evictable entry of a disk, with a reference, or
 * NULL; entries used since they were queued get a second chance.
 */
static struct dfkv_entry *disk_evict_pick(struct dfkv_disk *d)
{
	unsigned int scanned = 0;
	struct dfkv_entry *e;

	spin_lock(&d->lru_lock);
	while (scanned++ < EVICT_SCAN_MAX) {
		e = list_first_entry_or_null(&d->lru, struct dfkv_entry, dlru);
		if (!e)
			break;
		if (READ_ONCE(e->stamp) > e->dqueued || READ_ONCE(e->pins) ||
		    (READ_ONCE(e->tier) & DFKV_T_LOADING)) {
			e->dqueued = max(READ_ONCE(e->stamp), now_stamp());
			list_move_tail(&e->dlru, &d->lru);
			continue;
		}
		if (kref_get_unless_zero(&e->ref)) {
			spin_unlock(&d->lru_lock);
			return e;
		}
		list_del_init(&e->dlru);
	}
	spin_unlock(&d->lru_lock);
	return NULL;
}

/*
 * Allocate a slot of len bytes for e in RAM (d == NULL) or on disk d,
 * evicting by recency when allowed (RAM: the node's evict flag; a disk is
 * a cache and always evicts).
 */
static int store_alloc_slot(struct dfkv_store *st, struct dfkv_disk *d,
			    struct dfkv_entry *e, u64 len,
			    struct dfkv_slot *slot)
{
	struct dfkv_slab *slab = d ? &d->slab : &st->slab;
	unsigned int evicted = 0;
	int cls = dfkv_slab_class(slab, len);

	if (cls < 0)
		return cls;
	for (;;) {
		struct dfkv_entry *victim;
		int err = dfkv_slab_alloc(slab, len, e, slot);

		if (err != -ENOSPC)
			return err;
		if (!d && !READ_ONCE(st->evict))
			return -ENOSPC;
		if (evicted < EVICT_BY_RECENCY) {
			victim = d ? disk_evict_pick(d) : evict_pick(st);
			if (victim) {
				if (d)
					entry_try_evict_disk(st, victim);
				else
					entry_try_evict(st, victim);
				entry_put(victim);
				evicted++;
				continue;
			}
		}
		if (!evict_extent(st, slab, cls, d))
			return -ENOSPC;
		evicted = 0;
		cond_resched();
	}
}

/*
 * An array of n part slots; on disk (d != NULL) followed by the n parts'
 * payload CRCs (entry_dcrcs()), freed together.  A large value on a disk
 * of small extents has many parts: vmalloc when kmalloc cannot.
 */
static struct dfkv_slot *entry_parts_array(u32 n, struct dfkv_disk *d)
{
	return kvcalloc(n, sizeof(struct dfkv_slot) + (d ? sizeof(u32) : 0),
			GFP_KERNEL_ACCOUNT);
}

static u32 *entry_dcrcs(struct dfkv_entry *e, struct dfkv_slot *slots, u32 n)
{
	return slots == &e->dslot0 ? &e->dcrc0 : (u32 *)(slots + n);
}

/*
 * CRC32C of [off, off + len) of e's value in its RAM slots, as a record's
 * payload_crc (Documentation/ondisk.md).
 */
static u32 entry_ram_crc(struct dfkv_entry *e, u64 off, u64 len)
{
	struct bio_vec bv[32];
	u32 crc = ~0U;

	while (len) {
		size_t mapped;
		unsigned int nr = dfkv_entry_map(e, off, len, bv,
						 ARRAY_SIZE(bv), &mapped);

		if (!nr || !mapped)
			break;
		crc = dfkv_disk_crc(crc, bv, nr, mapped);
		off += mapped;
		len -= mapped;
	}
	return ~crc;
}

/*
 * After a cold read: every disk part of e in RAM matches the CRC its
 * record carries.  A mismatch is a payload changed on the device.
 */
static bool entry_parts_intact(struct dfkv_entry *e)
{
	u64 ext = e->disk->slab.extent_bytes;
	u32 i;

	for (i = 0; i < e->nr_dslots; i++)
		if (entry_ram_crc(e, (u64)i * ext,
				  dfkv_od_part_len(e->len, i, ext)) !=
		    e->dcrcs[i])
			return false;
	return true;
}

/*
 * Give e the slots of its whole value in RAM (d == NULL) or on disk d, in
 * parts of one extent.  On failure the slots allocated so far stay in
 * (*slots, *nr) for the caller to free.
 */
static int entry_alloc_parts(struct dfkv_store *st, struct dfkv_disk *d,
			     struct dfkv_entry *e, struct dfkv_slot **slots,
			     u32 *nr, struct dfkv_slot *slot0)
{
	u64 ext = d ? d->slab.extent_bytes : st->slab.extent_bytes;
	u32 n = div64_u64(e->len + ext - 1, ext);
	u32 i;
	int err;

	*slots = slot0;
	*nr = 0;
	if (n > 1) {
		*slots = entry_parts_array(n, d);
		if (!*slots) {
			*slots = slot0;
			return -ENOMEM;
		}
	}
	for (i = 0; i < n; i++) {
		u64 part = min_t(u64, ext, e->len - (u64)i * ext);

		err = store_alloc_slot(st, d, e, part, &(*slots)[i]);
		if (err)
			return err;
		*nr = i + 1;
	}
	return 0;
}

static int entry_alloc_slots(struct dfkv_store *st, struct dfkv_entry *e)
{
	return entry_alloc_parts(st, NULL, e, &e->slots, &e->nr_slots,
				 &e->slot0);
}

/*
 * A new write-back value would take the dirty bytes over the watermark (a
 * watermark of 0 makes every PUT wait for its flush instead).
 */
static bool store_over_watermark(struct dfkv_store *st, u64 len)
{
	struct dfkv_tier *t = &st->tier;
	u32 pct = READ_ONCE(t->dirty_pct);

	if (!dfkv_tier_on(t) || !pct ||
	    READ_ONCE(t->policy) != DFKV_TIER_WRITEBACK)
		return false;
	return atomic64_read(&t->dirty_bytes) + len >
		div_u64(st->capacity * pct, 100);
}

/* The PUT's caller waits for the disk commit before its OK. */
static bool store_put_waits(struct dfkv_store *st)
{
	struct dfkv_tier *t = &st->tier;

	return READ_ONCE(t->policy) == DFKV_TIER_WRITEAROUND ||
		READ_ONCE(t->ack) == DFKV_ACK_DISK || !READ_ONCE(t->dirty_pct);
}

/*
 * Charge a leader's new entry to its tenant's quota, before it takes any
 * RAM (so a tenant at its quota never evicts anyone), unless a REMOVE
 * killed it already.
 */
static bool entry_charge(struct dfkv_store *st, struct dfkv_entry *e)
{
	bool ok = true;

	spin_lock(&e->lock);
	if (e->state == DFKV_E_RESERVED) {
		ok = dfkv_tenant_charge(st->tenants, e->tenant, e->len, false);
		e->charged = ok;
	}
	spin_unlock(&e->lock);
	if (!ok)
		this_cpu_inc(st->stats->pcpu->quota_rejections);
	return ok;
}

/* Free an entry that never reached the index, and its tenant reference. */
static void entry_discard(struct dfkv_store *st, struct dfkv_entry *e)
{
	dfkv_tenant_put(st->tenants, e->tenant);
	kmem_cache_free(entry_cache, e);
}

int dfkv_store_put_begin(struct dfkv_store *st, const struct dfkv_key *key,
			 u64 len, struct dfkv_put *put)
{
	struct dfkv_tenant *tenant;
	struct dfkv_entry *e, *old;
	int err;

	memset(put, 0, sizeof(*put));
	if (!len)
		return DFKV_STATUS_INVALID;
	if (len > st->capacity)
		return DFKV_STATUS_TOO_LARGE;
	tenant = dfkv_tenant_get(st->tenants, key->tenant);
	if (!tenant)
		return DFKV_STATUS_CACHE_FULL;

	e = kmem_cache_zalloc(entry_cache, GFP_KERNEL);
	if (!e) {
		dfkv_tenant_put(st->tenants, tenant);
		return DFKV_STATUS_CACHE_FULL;
	}
	e->key = *key;
	kref_init(&e->ref);
	kref_get(&e->ref);	/* one for the index, one for the leader */
	spin_lock_init(&e->lock);
	INIT_LIST_HEAD(&e->lru);
	INIT_LIST_HEAD(&e->parked);
	e->state = DFKV_E_RESERVED;
	e->len = len;
	e->tenant = tenant;
	e->store = st;
	e->slots = &e->slot0;
	e->dslots = &e->dslot0;
	e->dcrcs = &e->dcrc0;
	INIT_LIST_HEAD(&e->dlru);
	INIT_WORK(&e->flush_work, dfkv_store_flush_work);

retry:
	rcu_read_lock();
	old = rhashtable_lookup_get_insert_fast(&st->index, &e->hnode,
						index_params);
	if (IS_ERR(old)) {
		rcu_read_unlock();
		entry_discard(st, e);
		return DFKV_STATUS_CACHE_FULL;
	}
	if (old) {
		if (!kref_get_unless_zero(&old->ref)) {
			rcu_read_unlock();
			cond_resched();
			goto retry;
		}
		rcu_read_unlock();
		spin_lock(&old->lock);
		if (old->state == DFKV_E_DEAD) {
			spin_unlock(&old->lock);
			entry_put(old);
			cond_resched();
			goto retry;
		}
		if (old->state == DFKV_E_COMMITTED) {
			put->stored_len = old->len;
			WRITE_ONCE(old->stamp, now_stamp());
			spin_unlock(&old->lock);
			entry_put(old);
			entry_discard(st, e);
			return DFKV_STATUS_OK;
		}
		spin_unlock(&old->lock);
		entry_discard(st, e);
		put->e = old;	/* follower */
		return DFKV_STATUS_OK;
	}
	rcu_read_unlock();

	put->e = e;
	put->leader = true;
	if (!entry_charge(st, e))
		return dfkv_store_put_end(put, false,
					  DFKV_STATUS_QUOTA_EXCEEDED);
	if (store_over_watermark(st, len))
		return dfkv_store_put_end(put, false, DFKV_STATUS_CACHE_FULL);
	err = entry_alloc_slots(st, e);
	if (err == -ENOSPC && dfkv_tier_on(&st->tier)) {
		/* Every RAM slot pinned or dirty: the synchronous disk path. */
		ram_slots_free(st, e->slots, e->nr_slots,
			       e->slots != &e->slot0);
		e->slots = &e->slot0;
		e->nr_slots = 0;
		err = entry_stage(st, e);
		if (!err)
			this_cpu_inc(st->stats->pcpu->ram_bypasses);
	}
	if (err) {
		int status = err == -ENOSPC || err == -ENOMEM ?
			DFKV_STATUS_CACHE_FULL : DFKV_STATUS_TOO_LARGE;

		return dfkv_store_put_end(put, false, status);
	}
	return DFKV_STATUS_OK;
}

unsigned int dfkv_entry_ram_map(struct dfkv_entry *e, u64 off, size_t len,
				struct bio_vec *bv, unsigned int max,
				size_t *mapped)
{
	struct dfkv_store *st = e->store;
	u64 ext = st->slab.extent_bytes;
	unsigned int nr = 0;
	size_t done = 0;

	if (e->stage)
		return dfkv_stage_map(e->stage, off, len, bv, max, mapped);
	while (done < len && nr < max) {
		u64 pos = off + done;
		u32 i = div64_u64(pos, ext);
		u64 in = pos - (u64)i * ext;
		size_t n = min_t(u64, len - done, ext - in), got;

		nr += dfkv_arena_map(&st->arena,
				     dfkv_slot_offset(&st->slab, e->slots[i]) + in,
				     n, bv + nr, max - nr, &got);
		done += got;
	}
	*mapped = done;
	return nr;
}

unsigned int dfkv_entry_map(struct dfkv_entry *e, u64 off, size_t len,
			    struct bio_vec *bv, unsigned int max,
			    size_t *mapped)
{
	if (off > e->len || len > e->len - off)
		len = 0;
	return dfkv_entry_ram_map(e, off, len, bv, max, mapped);
}

/* Copy [off, off + len) of e's value to or from iter, page by page. */
static size_t entry_copy(struct dfkv_entry *e, u64 off, size_t len,
			 struct iov_iter *iter)
{
	bool to_entry = iov_iter_rw(iter) == ITER_SOURCE;
	struct bio_vec bv[16];
	size_t done = 0;

	while (done < len) {
		size_t mapped;
		unsigned int i, nr = dfkv_entry_map(e, off + done, len - done,
						    bv, ARRAY_SIZE(bv), &mapped);

		if (!nr)
			break;
		for (i = 0; i < nr; i++) {
			size_t got = to_entry ?
				copy_page_from_iter(bv[i].bv_page, bv[i].bv_offset,
						    bv[i].bv_len, iter) :
				copy_page_to_iter(bv[i].bv_page, bv[i].bv_offset,
						  bv[i].bv_len, iter);

			done += got;
			if (got != bv[i].bv_len)
				return done;
		}
	}
	return done;
}

size_t dfkv_store_put_copy(struct dfkv_put *put, u64 off, size_t len,
			   struct iov_iter *from)
{
	struct dfkv_entry *e = put->e;

	if (!put->leader || off > e->len || len > e->len - off)
		return 0;
	return entry_copy(e, off, len, from);
}

/*
 * Wait for a committed entry's flush (ack=disk, write-around, watermark
 * 0, staged): OK once durable; when the flush was given up, IO_ERROR (or
 * CACHE_FULL: no room on the disk) and the value is removed, so a PUT
 * that failed leaves nothing readable.  Write-around then lets a durable
 * value leave RAM; a staged value leaves its stage.
 */
static int store_put_wait_disk(struct dfkv_store *st, struct dfkv_entry *e,
			       bool staged)
{
	bool durable, nospc, unlink = false;

	wait_event(st->waitq, !(READ_ONCE(e->tier) & DFKV_T_DIRTY));
	spin_lock(&e->lock);
	durable = e->tier & DFKV_T_DURABLE || e->state == DFKV_E_DEAD;
	nospc = e->tier & DFKV_T_NOSPC;
	/* The flush was given up: the PUT fails, so its value goes too. */
	if (!durable)
		unlink = entry_kill_locked(st, e);
	spin_unlock(&e->lock);
	if (unlink)
		entry_unlink(st, e);
	if (!durable)
		return nospc ? DFKV_STATUS_CACHE_FULL : DFKV_STATUS_IO_ERROR;
	if (staged) {
		/* durable: frees the stage unless a reader holds it */
		entry_try_evict(st, e);
	} else if (READ_ONCE(st->tier.policy) == DFKV_TIER_WRITEAROUND &&
		   entry_try_evict(st, e)) {
		this_cpu_inc(st->stats->pcpu->ram_bypasses);
	}
	return DFKV_STATUS_OK;
}

int dfkv_store_put_end(struct dfkv_put *put, bool ok, int status)
{
	struct dfkv_entry *e = put->e;
	struct dfkv_store *st = e->store;
	bool unlink = false, flush = false, staged = false;

	spin_lock(&e->lock);
	if (e->state == DFKV_E_RESERVED) {
		if (ok) {
			e->state = DFKV_E_COMMITTED;
			e->stamp = now_stamp();
			e->tier |= DFKV_T_RAM;
			staged = e->stage;
			if (dfkv_tier_on(&st->tier) || staged) {
				e->tier |= DFKV_T_DIRTY;
				atomic64_add(e->len, &st->tier.dirty_bytes);
				kref_get(&e->ref);	/* the flush's */
				flush = true;
			}
			atomic64_inc(&st->objects);
			atomic64_add(e->len, &st->used_bytes);
			atomic64_inc(&e->tenant->objects);
			atomic64_add(e->len, &e->tenant->used_bytes);
			atomic64_inc(&e->tenant->puts);
			atomic64_add(e->len, &e->tenant->bytes_in);
			this_cpu_add(st->stats->pcpu->bytes_in, e->len);
			entry_ram_lru_add_locked(st, e);
			status = DFKV_STATUS_OK;
		} else {
			unlink = entry_kill_locked(st, e);
		}
	} else if (ok) {
		/* Removed while being filled: the PUT happened before it. */
		status = DFKV_STATUS_OK;
	}
	put->stored_len = status == DFKV_STATUS_OK ? e->len : 0;
	e->result = status;
	e->done = true;
	while (!list_empty(&e->parked)) {
		struct dfkv_put_waiter *w = list_first_entry(&e->parked,
							     struct dfkv_put_waiter,
							     node);

		list_del_init(&w->node);
		w->wake(w);
	}
	spin_unlock(&e->lock);
	wake_up_all(&st->waitq);
	if (unlink)
		entry_unlink(st, e);
	if (flush) {
		if (!staged)
			this_cpu_inc(st->stats->pcpu->ram_puts);
		dfkv_tier_queue_flush(&st->tier, e);
		if (staged || store_put_waits(st)) {
			status = store_put_wait_disk(st, e, staged);
			if (status != DFKV_STATUS_OK)
				put->stored_len = 0;
		}
	}
	entry_put(e);
	put->e = NULL;
	return status;
}

void dfkv_store_put_drop(struct dfkv_put *put)
{
	entry_put(put->e);
	put->e = NULL;
}

int dfkv_store_put_result(struct dfkv_put *put)
{
	struct dfkv_entry *e = put->e;
	int status;

	spin_lock(&e->lock);
	status = e->result;
	put->stored_len = status == DFKV_STATUS_OK ? e->len : 0;
	spin_unlock(&e->lock);
	entry_put(e);
	put->e = NULL;
	return status;
}

int dfkv_store_put_wait(struct dfkv_put *put)
{
	int err;

	err = wait_event_killable(put->e->store->waitq, READ_ONCE(put->e->done));
	if (err) {
		dfkv_store_put_drop(put);
		return err;
	}
	return dfkv_store_put_result(put);
}

bool dfkv_store_put_park(struct dfkv_put *put, struct dfkv_put_waiter *w)
{
	struct dfkv_entry *e = put->e;
	bool parked;

	spin_lock(&e->lock);
	parked = !e->done;
	if (parked)
		list_add_tail(&w->node, &e->parked);
	spin_unlock(&e->lock);
	return parked;
}

void dfkv_store_put_unpark(struct dfkv_put *put, struct dfkv_put_waiter *w)
{
	struct dfkv_entry *e = put->e;

	spin_lock(&e->lock);
	if (!list_empty(&w->node))
		list_del_init(&w->node);
	spin_unlock(&e->lock);
	dfkv_store_put_drop(put);
}

struct dfkv_entry *dfkv_store_pin(struct dfkv_store *st,
				  const struct dfkv_key *key)
{
	struct dfkv_entry *e = entry_lookup(st, key);

	if (!e)
		return NULL;
	spin_lock(&e->lock);
	if (e->state != DFKV_E_COMMITTED) {
		spin_unlock(&e->lock);
		entry_put(e);
		return NULL;
	}
	e->pins++;
	spin_unlock(&e->lock);
	atomic64_inc(&st->pins);
	WRITE_ONCE(e->stamp, now_stamp());
	return e;
}

void dfkv_store_unpin(struct dfkv_entry *e)
{
	struct dfkv_store *st = e->store;
	bool staged;

	spin_lock(&e->lock);
	e->pins--;
	staged = !e->pins && e->stage;
	spin_unlock(&e->lock);
	atomic64_dec(&st->pins);
	/* A stage lives no longer than its readers (a PUT's waits for disk). */
	if (staged)
		entry_try_evict(st, e);
	entry_put(e);
}

/*
 * Read a pinned, durable entry that is not in RAM back into RAM: new RAM
 * slots (a stage when every slot is pinned or dirty, freed with the last
 * reader), then the disk straight into them.  The caller set LOADING;
 * GETs of the key wait for it meanwhile (read coalescing).
 */
static int store_promote(struct dfkv_store *st, struct dfkv_entry *e)
{
	struct dfkv_slot *slots, one;
	struct dfkv_stage *stage = NULL;
	bool staged = false;
	u32 nr;
	int err;

	err = entry_alloc_parts(st, NULL, e, &slots, &nr, &e->slot0);
	if (err == -ENOSPC) {
		/* Every RAM slot pinned or dirty: read into a stage. */
		ram_slots_free(st, slots, nr, slots != &e->slot0);
		slots = NULL;
		err = entry_stage(st, e);
		staged = !err;
	} else if (!err) {
		/* Nobody reads e->slots while LOADING: publish them early. */
		spin_lock(&e->lock);
		e->slots = slots;
		e->nr_slots = nr;
		spin_unlock(&e->lock);
	}
	if (!err) {
		err = dfkv_tier_io(st, e, REQ_OP_READ);
		if (!err && !entry_parts_intact(e)) {
			pr_warn_ratelimited("dfkv: disk %s: a payload does not match its record's CRC: block dropped\n",
					    e->disk->name);
			err = -EBADMSG;
		}
	}
	spin_lock(&e->lock);
	if (!err) {
		e->tier |= DFKV_T_RAM;
		if (e->state == DFKV_E_COMMITTED)
			entry_ram_lru_add_locked(st, e);
		slots = NULL;
	} else if (staged) {
		stage = e->stage;
		e->stage = NULL;
	} else if (e->slots == slots) {
		e->slots = &e->slot0;
		e->nr_slots = 0;
	}
	if (slots)
		slots = ram_slots_take_locked(e, slots, &one);
	e->load_err = err >= S8_MIN ? err : -EIO;
	e->tier &= ~DFKV_T_LOADING;
	spin_unlock(&e->lock);
	wake_up_all(&st->waitq);
	if (slots)
		ram_slots_free(st, slots, nr, slots != &one);
	stage_free(st, stage);
	if (!err && !staged)
		this_cpu_inc(st->stats->pcpu->promoted);
	return err;
}

/*
 * Pin a committed entry for reading, bringing it into RAM when it is only
 * on disk; NULL on a miss, ERR_PTR(-EIO) when its disk failed the read.
 */
static struct dfkv_entry *store_pin_ram(struct dfkv_store *st,
					const struct dfkv_key *key)
{
	struct dfkv_entry *e = entry_lookup(st, key);
	bool load = false, cold = false, tiered = dfkv_tier_on(&st->tier);
	int err = 0;

	if (!e)
		return NULL;
	spin_lock(&e->lock);
	if (e->state != DFKV_E_COMMITTED ||
	    (!(e->tier & (DFKV_T_RAM | DFKV_T_LOADING)) &&
	     (!(e->tier & DFKV_T_DURABLE) || !dfkv_disk_up(e->disk)))) {
		spin_unlock(&e->lock);
		entry_put(e);
		return NULL;
	}
	e->pins++;
	if (!(e->tier & DFKV_T_RAM)) {
		cold = true;
		if (e->tier & DFKV_T_LOADING) {
			this_cpu_inc(st->stats->pcpu->coalesced);
		} else {
			e->tier |= DFKV_T_LOADING;
			load = true;
		}
	} else if (tiered) {
		this_cpu_inc(st->stats->pcpu->ram_hits);
	}
	spin_unlock(&e->lock);
	atomic64_inc(&st->pins);
	WRITE_ONCE(e->stamp, now_stamp());
	if (load) {
		this_cpu_inc(st->stats->pcpu->ram_misses);
		err = store_promote(st, e);
	} else {
		wait_event(st->waitq, !(READ_ONCE(e->tier) & DFKV_T_LOADING));
		err = READ_ONCE(e->load_err);
	}
	if (!(READ_ONCE(e->tier) & DFKV_T_RAM)) {
		bool unlink = false;

		/* A corrupt payload: the block is gone, never served. */
		if (err == -EBADMSG && load) {
			spin_lock(&e->lock);
			unlink = entry_kill_locked(st, e);
			spin_unlock(&e->lock);
			if (unlink)
				entry_unlink(st, e);
		}
		dfkv_store_unpin(e);
		if (err == -EBADMSG)
			return NULL;
		/* No RAM or stage to read it into now: the block is fine. */
		if (err == -ENOSPC || err == -ENOMEM)
			return ERR_PTR(-EBUSY);
		return ERR_PTR(-EIO);
	}
	if (cold)
		this_cpu_inc(st->stats->pcpu->disk_hits);
	return e;
}

int dfkv_store_get_begin(struct dfkv_store *st, const struct dfkv_key *key,
			 struct dfkv_read *rd)
{
	struct dfkv_tenant *t;

	rd->e = store_pin_ram(st, key);
	if (IS_ERR(rd->e)) {
		int busy = PTR_ERR(rd->e) == -EBUSY;

		rd->e = NULL;
		return busy ? DFKV_STATUS_BUSY : DFKV_STATUS_IO_ERROR;
	}
	if (rd->e) {
		this_cpu_add(st->stats->pcpu->hits, 1);
		atomic64_inc(&rd->e->tenant->hits);
		return DFKV_STATUS_OK;
	}
	this_cpu_add(st->stats->pcpu->misses, 1);
	rcu_read_lock();
	t = dfkv_tenant_find(st->tenants, key->tenant);
	if (t)
		atomic64_inc(&t->misses);
	rcu_read_unlock();
	return DFKV_STATUS_NOT_FOUND;
}

size_t dfkv_store_read(struct dfkv_read *rd, u64 off, size_t len,
		       struct iov_iter *to)
{
	struct dfkv_entry *e = rd->e;
	size_t n;

	if (off > e->len || len > e->len - off)
		return 0;
	n = entry_copy(e, off, len, to);
	dfkv_store_sent(rd, n);
	return n;
}

void dfkv_store_sent(struct dfkv_read *rd, u64 n)
{
	this_cpu_add(rd->e->store->stats->pcpu->bytes_out, n);
	atomic64_add(n, &rd->e->tenant->bytes_out);
}

void dfkv_store_get_end(struct dfkv_read *rd)
{
	dfkv_store_unpin(rd->e);
	rd->e = NULL;
}

u64 dfkv_store_exist(struct dfkv_store *st, const struct dfkv_key *key)
{
	struct dfkv_entry *e = entry_lookup(st, key);
	u64 len = 0;

	if (!e)
		return 0;
	if (READ_ONCE(e->state) == DFKV_E_COMMITTED)
		len = e->len;
	entry_put(e);
	return len;
}

int dfkv_store_remove(struct dfkv_store *st, const struct dfkv_key *key)
{
	struct dfkv_entry *e = entry_lookup(st, key);
	bool unlink;

	if (!e)
		return DFKV_STATUS_OK;
	spin_lock(&e->lock);
	unlink = entry_kill_locked(st, e);
	spin_unlock(&e->lock);
	if (unlink)
		entry_unlink(st, e);
	entry_put(e);
	return DFKV_STATUS_OK;
}

bool dfkv_store_touch(struct dfkv_store *st, const struct dfkv_key *key)
{
	struct dfkv_entry *e = entry_lookup(st, key);
	bool hit = false;

	if (!e)
		return false;
	spin_lock(&e->lock);
	if (e->state == DFKV_E_COMMITTED) {
		/* Strictly increasing, so a TOUCH list keeps its order. */
		e->stamp = max(now_stamp(), e->stamp + 1);
		if (e->tier & DFKV_T_RAM) {
			entry_ram_lru_del_locked(st, e);
			entry_ram_lru_add_locked(st, e);
		}
		if (e->tier & DFKV_T_DURABLE) {
			spin_lock(&e->disk->lru_lock);
			e->dqueued = e->stamp;
			list_move_tail(&e->dlru, &e->disk->lru);
			spin_unlock(&e->disk->lru_lock);
		}
		hit = true;
	}
	spin_unlock(&e->lock);
	entry_put(e);
	return hit;
}

/* ---------------------------------------------------------------- disks */

static void flush_done(struct dfkv_store *st, struct dfkv_entry *e)
{
	wake_up_all(&st->waitq);
	atomic_dec(&st->tier.flushing);
	entry_put(e);	/* the flush's reference */
}

/* Give up flushing e: it stays in RAM only, evictable like without disk. */
static void flush_drop(struct dfkv_store *st, struct dfkv_entry *e, int err)
{
	spin_lock(&e->lock);
	entry_clear_dirty_locked(st, e);
	if (err == -ENOSPC)
		e->tier |= DFKV_T_NOSPC;
	spin_unlock(&e->lock);
	this_cpu_inc(st->stats->pcpu->flush_drops);
}

/*
 * One attempt at making e durable on disk d: disk slots, payload bios from
 * the RAM pages, then the records.  The slots are attached to e first, so
 * whatever happens the release of e frees them (and clears the records
 * once written).  Returns 0, -EAGAIN (the payload failed: retry) or
 * another error (give up).
 */
static int flush_to(struct dfkv_store *st, struct dfkv_entry *e,
		    struct dfkv_disk *d)
{
	struct dfkv_od_rec *recs;
	struct dfkv_slot *slots;
	u32 nr, i;
	int err;

	u64 ext = d->slab.extent_bytes;
	u32 *crcs;

	err = entry_alloc_parts(st, d, e, &slots, &nr, &e->dslot0);
	crcs = entry_dcrcs(e, slots, dfkv_od_nr_parts(e->len, ext));
	atomic_inc(&d->users);
	dfkv_disk_get(d);
	spin_lock(&e->lock);
	e->disk = d;
	e->dslots = slots;
	e->dcrcs = crcs;
	e->nr_dslots = nr;
	spin_unlock(&e->lock);
	if (err)
		return err == -ENOMEM ? -EAGAIN : err;

	err = dfkv_tier_io(st, e, REQ_OP_WRITE);
	if (err)
		return -EAGAIN;
	recs = kcalloc(nr, sizeof(*recs), GFP_KERNEL);
	if (!recs)
		return -EAGAIN;
	for (i = 0; i < nr; i++) {
		crcs[i] = entry_ram_crc(e, (u64)i * ext,
					dfkv_od_part_len(e->len, i, ext));
		recs[i].payload_crc = crcs[i];
		recs[i].key = e->key;
		recs[i].length = e->len;
		recs[i].extent = slots[i].extent;
		recs[i].slot = slots[i].index;
		recs[i].part = i;
		recs[i].cls = dfkv_slot_class(&d->slab, slots[i]);
	}
	spin_lock(&e->lock);
	e->tier |= DFKV_T_RECS;	/* from here on, release clears them */
	spin_unlock(&e->lock);
	/*
	 * A REMOVE that came in meanwhile made e DEAD: writing its records
	 * now is harmless, the release of e clears them before the slots
	 * are reused, and no lookup can find e.
	 */
	err = dfkv_disk_rec_write(d, recs, nr);
	kfree(recs);
	return err;
}

/* Undo a failed attempt: back to RAM only, still dirty. */
static void flush_detach(struct dfkv_entry *e)
{
	struct dfkv_disk *d;
	struct dfkv_slot *slots;
	bool recs;
	u32 nr;

	spin_lock(&e->lock);
	d = e->disk;
	slots = e->dslots;
	nr = e->nr_dslots;
	recs = e->tier & DFKV_T_RECS;
	e->disk = NULL;
	e->dslots = &e->dslot0;
	e->dcrcs = &e->dcrc0;
	e->nr_dslots = 0;
	e->tier &= ~DFKV_T_RECS;
	spin_unlock(&e->lock);
	if (d)
		disk_slots_free(e, d, slots, nr, recs && dfkv_disk_up(d));
}

void dfkv_store_flush_work(struct work_struct *work)
{
	struct dfkv_entry *e = container_of(work, struct dfkv_entry,
					    flush_work);
	struct dfkv_store *st = e->store;
	struct dfkv_tier *t = &st->tier;
	struct dfkv_disk *d;
	int err;

	atomic_dec(&t->backlog);
	for (;;) {
		if (READ_ONCE(e->state) == DFKV_E_DEAD)
			break;
		d = READ_ONCE(t->abandon) ? NULL :
			dfkv_tier_route(t, e->key.id);
		if (!d || !dfkv_disk_up(d)) {
			if (d)
				dfkv_disk_put(d);
			flush_drop(st, e, -EIO);
			break;
		}
		err = flush_to(st, e, d);
		if (!err) {
			bool durable;

			/*
			 * Durable only on a disk still up, checked under the
			 * lock dfkv_store_fail_disk() takes: either it sees e
			 * DURABLE, or e sees the disk failed and its flush is
			 * given up, as when the record write itself fails.
			 */
			spin_lock(&e->lock);
			durable = dfkv_disk_up(d);
			if (durable) {
				entry_clear_dirty_locked(st, e);
				if (e->state == DFKV_E_COMMITTED)
					entry_disk_lru_add_locked(e);
			}
			spin_unlock(&e->lock);
			if (durable) {
				dfkv_disk_put(d);
				this_cpu_inc(st->stats->pcpu->flushed);
				break;
			}
			err = -EIO;
		}
		flush_detach(e);
		/* A full disk (all pinned) is retried too, never unhealthy. */
		if ((err != -EAGAIN && err != -ENOSPC) ||
		    ++e->flush_tries >= DFKV_TIER_FLUSH_TRIES) {
			flush_drop(st, e, err);
			if (err == -EAGAIN) {
				/* a device that cannot write: closed */
				dfkv_disk_fail(d, "payload writes keep failing");
				t->ops->unhealthy(t->ops_ctx);
			}
			dfkv_disk_put(d);
			break;
		}
		dfkv_disk_put(d);
		this_cpu_inc(st->stats->pcpu->flush_retries);
		msleep(10 << (2 * e->flush_tries));
	}
	flush_done(st, e);
}

/* Rebuild: entries assembled from one disk's records, then published. */
struct rebuild {
	struct dfkv_store *st;
	struct dfkv_disk *d;
	struct rhashtable parts;	/* key -> entry being assembled */
	u64 restored, dropped;
	int err;
};

static int rebuild_found(void *ctx, const struct dfkv_od_rec *rec)
{
	struct rebuild *rb = ctx;
	struct dfkv_disk *d = rb->d;
	u64 ext = d->slab.extent_bytes;
	u32 nparts = div64_u64(rec->length + ext - 1, ext), i;
	struct dfkv_slot slot = { rec->extent, rec->slot };
	struct dfkv_entry *e;

	/*
	 * A value larger than the RAM budget can never be served (nor was
	 * it PUT on this node: TOO_LARGE): the record goes alone, before
	 * its claimed parts cost an allocation.
	 */
	if (rec->length > rb->st->capacity)
		return DFKV_OD_SCAN_REFUSE;
	e = rhashtable_lookup_fast(&rb->parts, &rec->key, index_params);
	if (e && e->state == DFKV_E_DEAD)
		return DFKV_OD_SCAN_REFUSE;
	if (!e) {
		e = kmem_cache_zalloc(entry_cache, GFP_KERNEL);
		if (!e)
			return -ENOMEM;
		e->key = rec->key;
		kref_init(&e->ref);
		spin_lock_init(&e->lock);
		INIT_LIST_HEAD(&e->lru);
		INIT_LIST_HEAD(&e->parked);
		INIT_LIST_HEAD(&e->dlru);
		INIT_WORK(&e->flush_work, dfkv_store_flush_work);
		e->state = DFKV_E_RESERVED;
		e->len = rec->length;
		e->store = rb->st;
		e->slots = &e->slot0;
		e->dslots = &e->dslot0;
		e->stamp = rec->gen;	/* older epochs are colder */
		if (nparts > 1) {
			e->dslots = entry_parts_array(nparts, d);
			if (!e->dslots) {
				kmem_cache_free(entry_cache, e);
				return -ENOMEM;
			}
		}
		e->dcrcs = entry_dcrcs(e, e->dslots, nparts);
		for (i = 0; i < nparts; i++)
			e->dslots[i].extent = U32_MAX;
		e->nr_dslots = nparts;
		e->disk = d;
		e->tier = DFKV_T_RECS;
		dfkv_disk_get(d);
		atomic_inc(&d->users);
		if (rhashtable_insert_fast(&rb->parts, &e->hnode,
					   index_params)) {
			entry_put(e);
			return -ENOMEM;
		}
	}
	if (e->len != rec->length || e->stamp != rec->gen ||
	    e->dslots[rec->part].extent != U32_MAX) {
		e->state = DFKV_E_DEAD;	/* two copies, or parts disagree */
		return DFKV_OD_SCAN_REFUSE;
	}
	if (dfkv_slab_claim(&d->slab, slot, rec->cls, e))
		return DFKV_OD_SCAN_REFUSE;
	e->dslots[rec->part] = slot;
	e->dcrcs[rec->part] = rec->payload_crc;
	return 0;
}

/* Publish a complete entry, or drop it (its release clears its records). */
static void rebuild_publish(void *ptr, void *arg)
{
	struct dfkv_entry *e = ptr, *old;
	struct rebuild *rb = arg;
	struct dfkv_store *st = rb->st;
	u32 i;

	for (i = 0; i < e->nr_dslots; i++)
		if (e->dslots[i].extent == U32_MAX)
			e->state = DFKV_E_DEAD;
	e->tenant = e->state == DFKV_E_DEAD ? NULL :
		dfkv_tenant_get(st->tenants, e->key.tenant);
	if (!e->tenant)
		goto drop;
	/* A PUT that finds it before it is COMMITTED follows a done leader. */
	e->result = DFKV_STATUS_OK;
	e->done = true;
	kref_get(&e->ref);	/* the index's */
	old = rhashtable_lookup_get_insert_fast(&st->index, &e->hnode,
						index_params);
	if (old) {
		/* The key was PUT since the disk came up: that one wins. */
		kref_put(&e->ref, entry_release);
		goto drop;
	}
	spin_lock(&e->lock);
	e->state = DFKV_E_COMMITTED;
	atomic64_inc(&st->objects);
	atomic64_add(e->len, &st->used_bytes);
	atomic64_inc(&e->tenant->objects);
	atomic64_add(e->len, &e->tenant->used_bytes);
	dfkv_tenant_charge(st->tenants, e->tenant, e->len, true);
	e->charged = true;
	entry_disk_lru_add_locked(e);
	spin_unlock(&e->lock);
	rb->restored++;
	entry_put(e);	/* the rebuild's */
	return;
drop:
	rb->dropped++;
	entry_put(e);
}

int dfkv_store_rebuild(struct dfkv_store *st, struct dfkv_disk *d)
{
	struct rebuild rb = { .st = st, .d = d };
	int err;

	err = rhashtable_init(&rb.parts, &index_params);
	if (err)
		return err;
	err = dfkv_disk_rebuild(d, rebuild_found, &rb);
	/* Publish or drop every assembled entry, even after an error. */
	rhashtable_free_and_destroy(&rb.parts, rebuild_publish, &rb);
	if (!err)
		pr_info("dfkv: disk %s: %llu blocks restored, %llu dropped\n",
			d->name, rb.restored, rb.dropped);
	return err;
}

/*
 * One walk over the index for the entries of disk d: act() runs on each
 * (referenced, the walk paused, so it may sleep) and tells whether it
 * changed something and whether the entry must be unlinked.  Unlinking
 * the entry a walk stopped at can make the walk skip its bucket's next
 * ones, so callers walk again until a pass changes nothing.
 */
static bool disk_entries_pass(struct dfkv_store *st, struct dfkv_disk *d,
			      bool (*act)(struct dfkv_store *st,
					  struct dfkv_entry *e,
					  struct dfkv_disk *d, bool *unlink))
{
	struct rhashtable_iter it;
	struct dfkv_entry *e;
	bool any = false;

	rhashtable_walk_enter(&st->index, &it);
	rhashtable_walk_start(&it);
	while ((e = rhashtable_walk_next(&it))) {
		bool unlink = false;

		if (IS_ERR(e) || READ_ONCE(e->disk) != d ||
		    !kref_get_unless_zero(&e->ref))
			continue;
		rhashtable_walk_stop(&it);
		any |= act(st, e, d, &unlink);
		if (unlink)
			entry_unlink(st, e);
		entry_put(e);
		rhashtable_walk_start(&it);
	}
	rhashtable_walk_stop(&it);
	rhashtable_walk_exit(&it);
	return any;
}

/* Kill an entry of a disk going away gracefully (its records kept). */
static bool drop_disk_entry(struct dfkv_store *st, struct dfkv_entry *e,
			    struct dfkv_disk *d, bool *unlink)
{
	spin_lock(&e->lock);
	if (e->disk == d) {
		e->tier |= DFKV_T_KEEP;
		*unlink = entry_kill_locked(st, e);
	}
	spin_unlock(&e->lock);
	return *unlink;
}

/*
 * A disk goes away gracefully: every entry on it is killed (its records
 * kept for a later attach) and the call returns once none holds its
 * slots.  The caller unrouted the disk and drained its flushes first.
 */
void dfkv_store_drop_disk(struct dfkv_store *st, struct dfkv_disk *d)
{
	while (disk_entries_pass(st, d, drop_disk_entry))
		cond_resched();
	wait_var_event(&d->users, !atomic_read(&d->users));
}

/*
 * A failed disk's copy of an entry is gone: one in RAM stays, one that is
 * not is killed.  A cold read of the disk still running is waited for
 * first (no new one starts: the disk is not up), so its outcome decides.
 */
static bool fail_disk_entry(struct dfkv_store *st, struct dfkv_entry *e,
			    struct dfkv_disk *d, bool *unlink)
{
	bool changed = false;

	if (!(READ_ONCE(e->tier) & DFKV_T_DURABLE))
		return false;
	wait_event(st->waitq, !(READ_ONCE(e->tier) & DFKV_T_LOADING));
	spin_lock(&e->lock);
	if (e->tier & DFKV_T_LOADING) {
		changed = true;	/* not decided yet: the next pass */
	} else if (e->disk == d && (e->tier & DFKV_T_DURABLE)) {
		entry_disk_lru_del_locked(e);
		e->tier &= ~DFKV_T_DURABLE;
		if (!(e->tier & DFKV_T_RAM))
			*unlink = entry_kill_locked(st, e);
		changed = true;
	}
	spin_unlock(&e->lock);
	return changed;
}

void dfkv_store_fail_disk(struct dfkv_store *st, struct dfkv_disk *d)
{
	while (disk_entries_pass(st, d, fail_disk_entry))
		cond_resched();
}

static const struct dfkv_slab_ops arena_slab_ops = {
	.bind = dfkv_arena_bind,
};

int dfkv_store_init(struct dfkv_store *st, struct dfkv_stats *stats,
		    struct dfkv_tenants *tenants, u64 capacity, bool evict,
		    u32 numa)
{
	u64 ext = SZ_4M;
	u32 i, nr;
	int err;

	/* At least 16 extents, so several size classes can coexist. */
	while (ext > SZ_64K && capacity < ext * 16)
		ext >>= 1;
	nr = div64_u64(capacity, ext);
	if (!nr)
		return -EINVAL;

	memset(st, 0, sizeof(*st));
	st->stats = stats;
	st->tenants = tenants;
	st->evict = evict;
	st->capacity = (u64)nr * ext;
	init_waitqueue_head(&st->waitq);
	st->nr_shards = clamp_t(u32, roundup_pow_of_two(2 * num_possible_cpus()),
				4, 64);
	st->shards = kcalloc(st->nr_shards, sizeof(*st->shards), GFP_KERNEL);
	if (!st->shards)
		return -ENOMEM;
	for (i = 0; i < st->nr_shards; i++) {
		spin_lock_init(&st->shards[i].lock);
		INIT_LIST_HEAD(&st->shards[i].list);
	}
	err = dfkv_arena_init(&st->arena, ext, nr, numa);
	if (err)
		goto err_shards;
	err = dfkv_slab_init(&st->slab, ext, nr, &arena_slab_ops, &st->arena);
	if (err)
		goto err_arena;
	err = rhashtable_init(&st->index, &index_params);
	if (err)
		goto err_slab;
	return 0;

err_slab:
	dfkv_slab_destroy(&st->slab);
err_arena:
	dfkv_arena_destroy(&st->arena);
err_shards:
	kfree(st->shards);
	return err;
}

static void store_drop_entry(void *ptr, void *arg)
{
	struct dfkv_entry *e = ptr;
	struct dfkv_store *st = arg;

	spin_lock(&e->lock);
	e->tier |= DFKV_T_KEEP;	/* a graceful stop: its records stay */
	entry_kill_locked(st, e);
	spin_unlock(&e->lock);
	entry_put(e);	/* the index's reference */
}

void dfkv_store_destroy(struct dfkv_store *st)
{
	rhashtable_free_and_destroy(&st->index, store_drop_entry, st);
	/* Entries are freed after a grace period; their slots already are. */
	rcu_barrier();
	dfkv_slab_destroy(&st->slab);
	dfkv_arena_destroy(&st->arena);
	kfree(st->shards);
}
