// SPDX-License-Identifier: GPL-2.0
/*
 * dfkv slab allocator.  This file owns the carving of one medium (the RAM
 * arena of a node, later each disk) into size-class slots: the size-class
 * lattice, the binding of fixed-size extents to classes, per-extent slot
 * bitmaps and owner pointers, the free-extent pool, victim-extent choice for
 * rebalancing between classes, slot claims during a disk rebuild, and the
 * occupancy and waste figures.  It knows nothing about pages, bios, entries
 * or recency: the medium reacts to bind/unbind through struct dfkv_slab_ops
 * and the store decides what to evict.
 *
 * Size classes.  A geometric candidate sequence starts at 4 KiB and grows by
 * 1.25x, each step rounded up to 4 KiB.  Each candidate is then widened to
 * the largest 4 KiB multiple that still fits as many slots in an extent
 * (extent_bytes / slots, rounded down), so no class is smaller than another
 * with the same slots per extent; duplicates are dropped.  The last class is
 * extent_bytes (one slot per extent).  Any value of len bytes therefore lands
 * in a class whose extent footprint, extent_bytes / slots_per_extent, is no
 * larger than that of a slot of round_up(len * 1.25, 4 KiB).  Waste is
 * reported: free slots of bound extents plus each extent's tail
 * (extent_bytes % class size).  DFKV_SLAB_LATTICE_VERSION names this rule.
 *
 * Extent life cycle: FREE (on the pool) -> BINDING (arrays allocated and
 * ops->bind called, on no list) -> ACTIVE (on its class's partial or full
 * list) <-> DRAINING (chosen as a victim: on the class's drain list, no
 * new slot is handed out from it) -> UNBINDING (its last slot was freed:
 * ops->unbind called, arrays freed, on no list) -> FREE.
 *
 * Locking.  There is no allocator-wide lock on a data path.
 *  - Each class has a spinlock, c->lock.  It protects the class's lists and
 *    counters and, for every extent whose cls is that class and whose state
 *    is ACTIVE or DRAINING, the extent's bitmap, owners, used and hint, and
 *    the state moves BINDING -> ACTIVE <-> DRAINING -> UNBINDING.
 *  - s->pool_lock protects the pool, nr_free and the moves FREE -> BINDING
 *    (taken nested in the binding class's lock) and BINDING/UNBINDING ->
 *    FREE.  Lock order: a class lock, then the pool lock; never two class
 *    locks at once.
 *  - An extent in BINDING or UNBINDING is on no list and is touched only by
 *    the task that moved it there, which calls kvcalloc()/kvfree() and the
 *    medium's ops with no lock held, so bind and unbind may sleep and may
 *    recurse into reclaim that frees slots.
 *  - An extent's cls cannot change while one of its slots is allocated, so
 *    functions given a live slot read it without a lock and then take that
 *    class's lock; under c->lock, e->cls == c is stable.
 * Context: dfkv_slab_alloc(), dfkv_slab_free() (it may unbind an extent),
 * dfkv_slab_claim(), dfkv_slab_init() and dfkv_slab_destroy() may sleep and
 * need process context.  The other functions do not sleep and may run in
 * atomic process context (under rcu_read_lock() or another lock), but no
 * function may run in softirq or hardirq context: the locks are plain
 * spinlocks.
 */

#include <linux/bitmap.h>
#include <linux/bug.h>
#include <linux/errno.h>
#include <linux/jiffies.h>
#include <linux/kernel.h>
#include <linux/list.h>
#include <linux/log2.h>
#include <linux/math64.h>
#include <linux/sched.h>
#include <linux/slab.h>
#include <linux/spinlock.h>
#include <linux/string.h>
#include <linux/wait_bit.h>

#include "slab.h"

enum dfkv_slab_extent_state {
	DFKV_EXT_FREE,
	DFKV_EXT_BINDING,
	DFKV_EXT_ACTIVE,
	DFKV_EXT_DRAINING,
	DFKV_EXT_UNBINDING,
};

