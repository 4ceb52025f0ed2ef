// SPDX-License-Identifier: GPL-2.0
/*
 * dfkvctl JSON forms of what netlink decoded (struct node_info): a node's
 * or tenant's counters with their derived figures, a node with its
 * configuration, its latency histograms, and printing them.  Used by
 * stats, tenant and disk; this file calls no subcommand.
 */
#include <stdio.h>
#include <json-c/json.h>

#include "dfkvctl.h"

static const char *const stat_names[DFKV_STAT_MAX + 1] = {
	[DFKV_STAT_BYTES_IN] = "bytes_in",
	[DFKV_STAT_BYTES_OUT] = "bytes_out",
	[DFKV_STAT_HITS] = "hits",
	[DFKV_STAT_MISSES] = "misses",
	[DFKV_STAT_OBJECTS] = "objects",
	[DFKV_STAT_USED_BYTES] = "used_bytes",
	[DFKV_STAT_SLOT_BYTES] = "slot_bytes",
	[DFKV_STAT_CAPACITY_BYTES] = "capacity_bytes",
	[DFKV_STAT_EVICTIONS] = "evictions",
	[DFKV_STAT_PINS] = "pins",
	[DFKV_STAT_LEASES] = "leases",
	[DFKV_STAT_LEASE_GRANTS] = "lease_grants",
	[DFKV_STAT_LEASE_EXPIRIES] = "lease_expiries",
	[DFKV_STAT_TENANTS] = "tenants",
	[DFKV_STAT_EXTENTS_BOUND] = "extents_bound",
	[DFKV_STAT_EXTENTS_TOTAL] = "extents_total",
	[DFKV_STAT_CONNS] = "conns",
	[DFKV_STAT_ACCEPTS] = "accepts",
	[DFKV_STAT_CONNS_REFUSED] = "conns_refused",
	[DFKV_STAT_DEADLINE_DROPS] = "deadline_drops",
	[DFKV_STAT_PROTO_ERRORS] = "proto_errors",
	[DFKV_STAT_RAM_HITS] = "ram_hits",
	[DFKV_STAT_RAM_MISSES] = "ram_misses",
	[DFKV_STAT_RAM_PUTS] = "ram_puts",
	[DFKV_STAT_RAM_BYPASSES] = "ram_bypasses",
	[DFKV_STAT_RAM_EVICTIONS] = "ram_evictions",
	[DFKV_STAT_FLUSHED] = "flushed",
	[DFKV_STAT_FLUSH_RETRIES] = "flush_retries",
	[DFKV_STAT_FLUSH_DROPS] = "flush_drops",
	[DFKV_STAT_PROMOTED] = "promoted",
	[DFKV_STAT_COALESCED] = "coalesced",
	[DFKV_STAT_DIRTY_BYTES] = "dirty_bytes",
	[DFKV_STAT_FLUSH_BACKLOG] = "flush_backlog",
	[DFKV_STAT_DISKS] = "disks",
	[DFKV_STAT_DISKS_FAILED] = "disks_failed",
	[DFKV_STAT_DISK_READS] = "disk_reads",
	[DFKV_STAT_DISK_WRITES] = "disk_writes",
	[DFKV_STAT_DISK_READ_BYTES] = "disk_read_bytes",
	[DFKV_STAT_DISK_WRITE_BYTES] = "disk_write_bytes",
	[DFKV_STAT_DISK_IO_ERRORS] = "disk_io_errors",
	[DFKV_STAT_DISK_RECORD_WRITES] = "disk_record_writes",
	[DFKV_STAT_REBUILD_RECORDS] = "rebuild_records",
	[DFKV_STAT_REBUILD_REJECTED] = "rebuild_rejected",
	[DFKV_STAT_REBUILD_MS] = "rebuild_ms",
	[DFKV_STAT_REBUILD_READ_BYTES] = "rebuild_read_bytes",
	[DFKV_STAT_RDMA_CONNS] = "rdma_conns",
	[DFKV_STAT_RDMA_ACCEPTS] = "rdma_accepts",
	[DFKV_STAT_RDMA_READS] = "rdma_reads",
	[DFKV_STAT_RDMA_WRITES] = "rdma_writes",
	[DFKV_STAT_RDMA_READ_BYTES] = "rdma_read_bytes",
	[DFKV_STAT_RDMA_WRITE_BYTES] = "rdma_write_bytes",
	[DFKV_STAT_RDMA_CQ_ERRORS] = "rdma_cq_errors",
	[DFKV_STAT_RECV_RESERVED] = "recv_reserved_bytes",
	[DFKV_STAT_RECV_BUSY] = "recv_busy",
	[DFKV_STAT_LEASE_SCANS] = "lease_scans",
	[DFKV_STAT_AUTH_OK] = "auth_ok",
	[DFKV_STAT_AUTH_FAILURES] = "auth_failures",
	[DFKV_STAT_FORBIDDEN] = "forbidden",
	[DFKV_STAT_QUOTA_REJECTIONS] = "quota_rejections",
	[DFKV_STAT_CHARGED_BYTES] = "charged_bytes",
	[DFKV_STAT_LEASE_READS] = "lease_reads",
	[DFKV_STAT_DISK_HITS] = "disk_hits",
	[DFKV_STAT_TCP_DEADLINE_DROPS] = "tcp_deadline_drops",
	[DFKV_STAT_RDMA_DEADLINE_DROPS] = "rdma_deadline_drops",
	[DFKV_STAT_RAM_OBJECTS] = "ram_objects",
	[DFKV_STAT_RAM_USED_BYTES] = "ram_used_bytes",
	[DFKV_STAT_TCP_ZC_REPLIES] = "tcp_zc_replies",
	[DFKV_STAT_TCP_ZC_COPIED] = "tcp_zc_copied",
	[DFKV_STAT_TCP_ZC_LENT_BYTES] = "tcp_zc_lent_bytes",
	[DFKV_STAT_TCP_ZC_CAPPED] = "tcp_zc_capped",
	[DFKV_STAT_STAGE_BUSY] = "stage_busy",
	[DFKV_STAT_MISS_NEVER_STORED] = "miss_never_stored",
	[DFKV_STAT_MISS_EVICTED] = "miss_evicted",
	[DFKV_STAT_MISS_REMOVED] = "miss_removed",
};

