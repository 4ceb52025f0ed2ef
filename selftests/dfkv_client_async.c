// SPDX-License-Identifier: GPL-2.0
/*
 * libdfkv's asynchronous batches (dfkv_submit, the eventfd, dfkv_reap,
 * cancel, close) against the real module, through /dev/dfkv and over TCP
 * to the node's in-kernel listener: thousands of requests in flight
 * across batches land byte-exact (checked with plain ioctls, apart from
 * the library) and come back scattered; PROBE, LEASE and TOUCH; a
 * cancelled batch's operations either ran (present on the node) or are
 * DFKV_E_CANCELLED (absent); closing the client with work outstanding
 * completes it and leaves the node serving; a node deleted under the
 * client completes its reads as misses and its writes as
 * DFKV_E_UNAVAILABLE.  Links build/lib/libdfkv.a.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kselftest_harness.h"
#include "testlib.h"
#include "dfkv.h"
#include "client_async.h"

#define NODE	"t-async"
#define PORT	7413
#define NS	"client-async-test"
#define VLEN	1024

FIXTURE(as) {
	struct dfkv_genl g;
	struct dfkv_client *c;
	int fd;			/* /dev/dfkv bound to NODE, for checks */
};

FIXTURE_VARIANT(as) {
	uint32_t transport;
	const char *members;
};

FIXTURE_VARIANT_ADD(as, local) {
	.transport = DFKV_TRANSPORT_LOCAL,
	.members = NODE,
};

FIXTURE_VARIANT_ADD(as, tcp) {
	.transport = DFKV_TRANSPORT_TCP,
	.members = NODE "=127.0.0.1:7413",
};

static int client_open(const FIXTURE_VARIANT(as) *variant,
		       struct dfkv_client **c)
{
	struct dfkv_client_options_v2 o = {
		.size = sizeof(o), .transport = variant->transport,
		.members = variant->members, .ns = NS, .ns_len = sizeof(NS) - 1,
		.conns_per_peer = 2, .batch_concurrency = 8,
		.io_timeout_ms = 5000, .cooldown_ms = 500,
	};

	return dfkv_open_v2(&o, c);
}

FIXTURE_SETUP(as)
{
	ASSERT_EQ(0, dfkv_test_load());
	ASSERT_EQ(0, dfkv_genl_open(&self->g));
	dfkv_test_node_del(&self->g, NODE);
	ASSERT_EQ(0, dfkv_test_node_add(&self->g, NODE, 256 << 20, 0, 1));
	if (variant->transport == DFKV_TRANSPORT_TCP)
		ASSERT_EQ(0, dfkv_test_listen(&self->g, NODE, "127.0.0.1", PORT,
					      1));
	self->fd = dfkv_test_open(NODE);
	ASSERT_LE(0, self->fd);
	ASSERT_EQ(0, client_open(variant, &self->c));
}

FIXTURE_TEARDOWN(as)
{
	dfkv_close(self->c);
	close(self->fd);
	dfkv_test_node_del(&self->g, NODE);
	dfkv_genl_close(&self->g);
}

/* Key i of s on the node, read with a plain ioctl: 1 present (and its
 * bytes are s's), 0 absent, -1 present but wrong. */
static int on_node(int fd, const struct async_set *s, size_t i)
{
	static uint8_t buf[VLEN];
	struct dfkv_ioc_op o;
	struct dfkv_key k;

	if (dfkv_block_key(NS, sizeof(NS) - 1, s->keys[i], s->kl[i], &k) ||
	    dfkv_test_get(fd, &k, buf, sizeof(buf), 0, 0, &o))
		return -1;
	if (o.status == DFKV_STATUS_NOT_FOUND)
		return 0;
	return o.status == DFKV_STATUS_OK && o.data_len == VLEN &&
	       !memcmp(buf, s->vals + i * VLEN, VLEN) ? 1 : -1;
}

