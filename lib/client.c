// SPDX-License-Identifier: (GPL-2.0 WITH Linux-syscall-note) OR MIT
/*
 * libdfkv client, the library's face: dfkv_open_v2/dfkv_close, the
 * synchronous operations (scalar, scatter-gather, batches, keyed, leases)
 * and the client's counters.  Each call checks its arguments, builds
 * routed requests and runs them; the engine is elsewhere: routing in
 * route.c, execution and peer health in exec.c, scatter-gather loads in
 * sg.c, keyed grouping in keyed.c, lease handles in lease.c, peer set-up
 * and the choice of transport in peer.c, discovery in discovery.c and the
 * asynchronous batches, which run the same requests, in async.c.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <time.h>

#include "names_gen.h"
#include "async.h"
#include "discovery.h"
#include "exec.h"
#include "keyed.h"
#include "lease.h"
#include "peer.h"
#include "route.h"
#include "sg.h"
#include "transport.h"
#include "token.h"

static_assert(sizeof(struct dfkv_client_options_v2) ==
	      DFKV_CLIENT_OPTIONS_V2_SIZE_VER5, "options layout");

#define DEF_BATCH_CONCURRENCY	16
#define DEF_CONNS_PER_PEER	2
#define DEF_CONNECT_TIMEOUT_MS	1000
#define DEF_IO_TIMEOUT_MS	10000
#define DEF_COOLDOWN_MS		2000
#define MAX_BATCH_CONCURRENCY	1024
#define MAX_CONNS_PER_PEER	64

/* ------------------------------------------------------- open / close */

DFKV_API void dfkv_close(struct dfkv_client *c)
{
	if (!c)
		return;
	dfkv_async_close(c);		/* every batch completed and freed */
	dfkv_disc_close(c);		/* no more ring changes */
	dfkv_leases_close(c);
	dfkv_peers_fini(c);
	dfkv_transports_close(c);
	dfkv_ring_free(c->ring);
	free(c->peers);
	free(c->ns);
	explicit_bzero(c->secret, sizeof(c->secret));
	free(c);
}

static int options_load(struct dfkv_client_options_v2 *o,
			const struct dfkv_client_options_v2 *user)
{
	int err = dfkv_copy_struct(o, sizeof(*o), user,
				   DFKV_CLIENT_OPTIONS_V2_SIZE_VER0);

	if (err)
		return err;
	if (o->transport >= __DFKV_TRANSPORT_MAX || o->__reserved ||
	    !dfkv_span_ok(o->ns, o->ns_len) || !o->members == !o->mds_endpoints ||
	    o->__reserved2 || o->__reserved3 ||
	    (!o->mds_endpoints && (o->group || o->client_id ||
				   o->mds_token_file)))
		return DFKV_E_INVAL;
	if (o->batch_concurrency > MAX_BATCH_CONCURRENCY ||
	    o->conns_per_peer > MAX_CONNS_PER_PEER || o->rdma_port > 65535 ||
	    o->rdma_expose >= __DFKV_RDMA_EXPOSE_MAX || o->__reserved4 ||
	    (o->tenant_secret && o->tenant_secret_file))
		return DFKV_E_INVAL;
#define DEF(f, v) do { if (!o->f) o->f = (v); } while (0)
	DEF(batch_concurrency, DEF_BATCH_CONCURRENCY);
	DEF(conns_per_peer, DEF_CONNS_PER_PEER);
	DEF(connect_timeout_ms, DEF_CONNECT_TIMEOUT_MS);
	DEF(io_timeout_ms, DEF_IO_TIMEOUT_MS);
	DEF(cooldown_ms, DEF_COOLDOWN_MS);
#undef DEF
	return 0;
}

/* The tenant's secret from the options, which are let go of. */
static int secret_load(struct dfkv_client *c)
{
	char why[512];
	int err = 0;

	if (c->opt.tenant_secret)
		memcpy(c->secret, c->opt.tenant_secret, sizeof(c->secret));
	else if (c->opt.tenant_secret_file)
		err = dfkv_secret_read(c->opt.tenant_secret_file, c->secret,
				       why, sizeof(why));
	c->has_secret = (c->opt.tenant_secret || c->opt.tenant_secret_file) &&
			!err;
	c->opt.tenant_secret = NULL;
	c->opt.tenant_secret_file = NULL;
	if (err) {
		errno = -err;
		return DFKV_E_AUTH;
	}
	return 0;
}

