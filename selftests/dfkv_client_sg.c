// SPDX-License-Identifier: GPL-2.0
/*
 * libdfkv scatter-gather (dfkv_put_sg, dfkv_get_sg and their batches)
 * against the real module: through /dev/dfkv (single ioctls and
 * DFKV_IOC_BATCH entries with DFKV_OP_F_IOV) and over TCP to the node's
 * in-kernel listener.  Values must reach the node byte-exact (checked
 * with plain ioctls, independently of the library), come back scattered
 * across irregular lists with empty entries, honour the range and
 * TOO_LARGE rules with the iovecs' total as capacity, and fail closed on
 * bad lists before anything reaches the node.  Links build/lib/libdfkv.a.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kselftest_harness.h"
#include "testlib.h"
#include "dfkv.h"
#include "client_sg.h"
#include "client_stats.h"

#define NODE	"t-clsg"
#define PORT	7412
#define NS	"client-sg-test"

FIXTURE(sg) {
	struct dfkv_genl g;
	struct dfkv_client *c;
	int fd;			/* /dev/dfkv bound to NODE, for checks */
};

FIXTURE_VARIANT(sg) {
	uint32_t transport;
	const char *members;
};

FIXTURE_VARIANT_ADD(sg, local) {
	.transport = DFKV_TRANSPORT_LOCAL,
	.members = NODE,
};

FIXTURE_VARIANT_ADD(sg, tcp) {
	.transport = DFKV_TRANSPORT_TCP,
	.members = NODE "=127.0.0.1:7412",
};

FIXTURE_SETUP(sg)
{
	struct dfkv_client_options_v2 o = {
		.size = sizeof(o), .transport = variant->transport,
		.members = variant->members, .ns = NS, .ns_len = sizeof(NS) - 1,
		.conns_per_peer = 2, .batch_concurrency = 8,
	};

	ASSERT_EQ(0, dfkv_test_load());
	ASSERT_EQ(0, dfkv_genl_open(&self->g));
	dfkv_test_node_del(&self->g, NODE);
	ASSERT_EQ(0, dfkv_test_node_add(&self->g, NODE, 256 << 20, 0, 1));
	if (variant->transport == DFKV_TRANSPORT_TCP)
		ASSERT_EQ(0, dfkv_test_listen(&self->g, NODE, "127.0.0.1", PORT,
					      1));
	self->fd = dfkv_test_open(NODE);
	ASSERT_LE(0, self->fd);
	ASSERT_EQ(0, dfkv_open_v2(&o, &self->c));
}

FIXTURE_TEARDOWN(sg)
{
	dfkv_close(self->c);
	close(self->fd);
	dfkv_test_node_del(&self->g, NODE);
	dfkv_genl_close(&self->g);
}

static void pattern(uint8_t *p, size_t n, unsigned int seed)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (uint8_t)(seed * 131 + i * 7 + (i >> 9));
}

/* The node holds exactly want (len bytes) under key: a plain GET ioctl. */
static int node_has(struct __test_metadata *_metadata,
		    FIXTURE_DATA(sg) *self, const char *key, const void *want,
		    uint64_t len)
{
	struct dfkv_ioc_op o;
	struct dfkv_key bk;
	const char *m;
	uint8_t *got = malloc(len + 1);
	int ok;

	if (!got)
		return 0;
	if (dfkv_locate(self->c, key, strlen(key), &m, &bk) ||
	    dfkv_test_get(self->fd, &bk, got, len + 1, 0, 0, &o)) {
		free(got);
		return 0;
	}
	ok = o.status == DFKV_STATUS_OK && o.data_len == len &&
	     !memcmp(got, want, len);
	if (!ok)
		TH_LOG("%s: status %u data_len %llu", key, o.status,
		       (unsigned long long)o.data_len);
	free(got);
	return ok;
}

