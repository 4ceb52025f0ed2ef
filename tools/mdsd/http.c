// SPDX-License-Identifier: GPL-2.0
/*
 * mdsd HTTP/1.1 + JSON API (SPEC.md section 7) on libmicrohttpd.
 *
 *   GET    /v1/groups
 *   GET    /v1/groups/{g}/members[?wait_epoch=N[&wait_ms=MS]]
 *   GET|PUT|DELETE /v1/groups/{g}/members/{id}
 *   (the same under /clients)
 *   GET    /readyz /healthz /metrics
 *
 * libmicrohttpd's one epoll thread reads and writes every connection and
 * never waits for the backend: a complete request is run by one of
 * --http-threads request threads (jobs.c), its connection suspended
 * (MHD_suspend_connection) until the answer is queued, so a blocking call
 * (etcd) holds that thread only, never another connection; a PUT of an entry
 * written before (a heartbeat) is queued ahead.  A long-poll holds no thread
 * while it waits (below).  An idle timeout for slow clients, a bounded body
 * (413), strict JSON and ids (400), 404 for unknown paths, 405 with an Allow
 * header for wrong methods.  Errors are {"error": "..."}.
 *
 * Credentials (SPEC 7): with --member-token-file every PUT and DELETE
 * needs "Authorization: Bearer <token>", checked before anything else of
 * the request (401 with WWW-Authenticate otherwise; the body is not
 * read).  The member token writes anything; the client token
 * (--client-token-file) writes /clients only (403 on /members), and of
 * them only an entry its client key owns: such a write needs
 * "X-Dfkv-Client-Key: <key>" (400 without), the first PUT of an id
 * records the key's SHA-256 as the entry's owner, a write of an entry
 * another key owns is 403 (the backend compares).
 *
 * Bounds, each refusing the peer that reaches it: libmicrohttpd's
 * connection limits (in all and per peer address); the last
 * --reserved-write-connections connections serve only authenticated
 * writes, so heartbeats get through whatever reads and long-polls hold
 * (others: 503 and the connection closed); long-polls are capped in all
 * and per peer address (429).
 *
 * A long-poll (wait_epoch) takes a slot, which records its group, kind,
 * epoch and deadline, and asks the backend (wait_begin, never blocking)
 * whether its answer is due.  When it is not, it parks: its connection
 * stays suspended and its request thread moves on.  It is answered (on a
 * request thread again) at the first of: the backend's notify (a change
 * of the group past its epoch: the memory backend's every change, the
 * etcd backend's shared group watch), its deadline, its peer's hang-up,
 * shutdown.  One watcher thread keeps the deadlines (its epoll_wait's
 * timeout) and watches the waiting sockets
 * (MHD_CONNECTION_INFO_CONNECTION_FD) for a hang-up, which libmicrohttpd
 * does not see on a suspended connection: a gone peer's connection is
 * closed at once, its slot free.  The answer is the backend's wait_list
 * (the etcd feed's shared listing), built once per listing and queued on
 * every long-poll it answers.
 */
#include <errno.h>
#include <limits.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <microhttpd.h>
#include <openssl/crypto.h>
#include <openssl/sha.h>

#include "http.h"
#include "jobs.h"
#include "mdsd.h"
#include "runtime.h"

/* A peer address (the port left out), the key of the per-peer caps. */
struct peer {
	sa_family_t family;
	unsigned char a[16];
};

/*
 * A long-poll's slot (under lp_lock); data.u64 of its epoll registration:
 * gen << 32 | i.
 */
struct waiter {
	bool used;
	uint32_t gen;
	bool gone;		/* the peer hung up */
	bool due;		/* the group changed past after; or stopping */
	bool timed_out;		/* its deadline passed while it waited */
	bool suspended;		/* parked, not woken yet */
	struct peer peer;
	struct req *r;
	enum mds_kind k;
	char group[MDS_ID_MAX + 1];
	uint64_t after, deadline;	/* deadline: monotonic ms */
};

#define WATCH_KICK	UINT64_MAX	/* data.u64 of the kick eventfd */

/*
 * The entries this mdsd wrote lately, by a hash of their path: a PUT of
 * one of them is most likely a heartbeat and runs ahead of the requests
 * queued (jobs_queue's urgent), so that registrations (each reading its
 * whole group from etcd) do not hold the heartbeats past their TTL.
 * Direct-mapped, a collision overwrites: it only orders the queue.
 */
#define RENEWED_SLOTS	65536

/*
 * A long-poll answer built once and queued on every long-poll answered
 * with the same listing (libmicrohttpd's responses are reference counted
 * and may go out on many connections); the last SHARED_ANSWERS built.
 */
#define SHARED_ANSWERS	16
struct shared_answer {
	struct MHD_Response *r;		/* NULL: none */
	char group[MDS_ID_MAX + 1];
	enum mds_kind k;
	uint64_t epoch;
	uint64_t used;			/* ans_tick of its last use */
};

struct http_server {
	struct MHD_Daemon *d;
	const struct mdsd_config *cfg;
	struct backend *b;
	/* long-polls: cfg->max_long_polls slots */
	pthread_mutex_t lp_lock;
	struct waiter *lp;
	bool stopping;		/* requests run inline, nothing waits */
	struct jobs *jobs;	/* the request threads */
	/* the watcher of deadlines and hang-ups: its epoll and wake-up */
	int ep, kick_fd;
	uint64_t next_due;	/* the watcher's next deadline (ms) */
	bool watcher_stop;
	pthread_t watcher;
	bool watching;
	pthread_mutex_t ans_lock;
	struct shared_answer ans[SHARED_ANSWERS];
	uint64_t ans_tick;
	atomic_uint_least64_t renewed[RENEWED_SLOTS];
};

enum auth { AUTH_OK, AUTH_MISSING, AUTH_WRONG };
enum role { ROLE_CLIENT, ROLE_MEMBER };	/* of a write with AUTH_OK */

/* The client key header of /clients writes (SPEC 7), and its bounds. */
#define CLIENT_KEY_HEADER	"X-Dfkv-Client-Key"
#define CLIENT_KEY_MIN		32
#define CLIENT_KEY_MAX		256

