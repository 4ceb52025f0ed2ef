// SPDX-License-Identifier: GPL-2.0
/*
 * dfkvctl apply: reading the node configuration file (JSON, through
 * json-c; the format is Documentation/config.md).  Everything is checked
 * before anything is applied: unknown keys, bad values, duplicate nodes,
 * listeners, disks and tenants are errors that name the file and the
 * place.  Secret files are only named here; apply.c reads them.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <json-c/json.h>

#include "dfkv.h"	/* libdfkv: dfkv_tenant_hash() */
#include "apply.h"

const struct conf_setting_def conf_settings[CS_COUNT] = {
	[CS_RAM] = { "ram", CK_SIZE, DFKV_A_NODE_RAM_BYTES, true },
	[CS_NUMA] = { "numa", CK_NUMA, DFKV_A_NODE_NUMA, true },
	[CS_MAX_VALUE] = { "max_value", CK_SIZE, DFKV_A_NODE_MAX_VALUE, false },
	[CS_EVICT] = { "evict", CK_BOOL, 0, false },
	[CS_STATE] = { "state", CK_STATE, DFKV_A_NODE_STATE, false },
	[CS_FIRST_REQUEST_MS] = { "first_request_ms", CK_U32,
				  DFKV_A_NODE_FIRST_REQUEST_MS, false },
	[CS_IDLE_MS] = { "idle_ms", CK_U32, DFKV_A_NODE_IDLE_MS, false },
	[CS_MAX_CONNS] = { "max_conns", CK_U32, DFKV_A_NODE_MAX_CONNS, false },
	[CS_FRAME_MS] = { "frame_ms", CK_U32, DFKV_A_NODE_FRAME_MS, false },
	[CS_MIN_RATE] = { "min_rate", CK_U32, DFKV_A_NODE_MIN_RATE, false },
	[CS_POLICY] = { "policy", CK_POLICY, DFKV_A_NODE_TIER_POLICY, false },
	[CS_ACK] = { "ack", CK_ACK, DFKV_A_NODE_TIER_ACK, false },
	[CS_DIRTY] = { "dirty", CK_U32, DFKV_A_NODE_DIRTY_PCT, false },
	[CS_FLUSH_WORKERS] = { "flush_workers", CK_U32,
			       DFKV_A_NODE_FLUSH_WORKERS, false },
	[CS_AUTH] = { "auth", CK_AUTH, DFKV_A_NODE_AUTH, false },
	[CS_TENANT_QUOTA] = { "tenant_quota", CK_SIZE,
			      DFKV_A_NODE_TENANT_QUOTA, false },
};

const char *conf_value_str(enum conf_setting s, uint64_t v, char *buf,
			   size_t len)
{
	switch (conf_settings[s].kind) {
	case CK_SIZE:
		if (s == CS_TENANT_QUOTA)
			return fmt_quota(v, false, buf, len);
		return fmt_bytes(v, false, buf, len);
	case CK_BOOL:
		return v ? "true" : "false";
	case CK_NUMA:
		return numa_str((uint32_t)v, buf, len);
	case CK_STATE:
		return state_name((uint32_t)v);
	case CK_POLICY:
		return tier_policy_name((uint32_t)v);
	case CK_ACK:
		return tier_ack_name((uint32_t)v);
	case CK_AUTH:
		return auth_name((uint32_t)v);
	case CK_U32:
		break;
	}
	snprintf(buf, len, "%llu", (unsigned long long)v);
	return buf;
}

/* Where an error is: "FILE: node 'n0': disk 2: ". */
struct where {
	const char *file;
	char at[160];
};