DFKV_API int dfkv_open_v2(const struct dfkv_client_options_v2 *opts,
			  struct dfkv_client **out)
{
	struct dfkv_client *c;
	struct dfkv_ring_member *rm = NULL;
	int err;

	if (!out)
		return DFKV_E_INVAL;
	*out = NULL;
	c = calloc(1, sizeof(*c));
	if (!c)
		return DFKV_E_NOMEM;
	err = dfkv_leases_open(c);
	if (!err)
		err = options_load(&c->opt, opts);
	if (!err)
		err = dfkv_async_open(c);
	if (err)
		goto fail;
	c->ns_len = c->opt.ns_len;
	c->ns = malloc((size_t)c->ns_len);
	if (!c->ns) {
		err = DFKV_E_NOMEM;
		goto fail;
	}
	memcpy(c->ns, c->opt.ns, (size_t)c->ns_len);
	c->opt.ns = NULL;		/* never look at the caller's copies */
	c->opt.members = NULL;
	err = dfkv_tenant_hash(c->ns, c->ns_len, &c->tenant);
	if (!err)
		err = secret_load(c);
	if (!err)
		err = dfkv_transports_open(c);	/* copies what they use */
	c->opt.local_dev = NULL;
	c->opt.rdma_devices = NULL;
	if (err)
		goto fail;
	if (c->opt.mds_endpoints) {
		err = dfkv_disc_open(c);	/* copies the strings */
		c->opt.mds_endpoints = c->opt.group = c->opt.client_id = NULL;
		c->opt.mds_token_file = NULL;
		if (err)
			goto fail;
		*out = c;
		return 0;
	}
	{
		size_t np;

		err = dfkv_members_parse(opts->members, &c->peers, &np);
		c->npeers = np;
	}
	if (err)
		goto fail;
	rm = calloc(c->npeers, sizeof(*rm));
	if (!rm) {
		err = DFKV_E_NOMEM;
		goto fail;
	}
	for (size_t i = 0; i < c->npeers; i++)
		rm[i] = (struct dfkv_ring_member){ c->peers[i].name,
						   c->peers[i].weight };
	err = dfkv_ring_build(rm, c->npeers, &c->ring);
	free(rm);
	if (err)
		goto fail;
	err = dfkv_peers_init(c);
	if (err)
		goto fail;
	*out = c;
	return 0;
fail:
	{
		int e = errno;	/* what DFKV_E_SYS and DFKV_E_AUTH tell */

		dfkv_close(c);
		errno = e;
	}
	return err;
}

/* ------------------------------------------------------------ locate */

DFKV_API int dfkv_locate(struct dfkv_client *c, const void *key,
			 uint64_t key_len, const char **member,
			 struct dfkv_key *block)
{
	struct dfkv_key bk = { 0 };
	struct dfkv_peer *p;
	int err;

	if (member)
		*member = NULL;
	if (block)
		memset(block, 0, sizeof(*block));
	if (!c || !member)
		return DFKV_E_INVAL;
	err = dfkv_route(c, key, key_len, &bk, &p);
	if (err)
		return err;
	*member = p->name;
	if (block)
		*block = bk;
	return 0;
}

/* A single data operation on key. */
static int run_one(struct dfkv_client *c, struct dfkv_req *r,
		   const void *key, uint64_t key_len)
{
	struct dfkv_req *rp = r;
	int err;

	if (!c)
		return DFKV_E_INVAL;
	err = dfkv_route(c, key, key_len, &r->key, &r->peer);
	if (err)
		return err;
	dfkv_execute(c, &rp, 1);
	return r->status;
}

/* ------------------------------------------------------------- scalar */

DFKV_API int dfkv_put(struct dfkv_client *c, const void *key, uint64_t key_len,
		      const void *val, uint64_t val_len)
{
	struct dfkv_req r = { .op = DFKV_OP_PUT, .val = val, .val_len = val_len };

	if (!dfkv_span_ok(val, val_len))
		return val_len ? DFKV_E_INVAL : DFKV_STATUS_INVALID;
	return run_one(c, &r, key, key_len);
}

