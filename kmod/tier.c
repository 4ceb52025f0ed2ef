// SPDX-License-Identifier: GPL-2.0
/*
 * The disks below a node's store (tier.h): attach with rebuild, detach
 * with a graceful flush, the ring that routes blocks to disks, the write
 * policy and the dirty-byte watermark; and the entries' disk side, which
 * the store hands down through its lower ops: cold reads of DURABLE
 * entries into RAM (started without waiting, the bios' completion
 * publishing the outcome; GETs arriving meanwhile park for the one read),
 * each disk's recency list, and the entries of a disk that is attached
 * (rebuild), deleted or failed.  Flushing DIRTY entries to DURABLE is the
 * flush engine's (flush.c), which this file calls and which calls nothing
 * here; its workqueue also runs the cold reads' checks.  Entry states
 * change only through the store's _locked primitives.
 *
 * Write-back: a DIRTY entry's flush allocates disk slots, writes the
 * payload with bios straight from the RAM pages, then the records, and
 * only then makes it DURABLE.  The records of a killed entry are cleared
 * by the release of its last reference, before its disk slots are freed;
 * a graceful stop marks the entries KEEP first so their records survive.
 *
 * Disk add and the list and ring changes of a delete serialize on the
 * tier's mutex; the data path reads the ring under RCU only, and so do
 * DISK_GET (the list) and NODE_GET (the counts tier_recount() keeps), so
 * that neither waits for an attach, which holds the mutex while it
 * rebuilds the index.  A delete's waits on the device (flushes, drained
 * slots, the clean close) run on the node's control workqueue, outside
 * the mutex, and its caller waits killably: a device that stopped
 * answering holds only its own disk.
 * A disk in the list holds one reference, the ring one per member, each
 * entry with slots on the disk one more (and counts in d->users, which a
 * delete waits to fall to zero); a deletion takes over the list's and
 * drops it once the disk closed and left the list.
 */
#include <linux/rhashtable.h>
#include <linux/slab.h>
#include <linux/mm.h>
#include <linux/wait_bit.h>
#include <linux/delay.h>
#include <linux/timekeeping.h>
#include <net/netlink.h>

#include "store.h"
#include "tier.h"
#include "flush.h"
#include "disk.h"
#include "ring.h"
#include "trace.h"

static const struct dfkv_store_lower_ops tier_lower_ops;

/* Disks joining or leaving any node's list: dfkv_tier_gen(). */
static atomic_t tier_gen = ATOMIC_INIT(0);

u32 dfkv_tier_gen(void)
{
	return atomic_read(&tier_gen);
}

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
	atomic_set(&t->reading, 0);
	atomic_set(&t->leaving, 0);
	if (dfkv_flush_init(t, name))
		return -ENOMEM;
	dfkv_store_set_lower(st, &tier_lower_ops, t);
	return 0;
}

static bool tier_on(struct dfkv_tier *t)
{
	return rcu_access_pointer(t->ring);
}

int dfkv_tier_set_workers(struct dfkv_tier *t, u32 workers)
{
	if (workers > DFKV_TIER_WORKERS_MAX)
		return -EINVAL;
	mutex_lock(&t->lock);
	t->workers = workers;
	dfkv_flush_apply_workers(t);
	mutex_unlock(&t->lock);
	return 0;
}

/*
 * The list changed or one of its disks failed: count them again for the
 * readers that do not take the mutex (NODE_GET, whose every dump would
 * otherwise wait for an attach's whole rebuild).
 */
static void tier_recount(struct dfkv_tier *t)
{
	struct dfkv_disk *d;
	u32 n = 0, failed = 0;

	lockdep_assert_held(&t->lock);
	list_for_each_entry(d, &t->disks, link) {
		n++;
		failed += !dfkv_disk_up(d);
	}
	WRITE_ONCE(t->nr_disks, n);
	WRITE_ONCE(t->nr_failed, failed);
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
	dfkv_flush_apply_workers(t);
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
	tier_recount(t);
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
	list_add_tail_rcu(&d->link, &t->disks);
	tier_recount(t);
	err = tier_publish_ring(t);
	if (err) {
		list_del_rcu(&d->link);
		tier_recount(t);
		goto err_drop;
	}
	atomic_inc(&tier_gen);
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
	list_del_rcu(&d->link);
	tier_recount(t);
	atomic_inc(&tier_gen);
	dfkv_flush_apply_workers(t);
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

	/*
	 * Not the mutex: DISK_GET does not wait for an attach's rebuild.
	 * A stopped tier's list is about to be taken apart (tier_destroy).
	 */
	rcu_read_lock();
	if (READ_ONCE(t->stopped))
		goto out;
	list_for_each_entry_rcu(d, &t->disks, link) {
		if (name ? !strcmp(d->name, name) : i++ == pos) {
			if (dfkv_disk_tryget(d))
				found = d;
			break;
		}
	}
out:
	rcu_read_unlock();
	return found;
}

