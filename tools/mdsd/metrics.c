// SPDX-License-Identifier: GPL-2.0
/*
 * mdsd /metrics: Prometheus text exposition (SPEC.md section 8).  mdsd's
 * own counters (HTTP requests by method and code, registrations, lease
 * grants/renewals/expiries, long-polls, snapshot writes, agent syncs),
 * the directory per group (epoch, members by state, clients) and, when
 * the dfkv module is loaded, the stats of this host's kernel nodes read
 * over netlink at scrape time.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "genl.h"
#include "mdsd.h"
#include "names_gen.h"

struct mdsd_metrics metrics;

/* HTTP requests by method and status code. */
static const char *const methods[] = { "GET", "HEAD", "PUT", "DELETE", "other" };
#define NR_METHODS (sizeof(methods) / sizeof(methods[0]))
static const unsigned int codes[] = {
	200, 400, 401, 404, 405, 413, 500, 503, 507, 0 /* other */
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

			if (be->ops->list(be, names.v[i], k, false, 0, 0, &l))
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

/* Node stat attributes: metric name, type, help. */
static const struct {
	const char *name, *type, *text, *tier;
} stat_meta[DFKV_STAT_MAX + 1] = {
	[DFKV_STAT_BYTES_IN] = { "dfkv_bytes_in_total", "counter",
				 "Payload bytes stored.", NULL },
	[DFKV_STAT_BYTES_OUT] = { "dfkv_bytes_out_total", "counter",
				  "Payload bytes served.", NULL },
	[DFKV_STAT_HITS] = { "dfkv_hits_total", "counter",
			     "GET hits by tier.", "ram" },
	[DFKV_STAT_MISSES] = { "dfkv_misses_total", "counter",
			       "GET misses by tier.", "ram" },
	[DFKV_STAT_OBJECTS] = { "dfkv_objects", "gauge",
				"Objects stored by tier.", "ram" },
	[DFKV_STAT_USED_BYTES] = { "dfkv_used_bytes", "gauge",
				   "Payload bytes committed by tier.", "ram" },
	[DFKV_STAT_SLOT_BYTES] = { "dfkv_slot_bytes", "gauge",
				   "Bytes of slab slots in use by tier.", "ram" },
	[DFKV_STAT_CAPACITY_BYTES] = { "dfkv_capacity_bytes", "gauge",
				       "Capacity by tier.", "ram" },
	[DFKV_STAT_EVICTIONS] = { "dfkv_evictions_total", "counter",
				  "Entries evicted.", NULL },
	[DFKV_STAT_PINS] = { "dfkv_pinned_entries", "gauge",
			     "Pinned entries.", NULL },
	[DFKV_STAT_LEASES] = { "dfkv_leases", "gauge", "Live leases.", NULL },
	[DFKV_STAT_LEASE_GRANTS] = { "dfkv_lease_grants_total", "counter",
				     "Leases granted.", NULL },
	[DFKV_STAT_LEASE_EXPIRIES] = { "dfkv_lease_expiries_total", "counter",
				       "Leases expired.", NULL },
	[DFKV_STAT_TENANTS] = { "dfkv_tenants", "gauge",
				"Tenants with objects.", NULL },
	[DFKV_STAT_EXTENTS_BOUND] = { "dfkv_slab_extents_bound", "gauge",
				      "Slab extents bound to a size class.", "ram" },
	[DFKV_STAT_EXTENTS_TOTAL] = { "dfkv_slab_extents", "gauge",
				      "Slab extents available.", "ram" },
	[DFKV_STAT_AUTH_OK] = { "dfkv_auth_ok_total", "counter",
				"Tenant authentications accepted.", NULL },
	[DFKV_STAT_AUTH_FAILURES] = { "dfkv_auth_failures_total", "counter",
				      "Tenant authentications refused.", NULL },
	[DFKV_STAT_FORBIDDEN] = { "dfkv_forbidden_total", "counter",
				  "Requests refused for a tenant not authorized.", NULL },
	[DFKV_STAT_QUOTA_REJECTIONS] = { "dfkv_quota_rejections_total", "counter",
					 "PUTs refused over their tenant's quota.", NULL },
};

#define MAX_NODES 256

struct node_stats {
	char name[DFKV_NODE_NAME_MAX];
	uint32_t state;
	bool has[DFKV_STAT_MAX + 1];
	uint64_t v[DFKV_STAT_MAX + 1];
	uint64_t ops[__DFKV_OP_MAX][__DFKV_STATUS_MAX];
};

struct node_dump {
	struct node_stats *n;
	size_t count;
};

static int node_cb(const struct nlmsghdr *nlh, void *data)
{
	struct node_dump *d = data;
	const struct nlattr *tb[DFKV_A_MAX + 1], *st[DFKV_STAT_MAX + 1];
	const struct nlattr *op, *a;
	struct node_stats *ns;
	int i;

	if (d->count >= MAX_NODES)
		return MNL_CB_OK;
	dfkv_genl_parse(nlh, tb);
	if (!tb[DFKV_A_NODE_NAME] ||
	    mnl_attr_validate(tb[DFKV_A_NODE_NAME], MNL_TYPE_NUL_STRING))
		return MNL_CB_OK;
	ns = &d->n[d->count++];
	memset(ns, 0, sizeof(*ns));
	snprintf(ns->name, sizeof(ns->name), "%s",
		 mnl_attr_get_str(tb[DFKV_A_NODE_NAME]));
	if (tb[DFKV_A_NODE_STATE] &&
	    mnl_attr_get_payload_len(tb[DFKV_A_NODE_STATE]) == 4)
		ns->state = mnl_attr_get_u32(tb[DFKV_A_NODE_STATE]);
	if (!tb[DFKV_A_NODE_STATS])
		return MNL_CB_OK;
	dfkv_genl_parse_stats(tb[DFKV_A_NODE_STATS], st);
	for (i = 0; i <= DFKV_STAT_MAX; i++) {
		if (st[i] && i != DFKV_STAT_OPS && i != DFKV_STAT_NUMA_PAGES &&
		    mnl_attr_get_payload_len(st[i]) == 8) {
			ns->v[i] = mnl_attr_get_u64(st[i]);
			ns->has[i] = true;
		}
	}
	if (!st[DFKV_STAT_OPS])
		return MNL_CB_OK;
	mnl_attr_for_each_nested(op, st[DFKV_STAT_OPS]) {
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
	return MNL_CB_OK;
}

static void node_stats(struct buf *b)
{
	char msg[MNL_SOCKET_BUFFER_SIZE];
	struct node_dump d = { 0 };
	struct dfkv_genl g;
	struct nlmsghdr *nlh;
	size_t i;
	int s, o, st, ret;

	if (dfkv_genl_open(&g))
		return;		/* module not loaded: no node stats */
	d.n = calloc(MAX_NODES, sizeof(*d.n));
	if (!d.n) {
		dfkv_genl_close(&g);
		return;
	}
	nlh = dfkv_genl_msg(&g, msg, DFKV_CMD_NODE_GET, NLM_F_DUMP);
	ret = dfkv_genl_talk(&g, nlh, node_cb, &d);
	dfkv_genl_close(&g);
	if (ret) {
		free(d.n);
		return;
	}
	help(b, "dfkv_node_up", "gauge",
	     "Kernel nodes of this host by state (1 for the current one).");
	for (i = 0; i < d.count; i++) {
		for (s = DFKV_NODE_STATE_UP; s < __DFKV_NODE_STATE_MAX; s++)
			out(b, "dfkv_node_up{node=\"%s\",state=\"%s\"} %d\n",
			    d.n[i].name, dfkv_node_state_str(s),
			    d.n[i].state == (uint32_t)s);
	}
	help(b, "dfkv_ops_total", "counter", "Operations by op and status.");
	for (i = 0; i < d.count; i++) {
		for (o = 0; o < __DFKV_OP_MAX; o++) {
			for (st = 0; st < __DFKV_STATUS_MAX; st++) {
				if (!d.n[i].ops[o][st] || !dfkv_op_str(o))
					continue;
				out(b, "dfkv_ops_total{node=\"%s\",op=\"%s\",status=\"%s\"} %llu\n",
				    d.n[i].name, dfkv_op_str(o),
				    dfkv_status_str(st),
				    (unsigned long long)d.n[i].ops[o][st]);
			}
		}
	}
	for (s = 0; s <= DFKV_STAT_MAX; s++) {
		if (!stat_meta[s].name)
			continue;
		help(b, stat_meta[s].name, stat_meta[s].type, stat_meta[s].text);
		for (i = 0; i < d.count; i++) {
			if (!d.n[i].has[s])
				continue;
			if (stat_meta[s].tier)
				out(b, "%s{node=\"%s\",tier=\"%s\"} %llu\n",
				    stat_meta[s].name, d.n[i].name,
				    stat_meta[s].tier,
				    (unsigned long long)d.n[i].v[s]);
			else
				out(b, "%s{node=\"%s\"} %llu\n",
				    stat_meta[s].name, d.n[i].name,
				    (unsigned long long)d.n[i].v[s]);
		}
	}
	free(d.n);
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