DFKV_API int dfkv_get_range(struct dfkv_client *c, const void *key,
			    uint64_t key_len, uint64_t offset, uint64_t length,
			    void *buf, uint64_t cap, uint64_t *len,
			    uint64_t *stored_len)
{
	struct dfkv_req r = { .op = DFKV_OP_GET, .offset = offset,
			      .length = length, .buf = buf, .cap = cap };
	int s;

	if (len)
		*len = 0;
	if (stored_len)
		*stored_len = 0;
	if (!len || !dfkv_span_ok(buf, cap))
		return DFKV_E_INVAL;
	s = run_one(c, &r, key, key_len);
	if (stored_len)
		*stored_len = r.stored_len;
	if (s == DFKV_STATUS_OK)
		*len = r.data_len;
	return s;
}

DFKV_API int dfkv_get(struct dfkv_client *c, const void *key, uint64_t key_len,
		      void *buf, uint64_t cap, uint64_t *len)
{
	uint64_t stored = 0;
	int s = dfkv_get_range(c, key, key_len, 0, 0, buf, cap, len, &stored);

	if (s == DFKV_STATUS_TOO_LARGE)
		*len = stored;
	return s;
}

DFKV_API int dfkv_exist(struct dfkv_client *c, const void *key,
			uint64_t key_len, uint64_t *stored_len)
{
	struct dfkv_req r = { .op = DFKV_OP_EXIST };
	int s;

	if (stored_len)
		*stored_len = 0;
	s = run_one(c, &r, key, key_len);
	if (s == DFKV_STATUS_OK && stored_len)
		*stored_len = r.stored_len;
	return s;
}

DFKV_API int dfkv_remove(struct dfkv_client *c, const void *key,
			 uint64_t key_len)
{
	struct dfkv_req r = { .op = DFKV_OP_REMOVE };

	return run_one(c, &r, key, key_len);
}

/* ----------------------------------------------------- scatter-gather */

DFKV_API int dfkv_put_sg(struct dfkv_client *c, const void *key,
			 uint64_t key_len, const struct dfkv_iov *iov, size_t n)
{
	struct dfkv_req r = { .op = DFKV_OP_PUT };
	int s = dfkv_put_sg_load(&r, iov, n);

	if (!s)
		s = run_one(c, &r, key, key_len);
	free(r.iov);
	return s;
}

DFKV_API int dfkv_get_sg(struct dfkv_client *c, const void *key,
			 uint64_t key_len, uint64_t offset, uint64_t length,
			 const struct dfkv_iov *iov, size_t n,
			 uint64_t *data_len, uint64_t *stored_len)
{
	struct dfkv_req r = { .op = DFKV_OP_GET, .offset = offset,
			      .length = length };
	int s;

	if (data_len)
		*data_len = 0;
	if (stored_len)
		*stored_len = 0;
	if (!data_len)
		return DFKV_E_INVAL;
	s = dfkv_get_sg_load(&r, iov, n);
	if (!s) {
		s = run_one(c, &r, key, key_len);
		if (stored_len)
			*stored_len = r.stored_len;
		if (s == DFKV_STATUS_OK)
			*data_len = r.data_len;
	}
	free(r.iov);
	return s;
}

/* ------------------------------------------------------------ batches */

/* The parts every batch shares: requests routed, bad keys marked. */
static int batch_prepare(struct dfkv_client *c, size_t n,
			 const void *const *keys, const uint64_t *key_lens,
			 int *statuses, uint8_t op, struct dfkv_req **rv,
			 struct dfkv_req ***rp)
{
	struct dfkv_req *r;
	struct dfkv_req **p;

	*rv = NULL;
	*rp = NULL;
	if (statuses && n && n <= DFKV_CLIENT_BATCH_MAX)
		for (size_t i = 0; i < n; i++)
			statuses[i] = DFKV_E_NOT_RUN;
	if (!c || !keys || !key_lens || !statuses || !n ||
	    n > DFKV_CLIENT_BATCH_MAX)
		return DFKV_E_INVAL;
	r = calloc(n, sizeof(*r));
	p = calloc(n, sizeof(*p));
	if (!r || !p) {
		free(r);
		free(p);
		return DFKV_E_NOMEM;
	}
	for (size_t i = 0; i < n; i++) {
		r[i].op = op;
		statuses[i] = dfkv_route(c, keys[i], key_lens[i], &r[i].key,
				    &r[i].peer);
	}
	*rv = r;
	*rp = p;
	return 0;
}

