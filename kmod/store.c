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
 * Lock order: entry lock, then shard lock.  Nothing sleeps under either;
 * references are never dropped under them (the release frees slots, which
 * takes the slab's class locks).
 */
#include <linux/rhashtable.h>
#include <linux/slab.h>
#include <linux/sched.h>
#include <linux/timekeeping.h>
#include <linux/log2.h>
#include <linux/cpumask.h>
#include <linux/jhash.h>
#include <linux/sizes.h>

#include "store.h"

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
	entry_cache = KMEM_CACHE(dfkv_entry, 0);
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

	if (e->slots != &e->slot0)
		kfree(e->slots);
	kmem_cache_free(entry_cache, e);
}

static void entry_release(struct kref *ref)
{
	struct dfkv_entry *e = container_of(ref, struct dfkv_entry, ref);
	u32 i;

	for (i = 0; i < e->nr_slots; i++)
		dfkv_slab_free(&e->store->slab, e->slots[i]);
	e->nr_slots = 0;
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

/*
 * Move a linked entry to DEAD.  Called with e->lock held; the caller then
 * calls entry_unlink() without the lock.  Returns false if it was already
 * dead (someone else unlinks it).
 */
static bool entry_kill_locked(struct dfkv_store *st, struct dfkv_entry *e)
{
	struct dfkv_lru_shard *sh;

	if (e->state == DFKV_E_DEAD)
		return false;
	if (e->state == DFKV_E_COMMITTED) {
		sh = entry_shard(st, e);
		spin_lock(&sh->lock);
		list_del_init(&e->lru);
		spin_unlock(&sh->lock);
		atomic64_dec(&st->objects);
		atomic64_sub(e->len, &st->used_bytes);
		atomic64_dec(&e->tenant->objects);
		atomic64_sub(e->len, &e->tenant->used_bytes);
	}
	e->state = DFKV_E_DEAD;
	return true;
}

static void entry_unlink(struct dfkv_store *st, struct dfkv_entry *e)
{
	rhashtable_remove_fast(&st->index, &e->hnode, index_params);
	entry_put(e);	/* the index's reference */
}

/* Try to evict e (referenced by the caller); true when it was evicted. */
static bool entry_try_evict(struct dfkv_store *st, struct dfkv_entry *e)
{
	bool killed = false;

	spin_lock(&e->lock);
	if (e->state == DFKV_E_COMMITTED && !e->pins)
		killed = entry_kill_locked(st, e);
	spin_unlock(&e->lock);
	if (killed) {
		entry_unlink(st, e);
		this_cpu_add(st->stats->pcpu->evictions, 1);
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
		if (READ_ONCE(e->stamp) != e->queued || READ_ONCE(e->pins)) {
			/* Used since queued, or pinned: second chance. */
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
static bool evict_extent(struct dfkv_store *st, int cls)
{
	void *owners[32];
	unsigned int n, i;
	bool any = false;
	u32 extent, pos = 0;

	if (dfkv_slab_victim_extent(&st->slab, cls, &extent))
		return false;
	do {
		rcu_read_lock();
		n = dfkv_slab_extent_owners(&st->slab, extent, &pos, owners,
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
			any |= entry_try_evict(st, owners[i]);
			entry_put(owners[i]);
		}
	} while (n == ARRAY_SIZE(owners));
	dfkv_slab_undrain(&st->slab, extent);
	return any;
}

/* Allocate a slot of len bytes for e, evicting when allowed. */
static int store_alloc_slot(struct dfkv_store *st, struct dfkv_entry *e,
			    u64 len, struct dfkv_slot *slot)
{
	unsigned int evicted = 0;
	int cls = dfkv_slab_class(&st->slab, len);

	if (cls < 0)
		return cls;
	for (;;) {
		struct dfkv_entry *victim;
		int err = dfkv_slab_alloc(&st->slab, len, e, slot);

		if (err != -ENOSPC)
			return err;
		if (!READ_ONCE(st->evict))
			return -ENOSPC;
		if (evicted < EVICT_BY_RECENCY) {
			victim = evict_pick(st);
			if (victim) {
				entry_try_evict(st, victim);
				entry_put(victim);
				evicted++;
				continue;
			}
		}
		if (!evict_extent(st, cls))
			return -ENOSPC;
		evicted = 0;
		cond_resched();
	}
}

static int entry_alloc_slots(struct dfkv_store *st, struct dfkv_entry *e)
{
	u64 ext = st->slab.extent_bytes;
	u32 nr = div64_u64(e->len + ext - 1, ext);
	u32 i;
	int err;

	if (nr > 1) {
		e->slots = kcalloc(nr, sizeof(*e->slots), GFP_KERNEL);
		if (!e->slots) {
			e->slots = &e->slot0;
			return -ENOMEM;
		}
	}
	for (i = 0; i < nr; i++) {
		u64 part = min_t(u64, ext, e->len - (u64)i * ext);

		err = store_alloc_slot(st, e, part, &e->slots[i]);
		if (err)
			return err;
		e->nr_slots = i + 1;
	}
	return 0;
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
	tenant = dfkv_tenant_get(st->stats, key->tenant);
	if (!tenant)
		return DFKV_STATUS_CACHE_FULL;

	e = kmem_cache_zalloc(entry_cache, GFP_KERNEL);
	if (!e)
		return DFKV_STATUS_CACHE_FULL;
	e->key = *key;
	kref_init(&e->ref);
	kref_get(&e->ref);	/* one for the index, one for the leader */
	spin_lock_init(&e->lock);
	INIT_LIST_HEAD(&e->lru);
	e->state = DFKV_E_RESERVED;
	e->len = len;
	e->tenant = tenant;
	e->store = st;
	e->slots = &e->slot0;

retry:
	rcu_read_lock();
	old = rhashtable_lookup_get_insert_fast(&st->index, &e->hnode,
						index_params);
	if (IS_ERR(old)) {
		rcu_read_unlock();
		kmem_cache_free(entry_cache, e);
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
			kmem_cache_free(entry_cache, e);
			return DFKV_STATUS_OK;
		}
		spin_unlock(&old->lock);
		kmem_cache_free(entry_cache, e);
		put->e = old;	/* follower */
		return DFKV_STATUS_OK;
	}
	rcu_read_unlock();

	put->e = e;
	put->leader = true;
	err = entry_alloc_slots(st, e);
	if (err) {
		int status = err == -ENOSPC || err == -ENOMEM ?
			DFKV_STATUS_CACHE_FULL : DFKV_STATUS_TOO_LARGE;

		return dfkv_store_put_end(put, false, status);
	}
	return DFKV_STATUS_OK;
}

/* Copy [off, off + len) of e's value to or from iter, slot by slot. */
static size_t entry_copy(struct dfkv_entry *e, u64 off, size_t len,
			 struct iov_iter *iter)
{
	struct dfkv_store *st = e->store;
	u64 ext = st->slab.extent_bytes;
	size_t done = 0;

	while (done < len) {
		u64 pos = off + done;
		u32 i = div64_u64(pos, ext);
		u64 in = pos - (u64)i * ext;
		size_t n = min_t(u64, len - done, ext - in);
		u64 base = dfkv_slot_offset(&st->slab, e->slots[i]) + in;
		size_t got;

		got = dfkv_arena_copy(&st->arena, base, n, iter);
		done += got;
		if (got != n)
			break;
	}
	return done;
}

unsigned int dfkv_entry_map(struct dfkv_entry *e, u64 off, size_t len,
			    struct bio_vec *bv, unsigned int max,
			    size_t *mapped)
{
	struct dfkv_store *st = e->store;
	u64 ext = st->slab.extent_bytes;
	unsigned int nr = 0;
	size_t done = 0;

	if (off > e->len || len > e->len - off)
		len = 0;
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

size_t dfkv_store_put_copy(struct dfkv_put *put, u64 off, size_t len,
			   struct iov_iter *from)
{
	struct dfkv_entry *e = put->e;

	if (!put->leader || off > e->len || len > e->len - off)
		return 0;
	return entry_copy(e, off, len, from);
}

int dfkv_store_put_end(struct dfkv_put *put, bool ok, int status)
{
	struct dfkv_entry *e = put->e;
	struct dfkv_store *st = e->store;
	bool unlink = false;

	spin_lock(&e->lock);
	if (e->state == DFKV_E_RESERVED) {
		if (ok) {
			struct dfkv_lru_shard *sh = entry_shard(st, e);

			e->state = DFKV_E_COMMITTED;
			e->stamp = now_stamp();
			e->queued = e->stamp;
			atomic64_inc(&st->objects);
			atomic64_add(e->len, &st->used_bytes);
			atomic64_inc(&e->tenant->objects);
			atomic64_add(e->len, &e->tenant->used_bytes);
			atomic64_inc(&e->tenant->puts);
			atomic64_add(e->len, &e->tenant->bytes_in);
			this_cpu_add(st->stats->pcpu->bytes_in, e->len);
			spin_lock(&sh->lock);
			list_add_tail(&e->lru, &sh->list);
			spin_unlock(&sh->lock);
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
	spin_unlock(&e->lock);
	wake_up_all(&st->waitq);
	if (unlink)
		entry_unlink(st, e);
	entry_put(e);
	put->e = NULL;
	return status;
}

void dfkv_store_put_drop(struct dfkv_put *put)
{
	entry_put(put->e);
	put->e = NULL;
}

int dfkv_store_put_wait(struct dfkv_put *put)
{
	struct dfkv_entry *e = put->e;
	int err, status;

	err = wait_event_killable(e->store->waitq, READ_ONCE(e->done));
	if (err) {
		entry_put(e);
		put->e = NULL;
		return err;
	}
	spin_lock(&e->lock);
	status = e->result;
	put->stored_len = status == DFKV_STATUS_OK ? e->len : 0;
	spin_unlock(&e->lock);
	entry_put(e);
	put->e = NULL;
	return status;
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

	spin_lock(&e->lock);
	e->pins--;
	spin_unlock(&e->lock);
	atomic64_dec(&st->pins);
	entry_put(e);
}

int dfkv_store_get_begin(struct dfkv_store *st, const struct dfkv_key *key,
			 struct dfkv_read *rd)
{
	struct dfkv_tenant *t;

	rd->e = dfkv_store_pin(st, key);
	if (rd->e) {
		this_cpu_add(st->stats->pcpu->hits, 1);
		atomic64_inc(&rd->e->tenant->hits);
		return DFKV_STATUS_OK;
	}
	this_cpu_add(st->stats->pcpu->misses, 1);
	rcu_read_lock();
	t = dfkv_tenant_find(st->stats, key->tenant);
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
	this_cpu_add(e->store->stats->pcpu->bytes_out, n);
	atomic64_add(n, &e->tenant->bytes_out);
	return n;
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
		struct dfkv_lru_shard *sh = entry_shard(st, e);
		u64 now = now_stamp();

		/* Strictly increasing, so a TOUCH list keeps its order. */
		spin_lock(&sh->lock);
		e->stamp = max(now, e->stamp + 1);
		e->queued = e->stamp;
		list_move_tail(&e->lru, &sh->list);
		spin_unlock(&sh->lock);
		hit = true;
	}
	spin_unlock(&e->lock);
	entry_put(e);
	return hit;
}

static const struct dfkv_slab_ops arena_slab_ops = {
	.bind = dfkv_arena_bind,
};

int dfkv_store_init(struct dfkv_store *st, struct dfkv_stats *stats,
		    u64 capacity, bool evict)
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
	err = dfkv_arena_init(&st->arena, ext, nr);
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
