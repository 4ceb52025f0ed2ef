// SPDX-License-Identifier: GPL-2.0
/*
 * Unit tests of dfkvctl apply's file reader (tools/dfkvctl/apply_conf.c,
 * Documentation/config.md): a full file reads into the settings, listeners,
 * disks and tenants it says, with the defaults it documents; every kind of
 * mistake (syntax, unknown key, bad value, duplicates) is refused with the
 * usage exit status and nothing is returned.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* kselftest_harness.h (6.1) is not -Wextra clean */
#pragma GCC diagnostic ignored "-Wunused-parameter"
#pragma GCC diagnostic ignored "-Wsign-compare"
#pragma GCC diagnostic ignored "-Wmisleading-indentation"
#include "kselftest_harness.h"
#include "dfkv.h"
#include "apply.h"

/* Write text to a fresh file; its path (static buffer). */
static const char *conf_file(const char *text)
{
	static char path[64];
	FILE *f;
	int fd;

	snprintf(path, sizeof(path), "/tmp/test_apply_conf.XXXXXX");
	fd = mkstemp(path);
	if (fd < 0)
		return NULL;
	f = fdopen(fd, "w");
	fputs(text, f);
	fclose(f);
	return path;
}

/* conf_load() of text: its return value, the file removed. */
static int load(const char *text, struct conf *c)
{
	const char *p = conf_file(text);
	int ret;

	if (!p)
		return -1;
	ret = conf_load(p, c);
	unlink(p);
	return ret;
}

TEST(full_file)
{
	struct conf c;
	const struct conf_node *n;
	uint64_t hash;

	ASSERT_EQ(0, load("{ \"nodes\": [ { \"name\": \"cache0\", \"ram\": \"64M\","
			  " \"numa\": \"interleave\", \"max_value\": 1048576,"
			  " \"evict\": false, \"state\": \"draining\", \"idle_ms\": 5,"
			  " \"policy\": \"writearound\", \"ack\": \"disk\", \"dirty\": 50,"
			  " \"auth\": \"required\", \"tenant_quota\": \"1G\","
			  " \"listeners\": [ { \"addr\": \"::\" },"
			  "   { \"addr\": \"10.0.0.1\", \"transport\": \"rdma\" },"
			  "   { \"addr\": \"127.0.0.1\", \"port\": 7410 } ],"
			  " \"disks\": [ { \"path\": \"/dev/vda\" },"
			  "   { \"path\": \"/dev/vdb\", \"name\": \"b\", \"format\": \"blank\","
			  "     \"extent\": \"1M\" } ],"
			  " \"tenants\": [ { \"ns\": \"acme\", \"secret_file\": \"/s\","
			  "   \"second_secret_file\": \"/s2\", \"quota\": 0 },"
			  "   { \"tenant\": \"0123456789abcdef\" } ] } ] }\n",
			  &c));
	ASSERT_EQ(1, c.n_nodes);
	n = &c.nodes[0];
	EXPECT_STREQ("cache0", n->name);
	EXPECT_EQ(64 << 20, n->val[CS_RAM]);
	EXPECT_EQ(DFKV_NUMA_INTERLEAVE, n->val[CS_NUMA]);
	EXPECT_EQ(1 << 20, n->val[CS_MAX_VALUE]);
	EXPECT_TRUE(n->has[CS_EVICT]);
	EXPECT_EQ(0, n->val[CS_EVICT]);
	EXPECT_EQ(DFKV_NODE_STATE_DRAINING, n->val[CS_STATE]);
	EXPECT_EQ(5, n->val[CS_IDLE_MS]);
	EXPECT_FALSE(n->has[CS_MAX_CONNS]);
	EXPECT_EQ(DFKV_TIER_WRITEAROUND, n->val[CS_POLICY]);
	EXPECT_EQ(DFKV_ACK_DISK, n->val[CS_ACK]);
	EXPECT_EQ(50, n->val[CS_DIRTY]);
	EXPECT_EQ(DFKV_AUTH_REQUIRED, n->val[CS_AUTH]);
	EXPECT_EQ(1ULL << 30, n->val[CS_TENANT_QUOTA]);
	ASSERT_EQ(3, n->n_listeners);
	EXPECT_EQ(DFKV_PORT_TCP, n->listeners[0].port);
	EXPECT_EQ(DFKV_LISTENER_RDMA, n->listeners[1].transport);
	EXPECT_EQ(DFKV_PORT_RDMA, n->listeners[1].port);
	EXPECT_EQ(7410, n->listeners[2].port);
	ASSERT_EQ(2, n->n_disks);
	EXPECT_STREQ("vda", n->disks[0].name);
	EXPECT_EQ(FORMAT_NEVER, n->disks[0].format);
	EXPECT_FALSE(n->disks[0].has_extent);
	EXPECT_STREQ("b", n->disks[1].name);
	EXPECT_EQ(FORMAT_BLANK, n->disks[1].format);
	EXPECT_EQ(1 << 20, n->disks[1].extent);
	ASSERT_EQ(2, n->n_tenants);
	ASSERT_EQ(0, dfkv_tenant_hash("acme", 4, &hash));
	EXPECT_EQ(hash, n->tenants[0].hash);
	EXPECT_STREQ("/s", n->tenants[0].secret_file[0]);
	EXPECT_STREQ("/s2", n->tenants[0].secret_file[1]);
	EXPECT_TRUE(n->tenants[0].has_quota);
	EXPECT_EQ(0, n->tenants[0].quota);
	EXPECT_EQ(0x0123456789abcdefULL, n->tenants[1].hash);
	EXPECT_FALSE(n->tenants[1].has_quota);
	EXPECT_STREQ("", n->tenants[1].secret_file[0]);
	EXPECT_STREQ("", n->tenants[1].secret_file[1]);
	conf_free(&c);
}

