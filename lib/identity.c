// SPDX-License-Identifier: (GPL-2.0 WITH Linux-syscall-note) OR MIT
/*
 * libdfkv identity (SPEC.md 1.1-1.3): the canonical namespace descriptor,
 * the layout fingerprint, the canonical object-key rendering and its strict
 * parser, and the derivation of the 24-byte block key (tenant hash and
 * object id) from namespace and key bytes.  Pure code: no I/O, no state.
 */
#include <assert.h>
#include <stdio.h>

#include "util.h"

static_assert(sizeof(struct dfkv_ns_desc) == DFKV_NS_DESC_SIZE_VER0,
	      "dfkv_ns_desc layout");
static_assert(sizeof(struct dfkv_key_desc) == DFKV_KEY_DESC_SIZE_VER0,
	      "dfkv_key_desc layout");

#define LAYOUT_TAG	"DFKVLAYOUT1"
#define TENANT_TAG	"DFKVTENANT1"

/* ---------------------------------------------------------------- ns */

/* Strict UTF-8: no overlong forms, no surrogates, nothing above U+10FFFF. */
static bool utf8_valid(const uint8_t *s, size_t n)
{
	size_t i = 0;

	while (i < n) {
		uint8_t c = s[i];
		size_t k;
		uint32_t cp, min;

		if (c < 0x80) {
			i++;
			continue;
		} else if ((c & 0xe0) == 0xc0) {
			k = 1, cp = c & 0x1f, min = 0x80;
		} else if ((c & 0xf0) == 0xe0) {
			k = 2, cp = c & 0x0f, min = 0x800;
		} else if ((c & 0xf8) == 0xf0) {
			k = 3, cp = c & 0x07, min = 0x10000;
		} else {
			return false;
		}
		if (n - i - 1 < k)
			return false;
		for (size_t j = 1; j <= k; j++) {
			if ((s[i + j] & 0xc0) != 0x80)
				return false;
			cp = cp << 6 | (s[i + j] & 0x3f);
		}
		if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
			return false;
		i += k + 1;
	}
	return true;
}

static bool field_ok(const struct dfkv_span *s)
{
	return dfkv_span_ok(s->ptr, s->len) && s->len <= UINT32_MAX;
}

/* Append field(b) = u32le(len) || b at *pos when it fits; always advance. */
static void put_field(uint8_t *out, uint64_t cap, uint64_t *pos,
		      const void *b, uint32_t len)
{
	if (*pos + 4 + len <= cap) {
		dfkv_put_le32(out + *pos, len);
		memcpy(out + *pos + 4, b, len);
	}
	*pos += 4 + (uint64_t)len;
}

DFKV_API int dfkv_ns_build(const struct dfkv_ns_desc *user, void *out,
			   uint64_t cap, uint64_t *out_len)
{
	const struct dfkv_span *strs[6];
	struct dfkv_ns_desc d;
	uint8_t num[20], *o = out;
	uint64_t pos = 0;
	int err;

	if (!out_len)
		return DFKV_E_INVAL;
	*out_len = 0;
	if (!out && cap)
		return DFKV_E_INVAL;
	err = dfkv_copy_struct(&d, sizeof(d), user, DFKV_NS_DESC_SIZE_VER0);
	if (err)
		return err;
	if (d.__reserved || d.__reserved2)
		return DFKV_E_INVAL;
	strs[0] = &d.tenant;
	strs[1] = &d.model_id;
	strs[2] = &d.model_revision;
	strs[3] = &d.layout_id;
	strs[4] = &d.dtype;
	strs[5] = &d.group;
	for (int i = 0; i < 6; i++)
		if (!field_ok(strs[i]))
			return DFKV_E_INVAL;
	if (!utf8_valid(d.tenant.ptr, d.tenant.len))
		return DFKV_E_INVAL;
	if (!d.block_tokens || !d.num_layers || !d.tp || !d.pp || !d.dp ||
	    !d.pcp || !d.dcp)
		return DFKV_E_INVAL;

	if (cap >= DFKV_NS_MAGIC_LEN)
		memcpy(o, DFKV_NS_MAGIC, DFKV_NS_MAGIC_LEN);
	pos = DFKV_NS_MAGIC_LEN;
	for (int i = 0; i < 5; i++)
		put_field(o, cap, &pos, strs[i]->ptr, (uint32_t)strs[i]->len);
	dfkv_put_le64(num, d.layout_fingerprint);
	put_field(o, cap, &pos, num, 8);
	dfkv_put_le32(num, d.block_tokens);
	put_field(o, cap, &pos, num, 4);
	dfkv_put_le32(num, d.num_layers);
	put_field(o, cap, &pos, num, 4);
	put_field(o, cap, &pos, d.group.ptr, (uint32_t)d.group.len);
	dfkv_put_le32(num, d.tp);
	dfkv_put_le32(num + 4, d.pp);
	dfkv_put_le32(num + 8, d.dp);
	dfkv_put_le32(num + 12, d.pcp);
	dfkv_put_le32(num + 16, d.dcp);
	put_field(o, cap, &pos, num, 20);

	*out_len = pos;
	return pos <= cap ? 0 : DFKV_E_RANGE;
}

