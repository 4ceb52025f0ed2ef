// SPDX-License-Identifier: GPL-2.0
/*
 * dfkvctl stats: node statistics as a table or JSON (DFKV_CMD_NODE_GET),
 * and per-tenant statistics (the tenant list of tenant.c).
 */
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <json-c/json.h>

#include "dfkvctl.h"

static const char help[] =
	"NAME\n"
	"    dfkvctl stats - show node or tenant statistics\n"
	"\n"
	"SYNOPSIS\n"
	"    dfkvctl stats [NODE] [--json] [--bytes]\n"
	"    dfkvctl stats NODE --tenants [--json] [--bytes]\n"
	"    dfkvctl stats [NODE] --latency [--json]\n"
	"\n"
	"DESCRIPTION\n"
	"    Without --tenants, prints the counters and gauges of NODE (or of\n"
	"    every node of the network namespace): configuration, used bytes\n"
	"    against the RAM budget, bytes in slots and the slab's internal\n"
	"    waste, objects, tenants, bound extents, bytes in and out, hits,\n"
	"    misses and the hit ratio, evictions, pinned entries, leases, network\n"
	"    listeners, connection limits and counters (open connections,\n"
	"    accepts, connections refused over the limit, deadline drops,\n"
	"    protocol errors), and a table of operations by op (rows) and status\n"
	"    (columns; only the non-zero ones are shown).  A node with disks\n"
	"    also shows its tier settings (policy, ack, dirty watermark, flush\n"
	"    workers, NUMA placement) and the RAM tier's counters: disks (and\n"
	"    failed ones), RAM hits, misses and hit ratio, PUTs admitted to RAM\n"
	"    or written straight to disk, RAM evictions, blocks flushed, flush\n"
	"    retries and drops, dirty bytes, the flush backlog, cold reads\n"
	"    promoted into RAM and GETs coalesced onto one cold read.  RDMA\n"
	"    counters appear when the node has RDMA listeners.  Per-disk\n"
	"    counters are in 'dfkvctl disk show'.  The tenant counters: AUTHs\n"
	"    accepted and refused, requests answered FORBIDDEN, PUTs refused\n"
	"    over a tenant's quota.\n"
	"\n"
	"    With --tenants, prints one line per tenant of NODE, exactly as\n"
	"    'dfkvctl tenant list NODE' does (see there).\n"
	"\n"
	"    With --latency, prints the node's latency histograms, kept in the\n"
	"    kernel in log2 buckets of nanoseconds: GET and PUT by transport\n"
	"    (dev is /dev/dfkv, tcp, rdma; from the request's header to its\n"
	"    reply sent), cold reads and flushes (a block's payload I/O on a\n"
	"    disk).  Each shows its count, mean, the bucket bounds that hold\n"
	"    its median and 99th percentile, and every non-empty bucket by its\n"
	"    exclusive upper bound.  Only histograms with samples are shown.\n"
	"\n"
	"OPTIONS\n"
	"    -j, --json      print JSON instead of a table: for one NODE an object\n"
	"                    {\"name\", \"state\", \"evict\", \"flags\", \"ram_bytes\",\n"
	"                    \"max_value_bytes\", \"extent_bytes\", \"ctime_ns\",\n"
	"                    \"first_request_ms\", \"idle_ms\", \"max_conns\",\n"
	"                    \"frame_ms\", \"min_rate\",\n"
	"                    \"tier_policy\", \"tier_ack\", \"dirty_pct\",\n"
	"                    \"flush_workers\", \"numa\" (a number or\n"
	"                    \"interleave\"), \"auth\" (\"off\" or \"required\"),\n"
	"                    \"tenant_quota_bytes\" (0 = unlimited),\n"
	"                    \"listeners\": [{\"addr\", \"port\", \"transport\"}],\n"
	"                    \"stats\": {...}}; without NODE {\"nodes\": [...]};\n"
	"                    with --tenants {\"node\", \"tenants\": [...]}.  Every\n"
	"                    number is exact (bytes, counts); \"hit_ratio\" is a\n"
	"                    fraction in [0, 1] or null before the first lookup;\n"
	"                    \"ops\" maps op name to {status name: count}.\n"
	"                    \"latency\" lists the histograms: {\"op\", \"transport\"\n"
	"                    (GET and PUT), \"count\", \"sum_ns\", \"buckets\":\n"
	"                    [{\"lt_ns\" (null for the last), \"count\"}]}.\n"
	"    -t, --tenants   per-tenant statistics of NODE\n"
	"    -l, --latency   latency histograms only\n"
	"    -b, --bytes     exact byte counts in the table instead of KiB/MiB\n"
	"\n"
	"EXIT STATUS\n"
	"    0 success; 1 no such node; 2 usage error; 3 other failure.\n"
	"\n"
	"EXAMPLES\n"
	"    dfkvctl stats kv0\n"
	"    dfkvctl stats --json | python3 -m json.tool\n"
	"    dfkvctl stats kv0 --tenants\n"
	"    dfkvctl stats kv0 --latency\n";

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

/* A duration in ns, as "12.3 us". */
static void fmt_ns(char *buf, size_t len, double ns)
{
	if (ns < 1e3)
		snprintf(buf, len, "%.0f ns", ns);
	else if (ns < 1e6)
		snprintf(buf, len, "%.3g us", ns / 1e3);
	else if (ns < 1e9)
		snprintf(buf, len, "%.3g ms", ns / 1e6);
	else
		snprintf(buf, len, "%.3g s", ns / 1e9);
}

