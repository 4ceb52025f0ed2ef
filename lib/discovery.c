// SPDX-License-Identifier: (GPL-2.0 WITH Linux-syscall-note) OR MIT
/*
 * libdfkv discovery through mdsd (SPEC.md 7): the ring follows the members
 * of one group, and the client may register itself under the group's
 * clients.  HTTP through libcurl (http.c; one easy handle driven by a
 * multi handle, so dfkv_close wakes a long-poll at once), JSON through
 * json-c, members decoded by mdsd's record codec (record.c).
 *
 * - dfkv_open_v2 reads /v1/groups/{g}/members from the first endpoint that
 *   answers and builds the first ring (no endpoint answering fails the
 *   open with DFKV_E_UNAVAILABLE; an empty group gives an empty ring, on
 *   which operations fail with DFKV_E_MEMBERS until members arrive).
 * - A thread then long-polls ?wait_epoch=E&wait_ms=W and rebuilds the ring
 *   whenever the epoch moves.  An endpoint that fails is left for the next
 *   one (after a round of failures: backoff from 100 ms doubling to 5 s);
 *   the last ring stays in force meanwhile.  After a switch the first read
 *   is a plain GET (epochs of separate memory-backend mdsd differ).  A 429
 *   or 503 with Retry-After (mdsd's bounds) stretches that round's
 *   backoff to the advertised seconds (at most RETRY_MAX_MS); the
 *   heartbeats go on meanwhile.
 * - Ring membership: state "up" and "draining" members are in the ring (a
 *   draining node still serves its keys until it leaves; keys do not move
 *   twice), "unhealthy" members are not.  Ids of DFKV_NODE_NAME_MAX bytes
 *   or more cannot be ring names and are skipped (counted).  A list whose
 *   ring members' weights add up to more than MDS_GROUP_WEIGHT_MAX (the
 *   cap mdsd enforces, SPEC 7) is refused whole and counted: the ring in
 *   force stays (at open: DFKV_E_MEMBERS), so no directory entry makes
 *   the client build an unbounded ring.  Rings are built by the thread
 *   below, never on a request's path, and published whole.
 * - Mass loss: when more than half of the ring's members disappear at
 *   once, the lost ones stay in the ring (arrivals are applied) for
 *   mds_grace_ms; then, if they are still gone, the ring drops them.
 *   Kept members that would take the ring past the weight cap are not
 *   kept: the new list is applied at once.
 * - The ring is published as a view {ring, ring index -> peer slot} under
 *   a writer-preferring rwlock: routing holds it for a lookup only, and
 *   peers (slots) are never freed before dfkv_close, so requests and
 *   leases in flight stay valid across swaps.  A member keeps its slot
 *   (and its connections) while its name and address stay the same; a
 *   new address takes a new slot.
 * - client_id: PUT /v1/groups/{g}/clients/{id} {"ttl_ms","host"} at open
 *   and every ttl/3 from the same thread; DELETE at dfkv_close.  A failed
 *   heartbeat is retried after 1 s, or after its Retry-After (at most
 *   ttl/3, so that the lease does not lapse meanwhile).  Both writes
 *   carry "X-Dfkv-Client-Key: <key>", 32 random bytes in hex drawn at
 *   open: mdsd records the first writer's key as the entry's owner and
 *   refuses (403, counted, retried like any failed heartbeat) a client
 *   token's write of an entry another key owns, e.g. another instance's
 *   with the same client_id, or this client's own after a restart until
 *   the old lease lapses.
 * - mds_token_file: mdsd's client token (--client-token-file; SPEC 7),
 *   read once at open (token.c, the reader mdsd uses); the writes (PUT,
 *   DELETE of the client's own entry) carry "Authorization: Bearer
 *   <token>", reads do not.  An unusable file, or a 401 to the
 *   registration at open, fails the open with DFKV_E_AUTH; a 401 to a
 *   heartbeat is counted.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE		/* pthread_rwlockattr_setkind_np */
#endif
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/random.h>

#include <json-c/json.h>

#include "discovery.h"
#include "http.h"
#include "peer.h"
#include "record.h"

#define DISC_SLOTS_MAX		4096	/* peer slots for the life of a client */
#define DISC_BODY_MAX		(8u << 20)
#define DISC_ID_MAX		MDS_ID_MAX	/* [A-Za-z0-9._-]{1,64} */
#define DISC_ADDR_MAX		256
#define DEF_GROUP		"default"
#define DEF_POLL_MS		30000
#define DEF_GRACE_MS		10000
#define DEF_CLIENT_TTL_MS	10000
#define BACKOFF_MIN_MS		100
#define BACKOFF_MAX_MS		5000
#define RETRY_MAX_MS		30000	/* the most of a Retry-After honoured */
#define HB_RETRY_MS		1000	/* a failed heartbeat without one */
#define DELETE_TIMEOUT_MS	1000
#define CLIENT_KEY_BYTES	32
#define CLIENT_KEY_HEADER	"X-Dfkv-Client-Key: "

