// SPDX-License-Identifier: (GPL-2.0 WITH Linux-syscall-note) OR MIT
/*
 * libdfkv Ketama ring (SPEC.md 1.4): consistent hashing of object ids over
 * named, weighted members.  The same ring routes blocks to nodes (probe at
 * object_id[0..4]) and, inside a node, to disks (probe at object_id[4..8]).
 * Members are identified by name only, so an address change moves nothing.
 */
#include <stdio.h>

#include "util.h"

#define POINTS_PER_WEIGHT	40	/* digests per unit of weight */

struct ring_point {
	uint32_t value;
	uint32_t rank;		/* the member's position in name order */
	uint32_t member;
};

struct dfkv_ring {
	size_t nmembers;
	char (*names)[DFKV_NODE_NAME_MAX];
	size_t npoints;
	struct ring_point *points;	/* ascending, unique values */
};

static int cmp_point(const void *a, const void *b)
{
	const struct ring_point *x = a, *y = b;

	if (x->value != y->value)
		return x->value < y->value ? -1 : 1;
	return x->rank < y->rank ? -1 : x->rank > y->rank;
}

struct name_idx {
	const char *name;
	uint32_t idx;
};

static int cmp_name(const void *a, const void *b)
{
	return strcmp(((const struct name_idx *)a)->name,
		      ((const struct name_idx *)b)->name);
}

DFKV_API void dfkv_ring_free(struct dfkv_ring *r)
{
	if (!r)
		return;
	free(r->names);
	free(r->points);
	free(r);
}

/* Rank members by name (bytewise); equal neighbours are duplicates. */
static int rank_names(const struct dfkv_ring *r, uint32_t *rank)
{
	struct name_idx *v = calloc(r->nmembers, sizeof(*v));
	int err = 0;

	if (!v)
		return DFKV_E_NOMEM;
	for (size_t i = 0; i < r->nmembers; i++)
		v[i] = (struct name_idx){ r->names[i], (uint32_t)i };
	qsort(v, r->nmembers, sizeof(*v), cmp_name);
	for (size_t i = 0; i < r->nmembers; i++) {
		if (i && !strcmp(v[i].name, v[i - 1].name))
			err = DFKV_E_INVAL;
		rank[v[i].idx] = (uint32_t)i;
	}
	free(v);
	return err;
}

static int add_points(struct dfkv_ring *r, uint32_t m, uint32_t rank,
		      uint32_t weight)
{
	char label[DFKV_NODE_NAME_MAX + 16];
	uint8_t md[16];

	for (uint32_t i = 0; i < POINTS_PER_WEIGHT * weight; i++) {
		int n = snprintf(label, sizeof(label), "%s-%u", r->names[m], i);
		int err = dfkv_md5(label, (size_t)n, md);

		if (err)
			return err;
		for (int k = 0; k < 4; k++)
			r->points[r->npoints++] = (struct ring_point){
				dfkv_get_le32(md + 4 * k), rank, m };
	}
	return 0;
}

DFKV_API int dfkv_ring_build(const struct dfkv_ring_member *members, size_t n,
			     struct dfkv_ring **out)
{
	struct dfkv_ring *r;
	uint32_t *rank = NULL;
	size_t total = 0, w;
	int err;

	if (!out)
		return DFKV_E_INVAL;
	*out = NULL;
	if (!members || !n || n > UINT32_MAX / 2)
		return DFKV_E_INVAL;
	for (size_t i = 0; i < n; i++) {
		if (!members[i].name || !members[i].name[0] ||
		    strnlen(members[i].name, DFKV_NODE_NAME_MAX) >= DFKV_NODE_NAME_MAX ||
		    members[i].weight < 1 || members[i].weight > DFKV_WEIGHT_MAX)
			return DFKV_E_INVAL;
		total += (size_t)members[i].weight * POINTS_PER_WEIGHT * 4;
	}
	r = calloc(1, sizeof(*r));
	if (!r)
		return DFKV_E_NOMEM;
	r->nmembers = n;
	r->names = calloc(n, sizeof(*r->names));
	rank = calloc(n, sizeof(*rank));
	r->points = calloc(total, sizeof(*r->points));
	if (!r->names || !rank || !r->points) {
		err = DFKV_E_NOMEM;
		goto fail;
	}
	for (size_t i = 0; i < n; i++)
		strcpy(r->names[i], members[i].name);

	err = rank_names(r, rank);
	for (size_t i = 0; i < n && !err; i++)
		err = add_points(r, (uint32_t)i, rank[i], members[i].weight);
	if (err)
		goto fail;
	free(rank);
	qsort(r->points, r->npoints, sizeof(*r->points), cmp_point);

	/* Equal points: the first (smallest name) keeps the point. */
	w = 0;
	for (size_t i = 0; i < r->npoints; i++)
		if (!w || r->points[w - 1].value != r->points[i].value)
			r->points[w++] = r->points[i];
	r->npoints = w;
	*out = r;
	return 0;
fail:
	free(rank);
	dfkv_ring_free(r);
	return err;
}

DFKV_API int dfkv_ring_route(const struct dfkv_ring *r,
			     const uint8_t id[DFKV_OBJECT_ID_LEN],
			     unsigned int probe_off, size_t *member)
{
	size_t lo, hi;
	uint32_t probe;

	if (!member)
		return DFKV_E_INVAL;
	*member = 0;
	if (!r || !id || probe_off > DFKV_OBJECT_ID_LEN - 4 || !r->npoints)
		return DFKV_E_INVAL;
	probe = dfkv_get_le32(id + probe_off);
	lo = 0;
	hi = r->npoints;
	while (lo < hi) {		/* first point >= probe */
		size_t mid = lo + (hi - lo) / 2;

		if (r->points[mid].value < probe)
			lo = mid + 1;
		else
			hi = mid;
	}
	*member = r->points[lo == r->npoints ? 0 : lo].member;
	return 0;
}

DFKV_API const char *dfkv_ring_member_name(const struct dfkv_ring *r, size_t i)
{
	return r && i < r->nmembers ? r->names[i] : NULL;
}

DFKV_API size_t dfkv_ring_size(const struct dfkv_ring *r)
{
	return r ? r->nmembers : 0;
}
