// SPDX-License-Identifier: GPL-2.0
/*
 * The "dfkv" generic netlink family: version, node create/delete/set/get,
 * dumps (a disk dump flagged interrupted when a disk leaves during it),
 * tenant stats, latency histograms, events, strict attribute checks with
 * extended-ack messages, CAP_NET_ADMIN for mutations, and
 * nodes of two network namespaces kept apart.
 */
#include <errno.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/wait.h>
#include <sys/ioctl.h>
#include <poll.h>

#include "kselftest_harness.h"
#include "testlib.h"
#include "hist.h"

FIXTURE(nl) {
	struct dfkv_genl g;
};

FIXTURE_SETUP(nl)
{
	ASSERT_EQ(0, dfkv_test_load());
	ASSERT_EQ(0, dfkv_genl_open(&self->g));
}

FIXTURE_TEARDOWN(nl)
{
	dfkv_genl_close(&self->g);
}

struct version {
	char text[64];
	uint32_t abi;
};

static int version_cb(const struct nlmsghdr *nlh, void *data)
{
	const struct nlattr *tb[DFKV_A_MAX + 1];
	struct version *v = data;

	dfkv_genl_parse(nlh, tb);
	if (tb[DFKV_A_VERSION])
		snprintf(v->text, sizeof(v->text), "%s",
			 mnl_attr_get_str(tb[DFKV_A_VERSION]));
	if (tb[DFKV_A_ABI_VERSION])
		v->abi = mnl_attr_get_u32(tb[DFKV_A_ABI_VERSION]);
	return MNL_CB_OK;
}

TEST_F(nl, version)
{
	char buf[MNL_SOCKET_BUFFER_SIZE];
	struct version v = { 0 };
	struct nlmsghdr *nlh = dfkv_genl_msg(&self->g, buf,
					     DFKV_CMD_VERSION_GET, 0);

	ASSERT_EQ(0, dfkv_genl_talk(&self->g, nlh, version_cb, &v));
	EXPECT_EQ(DFKV_ABI_VERSION, v.abi);
	EXPECT_NE(0, v.text[0]);
}

TEST_F(nl, node_rejections_explain_themselves)
{
	char buf[MNL_SOCKET_BUFFER_SIZE];
	struct nlmsghdr *nlh;

	dfkv_test_node_del(&self->g, "t-nl");
	ASSERT_EQ(0, dfkv_test_node_add(&self->g, "t-nl", 4 << 20, 0, 1));
	EXPECT_EQ(-EEXIST, dfkv_test_node_add(&self->g, "t-nl", 4 << 20, 0, 1));
	EXPECT_NE(NULL, strstr(self->g.errmsg, "exists"));
	EXPECT_EQ(-EINVAL, dfkv_test_node_add(&self->g, "bad name", 4 << 20, 0, 1));
	EXPECT_NE(NULL, strstr(self->g.errmsg, "node names"));
	EXPECT_EQ(-EINVAL, dfkv_test_node_add(&self->g, "", 4 << 20, 0, 1));
	/* Below the 1 MiB minimum. */
	EXPECT_EQ(-ERANGE, dfkv_test_node_add(&self->g, "t-small", 4096, 0, 1));

	/* Missing RAM budget. */
	nlh = dfkv_genl_msg(&self->g, buf, DFKV_CMD_NODE_NEW, 0);
	mnl_attr_put_strz(nlh, DFKV_A_NODE_NAME, "t-noram");
	EXPECT_EQ(-EINVAL, dfkv_genl_talk(&self->g, nlh, NULL, NULL));
	EXPECT_NE(NULL, strstr(self->g.errmsg, "RAM"));

	/* Unknown flag bits. */
	nlh = dfkv_genl_msg(&self->g, buf, DFKV_CMD_NODE_NEW, 0);
	mnl_attr_put_strz(nlh, DFKV_A_NODE_NAME, "t-flags");
	mnl_attr_put_u64(nlh, DFKV_A_NODE_RAM_BYTES, 4 << 20);
	mnl_attr_put_u32(nlh, DFKV_A_NODE_FLAGS, 0x80);
	EXPECT_EQ(-EINVAL, dfkv_genl_talk(&self->g, nlh, NULL, NULL));

	/* A name without its NUL, and a wrong attribute length. */
	nlh = dfkv_genl_msg(&self->g, buf, DFKV_CMD_NODE_NEW, 0);
	mnl_attr_put(nlh, DFKV_A_NODE_NAME, 4, "abcd");
	mnl_attr_put_u64(nlh, DFKV_A_NODE_RAM_BYTES, 4 << 20);
	EXPECT_EQ(-EINVAL, dfkv_genl_talk(&self->g, nlh, NULL, NULL));
	nlh = dfkv_genl_msg(&self->g, buf, DFKV_CMD_NODE_NEW, 0);
	mnl_attr_put_strz(nlh, DFKV_A_NODE_NAME, "t-len");
	mnl_attr_put_u32(nlh, DFKV_A_NODE_RAM_BYTES, 4 << 20);
	EXPECT_GT(0, dfkv_genl_talk(&self->g, nlh, NULL, NULL));

	/* The RAM budget is fixed; unknown nodes are named as such. */
	nlh = dfkv_genl_msg(&self->g, buf, DFKV_CMD_NODE_SET, 0);
	mnl_attr_put_strz(nlh, DFKV_A_NODE_NAME, "t-nl");
	mnl_attr_put_u64(nlh, DFKV_A_NODE_RAM_BYTES, 8 << 20);
	EXPECT_EQ(-EOPNOTSUPP, dfkv_genl_talk(&self->g, nlh, NULL, NULL));
	EXPECT_NE(NULL, strstr(self->g.errmsg, "fixed"));
	EXPECT_EQ(-ENOENT, dfkv_test_node_del(&self->g, "t-none"));
	EXPECT_NE(NULL, strstr(self->g.errmsg, "no node"));
	EXPECT_EQ(-1, dfkv_test_stat(&self->g, "t-none", DFKV_STAT_OBJECTS));
	ASSERT_EQ(0, dfkv_test_node_del(&self->g, "t-nl"));
}

