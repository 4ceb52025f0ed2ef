// SPDX-License-Identifier: GPL-2.0
/*
 * The disks below a node's store (tier.h): attach with rebuild, detach
 * with a graceful flush, the ring that routes blocks to disks, the flush
 * workqueue and the byte mover between RAM slots and disk slots; and the
 * entries' disk side, which the store hands down through its lower ops:
 * flushing DIRTY entries to DURABLE, cold reads of DURABLE ones into RAM
 * (started without waiting, the bios' completion publishing the outcome;
 * GETs arriving meanwhile park for the one read), each disk's
 * recency list and eviction, and the entries of a disk that is attached
 * (rebuild), deleted or failed.  Entry states change only through the
 * store's _locked primitives.
 *
 * Write-back: a DIRTY entry's flush allocates disk slots, writes the
 * payload with bios straight from the RAM pages, then the records, and
 * only then makes it DURABLE.  The records of a killed entry are cleared
 * by the release of its last reference, before its disk slots are freed;
 * a graceful stop marks the entries KEEP first so their records survive.
 *
 * Disk add and the list and ring changes of a delete serialize on the
 * tier's mutex; the data path reads the ring under RCU only.  A delete's
 * waits on the device (flushes, drained slots, the clean close) run on
 * the node's control workqueue, outside the mutex, and its caller waits
 * killably: a device that stopped answering holds only its own disk.
 * A disk in the list holds one reference, the ring one per member, each
 * entry with slots on the disk one more (and counts in d->users, which a
 * delete waits to fall to zero); a deletion takes over the list's and
 * drops it once the disk closed and left the list.
 */
#include <linux/rhashtable.h>
#include <linux/slab.h>
#include <linux/mm.h>
#include <linux/bvec.h>
#include <linux/highmem.h>
#include <linux/wait_bit.h>
#include <linux/delay.h>
#include <linux/timekeeping.h>
#include <net/netlink.h>

#include "store.h"
#include "tier.h"
#include "disk.h"
#include "ring.h"
#include "trace.h"

static const struct dfkv_store_lower_ops tier_lower_ops;

int dfkv_tier_init(struct dfkv_tier *t, struct dfkv_store *st,
		   const char *name, const struct dfkv_tier_ops *ops, void *ctx,
		   struct workqueue_struct *ctl_wq)
{
	t->st = st;
	t->ctl_wq = ctl_wq;
	mutex_init(&t->lock);
	INIT_LIST_HEAD(&t->disks);
	RCU_INIT_POINTER(t->ring, NULL);
	t->ops = ops;
	t->ops_ctx = ctx;
	t->policy = DFKV_TIER_WRITEBACK;
	t->ack = DFKV_ACK_RAM;
	t->dirty_pct = DFKV_TIER_DIRTY_PCT_DEFAULT;
	atomic_set(&t->backlog, 0);
	atomic_set(&t->flushing, 0);
	atomic_set(&t->reading, 0);
	atomic_set(&t->leaving, 0);
	t->wq = alloc_workqueue("dfkv_flush/%s", WQ_UNBOUND | WQ_MEM_RECLAIM,
				DFKV_TIER_WORKERS_PER_DISK, name);
	if (!t->wq)
		return -ENOMEM;
	dfkv_store_set_lower(st, &tier_lower_ops, t);
	return 0;
}

static bool tier_on(struct dfkv_tier *t)
{
	return rcu_access_pointer(t->ring);
}

/* Flush workers: as set, or 4 per disk; at most 16. */
static void tier_apply_workers(struct dfkv_tier *t)
{
	u32 n = t->workers ?: DFKV_TIER_WORKERS_PER_DISK * max(t->nr_disks, 1U);

	workqueue_set_max_active(t->wq, min_t(u32, n, DFKV_TIER_WORKERS_MAX));
}

int dfkv_tier_set_workers(struct dfkv_tier *t, u32 workers)
{
	if (workers > DFKV_TIER_WORKERS_MAX)
		return -EINVAL;
	mutex_lock(&t->lock);
	t->workers = workers;
	tier_apply_workers(t);
	mutex_unlock(&t->lock);
	return 0;
}

/*
 * Rebuild the ring over the listed disks that are up and not leaving and
 * publish it.  When every one of those failed, the ring keeps naming them
 * all: flushes then fail (the blocks stay in RAM, ack=disk PUTs get
 * IO_ERROR) rather than a node with disks quietly acting as RAM-only.
 */
