// SPDX-License-Identifier: GPL-2.0
/*
 * Unit tests of the libdfkv client over TCP (SPEC.md sections 1, 2): the
 * in-test epoch-6 nodes of fake_node.c (loopback only, thread per
 * connection, bounded), three of them in the "cluster" fixture of
 * fake_cluster.h, stand in for dfkv nodes.  Covers the scalar, batch and keyed
 * operations and their range/lease rules, routing by the ring, pipelining
 * over the connection pool, peer health (a dead, stalled or lying node
 * turns reads into misses and writes into dropped writes, never a hang),
 * recovery, the options/members validation of dfkv_open_v2, the
 * tenant handshake of SPEC.md 9 (HELLO, AUTH, FORBIDDEN, max_value_bytes),
 * TOUCH walks on the wire, and the asynchronous batches (thousands of
 * requests in flight, reaping on the eventfd, cancel, close with work
 * outstanding, a dead node) leak-free under the sanitizers.
 */
#define _GNU_SOURCE
#include <poll.h>
#include <pthread.h>
#include <sanitizer/lsan_interface.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* kselftest_harness.h (6.1) is not -Wextra clean */
#pragma GCC diagnostic ignored "-Wunused-parameter"
#pragma GCC diagnostic ignored "-Wsign-compare"
#pragma GCC diagnostic ignored "-Wmisleading-indentation"
#include "kselftest_harness.h"
#include "dfkv.h"
#include "util.h"
#include "wire.h"
#include "../client_async.h"
#include "../client_stats.h"
#include "fake_cluster.h"

static int node_index(const char *name)
{
	for (int i = 0; i < NSRV; i++)
		if (!strcmp(name, NAMES[i]))
			return i;
	return -1;
}

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* -------------------------------------------------------------- tests */

TEST_F(cluster, put_get_spread_matches_ring)
{
	enum { N = 300 };
	static uint8_t val[70000], got[70000];
	uint64_t expect[NSRV] = { 0 }, len, stored;
	char key[64];

	for (int i = 0; i < N; i++) {
		size_t vl = 1 + (size_t)(i * 977) % sizeof(val);
		const char *m;
		int k = snprintf(key, sizeof(key), "block-%d", i);

		fill(val, vl, (unsigned int)i);
		ASSERT_EQ(0, dfkv_put(self->c, key, (uint64_t)k, val, vl));
		ASSERT_EQ(0, dfkv_locate(self->c, key, (uint64_t)k, &m, NULL));
		expect[node_index(m)]++;
	}
	for (int i = 0; i < NSRV; i++) {
		EXPECT_EQ(expect[i], self->srv[i].nobjs);
		EXPECT_GT(self->srv[i].nobjs, N / 10);
	}
	for (int i = 0; i < N; i++) {
		size_t vl = 1 + (size_t)(i * 977) % sizeof(val);
		int k = snprintf(key, sizeof(key), "block-%d", i);

		fill(val, vl, (unsigned int)i);
		ASSERT_EQ(0, dfkv_get(self->c, key, (uint64_t)k, got, sizeof(got), &len));
		ASSERT_EQ(vl, len);
		ASSERT_EQ(0, memcmp(val, got, vl));
		ASSERT_EQ(0, dfkv_exist(self->c, key, (uint64_t)k, &stored));
		ASSERT_EQ(vl, stored);
	}
	ASSERT_EQ(0, dfkv_remove(self->c, "block-1", 7));
	EXPECT_EQ(DFKV_STATUS_NOT_FOUND, dfkv_exist(self->c, "block-1", 7, &stored));
	EXPECT_EQ(0, stored);
	EXPECT_EQ(DFKV_STATUS_NOT_FOUND, dfkv_get(self->c, "block-1", 7, got, 10, &len));
	EXPECT_EQ(0, dfkv_remove(self->c, "block-1", 7));	/* absent: OK */
}

TEST_F(cluster, get_auto_and_range_rules)
{
	uint8_t v[100], b[200];
	uint64_t len = 7, stored = 7;

	fill(v, sizeof(v), 3);
	ASSERT_EQ(0, dfkv_put(self->c, "k", 1, v, sizeof(v)));
	/* get-auto: any capacity >= stored length */
	ASSERT_EQ(0, dfkv_get(self->c, "k", 1, b, 100, &len));
	EXPECT_EQ(100, len);
	ASSERT_EQ(0, dfkv_get(self->c, "k", 1, b, 200, &len));
	EXPECT_EQ(100, len);
	EXPECT_EQ(0, memcmp(v, b, 100));
	EXPECT_EQ(DFKV_STATUS_TOO_LARGE, dfkv_get(self->c, "k", 1, b, 99, &len));
	EXPECT_EQ(100, len);		/* tells what to ask for */
	/* ranges */
	ASSERT_EQ(0, dfkv_get_range(self->c, "k", 1, 10, 5, b, 5, &len, &stored));
	EXPECT_EQ(5, len);
	EXPECT_EQ(100, stored);
	EXPECT_EQ(0, memcmp(v + 10, b, 5));
	ASSERT_EQ(0, dfkv_get_range(self->c, "k", 1, 90, 0, b, 200, &len, &stored));
	EXPECT_EQ(10, len);		/* length 0: the remainder */
	ASSERT_EQ(0, dfkv_get_range(self->c, "k", 1, 95, 1000, b, 200, &len, NULL));
	EXPECT_EQ(5, len);		/* oversized length clamped */
	ASSERT_EQ(0, dfkv_get_range(self->c, "k", 1, 100, 0, b, 200, &len, &stored));
	EXPECT_EQ(0, len);		/* offset == stored: zero bytes */
	EXPECT_EQ(100, stored);
	EXPECT_EQ(DFKV_STATUS_INVALID,
		  dfkv_get_range(self->c, "k", 1, 101, 0, b, 200, &len, &stored));
	EXPECT_EQ(DFKV_STATUS_TOO_LARGE,
		  dfkv_get_range(self->c, "k", 1, 0, 50, b, 49, &len, &stored));
	EXPECT_EQ(0, len);
	EXPECT_EQ(100, stored);
	ASSERT_EQ(0, dfkv_get_range(self->c, "k", 1, 60, 0, b, 40, &len, NULL));
	EXPECT_EQ(40, len);		/* remainder exactly fits */
	/* immutability: a second PUT is OK and keeps the first bytes */
	memset(b, 0xee, sizeof(b));
	ASSERT_EQ(0, dfkv_put(self->c, "k", 1, b, 10));
	ASSERT_EQ(0, dfkv_get(self->c, "k", 1, b, sizeof(b), &len));
	EXPECT_EQ(100, len);
	EXPECT_EQ(0, memcmp(v, b, 100));
}

