// SPDX-License-Identifier: GPL-2.0
/*
 * The node commands of the "dfkv" family: VERSION_GET, NODE_NEW, NODE_DEL,
 * NODE_SET, NODE_GET and its dump, LISTENER_ADD and LISTENER_DEL, and the
 * node's messages: its settings and counters, and its NODE_EVENT.  The
 * handlers reply through the family their request came to (nl_common.h).
 */
#include <linux/module.h>
#include <net/genetlink.h>
#include <net/sock.h>
#include <linux/inet.h>
#include <linux/if.h>
#include <linux/nodemask.h>

#include "nl_common.h"
#include "node.h"
#include "disk.h"

/* A node with its stats, ops and latency histograms (about 5 KiB at most). */
#define DFKV_NL_NODE_MSG_SIZE	(16 * 1024)

int dfkv_nl_version_get_doit(struct sk_buff *skb, struct genl_info *info)
{
	struct sk_buff *msg;
	void *hdr;

	msg = nlmsg_new(NLMSG_DEFAULT_SIZE, GFP_KERNEL);
	if (!msg)
		return -ENOMEM;
	hdr = genlmsg_put_reply(msg, info, dfkv_nl_family_of(info), 0,
				DFKV_CMD_VERSION_GET);
	if (!hdr ||
	    nla_put_string(msg, DFKV_A_VERSION, DFKV_VERSION) ||
	    nla_put_u32(msg, DFKV_A_ABI_VERSION, DFKV_ABI_VERSION)) {
		nlmsg_free(msg);
		return -EMSGSIZE;
	}
	genlmsg_end(msg, hdr);
	return genlmsg_reply(msg, info);
}

static int fill_ops(struct sk_buff *skb, const struct dfkv_counters *s)
{
	struct nlattr *ops, *op;
	int i, j;

	ops = nla_nest_start(skb, DFKV_STAT_OPS);
	if (!ops)
		return -EMSGSIZE;
	for (i = 0; i < __DFKV_OP_MAX; i++) {
		for (j = 0; j < __DFKV_STATUS_MAX; j++) {
			if (!s->ops[i][j])
				continue;
			op = nla_nest_start(skb, DFKV_STAT_OP);
			if (!op ||
			    nla_put_u32(skb, DFKV_STAT_OP_CODE, i) ||
			    nla_put_u32(skb, DFKV_STAT_OP_STATUS, j) ||
			    dfkv_nl_put_stat(skb, DFKV_STAT_OP_COUNT, s->ops[i][j]))
				return -EMSGSIZE;
			nla_nest_end(skb, op);
		}
	}
	nla_nest_end(skb, ops);
	return 0;
}

/* Where the arena's pages are, by the node each page landed on. */
static int fill_numa_pages(struct sk_buff *skb, struct dfkv_arena *a)
{
	struct nlattr *all, *one;
	unsigned long nr;
	int nid;

	all = nla_nest_start(skb, DFKV_STAT_NUMA_PAGES);
	if (!all)
		return -EMSGSIZE;
	for (nid = 0; nid < nr_node_ids; nid++) {
		nr = dfkv_arena_nid_pages(a, nid);
		if (!nr)
			continue;
		one = nla_nest_start(skb, DFKV_STAT_NUMA);
		if (!one ||
		    nla_put_u32(skb, DFKV_STAT_NUMA_NODE, nid) ||
		    dfkv_nl_put_stat(skb, DFKV_STAT_NUMA_NR_PAGES, nr))
			return -EMSGSIZE;
		nla_nest_end(skb, one);
	}
	nla_nest_end(skb, all);
	return 0;
}

