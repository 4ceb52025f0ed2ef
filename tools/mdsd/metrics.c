// SPDX-License-Identifier: GPL-2.0
/*
 * mdsd /metrics: Prometheus text exposition (SPEC.md section 8).  mdsd's
 * own counters (HTTP requests by method and code, registrations, lease
 * grants/renewals/expiries, long-polls, snapshot writes, agent syncs),
 * the directory per group (epoch, members by state, clients) and, when
 * the dfkv module is loaded, the stats of this host's kernel nodes read
 * over netlink at scrape time: node counters and gauges, the RAM and disk
 * tiers, transports, latency histograms, disks and tenants
 * (Documentation/mdsd.md lists them).
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "genl.h"
#include "hist.h"
#include "mdsd.h"
#include "names_gen.h"

struct mdsd_metrics metrics;

/* HTTP requests by method and status code. */
static const char *const methods[] = { "GET", "HEAD", "PUT", "DELETE", "other" };
#define NR_METHODS (sizeof(methods) / sizeof(methods[0]))
static const unsigned int codes[] = {
	200, 400, 401, 403, 404, 405, 409, 413, 429, 500, 503, 507,
	0 /* other */
};
#define NR_CODES (sizeof(codes) / sizeof(codes[0]))
static atomic_ullong http_reqs[NR_METHODS][NR_CODES];

void metrics_http(const char *method, unsigned int code)
{
	size_t m, c;

	for (m = 0; m < NR_METHODS - 1; m++) {
		if (!strcmp(method, methods[m]))
			break;
	}
	for (c = 0; c < NR_CODES - 1; c++) {
		if (codes[c] == code)
			break;
	}
	atomic_fetch_add_explicit(&http_reqs[m][c], 1, memory_order_relaxed);
}

/* A growing text buffer. */
struct buf {
	char *p;
	size_t len, cap;
	bool oom;
};

