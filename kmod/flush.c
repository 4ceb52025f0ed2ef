// SPDX-License-Identifier: GPL-2.0
/*
 * The write-back flush engine below a node's tier (flush.h): the flush
 * workers (the tier's workqueue and how many run), queueing a DIRTY
 * entry's flush when the store commits it, the flush itself (disk slots,
 * evicting the disk's least recently used entries for room, payload bios
 * straight from the RAM pages, the records), its retries and its end:
 * DURABLE, or given up (the entry stays in RAM only), and the status of
 * the PUT that waits for it.  And the bytes both directions share, which
 * the tier's cold reads, rebuild and release use too: moving an entry's
 * value between its RAM pages and its disk slots, the payload CRCs, and
 * an entry's disk slots and place in its disk's recency list.
 *
 * The tier (tier.c) calls in; nothing here calls the tier: the disks a
 * flush goes to come from the tier's ring, read under RCU.  Entry states
 * change only through the store's _locked primitives.
 */
#include <linux/slab.h>
#include <linux/mm.h>
#include <linux/bvec.h>
#include <linux/highmem.h>
#include <linux/wait_bit.h>
#include <linux/delay.h>
#include <linux/timekeeping.h>

#include "store.h"
#include "tier.h"
#include "flush.h"
#include "disk.h"
#include "ring.h"
#include "trace.h"

int dfkv_flush_init(struct dfkv_tier *t, const char *name)
{
	atomic_set(&t->backlog, 0);
	atomic_set(&t->flushing, 0);
	t->wq = alloc_workqueue("dfkv_flush/%s", WQ_UNBOUND | WQ_MEM_RECLAIM,
				DFKV_TIER_WORKERS_PER_DISK, name);
	return t->wq ? 0 : -ENOMEM;
}

/* Flush workers: as set, or 4 per disk; at most 16. */
void dfkv_flush_apply_workers(struct dfkv_tier *t)
{
	u32 n = t->workers ?: DFKV_TIER_WORKERS_PER_DISK * max(t->nr_disks, 1U);

	workqueue_set_max_active(t->wq, min_t(u32, n, DFKV_TIER_WORKERS_MAX));
}

void dfkv_flush_stop(struct dfkv_tier *t)
{
	long left;

	left = wait_var_event_timeout(&t->flushing, !atomic_read(&t->flushing),
				      msecs_to_jiffies(DFKV_TIER_STOP_TIMEOUT_MS));
	if (!left) {
		pr_warn("dfkv: flushing dirty blocks timed out after %u ms, %d left: they are dropped\n",
			DFKV_TIER_STOP_TIMEOUT_MS, atomic_read(&t->flushing));
		WRITE_ONCE(t->abandon, true);
	}
}

void dfkv_flush_destroy(struct dfkv_tier *t)
{
	destroy_workqueue(t->wq);
}

/* ------------------------------------------ moving an entry's bytes */

/*
 * Zero the bytes of bv[0 .. nr) after the first keep: the tail of a
 * value's last page, past its end, which a write sends to the disk with
 * the page (arena and stage pages are not zeroed when allocated, so it
 * holds whatever the page held before).  The tail is in the entry's own
 * slot and no reader looks beyond the value's end.
 */
