// SPDX-License-Identifier: GPL-2.0
/*
 * dfkv_rdma_client: the client side of selftests/dfkv_rdma.sh.
 *
 *   ops HOST MAXSIZE [EXPOSE]
 *       libdfkv over RDMA (transport RDMA, member "kvr=HOST", rdma_expose
 *       EXPOSE: pool (default), request, request-mr or request-mw) against
 *       node kvr: every op (PUT, GET, ranges, EXIST, REMOVE, TOUCH, PROBE,
 *       LEASE/RELEASE, zero-length and oversized PUTs), values from 1 byte
 *       to MAXSIZE, from a registered pool and from unregistered buffers,
 *       scatter-gather PUT/GET, batches of 256; every byte checked, and
 *       every value read back over TCP (port 7400) byte-identical.
 *   big HOST SIZE
 *       One value of SIZE bytes PUT from and GOT into a registered pool.
 *   nodev HOST
 *       transport RDMA with a whitelist naming no device: dfkv_open_v2
 *       fails with DFKV_E_NODEV (no silent TCP fallback).
 *   raw HOST CASE
 *       A raw librdmacm/libibverbs client: bad-epoch HELLO (rejected),
 *       too many descriptors, lengths that do not add up, a GET with a
 *       bad rkey (the connection breaks, cleanly), a disconnect in the
 *       middle of a 16 MiB PUT, a client that posts its receives only
 *       1 s after its 8 requests (all must be answered: RNR retries), a
 *       client that never posts one (the node disconnects it).
 *   hold HOST SECONDS
 *       Keep PUT/GET traffic going over one connection until the node goes
 *       away (transport errors then are expected) or SECONDS pass; exits
 *       0 unless a value came back wrong.
 *   idle HOST NREQ SECONDS
 *       A raw client that sends NREQ (at most 16) requests one after the
 *       other, prints "ready", then sends nothing: exits 0 once the node
 *       disconnects it, 1 if it has not after SECONDS.
 *   auth HOST
 *       With node kvr set to auth=required over netlink and two tenants
 *       registered (undone on exit): HELLO and AUTH as SENDs with this
 *       client's own HMAC, requests before AUTH, with a replayed or wrong
 *       proof, and of the other tenant are FORBIDDEN; an AUTH'd tenant
 *       stores and reads its own block; the third failed AUTH closes
 *       the connection.
 *   limit HOST
 *       With one connection short of the node's limit: a raw connection
 *       is accepted, the next one rejected BUSY, and the first still
 *       answers a request.
 *   recvcap HOST SRC2 GOFILE
 *       A raw connection offering the node no RDMA READ sends a PUT of
 *       16 MiB: its READ never starts, its first part (4 MiB) stays
 *       reserved; "stalled", then nothing until GOFILE exists: then a
 *       PUT of 4 MiB on another connection from the same address must be
 *       BUSY (the peer's cap), two from address SRC2 OK and read back
 *       exact.
 *   stall HOST GOFILE SECONDS
 *       Such a connection stores a small value inline, sends a stalled
 *       PUT, "put", once GOFILE exists a GET of the small value (its
 *       WRITE waits behind the READ), "get", then waits SECONDS at most
 *       for the node to disconnect it; afterwards the stalled PUT's key
 *       is absent, the small value there.
 *   stages HOST SRC_H SRC_OK GOFILE
 *       Against a disk-only node (16 MiB of stages: a peer address's
 *       share is 4 MiB): from address SRC_OK, 7 values of 2 MiB stored;
 *       from SRC_H, a raw connection offering no RDMA READ sends a PUT of
 *       2 MiB (staged, its READ never starts) and GETs of 6 of those cold
 *       values (their replies wait behind the READ), "held"; then nothing
 *       until GOFILE exists (one GET fits the share, 5 are BUSY, which the
 *       caller counts in stage_busy): then from SRC_OK a PUT of 2 MiB is
 *       OK and it and the seventh cold value read back exact.
 *   expose HOST EXPOSE
 *       libdfkv with rdma_expose EXPOSE against a fake node in this
 *       process (a raw rdma_cm listener on HOST:7411) that records each
 *       request's descriptors and probes their keys with 1-byte RDMA
 *       READs and WRITEs of its own: the descriptors are exactly the
 *       caller's buffer; after a PUT or GET returned its key is dead (in
 *       pool mode a pool's key still works: the control); while the
 *       request is in flight the key reaches its first and last byte
 *       with the request's access, and in request modes not the byte
 *       before or after (but with windows on rxe, which bounds them by
 *       their MR only) nor the other access (which fails the call); a
 *       completed call is byte-exact and writes nothing next to the
 *       buffer; windows were made exactly when the mode binds them on
 *       this device, registrations in every mode (buffers outside a pool).
 *   leader HOST ID GOFILE finish|never
 *       Over TCP, the prefix of a 4096-byte PUT of ID and 100 bytes of
 *       it, "ready", then nothing until GOFILE exists: then the rest
 *       (finish: its reply must be OK) or a close (never; the node may
 *       close first).
 *   followers HOST ID N finish GOFILE | followers HOST ID N gone
 *       N raw RDMA PUTs of ID in flight at once over connections of
 *       depth 32 while the leader holds; "sent" once the node has them
 *       all and has served another block over RDMA and TCP; none is
 *       answered before GOFILE exists.  finish: then all are answered OK
 *       with stored_len 4096 and ID holds the leader's bytes.  gone:
 *       every connection ends, none answered OK.
 *
 * Exit status 0 when every check passed; failures are printed on stderr.
 */
#include <errno.h>
#include <inttypes.h>
#include <netdb.h>
#include <poll.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#include <dfkv.h>

#include "client_stats.h"
#include "dfkv_proof.h"
#include "testlib.h"

static int failures;

#define FAIL(...)							\
	do {								\
		if (failures++ < 30)					\
			fprintf(stderr, "FAIL: " __VA_ARGS__);		\
	} while (0)

static const char ns[] = "rdma-selftest";
/*
 * what open_client asks for: enum dfkv_rdma_expose (0: libdfkv's default,
 * REQUEST), the nodes' RDMA port
 */
static uint32_t expose, rdma_port;

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static void fill(uint8_t *b, uint64_t n, uint64_t seed)
{
	uint64_t x = seed * 0x9e3779b97f4a7c15ULL + 1;

	for (uint64_t i = 0; i < n; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		b[i] = (uint8_t)x;
	}
}

static struct dfkv_client *open_client(const char *host, uint32_t transport,
				       const char *devs)
{
	char members[128];
	struct dfkv_client_options_v2 o = {
		.size = sizeof(o),
		.transport = transport,
		.members = members,
		.ns = ns, .ns_len = sizeof(ns) - 1,
		.conns_per_peer = 1,
		.connect_timeout_ms = 5000,
		.io_timeout_ms = 30000,
		.cooldown_ms = 1,
		.rdma_devices = devs,
		.rdma_port = rdma_port,
		.rdma_expose = expose,
	};
	struct dfkv_client *c = NULL;
	int st;

	snprintf(members, sizeof(members), "kvr=%s:%u", host, DFKV_PORT_TCP);
	st = dfkv_open_v2(&o, &c);
	if (st) {
		fprintf(stderr, "dfkv_open_v2(%u): %s\n", transport,
			dfkv_strerror(st));
		return NULL;
	}
	return c;
}

/* ---------------------------------------------------------------- ops */

static void check_get(struct dfkv_client *c, struct dfkv_client *tcp,
		      const char *key, const uint8_t *want, uint64_t n,
		      uint8_t *buf, uint64_t cap)
{
	uint64_t len = 0;
	int st;

	memset(buf, 0xee, n < cap ? n : cap);
	st = dfkv_get(c, key, strlen(key), buf, cap, &len);
	if (st || len != n || memcmp(buf, want, n))
		FAIL("get %s (%" PRIu64 " bytes): %s len %" PRIu64 "%s\n", key,
		     n, dfkv_strerror(st), len,
		     !st && len == n ? " bytes differ" : "");
	if (!tcp)
		return;
	memset(buf, 0xdd, n < cap ? n : cap);
	st = dfkv_get(tcp, key, strlen(key), buf, cap, &len);
	if (st || len != n || memcmp(buf, want, n))
		FAIL("tcp get %s: %s len %" PRIu64 "\n", key, dfkv_strerror(st),
		     len);
}

static void ops_sizes(struct dfkv_client *c, struct dfkv_client *tcp,
		      uint64_t maxsize, uint8_t *pool, uint64_t pool_len,
		      const char *tag)
{
	static const uint64_t fixed[] = { 1, 2, 100, 4095, 4096, 4097, 65536,
					  65537, 1 << 20, (1 << 20) + 3 };
	uint64_t sizes[32], ns_ = 0;
	uint8_t *val, *buf;
	char key[64];

	for (size_t i = 0; i < sizeof(fixed) / sizeof(fixed[0]); i++)
		if (fixed[i] <= maxsize)
			sizes[ns_++] = fixed[i];
	for (uint64_t s = 4 << 20; s <= maxsize && ns_ < 30; s *= 4)
		sizes[ns_++] = s;
	if (sizes[ns_ - 1] != maxsize)
		sizes[ns_++] = maxsize;
	/* value and buffer: inside the registered pool, or plain malloc */
	if (pool) {
		if (2 * maxsize > pool_len) {
			FAIL("pool too small\n");
			return;
		}
		val = pool;
		buf = pool + maxsize;
	} else {
		val = malloc(maxsize);
		buf = malloc(maxsize + 64);
		if (!val || !buf) {
			FAIL("malloc\n");
			return;
		}
	}
	for (size_t i = 0; i < ns_; i++) {
		uint64_t n = sizes[i], len = 0, stored = 0;
		int st;

		snprintf(key, sizeof(key), "%s-%" PRIu64, tag, n);
		fill(val, n, n + (uintptr_t)tag[0]);
		st = dfkv_put(c, key, strlen(key), val, n);
		if (st) {
			FAIL("put %s: %s\n", key, dfkv_strerror(st));
			continue;
		}
		check_get(c, tcp, key, val, n, buf, n);
		/* a larger buffer than the value, and a range */
		if (!pool)
			check_get(c, NULL, key, val, n, buf, n + 64);
		if (n > 10) {
			st = dfkv_get_range(c, key, strlen(key), 3, n - 7, buf,
					    n - 7, &len, &stored);
			if (st || len != n - 7 || stored != n ||
			    memcmp(buf, val + 3, n - 7))
				FAIL("range %s: %s\n", key, dfkv_strerror(st));
			/* too small a buffer: TOO_LARGE with the length */
			st = dfkv_get(c, key, strlen(key), buf, n - 1, &len);
			if (st != DFKV_STATUS_TOO_LARGE || len != n)
				FAIL("small buffer %s: %s len %" PRIu64 "\n", key,
				     dfkv_strerror(st), len);
		}
		st = dfkv_exist(c, key, strlen(key), &stored);
		if (st || stored != n)
			FAIL("exist %s: %s\n", key, dfkv_strerror(st));
		/* immutable: a second PUT keeps the bytes */
		val[0] ^= 0xff;
		st = dfkv_put(c, key, strlen(key), val, n);
		val[0] ^= 0xff;
		if (st)
			FAIL("re-put %s: %s\n", key, dfkv_strerror(st));
		check_get(c, NULL, key, val, n, buf, n);
	}
	if (!pool) {
		free(val);
		free(buf);
	}
}

static void ops_misc(struct dfkv_client *c)
{
	const void *keys[300];
	uint64_t klen[300], lens[300];
	char kb[300][32];
	struct dfkv_lease *lease = NULL;
	size_t hits = 0;
	uint64_t stored, len;
	uint8_t v[64], b[64];
	int st;

	/* zero-length PUT is INVALID, a miss is NOT_FOUND */
	fill(v, sizeof(v), 7);
	st = dfkv_put(c, "empty", 5, v, 0);
	if (st != DFKV_STATUS_INVALID)
		FAIL("empty put: %s\n", dfkv_strerror(st));
	st = dfkv_get(c, "missing", 7, b, sizeof(b), &len);
	if (st != DFKV_STATUS_NOT_FOUND)
		FAIL("miss: %s\n", dfkv_strerror(st));
	/* REMOVE */
	fill(v, sizeof(v), 7);
	if (dfkv_put(c, "gone", 4, v, sizeof(v)) ||
	    dfkv_remove(c, "gone", 4) ||
	    dfkv_exist(c, "gone", 4, &stored) != DFKV_STATUS_NOT_FOUND ||
	    dfkv_remove(c, "gone", 4))
		FAIL("remove\n");
	/* range rules: offset == stored_len gives 0 bytes, beyond INVALID */
	if (dfkv_put(c, "rng", 3, v, sizeof(v)))
		FAIL("put rng\n");
	st = dfkv_get_range(c, "rng", 3, sizeof(v), 0, b, sizeof(b), &len,
			    &stored);
	if (st || len || stored != sizeof(v))
		FAIL("range at end: %s\n", dfkv_strerror(st));
	st = dfkv_get_range(c, "rng", 3, sizeof(v) + 1, 0, b, sizeof(b), &len,
			    &stored);
	if (st != DFKV_STATUS_INVALID)
		FAIL("range beyond: %s\n", dfkv_strerror(st));
	/* TOUCH, PROBE, LEASE over 300 keys (more than fits inline) */
	for (int i = 0; i < 300; i++) {
		snprintf(kb[i], sizeof(kb[i]), "multi-%d", i);
		keys[i] = kb[i];
		klen[i] = strlen(kb[i]);
		if (i < 200 && dfkv_put(c, kb[i], klen[i], v, i + 1))
			FAIL("put %s\n", kb[i]);
	}
	if (dfkv_touch(c, keys, klen, 300))
		FAIL("touch\n");
	st = dfkv_probe(c, keys, klen, 300, lens);
	for (int i = 0; !st && i < 300; i++)
		if (lens[i] != (i < 200 ? (uint64_t)i + 1 : 0)) {
			FAIL("probe %d: %" PRIu64 "\n", i, lens[i]);
			break;
		}
	if (st)
		FAIL("probe: %s\n", dfkv_strerror(st));
	st = dfkv_lease(c, keys, klen, 300, 5000, lens, &hits, &lease);
	if (st || hits != 200 || lens[199] != 200)
		FAIL("lease: %s hits %zu\n", dfkv_strerror(st), hits);
	if (lease && dfkv_release(c, lease))
		FAIL("release\n");
	/* a small key list inline */
	st = dfkv_probe(c, keys, klen, 3, lens);
	if (st || lens[2] != 3)
		FAIL("small probe: %s\n", dfkv_strerror(st));
}