/*
 * The connection limits with a ceiling: NODE_NEW refuses one past it
 * (ERANGE, the extended ack pointing at the attribute), NODE_SET takes
 * the ceiling itself.
 */
TEST_F(nl, node_limits_past_their_ceiling_are_refused)
{
	static const struct {
		int attr;
		uint32_t max;
	} lim[] = {
		{ DFKV_A_NODE_FIRST_REQUEST_MS, 3600000 },
		{ DFKV_A_NODE_IDLE_MS, 86400000 },
		{ DFKV_A_NODE_MIN_RATE, 1U << 30 },
	};
	char buf[MNL_SOCKET_BUFFER_SIZE];
	struct nlmsghdr *nlh;
	size_t i;

	dfkv_test_node_del(&self->g, "t-lim");
	ASSERT_EQ(0, dfkv_test_node_add(&self->g, "t-lim", 4 << 20, 0, 1));
	for (i = 0; i < sizeof(lim) / sizeof(lim[0]); i++) {
		uint32_t off;

		nlh = dfkv_genl_msg(&self->g, buf, DFKV_CMD_NODE_NEW, 0);
		mnl_attr_put_strz(nlh, DFKV_A_NODE_NAME, "t-lim-new");
		mnl_attr_put_u64(nlh, DFKV_A_NODE_RAM_BYTES, 4 << 20);
		off = (char *)mnl_nlmsg_get_payload_tail(nlh) - (char *)nlh;
		mnl_attr_put_u32(nlh, lim[i].attr, lim[i].max + 1);
		EXPECT_EQ(-ERANGE, dfkv_genl_talk(&self->g, nlh, NULL, NULL))
			TH_LOG("attribute %d", lim[i].attr);
		EXPECT_EQ(off, self->g.erroff) TH_LOG("attribute %d", lim[i].attr);
		EXPECT_EQ(0, dfkv_test_node_set_u32(&self->g, "t-lim",
						    lim[i].attr, lim[i].max));
	}
	EXPECT_EQ(-ENOENT, dfkv_test_node_del(&self->g, "t-lim-new"));
	ASSERT_EQ(0, dfkv_test_node_del(&self->g, "t-lim"));
}

struct node_seen {
	int count;
	uint64_t max_value;
	uint32_t state, flags;
	const char *want;
};

static int node_cb(const struct nlmsghdr *nlh, void *data)
{
	const struct nlattr *tb[DFKV_A_MAX + 1];
	struct node_seen *s = data;

	dfkv_genl_parse(nlh, tb);
	if (!tb[DFKV_A_NODE_NAME] || !tb[DFKV_A_NODE_STATS])
		return MNL_CB_OK;
	if (!strncmp(mnl_attr_get_str(tb[DFKV_A_NODE_NAME]), "t-dump", 6))
		s->count++;
	if (s->want && !strcmp(mnl_attr_get_str(tb[DFKV_A_NODE_NAME]), s->want)) {
		s->max_value = mnl_attr_get_u64(tb[DFKV_A_NODE_MAX_VALUE]);
		s->state = mnl_attr_get_u32(tb[DFKV_A_NODE_STATE]);
		s->flags = mnl_attr_get_u32(tb[DFKV_A_NODE_FLAGS]);
	}
	return MNL_CB_OK;
}

TEST_F(nl, set_get_and_dump)
{
	char buf[MNL_SOCKET_BUFFER_SIZE], name[32];
	struct node_seen s = { .want = "t-dump-3" };
	struct nlmsghdr *nlh;
	int i;

	for (i = 0; i < 12; i++) {
		snprintf(name, sizeof(name), "t-dump-%d", i);
		dfkv_test_node_del(&self->g, name);
		ASSERT_EQ(0, dfkv_test_node_add(&self->g, name, 1 << 20, 0, 1));
	}
	nlh = dfkv_genl_msg(&self->g, buf, DFKV_CMD_NODE_SET, 0);
	mnl_attr_put_strz(nlh, DFKV_A_NODE_NAME, "t-dump-3");
	mnl_attr_put_u64(nlh, DFKV_A_NODE_MAX_VALUE, 12345);
	mnl_attr_put_u32(nlh, DFKV_A_NODE_STATE, DFKV_NODE_STATE_DRAINING);
	mnl_attr_put_u32(nlh, DFKV_A_NODE_FLAGS, 0);
	ASSERT_EQ(0, dfkv_genl_talk(&self->g, nlh, NULL, NULL));

	/* A dump spanning several messages sees every node once. */
	nlh = dfkv_genl_msg(&self->g, buf, DFKV_CMD_NODE_GET, NLM_F_DUMP);
	ASSERT_EQ(0, dfkv_genl_talk(&self->g, nlh, node_cb, &s));
	EXPECT_EQ(12, s.count);
	EXPECT_EQ(12345, s.max_value);
	EXPECT_EQ(DFKV_NODE_STATE_DRAINING, s.state);
	EXPECT_EQ(0, s.flags);

	/* A draining node refuses new values but serves reads. */
	{
		struct dfkv_key k = dfkv_test_key(1, 1);
		struct dfkv_ioc_op o;
		int fd = dfkv_test_open("t-dump-3");

		ASSERT_LE(0, fd);
		ASSERT_EQ(0, dfkv_test_put(fd, &k, "abc", 3, &o));
		EXPECT_EQ(DFKV_STATUS_BUSY, o.status);
		close(fd);
	}
	for (i = 0; i < 12; i++) {
		snprintf(name, sizeof(name), "t-dump-%d", i);
		ASSERT_EQ(0, dfkv_test_node_del(&self->g, name));
	}
}

