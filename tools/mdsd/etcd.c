// SPDX-License-Identifier: GPL-2.0
/*
 * mdsd "etcd" backend: the directory lives in an etcd v3 cluster, reached
 * through its JSON gateway (/v3/kv/range, /v3/kv/txn, /v3/kv/deleterange,
 * /v3/lease/grant, /v3/lease/keepalive, /v3/watch) with libcurl (through
 * libdfkv's http.c helper).
 *
 * Keys: PREFIX/GROUP/members/ID and PREFIX/GROUP/clients/ID; the value is
 * the entry's canonical JSON, with a /clients entry's "owner" (mdsd.h).
 * Every entry has its own lease of
 * ceil(ttl_ms / 1000) seconds: a registration grants one and puts the key
 * with it; a heartbeat of an unchanged entry only keeps the lease alive
 * (no write, so the revision does not move); a changed entry is put again
 * (with its lease when the TTL is unchanged).  A write is a transaction
 * on the key's mod_revision as seen (0: absent), so what was checked
 * (the owner) is what is written over; a lost race is checked again on a
 * newer view (on the lease already granted).  What a write sees of its
 * entry and of its group's weight is the group's shared listing
 * (etcd_feed.c, kept by a watch, started by the group's first write or
 * long-poll): while it is current a heartbeat costs etcd one lease
 * keep-alive and a registration its lease grant and a share of one
 * group commit, no range; without a current listing the entry is read
 * (one key), and without a working watch the weight cap's sum by a
 * range of the group.  A client-token delete
 * is a transaction too.  etcd deletes the keys of an expired lease
 * itself.  The epoch of a listing is an etcd revision (of the read, or
 * of the last change a shared listing applied), so every mdsd sharing
 * the cluster answers identically.  The wait_epoch=N long-polls of a
 * group share one etcd watch of its keys and its listing, read once and
 * kept by the watch's events (a "feed", etcd_feed.c: one thread per
 * group and kind with long-polls or writes): a change costs no read,
 * and the feed tells the HTTP server's notify function, whose waiting
 * long-polls (no thread each) are answered with that listing.  A feed watches from
 * the oldest epoch its first long-polls asked past; a long-poll past an
 * epoch older than that is answered at once with the feed's listing.  A
 * member's put that would raise the group's weight past
 * --max-group-weight is refused: the sum is the shared listing's at its
 * revision R and the put's transaction also requires that no member key
 * was written after R, so two mdsd cannot pass the cap together; such
 * puts waiting together on one mdsd commit in one transaction (a group
 * commit), so that they do not each lose to the others.
 * Several URLs may be given:
 * a request that cannot connect tries the next one.  A prober thread reads
 * the prefix every second; /readyz follows it, debounced (two equal
 * results in a row change the answer).
 *
 * etcd's own security is passed through: --etcd-cacert verifies an
 * https:// etcd (CURLOPT_CAINFO), --etcd-cert/--etcd-key present a client
 * certificate (etcd --client-cert-auth), and --etcd-user with
 * --etcd-password-file authenticates (/v3/auth/authenticate) and sends
 * the token etcd returns as "Authorization: <token>"; a 401 (expired or
 * revoked token) authenticates again once and repeats the request.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <openssl/crypto.h>

#include "etcd.h"
#include "http.h"
#include "mdsd.h"
#include "runtime.h"
#include "token.h"

#define ETCD_TIMEOUT_MS		3000
#define ETCD_CONNECT_MS		1000
#define ETCD_PROBE_MS		1000
#define ETCD_REPLY_MAX		(8 << 20)
#define to_etcd(bp) ((struct etcd *)(bp))

/* ------------------------------------------------------------- base64 */

static const char b64c[] =
	"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

static char *b64_encode(const char *in, size_t n)
{
	char *out = malloc((n + 2) / 3 * 4 + 1), *p = out;
	size_t i;

	if (!out)
		return NULL;
	for (i = 0; i + 2 < n; i += 3) {
		uint32_t v = (uint32_t)(uint8_t)in[i] << 16 |
			     (uint32_t)(uint8_t)in[i + 1] << 8 | (uint8_t)in[i + 2];

		*p++ = b64c[v >> 18];
		*p++ = b64c[(v >> 12) & 63];
		*p++ = b64c[(v >> 6) & 63];
		*p++ = b64c[v & 63];
	}
	if (i < n) {
		uint32_t v = (uint32_t)(uint8_t)in[i] << 16;

		if (i + 1 < n)
			v |= (uint32_t)(uint8_t)in[i + 1] << 8;
		*p++ = b64c[v >> 18];
		*p++ = b64c[(v >> 12) & 63];
		*p++ = i + 1 < n ? b64c[(v >> 6) & 63] : '=';
		*p++ = '=';
	}
	*p = '\0';
	return out;
}

static int b64_val(char c)
{
	const char *p = c ? strchr(b64c, c) : NULL;

	return p ? (int)(p - b64c) : -1;
}

/* Decode into a NUL-terminated malloc()ed string; NULL when malformed. */
static char *b64_decode(const char *in, size_t *outlen)
{
	size_t n = strlen(in), i, o = 0;
	char *out;

	if (n % 4)
		return NULL;
	out = malloc(n / 4 * 3 + 1);
	if (!out)
		return NULL;
	for (i = 0; i < n; i += 4) {
		int a = b64_val(in[i]), b = b64_val(in[i + 1]);
		int c = in[i + 2] == '=' ? 0 : b64_val(in[i + 2]);
		int d = in[i + 3] == '=' ? 0 : b64_val(in[i + 3]);
		uint32_t v;

		if (a < 0 || b < 0 || c < 0 || d < 0 ||
		    ((in[i + 2] == '=' || in[i + 3] == '=') && i + 4 != n) ||
		    (in[i + 2] == '=' && in[i + 3] != '=')) {
			free(out);
			return NULL;
		}
		v = (uint32_t)a << 18 | (uint32_t)b << 12 | (uint32_t)c << 6 |
		    (uint32_t)d;
		out[o++] = (char)(v >> 16);
		if (in[i + 2] != '=')
			out[o++] = (char)(v >> 8);
		if (in[i + 3] != '=')
			out[o++] = (char)v;
	}
	out[o] = '\0';
	if (outlen)
		*outlen = o;
	return out;
}

/* ---------------------------------------------------------- transport */

struct reply {
	struct dfkv_http_buf buf;
	const atomic_bool *stop;	/* a feed's watch ends: abort */
	/* streaming (watch, keepalive): stop after the first decisive message */
	bool stream, done, failed;
	size_t parsed;
	struct json_object *first;	/* keepalive: the first message */
	struct json_object *last;	/* watch: the decisive message */
};

static bool stream_scan(struct reply *r);

static size_t write_cb(char *ptr, size_t sz, size_t nm, void *ud)
{
	struct reply *r = ud;
	size_t n = sz * nm;

	if (!dfkv_http_buf_add(&r->buf, ptr, n))
		return 0;
	if (r->stream && stream_scan(r))
		return 0;	/* got what we waited for: end the transfer */
	return n;
}