static void ops_batches(struct dfkv_client *c, struct dfkv_client *tcp)
{
	enum { N = 256, SZ = 8192 };
	const void *keys[N], *vals[N];
	void *bufs[N];
	uint64_t klen[N], vlen[N], caps[N], lens[N];
	int sts[N];
	char kb[N][32];
	uint8_t *v = malloc((size_t)N * SZ), *b = malloc((size_t)N * SZ);
	int ok;

	if (!v || !b) {
		FAIL("malloc\n");
		goto out;
	}
	for (int i = 0; i < N; i++) {
		snprintf(kb[i], sizeof(kb[i]), "batch-%d", i);
		keys[i] = kb[i];
		klen[i] = strlen(kb[i]);
		vlen[i] = (uint64_t)(i * 37) % SZ + 1;
		vals[i] = v + (size_t)i * SZ;
		fill(v + (size_t)i * SZ, vlen[i], 1000 + i);
		bufs[i] = b + (size_t)i * SZ;
		caps[i] = SZ;
	}
	ok = dfkv_put_batch(c, N, keys, klen, vals, vlen, sts);
	if (ok != N)
		FAIL("put_batch: %d ok, first status %s\n", ok,
		     dfkv_strerror(sts[0]));
	for (int pass = 0; pass < 2; pass++) {
		struct dfkv_client *cc = pass ? tcp : c;

		memset(b, 0, (size_t)N * SZ);
		ok = dfkv_get_batch(cc, N, keys, klen, bufs, caps, lens, sts);
		if (ok != N)
			FAIL("get_batch(%s): %d ok\n", pass ? "tcp" : "rdma", ok);
		for (int i = 0; i < N; i++)
			if (lens[i] != vlen[i] ||
			    memcmp(bufs[i], vals[i], vlen[i])) {
				FAIL("batch %d differs (%s)\n", i,
				     pass ? "tcp" : "rdma");
				break;
			}
	}
out:
	free(v);
	free(b);
}

static void ops_sg(struct dfkv_client *c, struct dfkv_client *tcp,
		   uint8_t *pool)
{
	enum { SEGS = 300, SEG = 3000 };	/* more than max descriptors */
	static struct dfkv_iov iov[SEGS];
	uint8_t *v = malloc((size_t)SEGS * SEG);
	uint8_t *b = malloc((size_t)SEGS * SEG);
	uint64_t dl = 0, st_len = 0, total = 0;
	int st;

	if (!v || !b) {
		FAIL("malloc\n");
		goto out;
	}
	fill(v, (size_t)SEGS * SEG, 55);
	/* large segments: one descriptor (and registration) each */
	for (int i = 0; i < 8; i++)
		iov[i] = (struct dfkv_iov){ v + i * 100000, 100000 };
	st = dfkv_put_sg(c, "sg-8", 4, iov, 8);
	if (st)
		FAIL("put_sg 8: %s\n", dfkv_strerror(st));
	for (int i = 0; i < 8; i++)
		iov[i] = (struct dfkv_iov){ b + i * 100000, 100000 };
	memset(b, 0, 800000);
	st = dfkv_get_sg(c, "sg-8", 4, 0, 0, iov, 8, &dl, &st_len);
	if (st || dl != 800000 || memcmp(b, v, 800000))
		FAIL("get_sg 8: %s %" PRIu64 "\n", dfkv_strerror(st), dl);
	check_get(tcp, NULL, "sg-8", v, 800000, b, 800000);
	/* many small segments: more than the descriptor maximum */
	for (int i = 0; i < SEGS; i++) {
		iov[i] = (struct dfkv_iov){ v + (size_t)i * SEG, SEG };
		total += SEG;
	}
	st = dfkv_put_sg(c, "sg-many", 7, iov, SEGS);
	if (st)
		FAIL("put_sg many: %s\n", dfkv_strerror(st));
	for (int i = 0; i < SEGS; i++)
		iov[i] = (struct dfkv_iov){ b + (size_t)i * SEG, SEG };
	memset(b, 0, total);
	st = dfkv_get_sg(c, "sg-many", 7, 0, 0, iov, SEGS, &dl, &st_len);
	if (st || dl != total || memcmp(b, v, total))
		FAIL("get_sg many: %s\n", dfkv_strerror(st));
	/* segments inside the registered pool */
	if (pool) {
		iov[0] = (struct dfkv_iov){ pool + 5, 70000 };
		iov[1] = (struct dfkv_iov){ pool + 200000, 1 };
		fill(pool, 300000, 9);
		st = dfkv_put_sg(c, "sg-pool", 7, iov, 2);
		memcpy(v, pool + 5, 70000);
		v[70000] = pool[200000];
		if (st)
			FAIL("put_sg pool: %s\n", dfkv_strerror(st));
		check_get(c, tcp, "sg-pool", v, 70001, b, 70001);
	}
out:
	free(v);
	free(b);
}

static int cmd_ops(const char *host, uint64_t maxsize)
{
	struct dfkv_client *c = open_client(host, DFKV_TRANSPORT_RDMA, NULL);
	struct dfkv_client *tcp = open_client(host, DFKV_TRANSPORT_TCP, NULL);
	uint64_t pool_len = 2 * maxsize + (1 << 20);
	uint8_t *pool = NULL;
	uint64_t t0 = now_ms();
	int st;

	if (!c || !tcp)
		return 1;
	pool = aligned_alloc(4096, (pool_len + 4095) & ~4095ULL);
	st = pool ? dfkv_register_memory(c, pool, pool_len) : DFKV_E_NOMEM;
	if (st)
		FAIL("register_memory: %s\n", dfkv_strerror(st));
	if (dfkv_register_memory(c, pool + 10, 10) != DFKV_E_INVAL)
		FAIL("overlapping pool accepted\n");
	/* a pool re-declared larger replaces the pools it contains */
	if (dfkv_register_memory(c, pool, pool_len) ||
	    dfkv_unregister_memory(c, pool) ||
	    dfkv_register_memory(c, pool, 4096) ||
	    dfkv_register_memory(c, pool + 8192, 4096) ||
	    dfkv_register_memory(c, pool, pool_len) ||
	    dfkv_unregister_memory(c, pool + 8192) != DFKV_E_INVAL)
		FAIL("re-declared pool\n");
	ops_sizes(c, tcp, maxsize, NULL, 0, "plain");
	fprintf(stderr, "# plain sizes done (%" PRIu64 " ms)\n", now_ms() - t0);
	ops_sizes(c, tcp, maxsize, pool, pool_len, "pool");
	fprintf(stderr, "# pool sizes done (%" PRIu64 " ms)\n", now_ms() - t0);
	ops_misc(c);
	if (!client_reqs(c, "rdma") || client_reqs(c, "tcp"))
		FAIL("client stats: rdma requests %" PRIu64 ", tcp %" PRIu64 "\n",
		     client_reqs(c, "rdma"), client_reqs(c, "tcp"));
	ops_batches(c, tcp);
	fprintf(stderr, "# batches done (%" PRIu64 " ms)\n", now_ms() - t0);
	ops_sg(c, tcp, pool);
	if (dfkv_unregister_memory(c, pool))
		FAIL("unregister_memory\n");
	if (dfkv_unregister_memory(c, pool) != DFKV_E_INVAL)
		FAIL("second unregister accepted\n");
	/* after unregistering, the same buffer still works (scoped MR) */
	ops_sizes(c, NULL, maxsize < 65537 ? maxsize : 65537, NULL, 0, "after");
	dfkv_close(c);
	dfkv_close(tcp);
	free(pool);
	fprintf(stderr, "# ops done in %" PRIu64 " ms, %d failures\n",
		now_ms() - t0, failures);
	return failures ? 1 : 0;
}

/* One value of size bytes from and into a registered pool. */
static int cmd_big(const char *host, uint64_t size)
{
	struct dfkv_client *c = open_client(host, DFKV_TRANSPORT_RDMA, NULL);
	uint8_t *pool = aligned_alloc(4096, 2 * size);
	uint64_t len = 0, t0, t1, t2;
	int st;

	if (!c || !pool)
		return 1;
	if (dfkv_register_memory(c, pool, 2 * size))
		FAIL("register_memory\n");
	fill(pool, size, size);
	memset(pool + size, 0, size);
	t0 = now_ms();
	st = dfkv_put(c, "big", 3, pool, size);
	t1 = now_ms();
	if (st)
		FAIL("put %" PRIu64 ": %s\n", size, dfkv_strerror(st));
	st = dfkv_get(c, "big", 3, pool + size, size, &len);
	t2 = now_ms();
	if (st || len != size || memcmp(pool, pool + size, size))
		FAIL("get %" PRIu64 ": %s len %" PRIu64 "\n", size,
		     dfkv_strerror(st), len);
	fprintf(stderr, "# %" PRIu64 " bytes: put %" PRIu64 " ms, get %" PRIu64
		" ms\n", size, t1 - t0, t2 - t1);
	dfkv_unregister_memory(c, pool);
	dfkv_close(c);
	free(pool);
	return failures ? 1 : 0;
}

static int cmd_nodev(const char *host)
{
	struct dfkv_client_options_v2 o = {
		.size = sizeof(o),
		.transport = DFKV_TRANSPORT_RDMA,
		.members = "kvr=127.0.0.1",
		.ns = ns, .ns_len = sizeof(ns) - 1,
		.rdma_devices = "no-such-device",
	};
	struct dfkv_client *c = NULL;
	int st = dfkv_open_v2(&o, &c);

	(void)host;
	if (st != DFKV_E_NODEV || c)
		FAIL("open with no device: %s\n", dfkv_strerror(st));
	return failures ? 1 : 0;
}

/* --------------------------------------------------------------- hold */

static int cmd_hold(const char *host, unsigned int secs)
{
	struct dfkv_client *c = open_client(host, DFKV_TRANSPORT_RDMA, NULL);
	uint64_t end = now_ms() + secs * 1000ULL, n = 0;
	uint8_t *v = malloc(1 << 20), *b = malloc(1 << 20);
	char key[32];

	if (!c || !v || !b)
		return 1;
	printf("ready\n");
	fflush(stdout);
	while (now_ms() < end) {
		uint64_t sz = (n % 7 + 1) * 100000, len = 0;
		int st;

		snprintf(key, sizeof(key), "hold-%" PRIu64, n % 16);
		fill(v, sz, n % 16);
		st = dfkv_put(c, key, strlen(key), v, sz);
		if (st < 0)
			break;		/* the node went away */
		st = dfkv_get(c, key, strlen(key), b, 1 << 20, &len);
		if (st == DFKV_STATUS_OK) {
			/* values are immutable: the first PUT of key won */
			fill(v, len, n % 16);
			if (len != (n % 16 % 7 + 1) * 100000 || memcmp(v, b, len))
				FAIL("hold: %s differs\n", key);
		} else {
			break;		/* a miss: the node went away */
		}
		n++;
	}
	fprintf(stderr, "# hold: %" PRIu64 " rounds\n", n);
	dfkv_close(c);
	free(v);
	free(b);
	return failures ? 1 : 0;
}

/* ---------------------------------------------------------------- raw */

struct raw {
	struct rdma_event_channel *ch;
	struct rdma_cm_id *id;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_mr *mr;
	uint8_t *mem;		/* 0: send bufs, 1 MiB on: data */
	uint32_t depth, inline_max, max_desc;
	int reject_status;
	uint64_t tenant;	/* what its requests name */
};

#define RAW_MEM		(32u << 20)
#define RAW_SLOT	8192

static int raw_event(struct raw *r, enum rdma_cm_event_type want,
		     struct rdma_cm_event **out)
{
	struct rdma_cm_event *ev;
	struct pollfd pfd = { .fd = r->ch->fd, .events = POLLIN };

	if (poll(&pfd, 1, 10000) <= 0 || rdma_get_cm_event(r->ch, &ev))
		return 1;	/* nothing within 10 s */
	if (ev->event == RDMA_CM_EVENT_REJECTED &&
	    ev->param.conn.private_data_len >= 2)
		r->reject_status =
			((const uint8_t *)ev->param.conn.private_data)[1];
	if (ev->event != want) {
		fprintf(stderr, "# raw: %s (status %d) while waiting for %s\n",
			rdma_event_str(ev->event), ev->status,
			rdma_event_str(want));
		rdma_ack_cm_event(ev);
		return -1;
	}
	if (out)
		*out = ev;
	else
		rdma_ack_cm_event(ev);
	return 0;
}