TEST_F(cluster, fail_closed_arguments)
{
	uint8_t b[8];
	uint64_t len = 9;

	EXPECT_EQ(DFKV_STATUS_INVALID, dfkv_put(self->c, "k", 1, NULL, 0));
	EXPECT_EQ(DFKV_STATUS_INVALID, dfkv_put(self->c, "k", 1, "", 0));
	EXPECT_EQ(DFKV_E_INVAL, dfkv_put(self->c, "k", 1, NULL, 5));
	EXPECT_EQ(DFKV_E_INVAL, dfkv_put(self->c, NULL, 1, "v", 1));
	EXPECT_EQ(DFKV_E_INVAL, dfkv_put(self->c, "k", 0, "v", 1));
	EXPECT_EQ(DFKV_E_INVAL, dfkv_put(NULL, "k", 1, "v", 1));
	EXPECT_EQ(DFKV_E_INVAL, dfkv_get(self->c, "", 0, b, sizeof(b), &len));
	EXPECT_EQ(0, len);
	EXPECT_EQ(DFKV_E_INVAL, dfkv_get(self->c, "k", 1, b, 0, &len));
	EXPECT_EQ(DFKV_E_INVAL, dfkv_get(self->c, "k", 1, NULL, 8, &len));
	EXPECT_EQ(DFKV_E_INVAL, dfkv_exist(self->c, NULL, 0, &len));
	EXPECT_EQ(DFKV_E_INVAL, dfkv_remove(self->c, "k", 0));
	EXPECT_EQ(0, self->srv[0].requests + self->srv[1].requests +
		  self->srv[2].requests);
	/* embedded NUL bytes are identity bytes */
	ASSERT_EQ(0, dfkv_put(self->c, "a\0b", 3, "1", 1));
	EXPECT_EQ(DFKV_STATUS_NOT_FOUND, dfkv_exist(self->c, "a\0c", 3, &len));
	EXPECT_EQ(DFKV_STATUS_NOT_FOUND, dfkv_exist(self->c, "a", 1, &len));
	EXPECT_EQ(0, dfkv_exist(self->c, "a\0b", 3, &len));
}

TEST_F(cluster, batches)
{
	enum { N = 400 };
	static char keybuf[N][32];
	static uint8_t vals[N][512], bufs[N][512];
	const void *keys[N], *vp[N];
	void *bp[N];
	uint64_t kl[N], vl[N], caps[N], lens[N];
	int st[N];

	for (int i = 0; i < N; i++) {
		kl[i] = (uint64_t)snprintf(keybuf[i], 32, "batch-%d", i);
		keys[i] = keybuf[i];
		vl[i] = 1 + (uint64_t)(i * 13) % 512;
		fill(vals[i], vl[i], (unsigned int)i + 1000);
		vp[i] = vals[i];
		bp[i] = bufs[i];
		caps[i] = 512;
	}
	kl[5] = 0;			/* bad key: that slot only */
	vl[6] = 0;			/* zero-byte value: INVALID */
	vp[7] = NULL;
	vl[7] = 0;
	EXPECT_EQ(N - 3, dfkv_put_batch(self->c, N, keys, kl, vp, vl, st));
	for (int i = 0; i < N; i++)
		if (st[i] && i != 5 && i != 6 && i != 7)
			TH_LOG("put %d: %d", i, st[i]);
	EXPECT_EQ(DFKV_E_INVAL, st[5]);
	EXPECT_EQ(DFKV_STATUS_INVALID, st[6]);
	EXPECT_EQ(DFKV_STATUS_INVALID, st[7]);
	EXPECT_EQ(0, st[8]);
	caps[9] = vl[9] - 1;		/* too small */
	memset(lens, 0xff, sizeof(lens));
	EXPECT_EQ(N - 4, dfkv_get_batch(self->c, N, keys, kl, bp, caps, lens, st));
	EXPECT_EQ(DFKV_E_INVAL, st[5]);
	EXPECT_EQ(DFKV_STATUS_NOT_FOUND, st[6]);
	EXPECT_EQ(0, lens[6]);
	EXPECT_EQ(DFKV_STATUS_TOO_LARGE, st[9]);
	EXPECT_EQ(vl[9], lens[9]);
	for (int i = 10; i < N; i++) {
		ASSERT_EQ(0, st[i]);
		ASSERT_EQ(vl[i], lens[i]);
		ASSERT_EQ(0, memcmp(vals[i], bufs[i], vl[i]));
	}
	EXPECT_EQ(N - 3, dfkv_exist_batch(self->c, N, keys, kl, lens, st));
	EXPECT_EQ(vl[100], lens[100]);
	EXPECT_EQ(N - 1, dfkv_remove_batch(self->c, N, keys, kl, st));
	EXPECT_EQ(0, dfkv_exist_batch(self->c, N, keys, kl, lens, st));
	EXPECT_EQ(DFKV_STATUS_NOT_FOUND, st[100]);
	/* bad arrays: nothing runs, every slot says so */
	EXPECT_EQ(DFKV_E_INVAL, dfkv_put_batch(self->c, N, keys, kl, NULL, vl, st));
	EXPECT_EQ(DFKV_E_NOT_RUN, st[0]);
	EXPECT_EQ(DFKV_E_INVAL, dfkv_get_batch(self->c, 0, keys, kl, bp, caps, lens, st));
	EXPECT_EQ(DFKV_E_INVAL, dfkv_remove_batch(self->c, N, keys, kl, NULL));
}

TEST_F(cluster, probe_touch_lease)
{
	const void *keys[6] = { "p0", "p1", "p2", "p3", "p4", "p5" };
	uint64_t kl[6] = { 2, 2, 2, 2, 2, 2 }, sl[6];
	struct dfkv_lease *l;
	size_t hits = 9;

	/* present: p0 p1 p2 p4 p5; absent: p3 */
	for (int i = 0; i < 6; i++)
		if (i != 3)
			ASSERT_EQ(0, dfkv_put(self->c, keys[i], 2, "vvvvvvvvvv",
					      (uint64_t)i + 1));
	ASSERT_EQ(0, dfkv_probe(self->c, keys, kl, 6, sl));
	for (int i = 0; i < 6; i++)
		EXPECT_EQ(i == 3 ? 0 : (uint64_t)i + 1, sl[i]);
	ASSERT_EQ(0, dfkv_touch(self->c, keys, kl, 6));
	ASSERT_EQ(0, dfkv_lease(self->c, keys, kl, 6, 5000, sl, &hits, &l));
	ASSERT_NE(NULL, l);
	EXPECT_EQ(3, hits);		/* stops at the first miss */
	EXPECT_EQ(1, sl[0]);
	EXPECT_EQ(3, sl[2]);
	EXPECT_EQ(0, sl[4]);		/* after the miss: not reported */
	EXPECT_EQ(0, dfkv_release(self->c, l));
	/* a lease left unreleased is dropped by dfkv_close (no leak) */
	ASSERT_EQ(0, dfkv_lease(self->c, keys, kl, 2, 0, sl, &hits, &l));
	EXPECT_EQ(2, hits);
	EXPECT_EQ(DFKV_E_INVAL, dfkv_lease(self->c, keys, kl, 2,
					   DFKV_LEASE_TTL_MAX_MS + 1, sl, &hits, &l));
	EXPECT_EQ(NULL, l);
	EXPECT_EQ(DFKV_E_INVAL, dfkv_probe(self->c, keys, kl, 0, sl));
	kl[1] = 0;
	EXPECT_EQ(DFKV_E_INVAL, dfkv_probe(self->c, keys, kl, 6, sl));
	EXPECT_EQ(0, sl[0]);
}