static int bad(const struct where *w, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static int bad(const struct where *w, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s: %s: %s", prog, w->file, w->at);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	return EXIT_USAGE;
}

/* obj is a JSON object whose keys are all in keys[] (NULL-terminated). */
static int only_keys(const struct where *w, json_object *obj,
		     const char *const *keys)
{
	json_object_object_foreach(obj, k, v) {
		const char *const *p = keys;

		(void)v;
		while (*p && strcmp(*p, k))
			p++;
		if (!*p)
			return bad(w, "unknown key \"%s\"", k);
	}
	return 0;
}

static int get_string(const struct where *w, json_object *obj,
		      const char *key, char *out, size_t len, bool required)
{
	json_object *v;
	const char *s;

	if (!json_object_object_get_ex(obj, key, &v)) {
		if (required)
			return bad(w, "\"%s\" is required", key);
		return 0;
	}
	if (!json_object_is_type(v, json_type_string))
		return bad(w, "\"%s\" must be a string", key);
	s = json_object_get_string(v);
	if (!*s || strlen(s) >= len)
		return bad(w, "\"%s\" must be 1 to %zu characters", key, len - 1);
	strcpy(out, s);
	return 0;
}

/* A non-negative integer, or (sizes) a string such as "64M". */
static int get_number(const struct where *w, const char *key, json_object *v,
		      bool size, uint64_t max, uint64_t *out)
{
	if (json_object_is_type(v, json_type_int)) {
		errno = 0;
		if (json_object_get_int64(v) < 0 && !errno)
			return bad(w, "\"%s\" must not be negative", key);
		*out = json_object_get_uint64(v);
	} else if (size && json_object_is_type(v, json_type_string)) {
		if (parse_size(json_object_get_string(v), out))
			return bad(w, "bad size \"%s\": \"%s\" (bytes, or a number with K, M, G or T)",
				   key, json_object_get_string(v));
	} else {
		return bad(w, "\"%s\" must be a %s", key,
			   size ? "size (a number or a string such as \"64M\")" :
			   "number");
	}
	if (*out > max)
		return bad(w, "\"%s\" is larger than %llu", key,
			   (unsigned long long)max);
	return 0;
}

static int get_enum(const struct where *w, const char *key, json_object *v,
		    int (*parse)(const char *, uint32_t *), const char *names,
		    uint64_t *out)
{
	uint32_t e;

	if (!json_object_is_type(v, json_type_string) ||
	    parse(json_object_get_string(v), &e))
		return bad(w, "\"%s\" must be one of %s", key, names);
	*out = e;
	return 0;
}

static int get_setting(const struct where *w, enum conf_setting s,
		       json_object *v, uint64_t *out)
{
	const char *key = conf_settings[s].key;

	switch (conf_settings[s].kind) {
	case CK_SIZE:
		return get_number(w, key, v, true, UINT64_MAX, out);
	case CK_U32:
		return get_number(w, key, v, false, UINT32_MAX, out);
	case CK_BOOL:
		if (!json_object_is_type(v, json_type_boolean))
			return bad(w, "\"%s\" must be true or false", key);
		*out = json_object_get_boolean(v);
		return 0;
	case CK_NUMA:
		if (json_object_is_type(v, json_type_string) &&
		    !strcmp(json_object_get_string(v), "interleave")) {
			*out = DFKV_NUMA_INTERLEAVE;
			return 0;
		}
		if (!json_object_is_type(v, json_type_int))
			return bad(w, "\"numa\" must be a NUMA node id or \"interleave\"");
		return get_number(w, key, v, false, UINT32_MAX - 1, out);
	case CK_STATE:
		return get_enum(w, key, v, state_parse,
				"\"up\", \"draining\", \"unhealthy\"", out);
	case CK_POLICY:
		return get_enum(w, key, v, tier_policy_parse,
				"\"writeback\", \"writearound\"", out);
	case CK_ACK:
		return get_enum(w, key, v, tier_ack_parse, "\"ram\", \"disk\"",
				out);
	case CK_AUTH:
		return get_enum(w, key, v, auth_parse, "\"off\", \"required\"",
				out);
	}
	return bad(w, "\"%s\": unknown kind", key);
}

/*
 * The array obj[key] (absent: none) as n elements of size sz, each read
 * by fn from its JSON object.
 */
static int get_array(struct where *w, json_object *obj, const char *key,
		     size_t sz, void **out, size_t *n,
		     int (*fn)(struct where *w, json_object *o, void *elem))
{
	size_t base = strlen(w->at), i, len;
	json_object *arr;
	char *v;
	int ret;

	*out = NULL;
	*n = 0;
	if (!json_object_object_get_ex(obj, key, &arr))
		return 0;
	if (!json_object_is_type(arr, json_type_array))
		return bad(w, "\"%s\" must be an array", key);
	len = json_object_array_length(arr);
	v = calloc(len ? len : 1, sz);
	if (!v) {
		err_msg("out of memory");
		return EXIT_FAIL;
	}
	*out = v;
	for (i = 0; i < len; i++) {
		json_object *o = json_object_array_get_idx(arr, i);

		snprintf(w->at + base, sizeof(w->at) - base, "%s[%zu]: ", key, i);
		if (!json_object_is_type(o, json_type_object))
			return bad(w, "must be an object");
		*n = i + 1;	/* conf_free() frees what it holds */
		ret = fn(w, o, v + i * sz);
		if (ret)
			return ret;
	}
	w->at[base] = '\0';
	return 0;
}

static int read_listener(struct where *w, json_object *o, void *elem)
{
	static const char *const keys[] = { "addr", "port", "transport", NULL };
	struct conf_listener *l = elem;
	char tr[8] = "tcp";
	json_object *v;
	uint64_t port;
	int ret;

	ret = only_keys(w, o, keys) ?:
	      get_string(w, o, "addr", l->addr, sizeof(l->addr), true) ?:
	      get_string(w, o, "transport", tr, sizeof(tr), false);
	if (ret)
		return ret;
	if (!strcmp(tr, "tcp"))
		l->transport = DFKV_LISTENER_TCP;
	else if (!strcmp(tr, "rdma"))
		l->transport = DFKV_LISTENER_RDMA;
	else
		return bad(w, "\"transport\" must be \"tcp\" or \"rdma\"");
	l->port = l->transport == DFKV_LISTENER_RDMA ? DFKV_PORT_RDMA :
						       DFKV_PORT_TCP;
	if (json_object_object_get_ex(o, "port", &v)) {
		ret = get_number(w, "port", v, false, 65535, &port);
		if (ret)
			return ret;
		if (!port)
			return bad(w, "\"port\" must be 1 to 65535");
		l->port = (uint16_t)port;
	}
	return 0;
}

static int read_disk(struct where *w, json_object *o, void *elem)
{
	static const char *const keys[] = { "path", "name", "extent", "format",
					    NULL };
	struct conf_disk *d = elem;
	char fmt[8] = "never";
	const char *base;
	json_object *v;
	int ret;

	ret = only_keys(w, o, keys) ?:
	      get_string(w, o, "path", d->path, sizeof(d->path), true) ?:
	      get_string(w, o, "name", d->name, sizeof(d->name), false) ?:
	      get_string(w, o, "format", fmt, sizeof(fmt), false);
	if (ret)
		return ret;
	if (!d->name[0]) {
		base = strrchr(d->path, '/');
		base = base ? base + 1 : d->path;
		if (!*base || strlen(base) >= sizeof(d->name))
			return bad(w, "give the disk a \"name\" (none follows from \"%s\")",
				   d->path);
		strcpy(d->name, base);
	}
	if (!strcmp(fmt, "never"))
		d->format = FORMAT_NEVER;
	else if (!strcmp(fmt, "blank"))
		d->format = FORMAT_BLANK;
	else
		return bad(w, "\"format\" must be \"never\" or \"blank\"");
	if (json_object_object_get_ex(o, "extent", &v)) {
		ret = get_number(w, "extent", v, true, UINT64_MAX, &d->extent);
		if (ret)
			return ret;
		d->has_extent = true;
	}
	return 0;
}

static int read_tenant(struct where *w, json_object *o, void *elem)
{
	static const char *const keys[] = { "ns", "tenant", "secret_file",
					    "second_secret_file", "quota",
					    NULL };
	struct conf_tenant *t = elem;
	char ns[64] = "", hex[20] = "";
	uint8_t b[8];
	json_object *v;
	int ret, i;

	ret = only_keys(w, o, keys) ?:
	      get_string(w, o, "ns", ns, sizeof(ns), false) ?:
	      get_string(w, o, "tenant", hex, sizeof(hex), false) ?:
	      get_string(w, o, "secret_file", t->secret_file[0],
			 sizeof(t->secret_file[0]), false) ?:
	      get_string(w, o, "second_secret_file", t->secret_file[1],
			 sizeof(t->secret_file[1]), false);
	if (ret)
		return ret;
	if (t->secret_file[1][0] && !t->secret_file[0][0])
		return bad(w, "\"second_secret_file\" needs \"secret_file\"");
	if (t->secret_file[1][0] && !strcmp(t->secret_file[0],
					     t->secret_file[1]))
		return bad(w, "\"secret_file\" and \"second_secret_file\" are the same file");
	if (!ns[0] == !hex[0])
		return bad(w, "give exactly one of \"ns\" and \"tenant\"");
	if (ns[0]) {
		if (dfkv_tenant_hash(ns, strlen(ns), &t->hash))
			return bad(w, "bad \"ns\" \"%s\"", ns);
		snprintf(t->label, sizeof(t->label), "%016llx (ns %s)",
			 (unsigned long long)t->hash, ns);
	} else {
		if (parse_hex(hex, 16, b))
			return bad(w, "\"tenant\" must be 16 hex digits");
		for (i = 0; i < 8; i++)
			t->hash = t->hash << 8 | b[i];
		snprintf(t->label, sizeof(t->label), "%016llx",
			 (unsigned long long)t->hash);
	}
	if (json_object_object_get_ex(o, "quota", &v)) {
		ret = get_number(w, "quota", v, true, UINT64_MAX, &t->quota);
		if (ret)
			return ret;
		t->has_quota = true;
	}
	return 0;
}

/* Two elements of an array that name the same thing. */
static int no_twins(const struct where *w, const char *what,
		    const void *v, size_t n, size_t sz,
		    bool (*same)(const void *a, const void *b))
{
	const char *p = v;
	size_t i, j;

	for (i = 0; i < n; i++)
		for (j = i + 1; j < n; j++)
			if (same(p + i * sz, p + j * sz))
				return bad(w, "%s %zu and %zu are the same", what,
					   i, j);
	return 0;
}

static bool same_listener(const void *a, const void *b)
{
	const struct conf_listener *x = a, *y = b;

	return x->port == y->port && x->transport == y->transport &&
	       !strcmp(x->addr, y->addr);
}

static bool same_disk(const void *a, const void *b)
{
	const struct conf_disk *x = a, *y = b;

	return !strcmp(x->name, y->name) || !strcmp(x->path, y->path);
}

static bool same_tenant(const void *a, const void *b)
{
	return ((const struct conf_tenant *)a)->hash ==
	       ((const struct conf_tenant *)b)->hash;
}

static bool same_node(const void *a, const void *b)
{
	return !strcmp(((const struct conf_node *)a)->name,
		       ((const struct conf_node *)b)->name);
}

static int read_node(struct where *w, json_object *o, void *elem)
{
	static const char *keys[CS_COUNT + 5] = { "name", "listeners", "disks",
						  "tenants" };
	struct conf_node *n = elem;
	size_t base;
	json_object *v;
	int ret, s;

	for (s = 0; s < CS_COUNT; s++)
		keys[4 + s] = conf_settings[s].key;
	ret = only_keys(w, o, keys) ?:
	      get_string(w, o, "name", n->name, sizeof(n->name), true);
	if (ret)
		return ret;
	base = strlen(w->at);
	snprintf(w->at + base, sizeof(w->at) - base, "node '%s': ", n->name);
	for (s = 0; s < CS_COUNT; s++) {
		if (!json_object_object_get_ex(o, conf_settings[s].key, &v))
			continue;
		ret = get_setting(w, s, v, &n->val[s]);
		if (ret)
			return ret;
		n->has[s] = true;
	}
	ret = get_array(w, o, "listeners", sizeof(*n->listeners),
			(void **)&n->listeners, &n->n_listeners, read_listener) ?:
	      no_twins(w, "listeners", n->listeners, n->n_listeners,
		       sizeof(*n->listeners), same_listener) ?:
	      get_array(w, o, "disks", sizeof(*n->disks), (void **)&n->disks,
			&n->n_disks, read_disk) ?:
	      no_twins(w, "disks (name or path)", n->disks, n->n_disks,
		       sizeof(*n->disks), same_disk) ?:
	      get_array(w, o, "tenants", sizeof(*n->tenants),
			(void **)&n->tenants, &n->n_tenants, read_tenant) ?:
	      no_twins(w, "tenants", n->tenants, n->n_tenants,
		       sizeof(*n->tenants), same_tenant);
	if (ret)
		return ret;
	w->at[base] = '\0';
	return 0;
}

/* Parse the file, naming the line of a syntax error. */
static int json_read(const char *path, json_object **out)
{
	enum json_tokener_error jerr;
	struct json_tokener *tok;
	size_t len = 0, i, line = 1;
	char *text = NULL;
	ssize_t got;
	FILE *f;

	f = fopen(path, "re");
	if (!f) {
		err_msg("%s: %s", path, strerror(errno));
		return EXIT_USAGE;
	}
	/* The whole file (a NUL in it ends the text the parser sees). */
	got = getdelim(&text, &len, '\0', f);
	if (got < 0 && ferror(f)) {
		err_msg("%s: %s", path, strerror(errno));
		fclose(f);
		free(text);
		return EXIT_USAGE;
	}
	fclose(f);
	len = got > 0 ? strnlen(text, (size_t)got) : 0;
	tok = json_tokener_new();
	if (!tok) {
		free(text);
		err_msg("out of memory");
		return EXIT_FAIL;
	}
	*out = json_tokener_parse_ex(tok, len ? text : "", (int)len);
	jerr = json_tokener_get_error(tok);
	if (jerr == json_tokener_continue)
		jerr = json_tokener_error_parse_eof;
	if (!*out || jerr != json_tokener_success ||
	    json_tokener_get_parse_end(tok) < len) {
		size_t end = json_tokener_get_parse_end(tok);

		for (i = 0; i < end && i < len; i++)
			line += text[i] == '\n';
		err_msg("%s: line %zu: %s", path, line,
			jerr != json_tokener_success ?
			json_tokener_error_desc(jerr) :
			"text after the JSON object");
		json_object_put(*out);
		*out = NULL;
	}
	json_tokener_free(tok);
	free(text);
	return *out ? 0 : EXIT_USAGE;
}

int conf_load(const char *path, struct conf *c)
{
	static const char *const keys[] = { "nodes", NULL };
	struct where w = { .file = path };
	json_object *root;
	int ret;

	memset(c, 0, sizeof(*c));
	ret = json_read(path, &root);
	if (ret)
		return ret;
	if (!json_object_is_type(root, json_type_object))
		ret = bad(&w, "the file must hold one JSON object");
	else
		ret = only_keys(&w, root, keys) ?:
		      get_array(&w, root, "nodes", sizeof(*c->nodes),
				(void **)&c->nodes, &c->n_nodes, read_node) ?:
		      no_twins(&w, "nodes", c->nodes, c->n_nodes,
			       sizeof(*c->nodes), same_node);
	json_object_put(root);
	if (ret)
		conf_free(c);
	return ret;
}

void conf_free(struct conf *c)
{
	size_t i;

	for (i = 0; i < c->n_nodes; i++) {
		free(c->nodes[i].listeners);
		free(c->nodes[i].disks);
		free(c->nodes[i].tenants);
	}
	free(c->nodes);
	memset(c, 0, sizeof(*c));
}