static int tenant_cb(const struct nlmsghdr *nlh, void *data)
{
	const struct nlattr *tb[DFKV_A_MAX + 1], *st[DFKV_STAT_MAX + 1];
	int64_t *objects = data;

	dfkv_genl_parse(nlh, tb);
	if (!tb[DFKV_A_TENANT_HASH] || !tb[DFKV_A_TENANT_STATS])
		return MNL_CB_OK;
	dfkv_genl_parse_stats(tb[DFKV_A_TENANT_STATS], st);
	if (mnl_attr_get_u64(tb[DFKV_A_TENANT_HASH]) < 64)
		objects[mnl_attr_get_u64(tb[DFKV_A_TENANT_HASH])] =
			(int64_t)mnl_attr_get_u64(st[DFKV_STAT_OBJECTS]);
	return MNL_CB_OK;
}

TEST_F(nl, stats_per_node_and_tenant)
{
	char buf[MNL_SOCKET_BUFFER_SIZE], val[100];
	int64_t objects[64];
	struct dfkv_ioc_op o;
	struct nlmsghdr *nlh;
	int fd, t, i;

	dfkv_test_node_del(&self->g, "t-stats");
	ASSERT_EQ(0, dfkv_test_node_add(&self->g, "t-stats", 8 << 20, 0, 1));
	fd = dfkv_test_open("t-stats");
	ASSERT_LE(0, fd);
	memset(val, 'v', sizeof(val));
	/* Tenant t stores t objects, 40 tenants: several dump messages. */
	for (t = 1; t <= 40; t++)
		for (i = 0; i < t % 4 + 1; i++) {
			struct dfkv_key k = dfkv_test_key(t, i);

			ASSERT_EQ(0, dfkv_test_put(fd, &k, val, sizeof(val), &o));
		}
	{
		struct dfkv_key k = dfkv_test_key(1, 0), miss = dfkv_test_key(1, 99);

		ASSERT_EQ(0, dfkv_test_get(fd, &k, val, sizeof(val), 0, 0, &o));
		ASSERT_EQ(0, dfkv_test_get(fd, &miss, val, sizeof(val), 0, 0, &o));
	}
	EXPECT_EQ(1, dfkv_test_stat(&self->g, "t-stats", DFKV_STAT_HITS));
	EXPECT_EQ(1, dfkv_test_stat(&self->g, "t-stats", DFKV_STAT_MISSES));
	EXPECT_EQ(40, dfkv_test_stat(&self->g, "t-stats", DFKV_STAT_TENANTS));
	memset(objects, 0xff, sizeof(objects));
	nlh = dfkv_genl_msg(&self->g, buf, DFKV_CMD_TENANT_GET, NLM_F_DUMP);
	mnl_attr_put_strz(nlh, DFKV_A_NODE_NAME, "t-stats");
	ASSERT_EQ(0, dfkv_genl_talk(&self->g, nlh, tenant_cb, objects));
	for (t = 1; t <= 40; t++)
		EXPECT_EQ(t % 4 + 1, objects[t]) TH_LOG("tenant %d", t);
	close(fd);
	ASSERT_EQ(0, dfkv_test_node_del(&self->g, "t-stats"));
}

static int latency_cb(const struct nlmsghdr *nlh, void *data)
{
	const struct nlattr *tb[DFKV_A_MAX + 1], *st[DFKV_STAT_MAX + 1];

	dfkv_genl_parse(nlh, tb);
	if (!tb[DFKV_A_NODE_STATS])
		return MNL_CB_OK;
	dfkv_genl_parse_stats(tb[DFKV_A_NODE_STATS], st);
	if (st[DFKV_STAT_LATENCY])
		dfkv_latency_parse(st[DFKV_STAT_LATENCY], data);
	return MNL_CB_OK;
}

/* The samples of one histogram (0 when the node sent none). */
static uint64_t hist_count(const struct dfkv_latency *lat, uint32_t op,
			   uint32_t transport)
{
	const struct dfkv_hist_info *h = dfkv_latency_find(lat, op, transport);
	uint64_t sum = 0;
	int i;

	if (!h)
		return 0;
	for (i = 0; i < DFKV_HIST_BUCKETS; i++)
		sum += h->buckets[i];
	/* The buckets hold every sample, and the samples took time. */
	if (sum != h->count || !h->sum_ns)
		return UINT64_MAX;
	return h->count;
}