/*
 * Connect from address src (NULL: the route's) with a HELLO of epoch ep
 * asking for depth requests (at most 32) over mem bytes of registered
 * memory, offering rd RDMA READs in flight to the node (0: its READs
 * never start); nrecv receives posted first.
 */
static int raw_connect_from(struct raw *r, const char *src, const char *host,
			    uint8_t ep, int nrecv, uint8_t depth, size_t mem,
			    uint8_t rd)
{
	struct addrinfo *ai, *sai = NULL;
	struct ibv_qp_init_attr qa = { 0 };
	struct rdma_conn_param cp = { 0 };
	struct rdma_cm_event *ev;
	uint8_t h[32] = { 0 };
	char port[8];

	memset(r, 0, sizeof(*r));
	snprintf(port, sizeof(port), "%u", DFKV_PORT_RDMA);
	if (getaddrinfo(host, port, NULL, &ai))
		return -1;
	if (src && getaddrinfo(src, NULL, NULL, &sai)) {
		freeaddrinfo(ai);
		return -1;
	}
	r->ch = rdma_create_event_channel();
	if (!r->ch || rdma_create_id(r->ch, &r->id, NULL, RDMA_PS_TCP) ||
	    rdma_resolve_addr(r->id, sai ? sai->ai_addr : NULL, ai->ai_addr,
			      5000) ||
	    raw_event(r, RDMA_CM_EVENT_ADDR_RESOLVED, NULL) ||
	    rdma_resolve_route(r->id, 5000) ||
	    raw_event(r, RDMA_CM_EVENT_ROUTE_RESOLVED, NULL)) {
		freeaddrinfo(ai);
		if (sai)
			freeaddrinfo(sai);
		return -1;
	}
	freeaddrinfo(ai);
	if (sai)
		freeaddrinfo(sai);
	r->pd = ibv_alloc_pd(r->id->verbs);
	r->cq = ibv_create_cq(r->id->verbs, 256, NULL, NULL, 0);
	r->mem = aligned_alloc(4096, mem);
	if (!r->pd || !r->cq || !r->mem)
		return -1;
	memset(r->mem, 0, mem);
	r->mr = ibv_reg_mr(r->pd, r->mem, mem, IBV_ACCESS_LOCAL_WRITE |
			   IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_WRITE);
	qa.send_cq = r->cq;
	qa.recv_cq = r->cq;
	qa.qp_type = IBV_QPT_RC;
	qa.sq_sig_all = 1;
	qa.cap.max_send_wr = 64;
	qa.cap.max_recv_wr = 64;
	qa.cap.max_send_sge = 1;
	qa.cap.max_recv_sge = 1;
	if (!r->mr || rdma_create_qp(r->id, r->pd, &qa))
		return -1;
	for (int i = 0; i < nrecv; i++) {
		struct ibv_sge sge = { (uintptr_t)(r->mem + (64 + i) * RAW_SLOT),
				       RAW_SLOT, r->mr->lkey };
		struct ibv_recv_wr wr = { .wr_id = 64 + i, .sg_list = &sge,
					  .num_sge = 1 }, *bad;

		if (ibv_post_recv(r->id->qp, &wr, &bad))
			return -1;
	}
	h[0] = ep;
	h[2] = depth;
	h[4] = 0x00; h[5] = 0x04;	/* inline 1024 */
	h[8] = 4;			/* at most 4 descriptors */
	cp.private_data = h;
	cp.private_data_len = sizeof(h);
	cp.responder_resources = rd;
	cp.initiator_depth = 16;
	cp.retry_count = 7;
	cp.rnr_retry_count = 6;
	if (rdma_connect(r->id, &cp) ||
	    raw_event(r, RDMA_CM_EVENT_ESTABLISHED, &ev))
		return -1;
	{
		const uint8_t *s = ev->param.conn.private_data;

		r->depth = s[2] | s[3] << 8;
		r->inline_max = s[4] | s[5] << 8;
		r->max_desc = s[8];
	}
	rdma_ack_cm_event(ev);
	return 0;
}

static int raw_connect_depth(struct raw *r, const char *host, uint8_t ep,
			     int nrecv, uint8_t depth, size_t mem)
{
	return raw_connect_from(r, NULL, host, ep, nrecv, depth, mem, 16);
}

/* Depth 8 over RAW_MEM. */
static int raw_connect(struct raw *r, const char *host, uint8_t ep,
		       int nrecv)
{
	return raw_connect_depth(r, host, ep, nrecv, 8, RAW_MEM);
}

static void raw_close(struct raw *r)
{
	if (r->id && r->id->qp) {
		rdma_disconnect(r->id);
		rdma_destroy_qp(r->id);
	}
	if (r->mr)
		ibv_dereg_mr(r->mr);
	if (r->cq)
		ibv_destroy_cq(r->cq);
	if (r->pd)
		ibv_dealloc_pd(r->pd);
	if (r->id)
		rdma_destroy_id(r->id);
	if (r->ch)
		rdma_destroy_event_channel(r->ch);
	free(r->mem);
}

/* A request prefix (SPEC section 2) of id, tenant 0, into b. */
static void put_prefix(uint8_t *b, uint8_t epoch, uint8_t op, const char *id,
		       uint64_t off, uint64_t length, uint64_t payload_len)
{
	memset(b, 0, DFKV_REQ_PREFIX_LEN);
	b[0] = epoch;
	b[1] = op;
	memcpy(b + 2, id, strlen(id) < 16 ? strlen(id) : 16);
	for (int i = 0; i < 8; i++) {
		b[26 + i] = (uint8_t)(off >> (8 * i));
		b[34 + i] = (uint8_t)(length >> (8 * i));
		b[42 + i] = (uint8_t)(payload_len >> (8 * i));
	}
}

/*
 * Start a request in slot s: the prefix (naming id and r->tenant) and the
 * descriptor count; returns the slot's buffer.
 */
static uint8_t *raw_req(struct raw *r, int s, uint8_t op, const char *id,
			uint64_t off, uint64_t length, uint64_t payload_len,
			uint32_t count)
{
	uint8_t *b = r->mem + (size_t)s * RAW_SLOT;

	memset(b, 0, RAW_SLOT);
	put_prefix(b, DFKV_EPOCH_RDMA, op, id, off, length, payload_len);
	for (int i = 0; i < 8; i++)
		b[18 + i] = (uint8_t)(r->tenant >> (8 * i));
	memcpy(b + 50, &count, 4);
	return b;
}

/* SEND the first n bytes of slot s. */
static int raw_post(struct raw *r, int s, uint32_t n)
{
	struct ibv_sge sge = { (uintptr_t)(r->mem + (size_t)s * RAW_SLOT), n,
			       r->mr->lkey };
	struct ibv_send_wr wr = { 0 }, *bad;

	wr.wr_id = s;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.opcode = IBV_WR_SEND;
	return ibv_post_send(r->id->qp, &wr, &bad);
}

/* Send one request from slot s: prefix, count, descriptors. */
static int raw_send(struct raw *r, int s, uint8_t op, const char *id,
		    uint64_t off, uint64_t length, uint64_t payload_len,
		    uint32_t count, const uint64_t *addr, const uint32_t *rkey,
		    const uint32_t *len)
{
	uint8_t *b = raw_req(r, s, op, id, off, length, payload_len, count);
	uint32_t n = DFKV_REQ_PREFIX_LEN + 4;

	for (uint32_t i = 0; i < count; i++) {
		memcpy(b + n, &addr[i], 8);
		memcpy(b + n + 8, &rkey[i], 4);
		memcpy(b + n + 12, &len[i], 4);
		n += 16;
	}
	return raw_post(r, s, n);
}

/* Send one request from slot s with its payload inline (no descriptor). */
static int raw_send_inline(struct raw *r, int s, uint8_t op, const char *id,
			   uint64_t off, const void *payload, uint32_t plen)
{
	uint8_t *b = raw_req(r, s, op, id, off, 0, plen, 0);

	memcpy(b + DFKV_REQ_PREFIX_LEN + 4, payload, plen);
	return raw_post(r, s, DFKV_REQ_PREFIX_LEN + 4 + plen);
}

/*
 * Wait for the next receive; its status byte, or -1 (error/timeout).  Its
 * inline data (if data) stays valid until the receive is reposted.
 */
static int raw_reply_data(struct raw *r, int timeout_ms, uint64_t *stored,
			  const uint8_t **data, uint64_t *data_len)
{
	uint64_t end = now_ms() + timeout_ms;
	struct ibv_wc wc;

	while (now_ms() < end) {
		int n = ibv_poll_cq(r->cq, 1, &wc);

		if (n < 0)
			return -1;
		if (!n) {
			usleep(1000);
			continue;
		}
		if (wc.status != IBV_WC_SUCCESS)
			return -1;
		if (wc.opcode == IBV_WC_RECV) {
			uint8_t *b = r->mem + wc.wr_id * RAW_SLOT;

			if (stored)
				memcpy(stored, b + 2, 8);
			if (data_len)
				memcpy(data_len, b + 10, 8);
			if (data)
				*data = b + DFKV_RESP_PREFIX_LEN;
			return b[0] == DFKV_EPOCH_RDMA ? b[1] : -2;
		}
	}
	return -1;
}

static int raw_reply(struct raw *r, int timeout_ms, uint64_t *stored)
{
	return raw_reply_data(r, timeout_ms, stored, NULL, NULL);
}