struct dfkv_slab_extent {
	struct list_head node;	/* pool, or class partial/full/drain */
	unsigned long *map;	/* used slots, slots_per_extent bits */
	void **owners;		/* per slot, NULL when free */
	u32 used;
	u32 hint;		/* every slot below hint is used */
	int cls;		/* -1 when FREE */
	int state;		/* enum dfkv_slab_extent_state */
};

struct dfkv_slab_class {
	/* protects everything below and this class's bound extents */
	spinlock_t lock;
	struct list_head partial;	/* ACTIVE, some slot free */
	struct list_head full;		/* ACTIVE, no slot free */
	struct list_head drain;		/* DRAINING */
	u64 size;			/* immutable after init */
	u32 slots_per_extent;		/* immutable after init */
	u32 extents;			/* ACTIVE + DRAINING */
	u32 draining;
	u32 binding;			/* tasks binding an extent for us */
	u64 used;			/* used slots */
	unsigned long stamp;		/* jiffies of the last allocation */
} ____cacheline_aligned_in_smp;

/*
 * Computes the lattice for extent_bytes; fills sizes into @classes when not
 * NULL.  Returns the number of classes.
 */
static int slab_lattice(u64 extent_bytes, struct dfkv_slab_class *classes)
{
	u64 cand = DFKV_SLAB_ALIGN, prev = 0;
	int n = 0;

	while (prev < extent_bytes) {
		u64 size = min(cand, extent_bytes);
		u64 slots = div64_u64(extent_bytes, size);

		size = round_down(div64_u64(extent_bytes, slots),
				  DFKV_SLAB_ALIGN);
		if (size > prev) {
			if (classes) {
				classes[n].size = size;
				classes[n].slots_per_extent = slots;
			}
			n++;
			prev = size;
		}
		cand = round_up(cand + cand / 4, DFKV_SLAB_ALIGN);
	}
	return n;
}

static u32 slab_extent_nr(const struct dfkv_slab *s,
			  const struct dfkv_slab_extent *e)
{
	return e - s->extents;
}

static bool slab_extent_live(const struct dfkv_slab_extent *e)
{
	return e->state == DFKV_EXT_ACTIVE || e->state == DFKV_EXT_DRAINING;
}

/**
 * dfkv_slab_init() - set up an allocator for a medium
 * @s: the allocator
 * @extent_bytes: extent size, a power of two from 64 KiB to 1 GiB
 * @nr_extents: extents in the medium (at least one)
 * @ops: medium callbacks, or NULL
 * @ops_ctx: first argument of the callbacks
 *
 * Every extent starts free.  Return: 0, -EINVAL or -ENOMEM.
 */
int dfkv_slab_init(struct dfkv_slab *s, u64 extent_bytes, u32 nr_extents,
		   const struct dfkv_slab_ops *ops, void *ops_ctx)
{
	u32 i;
	int n;

	memset(s, 0, sizeof(*s));
	if (!nr_extents || !is_power_of_2(extent_bytes) ||
	    extent_bytes < BIT_ULL(DFKV_SLAB_MIN_EXTENT_SHIFT) ||
	    extent_bytes > BIT_ULL(DFKV_SLAB_MAX_EXTENT_SHIFT))
		return -EINVAL;
	n = slab_lattice(extent_bytes, NULL);
	if (WARN_ON(n > DFKV_SLAB_MAX_CLASSES))
		return -EINVAL;

	s->classes = kcalloc(n, sizeof(*s->classes), GFP_KERNEL);
	if (!s->classes)
		return -ENOMEM;
	s->extents = kvcalloc(nr_extents, sizeof(*s->extents), GFP_KERNEL);
	if (!s->extents) {
		kfree(s->classes);
		s->classes = NULL;
		return -ENOMEM;
	}

	s->extent_bytes = extent_bytes;
	s->extent_shift = ilog2(extent_bytes);
	s->nr_extents = nr_extents;
	s->nr_classes = n;
	s->ops = ops;
	s->ops_ctx = ops_ctx;
	spin_lock_init(&s->pool_lock);
	INIT_LIST_HEAD(&s->pool);

	slab_lattice(extent_bytes, s->classes);
	for (n = 0; n < s->nr_classes; n++) {
		struct dfkv_slab_class *c = &s->classes[n];

		spin_lock_init(&c->lock);
		INIT_LIST_HEAD(&c->partial);
		INIT_LIST_HEAD(&c->full);
		INIT_LIST_HEAD(&c->drain);
		c->stamp = jiffies;
	}
	for (i = 0; i < nr_extents; i++) {
		struct dfkv_slab_extent *e = &s->extents[i];

		e->cls = -1;
		e->state = DFKV_EXT_FREE;
		list_add_tail(&e->node, &s->pool);
	}
	s->nr_free = nr_extents;
	return 0;
}