TEST_F(cluster, dead_node_is_a_miss_then_recovers)
{
	char key[32], snap[8192];
	uint64_t len, t0;
	int dead = 1, k, n_dead = 0, n_live = 0;
	uint8_t b[16];
	const char *m;

	for (int i = 0; i < 60; i++) {
		k = snprintf(key, sizeof(key), "h-%d", i);
		ASSERT_EQ(0, dfkv_put(self->c, key, (uint64_t)k, "value", 5));
	}
	srv_stop(&self->srv[dead]);
	t0 = now_ms();
	for (int i = 0; i < 60; i++) {
		k = snprintf(key, sizeof(key), "h-%d", i);
		ASSERT_EQ(0, dfkv_locate(self->c, key, (uint64_t)k, &m, NULL));
		if (node_index(m) == dead) {
			EXPECT_EQ(DFKV_STATUS_NOT_FOUND,
				  dfkv_get(self->c, key, (uint64_t)k, b, sizeof(b), &len));
			EXPECT_EQ(DFKV_E_UNAVAILABLE,
				  dfkv_put(self->c, key, (uint64_t)k, "v", 1));
			n_dead++;
		} else {
			EXPECT_EQ(0, dfkv_get(self->c, key, (uint64_t)k, b, sizeof(b), &len));
			EXPECT_EQ(5, len);
			n_live++;
		}
	}
	EXPECT_LT(now_ms() - t0, 1500);	/* no hang */
	EXPECT_GT(n_dead, 0);
	EXPECT_GT(n_live, 0);
	ASSERT_EQ(0, dfkv_stats_snapshot(self->c, snap, sizeof(snap), &len));
	EXPECT_NE(NULL, strstr(snap, "dfkv_client_members{state=\"cooling_down\"} 1"));
	EXPECT_EQ(NULL, strstr(snap, "dfkv_client_dropped_writes_total 0\n"));
	EXPECT_EQ(NULL, strstr(snap, "dfkv_client_degraded_reads_total 0\n"));
	/* the node comes back on its address: served again after cooldown */
	ASSERT_EQ(0, srv_start(&self->srv[dead], self->srv[dead].port));
	usleep(400 * 1000);
	for (int i = 0; i < 60; i++) {
		k = snprintf(key, sizeof(key), "h-%d", i);
		ASSERT_EQ(0, dfkv_locate(self->c, key, (uint64_t)k, &m, NULL));
		if (node_index(m) == dead) {
			EXPECT_EQ(0, dfkv_get(self->c, key, (uint64_t)k, b, sizeof(b), &len));
			break;
		}
	}
}

static void hostile(struct __test_metadata *_metadata,
		    FIXTURE_DATA(cluster) *self, int mode, int miss_status)
{
	char key[32];
	uint64_t len, t0;
	uint8_t b[16];
	const char *m;
	int k = 0, i;

	for (i = 0; i < 100; i++) {
		k = snprintf(key, sizeof(key), "x-%d", i);
		ASSERT_EQ(0, dfkv_put(self->c, key, (uint64_t)k, "value", 5));
		ASSERT_EQ(0, dfkv_locate(self->c, key, (uint64_t)k, &m, NULL));
		if (node_index(m) == 0)
			break;
	}
	ASSERT_LT(i, 100);
	self->srv[0].mode = mode;
	t0 = now_ms();
	EXPECT_EQ(miss_status, dfkv_get(self->c, key, (uint64_t)k, b, sizeof(b), &len));
	EXPECT_LT(now_ms() - t0, 1500);
	EXPECT_EQ(0, len);
	/* the node is skipped during its cooldown: no I/O, immediate miss */
	t0 = now_ms();
	EXPECT_EQ(DFKV_STATUS_NOT_FOUND,
		  dfkv_exist(self->c, key, (uint64_t)k, &len));
	EXPECT_LT(now_ms() - t0, 100);
	self->srv[0].mode = SRV_OK;
	usleep(350 * 1000);
	EXPECT_EQ(0, dfkv_get(self->c, key, (uint64_t)k, b, sizeof(b), &len));
	EXPECT_EQ(5, len);
}

TEST_F(cluster, hostile_bad_epoch_reply)
{
	hostile(_metadata, self, SRV_BAD_EPOCH, DFKV_STATUS_NOT_FOUND);
}

TEST_F(cluster, hostile_reply_longer_than_asked)
{
	hostile(_metadata, self, SRV_LONG_DATA, DFKV_STATUS_NOT_FOUND);
}

TEST_F(cluster, hostile_connection_closed)
{
	hostile(_metadata, self, SRV_CLOSE, DFKV_STATUS_NOT_FOUND);
}

TEST_F(cluster, stalled_node_times_out)
{
	dfkv_close(self->c);
	ASSERT_EQ(0, open_client(self, 300, 300));
	hostile(_metadata, self, SRV_STALL, DFKV_STATUS_NOT_FOUND);
}

struct worker {
	struct dfkv_client *c;
	int id, failures;
};

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	uint8_t v[3000], b[3000];
	char key[32];

	for (int i = 0; i < 100; i++) {
		int k = snprintf(key, sizeof(key), "t%d-%d", w->id, i);
		uint64_t len = 0;

		fill(v, sizeof(v), (unsigned int)(w->id * 1000 + i));
		if (dfkv_put(w->c, key, (uint64_t)k, v, sizeof(v)) ||
		    dfkv_get(w->c, key, (uint64_t)k, b, sizeof(b), &len) ||
		    len != sizeof(v) || memcmp(v, b, sizeof(v)))
			w->failures++;
	}
	return NULL;
}

/* ------------------------------------------------------ async batches */

/*
 * Close the client and check that nothing of it leaked (the harness's
 * test processes _exit, so LeakSanitizer is asked here).
 */
#define CLOSE_LEAK_FREE(self) do {					\
	dfkv_close((self)->c);						\
	(self)->c = NULL;						\
	EXPECT_EQ(0, __lsan_do_recoverable_leak_check());		\
} while (0)

TEST_F(cluster, async_thousands_in_flight)
{
	enum { NB = 8, NK = 1000 };
	struct dfkv_batch *b[NB], *got[NB + 4];
	struct async_set a;
	struct pollfd p;

	ASSERT_EQ(0, async_set_init(&a, "af", NB * NK, 64));
	/* every batch is reaped once, each with its results */
	ASSERT_EQ(0, async_run_all(self->c, DFKV_OP_PUT, &a, NB, NK));
	EXPECT_EQ(0, dfkv_reap(self->c, got, NB));
	p = (struct pollfd){ .fd = dfkv_batch_fd(self->c), .events = POLLIN };
	EXPECT_EQ(0, poll(&p, 1, 0));	/* nothing left: not readable */

	/* all of them back, scattered into two segments each */
	async_set_outs(&a);
	for (size_t i = 0; i < NB; i++) {
		b[i] = async_submit(self->c, DFKV_OP_GET, &a, i * NK, NK, i);
		ASSERT_NE(NULL, b[i]);
	}
	for (size_t i = 0; i < NB; i++) {
		ASSERT_EQ(0, dfkv_batch_wait(b[i], -1));
		EXPECT_TRUE(dfkv_batch_done(b[i]));
		for (size_t k = 0; k < NK; k++) {
			uint64_t len = 0;
			int st;

			ASSERT_EQ(0, dfkv_batch_result(b[i], k, &st, &len));
			ASSERT_EQ(DFKV_STATUS_OK, st);
			ASSERT_EQ(64, len);
		}
	}
	EXPECT_EQ(0, memcmp(a.vals, a.outs, (size_t)NB * NK * 64));
	EXPECT_EQ(DFKV_E_INVAL, dfkv_batch_result(b[0], NK, &(int){ 0 }, NULL));
	/* waited for, still reaped once */
	ASSERT_EQ(NB, async_reap(self->c, got, NB));
	for (size_t i = 0; i < NB; i++)
		dfkv_batch_free(got[i]);
	async_set_free(&a);
	CLOSE_LEAK_FREE(self);
}