/* Execute the requests whose slot is still clean; count the OKs. */
static int batch_run(struct dfkv_client *c, size_t n, struct dfkv_req *r,
		     struct dfkv_req **p, int *statuses)
{
	size_t m = 0;
	int ok = 0;

	for (size_t i = 0; i < n; i++)
		if (statuses[i] == 0)
			p[m++] = &r[i];
	if (m)
		dfkv_execute(c, p, m);
	for (size_t i = 0; i < n; i++) {
		if (statuses[i] == 0)
			statuses[i] = r[i].status;
		ok += statuses[i] == DFKV_STATUS_OK;
	}
	return ok;
}

DFKV_API int dfkv_put_batch(struct dfkv_client *c, size_t n,
			    const void *const *keys, const uint64_t *key_lens,
			    const void *const *vals, const uint64_t *val_lens,
			    int *statuses)
{
	struct dfkv_req *r, **p;
	int err, ok;

	if (!vals || !val_lens)
		keys = NULL;		/* fail the whole batch below */
	err = batch_prepare(c, n, keys, key_lens, statuses, DFKV_OP_PUT, &r, &p);
	if (err)
		return err;
	for (size_t i = 0; i < n; i++) {
		r[i].val = vals[i];
		r[i].val_len = val_lens[i];
		if (!statuses[i] && !dfkv_span_ok(vals[i], val_lens[i]))
			statuses[i] = val_lens[i] ? DFKV_E_INVAL :
				DFKV_STATUS_INVALID;
	}
	ok = batch_run(c, n, r, p, statuses);
	free(r);
	free(p);
	return ok;
}

DFKV_API int dfkv_get_batch(struct dfkv_client *c, size_t n,
			    const void *const *keys, const uint64_t *key_lens,
			    void *const *bufs, const uint64_t *caps,
			    uint64_t *lens, int *statuses)
{
	struct dfkv_req *r, **p;
	int err, ok;

	if (lens && n <= DFKV_CLIENT_BATCH_MAX)
		memset(lens, 0, n * sizeof(*lens));
	if (!bufs || !caps || !lens)
		keys = NULL;
	err = batch_prepare(c, n, keys, key_lens, statuses, DFKV_OP_GET, &r, &p);
	if (err)
		return err;
	for (size_t i = 0; i < n; i++) {
		r[i].buf = bufs[i];
		r[i].cap = caps[i];
		if (!statuses[i] && !dfkv_span_ok(bufs[i], caps[i]))
			statuses[i] = DFKV_E_INVAL;
	}
	ok = batch_run(c, n, r, p, statuses);
	for (size_t i = 0; i < n; i++)
		if (statuses[i] == DFKV_STATUS_OK)
			lens[i] = r[i].data_len;
		else if (statuses[i] == DFKV_STATUS_TOO_LARGE)
			lens[i] = r[i].stored_len;
	free(r);
	free(p);
	return ok;
}

DFKV_API int dfkv_exist_batch(struct dfkv_client *c, size_t n,
			      const void *const *keys, const uint64_t *key_lens,
			      uint64_t *stored_lens, int *statuses)
{
	struct dfkv_req *r, **p;
	int err, ok;

	if (stored_lens && n <= DFKV_CLIENT_BATCH_MAX)
		memset(stored_lens, 0, n * sizeof(*stored_lens));
	if (!stored_lens)
		keys = NULL;
	err = batch_prepare(c, n, keys, key_lens, statuses, DFKV_OP_EXIST,
			    &r, &p);
	if (err)
		return err;
	ok = batch_run(c, n, r, p, statuses);
	for (size_t i = 0; i < n; i++)
		if (statuses[i] == DFKV_STATUS_OK)
			stored_lens[i] = r[i].stored_len;
	free(r);
	free(p);
	return ok;
}