static void slab_extent_release(struct dfkv_slab_extent *e)
{
	kvfree(e->map);
	kvfree(e->owners);
	e->map = NULL;
	e->owners = NULL;
}

/**
 * dfkv_slab_destroy() - tear down an allocator
 * @s: the allocator; every slot must have been freed
 *
 * Warns once about a slot still allocated, and still unbinds its extent.
 */
void dfkv_slab_destroy(struct dfkv_slab *s)
{
	bool warned = false;
	u32 i;

	might_sleep();
	if (!s->extents)
		return;
	for (i = 0; i < s->nr_extents; i++) {
		struct dfkv_slab_extent *e = &s->extents[i];

		if (e->state == DFKV_EXT_FREE)
			continue;
		if (!warned) {
			WARN(1, "dfkv: slab destroyed with extent %u in use\n",
			     i);
			warned = true;
		}
		if (slab_extent_live(e) && s->ops && s->ops->unbind)
			s->ops->unbind(s->ops_ctx, i);
		slab_extent_release(e);
	}
	kvfree(s->extents);
	kfree(s->classes);
	s->extents = NULL;
	s->classes = NULL;
}

/**
 * dfkv_slab_class() - size class of a value
 * @s: the allocator
 * @len: value length in bytes
 *
 * Return: the smallest class whose slots hold @len bytes, -EINVAL for 0 or
 * -E2BIG above extent_bytes.
 */
int dfkv_slab_class(const struct dfkv_slab *s, u64 len)
{
	int lo = 0, hi = s->nr_classes - 1;

	if (!len)
		return -EINVAL;
	if (len > s->extent_bytes)
		return -E2BIG;
	while (lo < hi) {
		int mid = lo + (hi - lo) / 2;

		if (s->classes[mid].size >= len)
			hi = mid;
		else
			lo = mid + 1;
	}
	return lo;
}

/* Slot size of @cls in bytes, 0 when @cls is out of range. */
u64 dfkv_slab_class_size(const struct dfkv_slab *s, int cls)
{
	if (cls < 0 || cls >= s->nr_classes)
		return 0;
	return s->classes[cls].size;
}

/* Slots in one extent of @cls, 0 when @cls is out of range. */
u32 dfkv_slab_slots_per_extent(const struct dfkv_slab *s, int cls)
{
	if (cls < 0 || cls >= s->nr_classes)
		return 0;
	return s->classes[cls].slots_per_extent;
}

/* Takes a free extent off the pool for @cls.  Called under c->lock. */
static struct dfkv_slab_extent *slab_pool_take(struct dfkv_slab *s, int cls)
{
	struct dfkv_slab_extent *e;

	spin_lock(&s->pool_lock);
	e = list_first_entry_or_null(&s->pool, struct dfkv_slab_extent, node);
	if (e) {
		list_del_init(&e->node);
		s->nr_free--;
		WRITE_ONCE(e->cls, cls);
		WRITE_ONCE(e->state, DFKV_EXT_BINDING);
	}
	spin_unlock(&s->pool_lock);
	return e;
}

static void slab_pool_put(struct dfkv_slab *s, struct dfkv_slab_extent *e)
{
	spin_lock(&s->pool_lock);
	WRITE_ONCE(e->cls, -1);
	WRITE_ONCE(e->state, DFKV_EXT_FREE);
	list_add(&e->node, &s->pool);
	s->nr_free++;
	spin_unlock(&s->pool_lock);
}

