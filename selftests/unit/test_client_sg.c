// SPDX-License-Identifier: GPL-2.0
/*
 * Unit tests of libdfkv's scatter-gather calls over TCP (dfkv_put_sg,
 * dfkv_get_sg and their batches) against the in-test epoch-6 nodes of
 * fake_node.c: byte-exact values across irregular, tiny, empty and
 * maximal iovec lists (gathered sends cut mid-segment, replies read
 * across segment boundaries), the range and TOO_LARGE rules with the
 * iovecs' total as the capacity, per-slot failures in batches, and every
 * bad argument failing closed with the outputs reset.
 *
 * The nodes and the "cluster" fixture are the ones test_client_tcp runs
 * its tests on (fake_node.c, fake_cluster.h).
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <string.h>
#include <unistd.h>

/* kselftest_harness.h (6.1) is not -Wextra clean */
#pragma GCC diagnostic ignored "-Wunused-parameter"
#pragma GCC diagnostic ignored "-Wsign-compare"
#pragma GCC diagnostic ignored "-Wmisleading-indentation"
#include "kselftest_harness.h"
#include "dfkv.h"
#include "fake_cluster.h"
#include "../client_sg.h"

#ifndef SG_RANGES
#define SG_RANGES "../sg-ranges.json"
#endif

static uint64_t iov_total(const struct dfkv_iov *iov, size_t n)
{
	uint64_t t = 0;

	for (size_t i = 0; i < n; i++)
		t += iov[i].len;
	return t;
}

TEST_F(cluster, sg_put_get_byte_exact)
{
	enum { LEN = 100003 };
	static uint8_t val[LEN], got[LEN + 64];
	/* zero-length entries at the front, in the middle and at the end */
	static const uint64_t put_pat[] = { 0, 1, 4096, 0, 0, 13, 7000, 1 };
	static const uint64_t get_pat[] = { 3, 0, 65536, 0, 1 };
	struct dfkv_iov piov[64], giov[64];
	size_t np, ng;
	uint64_t len, stored;

	fill(val, LEN, 3);
	np = sg_split(val, LEN, put_pat, 8, piov, 64);
	ASSERT_EQ(LEN, iov_total(piov, np));
	piov[3].base = NULL;			/* empty: base not looked at */
	ASSERT_EQ(0, dfkv_put_sg(self->c, "sg-1", 4, piov, np));

	/* a plain GET sees the concatenation */
	ASSERT_EQ(0, dfkv_get(self->c, "sg-1", 4, got, sizeof(got), &len));
	ASSERT_EQ(LEN, len);
	ASSERT_EQ(0, memcmp(val, got, LEN));

	/* scattered into a different split, with spare room at the end */
	memset(got, 0, sizeof(got));
	ng = sg_split(got, sizeof(got), get_pat, 5, giov, 64);
	ASSERT_EQ(sizeof(got), iov_total(giov, ng));
	ASSERT_EQ(0, dfkv_get_sg(self->c, "sg-1", 4, 0, 0, giov, ng, &len,
				 &stored));
	EXPECT_EQ(LEN, len);
	EXPECT_EQ(LEN, stored);
	EXPECT_EQ(0, memcmp(val, got, LEN));
	EXPECT_EQ(0, got[LEN]);

	/* a plain PUT read back scattered, stored_len optional */
	ASSERT_EQ(0, dfkv_put(self->c, "plain", 5, val + 1, LEN - 1));
	memset(got, 0, sizeof(got));
	ASSERT_EQ(0, dfkv_get_sg(self->c, "plain", 5, 0, 0, giov, ng, &len,
				 NULL));
	EXPECT_EQ(LEN - 1, len);
	EXPECT_EQ(0, memcmp(val + 1, got, LEN - 1));

	/* one single entry works like dfkv_put/dfkv_get */
	piov[0] = (struct dfkv_iov){ val, 1 };
	ASSERT_EQ(0, dfkv_put_sg(self->c, "one", 3, piov, 1));
	giov[0] = (struct dfkv_iov){ got, 1 };
	got[0] = 0;
	ASSERT_EQ(0, dfkv_get_sg(self->c, "one", 3, 0, 0, giov, 1, &len, NULL));
	EXPECT_EQ(1, len);
	EXPECT_EQ(val[0], got[0]);

	/* a miss */
	EXPECT_EQ(DFKV_STATUS_NOT_FOUND,
		  dfkv_get_sg(self->c, "absent", 6, 0, 0, giov, ng, &len,
			      &stored));
	EXPECT_EQ(0, len);
	EXPECT_EQ(0, stored);
}