struct disc_member {
	char name[DFKV_NODE_NAME_MAX];
	char tcp[DISC_ADDR_MAX];
	uint32_t weight;
};

struct disc_list {
	struct disc_member *v;
	size_t n;
};

struct disc_view {
	struct dfkv_ring *ring;		/* NULL: no members */
	uint32_t *slot;			/* ring index -> c->peers slot */
	size_t n;
};

struct dfkv_disc {
	struct dfkv_client *c;
	char **urls;
	size_t nurls, cur;
	char group[DISC_ID_MAX + 1];
	char client_id[DISC_ID_MAX + 1];	/* "" : no registration */
	char host[DISC_ADDR_MAX];		/* our "host" field, or "" */
	uint32_t poll_ms, grace_ms, ttl_ms;

	pthread_rwlock_t view_lock;
	struct disc_view *view;

	/* the follower thread's state */
	pthread_t thread;
	bool started;
	atomic_bool stop;
	CURLM *multi;
	CURL *easy;
	struct curl_slist *hdrs;	/* of writes: content type, token, key */
	uint64_t retry_ms;	/* the last reply's Retry-After (429, 503) */
	uint64_t poll_after;	/* no member read before (a backoff) */
	uint64_t epoch;
	bool synced;		/* epoch came from the current endpoint */
	struct disc_list base;	/* the membership applied last */
	struct disc_list anchor;	/* base at the start of the loss window */
	uint64_t anchor_t;
	struct disc_list last;	/* the last list fetched */
	uint64_t held_since;	/* mass loss being held since (0: none) */
	uint64_t next_hb;

	/* stats */
	_Atomic uint64_t st_epoch, st_ring, st_fetches, st_errors, st_changes,
		st_holds, st_skipped, st_hb_errors, st_auth_errors,
		st_forbidden, st_overweight;
	atomic_bool st_holding;
};

/* The weight of a ring over l. */
static uint64_t list_weight(const struct disc_list *l)
{
	uint64_t w = 0;

	for (size_t i = 0; i < l->n; i++)
		w += l->v[i].weight;
	return w;
}

static void list_free(struct disc_list *l)
{
	free(l->v);
	l->v = NULL;
	l->n = 0;
}

static void view_free(struct disc_view *v)
{
	if (!v)
		return;
	dfkv_ring_free(v->ring);
	free(v->slot);
	free(v);
}

/* --------------------------------------------------------------- HTTP */

/*
 * One request on d->easy.  0 with *status and the body in *out; -1 when
 * the transfer failed; -2 when dfkv_close asked to stop (stoppable only).
 * d->retry_ms: a 429's or 503's Retry-After in ms (0: none).
 */
static int http_do(struct dfkv_disc *d, const char *method, const char *url,
		   const char *body, uint64_t timeout_ms, bool stoppable,
		   long *status, struct dfkv_http_buf *out)
{
	const struct dfkv_http_req req = {
		.method = method,
		.url = url,
		.body = body,
		.hdrs = strcmp(method, "GET") ? d->hdrs : NULL,
		.connect_timeout_ms = (long)d->c->opt.connect_timeout_ms,
		.timeout_ms = (long)timeout_ms,
	};
	CURLMsg *msg;
	int running = 1, left, rc = -1;

	*status = 0;
	d->retry_ms = 0;
	out->max = DISC_BODY_MAX;
	dfkv_http_buf_clear(out);
	dfkv_curl.easy_reset(d->easy);	/* keeps live connections */
	dfkv_http_setup(d->easy, &req, out);
	if (dfkv_curl.multi_add_handle(d->multi, d->easy) != CURLM_OK)
		return -1;
	while (running) {
		if (stoppable && atomic_load(&d->stop)) {
			rc = -2;
			goto out;
		}
		if (dfkv_curl.multi_perform(d->multi, &running) != CURLM_OK)
			goto out;
		if (running &&
		    dfkv_curl.multi_poll(d->multi, NULL, 0, 1000, NULL) != CURLM_OK)
			goto out;
	}
	while ((msg = dfkv_curl.multi_info_read(d->multi, &left)))
		if (msg->msg == CURLMSG_DONE && msg->easy_handle == d->easy &&
		    msg->data.result == CURLE_OK) {
			curl_off_t ra = 0;

			dfkv_curl.easy_getinfo(d->easy, CURLINFO_RESPONSE_CODE, status);
			if ((*status == 429 || *status == 503) &&
			    dfkv_curl.easy_getinfo(d->easy, CURLINFO_RETRY_AFTER,
					      &ra) == CURLE_OK && ra > 0)
				d->retry_ms = ra < RETRY_MAX_MS / 1000 ?
					      (uint64_t)ra * 1000 : RETRY_MAX_MS;
			rc = 0;
		}
out:
	dfkv_curl.multi_remove_handle(d->multi, d->easy);
	return rc;
}

