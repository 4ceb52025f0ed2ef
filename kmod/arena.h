/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The RAM arena: kernel pages behind the extents of a slab allocator.  The
 * slab decides which byte ranges hold which value; the arena owns the
 * pages and describes byte ranges of them as bio_vecs, which the store
 * copies to and from iov_iters and the transports and disks do I/O on.
 */
#ifndef _DFKV_ARENA_H
#define _DFKV_ARENA_H

#include <linux/types.h>
#include <linux/atomic.h>

struct page;
struct bio_vec;
struct mem_cgroup;

struct dfkv_arena {
	u64 extent_bytes;
	u32 nr_extents;
	u32 pages_per_extent;
	u32 numa;		/* a NUMA node, or DFKV_NUMA_INTERLEAVE */
	struct page ***pages;	/* [extent][page], allocated on first bind */
	atomic_long_t *nid_pages; /* [nr_node_ids]: bound pages per NUMA node */
	struct mem_cgroup *memcg; /* charged for what the node allocates */
	atomic_t next_run;	/* interleave: runs allocated so far */
};

/*
 * numa: allocate every page on that NUMA node, or DFKV_NUMA_INTERLEAVE to
 * spread the extents' runs of pages round-robin over the nodes with memory.  The
 * caller's memory cgroup (the node's creator) is charged for the pages,
 * whichever task later binds an extent.
 */
int dfkv_arena_init(struct dfkv_arena *a, u64 extent_bytes, u32 nr_extents,
		    u32 numa);
void dfkv_arena_destroy(struct dfkv_arena *a);
/* Give extent its pages (slab bind callback; may sleep). */
int dfkv_arena_bind(void *ctx, u32 extent, int cls);
/* Pages bound so far that sit on NUMA node nid (nid < nr_node_ids). */
static inline unsigned long dfkv_arena_nid_pages(struct dfkv_arena *a,
						 int nid)
{
	return atomic_long_read(&a->nid_pages[nid]);
}

/*
 * Describe up to max pages of [pos, pos + len) (inside one extent) as
 * bio_vecs, for socket I/O straight to or from the arena; *mapped gets the
 * bytes covered.  Returns the number of bio_vecs used.
 */
unsigned int dfkv_arena_map(struct dfkv_arena *a, u64 pos, size_t len,
			    struct bio_vec *bv, unsigned int max,
			    size_t *mapped);

#endif /* _DFKV_ARENA_H */