TEST_F(cluster, sg_many_small_and_maximal_lists)
{
	static uint8_t val[1 << 20], got[1 << 20];
	static struct dfkv_iov piov[DFKV_IOV_MAX], giov[DFKV_IOV_MAX];
	static const uint64_t tiny[] = { 1, 2, 3, 5, 0, 7 };
	static const uint64_t odd[] = { 1023, 1, 0, 1025 };
	uint64_t len, stored;
	size_t np, ng;

	/* DFKV_IOV_MAX tiny entries: many sendmsg calls of 64 segments */
	fill(val, sizeof(val), 5);
	np = sg_split(val, 3000, tiny, 6, piov, DFKV_IOV_MAX);
	ASSERT_EQ(3000, iov_total(piov, np));
	ASSERT_GT(np, 64);
	ASSERT_EQ(0, dfkv_put_sg(self->c, "tiny", 4, piov, np));
	memset(got, 0, 4096);
	ng = sg_split(got, 3000, tiny + 1, 5, giov, DFKV_IOV_MAX);
	ASSERT_EQ(0, dfkv_get_sg(self->c, "tiny", 4, 0, 0, giov, ng, &len,
				 &stored));
	EXPECT_EQ(3000, len);
	EXPECT_EQ(0, memcmp(val, got, 3000));

	/* exactly DFKV_IOV_MAX entries of 1 KiB: a 1 MiB value whose
	 * send is cut mid-segment and whose reply is read directly into
	 * the segments */
	np = sg_split(val, sizeof(val), odd, 4, piov, DFKV_IOV_MAX);
	ASSERT_EQ(DFKV_IOV_MAX, np);
	ASSERT_EQ(sizeof(val), iov_total(piov, np));
	ASSERT_EQ(0, dfkv_put_sg(self->c, "max", 3, piov, np));
	memset(got, 0, sizeof(got));
	for (size_t i = 0; i < DFKV_IOV_MAX; i++)
		giov[i] = (struct dfkv_iov){ got + i * 1024, 1024 };
	ASSERT_EQ(0, dfkv_get_sg(self->c, "max", 3, 0, 0, giov, DFKV_IOV_MAX,
				 &len, &stored));
	EXPECT_EQ(sizeof(val), len);
	EXPECT_EQ(0, memcmp(val, got, sizeof(val)));

	/* one more entry is refused before anything is sent */
	EXPECT_EQ(DFKV_E_INVAL,
		  dfkv_put_sg(self->c, "over", 4, piov, DFKV_IOV_MAX + 1));
	EXPECT_EQ(DFKV_E_INVAL,
		  dfkv_get_sg(self->c, "max", 3, 0, 0, giov, DFKV_IOV_MAX + 1,
			      &len, &stored));
	EXPECT_EQ(0, len);
	EXPECT_EQ(0, stored);
	EXPECT_EQ(DFKV_STATUS_NOT_FOUND, dfkv_exist(self->c, "over", 4, NULL));
}

TEST_F(cluster, sg_range_rules)
{
	sg_check_ranges(_metadata, self->c, SG_RANGES, fill);
}

