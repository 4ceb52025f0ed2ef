// SPDX-License-Identifier: GPL-2.0
/*
 * Unit tests of libdfkv's Ketama ring (SPEC.md 1.4): the 12 golden routes,
 * the disk probe offset, weights, stability under membership change, and
 * rejection of bad members.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <string.h>

/* kselftest_harness.h (6.1) is not -Wextra clean */
#pragma GCC diagnostic ignored "-Wunused-parameter"
#pragma GCC diagnostic ignored "-Wsign-compare"
#pragma GCC diagnostic ignored "-Wmisleading-indentation"
#include "kselftest_harness.h"
#include "dfkv.h"

static void unhex16(const char *h, uint8_t out[16])
{
	for (int i = 0; i < 16; i++) {
		unsigned int b;

		sscanf(h + 2 * i, "%2x", &b);
		out[i] = (uint8_t)b;
	}
}

/* golden-vectors.json: ketama[0] */
static const struct dfkv_ring_member GOLDEN_MEMBERS[] = {
	{ "node-a", 1 }, { "node-b", 1 }, { "node-c", 2 },
};
static const struct { const char *id, *node; } GOLDEN_ROUTES[] = {
	{ "1b15a4a4c73eaf41da7a19e3d0715379", "node-b" },
	{ "ce85c2383cfdfb39e9257cdf8b93de9d", "node-c" },
	{ "39f1014471238bed39feebd76a44f00a", "node-c" },
	{ "02be29be5fcd99d7dce6edbdc70173aa", "node-b" },
	{ "52f22665a60c12d289185d950ee88136", "node-a" },
	{ "09166f6b113d178d6c0fd3901ff239a1", "node-a" },
	{ "a095f20f9395650cf9380b8edb224a6b", "node-c" },
	{ "248a1e924e8fd0ae2e1a9492a3305f18", "node-b" },
	{ "8cb610900f9e347fae886dc6507795ec", "node-c" },
	{ "745c4c3fcb2eb2c73e14934c867ee057", "node-a" },
	{ "ba72499bfa121e836b2ac15726ee7d6b", "node-b" },
	{ "0af6ab13c38e92cae0d15057b159987f", "node-b" },
};

TEST(golden_routes)
{
	struct dfkv_ring *r;
	uint8_t id[16];
	size_t m;

	ASSERT_EQ(0, dfkv_ring_build(GOLDEN_MEMBERS, 3, &r));
	ASSERT_EQ(3, dfkv_ring_size(r));
	for (size_t i = 0; i < sizeof(GOLDEN_ROUTES) / sizeof(GOLDEN_ROUTES[0]); i++) {
		unhex16(GOLDEN_ROUTES[i].id, id);
		ASSERT_EQ(0, dfkv_ring_route(r, id, DFKV_PROBE_NODE, &m));
		EXPECT_STREQ(GOLDEN_ROUTES[i].node, dfkv_ring_member_name(r, m)) {
			TH_LOG("route %zu (%s)", i, GOLDEN_ROUTES[i].id);
		}
	}
	dfkv_ring_free(r);
}

TEST(member_order_does_not_matter)
{
	const struct dfkv_ring_member rev[] = {
		{ "node-c", 2 }, { "node-b", 1 }, { "node-a", 1 },
	};
	struct dfkv_ring *a, *b;
	uint8_t id[16];
	size_t ma, mb;

	ASSERT_EQ(0, dfkv_ring_build(GOLDEN_MEMBERS, 3, &a));
	ASSERT_EQ(0, dfkv_ring_build(rev, 3, &b));
	for (uint32_t i = 0; i < 5000; i++) {
		memset(id, 0, sizeof(id));
		memcpy(id, &(uint32_t){ i * 2654435761u }, 4);
		ASSERT_EQ(0, dfkv_ring_route(a, id, 0, &ma));
		ASSERT_EQ(0, dfkv_ring_route(b, id, 0, &mb));
		ASSERT_STREQ(dfkv_ring_member_name(a, ma), dfkv_ring_member_name(b, mb));
	}
	dfkv_ring_free(a);
	dfkv_ring_free(b);
}

TEST(disk_probe_offset)
{
	const struct dfkv_ring_member disks[] = {
		{ "nvme0n1", 1 }, { "nvme1n1", 1 }, { "nvme2n1", 3 },
	};
	struct dfkv_ring *r;
	uint8_t id[16], moved[16];
	size_t a, b;

	ASSERT_EQ(0, dfkv_ring_build(disks, 3, &r));
	for (int i = 0; i < 12; i++) {
		unhex16(GOLDEN_ROUTES[i].id, id);
		memset(moved, 0x55, sizeof(moved));
		memcpy(moved, id + 4, 4);
		ASSERT_EQ(0, dfkv_ring_route(r, id, DFKV_PROBE_DISK, &a));
		ASSERT_EQ(0, dfkv_ring_route(r, moved, DFKV_PROBE_NODE, &b));
		EXPECT_EQ(a, b);
	}
	EXPECT_EQ(0, dfkv_ring_route(r, id, 12, &a));
	EXPECT_EQ(DFKV_E_INVAL, dfkv_ring_route(r, id, 13, &a));
	dfkv_ring_free(r);
}