TEST_F(cluster, async_keyed_and_exist)
{
	const void *keys[4] = { "k0", "k1", "nope", "k2" };
	uint64_t kl[4] = { 2, 2, 4, 2 }, len;
	struct dfkv_batch_desc d = { .size = sizeof(d), .n = 4, .keys = keys,
				     .key_lens = kl };
	struct dfkv_batch *pr, *ls, *tw, *ex, *rl, *got[4], *one;
	struct dfkv_lease *l;
	int st;

	for (int i = 0; i < 4; i++)
		if (i != 2)
			ASSERT_EQ(0, dfkv_put(self->c, keys[i], kl[i], "value", 5));
	d.op = DFKV_OP_PROBE;
	ASSERT_EQ(0, dfkv_submit(self->c, &d, &pr));
	d.op = DFKV_OP_LEASE;
	d.ttl_ms = 5000;
	ASSERT_EQ(0, dfkv_submit(self->c, &d, &ls));
	d.op = DFKV_OP_TOUCH;
	d.ttl_ms = 0;
	d.flags = DFKV_TOUCH_REVERSE;
	ASSERT_EQ(0, dfkv_submit(self->c, &d, &tw));
	d.op = DFKV_OP_EXIST;
	d.flags = 0;
	ASSERT_EQ(0, dfkv_submit(self->c, &d, &ex));
	ASSERT_EQ(4, async_reap(self->c, got, 4));

	EXPECT_EQ(0, dfkv_batch_status(pr));
	EXPECT_EQ(2, dfkv_batch_hits(pr));
	ASSERT_EQ(0, dfkv_batch_result(pr, 3, &st, &len));
	EXPECT_EQ(5, len);
	ASSERT_EQ(0, dfkv_batch_result(pr, 2, &st, &len));
	EXPECT_EQ(0, len);
	EXPECT_EQ(NULL, dfkv_batch_lease(pr));

	EXPECT_EQ(0, dfkv_batch_status(ls));
	EXPECT_EQ(2, dfkv_batch_hits(ls));
	ASSERT_EQ(0, dfkv_batch_result(ls, 1, &st, &len));
	EXPECT_EQ(5, len);
	l = dfkv_batch_lease(ls);
	ASSERT_NE(NULL, l);
	EXPECT_EQ(NULL, dfkv_batch_lease(ls));	/* handed over once */
	/* released by a batch of its own (the handle is consumed) */
	ASSERT_EQ(0, dfkv_submit_release(self->c, l, 7, &rl));
	ASSERT_EQ(0, dfkv_batch_wait(rl, -1));
	EXPECT_EQ(0, dfkv_batch_status(rl));
	EXPECT_EQ(DFKV_OP_RELEASE, dfkv_batch_op(rl));
	EXPECT_EQ(7, dfkv_batch_user(rl));
	ASSERT_EQ(1, dfkv_reap(self->c, &one, 1));
	EXPECT_EQ(rl, one);
	dfkv_batch_free(rl);

	EXPECT_EQ(0, dfkv_batch_status(tw));
	{
		uint64_t rev = 0, fwd = 0;

		for (int i = 0; i < NSRV; i++) {
			rev += self->srv[i].touch_walks[1];
			fwd += self->srv[i].touch_walks[0];
		}
		EXPECT_GE(rev, 1);
		EXPECT_EQ(0, fwd);
	}
	for (int i = 0; i < 4; i++) {
		ASSERT_EQ(0, dfkv_batch_result(ex, (uint64_t)i, &st, &len));
		EXPECT_EQ(i == 2 ? DFKV_STATUS_NOT_FOUND : DFKV_STATUS_OK, st);
		EXPECT_EQ(i == 2 ? 0 : 5, len);
	}
	for (int i = 0; i < 4; i++)
		dfkv_batch_free(got[i]);
	CLOSE_LEAK_FREE(self);
}

TEST_F(cluster, touch_walks_on_the_wire)
{
	const void *keys[5] = { "w0", "w1", "w2", "w3", "w4" };
	uint64_t kl[5] = { 2, 2, 2, 2, 2 }, walks[3] = { 0 };

	ASSERT_EQ(0, dfkv_touch(self->c, keys, kl, 5));
	ASSERT_EQ(0, dfkv_touch_walk(self->c, keys, kl, 5, 0));
	ASSERT_EQ(0, dfkv_touch_walk(self->c, keys, kl, 5,
				     DFKV_TOUCH_REVERSE));
	EXPECT_EQ(DFKV_E_INVAL, dfkv_touch_walk(self->c, keys, kl, 5, 2));
	for (int i = 0; i < NSRV; i++)
		for (int w = 0; w < 3; w++)
			walks[w] += self->srv[i].touch_walks[w];
	/* one request per node touched, each walk as asked */
	EXPECT_GE(walks[0], 2);
	EXPECT_EQ(walks[0], 2 * walks[1]);
	EXPECT_EQ(0, walks[2]);
}

TEST_F(cluster, async_arguments)
{
	const void *keys[1] = { "k" };
	uint64_t kl[1] = { 1 };
	struct dfkv_batch_desc d = { .size = sizeof(d), .op = DFKV_OP_PUT,
				     .n = 1, .keys = keys, .key_lens = kl };
	struct dfkv_batch *b = (void *)1;

	EXPECT_EQ(DFKV_E_INVAL, dfkv_submit(self->c, &d, &b));	/* no iovs */
	EXPECT_EQ(NULL, b);
	d.op = DFKV_OP_REMOVE;
	EXPECT_EQ(DFKV_E_INVAL, dfkv_submit(self->c, &d, &b));
	d.op = DFKV_OP_EXIST;
	d.flags = DFKV_TOUCH_REVERSE;
	EXPECT_EQ(DFKV_E_INVAL, dfkv_submit(self->c, &d, &b));
	d.flags = 0;
	d.n = 0;
	EXPECT_EQ(DFKV_E_INVAL, dfkv_submit(self->c, &d, &b));
	d.op = DFKV_OP_PROBE;
	d.n = DFKV_KEYS_MAX + 1;
	EXPECT_EQ(DFKV_E_INVAL, dfkv_submit(self->c, &d, &b));
	d.op = DFKV_OP_LEASE;
	d.n = 1;
	d.ttl_ms = DFKV_LEASE_TTL_MAX_MS + 1;
	EXPECT_EQ(DFKV_E_INVAL, dfkv_submit(self->c, &d, &b));
	d.ttl_ms = 0;
	d.size = 8;
	EXPECT_EQ(DFKV_E_INVAL, dfkv_submit(self->c, &d, &b));
	EXPECT_EQ(DFKV_E_INVAL, dfkv_submit(NULL, &d, &b));
	EXPECT_EQ(DFKV_E_INVAL, dfkv_submit_release(self->c, NULL, 0, &b));
	EXPECT_EQ(DFKV_E_INVAL, dfkv_reap(self->c, NULL, 1));
	EXPECT_EQ(DFKV_E_INVAL, dfkv_batch_wait(NULL, 0));
	EXPECT_EQ(DFKV_E_INVAL, dfkv_batch_status(NULL));
	EXPECT_STREQ("cancelled", dfkv_strerror(DFKV_E_CANCELLED));
	/* a key that cannot be routed fails its slot, the rest run */
	{
		const void *k2[2] = { "", "fine" };
		uint64_t l2[2] = { 0, 4 };
		int st;

		d = (struct dfkv_batch_desc){ .size = sizeof(d),
					      .op = DFKV_OP_EXIST, .n = 2,
					      .keys = k2, .key_lens = l2 };
		ASSERT_EQ(0, dfkv_submit(self->c, &d, &b));
		ASSERT_EQ(0, dfkv_batch_wait(b, -1));
		ASSERT_EQ(0, dfkv_batch_result(b, 0, &st, NULL));
		EXPECT_EQ(DFKV_E_INVAL, st);
		ASSERT_EQ(0, dfkv_batch_result(b, 1, &st, NULL));
		EXPECT_EQ(DFKV_STATUS_NOT_FOUND, st);
		EXPECT_EQ(DFKV_E_INVAL, dfkv_batch_status(b));
		dfkv_batch_free(b);	/* unreaped: taken off the list */
		EXPECT_EQ(0, dfkv_reap(self->c, &b, 1));
	}
	CLOSE_LEAK_FREE(self);
}

