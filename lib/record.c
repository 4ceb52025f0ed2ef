// SPDX-License-Identifier: (GPL-2.0 WITH Linux-syscall-note) OR MIT
/*
 * The mdsd directory record and its JSON codec (record.h): ids of
 * [A-Za-z0-9._-]{1,64}, HOST:PORT addresses, exact JSON types, bounded
 * strings, and one canonical rendering.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "record.h"

static const char *const state_names[MDS_NR_STATES] = {
	"up", "draining", "unhealthy"
};

const char *mds_state_name(enum mds_state s)
{
	return s < MDS_NR_STATES ? state_names[s] : "?";
}

int mds_state_parse(const char *s, enum mds_state *out)
{
	int i;

	for (i = 0; i < MDS_NR_STATES; i++) {
		if (!strcmp(s, state_names[i])) {
			*out = i;
			return 0;
		}
	}
	return -EINVAL;
}

static bool id_char(char c)
{
	return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
	       (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-';
}

bool mds_id_valid(const char *s)
{
	size_t n = 0;

	if (!s)
		return false;
	for (; s[n]; n++) {
		if (n >= MDS_ID_MAX || !id_char(s[n]))
			return false;
	}
	return n > 0;
}

/* "" or HOST:PORT, HOST a name / IPv4 or [IPv6], PORT 1..65535. */
bool mds_addr_valid(const char *s)
{
	const char *colon, *p;
	unsigned long port;
	char *end;

	if (!*s)
		return true;
	if (strlen(s) > MDS_STR_MAX)
		return false;
	if (s[0] == '[') {
		const char *rb = strchr(s, ']');

		if (!rb || rb == s + 1 || rb[1] != ':')
			return false;
		for (p = s + 1; p < rb; p++) {
			if (!strchr("0123456789abcdefABCDEF:.", *p))
				return false;
		}
		colon = rb + 1;
	} else {
		colon = strrchr(s, ':');
		if (!colon || colon == s)
			return false;
		for (p = s; p < colon; p++) {
			if (!id_char(*p))
				return false;
		}
	}
	if (colon[1] < '0' || colon[1] > '9')
		return false;
	errno = 0;
	port = strtoul(colon + 1, &end, 10);
	return !errno && !*end && port >= 1 && port <= 65535;
}

bool mds_host_valid(const char *s)
{
	size_t n = strlen(s);
	size_t i;

	if (n > MDS_STR_MAX)
		return false;
	for (i = 0; i < n; i++) {
		if (!id_char(s[i]) && s[i] != ':')
			return false;
	}
	return true;
}