/* Sleep ms unless dfkv_close wakes us. */
static void nap(struct dfkv_disc *d, uint64_t ms)
{
	uint64_t end = dfkv_now_ms() + ms, now;

	while (!atomic_load(&d->stop) && (now = dfkv_now_ms()) < end)
		dfkv_curl.multi_poll(d->multi, NULL, 0, (int)(end - now), NULL);
}

/* ------------------------------------------------------------- lists */

/*
 * {"epoch": E, "members": [records]} into the ring candidates: each
 * record decoded by the directory's own codec (record.c, unknown fields
 * ignored: forward compatible); unhealthy members left out, unusable or
 * duplicate ones skipped (counted).
 */
static int parse_members(struct dfkv_disc *d, const struct dfkv_http_buf *b,
			 uint64_t *epoch, struct disc_list *out)
{
	struct json_object *o, *e, *arr;
	size_t n;
	int err = DFKV_E_PROTO;

	memset(out, 0, sizeof(*out));
	o = b->p ? mds_json_parse(b->p, b->len, NULL, 0) : NULL;
	if (!o || !json_object_object_get_ex(o, "epoch", &e) ||
	    !json_object_is_type(e, json_type_int) ||
	    !json_object_object_get_ex(o, "members", &arr) ||
	    !json_object_is_type(arr, json_type_array))
		goto out;
	*epoch = (uint64_t)json_object_get_int64(e);
	n = json_object_array_length(arr);
	if (n > DISC_SLOTS_MAX)
		goto out;
	out->v = calloc(n ? n : 1, sizeof(*out->v));
	if (!out->v) {
		err = DFKV_E_NOMEM;
		goto out;
	}
	for (size_t i = 0; i < n; i++) {
		struct disc_member *dm = &out->v[out->n];
		struct mds_entry m;

		if (mds_entry_decode(json_object_array_get_idx(arr, i), NULL, 0,
				     true, &m, NULL, 0))
			goto skip;
		if (m.state == MDS_UNHEALTHY)
			continue;		/* policy: not in the ring */
		if (strlen(m.id) >= DFKV_NODE_NAME_MAX ||
		    m.weight > DFKV_WEIGHT_MAX)
			goto skip;
		strcpy(dm->name, m.id);
		strcpy(dm->tcp, m.tcp);
		dm->weight = m.weight;
		for (size_t j = 0; j < out->n; j++)
			if (!strcmp(out->v[j].name, dm->name))
				goto skip;	/* duplicate id */
		out->n++;
		continue;
skip:
		atomic_fetch_add(&d->st_skipped, 1);
	}
	err = 0;
	if (list_weight(out) > MDS_GROUP_WEIGHT_MAX) {
		atomic_fetch_add(&d->st_overweight, 1);
		err = DFKV_E_MEMBERS;
	}
out:
	json_object_put(o);
	if (err)
		list_free(out);
	return err;
}

static const struct disc_member *find(const struct disc_list *l,
				      const char *name)
{
	for (size_t i = 0; i < l->n; i++)
		if (!strcmp(l->v[i].name, name))
			return &l->v[i];
	return NULL;
}

/* ------------------------------------------------------------- slots */

/* The peer slot of m: an existing one with the same name and address, or
 * a new one.  -1 when the table is full or m's address is malformed. */
static long slot_of(struct dfkv_disc *d, const struct disc_member *m)
{
	struct dfkv_client *c = d->c;
	struct dfkv_peer *parsed = NULL, *p;
	char spec[DFKV_NODE_NAME_MAX + DISC_ADDR_MAX + 2];
	size_t np = c->npeers, n;

	snprintf(spec, sizeof(spec), "%s%s%s", m->name, m->tcp[0] ? "=" : "",
		 m->tcp);
	if (dfkv_members_parse(spec, &parsed, &n) || n != 1) {
		free(parsed);
		return -1;
	}
	for (size_t i = 0; i < np; i++) {
		p = &c->peers[i];
		if (!strcmp(p->name, parsed->name) &&
		    !strcmp(p->host, parsed->host) && p->port == parsed->port) {
			free(parsed);
			return (long)i;
		}
	}
	if (np >= DISC_SLOTS_MAX) {
		free(parsed);
		return -1;
	}
	p = &c->peers[np];
	memset(p, 0, sizeof(*p));
	strcpy(p->name, parsed->name);
	strcpy(p->host, parsed->host);
	p->port = parsed->port;
	p->weight = m->weight;
	p->index = (uint32_t)np;
	free(parsed);
	dfkv_peer_setup(c, p);		/* failure: the slot stays down */
	atomic_store(&c->npeers, np + 1);	/* publishes the slot */
	return (long)np;
}

