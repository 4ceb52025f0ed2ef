// SPDX-License-Identifier: GPL-2.0
/*
 * The store: an rhashtable of entries keyed by the 24-byte block key, read
 * under RCU with kref_get_unless_zero; each entry's state, pins and recency
 * list membership change under its own spinlock.  Visibility is decided
 * here only: a GET sees an entry once its PUT leader committed it, never
 * while RESERVED, never after a REMOVE or an eviction made it DEAD.  The
 * entry state machine (store.h) is this file's: evict.c and tier.c change
 * states only through the _locked primitives below.
 *
 * Whoever moves an entry to DEAD (a failed leader, REMOVE, eviction) unlinks
 * it from the index and drops the index's reference; the slots are freed
 * by the release of the last reference, so a slot is never reused while a
 * reader or a lease still holds the entry.
 *
 * With disks (tier.c, below the store through st->lower) a write-back PUT
 * commits into RAM as DIRTY and the tier flushes it to DURABLE; only a
 * durable, unpinned entry may leave RAM (RAM eviction keeps the entry and
 * its disk copy).  A GET of an entry that is not in RAM marks it LOADING
 * and has the tier start reading the disk into RAM; it and the GETs
 * arriving meanwhile park on the entry until the read ended (an ioctl
 * caller's task sleeps for it, killably), so no shared worker waits for
 * a disk.
 *
 * Lock order: entry lock, then a shard lock (evict.c) or a disk's lru
 * lock (tier.c).  Nothing sleeps under either; references are never
 * dropped under them (the release frees slots, which takes the slab's
 * class locks, and may write records).
 */
#include <linux/rhashtable.h>
#include <linux/slab.h>
#include <linux/sched.h>
#include <linux/wait_bit.h>
#include <linux/timekeeping.h>
#include <linux/sizes.h>

#include "store.h"
#include "trace.h"

static struct kmem_cache *entry_cache;