DFKV_API int dfkv_remove_batch(struct dfkv_client *c, size_t n,
			       const void *const *keys, const uint64_t *key_lens,
			       int *statuses)
{
	struct dfkv_req *r, **p;
	int err, ok;

	err = batch_prepare(c, n, keys, key_lens, statuses, DFKV_OP_REMOVE,
			    &r, &p);
	if (err)
		return err;
	ok = batch_run(c, n, r, p, statuses);
	free(r);
	free(p);
	return ok;
}

DFKV_API int dfkv_put_sg_batch(struct dfkv_client *c, size_t n,
			       const void *const *keys, const uint64_t *key_lens,
			       const struct dfkv_iov *const *iovs,
			       const size_t *iovcnts, int *statuses)
{
	struct dfkv_req *r, **p;
	int err, ok;

	if (!iovs || !iovcnts)
		keys = NULL;
	err = batch_prepare(c, n, keys, key_lens, statuses, DFKV_OP_PUT, &r, &p);
	if (err)
		return err;
	for (size_t i = 0; i < n; i++)
		if (!statuses[i])
			statuses[i] = dfkv_put_sg_load(&r[i], iovs[i], iovcnts[i]);
	ok = batch_run(c, n, r, p, statuses);
	for (size_t i = 0; i < n; i++)
		free(r[i].iov);
	free(r);
	free(p);
	return ok;
}

DFKV_API int dfkv_get_sg_batch(struct dfkv_client *c, size_t n,
			       const void *const *keys, const uint64_t *key_lens,
			       const struct dfkv_iov *const *iovs,
			       const size_t *iovcnts, uint64_t *lens,
			       int *statuses)
{
	struct dfkv_req *r, **p;
	int err, ok;

	if (lens && n <= DFKV_CLIENT_BATCH_MAX)
		memset(lens, 0, n * sizeof(*lens));
	if (!iovs || !iovcnts || !lens)
		keys = NULL;
	err = batch_prepare(c, n, keys, key_lens, statuses, DFKV_OP_GET, &r, &p);
	if (err)
		return err;
	for (size_t i = 0; i < n; i++)
		if (!statuses[i])
			statuses[i] = dfkv_get_sg_load(&r[i], iovs[i], iovcnts[i]);
	ok = batch_run(c, n, r, p, statuses);
	for (size_t i = 0; i < n; i++) {
		if (statuses[i] == DFKV_STATUS_OK)
			lens[i] = r[i].data_len;
		else if (statuses[i] == DFKV_STATUS_TOO_LARGE)
			lens[i] = r[i].stored_len;
		free(r[i].iov);
	}
	free(r);
	free(p);
	return ok;
}

/* ---------------------------------------------------------- keyed ops */

DFKV_API int dfkv_touch_walk(struct dfkv_client *c, const void *const *keys,
			     const uint64_t *key_lens, size_t n,
			     uint32_t flags)
{
	struct dfkv_keyed k;
	int err;

	if (flags & ~DFKV_TOUCH_REVERSE)
		return DFKV_E_INVAL;
	err = dfkv_keyed_prepare(c, DFKV_OP_TOUCH, keys, key_lens, n, &k);
	if (err)
		return err;
	for (size_t j = 0; j < k.nreq; j++)
		k.reqs[j].offset = flags & DFKV_TOUCH_REVERSE ? 1 : 0;
	dfkv_execute(c, k.rp, k.nreq);
	err = dfkv_keyed_status(&k);
	dfkv_keyed_free(&k);
	return err;
}

DFKV_API int dfkv_touch(struct dfkv_client *c, const void *const *keys,
			const uint64_t *key_lens, size_t n)
{
	return dfkv_touch_walk(c, keys, key_lens, n, 0);
}

DFKV_API int dfkv_probe(struct dfkv_client *c, const void *const *keys,
			const uint64_t *key_lens, size_t n,
			uint64_t *stored_lens)
{
	struct dfkv_keyed k;
	int err;

	if (stored_lens && n <= DFKV_KEYS_MAX)
		memset(stored_lens, 0, n * sizeof(*stored_lens));
	if (!stored_lens)
		return DFKV_E_INVAL;
	err = dfkv_keyed_prepare(c, DFKV_OP_PROBE, keys, key_lens, n, &k);
	if (err)
		return err;
	dfkv_execute(c, k.rp, k.nreq);
	dfkv_probe_results(&k, stored_lens);
	err = dfkv_keyed_status(&k);
	dfkv_keyed_free(&k);
	return err;
}