/* Build and publish the ring over l. */
static int publish(struct dfkv_disc *d, const struct disc_list *l)
{
	struct dfkv_ring_member *rm = NULL;
	struct disc_view *v = calloc(1, sizeof(*v)), *old;
	int err = 0;

	if (!v)
		return DFKV_E_NOMEM;
	if (l->n) {
		rm = calloc(l->n, sizeof(*rm));
		v->slot = calloc(l->n, sizeof(*v->slot));
		if (!rm || !v->slot) {
			err = DFKV_E_NOMEM;
			goto out;
		}
		for (size_t i = 0; i < l->n; i++) {
			long s = slot_of(d, &l->v[i]);

			if (s < 0) {	/* peer table full: left out */
				atomic_fetch_add(&d->st_skipped, 1);
				continue;
			}
			v->slot[v->n] = (uint32_t)s;
			rm[v->n++] = (struct dfkv_ring_member){ l->v[i].name,
								l->v[i].weight };
		}
		if (v->n) {
			err = dfkv_ring_build(rm, v->n, &v->ring);
			if (err)
				goto out;
		}
	}
	pthread_rwlock_wrlock(&d->view_lock);
	old = d->view;
	d->view = v;
	pthread_rwlock_unlock(&d->view_lock);
	view_free(old);
	v = NULL;
	atomic_store(&d->st_ring, d->view->n);
	atomic_fetch_add(&d->st_changes, 1);
out:
	free(rm);
	view_free(v);
	return err;
}

static int list_dup(struct disc_list *dst, const struct disc_list *src)
{
	struct disc_member *v = calloc(src->n ? src->n : 1, sizeof(*v));

	if (!v)
		return DFKV_E_NOMEM;
	memcpy(v, src->v, src->n * sizeof(*v));
	free(dst->v);
	dst->v = v;
	dst->n = src->n;
	return 0;
}

/* The weight of n plus the anchor's members n lacks (a held loss). */
static uint64_t held_weight(const struct dfkv_disc *d,
			    const struct disc_list *n)
{
	uint64_t w = list_weight(n);

	for (size_t i = 0; i < d->anchor.n; i++)
		if (!find(n, d->anchor.v[i].name))
			w += d->anchor.v[i].weight;
	return w;
}

/*
 * Apply d->last: normally the ring becomes it.  Losses are measured
 * against the anchor, the membership at the start of a window of
 * grace_ms (so a burst of removals counts as one): when more than half of
 * the anchor is gone, the lost members stay in the ring until the grace
 * period ends.
 */
static void apply(struct dfkv_disc *d, bool first)
{
	struct disc_list *n = &d->last, u = { 0 };
	uint64_t now = dfkv_now_ms();
	size_t lost = 0;

	if (first || (!d->held_since && now - d->anchor_t >= d->grace_ms)) {
		if (list_dup(&d->anchor, first ? n : &d->base))
			return;
		d->anchor_t = now;
	}
	for (size_t i = 0; i < d->anchor.n && !first; i++)
		lost += !find(n, d->anchor.v[i].name);
	if (!first && lost * 2 > d->anchor.n) {
		if (!d->held_since) {
			d->held_since = now ? now : 1;
			atomic_fetch_add(&d->st_holds, 1);
		}
		if (now - d->held_since < d->grace_ms &&
		    held_weight(d, n) <= MDS_GROUP_WEIGHT_MAX) {
			/* the new list plus the lost members */
			u.v = calloc(n->n + lost, sizeof(*u.v));
			if (!u.v)
				return;
			memcpy(u.v, n->v, n->n * sizeof(*u.v));
			u.n = n->n;
			for (size_t i = 0; i < d->anchor.n; i++)
				if (!find(n, d->anchor.v[i].name))
					u.v[u.n++] = d->anchor.v[i];
			atomic_store(&d->st_holding, true);
			publish(d, &u);
			list_free(&u);
			return;
		}
	}
	if (d->held_since) {	/* the held loss is applied: a new window */
		list_dup(&d->anchor, n);
		d->anchor_t = now;
	}
	d->held_since = 0;
	atomic_store(&d->st_holding, false);
	if (!publish(d, n))
		list_dup(&d->base, n);
}

