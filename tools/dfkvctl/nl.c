// SPDX-License-Identifier: GPL-2.0
/*
 * dfkvctl: the netlink side shared by the subcommands: opening the family
 * with a clear message when the module is absent, reporting errors with
 * the kernel's extended-ack text, decoding node/tenant/disk replies, and
 * the human-readable node report.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <linux/genetlink.h>

#include "dfkvctl.h"
#include "names_gen.h"

int ctl_open(struct dfkv_genl *g)
{
	int err = dfkv_genl_open(g);

	if (!err)
		return EXIT_OK;
	if (err == -ENOENT)
		err_msg("the dfkv module is not loaded (no generic netlink family \"%s\"); try 'modprobe dfkv'",
			DFKV_GENL_NAME);
	else
		err_msg("cannot open generic netlink: %s", strerror(-err));
	return EXIT_FAIL;
}

/* The command-line spelling of the request attribute at offset off. */
static const char *attr_option(const struct nlmsghdr *req, uint32_t off)
{
	const struct nlattr *a;

	if (!req || !off)
		return NULL;
	mnl_attr_for_each(a, req, sizeof(struct genlmsghdr)) {
		if ((uint32_t)((const char *)a - (const char *)req) != off)
			continue;
		switch (mnl_attr_get_type(a)) {
		case DFKV_A_NODE_NAME:
			return "NAME";
		case DFKV_A_NODE_RAM_BYTES:
			return "--ram";
		case DFKV_A_NODE_MAX_VALUE:
			return "--max-value";
		case DFKV_A_NODE_FLAGS:
			return "--evict";
		case DFKV_A_NODE_STATE:
			return "--state";
		case DFKV_A_NODE_PHASE:
			return "--phase";
		case DFKV_A_NODE_FIRST_REQUEST_MS:
			return "--first-request-ms";
		case DFKV_A_NODE_IDLE_MS:
			return "--idle-ms";
		case DFKV_A_NODE_MAX_CONNS:
			return "--max-conns";
		case DFKV_A_NODE_FRAME_MS:
			return "--frame-ms";
		case DFKV_A_NODE_MIN_RATE:
			return "--min-rate";
		case DFKV_A_LISTEN_ADDR:
			return "ADDR";
		case DFKV_A_LISTEN_PORT:
			return "--port";
		case DFKV_A_DISK_PATH:
			return "PATH";
		case DFKV_A_DISK_NAME:
			return "NAME";
		case DFKV_A_DISK_FORMAT:
			return "--format";
		case DFKV_A_DISK_EXTENT_BYTES:
			return "--extent";
		case DFKV_A_NODE_TIER_POLICY:
			return "--policy";
		case DFKV_A_NODE_TIER_ACK:
			return "--ack";
		case DFKV_A_NODE_DIRTY_PCT:
			return "--dirty";
		case DFKV_A_NODE_FLUSH_WORKERS:
			return "--flush-workers";
		case DFKV_A_NODE_NUMA:
			return "--numa";
		case DFKV_A_NODE_AUTH:
			return "--auth";
		case DFKV_A_NODE_TENANT_QUOTA:
			return "--tenant-quota";
		case DFKV_A_TENANT_HASH:
			return "--tenant";
		case DFKV_A_TENANT_SECRET:
			return "--secret-file";
		case DFKV_A_TENANT_QUOTA:
			return "--quota";
		default:
			return NULL;
		}
	}
	return NULL;
}

static int vnl_error(struct dfkv_genl *g, int err, const struct nlmsghdr *req,
		     const char *fmt, va_list ap)
{
	const char *opt = attr_option(req, g->erroff);

	fprintf(stderr, "%s: ", prog);
	vfprintf(stderr, fmt, ap);
	if (g->errmsg[0])
		fprintf(stderr, ": %s", g->errmsg);
	if (opt)
		fprintf(stderr, " (%s)", opt);
	fprintf(stderr, g->errmsg[0] ? " (%s)" : ": %s", strerror(-err));
	if (err == -EPERM)
		fprintf(stderr, " (CAP_NET_ADMIN is needed)");
	fputc('\n', stderr);
	return err == -ENOENT ? EXIT_NOTFOUND : EXIT_FAIL;
}

int nl_error(struct dfkv_genl *g, int err, const char *fmt, ...)
{
	va_list ap;
	int ret;

	va_start(ap, fmt);
	ret = vnl_error(g, err, NULL, fmt, ap);
	va_end(ap);
	return ret;
}

int nl_error_req(struct dfkv_genl *g, int err, const struct nlmsghdr *req,
		 const char *fmt, ...)
{
	va_list ap;
	int ret;

	va_start(ap, fmt);
	ret = vnl_error(g, err, req, fmt, ap);
	va_end(ap);
	return ret;
}

/* ------------------------------------------------------------- decoding */

