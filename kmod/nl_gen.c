// SPDX-License-Identifier: GPL-2.0
/*
 * Do not edit directly, auto-generated from: uapi/dfkv.yaml
 * by tools/ynl-gen/dfkv-nlgen.py (YNL-GEN kernel source).
 * To add an attribute: append it to its attribute set in uapi/dfkv.yaml
 * (and to the enum in uapi/linux/dfkv.h), list it in the request of the
 * operations that take it, give it its checks, then run `make nlgen`
 * and commit the regenerated files (Documentation/netlink.md).
 */
#include <net/netlink.h>
#include <net/genetlink.h>

#include "nl_gen.h"
#include "node.h"
#include "tier.h"

/* Limits the module defines, as the spec states them */
static_assert(DFKV_RAM_MIN == 1048576);
static_assert(DFKV_RAM_MAX == 70368744177664);
static_assert(DFKV_MAX_VALUE_LIMIT == 1073741824);
static_assert(DFKV_TIER_WORKERS_MAX == 16);

static struct netlink_range_validation dfkv_a_node_ram_bytes_range __ro_after_init = {
	.min	= DFKV_RAM_MIN,
	.max	= DFKV_RAM_MAX,
};

static struct netlink_range_validation dfkv_a_node_max_value_range __ro_after_init = {
	.min	= 1,
	.max	= DFKV_MAX_VALUE_LIMIT,
};

static struct netlink_range_validation dfkv_a_node_first_request_ms_range __ro_after_init = {
	.min	= 0,
	.max	= 3600000,
};

static struct netlink_range_validation dfkv_a_node_idle_ms_range __ro_after_init = {
	.min	= 0,
	.max	= 86400000,
};

static struct netlink_range_validation dfkv_a_node_frame_ms_range __ro_after_init = {
	.min	= 1000,
	.max	= 3600000,
};

static struct netlink_range_validation dfkv_a_node_min_rate_range __ro_after_init = {
	.min	= 0,
	.max	= 1073741824,
};

static struct netlink_range_validation dfkv_a_disk_extent_bytes_range __ro_after_init = {
	.min	= 65536,
	.max	= 1073741824,
};

/* DFKV_CMD_NODE_NEW - do, DFKV_CMD_NODE_SET - do */
static const struct nla_policy dfkv_node_new_nl_policy[DFKV_A_NODE_PHASE + 1] = {
	[DFKV_A_NODE_NAME] = { .type = NLA_NUL_STRING, .len = 31, },
	[DFKV_A_NODE_RAM_BYTES] = NLA_POLICY_FULL_RANGE(NLA_U64,
							&dfkv_a_node_ram_bytes_range),
	[DFKV_A_NODE_MAX_VALUE] = NLA_POLICY_FULL_RANGE(NLA_U64,
							&dfkv_a_node_max_value_range),
	[DFKV_A_NODE_FLAGS] = NLA_POLICY_MASK(NLA_U32, 0x3),
	[DFKV_A_NODE_STATE] = NLA_POLICY_RANGE(NLA_U32, DFKV_NODE_STATE_UP,
					       DFKV_NODE_STATE_UNHEALTHY),
	[DFKV_A_NODE_FIRST_REQUEST_MS] = NLA_POLICY_FULL_RANGE(NLA_U32,
							       &dfkv_a_node_first_request_ms_range),
	[DFKV_A_NODE_IDLE_MS] = NLA_POLICY_FULL_RANGE(NLA_U32,
						      &dfkv_a_node_idle_ms_range),
	[DFKV_A_NODE_MAX_CONNS] = NLA_POLICY_MIN(NLA_U32, 1),
	[DFKV_A_NODE_TIER_POLICY] = NLA_POLICY_RANGE(NLA_U32,
						     DFKV_TIER_WRITEBACK,
						     DFKV_TIER_WRITEAROUND),
	[DFKV_A_NODE_TIER_ACK] = NLA_POLICY_RANGE(NLA_U32, DFKV_ACK_RAM,
						  DFKV_ACK_DISK),
	[DFKV_A_NODE_DIRTY_PCT] = NLA_POLICY_MAX(NLA_U32, 100),
	[DFKV_A_NODE_FLUSH_WORKERS] = NLA_POLICY_MAX(NLA_U32,
						     DFKV_TIER_WORKERS_MAX),
	[DFKV_A_NODE_NUMA] = { .type = NLA_U32, },
	[DFKV_A_NODE_AUTH] = NLA_POLICY_RANGE(NLA_U32, DFKV_AUTH_OFF,
					      DFKV_AUTH_REQUIRED),
	[DFKV_A_NODE_TENANT_QUOTA] = { .type = NLA_U64, },
	[DFKV_A_NODE_FRAME_MS] = NLA_POLICY_FULL_RANGE(NLA_U32,
						       &dfkv_a_node_frame_ms_range),
	[DFKV_A_NODE_MIN_RATE] = NLA_POLICY_FULL_RANGE(NLA_U32,
						       &dfkv_a_node_min_rate_range),
	[DFKV_A_NODE_PHASE] = NLA_POLICY_RANGE(NLA_U32, DFKV_NODE_PHASE_UP,
					       DFKV_NODE_PHASE_REBUILDING),
};