/* libcurl calls it at least about once a second, also while idle. */
static int progress_cb(void *ud, curl_off_t dt, curl_off_t dn, curl_off_t ut,
		       curl_off_t un)
{
	const struct reply *r = ud;

	(void)dt;
	(void)dn;
	(void)ut;
	(void)un;
	return atomic_load(&mdsd_stopping) ||
	       (r->stop && atomic_load(r->stop)) ? 1 : 0;
}

/* Errors that mean "this endpoint is unreachable: try the next one". */
static bool conn_error(CURLcode rc)
{
	return rc == CURLE_COULDNT_CONNECT || rc == CURLE_COULDNT_RESOLVE_HOST ||
	       rc == CURLE_OPERATION_TIMEDOUT || rc == CURLE_GOT_NOTHING ||
	       rc == CURLE_SEND_ERROR || rc == CURLE_RECV_ERROR;
}

/*
 * POST body to path at URL idx, with the TLS settings and (auth not
 * NULL) an Authorization header; the reply into r, the status in *code.
 */
static CURLcode perform(struct etcd *e, size_t idx, const char *path,
			const char *body, long timeout_ms, struct reply *r,
			const char *auth, long *code)
{
	const struct mdsd_config *cfg = e->cfg;
	struct curl_slist *hdr = NULL;
	char url[1200];
	struct dfkv_http_req req = {
		.method = "POST",
		.url = url,
		.body = body,
		.connect_timeout_ms = ETCD_CONNECT_MS,
		.timeout_ms = timeout_ms,
	};
	CURLcode rc;
	CURL *c;

	*code = 0;
	c = dfkv_curl.easy_init();
	if (!c)
		return CURLE_OUT_OF_MEMORY;
	dfkv_http_buf_free(&r->buf);
	r->buf.max = ETCD_REPLY_MAX;
	json_object_put(r->first);
	json_object_put(r->last);
	r->first = r->last = NULL;
	r->parsed = 0;
	r->done = r->failed = false;
	snprintf(url, sizeof(url), "%s%s", e->urls[idx], path);
	hdr = dfkv_curl.slist_append(hdr, "Content-Type: application/json");
	if (auth)
		hdr = dfkv_curl.slist_append(hdr, auth);
	req.hdrs = hdr;
	dfkv_http_setup(c, &req, &r->buf);
	/* the reply through write_cb, which watches streams */
	dfkv_curl.easy_setopt(c, CURLOPT_WRITEFUNCTION, write_cb);
	dfkv_curl.easy_setopt(c, CURLOPT_WRITEDATA, r);
	dfkv_curl.easy_setopt(c, CURLOPT_NOPROGRESS, 0L);
	dfkv_curl.easy_setopt(c, CURLOPT_XFERINFOFUNCTION, progress_cb);
	dfkv_curl.easy_setopt(c, CURLOPT_XFERINFODATA, r);
	if (cfg->etcd_cacert[0])
		dfkv_curl.easy_setopt(c, CURLOPT_CAINFO, cfg->etcd_cacert);
	if (cfg->etcd_cert[0]) {
		dfkv_curl.easy_setopt(c, CURLOPT_SSLCERT, cfg->etcd_cert);
		dfkv_curl.easy_setopt(c, CURLOPT_SSLKEY, cfg->etcd_key);
	}
	rc = dfkv_curl.easy_perform(c);
	dfkv_curl.easy_getinfo(c, CURLINFO_RESPONSE_CODE, code);
	dfkv_http_hdrs_free(hdr);	/* wipes the token */
	dfkv_curl.easy_cleanup(c);
	return rc;
}

/*
 * --etcd-user: a new token from /v3/auth/authenticate at URL idx into
 * e->auth.  0, or -EACCES when etcd refused the user or password.
 */
static int authenticate(struct etcd *e, size_t idx, long timeout_ms)
{
	struct json_object *req = json_object_new_object(), *resp = NULL, *t;
	struct reply r = { 0 };
	const char *body;
	char why[128];
	long code;
	CURLcode rc;
	int ret = -EACCES;

	json_object_object_add(req, "name",
			       json_object_new_string(e->cfg->etcd_user));
	json_object_object_add(req, "password",
			       json_object_new_string(e->password));
	body = json_object_to_json_string_ext(req, JSON_C_TO_STRING_PLAIN);
	rc = perform(e, idx, "/v3/auth/authenticate", body, timeout_ms, &r,
		     NULL, &code);
	OPENSSL_cleanse((char *)body, strlen(body));
	json_object_put(req);
	if (rc == CURLE_OK && code == 200 && r.buf.p)
		resp = mds_json_parse(r.buf.p, r.buf.len, why, sizeof(why));
	if (resp && json_object_object_get_ex(resp, "token", &t) &&
	    json_object_is_type(t, json_type_string) &&
	    strlen(json_object_get_string(t)) < sizeof(e->auth) - 16) {
		pthread_mutex_lock(&e->auth_lock);
		snprintf(e->auth, sizeof(e->auth), "Authorization: %s",
			 json_object_get_string(t));
		pthread_mutex_unlock(&e->auth_lock);
		ret = 0;
	} else if (rc != CURLE_OK) {
		ret = rc == CURLE_OPERATION_TIMEDOUT ? -ETIMEDOUT : -ECONNREFUSED;
	} else {
		logmsg(LOG_ERR, "etcd %s: authentication as '%s' failed: HTTP %ld: %.200s",
		       e->urls[idx], e->cfg->etcd_user, code, r.buf.p ? r.buf.p : "");
	}
	if (r.buf.p)
		OPENSSL_cleanse(r.buf.p, r.buf.len);
	json_object_put(resp);
	free(r.buf.p);
	return ret;
}

/*
 * The "Authorization: <token>" header to send to URL idx into auth ("" =
 * none: no --etcd-user); a token is fetched when there is none yet or
 * renew says the last one was refused.  0 or authenticate()'s error.
 */
static int token(struct etcd *e, size_t idx, long timeout_ms, bool renew,
		 char auth[sizeof(e->auth)])
{
	int ret;

	auth[0] = '\0';
	if (!e->cfg->etcd_user[0])
		return 0;
	pthread_mutex_lock(&e->auth_lock);
	if (renew)
		e->auth[0] = '\0';
	memcpy(auth, e->auth, sizeof(e->auth));
	pthread_mutex_unlock(&e->auth_lock);
	if (auth[0])
		return 0;
	ret = authenticate(e, idx, timeout_ms);
	if (ret)
		return ret;
	pthread_mutex_lock(&e->auth_lock);
	memcpy(auth, e->auth, sizeof(e->auth));
	pthread_mutex_unlock(&e->auth_lock);
	return 0;
}

/*
 * POST req to path.  Plain calls parse the reply into *resp.  Streaming
 * calls (r->stream) end when stream_scan says so or at timeout_ms; a
 * timeout is not an error for them (*timed_out tells).
 */