TEST(wrap_and_extremes)
{
	const struct dfkv_ring_member one[] = { { "solo", 1 } };
	struct dfkv_ring *r;
	uint8_t id[16];
	size_t m = 9;

	ASSERT_EQ(0, dfkv_ring_build(one, 1, &r));
	memset(id, 0xff, sizeof(id));	/* above every point: wraps */
	ASSERT_EQ(0, dfkv_ring_route(r, id, 0, &m));
	EXPECT_EQ(0, m);
	memset(id, 0, sizeof(id));
	ASSERT_EQ(0, dfkv_ring_route(r, id, 0, &m));
	EXPECT_EQ(0, m);
	dfkv_ring_free(r);
}

TEST(weights_and_stability)
{
	const struct dfkv_ring_member four[] = {
		{ "n1", 1 }, { "n2", 1 }, { "n3", 1 }, { "n4", 3 },
	};
	struct dfkv_ring *all, *three;
	size_t count[4] = { 0 }, moved = 0, ma, mb;
	const int N = 60000;
	uint8_t id[16] = { 0 };

	ASSERT_EQ(0, dfkv_ring_build(four, 4, &all));
	ASSERT_EQ(0, dfkv_ring_build(four, 3, &three));	/* n4 leaves */
	for (int i = 0; i < N; i++) {
		uint32_t v = (uint32_t)i * 2654435761u;

		memcpy(id, &v, 4);
		ASSERT_EQ(0, dfkv_ring_route(all, id, 0, &ma));
		ASSERT_EQ(0, dfkv_ring_route(three, id, 0, &mb));
		count[ma]++;
		if (ma != 3) {
			EXPECT_EQ(ma, mb);	/* only n4's keys move */
			moved += ma != mb;
		}
	}
	EXPECT_EQ(0, moved);
	/* n4 has half the weight: expect roughly half the keys */
	EXPECT_GT(count[3], N * 35 / 100);
	EXPECT_LT(count[3], N * 65 / 100);
	for (int i = 0; i < 3; i++) {
		EXPECT_GT(count[i], N / 12);
		EXPECT_LT(count[i], N * 3 / 12);
	}
	dfkv_ring_free(all);
	dfkv_ring_free(three);
}

TEST(build_rejects)
{
	struct dfkv_ring *r = (void *)1;
	struct dfkv_ring_member m[2] = { { "a", 1 }, { "b", 1 } };
	char longname[DFKV_NODE_NAME_MAX + 1];

	m[1].weight = 0;
	EXPECT_EQ(DFKV_E_INVAL, dfkv_ring_build(m, 2, &r));
	EXPECT_EQ(NULL, r);
	m[1].weight = DFKV_WEIGHT_MAX + 1;
	EXPECT_EQ(DFKV_E_INVAL, dfkv_ring_build(m, 2, &r));
	m[1].weight = 1;
	m[1].name = "a";
	EXPECT_EQ(DFKV_E_INVAL, dfkv_ring_build(m, 2, &r));	/* duplicate */
	m[1].name = "";
	EXPECT_EQ(DFKV_E_INVAL, dfkv_ring_build(m, 2, &r));
	m[1].name = NULL;
	EXPECT_EQ(DFKV_E_INVAL, dfkv_ring_build(m, 2, &r));
	memset(longname, 'x', sizeof(longname) - 1);
	longname[sizeof(longname) - 1] = 0;
	longname[DFKV_NODE_NAME_MAX - 1] = 0;	/* 31 chars: fits */
	m[1].name = longname;
	EXPECT_EQ(0, dfkv_ring_build(m, 2, &r));
	dfkv_ring_free(r);
	longname[DFKV_NODE_NAME_MAX - 1] = 'x';	/* 32 chars: too long */
	EXPECT_EQ(DFKV_E_INVAL, dfkv_ring_build(m, 2, &r));
	EXPECT_EQ(DFKV_E_INVAL, dfkv_ring_build(m, 0, &r));
	EXPECT_EQ(DFKV_E_INVAL, dfkv_ring_build(NULL, 2, &r));
	EXPECT_EQ(DFKV_E_INVAL, dfkv_ring_build(m, 1, NULL));
	EXPECT_EQ(DFKV_E_INVAL, dfkv_ring_route(NULL, (uint8_t[16]){ 0 }, 0,
						&(size_t){ 0 }));
	EXPECT_EQ(NULL, dfkv_ring_member_name(NULL, 0));
	dfkv_ring_free(NULL);
}

TEST_HARNESS_MAIN