DFKV_API int dfkv_lease(struct dfkv_client *c, const void *const *keys,
			const uint64_t *key_lens, size_t n, uint32_t ttl_ms,
			uint64_t *stored_lens, size_t *nr_hits,
			struct dfkv_lease **lease)
{
	struct dfkv_keyed k;
	int err;

	if (lease)
		*lease = NULL;
	if (nr_hits)
		*nr_hits = 0;
	if (stored_lens && n <= DFKV_KEYS_MAX)
		memset(stored_lens, 0, n * sizeof(*stored_lens));
	if (!stored_lens || !nr_hits || !lease || ttl_ms > DFKV_LEASE_TTL_MAX_MS)
		return DFKV_E_INVAL;
	err = dfkv_keyed_prepare(c, DFKV_OP_LEASE, keys, key_lens, n, &k);
	if (err)
		return err;
	for (size_t j = 0; j < k.nreq; j++)
		k.reqs[j].length = ttl_ms;
	dfkv_execute(c, k.rp, k.nreq);
	err = dfkv_lease_results(c, &k, stored_lens, nr_hits, lease);
	if (!err)
		err = dfkv_keyed_status(&k);
	dfkv_keyed_free(&k);
	return err;
}

DFKV_API int dfkv_release(struct dfkv_client *c, struct dfkv_lease *l)
{
	if (!c || !l)
		return DFKV_E_INVAL;
	return dfkv_lease_release(c, l);
}

/* -------------------------------------------------------------- stats */

static const char *result_name(int s)
{
	static const char *const er[] = {
		"", "inval", "nomem", "range", "unavailable", "timeout",
		"proto", "not_run", "members", "nodev", "sys", "auth",
		"cancelled",
	};

	static_assert(sizeof(er) / sizeof(er[0]) == -__DFKV_E_MIN, "er");
	return s >= 0 ? dfkv_status_str(s) : er[-s];
}

struct sbuf {
	char *p;
	uint64_t cap, len;
};

static void __attribute__((format(printf, 2, 3)))
emit(struct sbuf *b, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(b->len < b->cap ? b->p + b->len : NULL,
		      b->len < b->cap ? (size_t)(b->cap - b->len) : 0, fmt, ap);
	va_end(ap);
	if (n > 0)
		b->len += (uint64_t)n;
}

static void counter(struct sbuf *b, const char *name, const char *help,
		    uint64_t v)
{
	emit(b, "# HELP dfkv_client_%s %s\n# TYPE dfkv_client_%s counter\n"
	     "dfkv_client_%s %llu\n", name, help, name, name,
	     (unsigned long long)v);
}