/*
 * N GETs through /dev/dfkv and M over TCP (hits and misses alike) are N
 * and M samples of the GET histograms of their transports, PUTs of the
 * PUT ones; the bytes served over TCP count in bytes_out like the
 * device's.
 */
TEST_F(nl, latency_histograms_count_requests)
{
	enum { N = 37, M = 11, LEN = 3000 };
	char buf[MNL_SOCKET_BUFFER_SIZE];
	static char val[LEN], got[LEN];
	struct dfkv_key k = dfkv_test_key(5, 1), miss = dfkv_test_key(5, 2);
	struct dfkv_latency lat = { 0 };
	struct dfkv_test_resp r;
	struct dfkv_ioc_op o;
	struct nlmsghdr *nlh;
	int fd, sock, i;

	dfkv_test_node_del(&self->g, "t-lat");
	ASSERT_EQ(0, dfkv_test_node_add(&self->g, "t-lat", 8 << 20, 0, 1));
	ASSERT_EQ(0, dfkv_test_listen(&self->g, "t-lat", "127.0.0.1", 17461, 1));
	fd = dfkv_test_open("t-lat");
	ASSERT_LE(0, fd);
	memset(val, 'h', sizeof(val));
	ASSERT_EQ(0, dfkv_test_put(fd, &k, val, sizeof(val), &o));
	for (i = 0; i < N; i++)
		ASSERT_EQ(0, dfkv_test_get(fd, i % 2 ? &miss : &k, got,
					   sizeof(got), 0, 0, &o));
	sock = dfkv_test_tcp_connect(17461);
	ASSERT_LE(0, sock);
	for (i = 0; i < M; i++)
		ASSERT_EQ(DFKV_STATUS_OK,
			  dfkv_test_tcp_call(sock, DFKV_OP_GET, &k, 0, 0, NULL,
					     0, &r, got, sizeof(got)));
	ASSERT_EQ(DFKV_STATUS_OK,
		  dfkv_test_tcp_call(sock, DFKV_OP_PUT, &miss, 0, 0, val, LEN,
				     &r, NULL, 0));
	close(sock);

	nlh = dfkv_genl_msg(&self->g, buf, DFKV_CMD_NODE_GET, 0);
	mnl_attr_put_strz(nlh, DFKV_A_NODE_NAME, "t-lat");
	ASSERT_EQ(0, dfkv_genl_talk(&self->g, nlh, latency_cb, &lat));
	EXPECT_EQ(N, hist_count(&lat, DFKV_HIST_GET, DFKV_HIST_DEV));
	EXPECT_EQ(M, hist_count(&lat, DFKV_HIST_GET, DFKV_HIST_TCP));
	EXPECT_EQ(1, hist_count(&lat, DFKV_HIST_PUT, DFKV_HIST_DEV));
	EXPECT_EQ(1, hist_count(&lat, DFKV_HIST_PUT, DFKV_HIST_TCP));
	EXPECT_EQ(0, hist_count(&lat, DFKV_HIST_GET, DFKV_HIST_RDMA));
	EXPECT_EQ(0, hist_count(&lat, DFKV_HIST_COLD_READ, 0));
	/* (N + 1) / 2 device hits and M TCP ones, LEN bytes each. */
	EXPECT_EQ((int64_t)((N + 1) / 2 + M) * LEN,
		  dfkv_test_stat(&self->g, "t-lat", DFKV_STAT_BYTES_OUT));
	EXPECT_EQ(2 * LEN, dfkv_test_stat(&self->g, "t-lat", DFKV_STAT_BYTES_IN));
	EXPECT_EQ(2, dfkv_test_stat(&self->g, "t-lat", DFKV_STAT_RAM_OBJECTS));
	EXPECT_EQ(2 * LEN,
		  dfkv_test_stat(&self->g, "t-lat", DFKV_STAT_RAM_USED_BYTES));
	close(fd);
	ASSERT_EQ(0, dfkv_test_node_del(&self->g, "t-lat"));
}

static int tenant_count_cb(const struct nlmsghdr *nlh, void *data)
{
	const struct nlattr *tb[DFKV_A_MAX + 1];

	dfkv_genl_parse(nlh, tb);
	if (tb[DFKV_A_TENANT_HASH])
		(*(long *)data)++;
	return MNL_CB_OK;
}

static long tenant_dump_count(struct dfkv_genl *g, const char *node)
{
	char buf[MNL_SOCKET_BUFFER_SIZE];
	struct nlmsghdr *nlh = dfkv_genl_msg(g, buf, DFKV_CMD_TENANT_GET,
					     NLM_F_DUMP);
	long n = 0;

	mnl_attr_put_strz(nlh, DFKV_A_NODE_NAME, node);
	return dfkv_genl_talk(g, nlh, tenant_count_cb, &n) ? -1 : n;
}

/*
 * A tenant's bookkeeping lives only while it has blocks: peers naming
 * random tenants (100,000 PUTs, most evicted again, and PUTs refused for
 * a full node) leave no more tenants than objects, and none once the last
 * block is removed.
 */