/* Readies a BINDING extent for @cls; no lock held, may sleep. */
static int slab_bind(struct dfkv_slab *s, struct dfkv_slab_extent *e, int cls)
{
	u32 slots = s->classes[cls].slots_per_extent;
	int err;

	e->map = kvcalloc(BITS_TO_LONGS(slots), sizeof(unsigned long),
			  GFP_KERNEL);
	e->owners = kvcalloc(slots, sizeof(void *), GFP_KERNEL);
	if (!e->map || !e->owners) {
		err = -ENOMEM;
		goto fail;
	}
	e->used = 0;
	e->hint = 0;
	if (s->ops && s->ops->bind) {
		err = s->ops->bind(s->ops_ctx, slab_extent_nr(s, e), cls);
		if (err)
			goto fail;
	}
	return 0;
fail:
	slab_extent_release(e);
	return err;
}

/* Returns an UNBINDING extent to the pool; no lock held, may sleep. */
static void slab_unbind(struct dfkv_slab *s, struct dfkv_slab_extent *e)
{
	if (s->ops && s->ops->unbind)
		s->ops->unbind(s->ops_ctx, slab_extent_nr(s, e));
	slab_extent_release(e);
	slab_pool_put(s, e);
}

/* Makes a freshly bound extent ACTIVE in @c.  Called under c->lock. */
static void slab_install(struct dfkv_slab_class *c, struct dfkv_slab_extent *e)
{
	WRITE_ONCE(e->state, DFKV_EXT_ACTIVE);
	list_add(&e->node, &c->partial);
	WRITE_ONCE(c->extents, c->extents + 1);
}

/* Marks slot @idx of @e used by @owner.  Called under c->lock. */
static void slab_use(struct dfkv_slab_class *c, struct dfkv_slab_extent *e,
		     u32 idx, void *owner)
{
	__set_bit(idx, e->map);
	e->owners[idx] = owner;
	e->used++;
	c->used++;
	if (idx == e->hint)
		e->hint = idx + 1;
	if (e->used == c->slots_per_extent && e->state == DFKV_EXT_ACTIVE)
		list_move(&e->node, &c->full);
}

/* Hands out the first free slot of a partial extent of @c, under c->lock. */
static bool slab_take(struct dfkv_slab *s, struct dfkv_slab_class *c,
		      void *owner, struct dfkv_slot *out)
{
	struct dfkv_slab_extent *e;
	u32 idx;

	e = list_first_entry_or_null(&c->partial, struct dfkv_slab_extent,
				     node);
	if (!e)
		return false;
	idx = find_next_zero_bit(e->map, c->slots_per_extent, e->hint);
	if (WARN_ON_ONCE(idx >= c->slots_per_extent)) {
		list_move(&e->node, &c->full);
		return false;
	}
	e->hint = idx;	/* every slot before idx is used */
	slab_use(c, e, idx, owner);
	WRITE_ONCE(c->stamp, jiffies);
	out->extent = slab_extent_nr(s, e);
	out->index = idx;
	return true;
}

/* A bind for @c is over; wakes allocators waiting for it when it was last. */
static void slab_binding_done(struct dfkv_slab_class *c)
{
	u32 binding;

	spin_lock(&c->lock);
	binding = c->binding - 1;
	WRITE_ONCE(c->binding, binding);
	spin_unlock(&c->lock);
	if (!binding) {
		smp_mb(); /* binding store before waitqueue check */
		wake_up_var(&c->binding);
	}
}

/**
 * dfkv_slab_alloc() - allocate a slot for a value
 * @s: the allocator
 * @len: value length in bytes
 * @owner: pointer kept with the slot (dfkv_slab_owner(), extent owners)
 * @out: the slot
 *
 * Takes a slot from a partial extent of the class, else binds a free extent
 * to the class.  Process context; may sleep.
 *
 * Return: 0; -EINVAL or -E2BIG for @len; -ENOSPC when the class has no free
 * slot and no extent is free; -ENOMEM or the error of ops->bind.
 */
int dfkv_slab_alloc(struct dfkv_slab *s, u64 len, void *owner,
		    struct dfkv_slot *out)
{
	struct dfkv_slab_extent *e;
	struct dfkv_slab_class *c;
	bool taken;
	u32 binding;
	int cls, err;

