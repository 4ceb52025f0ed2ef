// SPDX-License-Identifier: GPL-2.0
/*
 * One dfkv disk (disk.h, Documentation/ondisk.md): the exclusive open of a
 * raw block device, the superblock and its epoch, the record area's
 * read-modify-write, payload bios straight from and into the caller's
 * pages, and the rebuild scan.  Every I/O is a bio to the device: no page
 * cache, no buffer heads.
 *
 * I/O and teardown: every bio of traffic (payloads, records, the rebuild)
 * runs under a reference of d->io taken with percpu_ref_tryget_live();
 * dfkv_disk_close() kills it and waits until the last one is put, so once
 * it returns no bio of this disk is in flight and none can start.  The
 * superblock writes of open and close run outside it: before traffic
 * exists and after it ended; the committer's, which raise the record
 * high-water mark, inside it.
 *
 * Records: the record area's units that hold valid records have their
 * images in RAM, and one group committer per disk patches and writes
 * them, never reading the area back (ondisk.md, "Write rules"): callers
 * that arrive while a group is being written queue up, and the first of
 * them to find the disk idle writes all their records as the next group
 * (one flush, each unit once, all units in flight at once).  No record
 * is written at or above the superblock's record high-water mark: the
 * committer raises the mark first, and the rebuild reads only below it.
 *
 * Failure: dfkv_disk_fail() turns the disk FAILED once, under fail_lock,
 * and queues fail_work, which holds a reference and calls on_fail() in
 * process context.  A FAILED disk writes nothing more: payload writes and
 * record updates are refused, close does not write CLEAN.
 */
#define pr_fmt(fmt) "dfkv: " fmt

#include <linux/bio.h>
#include <linux/blkdev.h>
#include <linux/crc32c.h>
#include <linux/highmem.h>
#include <linux/kernel.h>
#include <linux/ktime.h>
#include <linux/log2.h>
#include <linux/mm.h>
#include <linux/netlink.h>
#include <linux/random.h>
#include <linux/rcupdate.h>
#include <linux/sched.h>
#include <linux/sizes.h>
#include <linux/slab.h>
#include <linux/sort.h>
#include <linux/string.h>
#include <linux/vmalloc.h>
#include <linux/workqueue.h>

#include "disk.h"
#include "trace.h"

/*
 * Bytes of record area the rebuild reads, scans and writes back at once,
 * and how many such chunks it keeps in flight.
 */
#define DISK_SCAN_CHUNK		SZ_4M
#define DISK_SCAN_DEPTH		4

static void disk_fail_work(struct work_struct *work);

/* Human-readable size for messages: "4 MiB", "64 KiB", "1 GiB". */
static const char *disk_size_str(u64 bytes, char *buf, size_t len)
{
	static const char * const unit[] = { "B", "KiB", "MiB", "GiB", "TiB" };
	unsigned int i = 0;

	while (i < ARRAY_SIZE(unit) - 1 && bytes >= 1024 && !(bytes & 1023)) {
		bytes >>= 10;
		i++;
	}
	snprintf(buf, len, "%llu %s", bytes, unit[i]);
	return buf;
}

static struct block_device *disk_bdev(const struct dfkv_disk *d)
{
	return dfkv_bdev_get(&d->bdev);
}

static void disk_count(struct dfkv_disk *d, blk_opf_t opf, u64 bytes,
		       blk_status_t status)
{
	if (op_is_write(opf)) {
		atomic64_inc(&d->stats.writes);
		atomic64_add(bytes, &d->stats.write_bytes);
	} else {
		atomic64_inc(&d->stats.reads);
		atomic64_add(bytes, &d->stats.read_bytes);
	}
	if (status)
		atomic64_inc(&d->stats.io_errors);
}

/*
 * One synchronous bio of @len bytes (a multiple of the logical block size,
 * at most a page) at byte @pos from or into @page.  The caller holds a
 * reference of d->io, or no traffic exists (open, close).
 */
static int disk_rw_page(struct dfkv_disk *d, blk_opf_t opf, u64 pos,
			struct page *page, unsigned int len)
{
	struct bio_vec bv;
	struct bio bio;
	int err;

	bio_init(&bio, disk_bdev(d), &bv, 1, opf);
	bio.bi_iter.bi_sector = pos >> SECTOR_SHIFT;
	__bio_add_page(&bio, page, len, 0);
	err = submit_bio_wait(&bio);
	disk_count(d, opf, len, bio.bi_status);
	bio_uninit(&bio);
	return err;
}

/* Write @sb to block 0 with REQ_PREFLUSH | REQ_FUA; @whole: all 4 KiB. */
static int disk_write_sb(struct dfkv_disk *d, const struct dfkv_od_sb *sb,
			 struct page *page, bool whole)
{
	dfkv_od_sb_encode(sb, page_address(page));
	/*
	 * An update rewrites the first logical block only: the 512 bytes
	 * that carry data sit in one sector, which the device writes whole.
	 */
	return disk_rw_page(d, REQ_OP_WRITE | REQ_PREFLUSH | REQ_FUA, 0, page,
			    whole ? DFKV_OD_SB_BYTES : d->lbs);
}

static void disk_io_release(struct percpu_ref *ref)
{
	struct dfkv_disk *d = container_of(ref, struct dfkv_disk, io);

	complete(&d->io_done);
}

/* ---- payload bios ---- */

void dfkv_dio_init(struct dfkv_dio *io, struct dfkv_disk *d,
		   void (*end)(struct dfkv_dio *io))
{
	io->disk = d;
	atomic_set(&io->pending, 1);
	io->error = 0;
	init_completion(&io->done);
	io->end = end;
}

/* The last bio of io completed, or the submitter let go of it. */
static void dio_put(struct dfkv_dio *io)
{
	if (!atomic_dec_and_test(&io->pending))
		return;
	if (io->end)
		io->end(io);
	else
		complete(&io->done);
}