static int tier_publish_ring(struct dfkv_tier *t)
{
	struct dfkv_ring *ring = NULL, *old;
	struct dfkv_disk **disks, *d;
	u32 n = 0;

	lockdep_assert_held(&t->lock);
	if (t->nr_disks) {
		disks = kcalloc(t->nr_disks, sizeof(*disks), GFP_KERNEL);
		if (!disks)
			return -ENOMEM;
		list_for_each_entry(d, &t->disks, link)
			if (!d->leaving && dfkv_disk_up(d))
				disks[n++] = d;
		if (!n)
			list_for_each_entry(d, &t->disks, link)
				if (!d->leaving)
					disks[n++] = d;
		ring = n ? dfkv_ring_build(disks, n) : NULL;
		kfree(disks);
		if (IS_ERR(ring))
			return PTR_ERR(ring);
	}
	old = rcu_replace_pointer(t->ring, ring, lockdep_is_held(&t->lock));
	WRITE_ONCE(t->st->tiered, !!ring);
	synchronize_rcu();
	dfkv_ring_free(old);
	tier_apply_workers(t);
	return 0;
}

/*
 * A disk failed: route around it, take its blocks out of the index (a
 * block in RAM stays, in RAM only), then announce it.  Once the node's
 * teardown began (dfkv_tier_stop()) the store is left alone: it is about
 * to be destroyed, and nothing reads it any more.
 */
static void tier_fail_disk(struct dfkv_tier *t, struct dfkv_disk *d);

static void tier_disk_failed(struct dfkv_disk *d, void *ctx)
{
	struct dfkv_tier *t = ctx;

	mutex_lock(&t->lock);
	if (tier_publish_ring(t))
		pr_warn("dfkv: disk %s failed; the ring still names it (no memory)\n",
			d->name);
	if (!t->stopped)
		tier_fail_disk(t, d);
	mutex_unlock(&t->lock);
	trace_dfkv_disk_state(d->name, READ_ONCE(d->state), DFKV_EVENT_DISK_STATE);
	t->ops->disk_event(t->ops_ctx, d, DFKV_EVENT_DISK_STATE);
}

static struct dfkv_disk *tier_find(struct dfkv_tier *t, const char *name)
{
	struct dfkv_disk *d;

	list_for_each_entry(d, &t->disks, link)
		if (!strcmp(d->name, name))
			return d;
	return NULL;
}

static int tier_rebuild(struct dfkv_tier *t, struct dfkv_disk *d);
static void tier_drop_disk(struct dfkv_tier *t, struct dfkv_disk *d);

int dfkv_tier_disk_add(struct dfkv_tier *t, const char *path,
		       const char *name, bool format, u64 extent_bytes,
		       struct netlink_ext_ack *extack)
{
	struct dfkv_disk *d;
	int err;

	err = dfkv_disk_open(path, name, format, extent_bytes,
			     tier_disk_failed, t, extack, &d);
	if (err)
		return err;
	mutex_lock(&t->lock);
	if (tier_find(t, d->name)) {
		if (tier_find(t, d->name)->leaving)
			NL_SET_ERR_MSG(extack, "a disk of that name is being deleted");
		else
			NL_SET_ERR_MSG(extack, "this node has a disk of that name");
		err = -EEXIST;
		goto err_close;
	}
	err = tier_rebuild(t, d);
	if (err) {
		NL_SET_ERR_MSG(extack, "rebuilding the index from the disk failed");
		goto err_drop;
	}
	list_add_tail(&d->link, &t->disks);
	t->nr_disks++;
	err = tier_publish_ring(t);
	if (err) {
		list_del(&d->link);
		t->nr_disks--;
		goto err_drop;
	}
	mutex_unlock(&t->lock);
	trace_dfkv_disk_state(d->name, READ_ONCE(d->state), DFKV_EVENT_DISK_ADD);
	t->ops->disk_event(t->ops_ctx, d, DFKV_EVENT_DISK_ADD);
	return 0;

err_drop:
	tier_drop_disk(t, d);
err_close:
	mutex_unlock(&t->lock);
	dfkv_disk_close(d, !err || err == -EEXIST);
	dfkv_disk_put(d);
	return err;
}

/*
 * A disk's deletion, on t->ctl_wq: it may wait on the device for as long
 * as the device takes, so it holds neither the tier's mutex while it does
 * nor the deleter, who waits killably for d->left.  The disk stays listed
 * (shown, its name taken) until it closed.
 */
static void tier_disk_leave(struct work_struct *work)
{
	struct dfkv_disk *d = container_of(work, struct dfkv_disk, leave_work);
	struct dfkv_tier *t = d->leave_tier;

	/*
	 * The blocks dirty now are flushed while the disk still takes its
	 * share of them (queued flushes route when they run); what is
	 * written during the deletion goes to the other disks, or stays in
	 * RAM only when this was the last one.
	 */
	flush_workqueue(t->wq);
	mutex_lock(&t->lock);
	while (tier_publish_ring(t)) {
		mutex_unlock(&t->lock);
		msleep(20);	/* no memory for the ring: try again */
		mutex_lock(&t->lock);
	}
	mutex_unlock(&t->lock);
	/* No flush can route to d now: let the ones that did finish. */
	flush_workqueue(t->wq);
	tier_drop_disk(t, d);
	dfkv_disk_close(d, true);
	mutex_lock(&t->lock);
	list_del(&d->link);
	t->nr_disks--;
	tier_apply_workers(t);
	mutex_unlock(&t->lock);
	trace_dfkv_disk_state(d->name, READ_ONCE(d->state), DFKV_EVENT_DISK_DEL);
	t->ops->disk_event(t->ops_ctx, d, DFKV_EVENT_DISK_DEL);
	complete_all(&d->left);
	if (atomic_dec_and_test(&t->leaving))
		wake_up_var(&t->leaving);
	dfkv_disk_put(d);	/* the list's */
}