static int fill_tier_stats(struct sk_buff *skb, struct dfkv_node *node,
			   const struct dfkv_counters *s)
{
	struct dfkv_tier *t = &node->tier;
	u64 ram_objects, ram_bytes;

	dfkv_lru_usage(&node->store.lru, &ram_objects, &ram_bytes);
	if (dfkv_nl_put_stat(skb, DFKV_STAT_RAM_OBJECTS, ram_objects) ||
	    dfkv_nl_put_stat(skb, DFKV_STAT_RAM_USED_BYTES, ram_bytes))
		return -EMSGSIZE;
	/* Not the tier's mutex: a disk attach holds it for its rebuild. */
	return dfkv_nl_put_stat(skb, DFKV_STAT_RAM_HITS, s->ram_hits) ||
		dfkv_nl_put_stat(skb, DFKV_STAT_RAM_MISSES, s->ram_misses) ||
		dfkv_nl_put_stat(skb, DFKV_STAT_RAM_PUTS, s->ram_puts) ||
		dfkv_nl_put_stat(skb, DFKV_STAT_RAM_BYPASSES, s->ram_bypasses) ||
		dfkv_nl_put_stat(skb, DFKV_STAT_RAM_EVICTIONS, s->ram_evictions) ||
		dfkv_nl_put_stat(skb, DFKV_STAT_FLUSHED, s->flushed) ||
		dfkv_nl_put_stat(skb, DFKV_STAT_FLUSH_RETRIES, s->flush_retries) ||
		dfkv_nl_put_stat(skb, DFKV_STAT_FLUSH_DROPS, s->flush_drops) ||
		dfkv_nl_put_stat(skb, DFKV_STAT_PROMOTED, s->promoted) ||
		dfkv_nl_put_stat(skb, DFKV_STAT_COALESCED, s->coalesced) ||
		dfkv_nl_put_stat(skb, DFKV_STAT_LEASE_READS, s->lease_reads) ||
		dfkv_nl_put_stat(skb, DFKV_STAT_DIRTY_BYTES,
				 atomic64_read(&node->store.dirty_bytes)) ||
		dfkv_nl_put_stat(skb, DFKV_STAT_FLUSH_BACKLOG,
				 atomic_read(&t->backlog)) ||
		dfkv_nl_put_stat(skb, DFKV_STAT_DISKS, READ_ONCE(t->nr_disks)) ||
		dfkv_nl_put_stat(skb, DFKV_STAT_DISKS_FAILED,
				 READ_ONCE(t->nr_failed)) ? -EMSGSIZE : 0;
}

/*
 * The latency histograms that have samples, each without its trailing
 * empty buckets (userspace takes their number from the length).
 */
static int fill_latency(struct sk_buff *skb, struct dfkv_stats *stats)
{
	struct nlattr *all, *one;
	struct dfkv_hist h;
	u32 op, transport;
	int kind, nr;
	u64 count;

	all = nla_nest_start(skb, DFKV_STAT_LATENCY);
	if (!all)
		return -EMSGSIZE;
	for (kind = 0; kind < DFKV_LAT_NR; kind++) {
		count = dfkv_stats_hist(stats, kind, &h);
		if (!count)
			continue;
		for (nr = DFKV_HIST_BUCKETS; nr > 1 && !h.buckets[nr - 1]; nr--)
			;
		dfkv_stats_hist_id(kind, &op, &transport);
		one = nla_nest_start(skb, DFKV_STAT_HIST);
		if (!one ||
		    nla_put_u32(skb, DFKV_STAT_HIST_OP, op) ||
		    ((op == DFKV_HIST_GET || op == DFKV_HIST_PUT) &&
		     nla_put_u32(skb, DFKV_STAT_HIST_TRANSPORT, transport)) ||
		    dfkv_nl_put_stat(skb, DFKV_STAT_HIST_COUNT, count) ||
		    dfkv_nl_put_stat(skb, DFKV_STAT_HIST_SUM_NS, h.sum_ns) ||
		    nla_put(skb, DFKV_STAT_HIST_BUCKETS, nr * sizeof(u64),
			    h.buckets))
			return -EMSGSIZE;
		nla_nest_end(skb, one);
	}
	nla_nest_end(skb, all);
	return 0;
}

/*
 * What a node message carries: an event only its name and state (anyone
 * may listen), a NODE_GET its settings and counters, and only to an
 * administrator the counters that tell of tenants (SPEC.md 5).
 */
enum node_view {
	VIEW_EVENT,
	VIEW_PUBLIC,
	VIEW_ADMIN,
};