static void parse_ops(const struct nlattr *nest, struct node_info *ni)
{
	const struct nlattr *op, *a;

	mnl_attr_for_each_nested(op, nest) {
		uint32_t code = UINT32_MAX, status = UINT32_MAX;
		uint64_t count = 0;

		if (mnl_attr_get_type(op) != DFKV_STAT_OP)
			continue;
		mnl_attr_for_each_nested(a, op) {
			switch (mnl_attr_get_type(a)) {
			case DFKV_STAT_OP_CODE:
				code = mnl_attr_get_u32(a);
				break;
			case DFKV_STAT_OP_STATUS:
				status = mnl_attr_get_u32(a);
				break;
			case DFKV_STAT_OP_COUNT:
				count = mnl_attr_get_u64(a);
				break;
			}
		}
		if (code < __DFKV_OP_MAX && status < __DFKV_STATUS_MAX)
			ni->ops[code][status] = count;
	}
}

static void parse_numa_pages(const struct nlattr *nest, struct node_info *ni)
{
	const struct nlattr *one, *a;

	mnl_attr_for_each_nested(one, nest) {
		uint32_t node = UINT32_MAX;
		uint64_t pages = 0;

		if (mnl_attr_get_type(one) != DFKV_STAT_NUMA ||
		    ni->n_numa_pages == MAX_NUMA_NODES)
			continue;
		mnl_attr_for_each_nested(a, one) {
			if (mnl_attr_get_type(a) == DFKV_STAT_NUMA_NODE &&
			    mnl_attr_get_payload_len(a) == sizeof(uint32_t))
				node = mnl_attr_get_u32(a);
			else if (mnl_attr_get_type(a) == DFKV_STAT_NUMA_NR_PAGES &&
				 mnl_attr_get_payload_len(a) == sizeof(uint64_t))
				pages = mnl_attr_get_u64(a);
		}
		if (node == UINT32_MAX)
			continue;
		ni->numa_pages[ni->n_numa_pages].node = node;
		ni->numa_pages[ni->n_numa_pages++].pages = pages;
	}
}

static void parse_stats(const struct nlattr *nest, struct node_info *ni)
{
	const struct nlattr *tb[DFKV_STAT_MAX + 1];
	int i;

	dfkv_genl_parse_stats(nest, tb);
	ni->has_stats = true;
	for (i = 0; i <= DFKV_STAT_MAX; i++) {
		if (!tb[i])
			continue;
		if (i == DFKV_STAT_OPS) {
			parse_ops(tb[i], ni);
		} else if (i == DFKV_STAT_NUMA_PAGES) {
			parse_numa_pages(tb[i], ni);
		} else if (i == DFKV_STAT_LATENCY) {
			dfkv_latency_parse(tb[i], &ni->latency);
		} else if (mnl_attr_get_payload_len(tb[i]) == sizeof(uint64_t)) {
			ni->stat[i] = mnl_attr_get_u64(tb[i]);
			ni->has_stat[i] = true;
		}
	}
}

/* A string attribute into buf, truncated, always terminated. */
static void attr_str(const struct nlattr *a, char *buf, size_t len)
{
	snprintf(buf, len, "%.*s",
		 (int)strnlen(mnl_attr_get_payload(a), mnl_attr_get_payload_len(a)),
		 (const char *)mnl_attr_get_payload(a));
}

static void parse_listeners(const struct nlattr *nest, struct node_info *ni)
{
	const struct nlattr *one, *a;

	ni->has_listeners = true;
	mnl_attr_for_each_nested(one, nest) {
		struct listener_info *l;

		if (mnl_attr_get_type(one) != DFKV_A_LISTENER ||
		    ni->n_listeners == MAX_LISTENERS)
			continue;
		l = &ni->listeners[ni->n_listeners++];
		memset(l, 0, sizeof(*l));
		l->transport = DFKV_LISTENER_TCP;
		mnl_attr_for_each_nested(a, one) {
			switch (mnl_attr_get_type(a)) {
			case DFKV_A_LISTEN_ADDR:
				attr_str(a, l->addr, sizeof(l->addr));
				break;
			case DFKV_A_LISTEN_PORT:
				l->port = mnl_attr_get_u16(a);
				break;
			case DFKV_A_LISTEN_TRANSPORT:
				l->transport = mnl_attr_get_u32(a);
				break;
			}
		}
	}
}

static void parse_disk(const struct nlattr **tb, struct disk_attrs *d)
{
	if (tb[DFKV_A_DISK_NAME]) {
		attr_str(tb[DFKV_A_DISK_NAME], d->name, sizeof(d->name));
		d->has_name = true;
	}
	if (tb[DFKV_A_DISK_PATH]) {
		attr_str(tb[DFKV_A_DISK_PATH], d->path, sizeof(d->path));
		d->has_path = true;
	}
	if (tb[DFKV_A_DISK_REASON])
		attr_str(tb[DFKV_A_DISK_REASON], d->reason, sizeof(d->reason));
}

