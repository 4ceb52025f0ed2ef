// SPDX-License-Identifier: (GPL-2.0 WITH Linux-syscall-note) OR MIT
/*
 * libdfkv static members list: parses "name=host:port[@weight],..." into
 * peers.  Names are ring identities and /dev/dfkv bind names; hosts are
 * IPv4/IPv6 literals (IPv6 in brackets) or host names, resolved later by
 * the TCP transport.  "name" alone (no address) is a local-only member.
 */
#include <ctype.h>
#include <errno.h>

#include "client.h"

#define MEMBERS_MAX	4096

static bool parse_uint(const char *s, size_t n, uint64_t max, uint64_t *v)
{
	uint64_t x = 0;

	if (!n || n > 10 || (n > 1 && s[0] == '0'))
		return false;
	for (size_t i = 0; i < n; i++) {
		if (!isdigit((unsigned char)s[i]))
			return false;
		x = x * 10 + (uint64_t)(s[i] - '0');
	}
	if (x > max)
		return false;
	*v = x;
	return true;
}

static bool name_char(char ch)
{
	return isalnum((unsigned char)ch) || ch == '-' || ch == '_' ||
	       ch == '.';
}

/* One entry s[0..n) into p. */
static int parse_one(const char *s, size_t n, struct dfkv_peer *p)
{
	const char *eq = memchr(s, '=', n), *end = s + n, *at, *h, *he, *colon;
	size_t nl;
	uint64_t v;

	nl = eq ? (size_t)(eq - s) : n;
	if (!nl || nl >= DFKV_NODE_NAME_MAX)
		return DFKV_E_MEMBERS;
	for (size_t i = 0; i < nl; i++)
		if (!name_char(s[i]))
			return DFKV_E_MEMBERS;
	memcpy(p->name, s, nl);
	p->name[nl] = 0;
	p->weight = 1;
	p->port = DFKV_PORT_TCP;
	if (!eq)
		return 0;

	h = eq + 1;
	at = memchr(h, '@', (size_t)(end - h));
	he = at ? at : end;
	if (at) {
		if (!parse_uint(at + 1, (size_t)(end - at - 1), DFKV_WEIGHT_MAX, &v) ||
		    !v)
			return DFKV_E_MEMBERS;
		p->weight = (uint32_t)v;
	}
	if (h < he && *h == '[') {		/* [v6]:port */
		const char *rb = memchr(h, ']', (size_t)(he - h));

		if (!rb || rb == h + 1)
			return DFKV_E_MEMBERS;
		if ((size_t)(rb - h - 1) >= DFKV_HOST_MAX)
			return DFKV_E_MEMBERS;
		memcpy(p->host, h + 1, (size_t)(rb - h - 1));
		p->host[rb - h - 1] = 0;
		colon = rb + 1 < he ? rb + 1 : NULL;
		if (colon && *colon != ':')
			return DFKV_E_MEMBERS;
	} else {
		colon = memchr(h, ':', (size_t)(he - h));
		if (colon && memchr(colon + 1, ':', (size_t)(he - colon - 1)))
			return DFKV_E_MEMBERS;	/* bare IPv6 needs brackets */
		size_t hl = (size_t)((colon ? colon : he) - h);

		if (!hl || hl >= DFKV_HOST_MAX)
			return DFKV_E_MEMBERS;
		memcpy(p->host, h, hl);
		p->host[hl] = 0;
		for (size_t i = 0; i < hl; i++)
			if (!name_char(h[i]))
				return DFKV_E_MEMBERS;
	}
	if (colon) {
		if (!parse_uint(colon + 1, (size_t)(he - colon - 1), 65535, &v) ||
		    !v)
			return DFKV_E_MEMBERS;
		p->port = (uint16_t)v;
	}
	return 0;
}

int dfkv_members_parse(const char *spec, struct dfkv_peer **peers, size_t *n)
{
	struct dfkv_peer *v = NULL;
	size_t cnt = 0, cap = 0;
	const char *s = spec;
	int err = 0;

	*peers = NULL;
	*n = 0;
	if (!spec || strnlen(spec, 1 << 20) >= (1 << 20))
		return DFKV_E_MEMBERS;
	while (*s) {
		const char *e = strchr(s, ',');
		size_t len = e ? (size_t)(e - s) : strlen(s);
		const char *a = s, *b = s + len;

		while (a < b && isspace((unsigned char)*a))
			a++;
		while (b > a && isspace((unsigned char)b[-1]))
			b--;
		if (cnt == MEMBERS_MAX) {
			err = DFKV_E_MEMBERS;
			break;
		}
		if (cnt == cap) {
			struct dfkv_peer *nv;

			cap = cap ? 2 * cap : 8;
			nv = realloc(v, cap * sizeof(*v));
			if (!nv) {
				err = DFKV_E_NOMEM;
				break;
			}
			v = nv;
		}
		memset(&v[cnt], 0, sizeof(v[cnt]));
		err = parse_one(a, (size_t)(b - a), &v[cnt]);
		if (err)
			break;
		for (size_t i = 0; i < cnt; i++)
			if (!strcmp(v[i].name, v[cnt].name))
				err = DFKV_E_MEMBERS;
		if (err)
			break;
		v[cnt].index = (uint32_t)cnt;
		cnt++;
		s += len;
		if (*s == ',' && !*++s)
			err = DFKV_E_MEMBERS;	/* trailing comma */
		if (err)
			break;
	}
	if (!err && !cnt)
		err = DFKV_E_MEMBERS;
	if (err) {
		free(v);
		return err;
	}
	*peers = v;
	*n = cnt;
	return 0;
}