static void dio_end_io(struct bio *bio)
{
	struct dfkv_dio *io = bio->bi_private;
	struct dfkv_disk *d = io->disk;

	if (bio->bi_status) {
		atomic64_inc(&d->stats.io_errors);
		WRITE_ONCE(io->error, blk_status_to_errno(bio->bi_status));
	}
	bio_put(bio);
	/* the disk may be released once this is put; io lives on */
	percpu_ref_put(&d->io);
	dio_put(io);
}

/*
 * Send @nr bio_vecs as bios of opf to byte @pos.  Every bio_vec starts on
 * a logical block; all but the last of the whole run cover whole logical
 * blocks, and the last is extended to the next logical-block boundary
 * inside its page (the caller passes whole pages: disk.h).
 */
static void disk_dio_submit(struct dfkv_dio *io, blk_opf_t opf, u64 pos,
			    const struct bio_vec *bv, unsigned int nr)
{
	struct dfkv_disk *d = io->disk;
	unsigned int mask = d->lbs - 1;

	if (op_is_write(opf) && !dfkv_disk_up(d)) {
		WRITE_ONCE(io->error, -EIO);
		return;
	}
	if (WARN_ON_ONCE(pos & mask)) {
		WRITE_ONCE(io->error, -EINVAL);
		return;
	}
	while (nr) {
		unsigned int n = min_t(unsigned int, nr, BIO_MAX_VECS);
		unsigned int i, bytes = 0;
		struct bio *bio;

		for (i = 0; i < n; i++) {
			unsigned int len = bv[i].bv_len;

			if (i == nr - 1)
				len = round_up(len, d->lbs);
			if (WARN_ON_ONCE((bv[i].bv_offset & mask) ||
					 (len & mask) || !len)) {
				WRITE_ONCE(io->error, -EINVAL);
				return;
			}
		}
		if (!percpu_ref_tryget_live(&d->io)) {
			WRITE_ONCE(io->error, -EIO);
			return;
		}
		bio = bio_alloc(disk_bdev(d), n, opf, GFP_NOIO);
		bio->bi_iter.bi_sector = pos >> SECTOR_SHIFT;
		bio->bi_private = io;
		bio->bi_end_io = dio_end_io;
		for (i = 0; i < n; i++) {
			unsigned int len = bv[i].bv_len;

			if (i == nr - 1)
				len = round_up(len, d->lbs);
			/* n <= BIO_MAX_VECS vecs of at most a few pages each */
			if (bio_add_page(bio, bv[i].bv_page, len,
					 bv[i].bv_offset) != len) {
				WARN_ON_ONCE(1);
				bio_put(bio);
				percpu_ref_put(&d->io);
				WRITE_ONCE(io->error, -EINVAL);
				return;
			}
			bytes += len;
		}
		disk_count(d, opf, bytes, BLK_STS_OK);
		atomic_inc(&io->pending);
		submit_bio(bio);
		pos += bytes;
		bv += n;
		nr -= n;
	}
}

void dfkv_dio_submit(struct dfkv_dio *io, enum req_op op, u64 pos,
		     const struct bio_vec *bv, unsigned int nr)
{
	disk_dio_submit(io, op, pos, bv, nr);
}

int dfkv_dio_wait(struct dfkv_dio *io)
{
	if (!atomic_dec_and_test(&io->pending))
		wait_for_completion(&io->done);
	return dfkv_dio_error(io);
}

void dfkv_dio_finish(struct dfkv_dio *io)
{
	dio_put(io);
}

u32 dfkv_disk_crc(u32 crc, const struct bio_vec *bv, unsigned int nr,
		  u64 bytes)
{
	for (; nr && bytes; bv++, nr--) {
		u64 len = min_t(u64, bv->bv_len, bytes);
		size_t off = bv->bv_offset;

		bytes -= len;
		while (len) {
			struct page *page = nth_page(bv->bv_page,
						     off >> PAGE_SHIFT);
			size_t in = offset_in_page(off);
			size_t n = min_t(u64, len, PAGE_SIZE - in);
			void *p = kmap_local_page(page);

			crc = crc32c(crc, p + in, n);
			kunmap_local(p);
			off += n;
			len -= n;
		}
	}
	return crc;
}

/* ---- failure ---- */

void dfkv_disk_fail(struct dfkv_disk *d, const char *why)
{
	unsigned long flags;
	bool notify;

	spin_lock_irqsave(&d->fail_lock, flags);
	if (READ_ONCE(d->state) == DFKV_DISK_STATE_FAILED) {
		spin_unlock_irqrestore(&d->fail_lock, flags);
		return;
	}
	WRITE_ONCE(d->state, DFKV_DISK_STATE_FAILED);
	strscpy(d->reason, why, sizeof(d->reason));
	notify = d->on_fail && !d->closed;
	if (notify)
		kref_get(&d->ref);
	spin_unlock_irqrestore(&d->fail_lock, flags);

	pr_err("disk %s (%s) failed: %s; its blocks are misses until it is formatted or attached again\n",
	       d->name, d->path, why);
	/* queued at most once: the state changes once */
	if (notify)
		schedule_work(&d->fail_work);
}

static void disk_fail_work(struct work_struct *work)
{
	struct dfkv_disk *d = container_of(work, struct dfkv_disk, fail_work);

	d->on_fail(d, d->on_fail_ctx);
	dfkv_disk_put(d);
}

/* ---- records ---- */

/*
 * The record area in RAM: d->rec_units holds the image of every 4 KiB
 * unit of it that holds a record valid in this epoch, as on the device
 * (the rebuild scan stores them, the committer keeps them).  A unit
 * without an image holds no valid record, only zeros or records of
 * earlier epochs that no rebuild accepts, so it is written from zeros.
 * The write path therefore never reads the record area back.
 *
 * Every update, write or clear, goes through one committer per disk:
 * callers queue their records, and whoever finds the disk idle takes the
 * whole queue as a group: it patches the images of every unit the group
 * touches, sends one empty REQ_PREFLUSH when the group publishes records
 * (every payload they describe completed before its writer queued), then
 * writes all those units at once with REQ_FUA, and waits.  A group that
 * publishes a record at or above the record high-water mark first raises
 * the mark: the superblock carrying it is written with REQ_PREFLUSH |
 * REQ_FUA and completes before any record bio is submitted, and its
 * preflush is the group's flush.  A single
 * committer is what keeps an image still while a bio sends it, and two
 * writes of one unit from ever being in flight together.
 */