void node_info_parse(const struct nlmsghdr *nlh, struct node_info *ni)
{
	const struct nlattr *tb[DFKV_A_MAX + 1];

	memset(ni, 0, sizeof(*ni));
	dfkv_genl_parse(nlh, tb);
	if (tb[DFKV_A_NODE_NAME])
		snprintf(ni->name, sizeof(ni->name), "%s",
			 mnl_attr_get_str(tb[DFKV_A_NODE_NAME]));
#define U64(attr, field, has)					\
	do {							\
		if (tb[attr]) {					\
			ni->field = mnl_attr_get_u64(tb[attr]);	\
			ni->has = true;				\
		}						\
	} while (0)
#define U32(attr, field, has)					\
	do {							\
		if (tb[attr]) {					\
			ni->field = mnl_attr_get_u32(tb[attr]);	\
			ni->has = true;				\
		}						\
	} while (0)
	U64(DFKV_A_NODE_RAM_BYTES, ram_bytes, has_ram);
	U64(DFKV_A_NODE_MAX_VALUE, max_value, has_max_value);
	U64(DFKV_A_NODE_CTIME, ctime_ns, has_ctime);
	U64(DFKV_A_NODE_EXTENT_BYTES, extent_bytes, has_extent);
	U64(DFKV_A_TENANT_HASH, tenant, has_tenant);
	U64(DFKV_A_NODE_TENANT_QUOTA, tenant_quota, has_tenant_quota);
	U64(DFKV_A_TENANT_QUOTA, quota, has_quota);
	U32(DFKV_A_NODE_AUTH, auth, has_auth);
	U32(DFKV_A_TENANT_FLAGS, tenant_flags, has_tenant_flags);
	U32(DFKV_A_TENANT_SECRETS, tenant_secrets, has_tenant_secrets);
	U32(DFKV_A_NODE_FLAGS, flags, has_flags);
	U32(DFKV_A_NODE_STATE, state, has_state);
	U32(DFKV_A_NODE_PHASE, phase, has_phase);
	U32(DFKV_A_NODE_FIRST_REQUEST_MS, first_request_ms,
	    has_first_request_ms);
	U32(DFKV_A_NODE_IDLE_MS, idle_ms, has_idle_ms);
	U32(DFKV_A_NODE_MAX_CONNS, max_conns, has_max_conns);
	U32(DFKV_A_NODE_FRAME_MS, frame_ms, has_frame_ms);
	U32(DFKV_A_NODE_MIN_RATE, min_rate, has_min_rate);
	U32(DFKV_A_NODE_TIER_POLICY, tier_policy, has_tier_policy);
	U32(DFKV_A_NODE_TIER_ACK, tier_ack, has_tier_ack);
	U32(DFKV_A_NODE_DIRTY_PCT, dirty_pct, has_dirty_pct);
	U32(DFKV_A_NODE_FLUSH_WORKERS, flush_workers, has_flush_workers);
	U32(DFKV_A_NODE_NUMA, numa, has_numa);
	U64(DFKV_A_DISK_DEV_BYTES, disk.dev_bytes, disk.has_dev_bytes);
	U64(DFKV_A_DISK_EXTENT_BYTES, disk.extent_bytes, disk.has_extent);
	U64(DFKV_A_DISK_EPOCH, disk.epoch, disk.has_epoch);
	U32(DFKV_A_DISK_STATE, disk.state, disk.has_state);
	parse_disk(tb, &ni->disk);
	if (tb[DFKV_A_EVENT])
		ni->event = mnl_attr_get_u32(tb[DFKV_A_EVENT]);
#undef U64
#undef U32
	if (tb[DFKV_A_LISTENERS])
		parse_listeners(tb[DFKV_A_LISTENERS], ni);
	if (tb[DFKV_A_NODE_STATS])
		parse_stats(tb[DFKV_A_NODE_STATS], ni);
	if (tb[DFKV_A_TENANT_STATS])
		parse_stats(tb[DFKV_A_TENANT_STATS], ni);
	if (tb[DFKV_A_DISK_STATS])
		parse_stats(tb[DFKV_A_DISK_STATS], ni);
}

int info_one_cb(const struct nlmsghdr *nlh, void *data)
{
	node_info_parse(nlh, data);
	return MNL_CB_OK;
}

int node_fetch(struct dfkv_genl *g, const char *name, struct node_info *ni)
{
	char buf[MNL_SOCKET_BUFFER_SIZE];
	struct nlmsghdr *nlh;
	int err;

	nlh = dfkv_genl_msg(g, buf, DFKV_CMD_NODE_GET, 0);
	mnl_attr_put_strz(nlh, DFKV_A_NODE_NAME, name);
	memset(ni, 0, sizeof(*ni));
	err = dfkv_genl_talk(g, nlh, info_one_cb, ni);
	if (err)
		return nl_error(g, err, "node %s", name);
	return EXIT_OK;
}

