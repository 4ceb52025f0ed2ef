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
	"                    {\"name\", \"state\", \"phase\" (\"up\", or \"rebuilding\"\n"
	"                    while a disk attach is in progress), \"evict\",\n"
	"                    \"flags\", \"ram_bytes\",\n"
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
			json_object_object_add(o, "nodes", arr);
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