TEST_F(nl, tenants_exist_only_with_blocks)
{
	uint64_t seed = 0x2545f4914f6cdd1dULL;
	char val[64], big[48 << 10];
	struct dfkv_ioc_op o;
	int fd, i;

	memset(val, 't', sizeof(val));
	memset(big, 'b', sizeof(big));
	dfkv_test_node_del(&self->g, "t-ten");
	ASSERT_EQ(0, dfkv_test_node_add(&self->g, "t-ten", 2 << 20, 0, 1));
	fd = dfkv_test_open("t-ten");
	ASSERT_LE(0, fd);
	/* Churn: as many PUTs as it takes the node to evict 10,000 blocks. */
	for (i = 0; i < 100000; i++) {
		struct dfkv_key k;

		if (i % 1000 == 0 &&
		    dfkv_test_stat(&self->g, "t-ten", DFKV_STAT_EVICTIONS) >= 10000)
			break;
		seed ^= seed << 13;
		seed ^= seed >> 7;
		seed ^= seed << 17;
		k = dfkv_test_key(seed, i);
		ASSERT_EQ(0, dfkv_test_put(fd, &k, val, sizeof(val), &o));
		ASSERT_EQ(DFKV_STATUS_OK, o.status);
	}
	EXPECT_LE(10000, dfkv_test_stat(&self->g, "t-ten", DFKV_STAT_EVICTIONS));
	EXPECT_LT(0, dfkv_test_stat(&self->g, "t-ten", DFKV_STAT_TENANTS));
	EXPECT_GE(dfkv_test_stat(&self->g, "t-ten", DFKV_STAT_OBJECTS),
		  dfkv_test_stat(&self->g, "t-ten", DFKV_STAT_TENANTS));
	EXPECT_EQ(dfkv_test_stat(&self->g, "t-ten", DFKV_STAT_TENANTS),
		  tenant_dump_count(&self->g, "t-ten"));
	close(fd);
	ASSERT_EQ(0, dfkv_test_node_del(&self->g, "t-ten"));

	/* Refused PUTs leave nothing behind; removing the last block frees. */
	dfkv_test_node_del(&self->g, "t-ten-full");
	ASSERT_EQ(0, dfkv_test_node_add(&self->g, "t-ten-full", 1 << 20, 0, 0));
	fd = dfkv_test_open("t-ten-full");
	ASSERT_LE(0, fd);
	for (i = 0; i < 16; i++) {
		struct dfkv_key k = dfkv_test_key(5, i);

		ASSERT_EQ(0, dfkv_test_put(fd, &k, big, sizeof(big), &o));
		ASSERT_EQ(DFKV_STATUS_OK, o.status);
	}
	for (i = 0; i < 2000; i++) {
		struct dfkv_key k = dfkv_test_key(1000 + i, i);

		ASSERT_EQ(0, dfkv_test_put(fd, &k, big, sizeof(big), &o));
		ASSERT_EQ(DFKV_STATUS_CACHE_FULL, o.status);
	}
	EXPECT_EQ(1, dfkv_test_stat(&self->g, "t-ten-full", DFKV_STAT_TENANTS));
	EXPECT_EQ(1, tenant_dump_count(&self->g, "t-ten-full"));
	for (i = 0; i < 16; i++) {
		struct dfkv_key k = dfkv_test_key(5, i);

		ASSERT_EQ(0, dfkv_test_simple(fd, DFKV_IOC_REMOVE, &k, &o));
	}
	EXPECT_EQ(0, dfkv_test_stat(&self->g, "t-ten-full", DFKV_STAT_TENANTS));
	EXPECT_EQ(0, tenant_dump_count(&self->g, "t-ten-full"));
	close(fd);
	ASSERT_EQ(0, dfkv_test_node_del(&self->g, "t-ten-full"));
}

/*
 * The next event of node t-ev, or DFKV_EVENT_BAD when it carries more
 * than names and a state (anyone may listen: SPEC.md 5): a node event its
 * name, state and phase, a disk event the node's name, the disk's and its
 * state.
 */
#define DFKV_EVENT_BAD 0xbad

static int event_cb(const struct nlmsghdr *nlh, void *data)
{
	const struct genlmsghdr *gh = mnl_nlmsg_get_payload(nlh);
	const struct nlattr *tb[DFKV_A_MAX + 1];
	bool disk = gh->cmd == DFKV_CMD_DISK_EVENT;
	int state = disk ? DFKV_A_DISK_STATE : DFKV_A_NODE_STATE;
	uint32_t *ev = data;
	int a;

	dfkv_genl_parse(nlh, tb);
	if (!tb[DFKV_A_EVENT] || !tb[DFKV_A_NODE_NAME] ||
	    strcmp(mnl_attr_get_str(tb[DFKV_A_NODE_NAME]), "t-ev"))
		return MNL_CB_OK;
	*ev = mnl_attr_get_u32(tb[DFKV_A_EVENT]);
	for (a = 0; a <= DFKV_A_MAX; a++)
		if (tb[a] && a != DFKV_A_EVENT && a != DFKV_A_NODE_NAME &&
		    a != state && !(disk && a == DFKV_A_DISK_NAME) &&
		    !(!disk && a == DFKV_A_NODE_PHASE))
			*ev = DFKV_EVENT_BAD;
	if (!tb[state] || (disk && !tb[DFKV_A_DISK_NAME]) ||
	    (!disk && !tb[DFKV_A_NODE_PHASE]))
		*ev = DFKV_EVENT_BAD;
	else if (!disk && *ev == DFKV_EVENT_NODE_PHASE)
		/* which phase: the event's value plus the phase, one number */
		*ev += 16 * mnl_attr_get_u32(tb[DFKV_A_NODE_PHASE]);
	return MNL_CB_OK;
}