/* ------------------------------------------------------------ fetches */

/* GET the members from the current endpoint; wait_ms 0: no long-poll. */
static int fetch(struct dfkv_disc *d, uint64_t wait_ms, bool stoppable,
		 bool *changed)
{
	char url[2048];
	struct dfkv_http_buf b = { 0 };
	struct disc_list l;
	uint64_t epoch = 0;
	long status;
	int rc;

	if (wait_ms && d->synced)
		snprintf(url, sizeof(url),
			 "%s/v1/groups/%s/members?wait_epoch=%llu&wait_ms=%llu",
			 d->urls[d->cur], d->group,
			 (unsigned long long)d->epoch,
			 (unsigned long long)wait_ms);
	else
		snprintf(url, sizeof(url), "%s/v1/groups/%s/members",
			 d->urls[d->cur], d->group);
	atomic_fetch_add(&d->st_fetches, 1);
	rc = http_do(d, "GET", url, NULL,
		     (d->synced ? wait_ms : 0) + d->c->opt.io_timeout_ms,
		     stoppable, &status, &b);
	if (rc == -2) {
		dfkv_http_buf_free(&b);
		return 1;
	}
	if (rc || status != 200 || parse_members(d, &b, &epoch, &l)) {
		dfkv_http_buf_free(&b);
		atomic_fetch_add(&d->st_errors, 1);
		return -1;
	}
	dfkv_http_buf_free(&b);
	list_free(&d->last);
	d->last = l;
	*changed = !d->synced || epoch != d->epoch;
	d->synced = true;
	d->epoch = epoch;
	atomic_store(&d->st_epoch, epoch);
	return 0;
}

/* PUT clients/{id} (register or heartbeat), or DELETE it: 0, -1, or
 * DFKV_E_AUTH when mdsd refused the token (401).  A 403: the entry is
 * another client key's (counted). */
static int client_reg(struct dfkv_disc *d, bool del)
{
	char url[2048], body[DISC_ADDR_MAX + 64];
	struct dfkv_http_buf b = { 0 };
	long status;
	int rc;

	snprintf(url, sizeof(url), "%s/v1/groups/%s/clients/%s",
		 d->urls[d->cur], d->group, d->client_id);
	if (del) {
		rc = http_do(d, "DELETE", url, NULL, DELETE_TIMEOUT_MS, false,
			     &status, &b);
	} else {
		snprintf(body, sizeof(body), "{\"ttl_ms\":%u,\"host\":\"%s\"}",
			 d->ttl_ms, d->host);
		rc = http_do(d, "PUT", url, body, d->c->opt.io_timeout_ms, true,
			     &status, &b);
	}
	dfkv_http_buf_free(&b);
	if (rc || (status != 200 && !(del && status == 404))) {
		if (!del)
			atomic_fetch_add(&d->st_hb_errors, 1);
		if (!rc && status == 401) {
			atomic_fetch_add(&d->st_auth_errors, 1);
			return DFKV_E_AUTH;
		}
		if (!rc && status == 403)
			atomic_fetch_add(&d->st_forbidden, 1);
		return -1;
	}
	return 0;
}

/* When the heartbeat after one that returned rc is due: ttl/3 after a
 * success, else after the refusal's Retry-After (at most ttl/3) or 1 s. */
static uint64_t hb_next(const struct dfkv_disc *d, int rc, uint64_t now)
{
	uint64_t third = d->ttl_ms / 3, retry = d->retry_ms;

	if (!rc)
		return now + third;
	if (!retry)
		retry = HB_RETRY_MS;
	return now + (retry < third ? retry : third);
}

static void next_endpoint(struct dfkv_disc *d)
{
	d->cur = (d->cur + 1) % d->nurls;
	d->synced = false;
}

/* The held mass loss's grace period is over. */
static bool held_due(const struct dfkv_disc *d)
{
	return d->held_since && dfkv_now_ms() - d->held_since >= d->grace_ms;
}