static int cmd_raw(const char *host, const char *what)
{
	struct raw r;
	uint64_t addr[8], stored = 0;
	uint32_t rkey[8], len[8];
	int st;

	if (!strcmp(what, "epoch")) {
		/* a HELLO of the TCP epoch: rejected with INVALID */
		st = raw_connect(&r, host, DFKV_EPOCH_TCP, 4);
		if (!st || r.reject_status != DFKV_STATUS_INVALID)
			FAIL("bad epoch: connect %d, reject status %d\n", st,
			     r.reject_status);
		raw_close(&r);
		return failures ? 1 : 0;
	}
	if (raw_connect(&r, host, DFKV_EPOCH_RDMA, 16)) {
		FAIL("raw connect failed\n");
		raw_close(&r);
		return 1;
	}
	if (r.depth != 8 || r.inline_max != 1024 || r.max_desc != 4)
		FAIL("negotiated depth %u inline %u desc %u\n", r.depth,
		     r.inline_max, r.max_desc);
	for (int i = 0; i < 8; i++) {
		addr[i] = (uintptr_t)(r.mem + (1 << 20) + i * 4096);
		rkey[i] = r.mr->rkey;
		len[i] = 4096;
	}
	if (!strcmp(what, "desc")) {
		/* 5 descriptors, 4 allowed: INVALID, the connection lives */
		st = raw_send(&r, 0, DFKV_OP_PUT, "raw-desc", 0, 0, 5 * 4096, 5,
			      addr, rkey, len);
		if (st || raw_reply(&r, 10000, NULL) != DFKV_STATUS_INVALID)
			FAIL("too many descriptors not INVALID\n");
		/* lengths that do not add up: payload 3 pages, 2 described */
		st = raw_send(&r, 1, DFKV_OP_PUT, "raw-sum", 0, 0, 3 * 4096, 2,
			      addr, rkey, len);
		if (st || raw_reply(&r, 10000, NULL) != DFKV_STATUS_INVALID)
			FAIL("mismatched lengths not INVALID\n");
		/* an empty descriptor */
		len[0] = 0;
		st = raw_send(&r, 2, DFKV_OP_GET, "raw-sum", 0, 0, 0, 1, addr,
			      rkey, len);
		if (st || raw_reply(&r, 10000, NULL) != DFKV_STATUS_INVALID)
			FAIL("empty descriptor not INVALID\n");
		len[0] = 4096;
		/* then a good PUT and GET on the same connection */
		memset(r.mem + (1 << 20), 0x5a, 8192);
		st = raw_send(&r, 3, DFKV_OP_PUT, "raw-good", 0, 0, 8192, 2,
			      addr, rkey, len);
		if (st || raw_reply(&r, 10000, NULL) != DFKV_STATUS_OK)
			FAIL("good PUT after bad ones failed\n");
		memset(r.mem + (1 << 20), 0, 8192);
		st = raw_send(&r, 4, DFKV_OP_GET, "raw-good", 0, 0, 0, 2, addr,
			      rkey, len);
		if (st || raw_reply(&r, 10000, &stored) != DFKV_STATUS_OK ||
		    stored != 8192 || r.mem[(1 << 20) + 8191] != 0x5a)
			FAIL("good GET after bad ones failed\n");
	} else if (!strcmp(what, "rkey")) {
		/* a GET into a wrong rkey: the node's WRITE fails, the
		 * connection is torn down, no reply arrives */
		memset(r.mem + (1 << 20), 1, 4096);
		st = raw_send(&r, 0, DFKV_OP_PUT, "raw-rkey", 0, 0, 4096, 1,
			      addr, rkey, len);
		if (st || raw_reply(&r, 10000, NULL) != DFKV_STATUS_OK)
			FAIL("PUT before bad rkey failed\n");
		rkey[0] ^= 0x5a5a00;
		st = raw_send(&r, 1, DFKV_OP_GET, "raw-rkey", 0, 0, 0, 1, addr,
			      rkey, len);
		st = st ? st : raw_reply(&r, 10000, NULL);
		if (st == DFKV_STATUS_OK)
			FAIL("GET with a bad rkey succeeded\n");
		/* a PUT from a bad rkey */
		raw_close(&r);
		if (raw_connect(&r, host, DFKV_EPOCH_RDMA, 16)) {
			FAIL("reconnect failed\n");
		} else {
			addr[0] = (uintptr_t)(r.mem + (1 << 20));
			rkey[0] = r.mr->rkey + 77;
			st = raw_send(&r, 0, DFKV_OP_PUT, "raw-badput", 0, 0,
				      4096, 1, addr, rkey, len);
			st = st ? st : raw_reply(&r, 10000, NULL);
			if (st == DFKV_STATUS_OK)
				FAIL("PUT from a bad rkey succeeded\n");
		}
	} else if (!strcmp(what, "midput")) {
		/* disconnect while the node reads a 16 MiB value */
		len[0] = 16 << 20;
		addr[0] = (uintptr_t)(r.mem + (1 << 20));
		st = raw_send(&r, 0, DFKV_OP_PUT, "raw-mid", 0, 0, 16 << 20, 1,
			      addr, rkey, len);
		if (st)
			FAIL("send failed\n");
		usleep(20000);
	} else if (!strcmp(what, "never")) {
		/* requests whose replies never find a receive: the node
		 * gives up after its RNR retries and disconnects */
		struct rdma_cm_event *ev;

		raw_close(&r);
		if (raw_connect(&r, host, DFKV_EPOCH_RDMA, 0)) {
			FAIL("connect\n");
			raw_close(&r);
			return 1;
		}
		for (int i = 0; i < 4; i++)
			raw_send(&r, i, DFKV_OP_EXIST, "nothing", 0, 0, 0, 0,
				 NULL, NULL, NULL);
		for (int t = 0; t < 6; t++) {	/* up to 60 s under TCG */
			if (!raw_event(&r, RDMA_CM_EVENT_DISCONNECTED, &ev)) {
				rdma_ack_cm_event(ev);
				break;
			}
			if (t == 5)
				FAIL("never: no disconnect from the node\n");
		}
	} else if (!strcmp(what, "norecv")) {
		/* depth + 4 requests; the node may answer only as receives
		 * are posted (RNR retries), and must answer all of them */
		int got = 0;

		raw_close(&r);
		if (raw_connect(&r, host, DFKV_EPOCH_RDMA, 0)) {
			FAIL("connect\n");
			raw_close(&r);
			return 1;
		}
		for (int i = 0; i < 8; i++)
			raw_send(&r, i, DFKV_OP_EXIST, "nothing", 0, 0, 0, 0,
				 NULL, NULL, NULL);
		sleep(1);	/* within the node's RNR retries (~4 s) */
		for (int i = 0; i < 16; i++) {
			struct ibv_sge sge = { (uintptr_t)(r.mem + (64 + i) * RAW_SLOT),
					       RAW_SLOT, r.mr->lkey };
			struct ibv_recv_wr wr = { .wr_id = 64 + i,
						  .sg_list = &sge,
						  .num_sge = 1 }, *bad;

			ibv_post_recv(r.id->qp, &wr, &bad);
		}
		for (int i = 0; i < 8; i++)
			if (raw_reply(&r, 20000, NULL) == DFKV_STATUS_NOT_FOUND)
				got++;
		if (got != 8)
			FAIL("norecv: %d of 8 replies\n", got);
	} else {
		FAIL("unknown raw case %s\n", what);
	}
	raw_close(&r);
	return failures ? 1 : 0;
}

static int cmd_idle(const char *host, int nreq, unsigned int secs)
{
	struct rdma_cm_event *ev;
	uint64_t end;
	struct raw r;
	int st;

	if (nreq < 0 || nreq > 16) {
		FAIL("idle: at most 16 requests\n");
		return 1;
	}
	if (raw_connect(&r, host, DFKV_EPOCH_RDMA, 16)) {
		FAIL("idle: connect failed\n");
		raw_close(&r);
		return 1;
	}
	for (int i = 0; i < nreq; i++) {
		st = raw_send(&r, i, DFKV_OP_EXIST, "idle", 0, 0, 0, 0, NULL,
			      NULL, NULL);
		if (st || raw_reply(&r, 10000, NULL) != DFKV_STATUS_NOT_FOUND)
			FAIL("idle: request %d not answered\n", i);
	}
	printf("ready\n");
	fflush(stdout);
	end = now_ms() + secs * 1000ULL;
	for (;;) {
		st = raw_event(&r, RDMA_CM_EVENT_DISCONNECTED, &ev);
		if (!st) {
			rdma_ack_cm_event(ev);
			printf("disconnected by the node\n");
			break;
		}
		if (st < 0) {
			FAIL("idle: unexpected CM event\n");
			break;
		}
		if (now_ms() >= end) {
			FAIL("idle: still connected after %u s\n", secs);
			break;
		}
	}
	raw_close(&r);
	return failures ? 1 : 0;
}

static int cmd_limit(const char *host)
{
	struct raw a, b;
	int st;

	if (raw_connect(&a, host, DFKV_EPOCH_RDMA, 16)) {
		FAIL("limit: the connection below the limit failed\n");
		raw_close(&a);
		return 1;
	}
	st = raw_connect(&b, host, DFKV_EPOCH_RDMA, 16);
	if (!st || b.reject_status != DFKV_STATUS_BUSY)
		FAIL("limit: over the limit: connect %d, reject status %d\n",
		     st, b.reject_status);
	raw_close(&b);
	st = raw_send(&a, 0, DFKV_OP_EXIST, "limit", 0, 0, 0, 0, NULL, NULL,
		      NULL);
	if (st || raw_reply(&a, 10000, NULL) != DFKV_STATUS_NOT_FOUND)
		FAIL("limit: the accepted connection does not answer\n");
	raw_close(&a);
	return failures ? 1 : 0;
}

/* ------------------------------------------------------ stalled READs */

#define STALL_LEN	(16u << 20)	/* a PUT whose READ never starts */
#define CAP_LEN		(4u << 20)	/* a PUT of an extent of kvr's */
#define DATA(r)		((r)->mem + (1 << 20))

/* Poll until path exists (600 s at most). */
static int wait_file(const char *path)
{
	uint64_t end = now_ms() + 600000;

	while (access(path, F_OK)) {
		if (now_ms() >= end) {
			FAIL("no %s after 600 s\n", path);
			return -1;
		}
		usleep(10000);
	}
	return 0;
}

/* Connect offering the node no RDMA READ in flight (responder resources 0). */
static int stall_connect(struct raw *r, const char *host)
{
	return raw_connect_from(r, NULL, host, DFKV_EPOCH_RDMA, 16, 8,
				RAW_MEM, 0);
}

/*
 * From slot s of a stall_connect()ed r, a PUT of STALL_LEN bytes of id
 * from its memory: the node reserves the value's first part and posts its
 * READ, which never starts, nor does anything the node posts after it.
 */
static int stall_send(struct raw *r, int s, const char *id)
{
	uint64_t addr = (uintptr_t)DATA(r);
	uint32_t rkey = r->mr->rkey, len = STALL_LEN;

	return raw_send(r, s, DFKV_OP_PUT, id, 0, 0, STALL_LEN, 1, &addr,
			&rkey, &len);
}

/* A request of op for id with one descriptor of len bytes; its status. */
static int raw_call(struct raw *r, int s, uint8_t op, const char *id,
		    uint32_t len, uint64_t *stored)
{
	uint64_t addr = (uintptr_t)DATA(r);
	uint32_t rkey = r->mr->rkey;

	if (raw_send(r, s, op, id, 0, 0, op == DFKV_OP_PUT ? len : 0, 1,
		     &addr, &rkey, &len))
		return -1;
	return raw_reply(r, 60000, stored);
}

/*
 * recvcap: a stalled PUT holds the first part (an extent) of its peer
 * address's receive cap (a quarter of an eighth of kvr's RAM, less than
 * two extents), "stalled"; once gofile exists, a PUT of an extent on
 * another connection from that address is BUSY, and PUTs of an extent
 * from src2 (another peer address) are OK and read back exact.  Then
 * every connection closes.
 */
static int cmd_recvcap(const char *host, const char *src2,
		       const char *gofile)
{
	uint8_t *want = malloc(CAP_LEN);
	struct raw s1 = { 0 }, s2, h;
	uint64_t stored = 0;
	char id[16];
	int st;

	if (!want || stall_connect(&s1, host) ||
	    stall_send(&s1, 0, "cap-stall")) {
		FAIL("recvcap: the stalled PUT\n");
		goto out;
	}
	printf("stalled\n");
	fflush(stdout);
	if (wait_file(gofile))
		goto out;
	if (raw_connect(&s2, host, DFKV_EPOCH_RDMA, 16)) {
		FAIL("recvcap: a second connection\n");
	} else {
		st = raw_call(&s2, 0, DFKV_OP_PUT, "cap-busy", CAP_LEN, NULL);
		if (st != DFKV_STATUS_BUSY)
			FAIL("recvcap: over the peer's cap: status %d\n", st);
	}
	raw_close(&s2);
	if (raw_connect_from(&h, src2, host, DFKV_EPOCH_RDMA, 16, 8, RAW_MEM,
			     16)) {
		FAIL("recvcap: connect from %s\n", src2);
		goto out_h;
	}
	for (int i = 0; i < 2; i++) {
		snprintf(id, sizeof(id), "cap-ok-%d", i);
		fill(DATA(&h), CAP_LEN, i + 1);
		st = raw_call(&h, 2 * i, DFKV_OP_PUT, id, CAP_LEN, NULL);
		if (st != DFKV_STATUS_OK)
			FAIL("recvcap: %s from %s: status %d\n", id, src2, st);
		memset(DATA(&h), 0, CAP_LEN);
		st = raw_call(&h, 2 * i + 1, DFKV_OP_GET, id, CAP_LEN, &stored);
		fill(want, CAP_LEN, i + 1);
		if (st != DFKV_STATUS_OK || stored != CAP_LEN ||
		    memcmp(DATA(&h), want, CAP_LEN))
			FAIL("recvcap: %s read back: status %d\n", id, st);
	}
out_h:
	raw_close(&h);
out:
	raw_close(&s1);
	free(want);
	return failures ? 1 : 0;
}

/*
 * stall: on a stall_connect()ed connection, an inline PUT of a small
 * value, then a stalled PUT, "put"; once gofile exists, a GET of the
 * small value into its memory (the node pins the entry and posts its
 * WRITE behind the stalled READ), "get"; then nothing until the node
 * disconnects it (secs at most).  On a new connection the stalled PUT's
 * key is absent, the small value still there.
 */
static int cmd_stall(const char *host, const char *gofile, unsigned int secs)
{
	static const char small[] = "a value the stalled GET pins";
	uint64_t end, stored = 0;
	struct rdma_cm_event *ev;
	struct raw r;
	int st;

	if (stall_connect(&r, host) ||
	    raw_send_inline(&r, 0, DFKV_OP_PUT, "stall-get", 0, small,
			    sizeof(small)) ||
	    raw_reply(&r, 60000, NULL) != DFKV_STATUS_OK ||
	    stall_send(&r, 1, "stall-put")) {
		FAIL("stall: the PUTs\n");
		goto out;
	}
	printf("put\n");
	fflush(stdout);
	if (wait_file(gofile))
		goto out;
	{
		uint64_t addr = (uintptr_t)DATA(&r) + STALL_LEN;
		uint32_t rkey = r.mr->rkey, len = sizeof(small);

		if (raw_send(&r, 2, DFKV_OP_GET, "stall-get", 0, 0, 0, 1,
			     &addr, &rkey, &len)) {
			FAIL("stall: the GET\n");
			goto out;
		}
	}
	printf("get\n");
	fflush(stdout);
	for (end = now_ms() + secs * 1000ULL;;) {
		st = raw_event(&r, RDMA_CM_EVENT_DISCONNECTED, &ev);
		if (!st) {
			rdma_ack_cm_event(ev);
			printf("disconnected by the node\n");
			break;
		}
		if (st < 0 || now_ms() >= end) {
			FAIL("stall: not disconnected (%d)\n", st);
			goto out;
		}
	}
	raw_close(&r);
	if (raw_connect(&r, host, DFKV_EPOCH_RDMA, 16)) {
		FAIL("stall: reconnect\n");
		goto out;
	}
	if (raw_send(&r, 0, DFKV_OP_EXIST, "stall-put", 0, 0, 0, 0, NULL,
		     NULL, NULL) ||
	    raw_reply(&r, 60000, NULL) != DFKV_STATUS_NOT_FOUND)
		FAIL("stall: the stalled PUT is visible\n");
	if (raw_send(&r, 1, DFKV_OP_EXIST, "stall-get", 0, 0, 0, 0, NULL,
		     NULL, NULL) ||
	    raw_reply(&r, 60000, &stored) != DFKV_STATUS_OK ||
	    stored != sizeof(small))
		FAIL("stall: the small value is gone\n");
out:
	raw_close(&r);
	return failures ? 1 : 0;
}

/* ------------------------------------------------- stages per peer */

