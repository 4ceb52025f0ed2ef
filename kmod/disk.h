/* SPDX-License-Identifier: GPL-2.0 */
/*
 * One dfkv disk: a raw block device opened exclusively, its superblock and
 * epoch (Documentation/ondisk.md), the slab allocator over its data area,
 * record writes and clears, payload bios straight from and into the pages
 * the caller names, and the rebuild scan at attach.  The disk knows nothing
 * about entries: the store (store.c, tier.c) decides which slots hold what
 * and hands the disk bio_vecs and records.
 */
#ifndef _DFKV_DISK_H
#define _DFKV_DISK_H

#include <linux/kref.h>
#include <linux/list.h>
#include <linux/mutex.h>
#include <linux/spinlock.h>
#include <linux/percpu-refcount.h>
#include <linux/completion.h>
#include <linux/wait.h>
#include <linux/workqueue.h>
#include <linux/xarray.h>
#include <linux/blk_types.h>
#include <linux/dfkv.h>

#include "compat.h"
#include "slab.h"
#include "ondisk.h"

struct bio_vec;
struct netlink_ext_ack;
struct dfkv_disk;

/* Default extent size of a new format. */
#define DFKV_DISK_EXTENT_DEFAULT	(4ULL << 20)

struct dfkv_disk_stats {
	atomic64_t reads;		/* bios */
	atomic64_t writes;
	atomic64_t read_bytes;
	atomic64_t write_bytes;
	atomic64_t io_errors;
	atomic64_t record_writes;	/* record-area blocks written */
	u64 rebuild_records;		/* set once by dfkv_disk_rebuild() */
	u64 rebuild_rejected;
	u64 rebuild_ms;
	u64 rebuild_read_bytes;		/* of the record area */
};

/*
 * Called once, from process context, when the disk turns FAILED (a
 * metadata write failed, or dfkv_disk_fail()); the owner announces it.
 */
typedef void (*dfkv_disk_fail_fn)(struct dfkv_disk *d, void *ctx);

struct dfkv_disk {
	struct list_head link;		/* the owner's list of disks */
	struct kref ref;		/* freed (with its slab) at the last put */
	struct rcu_head rcu;
	char name[DFKV_DISK_NAME_MAX];	/* from the superblock: routing key */
	char path[DFKV_DISK_PATH_MAX];
	struct dfkv_bdev bdev;		/* compat.h: the exclusive open */
	unsigned int lbs;		/* logical block size */
	/*
	 * As on the device now (DIRTY), but sb.rec_hwm, the committer's, may
	 * be below the device's after a rebuild (ondisk.md, "Record
	 * high-water mark").
	 */
	struct dfkv_od_sb sb;
	u64 gen_min, gen_max;		/* rebuild window, empty if min > max */
	struct dfkv_slab slab;		/* the data area's extents */
	u32 state;			/* READ_ONCE, enum dfkv_disk_state */
	char reason[64];		/* why FAILED, under fail_lock */
	bool closed;			/* under fail_lock: close began */
	spinlock_t fail_lock;
	struct percpu_ref io;		/* bios in flight; killed at close */
	struct completion io_done;
	/* the record area's units holding valid records: struct page * */
	struct xarray rec_units;	/* the committer's */
	/* group commit of record updates (dfkv_disk_rec_write/clear) */
	spinlock_t commit_lock;
	struct list_head commit_queue;	/* writers waiting for the next one */
	bool committing;		/* a writer is writing a group */
	u64 commit_seq;			/* the committer's: groups begun */
	wait_queue_head_t commit_wait;
	dfkv_disk_fail_fn on_fail;
	void *on_fail_ctx;
	struct work_struct fail_work;
	struct dfkv_disk_stats stats;
	/* owned by the store: durable entries on this disk by recency */
	spinlock_t lru_lock;
	struct list_head lru;
	atomic_t users;			/* entries holding slots: wake_up_var */
	atomic64_t objects;		/* entries on lru (durable here) */
	atomic64_t used_bytes;		/* and their bytes */
	atomic64_t evictions;		/* entries evicted for its space */
	/* owned by the tier: its deletion (dfkv_tier_disk_del()) */
	bool leaving;			/* under the tier's lock */
	struct dfkv_tier *leave_tier;
	struct work_struct leave_work;
	struct completion left;		/* closed, announced */
};

/*
 * Open path exclusively and attach it (Documentation/ondisk.md, "Attach"):
 * without @format anything but a matching dfkv superblock is refused with
 * an extack message and nothing is written; with @format the device gets a
 * new format (@name, or the path's last component; @extent_bytes, or the
 * default).  On success the superblock on the device says DIRTY with the
 * new epoch and d->gen_min/gen_max is the rebuild window.  @extent_bytes 0
 * accepts the format's extent size.
 */
int dfkv_disk_open(const char *path, const char *name, bool format,
		   u64 extent_bytes, dfkv_disk_fail_fn on_fail, void *ctx,
		   struct netlink_ext_ack *extack, struct dfkv_disk **out);

/*
 * Scan the record area below the high-water mark once (only when the
 * window is not empty), clearing rejected records on the device and
 * handing every valid record to @found (which claims the slot in
 * d->slab); then lower the mark in RAM to what the valid records need.
 * Logs counts and time; fills the rebuild stats.  Process context, before
 * any traffic.
 */
