/* SPDX-License-Identifier: (GPL-2.0 WITH Linux-syscall-note) OR MIT */
/*
 * Do not edit directly, auto-generated from: uapi/dfkv.yaml
 * by tools/ynl-gen/dfkv-nlgen.py (YNL-GEN user names).
 * To add an attribute: append it to its attribute set in uapi/dfkv.yaml
 * (and to the enum in uapi/linux/dfkv.h), list it in the request of the
 * operations that take it, give it its checks, then run `make nlgen`
 * and commit the regenerated files (Documentation/netlink.md).
 */
/*
 * dfkv_<enum>_str(value) is the name of a value of enum dfkv_<enum>
 * (the spec's name with '_' for '-'), NULL for a value without one.
 */
#ifndef DFKV_NAMES_GEN_H
#define DFKV_NAMES_GEN_H

#include <stdint.h>

#include <linux/dfkv.h>

static inline const char *dfkv_op_str(uint32_t value)
{
	static const char *const names[] = {
		[DFKV_OP_PUT] = "put",
		[DFKV_OP_GET] = "get",
		[DFKV_OP_EXIST] = "exist",
		[DFKV_OP_STATS] = "stats",
		[DFKV_OP_REMOVE] = "remove",
		[DFKV_OP_TOUCH] = "touch",
		[DFKV_OP_PROBE] = "probe",
		[DFKV_OP_LEASE] = "lease",
		[DFKV_OP_RELEASE] = "release",
		[DFKV_OP_HELLO] = "hello",
		[DFKV_OP_AUTH] = "auth",
	};

	if (value >= sizeof(names) / sizeof(names[0]))
		return NULL;
	return names[value];
}

static inline const char *dfkv_status_str(uint32_t value)
{
	static const char *const names[] = {
		[DFKV_STATUS_OK] = "ok",
		[DFKV_STATUS_NOT_FOUND] = "not_found",
		[DFKV_STATUS_CACHE_FULL] = "cache_full",
		[DFKV_STATUS_IO_ERROR] = "io_error",
		[DFKV_STATUS_INVALID] = "invalid",
		[DFKV_STATUS_QUOTA_EXCEEDED] = "quota_exceeded",
		[DFKV_STATUS_BUSY] = "busy",
		[DFKV_STATUS_UNSUPPORTED] = "unsupported",
		[DFKV_STATUS_TOO_LARGE] = "too_large",
		[DFKV_STATUS_LEASE_EXPIRED] = "lease_expired",
		[DFKV_STATUS_FORBIDDEN] = "forbidden",
	};

	if (value >= sizeof(names) / sizeof(names[0]))
		return NULL;
	return names[value];
}

static inline const char *dfkv_node_state_str(uint32_t value)
{
	static const char *const names[] = {
		[DFKV_NODE_STATE_UP] = "up",
		[DFKV_NODE_STATE_DRAINING] = "draining",
		[DFKV_NODE_STATE_UNHEALTHY] = "unhealthy",
	};

	if (value >= sizeof(names) / sizeof(names[0]))
		return NULL;
	return names[value];
}

static inline const char *dfkv_node_phase_str(uint32_t value)
{
	static const char *const names[] = {
		[DFKV_NODE_PHASE_UP] = "up",
		[DFKV_NODE_PHASE_REBUILDING] = "rebuilding",
	};

	if (value >= sizeof(names) / sizeof(names[0]))
		return NULL;
	return names[value];
}

static inline const char *dfkv_listener_kind_str(uint32_t value)
{
	static const char *const names[] = {
		[DFKV_LISTENER_TCP] = "tcp",
		[DFKV_LISTENER_RDMA] = "rdma",
	};

	if (value >= sizeof(names) / sizeof(names[0]))
		return NULL;
	return names[value];
}

static inline const char *dfkv_event_str(uint32_t value)
{
	static const char *const names[] = {
		[DFKV_EVENT_NODE_NEW] = "node_new",
		[DFKV_EVENT_NODE_DEL] = "node_del",
		[DFKV_EVENT_NODE_STATE] = "node_state",
		[DFKV_EVENT_DISK_ADD] = "disk_add",
		[DFKV_EVENT_DISK_DEL] = "disk_del",
		[DFKV_EVENT_DISK_STATE] = "disk_state",
		[DFKV_EVENT_NODE_LISTENERS] = "node_listeners",
		[DFKV_EVENT_NODE_PHASE] = "node_phase",
	};

	if (value >= sizeof(names) / sizeof(names[0]))
		return NULL;
	return names[value];
}

static inline const char *dfkv_disk_state_str(uint32_t value)
{
	static const char *const names[] = {
		[DFKV_DISK_STATE_UP] = "up",
		[DFKV_DISK_STATE_FAILED] = "failed",
	};

	if (value >= sizeof(names) / sizeof(names[0]))
		return NULL;
	return names[value];
}

static inline const char *dfkv_tier_policy_str(uint32_t value)
{
	static const char *const names[] = {
		[DFKV_TIER_WRITEBACK] = "writeback",
		[DFKV_TIER_WRITEAROUND] = "writearound",
	};

	if (value >= sizeof(names) / sizeof(names[0]))
		return NULL;
	return names[value];
}

static inline const char *dfkv_tier_ack_str(uint32_t value)
{
	static const char *const names[] = {
		[DFKV_ACK_RAM] = "ram",
		[DFKV_ACK_DISK] = "disk",
	};

	if (value >= sizeof(names) / sizeof(names[0]))
		return NULL;
	return names[value];
}

static inline const char *dfkv_auth_mode_str(uint32_t value)
{
	static const char *const names[] = {
		[DFKV_AUTH_OFF] = "off",
		[DFKV_AUTH_REQUIRED] = "required",
	};

	if (value >= sizeof(names) / sizeof(names[0]))
		return NULL;
	return names[value];
}

static inline const char *dfkv_hist_op_str(uint32_t value)
{
	static const char *const names[] = {
		[DFKV_HIST_GET] = "get",
		[DFKV_HIST_PUT] = "put",
		[DFKV_HIST_COLD_READ] = "cold_read",
		[DFKV_HIST_FLUSH] = "flush",
	};

	if (value >= sizeof(names) / sizeof(names[0]))
		return NULL;
	return names[value];
}

static inline const char *dfkv_hist_transport_str(uint32_t value)
{
	static const char *const names[] = {
		[DFKV_HIST_DEV] = "dev",
		[DFKV_HIST_TCP] = "tcp",
		[DFKV_HIST_RDMA] = "rdma",
	};

	if (value >= sizeof(names) / sizeof(names[0]))
		return NULL;
	return names[value];
}

#endif /* DFKV_NAMES_GEN_H */
