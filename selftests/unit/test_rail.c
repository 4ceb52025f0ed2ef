// SPDX-License-Identifier: GPL-2.0
/*
 * Unit tests of libdfkv's RDMA rail choice (lib/rail.c, apart from
 * verbs): the NUMA-local rails first, credits spreading requests, the
 * once-across-all fallback when no local rail is admissible (counted),
 * an explicit rail set staying the set, quarantine growing with the
 * streak to its cap and ending with a carried request, a down port.
 */
#define _GNU_SOURCE
#include <stdio.h>

/* kselftest_harness.h (6.1) is not -Wextra clean */
#pragma GCC diagnostic ignored "-Wunused-parameter"
#pragma GCC diagnostic ignored "-Wsign-compare"
#pragma GCC diagnostic ignored "-Wmisleading-indentation"
#include "kselftest_harness.h"
#include "rail.h"

/* rails 0, 1 on node 0, rail 2 on node 1, rail 3 unknown */
static const int NUMA4[] = { 0, 0, 1, -1 };

static void rails4(struct dfkv_rails *rs, uint32_t cap)
{
	*rs = (struct dfkv_rails){ 0 };
	dfkv_rails_init(rs, 4, NUMA4, cap, 100, 1000);
}

TEST(local_rails_share_by_credits)
{
	struct dfkv_rails rs;
	int n[4] = { 0 };

	rails4(&rs, 64);
	/* 8 requests in flight from node 0: four on each local rail */
	for (int k = 0; k < 8; k++) {
		int i = dfkv_rail_admit(&rs, 0, 0, 0);

		ASSERT_TRUE(i == 0 || i == 1);
		n[i]++;
	}
	EXPECT_EQ(4, n[0]);
	EXPECT_EQ(4, n[1]);
	EXPECT_EQ(0, rs.numa_fallbacks);
	/* node 1 has one rail */
	EXPECT_EQ(2, dfkv_rail_admit(&rs, 1, 0, 0));
	EXPECT_EQ(2, dfkv_rail_admit(&rs, 1, 0, 0));
}

TEST(unknown_node_competes_on_all)
{
	struct dfkv_rails rs;
	int n[4] = { 0 };

	rails4(&rs, 64);
	for (int k = 0; k < 8; k++)
		n[dfkv_rail_admit(&rs, -1, 0, 0)]++;
	for (int i = 0; i < 4; i++)
		EXPECT_EQ(2, n[i]);
	/* a node with no rail of its own: all of them, no fallback */
	EXPECT_GE(dfkv_rail_admit(&rs, 5, 0, 0), 0);
	EXPECT_EQ(0, rs.numa_fallbacks);
}

TEST(done_gives_credit_back)
{
	struct dfkv_rails rs;
	int i;

	rails4(&rs, 1);
	i = dfkv_rail_admit(&rs, 1, 0, 0);
	ASSERT_EQ(2, i);
	dfkv_rail_done(&rs, i, true);
	EXPECT_EQ(0, rs.r[2].credits);
	EXPECT_EQ(2, dfkv_rail_admit(&rs, 1, 0, 0));
	EXPECT_EQ(0, rs.numa_fallbacks);
}

TEST(credit_bound_local_falls_back_once)
{
	struct dfkv_rails rs;
	int i;

	rails4(&rs, 1);
	ASSERT_EQ(2, dfkv_rail_admit(&rs, 1, 0, 0));
	/* rail 2 is at its cap: the others take it, counted */
	i = dfkv_rail_admit(&rs, 1, 0, 0);
	EXPECT_TRUE(i == 0 || i == 1 || i == 3);
	EXPECT_EQ(1, rs.numa_fallbacks);
	/* every rail at its cap: no rail */
	for (int k = 0; k < 2; k++)
		ASSERT_GE(dfkv_rail_admit(&rs, -1, 0, 0), 0);
	EXPECT_EQ(-1, dfkv_rail_admit(&rs, 1, 0, 0));
	EXPECT_EQ(-1, dfkv_rail_admit(&rs, -1, 0, 0));
}