/* The view of a NODE_GET's caller (skb: its request). */
static enum node_view caller_view(struct sk_buff *skb)
{
	return netlink_capable(skb, CAP_NET_ADMIN) ? VIEW_ADMIN : VIEW_PUBLIC;
}

/* The counters of tenants and their authentication: administrators only. */
static int fill_tenant_stats(struct sk_buff *skb, struct dfkv_node *node,
			     const struct dfkv_counters *s)
{
	if (dfkv_nl_put_stat(skb, DFKV_STAT_TENANTS,
			     atomic_read(&node->tenants.nr)) ||
	    dfkv_nl_put_stat(skb, DFKV_STAT_AUTH_OK, s->auth_ok) ||
	    dfkv_nl_put_stat(skb, DFKV_STAT_AUTH_FAILURES, s->auth_failures) ||
	    dfkv_nl_put_stat(skb, DFKV_STAT_FORBIDDEN, s->forbidden) ||
	    dfkv_nl_put_stat(skb, DFKV_STAT_QUOTA_REJECTIONS,
			     s->quota_rejections))
		return -EMSGSIZE;
	return 0;
}

/*
 * The counters' snapshot (1.7 KiB) is allocated: on the stack it takes
 * the dump's frame past 2 KiB once KASAN pads it.
 */
static int fill_node_stats(struct sk_buff *skb, struct dfkv_node *node,
			   enum node_view view)
{
	struct dfkv_conn_limits *lim = &node->limits;
	u64 tcp_drops = atomic64_read(&lim->deadline_drops[DFKV_LISTENER_TCP]);
	u64 rdma_drops = atomic64_read(&lim->deadline_drops[DFKV_LISTENER_RDMA]);
	struct dfkv_store *st = &node->store;
	struct dfkv_slab_stats ss;
	struct dfkv_counters *s;
	struct nlattr *nest;
	int err = -EMSGSIZE;