#define DISK_UNIT_SHIFT		ilog2(DFKV_OD_BLOCK)

static u64 disk_rec_unit(struct dfkv_disk *d, u32 extent, u32 slot)
{
	return dfkv_od_rec_pos(&d->sb.geom, extent, slot) >> DISK_UNIT_SHIFT;
}

/* One caller's update waiting in d->commit_queue. */
struct disk_rec_commit {
	struct list_head link;
	const struct dfkv_od_rec *recs;	/* records to write, or */
	const struct dfkv_slot *slots;	/* slots whose records to clear */
	unsigned int nr;
	int err;
	u64 seq;		/* the group that ran it (d->commit_seq) */
	bool done;		/* under d->commit_lock; then gone */
};

/* A group being committed, for its trace event. */
struct disk_group {
	u64 seq;
	u64 start;		/* ns, before its flush */
	u32 updates;
	bool flush;		/* an empty preflush before the records */
};

/* Entry @idx of update @c, and the record unit it falls in. */
struct disk_rec_ref {
	u64 unit;
	const struct disk_rec_commit *c;
	unsigned int idx;
};

static int disk_rec_ref_cmp(const void *a, const void *b)
{
	const struct disk_rec_ref *x = a, *y = b;

	return x->unit < y->unit ? -1 : x->unit > y->unit;
}

/* Extent and slot of entry @j of an update. */
static void disk_rec_at(const struct disk_rec_commit *c, unsigned int j,
			u32 *extent, u32 *slot)
{
	*extent = c->recs ? c->recs[j].extent : c->slots[j].extent;
	*slot = c->recs ? c->recs[j].slot : c->slots[j].index;
}

static struct page *disk_unit_image(struct dfkv_disk *d, u64 unit)
{
	return xa_load(&d->rec_units, unit);
}

/*
 * The image of @unit, a zeroed one made for it when it had none; NULL
 * without memory (the images stay as they were: an added zero image says
 * what no image says).
 */
static struct page *disk_unit_image_make(struct dfkv_disk *d, u64 unit)
{
	struct page *page = disk_unit_image(d, unit);

	if (page)
		return page;
	page = alloc_page(GFP_NOIO | __GFP_ZERO);
	if (!page)
		return NULL;
	if (xa_err(xa_store(&d->rec_units, unit, page, GFP_NOIO))) {
		__free_page(page);
		return NULL;
	}
	return page;
}

/* Write entry @idx of @c into the image of its unit. */
static void disk_rec_patch(struct dfkv_disk *d, const struct disk_rec_ref *r,
			   struct page *page)
{
	u32 e, s;
	u64 off;

	disk_rec_at(r->c, r->idx, &e, &s);
	off = dfkv_od_rec_pos(&d->sb.geom, e, s) -
	      (r->unit << DISK_UNIT_SHIFT);
	if (r->c->recs)
		dfkv_od_rec_encode(page_address(page) + off, &r->c->recs[r->idx],
				   d->sb.uuid);
	else
		memset(page_address(page) + off, 0, DFKV_OD_REC_BYTES);
}

/*
 * Write the @n distinct units of @refs (sorted) from their images, all at
 * once, after a flush when @g says so; then drop the images left all zero.
 */
static int disk_units_write(struct dfkv_disk *d, struct disk_rec_ref *refs,
			    unsigned int nr, struct bio_vec *bv,
			    const struct disk_group *g)
{
	unsigned int i, j, n, units = 0;
	struct blk_plug plug;
	struct dfkv_dio io;
	int err = 0;
	u64 t1;

	if (g->flush)
		err = blkdev_issue_flush(disk_bdev(d));
	t1 = ktime_get_ns();
	if (err)
		goto out;
	dfkv_dio_init(&io, d, NULL);
	blk_start_plug(&plug);
	for (i = 0; i < nr; i = j) {
		/* a run of consecutive units: one submission */
		for (j = i, n = 0; j < nr; j++) {
			if (j > i && refs[j].unit == refs[j - 1].unit)
				continue;
			if (j > i && refs[j].unit != refs[j - 1].unit + 1)
				break;
			bvec_set_page(&bv[n++], disk_unit_image(d, refs[j].unit),
				      DFKV_OD_BLOCK, 0);
		}
		disk_dio_submit(&io, REQ_OP_WRITE | REQ_FUA,
				refs[i].unit << DISK_UNIT_SHIFT, bv, n);
		units += n;
	}
	blk_finish_plug(&plug);
	err = dfkv_dio_wait(&io);
	atomic64_add(units, &d->stats.record_writes);
	for (i = 0; i < nr; i++) {
		struct page *page = disk_unit_image(d, refs[i].unit);

		if (page && !memchr_inv(page_address(page), 0, DFKV_OD_BLOCK)) {
			xa_erase(&d->rec_units, refs[i].unit);
			__free_page(page);
		}
	}
out:
	trace_dfkv_rec_commit(d->name, g->seq, g->updates, nr, units,
			      t1 - g->start, ktime_get_ns() - t1, err);
	return err;
}

/*
 * Raise the record high-water mark above extent @top (ondisk.md, "Record
 * high-water mark"): the superblock carrying the new mark is written with
 * REQ_PREFLUSH | REQ_FUA and waited for, so it is durable before any
 * record of the group is submitted.  -ENOMEM writes nothing; -EIO: the
 * write failed.  The committer's.
 */
