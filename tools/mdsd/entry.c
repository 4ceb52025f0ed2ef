// SPDX-License-Identifier: GPL-2.0
/*
 * mdsd record lists and name sets, the kind names, and a /clients entry's
 * owner: its check and its place in a stored record.  The record itself
 * (validation, strict JSON decoding, canonical rendering) is libdfkv's
 * lib/record.c.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <openssl/crypto.h>

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

/* ------------------------------------------------------------- owners */

#define OWNER_FIELD	"owner"

bool mds_owner_allows(const struct mds_owner *have, const struct mds_writer *w)
{
	if (!w || !w->must_own)
		return true;
	/* both compared in full whatever they hold */
	return !CRYPTO_memcmp(have->sha256, w->key.sha256, MDS_OWNER_LEN) &&
	       have->set && w->key.set;
}

struct mds_owner mds_owner_of(const struct mds_writer *w)
{
	struct mds_owner none = { 0 };

	return w && w->key.set ? w->key : none;
}

struct json_object *mds_stored_to_json(const struct mds_entry *e,
				       const struct mds_owner *owner)
{
	struct json_object *o = mds_entry_to_json(e);
	static const char hex[] = "0123456789abcdef";
	char h[2 * MDS_OWNER_LEN + 1];

	if (owner && owner->set) {
		for (size_t i = 0; i < MDS_OWNER_LEN; i++) {
			h[2 * i] = hex[owner->sha256[i] >> 4];
			h[2 * i + 1] = hex[owner->sha256[i] & 15];
		}
		h[2 * MDS_OWNER_LEN] = '\0';
		json_object_object_add(o, OWNER_FIELD, json_object_new_string(h));
	}
	return o;
}

static int hex_val(char c)
{
	return c >= '0' && c <= '9' ? c - '0' :
	       c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

/* 64 lowercase hex digits into o. */
static bool owner_parse(struct json_object *v, struct mds_owner *o)
{
	const char *s = json_object_get_string(v);

	if (!json_object_is_type(v, json_type_string) ||
	    json_object_get_string_len(v) != 2 * MDS_OWNER_LEN)
		return false;
	for (size_t i = 0; i < MDS_OWNER_LEN; i++) {
		int hi = hex_val(s[2 * i]), lo = hex_val(s[2 * i + 1]);

		if (hi < 0 || lo < 0)
			return false;
		o->sha256[i] = (unsigned char)(hi << 4 | lo);
	}
	o->set = true;
	return true;
}

int mds_stored_from_json(struct json_object *o, const char *id,
			 const char *skip, struct mds_entry *e,
			 struct mds_owner *owner, char *err, size_t errlen)
{
	struct json_object *copy, *v;
	struct mds_owner tmp = { 0 };
	int ret;

	if (!json_object_is_type(o, json_type_object)) {
		snprintf(err, errlen, "not a JSON object");
		return -EINVAL;
	}
	if (json_object_object_get_ex(o, OWNER_FIELD, &v) &&
	    !owner_parse(v, &tmp)) {
		snprintf(err, errlen, "bad \"%s\"", OWNER_FIELD);
		return -EINVAL;
	}
	/* the entry's own fields, decoded by the record codec */
	copy = json_object_new_object();
	if (!copy)
		return -ENOMEM;
	json_object_object_foreach(o, key, val) {
		if (strcmp(key, OWNER_FIELD) && (!skip || strcmp(key, skip)))
			json_object_object_add(copy, key, json_object_get(val));
	}
	ret = mds_entry_from_json(copy, id, 0, e, err, errlen);
	json_object_put(copy);
	if (!ret && owner)
		*owner = tmp;
	return ret;
}