	s = kmalloc(sizeof(*s), GFP_KERNEL);
	if (!s)
		return -ENOMEM;
	dfkv_stats_snapshot(&node->stats, s);
	dfkv_slab_stats(&st->slab, &ss);
	nest = nla_nest_start(skb, DFKV_A_NODE_STATS);
	if (!nest || fill_ops(skb, s) ||
	    dfkv_nl_put_stat(skb, DFKV_STAT_BYTES_IN, s->bytes_in) ||
	    dfkv_nl_put_stat(skb, DFKV_STAT_BYTES_OUT, s->bytes_out) ||
	    dfkv_nl_put_stat(skb, DFKV_STAT_HITS, s->hits) ||
	    dfkv_nl_put_stat(skb, DFKV_STAT_MISSES, s->misses) ||
	    dfkv_nl_put_stat(skb, DFKV_STAT_OBJECTS, atomic64_read(&st->objects)) ||
	    dfkv_nl_put_stat(skb, DFKV_STAT_USED_BYTES,
			     atomic64_read(&st->used_bytes)) ||
	    dfkv_nl_put_stat(skb, DFKV_STAT_SLOT_BYTES, ss.slot_bytes_used) ||
	    dfkv_nl_put_stat(skb, DFKV_STAT_CAPACITY_BYTES, st->capacity) ||
	    dfkv_nl_put_stat(skb, DFKV_STAT_EVICTIONS, s->evictions) ||
	    dfkv_nl_put_stat(skb, DFKV_STAT_PINS, atomic64_read(&st->pins)) ||
	    dfkv_nl_put_stat(skb, DFKV_STAT_LEASES, dfkv_leases_live(&node->leases)) ||
	    dfkv_nl_put_stat(skb, DFKV_STAT_LEASE_GRANTS, s->lease_grants) ||
	    dfkv_nl_put_stat(skb, DFKV_STAT_LEASE_EXPIRIES, s->lease_expiries) ||
	    dfkv_nl_put_stat(skb, DFKV_STAT_LEASE_SCANS,
			     dfkv_leases_scans(&node->leases)) ||
	    (view == VIEW_ADMIN && fill_tenant_stats(skb, node, s)) ||
	    dfkv_nl_put_stat(skb, DFKV_STAT_EXTENTS_BOUND, ss.extents_bound) ||
	    dfkv_nl_put_stat(skb, DFKV_STAT_EXTENTS_TOTAL, st->slab.nr_extents) ||
	    dfkv_nl_put_stat(skb, DFKV_STAT_CONNS_REFUSED,
			     atomic64_read(&node->limits.refused)) ||
	    dfkv_nl_put_stat(skb, DFKV_STAT_DEADLINE_DROPS,
			     tcp_drops + rdma_drops) ||
	    dfkv_nl_put_stat(skb, DFKV_STAT_TCP_DEADLINE_DROPS, tcp_drops) ||
	    dfkv_nl_put_stat(skb, DFKV_STAT_RDMA_DEADLINE_DROPS, rdma_drops) ||
	    dfkv_nl_put_stat(skb, DFKV_STAT_DISK_HITS, s->disk_hits) ||
	    dfkv_nl_put_stat(skb, DFKV_STAT_STAGE_BUSY, s->stage_busy) ||
	    dfkv_nl_put_stat(skb, DFKV_STAT_MISS_NEVER_STORED,
			     s->miss_causes[DFKV_MISS_NEVER_STORED]) ||
	    dfkv_nl_put_stat(skb, DFKV_STAT_MISS_EVICTED,
			     s->miss_causes[DFKV_MISS_EVICTED]) ||
	    dfkv_nl_put_stat(skb, DFKV_STAT_MISS_REMOVED,
			     s->miss_causes[DFKV_MISS_REMOVED]) ||
	    fill_latency(skb, &node->stats) ||
	    dfkv_nl_put_stat(skb, DFKV_STAT_RECV_RESERVED,
			     atomic64_read(&node->recv_reserved)) ||
	    dfkv_nl_put_stat(skb, DFKV_STAT_RECV_BUSY,
			     atomic64_read(&node->recv_refused)) ||
	    dfkv_transports_fill_stats(skb, node) ||
	    fill_tier_stats(skb, node, s) ||
	    fill_numa_pages(skb, &st->arena))
		goto out;
	nla_nest_end(skb, nest);
	err = 0;
out:
	kfree(s);
	return err;
}

/* The node's settings, everything but its name and state. */
static int fill_node_settings(struct sk_buff *skb, struct dfkv_node *node)
{
	if (nla_put_u64_64bit(skb, DFKV_A_NODE_RAM_BYTES, node->store.capacity,
			      DFKV_A_PAD) ||
	    nla_put_u64_64bit(skb, DFKV_A_NODE_MAX_VALUE,
			      READ_ONCE(node->max_value), DFKV_A_PAD) ||
	    nla_put_u32(skb, DFKV_A_NODE_FLAGS, READ_ONCE(node->flags)) ||
	    nla_put_u64_64bit(skb, DFKV_A_NODE_CTIME, node->ctime_ns,
			      DFKV_A_PAD) ||
	    nla_put_u64_64bit(skb, DFKV_A_NODE_EXTENT_BYTES,
			      node->store.slab.extent_bytes, DFKV_A_PAD) ||
	    nla_put_u32(skb, DFKV_A_NODE_FIRST_REQUEST_MS,
			READ_ONCE(node->limits.first_request_ms)) ||
	    nla_put_u32(skb, DFKV_A_NODE_IDLE_MS,
			READ_ONCE(node->limits.idle_ms)) ||
	    nla_put_u32(skb, DFKV_A_NODE_MAX_CONNS,
			READ_ONCE(node->limits.max_conns)) ||
	    nla_put_u32(skb, DFKV_A_NODE_FRAME_MS,
			READ_ONCE(node->limits.frame_ms)) ||
	    nla_put_u32(skb, DFKV_A_NODE_MIN_RATE,
			READ_ONCE(node->limits.min_rate)) ||
	    nla_put_u32(skb, DFKV_A_NODE_TIER_POLICY,
			READ_ONCE(node->tier.policy)) ||
	    nla_put_u32(skb, DFKV_A_NODE_TIER_ACK,
			READ_ONCE(node->tier.ack)) ||
	    nla_put_u32(skb, DFKV_A_NODE_DIRTY_PCT,
			READ_ONCE(node->tier.dirty_pct)) ||
	    nla_put_u32(skb, DFKV_A_NODE_FLUSH_WORKERS,
			READ_ONCE(node->tier.workers)) ||
	    nla_put_u32(skb, DFKV_A_NODE_NUMA, node->store.arena.numa) ||
	    nla_put_u32(skb, DFKV_A_NODE_AUTH,
			READ_ONCE(node->tenants.auth_required) ?
			DFKV_AUTH_REQUIRED : DFKV_AUTH_OFF) ||
	    nla_put_u64_64bit(skb, DFKV_A_NODE_TENANT_QUOTA,
			      READ_ONCE(node->tenants.default_quota),
			      DFKV_A_PAD))
		return -EMSGSIZE;
	return 0;
}