const struct rhashtable_params dfkv_store_index_params = {
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

void dfkv_store_set_lower(struct dfkv_store *st,
			  const struct dfkv_store_lower_ops *ops, void *ctx)
{
	st->lower = ops;
	st->lower_ctx = ctx;
}

static bool store_tiered(struct dfkv_store *st)
{
	return READ_ONCE(st->tiered);
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
 * value's slot lives inline (e->slot0), which a cold read of e may
 * refill as soon as the lock is dropped: it is copied out, so the slot
 * freed is the one taken, never the new one (another entry would get it
 * while the cold read fills it).
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

u64 dfkv_store_stage_bound(const struct dfkv_store *st)
{
	return st->disk_only ? st->capacity : div_u64(st->capacity, 8);
}

/*
 * Stage e's value outside the arena (every RAM slot pinned or dirty, or
 * a disk-only store): charged to the node's staged bytes, at most
 * dfkv_store_stage_bound().
 */
int dfkv_entry_stage(struct dfkv_store *st, struct dfkv_entry *e)
{
	u64 bound = dfkv_store_stage_bound(st);
	struct dfkv_stage *stage;

	if (atomic64_add_return(e->len, &st->staged_bytes) > bound)
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

u64 dfkv_entry_staged(struct dfkv_entry *e)
{
	u64 len;

	spin_lock(&e->lock);
	len = e->stage ? e->stage->len : 0;
	spin_unlock(&e->lock);
	return len;
}

static void stage_free(struct dfkv_store *st, struct dfkv_stage *stage)
{
	if (!stage)
		return;
	atomic64_sub(stage->len, &st->staged_bytes);
	dfkv_stage_free(stage);
}

static void entry_release(struct kref *ref)
{
	struct dfkv_entry *e = container_of(ref, struct dfkv_entry, ref);
	struct dfkv_store *st = e->store;

	ram_slots_free(st, e->slots, e->nr_slots, e->slots != &e->slot0);
	stage_free(st, e->stage);
	if (e->disk)
		st->lower->release(e);
	if (e->tenant)
		dfkv_tenant_put(st->tenants, e->tenant);
	call_rcu(&e->rcu, entry_free_rcu);
}

void dfkv_entry_put(struct dfkv_entry *e)
{
	kref_put(&e->ref, entry_release);
}

struct dfkv_entry *dfkv_entry_new(struct dfkv_store *st,
				  const struct dfkv_key *key, u64 len)
{
	struct dfkv_entry *e = kmem_cache_zalloc(entry_cache, GFP_KERNEL);

	if (!e)
		return NULL;
	e->key = *key;
	kref_init(&e->ref);
	spin_lock_init(&e->lock);
	INIT_LIST_HEAD(&e->lru);
	INIT_LIST_HEAD(&e->parked);
	INIT_LIST_HEAD(&e->dlru);
	e->state = DFKV_E_RESERVED;
	e->where = DFKV_W_NONE;
	e->len = len;
	e->store = st;
	e->slots = &e->slot0;
	e->dslots = &e->dslot0;
	e->dcrcs = &e->dcrc0;
	return e;
}

/* Look up a linked entry and take a reference, or NULL. */
static struct dfkv_entry *entry_lookup(struct dfkv_store *st,
				       const struct dfkv_key *key)
{
	struct dfkv_entry *e;

	rcu_read_lock();
	e = rhashtable_lookup(&st->index, key, dfkv_store_index_params);
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
 * A thread sleeping on e (wait_var_event(e, ...): a PUT follower, an
 * ack=disk PUT, a GET of a block being read) may go on: the hashed wait
 * queues of the kernel's var waits, never one queue per store.  After
 * the state change, outside e->lock; e itself may not be touched.
 */
static void entry_wake_sleepers(struct dfkv_entry *e)
{
	smp_mb(); /* the state change before the sleeper check */
	wake_up_var(e);
}

/* What the requests parked on e waited for happened: wake them all. */
static void entry_wake_locked(struct dfkv_entry *e)
{
	lockdep_assert_held(&e->lock);
	while (!list_empty(&e->parked)) {
		struct dfkv_waiter *w = list_first_entry(&e->parked,
							 struct dfkv_waiter,
							 node);

		list_del_init(&w->node);
		w->wake(w);
	}
}

/* Leave DIRTY (to the state the caller sets): no longer dirty bytes. */
static void entry_undirty_locked(struct dfkv_store *st, struct dfkv_entry *e)
{
	lockdep_assert_held(&e->lock);
	if (e->state == DFKV_E_DIRTY)
		atomic64_sub(e->len, &st->dirty_bytes);
}

bool dfkv_entry_kill_locked(struct dfkv_store *st, struct dfkv_entry *e)
{
	lockdep_assert_held(&e->lock);
	if (e->state == DFKV_E_DEAD)
		return false;
	if (dfkv_entry_visible(e->state)) {
		dfkv_lru_del_locked(&st->lru, e);
		if (e->state == DFKV_E_DURABLE)
			st->lower->unlist_locked(e);
		entry_undirty_locked(st, e);
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

void dfkv_entry_unlink(struct dfkv_store *st, struct dfkv_entry *e)
{
	rhashtable_remove_fast(&st->index, &e->hnode, dfkv_store_index_params);
	dfkv_entry_put(e);	/* the index's reference */
}

bool dfkv_entry_durable_locked(struct dfkv_store *st, struct dfkv_entry *e)
{
	lockdep_assert_held(&e->lock);
	if (e->state != DFKV_E_DIRTY)
		return false;
	entry_undirty_locked(st, e);
	e->state = DFKV_E_DURABLE;
	return true;
}

void dfkv_entry_flush_failed_locked(struct dfkv_store *st,
				    struct dfkv_entry *e, bool nospc)
{
	lockdep_assert_held(&e->lock);
	if (nospc)
		e->flags |= DFKV_EF_NOSPC;
	if (e->state != DFKV_E_DIRTY)
		return;
	entry_undirty_locked(st, e);
	e->state = DFKV_E_COMMITTED;
}

bool dfkv_entry_disk_lost_locked(struct dfkv_store *st, struct dfkv_entry *e)
{
	lockdep_assert_held(&e->lock);
	if (e->state != DFKV_E_DURABLE)
		return false;
	if (e->where == DFKV_W_RAM) {
		e->state = DFKV_E_COMMITTED;
		return false;
	}
	return dfkv_entry_kill_locked(st, e);
}

bool dfkv_entry_evict_ram(struct dfkv_store *st, struct dfkv_entry *e)
{
	struct dfkv_slot *slots = NULL, one;
	struct dfkv_stage *stage = NULL;
	bool killed = false;
	u32 nr = 0;

	spin_lock(&e->lock);
	if ((e->state == DFKV_E_COMMITTED || e->state == DFKV_E_DURABLE) &&
	    !e->pins && e->where == DFKV_W_RAM) {
		if (e->state == DFKV_E_DURABLE) {
			dfkv_lru_del_locked(&st->lru, e);
			e->where = DFKV_W_NONE;
			slots = ram_slots_take_locked(e, e->slots, &one);
			nr = e->nr_slots;
			e->slots = &e->slot0;
			e->nr_slots = 0;
			stage = e->stage;
			e->stage = NULL;
		} else {
			killed = dfkv_entry_kill_locked(st, e);
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
		dfkv_ghost_add(&st->ghosts, &e->key, DFKV_MISS_EVICTED);
		dfkv_entry_unlink(st, e);
		this_cpu_inc(st->stats->pcpu->evictions);
		trace_dfkv_evict(e->key.tenant, e->len, false);
	}
	return killed;
}

/* RAM eviction by recency (evict.c) over the store's own shards. */
static struct dfkv_entry *ram_pick(void *ctx)
{
	struct dfkv_store *st = ctx;

	return dfkv_lru_pick(&st->lru);
}

static bool ram_evict(void *ctx, struct dfkv_entry *e)
{
	return dfkv_entry_evict_ram(ctx, e);
}

static const struct dfkv_evict_ops ram_evict_ops = {
	.pick = ram_pick,
	.evict = ram_evict,
	.put = dfkv_entry_put,
};

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
	trace_dfkv_put_charge(&e->key, e->len, !ok);
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

/* What the arena's allocation error means for a PUT. */
static int alloc_status(int err)
{
	return err == -ENOSPC || err == -ENOMEM ? DFKV_STATUS_CACHE_FULL :
		DFKV_STATUS_TOO_LARGE;
}

/* The leader's value bytes its RAM parts (or its stage) cover. */
static u64 put_reserved(struct dfkv_store *st, struct dfkv_entry *e)
{
	if (e->stage)
		return e->len;
	return min(e->len, (u64)e->nr_slots * st->slab.extent_bytes);
}

/*
 * A disk-only node's leader: its value is staged on its way to disk.
 * With no disk there is nowhere to keep it (CACHE_FULL); with the stages
 * at the RAM budget the node is busy with other values in flight.
 */
static int put_stage(struct dfkv_put *put)
{
	struct dfkv_store *st = put->e->store;
	int err;

	if (!store_tiered(st))
		return dfkv_store_put_end(put, false, DFKV_STATUS_CACHE_FULL);
	err = dfkv_entry_stage(st, put->e);
	trace_dfkv_put_alloc(&put->e->key, put->e->len, err);
	if (err)
		return dfkv_store_put_end(put, false, DFKV_STATUS_BUSY);
	this_cpu_inc(st->stats->pcpu->ram_bypasses);
	put->reserved = put_reserved(st, put->e);
	return DFKV_STATUS_OK;
}

int dfkv_store_put_begin(struct dfkv_store *st, const struct dfkv_key *key,
			 u64 len, u64 ahead, struct dfkv_put *put)
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

	e = dfkv_entry_new(st, key, len);
	if (!e) {
		dfkv_tenant_put(st->tenants, tenant);
		return DFKV_STATUS_CACHE_FULL;
	}
	kref_get(&e->ref);	/* one for the index, one for the leader */
	e->tenant = tenant;

retry:
	rcu_read_lock();
	old = rhashtable_lookup_get_insert_fast(&st->index, &e->hnode,
						dfkv_store_index_params);
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
			dfkv_entry_put(old);
			cond_resched();
			goto retry;
		}
		if (dfkv_entry_visible(old->state)) {
			put->stored_len = old->len;
			WRITE_ONCE(old->stamp, now_stamp());
			spin_unlock(&old->lock);
			dfkv_entry_put(old);
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
	if (store_tiered(st) && st->lower->over_watermark(st->lower_ctx, len))
		return dfkv_store_put_end(put, false, DFKV_STATUS_CACHE_FULL);
	if (st->disk_only)
		return put_stage(put);
	err = dfkv_evict_alloc_parts_upto(&st->ram, e, &e->slots, &e->nr_slots,
					  &e->slot0, 0, ahead);
	if (err == -ENOSPC && store_tiered(st)) {
		/* Every RAM slot pinned or dirty: the synchronous disk path. */
		ram_slots_free(st, e->slots, e->nr_slots,
			       e->slots != &e->slot0);
		e->slots = &e->slot0;
		e->nr_slots = 0;
		err = dfkv_entry_stage(st, e);
		if (!err)
			this_cpu_inc(st->stats->pcpu->ram_bypasses);
	}
	put->reserved = err ? 0 : put_reserved(st, e);
	trace_dfkv_put_alloc(key, put->reserved, err);
	if (err)
		return dfkv_store_put_end(put, false, alloc_status(err));
	return DFKV_STATUS_OK;
}

/*
 * A committed leader waits for its flush: put->w parked on the entry
 * (-EINPROGRESS), or the caller's task asleep, killably (-EINTR); then
 * the flush's status.
 */
static int put_flush_wait(struct dfkv_put *put)
{
	struct dfkv_entry *e = put->e;

	if (put->w) {
		spin_lock(&e->lock);
		put->flushing = e->flags & DFKV_EF_SYNC;
		if (put->flushing)
			list_add_tail(&put->w->node, &e->parked);
		spin_unlock(&e->lock);
		if (put->flushing)
			return -EINPROGRESS;
	} else if (wait_var_event_killable(e,
				!(READ_ONCE(e->flags) & DFKV_EF_SYNC))) {
		put->stored_len = 0;
		dfkv_store_put_drop(put);
		return -EINTR;
	}
	return dfkv_store_put_flushed(put);
}

/*
 * Only the leader changes a RESERVED entry's slots, and nobody else reads
 * them before it is committed, so the parts are added without the lock.
 * A value that started in RAM goes on in RAM: there is no moving it to a
 * stage halfway, so a full arena fails it.
 */
int dfkv_store_put_reserve(struct dfkv_put *put, u64 upto)
{
	struct dfkv_entry *e = put->e;
	struct dfkv_store *st = e->store;
	int err;

	if (upto <= put->reserved)
		return DFKV_STATUS_OK;
	err = dfkv_evict_alloc_more(&st->ram, e, e->slots, &e->nr_slots, upto);
	put->reserved = put_reserved(st, e);
	trace_dfkv_put_alloc(&e->key, put->reserved, err);
	return err ? alloc_status(err) : DFKV_STATUS_OK;
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

int dfkv_store_put_end(struct dfkv_put *put, bool ok, int status)
{
	struct dfkv_entry *e = put->e;
	struct dfkv_store *st = e->store;
	bool unlink = false, flush = false, staged = false, published = false;

	spin_lock(&e->lock);
	if (e->state == DFKV_E_RESERVED) {
		if (ok) {
			e->stamp = now_stamp();
			e->where = DFKV_W_RAM;
			staged = e->stage;
			if (store_tiered(st) || staged) {
				e->state = DFKV_E_DIRTY;
				atomic64_add(e->len, &st->dirty_bytes);
				kref_get(&e->ref);	/* the flush's */
				flush = true;
			} else {
				e->state = DFKV_E_COMMITTED;
			}
			atomic64_inc(&st->objects);
			atomic64_add(e->len, &st->used_bytes);
			atomic64_inc(&e->tenant->objects);
			atomic64_add(e->len, &e->tenant->used_bytes);
			atomic64_inc(&e->tenant->puts);
			atomic64_add(e->len, &e->tenant->bytes_in);
			this_cpu_add(st->stats->pcpu->bytes_in, e->len);
			dfkv_lru_add_locked(&st->lru, e);
			status = DFKV_STATUS_OK;
			published = true;
		} else {
			unlink = dfkv_entry_kill_locked(st, e);
		}
	} else if (ok) {
		/* Removed while being filled: the PUT happened before it. */
		status = DFKV_STATUS_OK;
	}
	put->stored_len = status == DFKV_STATUS_OK ? e->len : 0;
	e->result = status;
	e->done = true;
	entry_wake_locked(e);
	spin_unlock(&e->lock);
	if (published)
		trace_dfkv_put_publish(&e->key, e->len, flush);
	entry_wake_sleepers(e);
	if (unlink)
		dfkv_entry_unlink(st, e);
	if (flush) {
		if (!staged)
			this_cpu_inc(st->stats->pcpu->ram_puts);
		/* the tier queues the flush; the PUT may wait for it */
		if (st->lower->commit(st->lower_ctx, e, staged) == -EINPROGRESS)
			return put_flush_wait(put);
	}
	dfkv_entry_put(e);
	put->e = NULL;
	return status;
}

int dfkv_store_put_flushed(struct dfkv_put *put)
{
	struct dfkv_entry *e = put->e;
	int status;

	spin_lock(&e->lock);
	status = e->flags & DFKV_EF_SYNC ? -EINPROGRESS : e->flushed;
	spin_unlock(&e->lock);
	if (status == -EINPROGRESS)
		return status;
	put->stored_len = status == DFKV_STATUS_OK ? e->len : 0;
	dfkv_store_put_drop(put);
	return status;
}

void dfkv_entry_flushed(struct dfkv_store *st, struct dfkv_entry *e,
			int status)
{
	spin_lock(&e->lock);
	e->flushed = status;
	e->flags &= ~DFKV_EF_SYNC;
	entry_wake_locked(e);
	spin_unlock(&e->lock);
	entry_wake_sleepers(e);
}

void dfkv_store_put_drop(struct dfkv_put *put)
{
	dfkv_entry_put(put->e);
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
	dfkv_entry_put(e);
	put->e = NULL;
	return status;
}

int dfkv_store_put_wait(struct dfkv_put *put)
{
	int err;

	err = wait_var_event_killable(put->e, READ_ONCE(put->e->done));
	if (err) {
		dfkv_store_put_drop(put);
		return err;
	}
	return dfkv_store_put_result(put);
}

bool dfkv_store_put_park(struct dfkv_put *put, struct dfkv_waiter *w)
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

void dfkv_store_unpark(struct dfkv_entry *e, struct dfkv_waiter *w)
{
	spin_lock(&e->lock);
	if (!list_empty(&w->node))
		list_del_init(&w->node);
	spin_unlock(&e->lock);
}

struct dfkv_entry *dfkv_store_pin(struct dfkv_store *st,
				  const struct dfkv_key *key)
{
	struct dfkv_entry *e = entry_lookup(st, key);

	if (!e)
		return NULL;
	spin_lock(&e->lock);
	if (!dfkv_entry_visible(e->state)) {
		spin_unlock(&e->lock);
		dfkv_entry_put(e);
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
		dfkv_entry_evict_ram(st, e);
	dfkv_entry_put(e);
}

void dfkv_entry_loaded(struct dfkv_store *st, struct dfkv_entry *e, int err,
		       struct dfkv_slot *slots, u32 nr, bool staged,
		       bool leased)
{
	struct dfkv_stage *stage = NULL;
	bool unlink = false;
	struct dfkv_slot one;

	spin_lock(&e->lock);
	/*
	 * A corrupt payload: the block is gone, never served.  A LEASE
	 * announced the block: one its disk cannot give back is gone too,
	 * so the GETs that follow are misses, never errors.  No RAM to read
	 * it into is no such failure: those GETs read it.
	 */
	if (err == -EBADMSG ||
	    (leased && err && err != -ENOSPC && err != -ENOMEM))
		unlink = dfkv_entry_kill_locked(st, e);
	if (!err) {
		e->where = DFKV_W_RAM;
		if (dfkv_entry_visible(e->state))
			dfkv_lru_add_locked(&st->lru, e);
		slots = NULL;
	} else {
		e->where = DFKV_W_NONE;
		if (staged) {
			stage = e->stage;
			e->stage = NULL;
		} else if (e->slots == slots) {
			e->slots = &e->slot0;
			e->nr_slots = 0;
		}
	}
	if (slots)
		slots = ram_slots_take_locked(e, slots, &one);
	e->load_err = err >= S8_MIN ? err : -EIO;
	entry_wake_locked(e);
	spin_unlock(&e->lock);
	if (unlink)
		dfkv_entry_unlink(st, e);
	entry_wake_sleepers(e);
	if (slots)
		ram_slots_free(st, slots, nr, slots != &one);
	stage_free(st, stage);
}

void dfkv_store_prefetch(struct dfkv_store *st, struct dfkv_entry *e)
{
	bool load = false;

	spin_lock(&e->lock);
	if (e->state == DFKV_E_DURABLE && e->where == DFKV_W_NONE &&
	    st->lower->readable_locked(e)) {
		/* the read's own pin and reference, until it ended */
		e->where = DFKV_W_LOADING;
		e->pins++;
		kref_get(&e->ref);
		load = true;
	}
	spin_unlock(&e->lock);
	if (!load)
		return;
	atomic64_inc(&st->pins);
	this_cpu_inc(st->stats->pcpu->lease_reads);
	st->lower->load(st->lower_ctx, e, true);
}

/*
 * The cold read a GET pinned rd->e for ended: 0 when the value is in RAM,
 * else the entry is unpinned and -ENOENT (a miss), -EBUSY or -EIO.
 */
static int pin_loaded(struct dfkv_store *st, struct dfkv_read *rd)
{
	struct dfkv_entry *e = rd->e;
	u8 where, state;
	int err;

	spin_lock(&e->lock);
	where = e->where;
	state = e->state;
	err = e->load_err;
	spin_unlock(&e->lock);
	if (where == DFKV_W_RAM) {
		this_cpu_inc(st->stats->pcpu->disk_hits);
		return 0;
	}
	dfkv_store_get_end(rd);
	/* A corrupt payload, or one a failed LEASE read removed: a miss. */
	if (err == -EBADMSG || state == DFKV_E_DEAD)
		return -ENOENT;
	/* No RAM or stage to read it into now: the block is fine. */
	if (err == -ENOSPC || err == -ENOMEM)
		return -EBUSY;
	return -EIO;
}

/*
 * Pin a committed entry for reading into rd->e, bringing it into RAM when
 * it is only on disk: 0, -ENOENT (a miss), -EBUSY, -EIO; -EINPROGRESS
 * with w parked (rd->e pinned) while its cold read runs, -EINTR when the
 * caller's task was killed waiting for it.
 */
static int store_pin_ram(struct dfkv_store *st, const struct dfkv_key *key,
			 struct dfkv_read *rd, struct dfkv_waiter *w)
{
	struct dfkv_entry *e = entry_lookup(st, key);
	bool hit = false, load = false;

	rd->e = NULL;
	if (!e)
		return -ENOENT;
	spin_lock(&e->lock);
	if (!dfkv_entry_visible(e->state) ||
	    (e->where == DFKV_W_NONE &&
	     (e->state != DFKV_E_DURABLE || !st->lower->readable_locked(e)))) {
		spin_unlock(&e->lock);
		dfkv_entry_put(e);
		return -ENOENT;
	}
	e->pins++;
	if (e->where == DFKV_W_RAM) {
		hit = true;
		if (store_tiered(st))
			this_cpu_inc(st->stats->pcpu->ram_hits);
	} else if (e->where == DFKV_W_LOADING) {
		this_cpu_inc(st->stats->pcpu->coalesced);
	} else {
		/* the read's own pin and reference, until it ended */
		e->where = DFKV_W_LOADING;
		e->pins++;
		kref_get(&e->ref);
		load = true;
	}
	if (!hit && w)
		list_add_tail(&w->node, &e->parked);
	spin_unlock(&e->lock);
	atomic64_add(load ? 2 : 1, &st->pins);
	WRITE_ONCE(e->stamp, now_stamp());
	rd->e = e;
	if (hit)
		return 0;
	if (load) {
		this_cpu_inc(st->stats->pcpu->ram_misses);
		st->lower->load(st->lower_ctx, e, false);
	}
	if (w)
		return -EINPROGRESS;
	if (wait_var_event_killable(e, READ_ONCE(e->where) != DFKV_W_LOADING)) {
		dfkv_store_get_end(rd);
		return -EINTR;
	}
	return pin_loaded(st, rd);
}

/* A GET's pin came out as err (store_pin_ram()): count it, its status. */
static int get_status(struct dfkv_store *st, const struct dfkv_key *key,
		      struct dfkv_read *rd, int err)
{
	enum dfkv_miss_cause cause;
	struct dfkv_tenant *t;

	switch (err) {
	case 0:
		this_cpu_add(st->stats->pcpu->hits, 1);
		atomic64_inc(&rd->e->tenant->hits);
		return DFKV_STATUS_OK;
	case -EINPROGRESS:
	case -EINTR:
		return err;
	case -EBUSY:
		return DFKV_STATUS_BUSY;
	case -EIO:
		return DFKV_STATUS_IO_ERROR;
	}
	this_cpu_add(st->stats->pcpu->misses, 1);
	cause = dfkv_ghost_cause(&st->ghosts, key);
	this_cpu_inc(st->stats->pcpu->miss_causes[cause]);
	rcu_read_lock();
	t = dfkv_tenant_find(st->tenants, key->tenant);
	if (t)
		atomic64_inc(&t->misses);
	rcu_read_unlock();
	return DFKV_STATUS_NOT_FOUND;
}

int dfkv_store_get_begin(struct dfkv_store *st, const struct dfkv_key *key,
			 struct dfkv_read *rd, struct dfkv_waiter *w)
{
	return get_status(st, key, rd, store_pin_ram(st, key, rd, w));
}

int dfkv_store_get_resume(struct dfkv_read *rd, struct dfkv_waiter *w)
{
	struct dfkv_entry *e = rd->e;
	struct dfkv_store *st = e->store;
	struct dfkv_key key = e->key;
	bool woken;

	spin_lock(&e->lock);
	woken = list_empty(&w->node);
	spin_unlock(&e->lock);
	if (!woken)
		return -EINPROGRESS;
	return get_status(st, &key, rd, pin_loaded(st, rd));
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

void dfkv_store_pin_more(const struct dfkv_read *rd, struct dfkv_read *more)
{
	struct dfkv_entry *e = rd->e;

	spin_lock(&e->lock);
	e->pins++;
	kref_get(&e->ref);
	spin_unlock(&e->lock);
	atomic64_inc(&e->store->pins);
	more->e = e;
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
	if (dfkv_entry_visible(READ_ONCE(e->state)))
		len = e->len;
	dfkv_entry_put(e);
	return len;
}

int dfkv_store_remove(struct dfkv_store *st, const struct dfkv_key *key)
{
	struct dfkv_entry *e = entry_lookup(st, key);
	bool unlink;

	if (!e)
		return DFKV_STATUS_OK;
	spin_lock(&e->lock);
	unlink = dfkv_entry_kill_locked(st, e);
	spin_unlock(&e->lock);
	if (unlink) {
		dfkv_ghost_add(&st->ghosts, key, DFKV_MISS_REMOVED);
		dfkv_entry_unlink(st, e);
	}
	dfkv_entry_put(e);
	return DFKV_STATUS_OK;
}

bool dfkv_store_touch(struct dfkv_store *st, const struct dfkv_key *key)
{
	struct dfkv_entry *e = entry_lookup(st, key);
	bool hit = false;

	if (!e)
		return false;
	spin_lock(&e->lock);
	if (dfkv_entry_visible(e->state)) {
		/* Strictly increasing, so a TOUCH list keeps its order. */
		e->stamp = max(now_stamp(), e->stamp + 1);
		if (e->where == DFKV_W_RAM) {
			dfkv_lru_del_locked(&st->lru, e);
			dfkv_lru_add_locked(&st->lru, e);
		}
		if (e->state == DFKV_E_DURABLE)
			st->lower->touch_locked(e);
		hit = true;
	}
	spin_unlock(&e->lock);
	dfkv_entry_put(e);
	return hit;
}

bool dfkv_store_walk(struct dfkv_store *st,
		     bool (*act)(struct dfkv_store *st, struct dfkv_entry *e,
				 void *arg, bool *unlink),
		     void *arg)
{
	struct rhashtable_iter it;
	struct dfkv_entry *e;
	bool any = false;

	rhashtable_walk_enter(&st->index, &it);
	rhashtable_walk_start(&it);
	while ((e = rhashtable_walk_next(&it))) {
		bool unlink = false;

		if (IS_ERR(e) || !kref_get_unless_zero(&e->ref))
			continue;
		rhashtable_walk_stop(&it);
		any |= act(st, e, arg, &unlink);
		if (unlink)
			dfkv_entry_unlink(st, e);
		dfkv_entry_put(e);
		rhashtable_walk_start(&it);
	}
	rhashtable_walk_stop(&it);
	rhashtable_walk_exit(&it);
	return any;
}

int dfkv_store_insert(struct dfkv_store *st, struct dfkv_entry *e)
{
	struct dfkv_entry *old;

	/* A PUT that finds it before it is visible follows a done leader. */
	e->result = DFKV_STATUS_OK;
	e->done = true;
	kref_get(&e->ref);	/* the index's */
	old = rhashtable_lookup_get_insert_fast(&st->index, &e->hnode,
						dfkv_store_index_params);
	if (old) {
		/* IS_ERR(old) too: no room in the table for it */
		kref_put(&e->ref, entry_release);
		return -EEXIST;
	}
	return 0;
}

void dfkv_entry_publish_durable_locked(struct dfkv_store *st,
				       struct dfkv_entry *e)
{
	lockdep_assert_held(&e->lock);
	e->state = DFKV_E_DURABLE;
	e->where = DFKV_W_NONE;
	atomic64_inc(&st->objects);
	atomic64_add(e->len, &st->used_bytes);
	atomic64_inc(&e->tenant->objects);
	atomic64_add(e->len, &e->tenant->used_bytes);
	dfkv_tenant_charge(st->tenants, e->tenant, e->len, true);
	e->charged = true;
}

static const struct dfkv_slab_ops arena_slab_ops = {
	.bind = dfkv_arena_bind,
};

int dfkv_store_init(struct dfkv_store *st, struct dfkv_stats *stats,
		    struct dfkv_tenants *tenants, u64 capacity, bool evict,
		    u32 numa)
{
	struct mem_cgroup *memcg;
	u64 ext = SZ_4M;
	u32 nr;
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
	err = dfkv_lru_init(&st->lru);
	if (err)
		return err;
	err = dfkv_arena_init(&st->arena, ext, nr, numa);
	if (err)
		goto err_lru;
	err = dfkv_slab_init(&st->slab, ext, nr, &arena_slab_ops, &st->arena);
	if (err)
		goto err_arena;
	err = rhashtable_init(&st->index, &dfkv_store_index_params);
	if (err)
		goto err_slab;
	memcg = dfkv_store_charge(st);
	err = dfkv_ghosts_init(&st->ghosts);
	set_active_memcg(memcg);
	if (err)
		goto err_index;
	st->ram.slab = &st->slab;
	st->ram.ops = &ram_evict_ops;
	st->ram.ctx = st;
	st->ram.enabled = &st->evict;
	return 0;

err_index:
	rhashtable_destroy(&st->index);
err_slab:
	dfkv_slab_destroy(&st->slab);
err_arena:
	dfkv_arena_destroy(&st->arena);
err_lru:
	dfkv_lru_destroy(&st->lru);
	return err;
}

static void store_drop_entry(void *ptr, void *arg)
{
	struct dfkv_entry *e = ptr;
	struct dfkv_store *st = arg;

	spin_lock(&e->lock);
	e->flags |= DFKV_EF_KEEP;	/* a graceful stop: its records stay */
	dfkv_entry_kill_locked(st, e);
	spin_unlock(&e->lock);
	dfkv_entry_put(e);	/* the index's reference */
}

void dfkv_store_destroy(struct dfkv_store *st)
{
	rhashtable_free_and_destroy(&st->index, store_drop_entry, st);
	dfkv_ghosts_destroy(&st->ghosts);
	/* Entries are freed after a grace period; their slots already are. */
	rcu_barrier();
	dfkv_slab_destroy(&st->slab);
	dfkv_arena_destroy(&st->arena);
	dfkv_lru_destroy(&st->lru);
}