static uint32_t next_event(struct dfkv_genl *ev)
{
	char buf[8192];
	uint32_t e = 0;
	struct pollfd p = { .fd = mnl_socket_get_fd(ev->nl), .events = POLLIN };

	while (!e && poll(&p, 1, 5000) == 1) {
		ssize_t n = mnl_socket_recvfrom(ev->nl, buf, sizeof(buf));

		if (n <= 0)
			break;
		mnl_cb_run(buf, n, 0, 0, event_cb, &e);
	}
	return e;
}

/* next_event()'s value of a NODE_PHASE event that says phase. */
#define PHASE_EVENT(phase)	(DFKV_EVENT_NODE_PHASE + 16 * (phase))

/*
 * A disk's events say nothing of its device path; the node is rebuilding
 * while its disk attaches, and says so before and after.
 */
TEST_F(nl, disk_events_carry_names_and_state_only)
{
	const char *img = "/tmp/dfkv-nl-ev.img";
	struct dfkv_genl ev;
	char dev[64], cmd[160];

	ASSERT_EQ(0, dfkv_test_new_loop(img, dev, sizeof(dev)));
	ASSERT_EQ(0, dfkv_genl_open(&ev));
	ASSERT_EQ(0, dfkv_genl_subscribe(&ev));
	dfkv_test_node_del(&self->g, "t-ev");
	ASSERT_EQ(0, dfkv_test_node_add(&self->g, "t-ev", 4 << 20, 0, 1));
	EXPECT_EQ(DFKV_EVENT_NODE_NEW, next_event(&ev));
	ASSERT_EQ(0, dfkv_test_disk_add(&self->g, "t-ev", dev, "d0", 1))
		TH_LOG("%s", self->g.errmsg);
	EXPECT_EQ(PHASE_EVENT(DFKV_NODE_PHASE_REBUILDING), next_event(&ev));
	EXPECT_EQ(DFKV_EVENT_DISK_ADD, next_event(&ev));
	EXPECT_EQ(PHASE_EVENT(DFKV_NODE_PHASE_UP), next_event(&ev));
	ASSERT_EQ(0, dfkv_test_disk_del(&self->g, "t-ev", "d0"));
	EXPECT_EQ(DFKV_EVENT_DISK_DEL, next_event(&ev));
	ASSERT_EQ(0, dfkv_test_node_del(&self->g, "t-ev"));
	EXPECT_EQ(DFKV_EVENT_NODE_DEL, next_event(&ev));
	dfkv_genl_close(&ev);
	snprintf(cmd, sizeof(cmd), "losetup -d %s; rm -f %s", dev, img);
	EXPECT_EQ(0, system(cmd));
}

struct dump_run {
	int datagrams, msgs, intr;
};

/*
 * A DISK_GET dump of node on a socket of its own, counting its datagrams,
 * its disks and the messages (NLMSG_DONE included) flagged
 * NLM_F_DUMP_INTR.  The first datagram is built while the request is
 * sent; when del names a disk, it is deleted (through g) before the rest
 * is read, so the dump's next call sees the change.
 */
static int disk_dump_run(struct dfkv_genl *g, const char *node,
			 const char *del, struct dump_run *r)
{
	char buf[MNL_SOCKET_BUFFER_SIZE];
	struct nlmsghdr *nlh;
	struct dfkv_genl d;
	int err, n, done = 0;

	memset(r, 0, sizeof(*r));
	err = dfkv_genl_open(&d);
	if (err)
		return err;
	nlh = dfkv_genl_msg(&d, buf, DFKV_CMD_DISK_GET, NLM_F_DUMP);
	mnl_attr_put_strz(nlh, DFKV_A_NODE_NAME, node);
	err = mnl_socket_sendto(d.nl, nlh, nlh->nlmsg_len) < 0 ? -errno : 0;
	if (!err && del)
		err = dfkv_test_disk_del(g, node, del);
	while (!err && !done) {
		n = mnl_socket_recvfrom(d.nl, buf, sizeof(buf));
		if (n <= 0) {
			err = n ? -errno : -EIO;
			break;
		}
		r->datagrams++;
		for (nlh = (struct nlmsghdr *)buf; mnl_nlmsg_ok(nlh, n);
		     nlh = mnl_nlmsg_next(nlh, &n)) {
			r->intr += !!(nlh->nlmsg_flags & NLM_F_DUMP_INTR);
			if (nlh->nlmsg_type == NLMSG_ERROR)
				err = -EIO;
			else if (nlh->nlmsg_type == NLMSG_DONE)
				done = 1;
			else
				r->msgs++;
		}
	}
	dfkv_genl_close(&d);
	return err;
}

/*
 * A disk leaving while a disk dump is under way flags the dump
 * interrupted (the disk generation), so its reader knows to retry; the
 * same dump with nothing changing is not.  The node gets disks until its
 * dump needs more than the one datagram built when it is requested.
 */