static void flush_zero_tail(const struct bio_vec *bv, unsigned int nr,
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
void dfkv_flush_io_done(struct dfkv_store *st, struct dfkv_entry *e, bool rd,
			int err, u64 ns)
{
	dfkv_stats_lat(st->stats, rd ? DFKV_LAT_COLD_READ : DFKV_LAT_FLUSH, ns);
	if (rd)
		trace_dfkv_cold_read_done(e->disk->name, &e->key, e->len, err,
					  ns);
	else
		trace_dfkv_flush_done(e->disk->name, &e->key, e->len, err, ns);
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
void dfkv_flush_io_submit(struct dfkv_store *st, struct dfkv_entry *e,
			  enum req_op op, struct dfkv_dio *io)
{
	struct dfkv_disk *d = e->disk;
	u64 rext = st->slab.extent_bytes, dext = d->slab.extent_bytes;
	struct bio_vec one[8], *bv;
	unsigned int nbv = BIO_MAX_VECS;
	struct blk_plug plug;
	u64 off = 0;

	if (op == REQ_OP_READ)
		trace_dfkv_cold_read_submit(d->name, &e->key, e->len);
	else
		trace_dfkv_flush_submit(d->name, &e->key, e->len);
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
			flush_zero_tail(bv, nr, n);
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

u32 *dfkv_flush_dcrcs(struct dfkv_entry *e, struct dfkv_slot *slots, u32 n)
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
bool dfkv_flush_parts_intact(struct dfkv_entry *e)
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

/* ----------------------------------------------- an entry's disk slots */

/*
 * Free disk slots taken out of entry e (slots of a rebuild that were never
 * found have extent U32_MAX), clearing their records first when asked,
 * and drop what they held of disk d.
 */
void dfkv_flush_slots_free(struct dfkv_entry *e, struct dfkv_disk *d,
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

/* e became DURABLE on its disk: the most recently used there. */
void dfkv_flush_lru_add_locked(struct dfkv_entry *e)
{
	struct dfkv_disk *d = e->disk;

	spin_lock(&d->lru_lock);
	e->dqueued = READ_ONCE(e->stamp);
	list_add_tail(&e->dlru, &d->lru);
	atomic64_inc(&d->objects);
	atomic64_add(e->len, &d->used_bytes);
	spin_unlock(&d->lru_lock);
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
		dfkv_ghost_add(&st->ghosts, &e->key, DFKV_MISS_EVICTED);
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

/* ---------------------------------------------------------------- flush */

static struct dfkv_tier *tier_of(struct dfkv_entry *e)
{
	return e->store->lower_ctx;
}

/* The disk a key goes to, with a reference, or NULL. */
static struct dfkv_disk *flush_route(struct dfkv_tier *t, const u8 *object_id)
{
	struct dfkv_disk *d;

	rcu_read_lock();
	d = dfkv_ring_lookup(rcu_dereference(t->ring), object_id);
	if (d)
		dfkv_disk_get(d);
	rcu_read_unlock();
	return d;
}

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
	u64 ext = d->slab.extent_bytes, start, crc_start;
	struct dfkv_od_rec *recs;
	struct dfkv_slot *slots;
	struct dfkv_dio io;
	u32 nr, i, *crcs;
	int err;

	trace_dfkv_flush_start(&e->key, e->len, e->flush_tries);
	err = dfkv_evict_alloc_parts(&ev, e, &slots, &nr, &e->dslot0,
				     sizeof(u32));
	crcs = dfkv_flush_dcrcs(e, slots, dfkv_od_nr_parts(e->len, ext));
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
	dfkv_flush_io_submit(st, e, REQ_OP_WRITE, &io);
	crc_start = ktime_get_ns();
	for (i = 0; i < nr; i++)
		crcs[i] = entry_ram_crc(e, (u64)i * ext,
					dfkv_od_part_len(e->len, i, ext));
	trace_dfkv_flush_crc(&e->key, e->len, ktime_get_ns() - crc_start, 0);
	err = dfkv_dio_wait(&io);
	dfkv_flush_io_done(st, e, false, err, ktime_get_ns() - start);
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
		dfkv_flush_slots_free(e, d, slots, nr, recs && dfkv_disk_up(d));
}

static void flush_entry_work(struct work_struct *work)
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
		d = READ_ONCE(t->abandon) ? NULL : flush_route(t, e->key.id);
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
				dfkv_flush_lru_add_locked(e);
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

/* The PUT's caller waits for the disk commit before its OK. */
static bool flush_put_waits(struct dfkv_tier *t)
{
	return READ_ONCE(t->policy) == DFKV_TIER_WRITEAROUND ||
		READ_ONCE(t->ack) == DFKV_ACK_DISK || !READ_ONCE(t->dirty_pct);
}

/*
 * Queue a DIRTY entry's flush; the PUT waits for it (-EINPROGRESS, the
 * flush's end gives its status: flush_done()) with ack=disk, write-around,
 * watermark 0 or a staged value.
 */
int dfkv_flush_commit(void *ctx, struct dfkv_entry *e, bool staged)
{
	struct dfkv_tier *t = ctx;
	bool sync = staged || flush_put_waits(t);

	trace_dfkv_flush_queue(&e->key, e->len, 0);
	INIT_WORK(&e->flush_work, flush_entry_work);
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