static int post(struct etcd *e, const char *path, struct json_object *req,
		long timeout_ms, struct reply *r, bool *timed_out)
{
	const char *body = json_object_to_json_string_ext(req, JSON_C_TO_STRING_PLAIN);
	size_t start = atomic_load(&e->cur), i;
	int err = -ECONNREFUSED;

	if (timed_out)
		*timed_out = false;
	for (i = 0; i < e->n_urls; i++) {
		size_t idx = (start + i) % e->n_urls;
		char auth[sizeof(e->auth)];
		long code = 0;
		CURLcode rc = CURLE_OK;
		int aerr;

		aerr = token(e, idx, timeout_ms, false, auth);
		if (!aerr) {
			rc = perform(e, idx, path, body, timeout_ms, r,
				     auth[0] ? auth : NULL, &code);
			if (rc == CURLE_OK && code == 401 && auth[0]) {
				/* expired or revoked: a new token, once */
				aerr = token(e, idx, timeout_ms, true, auth);
				if (!aerr)
					rc = perform(e, idx, path, body,
						     timeout_ms, r, auth, &code);
			}
		}
		OPENSSL_cleanse(auth, sizeof(auth));
		if (aerr == -EACCES)
			return -EIO;
		if (aerr) {
			err = aerr;	/* etcd unreachable: the next URL */
			continue;
		}
		if (r->stream && (r->done || r->failed) &&
		    (rc == CURLE_OK || rc == CURLE_WRITE_ERROR)) {
			atomic_store(&e->cur, idx);
			return r->failed ? -EIO : 0;
		}
		if (r->stream && rc == CURLE_OPERATION_TIMEDOUT && code == 200) {
			/* The stream was up and quiet for the whole wait. */
			atomic_store(&e->cur, idx);
			if (timed_out)
				*timed_out = true;
			return 0;
		}
		if (rc == CURLE_ABORTED_BY_CALLBACK)
			return -ECANCELED;
		if (rc == CURLE_OK && code == 200) {
			atomic_store(&e->cur, idx);
			return 0;
		}
		if (rc == CURLE_OK) {
			logmsg(LOG_VERBOSE, "etcd %s%s: HTTP %ld: %.200s",
			       e->urls[idx], path, code, r->buf.p ? r->buf.p : "");
			return -EIO;
		}
		logmsg(LOG_VERBOSE, "etcd %s%s: %s", e->urls[idx], path,
		       dfkv_curl.easy_strerror(rc));
		err = rc == CURLE_OPERATION_TIMEDOUT ? -ETIMEDOUT :
		      rc == CURLE_COULDNT_CONNECT ? -ECONNREFUSED : -EIO;
		if (!conn_error(rc))
			return err;
	}
	return err;
}

/* A plain JSON call. */
static int call(struct etcd *e, const char *path, struct json_object *req,
		struct json_object **resp)
{
	struct reply r = { 0 };
	char why[128];
	int ret;

	*resp = NULL;
	ret = post(e, path, req, ETCD_TIMEOUT_MS, &r, NULL);
	json_object_put(req);
	if (!ret) {
		*resp = r.buf.p ? mds_json_parse(r.buf.p, r.buf.len, why,
						 sizeof(why)) : NULL;
		if (!*resp) {
			logmsg(LOG_ERR, "etcd %s: bad reply: %s", path,
			       r.buf.p ? why : "empty");
			ret = -EIO;
		}
	}
	free(r.buf.p);
	json_object_put(r.first);
	json_object_put(r.last);
	return ret;
}

/* Scan the stream for complete messages; true when the transfer may end. */
static bool stream_scan(struct reply *r)
{
	while (r->parsed < r->buf.len) {
		struct json_tokener *tok;
		struct json_object *o, *res, *v;
		size_t pos = r->parsed;

		while (pos < r->buf.len && strchr(" \t\r\n", r->buf.p[pos]))
			pos++;
		if (pos == r->buf.len) {
			r->parsed = pos;
			return false;
		}
		tok = json_tokener_new();
		if (!tok)
			return r->failed = true;
		o = json_tokener_parse_ex(tok, r->buf.p + pos,
					  (int)(r->buf.len - pos));
		if (!o) {
			bool more = json_tokener_get_error(tok) ==
				    json_tokener_continue;

			json_tokener_free(tok);
			if (!more)
				r->failed = true;
			return !more;
		}
		r->parsed = pos + json_tokener_get_parse_end(tok);
		json_tokener_free(tok);
		if (!json_object_object_get_ex(o, "result", &res)) {
			/* {"error": ...} */
			json_object_put(o);
			r->failed = true;
			return true;
		}
		if (!r->first) {
			r->first = json_object_get(res);
		}
		if ((json_object_object_get_ex(res, "events", &v) &&
		     json_object_array_length(v) > 0) ||
		    (json_object_object_get_ex(res, "canceled", &v) &&
		     json_object_get_boolean(v)) ||
		    json_object_object_get_ex(res, "compact_revision", &v) ||
		    json_object_object_get_ex(res, "TTL", &v) ||
		    json_object_object_get_ex(res, "ID", &v)) {
			r->last = json_object_get(res);
			json_object_put(o);
			r->done = true;
			return true;
		}
		json_object_put(o);
	}
	return false;
}

/* ---------------------------------------------------------- helpers */

static int64_t get_i64(struct json_object *o, const char *key)
{
	struct json_object *v;

	if (!o || !json_object_object_get_ex(o, key, &v))
		return 0;
	if (json_object_is_type(v, json_type_string))
		return strtoll(json_object_get_string(v), NULL, 10);
	return json_object_get_int64(v);
}

static uint64_t header_rev(struct json_object *resp)
{
	struct json_object *h;

	if (!json_object_object_get_ex(resp, "header", &h))
		return 0;
	return (uint64_t)get_i64(h, "revision");
}

static void add_b64(struct json_object *o, const char *key, const char *s,
		    size_t n)
{
	char *b = b64_encode(s, n);

	json_object_object_add(o, key, json_object_new_string(b ? b : ""));
	free(b);
}

/* The key range of a prefix: [p, p with its last byte + 1). */
static void add_prefix_range(struct json_object *o, const char *p)
{
	size_t n = strlen(p);
	char *end = strdup(p);

	add_b64(o, "key", p, n);
	if (end && n) {
		end[n - 1]++;
		add_b64(o, "range_end", end, n);
	}
	free(end);
}

void etcd_entry_key(struct etcd *e, char *buf, size_t cap,
		    const char *group, enum mds_kind k, const char *id)
{
	snprintf(buf, cap, "%s/%s/%s/%s", e->prefix, group, mds_kind_name(k),
		 id ? id : "");
}

/* The stored value of an entry: its canonical JSON and its owner. */
static char *entry_value(const struct mds_entry *en,
			 const struct mds_owner *owner)
{
	struct json_object *o = mds_stored_to_json(en, owner);
	char *s = strdup(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN));

	json_object_put(o);
	return s;
}