TEST_F_TIMEOUT(nl, disk_dump_sees_disks_change, 600)
{
	char img[64], dev[64], cmd[192];
	char devs[48][64];
	struct dump_run r = { 0 };
	int i, nr = 0;

	dfkv_test_node_del(&self->g, "t-dd");
	ASSERT_EQ(0, dfkv_test_node_add(&self->g, "t-dd", 4 << 20, 0, 1));
	while (r.datagrams < 2 && nr < 48) {
		char name[16];

		snprintf(img, sizeof(img), "/tmp/dfkv-nl-dd%d.img", nr);
		snprintf(name, sizeof(name), "d%d", nr);
		ASSERT_EQ(0, dfkv_test_new_loop(img, dev, sizeof(dev)));
		snprintf(devs[nr++], sizeof(devs[0]), "%s", dev);
		ASSERT_EQ(0, dfkv_test_disk_add(&self->g, "t-dd", dev, name, 1))
			TH_LOG("%s", self->g.errmsg);
		ASSERT_EQ(0, disk_dump_run(&self->g, "t-dd", NULL, &r));
		EXPECT_EQ(nr, r.msgs);
		EXPECT_EQ(0, r.intr);
	}
	ASSERT_LE(2, r.datagrams);
	ASSERT_EQ(0, disk_dump_run(&self->g, "t-dd", "d0", &r));
	EXPECT_LE(1, r.intr);
	ASSERT_EQ(0, disk_dump_run(&self->g, "t-dd", NULL, &r));
	EXPECT_EQ(nr - 1, r.msgs);
	EXPECT_EQ(0, r.intr);
	ASSERT_EQ(0, dfkv_test_node_del(&self->g, "t-dd"));
	for (i = 0; i < nr; i++) {
		snprintf(cmd, sizeof(cmd),
			 "losetup -d %.63s; rm -f /tmp/dfkv-nl-dd%d.img", devs[i], i);
		EXPECT_EQ(0, system(cmd));
	}
}

TEST_F(nl, events)
{
	struct dfkv_genl ev;
	char buf[MNL_SOCKET_BUFFER_SIZE];
	struct nlmsghdr *nlh;

	ASSERT_EQ(0, dfkv_genl_open(&ev));
	ASSERT_EQ(0, dfkv_genl_subscribe(&ev));
	dfkv_test_node_del(&self->g, "t-ev");
	ASSERT_EQ(0, dfkv_test_node_add(&self->g, "t-ev", 1 << 20, 0, 1));
	EXPECT_EQ(DFKV_EVENT_NODE_NEW, next_event(&ev));
	nlh = dfkv_genl_msg(&self->g, buf, DFKV_CMD_NODE_SET, 0);
	mnl_attr_put_strz(nlh, DFKV_A_NODE_NAME, "t-ev");
	mnl_attr_put_u32(nlh, DFKV_A_NODE_STATE, DFKV_NODE_STATE_UNHEALTHY);
	ASSERT_EQ(0, dfkv_genl_talk(&self->g, nlh, NULL, NULL));
	EXPECT_EQ(DFKV_EVENT_NODE_STATE, next_event(&ev));
	/* a directory agent learns of a node's addresses at once */
	ASSERT_EQ(0, dfkv_test_listen(&self->g, "t-ev", "127.0.0.1", 7466, 1));
	EXPECT_EQ(DFKV_EVENT_NODE_LISTENERS, next_event(&ev));
	/* a refused listener changes nothing and says nothing */
	ASSERT_NE(0, dfkv_test_listen(&self->g, "t-ev", "127.0.0.1", 7466, 1));
	ASSERT_EQ(0, dfkv_test_listen(&self->g, "t-ev", "127.0.0.1", 7466, 0));
	EXPECT_EQ(DFKV_EVENT_NODE_LISTENERS, next_event(&ev));
	ASSERT_EQ(0, dfkv_test_node_del(&self->g, "t-ev"));
	EXPECT_EQ(DFKV_EVENT_NODE_DEL, next_event(&ev));
	dfkv_genl_close(&ev);
}

static int phase_cb(const struct nlmsghdr *nlh, void *data)
{
	const struct nlattr *tb[DFKV_A_MAX + 1];
	uint32_t *phase = data;

	dfkv_genl_parse(nlh, tb);
	if (tb[DFKV_A_NODE_PHASE])
		*phase = mnl_attr_get_u32(tb[DFKV_A_NODE_PHASE]);
	return MNL_CB_OK;
}

/* NODE_GET's phase of node t-ev; 0 when it reports none. */
static uint32_t node_phase(struct dfkv_genl *g)
{
	char buf[MNL_SOCKET_BUFFER_SIZE];
	struct nlmsghdr *nlh = dfkv_genl_msg(g, buf, DFKV_CMD_NODE_GET, 0);
	uint32_t phase = 0;

	mnl_attr_put_strz(nlh, DFKV_A_NODE_NAME, "t-ev");
	dfkv_genl_talk(g, nlh, phase_cb, &phase);
	return phase;
}

/* A NODE_NEW (1 MiB) or NODE_SET of node t-ev that gives phase. */
static int phase_send(struct dfkv_genl *g, uint8_t cmd, uint32_t phase)
{
	char buf[MNL_SOCKET_BUFFER_SIZE];
	struct nlmsghdr *nlh = dfkv_genl_msg(g, buf, cmd, 0);

	mnl_attr_put_strz(nlh, DFKV_A_NODE_NAME, "t-ev");
	if (cmd == DFKV_CMD_NODE_NEW)
		mnl_attr_put_u64(nlh, DFKV_A_NODE_RAM_BYTES, 1 << 20);
	mnl_attr_put_u32(nlh, DFKV_A_NODE_PHASE, phase);
	return dfkv_genl_talk(g, nlh, NULL, NULL);
}