/* Per-request state, kept in *con_cls across the handler's calls. */
struct req {
	struct dfkv_http_buf body;	/* at most the body limit */
	size_t seen;		/* body bytes received, kept or not */
	bool too_large;
	enum auth auth;		/* not AUTH_OK: refused, the body discarded */
	bool forbidden;		/* a client token's write of /members */
	bool busy;		/* refused: the writes' reserve is reached */
	bool bad_key;		/* refused: no or a malformed client key */
	struct mds_writer w;	/* a /clients write's key and duty */
	bool lp;		/* a long-poll holding slot */
	bool waiting;		/* its wait_begin needs a wait_end */
	size_t slot;
	/* run by a request thread, its connection suspended meanwhile */
	struct job job;
	struct http_server *s;
	struct MHD_Connection *c;
	const char *url, *method;
	uint64_t url_hash;	/* a PUT's: its key in renewed */
	bool ran;		/* done: ret is the handler's answer */
	enum MHD_Result ret;
};

#define container_of(p, type, member) \
	((type *)((char *)(p) - offsetof(type, member)))

/* A body larger than this many times the limit closes the connection. */
#define DISCARD_FACTOR 16

/* A reply's body with the extra headers of hdrs (name, value, ...,
 * NULL; or NULL); NULL: out of memory. */
static struct MHD_Response *response(const char *ctype, const char *text,
				     size_t len, const char *const *hdrs)
{
	struct MHD_Response *r;

	r = MHD_create_response_from_buffer(len, (void *)text,
					    MHD_RESPMEM_MUST_COPY);
	if (!r)
		return NULL;
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, ctype);
	MHD_add_response_header(r, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
	for (; hdrs && hdrs[0]; hdrs += 2)
		MHD_add_response_header(r, hdrs[0], hdrs[1]);
	return r;
}

/* Queue r (NULL: out of memory), counted, and drop this reference. */
static enum MHD_Result send_response(struct MHD_Connection *c,
				     const char *method, unsigned int code,
				     struct MHD_Response *r)
{
	enum MHD_Result ret;

	if (!r)
		return MHD_NO;
	ret = MHD_queue_response(c, code, r);
	MHD_destroy_response(r);
	metrics_http(method, code);
	return ret;
}

static enum MHD_Result send_text(struct MHD_Connection *c, const char *method,
				 unsigned int code, const char *ctype,
				 const char *text, size_t len,
				 const char *const *hdrs)
{
	return send_response(c, method, code, response(ctype, text, len, hdrs));
}

/* An application/json reply of o (put here), with the headers of hdrs. */
static struct MHD_Response *json_response(struct json_object *o,
					  const char *const *hdrs)
{
	const char *s = json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN);
	struct MHD_Response *r = NULL;
	size_t n = strlen(s);
	char *buf = malloc(n + 1);

	if (buf) {
		memcpy(buf, s, n);
		buf[n++] = '\n';
		r = response("application/json", buf, n, hdrs);
		free(buf);
	}
	json_object_put(o);
	return r;
}

static enum MHD_Result send_json(struct MHD_Connection *c, const char *method,
				 unsigned int code, struct json_object *o)
{
	return send_response(c, method, code, json_response(o, NULL));
}

/* {"error": msg}, with the extra headers of hdrs (as response()). */
static enum MHD_Result send_error_msg(struct MHD_Connection *c,
				      const char *method, unsigned int code,
				      const char *const *hdrs,
				      const char *msg)
{
	struct json_object *o = json_object_new_object();

	json_object_object_add(o, "error", json_object_new_string(msg));
	return send_response(c, method, code, json_response(o, hdrs));
}

static enum MHD_Result send_error(struct MHD_Connection *c, const char *method,
				  unsigned int code, const char *allow,
				  const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));