/* Decode one kv into an entry and its owner (owner may be NULL); false
 * when it is not a valid record. */
static bool kv_entry(struct json_object *kv, const char *keyprefix,
		     struct mds_entry *en, struct mds_owner *owner)
{
	struct json_object *k, *v, *o;
	char *key, *val, why[128];
	size_t kl = strlen(keyprefix), vlen;
	bool ok = false;

	if (!json_object_object_get_ex(kv, "key", &k) ||
	    !json_object_object_get_ex(kv, "value", &v))
		return false;
	key = b64_decode(json_object_get_string(k), NULL);
	val = b64_decode(json_object_get_string(v), &vlen);
	if (key && val && !strncmp(key, keyprefix, kl) &&
	    mds_id_valid(key + kl)) {
		o = mds_json_parse(val, vlen, why, sizeof(why));
		if (o && !mds_stored_from_json(o, key + kl, NULL, en, owner,
					       why, sizeof(why)))
			ok = true;
		else
			logmsg(LOG_VERBOSE, "etcd: skipping bad record %s: %s",
			       key, why);
		json_object_put(o);
	}
	free(key);
	free(val);
	return ok;
}

/* A kv's etcd_meta: its lease and mod_revision (the owner: kv_entry). */
static void kv_meta(struct json_object *kv, struct etcd_meta *m)
{
	m->lease = get_i64(kv, "lease");
	m->mod = get_i64(kv, "mod_revision");
}

void etcd_event_decode(struct json_object *ev, const char *prefix,
		       struct etcd_event *out)
{
	struct json_object *kv, *k, *t;
	size_t pl = strlen(prefix);
	char *key;

	memset(out, 0, sizeof(*out));
	if (!json_object_object_get_ex(ev, "kv", &kv) ||
	    !json_object_object_get_ex(kv, "key", &k))
		return;
	out->rev = (uint64_t)get_i64(kv, "mod_revision");
	key = b64_decode(json_object_get_string(k), NULL);
	if (key && !strncmp(key, prefix, pl) && mds_id_valid(key + pl))
		snprintf(out->id, sizeof(out->id), "%s", key + pl);
	free(key);
	/* proto3 JSON leaves PUT (0) out; an unreadable put removes, as a
	 * read skips it */
	if (out->id[0] && !(json_object_object_get_ex(ev, "type", &t) &&
			    !strcmp(json_object_get_string(t), "DELETE"))) {
		out->put = kv_entry(kv, prefix, &out->en, &out->meta.owner);
		kv_meta(kv, &out->meta);
	}
}

/* Range over one key: its kv (a new reference) or NULL, and the revision. */
static int get_one(struct etcd *e, const char *key, struct json_object **kv,
		   uint64_t *rev)
{
	struct json_object *req = json_object_new_object(), *resp, *kvs;
	int ret;

	*kv = NULL;
	add_b64(req, "key", key, strlen(key));
	ret = call(e, "/v3/kv/range", req, &resp);
	if (ret)
		return ret;
	*rev = header_rev(resp);
	if (json_object_object_get_ex(resp, "kvs", &kvs) &&
	    json_object_array_length(kvs) > 0)
		*kv = json_object_get(json_object_array_get_idx(kvs, 0));
	json_object_put(resp);
	return 0;
}

/* Keep a lease alive; its remaining TTL in seconds (0: gone). */
static int keepalive(struct etcd *e, int64_t lease, int64_t *ttl)
{
	struct json_object *req = json_object_new_object();
	struct reply r = { .stream = true };
	bool timed_out;
	int ret;

	*ttl = 0;
	json_object_object_add(req, "ID", json_object_new_int64(lease));
	ret = post(e, "/v3/lease/keepalive", req, ETCD_TIMEOUT_MS, &r,
		   &timed_out);
	json_object_put(req);
	if (!ret && r.first)
		*ttl = get_i64(r.first, "TTL");
	else if (!ret)
		ret = -EIO;
	free(r.buf.p);
	json_object_put(r.first);
	json_object_put(r.last);
	return ret;
}

static int grant(struct etcd *e, uint64_t ttl_ms, int64_t *lease)
{
	struct json_object *req = json_object_new_object(), *resp;
	int64_t secs = (int64_t)((ttl_ms + 999) / 1000);
	int ret;

	json_object_object_add(req, "TTL", json_object_new_int64(secs));
	ret = call(e, "/v3/lease/grant", req, &resp);
	if (ret)
		return ret;
	*lease = get_i64(resp, "ID");
	json_object_put(resp);
	if (!*lease)
		return -EIO;
	counter_inc(C_LEASE_GRANTS);
	return 0;
}

/*
 * Give back a lease no entry uses (a registration refused or given up
 * after it was granted), so it does not live out its TTL in etcd; on
 * failure it does.
 */
static void revoke(struct etcd *e, int64_t lease)
{
	struct json_object *req = json_object_new_object(), *resp;

	json_object_object_add(req, "ID", json_object_new_int64(lease));
	if (call(e, "/v3/lease/revoke", req, &resp))
		logmsg(LOG_VERBOSE, "etcd: lease %lld left to its TTL",
		       (long long)lease);
	json_object_put(resp);
}

/* ---------------------------------------------------------- the ops */

static int etcd_list(struct backend *b, const char *group, enum mds_kind k,
		     struct mds_list *out);

uint64_t etcd_weight_sum(const struct mds_list *l, const char *id,
			 uint64_t add)
{
	for (size_t i = 0; i < l->n; i++)
		if (strcmp(l->v[i].id, id))
			add += l->v[i].weight;
	return add;
}

/*
 * Would en, replacing a member of weight old (0: a new one), raise the
 * group's member weight past the cap, by a read of the group (no current
 * shared listing)?  0, -EDQUOT or the read's error; *rev: the revision
 * the sum was read at, which the write's transaction then compares on.
 */
static int weight_read(struct etcd *e, const char *group,
		       const struct mds_entry *en, uint64_t *rev)
{
	struct mds_list l;
	uint64_t sum;
	int ret;

	ret = etcd_list(&e->b, group, MDS_MEMBERS, &l);
	if (ret)
		return ret;
	*rev = l.epoch;
	sum = etcd_weight_sum(&l, en->id, en->weight);
	mds_list_free(&l);
	return sum > e->cfg->max_group_weight ? -EDQUOT : 0;
}

/* A compare: key's mod_revision equals mod (0: the key is absent). */
static struct json_object *cmp_mod(const char *key, int64_t mod)
{
	struct json_object *c = json_object_new_object();

	add_b64(c, "key", key, strlen(key));
	json_object_object_add(c, "target", json_object_new_string("MOD"));
	json_object_object_add(c, "result", json_object_new_string("EQUAL"));
	json_object_object_add(c, "mod_revision", json_object_new_int64(mod));
	return c;
}

/* A compare: no key under prefix was written after revision rev. */
static struct json_object *cmp_unchanged(const char *prefix, uint64_t rev)
{
	struct json_object *c = json_object_new_object();