static int disk_hwm_raise(struct dfkv_disk *d, u32 top)
{
	struct dfkv_od_sb sb = d->sb;
	struct page *page;
	int err;

	sb.rec_hwm = dfkv_od_hwm_cover(&sb.geom, sb.rec_hwm, (u64)top + 1);
	page = alloc_page(GFP_NOIO);
	if (!page)
		return -ENOMEM;
	err = disk_write_sb(d, &sb, page, false);
	__free_page(page);
	if (err)
		return -EIO;
	d->sb.rec_hwm = sb.rec_hwm;
	return 0;
}

/*
 * Commit a group of updates: the mark raised when a record lies above it,
 * then every unit they touch gets an image (nothing is patched if one
 * cannot), then the images are patched and written.  A failed write fails
 * the disk.
 */
static int disk_rec_commit_group(struct dfkv_disk *d, struct list_head *group)
{
	struct disk_group g = { .seq = ++d->commit_seq };
	struct disk_rec_commit *c;
	struct disk_rec_ref *refs;
	unsigned int n = 0, i, k;
	bool publish = false;
	struct bio_vec *bv;
	u32 top = 0;
	int err;

	list_for_each_entry(c, group, link) {
		c->seq = g.seq;
		n += c->nr;
		publish |= !!c->recs;
		for (k = 0; c->recs && k < c->nr; k++)
			top = max(top, c->recs[k].extent);
		g.updates++;
	}
	if (!dfkv_disk_up(d))
		return -EIO;
	if (!percpu_ref_tryget_live(&d->io)) {
		/*
		 * A record update after close began: the caller broke the
		 * "stop traffic first" rule.  A clear that did not happen
		 * must not be followed by a CLEAN superblock.
		 */
		dfkv_disk_fail(d, "record update after close");
		return -EIO;
	}
	g.flush = publish;
	g.start = ktime_get_ns();
	if (publish && top >= d->sb.rec_hwm) {
		err = disk_hwm_raise(d, top);
		if (err == -EIO)
			dfkv_disk_fail(d, "superblock write failed");
		if (err)
			goto out;
		g.flush = false;	/* the superblock's preflush was the flush */
	}
	err = -ENOMEM;
	refs = kvmalloc_array(n, sizeof(*refs) + sizeof(*bv), GFP_NOIO);
	if (!refs)
		goto out;
	bv = (struct bio_vec *)(refs + n);
	i = 0;
	list_for_each_entry(c, group, link) {
		for (k = 0; k < c->nr; k++, i++) {
			u32 e, s;

			disk_rec_at(c, k, &e, &s);
			refs[i] = (struct disk_rec_ref){
				.unit = disk_rec_unit(d, e, s), .c = c, .idx = k,
			};
		}
	}
	sort(refs, n, sizeof(*refs), disk_rec_ref_cmp, NULL);
	for (i = 0; i < n; i++)
		if (!disk_unit_image_make(d, refs[i].unit))
			goto out_refs;
	for (i = 0; i < n; i++)
		disk_rec_patch(d, &refs[i], disk_unit_image(d, refs[i].unit));
	err = disk_units_write(d, refs, n, bv, &g);
	if (err) {
		dfkv_disk_fail(d, publish ? "record write failed" :
					    "record clear failed");
		err = -EIO;
	}
out_refs:
	kvfree(refs);
out:
	percpu_ref_put(&d->io);
	return err;
}

/* Queue @me and wait until a committer (this caller, or one before) ran it. */
static int disk_rec_queue(struct dfkv_disk *d, struct disk_rec_commit *me)
{
	struct disk_rec_commit *c, *tmp;
	unsigned int i;

	if (!me->nr)
		return 0;
	for (i = 0; i < me->nr; i++) {
		u32 e, s;

		disk_rec_at(me, i, &e, &s);
		if (e >= d->sb.geom.nr_extents || s >= d->sb.geom.max_slots) {
			WARN_ONCE(1, "dfkv: record of extent %u slot %u beyond disk %s\n",
				  e, s, d->name);
			return -EINVAL;
		}
	}
	spin_lock(&d->commit_lock);
	list_add_tail(&me->link, &d->commit_queue);
	while (!me->done) {
		LIST_HEAD(group);
		int err;

		if (d->committing) {
			spin_unlock(&d->commit_lock);
			wait_event(d->commit_wait, READ_ONCE(me->done) ||
				   !READ_ONCE(d->committing));
			spin_lock(&d->commit_lock);
			continue;
		}
		d->committing = true;
		list_splice_init(&d->commit_queue, &group);
		spin_unlock(&d->commit_lock);
		err = disk_rec_commit_group(d, &group);
		spin_lock(&d->commit_lock);
		/* A caller may return (and its frame go) once done is set. */
		list_for_each_entry_safe(c, tmp, &group, link) {
			list_del(&c->link);
			c->err = err;
			WRITE_ONCE(c->done, true);
		}
		d->committing = false;
		wake_up_all(&d->commit_wait);
	}
	spin_unlock(&d->commit_lock);
	return me->err;
}

int dfkv_disk_rec_write(struct dfkv_disk *d, struct dfkv_od_rec *recs,
			unsigned int nr)
{
	struct disk_rec_commit me = { .recs = recs, .nr = nr };
	unsigned int i;
	int err;

	for (i = 0; i < nr; i++)
		recs[i].gen = d->sb.epoch;
	err = disk_rec_queue(d, &me);
	if (nr)
		trace_dfkv_rec_done(d->name, &recs[0].key, me.seq, err);
	return err;
}

int dfkv_disk_rec_clear(struct dfkv_disk *d, const struct dfkv_slot *slots,
			unsigned int nr)
{
	struct disk_rec_commit me = { .slots = slots, .nr = nr };

	return disk_rec_queue(d, &me);
}

/* The rebuild's images: the units of @buf (at unit @first) not all zero. */
static int disk_units_load(struct dfkv_disk *d, u64 first, const void *buf,
			   unsigned int nu)
{
	unsigned int i;

	for (i = 0; i < nu; i++) {
		const void *p = buf + (size_t)i * DFKV_OD_BLOCK;
		struct page *page;

		if (!memchr_inv(p, 0, DFKV_OD_BLOCK))
			continue;
		page = disk_unit_image_make(d, first + i);
		if (!page)
			return -ENOMEM;
		memcpy(page_address(page), p, DFKV_OD_BLOCK);
	}
	return 0;
}