int dfkv_tier_disk_del(struct dfkv_tier *t, const char *name,
		       struct netlink_ext_ack *extack)
{
	struct dfkv_disk *d;
	int err = 0;

	mutex_lock(&t->lock);
	d = tier_find(t, name);
	if (!d) {
		mutex_unlock(&t->lock);
		NL_SET_ERR_MSG(extack, "no disk of that name on this node");
		return -ENOENT;
	}
	dfkv_disk_get(d);		/* the caller's */
	if (!d->leaving) {		/* else: wait for that deletion */
		d->leaving = true;
		d->leave_tier = t;
		init_completion(&d->left);
		INIT_WORK(&d->leave_work, tier_disk_leave);
		atomic_inc(&t->leaving);
		/* the list's reference passes to the work */
		queue_work(t->ctl_wq, &d->leave_work);
	}
	mutex_unlock(&t->lock);
	if (wait_for_completion_killable(&d->left)) {
		pr_info("dfkv: deleting disk %s goes on in the background: its device does not answer\n",
			d->name);
		NL_SET_ERR_MSG(extack, "interrupted: the deletion goes on in the background");
		err = -EINTR;
	}
	dfkv_disk_put(d);
	return err;
}

struct dfkv_disk *dfkv_tier_disk_get(struct dfkv_tier *t, const char *name,
				     u32 pos)
{
	struct dfkv_disk *d, *found = NULL;
	u32 i = 0;

	mutex_lock(&t->lock);
	list_for_each_entry(d, &t->disks, link) {
		if (name ? !strcmp(d->name, name) : i++ == pos) {
			dfkv_disk_get(d);
			found = d;
			break;
		}
	}
	mutex_unlock(&t->lock);
	return found;
}

/* The disk a key goes to, with a reference, or NULL. */
static struct dfkv_disk *tier_route(struct dfkv_tier *t, const u8 *object_id)
{
	struct dfkv_disk *d;

	rcu_read_lock();
	d = dfkv_ring_lookup(rcu_dereference(t->ring), object_id);
	if (d)
		dfkv_disk_get(d);
	rcu_read_unlock();
	return d;
}

void dfkv_tier_stop(struct dfkv_tier *t)
{
	long left;

	/* Deletions first: they flush the blocks of their disks. */
	wait_var_event(&t->leaving, !atomic_read(&t->leaving));
	left = wait_var_event_timeout(&t->flushing, !atomic_read(&t->flushing),
				      msecs_to_jiffies(DFKV_TIER_STOP_TIMEOUT_MS));
	if (!left) {
		pr_warn("dfkv: flushing dirty blocks timed out after %u ms, %d left: they are dropped\n",
			DFKV_TIER_STOP_TIMEOUT_MS, atomic_read(&t->flushing));
		WRITE_ONCE(t->abandon, true);
	}
	/* Cold reads in flight: their bios fill the arena's pages. */
	wait_var_event(&t->reading, !atomic_read(&t->reading));
	flush_workqueue(t->wq);
	/* A disk failing from here on leaves the store to its teardown. */
	mutex_lock(&t->lock);
	t->stopped = true;
	mutex_unlock(&t->lock);
}

void dfkv_tier_destroy(struct dfkv_tier *t)
{
	struct dfkv_disk *d, *tmp;
	struct dfkv_ring *ring;
	LIST_HEAD(gone);

	mutex_lock(&t->lock);
	list_splice_init(&t->disks, &gone);
	t->nr_disks = 0;
	ring = rcu_replace_pointer(t->ring, NULL, lockdep_is_held(&t->lock));
	mutex_unlock(&t->lock);
	synchronize_rcu();
	dfkv_ring_free(ring);
	/* The store dropped its entries: every disk is idle, close clean. */
	list_for_each_entry_safe(d, tmp, &gone, link) {
		list_del(&d->link);
		dfkv_disk_close(d, true);
		dfkv_disk_put(d);
	}
	destroy_workqueue(t->wq);
}

/*
 * Zero the bytes of bv[0 .. nr) after the first keep: the tail of a
 * value's last page, past its end, which a write sends to the disk with
 * the page (arena and stage pages are not zeroed when allocated, so it
 * holds whatever the page held before).  The tail is in the entry's own
 * slot and no reader looks beyond the value's end.
 */