TEST(quarantined_local_falls_back)
{
	struct dfkv_rails rs;
	int i;

	rails4(&rs, 64);
	dfkv_rail_failed(&rs, 0, 1000);
	dfkv_rail_failed(&rs, 1, 1000);
	i = dfkv_rail_admit(&rs, 0, 0, 1000);
	EXPECT_TRUE(i == 2 || i == 3);
	EXPECT_EQ(1, rs.numa_fallbacks);
	/* the quarantine (100 ms, the first) ends */
	EXPECT_EQ(0, dfkv_rail_admit(&rs, 0, 1u << 1, 1100));
	EXPECT_EQ(1, rs.numa_fallbacks);
}

TEST(skip_is_never_chosen)
{
	struct dfkv_rails rs, two;
	int one = 0;

	rails4(&rs, 64);
	for (int k = 0; k < 8; k++)
		EXPECT_EQ(1, dfkv_rail_admit(&rs, 0, 1u << 0, 0));
	/* the only local rail skipped: the others, as no local rail */
	EXPECT_NE(2, dfkv_rail_admit(&rs, 1, 1u << 2, 0));
	EXPECT_EQ(0, rs.numa_fallbacks);
	/* every rail but one skipped: that one */
	EXPECT_EQ(3, dfkv_rail_admit(&rs, 0, 0x7, 0));
	/* one rail, skipped: none */
	two = (struct dfkv_rails){ 0 };
	dfkv_rails_init(&two, 1, &one, 64, 100, 1000);
	EXPECT_EQ(-1, dfkv_rail_admit(&two, 0, 1u << 0, 0));
}

TEST(explicit_set_is_the_set)
{
	/* rdma_devices named two rails: only they are rails, whatever
	 * the caller's node */
	static const int numa[] = { 1, 1 };
	struct dfkv_rails rs = { 0 };

	dfkv_rails_init(&rs, 2, numa, 64, 100, 1000);
	for (int k = 0; k < 8; k++) {
		int i = dfkv_rail_admit(&rs, 0, 0, 0);

		EXPECT_TRUE(i == 0 || i == 1);
	}
}

TEST(quarantine_grows_to_cap_and_streak_ends)
{
	struct dfkv_rails rs;
	uint64_t now = 5000;
	static const uint64_t want[] = { 100, 200, 400, 800, 1000, 1000 };

	rails4(&rs, 64);
	for (size_t k = 0; k < sizeof(want) / sizeof(want[0]); k++) {
		dfkv_rail_failed(&rs, 3, now);
		EXPECT_EQ(now + want[k], rs.r[3].until_ms);
		/* failures inside a quarantine count, do not extend it */
		dfkv_rail_failed(&rs, 3, now + 1);
		EXPECT_EQ(now + want[k], rs.r[3].until_ms);
		EXPECT_NE(3, dfkv_rail_admit(&rs, -1, 0, now + want[k] - 1));
		now += want[k];
	}
	EXPECT_EQ(6, rs.r[3].quarantines);
	EXPECT_EQ(12, rs.r[3].failures);
	/* a request carried to the end: the next quarantine is short */
	/* the least taken */
	ASSERT_EQ(3, dfkv_rail_admit(&rs, -1, 0, now));
	dfkv_rail_done(&rs, 3, true);
	dfkv_rail_failed(&rs, 3, now);
	EXPECT_EQ(now + 100, rs.r[3].until_ms);
}

TEST(down_port_until_up)
{
	struct dfkv_rails rs;

	rails4(&rs, 64);
	dfkv_rail_port(&rs, 2, false, 0);
	EXPECT_EQ(1, rs.r[2].quarantines);
	/* long after the quarantine, still down */
	EXPECT_NE(2, dfkv_rail_admit(&rs, 1, 0, 100000));
	EXPECT_EQ(1, rs.numa_fallbacks);
	dfkv_rail_port(&rs, 2, false, 100000);
	EXPECT_EQ(1, rs.r[2].failures);
	dfkv_rail_port(&rs, 2, true, 100000);
	EXPECT_EQ(2, dfkv_rail_admit(&rs, 1, 0, 100000));
}

TEST_HARNESS_MAIN