/* Rename the keys of s to ones routed to node i: "<tag>-<j>". */
static size_t keys_of_node(struct dfkv_client *c, const char *tag, int node,
			   struct async_set *s)
{
	size_t k = 0;

	for (int j = 0; k < s->n && j < 100000; j++) {
		const char *m;

		snprintf(s->names[k], sizeof(s->names[k]), "%.8s-%d", tag, j);
		if (dfkv_locate(c, s->names[k], strlen(s->names[k]), &m, NULL) ||
		    node_index(m) != node)
			continue;
		s->kl[k] = strlen(s->names[k]);
		k++;
	}
	return k;
}

TEST_F(cluster, async_cancel_what_was_not_sent)
{
	/* the first batch is longer than a round of the completion thread
	 * (3 nodes x 2 connections x 4 in flight x 2 = 48, at least 64) */
	enum { NA = 100, NB = 50 };
	struct dfkv_batch *a, *b, *got[2];
	struct async_set s;
	int st;

	ASSERT_EQ(0, async_set_init(&s, "cx", NA + NB, 8));
	ASSERT_EQ(NA + NB, keys_of_node(self->c, "cx", 0, &s));
	self->srv[0].mode = SRV_STALL;	/* node-a holds what it reads */
	a = async_submit(self->c, DFKV_OP_EXIST, &s, 0, NA, 1);
	b = async_submit(self->c, DFKV_OP_PUT, &s, NA, NB, 2);
	ASSERT_NE(NULL, a);
	ASSERT_NE(NULL, b);
	EXPECT_EQ(0, dfkv_batch_cancel(b));
	EXPECT_EQ(DFKV_E_TIMEOUT, dfkv_batch_wait(a, 0));
	self->srv[0].mode = SRV_OK;	/* its connections close: misses */
	ASSERT_EQ(2, async_reap(self->c, got, 2));
	EXPECT_EQ(DFKV_E_CANCELLED, dfkv_batch_status(b));
	for (int i = 0; i < NB; i++) {
		ASSERT_EQ(0, dfkv_batch_result(b, (uint64_t)i, &st, NULL));
		EXPECT_EQ(DFKV_E_CANCELLED, st);
	}
	EXPECT_EQ(0, dfkv_batch_status(a));
	for (int i = 0; i < NA; i++) {
		ASSERT_EQ(0, dfkv_batch_result(a, (uint64_t)i, &st, NULL));
		EXPECT_EQ(DFKV_STATUS_NOT_FOUND, st);
	}
	EXPECT_EQ(0, self->srv[0].puts);	/* nothing of b was sent */
	dfkv_batch_free(a);
	dfkv_batch_free(b);
	async_set_free(&s);
	CLOSE_LEAK_FREE(self);
}

/* s->stalls under its lock: whether node s holds a request (SRV_STALL). */
static bool srv_stalled(struct srv *s)
{
	bool held;

	pthread_mutex_lock(&s->lock);
	held = s->stalls > 0;
	pthread_mutex_unlock(&s->lock);
	return held;
}

/*
 * Two LEASE batches queued together for the completion thread (held back
 * behind a batch a stalled node sits on), to one node: each lease keeps a
 * connection of its own, so releasing one gives only its connection back
 * (a GET then reuses it) while the other is still held (before, both
 * came over one connection, and the first RELEASE pooled it under the
 * second lease: ASan's use after free).
 */
TEST_F(cluster, two_leases_queued_together_keep_a_connection_each)
{
	struct dfkv_client_options_v2 o = {
		.size = sizeof(o), .transport = DFKV_TRANSPORT_TCP,
		.members = self->members, .ns = NS, .ns_len = sizeof(NS) - 1,
		.conns_per_peer = 1, .io_timeout_ms = 2000,
	};
	struct dfkv_batch *held, *l1, *l2, *got[3];
	struct dfkv_lease *x, *y;
	struct async_set a, b;
	uint8_t buf[8];
	uint64_t len;

	dfkv_close(self->c);
	ASSERT_EQ(0, dfkv_open_v2(&o, &self->c));
	ASSERT_EQ(0, async_set_init(&a, "tl", 2, 8));
	ASSERT_EQ(2, keys_of_node(self->c, "tl", 0, &a));
	ASSERT_EQ(0, async_set_init(&b, "ts", 1, 8));
	ASSERT_EQ(1, keys_of_node(self->c, "ts", 1, &b));
	for (int i = 0; i < 2; i++)
		ASSERT_EQ(0, dfkv_put(self->c, a.keys[i], a.kl[i], "value", 5));
	self->srv[1].mode = SRV_STALL;
	held = async_submit(self->c, DFKV_OP_EXIST, &b, 0, 1, 0);
	ASSERT_NE(NULL, held);
	/* the thread's round is node-b's request: the leases queue behind
	 * it (the bound only stops a broken library from hanging here) */
	for (int i = 0; i < 60000 && !srv_stalled(&self->srv[1]); i++)
		usleep(1000);
	ASSERT_TRUE(srv_stalled(&self->srv[1]));
	l1 = async_submit(self->c, DFKV_OP_LEASE, &a, 0, 2, 1);
	l2 = async_submit(self->c, DFKV_OP_LEASE, &a, 0, 2, 2);
	ASSERT_NE(NULL, l1);
	ASSERT_NE(NULL, l2);
	self->srv[1].mode = SRV_OK;	/* node-b closes: the next round */
	ASSERT_EQ(3, async_reap(self->c, got, 3));
	x = dfkv_batch_lease(l1);
	y = dfkv_batch_lease(l2);
	ASSERT_NE(NULL, x);
	ASSERT_NE(NULL, y);
	EXPECT_EQ(2, self->srv[0].nconns);	/* one connection each */

	ASSERT_EQ(0, dfkv_release(self->c, x));
	/* x's connection is back in the pool, y's still held */
	ASSERT_EQ(0, dfkv_get(self->c, a.keys[0], a.kl[0], buf, sizeof(buf),
			      &len));
	EXPECT_EQ(5, len);
	EXPECT_EQ(2, self->srv[0].nconns);
	ASSERT_EQ(0, dfkv_release(self->c, y));
	dfkv_batch_free(held);
	dfkv_batch_free(l1);
	dfkv_batch_free(l2);
	async_set_free(&a);
	async_set_free(&b);
	CLOSE_LEAK_FREE(self);
}

TEST_F(cluster, async_close_with_work_outstanding)
{
	struct async_set a;
	struct dfkv_batch *b;

	ASSERT_EQ(0, async_set_init(&a, "cl", 6 * 500, 64));
	self->srv[1].mode = SRV_STALL;
	for (size_t i = 0; i < 6; i++) {
		b = async_submit(self->c, DFKV_OP_PUT, &a, i * 500, 500, i);
		ASSERT_NE(NULL, b);
		if (i == 5)
			dfkv_batch_free(b);	/* let go of before it is done */
	}
	/* the rest are neither reaped nor freed: close frees them */
	CLOSE_LEAK_FREE(self);
	self->srv[1].mode = SRV_OK;
	async_set_free(&a);
}