int info_list_cb(const struct nlmsghdr *nlh, void *data)
{
	struct info_list *l = data;

	if (l->n == l->cap) {
		size_t cap = l->cap ? l->cap * 2 : 16;
		struct node_info *v = realloc(l->v, cap * sizeof(*v));

		if (!v) {
			l->oom = true;
			return MNL_CB_ERROR;
		}
		l->v = v;
		l->cap = cap;
	}
	node_info_parse(nlh, &l->v[l->n++]);
	return MNL_CB_OK;
}

static void info_list_reset(void *data)
{
	struct info_list *l = data;

	free(l->v);
	*l = (struct info_list){ 0 };
}

int info_list_dump(struct dfkv_genl *g, struct nlmsghdr *nlh,
		   struct info_list *l)
{
	return dfkv_genl_dump(g, nlh, info_list_cb, l, info_list_reset);
}

int node_fetch_all(struct dfkv_genl *g, struct node_info **out, size_t *n)
{
	char buf[MNL_SOCKET_BUFFER_SIZE];
	struct info_list l = { 0 };
	struct nlmsghdr *nlh;
	int err;

	nlh = dfkv_genl_msg(g, buf, DFKV_CMD_NODE_GET, NLM_F_DUMP);
	err = info_list_dump(g, nlh, &l);
	if (err || l.oom) {
		free(l.v);
		if (l.oom) {
			err_msg("out of memory");
			return EXIT_FAIL;
		}
		return nl_error(g, err, "node dump");
	}
	*out = l.v;
	*n = l.n;
	return EXIT_OK;
}

/* ---------------------------------------------------------------- names */

const char *state_name(uint32_t state)
{
	const char *name = dfkv_node_state_str(state);

	return name ? name : "unknown";
}

const char *phase_name(uint32_t phase)
{
	const char *name = dfkv_node_phase_str(phase);

	return name ? name : "unknown";
}

static int name_parse(const char *s, const char *(*name)(uint32_t),
		      uint32_t max, uint32_t *out);

int state_parse(const char *s, uint32_t *out)
{
	return name_parse(s, state_name, __DFKV_NODE_STATE_MAX, out);
}

int phase_parse(const char *s, uint32_t *out)
{
	return name_parse(s, phase_name, __DFKV_NODE_PHASE_MAX, out);
}

const char *op_name(uint32_t op)
{
	return dfkv_op_str(op);
}

const char *status_name(uint32_t status)
{
	const char *name = dfkv_status_str(status);

	return name ? name : "unknown";
}

/* "new", "del", "state", "add": the spec's name without its subject. */
const char *event_name(uint32_t event)
{
	const char *name = dfkv_event_str(event);

	return name ? strchr(name, '_') + 1 : "unknown";
}

const char *disk_state_name(uint32_t state)
{
	const char *name = dfkv_disk_state_str(state);

	return name ? name : "unknown";
}

const char *tier_policy_name(uint32_t policy)
{
	const char *name = dfkv_tier_policy_str(policy);

	return name ? name : "unknown";
}

const char *tier_ack_name(uint32_t ack)
{
	const char *name = dfkv_tier_ack_str(ack);

	return name ? name : "unknown";
}

/* The value in [1, max) whose name(value) is s. */
static int name_parse(const char *s, const char *(*name)(uint32_t),
		      uint32_t max, uint32_t *out)
{
	uint32_t i;

	for (i = 1; i < max; i++) {
		if (!strcmp(s, name(i))) {
			*out = i;
			return 0;
		}
	}
	return -EINVAL;
}

int tier_policy_parse(const char *s, uint32_t *out)
{
	return name_parse(s, tier_policy_name, __DFKV_TIER_MAX, out);
}

int tier_ack_parse(const char *s, uint32_t *out)
{
	return name_parse(s, tier_ack_name, __DFKV_ACK_MAX, out);
}

const char *auth_name(uint32_t mode)
{
	const char *name = dfkv_auth_mode_str(mode);

	return name ? name : "unknown";
}

int auth_parse(const char *s, uint32_t *out)
{
	return name_parse(s, auth_name, __DFKV_AUTH_MAX, out);
}

const char *fmt_quota(uint64_t quota, bool raw, char *buf, size_t len)
{
	if (!quota)
		snprintf(buf, len, "unlimited");
	else
		fmt_bytes(quota, raw, buf, len);
	return buf;
}

const char *numa_str(uint32_t numa, char *buf, size_t len)
{
	if (numa == DFKV_NUMA_INTERLEAVE)
		snprintf(buf, len, "interleave");
	else
		snprintf(buf, len, "%u", numa);
	return buf;
}

const char *transport_name(uint32_t transport)
{
	const char *name = dfkv_listener_kind_str(transport);

	return name ? name : "unknown";
}

const char *listener_str(const struct listener_info *l, char *buf, size_t len)
{
	if (strchr(l->addr, ':'))
		snprintf(buf, len, "[%s]:%u", l->addr, l->port);
	else
		snprintf(buf, len, "%s:%u", l->addr, l->port);
	return buf;
}

/* --------------------------------------------------------------- report */