/*
 * A node created rebuilding (its disks follow) stays so until NODE_SET
 * says up, which it announces; no other value is taken.
 */
TEST_F(nl, phase_of_a_node_created_rebuilding)
{
	struct dfkv_genl ev;

	ASSERT_EQ(0, dfkv_genl_open(&ev));
	ASSERT_EQ(0, dfkv_genl_subscribe(&ev));
	dfkv_test_node_del(&self->g, "t-ev");
	EXPECT_EQ(-EINVAL, phase_send(&self->g, DFKV_CMD_NODE_NEW,
				      DFKV_NODE_PHASE_UP));
	ASSERT_EQ(0, phase_send(&self->g, DFKV_CMD_NODE_NEW,
				DFKV_NODE_PHASE_REBUILDING));
	EXPECT_EQ(DFKV_EVENT_NODE_NEW, next_event(&ev));
	EXPECT_EQ(DFKV_NODE_PHASE_REBUILDING, node_phase(&self->g));
	EXPECT_EQ(-EINVAL, phase_send(&self->g, DFKV_CMD_NODE_SET,
				      DFKV_NODE_PHASE_REBUILDING));
	ASSERT_EQ(0, phase_send(&self->g, DFKV_CMD_NODE_SET,
				DFKV_NODE_PHASE_UP));
	EXPECT_EQ(PHASE_EVENT(DFKV_NODE_PHASE_UP), next_event(&ev));
	EXPECT_EQ(DFKV_NODE_PHASE_UP, node_phase(&self->g));
	/* Up again changes nothing and says nothing. */
	ASSERT_EQ(0, phase_send(&self->g, DFKV_CMD_NODE_SET,
				DFKV_NODE_PHASE_UP));
	ASSERT_EQ(0, dfkv_test_node_del(&self->g, "t-ev"));
	EXPECT_EQ(DFKV_EVENT_NODE_DEL, next_event(&ev));
	dfkv_genl_close(&ev);
}

TEST_F(nl, mutations_need_cap_net_admin)
{
	pid_t pid;
	int status;

	dfkv_test_node_del(&self->g, "t-cap");
	ASSERT_EQ(0, dfkv_test_node_add(&self->g, "t-cap", 1 << 20, 0, 1));
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		struct dfkv_genl g;

		if (setgid(65534) || setuid(65534) || dfkv_genl_open(&g))
			_exit(10);
		if (dfkv_test_node_add(&g, "t-cap2", 1 << 20, 0, 1) != -EPERM)
			_exit(11);
		if (dfkv_test_node_del(&g, "t-cap") != -EPERM)
			_exit(12);
		/* Reading is allowed. */
		if (dfkv_test_stat(&g, "t-cap", DFKV_STAT_OBJECTS) != 0)
			_exit(13);
		_exit(0);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_EQ(0, WEXITSTATUS(status));
	ASSERT_EQ(0, dfkv_test_node_del(&self->g, "t-cap"));
}

TEST_F(nl, network_namespaces_are_isolated)
{
	struct dfkv_key k = dfkv_test_key(2, 2);
	struct dfkv_ioc_op o;
	pid_t pid;
	int status, fd;

	dfkv_test_node_del(&self->g, "t-ns");
	ASSERT_EQ(0, dfkv_test_node_add(&self->g, "t-ns", 4 << 20, 0, 1));
	dfkv_test_node_del(&self->g, "t-host-only");
	ASSERT_EQ(0, dfkv_test_node_add(&self->g, "t-host-only", 1 << 20, 0, 1));
	fd = dfkv_test_open("t-ns");
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, dfkv_test_put(fd, &k, "host", 4, &o));

	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		struct dfkv_genl g;
		char out[8];
		int cfd;

		if (unshare(CLONE_NEWNET) || dfkv_genl_open(&g))
			_exit(10);
		/* Same name, other namespace: a separate, empty node. */
		if (dfkv_test_node_add(&g, "t-ns", 4 << 20, 0, 1))
			_exit(11);
		if (dfkv_test_open("t-host-only") != -ENOENT)
			_exit(12);
		cfd = dfkv_test_open("t-ns");
		if (cfd < 0)
			_exit(13);
		if (dfkv_test_get(cfd, &k, out, sizeof(out), 0, 0, &o) ||
		    o.status != DFKV_STATUS_NOT_FOUND)
			_exit(14);
		if (dfkv_test_put(cfd, &k, "guest!", 6, &o) ||
		    o.status != DFKV_STATUS_OK)
			_exit(15);
		if (dfkv_test_stat(&g, "t-host-only", DFKV_STAT_OBJECTS) != -1)
			_exit(16);
		/* Exit with the node alive: it dies with the namespace. */
		_exit(0);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_EQ(0, WEXITSTATUS(status));
	{
		char out[8] = { 0 };

		ASSERT_EQ(0, dfkv_test_get(fd, &k, out, sizeof(out), 0, 0, &o));
		EXPECT_EQ(4, o.data_len);
		EXPECT_EQ(0, memcmp(out, "host", 4));
	}
	close(fd);
	ASSERT_EQ(0, dfkv_test_node_del(&self->g, "t-ns"));
	ASSERT_EQ(0, dfkv_test_node_del(&self->g, "t-host-only"));
}

TEST_HARNESS_MAIN