int dfkv_disk_rebuild(struct dfkv_disk *d, dfkv_od_found_fn found,
		      void *ctx);

/*
 * Stop I/O (new bios fail with -EIO), wait for the bios in flight, write
 * the superblock CLEAN when @clean and the disk did not fail, and release
 * the block device.  The struct (and its slab) stays until the last put.
 * Once: the caller has stopped traffic first (a record update refused
 * because close began fails the disk).  A pending on_fail is dropped and
 * a running one waited for, so close must not be called under a lock
 * that on_fail takes; after close on_fail is never called.  Process
 * context; dfkv_disk_put() too.
 */
void dfkv_disk_close(struct dfkv_disk *d, bool clean);
void dfkv_disk_get(struct dfkv_disk *d);
/* A reference unless the last one is gone (an RCU reader of a list). */
bool dfkv_disk_tryget(struct dfkv_disk *d);
void dfkv_disk_put(struct dfkv_disk *d);

/*
 * Turn the disk FAILED (once): no more writes, blocks become misses.  Any
 * context (bio completions call it); on_fail runs later from a work item.
 */
void dfkv_disk_fail(struct dfkv_disk *d, const char *why);

static inline bool dfkv_disk_up(const struct dfkv_disk *d)
{
	return READ_ONCE(d->state) == DFKV_DISK_STATE_UP;
}

/* Device byte offset of a slot's payload. */
u64 dfkv_disk_slot_pos(struct dfkv_disk *d, struct dfkv_slot slot);

/*
 * Payload I/O: any number of dfkv_dio_submit() calls, each sending
 * [pos, pos + bytes of bv) to the device (REQ_OP_WRITE) or reading it
 * into the pages of bv (REQ_OP_READ) with as many bios as needed, all in
 * flight at once; dfkv_dio_wait() waits for all and returns 0 or -EIO.
 * Or, without a task waiting: dfkv_dio_init() with an end() and
 * dfkv_dio_finish() after the last submit; end() runs once all bios
 * completed (from the last completion, in the block layer's context, or
 * from dfkv_dio_finish() when none is in flight), and dfkv_dio_error()
 * then gives 0 or -EIO.  Completions run in the block layer's context;
 * the waiter is woken, or end() called, once.
 *
 * @pos is aligned to the logical block size (d->lbs, at most 4 KiB), and
 * so is every bio_vec's offset; every bio_vec but the last covers whole
 * logical blocks.  The last may end anywhere: its length is rounded up to
 * the logical block, so the caller passes whole pages (bvecs covering the
 * 4 KiB pages of the slot) and a READ may fill the page past the value's
 * end.  Writes are refused (-EIO) once the disk is not UP; every bio is
 * refused once close began.  Reads, writes and bytes are counted at
 * submission, errors at completion.  A failed payload bio does not fail
 * the disk: the flush workers retry, then fail it (store.c).
 */
struct dfkv_dio {
	struct dfkv_disk *disk;
	atomic_t pending;		/* bios + 1 for the submitter */
	int error;			/* WRITE_ONCE from completions */
	struct completion done;
	void (*end)(struct dfkv_dio *io);	/* NULL: dfkv_dio_wait() */
};

void dfkv_dio_init(struct dfkv_dio *io, struct dfkv_disk *d,
		   void (*end)(struct dfkv_dio *io));
void dfkv_dio_submit(struct dfkv_dio *io, enum req_op op, u64 pos,
		     const struct bio_vec *bv, unsigned int nr);
int dfkv_dio_wait(struct dfkv_dio *io);
void dfkv_dio_finish(struct dfkv_dio *io);

static inline int dfkv_dio_error(const struct dfkv_dio *io)
{
	return READ_ONCE(io->error) ? -EIO : 0;
}

/*
 * CRC32C over the first @bytes of the pages of @bv, chained: start with
 * @crc = ~0U, pass each piece of a part in order, and the record's
 * payload_crc is the bitwise NOT of the last return (ondisk.md: the same
 * value as dfkv_od_crc() of the part in one piece).  Any context.
 */
u32 dfkv_disk_crc(u32 crc, const struct bio_vec *bv, unsigned int nr,
		  u64 bytes);

/*
 * Publish records (their extent/slot fields say where; generation is set
 * to the running epoch), after the payloads they describe completed; or
 * clear the records of slots (zero).  Either failing fails the disk and
 * returns -EIO.  The updates of concurrent callers are group-committed:
 * one flush (when the group publishes records: the superblock write that
 * raises the record high-water mark when a record lies above it), then
 * every record unit the group touches written once with REQ_FUA, all at
 * once, from its RAM image: never a read.  Process context (sleeps on the
 * group before and its bios); -EIO without a write when the disk is not
 * UP, -ENOMEM without one when no image (or superblock page) could be
 * made.
 */
int dfkv_disk_rec_write(struct dfkv_disk *d, struct dfkv_od_rec *recs,
			unsigned int nr);
int dfkv_disk_rec_clear(struct dfkv_disk *d, const struct dfkv_slot *slots,
			unsigned int nr);

#endif /* _DFKV_DISK_H */