static void disk_units_free(struct dfkv_disk *d)
{
	struct page *page;
	unsigned long i;

	xa_for_each(&d->rec_units, i, page)
		__free_page(page);
	xa_destroy(&d->rec_units);
}

u64 dfkv_disk_slot_pos(struct dfkv_disk *d, struct dfkv_slot slot)
{
	int cls = dfkv_slot_class(&d->slab, slot);

	/* only a slot the caller holds has a class */
	WARN_ON_ONCE(cls < 0);
	return dfkv_od_data_pos(&d->sb.geom, slot.extent, slot.index,
				dfkv_slab_class_size(&d->slab, cls));
}

/* ---- rebuild ---- */

struct disk_scan {
	struct dfkv_disk *disk;
	struct dfkv_od_scan *sc;
	dfkv_od_found_fn found;
	void *ctx;
	u64 chunk_pos;		/* device offset of the buffer */
	unsigned long *dirty;	/* its 4 KiB units to write back */
	u64 used;		/* extents [0, used) hold the records kept */
};

static int disk_scan_found(void *ctx, const struct dfkv_od_rec *rec)
{
	struct disk_scan *ds = ctx;
	int ret = ds->found(ds->ctx, rec);

	if (!ret)
		ds->used = max_t(u64, ds->used, (u64)rec->extent + 1);
	return ret;
}

static void disk_scan_reject(void *ctx, u32 extent, u32 slot,
			     enum dfkv_od_rec_reason why)
{
	struct disk_scan *ds = ctx;
	u64 off = dfkv_od_rec_pos(&ds->disk->sb.geom, extent, slot) -
		  ds->chunk_pos;

	__set_bit(off / DFKV_OD_BLOCK, ds->dirty);
}

/* One chunk of the record area: read, scanned, written back where changed. */
struct disk_scan_buf {
	void *buf;		/* vmalloc'ed, a whole chunk */
	struct bio_vec *bv;	/* one per 4 KiB unit */
	struct dfkv_dio io;	/* its read */
	bool busy;		/* the read is in flight */
	u32 first, n;		/* its extents */
	unsigned int nu;	/* its 4 KiB units */
};

/*
 * Submit under @io a read or write of 4 KiB units [first, first + n) of
 * the vmalloc'ed @buf, whose unit 0 is at byte @pos of the device.  Units,
 * not pages: the record area is padded to 4 KiB only.
 */
static void disk_scan_submit(struct dfkv_disk *d, struct dfkv_dio *io,
			     blk_opf_t opf, u64 pos, void *buf,
			     struct bio_vec *bv, unsigned int first,
			     unsigned int n)
{
	void *start = buf + (size_t)first * DFKV_OD_BLOCK;
	unsigned int i;

	for (i = 0; i < n; i++) {
		void *p = start + (size_t)i * DFKV_OD_BLOCK;

		bv[i].bv_page = vmalloc_to_page(p);
		bv[i].bv_offset = offset_in_page(p);
		bv[i].bv_len = DFKV_OD_BLOCK;
	}
	if (op_is_write(opf))
		flush_kernel_vmap_range(start, n * DFKV_OD_BLOCK);
	dfkv_dio_init(io, d, NULL);
	disk_dio_submit(io, opf, pos + (u64)first * DFKV_OD_BLOCK, bv, n);
}

/* Start reading extents [first, first + n) into @b. */
static void disk_scan_read(struct dfkv_disk *d, struct disk_scan_buf *b,
			   u32 first, u32 n)
{
	const struct dfkv_od_geom *g = &d->sb.geom;
	u64 span = (u64)g->max_slots * DFKV_OD_REC_BYTES;

	b->first = first;
	b->n = n;
	b->nu = round_up((size_t)n * span, DFKV_OD_BLOCK) / DFKV_OD_BLOCK;
	disk_scan_submit(d, &b->io, REQ_OP_READ, dfkv_od_rec_pos(g, first, 0),
			 b->buf, b->bv, 0, b->nu);
	b->busy = true;
}

static int disk_scan_read_wait(struct disk_scan_buf *b)
{
	int err = dfkv_dio_wait(&b->io);

	b->busy = false;
	invalidate_kernel_vmap_range(b->buf, b->nu * DFKV_OD_BLOCK);
	return err;
}

/*
 * Scan a chunk that was read: zero its rejected records, write back the
 * units that changed (REQ_FUA, before traffic), keep the images of the
 * units left non-zero.  Returns the records zeroed or a negative errno.
 */
static long disk_scan_chunk(struct disk_scan *ds, struct disk_scan_buf *b)
{
	struct dfkv_disk *d = ds->disk;
	unsigned int p, q;
	struct dfkv_dio io;
	long zeroed;
	int err;

	ds->chunk_pos = dfkv_od_rec_pos(&d->sb.geom, b->first, 0);
	zeroed = dfkv_od_scan(ds->sc, b->buf, b->first, b->n, disk_scan_found,
			      disk_scan_reject, ds);
	if (zeroed < 0)
		return zeroed;
	/* write back the runs of units holding a zeroed record */
	for (p = find_first_bit(ds->dirty, b->nu); p < b->nu;
	     p = find_next_bit(ds->dirty, b->nu, q)) {
		q = find_next_zero_bit(ds->dirty, b->nu, p);
		disk_scan_submit(d, &io, REQ_OP_WRITE | REQ_FUA, ds->chunk_pos,
				 b->buf, b->bv, p, q - p);
		if (dfkv_dio_wait(&io)) {
			dfkv_disk_fail(d, "record clear failed");
			return -EIO;
		}
		atomic64_add(q - p, &d->stats.record_writes);
	}
	bitmap_zero(ds->dirty, b->nu);
	err = disk_units_load(d, ds->chunk_pos >> DISK_UNIT_SHIFT, b->buf,
			      b->nu);
	return err ? err : zeroed;
}

