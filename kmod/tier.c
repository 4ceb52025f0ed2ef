// SPDX-License-Identifier: GPL-2.0
/*
 * The disks behind a node's RAM arena (tier.h): attach with rebuild, detach
 * with a graceful flush, the ring that routes blocks to disks, the flush
 * workqueue and the byte mover between RAM slots and disk slots (which
 * times and traces each cold read and flush).
 *
 * Disk add and delete serialize on the tier's mutex; the data path reads
 * the ring under RCU only.  A disk in the list holds one reference, the
 * ring one per member, each entry with slots on the disk one more (and
 * counts in d->users, which a delete waits to fall to zero).
 */
#include <linux/slab.h>
#include <linux/mm.h>
#include <linux/bvec.h>
#include <linux/highmem.h>
#include <linux/wait_bit.h>
#include <net/netlink.h>

#include "store.h"
#include "tier.h"
#include "disk.h"
#include "ring.h"
#include "trace.h"

int dfkv_tier_init(struct dfkv_tier *t, const char *name,
		   const struct dfkv_tier_ops *ops, void *ctx)
{
	mutex_init(&t->lock);
	INIT_LIST_HEAD(&t->disks);
	RCU_INIT_POINTER(t->ring, NULL);
	t->ops = ops;
	t->ops_ctx = ctx;
	t->policy = DFKV_TIER_WRITEBACK;
	t->ack = DFKV_ACK_RAM;
	t->dirty_pct = DFKV_TIER_DIRTY_PCT_DEFAULT;
	atomic64_set(&t->dirty_bytes, 0);
	atomic_set(&t->backlog, 0);
	atomic_set(&t->flushing, 0);
	t->wq = alloc_workqueue("dfkv_flush/%s", WQ_UNBOUND | WQ_MEM_RECLAIM,
				DFKV_TIER_WORKERS_PER_DISK, name);
	return t->wq ? 0 : -ENOMEM;
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
 * Rebuild the ring over the listed disks that are up and publish it.  When
 * every listed disk failed, the ring keeps naming them all: flushes then
 * fail (the blocks stay in RAM, ack=disk PUTs get IO_ERROR) rather than a
 * node with disks quietly acting as RAM-only.
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
			if (dfkv_disk_up(d))
				disks[n++] = d;
		if (!n)
			list_for_each_entry(d, &t->disks, link)
				disks[n++] = d;
		ring = dfkv_ring_build(disks, n);
		kfree(disks);
		if (IS_ERR(ring))
			return PTR_ERR(ring);
	}
	old = rcu_replace_pointer(t->ring, ring, lockdep_is_held(&t->lock));
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
static void tier_disk_failed(struct dfkv_disk *d, void *ctx)
{
	struct dfkv_tier *t = ctx;

	mutex_lock(&t->lock);
	if (tier_publish_ring(t))
		pr_warn("dfkv: disk %s failed; the ring still names it (no memory)\n",
			d->name);
	if (!t->stopped)
		dfkv_store_fail_disk(container_of(t, struct dfkv_store, tier),
				     d);
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

int dfkv_tier_disk_add(struct dfkv_store *st, const char *path,
		       const char *name, bool format, u64 extent_bytes,
		       struct netlink_ext_ack *extack)
{
	struct dfkv_tier *t = &st->tier;
	struct dfkv_disk *d;
	int err;

	err = dfkv_disk_open(path, name, format, extent_bytes,
			     tier_disk_failed, t, extack, &d);
	if (err)
		return err;
	mutex_lock(&t->lock);
	if (tier_find(t, d->name)) {
		NL_SET_ERR_MSG(extack, "this node has a disk of that name");
		err = -EEXIST;
		goto err_close;
	}
	err = dfkv_store_rebuild(st, d);
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
	dfkv_store_drop_disk(st, d);
err_close:
	mutex_unlock(&t->lock);
	dfkv_disk_close(d, !err || err == -EEXIST);
	dfkv_disk_put(d);
	return err;
}

int dfkv_tier_disk_del(struct dfkv_store *st, const char *name,
		       struct netlink_ext_ack *extack)
{
	struct dfkv_tier *t = &st->tier;
	struct dfkv_disk *d;
	int err;

	/*
	 * The blocks dirty now are flushed while the disk still takes its
	 * share of them (queued flushes route when they run); what is
	 * written during the deletion goes to the other disks, or stays in
	 * RAM only when this was the last one.
	 */
	flush_workqueue(t->wq);
	mutex_lock(&t->lock);
	d = tier_find(t, name);
	if (!d) {
		mutex_unlock(&t->lock);
		NL_SET_ERR_MSG(extack, "no disk of that name on this node");
		return -ENOENT;
	}
	list_del(&d->link);
	t->nr_disks--;
	err = tier_publish_ring(t);
	if (err) {
		list_add_tail(&d->link, &t->disks);
		t->nr_disks++;
		mutex_unlock(&t->lock);
		return err;
	}
	/* No flush can route to d now: let the ones that did finish. */
	flush_workqueue(t->wq);
	dfkv_store_drop_disk(st, d);
	mutex_unlock(&t->lock);
	dfkv_disk_close(d, true);
	trace_dfkv_disk_state(d->name, READ_ONCE(d->state), DFKV_EVENT_DISK_DEL);
	t->ops->disk_event(t->ops_ctx, d, DFKV_EVENT_DISK_DEL);
	dfkv_disk_put(d);
	return 0;
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

struct dfkv_disk *dfkv_tier_route(struct dfkv_tier *t, const u8 *object_id)
{
	struct dfkv_disk *d;

	rcu_read_lock();
	d = dfkv_ring_lookup(rcu_dereference(t->ring), object_id);
	if (d)
		dfkv_disk_get(d);
	rcu_read_unlock();
	return d;
}

void dfkv_tier_queue_flush(struct dfkv_tier *t, struct dfkv_entry *e)
{
	atomic_inc(&t->flushing);
	atomic_inc(&t->backlog);
	queue_work(t->wq, &e->flush_work);
}

void dfkv_tier_stop(struct dfkv_store *st)
{
	struct dfkv_tier *t = &st->tier;
	long left;

	left = wait_event_timeout(st->waitq, !atomic_read(&t->flushing),
				  msecs_to_jiffies(DFKV_TIER_STOP_TIMEOUT_MS));
	if (!left) {
		pr_warn("dfkv: flushing dirty blocks timed out after %u ms, %d left: they are dropped\n",
			DFKV_TIER_STOP_TIMEOUT_MS, atomic_read(&t->flushing));
		WRITE_ONCE(t->abandon, true);
	}
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
 * disk slots, in chunks that stay inside one slot on each side: all of them in flight at once, then
 * one wait.  Slot starts are 64 KiB aligned and slot sizes 4 KiB
 * multiples, so every chunk is whole pages on both sides; a write zeroes
 * the part of the last page beyond the value first.
 */
int dfkv_tier_io(struct dfkv_store *st, struct dfkv_entry *e,
		 enum req_op op)
{
	struct dfkv_disk *d = e->disk;
	u64 rext = st->slab.extent_bytes, dext = d->slab.extent_bytes;
	bool rd = op == REQ_OP_READ;
	struct bio_vec bv[32];
	struct dfkv_dio io;
	u64 off = 0, start = ktime_get_ns();
	int err;

	if (rd)
		trace_dfkv_cold_read_submit(d->name, e->key.tenant, e->len);
	else
		trace_dfkv_flush_submit(d->name, e->key.tenant, e->len);
	dfkv_dio_init(&io, d);
	while (off < e->len) {
		u32 ri = div64_u64(off, rext), di = div64_u64(off, dext);
		u64 rin = off - (u64)ri * rext, din = off - (u64)di * dext;
		u64 n = min3(e->len - off, rext - rin, dext - din);
		unsigned int nr;
		size_t mapped;

		nr = dfkv_entry_ram_map(e, off, round_up(n, PAGE_SIZE), bv,
					ARRAY_SIZE(bv), &mapped);
		if (!nr)
			break;
		if (op == REQ_OP_WRITE && mapped > n)
			tier_zero_tail(bv, nr, n);
		dfkv_dio_submit(&io, op, dfkv_disk_slot_pos(d, e->dslots[di]) + din,
				bv, nr);
		off += min_t(u64, mapped, n);
	}
	if (off < e->len)
		WRITE_ONCE(io.error, -EIO);
	err = dfkv_dio_wait(&io);
	tier_io_done(st, e, rd, err, ktime_get_ns() - start);
	return err;
}