static void jadd(json_object *o, const char *k, json_object *v)
{
	json_object_object_add(o, k, v);
}

static json_object *latency_json(const struct dfkv_latency *lat)
{
	json_object *arr = json_object_new_array();
	size_t i;
	unsigned int b;

	for (i = 0; i < lat->n; i++) {
		const struct dfkv_hist_info *h = &lat->h[i];
		json_object *o = json_object_new_object();
		json_object *bs = json_object_new_array();

		jadd(o, "op", json_object_new_string(dfkv_hist_op_name(h->op)));
		if (dfkv_hist_has_transport(h->op) &&
		    dfkv_hist_transport_name(h->transport))
			jadd(o, "transport", json_object_new_string(
				dfkv_hist_transport_name(h->transport)));
		jadd(o, "count", json_object_new_uint64(h->count));
		jadd(o, "sum_ns", json_object_new_uint64(h->sum_ns));
		for (b = 0; b < DFKV_HIST_BUCKETS; b++) {
			json_object *bo;

			if (!h->buckets[b])
				continue;
			bo = json_object_new_object();
			jadd(bo, "lt_ns", b + 1 < DFKV_HIST_BUCKETS ?
			     json_object_new_uint64(dfkv_hist_bound_ns(b)) : NULL);
			jadd(bo, "count", json_object_new_uint64(h->buckets[b]));
			json_object_array_add(bs, bo);
		}
		jadd(o, "buckets", bs);
		json_object_array_add(arr, o);
	}
	return arr;
}

json_object *stats_json(const struct node_info *ni)
{
	json_object *st = json_object_new_object();
	json_object *ops = json_object_new_object();
	uint64_t hits = ni->stat[DFKV_STAT_HITS];
	uint64_t lookups = hits + ni->stat[DFKV_STAT_MISSES];
	uint32_t op, s;
	int i;

	for (i = 0; i <= DFKV_STAT_MAX; i++)
		if (stat_names[i] && ni->has_stat[i])
			jadd(st, stat_names[i],
			     json_object_new_uint64(ni->stat[i]));
	jadd(st, "hit_ratio", lookups ?
	     json_object_new_double((double)hits / (double)lookups) : NULL);
	if (ni->has_stat[DFKV_STAT_SLOT_BYTES]) {
		uint64_t slot = ni->stat[DFKV_STAT_SLOT_BYTES];
		uint64_t used = ni->stat[DFKV_STAT_USED_BYTES];

		jadd(st, "slot_waste_bytes",
		     json_object_new_uint64(slot > used ? slot - used : 0));
	}
	for (op = 0; op < __DFKV_OP_MAX; op++) {
		json_object *row = NULL;
		char name[16];

		for (s = 0; s < __DFKV_STATUS_MAX; s++) {
			if (!ni->ops[op][s])
				continue;
			if (!row)
				row = json_object_new_object();
			jadd(row, status_name(s),
			     json_object_new_uint64(ni->ops[op][s]));
		}
		if (!row)
			continue;
		if (op_name(op))
			snprintf(name, sizeof(name), "%s", op_name(op));
		else
			snprintf(name, sizeof(name), "op%u", op);
		jadd(ops, name, row);
	}
	jadd(st, "ops", ops);
	jadd(st, "latency", latency_json(&ni->latency));
	if (ni->n_numa_pages) {
		json_object *numa = json_object_new_object();
		size_t i;

		for (i = 0; i < ni->n_numa_pages; i++) {
			char id[16];

			snprintf(id, sizeof(id), "%u", ni->numa_pages[i].node);
			jadd(numa, id,
			     json_object_new_uint64(ni->numa_pages[i].pages));
		}
		jadd(st, "numa_pages", numa);
	}
	return st;
}