static void *follow(void *arg)
{
	struct dfkv_disc *d = arg;
	uint32_t backoff = BACKOFF_MIN_MS;
	uint64_t round_retry = 0;	/* the round's longest Retry-After */
	size_t fails = 0;
	bool changed;

	while (!atomic_load(&d->stop)) {
		uint64_t now = dfkv_now_ms(), wait = d->poll_ms;
		int rc;

		if (d->client_id[0] && now >= d->next_hb) {
			rc = client_reg(d, false);
			now = dfkv_now_ms();
			d->next_hb = hb_next(d, rc, now);
		}
		if (now < d->poll_after) {
			/* backing off: until then, a heartbeat or a held
			 * loss's end, whichever comes first */
			uint64_t until = d->poll_after;

			if (d->client_id[0] && d->next_hb < until)
				until = d->next_hb;
			if (d->held_since && d->held_since + d->grace_ms < until)
				until = d->held_since + d->grace_ms;
			if (until > now)
				nap(d, until - now);
			if (held_due(d))
				apply(d, false);	/* the held loss is due */
			continue;
		}
		if (d->client_id[0])
			wait = d->next_hb > now ?
			       (d->next_hb - now < wait ? d->next_hb - now : wait) : 1;
		if (d->held_since) {
			uint64_t end = d->held_since + d->grace_ms;

			wait = end > now ? (end - now < wait ? end - now : wait) : 1;
		}
		rc = fetch(d, wait ? wait : 1, true, &changed);
		if (rc > 0)
			break;
		if (rc == 0) {
			fails = 0;
			backoff = BACKOFF_MIN_MS;
			round_retry = 0;
			if (changed || d->held_since)
				apply(d, false);
			continue;
		}
		/* keep the last ring; try the next endpoint, back off after
		 * a whole round of failures (at least the round's longest
		 * Retry-After) */
		if (d->retry_ms > round_retry)
			round_retry = d->retry_ms;
		next_endpoint(d);
		if (++fails >= d->nurls) {
			fails = 0;
			d->poll_after = dfkv_now_ms() +
					(round_retry > backoff ? round_retry : backoff);
			round_retry = 0;
			backoff = backoff * 2 > BACKOFF_MAX_MS ? BACKOFF_MAX_MS :
				  backoff * 2;
		}
		if (held_due(d))
			apply(d, false);	/* the held loss is due */
	}
	return NULL;
}

/* -------------------------------------------------------------- API */

static int split_urls(struct dfkv_disc *d, const char *spec)
{
	const char *s = spec;

	if (strnlen(spec, 65536) >= 65536)
		return DFKV_E_INVAL;
	while (*s) {
		const char *e = strchr(s, ',');
		size_t n = e ? (size_t)(e - s) : strlen(s);
		const char *a = s, *b = s + n;
		char **v, *u;

		while (a < b && isspace((unsigned char)*a))
			a++;
		while (b > a && (isspace((unsigned char)b[-1]) || b[-1] == '/'))
			b--;
		if (a == b || b - a > 1024)
			return DFKV_E_INVAL;
		v = realloc(d->urls, (d->nurls + 1) * sizeof(*v));
		if (!v)
			return DFKV_E_NOMEM;
		d->urls = v;
		u = strndup(a, (size_t)(b - a));
		if (!u)
			return DFKV_E_NOMEM;
		d->urls[d->nurls++] = u;
		s += n;
		if (*s == ',')
			s++;
	}
	return d->nurls ? 0 : DFKV_E_INVAL;
}

/* "X-Dfkv-Client-Key: <hex>" of CLIENT_KEY_BYTES fresh random bytes,
 * appended to d->hdrs (wiped with them). */
static int client_key(struct dfkv_disc *d)
{
	static const char hex[] = "0123456789abcdef";
	unsigned char key[CLIENT_KEY_BYTES];
	char hdr[sizeof(CLIENT_KEY_HEADER) + 2 * CLIENT_KEY_BYTES];
	size_t off = sizeof(CLIENT_KEY_HEADER) - 1;
	struct curl_slist *l;

	if (getrandom(key, sizeof(key), 0) != (ssize_t)sizeof(key))
		return DFKV_E_SYS;
	memcpy(hdr, CLIENT_KEY_HEADER, off);
	for (size_t i = 0; i < sizeof(key); i++) {
		hdr[off++] = hex[key[i] >> 4];
		hdr[off++] = hex[key[i] & 15];
	}
	hdr[off] = '\0';
	l = dfkv_curl.slist_append(d->hdrs, hdr);
	explicit_bzero(key, sizeof(key));
	explicit_bzero(hdr, sizeof(hdr));
	if (!l)
		return DFKV_E_NOMEM;
	d->hdrs = l;
	return 0;
}

/* The writes' headers: the content type, the client key (client_id) and,
 * with a token file, the token.  errno tells why a token file is
 * unusable. */