	might_sleep();
	cls = dfkv_slab_class(s, len);
	if (cls < 0)
		return cls;
	c = &s->classes[cls];

	for (;;) {
		e = NULL;
		spin_lock(&c->lock);
		taken = slab_take(s, c, owner, out);
		if (!taken) {
			e = slab_pool_take(s, cls);
			if (e)
				WRITE_ONCE(c->binding, c->binding + 1);
		}
		binding = c->binding;
		spin_unlock(&c->lock);
		if (taken)
			return 0;
		if (e)
			break;
		if (!binding)
			return -ENOSPC;
		/* another task is binding an extent to this class: use it */
		wait_var_event(&c->binding, !READ_ONCE(c->binding));
	}

	err = slab_bind(s, e, cls);
	if (!err) {
		spin_lock(&c->lock);
		slab_install(c, e);
		slab_take(s, c, owner, out);
		spin_unlock(&c->lock);
	} else {
		slab_pool_put(s, e);
	}
	slab_binding_done(c);
	return err;
}

/*
 * The class an extent is bound to, read without a lock (see the locking
 * rules), or NULL when the extent is out of range or free.
 */
static struct dfkv_slab_class *slab_extent_class(struct dfkv_slab *s,
						 u32 extent,
						 struct dfkv_slab_extent **ep)
{
	struct dfkv_slab_extent *e;
	int cls;

	if (extent >= s->nr_extents)
		return NULL;
	e = &s->extents[extent];
	cls = READ_ONCE(e->cls);
	if (cls < 0 || cls >= s->nr_classes)
		return NULL;
	*ep = e;
	return &s->classes[cls];
}

/* Whether @e is still bound to @c and usable.  Under c->lock. */
static bool slab_extent_bound(struct dfkv_slab *s, struct dfkv_slab_class *c,
			      struct dfkv_slab_extent *e)
{
	return e->cls == c - s->classes && slab_extent_live(e);
}

/* Whether slot @idx of @e is allocated in @c.  Under c->lock. */
static bool slab_slot_used(struct dfkv_slab *s, struct dfkv_slab_class *c,
			   struct dfkv_slab_extent *e, u32 idx)
{
	return slab_extent_bound(s, c, e) && idx < c->slots_per_extent &&
	       test_bit(idx, e->map);
}

/**
 * dfkv_slab_free() - free a slot
 * @s: the allocator
 * @slot: a slot from dfkv_slab_alloc() or dfkv_slab_claim()
 *
 * When it was the extent's last used slot, the extent is unbound
 * (ops->unbind) and returns to the pool at once.  Process context; may
 * sleep.  Freeing a slot that is not allocated warns and does nothing.
 */
void dfkv_slab_free(struct dfkv_slab *s, struct dfkv_slot slot)
{
	struct dfkv_slab_extent *e;
	struct dfkv_slab_class *c;
	bool unbind = false;

	might_sleep();
	c = slab_extent_class(s, slot.extent, &e);
	if (WARN_ON_ONCE(!c))
		return;
	spin_lock(&c->lock);
	if (WARN_ON_ONCE(!slab_slot_used(s, c, e, slot.index))) {
		spin_unlock(&c->lock);
		return;
	}
	__clear_bit(slot.index, e->map);
	e->owners[slot.index] = NULL;
	e->used--;
	c->used--;
	e->hint = min(e->hint, slot.index);
	if (!e->used) {
		if (e->state == DFKV_EXT_DRAINING)
			WRITE_ONCE(c->draining, c->draining - 1);
		list_del_init(&e->node);
		WRITE_ONCE(e->state, DFKV_EXT_UNBINDING);
		WRITE_ONCE(c->extents, c->extents - 1);
		unbind = true;
	} else if (e->state == DFKV_EXT_ACTIVE &&
		   e->used == c->slots_per_extent - 1) {
		list_move_tail(&e->node, &c->partial);
	}
	spin_unlock(&c->lock);
	if (unbind)
		slab_unbind(s, e);
}