	add_prefix_range(c, prefix);
	json_object_object_add(c, "target", json_object_new_string("MOD"));
	json_object_object_add(c, "result", json_object_new_string("LESS"));
	json_object_object_add(c, "mod_revision",
			       json_object_new_int64((int64_t)rev + 1));
	return c;
}

/*
 * One transaction: the ops of success (an array of request_put or
 * request_delete_range, taken) when every compare (taken) holds.  0 with
 * *ok and the revision, or call()'s error.
 */
static int txn(struct etcd *e, struct json_object *compare,
	       struct json_object *success, bool *ok, uint64_t *rev)
{
	struct json_object *req = json_object_new_object(), *resp, *v;
	int ret;

	json_object_object_add(req, "compare", compare);
	json_object_object_add(req, "success", success);
	ret = call(e, "/v3/kv/txn", req, &resp);
	if (ret)
		return ret;
	/* proto3 JSON leaves a false "succeeded" out */
	*ok = json_object_object_get_ex(resp, "succeeded", &v) &&
	      json_object_get_boolean(v);
	*rev = header_rev(resp);
	json_object_put(resp);
	return 0;
}

/* Attempts of a write whose transaction lost to another writer. */
#define ETCD_TXN_TRIES	8

/* The entry at key: its kv (a new reference, NULL: absent), decoded. */
static int read_entry(struct etcd *e, const char *key, const char *group,
		      enum mds_kind k, struct json_object **kv,
		      struct mds_entry *cur, struct mds_owner *owner,
		      uint64_t *rev)
{
	char kp[512];
	int ret;

	memset(cur, 0, sizeof(*cur));
	memset(owner, 0, sizeof(*owner));
	counter_inc(C_ETCD_ENTRY_READS);
	ret = get_one(e, key, kv, rev);
	if (ret || !*kv)
		return ret;
	etcd_entry_key(e, kp, sizeof(kp), group, k, NULL);
	if (!kv_entry(*kv, kp, cur, owner)) {
		/* unreadable: no owner, nothing to keep */
		memset(cur, 0, sizeof(*cur));
		memset(owner, 0, sizeof(*owner));
	}
	return 0;
}

/* The entry as a write sees it: stored (exists), its owner and etcd_meta. */
struct put_state {
	bool exists;
	struct mds_entry cur;
	struct etcd_meta meta;
	uint64_t rev;			/* the revision it was read at */
};

/* The entry at key read from etcd (one key's range) into st. */
static int put_state_read(struct etcd *e, const char *key, const char *group,
			  enum mds_kind k, struct put_state *st)
{
	struct json_object *kv;
	int ret;

	memset(&st->meta, 0, sizeof(st->meta));
	ret = read_entry(e, key, group, k, &kv, &st->cur, &st->meta.owner,
			 &st->rev);
	if (ret)
		return ret;
	st->exists = kv;
	if (kv) {
		kv_meta(kv, &st->meta);
		json_object_put(kv);
	}
	return 0;
}

/* A request_put of key with value val on lease. */
static struct json_object *put_op(const char *key, const char *val,
				  int64_t lease)
{
	struct json_object *put = json_object_new_object();
	struct json_object *op = json_object_new_object();

	add_b64(put, "key", key, strlen(key));
	add_b64(put, "value", val, strlen(val));
	json_object_object_add(put, "lease", json_object_new_int64(lease));
	json_object_object_add(op, "request_put", put);
	return op;
}

/* The compare that no member of group was written after rev. */
static struct json_object *cmp_members(struct etcd *e, const char *group,
				       uint64_t rev)
{
	char members[512];

	etcd_entry_key(e, members, sizeof(members), group, MDS_MEMBERS, NULL);
	return cmp_unchanged(members, rev);
}

/*
 * A member write that raises its group's weight, waiting to commit:
 * concurrent ones of a group on this mdsd commit together, in one
 * transaction comparing the group once (a group commit), so that nodes
 * registering at once do not each lose to the others and try again.
 */
struct commit {
	struct commit *next;
	const char *group, *key, *val;
	int64_t lease, mod;		/* mod: the key's as seen (0: absent) */
	uint32_t weight, old;		/* old: its weight as seen (0: none) */
	uint64_t need;			/* the listing's epoch it needs */
	int ret;
	uint64_t epoch, used;		/* used: the listing's epoch summed */
	bool done;			/* under e->lock: ret, epoch, used set
					 * (then c may go at once) */
};

/*
 * Commit batch (a list of one group's commits, distinct keys) against
 * the group's shared listing: the weight summed from it, the writes that
 * fit admitted in order (the others -EDQUOT) and written in one
 * transaction that also compares each key's mod_revision and that no
 * member was written after the listing's epoch.  -ENODATA: no working
 * watch (each write reads the group itself); -ETIMEDOUT: the listing
 * stayed behind for the etcd timeout.
 */
static void commit_run(struct etcd *e, struct commit *batch)
{
	struct json_object *cmp, *ops;
	struct feed_view v;
	struct commit *c;
	uint64_t need = 0, rev = 0;
	int64_t sum;
	bool ok = false, any = false;
	int ret;

	for (c = batch; c; c = c->next)
		need = c->need > need ? c->need : need;
	ret = feed_view(e, batch->group, MDS_MEMBERS, "", need,
			ETCD_TIMEOUT_MS, &v);
	if (ret <= 0) {
		/* behind (a loaded etcd or mdsd): 503, not a read that
		 * would load them more; no watch: each reads the group */
		for (c = batch; c; c = c->next)
			c->ret = ret ? -ENODATA : -ETIMEDOUT;
		return;
	}
	/* v.others: the whole group's weight, each key's as seen in it (the
	 * compares make it so, or the transaction fails) */
	sum = (int64_t)v.others;
	for (c = batch; c; c = c->next)
		sum -= c->old;
	cmp = json_object_new_array();
	ops = json_object_new_array();
	for (c = batch; c; c = c->next) {
		counter_inc(C_ETCD_CACHED_SUMS);
		c->used = v.rev;
		if (sum + c->weight > (int64_t)e->cfg->max_group_weight) {
			c->ret = -EDQUOT;
			continue;
		}
		sum += c->weight;
		c->ret = 0;
		any = true;
		json_object_array_add(cmp, cmp_mod(c->key, c->mod));
		json_object_array_add(ops, put_op(c->key, c->val, c->lease));
	}
	if (!any) {
		json_object_put(cmp);
		json_object_put(ops);
		return;
	}
	json_object_array_add(cmp, cmp_members(e, batch->group, v.rev));
	ret = txn(e, cmp, ops, &ok, &rev);
	for (c = batch; c; c = c->next) {
		if (ret)
			c->ret = ret;
		else if (!ok)
			c->ret = -EAGAIN;	/* -EDQUOT too: judged again */
		c->epoch = rev;
	}
}

