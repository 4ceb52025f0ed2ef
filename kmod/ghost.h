/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Ghosts: a node's bounded memory of the keys recently dropped from its
 * store, so a GET that misses can say why (enum dfkv_miss_cause).  A
 * fixed table of DFKV_GHOST_SLOTS words in buckets of DFKV_GHOST_WAYS,
 * allocated with the store; a dropped key's keyed digest, tagged with
 * the cause, goes into the bucket its digest picks: over its own ghost,
 * else into a free way, else over the way its digest names.  No lock and
 * no allocation: slots are read and written with READ_ONCE/WRITE_ONCE,
 * and a race only moves one miss between causes, which are a statistic.
 * Beyond the bound the causes are best-effort: a key whose ghost was
 * overwritten by later drops counts as never stored
 * (Documentation/store.md, "Miss causes").
 */
#ifndef _DFKV_GHOST_H
#define _DFKV_GHOST_H

#include <linux/bits.h>
#include <linux/siphash.h>
#include <linux/dfkv.h>

#define DFKV_GHOST_WAYS_SHIFT	2
#define DFKV_GHOST_WAYS		BIT(DFKV_GHOST_WAYS_SHIFT)	/* 32 bytes */
#define DFKV_GHOST_BUCKETS_SHIFT	14
#define DFKV_GHOST_SLOTS \
	BIT(DFKV_GHOST_BUCKETS_SHIFT + DFKV_GHOST_WAYS_SHIFT)	/* 512 KiB */

/* Why a GET found nothing; the low bits of a ghost slot. */
enum dfkv_miss_cause {
	DFKV_MISS_NEVER_STORED,	/* no ghost: never stored, or forgotten */
	DFKV_MISS_EVICTED,	/* pushed out by capacity (RAM or disk) */
	DFKV_MISS_REMOVED,	/* REMOVEd by a client */
	DFKV_MISS_NR
};

struct dfkv_ghosts {
	u64 *slots;		/* digest with its low two bits the cause */
	siphash_key_t key;	/* random per node: digests are not chosen */
};

int dfkv_ghosts_init(struct dfkv_ghosts *g);
void dfkv_ghosts_destroy(struct dfkv_ghosts *g);
/* key was dropped from the store for cause (EVICTED or REMOVED). */
void dfkv_ghost_add(struct dfkv_ghosts *g, const struct dfkv_key *key,
		    enum dfkv_miss_cause cause);
/* Why a GET of key found nothing. */
enum dfkv_miss_cause dfkv_ghost_cause(const struct dfkv_ghosts *g,
				      const struct dfkv_key *key);

#endif /* _DFKV_GHOST_H */
