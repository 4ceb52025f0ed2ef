// SPDX-License-Identifier: GPL-2.0
/*
 * Ketama over disk names (ring.h).  Ties on equal points go to the smaller
 * name, as on the client side (lib/ketama.c), so both ends of the project
 * share one definition of SPEC.md section 1.4.
 */
#include <linux/slab.h>
#include <linux/sort.h>
#include <linux/string.h>
#include <linux/kernel.h>
#include <crypto/hash.h>
#include <crypto/md5.h>

#include "compat.h"
#include "ring.h"
#include "disk.h"

#define POINTS_PER_WEIGHT	40	/* digests per unit of weight */

static int point_cmp(const void *a, const void *b, const void *priv)
{
	const struct dfkv_ring *r = priv;
	const struct dfkv_ring_point *x = a, *y = b;

	if (x->hash != y->hash)
		return x->hash < y->hash ? -1 : 1;
	return strcmp(r->members[x->member]->name,
		      r->members[y->member]->name);
}

struct dfkv_ring *dfkv_ring_build(struct dfkv_disk **disks, u32 n)
{
	struct crypto_shash *md5;
	struct dfkv_ring *r;
	u32 m, i, k, p = 0;
	int err = 0;

	r = kvzalloc(struct_size(r, points, (size_t)n * POINTS_PER_WEIGHT * 4),
		     GFP_KERNEL);
	if (!r)
		return ERR_PTR(-ENOMEM);
	r->members = kcalloc(n ?: 1, sizeof(*r->members), GFP_KERNEL);
	if (!r->members) {
		kvfree(r);
		return ERR_PTR(-ENOMEM);
	}
	md5 = crypto_alloc_shash("md5", 0, 0);
	if (IS_ERR(md5)) {
		kfree(r->members);
		kvfree(r);
		return ERR_CAST(md5);
	}
	for (m = 0; m < n && !err; m++) {
		r->members[m] = disks[m];
		for (i = 0; i < POINTS_PER_WEIGHT && !err; i++) {
			u8 digest[MD5_DIGEST_SIZE];
			char s[DFKV_DISK_NAME_MAX + 16];
			int len = scnprintf(s, sizeof(s), "%s-%u",
					    disks[m]->name, i);

			err = crypto_shash_tfm_digest(md5, s, len, digest);
			for (k = 0; k < 4 && !err; k++) {
				r->points[p].hash =
					get_unaligned_le32(digest + 4 * k);
				r->points[p++].member = m;
			}
		}
	}
	crypto_free_shash(md5);
	if (err) {
		kfree(r->members);
		kvfree(r);
		return ERR_PTR(err);
	}
	r->nr_members = n;
	r->nr_points = p;
	sort_r(r->points, p, sizeof(r->points[0]), point_cmp, NULL, r);
	for (m = 0; m < n; m++)
		dfkv_disk_get(disks[m]);
	return r;
}

void dfkv_ring_free(struct dfkv_ring *r)
{
	u32 m;

	if (!r)
		return;
	for (m = 0; m < r->nr_members; m++)
		dfkv_disk_put(r->members[m]);
	kfree(r->members);
	kvfree(r);
}

struct dfkv_disk *dfkv_ring_lookup(const struct dfkv_ring *r,
				   const u8 *object_id)
{
	u32 probe = get_unaligned_le32(object_id + 4);
	u32 lo = 0, hi;

	if (!r || !r->nr_points)
		return NULL;
	hi = r->nr_points;
	while (lo < hi) {
		u32 mid = lo + (hi - lo) / 2;

		if (r->points[mid].hash < probe)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == r->nr_points)
		lo = 0;
	return r->members[r->points[lo].member];
}