/*
 * Commit c with the other writes of its group waiting: the first to come
 * runs the group commit of all those of its group (one key once), the
 * others wait for it.  c's result: 0 (c->epoch), -EDQUOT, -EAGAIN (the
 * transaction lost: try again past c->used), -ENODATA or an etcd error.
 */
static int commit_wait(struct etcd *e, struct commit *c)
{
	struct commit **pp;

	pthread_mutex_lock(&e->lock);
	for (pp = &e->commits; *pp; pp = &(*pp)->next)
		;
	*pp = c;
	while (!c->done) {
		struct commit *batch = NULL, **tail = &batch, *next;

		if (e->committing) {
			pthread_cond_wait(&e->commit_cond, &e->lock);
			continue;
		}
		/* lead: take the group's waiting writes, a key once */
		for (pp = &e->commits; *pp;) {
			struct commit *x = *pp, *y;

			for (y = batch; y && strcmp(y->key, x->key); y = y->next)
				;
			if (strcmp(x->group, c->group) || y) {
				pp = &x->next;
				continue;
			}
			*pp = x->next;
			x->next = NULL;
			*tail = x;
			tail = &x->next;
		}
		e->committing = true;
		pthread_mutex_unlock(&e->lock);
		commit_run(e, batch);
		pthread_mutex_lock(&e->lock);
		for (; batch; batch = next) {
			next = batch->next;
			batch->done = true;
		}
		e->committing = false;
		pthread_cond_broadcast(&e->commit_cond);
	}
	pthread_mutex_unlock(&e->lock);
	return c->ret;
}

/*
 * One attempt of etcd_put: -EAGAIN when another write came between.
 * The entry and the group's weight come from the group's shared listing
 * (feed_view): none is read while it is current; attempt 0 uses it when
 * it is current now (else the entry is read: a heartbeat never waits),
 * a later one (and the weight of a member that grows) waits for it, and
 * past the revision the last attempt saw (*seen), which the conflicting
 * write came after.  An owner refusing the writer is read again (the
 * listing may be behind a removal).  A member write raising the group's
 * weight commits with the others of its group (commit_wait); without a
 * current listing it reads the group for the cap.  A lease granted for a
 * write that lost is kept in *spare for the next attempt (0: none), so a
 * contended registration grants one lease, and revoked when no attempt
 * used it (refused over the weight cap, or given up).
 */
static int put_once(struct etcd *e, const char *group, enum mds_kind k,
		    const struct mds_entry *en, const struct mds_writer *w,
		    int attempt, uint64_t *seen, int64_t *spare,
		    uint64_t *epoch, bool *created)
{
	unsigned int wait = attempt ? ETCD_TIMEOUT_MS : 0;
	uint64_t need = attempt && *seen ? *seen + 1 : 0, sum_rev = 0;
	struct json_object *ops, *cmp;
	struct mds_owner owner;
	struct put_state st = { 0 };
	struct feed_view v;
	char key[512], *val = NULL;
	int64_t lease = 0, ttl = 0;
	bool ok, fed, raise;
	int ret;

	etcd_entry_key(e, key, sizeof(key), group, k, en->id);
	fed = feed_view(e, group, k, en->id, need, wait, &v) > 0;
	if (fed && (!v.have || mds_owner_allows(&v.meta.owner, w))) {
		st = (struct put_state){ .exists = v.have, .cur = v.en,
					 .meta = v.meta, .rev = v.rev };
	} else {
		ret = put_state_read(e, key, group, k, &st);
		if (ret)
			return ret;
	}
	*created = !st.exists;
	*seen = fed ? v.rev : 0;
	owner = st.exists ? st.meta.owner : mds_owner_of(w);
	if (st.exists && !mds_owner_allows(&owner, w))
		return -EPERM;
	raise = k == MDS_MEMBERS && en->weight > st.cur.weight;
	if (st.exists) {
		lease = st.meta.lease;
		/* Same TTL: the lease can be kept. */
		if (lease && st.cur.ttl_ms == en->ttl_ms) {
			ret = keepalive(e, lease, &ttl);
			if (ret)
				return ret;
		}
		if (ttl > 0 && mds_entry_equal(&st.cur, en)) {
			counter_inc(C_RENEWALS);
			*epoch = st.rev;
			return 0;
		}
		if (ttl <= 0)
			lease = 0;
	}
	val = entry_value(en, &owner);
	if (!val)
		return -ENOMEM;
	if (!lease) {
		if (!*spare) {
			ret = grant(e, en->ttl_ms, spare);
			if (ret)
				goto out;
		}
		lease = *spare;
	}
	if (raise) {
		struct commit c = {
			.group = group, .key = key, .val = val, .lease = lease,
			.mod = st.exists ? st.meta.mod : 0,
			.weight = en->weight, .old = st.cur.weight,
			.need = need,
		};

		ret = commit_wait(e, &c);
		*epoch = c.epoch;
		if (ret == -EAGAIN)
			*seen = c.used;
		if (ret != -ENODATA)
			goto done;
		/* no current listing: the cap by a read of the group */
		ret = weight_read(e, group, en, &sum_rev);
		if (ret)
			goto out;
	}
	ops = json_object_new_array();
	json_object_array_add(ops, put_op(key, val, lease));
	cmp = json_object_new_array();
	json_object_array_add(cmp, cmp_mod(key, st.exists ? st.meta.mod : 0));
	if (sum_rev)	/* the weights summed are still the group's: no
			 * member was added or changed since (a removal only
			 * lowers the sum) */
		json_object_array_add(cmp, cmp_members(e, group, sum_rev));
	ret = txn(e, cmp, ops, &ok, epoch);
	if (!ret && !ok)
		ret = -EAGAIN;	/* *spare: the next attempt's, or runs out */
done:
	if (ret)
		goto out;
	if (lease == *spare)
		*spare = 0;	/* in use */
	feed_wrote(e, group, k, en->id, *epoch);
	counter_inc(*created ? C_REGISTRATIONS : C_RENEWALS);
	counter_inc(C_EPOCH_BUMPS);
out:
	free(val);
	return ret;
}

static int etcd_put(struct backend *b, const char *group, enum mds_kind k,
		    const struct mds_entry *en, const struct mds_writer *w,
		    uint64_t *epoch, bool *created)
{
	int64_t spare = 0;
	uint64_t seen = 0;
	int ret = -EAGAIN;

	for (int i = 0; i < ETCD_TXN_TRIES && ret == -EAGAIN; i++)
		ret = put_once(to_etcd(b), group, k, en, w, i, &seen, &spare,
			       epoch, created);
	if (spare)	/* granted, and no write used it */
		revoke(to_etcd(b), spare);
	return ret;
}

/* A client-token delete: the owner checked and the key deleted in one
 * transaction on its mod_revision; -EAGAIN when it changed between. */