static void tier_zero_tail(const struct bio_vec *bv, unsigned int nr,
			   size_t keep)
{
	unsigned int i;

	for (i = 0; i < nr; i++) {
		if (keep < bv[i].bv_len)
			memzero_page(bv[i].bv_page, bv[i].bv_offset + keep,
				     bv[i].bv_len - keep);
		keep -= min_t(size_t, keep, bv[i].bv_len);
	}
}

/* A cold read's or a flush's payload I/O finished: time and trace it. */
static void tier_io_done(struct dfkv_store *st, struct dfkv_entry *e, bool rd,
			 int err, u64 ns)
{
	dfkv_stats_lat(st->stats, rd ? DFKV_LAT_COLD_READ : DFKV_LAT_FLUSH, ns);
	if (rd)
		trace_dfkv_cold_read_done(e->disk->name, e->key.tenant, e->len,
					  err, ns);
	else
		trace_dfkv_flush_done(e->disk->name, e->key.tenant, e->len,
				      err, ns);
}

/*
 * Move e's value between its RAM pages (arena slots or a stage) and its
 * disk slots, in chunks that stay inside one slot on each side: all of
 * them submitted to io under one plug, in flight at once, as bios of up
 * to BIO_MAX_VECS pages (a chunk that cannot be mapped fails io).  Slot
 * starts are 64 KiB aligned and slot sizes 4 KiB multiples, so every
 * chunk is whole pages on both sides; a write zeroes the part of the last
 * page beyond the value first.
 */
static void tier_io_submit(struct dfkv_store *st, struct dfkv_entry *e,
			   enum req_op op, struct dfkv_dio *io)
{
	struct dfkv_disk *d = e->disk;
	u64 rext = st->slab.extent_bytes, dext = d->slab.extent_bytes;
	struct bio_vec one[8], *bv;
	unsigned int nbv = BIO_MAX_VECS;
	struct blk_plug plug;
	u64 off = 0;

	if (op == REQ_OP_READ)
		trace_dfkv_cold_read_submit(d->name, e->key.tenant, e->len);
	else
		trace_dfkv_flush_submit(d->name, e->key.tenant, e->len);
	bv = kmalloc_array(nbv, sizeof(*bv), GFP_NOIO | __GFP_NOWARN);
	if (!bv) {
		bv = one;	/* smaller bios, same bytes */
		nbv = ARRAY_SIZE(one);
	}
	blk_start_plug(&plug);
	while (off < e->len) {
		u32 ri = div64_u64(off, rext), di = div64_u64(off, dext);
		u64 rin = off - (u64)ri * rext, din = off - (u64)di * dext;
		u64 n = min3(e->len - off, rext - rin, dext - din);
		unsigned int nr;
		size_t mapped;

		nr = dfkv_entry_ram_map(e, off, round_up(n, PAGE_SIZE), bv,
					nbv, &mapped);
		if (!nr)
			break;
		if (op == REQ_OP_WRITE && mapped > n)
			tier_zero_tail(bv, nr, n);
		dfkv_dio_submit(io, op, dfkv_disk_slot_pos(d, e->dslots[di]) + din,
				bv, nr);
		off += min_t(u64, mapped, n);
	}
	blk_finish_plug(&plug);
	if (bv != one)
		kfree(bv);
	if (off < e->len)
		WRITE_ONCE(io->error, -EIO);
}

/* ------------------------------------------------- the entries' disk side */

static struct dfkv_tier *tier_of(struct dfkv_entry *e)
{
	return e->store->lower_ctx;
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

static void tier_release(struct dfkv_entry *e)
{
	disk_slots_free(e, e->disk, e->dslots, e->nr_dslots,
			(e->flags & DFKV_EF_RECS) && !(e->flags & DFKV_EF_KEEP));
}

/* e became DURABLE on its disk: the most recently used there. */
static void disk_lru_add_locked(struct dfkv_entry *e)
{
	struct dfkv_disk *d = e->disk;

	spin_lock(&d->lru_lock);
	e->dqueued = READ_ONCE(e->stamp);
	list_add_tail(&e->dlru, &d->lru);
	atomic64_inc(&d->objects);
	atomic64_add(e->len, &d->used_bytes);
	spin_unlock(&d->lru_lock);
}

static void tier_unlist_locked(struct dfkv_entry *e)
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

static void tier_touch_locked(struct dfkv_entry *e)
{
	struct dfkv_disk *d = e->disk;

	spin_lock(&d->lru_lock);
	e->dqueued = e->stamp;
	if (!list_empty(&e->dlru))
		list_move_tail(&e->dlru, &d->lru);
	spin_unlock(&d->lru_lock);
}

static bool tier_readable_locked(struct dfkv_entry *e)
{
	return dfkv_disk_up(e->disk);
}

/*
 * The least recently used evictable entry of a disk, with a reference, or
 * NULL; entries used since they were queued get a second chance.
 */
static struct dfkv_entry *disk_evict_pick(void *ctx)
{
	struct dfkv_disk *d = ctx;
	unsigned int scanned = 0;
	struct dfkv_entry *e;