TEST_F(cluster, async_dead_node_completes_with_errors)
{
	struct async_set a;
	struct dfkv_batch *put, *get, *got[2];
	int dead = 2, st;
	uint64_t len;

	ASSERT_EQ(0, async_set_init(&a, "dn", 600, 64));
	put = async_submit(self->c, DFKV_OP_PUT, &a, 0, 600, 0);
	ASSERT_NE(NULL, put);
	ASSERT_EQ(0, dfkv_batch_wait(put, -1));
	ASSERT_EQ(0, dfkv_batch_status(put));
	dfkv_batch_free(put);
	srv_stop(&self->srv[dead]);
	async_set_outs(&a);
	get = async_submit(self->c, DFKV_OP_GET, &a, 0, 600, 0);
	put = async_submit(self->c, DFKV_OP_PUT, &a, 0, 600, 1);
	ASSERT_NE(NULL, get);
	ASSERT_NE(NULL, put);
	ASSERT_EQ(2, async_reap(self->c, got, 2));
	EXPECT_EQ(0, dfkv_batch_status(get));
	EXPECT_EQ(DFKV_E_UNAVAILABLE, dfkv_batch_status(put));
	for (uint64_t i = 0; i < 600; i++) {
		const char *m;
		bool on_dead;

		ASSERT_EQ(0, dfkv_locate(self->c, a.keys[i], a.kl[i], &m, NULL));
		on_dead = node_index(m) == dead;
		ASSERT_EQ(0, dfkv_batch_result(get, i, &st, &len));
		EXPECT_EQ(on_dead ? DFKV_STATUS_NOT_FOUND : DFKV_STATUS_OK, st);
		EXPECT_EQ(on_dead ? 0 : 64, len);
		ASSERT_EQ(0, dfkv_batch_result(put, i, &st, NULL));
		EXPECT_EQ(on_dead ? DFKV_E_UNAVAILABLE : DFKV_STATUS_OK, st);
	}
	dfkv_batch_free(get);
	dfkv_batch_free(put);
	async_set_free(&a);
	CLOSE_LEAK_FREE(self);
}

TEST_F(cluster, threads_share_one_client)
{
	struct worker w[4];
	pthread_t t[4];
	char snap[8192];
	uint64_t len, want;

	for (int i = 0; i < 4; i++) {
		w[i] = (struct worker){ self->c, i, 0 };
		pthread_create(&t[i], NULL, worker_main, &w[i]);
	}
	for (int i = 0; i < 4; i++) {
		pthread_join(t[i], NULL);
		EXPECT_EQ(0, w[i].failures);
	}
	ASSERT_EQ(0, dfkv_stats_snapshot(self->c, snap, sizeof(snap), &len));
	EXPECT_EQ(strlen(snap), len);
	want = len;
	EXPECT_NE(NULL, strstr(snap, "dfkv_client_ops_total{op=\"put\",result=\"ok\"} 400\n"));
	EXPECT_NE(NULL, strstr(snap, "dfkv_client_ops_total{op=\"get\",result=\"ok\"} 400\n"));
	EXPECT_NE(NULL, strstr(snap, "dfkv_client_requests_total{transport=\"tcp\"} 800\n"));
	/* pooled connections: far fewer connects than requests */
	EXPECT_EQ(DFKV_E_RANGE, dfkv_stats_snapshot(self->c, snap, 10, &len));
	EXPECT_EQ(want, len);
}

/* ------------------------------------------------------------ options */

static int try_open(const char *members, uint32_t transport, const char *dev)
{
	struct dfkv_client_options_v2 o = {
		.size = sizeof(o), .transport = transport, .members = members,
		.ns = "ns", .ns_len = 2, .local_dev = dev,
	};
	struct dfkv_client *c = (void *)1;
	int rc = dfkv_open_v2(&o, &c);

	if (!rc)
		dfkv_close(c);
	else if (c)
		return -1000;		/* *out must be NULL on failure */
	return rc;
}

/* ------------------------------------------------------ tenants (SPEC 9) */

static const uint8_t SECRET[DFKV_TENANT_SECRET_LEN] = "0123456789abcdef0123456789abcdef";

/* Every node registers NS's tenant with SECRET; the client is reopened
 * with secret (NULL: none). */
static int auth_setup(FIXTURE_DATA(cluster) *self, bool required,
		      const uint8_t *secret)
{
	struct dfkv_client_options_v2 o = {
		.size = sizeof(o), .transport = DFKV_TRANSPORT_TCP,
		.members = self->members, .ns = NS, .ns_len = sizeof(NS) - 1,
		.io_timeout_ms = 2000, .cooldown_ms = 300,
		.tenant_secret = secret,
	};
	uint64_t tenant;

	if (dfkv_tenant_hash(NS, sizeof(NS) - 1, &tenant))
		return -1;
	for (int i = 0; i < NSRV; i++) {
		self->srv[i].auth_required = required;
		self->srv[i].tenant = tenant;
		memcpy(self->srv[i].secret, SECRET, sizeof(SECRET));
	}
	dfkv_close(self->c);
	return dfkv_open_v2(&o, &self->c);
}

/* A counter of the test nodes, summed. */
#define SRV_SUM(self, field) ((self)->srv[0].field + (self)->srv[1].field + \
			      (self)->srv[2].field)

TEST_F(cluster, auth_required_with_the_secret)
{
	const void *keys[3] = { "a0", "a1", "a2" };
	uint64_t kl[3] = { 2, 2, 2 }, sl[3], len;
	uint8_t b[8];

	ASSERT_EQ(0, auth_setup(self, true, SECRET));
	for (int i = 0; i < 3; i++)
		ASSERT_EQ(0, dfkv_put(self->c, keys[i], 2, "value", 5));
	ASSERT_EQ(0, dfkv_get(self->c, "a1", 2, b, sizeof(b), &len));
	EXPECT_EQ(5, len);
	ASSERT_EQ(0, dfkv_probe(self->c, keys, kl, 3, sl));
	EXPECT_EQ(5, sl[2]);
	EXPECT_EQ(0, dfkv_touch(self->c, keys, kl, 3));
	/* every connection: one HELLO, one AUTH accepted, nothing refused */
	EXPECT_GT(SRV_SUM(self, auth_ok), 0);
	EXPECT_EQ(SRV_SUM(self, hellos), SRV_SUM(self, auth_ok));
	EXPECT_EQ(0, SRV_SUM(self, auth_failures));
	EXPECT_EQ(0, SRV_SUM(self, forbidden));
}

/* What the client's metrics say of member name's handshakes. */
static uint64_t node_auth_failures(struct dfkv_client *c, const char *name)
{
	char *buf = malloc(1 << 16), want[96], *p;
	uint64_t len = 0, v = UINT64_MAX;

	if (!buf || dfkv_stats_snapshot(c, buf, 1 << 16, &len)) {
		free(buf);
		return v;
	}
	snprintf(want, sizeof(want),
		 "dfkv_client_node_auth_failures_total{node=\"%s\"} ", name);
	p = strstr(buf, want);
	if (p)
		v = strtoull(p + strlen(want), NULL, 10);
	free(buf);
	return v;
}

