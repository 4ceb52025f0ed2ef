// SPDX-License-Identifier: GPL-2.0
/* Ghosts of dropped keys (see ghost.h): tagged digests in 4-way buckets. */
#include <linux/mm.h>
#include <linux/slab.h>
#include <linux/random.h>

#include "compat.h"
#include "ghost.h"

#define GHOST_CAUSE_MASK	3ULL

static_assert(DFKV_MISS_NR - 1 <= GHOST_CAUSE_MASK);

int dfkv_ghosts_init(struct dfkv_ghosts *g)
{
	g->slots = kvcalloc(DFKV_GHOST_SLOTS, sizeof(*g->slots),
			    GFP_KERNEL_ACCOUNT);
	if (!g->slots)
		return -ENOMEM;
	get_random_bytes(&g->key, sizeof(g->key));
	return 0;
}

void dfkv_ghosts_destroy(struct dfkv_ghosts *g)
{
	kvfree(g->slots);
	g->slots = NULL;
}

static u64 ghost_digest(const struct dfkv_ghosts *g,
			const struct dfkv_key *key)
{
	static_assert(DFKV_OBJECT_ID_LEN == 16);
	return siphash_3u64(key->tenant, get_unaligned_le64(key->id),
			    get_unaligned_le64(key->id + 8), &g->key);
}

/* The bucket of a digest: its top bits (the cause takes the low ones). */
static u64 *ghost_bucket(const struct dfkv_ghosts *g, u64 digest)
{
	return &g->slots[(digest >> (64 - DFKV_GHOST_BUCKETS_SHIFT)) <<
			 DFKV_GHOST_WAYS_SHIFT];
}

/* The way of bucket b holding digest d's ghost (d 0: a free way), or -1. */
static int ghost_way(const u64 *b, u64 d)
{
	int w;

	for (w = 0; w < DFKV_GHOST_WAYS; w++)
		if (!((READ_ONCE(b[w]) ^ d) & ~GHOST_CAUSE_MASK))
			return w;
	return -1;
}

void dfkv_ghost_add(struct dfkv_ghosts *g, const struct dfkv_key *key,
		    enum dfkv_miss_cause cause)
{
	u64 d = ghost_digest(g, key), *b = ghost_bucket(g, d);
	int w = ghost_way(b, d);

	if (w < 0)
		w = ghost_way(b, 0);	/* a free way */
	if (w < 0)
		w = (d >> 2) & (DFKV_GHOST_WAYS - 1);
	WRITE_ONCE(b[w], (d & ~GHOST_CAUSE_MASK) | cause);
}

enum dfkv_miss_cause dfkv_ghost_cause(const struct dfkv_ghosts *g,
				      const struct dfkv_key *key)
{
	u64 d = ghost_digest(g, key), *b = ghost_bucket(g, d);
	int w = ghost_way(b, d);

	/* a way rewritten meanwhile only moves this miss between causes */
	return w < 0 ? DFKV_MISS_NEVER_STORED : READ_ONCE(b[w]) & GHOST_CAUSE_MASK;
}