/* "30000 ms", or "off" for 0. */
static const char *fmt_ms(uint32_t ms, char *buf, size_t len)
{
	if (!ms)
		snprintf(buf, len, "off");
	else
		snprintf(buf, len, "%u ms", ms);
	return buf;
}

static void fmt_age(uint64_t ctime_ns, char *buf, size_t len)
{
	struct timespec now;
	time_t t = (time_t)(ctime_ns / 1000000000ULL);
	struct tm tm;
	char when[64], unit;
	int64_t age;

	localtime_r(&t, &tm);
	strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S %Z", &tm);
	clock_gettime(CLOCK_REALTIME, &now);
	age = (int64_t)now.tv_sec - (int64_t)t;
	if (age < 0)
		age = 0;
	if (age < 120)
		unit = 's';
	else if (age < 7200)
		age /= 60, unit = 'm';
	else if (age < 172800)
		age /= 3600, unit = 'h';
	else
		age /= 86400, unit = 'd';
	snprintf(buf, len, "%.40s (%lld%c ago)", when, (long long)age, unit);
}

void pct(char *buf, size_t len, uint64_t part, uint64_t whole)
{
	if (!whole)
		snprintf(buf, len, "-");
	else
		snprintf(buf, len, "%.1f%%", 100.0 * (double)part / (double)whole);
}

void print_usage(FILE *f, const struct node_info *ni, bool raw, bool tenants)
{
	const uint64_t *s = ni->stat;
	uint64_t slot = s[DFKV_STAT_SLOT_BYTES];
	uint64_t used = s[DFKV_STAT_USED_BYTES];
	uint64_t waste = slot > used ? slot - used : 0;
	char a[48], b[48], p[32], t[48] = "";

	/*
	 * The capacity is the RAM budget: set against it what RAM holds,
	 * which a node with disks reports apart from what it stores in all.
	 */
	if (ni->has_stat[DFKV_STAT_RAM_USED_BYTES]) {
		uint64_t ram = s[DFKV_STAT_RAM_USED_BYTES];

		pct(p, sizeof(p), ram, s[DFKV_STAT_CAPACITY_BYTES]);
		fprintf(f, "  %-12s %s in RAM of %s (%s), %s stored in all\n",
			"capacity", fmt_bytes(ram, raw, a, sizeof(a)),
			fmt_bytes(s[DFKV_STAT_CAPACITY_BYTES], raw, b, sizeof(b)),
			p, fmt_bytes(used, raw, t, sizeof(t)));
	} else {
		pct(p, sizeof(p), used, s[DFKV_STAT_CAPACITY_BYTES]);
		fprintf(f, "  %-12s %s used of %s (%s)\n", "capacity",
			fmt_bytes(used, raw, a, sizeof(a)),
			fmt_bytes(s[DFKV_STAT_CAPACITY_BYTES], raw, b, sizeof(b)),
			p);
	}
	pct(p, sizeof(p), waste, slot);
	fprintf(f, "  %-12s %s in slots, %s waste (%s)\n", "slots",
		fmt_bytes(slot, raw, a, sizeof(a)),
		fmt_bytes(waste, raw, b, sizeof(b)), p);
	if (tenants)
		snprintf(t, sizeof(t), "    tenants %llu",
			 (unsigned long long)s[DFKV_STAT_TENANTS]);
	fprintf(f, "  %-12s %llu%s    extents %llu of %llu bound\n",
		"objects", (unsigned long long)s[DFKV_STAT_OBJECTS], t,
		(unsigned long long)s[DFKV_STAT_EXTENTS_BOUND],
		(unsigned long long)s[DFKV_STAT_EXTENTS_TOTAL]);
}

/* The tier settings of a node (present once the kernel reports them). */
static void print_tier(FILE *f, const struct node_info *ni)
{
	char n[32];

	if (ni->has_tier_policy || ni->has_tier_ack)
		fprintf(f, "  %-12s %s, ack %s\n", "tier policy",
			tier_policy_name(ni->tier_policy),
			tier_ack_name(ni->tier_ack));
	if (ni->has_dirty_pct || ni->has_flush_workers) {
		if (ni->flush_workers)
			snprintf(n, sizeof(n), "%u", ni->flush_workers);
		else
			snprintf(n, sizeof(n), "4 per disk");
		fprintf(f, "  %-12s dirty watermark %u%%    flush workers %s\n",
			"write-back", ni->dirty_pct, n);
	}
	if (ni->has_numa)
		fprintf(f, "  %-12s %s\n", "numa", numa_str(ni->numa, n, sizeof(n)));
}

#define U(x)	((unsigned long long)(x))