int dfkv_disk_rebuild(struct dfkv_disk *d, dfkv_od_found_fn found,
		      void *ctx)
{
	const struct dfkv_od_geom *g = &d->sb.geom;
	u64 span = (u64)g->max_slots * DFKV_OD_REC_BYTES;
	struct disk_scan ds = { .disk = d, .found = found, .ctx = ctx };
	struct disk_scan_buf bufs[DISK_SCAN_DEPTH] = {};
	u64 rejected = 0, start = ktime_get_ns(), hwm = d->sb.rec_hwm;
	unsigned int per_chunk, units, depth, k;
	u64 nr_chunks, c;
	char why[160] = "";
	size_t chunk;
	int err, i;

	d->stats.rebuild_records = 0;
	d->stats.rebuild_rejected = 0;
	d->stats.rebuild_ms = 0;
	d->stats.rebuild_read_bytes = 0;
	if (d->gen_min > d->gen_max)
		return 0;

	ds.sc = kvzalloc(sizeof(*ds.sc), GFP_KERNEL);
	if (!ds.sc)
		return -ENOMEM;
	err = dfkv_od_scan_init(ds.sc, &d->sb, &d->slab, d->gen_min,
				d->gen_max);
	if (err)
		goto out;

	/* whole extents; span is a power of two, so chunk is 4 KiB-aligned */
	per_chunk = max_t(u64, DISK_SCAN_CHUNK / span, 1);
	chunk = round_up((size_t)per_chunk * span, DFKV_OD_BLOCK);
	units = chunk / DFKV_OD_BLOCK;
	/* only below the mark: no record above it is valid (ondisk.md) */
	nr_chunks = div_u64(hwm + per_chunk - 1, per_chunk);
	depth = min_t(u64, DISK_SCAN_DEPTH, nr_chunks);
	err = -ENOMEM;
	ds.dirty = bitmap_zalloc(units, GFP_KERNEL);
	if (!ds.dirty)
		goto out;
	for (k = 0; k < depth; k++) {
		bufs[k].buf = vmalloc(chunk);
		bufs[k].bv = kvmalloc_array(units, sizeof(*bufs[k].bv),
					    GFP_KERNEL);
		if (!bufs[k].buf || !bufs[k].bv)
			goto out;
	}

	/*
	 * depth chunks in flight: chunk c is read into bufs[c % depth] and
	 * scanned at step c + depth, when the next one is read into it
	 */
	for (c = 0, k = 0; c < nr_chunks + depth; c++, k = (k + 1) % depth) {
		struct disk_scan_buf *b = &bufs[k];
		long zeroed;

		if (c >= depth) {
			err = disk_scan_read_wait(b);
			if (err) {
				dfkv_disk_fail(d, "record area read failed");
				goto out;
			}
			d->stats.rebuild_read_bytes += (u64)b->nu * DFKV_OD_BLOCK;
			zeroed = disk_scan_chunk(&ds, b);
			if (zeroed < 0) {
				err = zeroed;
				goto out;
			}
			rejected += zeroed;
			cond_resched();
		}
		if (c < nr_chunks)
			disk_scan_read(d, b, c * per_chunk,
				       min_t(u64, per_chunk, hwm - c * per_chunk));
	}
	err = 0;
	/*
	 * Every record left at or above the kept ones' extents was cleared:
	 * the committer may write a mark that only covers those.
	 */
	d->sb.rec_hwm = dfkv_od_hwm_cover(g, 0, ds.used);

	d->stats.rebuild_records = ds.sc->count[DFKV_OD_REC_OK];
	d->stats.rebuild_rejected = rejected;
	d->stats.rebuild_ms = div_u64(ktime_get_ns() - start, NSEC_PER_MSEC);
	for (i = DFKV_OD_REC_MAGIC; i < DFKV_OD_REC_NR_REASONS; i++) {
		size_t at = strlen(why);

		if (ds.sc->count[i])
			scnprintf(why + at, sizeof(why) - at, ", %s %llu",
				  dfkv_od_rec_reason_str(i), ds.sc->count[i]);
	}
	pr_info("disk %s: rebuild of epochs %llu..%llu: %llu records, %llu rejected%s in %llu ms; read %llu KiB of records below extent %llu, mark now %llu\n",
		d->name, d->gen_min, d->gen_max, d->stats.rebuild_records,
		rejected, why, d->stats.rebuild_ms,
		d->stats.rebuild_read_bytes >> 10, hwm, d->sb.rec_hwm);
out:
	for (k = 0; k < DISK_SCAN_DEPTH; k++) {
		/* a read still in flight after a failure */
		if (bufs[k].busy)
			disk_scan_read_wait(&bufs[k]);
		kvfree(bufs[k].bv);
		vfree(bufs[k].buf);
	}
	bitmap_free(ds.dirty);
	kvfree(ds.sc);
	if (err)
		pr_err("disk %s: rebuild failed: %d\n", d->name, err);
	return err;
}

/* ---- open, close ---- */

/*
 * Why the superblock read cannot be attached without --format, as an
 * extack message; the details go to the kernel log too.
 */
static void disk_refusal(struct dfkv_disk *d, enum dfkv_od_sb_reason why,
			 const struct dfkv_od_sb *sb,
			 struct netlink_ext_ack *extack)
{
	char ext[24];

