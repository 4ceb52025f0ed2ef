// SPDX-License-Identifier: GPL-2.0
/*
 * mdsd record lists and name sets, and the kind names.  The record itself
 * (validation, strict JSON decoding, canonical rendering) is libdfkv's
 * lib/record.c.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mdsd.h"

static const char *const kind_names[MDS_NR_KINDS] = { "members", "clients" };

const char *mds_kind_name(enum mds_kind k)
{
	return k < MDS_NR_KINDS ? kind_names[k] : "?";
}

void mds_list_free(struct mds_list *l)
{
	free(l->v);
	l->v = NULL;
	l->n = 0;
}

void mds_names_free(struct mds_names *n)
{
	free(n->v);
	n->v = NULL;
	n->n = 0;
}

int mds_names_add(struct mds_names *n, const char *name)
{
	size_t lo = 0, hi = n->n, mid;
	void *p;
	int c;

	while (lo < hi) {
		mid = (lo + hi) / 2;
		c = strcmp(n->v[mid], name);
		if (!c)
			return 0;
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	p = realloc(n->v, (n->n + 1) * sizeof(*n->v));
	if (!p)
		return -ENOMEM;
	n->v = p;
	memmove(&n->v[lo + 1], &n->v[lo], (n->n - lo) * sizeof(*n->v));
	snprintf(n->v[lo], sizeof(n->v[lo]), "%s", name);
	n->n++;
	return 0;
}