/* The RAM tier, disk and RDMA counters, when the node reports them. */
static void print_tier_stats(FILE *f, const struct node_info *ni, bool raw)
{
	const uint64_t *s = ni->stat;
	char a[48], b[48], p[32];

	if (ni->has_stat[DFKV_STAT_DISKS])
		fprintf(f, "  %-12s %llu    failed %llu\n", "disks",
			U(s[DFKV_STAT_DISKS]), U(s[DFKV_STAT_DISKS_FAILED]));
	if (ni->has_stat[DFKV_STAT_RAM_HITS]) {
		pct(p, sizeof(p), s[DFKV_STAT_RAM_HITS],
		    s[DFKV_STAT_RAM_HITS] + s[DFKV_STAT_RAM_MISSES]);
		fprintf(f, "  %-12s hits %llu    misses %llu    hit ratio %s\n",
			"ram tier", U(s[DFKV_STAT_RAM_HITS]),
			U(s[DFKV_STAT_RAM_MISSES]), p);
		fprintf(f, "  %-12s admitted %llu    bypassed %llu    evicted %llu\n",
			"ram puts", U(s[DFKV_STAT_RAM_PUTS]),
			U(s[DFKV_STAT_RAM_BYPASSES]),
			U(s[DFKV_STAT_RAM_EVICTIONS]));
		fprintf(f, "  %-12s flushed %llu    retries %llu    drops %llu\n",
			"flush", U(s[DFKV_STAT_FLUSHED]),
			U(s[DFKV_STAT_FLUSH_RETRIES]),
			U(s[DFKV_STAT_FLUSH_DROPS]));
		fprintf(f, "  %-12s %s dirty    backlog %llu blocks\n", "",
			fmt_bytes(s[DFKV_STAT_DIRTY_BYTES], raw, a, sizeof(a)),
			U(s[DFKV_STAT_FLUSH_BACKLOG]));
		fprintf(f, "  %-12s promoted %llu    coalesced %llu\n",
			"cold reads", U(s[DFKV_STAT_PROMOTED]),
			U(s[DFKV_STAT_COALESCED]));
	}
	if (ni->has_stat[DFKV_STAT_DISK_READS]) {
		fprintf(f, "  %-12s reads %llu (%s)    writes %llu (%s)\n",
			"disk i/o", U(s[DFKV_STAT_DISK_READS]),
			fmt_bytes(s[DFKV_STAT_DISK_READ_BYTES], raw, a, sizeof(a)),
			U(s[DFKV_STAT_DISK_WRITES]),
			fmt_bytes(s[DFKV_STAT_DISK_WRITE_BYTES], raw, b,
				  sizeof(b)));
		fprintf(f, "  %-12s errors %llu    record blocks written %llu\n",
			"", U(s[DFKV_STAT_DISK_IO_ERRORS]),
			U(s[DFKV_STAT_DISK_RECORD_WRITES]));
	}
	if (ni->has_stat[DFKV_STAT_REBUILD_RECORDS])
		fprintf(f, "  %-12s %llu records    %llu rejected    %llu ms    read %s\n",
			"rebuild", U(s[DFKV_STAT_REBUILD_RECORDS]),
			U(s[DFKV_STAT_REBUILD_REJECTED]),
			U(s[DFKV_STAT_REBUILD_MS]),
			fmt_bytes(s[DFKV_STAT_REBUILD_READ_BYTES], raw, a,
				  sizeof(a)));
	if (ni->has_stat[DFKV_STAT_RDMA_ACCEPTS]) {
		fprintf(f, "  %-12s open %llu    accepted %llu    cq errors %llu\n",
			"rdma", U(s[DFKV_STAT_RDMA_CONNS]),
			U(s[DFKV_STAT_RDMA_ACCEPTS]),
			U(s[DFKV_STAT_RDMA_CQ_ERRORS]));
		fprintf(f, "  %-12s reads %llu (%s)    writes %llu (%s)\n", "",
			U(s[DFKV_STAT_RDMA_READS]),
			fmt_bytes(s[DFKV_STAT_RDMA_READ_BYTES], raw, a, sizeof(a)),
			U(s[DFKV_STAT_RDMA_WRITES]),
			fmt_bytes(s[DFKV_STAT_RDMA_WRITE_BYTES], raw, b,
				  sizeof(b)));
	}
}

void print_disk_report(FILE *f, const struct node_info *ni, bool raw)
{
	const struct disk_attrs *d = &ni->disk;
	char a[48];

	fprintf(f, "disk %s (node %s)\n", d->name, ni->name);
	if (d->has_path)
		fprintf(f, "  %-12s %s\n", "path", d->path);
	if (d->has_state)
		fprintf(f, "  %-12s %s%s%s\n", "state", disk_state_name(d->state),
			d->reason[0] ? ": " : "", d->reason);
	if (d->has_dev_bytes)
		fprintf(f, "  %-12s %s\n", "device",
			fmt_bytes(d->dev_bytes, raw, a, sizeof(a)));
	if (d->has_extent)
		fprintf(f, "  %-12s %s\n", "extent size",
			fmt_bytes(d->extent_bytes, raw, a, sizeof(a)));
	if (d->has_epoch)
		fprintf(f, "  %-12s %llu\n", "epoch", U(d->epoch));
	if (!ni->has_stats)
		return;
	fputc('\n', f);
	print_usage(f, ni, raw, false);
	if (ni->has_stat[DFKV_STAT_EVICTIONS])
		fprintf(f, "  %-12s %llu\n", "evictions",
			U(ni->stat[DFKV_STAT_EVICTIONS]));
	print_tier_stats(f, ni, raw);
}