#define STG_LEN		(2u << 20)	/* a value: half a peer's share */
#define STG_GETS	6		/* the hostile GETs, a PUT before */

/* On h, a PUT of STG_LEN bytes of id filled from seed; its status. */
static int stg_put(struct raw *h, int s, const char *id, uint64_t seed)
{
	fill(DATA(h), STG_LEN, seed);
	return raw_call(h, s, DFKV_OP_PUT, id, STG_LEN, NULL);
}

/* On h, a GET of id: OK with the STG_LEN bytes of seed, or a failure. */
static void stg_check(struct raw *h, int s, const char *id, uint64_t seed,
		      uint8_t *want)
{
	uint64_t stored = 0;
	int st;

	memset(DATA(h), 0, STG_LEN);
	st = raw_call(h, s, DFKV_OP_GET, id, STG_LEN, &stored);
	fill(want, STG_LEN, seed);
	if (st != DFKV_STATUS_OK || stored != STG_LEN ||
	    memcmp(DATA(h), want, STG_LEN))
		FAIL("stages: %s read back: status %d, %" PRIu64 " bytes\n",
		     id, st, stored);
}

/*
 * stages: the hostile connection's PUT and GETs hold stages (the GETs'
 * WRITEs and every reply wait behind the PUT's READ, which never starts)
 * until it closes; the honest one's requests come from another address
 * and are served from the rest of the node's stage bound.
 */
static int cmd_stages(const char *host, const char *src_h,
		      const char *src_ok, const char *gofile)
{
	uint8_t *want = malloc(STG_LEN);
	uint64_t addr;
	uint32_t rkey, len = STG_LEN;
	struct raw s = { 0 }, h = { 0 };
	char id[16];
	int i, st;

	if (!want || raw_connect_from(&h, src_ok, host, DFKV_EPOCH_RDMA, 16,
				      8, RAW_MEM, 16)) {
		FAIL("stages: connect from %s\n", src_ok);
		goto out;
	}
	for (i = 0; i <= STG_GETS; i++) {
		snprintf(id, sizeof(id), "stg-%d", i);
		st = stg_put(&h, 0, id, 100 + i);
		if (st != DFKV_STATUS_OK) {
			FAIL("stages: %s: status %d\n", id, st);
			goto out;
		}
	}
	if (raw_connect_from(&s, src_h, host, DFKV_EPOCH_RDMA, 16, 8,
			     RAW_MEM, 0)) {
		FAIL("stages: connect from %s\n", src_h);
		goto out;
	}
	addr = (uintptr_t)DATA(&s);
	rkey = s.mr->rkey;
	if (raw_send(&s, 0, DFKV_OP_PUT, "stg-hostile", 0, 0, STG_LEN, 1,
		     &addr, &rkey, &len)) {
		FAIL("stages: the stalled PUT\n");
		goto out;
	}
	for (i = 0; i < STG_GETS; i++) {
		snprintf(id, sizeof(id), "stg-%d", i);
		if (raw_send(&s, 1 + i, DFKV_OP_GET, id, 0, 0, 0, 1, &addr,
			     &rkey, &len)) {
			FAIL("stages: the GET of %s\n", id);
			goto out;
		}
	}
	printf("held\n");
	fflush(stdout);
	if (wait_file(gofile))
		goto out;
	st = stg_put(&h, 0, "stg-honest", 200);
	if (st != DFKV_STATUS_OK)
		FAIL("stages: the honest PUT: status %d\n", st);
	snprintf(id, sizeof(id), "stg-%d", STG_GETS);
	stg_check(&h, 1, id, 100 + STG_GETS, want);
	stg_check(&h, 2, "stg-honest", 200, want);
out:
	raw_close(&s);
	raw_close(&h);
	free(want);
	return failures ? 1 : 0;
}

/* --------------------------------------------------------------- auth */

#define AUTH_NODE	"kvr"
#define AUTH_TA		0x0a0a0a0a00000001ULL
#define AUTH_TB		0x0b0b0b0b00000002ULL

/*
 * HELLO as a SEND with a fresh client nonce: the reply's capabilities and
 * hs (server nonce || client nonce); a status, or -1 when the reply does
 * not name AUTH_NODE.
 */
static int raw_hello(struct raw *r, int s, uint64_t *caps, uint8_t *hs)
{
	uint8_t c[DFKV_HELLO_REQ_LEN] = { DFKV_CAP_AUTH2 };
	size_t nl = strlen(AUTH_NODE);
	const uint8_t *d;
	uint64_t dl = 0;
	int st;

	if (getrandom(c + 8, DFKV_AUTH_NONCE_LEN, 0) != DFKV_AUTH_NONCE_LEN ||
	    raw_send_inline(r, s, DFKV_OP_HELLO, "", 0, c, sizeof(c)))
		return -1;
	st = raw_reply_data(r, 10000, NULL, &d, &dl);
	if (st != DFKV_STATUS_OK)
		return st;
	if (dl != DFKV_HELLO_REPLY_MIN + nl ||
	    memcmp(d + DFKV_HELLO_REPLY_MIN, AUTH_NODE, nl))
		return -1;
	memcpy(caps, d, 8);
	memcpy(hs, d + 16, DFKV_AUTH_NONCE_LEN);
	memcpy(hs + DFKV_AUTH_NONCE_LEN, c + 8, DFKV_AUTH_NONCE_LEN);
	return st;
}

/*
 * AUTH as tenant t with secret's proof over hs; a status, or -1 when an
 * OK does not carry the node's proof of the same secret.
 */
static int raw_auth(struct raw *r, int s, uint64_t t, const uint8_t *secret,
		    const uint8_t *hs)
{
	uint8_t proof[DFKV_AUTH_PROOF_LEN], sproof[DFKV_AUTH_PROOF_LEN];
	uint64_t saved = r->tenant, dl = 0;
	const uint8_t *d;
	int st;

	dfkv_proof(proof, sproof, secret, AUTH_NODE, hs, t);
	r->tenant = t;
	st = raw_send_inline(r, s, DFKV_OP_AUTH, "", 0, proof, sizeof(proof));
	r->tenant = saved;
	if (st)
		return -1;
	st = raw_reply_data(r, 10000, NULL, &d, &dl);
	if (st == DFKV_STATUS_OK &&
	    (dl != sizeof(sproof) || memcmp(d, sproof, sizeof(sproof))))
		return -1;
	return st;
}

/* Request slot s's inline request as tenant t; its status or -1. */
static int raw_call_as(struct raw *r, int s, uint64_t t, uint8_t op,
		       const char *id, const void *payload, uint32_t plen)
{
	r->tenant = t;
	if (raw_send_inline(r, s, op, id, 0, payload, plen))
		return -1;
	return raw_reply(r, 10000, NULL);
}

/* GET of (t, id) into the data area by one descriptor; a status or -1. */
static int raw_get_as(struct raw *r, int s, uint64_t t, const char *id,
		      uint64_t *stored)
{
	uint64_t addr = (uintptr_t)(r->mem + (1 << 20));
	uint32_t rkey = r->mr->rkey, len = 4096;

	r->tenant = t;
	memset(r->mem + (1 << 20), 0, 4096);
	if (raw_send(r, s, DFKV_OP_GET, id, 0, 0, 0, 1, &addr, &rkey, &len))
		return -1;
	return raw_reply(r, 10000, stored);
}

#define EXPECT_ST(want, got, what)					\
	do {								\
		int _g = (got);						\
		if (_g != (want))					\
			FAIL("%s: status %d, expected %d\n", what, _g,	\
			     (want));					\
	} while (0)

/* B's block "auth-b" reads back as B stored it, over rb. */
static void expect_b_block(struct raw *rb, int s, const char *what)
{
	uint64_t stored = 0;

	EXPECT_ST(DFKV_STATUS_OK, raw_get_as(rb, s, AUTH_TB, "auth-b", &stored),
		  what);
	if (stored != 4 || memcmp(rb->mem + (1 << 20), "bbbb", 4))
		FAIL("%s: stored %" PRIu64 ", bytes differ\n", what, stored);
}

/*
 * With node kvr at auth=required and tenants A and B registered: HELLO
 * and AUTH ride as SENDs (HELLO reply with the node's name and a fresh
 * nonce, AUTH reply with the node's proof); requests of
 * an unauthenticated connection are FORBIDDEN, a wrong or replayed proof
 * too; B's AUTH'd connection stores and reads, A's cannot reach B's
 * blocks.  The node is back at auth=off, tenants gone, on return.
 */
static int cmd_auth(const char *host)
{
	uint8_t sa[DFKV_TENANT_SECRET_LEN], sb[DFKV_TENANT_SECRET_LEN];
	uint8_t n1[DFKV_HS_LEN] = { 0 }, n2[DFKV_HS_LEN], key[24];
	struct raw rb = { 0 }, ra = { 0 }, rc = { 0 };
	struct rdma_cm_event *ev;
	struct dfkv_genl g;
	uint64_t caps = 0, stored = 0;
	int st;

	if (dfkv_genl_open(&g)) {
		FAIL("auth: netlink\n");
		return 1;
	}
	dfkv_test_secret(AUTH_TA, sa);
	dfkv_test_secret(AUTH_TB, sb);
	if (dfkv_test_tenant_set(&g, AUTH_NODE, AUTH_TA, sa, sizeof(sa), NULL) ||
	    dfkv_test_tenant_set(&g, AUTH_NODE, AUTH_TB, sb, sizeof(sb), NULL) ||
	    dfkv_test_node_set_u32(&g, AUTH_NODE, DFKV_A_NODE_AUTH,
				   DFKV_AUTH_REQUIRED)) {
		FAIL("auth: node setup: %s\n", g.errmsg);
		goto out;
	}
	if (raw_connect(&rb, host, DFKV_EPOCH_RDMA, 16) ||
	    raw_connect(&ra, host, DFKV_EPOCH_RDMA, 16)) {
		FAIL("auth: connect\n");
		goto out;
	}
	/* Nothing before AUTH. */
	EXPECT_ST(DFKV_STATUS_FORBIDDEN, raw_get_as(&rb, 0, AUTH_TB, "auth-b",
						    NULL), "GET before AUTH");
	EXPECT_ST(DFKV_STATUS_FORBIDDEN,
		  raw_call_as(&rb, 1, AUTH_TB, DFKV_OP_PUT, "auth-b", "bbbb", 4),
		  "inline PUT before AUTH");
	EXPECT_ST(DFKV_STATUS_FORBIDDEN, raw_auth(&rb, 2, AUTH_TB, sb, n1),
		  "AUTH before HELLO");
	st = raw_hello(&rb, 3, &caps, n1);
	if (st || (caps & 7) != (DFKV_CAP_AUTH | DFKV_CAP_AUTH_REQUIRED |
				 DFKV_CAP_AUTH2))
		FAIL("HELLO: status %d caps %" PRIx64 "\n", st, caps);
	st = raw_hello(&ra, 0, &caps, n2);
	if (st || !memcmp(n1, n2, sizeof(n1)))
		FAIL("HELLO on a second connection: status %d, nonce %s\n", st,
		     memcmp(n1, n2, sizeof(n1)) ? "fresh" : "repeated");
	/* A proof for the other connection's nonce, a wrong secret. */
	EXPECT_ST(DFKV_STATUS_FORBIDDEN, raw_auth(&rb, 4, AUTH_TB, sb, n2),
		  "replayed proof");
	EXPECT_ST(DFKV_STATUS_FORBIDDEN, raw_auth(&ra, 1, AUTH_TA, sb, n2),
		  "wrong secret");
	/* B authenticated: its PUT (inline and by descriptor) and GET. */
	EXPECT_ST(DFKV_STATUS_OK, raw_auth(&rb, 5, AUTH_TB, sb, n1), "AUTH B");
	EXPECT_ST(DFKV_STATUS_OK,
		  raw_call_as(&rb, 6, AUTH_TB, DFKV_OP_PUT, "auth-b", "bbbb", 4),
		  "B's inline PUT");
	expect_b_block(&rb, 7, "B's GET");
	/* A authenticated reaches its own blocks, never B's. */
	EXPECT_ST(DFKV_STATUS_OK, raw_auth(&ra, 2, AUTH_TA, sa, n2), "AUTH A");
	EXPECT_ST(DFKV_STATUS_OK,
		  raw_call_as(&ra, 3, AUTH_TA, DFKV_OP_PUT, "auth-a", "aa", 2),
		  "A's inline PUT");
	EXPECT_ST(DFKV_STATUS_FORBIDDEN, raw_get_as(&ra, 4, AUTH_TB, "auth-b",
						    &stored), "A's GET of B");
	if (stored || ra.mem[1 << 20])
		FAIL("A's GET of B: stored %" PRIu64 " or bytes written\n",
		     stored);
	EXPECT_ST(DFKV_STATUS_FORBIDDEN,
		  raw_call_as(&ra, 5, AUTH_TB, DFKV_OP_EXIST, "auth-b", NULL, 0),
		  "A's EXIST of B");
	EXPECT_ST(DFKV_STATUS_FORBIDDEN,
		  raw_call_as(&ra, 6, AUTH_TB, DFKV_OP_REMOVE, "auth-b", NULL, 0),
		  "A's REMOVE of B");
	EXPECT_ST(DFKV_STATUS_FORBIDDEN,
		  raw_call_as(&ra, 7, AUTH_TB, DFKV_OP_PUT, "auth-b", "x", 1),
		  "A's inline PUT of B");
	{
		/* a PUT by descriptor: refused before any READ */
		uint64_t addr = (uintptr_t)(ra.mem + (2 << 20));
		uint32_t rkey = ra.mr->rkey, len = 4096;

		ra.tenant = AUTH_TB;
		memset(ra.mem + (2 << 20), 'x', len);
		EXPECT_ST(DFKV_STATUS_FORBIDDEN,
			  raw_send(&ra, 10, DFKV_OP_PUT, "auth-b2", 0, 0, len,
				   1, &addr, &rkey, &len) ? -1 :
			  raw_reply(&ra, 10000, NULL), "A's PUT of B by READ");
	}
	memset(key, 0, sizeof(key));
	for (int i = 0; i < 8; i++)
		key[i] = (uint8_t)(AUTH_TB >> (8 * i));
	memcpy(key + 8, "auth-b", 6);
	EXPECT_ST(DFKV_STATUS_FORBIDDEN,
		  raw_call_as(&ra, 8, AUTH_TA, DFKV_OP_PROBE, "", key, 24),
		  "A's PROBE of B");
	EXPECT_ST(DFKV_STATUS_FORBIDDEN,
		  raw_call_as(&ra, 9, AUTH_TA, DFKV_OP_LEASE, "", key, 24),
		  "A's LEASE of B");
	/* B's block is intact. */
	expect_b_block(&rb, 9, "B's GET after A");
	/* The third failed AUTH gets its reply, then the node disconnects. */
	if (raw_connect(&rc, host, DFKV_EPOCH_RDMA, 16) ||
	    raw_hello(&rc, 0, &caps, n1)) {
		FAIL("auth: third connection\n");
		goto out;
	}
	for (int i = 1; i <= 3; i++)
		EXPECT_ST(DFKV_STATUS_FORBIDDEN, raw_auth(&rc, i, AUTH_TA, sb, n1),
			  "failed AUTH");
	if (raw_event(&rc, RDMA_CM_EVENT_DISCONNECTED, &ev))
		FAIL("auth: no disconnect after the third failure\n");
	else
		rdma_ack_cm_event(ev);
out:
	raw_close(&rc);
	raw_close(&ra);
	raw_close(&rb);
	dfkv_test_node_set_u32(&g, AUTH_NODE, DFKV_A_NODE_AUTH, DFKV_AUTH_OFF);
	dfkv_test_tenant_del(&g, AUTH_NODE, AUTH_TA);
	dfkv_test_tenant_del(&g, AUTH_NODE, AUTH_TB);
	dfkv_genl_close(&g);
	return failures ? 1 : 0;
}