static int del_owned_once(struct etcd *e, const char *key, const char *group,
			  enum mds_kind k, const struct mds_writer *w,
			  uint64_t *epoch)
{
	struct json_object *kv, *dr, *op, *ops, *cmp;
	struct mds_owner owner;
	struct mds_entry cur;
	int64_t mod;
	bool ok;
	int ret;

	ret = read_entry(e, key, group, k, &kv, &cur, &owner, epoch);
	if (ret)
		return ret;
	if (!kv)
		return -ENOENT;
	mod = get_i64(kv, "mod_revision");
	json_object_put(kv);
	if (!mds_owner_allows(&owner, w))
		return -EPERM;
	dr = json_object_new_object();
	add_b64(dr, "key", key, strlen(key));
	op = json_object_new_object();
	json_object_object_add(op, "request_delete_range", dr);
	ops = json_object_new_array();
	json_object_array_add(ops, op);
	cmp = json_object_new_array();
	json_object_array_add(cmp, cmp_mod(key, mod));
	ret = txn(e, cmp, ops, &ok, epoch);
	return ret ? ret : ok ? 0 : -EAGAIN;
}

static int etcd_del(struct backend *b, const char *group, enum mds_kind k,
		    const char *id, const struct mds_writer *w,
		    uint64_t *epoch)
{
	struct etcd *e = to_etcd(b);
	struct json_object *req, *resp;
	char key[512];
	int ret = -EAGAIN;

	etcd_entry_key(e, key, sizeof(key), group, k, id);
	if (w && w->must_own) {
		for (int i = 0; i < ETCD_TXN_TRIES && ret == -EAGAIN; i++)
			ret = del_owned_once(e, key, group, k, w, epoch);
	} else {
		req = json_object_new_object();
		add_b64(req, "key", key, strlen(key));
		ret = call(e, "/v3/kv/deleterange", req, &resp);
		if (ret)
			return ret;
		*epoch = header_rev(resp);
		ret = get_i64(resp, "deleted") > 0 ? 0 : -ENOENT;
		json_object_put(resp);
	}
	if (!ret) {
		feed_wrote(e, group, k, id, *epoch);
		counter_inc(C_DEREGISTRATIONS);
		counter_inc(C_EPOCH_BUMPS);
	}
	return ret;
}

/*
 * Watch the keys under prefix from revision after + 1, at most wait_ms
 * (stop: NULL, or set to end it within about a second).  0: a change,
 * its events in *events (NULL when etcd canceled the watch or compacted
 * past after: the caller reads the keys again); 1: nothing changed in
 * wait_ms; -ECANCELED: stop or shutdown; another error: no watch (after
 * a pause, so that a caller retrying does not spin).
 */
int etcd_watch(struct etcd *e, const char *prefix, uint64_t after,
	       unsigned int wait_ms, const atomic_bool *stop,
	       struct json_object **events)
{
	struct json_object *req = json_object_new_object();
	struct json_object *cr = json_object_new_object(), *ev;
	struct reply r = { .stream = true, .stop = stop };
	bool timed_out = false;
	int ret;

	counter_inc(C_ETCD_WATCHES);
	add_prefix_range(cr, prefix);
	json_object_object_add(cr, "start_revision",
			       json_object_new_int64((int64_t)(after + 1)));
	json_object_object_add(req, "create_request", cr);
	ret = post(e, "/v3/watch", req, wait_ms ? wait_ms : 1, &r, &timed_out);
	json_object_put(req);
	free(r.buf.p);
	json_object_put(r.first);
	*events = NULL;
	if (!ret && !timed_out && r.last &&
	    json_object_object_get_ex(r.last, "events", &ev) &&
	    json_object_array_length(ev) > 0)
		*events = json_object_get(ev);
	json_object_put(r.last);
	if (!ret && timed_out)
		return 1;
	if (ret && ret != -ECANCELED) {
		struct timespec ts = { 0, 200 * 1000000L };

		logmsg(LOG_VERBOSE, "etcd: watch failed: %s", strerror(-ret));
		nanosleep(&ts, NULL);
	}
	return ret;
}

/* Read a group's entries under prefix (one etcd range) into out. */
int etcd_range_group(struct etcd *e, const char *prefix,
		     struct mds_list *out, struct etcd_meta **meta)
{
	struct json_object *req, *resp, *kvs, *kv;
	struct etcd_meta *m = NULL;
	size_t i, n;
	int ret;

	memset(out, 0, sizeof(*out));
	if (meta)
		*meta = NULL;
	counter_inc(C_ETCD_GROUP_READS);
	req = json_object_new_object();
	add_prefix_range(req, prefix);
	ret = call(e, "/v3/kv/range", req, &resp);
	if (ret)
		return ret;
	out->epoch = header_rev(resp);
	if (json_object_object_get_ex(resp, "kvs", &kvs) &&
	    (n = json_object_array_length(kvs)) > 0) {
		out->v = calloc(n, sizeof(*out->v));
		m = meta ? calloc(n, sizeof(*m)) : NULL;
		if (!out->v || (meta && !m)) {
			free(out->v);
			free(m);
			out->v = NULL;
			json_object_put(resp);
			return -ENOMEM;
		}
		for (i = 0; i < n; i++) {
			kv = json_object_array_get_idx(kvs, i);
			if (!kv_entry(kv, prefix, &out->v[out->n],
				      m ? &m[out->n].owner : NULL))
				continue;
			if (m)
				kv_meta(kv, &m[out->n]);
			out->n++;
		}
	}
	json_object_put(resp);
	if (meta)
		*meta = m;
	return 0;
}

static int etcd_list(struct backend *b, const char *group, enum mds_kind k,
		     struct mds_list *out)
{
	struct etcd *e = to_etcd(b);
	char prefix[512];

	memset(out, 0, sizeof(*out));
	etcd_entry_key(e, prefix, sizeof(prefix), group, k, NULL);
	return etcd_range_group(e, prefix, out, NULL);
}

static int etcd_wait_begin(struct backend *b, const char *group,
			   enum mds_kind k, uint64_t after)
{
	return feed_wait_begin(to_etcd(b), group, k, after);
}

/* The feed's listing when its watch works, else a read of etcd. */
static int etcd_wait_list(struct backend *b, const char *group,
			  enum mds_kind k, uint64_t after,
			  struct mds_list *out)
{
	if (feed_copy(to_etcd(b), group, k, after, out))
		return 0;
	return etcd_list(b, group, k, out);
}

static void etcd_wait_end(struct backend *b, const char *group,
			  enum mds_kind k)
{
	feed_wait_end(to_etcd(b), group, k);
}

static void etcd_set_notify(struct backend *b, struct backend_notify n)
{
	struct etcd *e = to_etcd(b);

	pthread_mutex_lock(&e->lock);
	e->notify = n;
	pthread_mutex_unlock(&e->lock);
}