/* Where the RAM arena's pages are, NUMA node by NUMA node. */
static void print_numa_pages(FILE *f, const struct node_info *ni, bool raw)
{
	uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE);
	char a[48];
	size_t i;

	for (i = 0; i < ni->n_numa_pages; i++)
		fprintf(f, "  %-12s NUMA node %u: %s\n", i ? "" : "arena pages",
			ni->numa_pages[i].node,
			fmt_bytes(ni->numa_pages[i].pages * page, raw, a,
				  sizeof(a)));
}

/* The node's configuration: state, sizes, listeners, limits, tier. */
static void print_node_config(FILE *f, const struct node_info *ni, bool raw)
{
	char a[96], b[48], c[48];

	fprintf(f, "node %s\n", ni->name);
	if (ni->has_state)
		fprintf(f, "  %-12s %s\n", "state", state_name(ni->state));
	if (ni->has_phase)
		fprintf(f, "  %-12s %s\n", "phase", phase_name(ni->phase));
	if (ni->has_flags)
		fprintf(f, "  %-12s %s\n", "eviction",
			ni->flags & DFKV_NODE_F_EVICT ? "on" : "off");
	if (ni->has_flags)
		fprintf(f, "  %-12s %s\n", "ram tier",
			ni->flags & DFKV_NODE_F_DISK_ONLY ?
			"off (disk-only)" : "on");
	if (ni->has_ram)
		fprintf(f, "  %-12s %s\n", "ram budget",
			fmt_bytes(ni->ram_bytes, raw, a, sizeof(a)));
	if (ni->has_max_value)
		fprintf(f, "  %-12s %s\n", "max value",
			fmt_bytes(ni->max_value, raw, a, sizeof(a)));
	if (ni->has_extent)
		fprintf(f, "  %-12s %s\n", "extent size",
			fmt_bytes(ni->extent_bytes, raw, a, sizeof(a)));
	if (ni->has_ctime) {
		fmt_age(ni->ctime_ns, a, sizeof(a));
		fprintf(f, "  %-12s %s\n", "created", a);
	}
	if (ni->has_listeners) {
		size_t i;

		if (!ni->n_listeners)
			fprintf(f, "  %-12s none\n", "listeners");
		for (i = 0; i < ni->n_listeners; i++)
			fprintf(f, "  %-12s %s %s\n", i ? "" : "listeners",
				transport_name(ni->listeners[i].transport),
				listener_str(&ni->listeners[i], a, sizeof(a)));
	}
	if (ni->has_first_request_ms || ni->has_idle_ms || ni->has_max_conns) {
		fprintf(f, "  %-12s first request %s    idle %s    max conns %u\n",
			"limits", fmt_ms(ni->first_request_ms, b, sizeof(b)),
			fmt_ms(ni->idle_ms, c, sizeof(c)), ni->max_conns);
	}
	if (ni->has_frame_ms || ni->has_min_rate) {
		if (ni->min_rate)
			snprintf(c, sizeof(c), "%s/s",
				 fmt_bytes(ni->min_rate, raw, a, sizeof(a)));
		else
			snprintf(c, sizeof(c), "off");
		fprintf(f, "  %-12s frame %s    min rate %s\n", "",
			fmt_ms(ni->frame_ms, b, sizeof(b)), c);
	}
	if (ni->has_auth)
		fprintf(f, "  %-12s %s\n", "auth", auth_name(ni->auth));
	if (ni->has_tenant_quota)
		fprintf(f, "  %-12s %s per tenant by default\n", "tenant quota",
			fmt_quota(ni->tenant_quota, raw, a, sizeof(a)));
	print_tier(f, ni);
}