/* ------------------------------------------------------------- expose */

/*
 * A fake node for the exposure checks: a raw rdma_cm listener in this
 * process that libdfkv connects to, serving one request per connection
 * (PUT: RDMA READ of its descriptors, GET: RDMA WRITE of the stored value
 * into them) and probing the keys the client sent with 1-byte accesses of
 * its own, before it replies or after the client's call returned.  Client
 * and fake node share the address space, so a probe WRITE writes back the
 * byte already there.
 */
#define FAKE_PORT	7411
#define FAKE_DESC_MAX	16
#define FAKE_SLOT	4096
#define FAKE_DATA	(1u << 20)	/* offset of the stored value */
#define FAKE_MEM	(FAKE_DATA + (4u << 20))

enum probe_when { PROBE_IN_FLIGHT, PROBE_AFTER };

/* One exposure check: a call, a probe, and what the probe must do. */
struct probe {
	const char *name;
	uint8_t op;			/* DFKV_OP_PUT or DFKV_OP_GET */
	bool in_pool;			/* the buffer lies in a registered pool */
	enum probe_when when;
	enum ibv_wr_opcode access;	/* IBV_WR_RDMA_READ or _WRITE */
	int64_t at;			/* from the first descriptor's addr;
					 * INT64_MAX: its end */
	bool in_range;			/* allowed to this request's key */
	bool outside;			/* a byte next to the range */
};

struct fake {
	struct rdma_event_channel *ch;
	struct rdma_cm_id *listen;
	uint8_t *mem;			/* recv slots, send slot, probe byte,
					 * then the stored value */
	uint64_t stored;
	const struct probe *pr;
	sem_t returned;			/* the client's call returned */
	/* what the request carried and what the probe got */
	uint8_t op;
	uint32_t ndesc;
	uint64_t addr[FAKE_DESC_MAX];
	uint32_t rkey[FAKE_DESC_MAX], len[FAKE_DESC_MAX];
	int probe_status;		/* enum ibv_wc_status, -1: none */
	bool probed;
	const char *err;
};

/* Post wr on qp and wait for its completion: its status, or -1. */
static int fake_post(struct ibv_qp *qp, struct ibv_cq *cq,
		     struct ibv_send_wr *wr)
{
	struct ibv_send_wr *bad;
	struct ibv_wc wc;
	uint64_t end = now_ms() + 20000;

	if (ibv_post_send(qp, wr, &bad))
		return -1;
	while (now_ms() < end) {
		int n = ibv_poll_cq(cq, 1, &wc);

		if (n < 0)
			return -1;
		if (n && wc.wr_id == wr->wr_id)
			return wc.status;
		if (!n)
			usleep(200);
	}
	return -1;
}

/* A 1-byte RDMA READ or WRITE at remote addr with rkey; its status. */
static int fake_rdma(struct ibv_qp *qp, struct ibv_cq *cq, struct ibv_mr *mr,
		     uint8_t *local, enum ibv_wr_opcode op, uint64_t addr,
		     uint32_t rkey, uint32_t len, uint64_t id)
{
	struct ibv_sge sge = { (uintptr_t)local, len, mr->lkey };
	struct ibv_send_wr wr = {
		.wr_id = id, .sg_list = &sge, .num_sge = 1, .opcode = op,
		.send_flags = IBV_SEND_SIGNALED,
		.wr.rdma = { .remote_addr = addr, .rkey = rkey },
	};

	return fake_post(qp, cq, &wr);
}

static void fake_probe(struct fake *f, struct ibv_qp *qp, struct ibv_cq *cq,
		       struct ibv_mr *mr)
{
	const struct probe *pr = f->pr;
	uint64_t a = f->addr[0] + (pr->at == INT64_MAX ? f->len[0] :
				   (uint64_t)pr->at);
	uint8_t *b = f->mem + 2 * FAKE_SLOT;

	*b = *(const uint8_t *)(uintptr_t)a;	/* WRITE puts it back */
	f->probe_status = fake_rdma(qp, cq, mr, b, pr->access, a, f->rkey[0],
				    1, 99);
	f->probed = true;
}

/* Serve the request in the receive slot: RDMA, then the reply. */
static int fake_serve(struct fake *f, struct ibv_qp *qp, struct ibv_cq *cq,
		      struct ibv_mr *mr)
{
	uint8_t *rep = f->mem + FAKE_SLOT, *data = f->mem + FAKE_DATA;
	struct ibv_sge sge = { (uintptr_t)rep, DFKV_RESP_PREFIX_LEN, mr->lkey };
	struct ibv_send_wr wr = { .wr_id = 50, .sg_list = &sge, .num_sge = 1,
				  .opcode = IBV_WR_SEND,
				  .send_flags = IBV_SEND_SIGNALED };
	uint64_t o = 0, n = f->op == DFKV_OP_PUT ? 0 : f->stored;

	for (uint32_t i = 0; i < f->ndesc; i++) {
		uint32_t k = f->len[i];

		if (f->op == DFKV_OP_GET)
			k = n - o < k ? (uint32_t)(n - o) : k;
		if (o + k > FAKE_MEM - FAKE_DATA)
			return -1;
		if (k && fake_rdma(qp, cq, mr, data + o, f->op == DFKV_OP_PUT ?
				   IBV_WR_RDMA_READ : IBV_WR_RDMA_WRITE,
				   f->addr[i], f->rkey[i], k, 60 + i))
			return -1;
		o += k;
	}
	if (f->op == DFKV_OP_PUT)
		f->stored = n = o;
	memset(rep, 0, DFKV_RESP_PREFIX_LEN);
	rep[0] = DFKV_EPOCH_RDMA;
	for (int i = 0; i < 8; i++) {
		rep[2 + i] = (uint8_t)(n >> (8 * i));
		if (f->op == DFKV_OP_GET)
			rep[10 + i] = (uint8_t)(n >> (8 * i));
	}
	return fake_post(qp, cq, &wr) ? -1 : 0;
}

/* The next connect request on the listener (other events skipped). */
static struct rdma_cm_id *fake_accept_id(struct fake *f)
{
	struct pollfd pfd = { .fd = f->ch->fd, .events = POLLIN };
	struct rdma_cm_event *ev;

	while (poll(&pfd, 1, 20000) > 0 && !rdma_get_cm_event(f->ch, &ev)) {
		struct rdma_cm_id *id = ev->id;
		bool req = ev->event == RDMA_CM_EVENT_CONNECT_REQUEST;

		rdma_ack_cm_event(ev);
		if (req)
			return id;
	}
	return NULL;
}

/* The fake node's side of one check (a thread). */
static void *fake_run(void *arg)
{
	struct fake *f = arg;
	struct rdma_cm_id *id = fake_accept_id(f);
	struct ibv_qp_init_attr qa = { 0 };
	struct rdma_conn_param cp = { 0 };
	struct ibv_pd *pd = NULL;
	struct ibv_cq *cq = NULL;
	struct ibv_mr *mr = NULL;
	uint8_t h[32] = { 0 };
	struct ibv_sge sge;
	struct ibv_recv_wr rw = { .wr_id = 1, .sg_list = &sge, .num_sge = 1 },
		*bad;
	struct ibv_wc wc;
	uint64_t end;
	int n = 0;

	f->err = "no connection";
	if (!id)
		goto out;
	pd = ibv_alloc_pd(id->verbs);
	cq = pd ? ibv_create_cq(id->verbs, 64, NULL, NULL, 0) : NULL;
	mr = pd ? ibv_reg_mr(pd, f->mem, FAKE_MEM, IBV_ACCESS_LOCAL_WRITE) :
		NULL;
	qa.send_cq = qa.recv_cq = cq;
	qa.qp_type = IBV_QPT_RC;
	qa.cap.max_send_wr = qa.cap.max_recv_wr = 32;
	qa.cap.max_send_sge = qa.cap.max_recv_sge = 1;
	f->err = "setup";
	if (!cq || !mr || rdma_create_qp(id, pd, &qa))
		goto out;
	sge = (struct ibv_sge){ (uintptr_t)f->mem, FAKE_SLOT, mr->lkey };
	if (ibv_post_recv(id->qp, &rw, &bad))
		goto out;
	h[0] = DFKV_EPOCH_RDMA;
	h[2] = 4;			/* depth 4 */
	h[8] = FAKE_DESC_MAX;		/* inline 0: every value by RDMA */
	h[27] = 1;			/* max value 16 MiB */
	cp.private_data = h;
	cp.private_data_len = sizeof(h);
	cp.responder_resources = cp.initiator_depth = 16;
	cp.rnr_retry_count = 6;
	f->err = "accept";
	if (rdma_accept(id, &cp))
		goto out;
	f->err = "no request";
	for (end = now_ms() + 20000; now_ms() < end && !n; usleep(200)) {
		n = ibv_poll_cq(cq, 1, &wc);
		if (n < 0)
			goto out;
	}
	if (!n || wc.status != IBV_WC_SUCCESS || wc.opcode != IBV_WC_RECV ||
	    wc.byte_len < DFKV_REQ_PREFIX_LEN + 4)
		goto out;
	f->op = f->mem[1];
	memcpy(&f->ndesc, f->mem + DFKV_REQ_PREFIX_LEN, 4);
	f->err = "descriptor count";
	if (!f->ndesc || f->ndesc > FAKE_DESC_MAX ||
	    wc.byte_len != DFKV_REQ_PREFIX_LEN + 4 + 16 * f->ndesc)
		goto out;
	for (uint32_t i = 0; i < f->ndesc; i++) {
		const uint8_t *d = f->mem + DFKV_REQ_PREFIX_LEN + 4 + 16 * i;

		memcpy(&f->addr[i], d, 8);
		memcpy(&f->rkey[i], d + 8, 4);
		memcpy(&f->len[i], d + 12, 4);
	}
	f->err = NULL;
	if (f->pr->when == PROBE_IN_FLIGHT) {
		fake_probe(f, id->qp, cq, mr);
		if (f->probe_status != IBV_WC_SUCCESS)
			goto out;	/* the QP is in error: no reply */
	}
	if (fake_serve(f, id->qp, cq, mr)) {
		f->err = "serving the request";
		goto out;
	}
	/* no disconnect before the client has the reply */
	sem_wait(&f->returned);
	if (f->pr->when == PROBE_AFTER)
		fake_probe(f, id->qp, cq, mr);
out:
	if (id) {
		rdma_disconnect(id);
		if (id->qp)
			rdma_destroy_qp(id);
		rdma_destroy_id(id);
	}
	if (mr)
		ibv_dereg_mr(mr);
	if (cq)
		ibv_destroy_cq(cq);
	if (pd)
		ibv_dealloc_pd(pd);
	return NULL;
}

#define VAL_LEN		300000
#define VAL_AT		12345		/* in the pool: bytes on both sides */