static int etcd_groups(struct backend *b, struct mds_names *out)
{
	struct etcd *e = to_etcd(b);
	struct json_object *req = json_object_new_object(), *resp, *kvs, *k;
	char prefix[160];
	size_t i, pl;
	int ret;

	memset(out, 0, sizeof(*out));
	snprintf(prefix, sizeof(prefix), "%s/", e->prefix);
	pl = strlen(prefix);
	add_prefix_range(req, prefix);
	json_object_object_add(req, "keys_only", json_object_new_boolean(1));
	ret = call(e, "/v3/kv/range", req, &resp);
	if (ret)
		return ret;
	if (json_object_object_get_ex(resp, "kvs", &kvs)) {
		for (i = 0; i < json_object_array_length(kvs) && !ret; i++) {
			char *key, *slash;

			if (!json_object_object_get_ex(json_object_array_get_idx(kvs, i),
						       "key", &k))
				continue;
			key = b64_decode(json_object_get_string(k), NULL);
			if (key && !strncmp(key, prefix, pl)) {
				slash = strchr(key + pl, '/');
				if (slash) {
					*slash = '\0';
					if (mds_id_valid(key + pl))
						ret = mds_names_add(out, key + pl);
				}
			}
			free(key);
		}
	}
	json_object_put(resp);
	return ret;
}

static bool etcd_ready(struct backend *b)
{
	return atomic_load(&to_etcd(b)->ready);
}

static bool probe(struct etcd *e)
{
	struct json_object *req = json_object_new_object(), *resp;
	int ret;

	add_prefix_range(req, e->prefix);
	json_object_object_add(req, "count_only", json_object_new_boolean(1));
	ret = call(e, "/v3/kv/range", req, &resp);
	json_object_put(resp);
	return !ret;
}

static void *prober_main(void *arg)
{
	struct etcd *e = arg;
	struct timespec ts;
	bool first = true, last = false;
	uint64_t deadline;

	pthread_mutex_lock(&e->lock);
	while (!e->stopping) {
		bool ok;

		pthread_mutex_unlock(&e->lock);
		ok = probe(e);
		if (first || (ok == last && ok != atomic_load(&e->ready))) {
			if (ok != atomic_load(&e->ready))
				logmsg(LOG_INFO, "etcd: %s", ok ? "ready" :
				       "unreachable: not ready");
			atomic_store(&e->ready, ok);
			atomic_store(&metrics.ready, ok);
		}
		first = false;
		last = ok;
		pthread_mutex_lock(&e->lock);
		deadline = now_mono_ms() + ETCD_PROBE_MS;
		ts.tv_sec = (time_t)(deadline / 1000);
		ts.tv_nsec = (long)(deadline % 1000) * 1000000L;
		if (!e->stopping)
			pthread_cond_timedwait(&e->cond, &e->lock, &ts);
	}
	pthread_mutex_unlock(&e->lock);
	return NULL;
}

static void etcd_shutdown(struct backend *b)
{
	struct etcd *e = to_etcd(b);

	pthread_mutex_lock(&e->lock);
	e->stopping = true;
	pthread_cond_broadcast(&e->cond);
	pthread_cond_broadcast(&e->feed_cond);
	feeds_stop(e);
	pthread_mutex_unlock(&e->lock);
}

static void etcd_destroy(struct backend *b)
{
	struct etcd *e = to_etcd(b);
	size_t i;

	etcd_shutdown(b);
	if (e->prober_started)
		pthread_join(e->prober, NULL);
	/* the feeds' threads (detached) end within a second of stop */
	pthread_mutex_lock(&e->lock);
	while (e->n_feeds)
		pthread_cond_wait(&e->cond, &e->lock);
	pthread_mutex_unlock(&e->lock);
	for (i = 0; i < e->n_urls; i++)
		free(e->urls[i]);
	pthread_cond_destroy(&e->cond);
	pthread_cond_destroy(&e->feed_cond);
	pthread_cond_destroy(&e->commit_cond);
	pthread_mutex_destroy(&e->lock);
	pthread_mutex_destroy(&e->auth_lock);
	OPENSSL_cleanse(e->password, sizeof(e->password));
	OPENSSL_cleanse(e->auth, sizeof(e->auth));
	free(e);
}

static const struct backend_ops etcd_ops = {
	.name = "etcd",
	.put = etcd_put,
	.del = etcd_del,
	.list = etcd_list,
	.wait_begin = etcd_wait_begin,
	.wait_list = etcd_wait_list,
	.wait_end = etcd_wait_end,
	.set_notify = etcd_set_notify,
	.groups = etcd_groups,
	.ready = etcd_ready,
	.shutdown = etcd_shutdown,
	.destroy = etcd_destroy,
};

struct backend *etcd_backend_new(const struct mdsd_config *cfg)
{
	struct etcd *e = calloc(1, sizeof(*e));
	pthread_condattr_t ca;
	char *list, *tok, *save = NULL;

	if (!e)
		return NULL;
	e->b.ops = &etcd_ops;
	e->cfg = cfg;
	snprintf(e->prefix, sizeof(e->prefix), "%s", cfg->etcd_prefix);
	/* No trailing slash: keys are PREFIX/GROUP/... */
	while (strlen(e->prefix) > 1 && e->prefix[strlen(e->prefix) - 1] == '/')
		e->prefix[strlen(e->prefix) - 1] = '\0';
	pthread_mutex_init(&e->lock, NULL);
	pthread_mutex_init(&e->auth_lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&e->cond, &ca);
	pthread_cond_init(&e->feed_cond, &ca);
	pthread_cond_init(&e->commit_cond, NULL);
	pthread_condattr_destroy(&ca);
	list = strdup(cfg->etcd);
	for (tok = list ? strtok_r(list, ",", &save) : NULL; tok;
	     tok = strtok_r(NULL, ",", &save)) {
		size_t n = strlen(tok);

		while (n && tok[n - 1] == '/')
			tok[--n] = '\0';
		if (!n)
			continue;
		if (e->n_urls == ETCD_MAX_URLS ||
		    (strncmp(tok, "http://", 7) && strncmp(tok, "https://", 8))) {
			logmsg(LOG_ERR, "etcd: bad URL '%s' (http://HOST:PORT, at most %d)",
			       tok, ETCD_MAX_URLS);
			free(list);
			etcd_destroy(&e->b);
			return NULL;
		}
		e->urls[e->n_urls++] = strdup(tok);
	}
	free(list);
	if (!e->n_urls) {
		logmsg(LOG_ERR, "etcd: no URL");
		etcd_destroy(&e->b);
		return NULL;
	}
	if (cfg->etcd_password_file[0]) {
		char why[1200];

		/* the token file's rules: mode 0600, one line, no spaces */
		if (dfkv_token_read(cfg->etcd_password_file, e->password,
				    sizeof(e->password), why, sizeof(why))) {
			logmsg(LOG_ERR, "etcd password: %s", why);
			etcd_destroy(&e->b);
			return NULL;
		}
	}
	if (pthread_create(&e->prober, NULL, prober_main, e)) {
		etcd_destroy(&e->b);
		return NULL;
	}
	e->prober_started = true;
	logmsg(LOG_INFO, "etcd: %zu endpoint(s), prefix %s", e->n_urls,
	       e->prefix);
	return &e->b;
}