static int write_headers(struct dfkv_disc *d, const char *token_file)
{
	char why[64];
	int err;

	d->hdrs = dfkv_curl.slist_append(NULL, "Content-Type: application/json");
	if (!d->hdrs)
		return DFKV_E_NOMEM;
	if (d->client_id[0]) {
		err = client_key(d);
		if (err)
			return err;
	}
	if (!token_file)
		return 0;
	err = dfkv_http_bearer(&d->hdrs, token_file, why, sizeof(why));
	if (err == -ENOMEM)
		return DFKV_E_NOMEM;
	if (err) {
		errno = -err;
		return DFKV_E_AUTH;
	}
	return 0;
}

static void our_host(struct dfkv_disc *d)
{
	char h[DISC_ADDR_MAX] = "";

	if (gethostname(h, sizeof(h) - 1))
		return;
	for (size_t i = 0; h[i]; i++)
		if (!isalnum((unsigned char)h[i]) && !strchr("._:-", h[i]))
			return;
	strcpy(d->host, h);
}

int dfkv_disc_open(struct dfkv_client *c)
{
	const struct dfkv_client_options_v2 *o = &c->opt;
	struct dfkv_disc *d;
	pthread_rwlockattr_t ra;
	int err;

	if ((o->group && (strnlen(o->group, DISC_ID_MAX + 1) > DISC_ID_MAX ||
			  !mds_id_valid(o->group))) ||
	    (o->client_id && (strnlen(o->client_id, DISC_ID_MAX + 1) >
			      DISC_ID_MAX || !mds_id_valid(o->client_id))))
		return DFKV_E_INVAL;
	if (dfkv_curl_load(NULL, 0)) {
		errno = ELIBACC;	/* libcurl.so.4 missing or unusable */
		return DFKV_E_SYS;
	}
	d = calloc(1, sizeof(*d));
	c->peers = calloc(DISC_SLOTS_MAX, sizeof(*c->peers));
	if (!d || !c->peers) {
		free(d);
		return DFKV_E_NOMEM;
	}
	d->c = c;
	pthread_rwlockattr_init(&ra);
	pthread_rwlockattr_setkind_np(&ra,
				      PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
	pthread_rwlock_init(&d->view_lock, &ra);
	pthread_rwlockattr_destroy(&ra);
	c->disc = d;			/* dfkv_disc_close cleans up from here */
	snprintf(d->group, sizeof(d->group), "%s", o->group ? o->group : DEF_GROUP);
	if (o->client_id)
		snprintf(d->client_id, sizeof(d->client_id), "%s", o->client_id);
	d->poll_ms = o->mds_poll_ms ? o->mds_poll_ms : DEF_POLL_MS;
	d->grace_ms = o->mds_grace_ms ? o->mds_grace_ms : DEF_GRACE_MS;
	d->ttl_ms = o->client_ttl_ms ? o->client_ttl_ms : DEF_CLIENT_TTL_MS;
	if (d->ttl_ms < 300 || d->ttl_ms > 86400000)	/* mdsd's range */
		return DFKV_E_INVAL;
	our_host(d);
	err = split_urls(d, o->mds_endpoints);
	if (err)
		return err;
	err = write_headers(d, o->mds_token_file);
	if (err)
		return err;
	d->multi = dfkv_curl.multi_init();
	d->easy = dfkv_curl.easy_init();
	if (!d->multi || !d->easy)
		return DFKV_E_NOMEM;

	/* the first list: from the first endpoint that answers */
	for (size_t i = 0; i < d->nurls; i++) {
		bool changed;

		if (!fetch(d, 0, false, &changed))
			break;
		next_endpoint(d);
	}
	if (!d->synced)		/* no endpoint, or lists over the cap */
		return atomic_load(&d->st_overweight) ? DFKV_E_MEMBERS :
							DFKV_E_UNAVAILABLE;
	apply(d, true);
	if (!d->view)
		return DFKV_E_MEMBERS;	/* e.g. the peer table is full */
	if (d->client_id[0]) {
		uint64_t now = dfkv_now_ms();

		err = client_reg(d, false);
		if (err == DFKV_E_AUTH) {
			errno = EKEYREJECTED;
			return err;
		}
		d->next_hb = hb_next(d, err, now);
	}
	if (pthread_create(&d->thread, NULL, follow, d))
		return DFKV_E_SYS;
	d->started = true;
	return 0;
}

void dfkv_disc_close(struct dfkv_client *c)
{
	struct dfkv_disc *d = c->disc;

	if (!d)
		return;
	if (d->started) {
		atomic_store(&d->stop, true);
		dfkv_curl.multi_wakeup(d->multi);
		pthread_join(d->thread, NULL);
		/* deregister: the current endpoint first, then the others */
		for (size_t i = 0; d->client_id[0] && i < d->nurls; i++) {
			if (!client_reg(d, true))
				break;
			d->cur = (d->cur + 1) % d->nurls;
		}
	}
	if (d->easy)
		dfkv_curl.easy_cleanup(d->easy);
	if (d->multi)
		dfkv_curl.multi_cleanup(d->multi);
	dfkv_http_hdrs_free(d->hdrs);		/* wipes the token */
	for (size_t i = 0; i < d->nurls; i++)
		free(d->urls[i]);
	free(d->urls);
	view_free(d->view);
	list_free(&d->base);
	list_free(&d->anchor);
	list_free(&d->last);
	pthread_rwlock_destroy(&d->view_lock);
	free(d);
	c->disc = NULL;
}

int dfkv_disc_route(struct dfkv_client *c, const uint8_t id[DFKV_OBJECT_ID_LEN],
		    struct dfkv_peer **peer)
{
	struct dfkv_disc *d = c->disc;
	size_t m;
	int err = DFKV_E_MEMBERS;

	pthread_rwlock_rdlock(&d->view_lock);
	if (d->view && d->view->ring) {
		err = dfkv_ring_route(d->view->ring, id, DFKV_PROBE_NODE, &m);
		if (!err)
			*peer = &c->peers[d->view->slot[m]];
	}
	pthread_rwlock_unlock(&d->view_lock);
	return err;
}

size_t dfkv_disc_stats(struct dfkv_client *c, char *buf, size_t cap)
{
	struct dfkv_disc *d = c->disc;
	int n;

	if (!cap)
		return 0;
	n = snprintf(buf, cap,
		     "# HELP dfkv_client_mds_epoch Epoch of the members list the ring follows.\n"
		     "# TYPE dfkv_client_mds_epoch gauge\n"
		     "dfkv_client_mds_epoch %llu\n"
		     "# HELP dfkv_client_ring_members Members in the ring.\n"
		     "# TYPE dfkv_client_ring_members gauge\n"
		     "dfkv_client_ring_members %llu\n"
		     "# HELP dfkv_client_ring_holding 1 while a mass loss is held.\n"
		     "# TYPE dfkv_client_ring_holding gauge\n"
		     "dfkv_client_ring_holding %d\n"
		     "# TYPE dfkv_client_mds_fetches_total counter\n"
		     "dfkv_client_mds_fetches_total %llu\n"
		     "# TYPE dfkv_client_mds_errors_total counter\n"
		     "dfkv_client_mds_errors_total %llu\n"
		     "# TYPE dfkv_client_ring_changes_total counter\n"
		     "dfkv_client_ring_changes_total %llu\n"
		     "# TYPE dfkv_client_ring_holds_total counter\n"
		     "dfkv_client_ring_holds_total %llu\n"
		     "# TYPE dfkv_client_mds_skipped_members_total counter\n"
		     "dfkv_client_mds_skipped_members_total %llu\n"
		     "# TYPE dfkv_client_mds_heartbeat_errors_total counter\n"
		     "dfkv_client_mds_heartbeat_errors_total %llu\n"
		     "# HELP dfkv_client_mds_auth_errors_total Writes mdsd refused the token of (401).\n"
		     "# TYPE dfkv_client_mds_auth_errors_total counter\n"
		     "dfkv_client_mds_auth_errors_total %llu\n"
		     "# HELP dfkv_client_mds_forbidden_total Writes of the client's entry mdsd refused: another client key owns it (403).\n"
		     "# TYPE dfkv_client_mds_forbidden_total counter\n"
		     "dfkv_client_mds_forbidden_total %llu\n"
		     "# HELP dfkv_client_mds_overweight_lists_total Member lists refused: their weights add up to more than the cap.\n"
		     "# TYPE dfkv_client_mds_overweight_lists_total counter\n"
		     "dfkv_client_mds_overweight_lists_total %llu\n",
		     (unsigned long long)atomic_load(&d->st_epoch),
		     (unsigned long long)atomic_load(&d->st_ring),
		     atomic_load(&d->st_holding) ? 1 : 0,
		     (unsigned long long)atomic_load(&d->st_fetches),
		     (unsigned long long)atomic_load(&d->st_errors),
		     (unsigned long long)atomic_load(&d->st_changes),
		     (unsigned long long)atomic_load(&d->st_holds),
		     (unsigned long long)atomic_load(&d->st_skipped),
		     (unsigned long long)atomic_load(&d->st_hb_errors),
		     (unsigned long long)atomic_load(&d->st_auth_errors),
		     (unsigned long long)atomic_load(&d->st_forbidden),
		     (unsigned long long)atomic_load(&d->st_overweight));
	if (n < 0)
		return 0;
	return (size_t)n < cap ? (size_t)n : cap - 1;
}