TEST_F(cluster, sg_fail_closed_arguments)
{
	uint8_t a[8] = "abcdefg", b[8];
	struct dfkv_iov iov[3] = { { a, 4 }, { NULL, 0 }, { a + 4, 4 } };
	struct dfkv_iov empty[2] = { { a, 0 }, { NULL, 0 } };
	struct dfkv_iov bad_base[2] = { { a, 4 }, { NULL, 4 } };
	struct dfkv_iov huge[2] = { { a, SIZE_MAX / 2 }, { a, SIZE_MAX / 2 } };
	struct dfkv_iov out[1] = { { b, sizeof(b) } };
	uint64_t len = 5, stored = 5;

	/* client, key */
	EXPECT_EQ(DFKV_E_INVAL, dfkv_put_sg(NULL, "k", 1, iov, 3));
	EXPECT_EQ(DFKV_E_INVAL, dfkv_put_sg(self->c, NULL, 1, iov, 3));
	EXPECT_EQ(DFKV_E_INVAL, dfkv_put_sg(self->c, "k", 0, iov, 3));
	EXPECT_EQ(DFKV_E_INVAL, dfkv_get_sg(NULL, "k", 1, 0, 0, out, 1, &len,
					    &stored));
	EXPECT_EQ(0, len);
	EXPECT_EQ(0, stored);
	len = stored = 5;
	EXPECT_EQ(DFKV_E_INVAL, dfkv_get_sg(self->c, "", 0, 0, 0, out, 1, &len,
					    &stored));
	EXPECT_EQ(0, len);
	EXPECT_EQ(0, stored);

	/* the array */
	EXPECT_EQ(DFKV_E_INVAL, dfkv_put_sg(self->c, "k", 1, NULL, 3));
	EXPECT_EQ(DFKV_E_INVAL, dfkv_put_sg(self->c, "k", 1, iov, 0));
	EXPECT_EQ(DFKV_E_INVAL, dfkv_put_sg(self->c, "k", 1, bad_base, 2));
	EXPECT_EQ(DFKV_E_INVAL, dfkv_put_sg(self->c, "k", 1, huge, 2));
	EXPECT_EQ(DFKV_STATUS_INVALID, dfkv_put_sg(self->c, "k", 1, empty, 2));
	EXPECT_EQ(DFKV_E_INVAL, dfkv_get_sg(self->c, "k", 1, 0, 0, NULL, 1,
					    &len, &stored));
	EXPECT_EQ(DFKV_E_INVAL, dfkv_get_sg(self->c, "k", 1, 0, 0, out, 0,
					    &len, &stored));
	EXPECT_EQ(DFKV_E_INVAL, dfkv_get_sg(self->c, "k", 1, 0, 0, bad_base, 2,
					    &len, &stored));
	EXPECT_EQ(DFKV_E_INVAL, dfkv_get_sg(self->c, "k", 1, 0, 0, empty, 2,
					    &len, &stored));
	EXPECT_EQ(DFKV_E_INVAL, dfkv_get_sg(self->c, "k", 1, 0, 0, huge, 2,
					    &len, &stored));
	EXPECT_EQ(DFKV_E_INVAL, dfkv_get_sg(self->c, "k", 1, 0, 0, out, 1,
					    NULL, &stored));
	EXPECT_EQ(0, len);
	EXPECT_EQ(0, stored);
	/* nothing above reached a node */
	for (int i = 0; i < NSRV; i++)
		EXPECT_EQ(0, self->srv[i].requests);

	/* and the good call still works */
	ASSERT_EQ(0, dfkv_put_sg(self->c, "k", 1, iov, 3));
	ASSERT_EQ(0, dfkv_get_sg(self->c, "k", 1, 0, 0, out, 1, &len, &stored));
	EXPECT_EQ(8, len);
	EXPECT_EQ(0, memcmp(a, b, 8));
}