void dfkv_tier_stop(struct dfkv_tier *t)
{
	/* Deletions first: they flush the blocks of their disks. */
	wait_var_event(&t->leaving, !atomic_read(&t->leaving));
	dfkv_flush_stop(t);
	/* Cold reads in flight: their bios fill the arena's pages. */
	wait_var_event(&t->reading, !atomic_read(&t->reading));
	flush_workqueue(t->wq);
	/* A disk failing from here on leaves the store to its teardown. */
	mutex_lock(&t->lock);
	WRITE_ONCE(t->stopped, true);
	mutex_unlock(&t->lock);
}

void dfkv_tier_destroy(struct dfkv_tier *t)
{
	struct dfkv_disk *d, *tmp;
	struct dfkv_ring *ring;
	LIST_HEAD(gone);

	mutex_lock(&t->lock);
	WRITE_ONCE(t->stopped, true);	/* a failed creation never stopped */
	ring = rcu_replace_pointer(t->ring, NULL, lockdep_is_held(&t->lock));
	mutex_unlock(&t->lock);
	/* No reader walks the list past this: splicing it moves its links. */
	synchronize_rcu();
	mutex_lock(&t->lock);
	list_splice_init(&t->disks, &gone);
	tier_recount(t);
	mutex_unlock(&t->lock);
	dfkv_ring_free(ring);
	/* The store dropped its entries: every disk is idle, close clean. */
	list_for_each_entry_safe(d, tmp, &gone, link) {
		list_del(&d->link);
		dfkv_disk_close(d, true);
		dfkv_disk_put(d);
	}
	dfkv_flush_destroy(t);
}

/* ------------------------------------------------- the entries' disk side */

static void tier_release(struct dfkv_entry *e)
{
	dfkv_flush_slots_free(e, e->disk, e->dslots, e->nr_dslots,
			      (e->flags & DFKV_EF_RECS) && !(e->flags & DFKV_EF_KEEP));
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

/* An array of n disk part slots followed by their payload CRCs. */
static struct dfkv_slot *disk_parts_array(u32 n)
{
	return kvcalloc(n, sizeof(struct dfkv_slot) + sizeof(u32),
			GFP_KERNEL_ACCOUNT);
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

/* ----------------------------------------------------------- cold reads */

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
	u64 now = ktime_get_ns();

	dfkv_flush_io_done(rd->t->st, e, true, err, now - rd->start);
	if (err)
		goto out;
	if (!dfkv_flush_parts_intact(e)) {
		pr_warn_ratelimited("dfkv: disk %s: a payload does not match its record's CRC: block dropped\n",
				    e->disk->name);
		err = -EBADMSG;
	}
	trace_dfkv_cold_read_crc(&e->key, e->len, ktime_get_ns() - now, err);
out:
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

	trace_dfkv_cold_read_bios(&rd->e->key, rd->e->len, dfkv_dio_error(io));
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
	struct tier_read *rd;
	int err = -ENOMEM;

	trace_dfkv_load_start(&e->key, e->len, leased);
	rd = kzalloc(sizeof(*rd), GFP_KERNEL_ACCOUNT);
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
	dfkv_flush_io_submit(st, e, REQ_OP_READ, &rd->io);
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
		e->dcrcs = dfkv_flush_dcrcs(e, e->dslots, nparts);
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
	dfkv_flush_lru_add_locked(e);
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
	.commit = dfkv_flush_commit,
	.load = tier_load,
	.readable_locked = tier_readable_locked,
	.touch_locked = tier_touch_locked,
	.unlist_locked = tier_unlist_locked,
	.release = tier_release,
};