/* DFKV_CMD_NODE_DEL - do, DFKV_CMD_NODE_GET - do/dump */
static const struct nla_policy dfkv_node_del_nl_policy[DFKV_A_NODE_NAME + 1] = {
	[DFKV_A_NODE_NAME] = { .type = NLA_NUL_STRING, .len = 31, },
};

/* DFKV_CMD_TENANT_GET - do/dump, DFKV_CMD_TENANT_DEL - do */
static const struct nla_policy dfkv_tenant_get_nl_policy[DFKV_A_TENANT_HASH + 1] = {
	[DFKV_A_NODE_NAME] = { .type = NLA_NUL_STRING, .len = 31, },
	[DFKV_A_TENANT_HASH] = { .type = NLA_U64, },
};

/* DFKV_CMD_LISTENER_ADD - do, DFKV_CMD_LISTENER_DEL - do */
static const struct nla_policy dfkv_listener_add_nl_policy[DFKV_A_LISTEN_TRANSPORT + 1] = {
	[DFKV_A_NODE_NAME] = { .type = NLA_NUL_STRING, .len = 31, },
	[DFKV_A_LISTEN_ADDR] = { .type = NLA_NUL_STRING, .len = 62, },
	[DFKV_A_LISTEN_PORT] = NLA_POLICY_MIN(NLA_U16, 1),
	[DFKV_A_LISTEN_TRANSPORT] = NLA_POLICY_RANGE(NLA_U32, DFKV_LISTENER_TCP,
						     DFKV_LISTENER_RDMA),
};

/* DFKV_CMD_DISK_ADD - do */
static const struct nla_policy dfkv_disk_add_nl_policy[DFKV_A_DISK_EXTENT_BYTES + 1] = {
	[DFKV_A_NODE_NAME] = { .type = NLA_NUL_STRING, .len = 31, },
	[DFKV_A_DISK_PATH] = { .type = NLA_NUL_STRING, .len = 255, },
	[DFKV_A_DISK_NAME] = { .type = NLA_NUL_STRING, .len = 63, },
	[DFKV_A_DISK_FORMAT] = { .type = NLA_FLAG, },
	[DFKV_A_DISK_EXTENT_BYTES] = NLA_POLICY_FULL_RANGE(NLA_U64,
							   &dfkv_a_disk_extent_bytes_range),
};

/* DFKV_CMD_DISK_DEL - do, DFKV_CMD_DISK_GET - do/dump */
static const struct nla_policy dfkv_disk_del_nl_policy[DFKV_A_DISK_NAME + 1] = {
	[DFKV_A_NODE_NAME] = { .type = NLA_NUL_STRING, .len = 31, },
	[DFKV_A_DISK_NAME] = { .type = NLA_NUL_STRING, .len = 63, },
};

/* DFKV_CMD_TENANT_SET - do */
static const struct nla_policy dfkv_tenant_set_nl_policy[DFKV_A_TENANT_SECRET_DROP + 1] = {
	[DFKV_A_NODE_NAME] = { .type = NLA_NUL_STRING, .len = 31, },
	[DFKV_A_TENANT_HASH] = { .type = NLA_U64, },
	[DFKV_A_TENANT_SECRET] = NLA_POLICY_EXACT_LEN(32),
	[DFKV_A_TENANT_QUOTA] = { .type = NLA_U64, },
	[DFKV_A_TENANT_SECRET_ADD] = NLA_POLICY_EXACT_LEN(32),
	[DFKV_A_TENANT_SECRET_DROP] = NLA_POLICY_EXACT_LEN(32),
};