TEST_F(cluster, sg_batches)
{
	enum { N = 60, LEN = 5000 };
	static uint8_t val[N][LEN], got[N][LEN];
	static struct dfkv_iov piov[N][8], giov[N][8];
	static const uint64_t pp[] = { 100, 0, 1, 2000 };
	static const uint64_t gp[] = { 4999, 0, 1 };
	const void *keys[N], *kk[2];
	const struct dfkv_iov *pv[N], *gv[N];
	uint64_t klens[N], lens[N], kl[2];
	size_t pc[N], gc[N];
	char names[N][16];
	int st[N], ok;

	for (int i = 0; i < N; i++) {
		klens[i] = (uint64_t)snprintf(names[i], sizeof(names[i]),
					      "sgb-%d", i);
		keys[i] = names[i];
		fill(val[i], LEN, (unsigned int)i + 100);
		pc[i] = sg_split(val[i], LEN - (uint64_t)i, pp, 4, piov[i], 8);
		pv[i] = piov[i];
		gc[i] = sg_split(got[i], LEN, gp, 3, giov[i], 8);
		gv[i] = giov[i];
	}
	/* slot 7: no array; slot 8: only empty entries; slot 9: too many */
	pv[7] = NULL;
	piov[8][0].len = 0;
	pc[8] = 1;
	pc[9] = DFKV_IOV_MAX + 1;
	ok = dfkv_put_sg_batch(self->c, N, keys, klens, pv, pc, st);
	EXPECT_EQ(N - 3, ok);
	EXPECT_EQ(DFKV_E_INVAL, st[7]);
	EXPECT_EQ(DFKV_STATUS_INVALID, st[8]);
	EXPECT_EQ(DFKV_E_INVAL, st[9]);

	/* slot 3 gets less room than its value: TOO_LARGE, lens = stored */
	gc[3] = 1;
	giov[3][0].len = 10;
	/* slot 4: a bad array; slot 7: a miss */
	giov[4][1] = (struct dfkv_iov){ NULL, 1 };
	memset(lens, 0xff, sizeof(lens));
	ok = dfkv_get_sg_batch(self->c, N, keys, klens, gv, gc, lens, st);
	EXPECT_EQ(N - 5, ok);
	EXPECT_EQ(DFKV_STATUS_TOO_LARGE, st[3]);
	EXPECT_EQ(LEN - 3, lens[3]);
	EXPECT_EQ(DFKV_E_INVAL, st[4]);
	EXPECT_EQ(0, lens[4]);
	for (int i = 7; i <= 9; i++) {
		EXPECT_EQ(DFKV_STATUS_NOT_FOUND, st[i]);
		EXPECT_EQ(0, lens[i]);
	}
	for (int i = 0; i < N; i++) {
		if (i == 3 || i == 4 || (i >= 7 && i <= 9))
			continue;
		EXPECT_EQ(0, st[i]);
		EXPECT_EQ(LEN - (uint64_t)i, lens[i]);
		EXPECT_EQ(0, memcmp(val[i], got[i], LEN - (size_t)i)) {
			TH_LOG("slot %d", i);
		}
	}

	/* whole-batch argument errors: nothing runs, slots NOT_RUN */
	kk[0] = "a";
	kk[1] = "b";
	kl[0] = kl[1] = 1;
	EXPECT_EQ(DFKV_E_INVAL, dfkv_put_sg_batch(self->c, 2, kk, kl, NULL, pc,
						  st));
	EXPECT_EQ(DFKV_E_NOT_RUN, st[0]);
	EXPECT_EQ(DFKV_E_NOT_RUN, st[1]);
	EXPECT_EQ(DFKV_E_INVAL, dfkv_put_sg_batch(self->c, 2, kk, kl, pv, NULL,
						  st));
	EXPECT_EQ(DFKV_E_INVAL, dfkv_put_sg_batch(self->c, 0, kk, kl, pv, pc,
						  st));
	EXPECT_EQ(DFKV_E_INVAL, dfkv_put_sg_batch(NULL, 2, kk, kl, pv, pc, st));
	EXPECT_EQ(DFKV_E_INVAL, dfkv_put_sg_batch(self->c, 2, kk, kl, pv, pc,
						  NULL));
	lens[0] = lens[1] = 9;
	EXPECT_EQ(DFKV_E_INVAL, dfkv_get_sg_batch(self->c, 2, kk, kl, gv, NULL,
						  lens, st));
	EXPECT_EQ(0, lens[0]);
	EXPECT_EQ(0, lens[1]);
	EXPECT_EQ(DFKV_E_NOT_RUN, st[1]);
	EXPECT_EQ(DFKV_E_INVAL, dfkv_get_sg_batch(self->c, 2, kk, kl, NULL, gc,
						  lens, st));
	EXPECT_EQ(DFKV_E_INVAL, dfkv_get_sg_batch(self->c, 2, kk, kl, gv, gc,
						  NULL, st));
	EXPECT_EQ(DFKV_STATUS_NOT_FOUND, dfkv_exist(self->c, "a", 1, NULL));
}