/* The request counters: traffic, lookups, leases, connections, auth. */
static void print_request_stats(FILE *f, const struct node_info *ni, bool raw)
{
	const uint64_t *s = ni->stat;
	char a[96], b[48], p[32];

	fprintf(f, "  %-12s in %s    out %s\n", "traffic",
		fmt_bytes(s[DFKV_STAT_BYTES_IN], raw, a, sizeof(a)),
		fmt_bytes(s[DFKV_STAT_BYTES_OUT], raw, b, sizeof(b)));
	pct(p, sizeof(p), s[DFKV_STAT_HITS],
	    s[DFKV_STAT_HITS] + s[DFKV_STAT_MISSES]);
	fprintf(f, "  %-12s hits %llu    misses %llu    hit ratio %s\n",
		"lookups", (unsigned long long)s[DFKV_STAT_HITS],
		(unsigned long long)s[DFKV_STAT_MISSES], p);
	if (ni->has_stat[DFKV_STAT_MISS_NEVER_STORED])
		fprintf(f, "  %-12s never stored %llu    evicted %llu    removed %llu\n",
			"misses by", U(s[DFKV_STAT_MISS_NEVER_STORED]),
			U(s[DFKV_STAT_MISS_EVICTED]),
			U(s[DFKV_STAT_MISS_REMOVED]));
	fprintf(f, "  %-12s %llu\n", "evictions",
		(unsigned long long)s[DFKV_STAT_EVICTIONS]);
	fprintf(f, "  %-12s %llu\n", "pins",
		(unsigned long long)s[DFKV_STAT_PINS]);
	fprintf(f, "  %-12s %llu live, %llu granted, %llu expired\n", "leases",
		(unsigned long long)s[DFKV_STAT_LEASES],
		(unsigned long long)s[DFKV_STAT_LEASE_GRANTS],
		(unsigned long long)s[DFKV_STAT_LEASE_EXPIRIES]);
	if (ni->has_stat[DFKV_STAT_ACCEPTS]) {
		fprintf(f, "  %-12s open %llu    accepted %llu    refused %llu\n",
			"connections",
			(unsigned long long)s[DFKV_STAT_CONNS],
			(unsigned long long)s[DFKV_STAT_ACCEPTS],
			(unsigned long long)s[DFKV_STAT_CONNS_REFUSED]);
		fprintf(f, "  %-12s deadline %llu    protocol errors %llu\n",
			"dropped",
			(unsigned long long)s[DFKV_STAT_DEADLINE_DROPS],
			(unsigned long long)s[DFKV_STAT_PROTO_ERRORS]);
		fprintf(f, "  %-12s %s held by PUTs receiving    busy %llu\n",
			"receiving",
			fmt_bytes(s[DFKV_STAT_RECV_RESERVED], raw, a, sizeof(a)),
			(unsigned long long)s[DFKV_STAT_RECV_BUSY]);
		fprintf(f, "  %-12s busy over a peer address's share %llu\n",
			"stages", U(s[DFKV_STAT_STAGE_BUSY]));
		fprintf(f, "  %-12s %llu GET replies lent to sockets    copied by the stack %llu\n",
			"zero-copy", U(s[DFKV_STAT_TCP_ZC_REPLIES]),
			U(s[DFKV_STAT_TCP_ZC_COPIED]));
		fprintf(f, "  %-12s %s pinned by lent replies    copied over the bound %llu\n",
			"lent",
			fmt_bytes(s[DFKV_STAT_TCP_ZC_LENT_BYTES], raw, a, sizeof(a)),
			U(s[DFKV_STAT_TCP_ZC_CAPPED]));
	}
	if (ni->has_stat[DFKV_STAT_AUTH_OK]) {
		fprintf(f, "  %-12s ok %llu    failed %llu    forbidden requests %llu\n",
			"auth", U(s[DFKV_STAT_AUTH_OK]),
			U(s[DFKV_STAT_AUTH_FAILURES]), U(s[DFKV_STAT_FORBIDDEN]));
		fprintf(f, "  %-12s PUTs refused over a tenant's quota %llu\n",
			"quotas", U(s[DFKV_STAT_QUOTA_REJECTIONS]));
	}
}

/* Ops by op and status: rows and columns with a non-zero count. */
static void print_ops_table(FILE *f, const struct node_info *ni)
{
	bool col[__DFKV_STATUS_MAX] = { false };
	bool any = false;
	uint32_t op, st;
	char c[48];

	for (op = 0; op < __DFKV_OP_MAX; op++)
		for (st = 0; st < __DFKV_STATUS_MAX; st++)
			if (ni->ops[op][st]) {
				col[st] = true;
				any = true;
			}
	fputc('\n', f);
	if (!any) {
		fprintf(f, "  %-12s none yet\n", "ops");
		return;
	}
	fprintf(f, "  %-12s", "ops");
	for (st = 0; st < __DFKV_STATUS_MAX; st++)
		if (col[st])
			fprintf(f, " %14s", status_name(st));
	fputc('\n', f);
	for (op = 0; op < __DFKV_OP_MAX; op++) {
		bool row = false;

		for (st = 0; st < __DFKV_STATUS_MAX; st++)
			row |= ni->ops[op][st] != 0;
		if (!row)
			continue;
		if (op_name(op))
			snprintf(c, sizeof(c), "%s", op_name(op));
		else
			snprintf(c, sizeof(c), "op%u", op);
		fprintf(f, "  %-12s", c);
		for (st = 0; st < __DFKV_STATUS_MAX; st++)
			if (col[st])
				fprintf(f, " %14llu",
					(unsigned long long)ni->ops[op][st]);
		fputc('\n', f);
	}
}

void print_node_report(FILE *f, const struct node_info *ni, bool raw)
{
	print_node_config(f, ni, raw);
	if (!ni->has_stats)
		return;

	fputc('\n', f);
	print_usage(f, ni, raw, true);
	print_request_stats(f, ni, raw);
	print_tier_stats(f, ni, raw);
	print_numa_pages(f, ni, raw);
	print_ops_table(f, ni);
}