/* Ops table for dfkv */
const struct genl_ops dfkv_nl_ops[13] = {
	{
		.cmd		= DFKV_CMD_VERSION_GET,
		.doit		= dfkv_nl_version_get_doit,
	},
	{
		.cmd		= DFKV_CMD_NODE_NEW,
		.doit		= dfkv_nl_node_new_doit,
		.policy		= dfkv_node_new_nl_policy,
		.maxattr	= DFKV_A_NODE_PHASE,
		.flags		= GENL_ADMIN_PERM,
	},
	{
		.cmd		= DFKV_CMD_NODE_DEL,
		.doit		= dfkv_nl_node_del_doit,
		.policy		= dfkv_node_del_nl_policy,
		.maxattr	= DFKV_A_NODE_NAME,
		.flags		= GENL_ADMIN_PERM,
	},
	{
		.cmd		= DFKV_CMD_NODE_SET,
		.doit		= dfkv_nl_node_set_doit,
		.policy		= dfkv_node_new_nl_policy,
		.maxattr	= DFKV_A_NODE_PHASE,
		.flags		= GENL_ADMIN_PERM,
	},
	{
		.cmd		= DFKV_CMD_NODE_GET,
		.doit		= dfkv_nl_node_get_doit,
		.dumpit		= dfkv_nl_node_get_dumpit,
		.policy		= dfkv_node_del_nl_policy,
		.maxattr	= DFKV_A_NODE_NAME,
	},
	{
		.cmd		= DFKV_CMD_TENANT_GET,
		.doit		= dfkv_nl_tenant_get_doit,
		.start		= dfkv_nl_tenant_get_start,
		.dumpit		= dfkv_nl_tenant_get_dumpit,
		.done		= dfkv_nl_tenant_get_done,
		.policy		= dfkv_tenant_get_nl_policy,
		.maxattr	= DFKV_A_TENANT_HASH,
		.flags		= GENL_ADMIN_PERM,
	},
	{
		.cmd		= DFKV_CMD_LISTENER_ADD,
		.doit		= dfkv_nl_listener_add_doit,
		.policy		= dfkv_listener_add_nl_policy,
		.maxattr	= DFKV_A_LISTEN_TRANSPORT,
		.flags		= GENL_ADMIN_PERM,
	},
	{
		.cmd		= DFKV_CMD_LISTENER_DEL,
		.doit		= dfkv_nl_listener_del_doit,
		.policy		= dfkv_listener_add_nl_policy,
		.maxattr	= DFKV_A_LISTEN_TRANSPORT,
		.flags		= GENL_ADMIN_PERM,
	},
	{
		.cmd		= DFKV_CMD_DISK_ADD,
		.doit		= dfkv_nl_disk_add_doit,
		.policy		= dfkv_disk_add_nl_policy,
		.maxattr	= DFKV_A_DISK_EXTENT_BYTES,
		.flags		= GENL_ADMIN_PERM,
	},
	{
		.cmd		= DFKV_CMD_DISK_DEL,
		.doit		= dfkv_nl_disk_del_doit,
		.policy		= dfkv_disk_del_nl_policy,
		.maxattr	= DFKV_A_DISK_NAME,
		.flags		= GENL_ADMIN_PERM,
	},
	{
		.cmd		= DFKV_CMD_DISK_GET,
		.doit		= dfkv_nl_disk_get_doit,
		.dumpit		= dfkv_nl_disk_get_dumpit,
		.policy		= dfkv_disk_del_nl_policy,
		.maxattr	= DFKV_A_DISK_NAME,
		.flags		= GENL_ADMIN_PERM,
	},
	{
		.cmd		= DFKV_CMD_TENANT_SET,
		.doit		= dfkv_nl_tenant_set_doit,
		.policy		= dfkv_tenant_set_nl_policy,
		.maxattr	= DFKV_A_TENANT_SECRET_DROP,
		.flags		= GENL_ADMIN_PERM,
	},
	{
		.cmd		= DFKV_CMD_TENANT_DEL,
		.doit		= dfkv_nl_tenant_del_doit,
		.policy		= dfkv_tenant_get_nl_policy,
		.maxattr	= DFKV_A_TENANT_HASH,
		.flags		= GENL_ADMIN_PERM,
	},
};

const struct genl_multicast_group dfkv_nl_mcgrps[1] = {
	[DFKV_NLGRP_EVENTS] = { .name = "events", },
};
