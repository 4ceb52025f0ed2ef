/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The disks of a node below its store: the list of disks and their ring
 * (which disk a block goes to), the write policy, the dirty-byte
 * watermark, and what the store hands down through its
 * dfkv_store_lower_ops: cold reads into RAM, the disks' recency lists,
 * rebuilding the index from a disk and dropping a disk's entries; the
 * flush of dirty entries and its workers are the flush engine's
 * (flush.h), which reads this struct.  With flush.c, the only user of
 * disk.c and ondisk.c; the store never calls into this file.
 */
#ifndef _DFKV_TIER_H
#define _DFKV_TIER_H

#include <linux/list.h>
#include <linux/mutex.h>
#include <linux/atomic.h>
#include <linux/rcupdate.h>
#include <linux/workqueue.h>

struct dfkv_store;
struct dfkv_disk;
struct dfkv_ring;
struct netlink_ext_ack;

#define DFKV_TIER_DIRTY_PCT_DEFAULT	80
#define DFKV_TIER_WORKERS_PER_DISK	4
#define DFKV_TIER_WORKERS_MAX		16
#define DFKV_TIER_FLUSH_TRIES		4	/* then: unhealthy */
#define DFKV_TIER_STOP_TIMEOUT_MS	30000	/* graceful flush bound */

/* What the owner of the store (the node) hears about. */
struct dfkv_tier_ops {
	/* enum dfkv_event: DISK_ADD, DISK_DEL, DISK_STATE */
	void (*disk_event)(void *ctx, struct dfkv_disk *d, u32 event);
	void (*unhealthy)(void *ctx);
};

struct dfkv_tier {
	struct dfkv_store *st;		/* the store above, for good */
	struct mutex lock;		/* disk add/del, ring rebuilds */
	struct list_head disks;		/* under lock; RCU: DISK_GET */
	/* the list's disks, and those of them failed: tier_recount() */
	u32 nr_disks;			/* READ_ONCE */
	u32 nr_failed;			/* READ_ONCE */
	struct dfkv_ring __rcu *ring;	/* NULL: no disk, RAM only */
	struct workqueue_struct *wq;	/* flush workers */
	struct workqueue_struct *ctl_wq;	/* disk deletions (the node's) */
	const struct dfkv_tier_ops *ops;
	void *ops_ctx;
	u32 policy;			/* READ_ONCE, enum dfkv_tier_policy */
	u32 ack;			/* READ_ONCE, enum dfkv_tier_ack */
	u32 dirty_pct;			/* READ_ONCE */
	u32 workers;			/* 0: per disk default */
	bool abandon;			/* READ_ONCE: stop flushing, drop */
	bool stopped;			/* set under lock: the store is going */
	atomic_t backlog;		/* flushes queued, not started */
	atomic_t flushing;		/* flushes queued or running */
	atomic_t reading;		/* cold reads started, not ended */
	atomic_t leaving;		/* deletions queued: wake_up_var */
};

/* Set up the tier below st and register it with st, before any traffic. */
int dfkv_tier_init(struct dfkv_tier *t, struct dfkv_store *st,
		   const char *name, const struct dfkv_tier_ops *ops, void *ctx,
		   struct workqueue_struct *ctl_wq);
/*
 * Wait for the disk deletions queued, then flush every dirty block
 * (bounded by DFKV_TIER_STOP_TIMEOUT_MS, reported if it fires) and wait
 * for the cold reads in flight (not bounded: their bios fill the store's
 * pages); no new flush may be queued after it, and
 * a disk failing after it no longer touches the store.
 */
void dfkv_tier_stop(struct dfkv_tier *t);
/* Close every disk (clean) after the store dropped its entries. */
void dfkv_tier_destroy(struct dfkv_tier *t);

int dfkv_tier_disk_add(struct dfkv_tier *t, const char *path,
		       const char *name, bool format, u64 extent_bytes,
		       struct netlink_ext_ack *extack);
/*
 * Delete a disk: its dirty blocks are flushed, its entries dropped (their
 * records kept) and it closes clean, on ctl_wq.  The caller waits for that
 * killably (-EINTR: it goes on in the background); a second delete of a
 * disk being deleted waits for the first.
 */
int dfkv_tier_disk_del(struct dfkv_tier *t, const char *name,
		       struct netlink_ext_ack *extack);
/*
 * The disk named name with a reference, or NULL; *pos-th for dumps.
 * Without the mutex: it never waits for an attach.
 */
struct dfkv_disk *dfkv_tier_disk_get(struct dfkv_tier *t, const char *name,
				     u32 pos);
int dfkv_tier_set_workers(struct dfkv_tier *t, u32 workers);
/*
 * Bumped whenever a disk joins or leaves the list of any node's tier (of
 * any network namespace), under that tier's lock: with the nodes' own
 * generation, the disk dump's (an unrelated change only makes a reader
 * retry, a missed one cannot happen).
 */
u32 dfkv_tier_gen(void);

#endif /* _DFKV_TIER_H */