static int fill_node(struct sk_buff *skb, struct dfkv_node *node,
		     const struct dfkv_nl_to *to, u8 cmd, u32 event,
		     enum node_view view)
{
	void *hdr;
	int err = -EMSGSIZE;

	hdr = dfkv_nl_put_hdr(skb, to, cmd);
	if (!hdr)
		return -EMSGSIZE;
	if (nla_put_string(skb, DFKV_A_NODE_NAME, node->name) ||
	    nla_put_u32(skb, DFKV_A_NODE_STATE, READ_ONCE(node->state)) ||
	    nla_put_u32(skb, DFKV_A_NODE_PHASE, dfkv_node_phase(node)) ||
	    (event && nla_put_u32(skb, DFKV_A_EVENT, event)))
		goto cancel;
	if (view != VIEW_EVENT) {
		if (fill_node_settings(skb, node) ||
		    dfkv_transports_fill_listeners(skb, node))
			goto cancel;
		err = fill_node_stats(skb, node, view);
		if (err)
			goto cancel;
	}
	genlmsg_end(skb, hdr);
	return 0;

cancel:
	genlmsg_cancel(skb, hdr);
	return err;
}

void dfkv_nl_notify_node(const struct genl_family *family,
			 struct dfkv_node *node, u32 event)
{
	struct dfkv_nl_to to = { .family = family };
	struct sk_buff *skb;

	skb = genlmsg_new(NLMSG_GOODSIZE, GFP_KERNEL);
	if (!skb)
		return;
	if (fill_node(skb, node, &to, DFKV_CMD_NODE_EVENT, event, VIEW_EVENT)) {
		nlmsg_free(skb);
		return;
	}
	dfkv_nl_multicast(family, node, skb);
}

/* Take an optional u32 attribute into *val. */
static void get_u32(struct genl_info *info, int type, u32 *val)
{
	if (info->attrs[type])
		*val = nla_get_u32(info->attrs[type]);
}

/* Apply the RAM tier's settings of a NODE_NEW or NODE_SET. */
static void set_tier(struct dfkv_node *node, struct genl_info *info)
{
	struct dfkv_tier *t = &node->tier;

	if (info->attrs[DFKV_A_NODE_TIER_POLICY])
		WRITE_ONCE(t->policy,
			   nla_get_u32(info->attrs[DFKV_A_NODE_TIER_POLICY]));
	if (info->attrs[DFKV_A_NODE_TIER_ACK])
		WRITE_ONCE(t->ack,
			   nla_get_u32(info->attrs[DFKV_A_NODE_TIER_ACK]));
	if (info->attrs[DFKV_A_NODE_DIRTY_PCT])
		WRITE_ONCE(t->dirty_pct,
			   nla_get_u32(info->attrs[DFKV_A_NODE_DIRTY_PCT]));
	if (info->attrs[DFKV_A_NODE_FLUSH_WORKERS])
		dfkv_tier_set_workers(t,
				      nla_get_u32(info->attrs[DFKV_A_NODE_FLUSH_WORKERS]));
}