TEST_F(sg, roundtrip_byte_exact)
{
	static const uint64_t sizes[] = { 1, 4095, 4097, 65537, (1 << 20) + 3,
					  (5 << 20) + 1 };
	static const uint64_t put_pat[] = { 0, 1, 4096, 0, 13, 70000, 0, 3 };
	static const uint64_t get_pat[] = { 5, 0, 1 << 20, 0, 1, 4095 };
	static struct dfkv_iov piov[DFKV_IOV_MAX], giov[DFKV_IOV_MAX];
	const char *mine = variant->transport == DFKV_TRANSPORT_LOCAL ?
		"local" : "tcp";

	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		uint64_t n = sizes[i], len, stored;
		uint8_t *in = malloc(n), *out = malloc(n + 100);
		char key[32];
		size_t np, ng;

		ASSERT_NE(NULL, in);
		ASSERT_NE(NULL, out);
		snprintf(key, sizeof(key), "rt-%zu", i);
		pattern(in, n, (unsigned int)i);
		np = sg_split(in, n, put_pat, 8, piov, DFKV_IOV_MAX);
		ASSERT_EQ(0, dfkv_put_sg(self->c, key, strlen(key), piov, np));
		EXPECT_TRUE(node_has(_metadata, self, key, in, n));

		memset(out, 0, n + 100);
		ng = sg_split(out, n + 100, get_pat, 6, giov, DFKV_IOV_MAX);
		ASSERT_EQ(0, dfkv_get_sg(self->c, key, strlen(key), 0, 0, giov,
					 ng, &len, &stored));
		EXPECT_EQ(n, len);
		EXPECT_EQ(n, stored);
		EXPECT_EQ(0, memcmp(in, out, n));
		EXPECT_EQ(0, out[n]);

		/* a plain PUT scattered back */
		snprintf(key, sizeof(key), "plain-%zu", i);
		ASSERT_EQ(0, dfkv_put(self->c, key, strlen(key), in, n));
		memset(out, 0, n);
		ASSERT_EQ(0, dfkv_get_sg(self->c, key, strlen(key), 0, 0, giov,
					 ng, &len, NULL));
		EXPECT_EQ(n, len);
		EXPECT_EQ(0, memcmp(in, out, n));
		free(in);
		free(out);
	}
	/* the transport the variant names carried all of it */
	EXPECT_LT(0, client_reqs(self->c, mine));
	EXPECT_EQ(0, client_reqs(self->c, strcmp(mine, "tcp") ? "tcp" : "local"));
}

TEST_F(sg, iovec_count_limits)
{
	static uint8_t in[DFKV_IOV_MAX * 3], out[DFKV_IOV_MAX * 3];
	static struct dfkv_iov iov[DFKV_IOV_MAX + 1];
	uint64_t len = 9, stored = 9;

	pattern(in, sizeof(in), 5);
	for (size_t i = 0; i < DFKV_IOV_MAX; i++)
		iov[i] = (struct dfkv_iov){ in + 3 * i, 3 };
	ASSERT_EQ(0, dfkv_put_sg(self->c, "max", 3, iov, DFKV_IOV_MAX));
	EXPECT_TRUE(node_has(_metadata, self, "max", in, sizeof(in)));
	for (size_t i = 0; i < DFKV_IOV_MAX; i++)
		iov[i] = (struct dfkv_iov){ out + 3 * i, 3 };
	ASSERT_EQ(0, dfkv_get_sg(self->c, "max", 3, 0, 0, iov, DFKV_IOV_MAX,
				 &len, &stored));
	EXPECT_EQ(sizeof(in), len);
	EXPECT_EQ(0, memcmp(in, out, sizeof(in)));

	/* DFKV_IOV_MAX entries plus empty ones still count: refused */
	iov[DFKV_IOV_MAX] = (struct dfkv_iov){ NULL, 0 };
	EXPECT_EQ(DFKV_E_INVAL, dfkv_put_sg(self->c, "over", 4, iov,
					    DFKV_IOV_MAX + 1));
	EXPECT_EQ(DFKV_E_INVAL, dfkv_get_sg(self->c, "max", 3, 0, 0, iov,
					    DFKV_IOV_MAX + 1, &len, &stored));
	EXPECT_EQ(0, len);
	EXPECT_EQ(0, stored);
	EXPECT_EQ(DFKV_STATUS_NOT_FOUND, dfkv_exist(self->c, "over", 4, NULL));
}

TEST_F(sg, range_rules)
{
	const char *repo = getenv("DFKV_REPO");
	char path[512];

	snprintf(path, sizeof(path), "%s/selftests/sg-ranges.json",
		 repo ? repo : "..");
	sg_check_ranges(_metadata, self->c, path, pattern);
}