	disk_size_str(sb->geom.extent_bytes, ext, sizeof(ext));
	switch (why) {
	case DFKV_OD_SB_BLANK:
		NL_SET_ERR_MSG(extack,
			       "no dfkv superblock (the first 4 KiB are zero, the rest may hold data): use --format");
		break;
	case DFKV_OD_SB_FOREIGN:
		NL_SET_ERR_MSG(extack,
			       "device carries another file system or data: use --format");
		break;
	case DFKV_OD_SB_CRC:
		NL_SET_ERR_MSG(extack,
			       "dfkv superblock fails its checksum: use --format");
		break;
	case DFKV_OD_SB_FORMAT:
		DFKV_ERR_MSG_FMT(extack,
				 "dfkv format of another version: use --format",
				 "dfkv format version %u, this module reads %u: use --format",
				 sb->format, DFKV_OD_FORMAT_VERSION);
		break;
	case DFKV_OD_SB_LATTICE:
		NL_SET_ERR_MSG(extack,
			       "dfkv format of another size-class lattice: use --format");
		break;
	case DFKV_OD_SB_DEVICE:
		DFKV_ERR_MSG_FMT(extack,
				 "dfkv format for another device size: use --format",
				 "dfkv format for another device size (%llu bytes): use --format",
				 sb->geom.dev_bytes);
		break;
	case DFKV_OD_SB_EXTENT:
		DFKV_ERR_MSG_FMT(extack,
				 "dfkv format of another geometry (extent size): use --format",
				 "dfkv format of another geometry (extent %s): use --format",
				 ext);
		break;
	default:
		NL_SET_ERR_MSG(extack,
			       "dfkv superblock is inconsistent: use --format");
		break;
	}
	if (why == DFKV_OD_SB_DEVICE || why == DFKV_OD_SB_EXTENT)
		pr_notice("%s refused: %s (device %llu bytes; format for %llu bytes, extent %s): use --format\n",
			  d->path, dfkv_od_sb_reason_str(why),
			  bdev_nr_bytes(disk_bdev(d)), sb->geom.dev_bytes,
			  ext);
	else
		pr_notice("%s refused: %s: use --format\n", d->path,
			  dfkv_od_sb_reason_str(why));
}

/*
 * Lay a new format on the device: geometry, the slab over it, the record
 * area zeroed, a CLEAN superblock at epoch 1.  On return @cur is it.
 */
static int disk_format(struct dfkv_disk *d, const char *name,
		       u64 extent_bytes, struct page *page,
		       struct dfkv_od_sb *cur, struct netlink_ext_ack *extack)
{
	struct block_device *bdev = disk_bdev(d);
	u64 dev_bytes = bdev_nr_bytes(bdev);
	u8 uuid[DFKV_OD_UUID_LEN];
	int err;

	if (!extent_bytes)
		extent_bytes = DFKV_DISK_EXTENT_DEFAULT;
	if (!name || !*name)
		name = kbasename(d->path);
	if (!*name || strlen(name) >= DFKV_OD_NAME_MAX) {
		NL_SET_ERR_MSG(extack,
			       "disk name must be 1 to 63 bytes: give --name");
		return -EINVAL;
	}
	get_random_bytes(uuid, sizeof(uuid));
	err = dfkv_od_sb_format(cur, dev_bytes, extent_bytes, uuid, name);
	if (err == -ENOSPC) {
		NL_SET_ERR_MSG(extack,
			       "device too small for one extent and its records");
		return err;
	}
	if (err) {
		NL_SET_ERR_MSG(extack,
			       "extent size must be a power of two from 64 KiB to 1 GiB");
		return err;
	}
	err = dfkv_slab_init(&d->slab, extent_bytes, cur->geom.nr_extents,
			     NULL, d);
	if (err)
		return err;

	err = blkdev_issue_zeroout(bdev, cur->geom.records_off >> SECTOR_SHIFT,
				   cur->geom.records_bytes >> SECTOR_SHIFT,
				   GFP_KERNEL, 0);
	if (!err)
		err = disk_write_sb(d, cur, page, true);
	if (err) {
		NL_SET_ERR_MSG(extack, "format: writing the device failed");
		dfkv_slab_destroy(&d->slab);
		return -EIO;
	}
	pr_info("disk %s formatted on %s: %llu bytes, %u extents of %llu bytes\n",
		cur->name, d->path, dev_bytes, cur->geom.nr_extents,
		extent_bytes);
	return 0;
}

/* Read and check the superblock; nothing is written. */
static int disk_read_sb(struct dfkv_disk *d, const char *name,
			u64 extent_bytes, struct page *page,
			struct dfkv_od_sb *cur, struct netlink_ext_ack *extack)
{
	enum dfkv_od_sb_reason why;
	int err;

	err = disk_rw_page(d, REQ_OP_READ, 0, page, DFKV_OD_SB_BYTES);
	if (err) {
		NL_SET_ERR_MSG(extack, "reading the superblock failed");
		return -EIO;
	}
	why = dfkv_od_sb_decode(page_address(page), cur);
	if (why == DFKV_OD_SB_OK)
		why = dfkv_od_sb_match(cur, bdev_nr_bytes(disk_bdev(d)),
				       extent_bytes);
	if (why != DFKV_OD_SB_OK) {
		disk_refusal(d, why, cur, extack);
		return -EMEDIUMTYPE;
	}
	if (name && *name && strcmp(name, cur->name)) {
		DFKV_ERR_MSG_FMT(extack,
				 "the disk carries another name: omit --name or use --format",
				 "the disk is named \"%s\": omit --name or use --format",
				 cur->name);
		return -EINVAL;
	}
	err = dfkv_slab_init(&d->slab, cur->geom.extent_bytes,
			     cur->geom.nr_extents, NULL, d);
	if (err)
		return err;
	return 0;
}

int dfkv_disk_open(const char *path, const char *name, bool format,
		   u64 extent_bytes, dfkv_disk_fail_fn on_fail, void *ctx,
		   struct netlink_ext_ack *extack, struct dfkv_disk **out)
{
	struct dfkv_od_sb cur, next;
	struct block_device *bdev;
	struct dfkv_disk *d;
	struct page *page;
	char size[24];
	int err, how;