/* Each limit given takes effect at the connections' next look at it. */
static void set_limit(struct genl_info *info, int type, u32 *limit)
{
	if (info->attrs[type])
		WRITE_ONCE(*limit, nla_get_u32(info->attrs[type]));
}

static void set_limits(struct dfkv_conn_limits *lim, struct genl_info *info)
{
	set_limit(info, DFKV_A_NODE_FIRST_REQUEST_MS, &lim->first_request_ms);
	set_limit(info, DFKV_A_NODE_IDLE_MS, &lim->idle_ms);
	set_limit(info, DFKV_A_NODE_MAX_CONNS, &lim->max_conns);
	set_limit(info, DFKV_A_NODE_FRAME_MS, &lim->frame_ms);
	set_limit(info, DFKV_A_NODE_MIN_RATE, &lim->min_rate);
}

int dfkv_nl_node_new_doit(struct sk_buff *skb, struct genl_info *info)
{
	struct dfkv_node_cfg cfg = {
		.max_value = DFKV_MAX_VALUE_DEFAULT,
		.flags = DFKV_NODE_F_EVICT,
		.first_request_ms = DFKV_FIRST_REQUEST_MS_DEFAULT,
		.idle_ms = DFKV_IDLE_MS_DEFAULT,
		.max_conns = DFKV_MAX_CONNS_DEFAULT,
		.frame_ms = DFKV_FRAME_MS_DEFAULT,
		.min_rate = DFKV_MIN_RATE_DEFAULT,
		.numa = DFKV_NUMA_INTERLEAVE,
	};
	struct dfkv_node *node;
	int err;

	cfg.name = dfkv_nl_req_name(info);
	if (!cfg.name)
		return -EINVAL;
	if (!info->attrs[DFKV_A_NODE_RAM_BYTES]) {
		NL_SET_ERR_MSG(info->extack, "a new node needs its RAM budget in bytes");
		return -EINVAL;
	}
	cfg.ram_bytes = nla_get_u64(info->attrs[DFKV_A_NODE_RAM_BYTES]);
	if (info->attrs[DFKV_A_NODE_MAX_VALUE])
		cfg.max_value = nla_get_u64(info->attrs[DFKV_A_NODE_MAX_VALUE]);
	if (info->attrs[DFKV_A_NODE_FLAGS])
		cfg.flags = nla_get_u32(info->attrs[DFKV_A_NODE_FLAGS]);
	if (info->attrs[DFKV_A_NODE_STATE]) {
		NL_SET_ERR_MSG(info->extack, "a new node starts up; set its state afterwards");
		return -EINVAL;
	}
	if (info->attrs[DFKV_A_NODE_PHASE]) {
		if (nla_get_u32(info->attrs[DFKV_A_NODE_PHASE]) !=
		    DFKV_NODE_PHASE_REBUILDING) {
			NL_SET_ERR_MSG_ATTR(info->extack,
					    info->attrs[DFKV_A_NODE_PHASE],
					    "a new node is up, or rebuilding until a NODE_SET says up");
			return -EINVAL;
		}
		cfg.rebuilding = true;
	}
	get_u32(info, DFKV_A_NODE_FIRST_REQUEST_MS, &cfg.first_request_ms);
	get_u32(info, DFKV_A_NODE_IDLE_MS, &cfg.idle_ms);
	get_u32(info, DFKV_A_NODE_MAX_CONNS, &cfg.max_conns);
	get_u32(info, DFKV_A_NODE_FRAME_MS, &cfg.frame_ms);
	get_u32(info, DFKV_A_NODE_MIN_RATE, &cfg.min_rate);
	get_u32(info, DFKV_A_NODE_NUMA, &cfg.numa);
	if (info->attrs[DFKV_A_NODE_AUTH])
		cfg.auth_required = nla_get_u32(info->attrs[DFKV_A_NODE_AUTH]) ==
			DFKV_AUTH_REQUIRED;
	if (info->attrs[DFKV_A_NODE_TENANT_QUOTA])
		cfg.tenant_quota =
			nla_get_u64(info->attrs[DFKV_A_NODE_TENANT_QUOTA]);
	err = dfkv_node_create(genl_info_net(info), &cfg, info->extack);
	if (err)
		return err;
	/* The tier's settings are the same as a NODE_SET's. */
	node = dfkv_node_get(genl_info_net(info), cfg.name);
	if (node) {
		set_tier(node, info);
		dfkv_node_put(node);
	}
	return 0;
}