TEST_F(cluster, no_secret_is_forbidden_never_a_miss)
{
	const void *keys[3] = { "f0", "f1", "f2" };
	uint64_t kl[3] = { 2, 2, 2 }, sl[3], lens[3], len;
	uint8_t b[8], b3[3][8];
	void *bp[3] = { b3[0], b3[1], b3[2] };
	uint64_t caps[3] = { 8, 8, 8 };
	int st[3];

	ASSERT_EQ(0, dfkv_put(self->c, "f1", 2, "value", 5));
	ASSERT_EQ(0, auth_setup(self, true, NULL));
	/* twice: a refused request does not cool the node down */
	for (int twice = 0; twice < 2; twice++) {
		EXPECT_EQ(DFKV_STATUS_FORBIDDEN,
			  dfkv_put(self->c, "f0", 2, "v", 1));
		EXPECT_EQ(DFKV_STATUS_FORBIDDEN,
			  dfkv_get(self->c, "f1", 2, b, sizeof(b), &len));
		EXPECT_EQ(DFKV_STATUS_FORBIDDEN,
			  dfkv_exist(self->c, "f1", 2, &len));
		EXPECT_EQ(DFKV_STATUS_FORBIDDEN,
			  dfkv_remove(self->c, "f1", 2));
		EXPECT_EQ(DFKV_STATUS_FORBIDDEN,
			  dfkv_probe(self->c, keys, kl, 3, sl));
		EXPECT_EQ(0, sl[1]);
		EXPECT_EQ(DFKV_STATUS_FORBIDDEN,
			  dfkv_touch(self->c, keys, kl, 3));
		EXPECT_EQ(0, dfkv_get_batch(self->c, 3, keys, kl, bp, caps,
					    lens, st));
		for (int i = 0; i < 3; i++)
			EXPECT_EQ(DFKV_STATUS_FORBIDDEN, st[i]);
	}
	/* no secret sends no AUTH */
	EXPECT_EQ(0, SRV_SUM(self, auth_ok) + SRV_SUM(self, auth_failures));
	EXPECT_STREQ("not authorized for the tenant",
		     dfkv_strerror(DFKV_STATUS_FORBIDDEN));
	/* the node kept the value */
	ASSERT_EQ(0, auth_setup(self, false, NULL));
	EXPECT_EQ(0, dfkv_exist(self->c, "f1", 2, &len));
}

/*
 * A node that refuses the client's AUTH, whatever its auth setting (no
 * downgrade), is unavailable for the cooldown: reads miss, writes drop,
 * and the node sees no tenant request; each is counted by member.
 */
TEST_F(cluster, refused_auth_fails_the_node)
{
	static const uint8_t wrong[DFKV_TENANT_SECRET_LEN] = { 1 };
	uint64_t len, reqs;
	uint8_t b[8];

	ASSERT_EQ(0, dfkv_put(self->c, "f1", 2, "value", 5));
	for (int required = 1; required >= 0; required--) {
		ASSERT_EQ(0, auth_setup(self, required, wrong));
		reqs = SRV_SUM(self, puts) + SRV_SUM(self, forbidden);
		EXPECT_EQ(DFKV_E_UNAVAILABLE,
			  dfkv_put(self->c, "f0", 2, "v", 1));
		EXPECT_EQ(DFKV_STATUS_NOT_FOUND,
			  dfkv_get(self->c, "f1", 2, b, sizeof(b), &len));
		EXPECT_EQ(DFKV_STATUS_NOT_FOUND,
			  dfkv_exist(self->c, "f1", 2, &len));
		EXPECT_EQ(reqs, SRV_SUM(self, puts) + SRV_SUM(self, forbidden));
		EXPECT_GT(SRV_SUM(self, auth_failures), 0);
		EXPECT_EQ(0, SRV_SUM(self, auth_ok));
		{
			uint64_t f = 0;

			for (int i = 0; i < NSRV; i++)
				f += node_auth_failures(self->c, NAMES[i]);
			EXPECT_LE(1, f);
			EXPECT_GE(NSRV, f);
		}
	}
}

/* A node that answers HELLO under another name is not the member. */
TEST_F(cluster, another_name_fails_the_node)
{
	uint64_t len, puts = SRV_SUM(self, puts);
	uint8_t b[8];

	for (int i = 0; i < NSRV; i++)
		snprintf(self->srv[i].name, sizeof(self->srv[i].name),
			 "rogue-%d", i);
	dfkv_close(self->c);
	ASSERT_EQ(0, open_client(self, 2000, 60000));
	EXPECT_EQ(DFKV_E_UNAVAILABLE, dfkv_put(self->c, "n0", 2, "v", 1));
	EXPECT_EQ(DFKV_STATUS_NOT_FOUND,
		  dfkv_get(self->c, "n0", 2, b, sizeof(b), &len));
	EXPECT_EQ(puts, SRV_SUM(self, puts));
	EXPECT_LE(1, node_auth_failures(self->c, NAMES[0]) +
		  node_auth_failures(self->c, NAMES[1]) +
		  node_auth_failures(self->c, NAMES[2]));
}

/* dfkv_client_misses_total{cause} of c. */
static uint64_t misses(struct dfkv_client *c, const char *cause)
{
	char pat[64];

	snprintf(pat, sizeof(pat), "misses_total{cause=\"%s\"} ", cause);
	return client_stat(c, pat);
}

/* A key "<prefix>-<i>" that routes to member idx, into key; its length. */
static int key_on(struct dfkv_client *c, const char *prefix, int idx,
		  char *key, size_t cap)
{
	const char *m;

	for (int i = 0; i < 1000; i++) {
		int k = snprintf(key, cap, "%s-%d", prefix, i);

		if (!dfkv_locate(c, key, (uint64_t)k, &m, NULL) &&
		    node_index(m) == idx)
			return k;
	}
	return -1;
}

/* Two GETs of key (length k), both misses. */
static void miss_twice(struct __test_metadata *_metadata,
		       struct dfkv_client *c, const char *key, int k)
{
	uint64_t len;
	uint8_t b[8];

	for (int i = 0; i < 2; i++)
		EXPECT_EQ(DFKV_STATUS_NOT_FOUND,
			  dfkv_get(c, key, (uint64_t)k, b, sizeof(b), &len));
}

/*
 * Each miss counted once under its cause: keys never written (a GET, a
 * PROBE's keys) are absent; a GET to a dead node, and another in its
 * cooldown, unavailable; a GET to a node refusing the AUTH, and another
 * in its cooldown, auth.
 */
TEST_F(cluster, misses_by_cause)
{
	static const uint8_t wrong[DFKV_TENANT_SECRET_LEN] = { 1 };
	const void *keys[3] = { "p0", "p1", "p2" };
	uint64_t kl[3] = { 2, 2, 2 }, sl[3], len;
	char key[32];
	uint8_t b[8];
	int k;

	ASSERT_EQ(0, dfkv_put(self->c, "p1", 2, "value", 5));
	EXPECT_EQ(DFKV_STATUS_NOT_FOUND,
		  dfkv_get(self->c, "m0", 2, b, sizeof(b), &len));
	ASSERT_EQ(0, dfkv_probe(self->c, keys, kl, 3, sl));
	EXPECT_EQ(3, misses(self->c, "absent"));
	EXPECT_EQ(0, misses(self->c, "unavailable"));
	EXPECT_EQ(0, misses(self->c, "auth"));

	k = key_on(self->c, "d", 1, key, sizeof(key));
	ASSERT_LT(0, k);
	ASSERT_EQ(0, dfkv_put(self->c, key, (uint64_t)k, "value", 5));
	srv_stop(&self->srv[1]);
	miss_twice(_metadata, self->c, key, k);
	EXPECT_EQ(2, misses(self->c, "unavailable"));
	EXPECT_EQ(3, misses(self->c, "absent"));
	EXPECT_EQ(0, misses(self->c, "auth"));

	ASSERT_EQ(0, auth_setup(self, true, wrong));	/* a new client */
	k = key_on(self->c, "a", 0, key, sizeof(key));
	ASSERT_LT(0, k);
	miss_twice(_metadata, self->c, key, k);
	EXPECT_EQ(2, misses(self->c, "auth"));
	EXPECT_EQ(0, misses(self->c, "unavailable"));
	EXPECT_EQ(0, misses(self->c, "absent"));
}