DFKV_API int dfkv_ns_tenant_identity(const void *ns, uint64_t ns_len,
				     uint64_t *off, uint64_t *len)
{
	const uint8_t *p = ns;
	uint32_t flen;

	if (!off || !len)
		return DFKV_E_INVAL;
	*off = 0;
	*len = 0;
	if (!dfkv_span_ok(ns, ns_len))
		return DFKV_E_INVAL;
	*len = ns_len;
	if (ns_len < DFKV_NS_MAGIC_LEN + 4 ||
	    memcmp(p, DFKV_NS_MAGIC, DFKV_NS_MAGIC_LEN))
		return 0;
	flen = dfkv_get_le32(p + DFKV_NS_MAGIC_LEN);
	if (flen && flen <= ns_len - DFKV_NS_MAGIC_LEN - 4) {
		*off = DFKV_NS_MAGIC_LEN + 4;
		*len = flen;
	}
	return 0;
}

DFKV_API int dfkv_layout_fingerprint(const struct dfkv_span *fields, size_t n,
				     uint64_t *out)
{
	struct dfkv_part *parts;
	uint8_t (*lens)[4], md[32];
	int err;

	if (!out)
		return DFKV_E_INVAL;
	*out = 0;
	if (!fields || !n || n > 4096)
		return DFKV_E_INVAL;
	for (size_t i = 0; i < n; i++)
		if (!field_ok(&fields[i]))
			return DFKV_E_INVAL;
	parts = calloc(2 * n + 1, sizeof(*parts));
	lens = calloc(n, sizeof(*lens));
	if (!parts || !lens) {
		free(parts);
		free(lens);
		return DFKV_E_NOMEM;
	}
	parts[0] = (struct dfkv_part){ LAYOUT_TAG, sizeof(LAYOUT_TAG) - 1 };
	for (size_t i = 0; i < n; i++) {
		dfkv_put_le32(lens[i], (uint32_t)fields[i].len);
		parts[1 + 2 * i] = (struct dfkv_part){ lens[i], 4 };
		parts[2 + 2 * i] = (struct dfkv_part){ fields[i].ptr,
						      (size_t)fields[i].len };
	}
	err = dfkv_sha256(parts, 2 * n + 1, md);
	free(parts);
	free(lens);
	if (err)
		return err;
	*out = dfkv_get_be64(md);
	return 0;
}

/* --------------------------------------------------------- object key */

#define KEY_PREFIX	"dfkv/pool/v2"