/* Claims slot @idx of @e, already bound (@same: to @c).  Under c->lock. */
static int slab_claim_bound(struct dfkv_slab_class *c,
			    struct dfkv_slab_extent *e, int state, bool same,
			    u32 idx, void *owner)
{
	if (!same)
		return -EEXIST;
	if (state != DFKV_EXT_ACTIVE && state != DFKV_EXT_DRAINING)
		return -EBUSY;
	if (test_bit(idx, e->map))
		return -EEXIST;
	slab_use(c, e, idx, owner);
	WRITE_ONCE(c->stamp, jiffies);
	return 0;
}

/**
 * dfkv_slab_claim() - mark a given slot used (disk rebuild)
 * @s: the allocator
 * @slot: the slot
 * @cls: its class, as recorded on the medium
 * @owner: pointer kept with the slot
 *
 * Binds the extent to @cls (ops->bind) when it is free.  Process context;
 * may sleep.
 *
 * Return: 0; -EINVAL when @cls, the extent or the index is out of range;
 * -EEXIST when the extent is bound to another class or the slot is taken;
 * -EBUSY when the extent is being bound or unbound by another task;
 * -ENOMEM or the error of ops->bind.
 */
int dfkv_slab_claim(struct dfkv_slab *s, struct dfkv_slot slot, int cls,
		    void *owner)
{
	struct dfkv_slab_extent *e;
	struct dfkv_slab_class *c;
	int err, state, ecls;

	might_sleep();
	if (cls < 0 || cls >= s->nr_classes || slot.extent >= s->nr_extents)
		return -EINVAL;
	c = &s->classes[cls];
	if (slot.index >= c->slots_per_extent)
		return -EINVAL;
	e = &s->extents[slot.extent];

	spin_lock(&c->lock);
	spin_lock(&s->pool_lock);
	state = READ_ONCE(e->state);
	ecls = READ_ONCE(e->cls);
	if (state == DFKV_EXT_FREE) {
		list_del_init(&e->node);
		s->nr_free--;
		WRITE_ONCE(e->cls, cls);
		WRITE_ONCE(e->state, DFKV_EXT_BINDING);
		WRITE_ONCE(c->binding, c->binding + 1);
	}
	spin_unlock(&s->pool_lock);
	if (state != DFKV_EXT_FREE) {
		err = slab_claim_bound(c, e, state, ecls == cls, slot.index,
				       owner);
		spin_unlock(&c->lock);
		return err;
	}
	spin_unlock(&c->lock);

	err = slab_bind(s, e, cls);
	if (!err) {
		spin_lock(&c->lock);
		slab_install(c, e);
		slab_use(c, e, slot.index, owner);
		WRITE_ONCE(c->stamp, jiffies);
		spin_unlock(&c->lock);
	} else {
		slab_pool_put(s, e);
	}
	slab_binding_done(c);
	return err;
}

/* Class of a live slot's extent, -EINVAL when the extent is unbound. */
int dfkv_slot_class(const struct dfkv_slab *s, struct dfkv_slot slot)
{
	int cls;

	if (slot.extent >= s->nr_extents)
		return -EINVAL;
	cls = READ_ONCE(s->extents[slot.extent].cls);
	return cls < 0 ? -EINVAL : cls;
}

/**
 * dfkv_slot_offset() - byte offset of a live slot in the medium
 * @s: the allocator
 * @slot: an allocated slot
 *
 * Return: extent * extent_bytes + index * class size.
 */
u64 dfkv_slot_offset(const struct dfkv_slab *s, struct dfkv_slot slot)
{
	int cls = dfkv_slot_class(s, slot);

	if (WARN_ON_ONCE(cls < 0))
		return 0;
	return ((u64)slot.extent << s->extent_shift) +
	       (u64)slot.index * s->classes[cls].size;
}