DFKV_API int dfkv_stats_snapshot(struct dfkv_client *c, char *buf,
				 uint64_t cap, uint64_t *len)
{
	struct sbuf b = { buf, cap, 0 };
	uint64_t now = dfkv_now_ms();
	size_t down = 0, local = 0;

	if (!len)
		return DFKV_E_INVAL;
	*len = 0;
	if (!c || (!buf && cap))
		return DFKV_E_INVAL;
	emit(&b, "# HELP dfkv_client_ops_total Client requests by op and "
	     "result.\n# TYPE dfkv_client_ops_total counter\n");
	for (int op = 0; op < __DFKV_OP_MAX; op++)
		for (int s = __DFKV_E_MIN + 1; s < __DFKV_STATUS_MAX; s++) {
			uint64_t v = atomic_load(&c->ops[op][s - __DFKV_E_MIN]);

			if (v && dfkv_op_str(op))
				emit(&b, "dfkv_client_ops_total{op=\"%s\","
				     "result=\"%s\"} %llu\n", dfkv_op_str(op),
				     result_name(s), (unsigned long long)v);
		}
	counter(&b, "put_bytes_total",
		"Value bytes sent by PUT over the network (TCP and RDMA).",
		atomic_load(&c->bytes_out));
	counter(&b, "get_bytes_total",
		"Value bytes received by GET over the network (TCP and RDMA).",
		atomic_load(&c->bytes_in));
	emit(&b, "# HELP dfkv_client_requests_total Requests by transport.\n"
	     "# TYPE dfkv_client_requests_total counter\n"
	     "dfkv_client_requests_total{transport=\"tcp\"} %llu\n"
	     "dfkv_client_requests_total{transport=\"local\"} %llu\n"
	     "dfkv_client_requests_total{transport=\"rdma\"} %llu\n",
	     (unsigned long long)atomic_load(&c->tcp_reqs),
	     (unsigned long long)atomic_load(&c->local_reqs),
	     (unsigned long long)atomic_load(&c->rdma_reqs));
	emit(&b, "# HELP dfkv_client_rdma_request_keys_total RDMA keys made "
	     "for one request's range.\n"
	     "# TYPE dfkv_client_rdma_request_keys_total counter\n"
	     "dfkv_client_rdma_request_keys_total{kind=\"window\"} %llu\n"
	     "dfkv_client_rdma_request_keys_total{kind=\"registration\"} "
	     "%llu\n",
	     (unsigned long long)atomic_load(&c->rdma_windows),
	     (unsigned long long)atomic_load(&c->rdma_req_mrs));
	counter(&b, "connects_total", "TCP connections opened.",
		atomic_load(&c->connects));
	counter(&b, "connection_failures_total", "TCP connections that failed.",
		atomic_load(&c->conn_failures));
	counter(&b, "peer_skips_total",
		"Requests not sent because their member was cooling down.",
		atomic_load(&c->peer_skips));
	counter(&b, "dropped_writes_total",
		"Writes dropped because their member was unavailable.",
		atomic_load(&c->dropped_writes));
	counter(&b, "degraded_reads_total",
		"Reads answered as misses because their member was unavailable.",
		atomic_load(&c->degraded_reads));
	emit(&b, "# HELP dfkv_client_misses_total Keys reads did not find, by "
	     "cause.\n# TYPE dfkv_client_misses_total counter\n"
	     "dfkv_client_misses_total{cause=\"unavailable\"} %llu\n"
	     "dfkv_client_misses_total{cause=\"auth\"} %llu\n"
	     "dfkv_client_misses_total{cause=\"absent\"} %llu\n",
	     (unsigned long long)atomic_load(&c->misses[DFKV_MISS_UNAVAILABLE]),
	     (unsigned long long)atomic_load(&c->misses[DFKV_MISS_AUTH]),
	     (unsigned long long)atomic_load(&c->misses[DFKV_MISS_ABSENT]));
	for (size_t i = 0; i < c->npeers; i++) {
		down += now < atomic_load(&c->peers[i].down_until_ms);
		local += c->peers[i].t == &dfkv_local_transport;
	}
	emit(&b, "# HELP dfkv_client_members Members of the ring.\n"
	     "# TYPE dfkv_client_members gauge\n"
	     "dfkv_client_members{state=\"up\"} %zu\n"
	     "dfkv_client_members{state=\"cooling_down\"} %zu\n"
	     "# HELP dfkv_client_local_members Members reached through "
	     "/dev/dfkv.\n# TYPE dfkv_client_local_members gauge\n"
	     "dfkv_client_local_members %zu\n", c->npeers - down, down, local);
	emit(&b, "# HELP dfkv_client_node_auth_failures_total Handshakes the "
	     "member failed: its name, AUTH or proof (SPEC.md 9).\n"
	     "# TYPE dfkv_client_node_auth_failures_total counter\n");
	for (size_t i = 0; i < c->npeers; i++)
		emit(&b, "dfkv_client_node_auth_failures_total{node=\"%s\"} "
		     "%llu\n", c->peers[i].name, (unsigned long long)
		     atomic_load(&c->peers[i].auth_failures));
	if (c->disc) {
		char d[2048];

		dfkv_disc_stats(c, d, sizeof(d));
		emit(&b, "%s", d);
	}
	if (c->tstate[DFKV_T_RDMA]) {
		char d[8192];	/* DFKV_RAIL_MAX rails' lines */

		dfkv_rdma_stats(c, d, sizeof(d));
		emit(&b, "%s", d);
	}
	*len = b.len;
	return b.len <= cap ? 0 : DFKV_E_RANGE;
}