TEST_F(as, thousands_in_flight)
{
	enum { NB = 16, NK = 500 };
	struct dfkv_batch *got[1];
	struct async_set s;

	ASSERT_EQ(0, async_set_init(&s, "tif", NB * NK, VLEN));
	/* NB batches at once, each reaped once with every PUT OK */
	ASSERT_EQ(0, async_run_all(self->c, DFKV_OP_PUT, &s, NB, NK));
	/* byte-exact on the node, as the library's plain ioctls see it */
	for (size_t i = 0; i < NB * NK; i += 97)
		ASSERT_EQ(1, on_node(self->fd, &s, i));
	EXPECT_EQ(0, dfkv_reap(self->c, got, 1));
	async_set_outs(&s);
	ASSERT_EQ(0, async_run_all(self->c, DFKV_OP_GET, &s, NB, NK));
	EXPECT_EQ(0, memcmp(s.vals, s.outs, (size_t)NB * NK * VLEN));
	async_set_free(&s);
}

TEST_F(as, probe_lease_touch_exist)
{
	struct dfkv_batch *b[4], *got[4];
	struct dfkv_lease *l;
	struct async_set s;
	uint64_t len;
	int st;

	ASSERT_EQ(0, async_set_init(&s, "plt", 8, VLEN));
	for (size_t i = 0; i < 8; i++)
		if (i != 5)
			ASSERT_EQ(0, dfkv_put_sg(self->c, s.keys[i], s.kl[i],
						 s.iovs[i], 2));
	b[0] = async_submit(self->c, DFKV_OP_PROBE, &s, 0, 8, 0);
	b[1] = async_submit(self->c, DFKV_OP_LEASE, &s, 0, 8, 1);
	b[2] = async_submit(self->c, DFKV_OP_TOUCH, &s, 0, 8, 2);
	b[3] = async_submit(self->c, DFKV_OP_EXIST, &s, 0, 8, 3);
	for (int i = 0; i < 4; i++)
		ASSERT_NE(NULL, b[i]);
	ASSERT_EQ(4, async_reap(self->c, got, 4));
	EXPECT_EQ(5, dfkv_batch_hits(b[0]));
	ASSERT_EQ(0, dfkv_batch_result(b[0], 7, &st, &len));
	EXPECT_EQ(VLEN, len);
	EXPECT_EQ(0, dfkv_batch_status(b[1]));
	EXPECT_EQ(5, dfkv_batch_hits(b[1]));
	l = dfkv_batch_lease(b[1]);
	ASSERT_NE(NULL, l);
	EXPECT_EQ(0, dfkv_release(self->c, l));
	EXPECT_EQ(0, dfkv_batch_status(b[2]));
	for (uint64_t i = 0; i < 8; i++) {
		ASSERT_EQ(0, dfkv_batch_result(b[3], i, &st, &len));
		EXPECT_EQ(i == 5 ? DFKV_STATUS_NOT_FOUND : DFKV_STATUS_OK, st);
		EXPECT_EQ(i == 5 ? 0 : VLEN, len);
	}
	for (int i = 0; i < 4; i++)
		dfkv_batch_free(b[i]);
	async_set_free(&s);
}

TEST_F(as, cancel)
{
	enum { NA = 10000, NB = 100 };
	struct dfkv_batch *a, *b, *got[2];
	size_t ran = 0, cancelled = 0;
	struct async_set s;
	int st;

	ASSERT_EQ(0, async_set_init(&s, "can", NA + NB, VLEN));
	/* b queues behind a's hundreds of rounds: cancelled before it is
	 * taken, none of it reaches the node */
	a = async_submit(self->c, DFKV_OP_PUT, &s, 0, NA, 0);
	b = async_submit(self->c, DFKV_OP_PUT, &s, NA, NB, 1);
	ASSERT_NE(NULL, a);
	ASSERT_NE(NULL, b);
	EXPECT_EQ(0, dfkv_batch_cancel(b));
	EXPECT_EQ(0, dfkv_batch_cancel(a));	/* a: what is not sent yet */
	ASSERT_EQ(2, async_reap(self->c, got, 2));
	EXPECT_EQ(DFKV_E_CANCELLED, dfkv_batch_status(b));
	for (size_t i = 0; i < NB; i++) {
		ASSERT_EQ(0, dfkv_batch_result(b, i, &st, NULL));
		EXPECT_EQ(DFKV_E_CANCELLED, st);
		EXPECT_EQ(0, on_node(self->fd, &s, NA + i));
	}
	/* a ran a prefix: what ran is on the node, the rest is not */
	for (size_t i = 0; i < NA; i++) {
		ASSERT_EQ(0, dfkv_batch_result(a, i, &st, NULL));
		ASSERT_TRUE(st == DFKV_STATUS_OK || st == DFKV_E_CANCELLED);
		ASSERT_EQ(st == DFKV_STATUS_OK ? 1 : 0, on_node(self->fd, &s, i));
		ran += st == DFKV_STATUS_OK;
		cancelled += st == DFKV_E_CANCELLED;
	}
	EXPECT_LT(0, cancelled);
	EXPECT_EQ(cancelled ? DFKV_E_CANCELLED : 0, dfkv_batch_status(a));
	TH_LOG("cancelled %zu of %u after %zu ran", cancelled, NA, ran);
	dfkv_batch_free(a);
	dfkv_batch_free(b);
	async_set_free(&s);
}