/* The bound of the bucket holding the q-quantile, as "< 16.4 us". */
static void fmt_quantile(char *buf, size_t len, const struct dfkv_hist_info *h,
			 double q)
{
	uint64_t seen = 0;
	unsigned int b;
	char t[32];

	for (b = 0; b < DFKV_HIST_BUCKETS; b++) {
		seen += h->buckets[b];
		if ((double)seen >= q * (double)h->count)
			break;
	}
	if (b + 1 >= DFKV_HIST_BUCKETS) {
		fmt_ns(t, sizeof(t), (double)dfkv_hist_bound_ns(b - 1));
		snprintf(buf, len, ">= %s", t);
		return;
	}
	fmt_ns(t, sizeof(t), (double)dfkv_hist_bound_ns(b));
	snprintf(buf, len, "< %s", t);
}

static void print_latency(FILE *f, const struct node_info *ni)
{
	const struct dfkv_latency *lat = &ni->latency;
	size_t i;
	unsigned int b;

	fprintf(f, "node %s latency\n", ni->name);
	if (!lat->n)
		fprintf(f, "  no samples\n");
	for (i = 0; i < lat->n; i++) {
		const struct dfkv_hist_info *h = &lat->h[i];
		char what[32], mean[32], p50[40], p99[40], bound[40];

		if (dfkv_hist_has_transport(h->op))
			snprintf(what, sizeof(what), "%s %s",
				 dfkv_hist_op_name(h->op),
				 dfkv_hist_transport_name(h->transport) ?: "?");
		else
			snprintf(what, sizeof(what), "%s",
				 dfkv_hist_op_name(h->op));
		fmt_ns(mean, sizeof(mean),
		       h->count ? (double)h->sum_ns / (double)h->count : 0);
		fmt_quantile(p50, sizeof(p50), h, 0.5);
		fmt_quantile(p99, sizeof(p99), h, 0.99);
		fprintf(f, "  %-10s count %llu  mean %s  p50 %s  p99 %s\n", what,
			(unsigned long long)h->count, mean, p50, p99);
		for (b = 0; b < DFKV_HIST_BUCKETS; b++) {
			if (!h->buckets[b])
				continue;
			if (b + 1 < DFKV_HIST_BUCKETS) {
				fmt_ns(mean, sizeof(mean),
				       (double)dfkv_hist_bound_ns(b));
				snprintf(bound, sizeof(bound), "< %s", mean);
			} else {
				snprintf(bound, sizeof(bound), "rest");
			}
			fprintf(f, "    %-12s %llu\n", bound,
				(unsigned long long)h->buckets[b]);
		}
	}
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

static json_object *node_json(const struct node_info *ni)
{
	json_object *o = json_object_new_object();

	jadd(o, "name", json_object_new_string(ni->name));
	jadd(o, "state", json_object_new_string(state_name(ni->state)));
	jadd(o, "evict", json_object_new_boolean(ni->flags & DFKV_NODE_F_EVICT));
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

void json_print(json_object *o)
{
	puts(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PRETTY |
					       JSON_C_TO_STRING_NOSLASHESCAPE));
	json_object_put(o);
}

static json_object *node_latency_json(const struct node_info *ni)
{
	json_object *o = json_object_new_object();

	jadd(o, "name", json_object_new_string(ni->name));
	jadd(o, "latency", latency_json(&ni->latency));
	return o;
}

static void node_print(const struct node_info *ni, bool json, bool raw,
		       bool latency)
{
	if (json)
		json_print(latency ? node_latency_json(ni) : node_json(ni));
	else if (latency)
		print_latency(stdout, ni);
	else
		print_node_report(stdout, ni, raw);
}

int stats_main(int argc, char *argv[])
{
	static const struct option opts[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "tenants", no_argument, NULL, 't' },
		{ "bytes", no_argument, NULL, 'b' },
		{ "latency", no_argument, NULL, 'l' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 }
	};
	bool json = false, tenants = false, raw = false, latency = false;
	const char *node = NULL;
	struct dfkv_genl g;
	int c, ret;

	optind = 0;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":jtblh", opts, NULL)) != -1) {
		switch (c) {
		case 'j':
			json = true;
			break;
		case 't':
			tenants = true;
			break;
		case 'b':
			raw = true;
			break;
		case 'l':
			latency = true;
			break;
		case 'h':
			return print_help(help);
		default:
			return opt_error("stats", c, argv);
		}
	}
	if (optind < argc)
		node = argv[optind++];
	if (optind < argc)
		return usage_error("stats", "unexpected argument '%s'", argv[optind]);
	if (tenants && !node)
		return usage_error("stats", "--tenants needs a NODE");
	if (tenants && latency)
		return usage_error("stats", "--tenants and --latency exclude each other");
	if (node && strlen(node) >= DFKV_NODE_NAME_MAX)
		return usage_error("stats", "node name '%s' is too long", node);

	ret = ctl_open(&g);
	if (ret)
		return ret;
	if (tenants) {
		ret = tenant_list_show(&g, node, json, raw);
	} else if (node) {
		struct node_info ni;

		ret = node_fetch(&g, node, &ni);
		if (!ret)
			node_print(&ni, json, raw, latency);
	} else {
		struct node_info *v = NULL;
		size_t n = 0, i;

		ret = node_fetch_all(&g, &v, &n);
		if (!ret && json) {
			json_object *o = json_object_new_object();
			json_object *arr = json_object_new_array();

			for (i = 0; i < n; i++)
				json_object_array_add(arr, latency ?
						      node_latency_json(&v[i]) :
						      node_json(&v[i]));
			jadd(o, "nodes", arr);
			json_print(o);
		} else if (!ret) {
			if (!n)
				printf("no nodes in this network namespace\n");
			for (i = 0; i < n; i++) {
				if (i)
					putchar('\n');
				if (latency)
					print_latency(stdout, &v[i]);
				else
					print_node_report(stdout, &v[i], raw);
			}
		}
		free(v);
	}
	dfkv_genl_close(&g);
	return ret;
}