/* The owner given when @slot was allocated; NULL when it is not. */
void *dfkv_slab_owner(struct dfkv_slab *s, struct dfkv_slot slot)
{
	struct dfkv_slab_extent *e;
	struct dfkv_slab_class *c;
	void *owner = NULL;

	c = slab_extent_class(s, slot.extent, &e);
	if (!c)
		return NULL;
	spin_lock(&c->lock);
	if (slab_slot_used(s, c, e, slot.index))
		owner = e->owners[slot.index];
	spin_unlock(&c->lock);
	return owner;
}

/* The ACTIVE extent of @c with the fewest used slots.  Under c->lock. */
static struct dfkv_slab_extent *slab_emptiest(struct dfkv_slab_class *c)
{
	struct dfkv_slab_extent *e, *best = NULL;

	list_for_each_entry(e, &c->partial, node)
		if (!best || e->used < best->used)
			best = e;
	if (!best)
		best = list_first_entry_or_null(&c->full,
						struct dfkv_slab_extent, node);
	return best;
}

/**
 * dfkv_slab_victim_extent() - choose an extent to empty for another class
 * @s: the allocator
 * @need_cls: the class that needs an extent (excluded), or -1 for none
 * @extent: the chosen extent
 *
 * Picks the class other than @need_cls with the least recent allocation
 * that has an ACTIVE extent (ties: the class with more extents), and in it
 * the extent with the fewest used slots.  That extent becomes DRAINING: no
 * new slot is handed out from it, so once the caller has freed the slots of
 * its owners (dfkv_slab_extent_owners()) it returns to the pool and any
 * class can bind it.  A caller that cannot empty it may hand it back with
 * dfkv_slab_undrain(); otherwise it is reused when its slots are freed.
 *
 * Return: 0, -EINVAL for a bad @need_cls, or -ENOENT when no other class
 * has an extent to give.
 */
int dfkv_slab_victim_extent(struct dfkv_slab *s, int need_cls, u32 *extent)
{
	DECLARE_BITMAP(skip, DFKV_SLAB_MAX_CLASSES);
	struct dfkv_slab_extent *e;
	int i;

	if (need_cls >= s->nr_classes)
		return -EINVAL;
	bitmap_zero(skip, DFKV_SLAB_MAX_CLASSES);
	if (need_cls >= 0)
		__set_bit(need_cls, skip);

	for (;;) {
		struct dfkv_slab_class *best = NULL;
		unsigned long best_stamp = 0;
		u32 best_active = 0;
		int best_cls = -1;

		for (i = 0; i < s->nr_classes; i++) {
			struct dfkv_slab_class *c = &s->classes[i];
			u32 ext = READ_ONCE(c->extents);
			u32 drain = READ_ONCE(c->draining);
			unsigned long stamp = READ_ONCE(c->stamp);

			if (test_bit(i, skip) || ext <= drain)
				continue;
			if (!best || time_before(stamp, best_stamp) ||
			    (stamp == best_stamp && ext - drain > best_active)) {
				best = c;
				best_cls = i;
				best_stamp = stamp;
				best_active = ext - drain;
			}
		}
		if (!best)
			return -ENOENT;

		spin_lock(&best->lock);
		e = slab_emptiest(best);
		if (e) {
			list_move_tail(&e->node, &best->drain);
			WRITE_ONCE(e->state, DFKV_EXT_DRAINING);
			WRITE_ONCE(best->draining, best->draining + 1);
			*extent = slab_extent_nr(s, e);
		}
		spin_unlock(&best->lock);
		if (e)
			return 0;
		__set_bit(best_cls, skip);
	}
}

/**
 * dfkv_slab_undrain() - hand a victim extent back to its class
 * @s: the allocator
 * @extent: an extent named by dfkv_slab_victim_extent()
 *
 * Its free slots serve allocations again.  Nothing happens when the extent
 * is no longer DRAINING (it emptied and was unbound meanwhile).
 */
void dfkv_slab_undrain(struct dfkv_slab *s, u32 extent)
{
	struct dfkv_slab_extent *e;
	struct dfkv_slab_class *c;

	if (WARN_ON_ONCE(extent >= s->nr_extents))
		return;
	c = slab_extent_class(s, extent, &e);
	if (!c)
		return;
	spin_lock(&c->lock);
	if (slab_extent_bound(s, c, e) && e->state == DFKV_EXT_DRAINING) {
		WRITE_ONCE(e->state, DFKV_EXT_ACTIVE);
		WRITE_ONCE(c->draining, c->draining - 1);
		if (e->used == c->slots_per_extent)
			list_move(&e->node, &c->full);
		else
			list_move_tail(&e->node, &c->partial);
	}
	spin_unlock(&c->lock);
}