/* An error; allow (405) goes out as the Allow header. */
static enum MHD_Result send_error(struct MHD_Connection *c, const char *method,
				  unsigned int code, const char *allow,
				  const char *fmt, ...)
{
	const char *hdrs[] = { MHD_HTTP_HEADER_ALLOW, allow, NULL };
	char msg[256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	return send_error_msg(c, method, code, allow ? hdrs : NULL, msg);
}

/*
 * The seconds a refused peer is asked to wait (429, 503): libdfkv's
 * discovery honours it (bounded by its own limits).
 */
#define RETRY_AFTER_S	"1"
static const char *const retry_after[] = {
	MHD_HTTP_HEADER_RETRY_AFTER, RETRY_AFTER_S, NULL
};

/*
 * A write's credentials: "Authorization: Bearer <token>", the scheme in
 * any case (RFC 7235).  The presented token is hashed and the digest
 * compared with each token's by CRYPTO_memcmp: fixed length, constant
 * time, both compared always, so neither a token's length nor the
 * position of a first wrong byte nor which token matched shows in the
 * answer's timing.
 */
static enum auth check_auth(const struct mdsd_config *cfg,
			    struct MHD_Connection *c, enum role *role)
{
	const char *h = MHD_lookup_connection_value(c, MHD_HEADER_KIND,
						    MHD_HTTP_HEADER_AUTHORIZATION);
	unsigned char d[SHA256_DIGEST_LENGTH];
	int member, client;

	if (!h || strncasecmp(h, "Bearer ", 7))
		return AUTH_MISSING;
	for (h += 7; *h == ' '; h++)
		;
	SHA256((const unsigned char *)h, strlen(h), d);
	member = CRYPTO_memcmp(d, cfg->member_sha256, sizeof(d));
	client = CRYPTO_memcmp(d, cfg->client_sha256, sizeof(d));
	if (!member) {
		*role = ROLE_MEMBER;
		return AUTH_OK;
	}
	if (!client && cfg->client_auth) {
		*role = ROLE_CLIENT;
		return AUTH_OK;
	}
	return AUTH_WRONG;
}

/* 401 (RFC 6750 section 3: "invalid_token" when one was presented). */
static enum MHD_Result send_unauthorized(struct MHD_Connection *c,
					 const char *method, enum auth a)
{
	static const char *const missing[] = {
		MHD_HTTP_HEADER_WWW_AUTHENTICATE, "Bearer realm=\"mdsd\"", NULL
	};
	static const char *const wrong[] = {
		MHD_HTTP_HEADER_WWW_AUTHENTICATE,
		"Bearer realm=\"mdsd\", error=\"invalid_token\"", NULL
	};

	return a == AUTH_MISSING ?
		send_error_msg(c, method, MHD_HTTP_UNAUTHORIZED, missing,
			       "PUT and DELETE need Authorization: Bearer <token>") :
		send_error_msg(c, method, MHD_HTTP_UNAUTHORIZED, wrong,
			       "wrong bearer token");
}

/* 403: a valid client token, but /members is the member token's. */
static enum MHD_Result send_forbidden(struct MHD_Connection *c,
				      const char *method)
{
	return send_error_msg(c, method, MHD_HTTP_FORBIDDEN, NULL,
			      "the client token may write /clients only; /members needs the member token");
}

/* A request refused at its first call, other than by 401 or 413. */
static bool refused(const struct req *r)
{
	return r->auth != AUTH_OK || r->forbidden || r->busy || r->bad_key;
}

/* Backend errors to HTTP. */
static enum MHD_Result send_backend_error(struct http_server *s,
					  struct MHD_Connection *c,
					  const char *method, int err)
{
	switch (err) {
	case -ENOENT:
		return send_error(c, method, MHD_HTTP_NOT_FOUND, NULL,
				  "no such entry");
	case -ENOSPC:
		return send_error(c, method, MHD_HTTP_INSUFFICIENT_STORAGE, NULL,
				  "directory limit reached");
	case -EPERM:
		counter_inc(C_FORBIDDEN);
		return send_error(c, method, MHD_HTTP_FORBIDDEN, NULL,
				  "this /clients entry belongs to another client key");
	case -EDQUOT:
		counter_inc(C_WEIGHT_REFUSALS);
		return send_error(c, method, MHD_HTTP_CONFLICT, NULL,
				  "the group's member weights would add up to more than %u",
				  s->cfg->max_group_weight);
	case -ENOMEM:
		return send_error(c, method, MHD_HTTP_INTERNAL_SERVER_ERROR,
				  NULL, "out of memory");
	default: {
		char msg[160];

		counter_inc(C_BACKEND_ERRORS);
		snprintf(msg, sizeof(msg), "%s: %s", err == -EAGAIN ?
			 "conflicting writes" : "backend unavailable",
			 strerror(-err));
		return send_error_msg(c, method, MHD_HTTP_SERVICE_UNAVAILABLE,
				      retry_after, msg);
	}
	}
}

/* ------------------------------------------------------------- queries */

struct query {
	bool has_wait_epoch, has_wait_ms, bad;
	uint64_t wait_epoch, wait_ms;
	char why[96];
};

static bool parse_u64(const char *s, uint64_t *out)
{
	uint64_t v = 0;

	if (!s || !*s || strlen(s) > 20)
		return false;
	for (; *s; s++) {
		if (*s < '0' || *s > '9')
			return false;
		if (v > (UINT64_MAX - (uint64_t)(*s - '0')) / 10)
			return false;
		v = v * 10 + (uint64_t)(*s - '0');
	}
	*out = v;
	return true;
}

static enum MHD_Result query_cb(void *cls, enum MHD_ValueKind kind,
				const char *key, const char *value)
{
	struct query *q = cls;

	(void)kind;
	if (!strcmp(key, "wait_epoch")) {
		q->has_wait_epoch = true;
		if (!parse_u64(value, &q->wait_epoch)) {
			q->bad = true;
			snprintf(q->why, sizeof(q->why),
				 "wait_epoch must be a decimal integer");
		}
	} else if (!strcmp(key, "wait_ms")) {
		q->has_wait_ms = true;
		if (!parse_u64(value, &q->wait_ms)) {
			q->bad = true;
			snprintf(q->why, sizeof(q->why),
				 "wait_ms must be a decimal integer");
		}
	} else {
		q->bad = true;
		snprintf(q->why, sizeof(q->why), "unknown query parameter '%.40s'",
			 key);
	}
	return q->bad ? MHD_NO : MHD_YES;
}

static bool has_query(struct MHD_Connection *c)
{
	return MHD_get_connection_values(c, MHD_GET_ARGUMENT_KIND, NULL,
					 NULL) > 0;
}

/* ---------------------------------------------------------- long-polls */

static struct peer peer_of(struct MHD_Connection *c)
{
	const union MHD_ConnectionInfo *ci =
		MHD_get_connection_info(c, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
	const struct sockaddr *sa = ci ? ci->client_addr : NULL;
	struct peer p = { 0 };

	if (sa && sa->sa_family == AF_INET) {
		p.family = AF_INET;
		memcpy(p.a, &((const struct sockaddr_in *)sa)->sin_addr, 4);
	} else if (sa && sa->sa_family == AF_INET6) {
		p.family = AF_INET6;
		memcpy(p.a, &((const struct sockaddr_in6 *)sa)->sin6_addr, 16);
	}
	return p;
}

/*
 * Take a long-poll slot for c past epoch after of group/k, until deadline,
 * and watch its socket for the peer's hang-up: the slot's index, or -1
 * when a cap is reached (why says which).
 */
static long lp_enter(struct http_server *s, struct req *r,
		     const char *group, enum mds_kind k, uint64_t after,
		     uint64_t deadline, const char **why)
{
	const union MHD_ConnectionInfo *ci =
		MHD_get_connection_info(r->c, MHD_CONNECTION_INFO_CONNECTION_FD);
	struct peer p = peer_of(r->c);
	unsigned int mine = 0;
	long free_slot = -1;
	size_t i;

	*why = "too many long-polls waiting";
	pthread_mutex_lock(&s->lp_lock);
	for (i = 0; i < s->cfg->max_long_polls; i++) {
		struct waiter *w = &s->lp[i];

		if (!w->used) {
			if (free_slot < 0)
				free_slot = (long)i;
		} else if (!memcmp(&w->peer, &p, sizeof(p))) {
			mine++;
		}
	}
	if (mine >= s->cfg->max_long_polls_peer) {
		*why = "too many long-polls from this address";
		free_slot = -1;
	}
	if (free_slot >= 0) {
		struct waiter *w = &s->lp[free_slot];
		struct epoll_event ev = {
			.events = EPOLLRDHUP | EPOLLONESHOT,
			.data.u64 = (uint64_t)w->gen << 32 | (uint64_t)free_slot,
		};

		w->used = true;
		w->peer = p;
		w->gone = w->due = w->timed_out = w->suspended = false;
		w->r = r;
		w->k = k;
		snprintf(w->group, sizeof(w->group), "%s", group);
		w->after = after;
		w->deadline = deadline;
		/* Unwatched (no fd?): the wait just lasts its time. */
		if (ci && epoll_ctl(s->ep, EPOLL_CTL_ADD, ci->connect_fd, &ev))
			logmsg(LOG_VERBOSE, "http: cannot watch a long-poll: %s",
			       strerror(errno));
	}
	pthread_mutex_unlock(&s->lp_lock);
	return free_slot;
}

static void lp_leave(struct http_server *s, struct MHD_Connection *c,
		     size_t slot)
{
	const union MHD_ConnectionInfo *ci =
		MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
	struct waiter *w = &s->lp[slot];

	pthread_mutex_lock(&s->lp_lock);
	if (ci)
		epoll_ctl(s->ep, EPOLL_CTL_DEL, ci->connect_fd, NULL);
	if (w->gone)
		counter_inc(C_LONGPOLL_GONE);
	if (w->timed_out)
		counter_inc(C_LONGPOLL_TIMEOUTS);
	w->used = false;
	w->gen++;	/* an event still in flight finds another generation */
	pthread_mutex_unlock(&s->lp_lock);
}

static void lp_job(struct job *j);

/*
 * Set by a request thread's request that parked (a long-poll waiting):
 * the thread leaves its connection suspended and the request alone.
 */
static _Thread_local bool parked;

/* Answer w's long-poll on a request thread (under lp_lock). */
static void lp_wake(struct http_server *s, struct waiter *w)
{
	w->suspended = false;
	w->r->job.fn = lp_job;
	jobs_queue(s->jobs, &w->r->job, false);
}

/* Make the watcher look at the deadlines again. */
static void kick(struct http_server *s)
{
	uint64_t one = 1;

	if (write(s->kick_fd, &one, sizeof(one)) != sizeof(one))
		logmsg(LOG_ERR, "http: cannot wake the watcher: %s",
		       strerror(errno));
}

/*
 * Park the long-poll of slot (its connection stays suspended, its
 * request thread moves on) unless its answer is due already: false when
 * it is answered now.
 */
static bool lp_park(struct http_server *s, size_t slot)
{
	struct waiter *w = &s->lp[slot];
	bool wait, earlier = false;

	pthread_mutex_lock(&s->lp_lock);
	w->timed_out = !w->due && !w->gone && now_mono_ms() >= w->deadline;
	wait = !w->due && !w->gone && !w->timed_out && !s->stopping;
	if (wait) {
		w->suspended = true;
		earlier = w->deadline < s->next_due;
	}
	pthread_mutex_unlock(&s->lp_lock);
	if (earlier)
		kick(s);
	return wait;
}

/* The backend's notify: group/k changed up to epoch (under its lock). */
static void lp_changed(void *ctx, const char *group, enum mds_kind k,
		       uint64_t epoch)
{
	struct http_server *s = ctx;

	pthread_mutex_lock(&s->lp_lock);
	for (size_t i = 0; i < s->cfg->max_long_polls; i++) {
		struct waiter *w = &s->lp[i];

		if (!w->used || w->due || w->k != k || w->after >= epoch ||
		    strcmp(w->group, group))
			continue;
		w->due = true;
		if (w->suspended)
			lp_wake(s, w);
	}
	pthread_mutex_unlock(&s->lp_lock);
}

/*
 * The watcher's pass over the slots (under lp_lock): resume the gone and
 * the timed out; the time to the next deadline (ms, -1: none).
 */
static int lp_sweep(struct http_server *s)
{
	uint64_t now = now_mono_ms(), next = UINT64_MAX;

	for (size_t i = 0; i < s->cfg->max_long_polls; i++) {
		struct waiter *w = &s->lp[i];

		if (!w->used || !w->suspended)
			continue;
		if (!w->gone && w->deadline <= now)
			w->timed_out = true;
		if (w->gone || w->timed_out)
			lp_wake(s, w);
		else if (w->deadline < next)
			next = w->deadline;
	}
	s->next_due = next;
	if (next == UINT64_MAX)
		return -1;
	return next - now > INT_MAX ? INT_MAX : (int)(next - now);
}

/* The watcher: deadlines and hang-ups of the waiting long-polls. */
static void *watcher_main(void *arg)
{
	struct http_server *s = arg;
	struct epoll_event ev[32];

	pthread_mutex_lock(&s->lp_lock);
	while (!s->watcher_stop) {
		int timeout = lp_sweep(s), n, i;

		pthread_mutex_unlock(&s->lp_lock);
		n = epoll_wait(s->ep, ev, 32, timeout);
		if (n < 0 && errno != EINTR) {
			logmsg(LOG_ERR, "http: epoll_wait: %s", strerror(errno));
			return NULL;
		}
		pthread_mutex_lock(&s->lp_lock);
		for (i = 0; i < n; i++) {
			uint64_t u = ev[i].data.u64, cnt;
			struct waiter *w;

			if (u == WATCH_KICK) {
				if (read(s->kick_fd, &cnt, sizeof(cnt)) < 0)
					logmsg(LOG_VERBOSE, "http: kick: %s",
					       strerror(errno));
				continue;
			}
			w = &s->lp[(uint32_t)u];
			if (w->used && w->gen == (uint32_t)(u >> 32))
				w->gone = true;
		}
	}
	pthread_mutex_unlock(&s->lp_lock);
	return NULL;
}

/* Release r's long-poll: its backend wait and its slot. */
static void lp_release(struct http_server *s, struct MHD_Connection *c,
		       struct req *r)
{
	const struct waiter *w = &s->lp[r->slot];	/* ours: unchanging */

	if (r->waiting && s->b->ops->wait_end)
		s->b->ops->wait_end(s->b, w->group, w->k);
	lp_leave(s, c, r->slot);
	atomic_fetch_sub(&metrics.longpoll_waiters, 1);
	r->lp = r->waiting = false;
}

/* ------------------------------------------------------------ handlers */

static enum MHD_Result h_groups(struct http_server *s, struct MHD_Connection *c,
				const char *method)
{
	struct mds_names n;
	struct json_object *o, *arr;
	size_t i;
	int ret;

	ret = s->b->ops->groups(s->b, &n);
	if (ret)
		return send_backend_error(s, c, method, ret);
	o = json_object_new_object();
	arr = json_object_new_array();
	for (i = 0; i < n.n; i++)
		json_object_array_add(arr, json_object_new_string(n.v[i]));
	json_object_object_add(o, "groups", arr);
	mds_names_free(&n);
	return send_json(c, method, MHD_HTTP_OK, o);
}

/* A listing's answer: {"epoch": N, KIND: [...]}; l is freed. */
static struct json_object *list_json(enum mds_kind k, struct mds_list *l)
{
	struct json_object *o = json_object_new_object();
	struct json_object *arr = json_object_new_array();

	json_object_object_add(o, "epoch", json_object_new_int64((int64_t)l->epoch));
	for (size_t i = 0; i < l->n; i++)
		json_object_array_add(arr, mds_entry_to_json(&l->v[i]));
	json_object_object_add(o, mds_kind_name(k), arr);
	mds_list_free(l);
	return o;
}

/*
 * Answer a long-poll with l (freed here), building the answer only when
 * the last ones built have none of group/k at l's epoch (the same epoch
 * of a group: the same listing).  Queued under ans_lock, so that the
 * answer is not dropped in between.
 */
static enum MHD_Result send_shared_list(struct http_server *s,
					struct MHD_Connection *c,
					const char *method, const char *group,
					enum mds_kind k, struct mds_list *l)
{
	struct shared_answer *a, *oldest = &s->ans[0];
	enum MHD_Result ret = MHD_NO;

	pthread_mutex_lock(&s->ans_lock);
	for (a = s->ans; a < s->ans + SHARED_ANSWERS; a++) {
		if (a->r && a->k == k && a->epoch == l->epoch &&
		    !strcmp(a->group, group))
			break;
		if (a->used < oldest->used)
			oldest = a;
	}
	if (a == s->ans + SHARED_ANSWERS) {
		a = oldest;
		if (a->r)
			MHD_destroy_response(a->r);
		snprintf(a->group, sizeof(a->group), "%s", group);
		a->k = k;
		a->epoch = l->epoch;
		a->r = json_response(list_json(k, l), NULL);
	} else {
		mds_list_free(l);
	}
	a->used = ++s->ans_tick;
	if (a->r) {
		ret = MHD_queue_response(c, MHD_HTTP_OK, a->r);
		metrics_http(method, MHD_HTTP_OK);
	}
	pthread_mutex_unlock(&s->ans_lock);
	return ret;
}

/*
 * Answer r's long-poll (its wait over, or never begun): the listing, or
 * the connection closed when its peer left.
 */
static enum MHD_Result lp_answer(struct http_server *s,
				 struct MHD_Connection *c, const char *method,
				 struct req *r)
{
	const struct waiter *w = &s->lp[r->slot];	/* ours: unchanging */
	enum mds_kind k = w->k;
	char group[MDS_ID_MAX + 1];
	struct mds_list l;
	bool gone;
	int ret;

	pthread_mutex_lock(&s->lp_lock);
	gone = w->gone;
	pthread_mutex_unlock(&s->lp_lock);
	memcpy(group, w->group, sizeof(group));
	ret = gone ? 0 : s->b->ops->wait_list(s->b, group, k, w->after, &l);
	lp_release(s, c, r);
	if (gone)
		return MHD_NO;
	if (ret)
		return send_backend_error(s, c, method, ret);
	return send_shared_list(s, c, method, group, k, &l);
}

static enum MHD_Result h_list(struct http_server *s, struct MHD_Connection *c,
			      const char *method, struct req *r,
			      const char *group, enum mds_kind k)
{
	struct query q = { 0 };
	struct mds_list l;
	unsigned int wait_ms = s->cfg->long_poll_ms;
	const char *why;
	long slot;
	int ret;

	MHD_get_connection_values(c, MHD_GET_ARGUMENT_KIND, query_cb, &q);
	if (q.bad)
		return send_error(c, method, MHD_HTTP_BAD_REQUEST, NULL, "%s",
				  q.why);
	if (q.has_wait_ms && !q.has_wait_epoch)
		return send_error(c, method, MHD_HTTP_BAD_REQUEST, NULL,
				  "wait_ms needs wait_epoch");
	if (q.has_wait_ms && q.wait_ms < wait_ms)
		wait_ms = (unsigned int)q.wait_ms;
	if (!q.has_wait_epoch) {
		ret = s->b->ops->list(s->b, group, k, &l);
		if (ret)
			return send_backend_error(s, c, method, ret);
		return send_json(c, method, MHD_HTTP_OK, list_json(k, &l));
	}
	slot = lp_enter(s, r, group, k, q.wait_epoch, now_mono_ms() + wait_ms,
			&why);
	if (slot < 0) {
		counter_inc(C_LONGPOLL_REFUSALS);
		logmsg(LOG_VERBOSE, "429 long-poll of %s: %s", group, why);
		return send_error_msg(c, method, MHD_HTTP_TOO_MANY_REQUESTS,
				      retry_after, why);
	}
	counter_inc(C_LONGPOLLS);
	atomic_fetch_add(&metrics.longpoll_waiters, 1);
	r->lp = true;
	r->slot = (size_t)slot;
	r->waiting = s->b->ops->wait_begin(s->b, group, k, q.wait_epoch) == 1;
	if (r->waiting && lp_park(s, r->slot)) {
		parked = true;	/* r is the waker's now */
		return MHD_YES;
	}
	return lp_answer(s, c, method, r);
}

static enum MHD_Result h_get_one(struct http_server *s,
				 struct MHD_Connection *c, const char *method,
				 const char *group, enum mds_kind k,
				 const char *id)
{
	struct mds_list l;
	struct json_object *o = NULL;
	size_t i;
	int ret;

	ret = s->b->ops->list(s->b, group, k, &l);
	if (ret)
		return send_backend_error(s, c, method, ret);
	for (i = 0; i < l.n; i++) {
		if (!strcmp(l.v[i].id, id)) {
			o = mds_entry_to_json(&l.v[i]);
			json_object_object_add(o, "epoch",
					       json_object_new_int64((int64_t)l.epoch));
			break;
		}
	}
	mds_list_free(&l);
	if (!o)
		return send_error(c, method, MHD_HTTP_NOT_FOUND, NULL,
				  "no such entry");
	return send_json(c, method, MHD_HTTP_OK, o);
}

static enum MHD_Result h_put(struct http_server *s, struct MHD_Connection *c,
			     const char *method, struct req *r,
			     const char *group, enum mds_kind k, const char *id)
{
	struct json_object *o, *reply;
	struct mds_entry e;
	uint64_t epoch = 0;
	bool created = false;
	char err[160];
	int ret;

	o = mds_json_parse(r->body.p, r->body.len, err, sizeof(err));
	if (!o)
		return send_error(c, method, MHD_HTTP_BAD_REQUEST, NULL, "%s", err);
	ret = mds_entry_from_json(o, id, s->cfg->ttl_ms, &e, err, sizeof(err));
	json_object_put(o);
	if (ret)
		return send_error(c, method, MHD_HTTP_BAD_REQUEST, NULL, "%s", err);
	ret = s->b->ops->put(s->b, group, k, &e, &r->w, &epoch, &created);
	if (ret)
		return send_backend_error(s, c, method, ret);
	logmsg(created ? LOG_VERBOSE : LOG_DEBUG, "%s %s/%s/%s",
	       created ? "registered" : "renewed", group, mds_kind_name(k), id);
	atomic_store_explicit(&s->renewed[r->url_hash % RENEWED_SLOTS],
			      r->url_hash, memory_order_relaxed);
	reply = json_object_new_object();
	json_object_object_add(reply, "id", json_object_new_string(id));
	json_object_object_add(reply, "epoch", json_object_new_int64((int64_t)epoch));
	json_object_object_add(reply, "created", json_object_new_boolean(created));
	json_object_object_add(reply, "ttl_ms", json_object_new_int64((int64_t)e.ttl_ms));
	return send_json(c, method, MHD_HTTP_OK, reply);
}

static enum MHD_Result h_del(struct http_server *s, struct MHD_Connection *c,
			     const char *method, const struct req *r,
			     const char *group, enum mds_kind k, const char *id)
{
	struct json_object *reply;
	uint64_t epoch = 0;
	int ret;

	ret = s->b->ops->del(s->b, group, k, id, &r->w, &epoch);
	if (ret)
		return send_backend_error(s, c, method, ret);
	logmsg(LOG_VERBOSE, "deleted %s/%s/%s", group, mds_kind_name(k), id);
	reply = json_object_new_object();
	json_object_object_add(reply, "id", json_object_new_string(id));
	json_object_object_add(reply, "epoch", json_object_new_int64((int64_t)epoch));
	return send_json(c, method, MHD_HTTP_OK, reply);
}

/* -------------------------------------------------------------- router */

#define MAX_SEGS 6

/*
 * Split "/a/b/c" into segments; false for an empty segment ("//", a
 * trailing "/"), too many segments or an overlong path.
 */
static int split(const char *url, char *buf, size_t cap, char **seg)
{
	size_t n = strlen(url);
	int count = 0;
	char *p;

	if (n == 0 || n >= cap || url[0] != '/')
		return -1;
	memcpy(buf, url + 1, n);	/* without the leading '/' */
	p = buf;
	for (;;) {
		char *slash = strchr(p, '/');

		if (count == MAX_SEGS)
			return -1;
		seg[count++] = p;
		if (slash)
			*slash = '\0';
		if (!*p)
			return -1;
		if (!slash)
			break;
		p = slash + 1;
	}
	return count;
}

static bool is(const char *m, const char *want)
{
	return !strcmp(m, want);
}

static enum MHD_Result route(struct http_server *s, struct MHD_Connection *c,
			     const char *url, const char *method, struct req *r)
{
	bool get = is(method, "GET") || is(method, "HEAD");
	char buf[512], *seg[MAX_SEGS];
	enum mds_kind k;
	int n = split(url, buf, sizeof(buf), seg);

	if (n == 1 && (is(seg[0], "healthz") || is(seg[0], "readyz") ||
		       is(seg[0], "metrics"))) {
		if (!get)
			return send_error(c, method, MHD_HTTP_METHOD_NOT_ALLOWED,
					  "GET, HEAD", "method not allowed");
		if (r->seen)
			return send_error(c, method, MHD_HTTP_BAD_REQUEST, NULL,
					  "unexpected body");
		if (is(seg[0], "healthz"))
			return send_text(c, method, MHD_HTTP_OK, "text/plain",
					 "ok\n", 3, NULL);
		if (is(seg[0], "readyz")) {
			bool ready = s->b->ops->ready(s->b) &&
				     !atomic_load(&mdsd_stopping);

			return ready ?
				send_text(c, method, MHD_HTTP_OK, "text/plain",
					  "ready\n", 6, NULL) :
				send_text(c, method, MHD_HTTP_SERVICE_UNAVAILABLE,
					  "text/plain", "not ready\n", 10, NULL);
		} else {
			size_t len;
			char *text = metrics_render(s->cfg, s->b, &len);
			enum MHD_Result ret;

			if (!text)
				return send_error(c, method,
						  MHD_HTTP_INTERNAL_SERVER_ERROR,
						  NULL, "out of memory");
			ret = send_text(c, method, MHD_HTTP_OK,
					"text/plain; version=0.0.4; charset=utf-8",
					text, len, NULL);
			free(text);
			return ret;
		}
	}
	if (n < 2 || !is(seg[0], "v1") || !is(seg[1], "groups"))
		return send_error(c, method, MHD_HTTP_NOT_FOUND, NULL,
				  "no such path");
	if (n == 3 || n > 5 ||
	    (n >= 4 && !is(seg[3], "members") && !is(seg[3], "clients")))
		return send_error(c, method, MHD_HTTP_NOT_FOUND, NULL,
				  "no such path");
	if (n == 2) {
		if (!get)
			return send_error(c, method, MHD_HTTP_METHOD_NOT_ALLOWED,
					  "GET, HEAD", "method not allowed");
		if (has_query(c))
			return send_error(c, method, MHD_HTTP_BAD_REQUEST, NULL,
					  "no query parameters here");
		if (r->seen)
			return send_error(c, method, MHD_HTTP_BAD_REQUEST, NULL,
					  "unexpected body");
		return h_groups(s, c, method);
	}
	k = is(seg[3], "members") ? MDS_MEMBERS : MDS_CLIENTS;
	if (n == 4) {
		if (!get)
			return send_error(c, method, MHD_HTTP_METHOD_NOT_ALLOWED,
					  "GET, HEAD", "method not allowed");
	} else if (!get && !is(method, "PUT") && !is(method, "DELETE")) {
		return send_error(c, method, MHD_HTTP_METHOD_NOT_ALLOWED,
				  "GET, HEAD, PUT, DELETE", "method not allowed");
	}
	if (!mds_id_valid(seg[2]))
		return send_error(c, method, MHD_HTTP_BAD_REQUEST, NULL,
				  "bad group id (1-64 of [A-Za-z0-9._-])");
	if (n == 5 && !mds_id_valid(seg[4]))
		return send_error(c, method, MHD_HTTP_BAD_REQUEST, NULL,
				  "bad id (1-64 of [A-Za-z0-9._-])");
	if (n == 4)
		return r->seen ?
			send_error(c, method, MHD_HTTP_BAD_REQUEST, NULL,
				   "unexpected body") :
			h_list(s, c, method, r, seg[2], k);
	if (has_query(c))
		return send_error(c, method, MHD_HTTP_BAD_REQUEST, NULL,
				  "no query parameters here");
	if (is(method, "PUT"))
		return h_put(s, c, method, r, seg[2], k, seg[4]);
	if (r->seen)
		return send_error(c, method, MHD_HTTP_BAD_REQUEST, NULL,
				  "unexpected body");
	if (is(method, "DELETE"))
		return h_del(s, c, method, r, seg[2], k, seg[4]);
	return h_get_one(s, c, method, seg[2], k, seg[4]);
}

/* The kind of an entry's path /v1/groups/{g}/KIND/{id}; -1: another. */
static int entry_path_kind(const char *url)
{
	char buf[512], *seg[MAX_SEGS];
	int n = split(url, buf, sizeof(buf), seg);

	if (n != 5)
		return -1;
	return is(seg[3], "members") ? MDS_MEMBERS :
	       is(seg[3], "clients") ? MDS_CLIENTS : -1;
}

/*
 * A /clients write's client key into r->w: the SHA-256 of
 * X-Dfkv-Client-Key (CLIENT_KEY_MIN..MAX visible ASCII bytes), which the
 * client token must send and must own the entry with.  false (a reason
 * in *why): none where one is needed, or a malformed one.
 */
static bool client_key(struct MHD_Connection *c, enum role role,
		       struct req *r, const char **why)
{
	const char *h = MHD_lookup_connection_value(c, MHD_HEADER_KIND,
						    CLIENT_KEY_HEADER);
	size_t n = h ? strlen(h) : 0;

	r->w.must_own = role == ROLE_CLIENT;
	if (!h) {
		*why = "the client token writes /clients with X-Dfkv-Client-Key: <key>";
		return !r->w.must_own;
	}
	*why = "X-Dfkv-Client-Key must be 32 to 256 visible ASCII characters";
	if (n < CLIENT_KEY_MIN || n > CLIENT_KEY_MAX)
		return false;
	for (size_t i = 0; i < n; i++)
		if (h[i] <= ' ' || h[i] > '~')
			return false;
	SHA256((const unsigned char *)h, n, r->w.key.sha256);
	r->w.key.set = true;
	return true;
}

/*
 * The first call of a request: its credentials and the bounds, decided
 * before any of its body is read.  A refusal is queued here; its body is
 * then discarded.
 */
static enum MHD_Result admit(struct http_server *s, struct MHD_Connection *c,
			     const char *url, const char *method,
			     struct req *r)
{
	const struct mdsd_config *cfg = s->cfg;
	bool write = is(method, "PUT") || is(method, "DELETE");
	const union MHD_DaemonInfo *di;
	enum role role = ROLE_MEMBER;	/* without a member token: anyone */
	const char *cl, *why;
	uint64_t clen;

	if (write && cfg->member_auth) {
		r->auth = check_auth(cfg, c, &role);
		if (r->auth != AUTH_OK) {
			counter_inc(C_AUTH_FAILURES);
			logmsg(LOG_VERBOSE, "401 %s %s: %s bearer token",
			       method, url, r->auth == AUTH_MISSING ?
			       "no" : "wrong");
			return send_unauthorized(c, method, r->auth);
		}
		if (role == ROLE_CLIENT &&
		    entry_path_kind(url) == MDS_MEMBERS) {
			r->forbidden = true;
			counter_inc(C_FORBIDDEN);
			logmsg(LOG_VERBOSE, "403 %s %s: a client token", method,
			       url);
			return send_forbidden(c, method);
		}
	}
	if (write && entry_path_kind(url) == MDS_CLIENTS &&
	    !client_key(c, role, r, &why)) {
		r->bad_key = true;
		logmsg(LOG_VERBOSE, "400 %s %s: %s", method, url, why);
		return send_error_msg(c, method, MHD_HTTP_BAD_REQUEST, NULL, why);
	}
	/* The last connections are the authenticated writes'. */
	di = MHD_get_daemon_info(s->d, MHD_DAEMON_INFO_CURRENT_CONNECTIONS);
	if (!write && di &&
	    di->num_connections > cfg->max_conns - cfg->reserved_writes) {
		static const char *const hdrs[] = {
			MHD_HTTP_HEADER_CONNECTION, "close",
			MHD_HTTP_HEADER_RETRY_AFTER, RETRY_AFTER_S, NULL
		};

		r->busy = true;
		counter_inc(C_BUSY_REFUSALS);
		return send_error_msg(c, method, MHD_HTTP_SERVICE_UNAVAILABLE,
				      hdrs,
				      "busy: the remaining connections are reserved for writes");
	}
	cl = MHD_lookup_connection_value(c, MHD_HEADER_KIND,
					 MHD_HTTP_HEADER_CONTENT_LENGTH);
	if (cl && (!parse_u64(cl, &clen) || clen > cfg->body_limit)) {
		/* Refuse before reading the body (no 100-continue). */
		r->too_large = true;
		return send_error(c, method, MHD_HTTP_CONTENT_TOO_LARGE, NULL,
				  "body larger than %zu bytes", cfg->body_limit);
	}
	return MHD_YES;
}

/* FNV-1a, 64 bits. */
static uint64_t fnv1a(const char *p)
{
	uint64_t h = 14695981039346656037ULL;

	for (; *p; p++)
		h = (h ^ (unsigned char)*p) * 1099511628211ULL;
	return h;
}

/* A request thread's work is done: resume the connection (under no lock). */
static void finish(struct req *r, enum MHD_Result ret)
{
	r->ret = ret;
	r->ran = true;
	MHD_resume_connection(r->c);
}

static void route_job(struct job *j)
{
	struct req *r = container_of(j, struct req, job);
	enum MHD_Result ret;

	parked = false;
	ret = route(r->s, r->c, r->url, r->method, r);
	if (!parked)
		finish(r, ret);
}

static void lp_job(struct job *j)
{
	struct req *r = container_of(j, struct req, job);

	finish(r, lp_answer(r->s, r->c, r->method, r));
}

/*
 * Route a complete request on a request thread, its connection suspended
 * until the answer is queued; inline when stopping (nothing may be
 * suspended when libmicrohttpd stops).
 */
static enum MHD_Result dispatch(struct http_server *s,
				struct MHD_Connection *c, const char *url,
				const char *method, struct req *r)
{
	bool now, urgent = false;

	if (is(method, "PUT")) {
		r->url_hash = fnv1a(url);
		urgent = atomic_load_explicit(&s->renewed[r->url_hash %
							  RENEWED_SLOTS],
					      memory_order_relaxed) ==
			 r->url_hash;
	}
	r->s = s;
	r->c = c;
	r->url = url;
	r->method = method;
	r->job.fn = route_job;
	pthread_mutex_lock(&s->lp_lock);
	now = s->stopping;
	if (!now) {
		MHD_suspend_connection(c);
		jobs_queue(s->jobs, &r->job, urgent);
	}
	pthread_mutex_unlock(&s->lp_lock);
	return now ? route(s, c, url, method, r) : MHD_YES;
}

static enum MHD_Result handler(void *cls, struct MHD_Connection *c,
			       const char *url, const char *method,
			       const char *version, const char *upload_data,
			       size_t *upload_data_size, void **con_cls)
{
	struct http_server *s = cls;
	struct req *r = *con_cls;

	(void)version;
	if (r && r->ran)	/* resumed: its answer is queued (or none) */
		return r->ret;
	if (!r) {
		r = calloc(1, sizeof(*r));
		if (!r)
			return MHD_NO;
		*con_cls = r;
		r->body.max = s->cfg->body_limit;
		return admit(s, c, url, method, r);
	}
	if (*upload_data_size) {
		size_t n = *upload_data_size;

		*upload_data_size = 0;
		r->seen += n;
		/*
		 * A refused request's body is discarded like a too large
		 * one.  libmicrohttpd 0.9.75 calls no more once the first
		 * call queued a response; should another version go on, a
		 * refused request still never reaches route().
		 */
		if (refused(r) || r->too_large ||
		    r->body.len + n > s->cfg->body_limit) {
			r->too_large = true;
			dfkv_http_buf_free(&r->body);
			/* Do not drain an endless body: drop the connection. */
			return r->seen > s->cfg->body_limit * DISCARD_FACTOR ?
				MHD_NO : MHD_YES;
		}
		return dfkv_http_buf_add(&r->body, upload_data, n) ? MHD_YES :
								   MHD_NO;
	}
	if (r->auth != AUTH_OK)
		return send_unauthorized(c, method, r->auth);
	if (refused(r))
		return MHD_NO;
	if (r->too_large)
		return send_error(c, method, MHD_HTTP_CONTENT_TOO_LARGE, NULL,
				  "body larger than %zu bytes",
				  s->cfg->body_limit);
	return dispatch(s, c, url, method, r);
}

static void completed(void *cls, struct MHD_Connection *c, void **con_cls,
		      enum MHD_RequestTerminationCode toe)
{
	struct req *r = *con_cls;

	(void)cls;
	(void)c;
	(void)toe;
	if (r) {
		dfkv_http_buf_free(&r->body);
		free(r);
		*con_cls = NULL;
	}
}

static void mhd_log(void *cls, const char *fmt, va_list ap)
{
	char buf[512];

	(void)cls;
	vsnprintf(buf, sizeof(buf), fmt, ap);
	buf[strcspn(buf, "\n")] = '\0';
	logmsg(LOG_VERBOSE, "http: %s", buf);
}

/* The long-poll slots and their watcher; -errno. */
static int watcher_start(struct http_server *s)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.u64 = WATCH_KICK };
	int ret;

	pthread_mutex_init(&s->lp_lock, NULL);
	pthread_mutex_init(&s->ans_lock, NULL);
	s->next_due = UINT64_MAX;
	s->lp = calloc(s->cfg->max_long_polls, sizeof(*s->lp));
	s->ep = epoll_create1(EPOLL_CLOEXEC);
	s->kick_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (!s->lp)
		return -ENOMEM;
	if (s->ep < 0 || s->kick_fd < 0 ||
	    epoll_ctl(s->ep, EPOLL_CTL_ADD, s->kick_fd, &ev))
		return -errno;
	ret = pthread_create(&s->watcher, NULL, watcher_main, s);
	if (ret)
		return -ret;
	s->watching = true;
	return 0;
}