static void out(struct buf *b, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void out(struct buf *b, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (b->oom)
		return;
	for (;;) {
		va_start(ap, fmt);
		n = vsnprintf(b->p + b->len, b->cap - b->len, fmt, ap);
		va_end(ap);
		if (n < 0) {
			b->oom = true;
			return;
		}
		if ((size_t)n < b->cap - b->len) {
			b->len += (size_t)n;
			return;
		}
		{
			size_t cap = (b->cap + (size_t)n + 1) * 2;
			char *p = realloc(b->p, cap);

			if (!p) {
				b->oom = true;
				return;
			}
			b->p = p;
			b->cap = cap;
		}
	}
}

static void help(struct buf *b, const char *name, const char *type,
		 const char *text)
{
	out(b, "# HELP %s %s\n# TYPE %s %s\n", name, text, name, type);
}

static unsigned long long cnt(enum mdsd_counter c)
{
	return atomic_load_explicit(&metrics.c[c], memory_order_relaxed);
}

static void own_counters(struct buf *b)
{
	static const struct {
		enum mdsd_counter c;
		const char *name, *text;
	} list[] = {
		{ C_REGISTRATIONS, "dfkv_mds_registrations_total",
		  "Entries registered (new members and clients)." },
		{ C_RENEWALS, "dfkv_mds_lease_renewals_total",
		  "Heartbeats of registered entries." },
		{ C_DEREGISTRATIONS, "dfkv_mds_deregistrations_total",
		  "Entries removed by DELETE." },
		{ C_LEASE_GRANTS, "dfkv_mds_lease_grants_total",
		  "Leases granted." },
		{ C_LEASE_EXPIRIES, "dfkv_mds_lease_expiries_total",
		  "Entries removed because their lease expired (memory backend)." },
		{ C_EPOCH_BUMPS, "dfkv_mds_epoch_changes_total",
		  "Membership changes made through this mdsd." },
		{ C_BACKEND_ERRORS, "dfkv_mds_backend_errors_total",
		  "Requests failed because the backend was unavailable." },
		{ C_LONGPOLLS, "dfkv_mds_long_polls_total",
		  "wait_epoch requests." },
		{ C_LONGPOLL_TIMEOUTS, "dfkv_mds_long_poll_timeouts_total",
		  "wait_epoch requests answered after the full wait." },
		{ C_SNAPSHOT_WRITES, "dfkv_mds_snapshot_writes_total",
		  "Snapshot files written." },
		{ C_SNAPSHOT_ERRORS, "dfkv_mds_snapshot_errors_total",
		  "Snapshot writes that failed." },
		{ C_AGENT_SYNCS, "dfkv_mds_agent_syncs_total",
		  "Host agent passes over the kernel's nodes." },
		{ C_AGENT_EVENTS, "dfkv_mds_agent_events_total",
		  "Node events the host agent received." },
		{ C_AGENT_ERRORS, "dfkv_mds_agent_errors_total",
		  "Host agent netlink or registration errors." },
		{ C_AUTH_FAILURES, "dfkv_mds_auth_failures_total",
		  "PUTs and DELETEs refused (401): no or a wrong bearer token." },
		{ C_FORBIDDEN, "dfkv_mds_forbidden_total",
		  "Writes of /members with the client token refused (403)." },
		{ C_WEIGHT_REFUSALS, "dfkv_mds_weight_refusals_total",
		  "Member writes refused (409): the group's weight cap." },
		{ C_BUSY_REFUSALS, "dfkv_mds_busy_refusals_total",
		  "Requests other than authenticated writes refused (503): the connections left are reserved for writes." },
		{ C_LONGPOLL_REFUSALS, "dfkv_mds_long_poll_refusals_total",
		  "wait_epoch requests refused (429): a long-poll cap." },
		{ C_LONGPOLL_GONE, "dfkv_mds_long_polls_abandoned_total",
		  "wait_epoch requests ended because their peer disconnected." },
		{ C_ETCD_WATCHES, "dfkv_mds_etcd_watches_total",
		  "etcd watches opened (etcd backend: shared group watches and long-polls' own)." },
		{ C_ETCD_GROUP_READS, "dfkv_mds_etcd_group_reads_total",
		  "etcd ranges of a whole group's members or clients (etcd backend)." },
		{ C_ETCD_CACHED_SUMS, "dfkv_mds_etcd_cached_weight_sums_total",
		  "Weight caps checked on a watched group's shared listing, without reading it (etcd backend)." },
		{ C_ETCD_ENTRY_READS, "dfkv_mds_etcd_entry_reads_total",
		  "etcd ranges of one entry by a write, its group's shared listing not current (etcd backend)." },
	};
	size_t i, m, c;

	for (i = 0; i < sizeof(list) / sizeof(list[0]); i++) {
		help(b, list[i].name, "counter", list[i].text);
		out(b, "%s %llu\n", list[i].name, cnt(list[i].c));
	}
	help(b, "dfkv_mds_http_requests_total", "counter",
	     "HTTP requests by method and status code.");
	for (m = 0; m < NR_METHODS; m++) {
		for (c = 0; c < NR_CODES; c++) {
			unsigned long long v = atomic_load(&http_reqs[m][c]);
			char code[16];

			if (!v)
				continue;
			if (codes[c])
				snprintf(code, sizeof(code), "%u", codes[c]);
			else
				snprintf(code, sizeof(code), "other");
			out(b, "dfkv_mds_http_requests_total{method=\"%s\",code=\"%s\"} %llu\n",
			    methods[m], code, v);
		}
	}
	help(b, "dfkv_mds_long_poll_waiters", "gauge",
	     "wait_epoch requests waiting now.");
	out(b, "dfkv_mds_long_poll_waiters %d\n",
	    atomic_load(&metrics.longpoll_waiters));
	help(b, "dfkv_mds_etcd_group_watches", "gauge",
	     "Groups (and kinds) with a shared etcd watch now (etcd backend).");
	out(b, "dfkv_mds_etcd_group_watches %d\n",
	    atomic_load(&metrics.etcd_group_watches));
	help(b, "dfkv_mds_agent_nodes", "gauge",
	     "Kernel nodes the host agent keeps registered.");
	out(b, "dfkv_mds_agent_nodes %d\n", atomic_load(&metrics.agent_nodes));
}

static void directory(struct buf *b, struct backend *be)
{
	struct mds_names names;
	size_t i, j;
	int k, ret;

	ret = be->ops->groups(be, &names);
	help(b, "dfkv_mds_ready", "gauge", "1 when the backend answers.");
	out(b, "dfkv_mds_ready %d\n", ret ? 0 : be->ops->ready(be));
	if (ret)
		return;
	help(b, "dfkv_mds_groups", "gauge", "Groups with members or clients.");
	out(b, "dfkv_mds_groups %zu\n", names.n);
	help(b, "dfkv_mds_epoch", "gauge",
	     "Epoch of a group's members or clients list.");
	help(b, "dfkv_mds_members", "gauge", "Members of a group by state.");
	help(b, "dfkv_mds_clients", "gauge", "Clients of a group.");
	for (i = 0; i < names.n; i++) {
		for (k = 0; k < MDS_NR_KINDS; k++) {
			struct mds_list l;
			size_t by_state[MDS_NR_STATES] = { 0 };
			int s;

			if (be->ops->list(be, names.v[i], k, &l))
				continue;
			out(b, "dfkv_mds_epoch{group=\"%s\",kind=\"%s\"} %llu\n",
			    names.v[i], mds_kind_name(k),
			    (unsigned long long)l.epoch);
			for (j = 0; j < l.n; j++)
				by_state[l.v[j].state]++;
			if (k == MDS_MEMBERS) {
				for (s = 0; s < MDS_NR_STATES; s++)
					out(b, "dfkv_mds_members{group=\"%s\",state=\"%s\"} %zu\n",
					    names.v[i], mds_state_name(s),
					    by_state[s]);
			} else {
				out(b, "dfkv_mds_clients{group=\"%s\"} %zu\n",
				    names.v[i], l.n);
			}
			mds_list_free(&l);
		}
	}
	mds_names_free(&names);
}

/* ------------------------------------------------------- node stats */

/*
 * Node stat attributes exported as they are: metric name, type, help.
 * The per-tier, per-transport, per-disk and per-tenant ones and the
 * latency histograms are made below from several attributes each.
 */
static const struct {
	const char *name, *type, *text;
} stat_meta[DFKV_STAT_MAX + 1] = {
	[DFKV_STAT_BYTES_IN] = { "dfkv_bytes_in_total", "counter",
				 "Payload bytes stored." },
	[DFKV_STAT_BYTES_OUT] = { "dfkv_bytes_out_total", "counter",
				  "Payload bytes served, every transport." },
	[DFKV_STAT_OBJECTS] = { "dfkv_indexed_objects", "gauge",
				"Blocks the node holds, in any tier." },
	[DFKV_STAT_USED_BYTES] = { "dfkv_indexed_bytes", "gauge",
				   "Payload bytes of the blocks the node holds." },
	[DFKV_STAT_EVICTIONS] = { "dfkv_evictions_total", "counter",
				  "Blocks evicted from the node." },
	[DFKV_STAT_RAM_EVICTIONS] = { "dfkv_ram_evictions_total", "counter",
				      "Durable blocks dropped from RAM, kept on disk." },
	[DFKV_STAT_PINS] = { "dfkv_pinned_entries", "gauge",
			     "Pinned entries." },
	[DFKV_STAT_LEASES] = { "dfkv_leases", "gauge", "Live leases." },
	[DFKV_STAT_LEASE_GRANTS] = { "dfkv_lease_grants_total", "counter",
				     "Leases granted." },
	[DFKV_STAT_LEASE_EXPIRIES] = { "dfkv_lease_expiries_total", "counter",
				       "Leases expired." },
	[DFKV_STAT_LEASE_READS] = { "dfkv_lease_reads_total", "counter",
				    "Cold reads into RAM started by a LEASE of a disk-only block." },
	[DFKV_STAT_TENANTS] = { "dfkv_tenants", "gauge",
				"Tenants registered or with blocks." },
	[DFKV_STAT_EXTENTS_BOUND] = { "dfkv_slab_extents_bound", "gauge",
				      "RAM slab extents bound to a size class." },
	[DFKV_STAT_EXTENTS_TOTAL] = { "dfkv_slab_extents", "gauge",
				      "RAM slab extents available." },
	[DFKV_STAT_AUTH_OK] = { "dfkv_auth_ok_total", "counter",
				"Tenant authentications accepted." },
	[DFKV_STAT_AUTH_FAILURES] = { "dfkv_auth_failures_total", "counter",
				      "Tenant authentications refused." },
	[DFKV_STAT_FORBIDDEN] = { "dfkv_forbidden_total", "counter",
				  "Requests refused for a tenant not authorized." },
	[DFKV_STAT_QUOTA_REJECTIONS] = { "dfkv_quota_rejections_total", "counter",
					 "PUTs refused over their tenant's quota." },
	[DFKV_STAT_CONNS_REFUSED] = { "dfkv_connections_refused_total", "counter",
				      "Connections refused over the limit." },
	[DFKV_STAT_PROTO_ERRORS] = { "dfkv_protocol_errors_total", "counter",
				     "Malformed frames." },
	[DFKV_STAT_TCP_ZC_REPLIES] = { "dfkv_tcp_zerocopy_replies_total", "counter",
				       "TCP GET replies whose pages were lent to the socket." },
	[DFKV_STAT_TCP_ZC_COPIED] = { "dfkv_tcp_zerocopy_copied_total", "counter",
				      "Of those, the ones the network stack copied anyway." },
	[DFKV_STAT_TCP_ZC_LENT_BYTES] = { "dfkv_tcp_zerocopy_lent_bytes", "gauge",
					  "Entry bytes lent TCP GET replies pin now." },
	[DFKV_STAT_TCP_ZC_CAPPED] = { "dfkv_tcp_zerocopy_capped_total", "counter",
				      "TCP GET replies sent by copy over the bound of lent bytes." },
	[DFKV_STAT_RECV_RESERVED] = { "dfkv_recv_reserved_bytes", "gauge",
				      "RAM held by PUTs still receiving their payload." },
	[DFKV_STAT_RECV_BUSY] = { "dfkv_recv_busy_total", "counter",
				  "PUTs answered BUSY: receive RAM at its cap." },
	[DFKV_STAT_STAGE_BUSY] = { "dfkv_stage_busy_total", "counter",
				   "PUTs and GETs answered BUSY: their peer address held its share of the stages." },
	[DFKV_STAT_RAM_PUTS] = { "dfkv_ram_puts_total", "counter",
				 "PUTs admitted to RAM (node with disks)." },
	[DFKV_STAT_RAM_BYPASSES] = { "dfkv_ram_bypasses_total", "counter",
				     "PUTs written straight to disk." },
	[DFKV_STAT_FLUSHED] = { "dfkv_flushes_total", "counter",
				"Blocks made durable." },
	[DFKV_STAT_FLUSH_RETRIES] = { "dfkv_flush_retries_total", "counter",
				      "Flushes retried." },
	[DFKV_STAT_FLUSH_DROPS] = { "dfkv_flush_drops_total", "counter",
				    "Flushes given up: the block stays RAM-only." },
	[DFKV_STAT_PROMOTED] = { "dfkv_cold_reads_total", "counter",
				 "Blocks read into RAM from a disk." },
	[DFKV_STAT_COALESCED] = { "dfkv_coalesced_gets_total", "counter",
				  "GETs that waited for another GET's cold read." },
	[DFKV_STAT_DIRTY_BYTES] = { "dfkv_dirty_bytes", "gauge",
				    "RAM bytes not yet durable." },
	[DFKV_STAT_FLUSH_BACKLOG] = { "dfkv_flush_backlog", "gauge",
				      "Blocks queued for flush." },
	[DFKV_STAT_DISKS] = { "dfkv_disks", "gauge", "Disks of the node." },
	[DFKV_STAT_DISKS_FAILED] = { "dfkv_disks_failed", "gauge",
				     "Failed disks of the node." },
	[DFKV_STAT_RDMA_READS] = { "dfkv_rdma_reads_total", "counter",
				   "RDMA READs posted." },
	[DFKV_STAT_RDMA_WRITES] = { "dfkv_rdma_writes_total", "counter",
				    "RDMA WRITEs posted." },
	[DFKV_STAT_RDMA_READ_BYTES] = { "dfkv_rdma_read_bytes_total", "counter",
					"Bytes RDMA READ from clients." },
	[DFKV_STAT_RDMA_WRITE_BYTES] = { "dfkv_rdma_write_bytes_total", "counter",
					 "Bytes RDMA WRITTEN to clients." },
	[DFKV_STAT_RDMA_CQ_ERRORS] = { "dfkv_rdma_cq_errors_total", "counter",
				       "Failed RDMA work completions." },
};

/* Disk stat attributes, with labels node and disk. */
static const struct {
	const char *name, *type, *text;
} disk_meta[DFKV_STAT_MAX + 1] = {
	[DFKV_STAT_OBJECTS] = { "dfkv_disk_objects", "gauge",
				"Blocks durable on the disk." },
	[DFKV_STAT_USED_BYTES] = { "dfkv_disk_used_bytes", "gauge",
				   "Payload bytes durable on the disk." },
	[DFKV_STAT_EVICTIONS] = { "dfkv_disk_evictions_total", "counter",
				  "Blocks evicted for the disk's space." },
	[DFKV_STAT_DISK_READS] = { "dfkv_disk_reads_total", "counter",
				   "Read bios." },
	[DFKV_STAT_DISK_WRITES] = { "dfkv_disk_writes_total", "counter",
				    "Write bios." },
	[DFKV_STAT_DISK_READ_BYTES] = { "dfkv_disk_read_bytes_total", "counter",
					"Bytes read." },
	[DFKV_STAT_DISK_WRITE_BYTES] = { "dfkv_disk_write_bytes_total", "counter",
					 "Bytes written." },
	[DFKV_STAT_DISK_IO_ERRORS] = { "dfkv_disk_io_errors_total", "counter",
				       "Failed bios." },
};

/* Tenant stat attributes, with labels node and tenant. */
static const struct {
	const char *name, *type, *text;
} tenant_meta[DFKV_STAT_MAX + 1] = {
	[DFKV_STAT_OBJECTS] = { "dfkv_tenant_objects", "gauge",
				"Blocks of the tenant." },
	[DFKV_STAT_USED_BYTES] = { "dfkv_tenant_used_bytes", "gauge",
				   "Payload bytes of the tenant's blocks." },
	[DFKV_STAT_CHARGED_BYTES] = { "dfkv_tenant_charged_bytes", "gauge",
				      "Quota usage, PUTs still filling included." },
	[DFKV_STAT_BYTES_IN] = { "dfkv_tenant_bytes_in_total", "counter",
				 "Payload bytes stored for the tenant." },
	[DFKV_STAT_BYTES_OUT] = { "dfkv_tenant_bytes_out_total", "counter",
				  "Payload bytes served to the tenant." },
	[DFKV_STAT_HITS] = { "dfkv_tenant_hits_total", "counter",
			     "GET hits of the tenant." },
	[DFKV_STAT_MISSES] = { "dfkv_tenant_misses_total", "counter",
			       "GET misses of the tenant." },
	[DFKV_STAT_AUTH_FAILURES] = { "dfkv_tenant_auth_failures_total", "counter",
				      "Authentications refused for the tenant." },
	[DFKV_STAT_FORBIDDEN] = { "dfkv_tenant_forbidden_total", "counter",
				  "Requests for the tenant answered FORBIDDEN." },
	[DFKV_STAT_QUOTA_REJECTIONS] = { "dfkv_tenant_quota_rejections_total",
					 "counter",
					 "PUTs refused over the tenant's quota." },
};

#define MAX_NODES 256
#define MAX_DISKS 1024
#define MAX_TENANTS 4096

/* The u64 attributes of a stats nest. */
struct stat_vals {
	bool has[DFKV_STAT_MAX + 1];
	uint64_t v[DFKV_STAT_MAX + 1];
};

struct node_stats {
	char name[DFKV_NODE_NAME_MAX];
	uint32_t state;
	struct stat_vals s;
	uint64_t ops[__DFKV_OP_MAX][__DFKV_STATUS_MAX];
	struct dfkv_latency lat;
	/* the node's disks, summed */
	uint64_t disk_objects, disk_used, disk_slot, disk_capacity;
};

struct disk_stats {
	char node[DFKV_NODE_NAME_MAX];
	char name[DFKV_DISK_NAME_MAX];
	uint32_t state;
	struct stat_vals s;
};

struct tenant_stats {
	char node[DFKV_NODE_NAME_MAX];
	uint64_t hash;
	struct stat_vals s;
};

struct node_dump {
	struct node_stats *n;
	size_t count;
	struct disk_stats *d;
	size_t nr_disks;
	struct tenant_stats *t;
	size_t nr_tenants;
};

/* Every u64 stat of a nest; the nests inside it are left to the caller. */
static void parse_vals(const struct nlattr *nest, const struct nlattr **st,
		       struct stat_vals *s)
{
	int i;

	dfkv_genl_parse_stats(nest, st);
	for (i = 0; i <= DFKV_STAT_MAX; i++) {
		if (st[i] && i != DFKV_STAT_OPS && i != DFKV_STAT_NUMA_PAGES &&
		    i != DFKV_STAT_LATENCY &&
		    mnl_attr_get_payload_len(st[i]) == 8) {
			s->v[i] = mnl_attr_get_u64(st[i]);
			s->has[i] = true;
		}
	}
}

/* A string attribute into buf; false when absent or not a string. */
static bool attr_str(const struct nlattr *a, char *buf, size_t len)
{
	if (!a || mnl_attr_validate(a, MNL_TYPE_NUL_STRING))
		return false;
	snprintf(buf, len, "%s", mnl_attr_get_str(a));
	return true;
}

static void parse_ops(const struct nlattr *nest, struct node_stats *ns)
{
	const struct nlattr *op, *a;

	mnl_attr_for_each_nested(op, nest) {
		uint32_t code = UINT32_MAX, status = UINT32_MAX;
		uint64_t count = 0;

		mnl_attr_for_each_nested(a, op) {
			switch (mnl_attr_get_type(a)) {
			case DFKV_STAT_OP_CODE:
				if (mnl_attr_get_payload_len(a) == 4)
					code = mnl_attr_get_u32(a);
				break;
			case DFKV_STAT_OP_STATUS:
				if (mnl_attr_get_payload_len(a) == 4)
					status = mnl_attr_get_u32(a);
				break;
			case DFKV_STAT_OP_COUNT:
				if (mnl_attr_get_payload_len(a) == 8)
					count = mnl_attr_get_u64(a);
				break;
			}
		}
		if (code < __DFKV_OP_MAX && status < __DFKV_STATUS_MAX)
			ns->ops[code][status] = count;
	}
}

static int node_cb(const struct nlmsghdr *nlh, void *data)
{
	struct node_dump *d = data;
	const struct nlattr *tb[DFKV_A_MAX + 1], *st[DFKV_STAT_MAX + 1];
	struct node_stats *ns;

	if (d->count >= MAX_NODES)
		return MNL_CB_OK;
	dfkv_genl_parse(nlh, tb);
	ns = &d->n[d->count];
	memset(ns, 0, sizeof(*ns));
	if (!attr_str(tb[DFKV_A_NODE_NAME], ns->name, sizeof(ns->name)))
		return MNL_CB_OK;
	d->count++;
	if (tb[DFKV_A_NODE_STATE] &&
	    mnl_attr_get_payload_len(tb[DFKV_A_NODE_STATE]) == 4)
		ns->state = mnl_attr_get_u32(tb[DFKV_A_NODE_STATE]);
	if (!tb[DFKV_A_NODE_STATS])
		return MNL_CB_OK;
	parse_vals(tb[DFKV_A_NODE_STATS], st, &ns->s);
	if (st[DFKV_STAT_OPS])
		parse_ops(st[DFKV_STAT_OPS], ns);
	if (st[DFKV_STAT_LATENCY])
		dfkv_latency_parse(st[DFKV_STAT_LATENCY], &ns->lat);
	return MNL_CB_OK;
}

static int disk_cb(const struct nlmsghdr *nlh, void *data)
{
	struct node_dump *d = data;
	const struct nlattr *tb[DFKV_A_MAX + 1], *st[DFKV_STAT_MAX + 1];
	struct disk_stats *ds;

	if (d->nr_disks >= MAX_DISKS)
		return MNL_CB_OK;
	dfkv_genl_parse(nlh, tb);
	ds = &d->d[d->nr_disks];
	memset(ds, 0, sizeof(*ds));
	if (!attr_str(tb[DFKV_A_NODE_NAME], ds->node, sizeof(ds->node)) ||
	    !attr_str(tb[DFKV_A_DISK_NAME], ds->name, sizeof(ds->name)))
		return MNL_CB_OK;
	d->nr_disks++;
	if (tb[DFKV_A_DISK_STATE] &&
	    mnl_attr_get_payload_len(tb[DFKV_A_DISK_STATE]) == 4)
		ds->state = mnl_attr_get_u32(tb[DFKV_A_DISK_STATE]);
	if (tb[DFKV_A_DISK_STATS])
		parse_vals(tb[DFKV_A_DISK_STATS], st, &ds->s);
	return MNL_CB_OK;
}

static int tenant_cb(const struct nlmsghdr *nlh, void *data)
{
	struct node_dump *d = data;
	const struct nlattr *tb[DFKV_A_MAX + 1], *st[DFKV_STAT_MAX + 1];
	struct tenant_stats *ts;

	if (d->nr_tenants >= MAX_TENANTS)
		return MNL_CB_OK;
	dfkv_genl_parse(nlh, tb);
	ts = &d->t[d->nr_tenants];
	memset(ts, 0, sizeof(*ts));
	if (!attr_str(tb[DFKV_A_NODE_NAME], ts->node, sizeof(ts->node)) ||
	    !tb[DFKV_A_TENANT_HASH] ||
	    mnl_attr_get_payload_len(tb[DFKV_A_TENANT_HASH]) != 8)
		return MNL_CB_OK;
	d->nr_tenants++;
	ts->hash = mnl_attr_get_u64(tb[DFKV_A_TENANT_HASH]);
	if (tb[DFKV_A_TENANT_STATS])
		parse_vals(tb[DFKV_A_TENANT_STATS], st, &ts->s);
	return MNL_CB_OK;
}

/* Disks and tenants of every node; what cannot be read is left out. */
static void dump_disks_tenants(struct dfkv_genl *g, struct node_dump *d)
{
	char msg[MNL_SOCKET_BUFFER_SIZE];
	struct nlmsghdr *nlh;
	size_t i, j;

	nlh = dfkv_genl_msg(g, msg, DFKV_CMD_DISK_GET, NLM_F_DUMP);
	if (dfkv_genl_talk(g, nlh, disk_cb, d))
		d->nr_disks = 0;
	for (i = 0; i < d->nr_disks; i++) {
		const struct disk_stats *ds = &d->d[i];

		for (j = 0; j < d->count; j++) {
			struct node_stats *ns = &d->n[j];

			if (strcmp(ns->name, ds->node))
				continue;
			ns->disk_objects += ds->s.v[DFKV_STAT_OBJECTS];
			ns->disk_used += ds->s.v[DFKV_STAT_USED_BYTES];
			ns->disk_slot += ds->s.v[DFKV_STAT_SLOT_BYTES];
			ns->disk_capacity += ds->s.v[DFKV_STAT_CAPACITY_BYTES];
		}
	}
	for (i = 0; i < d->count; i++) {
		size_t before = d->nr_tenants;

		nlh = dfkv_genl_msg(g, msg, DFKV_CMD_TENANT_GET, NLM_F_DUMP);
		mnl_attr_put_strz(nlh, DFKV_A_NODE_NAME, d->n[i].name);
		if (dfkv_genl_talk(g, nlh, tenant_cb, d))
			d->nr_tenants = before;
	}
}

/* One sample of a series labelled by node (and one more label). */
static void node_sample(struct buf *b, const char *name, const char *node,
			const char *label, const char *value,
			unsigned long long v)
{
	if (label)
		out(b, "%s{node=\"%s\",%s=\"%s\"} %llu\n", name, node, label,
		    value, v);
	else
		out(b, "%s{node=\"%s\"} %llu\n", name, node, v);
}

/* Per-tier metrics, each with a RAM and a disk value per node. */
enum { TM_HITS, TM_MISSES, TM_OBJECTS, TM_USED, TM_SLOT, TM_CAPACITY, NR_TM };

static const struct {
	const char *name, *type, *text;
} tier_meta[NR_TM] = {
	[TM_HITS] = { "dfkv_hits_total", "counter",
		      "GET hits by the tier that served them (disk: after a cold read)." },
	[TM_MISSES] = { "dfkv_misses_total", "counter",
			"GET lookups a tier could not serve (RAM: went to disk or missed)." },
	[TM_OBJECTS] = { "dfkv_objects", "gauge",
			 "Blocks in a tier (a durable block in RAM counts in both)." },
	[TM_USED] = { "dfkv_used_bytes", "gauge",
		      "Payload bytes of a tier's blocks." },
	[TM_SLOT] = { "dfkv_slot_bytes", "gauge",
		      "Bytes of a tier's slots in use." },
	[TM_CAPACITY] = { "dfkv_capacity_bytes", "gauge", "Capacity of a tier." },
};

/* t[metric][0] is the RAM tier's value, t[metric][1] the disks'. */
static void tier_values(const struct node_stats *ns, uint64_t t[NR_TM][2])
{
	const uint64_t *v = ns->s.v;
	uint64_t disk_hits = v[DFKV_STAT_DISK_HITS];
	bool disks = v[DFKV_STAT_DISKS] || disk_hits;

	t[TM_HITS][0] = v[DFKV_STAT_HITS] > disk_hits ?
			v[DFKV_STAT_HITS] - disk_hits : 0;
	t[TM_HITS][1] = disk_hits;
	t[TM_MISSES][0] = v[DFKV_STAT_MISSES] + v[DFKV_STAT_RAM_MISSES] +
			  v[DFKV_STAT_COALESCED];
	t[TM_MISSES][1] = disks ? v[DFKV_STAT_MISSES] : 0;
	t[TM_OBJECTS][0] = v[DFKV_STAT_RAM_OBJECTS];
	t[TM_OBJECTS][1] = ns->disk_objects;
	t[TM_USED][0] = v[DFKV_STAT_RAM_USED_BYTES];
	t[TM_USED][1] = ns->disk_used;
	t[TM_SLOT][0] = v[DFKV_STAT_SLOT_BYTES];
	t[TM_SLOT][1] = ns->disk_slot;
	t[TM_CAPACITY][0] = v[DFKV_STAT_CAPACITY_BYTES];
	t[TM_CAPACITY][1] = ns->disk_capacity;
}

/* Hits and misses, objects and bytes of the RAM and the disk tier. */
static void tier_metrics(struct buf *b, const struct node_dump *d)
{
	uint64_t t[NR_TM][2];
	size_t i;
	int k;

	for (k = 0; k < NR_TM; k++) {
		help(b, tier_meta[k].name, tier_meta[k].type, tier_meta[k].text);
		for (i = 0; i < d->count; i++) {
			tier_values(&d->n[i], t);
			node_sample(b, tier_meta[k].name, d->n[i].name, "tier",
				    "ram", t[k][0]);
			node_sample(b, tier_meta[k].name, d->n[i].name, "tier",
				    "disk", t[k][1]);
		}
	}
}

/* Connections, accepts and deadline drops by transport. */
static void transport_metrics(struct buf *b, const struct node_dump *d)
{
	static const struct {
		const char *name, *type, *text;
		int tcp, rdma;
	} list[] = {
		{ "dfkv_connections", "gauge", "Open network connections.",
		  DFKV_STAT_CONNS, DFKV_STAT_RDMA_CONNS },
		{ "dfkv_accepts_total", "counter", "Connections accepted.",
		  DFKV_STAT_ACCEPTS, DFKV_STAT_RDMA_ACCEPTS },
		{ "dfkv_deadline_drops_total", "counter",
		  "Connections dropped past their first-request or idle deadline.",
		  DFKV_STAT_TCP_DEADLINE_DROPS, DFKV_STAT_RDMA_DEADLINE_DROPS },
	};
	size_t l, i;

	for (l = 0; l < sizeof(list) / sizeof(list[0]); l++) {
		help(b, list[l].name, list[l].type, list[l].text);
		for (i = 0; i < d->count; i++) {
			const struct stat_vals *s = &d->n[i].s;

			if (s->has[list[l].tcp])
				node_sample(b, list[l].name, d->n[i].name,
					    "transport", "tcp", s->v[list[l].tcp]);
			if (s->has[list[l].rdma])
				node_sample(b, list[l].name, d->n[i].name,
					    "transport", "rdma",
					    s->v[list[l].rdma]);
		}
	}
}

/* GET misses by their cause on the node (store.md, "Miss causes"). */
static void miss_cause_metrics(struct buf *b, const struct node_dump *d)
{
	static const struct {
		const char *cause;
		int stat;
	} causes[] = {
		{ "never_stored", DFKV_STAT_MISS_NEVER_STORED },
		{ "evicted", DFKV_STAT_MISS_EVICTED },
		{ "removed", DFKV_STAT_MISS_REMOVED },
	};
	size_t c, i;

	help(b, "dfkv_miss_causes_total", "counter",
	     "GET misses by cause: no trace of the key, evicted by capacity, removed by a client (best-effort).");
	for (i = 0; i < d->count; i++)
		for (c = 0; c < sizeof(causes) / sizeof(causes[0]); c++)
			if (d->n[i].s.has[causes[c].stat])
				node_sample(b, "dfkv_miss_causes_total",
					    d->n[i].name, "cause",
					    causes[c].cause,
					    d->n[i].s.v[causes[c].stat]);
}

/* One histogram's _bucket (cumulative, le in seconds), _sum and _count. */
static void hist_series(struct buf *b, const char *name, const char *labels,
			const struct dfkv_hist_info *h)
{
	uint64_t cum = 0, count = h ? h->count : 0;
	unsigned int i;

	for (i = 0; i + 1 < DFKV_HIST_BUCKETS; i++) {
		cum += h ? h->buckets[i] : 0;
		out(b, "%s_bucket{%s,le=\"%.9g\"} %llu\n", name, labels,
		    (double)dfkv_hist_bound_ns(i) / 1e9, (unsigned long long)cum);
	}
	out(b, "%s_bucket{%s,le=\"+Inf\"} %llu\n", name, labels,
	    (unsigned long long)count);
	out(b, "%s_sum{%s} %.9f\n", name, labels,
	    h ? (double)h->sum_ns / 1e9 : 0.0);
	out(b, "%s_count{%s} %llu\n", name, labels, (unsigned long long)count);
}

static void latency_metrics(struct buf *b, const struct node_dump *d)
{
	static const uint32_t transports[] = { DFKV_HIST_DEV, DFKV_HIST_TCP,
					       DFKV_HIST_RDMA };
	static const struct {
		uint32_t op;
		const char *name, *text;
	} single[] = {
		{ DFKV_HIST_COLD_READ, "dfkv_cold_read_duration_seconds",
		  "A block's payload read from a disk into RAM." },
		{ DFKV_HIST_FLUSH, "dfkv_flush_duration_seconds",
		  "A block's payload written to a disk." },
	};
	char labels[128];
	size_t i, t, k;
	uint32_t op;

	help(b, "dfkv_request_duration_seconds", "histogram",
	     "GET and PUT from the request's header to its reply sent, by transport.");
	for (i = 0; i < d->count; i++) {
		for (op = DFKV_HIST_GET; op <= DFKV_HIST_PUT; op++) {
			for (t = 0; t < 3; t++) {
				snprintf(labels, sizeof(labels),
					 "node=\"%s\",op=\"%s\",transport=\"%s\"",
					 d->n[i].name, dfkv_hist_op_name(op),
					 dfkv_hist_transport_name(transports[t]));
				hist_series(b, "dfkv_request_duration_seconds",
					    labels, dfkv_latency_find(&d->n[i].lat,
							op, transports[t]));
			}
		}
	}
	for (k = 0; k < sizeof(single) / sizeof(single[0]); k++) {
		help(b, single[k].name, "histogram", single[k].text);
		for (i = 0; i < d->count; i++) {
			snprintf(labels, sizeof(labels), "node=\"%s\"",
				 d->n[i].name);
			hist_series(b, single[k].name, labels,
				    dfkv_latency_find(&d->n[i].lat,
						      single[k].op, 0));
		}
	}
}

static void disk_metrics(struct buf *b, const struct node_dump *d)
{
	size_t i;
	int s;

	help(b, "dfkv_disk_up", "gauge", "1 while a disk is up, 0 once failed.");
	for (i = 0; i < d->nr_disks; i++)
		out(b, "dfkv_disk_up{node=\"%s\",disk=\"%s\"} %d\n",
		    d->d[i].node, d->d[i].name,
		    d->d[i].state == DFKV_DISK_STATE_UP);
	for (s = 0; s <= DFKV_STAT_MAX; s++) {
		if (!disk_meta[s].name)
			continue;
		help(b, disk_meta[s].name, disk_meta[s].type, disk_meta[s].text);
		for (i = 0; i < d->nr_disks; i++)
			if (d->d[i].s.has[s])
				out(b, "%s{node=\"%s\",disk=\"%s\"} %llu\n",
				    disk_meta[s].name, d->d[i].node,
				    d->d[i].name,
				    (unsigned long long)d->d[i].s.v[s]);
	}
}

static void tenant_metrics(struct buf *b, const struct node_dump *d)
{
	size_t i;
	int s;

	for (s = 0; s <= DFKV_STAT_MAX; s++) {
		if (!tenant_meta[s].name)
			continue;
		help(b, tenant_meta[s].name, tenant_meta[s].type,
		     tenant_meta[s].text);
		for (i = 0; i < d->nr_tenants; i++)
			if (d->t[i].s.has[s])
				out(b, "%s{node=\"%s\",tenant=\"%016llx\"} %llu\n",
				    tenant_meta[s].name, d->t[i].node,
				    (unsigned long long)d->t[i].hash,
				    (unsigned long long)d->t[i].s.v[s]);
	}
}

static void node_metrics(struct buf *b, const struct node_dump *d)
{
	size_t i;
	int s, o, st;

	help(b, "dfkv_node_up", "gauge",
	     "Kernel nodes of this host by state (1 for the current one).");
	for (i = 0; i < d->count; i++)
		for (s = DFKV_NODE_STATE_UP; s < __DFKV_NODE_STATE_MAX; s++)
			out(b, "dfkv_node_up{node=\"%s\",state=\"%s\"} %d\n",
			    d->n[i].name, dfkv_node_state_str(s),
			    d->n[i].state == (uint32_t)s);
	help(b, "dfkv_ops_total", "counter", "Operations by op and status.");
	for (i = 0; i < d->count; i++) {
		for (o = 0; o < __DFKV_OP_MAX; o++) {
			for (st = 0; st < __DFKV_STATUS_MAX; st++) {
				if (!d->n[i].ops[o][st] || !dfkv_op_str(o))
					continue;
				out(b, "dfkv_ops_total{node=\"%s\",op=\"%s\",status=\"%s\"} %llu\n",
				    d->n[i].name, dfkv_op_str(o), dfkv_status_str(st),
				    (unsigned long long)d->n[i].ops[o][st]);
			}
		}
	}
	for (s = 0; s <= DFKV_STAT_MAX; s++) {
		if (!stat_meta[s].name)
			continue;
		help(b, stat_meta[s].name, stat_meta[s].type, stat_meta[s].text);
		for (i = 0; i < d->count; i++)
			if (d->n[i].s.has[s])
				node_sample(b, stat_meta[s].name, d->n[i].name,
					    NULL, NULL, d->n[i].s.v[s]);
	}
	tier_metrics(b, d);
	miss_cause_metrics(b, d);
	transport_metrics(b, d);
	latency_metrics(b, d);
	disk_metrics(b, d);
	tenant_metrics(b, d);
}

static void node_stats(struct buf *b)
{
	char msg[MNL_SOCKET_BUFFER_SIZE];
	struct node_dump d = { 0 };
	struct dfkv_genl g;
	struct nlmsghdr *nlh;
	int ret;

	if (dfkv_genl_open(&g))
		return;		/* module not loaded: no node stats */
	d.n = calloc(MAX_NODES, sizeof(*d.n));
	d.d = calloc(MAX_DISKS, sizeof(*d.d));
	d.t = calloc(MAX_TENANTS, sizeof(*d.t));
	ret = -ENOMEM;
	if (d.n && d.d && d.t) {
		nlh = dfkv_genl_msg(&g, msg, DFKV_CMD_NODE_GET, NLM_F_DUMP);
		ret = dfkv_genl_talk(&g, nlh, node_cb, &d);
	}
	if (!ret) {
		dump_disks_tenants(&g, &d);
		node_metrics(b, &d);
	}
	dfkv_genl_close(&g);
	free(d.n);
	free(d.d);
	free(d.t);
}

char *metrics_render(const struct mdsd_config *cfg, struct backend *be,
		     size_t *len)
{
	struct buf b = { 0 };

	out(&b, "# mdsd %s, backend %s\n", DFKV_VERSION, be->ops->name);
	own_counters(&b);
	directory(&b, be);
	if (cfg->node_metrics)
		node_stats(&b);
	if (b.oom) {
		free(b.p);
		return NULL;
	}
	*len = b.len;
	return b.p;
}