/**
 * dfkv_slab_extent_owners() - list the owners of an extent's used slots
 * @s: the allocator
 * @extent: the extent
 * @pos: cursor, a slot index: start at 0; advanced past the last returned
 * @owners: array filled with owners in slot order
 * @max: its length
 *
 * A snapshot: owners may free their slots once the class lock is dropped,
 * so the caller must be able to validate each pointer (e.g. entries freed
 * after an RCU grace period, read under rcu_read_lock() and taken with
 * kref_get_unless_zero()).  Does not sleep.
 *
 * Return: the number of owners stored; 0 when the extent is not bound or no
 * used slot is left at or after *@pos.
 */
unsigned int dfkv_slab_extent_owners(struct dfkv_slab *s, u32 extent,
				     u32 *pos, void **owners,
				     unsigned int max)
{
	struct dfkv_slab_extent *e;
	struct dfkv_slab_class *c;
	unsigned int n = 0;
	unsigned long i;

	c = slab_extent_class(s, extent, &e);
	if (!c || !max)
		return 0;
	spin_lock(&c->lock);
	if (slab_extent_bound(s, c, e)) {
		i = *pos;
		for (i = find_next_bit(e->map, c->slots_per_extent, i);
		     i < c->slots_per_extent;
		     i = find_next_bit(e->map, c->slots_per_extent, i + 1)) {
			if (n == max)
				break;
			owners[n++] = e->owners[i];
		}
		*pos = min_t(unsigned long, i, c->slots_per_extent);
	}
	spin_unlock(&c->lock);
	return n;
}

/**
 * dfkv_slab_class_stats() - occupancy of one class
 * @s: the allocator
 * @cls: the class
 * @st: filled in
 *
 * Return: 0 or -EINVAL for a bad @cls.
 */
int dfkv_slab_class_stats(struct dfkv_slab *s, int cls,
			  struct dfkv_slab_class_stats *st)
{
	struct dfkv_slab_class *c;

	if (cls < 0 || cls >= s->nr_classes)
		return -EINVAL;
	c = &s->classes[cls];
	memset(st, 0, sizeof(*st));
	st->size = c->size;
	st->slots_per_extent = c->slots_per_extent;
	st->tail_bytes = s->extent_bytes - c->size * c->slots_per_extent;
	spin_lock(&c->lock);
	st->extents = c->extents;
	st->extents_draining = c->draining;
	st->slots_used = c->used;
	spin_unlock(&c->lock);
	st->slots_total = (u64)st->extents * c->slots_per_extent;
	return 0;
}

/**
 * dfkv_slab_stats() - occupancy and waste of the whole medium
 * @s: the allocator
 * @st: filled in; extents being bound or unbound count as neither bound
 *      nor free
 */
void dfkv_slab_stats(struct dfkv_slab *s, struct dfkv_slab_stats *st)
{
	struct dfkv_slab_class_stats cs;
	int i;

	memset(st, 0, sizeof(*st));
	st->extent_bytes = s->extent_bytes;
	st->nr_extents = s->nr_extents;
	st->nr_classes = s->nr_classes;
	for (i = 0; i < s->nr_classes; i++) {
		dfkv_slab_class_stats(s, i, &cs);
		st->extents_bound += cs.extents;
		st->extents_draining += cs.extents_draining;
		st->slot_bytes_used += cs.slots_used * cs.size;
		st->tail_bytes += (u64)cs.extents * cs.tail_bytes;
	}
	spin_lock(&s->pool_lock);
	st->extents_free = s->nr_free;
	spin_unlock(&s->pool_lock);
	st->bound_bytes = (u64)st->extents_bound << s->extent_shift;
	st->waste_bytes = st->bound_bytes - st->slot_bytes_used;
}