TEST_F(as, close_with_work_outstanding)
{
	enum { NB = 20, NK = 500 };
	struct async_set s;
	int present = 0;

	ASSERT_EQ(0, async_set_init(&s, "cls", NB * NK, VLEN));
	for (size_t i = 0; i < NB; i++) {
		struct dfkv_batch *b;

		b = async_submit(self->c, DFKV_OP_PUT, &s, i * NK, NK, i);

		ASSERT_NE(NULL, b);
		if (i % 3 == 0)
			dfkv_batch_free(b);	/* let go of before it is done */
	}
	dfkv_close(self->c);		/* completes and frees all of them */
	self->c = NULL;
	/* what ran is whole on the node; the node still serves */
	for (size_t i = 0; i < NB * NK; i += 53) {
		int r = on_node(self->fd, &s, i);

		ASSERT_LE(0, r);
		present += r;
	}
	TH_LOG("%d sampled keys stored before the close", present);
	ASSERT_EQ(0, client_open(variant, &self->c));
	ASSERT_EQ(0, dfkv_put(self->c, "after", 5, "close", 5));
	EXPECT_EQ(0, dfkv_exist(self->c, "after", 5, NULL));
	async_set_free(&s);
}

TEST_F(as, deleted_node_completes_with_errors)
{
	enum { N = 2000 };
	struct dfkv_batch *get, *put, *got[2];
	struct async_set s;
	int st;

	ASSERT_EQ(0, async_set_init(&s, "dead", N, VLEN));
	put = async_submit(self->c, DFKV_OP_PUT, &s, 0, N, 0);
	ASSERT_NE(NULL, put);
	ASSERT_EQ(0, dfkv_batch_wait(put, -1));
	ASSERT_EQ(0, dfkv_batch_status(put));
	dfkv_batch_free(put);
	ASSERT_EQ(0, dfkv_test_node_del(&self->g, NODE));
	async_set_outs(&s);
	get = async_submit(self->c, DFKV_OP_GET, &s, 0, N, 0);
	put = async_submit(self->c, DFKV_OP_PUT, &s, 0, N, 1);
	ASSERT_NE(NULL, get);
	ASSERT_NE(NULL, put);
	ASSERT_EQ(2, async_reap(self->c, got, 2));
	EXPECT_EQ(0, dfkv_batch_status(get));
	EXPECT_EQ(DFKV_E_UNAVAILABLE, dfkv_batch_status(put));
	for (size_t i = 0; i < N; i++) {
		uint64_t len;

		ASSERT_EQ(0, dfkv_batch_result(get, i, &st, &len));
		ASSERT_EQ(DFKV_STATUS_NOT_FOUND, st);
		ASSERT_EQ(0, len);
		ASSERT_EQ(0, dfkv_batch_result(put, i, &st, NULL));
		ASSERT_EQ(DFKV_E_UNAVAILABLE, st);
	}
	dfkv_batch_free(get);
	dfkv_batch_free(put);
	async_set_free(&s);
}

TEST_HARNESS_MAIN