static void server_free(struct http_server *s)
{
	jobs_stop(s->jobs);
	if (s->watching) {
		pthread_mutex_lock(&s->lp_lock);
		s->watcher_stop = true;
		pthread_mutex_unlock(&s->lp_lock);
		kick(s);
		pthread_join(s->watcher, NULL);
	}
	if (s->ep >= 0)
		close(s->ep);
	if (s->kick_fd >= 0)
		close(s->kick_fd);
	free(s->lp);
	for (size_t i = 0; i < SHARED_ANSWERS; i++)
		if (s->ans[i].r)
			MHD_destroy_response(s->ans[i].r);
	pthread_mutex_destroy(&s->lp_lock);
	pthread_mutex_destroy(&s->ans_lock);
	free(s);
}

struct http_server *http_start(const struct mdsd_config *cfg,
			       struct backend *b)
{
	struct http_server *s = calloc(1, sizeof(*s));
	unsigned int flags = MHD_USE_EPOLL_INTERNAL_THREAD |
			     MHD_ALLOW_SUSPEND_RESUME | MHD_USE_ERROR_LOG;
	int ret;

	if (!s)
		return NULL;
	s->cfg = cfg;
	s->b = b;
	s->ep = s->kick_fd = -1;
	ret = watcher_start(s);
	s->jobs = ret ? NULL : jobs_start(cfg->http_threads);
	if (!ret && !s->jobs)
		ret = -ENOMEM;
	if (ret) {
		logmsg(LOG_ERR, "http: cannot start: %s", strerror(-ret));
		server_free(s);
		return NULL;
	}
	b->ops->set_notify(b, (struct backend_notify){ lp_changed, s });
	if (cfg->listen_addr.ss_family == AF_INET6)
		flags |= MHD_USE_IPv6;
	s->d = MHD_start_daemon(flags, 0, NULL, NULL, handler, s,
				MHD_OPTION_EXTERNAL_LOGGER, mhd_log, NULL,
				MHD_OPTION_SOCK_ADDR,
				(const struct sockaddr *)&cfg->listen_addr,
				MHD_OPTION_CONNECTION_LIMIT, cfg->max_conns,
				MHD_OPTION_PER_IP_CONNECTION_LIMIT,
				cfg->max_conns_peer,
				MHD_OPTION_CONNECTION_TIMEOUT, cfg->conn_timeout_s,
				MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)(64 << 10),
				MHD_OPTION_THREAD_STACK_SIZE, (size_t)(512 << 10),
				MHD_OPTION_NOTIFY_COMPLETED, completed, NULL,
				MHD_OPTION_LISTENING_ADDRESS_REUSE, 1U,
				MHD_OPTION_END);
	if (!s->d) {
		logmsg(LOG_ERR, "cannot listen on %s: %s", cfg->listen,
		       strerror(errno));
		b->ops->set_notify(b, (struct backend_notify){ NULL, NULL });
		server_free(s);
		return NULL;
	}
	logmsg(LOG_INFO, "listening on %s (backend %s, %u request threads)",
	       cfg->listen, b->ops->name, cfg->http_threads);
	return s;
}

void http_stop(struct http_server *s)
{
	if (!s)
		return;
	s->b->ops->set_notify(s->b, (struct backend_notify){ NULL, NULL });
	/* libmicrohttpd stops only without suspended connections */
	pthread_mutex_lock(&s->lp_lock);
	s->stopping = true;
	for (size_t i = 0; i < s->cfg->max_long_polls; i++)
		if (s->lp[i].used && s->lp[i].suspended)
			lp_wake(s, &s->lp[i]);
	pthread_mutex_unlock(&s->lp_lock);
	jobs_drain(s->jobs);
	MHD_stop_daemon(s->d);
	server_free(s);
}
