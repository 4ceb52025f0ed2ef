// SPDX-License-Identifier: GPL-2.0
/*
 * Staging pages of one value (stage.h): an array of order-0 pages, no
 * slab, no arena, used by the store when its RAM arena is full of pinned
 * or dirty slots.
 */
#include <linux/slab.h>
#include <linux/mm.h>
#include <linux/gfp.h>
#include <linux/overflow.h>

#include "stage.h"

struct dfkv_stage *dfkv_stage_alloc(u64 len)
{
	u64 nr = DIV_ROUND_UP_ULL(len, PAGE_SIZE);
	struct dfkv_stage *s;
	u32 i;

	if (!nr || nr > U32_MAX)
		return NULL;
	s = kvzalloc(struct_size(s, pages, nr), GFP_KERNEL_ACCOUNT);
	if (!s)
		return NULL;
	s->len = len;
	for (i = 0; i < nr; i++) {
		s->pages[i] = alloc_page(GFP_KERNEL_ACCOUNT | __GFP_NOWARN);
		if (!s->pages[i]) {
			dfkv_stage_free(s);
			return NULL;
		}
		s->nr_pages = i + 1;
	}
	return s;
}

void dfkv_stage_free(struct dfkv_stage *s)
{
	u32 i;

	if (!s)
		return;
	for (i = 0; i < s->nr_pages; i++)
		__free_page(s->pages[i]);
	kvfree(s);
}

unsigned int dfkv_stage_map(struct dfkv_stage *s, u64 off, size_t len,
			    struct bio_vec *bv, unsigned int max,
			    size_t *mapped)
{
	u64 end = (u64)s->nr_pages << PAGE_SHIFT;
	unsigned int nr = 0;
	size_t done = 0;

	if (off > end || len > end - off)
		len = 0;
	while (done < len && nr < max) {
		u64 pos = off + done;
		size_t in = offset_in_page(pos);
		size_t n = min_t(size_t, len - done, PAGE_SIZE - in);

		bvec_set_page(&bv[nr++], s->pages[pos >> PAGE_SHIFT], n, in);
		done += n;
	}
	*mapped = done;
	return nr;
}