int dfkv_nl_node_del_doit(struct sk_buff *skb, struct genl_info *info)
{
	const char *name = dfkv_nl_req_name(info);
	int err;

	if (!name)
		return -EINVAL;
	err = dfkv_node_delete(genl_info_net(info), name);
	if (err == -ENOENT)
		NL_SET_ERR_MSG(info->extack, "no node of that name in this network namespace");
	return err;
}

int dfkv_nl_node_set_doit(struct sk_buff *skb, struct genl_info *info)
{
	struct dfkv_node *node;
	int fixed = info->attrs[DFKV_A_NODE_RAM_BYTES] ?
		DFKV_A_NODE_RAM_BYTES : DFKV_A_NODE_NUMA;

	if (info->attrs[fixed]) {
		NL_SET_ERR_MSG_ATTR(info->extack, info->attrs[fixed],
				    "the RAM budget and its NUMA placement are fixed when the node is created");
		return -EOPNOTSUPP;
	}
	if (info->attrs[DFKV_A_NODE_PHASE] &&
	    nla_get_u32(info->attrs[DFKV_A_NODE_PHASE]) != DFKV_NODE_PHASE_UP) {
		NL_SET_ERR_MSG_ATTR(info->extack, info->attrs[DFKV_A_NODE_PHASE],
				    "only a disk attach makes a node rebuilding; set up to end its creation's");
		return -EINVAL;
	}
	node = dfkv_nl_req_node(info);
	if (!node)
		return -ENOENT;
	if (info->attrs[DFKV_A_NODE_FLAGS] &&
	    (nla_get_u32(info->attrs[DFKV_A_NODE_FLAGS]) ^
	     READ_ONCE(node->flags)) & DFKV_NODE_F_DISK_ONLY) {
		NL_SET_ERR_MSG_ATTR(info->extack, info->attrs[DFKV_A_NODE_FLAGS],
				    "a node is disk-only or not from its creation");
		dfkv_node_put(node);
		return -EOPNOTSUPP;
	}
	if (info->attrs[DFKV_A_NODE_MAX_VALUE])
		WRITE_ONCE(node->max_value,
			   nla_get_u64(info->attrs[DFKV_A_NODE_MAX_VALUE]));
	if (info->attrs[DFKV_A_NODE_FLAGS]) {
		u32 flags = nla_get_u32(info->attrs[DFKV_A_NODE_FLAGS]);

		WRITE_ONCE(node->flags, flags);
		WRITE_ONCE(node->store.evict, !!(flags & DFKV_NODE_F_EVICT));
	}
	if (info->attrs[DFKV_A_NODE_STATE])
		dfkv_node_set_state(node,
				    nla_get_u32(info->attrs[DFKV_A_NODE_STATE]));
	if (info->attrs[DFKV_A_NODE_PHASE])
		dfkv_node_release(node);
	set_limits(&node->limits, info);
	if (info->attrs[DFKV_A_NODE_AUTH])
		WRITE_ONCE(node->tenants.auth_required,
			   nla_get_u32(info->attrs[DFKV_A_NODE_AUTH]) ==
			   DFKV_AUTH_REQUIRED);
	if (info->attrs[DFKV_A_NODE_TENANT_QUOTA])
		WRITE_ONCE(node->tenants.default_quota,
			   nla_get_u64(info->attrs[DFKV_A_NODE_TENANT_QUOTA]));
	set_tier(node, info);
	dfkv_node_put(node);
	return 0;
}