static int fail(char *err, size_t errlen, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int fail(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	if (err && errlen) {
		va_start(ap, fmt);
		vsnprintf(err, errlen, fmt, ap);
		va_end(ap);
	}
	return -EINVAL;
}

struct json_object *mds_json_parse(const char *buf, size_t len,
				   char *err, size_t errlen)
{
	struct json_tokener *tok;
	struct json_object *o;
	enum json_tokener_error je;
	size_t end, i;

	if (len == 0) {
		fail(err, errlen, "empty body");
		return NULL;
	}
	if (memchr(buf, '\0', len)) {
		fail(err, errlen, "NUL byte in body");
		return NULL;
	}
	if (len > (size_t)INT32_MAX) {
		fail(err, errlen, "body too large");
		return NULL;
	}
	tok = json_tokener_new_ex(16);
	if (!tok) {
		fail(err, errlen, "out of memory");
		return NULL;
	}
	json_tokener_set_flags(tok, JSON_TOKENER_STRICT);
	o = json_tokener_parse_ex(tok, buf, (int)len);
	je = json_tokener_get_error(tok);
	end = json_tokener_get_parse_end(tok);
	json_tokener_free(tok);
	if (!o || je != json_tokener_success) {
		json_object_put(o);
		fail(err, errlen, "bad JSON: %s",
		     je == json_tokener_continue ? "unexpected end" :
		     json_tokener_error_desc(je));
		return NULL;
	}
	for (i = end; i < len; i++) {
		if (!strchr(" \t\r\n", buf[i])) {
			json_object_put(o);
			fail(err, errlen, "bad JSON: trailing data");
			return NULL;
		}
	}
	if (!json_object_is_type(o, json_type_object)) {
		json_object_put(o);
		fail(err, errlen, "body must be a JSON object");
		return NULL;
	}
	return o;
}

static int get_str(struct json_object *v, const char *key, char *dst,
		   size_t cap, char *err, size_t errlen)
{
	const char *s;
	size_t n;

	if (!json_object_is_type(v, json_type_string))
		return fail(err, errlen, "\"%s\" must be a string", key);
	s = json_object_get_string(v);
	n = (size_t)json_object_get_string_len(v);
	if (n >= cap || strlen(s) != n)
		return fail(err, errlen, "\"%s\" is too long", key);
	memcpy(dst, s, n + 1);
	return 0;
}

static int get_uint(struct json_object *v, const char *key, uint64_t min,
		    uint64_t max, uint64_t *out, char *err, size_t errlen)
{
	int64_t x;

	if (!json_object_is_type(v, json_type_int))
		return fail(err, errlen, "\"%s\" must be an integer", key);
	errno = 0;
	x = json_object_get_int64(v);
	if (errno || x < 0 || (uint64_t)x < min || (uint64_t)x > max)
		return fail(err, errlen, "\"%s\" must lie in [%llu, %llu]", key,
			    (unsigned long long)min, (unsigned long long)max);
	*out = (uint64_t)x;
	return 0;
}

int mds_entry_from_json(struct json_object *o, const char *id,
			uint64_t default_ttl_ms, struct mds_entry *e,
			char *err, size_t errlen)
{
	return mds_entry_decode(o, id, default_ttl_ms, false, e, err, errlen);
}

int mds_entry_decode(struct json_object *o, const char *id,
		     uint64_t default_ttl_ms, bool lenient,
		     struct mds_entry *e, char *err, size_t errlen)
{
	uint64_t u;
	int ret;

	memset(e, 0, sizeof(*e));
	e->weight = 1;
	e->state = MDS_UP;
	e->ttl_ms = default_ttl_ms;
	if (id) {
		if (!mds_id_valid(id))
			return fail(err, errlen, "bad id");
		snprintf(e->id, sizeof(e->id), "%s", id);
	}
	if (!json_object_is_type(o, json_type_object))
		return fail(err, errlen, "body must be a JSON object");
	json_object_object_foreach(o, key, v) {
		if (!strcmp(key, "id")) {
			char tmp[MDS_ID_MAX + 1] = "";

			ret = get_str(v, key, tmp, sizeof(tmp), err, errlen);
			if (ret)
				return ret;
			if (!mds_id_valid(tmp))
				return fail(err, errlen, "bad \"id\"");
			if (id && strcmp(tmp, id))
				return fail(err, errlen,
					    "\"id\" differs from the path");
			memcpy(e->id, tmp, sizeof(tmp));
		} else if (!strcmp(key, "tcp") || !strcmp(key, "rdma")) {
			char *dst = key[0] == 't' ? e->tcp : e->rdma;

			ret = get_str(v, key, dst, MDS_STR_MAX + 1, err, errlen);
			if (ret)
				return ret;
			if (!mds_addr_valid(dst))
				return fail(err, errlen,
					    "\"%s\" must be \"\" or HOST:PORT", key);
		} else if (!strcmp(key, "host")) {
			ret = get_str(v, key, e->host, sizeof(e->host), err,
				      errlen);
			if (ret)
				return ret;
			if (!mds_host_valid(e->host))
				return fail(err, errlen, "bad \"host\"");
		} else if (!strcmp(key, "weight")) {
			ret = get_uint(v, key, 1, MDS_WEIGHT_MAX, &u, err, errlen);
			if (ret)
				return ret;
			e->weight = (uint32_t)u;
		} else if (!strcmp(key, "state")) {
			char tmp[16];

			ret = get_str(v, key, tmp, sizeof(tmp), err, errlen);
			if (ret || mds_state_parse(tmp, &e->state))
				return fail(err, errlen,
					    "\"state\" must be up, draining or unhealthy");
		} else if (!strcmp(key, "ttl_ms")) {
			ret = get_uint(v, key, MDS_TTL_MIN_MS, MDS_TTL_MAX_MS,
				       &e->ttl_ms, err, errlen);
			if (ret)
				return ret;
		} else if (!lenient) {
			char shown[40];

			snprintf(shown, sizeof(shown), "%s", key);
			return fail(err, errlen, "unknown field \"%s\"", shown);
		}
	}
	if (!e->id[0])
		return fail(err, errlen, "missing \"id\"");
	return 0;
}

struct json_object *mds_entry_to_json(const struct mds_entry *e)
{
	struct json_object *o = json_object_new_object();

	json_object_object_add(o, "id", json_object_new_string(e->id));
	json_object_object_add(o, "tcp", json_object_new_string(e->tcp));
	json_object_object_add(o, "rdma", json_object_new_string(e->rdma));
	json_object_object_add(o, "weight", json_object_new_int64(e->weight));
	json_object_object_add(o, "host", json_object_new_string(e->host));
	json_object_object_add(o, "state",
			       json_object_new_string(mds_state_name(e->state)));
	json_object_object_add(o, "ttl_ms",
			       json_object_new_int64((int64_t)e->ttl_ms));
	return o;
}

bool mds_entry_equal(const struct mds_entry *a, const struct mds_entry *b)
{
	return !strcmp(a->id, b->id) && !strcmp(a->tcp, b->tcp) &&
	       !strcmp(a->rdma, b->rdma) && !strcmp(a->host, b->host) &&
	       a->weight == b->weight && a->state == b->state &&
	       a->ttl_ms == b->ttl_ms;
}

