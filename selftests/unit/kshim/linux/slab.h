/* SPDX-License-Identifier: GPL-2.0 */
#ifndef _KSHIM_LINUX_SLAB_H
#define _KSHIM_LINUX_SLAB_H

#include <stdlib.h>
#include <string.h>
#include <linux/types.h>

#define GFP_KERNEL	0u

/* Cache-line aligned, like kmalloc() of the sizes dfkv asks for. */
static inline void *kzalloc(size_t size, gfp_t gfp)
{
	void *p;

	(void)gfp;
	if (posix_memalign(&p, 64, size ? size : 1))
		return NULL;
	memset(p, 0, size);
	return p;
}

static inline void *kcalloc(size_t n, size_t size, gfp_t gfp)
{
	if (size && n > SIZE_MAX / size)
		return NULL;
	return kzalloc(n * size, gfp);
}

#define kvcalloc	kcalloc
#define kvzalloc	kzalloc

static inline void kfree(const void *p)
{
	free((void *)p);
}

#define kvfree	kfree

#endif