static int nl_listener(struct genl_info *info, bool add)
{
	const char *name = dfkv_nl_req_name(info);
	const struct dfkv_transport_ops *t;
	u32 kind = DFKV_TRANSPORT_DEFAULT;
	const char *addr;
	struct dfkv_node *node;
	u16 port;
	int err;

	if (!name)
		return -EINVAL;
	if (!info->attrs[DFKV_A_LISTEN_ADDR]) {
		NL_SET_ERR_MSG(info->extack, "a listener needs an IPv4 or IPv6 address");
		return -EINVAL;
	}
	if (info->attrs[DFKV_A_LISTEN_TRANSPORT])
		kind = nla_get_u32(info->attrs[DFKV_A_LISTEN_TRANSPORT]);
	t = dfkv_transport_get(kind);
	if (!t) {
		NL_SET_ERR_MSG(info->extack, "no such transport in this kernel");
		return -EOPNOTSUPP;
	}
	addr = nla_data(info->attrs[DFKV_A_LISTEN_ADDR]);
	port = t->default_port;
	if (info->attrs[DFKV_A_LISTEN_PORT])
		port = nla_get_u16(info->attrs[DFKV_A_LISTEN_PORT]);
	node = dfkv_node_get(genl_info_net(info), name);
	if (!node) {
		NL_SET_ERR_MSG(info->extack, "no node of that name in this network namespace");
		return -ENOENT;
	}
	if (add)
		err = t->listener_add(node, addr, port, info->extack);
	else
		err = dfkv_transport_listener_del(node, kind, addr, port,
						  info->extack);
	/* Directory agents publish a node's addresses: tell them at once. */
	if (!err)
		dfkv_nl_notify_node(dfkv_nl_family_of(info), node,
				    DFKV_EVENT_NODE_LISTENERS);
	dfkv_node_put(node);
	return err;
}

int dfkv_nl_listener_add_doit(struct sk_buff *skb, struct genl_info *info)
{
	return nl_listener(info, true);
}

int dfkv_nl_listener_del_doit(struct sk_buff *skb, struct genl_info *info)
{
	return nl_listener(info, false);
}

int dfkv_nl_node_get_doit(struct sk_buff *skb, struct genl_info *info)
{
	const char *name = dfkv_nl_req_name(info);
	struct dfkv_node *node;
	struct sk_buff *msg;
	int err;

	if (!name)
		return -EINVAL;
	node = dfkv_node_get(genl_info_net(info), name);
	if (!node) {
		NL_SET_ERR_MSG(info->extack, "no node of that name in this network namespace");
		return -ENOENT;
	}
	msg = nlmsg_new(DFKV_NL_NODE_MSG_SIZE, GFP_KERNEL);
	err = -ENOMEM;
	if (msg && !dfkv_node_enter(node)) {
		NL_SET_ERR_MSG(info->extack, "the node is being deleted");
		err = -ENOENT;
	} else if (msg) {
		struct dfkv_nl_to to = dfkv_nl_to_reply(info);

		err = fill_node(msg, node, &to, DFKV_CMD_NODE_GET, 0,
				caller_view(skb));
		dfkv_node_exit(node);
		if (!err) {
			err = genlmsg_reply(msg, info);
			msg = NULL;
		}
	}
	nlmsg_free(msg);
	dfkv_node_put(node);
	return err;
}

/* Node dump: cb->args[0] counts the nodes already sent. */
int dfkv_nl_node_get_dumpit(struct sk_buff *skb, struct netlink_callback *cb)
{
	struct dfkv_net *dn = dfkv_net(sock_net(skb->sk));
	struct dfkv_nl_to to = dfkv_nl_to_dump(cb);
	struct dfkv_node *node;
	long idx = 0;
	int err = 0;

	mutex_lock(&dn->lock);
	cb->seq = dn->gen;
	list_for_each_entry(node, &dn->nodes, list) {
		if (idx++ < cb->args[0])
			continue;
		err = fill_node(skb, node, &to, DFKV_CMD_NODE_GET, 0,
				caller_view(cb->skb));
		if (err) {
			idx--;
			break;
		}
	}
	mutex_unlock(&dn->lock);
	cb->args[0] = idx;
	/* a node that does not fit an empty message is an error, not the end */
	return skb->len ?: err;
}