static bool name_ok(const struct dfkv_span *s)
{
	const uint8_t *p = s->ptr;

	if (!dfkv_span_ok(s->ptr, s->len) || s->len > DFKV_KEY_NAME_MAX)
		return false;
	for (uint64_t i = 0; i < s->len; i++) {
		uint8_t c = p[i];

		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		      (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-'))
			return false;
	}
	return true;
}

static bool rank_ok(const struct dfkv_rank *r)
{
	return r->size >= 1 && r->rank >= -1 && (r->rank == -1 ||
						 (uint32_t)r->rank < r->size);
}

static int key_validate(const struct dfkv_key_desc *d)
{
	if (!name_ok(&d->pool) || !name_ok(&d->component))
		return DFKV_E_INVAL;
	if (!dfkv_span_ok(d->hash.ptr, d->hash.len) ||
	    d->hash.len > DFKV_KEY_HASH_MAX)
		return DFKV_E_INVAL;
	if (!rank_ok(&d->dp) || !rank_ok(&d->tp) || !rank_ok(&d->pcp) ||
	    !rank_ok(&d->dcp) || !rank_ok(&d->pp))
		return DFKV_E_INVAL;
	if (d->sg_width == 0 ? d->sg_group != 0 : d->sg_group >= d->sg_width)
		return DFKV_E_INVAL;
	return 0;
}

/* Render a validated key into buf (DFKV_KEY_RENDER_MAX + 1 bytes). */
static size_t key_format(const struct dfkv_key_desc *d, char *buf)
{
	static const char hex[] = "0123456789abcdef";
	const uint8_t *h = d->hash.ptr;
	char hx[2 * DFKV_KEY_HASH_MAX + 1];
	int n;

	for (uint64_t i = 0; i < d->hash.len; i++) {
		hx[2 * i] = hex[h[i] >> 4];
		hx[2 * i + 1] = hex[h[i] & 15];
	}
	hx[2 * d->hash.len] = 0;
	n = snprintf(buf, DFKV_KEY_RENDER_MAX + 1,
		     KEY_PREFIX "|pool=%.*s|hash=%s|dp=%u:%d|tp=%u:%d|pcp=%u:%d"
		     "|dcp=%u:%d|pp=%u:%d|group=%u|component=%.*s",
		     (int)d->pool.len, (const char *)d->pool.ptr, hx,
		     d->dp.size, d->dp.rank, d->tp.size, d->tp.rank,
		     d->pcp.size, d->pcp.rank, d->dcp.size, d->dcp.rank,
		     d->pp.size, d->pp.rank, d->group,
		     (int)d->component.len, (const char *)d->component.ptr);
	if (d->sg_width)
		n += snprintf(buf + n, DFKV_KEY_RENDER_MAX + 1 - (size_t)n,
			      "|sg=%u:%u", d->sg_width, d->sg_group);
	return (size_t)n;
}

DFKV_API int dfkv_key_render(const struct dfkv_key_desc *user, void *out,
			     uint64_t cap, uint64_t *out_len)
{
	char buf[DFKV_KEY_RENDER_MAX + 1];
	struct dfkv_key_desc d;
	size_t n;
	int err;

	if (!out_len)
		return DFKV_E_INVAL;
	*out_len = 0;
	if (!out && cap)
		return DFKV_E_INVAL;
	err = dfkv_copy_struct(&d, sizeof(d), user, DFKV_KEY_DESC_SIZE_VER0);
	if (err)
		return err;
	err = key_validate(&d);
	if (err)
		return err;
	n = key_format(&d, buf);
	*out_len = n;
	if (n > cap)
		return DFKV_E_RANGE;
	memcpy(out, buf, n);
	return 0;
}

/* A cursor over the key being parsed. */
struct cur {
	const char *p, *end;
};

static bool eat(struct cur *c, const char *lit)
{
	size_t n = strlen(lit);

	if ((size_t)(c->end - c->p) < n || memcmp(c->p, lit, n))
		return false;
	c->p += n;
	return true;
}

/* Decimal u32; leading zeros are caught by the render-and-compare step. */
static bool eat_u32(struct cur *c, uint32_t *v)
{
	uint64_t x = 0;
	const char *s = c->p;

	while (c->p < c->end && *c->p >= '0' && *c->p <= '9' && c->p - s < 10)
		x = x * 10 + (uint64_t)(*c->p++ - '0');
	if (c->p == s || x > UINT32_MAX)
		return false;
	*v = (uint32_t)x;
	return true;
}

static bool eat_rank(struct cur *c, const char *lit, struct dfkv_rank *r)
{
	uint32_t v;

	if (!eat(c, lit) || !eat_u32(c, &r->size) || !eat(c, ":"))
		return false;
	if (eat(c, "-1")) {
		r->rank = -1;
		return true;
	}
	if (!eat_u32(c, &v) || v > INT32_MAX)
		return false;
	r->rank = (int32_t)v;
	return true;
}

static void eat_until_bar(struct cur *c, struct dfkv_span *s)
{
	s->ptr = c->p;
	while (c->p < c->end && *c->p != '|')
		c->p++;
	s->len = (uint64_t)(c->p - (const char *)s->ptr);
}

static int unhex(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return -1;
}

DFKV_API int dfkv_key_parse(const void *key, uint64_t key_len,
			    struct dfkv_key_desc *d,
			    uint8_t hash_buf[DFKV_KEY_HASH_MAX])
{
	char buf[DFKV_KEY_RENDER_MAX + 1];
	struct dfkv_span hex;
	struct cur c;
	size_t n;

	if (!d || !hash_buf)
		return DFKV_E_INVAL;
	memset(d, 0, sizeof(*d));
	d->size = sizeof(*d);
	if (!dfkv_span_ok(key, key_len) || key_len > DFKV_KEY_RENDER_MAX)
		goto bad;
	c.p = key;
	c.end = c.p + key_len;
	if (!eat(&c, KEY_PREFIX "|pool="))
		goto bad;
	eat_until_bar(&c, &d->pool);
	if (!eat(&c, "|hash="))
		goto bad;
	eat_until_bar(&c, &hex);
	if (!hex.len || hex.len % 2 || hex.len > 2 * DFKV_KEY_HASH_MAX)
		goto bad;
	for (uint64_t i = 0; i < hex.len / 2; i++) {
		int hi = unhex(((const char *)hex.ptr)[2 * i]);
		int lo = unhex(((const char *)hex.ptr)[2 * i + 1]);

		if (hi < 0 || lo < 0)
			goto bad;
		hash_buf[i] = (uint8_t)(hi << 4 | lo);
	}
	d->hash.ptr = hash_buf;
	d->hash.len = hex.len / 2;
	if (!eat_rank(&c, "|dp=", &d->dp) || !eat_rank(&c, "|tp=", &d->tp) ||
	    !eat_rank(&c, "|pcp=", &d->pcp) || !eat_rank(&c, "|dcp=", &d->dcp) ||
	    !eat_rank(&c, "|pp=", &d->pp) || !eat(&c, "|group=") ||
	    !eat_u32(&c, &d->group) || !eat(&c, "|component="))
		goto bad;
	eat_until_bar(&c, &d->component);
	if (c.p < c.end &&
	    (!eat(&c, "|sg=") || !eat_u32(&c, &d->sg_width) || !eat(&c, ":") ||
	     !eat_u32(&c, &d->sg_group) || !d->sg_width))
		goto bad;
	if (c.p != c.end || key_validate(d))
		goto bad;
	/* Canonical means byte-identical to our own rendering. */
	n = key_format(d, buf);
	if (n != key_len || memcmp(buf, key, n))
		goto bad;
	return 0;
bad:
	memset(d, 0, sizeof(*d));
	return DFKV_E_INVAL;
}

/* ------------------------------------------------------------ block key */

DFKV_API int dfkv_object_id(const void *ns, uint64_t ns_len,
			    const void *key, uint64_t key_len,
			    uint8_t id[DFKV_OBJECT_ID_LEN])
{
	uint8_t nl[8], kl[8], md[32];
	struct dfkv_part parts[4];
	int err;

	if (!id)
		return DFKV_E_INVAL;
	memset(id, 0, DFKV_OBJECT_ID_LEN);
	if (!dfkv_span_ok(ns, ns_len) || !dfkv_span_ok(key, key_len))
		return DFKV_E_INVAL;
	dfkv_put_le64(nl, ns_len);
	dfkv_put_le64(kl, key_len);
	parts[0] = (struct dfkv_part){ nl, 8 };
	parts[1] = (struct dfkv_part){ ns, (size_t)ns_len };
	parts[2] = (struct dfkv_part){ kl, 8 };
	parts[3] = (struct dfkv_part){ key, (size_t)key_len };
	err = dfkv_sha256(parts, 4, md);
	if (err)
		return err;
	memcpy(id, md, DFKV_OBJECT_ID_LEN);
	return 0;
}

DFKV_API int dfkv_tenant_hash(const void *ns, uint64_t ns_len, uint64_t *out)
{
	uint64_t off, len;
	struct dfkv_part parts[3];
	uint8_t il[8], md[32];
	int err;

	if (!out)
		return DFKV_E_INVAL;
	*out = 0;
	err = dfkv_ns_tenant_identity(ns, ns_len, &off, &len);
	if (err)
		return err;
	dfkv_put_le64(il, len);
	parts[0] = (struct dfkv_part){ TENANT_TAG, sizeof(TENANT_TAG) - 1 };
	parts[1] = (struct dfkv_part){ il, 8 };
	parts[2] = (struct dfkv_part){ (const uint8_t *)ns + off, (size_t)len };
	err = dfkv_sha256(parts, 3, md);
	if (err)
		return err;
	*out = dfkv_get_be64(md);
	return 0;
}

DFKV_API int dfkv_block_key(const void *ns, uint64_t ns_len,
			    const void *key, uint64_t key_len,
			    struct dfkv_key *out)
{
	uint64_t tenant = 0;
	int err;

	if (!out)
		return DFKV_E_INVAL;
	memset(out, 0, sizeof(*out));
	err = dfkv_object_id(ns, ns_len, key, key_len, out->id);
	if (!err)
		err = dfkv_tenant_hash(ns, ns_len, &tenant);
	if (err)
		memset(out, 0, sizeof(*out));
	else
		out->tenant = tenant;
	return err;
}
