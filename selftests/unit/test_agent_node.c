// SPDX-License-Identifier: GPL-2.0
/*
 * Unit tests of the mdsd agent's view of a node (tools/mdsd/agent_node.c):
 * a NODE_GET reply decodes into its name, state, phase and listeners (a
 * wildcard address advertised as the host), a module that reports no
 * phase means up, and the warm-rejoin rule: a node that is not a member
 * is not registered while it rebuilds, a member keeps its lease while it
 * attaches one more disk, and an up node is registered.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <string.h>
#include <linux/genetlink.h>

/* kselftest_harness.h (6.1) is not -Wextra clean */
#pragma GCC diagnostic ignored "-Wunused-parameter"
#pragma GCC diagnostic ignored "-Wsign-compare"
#pragma GCC diagnostic ignored "-Wmisleading-indentation"
#include "kselftest_harness.h"
#include "agent_node.h"

/*
 * A NODE_GET reply in buf: node name (when not NULL), its state, its phase
 * when phase is not 0, and one TCP listener on addr:7400 when addr is not
 * NULL.
 */
static struct nlmsghdr *reply(char *buf, const char *name, uint32_t state,
			      uint32_t phase, const char *addr)
{
	struct nlmsghdr *nlh = mnl_nlmsg_put_header(buf);
	struct genlmsghdr *gh;
	struct nlattr *all, *one;

	nlh->nlmsg_type = 0x20;
	gh = mnl_nlmsg_put_extra_header(nlh, sizeof(*gh));
	gh->cmd = DFKV_CMD_NODE_GET;
	gh->version = DFKV_GENL_VERSION;
	if (name)
		mnl_attr_put_strz(nlh, DFKV_A_NODE_NAME, name);
	mnl_attr_put_u32(nlh, DFKV_A_NODE_STATE, state);
	if (phase)
		mnl_attr_put_u32(nlh, DFKV_A_NODE_PHASE, phase);
	if (addr) {
		all = mnl_attr_nest_start(nlh, DFKV_A_LISTENERS);
		one = mnl_attr_nest_start(nlh, DFKV_A_LISTENER);
		mnl_attr_put_strz(nlh, DFKV_A_LISTEN_ADDR, addr);
		mnl_attr_put_u16(nlh, DFKV_A_LISTEN_PORT, 7400);
		mnl_attr_put_u32(nlh, DFKV_A_LISTEN_TRANSPORT,
				 DFKV_LISTENER_TCP);
		mnl_attr_nest_end(nlh, one);
		mnl_attr_nest_end(nlh, all);
	}
	return nlh;
}

FIXTURE(agent) {
	struct mdsd_config cfg;
	char buf[4096];
	struct agent_node n;
};

FIXTURE_SETUP(agent)
{
	memset(&self->cfg, 0, sizeof(self->cfg));
	snprintf(self->cfg.host, sizeof(self->cfg.host), "h1");
}

FIXTURE_TEARDOWN(agent)
{
}

TEST_F(agent, parses_name_state_phase_listener)
{
	ASSERT_TRUE(agent_node_parse(reply(self->buf, "kv0",
					   DFKV_NODE_STATE_DRAINING,
					   DFKV_NODE_PHASE_REBUILDING,
					   "10.0.0.2"), &self->cfg, &self->n));
	EXPECT_STREQ("kv0", self->n.name);
	EXPECT_EQ(DFKV_NODE_STATE_DRAINING, self->n.state);
	EXPECT_EQ(DFKV_NODE_PHASE_REBUILDING, self->n.phase);
	EXPECT_STREQ("10.0.0.2:7400", self->n.tcp);
	EXPECT_STREQ("", self->n.rdma);
}

TEST_F(agent, wildcard_listener_is_the_host)
{
	ASSERT_TRUE(agent_node_parse(reply(self->buf, "kv0",
					   DFKV_NODE_STATE_UP,
					   DFKV_NODE_PHASE_UP, "0.0.0.0"),
				     &self->cfg, &self->n));
	EXPECT_STREQ("h1:7400", self->n.tcp);
}

/* A module from before the phase attribute: its nodes are up. */
TEST_F(agent, no_phase_means_up)
{
	ASSERT_TRUE(agent_node_parse(reply(self->buf, "kv0",
					   DFKV_NODE_STATE_UP, 0, NULL),
				     &self->cfg, &self->n));
	EXPECT_EQ(DFKV_NODE_PHASE_UP, self->n.phase);
	EXPECT_STREQ("", self->n.tcp);
	EXPECT_TRUE(agent_node_admit(&self->n, false));
}

TEST_F(agent, nameless_reply_is_no_node)
{
	EXPECT_FALSE(agent_node_parse(reply(self->buf, NULL,
					    DFKV_NODE_STATE_UP,
					    DFKV_NODE_PHASE_UP, NULL),
				      &self->cfg, &self->n));
}

/* Warm rejoin: not in the ring before its disks are rebuilt. */
TEST_F(agent, rebuilding_node_waits_member_keeps_lease)
{
	ASSERT_TRUE(agent_node_parse(reply(self->buf, "kv0",
					   DFKV_NODE_STATE_UP,
					   DFKV_NODE_PHASE_REBUILDING,
					   "10.0.0.2"), &self->cfg, &self->n));
	EXPECT_FALSE(agent_node_admit(&self->n, false));
	EXPECT_TRUE(agent_node_admit(&self->n, true));
	ASSERT_TRUE(agent_node_parse(reply(self->buf, "kv0",
					   DFKV_NODE_STATE_UP,
					   DFKV_NODE_PHASE_UP, "10.0.0.2"),
				     &self->cfg, &self->n));
	EXPECT_TRUE(agent_node_admit(&self->n, false));
	EXPECT_TRUE(agent_node_admit(&self->n, true));
}

TEST_HARNESS_MAIN