	spin_lock(&d->lru_lock);
	while (scanned++ < 256) {
		e = list_first_entry_or_null(&d->lru, struct dfkv_entry, dlru);
		if (!e)
			break;
		if (READ_ONCE(e->stamp) > e->dqueued || READ_ONCE(e->pins) ||
		    READ_ONCE(e->where) == DFKV_W_LOADING) {
			e->dqueued = max(READ_ONCE(e->stamp), ktime_get_ns());
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

/* Kill e (referenced by the caller) to free its disk slots. */
static bool disk_evict(void *ctx, struct dfkv_entry *e)
{
	struct dfkv_store *st = e->store;
	bool killed = false;

	spin_lock(&e->lock);
	if (e->state == DFKV_E_DURABLE && !e->pins &&
	    e->where != DFKV_W_LOADING)
		killed = dfkv_entry_kill_locked(st, e);
	spin_unlock(&e->lock);
	if (killed) {
		/* DURABLE: e->disk is set for good; the caller's ref keeps it */
		atomic64_inc(&e->disk->evictions);
		dfkv_entry_unlink(st, e);
		this_cpu_inc(st->stats->pcpu->evictions);
		trace_dfkv_evict(e->key.tenant, e->len, false);
	}
	return killed;
}

static const struct dfkv_evict_ops disk_evict_ops = {
	.pick = disk_evict_pick,
	.evict = disk_evict,
	.put = dfkv_entry_put,
};

/* An array of n disk part slots followed by their payload CRCs. */
static struct dfkv_slot *disk_parts_array(u32 n)
{
	return kvcalloc(n, sizeof(struct dfkv_slot) + sizeof(u32),
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

/* ---------------------------------------------------------------- flush */

/*
 * The flush of e ended; a PUT waiting for it (DFKV_EF_SYNC) gets OK once
 * durable.  When the flush was given up, IO_ERROR (or CACHE_FULL: no room
 * on the disk) and the value is removed, so a PUT that failed leaves
 * nothing readable, even one whose caller went away meanwhile.
 * Write-around then lets a durable value leave RAM; a staged value leaves
 * its stage.
 */
static void flush_done(struct dfkv_tier *t, struct dfkv_entry *e)
{
	struct dfkv_store *st = t->st;
	bool sync, durable, nospc, staged, unlink = false;

	if (atomic_dec_and_test(&t->flushing))
		wake_up_var(&t->flushing);	/* dfkv_tier_stop() */
	spin_lock(&e->lock);
	sync = e->flags & DFKV_EF_SYNC;
	durable = e->state == DFKV_E_DURABLE || e->state == DFKV_E_DEAD;
	nospc = e->flags & DFKV_EF_NOSPC;
	staged = e->stage;
	/* The flush was given up: the PUT fails, so its value goes too. */
	if (sync && !durable)
		unlink = dfkv_entry_kill_locked(st, e);
	spin_unlock(&e->lock);
	if (unlink)
		dfkv_entry_unlink(st, e);
	if (sync && !durable) {
		dfkv_entry_flushed(st, e, nospc ? DFKV_STATUS_CACHE_FULL :
				   DFKV_STATUS_IO_ERROR);
	} else if (sync) {
		if (staged) {
			/* durable: frees the stage unless a reader holds it */
			dfkv_entry_evict_ram(st, e);
		} else if (READ_ONCE(t->policy) == DFKV_TIER_WRITEAROUND &&
			   dfkv_entry_evict_ram(st, e)) {
			this_cpu_inc(st->stats->pcpu->ram_bypasses);
		}
		dfkv_entry_flushed(st, e, DFKV_STATUS_OK);
	}
	dfkv_entry_put(e);	/* the flush's reference */
}

/* Give up flushing e: it stays in RAM only, evictable like without disk. */
static void flush_drop(struct dfkv_store *st, struct dfkv_entry *e, int err)
{
	spin_lock(&e->lock);
	dfkv_entry_flush_failed_locked(st, e, err == -ENOSPC);
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
	struct dfkv_evictor ev = {
		.slab = &d->slab, .ops = &disk_evict_ops, .ctx = d,
	};
	u64 ext = d->slab.extent_bytes, start;
	struct dfkv_od_rec *recs;
	struct dfkv_slot *slots;
	struct dfkv_dio io;
	u32 nr, i, *crcs;
	int err;

	err = dfkv_evict_alloc_parts(&ev, e, &slots, &nr, &e->dslot0,
				     sizeof(u32));
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

	/* The payload CRCs are computed while its bios are in flight. */
	start = ktime_get_ns();
	dfkv_dio_init(&io, d, NULL);
	tier_io_submit(st, e, REQ_OP_WRITE, &io);
	for (i = 0; i < nr; i++)
		crcs[i] = entry_ram_crc(e, (u64)i * ext,
					dfkv_od_part_len(e->len, i, ext));
	err = dfkv_dio_wait(&io);
	tier_io_done(st, e, false, err, ktime_get_ns() - start);
	if (err)
		return -EAGAIN;
	recs = kcalloc(nr, sizeof(*recs), GFP_KERNEL);
	if (!recs)
		return -EAGAIN;
	for (i = 0; i < nr; i++) {
		recs[i].payload_crc = crcs[i];
		recs[i].key = e->key;
		recs[i].length = e->len;
		recs[i].extent = slots[i].extent;
		recs[i].slot = slots[i].index;
		recs[i].part = i;
		recs[i].cls = dfkv_slot_class(&d->slab, slots[i]);
	}
	spin_lock(&e->lock);
	e->flags |= DFKV_EF_RECS;	/* from here on, release clears them */
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
	recs = e->flags & DFKV_EF_RECS;
	e->disk = NULL;
	e->dslots = &e->dslot0;
	e->dcrcs = &e->dcrc0;
	e->nr_dslots = 0;
	e->flags &= ~DFKV_EF_RECS;
	spin_unlock(&e->lock);
	if (d)
		disk_slots_free(e, d, slots, nr, recs && dfkv_disk_up(d));
}

static void tier_flush_work(struct work_struct *work)
{
	struct dfkv_entry *e = container_of(work, struct dfkv_entry,
					    flush_work);
	struct dfkv_store *st = e->store;
	struct dfkv_tier *t = tier_of(e);
	struct dfkv_disk *d;
	int err;

	atomic_dec(&t->backlog);
	for (;;) {
		if (READ_ONCE(e->state) == DFKV_E_DEAD)
			break;
		d = READ_ONCE(t->abandon) ? NULL : tier_route(t, e->key.id);
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
			 * lock tier_fail_disk() takes: either it sees e
			 * DURABLE, or e sees the disk failed and its flush is
			 * given up, as when the record write itself fails.
			 */
			spin_lock(&e->lock);
			durable = dfkv_disk_up(d);
			if (durable && dfkv_entry_durable_locked(st, e))
				disk_lru_add_locked(e);
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
	flush_done(t, e);
}

/*
 * A new write-back value would take the dirty bytes over the watermark (a
 * watermark of 0 makes every PUT wait for its flush instead).
 */
static bool tier_over_watermark(void *ctx, u64 len)
{
	struct dfkv_tier *t = ctx;
	u32 pct = READ_ONCE(t->dirty_pct);

	if (!tier_on(t) || !pct ||
	    READ_ONCE(t->policy) != DFKV_TIER_WRITEBACK)
		return false;
	return atomic64_read(&t->st->dirty_bytes) + len >
		div_u64(t->st->capacity * pct, 100);
}

/* The PUT's caller waits for the disk commit before its OK. */
static bool tier_put_waits(struct dfkv_tier *t)
{
	return READ_ONCE(t->policy) == DFKV_TIER_WRITEAROUND ||
		READ_ONCE(t->ack) == DFKV_ACK_DISK || !READ_ONCE(t->dirty_pct);
}

/*
 * Queue a DIRTY entry's flush; the PUT waits for it (-EINPROGRESS, the
 * flush's end gives its status: flush_done()) with ack=disk, write-around,
 * watermark 0 or a staged value.
 */
static int tier_commit(void *ctx, struct dfkv_entry *e, bool staged)
{
	struct dfkv_tier *t = ctx;
	bool sync = staged || tier_put_waits(t);

	INIT_WORK(&e->flush_work, tier_flush_work);
	atomic_inc(&t->flushing);
	atomic_inc(&t->backlog);
	if (sync) {
		spin_lock(&e->lock);
		e->flags |= DFKV_EF_SYNC;
		spin_unlock(&e->lock);
	}
	queue_work(t->wq, &e->flush_work);
	return sync ? -EINPROGRESS : DFKV_STATUS_OK;
}

/* A cold read in flight: its payload bios, then its check and outcome. */
struct tier_read {
	struct dfkv_dio io;
	struct work_struct work;
	struct dfkv_tier *t;
	struct dfkv_entry *e;
	struct dfkv_slot *slots;	/* the RAM slots read into */
	u32 nr;
	bool staged;			/* or a stage */
	bool leased;
	u64 start;
};

/*
 * RAM for a cold read of e: new RAM slots, or a stage when every slot is
 * pinned or dirty or the node is disk-only (freed with the last reader).
 */
static int tier_read_ram(struct dfkv_store *st, struct dfkv_entry *e,
			 struct tier_read *rd)
{
	int err;

	if (st->disk_only) {
		err = dfkv_entry_stage(st, e);
		rd->staged = !err;
		return err;
	}
	err = dfkv_evict_alloc_parts(&st->ram, e, &rd->slots, &rd->nr,
				     &e->slot0, 0);
	if (err == -ENOSPC) {
		for (; rd->nr; rd->nr--)
			dfkv_slab_free(&st->slab, rd->slots[rd->nr - 1]);
		if (rd->slots != &e->slot0)
			kvfree(rd->slots);
		rd->slots = NULL;
		err = dfkv_entry_stage(st, e);
		rd->staged = !err;
	} else if (!err) {
		/* Nobody reads e->slots while LOADING: publish them early. */
		spin_lock(&e->lock);
		e->slots = rd->slots;
		e->nr_slots = rd->nr;
		spin_unlock(&e->lock);
	}
	return err;
}

/* Publish a cold read's outcome; the read's pin, reference and count go. */
static void tier_read_end(struct tier_read *rd, int err)
{
	struct dfkv_tier *t = rd->t;
	struct dfkv_store *st = t->st;
	struct dfkv_entry *e = rd->e;

	dfkv_entry_loaded(st, e, err, rd->slots, rd->nr, rd->staged,
			  rd->leased);
	if (!err && !rd->staged)
		this_cpu_inc(st->stats->pcpu->promoted);
	dfkv_store_unpin(e);
	kfree(rd);
	if (atomic_dec_and_test(&t->reading))
		wake_up_var(&t->reading);
}

/* Its bios completed: the payload is checked against its records. */
static void tier_read_work(struct work_struct *work)
{
	struct tier_read *rd = container_of(work, struct tier_read, work);
	struct dfkv_entry *e = rd->e;
	int err = dfkv_dio_error(&rd->io);

	tier_io_done(rd->t->st, e, true, err, ktime_get_ns() - rd->start);
	if (!err && !entry_parts_intact(e)) {
		pr_warn_ratelimited("dfkv: disk %s: a payload does not match its record's CRC: block dropped\n",
				    e->disk->name);
		err = -EBADMSG;
	}
	tier_read_end(rd, err);
}

/*
 * The last bio of a cold read completed, in the block layer's context:
 * the CRCs and the outcome are the flush workers' (so a disk delete and
 * the node's stop, which wait for t->reading, then flush_workqueue(),
 * wait for them too).
 */
static void tier_read_bios_done(struct dfkv_dio *io)
{
	struct tier_read *rd = container_of(io, struct tier_read, io);

	queue_work(rd->t->wq, &rd->work);
}

/*
 * Start reading a pinned, durable entry that is not in RAM back into RAM:
 * RAM for it, then bios from the disk straight into it; nothing waits
 * here.  The store set LOADING; GETs of the key park until
 * dfkv_entry_loaded() (read coalescing).
 */
static void tier_load(void *ctx, struct dfkv_entry *e, bool leased)
{
	struct dfkv_tier *t = ctx;
	struct dfkv_store *st = t->st;
	struct mem_cgroup *old = dfkv_store_charge(st);
	struct tier_read *rd = kzalloc(sizeof(*rd), GFP_KERNEL_ACCOUNT);
	int err = -ENOMEM;

	if (rd)
		err = tier_read_ram(st, e, rd);
	set_active_memcg(old);
	if (!rd) {
		dfkv_entry_loaded(st, e, err, NULL, 0, false, leased);
		dfkv_store_unpin(e);
		return;
	}
	rd->t = t;
	rd->e = e;
	rd->leased = leased;
	INIT_WORK(&rd->work, tier_read_work);
	atomic_inc(&t->reading);
	if (err) {
		tier_read_end(rd, err);
		return;
	}
	rd->start = ktime_get_ns();
	dfkv_dio_init(&rd->io, e->disk, tier_read_bios_done);
	tier_io_submit(st, e, REQ_OP_READ, &rd->io);
	dfkv_dio_finish(&rd->io);
}

/* -------------------------------------------------------------- rebuild */

/* Rebuild: entries assembled from one disk's records, then published. */
struct rebuild {
	struct dfkv_store *st;
	struct dfkv_disk *d;
	struct rhashtable parts;	/* key -> entry being assembled */
	u64 restored, dropped;
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
	e = rhashtable_lookup_fast(&rb->parts, &rec->key,
				   dfkv_store_index_params);
	if (e && e->state == DFKV_E_DEAD)
		return DFKV_OD_SCAN_REFUSE;
	if (!e) {
		e = dfkv_entry_new(rb->st, &rec->key, rec->length);
		if (!e)
			return -ENOMEM;
		e->stamp = rec->gen;	/* older epochs are colder */
		if (nparts > 1) {
			e->dslots = disk_parts_array(nparts);
			if (!e->dslots) {
				e->dslots = &e->dslot0;
				dfkv_entry_put(e);
				return -ENOMEM;
			}
		}
		e->dcrcs = entry_dcrcs(e, e->dslots, nparts);
		for (i = 0; i < nparts; i++)
			e->dslots[i].extent = U32_MAX;
		e->nr_dslots = nparts;
		e->disk = d;
		e->flags = DFKV_EF_RECS;
		dfkv_disk_get(d);
		atomic_inc(&d->users);
		if (rhashtable_insert_fast(&rb->parts, &e->hnode,
					   dfkv_store_index_params)) {
			dfkv_entry_put(e);
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
	struct dfkv_entry *e = ptr;
	struct rebuild *rb = arg;
	struct dfkv_store *st = rb->st;
	u32 i;

	for (i = 0; i < e->nr_dslots; i++)
		if (e->dslots[i].extent == U32_MAX)
			e->state = DFKV_E_DEAD;
	e->tenant = e->state == DFKV_E_DEAD ? NULL :
		dfkv_tenant_get(st->tenants, e->key.tenant);
	/* A key PUT since the disk came up wins over the disk's copy. */
	if (!e->tenant || dfkv_store_insert(st, e)) {
		rb->dropped++;
		dfkv_entry_put(e);
		return;
	}
	spin_lock(&e->lock);
	dfkv_entry_publish_durable_locked(st, e);
	disk_lru_add_locked(e);
	spin_unlock(&e->lock);
	rb->restored++;
	dfkv_entry_put(e);	/* the rebuild's */
}

/*
 * The rebuild's state is allocated, not on the stack: an rhashtable holds
 * a work item (its deferred resize), which debugobjects tracks.
 */
static int tier_rebuild(struct dfkv_tier *t, struct dfkv_disk *d)
{
	struct rebuild *rb;
	int err;

	rb = kzalloc(sizeof(*rb), GFP_KERNEL);
	if (!rb)
		return -ENOMEM;
	rb->st = t->st;
	rb->d = d;
	err = rhashtable_init(&rb->parts, &dfkv_store_index_params);
	if (err)
		goto out;
	err = dfkv_disk_rebuild(d, rebuild_found, rb);
	/* Publish or drop every assembled entry, even after an error. */
	rhashtable_free_and_destroy(&rb->parts, rebuild_publish, rb);
	if (!err)
		pr_info("dfkv: disk %s: %llu blocks restored, %llu dropped\n",
			d->name, rb->restored, rb->dropped);
out:
	kfree(rb);
	return err;
}

/* ------------------------------------------------ a disk going away */

/* Kill an entry of a disk going away gracefully (its records kept). */
static bool drop_disk_entry(struct dfkv_store *st, struct dfkv_entry *e,
			    void *arg, bool *unlink)
{
	if (READ_ONCE(e->disk) != arg)
		return false;
	spin_lock(&e->lock);
	if (e->disk == arg) {
		e->flags |= DFKV_EF_KEEP;
		*unlink = dfkv_entry_kill_locked(st, e);
	}
	spin_unlock(&e->lock);
	return *unlink;
}

/*
 * A disk goes away gracefully: every entry on it is killed (its records
 * kept for a later attach) and the call returns once none holds its
 * slots.  The caller unrouted the disk and drained its flushes first.
 */
static void tier_drop_disk(struct dfkv_tier *t, struct dfkv_disk *d)
{
	while (dfkv_store_walk(t->st, drop_disk_entry, d))
		cond_resched();
	wait_var_event(&d->users, !atomic_read(&d->users));
}

/*
 * A failed disk's copy of an entry is gone: one in RAM stays, one that is
 * not is killed.  A cold read of the disk still running is waited for
 * first (no new one starts: the disk is not up), so its outcome decides.
 */
static bool fail_disk_entry(struct dfkv_store *st, struct dfkv_entry *e,
			    void *arg, bool *unlink)
{
	bool changed = false;

	if (READ_ONCE(e->disk) != arg ||
	    READ_ONCE(e->state) != DFKV_E_DURABLE)
		return false;
	wait_var_event(e, READ_ONCE(e->where) != DFKV_W_LOADING);
	spin_lock(&e->lock);
	if (e->where == DFKV_W_LOADING) {
		changed = true;	/* not decided yet: the next pass */
	} else if (e->disk == arg && e->state == DFKV_E_DURABLE) {
		tier_unlist_locked(e);
		*unlink = dfkv_entry_disk_lost_locked(st, e);
		changed = true;
	}
	spin_unlock(&e->lock);
	return changed;
}

static void tier_fail_disk(struct dfkv_tier *t, struct dfkv_disk *d)
{
	while (dfkv_store_walk(t->st, fail_disk_entry, d))
		cond_resched();
}

static const struct dfkv_store_lower_ops tier_lower_ops = {
	.over_watermark = tier_over_watermark,
	.commit = tier_commit,
	.load = tier_load,
	.readable_locked = tier_readable_locked,
	.touch_locked = tier_touch_locked,
	.unlist_locked = tier_unlist_locked,
	.release = tier_release,
};
