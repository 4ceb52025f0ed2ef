/* SPDX-License-Identifier: GPL-2.0 */
/*
 * dfkv slab allocator: carves one medium (the RAM arena or a disk) made of
 * nr_extents fixed-size extents into size-class slots.  It knows nothing
 * about pages, bios or entries: a slot is an (extent, index) pair whose byte
 * offset in the medium is extent * extent_bytes + index * class_size, and an
 * owner pointer the caller attaches to it.  Extents are bound to a class on
 * demand and return to the free pool as soon as their last slot is freed;
 * dfkv_slab_victim_extent() names an extent of a cold class whose owners the
 * caller may evict when a class needs an extent and none is free.  See
 * slab.c for the size-class lattice and the locking rules.
 */
#ifndef _DFKV_SLAB_H
#define _DFKV_SLAB_H

#include <linux/list.h>
#include <linux/spinlock.h>
#include <linux/types.h>

/*
 * Version of the size-class lattice computed from extent_bytes.  A medium
 * that records class indices (the disk format) stores it beside
 * extent_bytes and refuses a mismatch.
 */
#define DFKV_SLAB_LATTICE_VERSION	1
#define DFKV_SLAB_ALIGN			4096ULL	/* class sizes are multiples */
#define DFKV_SLAB_MIN_EXTENT_SHIFT	16	/* 64 KiB */
#define DFKV_SLAB_MAX_EXTENT_SHIFT	30	/* 1 GiB */
#define DFKV_SLAB_MAX_CLASSES		64	/* bound for 1 GiB extents */

/* A slot: extent number in the medium, slot index inside that extent. */
struct dfkv_slot {
	u32 extent;
	u32 index;
};

/*
 * Optional medium callbacks, both called in process context with no lock of
 * the allocator held (they may sleep):
 * @bind:   @extent is about to serve class @cls (the RAM arena allocates its
 *          pages, a disk records the class).  A non-zero return fails the
 *          allocation with that error and the extent stays free.
 * @unbind: @extent has no used slot left and returns to the free pool.
 * Every successful bind is paired with exactly one unbind (at the latest in
 * dfkv_slab_destroy()).
 */
struct dfkv_slab_ops {
	int (*bind)(void *ctx, u32 extent, int cls);
	void (*unbind)(void *ctx, u32 extent);
};

struct dfkv_slab_class;
struct dfkv_slab_extent;

struct dfkv_slab {
	u64 extent_bytes;
	u32 extent_shift;
	u32 nr_extents;
	int nr_classes;
	const struct dfkv_slab_ops *ops;
	void *ops_ctx;
	struct dfkv_slab_class *classes;	/* nr_classes, immutable sizes */
	struct dfkv_slab_extent *extents;	/* nr_extents */
	/* protects pool, nr_free and the FREE <-> BINDING/UNBINDING moves */
	spinlock_t pool_lock;
	struct list_head pool;		/* free (unbound) extents */
	u32 nr_free;
};

/* Whole-medium figures; a sum of per-class snapshots, not one atomic view. */
struct dfkv_slab_stats {
	u64 extent_bytes;
	u64 bound_bytes;	/* extents_bound * extent_bytes */
	u64 slot_bytes_used;	/* used slots * their class size */
	u64 waste_bytes;	/* bound_bytes - slot_bytes_used */
	u64 tail_bytes;		/* part of waste no slot can ever use */
	u32 nr_extents;
	u32 extents_bound;	/* bound to a class, draining included */
	u32 extents_free;
	u32 extents_draining;
	u32 nr_classes;
};

struct dfkv_slab_class_stats {
	u64 size;		/* slot size in bytes */
	u64 tail_bytes;		/* per extent: extent_bytes % size */
	u64 slots_used;
	u64 slots_total;	/* extents * slots_per_extent */
	u32 slots_per_extent;
	u32 extents;		/* bound, draining included */
	u32 extents_draining;
};

int dfkv_slab_init(struct dfkv_slab *s, u64 extent_bytes, u32 nr_extents,
		   const struct dfkv_slab_ops *ops, void *ops_ctx);
void dfkv_slab_destroy(struct dfkv_slab *s);

int dfkv_slab_class(const struct dfkv_slab *s, u64 len);
u64 dfkv_slab_class_size(const struct dfkv_slab *s, int cls);
u32 dfkv_slab_slots_per_extent(const struct dfkv_slab *s, int cls);

int dfkv_slab_alloc(struct dfkv_slab *s, u64 len, void *owner,
		    struct dfkv_slot *out);
void dfkv_slab_free(struct dfkv_slab *s, struct dfkv_slot slot);
int dfkv_slab_claim(struct dfkv_slab *s, struct dfkv_slot slot, int cls,
		    void *owner);

u64 dfkv_slot_offset(const struct dfkv_slab *s, struct dfkv_slot slot);
int dfkv_slot_class(const struct dfkv_slab *s, struct dfkv_slot slot);
void *dfkv_slab_owner(struct dfkv_slab *s, struct dfkv_slot slot);

int dfkv_slab_victim_extent(struct dfkv_slab *s, int need_cls, u32 *extent);
void dfkv_slab_undrain(struct dfkv_slab *s, u32 extent);
unsigned int dfkv_slab_extent_owners(struct dfkv_slab *s, u32 extent,
				     u32 *pos, void **owners,
				     unsigned int max);

void dfkv_slab_stats(struct dfkv_slab *s, struct dfkv_slab_stats *st);
int dfkv_slab_class_stats(struct dfkv_slab *s, int cls,
			  struct dfkv_slab_class_stats *st);

#endif /* _DFKV_SLAB_H */