TEST_F(cluster, hello_tells_max_value)
{
	static uint8_t big[SRV_MAX_VALUE + 1];
	char key[16];
	uint64_t puts;
	int k;

	/* a connection to every node learns its max_value_bytes */
	for (int i = 0; i < 30; i++) {
		k = snprintf(key, sizeof(key), "mv-%d", i);
		ASSERT_EQ(0, dfkv_put(self->c, key, (uint64_t)k, "v", 1));
	}
	EXPECT_GT(SRV_SUM(self, hellos), 0);
	EXPECT_EQ(0, SRV_SUM(self, auth_ok) + SRV_SUM(self, auth_failures));
	puts = SRV_SUM(self, puts);
	EXPECT_EQ(0, dfkv_put(self->c, "big", 3, big, SRV_MAX_VALUE));
	EXPECT_EQ(DFKV_STATUS_TOO_LARGE,
		  dfkv_put(self->c, "big", 3, big, sizeof(big)));
	EXPECT_EQ(puts + 1, SRV_SUM(self, puts));	/* never sent */
}

TEST(open_validates_members)
{
	static const char *const bad[] = {
		"", ",", "a=127.0.0.1:7400,", "=127.0.0.1:1", "a=127.0.0.1:0",
		"a=127.0.0.1:65536", "a=127.0.0.1:1@0", "a=127.0.0.1:1@1001",
		"a=127.0.0.1:1@x", "a=127.0.0.1:1,a=127.0.0.2:1", "a=::1:7400",
		"a=[::1", "a=[]:1", "a=host:01", "a b=127.0.0.1:1",
		"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa=127.0.0.1:1", "a=",
	};

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		EXPECT_EQ(DFKV_E_MEMBERS, try_open(bad[i], DFKV_TRANSPORT_TCP, NULL)) {
			TH_LOG("accepted members \"%s\"", bad[i]);
		}
	}
	/* no connection is made at open: these need only parse/resolve */
	EXPECT_EQ(0, try_open("a=127.0.0.1:1", DFKV_TRANSPORT_TCP, NULL));
	EXPECT_EQ(0, try_open(" a=127.0.0.1 , b=[::1]:7400@3 ", DFKV_TRANSPORT_TCP, NULL));
	EXPECT_EQ(0, try_open("a=localhost:7400@1000", DFKV_TRANSPORT_TCP, NULL));
	/* a member without an address needs /dev/dfkv */
	EXPECT_EQ(DFKV_E_MEMBERS, try_open("a", DFKV_TRANSPORT_TCP, NULL));
	EXPECT_EQ(DFKV_E_MEMBERS, try_open("a", DFKV_TRANSPORT_AUTO,
					   "/nonexistent/dfkv"));
	EXPECT_EQ(DFKV_E_NODEV, try_open("a=127.0.0.1:1", DFKV_TRANSPORT_LOCAL,
					 "/nonexistent/dfkv"));
	/* auto without a local node falls back to TCP */
	EXPECT_EQ(0, try_open("a=127.0.0.1:1", DFKV_TRANSPORT_AUTO,
			      "/nonexistent/dfkv"));
}

TEST(open_validates_options)
{
	struct dfkv_client_options_v2 o = {
		.size = sizeof(o), .members = "a=127.0.0.1:1",
		.ns = "ns", .ns_len = 2,
	};
	uint8_t big[sizeof(o) + 16] = { 0 };
	struct dfkv_client *c;

	EXPECT_EQ(DFKV_E_INVAL, dfkv_open_v2(NULL, &c));
	EXPECT_EQ(DFKV_E_INVAL, dfkv_open_v2(&o, NULL));
	o.size = DFKV_CLIENT_OPTIONS_V2_SIZE_VER0 - 8;
	EXPECT_EQ(DFKV_E_INVAL, dfkv_open_v2(&o, &c));
	EXPECT_EQ(NULL, c);
	o.size = sizeof(o);
	o.transport = __DFKV_TRANSPORT_MAX;
	EXPECT_EQ(DFKV_E_INVAL, dfkv_open_v2(&o, &c));
	o.transport = DFKV_TRANSPORT_TCP;
	o.ns_len = 0;
	EXPECT_EQ(DFKV_E_INVAL, dfkv_open_v2(&o, &c));
	o.ns_len = 2;
	o.ns = NULL;
	EXPECT_EQ(DFKV_E_INVAL, dfkv_open_v2(&o, &c));
	o.ns = "ns";
	o.__reserved = 1;
	EXPECT_EQ(DFKV_E_INVAL, dfkv_open_v2(&o, &c));
	o.__reserved = 0;
	o.conns_per_peer = 65;
	EXPECT_EQ(DFKV_E_INVAL, dfkv_open_v2(&o, &c));
	o.conns_per_peer = 0;
	o.rdma_expose = __DFKV_RDMA_EXPOSE_MAX;
	EXPECT_EQ(DFKV_E_INVAL, dfkv_open_v2(&o, &c));
	o.rdma_expose = DFKV_RDMA_EXPOSE_REQUEST_MR;
	o.__reserved4 = 1;
	EXPECT_EQ(DFKV_E_INVAL, dfkv_open_v2(&o, &c));
	o.__reserved4 = 0;
	ASSERT_EQ(0, dfkv_open_v2(&o, &c));
	dfkv_close(c);
	/* a VER3 caller's struct ends before rdma_expose: never read */
	o.size = DFKV_CLIENT_OPTIONS_V2_SIZE_VER3;
	o.rdma_expose = __DFKV_RDMA_EXPOSE_MAX;
	ASSERT_EQ(0, dfkv_open_v2(&o, &c));
	dfkv_close(c);
	o.rdma_expose = 0;
	/* a newer, larger struct: accepted only with a zero tail */
	o.size = sizeof(big);
	memcpy(big, &o, sizeof(o));
	ASSERT_EQ(0, dfkv_open_v2((void *)big, &c));
	dfkv_close(c);
	big[sizeof(o) + 1] = 1;
	EXPECT_EQ(DFKV_E_INVAL, dfkv_open_v2((void *)big, &c));
	dfkv_close(NULL);
}

TEST(unreachable_node_fails_fast)
{
	struct srv s = { 0 };
	struct dfkv_client_options_v2 o = {
		.size = sizeof(o), .transport = DFKV_TRANSPORT_TCP,
		.ns = "ns", .ns_len = 2, .cooldown_ms = 10000,
	};
	struct dfkv_client *c;
	char members[64];
	uint8_t b[4];
	uint64_t len, t0;

	/* a port that was just free: connection refused */
	ASSERT_EQ(0, srv_start(&s, 0));
	srv_stop(&s);
	srv_free(&s);
	snprintf(members, sizeof(members), "a=127.0.0.1:%u", s.port);
	o.members = members;
	ASSERT_EQ(0, dfkv_open_v2(&o, &c));
	t0 = now_ms();
	EXPECT_EQ(DFKV_STATUS_NOT_FOUND, dfkv_get(c, "k", 1, b, sizeof(b), &len));
	EXPECT_EQ(DFKV_E_UNAVAILABLE, dfkv_put(c, "k", 1, "v", 1));
	EXPECT_EQ(DFKV_E_UNAVAILABLE, dfkv_remove(c, "k", 1));
	EXPECT_LT(now_ms() - t0, 1500);
	dfkv_close(c);
}

TEST_HARNESS_MAIN
