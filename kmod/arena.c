// SPDX-License-Identifier: GPL-2.0
/*
 * RAM arena of a node: each slab extent is backed by an array of order-0
 * pages allocated when the slab first binds the extent and kept until the
 * node goes away (extents move between size classes without reallocating).
 * They are allocated in runs of up to ARENA_RUN_ORDER where the allocator
 * has them at hand (no retry, no warning: falling back to smaller runs,
 * down to single pages) and split, so most of a value's pages are
 * physically contiguous and a disk bio of it is a few segments, not one
 * per page.  Pages come from one NUMA node, or run by run round-robin
 * from all nodes with memory (the default), so a node's bandwidth is not
 * one memory controller's.
 * The store maps byte ranges to bio_vecs over these pages; copies to and
 * from user buffers and sockets run page by page over those, one copy.
 * The pages are charged to the memory cgroup of the task that created the
 * node, so a budget cannot escape its creator's memory limit.
 * Binding is open to error injection (fail_function): the fault-injection
 * selftest fails it from any task, a TCP worker's PUT included.
 */
#include <linux/error-injection.h>
#include <linux/slab.h>
#include <linux/mm.h>
#include <linux/gfp.h>
#include <linux/overflow.h>
#include <linux/bvec.h>
#include <linux/nodemask.h>
#include <linux/memcontrol.h>
#include <linux/sched/mm.h>
#include <linux/dfkv.h>

#include "arena.h"

/* The largest run: 2 MiB (a huge page's worth), within every MAX_ORDER. */
#define ARENA_RUN_ORDER	(PAGE_SHIFT < 21 ? 21 - PAGE_SHIFT : 0)

int dfkv_arena_init(struct dfkv_arena *a, u64 extent_bytes, u32 nr_extents,
		    u32 numa)
{
	if (numa != DFKV_NUMA_INTERLEAVE &&
	    (numa >= MAX_NUMNODES || !node_state(numa, N_MEMORY)))
		return -EINVAL;
	a->numa = numa;
	atomic_set(&a->next_run, 0);
	a->extent_bytes = extent_bytes;
	a->nr_extents = nr_extents;
	a->pages_per_extent = extent_bytes >> PAGE_SHIFT;
	a->nid_pages = kcalloc(nr_node_ids, sizeof(*a->nid_pages),
			       GFP_KERNEL_ACCOUNT);
	if (!a->nid_pages)
		return -ENOMEM;
	a->pages = kvcalloc(nr_extents, sizeof(*a->pages), GFP_KERNEL_ACCOUNT);
	if (!a->pages) {
		kfree(a->nid_pages);
		a->nid_pages = NULL;
		return -ENOMEM;
	}
	a->memcg = get_mem_cgroup_from_mm(current->mm);
	return 0;
}

/* The NUMA node of the next run: the nodes with memory in turn. */
static int arena_next_nid(struct dfkv_arena *a)
{
	unsigned int n;
	int nid;

	if (a->numa != DFKV_NUMA_INTERLEAVE)
		return a->numa;
	n = (unsigned int)atomic_inc_return(&a->next_run) %
	    num_node_state(N_MEMORY);
	for_each_node_state(nid, N_MEMORY)
		if (!n--)
			return nid;
	return first_memory_node;
}

/*
 * Fill pages[0 .. nr) from one node: runs as long as the allocator gives
 * without trying hard, each split into order-0 pages.
 */
static int arena_alloc_run(struct dfkv_arena *a, struct page **pages, u32 nr)
{
	gfp_t gfp = GFP_KERNEL_ACCOUNT | __GFP_NOWARN |
		    (a->numa == DFKV_NUMA_INTERLEAVE ? 0 : __GFP_THISNODE);
	unsigned int order = min_t(unsigned int, ARENA_RUN_ORDER, ilog2(nr));
	int nid = arena_next_nid(a);
	u32 i = 0, j;

	while (i < nr) {
		struct page *p;

		order = min_t(unsigned int, order, ilog2(nr - i));
		p = alloc_pages_node(nid, gfp | (order ? __GFP_NORETRY : 0),
				     order);
		if (!p) {
			if (!order)
				return -ENOMEM;
			order--;
			continue;
		}
		split_page(p, order);
		for (j = 0; j < 1U << order; j++)
			pages[i++] = p + j;
	}
	return 0;
}

static void arena_free_extent(struct dfkv_arena *a, struct page **pages)
{
	u32 i;

	for (i = 0; i < a->pages_per_extent; i++)
		if (pages[i])
			__free_page(pages[i]);
	kvfree(pages);
}

void dfkv_arena_destroy(struct dfkv_arena *a)
{
	u32 e;

	if (!a->pages)
		return;
	for (e = 0; e < a->nr_extents; e++)
		if (a->pages[e])
			arena_free_extent(a, a->pages[e]);
	kvfree(a->pages);
	a->pages = NULL;
	kfree(a->nid_pages);
	a->nid_pages = NULL;
	mem_cgroup_put(a->memcg);
	a->memcg = NULL;
}

int dfkv_arena_bind(void *ctx, u32 extent, int cls)
{
	struct dfkv_arena *a = ctx;
	struct mem_cgroup *old;
	struct page **pages;
	u32 i, run;
	int err = 0;

	if (extent >= a->nr_extents)
		return -EINVAL;
	/* The slab binds an extent to one class at a time: no race here. */
	if (READ_ONCE(a->pages[extent]))
		return 0;
	old = set_active_memcg(a->memcg);
	pages = kvcalloc(a->pages_per_extent, sizeof(*pages),
			 GFP_KERNEL_ACCOUNT);
	if (!pages) {
		err = -ENOMEM;
		goto out;
	}
	for (i = 0; i < a->pages_per_extent; i += run) {
		run = min_t(u32, a->pages_per_extent - i,
			    1U << ARENA_RUN_ORDER);
		err = arena_alloc_run(a, pages + i, run);
		if (err) {
			arena_free_extent(a, pages);
			goto out;
		}
	}
	for (i = 0; i < a->pages_per_extent; i++)
		atomic_long_inc(&a->nid_pages[page_to_nid(pages[i])]);
	/* Pairs with READ_ONCE above and the readers' slot handles. */
	smp_store_release(&a->pages[extent], pages);
out:
	set_active_memcg(old);
	return err;
}

ALLOW_ERROR_INJECTION(dfkv_arena_bind, ERRNO);

static struct page *arena_page(struct dfkv_arena *a, u64 pos, size_t *off)
{
	u64 extent = div64_u64(pos, a->extent_bytes);
	u64 in = pos - extent * a->extent_bytes;
	/* Pairs with the release in dfkv_arena_bind(). */
	struct page **pages = smp_load_acquire(&a->pages[extent]);

	*off = in & ~PAGE_MASK;
	return pages[in >> PAGE_SHIFT];
}

unsigned int dfkv_arena_map(struct dfkv_arena *a, u64 pos, size_t len,
			    struct bio_vec *bv, unsigned int max,
			    size_t *mapped)
{
	unsigned int nr = 0;
	size_t done = 0;

	while (done < len && nr < max) {
		size_t off, n;
		struct page *p = arena_page(a, pos + done, &off);

		n = min_t(size_t, len - done, PAGE_SIZE - off);
		bvec_set_page(&bv[nr++], p, n, off);
		done += n;
	}
	*mapped = done;
	return nr;
}