/*
 * One check: a fresh client (exposure mode, rdma_port FAKE_PORT) PUTs
 * want or GETs into buf (in its pool or not); the probe must succeed
 * exactly when the key may cover it (unbounded: a window reaches its
 * whole MR, as on rxe); a completed call byte-exact.
 */
static void expose_one(const char *host, struct fake *f, const struct probe *pr,
		       const uint8_t *want, bool unbounded, uint64_t *windows,
		       uint64_t *mrs)
{
	bool pool_mode = expose == DFKV_RDMA_EXPOSE_POOL;
	bool allowed = pr->in_range || (pr->in_pool && (pool_mode ||
						       (unbounded && pr->outside)));
	uint64_t pool_len = VAL_AT + VAL_LEN + 4096, len = 0;
	uint8_t *pool = aligned_alloc(4096, pool_len + 4096);
	uint8_t *own = malloc(VAL_LEN + 2);
	uint8_t *buf = pr->in_pool ? pool + VAL_AT : own + 1;
	struct dfkv_client *c;
	pthread_t t;
	int st;

	c = open_client(host, DFKV_TRANSPORT_RDMA, NULL);
	if (!c || !pool || !own) {
		FAIL("%s: setup\n", pr->name);
		goto out;
	}
	memset(pool, 0x5a, pool_len);
	memset(own, 0x5a, VAL_LEN + 2);
	if (pr->in_pool && (st = dfkv_register_memory(c, pool, pool_len)))
		FAIL("%s: register_memory: %s\n", pr->name, dfkv_strerror(st));
	if (pr->op == DFKV_OP_PUT)
		memcpy(buf, want, VAL_LEN);
	f->pr = pr;
	f->probed = false;
	f->ndesc = 0;
	if (pthread_create(&t, NULL, fake_run, f)) {
		FAIL("%s: thread\n", pr->name);
		goto out;
	}
	if (pr->op == DFKV_OP_PUT)
		st = dfkv_put(c, "exp", 3, buf, VAL_LEN);
	else
		st = dfkv_get(c, "exp", 3, buf, VAL_LEN, &len);
	sem_post(&f->returned);
	pthread_join(t, NULL);
	while (!sem_trywait(&f->returned))
		;
	if (f->err) {
		FAIL("%s: fake node: %s\n", pr->name, f->err);
		goto out;
	}
	/* the descriptors are exactly the buffer, in order */
	for (uint32_t i = 0, o = 0; i < f->ndesc; o += f->len[i++])
		if (f->addr[i] != (uintptr_t)buf + o ||
		    (i == f->ndesc - 1 && o + f->len[i] != VAL_LEN))
			FAIL("%s: descriptor %u: %#" PRIx64 "+%u, buffer %p+%u\n",
			     pr->name, i, f->addr[i], f->len[i], (void *)buf,
			     VAL_LEN);
	/* refused: the node's QP got a remote access error (no timeout) */
	if (!f->probed || f->probe_status != (allowed ? IBV_WC_SUCCESS :
					      IBV_WC_REM_ACCESS_ERR))
		FAIL("%s: probe %s (%s), %s\n", pr->name,
		     !f->probed ? "not run" : f->probe_status < 0 ? "no completion" :
		     ibv_wc_status_str(f->probe_status),
		     pr->access == IBV_WR_RDMA_READ ? "read" : "write",
		     allowed ? "allowed" : "must fail");
	/* a refused in-flight probe fails the call, anything else not */
	if (pr->when == PROBE_IN_FLIGHT && !allowed)
		allowed = st != DFKV_STATUS_OK;
	else
		allowed = st == DFKV_STATUS_OK &&
			(pr->op == DFKV_OP_PUT ?
			 f->stored == VAL_LEN &&
			 !memcmp(f->mem + FAKE_DATA, want, VAL_LEN) :
			 len == VAL_LEN && !memcmp(buf, want, VAL_LEN));
	if (!allowed)
		FAIL("%s: call %s, len %" PRIu64 " (or bytes differ)\n",
		     pr->name, dfkv_strerror(st), len);
	/* nothing written outside the GET's buffer */
	if (pool[VAL_AT - 1] != 0x5a || pool[VAL_AT + VAL_LEN] != 0x5a ||
	    own[0] != 0x5a || own[VAL_LEN + 1] != 0x5a)
		FAIL("%s: bytes next to the buffer changed\n", pr->name);
	fprintf(stderr, "# %s: probe %s, call %s\n", pr->name,
		f->probed && f->probe_status >= 0 ?
		ibv_wc_status_str(f->probe_status) : "-", dfkv_strerror(st));
	*windows += client_stat(c, "rdma_request_keys_total{kind=\"window\"} ");
	*mrs += client_stat(c, "rdma_request_keys_total{kind=\"registration\"} ");
out:
	if (c)
		dfkv_close(c);
	free(pool);
	free(own);
}

/*
 * Whether the device of host's address reports type-2B memory windows;
 * *rxe: it is rdma_rxe (vendor 0xffffff), which checks an access with a
 * window against the window's MR's range only.
 */
static bool host_has_mw(struct fake *f, bool *rxe)
{
	struct ibv_device_attr da;

	if (!f->listen->verbs || ibv_query_device(f->listen->verbs, &da))
		return false;
	*rxe = da.vendor_id == 0xffffff;
	return da.max_mw > 0 &&
		(da.device_cap_flags & IBV_DEVICE_MEM_WINDOW_TYPE_2B);
}

static int cmd_expose(const char *host)
{
	static const struct probe checks[] = {
		{ "put from pool, read after", DFKV_OP_PUT, true, PROBE_AFTER,
		  IBV_WR_RDMA_READ, 0, false, false },
		{ "get into pool, write after", DFKV_OP_GET, true, PROBE_AFTER,
		  IBV_WR_RDMA_WRITE, 0, false, false },
		{ "put from own buffer, read after", DFKV_OP_PUT, false,
		  PROBE_AFTER, IBV_WR_RDMA_READ, 0, false, false },
		{ "get into own buffer, write after", DFKV_OP_GET, false,
		  PROBE_AFTER, IBV_WR_RDMA_WRITE, 0, false, false },
		{ "put from pool, read first byte", DFKV_OP_PUT, true,
		  PROBE_IN_FLIGHT, IBV_WR_RDMA_READ, 0, true, false },
		{ "get into pool, write last byte", DFKV_OP_GET, true,
		  PROBE_IN_FLIGHT, IBV_WR_RDMA_WRITE, VAL_LEN - 1, true, false },
		{ "put from pool, read byte before", DFKV_OP_PUT, true,
		  PROBE_IN_FLIGHT, IBV_WR_RDMA_READ, -1, false, true },
		{ "put from pool, read byte after", DFKV_OP_PUT, true,
		  PROBE_IN_FLIGHT, IBV_WR_RDMA_READ, INT64_MAX, false, true },
		{ "get into pool, write byte after", DFKV_OP_GET, true,
		  PROBE_IN_FLIGHT, IBV_WR_RDMA_WRITE, INT64_MAX, false, true },
		{ "put from pool, write", DFKV_OP_PUT, true, PROBE_IN_FLIGHT,
		  IBV_WR_RDMA_WRITE, 0, false, false },
		{ "get into pool, read", DFKV_OP_GET, true, PROBE_IN_FLIGHT,
		  IBV_WR_RDMA_READ, 0, false, false },
	};
	struct fake f = { 0 };
	struct addrinfo *ai = NULL;
	uint64_t windows = 0, mrs = 0;
	uint8_t *want = malloc(VAL_LEN);
	char port[8];
	bool mw, rxe = false, win;

	snprintf(port, sizeof(port), "%u", FAKE_PORT);
	f.mem = aligned_alloc(4096, FAKE_MEM);
	f.ch = rdma_create_event_channel();
	if (!want || !f.mem || !f.ch || getaddrinfo(host, port, NULL, &ai) ||
	    rdma_create_id(f.ch, &f.listen, NULL, RDMA_PS_TCP) ||
	    rdma_bind_addr(f.listen, ai->ai_addr) || rdma_listen(f.listen, 4) ||
	    sem_init(&f.returned, 0, 0)) {
		fprintf(stderr, "expose: fake node setup failed: %s\n",
			strerror(errno));
		return 1;
	}
	freeaddrinfo(ai);
	fill(want, VAL_LEN, 77);
	mw = host_has_mw(&f, &rxe);
	/* the modes that bind windows on this device */
	win = mw && (expose == DFKV_RDMA_EXPOSE_REQUEST_MW ||
		     ((expose == DFKV_RDMA_EXPOSE_REQUEST ||
		       expose == DFKV_RDMA_EXPOSE_DEFAULT) && !rxe));
	for (size_t i = 0; i < sizeof(checks) / sizeof(checks[0]); i++)
		expose_one(host, &f, &checks[i], want, win && rxe, &windows,
			   &mrs);
	fprintf(stderr, "# device memory windows: %s%s; keys: %" PRIu64
		" windows, %" PRIu64 " registrations\n", mw ? "yes" : "no",
		rxe ? " (rxe: bounded by their MR only)" : "", windows, mrs);
	if (win ? !windows : windows)
		FAIL("%" PRIu64 " windows in this mode\n", windows);
	if (!mrs)
		FAIL("no request-scoped registration (own buffers)\n");
	sem_destroy(&f.returned);
	rdma_destroy_id(f.listen);
	rdma_destroy_event_channel(f.ch);
	free(f.mem);
	free(want);
	return failures ? 1 : 0;
}

/* Set expose from its name (the Python binding's); false if unknown. */
static bool set_expose(const char *name)
{
	static const char *const names[__DFKV_RDMA_EXPOSE_MAX] = {
		[DFKV_RDMA_EXPOSE_DEFAULT] = "default",
		[DFKV_RDMA_EXPOSE_REQUEST] = "request",
		[DFKV_RDMA_EXPOSE_REQUEST_MR] = "request-mr",
		[DFKV_RDMA_EXPOSE_REQUEST_MW] = "request-mw",
		[DFKV_RDMA_EXPOSE_POOL] = "pool",
	};

	for (uint32_t i = 0; i < __DFKV_RDMA_EXPOSE_MAX; i++)
		if (names[i] && !strcmp(name, names[i])) {
			expose = i;
			return true;
		}
	fprintf(stderr, "unknown exposure mode %s\n", name);
	return false;
}

/* ---------------------------------------------------------- followers */

#define FOL_LEN		4096
#define FOL_DEPTH	32
#define FOL_MEM		(2u << 20)
#define FOL_DATA	(1u << 20)	/* in FOL_MEM: a value's buffer */
#define LEADER_SEED	61
#define FOLLOWER_SEED	62
#define OTHER_SEED	63
#define OTHER_KEY	"park-other"

static int tcp_open(const char *host)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM }, *ai;
	char port[8];
	int fd;

	snprintf(port, sizeof(port), "%u", DFKV_PORT_TCP);
	if (getaddrinfo(host, port, &hints, &ai))
		return -1;
	fd = socket(ai->ai_family, SOCK_STREAM, 0);
	if (fd >= 0 && connect(fd, ai->ai_addr, ai->ai_addrlen)) {
		close(fd);
		fd = -1;
	}
	freeaddrinfo(ai);
	return fd;
}

static int write_all(int fd, const void *buf, size_t n)
{
	const uint8_t *p = buf;

	while (n) {
		ssize_t w = send(fd, p, n, MSG_NOSIGNAL);

		if (w <= 0)
			return -1;
		p += w;
		n -= w;
	}
	return 0;
}

/* Read n bytes within timeout_ms; -1 on an error, EOF or the timeout. */
static int read_all(int fd, void *buf, size_t n, int timeout_ms)
{
	uint64_t end = now_ms() + timeout_ms;
	uint8_t *p = buf;

	while (n) {
		struct pollfd pfd = { .fd = fd, .events = POLLIN };
		ssize_t r;

		if (now_ms() >= end || poll(&pfd, 1, 100) < 0)
			return -1;
		if (!(pfd.revents & (POLLIN | POLLHUP | POLLERR)))
			continue;
		r = recv(fd, p, n, 0);
		if (r <= 0)
			return -1;
		p += r;
		n -= r;
	}
	return 0;
}

/* GET id over TCP: 0 when it holds the FOL_LEN bytes of seed. */
static int tcp_check(const char *host, const char *id, uint64_t seed)
{
	uint8_t h[DFKV_REQ_PREFIX_LEN], resp[DFKV_RESP_PREFIX_LEN];
	uint8_t want[FOL_LEN], got[FOL_LEN];
	uint64_t stored, dlen;
	int fd = tcp_open(host), st = -1;

	fill(want, FOL_LEN, seed);
	put_prefix(h, DFKV_EPOCH_TCP, DFKV_OP_GET, id, 0, 0, 0);
	if (fd < 0 || write_all(fd, h, sizeof(h)) ||
	    read_all(fd, resp, sizeof(resp), 30000))
		goto out;
	memcpy(&stored, resp + 2, 8);
	memcpy(&dlen, resp + 10, 8);
	if (resp[1] == DFKV_STATUS_OK && stored == FOL_LEN &&
	    dlen == FOL_LEN && !read_all(fd, got, FOL_LEN, 30000) &&
	    !memcmp(got, want, FOL_LEN))
		st = 0;
out:
	if (fd >= 0)
		close(fd);
	return st;
}