TEST_F(sg, fail_closed)
{
	uint8_t a[8] = "abcdefg", b[8];
	struct dfkv_iov empty[2] = { { a, 0 }, { NULL, 0 } };
	struct dfkv_iov bad[2] = { { a, 4 }, { NULL, 4 } };
	struct dfkv_iov out[1] = { { b, sizeof(b) } };
	uint64_t len = 5, stored = 5;

	EXPECT_EQ(DFKV_E_INVAL, dfkv_put_sg(self->c, "k", 1, NULL, 1));
	EXPECT_EQ(DFKV_E_INVAL, dfkv_put_sg(self->c, "k", 1, bad, 0));
	EXPECT_EQ(DFKV_E_INVAL, dfkv_put_sg(self->c, "k", 1, bad, 2));
	EXPECT_EQ(DFKV_E_INVAL, dfkv_put_sg(self->c, NULL, 1, out, 1));
	EXPECT_EQ(DFKV_STATUS_INVALID, dfkv_put_sg(self->c, "k", 1, empty, 2));
	EXPECT_EQ(DFKV_E_INVAL, dfkv_get_sg(self->c, "k", 1, 0, 0, empty, 2,
					    &len, &stored));
	EXPECT_EQ(0, len);
	EXPECT_EQ(0, stored);
	EXPECT_EQ(DFKV_E_INVAL, dfkv_get_sg(self->c, "", 0, 0, 0, out, 1,
					    &len, &stored));
	EXPECT_EQ(DFKV_E_INVAL, dfkv_get_sg(self->c, "k", 1, 0, 0, out, 1,
					    NULL, NULL));
	EXPECT_EQ(0, dfkv_test_stat(&self->g, NODE, DFKV_STAT_OBJECTS));
	EXPECT_EQ(DFKV_STATUS_NOT_FOUND,
		  dfkv_get_sg(self->c, "k", 1, 0, 0, out, 1, &len, &stored));
}

TEST_F(sg, batches)
{
	enum { N = 100 };
	static uint8_t in[N][9000], out[N][9000];
	static struct dfkv_iov piov[N][6], giov[N][6];
	static const uint64_t pp[] = { 1, 0, 4095, 2, 0 };
	static const uint64_t gp[] = { 4096, 0, 1 };
	const struct dfkv_iov *pv[N], *gv[N];
	const void *keys[N];
	uint64_t klens[N], lens[N];
	size_t pc[N], gc[N];
	char names[N][16];
	int st[N];

	for (int i = 0; i < N; i++) {
		klens[i] = (uint64_t)snprintf(names[i], sizeof(names[i]),
					      "b-%d", i);
		keys[i] = names[i];
		pattern(in[i], 9000, (unsigned int)i + 1);
		pc[i] = sg_split(in[i], 9000 - (uint64_t)i * 17, pp, 5, piov[i], 6);
		pv[i] = piov[i];
		gc[i] = sg_split(out[i], 9000, gp, 3, giov[i], 6);
		gv[i] = giov[i];
	}
	pc[10] = 0;				/* a bad slot */
	EXPECT_EQ(N - 1, dfkv_put_sg_batch(self->c, N, keys, klens, pv, pc, st));
	EXPECT_EQ(DFKV_E_INVAL, st[10]);
	for (int i = 0; i < N; i += 9)
		if (i != 10)
			EXPECT_TRUE(node_has(_metadata, self, names[i], in[i],
					     9000 - (uint64_t)i * 17));

	gc[20] = 1;				/* 4096 bytes: too small */
	EXPECT_EQ(N - 2, dfkv_get_sg_batch(self->c, N, keys, klens, gv, gc,
					   lens, st));
	EXPECT_EQ(DFKV_STATUS_NOT_FOUND, st[10]);
	EXPECT_EQ(DFKV_STATUS_TOO_LARGE, st[20]);
	EXPECT_EQ(9000 - 20 * 17, lens[20]);
	for (int i = 0; i < N; i++) {
		if (i == 10 || i == 20)
			continue;
		EXPECT_EQ(0, st[i]);
		EXPECT_EQ(9000 - (uint64_t)i * 17, lens[i]);
		EXPECT_EQ(0, memcmp(in[i], out[i], (size_t)lens[i]));
	}
}

TEST_HARNESS_MAIN