TEST(empty_file_is_no_nodes)
{
	struct conf c;

	ASSERT_EQ(0, load("{}", &c));
	EXPECT_EQ(0, c.n_nodes);
	conf_free(&c);
}

TEST(mistakes_are_refused)
{
	static const char *const bad[] = {
		"",
		"{ \"nodes\": [",
		"{ \"nodes\": [] } trailing",
		"[]",
		"{ \"node\": [] }",
		"{ \"nodes\": {} }",
		"{ \"nodes\": [ 1 ] }",
		"{ \"nodes\": [ { \"ram\": \"1G\" } ] }",
		"{ \"nodes\": [ { \"name\": \"\" } ] }",
		"{ \"nodes\": [ { \"name\": \"a\", \"rma\": 1 } ] }",
		"{ \"nodes\": [ { \"name\": \"a\", \"ram\": \"12Q\" } ] }",
		"{ \"nodes\": [ { \"name\": \"a\", \"ram\": -1 } ] }",
		"{ \"nodes\": [ { \"name\": \"a\", \"idle_ms\": \"5\" } ] }",
		"{ \"nodes\": [ { \"name\": \"a\", \"idle_ms\": 4294967296 } ] }",
		"{ \"nodes\": [ { \"name\": \"a\", \"evict\": 1 } ] }",
		"{ \"nodes\": [ { \"name\": \"a\", \"policy\": \"writethrough\" } ] }",
		"{ \"nodes\": [ { \"name\": \"a\", \"numa\": \"all\" } ] }",
		"{ \"nodes\": [ { \"name\": \"a\" }, { \"name\": \"a\" } ] }",
		"{ \"nodes\": [ { \"name\": \"a\", \"listeners\": [ { \"port\": 1 } ] } ] }",
		"{ \"nodes\": [ { \"name\": \"a\", \"listeners\": [ { \"addr\": \"::\", \"port\": 0 } ] } ] }",
		"{ \"nodes\": [ { \"name\": \"a\", \"listeners\": [ { \"addr\": \"::\", \"transport\": \"udp\" } ] } ] }",
		"{ \"nodes\": [ { \"name\": \"a\", \"listeners\": [ { \"addr\": \"::\" }, { \"addr\": \"::\" } ] } ] }",
		"{ \"nodes\": [ { \"name\": \"a\", \"disks\": [ { \"name\": \"d\" } ] } ] }",
		"{ \"nodes\": [ { \"name\": \"a\", \"disks\": [ { \"path\": \"/dev/\" } ] } ] }",
		"{ \"nodes\": [ { \"name\": \"a\", \"disks\": [ { \"path\": \"/dev/x\", \"format\": \"always\" } ] } ] }",
		"{ \"nodes\": [ { \"name\": \"a\", \"disks\": [ { \"path\": \"/dev/x\" }, { \"path\": \"/dev/y\", \"name\": \"x\" } ] } ] }",
		"{ \"nodes\": [ { \"name\": \"a\", \"tenants\": [ { \"quota\": 1 } ] } ] }",
		"{ \"nodes\": [ { \"name\": \"a\", \"tenants\": [ { \"ns\": \"x\", \"tenant\": \"0123456789abcdef\" } ] } ] }",
		"{ \"nodes\": [ { \"name\": \"a\", \"tenants\": [ { \"tenant\": \"0123\" } ] } ] }",
		"{ \"nodes\": [ { \"name\": \"a\", \"tenants\": [ { \"ns\": \"x\" }, { \"ns\": \"x\" } ] } ] }",
		"{ \"nodes\": [ { \"name\": \"a\", \"tenants\": [ { \"ns\": \"x\", \"secret\": \"00\" } ] } ] }",
		"{ \"nodes\": [ { \"name\": \"a\", \"tenants\": [ { \"ns\": \"x\", \"second_secret_file\": \"/s\" } ] } ] }",
		"{ \"nodes\": [ { \"name\": \"a\", \"tenants\": [ { \"ns\": \"x\", \"secret_file\": \"/s\", \"second_secret_file\": \"/s\" } ] } ] }",
	};
	struct conf c;
	size_t i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		memset(&c, 0x5a, sizeof(c));
		EXPECT_EQ(EXIT_USAGE, load(bad[i], &c)) {
			TH_LOG("accepted: %s", bad[i]);
		}
		EXPECT_EQ(0, c.n_nodes);
		EXPECT_EQ(NULL, c.nodes);
	}
}

TEST(missing_file)
{
	struct conf c;

	EXPECT_EQ(EXIT_USAGE, conf_load("/nonexistent/dfkv.conf", &c));
	EXPECT_EQ(0, c.n_nodes);
}

TEST_HARNESS_MAIN