/*
 * Over a connection of its own: PUT id (the FOL_LEN bytes of seed) if
 * put, then GET it; 0 when it holds those bytes.
 */
static int rdma_check(const char *host, const char *id, uint64_t seed,
		      bool put)
{
	uint8_t want[FOL_LEN];
	uint64_t addr, stored = 0;
	uint32_t rkey, len = FOL_LEN;
	struct raw r;
	int st = -1;

	fill(want, FOL_LEN, seed);
	if (raw_connect_depth(&r, host, DFKV_EPOCH_RDMA, 4, 8, FOL_MEM))
		goto out;
	addr = (uintptr_t)(r.mem + FOL_DATA);
	rkey = r.mr->rkey;
	memcpy(r.mem + FOL_DATA, want, FOL_LEN);
	if (put && (raw_send(&r, 0, DFKV_OP_PUT, id, 0, 0, FOL_LEN, 1, &addr,
			     &rkey, &len) ||
		    raw_reply(&r, 30000, NULL) != DFKV_STATUS_OK))
		goto out;
	memset(r.mem + FOL_DATA, 0, FOL_LEN);
	if (raw_send(&r, 1, DFKV_OP_GET, id, 0, 0, 0, 1, &addr, &rkey, &len) ||
	    raw_reply(&r, 30000, &stored) != DFKV_STATUS_OK ||
	    stored != FOL_LEN || memcmp(r.mem + FOL_DATA, want, FOL_LEN))
		goto out;
	st = 0;
out:
	raw_close(&r);
	return st;
}

/*
 * The TCP leader of a PUT of FOL_LEN bytes of id: its prefix and 100
 * bytes, "ready", then nothing until gofile exists.  finish: then the
 * rest, and its reply must be OK.  never: then it closes; the node may
 * close the connection before (it is deleted).
 */
static int cmd_leader(const char *host, const char *id, const char *gofile,
		      bool finish)
{
	uint8_t h[DFKV_REQ_PREFIX_LEN], v[FOL_LEN], resp[DFKV_RESP_PREFIX_LEN];
	uint64_t end = now_ms() + 600000, stored;
	int fd = tcp_open(host);
	bool closed = false;

	fill(v, FOL_LEN, LEADER_SEED);
	put_prefix(h, DFKV_EPOCH_TCP, DFKV_OP_PUT, id, 0, 0, FOL_LEN);
	if (fd < 0 || write_all(fd, h, sizeof(h)) || write_all(fd, v, 100)) {
		FAIL("leader: cannot send its prefix\n");
		goto out;
	}
	printf("ready\n");
	fflush(stdout);
	while (access(gofile, F_OK)) {
		struct pollfd pfd = { .fd = fd, .events = POLLIN };

		if (now_ms() >= end) {
			FAIL("leader: no %s after 600 s\n", gofile);
			goto out;
		}
		if (poll(&pfd, 1, 10) > 0) {
			/* nothing is due before the payload is in */
			closed = recv(fd, resp, 1, 0) <= 0;
			if (!closed)
				FAIL("leader: a reply before its payload\n");
			break;
		}
	}
	if (closed)
		printf("closed by the node\n");
	if (!finish)
		goto out;
	if (closed || write_all(fd, v + 100, FOL_LEN - 100) ||
	    read_all(fd, resp, sizeof(resp), 60000)) {
		FAIL("leader: no reply to its PUT\n");
		goto out;
	}
	memcpy(&stored, resp + 2, 8);
	if (resp[1] != DFKV_STATUS_OK || stored != FOL_LEN)
		FAIL("leader: status %u stored %" PRIu64 "\n", resp[1], stored);
out:
	if (fd >= 0)
		close(fd);
	return failures ? 1 : 0;
}

struct follower_conn {
	struct raw r;
	int n;			/* its followers */
	int acked;		/* SENDs completed */
	int replies;
	int ok;			/* replies OK with stored_len FOL_LEN */
	int errors;		/* failed work completions */
	bool gone;		/* a CM event ended it */
};

static void follower_poll(struct follower_conn *c)
{
	struct ibv_wc wc[16];
	int n;

	while ((n = ibv_poll_cq(c->r.cq, 16, wc)) > 0) {
		for (int i = 0; i < n; i++) {
			const uint8_t *b = c->r.mem + wc[i].wr_id * RAW_SLOT;
			uint64_t stored;

			if (wc[i].status != IBV_WC_SUCCESS) {
				c->errors++;
			} else if (wc[i].opcode != IBV_WC_RECV) {
				c->acked++;
			} else {
				c->replies++;
				memcpy(&stored, b + 2, 8);
				c->ok += b[1] == DFKV_STATUS_OK &&
					 stored == FOL_LEN;
			}
		}
	}
	if (n < 0)
		c->errors++;
}

/* Whether the connection of c got a CM event: established, its end. */
static bool follower_gone(struct follower_conn *c)
{
	struct pollfd pfd = { .fd = c->r.ch->fd, .events = POLLIN };
	struct rdma_cm_event *ev;

	if (!c->gone && poll(&pfd, 1, 0) == 1 &&
	    !rdma_get_cm_event(c->r.ch, &ev)) {
		rdma_ack_cm_event(ev);
		c->gone = true;
	}
	return c->gone;
}

/* Poll every connection; the sum of what sel picks of each. */
static int followers_poll(struct follower_conn *fc, int nconn,
			  int (*sel)(struct follower_conn *c))
{
	int sum = 0;

	for (int i = 0; i < nconn; i++) {
		follower_poll(&fc[i]);
		sum += sel(&fc[i]);
	}
	return sum;
}

static int sel_acked(struct follower_conn *c)
{
	return c->acked;
}

static int sel_replies(struct follower_conn *c)
{
	return c->replies;
}

static int sel_gone(struct follower_conn *c)
{
	return follower_gone(c);
}

static int sel_ok(struct follower_conn *c)
{
	return c->ok;
}

static int sel_errors(struct follower_conn *c)
{
	return c->errors;
}

/*
 * n RDMA PUTs of FOL_LEN bytes of id, all in flight at once over
 * connections of depth FOL_DEPTH, while a leader receives id: once the
 * node has them all, an unrelated block is read over RDMA and over TCP
 * and "sent" printed; no follower is answered before gofile exists.
 * finish: then each is answered OK with stored_len FOL_LEN, and id holds
 * the leader's bytes.  gone (no gofile): every connection ends (the
 * node or its device goes away) with no follower answered OK.
 */
static int cmd_followers(const char *host, const char *id, int n,
			 const char *gofile)
{
	int nconn = (n + FOL_DEPTH - 1) / FOL_DEPTH, k = 0;
	struct follower_conn *fc = calloc(nconn, sizeof(*fc));
	bool finish = gofile != NULL, go = false;
	uint64_t end;

	if (!fc || rdma_check(host, OTHER_KEY, OTHER_SEED, true)) {
		FAIL("followers: cannot store %s\n", OTHER_KEY);
		goto out;
	}
	for (int i = 0; i < nconn; i++) {
		struct follower_conn *c = &fc[i];
		uint64_t addr;
		uint32_t rkey, len = FOL_LEN;

		c->n = i < nconn - 1 ? FOL_DEPTH : n - i * FOL_DEPTH;
		if (raw_connect_depth(&c->r, host, DFKV_EPOCH_RDMA, FOL_DEPTH,
				      FOL_DEPTH, FOL_MEM) ||
		    c->r.depth < (uint32_t)c->n) {
			FAIL("followers: connection %d (depth %u)\n", i,
			     c->r.depth);
			goto out;
		}
		addr = (uintptr_t)(c->r.mem + FOL_DATA);
		rkey = c->r.mr->rkey;
		fill(c->r.mem + FOL_DATA, FOL_LEN, FOLLOWER_SEED);
		for (int s = 0; s < c->n; s++)
			if (raw_send(&c->r, s, DFKV_OP_PUT, id, 0, 0, FOL_LEN,
				     1, &addr, &rkey, &len)) {
				FAIL("followers: send %d.%d\n", i, s);
				goto out;
			}
	}
	/* the node has every request once its SENDs are acknowledged */
	end = now_ms() + 60000;
	while ((k = followers_poll(fc, nconn, sel_acked)) < n &&
	       now_ms() < end)
		usleep(1000);
	if (k < n || followers_poll(fc, nconn, sel_errors)) {
		FAIL("followers: %d of %d requests sent\n", k, n);
		goto out;
	}
	if (rdma_check(host, OTHER_KEY, OTHER_SEED, false))
		FAIL("followers: %s not served over RDMA\n", OTHER_KEY);
	if (tcp_check(host, OTHER_KEY, OTHER_SEED))
		FAIL("followers: %s not served over TCP\n", OTHER_KEY);
	printf("sent\n");
	fflush(stdout);
	/*
	 * Replies seen before gofile was found missing came before the
	 * leader could finish; once it exists, they may come.
	 */
	end = now_ms() + 600000;
	for (;;) {
		if (finish) {
			k = followers_poll(fc, nconn, sel_replies);
			go = !access(gofile, F_OK);
			if (go || k)
				break;
		} else if (followers_poll(fc, nconn, sel_gone) == nconn) {
			break;
		}
		if (now_ms() >= end) {
			FAIL("followers: nothing happened in 600 s\n");
			goto out;
		}
		usleep(10000);
	}
	if (!finish) {
		k = followers_poll(fc, nconn, sel_ok);
		if (k)
			FAIL("followers: %d answered OK without a leader\n", k);
		goto out;
	}
	if (!go) {
		FAIL("followers: %d answered before their leader finished\n",
		     k);
		goto out;
	}
	end = now_ms() + 120000;
	while ((k = followers_poll(fc, nconn, sel_replies)) < n &&
	       now_ms() < end)
		usleep(1000);
	if (followers_poll(fc, nconn, sel_ok) != n ||
	    followers_poll(fc, nconn, sel_errors))
		FAIL("followers: %d of %d answered, %d OK with %u bytes\n", k,
		     n, followers_poll(fc, nconn, sel_ok), FOL_LEN);
	if (rdma_check(host, id, LEADER_SEED, false) ||
	    tcp_check(host, id, LEADER_SEED))
		FAIL("followers: %s does not hold the leader's bytes\n", id);
out:
	for (int i = 0; fc && i < nconn; i++)
		raw_close(&fc[i].r);
	free(fc);
	return failures ? 1 : 0;
}

int main(int argc, char **argv)
{
	if (argc >= 4 && !strcmp(argv[1], "expose")) {
		rdma_port = FAKE_PORT;
		return set_expose(argv[3]) ? cmd_expose(argv[2]) : 2;
	}
	if (argc >= 5 && !strcmp(argv[1], "ops") && !set_expose(argv[4]))
		return 2;
	if (argc >= 4 && !strcmp(argv[1], "ops"))
		return cmd_ops(argv[2], strtoull(argv[3], NULL, 0));
	if (argc >= 4 && !strcmp(argv[1], "big"))
		return cmd_big(argv[2], strtoull(argv[3], NULL, 0));
	if (argc >= 3 && !strcmp(argv[1], "nodev"))
		return cmd_nodev(argv[2]);
	if (argc >= 4 && !strcmp(argv[1], "raw"))
		return cmd_raw(argv[2], argv[3]);
	if (argc >= 4 && !strcmp(argv[1], "hold"))
		return cmd_hold(argv[2], (unsigned int)atoi(argv[3]));
	if (argc >= 5 && !strcmp(argv[1], "idle"))
		return cmd_idle(argv[2], atoi(argv[3]),
				(unsigned int)atoi(argv[4]));
	if (argc >= 3 && !strcmp(argv[1], "limit"))
		return cmd_limit(argv[2]);
	if (argc >= 5 && !strcmp(argv[1], "recvcap"))
		return cmd_recvcap(argv[2], argv[3], argv[4]);
	if (argc >= 5 && !strcmp(argv[1], "stall"))
		return cmd_stall(argv[2], argv[3], (unsigned int)atoi(argv[4]));
	if (argc >= 6 && !strcmp(argv[1], "stages"))
		return cmd_stages(argv[2], argv[3], argv[4], argv[5]);
	if (argc >= 3 && !strcmp(argv[1], "auth"))
		return cmd_auth(argv[2]);
	if (argc >= 6 && !strcmp(argv[1], "leader"))
		return cmd_leader(argv[2], argv[3], argv[4],
				  !strcmp(argv[5], "finish"));
	if (argc >= 7 && !strcmp(argv[1], "followers") &&
	    !strcmp(argv[5], "finish"))
		return cmd_followers(argv[2], argv[3], atoi(argv[4]), argv[6]);
	if (argc >= 6 && !strcmp(argv[1], "followers") &&
	    !strcmp(argv[5], "gone"))
		return cmd_followers(argv[2], argv[3], atoi(argv[4]), NULL);
	fprintf(stderr, "usage: %s ops HOST MAXSIZE [EXPOSE] | big HOST SIZE | "
		"nodev HOST | raw HOST CASE | hold HOST SECONDS | "
		"idle HOST NREQ SECONDS | limit HOST | "
		"recvcap HOST SRC2 GOFILE | stall HOST GOFILE SECONDS | "
		"stages HOST SRC_H SRC_OK GOFILE | "
		"expose HOST EXPOSE | "
		"leader HOST ID GOFILE finish|never | "
		"followers HOST ID N finish GOFILE | "
		"followers HOST ID N gone\n", argv[0]);
	return 2;
}
