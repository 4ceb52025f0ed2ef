/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Staging pages: transient memory outside a node's RAM arena for one
 * value on its way between a client and a disk when the arena has no
 * slot for it (every slot pinned or dirty): a PUT that takes the
 * synchronous disk path, a cold read served from disk.  The store
 * bounds the staged bytes of a node and frees a stage as soon as its
 * value is durable and no reader holds it.
 */
#ifndef _DFKV_STAGE_H
#define _DFKV_STAGE_H

#include <linux/types.h>
#include <linux/uio.h>
#include <linux/bvec.h>

struct dfkv_stage {
	u64 len;
	u32 nr_pages;
	struct page *pages[];
};

/* Pages for len bytes (sleeps), or NULL. */
struct dfkv_stage *dfkv_stage_alloc(u64 len);
void dfkv_stage_free(struct dfkv_stage *s);
/*
 * Describe up to max pages of [off, off + len) as bio_vecs (len may run
 * into the tail of the last page); *mapped gets the bytes covered.
 */
unsigned int dfkv_stage_map(struct dfkv_stage *s, u64 off, size_t len,
			    struct bio_vec *bv, unsigned int max,
			    size_t *mapped);

#endif /* _DFKV_STAGE_H */
