/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The ring of a node's disks: SPEC.md section 1.4's Ketama construction
 * over the disk names (MD5 of "<name>-<i>", four points per digest), probed
 * with u32le(object_id[4..8]), so a block's disk depends on the disk names
 * only and adding a disk moves about 1/n of the blocks.  Built on disk
 * add/del, read under RCU.
 */
#ifndef _DFKV_RING_H
#define _DFKV_RING_H

#include <linux/types.h>
#include <linux/rcupdate.h>

struct dfkv_disk;

struct dfkv_ring_point {
	u32 hash;
	u32 member;		/* index into members[] */
};

struct dfkv_ring {
	struct rcu_head rcu;
	u32 nr_members;
	u32 nr_points;
	struct dfkv_disk **members;	/* nr_members */
	struct dfkv_ring_point points[];
};

/* Ring over n disks (each holds a reference while in the ring). */
struct dfkv_ring *dfkv_ring_build(struct dfkv_disk **disks, u32 n);
void dfkv_ring_free(struct dfkv_ring *r);
/* The disk a block key routes to (caller holds rcu_read_lock), or NULL. */
struct dfkv_disk *dfkv_ring_lookup(const struct dfkv_ring *r,
				   const u8 *object_id);

#endif /* _DFKV_RING_H */