	*out = NULL;
	d = kzalloc(sizeof(*d), GFP_KERNEL);
	if (!d)
		return -ENOMEM;
	if (strscpy(d->path, path, sizeof(d->path)) < 0) {
		NL_SET_ERR_MSG(extack, "device path too long");
		err = -ENAMETOOLONG;
		goto free;
	}
	INIT_LIST_HEAD(&d->link);
	kref_init(&d->ref);
	spin_lock_init(&d->fail_lock);
	init_completion(&d->io_done);
	xa_init(&d->rec_units);
	spin_lock_init(&d->commit_lock);
	INIT_LIST_HEAD(&d->commit_queue);
	init_waitqueue_head(&d->commit_wait);
	d->on_fail = on_fail;
	d->on_fail_ctx = ctx;
	INIT_WORK(&d->fail_work, disk_fail_work);
	spin_lock_init(&d->lru_lock);
	INIT_LIST_HEAD(&d->lru);
	err = percpu_ref_init(&d->io, disk_io_release, 0, GFP_KERNEL);
	if (err)
		goto free;

	err = dfkv_bdev_open(d->path, d, &d->bdev);
	if (err) {
		if (err == -EBUSY)
			NL_SET_ERR_MSG(extack,
				       "device is busy: mounted, or held by another user");
		else if (err == -ENOENT)
			NL_SET_ERR_MSG(extack, "no such device");
		else if (err == -ENOTBLK)
			NL_SET_ERR_MSG(extack, "not a block device");
		else
			NL_SET_ERR_MSG(extack, "cannot open the device");
		goto exit_ref;
	}
	bdev = disk_bdev(d);
	d->lbs = bdev_logical_block_size(bdev);
	if (d->lbs > DFKV_OD_BLOCK) {
		NL_SET_ERR_MSG(extack, "logical block size above 4 KiB");
		err = -EINVAL;
		goto close;
	}
	if (bdev_read_only(bdev)) {
		NL_SET_ERR_MSG(extack, "device is read-only");
		err = -EROFS;
		goto close;
	}
	page = alloc_page(GFP_KERNEL);
	if (!page) {
		err = -ENOMEM;
		goto close;
	}

	if (format)
		err = disk_format(d, name, extent_bytes, page, &cur, extack);
	else
		err = disk_read_sb(d, name, extent_bytes, page, &cur, extack);
	if (err)
		goto free_page;

	how = dfkv_od_sb_attach(&cur, &next, &d->gen_min, &d->gen_max);
	if (how < 0) {
		NL_SET_ERR_MSG(extack,
			       "dfkv disk epoch cannot advance: use --format");
		err = how;
		goto slab;
	}
	/* DIRTY with the new epoch before any other write (write rule 3) */
	err = disk_write_sb(d, &next, page, false);
	if (err) {
		NL_SET_ERR_MSG(extack, "writing the superblock failed");
		err = -EIO;
		goto slab;
	}
	__free_page(page);
	d->sb = next;
	strscpy(d->name, next.name, sizeof(d->name));
	WRITE_ONCE(d->state, DFKV_DISK_STATE_UP);

	pr_info("disk %s on %s: %llu bytes, %u extents of %s, epoch %llu, %s\n",
		d->name, d->path, d->sb.geom.dev_bytes, d->sb.geom.nr_extents,
		disk_size_str(d->sb.geom.extent_bytes, size, sizeof(size)),
		d->sb.epoch,
		how == DFKV_OD_ATTACH_COLD ? "COLD reset (was not closed cleanly)" :
		d->gen_min > d->gen_max ? "empty" : "REBUILD");
	*out = d;
	return 0;

slab:
	dfkv_slab_destroy(&d->slab);
free_page:
	__free_page(page);
close:
	dfkv_bdev_close(&d->bdev);
exit_ref:
	percpu_ref_exit(&d->io);
free:
	kfree(d);
	return err;
}

void dfkv_disk_close(struct dfkv_disk *d, bool clean)
{
	unsigned long flags;
	struct page *page;
	bool cancelled;

	might_sleep();
	spin_lock_irqsave(&d->fail_lock, flags);
	if (WARN_ON_ONCE(d->closed)) {
		spin_unlock_irqrestore(&d->fail_lock, flags);
		return;
	}
	d->closed = true;	/* no more on_fail from here on */
	spin_unlock_irqrestore(&d->fail_lock, flags);

	percpu_ref_kill(&d->io);
	wait_for_completion(&d->io_done);

	if (clean && dfkv_disk_up(d)) {
		struct dfkv_od_sb sb = d->sb;
		int err = -ENOMEM;

		dfkv_od_sb_clean(&sb);
		page = alloc_page(GFP_KERNEL);
		if (page) {
			err = disk_write_sb(d, &sb, page, false);
			__free_page(page);
		}
		if (!err) {
			d->sb = sb;
			pr_info("disk %s closed clean at epoch %llu\n",
				d->name, sb.epoch);
		} else {
			pr_err("disk %s: writing the CLEAN superblock failed (%d): the next attach cold-resets\n",
			       d->name, err);
		}
	} else {
		pr_info("disk %s closed%s: the next attach cold-resets\n",
			d->name, dfkv_disk_up(d) ? "" : " after a failure");
	}

	/* a pending on_fail is dropped, a running one waited for */
	cancelled = cancel_work_sync(&d->fail_work);
	dfkv_bdev_close(&d->bdev);
	if (cancelled)
		dfkv_disk_put(d);
}

void dfkv_disk_get(struct dfkv_disk *d)
{
	kref_get(&d->ref);
}

bool dfkv_disk_tryget(struct dfkv_disk *d)
{
	return kref_get_unless_zero(&d->ref);
}

static void disk_release(struct kref *ref)
{
	struct dfkv_disk *d = container_of(ref, struct dfkv_disk, ref);

	WARN_ON_ONCE(!d->closed);
	disk_units_free(d);
	dfkv_slab_destroy(&d->slab);
	percpu_ref_exit(&d->io);
	kfree_rcu(d, rcu);
}

void dfkv_disk_put(struct dfkv_disk *d)
{
	if (d)
		kref_put(&d->ref, disk_release);
}