/* Large scattered values pipelined over both connections of each node. */
TEST_F(cluster, sg_pipelined_large_values)
{
	enum { N = 12, LEN = 700001 };
	static uint8_t val[LEN], got[N][LEN];
	static struct dfkv_iov piov[N][DFKV_IOV_MAX], giov[N][40];
	static const uint64_t pp[] = { 1, 4095, 0, 8192, 3 };
	static const uint64_t gp[] = { 65536, 17, 0, 100000 };
	const void *keys[N];
	const struct dfkv_iov *pv[N], *gv[N];
	uint64_t klens[N], lens[N];
	size_t pc[N], gc[N];
	char names[N][16];
	int st[N];

	fill(val, LEN, 77);
	for (int i = 0; i < N; i++) {
		klens[i] = (uint64_t)snprintf(names[i], sizeof(names[i]),
					      "big-%d", i);
		keys[i] = names[i];
		pc[i] = sg_split(val, LEN - (uint64_t)i * 1000, pp + i % 5,
			      5 - (size_t)(i % 5), piov[i], DFKV_IOV_MAX);
		pv[i] = piov[i];
		gc[i] = sg_split(got[i], LEN, gp, 4, giov[i], 40);
		gv[i] = giov[i];
	}
	ASSERT_EQ(N, dfkv_put_sg_batch(self->c, N, keys, klens, pv, pc, st));
	ASSERT_EQ(N, dfkv_get_sg_batch(self->c, N, keys, klens, gv, gc, lens,
				       st));
	for (int i = 0; i < N; i++) {
		EXPECT_EQ(LEN - (uint64_t)i * 1000, lens[i]);
		EXPECT_EQ(0, memcmp(val, got[i], lens[i])) {
			TH_LOG("slot %d", i);
		}
	}
}

struct hold {
	struct srv *srv;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool held;
};

/* Hold every node's lock for a while: their connections stop reading
 * after one request, so the client's sends fill the sockets and stop
 * mid-frame, mid-segment, and resume later. */
static void *hold_main(void *arg)
{
	struct hold *h = arg;

	for (int i = 0; i < NSRV; i++)
		pthread_mutex_lock(&h->srv[i].lock);
	pthread_mutex_lock(&h->lock);
	h->held = true;
	pthread_cond_signal(&h->cond);
	pthread_mutex_unlock(&h->lock);
	usleep(300 * 1000);
	for (int i = 0; i < NSRV; i++)
		pthread_mutex_unlock(&h->srv[i].lock);
	return NULL;
}

TEST_F(cluster, sg_partial_sends_resume_mid_segment)
{
	enum { N = 36, LEN = 1 << 20 };
	static uint8_t val[LEN], got[LEN];
	static struct dfkv_iov piov[N][DFKV_IOV_MAX];
	static const uint64_t pp[] = { 999, 1, 0, 3001 };
	struct dfkv_client_options_v2 o = {
		.size = sizeof(o), .transport = DFKV_TRANSPORT_TCP,
		.members = self->members, .ns = NS, .ns_len = sizeof(NS) - 1,
		.batch_concurrency = 64, .conns_per_peer = 1,
	};
	struct hold h = { .srv = self->srv, .lock = PTHREAD_MUTEX_INITIALIZER,
			  .cond = PTHREAD_COND_INITIALIZER };
	struct dfkv_client *c;
	const void *keys[N];
	const struct dfkv_iov *pv[N];
	uint64_t klens[N], len;
	size_t pc[N];
	char names[N][16];
	int st[N];
	pthread_t t;

	ASSERT_EQ(0, dfkv_open_v2(&o, &c));
	fill(val, LEN, 41);
	for (int i = 0; i < N; i++) {
		klens[i] = (uint64_t)snprintf(names[i], sizeof(names[i]),
					      "part-%d", i);
		keys[i] = names[i];
		pc[i] = sg_split(val, LEN - (uint64_t)i, pp + i % 4,
			      4 - (size_t)(i % 4), piov[i], DFKV_IOV_MAX);
		pv[i] = piov[i];
	}
	ASSERT_EQ(0, pthread_create(&t, NULL, hold_main, &h));
	pthread_mutex_lock(&h.lock);
	while (!h.held)
		pthread_cond_wait(&h.cond, &h.lock);
	pthread_mutex_unlock(&h.lock);
	EXPECT_EQ(N, dfkv_put_sg_batch(c, N, keys, klens, pv, pc, st));
	pthread_join(t, NULL);
	for (int i = 0; i < N; i++) {
		EXPECT_EQ(0, st[i]);
		memset(got, 0, LEN);
		ASSERT_EQ(0, dfkv_get(c, keys[i], klens[i], got, LEN, &len));
		EXPECT_EQ(LEN - (uint64_t)i, len);
		EXPECT_EQ(0, memcmp(val, got, (size_t)len)) {
			TH_LOG("slot %d", i);
		}
	}
	dfkv_close(c);
}

TEST_HARNESS_MAIN