json_object *node_json(const struct node_info *ni)
{
	json_object *o = json_object_new_object();

	jadd(o, "name", json_object_new_string(ni->name));
	jadd(o, "state", json_object_new_string(state_name(ni->state)));
	if (ni->has_phase)
		jadd(o, "phase", json_object_new_string(phase_name(ni->phase)));
	jadd(o, "evict", json_object_new_boolean(ni->flags & DFKV_NODE_F_EVICT));
	jadd(o, "disk_only",
	     json_object_new_boolean(ni->flags & DFKV_NODE_F_DISK_ONLY));
	jadd(o, "flags", json_object_new_uint64(ni->flags));
	jadd(o, "ram_bytes", json_object_new_uint64(ni->ram_bytes));
	jadd(o, "max_value_bytes", json_object_new_uint64(ni->max_value));
	jadd(o, "extent_bytes", json_object_new_uint64(ni->extent_bytes));
	jadd(o, "ctime_ns", json_object_new_uint64(ni->ctime_ns));
	if (ni->has_first_request_ms)
		jadd(o, "first_request_ms",
		     json_object_new_uint64(ni->first_request_ms));
	if (ni->has_idle_ms)
		jadd(o, "idle_ms", json_object_new_uint64(ni->idle_ms));
	if (ni->has_frame_ms)
		jadd(o, "frame_ms", json_object_new_uint64(ni->frame_ms));
	if (ni->has_min_rate)
		jadd(o, "min_rate", json_object_new_uint64(ni->min_rate));
	if (ni->has_max_conns)
		jadd(o, "max_conns", json_object_new_uint64(ni->max_conns));
	if (ni->has_tier_policy)
		jadd(o, "tier_policy",
		     json_object_new_string(tier_policy_name(ni->tier_policy)));
	if (ni->has_tier_ack)
		jadd(o, "tier_ack",
		     json_object_new_string(tier_ack_name(ni->tier_ack)));
	if (ni->has_dirty_pct)
		jadd(o, "dirty_pct", json_object_new_uint64(ni->dirty_pct));
	if (ni->has_flush_workers)
		jadd(o, "flush_workers",
		     json_object_new_uint64(ni->flush_workers));
	if (ni->has_numa)
		jadd(o, "numa", ni->numa == DFKV_NUMA_INTERLEAVE ?
		     json_object_new_string("interleave") :
		     json_object_new_uint64(ni->numa));
	if (ni->has_auth)
		jadd(o, "auth", json_object_new_string(auth_name(ni->auth)));
	if (ni->has_tenant_quota)
		jadd(o, "tenant_quota_bytes",
		     json_object_new_uint64(ni->tenant_quota));
	if (ni->has_listeners) {
		json_object *arr = json_object_new_array();
		size_t i;

		for (i = 0; i < ni->n_listeners; i++) {
			const struct listener_info *l = &ni->listeners[i];
			json_object *lo = json_object_new_object();

			jadd(lo, "addr", json_object_new_string(l->addr));
			jadd(lo, "port", json_object_new_uint64(l->port));
			jadd(lo, "transport",
			     json_object_new_string(transport_name(l->transport)));
			json_object_array_add(arr, lo);
		}
		jadd(o, "listeners", arr);
	}
	jadd(o, "stats", stats_json(ni));
	return o;
}

json_object *node_latency_json(const struct node_info *ni)
{
	json_object *o = json_object_new_object();

	jadd(o, "name", json_object_new_string(ni->name));
	jadd(o, "latency", latency_json(&ni->latency));
	return o;
}

void json_print(json_object *o)
{
	puts(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PRETTY |
					       JSON_C_TO_STRING_NOSLASHESCAPE));
	json_object_put(o);
}
