// SPDX-License-Identifier: GPL-2.0
/*
 * dfkvctl node: add, del, set, show and list cache nodes
 * (DFKV_CMD_NODE_NEW, _DEL, _SET, _GET and its dump).
 */
#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "dfkvctl.h"

static const char help[] =
	"NAME\n"
	"    dfkvctl node - create, delete, modify and list cache nodes\n"
	"\n"
	"SYNOPSIS\n"
	"    dfkvctl node add NAME --ram SIZE [--max-value SIZE] [--no-evict]\n"
	"                          [--disk-only]\n"
	"                          [CONNECTION LIMITS] [TIER] [TENANTS]\n"
	"                          [--numa N|interleave] [--phase rebuilding]\n"
	"    dfkvctl node del NAME\n"
	"    dfkvctl node set NAME [--max-value SIZE] [--evict on|off]\n"
	"                          [--state up|draining|unhealthy] [--phase up]\n"
	"                          [CONNECTION LIMITS] [TIER] [TENANTS]\n"
	"    CONNECTION LIMITS: [--first-request-ms MS] [--idle-ms MS]\n"
	"                       [--max-conns N] [--frame-ms MS] [--min-rate SIZE]\n"
	"    TIER: [--policy writeback|writearound] [--ack ram|disk]\n"
	"          [--dirty PCT] [--flush-workers N]\n"
	"    TENANTS: [--auth off|required] [--tenant-quota SIZE]\n"
	"    dfkvctl node show NAME [--bytes]\n"
	"    dfkvctl node list [--bytes]\n"
	"\n"
	"DESCRIPTION\n"
	"    A node is one cache instance of dfkv.ko: a RAM budget carved by the\n"
	"    slab allocator, an index of block keys, limits and counters.  Nodes\n"
	"    belong to the network namespace that created them.  NAME is 1-31\n"
	"    characters of [A-Za-z0-9._-].  Changing a node needs CAP_NET_ADMIN\n"
	"    in the namespace; show and list do not.\n"
	"\n"
	"    add   Create node NAME.  It starts in state \"up\" with eviction on.\n"
	"    del   Delete node NAME and everything it stores.  Operations in\n"
	"          flight finish first; open /dev/dfkv files bound to it fail\n"
	"          with ENODEV afterwards.\n"
	"    set   Change the limits, eviction, tenant settings or state of node\n"
	"          NAME.  The RAM budget is fixed when a node is created.\n"
	"    show  Print every attribute of node NAME (listeners, connection\n"
	"          limits and tier settings too) and its statistics.\n"
	"    list  One line per node of the network namespace.\n"
	"\n"
	"    Tenants (see dfkvctl tenant): with --auth required a client acts\n"
	"    only for the tenants it authenticated for with their secrets;\n"
	"    every other request is answered FORBIDDEN.  Production nodes run\n"
	"    --auth required.  With --auth off (the default) every tenant\n"
	"    claim is believed, but AUTH is still verified.  Nothing is\n"
	"    encrypted: the data plane belongs on a trusted network.\n"
	"\n"
	"    A node serves the network through its listeners (see dfkvctl\n"
	"    listener); the connection limits apply to all of them.  New values\n"
	"    apply to connections accepted afterwards.\n"
	"\n"
	"    A node with disks (see dfkvctl disk) keeps a RAM tier in front of\n"
	"    them; the TIER options choose how PUTs reach the disks.  They can be\n"
	"    given before the first disk is added.\n"
	"\n"
	"    SIZE is a number of bytes with an optional binary suffix: K, M, G\n"
	"    or T (KiB, MiB, GiB, TiB; \"K\", \"KB\" and \"KiB\" all mean 1024).\n"
	"\n"
	"OPTIONS\n"
	"    --ram SIZE          RAM budget of the new node (1M to 64T; required)\n"
	"    --max-value SIZE    largest value a PUT may store (default 64M, at\n"
	"                        most 1G)\n"
	"    --no-evict          refuse new keys with CACHE_FULL when the budget\n"
	"                        is used up instead of evicting the least\n"
	"                        recently used idle entries\n"
	"    --evict on|off      turn recency eviction on or off\n"
	"    --disk-only         no RAM tier: values are stored on the node's\n"
	"                        disks only, a PUT is acknowledged once durable,\n"
	"                        a GET reads from disk; --ram bounds the bytes\n"
	"                        in flight to and from the disks.  Without a\n"
	"                        disk PUTs get CACHE_FULL.  Chosen at add only.\n"
	"    --state STATE       up, draining (clients should move away) or\n"
	"                        unhealthy; every change is announced on the\n"
	"                        \"events\" multicast group (see dfkvctl monitor)\n"
	"    --phase PHASE       add: rebuilding, the node's disks follow: its\n"
	"                        phase stays rebuilding (a directory agent does\n"
	"                        not register it) until set --phase up; set: up\n"
	"                        ends that.  The phase is also rebuilding while\n"
	"                        a disk add of the node is in progress.\n"
	"    --first-request-ms MS\n"
	"                        a connection whose first complete request has\n"
	"                        not arrived MS milliseconds after accept is\n"
	"                        closed (default 30000; 0 = no deadline)\n"
	"    --idle-ms MS        close a connection idle for MS milliseconds\n"
	"                        (default 300000; 0 = never)\n"
	"    --max-conns N       most open network connections of the node\n"
	"                        (default 1024, at least 1); further ones are\n"
	"                        refused and counted\n"
	"    --frame-ms MS       a request frame, payload included, must arrive\n"
	"                        within MS milliseconds of its first byte, and a\n"
	"                        reply that makes no progress for MS is dropped\n"
	"                        with its connection (default 30000, 1000 to\n"
	"                        3600000; always on)\n"
	"    --min-rate SIZE     bytes a second a frame being received, or a reply\n"
	"                        being sent, must keep up over every 5 s, or its\n"
	"                        connection is closed (default 64K; 0 = no floor)\n"
	"    --policy writeback|writearound\n"
	"                        writeback (default): a PUT is admitted into\n"
	"                        RAM, visible at once, and flushed to disk by\n"
	"                        the flush workers; writearound: a PUT is\n"
	"                        answered after its disk commit, then leaves\n"
	"                        RAM; GETs (whole or ranged) fill RAM\n"
	"    --ack ram|disk      when a write-back PUT is answered: after RAM\n"
	"                        admission (ram, default) or after the disk commit\n"
	"                        (disk)\n"
	"    --dirty PCT         dirty-byte watermark, 0-100 percent of the RAM\n"
	"                        budget (default 80); above it, PUTs of new keys\n"
	"                        get CACHE_FULL; 0 makes every PUT wait for the\n"
	"                        disk\n"
	"    --flush-workers N   flush workers of the node, 1-16; 0 (the default)\n"
	"                        means 4 per disk, at most 16\n"
	"    --numa N|interleave NUMA node of the RAM arena, or interleave it over\n"
	"                        all NUMA nodes (default); add only\n"
	"    --auth off|required whether clients must authenticate for the\n"
	"                        tenants they act for (default off)\n"
	"    --tenant-quota SIZE committed bytes a tenant without a quota of its\n"
	"                        own may hold on the node (default 0 = unlimited);\n"
	"                        a PUT of a new key over it gets QUOTA_EXCEEDED\n"
	"    -b, --bytes         print exact byte counts instead of KiB/MiB/GiB\n"
	"\n"
	"EXIT STATUS\n"
	"    0 success; 1 no such node; 2 usage error; 3 the kernel refused (its\n"
	"    message is printed on stderr).\n"
	"\n"
	"EXAMPLES\n"
	"    dfkvctl node add kv0 --ram 4G --max-value 16M --auth required\n"
	"    dfkvctl node set kv0 --tenant-quota 512M\n"
	"    dfkvctl node set kv0 --state draining\n"
	"    dfkvctl node set kv0 --evict off\n"
	"    dfkvctl node set kv0 --idle-ms 60000 --max-conns 256\n"
	"    dfkvctl node add kv1 --ram 8G --policy writeback --ack disk --numa 0\n"
	"    dfkvctl node set kv1 --dirty 50 --flush-workers 8\n"
	"    dfkvctl node show kv0\n"
	"    dfkvctl node list\n"
	"    dfkvctl node del kv0\n";

#define CMD_ADD		"node add"
#define CMD_DEL		"node del"
#define CMD_SET		"node set"
#define CMD_SHOW	"node show"
#define CMD_LIST	"node list"

enum { OPT_RAM = 256, OPT_MAX_VALUE, OPT_NO_EVICT, OPT_EVICT, OPT_STATE,
       OPT_FIRST_REQ, OPT_IDLE, OPT_MAX_CONNS, OPT_POLICY, OPT_ACK, OPT_DIRTY,
       OPT_FLUSH_WORKERS, OPT_NUMA, OPT_AUTH, OPT_TENANT_QUOTA, OPT_FRAME,
       OPT_MIN_RATE, OPT_DISK_ONLY, OPT_PHASE };

static const struct option node_opts[] = {
	{ "ram", required_argument, NULL, OPT_RAM },
	{ "max-value", required_argument, NULL, OPT_MAX_VALUE },
	{ "no-evict", no_argument, NULL, OPT_NO_EVICT },
	{ "evict", required_argument, NULL, OPT_EVICT },
	{ "disk-only", no_argument, NULL, OPT_DISK_ONLY },
	{ "state", required_argument, NULL, OPT_STATE },
	{ "phase", required_argument, NULL, OPT_PHASE },
	{ "first-request-ms", required_argument, NULL, OPT_FIRST_REQ },
	{ "idle-ms", required_argument, NULL, OPT_IDLE },
	{ "max-conns", required_argument, NULL, OPT_MAX_CONNS },
	{ "frame-ms", required_argument, NULL, OPT_FRAME },
	{ "min-rate", required_argument, NULL, OPT_MIN_RATE },
	{ "policy", required_argument, NULL, OPT_POLICY },
	{ "ack", required_argument, NULL, OPT_ACK },
	{ "dirty", required_argument, NULL, OPT_DIRTY },
	{ "flush-workers", required_argument, NULL, OPT_FLUSH_WORKERS },
	{ "numa", required_argument, NULL, OPT_NUMA },
	{ "auth", required_argument, NULL, OPT_AUTH },
	{ "tenant-quota", required_argument, NULL, OPT_TENANT_QUOTA },
	{ "bytes", no_argument, NULL, 'b' },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 }
};

#define ALLOW(o)	(1U << ((o) - OPT_RAM))
#define ALLOW_BYTES	(1U << 31)

/* What the options of one invocation asked for. */
struct node_args {
	const char *name;
	uint64_t ram, max_value, tenant_quota;
	uint32_t state, phase;
	uint32_t first_req, idle, max_conns, frame, min_rate;
	uint32_t policy, ack, dirty, flush_workers, numa, auth;
	bool has_ram, has_max_value, no_evict, has_evict, evict, has_state;
	bool disk_only, has_phase;
	bool has_first_req, has_idle, has_max_conns, has_frame, has_min_rate;
	bool has_policy, has_ack, has_dirty, has_flush_workers, has_numa;
	bool has_auth, has_tenant_quota;
	bool raw;
};

/* A u32 option value (decimal or 0x hex). */
static int opt_u32(const char *cmd, const char *opt, const char *arg,
		   uint32_t *out, bool *has)
{
	uint64_t v;

	if (parse_u64(arg, &v) || v > UINT32_MAX)
		return usage_error(cmd, "bad %s '%s' (a number from 0 to %u)",
				   opt, arg, UINT32_MAX);
	*out = (uint32_t)v;
	*has = true;
	return 0;
}

#define LIMIT_OPTS	(ALLOW(OPT_FIRST_REQ) | ALLOW(OPT_IDLE) | \
			 ALLOW(OPT_MAX_CONNS) | ALLOW(OPT_FRAME) | \
			 ALLOW(OPT_MIN_RATE))
#define TIER_OPTS	(ALLOW(OPT_POLICY) | ALLOW(OPT_ACK) | ALLOW(OPT_DIRTY) | \
			 ALLOW(OPT_FLUSH_WORKERS))
#define TENANT_OPTS	(ALLOW(OPT_AUTH) | ALLOW(OPT_TENANT_QUOTA))

/* The connection limits (LIMIT_OPTS): one option's value into a. */
static int parse_limit_opt(const char *cmd, int c, const char *arg,
			   struct node_args *a)
{
	uint64_t v;

	switch (c) {
	case OPT_FIRST_REQ:
		return opt_u32(cmd, "--first-request-ms", arg, &a->first_req,
			       &a->has_first_req);
	case OPT_IDLE:
		return opt_u32(cmd, "--idle-ms", arg, &a->idle, &a->has_idle);
	case OPT_MAX_CONNS:
		return opt_u32(cmd, "--max-conns", arg, &a->max_conns,
			       &a->has_max_conns);
	case OPT_FRAME:
		return opt_u32(cmd, "--frame-ms", arg, &a->frame,
			       &a->has_frame);
	}
	/* The one left: OPT_MIN_RATE, bytes a second. */
	if (parse_size(arg, &v) || v > UINT32_MAX)
		return usage_error(cmd, "bad --min-rate '%s' (bytes a second, below 4G)",
				   arg);
	a->min_rate = (uint32_t)v;
	a->has_min_rate = true;
	return 0;
}

/* The tier settings (TIER_OPTS) and --numa: one option's value into a. */
static int parse_tier_opt(const char *cmd, int c, const char *arg,
			  struct node_args *a)
{
	switch (c) {
	case OPT_POLICY:
		if (tier_policy_parse(arg, &a->policy))
			return usage_error(cmd, "bad --policy '%s' (writeback or writearound)",
					   arg);
		a->has_policy = true;
		return 0;
	case OPT_ACK:
		if (tier_ack_parse(arg, &a->ack))
			return usage_error(cmd, "bad --ack '%s' (ram or disk)",
					   arg);
		a->has_ack = true;
		return 0;
	case OPT_DIRTY:
		return opt_u32(cmd, "--dirty", arg, &a->dirty, &a->has_dirty);
	case OPT_FLUSH_WORKERS:
		return opt_u32(cmd, "--flush-workers", arg, &a->flush_workers,
			       &a->has_flush_workers);
	}
	/* The one left: OPT_NUMA. */
	if (!strcmp(arg, "interleave")) {
		a->numa = DFKV_NUMA_INTERLEAVE;
		a->has_numa = true;
		return 0;
	}
	return opt_u32(cmd, "--numa", arg, &a->numa, &a->has_numa);
}

/*
 * One option's value into a: the node's own settings here, the limits and
 * tier settings by parse_limit_opt() and parse_tier_opt().  Returns 0 or
 * an exit status.
 */
static int parse_opt(const char *cmd, int c, const char *arg,
		     struct node_args *a)
{
	switch (c) {
	case 'b':
		a->raw = true;
		return 0;
	case OPT_RAM:
		if (parse_size(arg, &a->ram))
			return usage_error(cmd, "bad --ram '%s'", arg);
		a->has_ram = true;
		return 0;
	case OPT_MAX_VALUE:
		if (parse_size(arg, &a->max_value))
			return usage_error(cmd, "bad --max-value '%s'", arg);
		a->has_max_value = true;
		return 0;
	case OPT_NO_EVICT:
		a->no_evict = true;
		return 0;
	case OPT_DISK_ONLY:
		a->disk_only = true;
		return 0;
	case OPT_EVICT:
		if (!strcmp(arg, "on"))
			a->evict = true;
		else if (strcmp(arg, "off"))
			return usage_error(cmd, "--evict takes on or off, not '%s'",
					   arg);
		a->has_evict = true;
		return 0;
	case OPT_STATE:
		if (state_parse(arg, &a->state))
			return usage_error(cmd, "bad --state '%s' (up, draining or unhealthy)",
					   arg);
		a->has_state = true;
		return 0;
	case OPT_PHASE:
		if (phase_parse(arg, &a->phase))
			return usage_error(cmd, "bad --phase '%s' (up or rebuilding)",
					   arg);
		a->has_phase = true;
		return 0;
	case OPT_AUTH:
		if (auth_parse(arg, &a->auth))
			return usage_error(cmd, "bad --auth '%s' (off or required)",
					   arg);
		a->has_auth = true;
		return 0;
	case OPT_TENANT_QUOTA:
		if (parse_size(arg, &a->tenant_quota))
			return usage_error(cmd, "bad --tenant-quota '%s'", arg);
		a->has_tenant_quota = true;
		return 0;
	}
	if (ALLOW(c) & LIMIT_OPTS)
		return parse_limit_opt(cmd, c, arg, a);
	return parse_tier_opt(cmd, c, arg, a);
}

/*
 * The positional NAME, if any, after the options.  Returns 0 or an exit
 * status.
 */
static int parse_name(const char *cmd, int argc, char *argv[], bool need_name,
		      struct node_args *a)
{
	if (optind < argc)
		a->name = argv[optind++];
	if (optind < argc)
		return usage_error(cmd, "unexpected argument '%s'", argv[optind]);
	if (need_name && !a->name)
		return usage_error(cmd, "missing node NAME");
	if (!need_name && a->name)
		return usage_error(cmd, "unexpected argument '%s'", a->name);
	if (a->name && strlen(a->name) >= DFKV_NODE_NAME_MAX)
		return usage_error(cmd, "node name '%s' is longer than %d characters",
				   a->name, DFKV_NODE_NAME_MAX - 1);
	return 0;
}

/*
 * Parse options and at most one positional NAME; allowed is the set of
 * options this action takes (OPT_* bit positions relative to OPT_RAM,
 * plus 'b').  Returns 0 or an exit status.
 */
static int parse(const char *cmd, int argc, char *argv[], unsigned int allowed,
		 bool need_name, struct node_args *a)
{
	int c, ret;

	memset(a, 0, sizeof(*a));
	optind = 0;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":bh", node_opts, NULL)) != -1) {
		unsigned int bit = c >= OPT_RAM ? 1U << (c - OPT_RAM) : 1U << 31;

		if (c == 'h') {
			print_help(help);
			return -1;	/* done, exit 0 */
		}
		if (c == '?' || c == ':')
			return opt_error(cmd, c, argv);
		if (!(allowed & bit)) {
			const struct option *o = node_opts;

			while (o->name && o->val != c)
				o++;
			return usage_error(cmd, "option '--%s' does not apply here",
					   o->name ? o->name : "?");
		}
		ret = parse_opt(cmd, c, optarg, a);
		if (ret)
			return ret;
	}
	return parse_name(cmd, argc, argv, need_name, a);
}

/*
 * The connection limits, tier and tenant settings of a NODE_NEW or
 * NODE_SET.
 */
static void put_limits(struct nlmsghdr *nlh, const struct node_args *a)
{
	if (a->has_first_req)
		mnl_attr_put_u32(nlh, DFKV_A_NODE_FIRST_REQUEST_MS, a->first_req);
	if (a->has_idle)
		mnl_attr_put_u32(nlh, DFKV_A_NODE_IDLE_MS, a->idle);
	if (a->has_max_conns)
		mnl_attr_put_u32(nlh, DFKV_A_NODE_MAX_CONNS, a->max_conns);
	if (a->has_frame)
		mnl_attr_put_u32(nlh, DFKV_A_NODE_FRAME_MS, a->frame);
	if (a->has_min_rate)
		mnl_attr_put_u32(nlh, DFKV_A_NODE_MIN_RATE, a->min_rate);
	if (a->has_policy)
		mnl_attr_put_u32(nlh, DFKV_A_NODE_TIER_POLICY, a->policy);
	if (a->has_ack)
		mnl_attr_put_u32(nlh, DFKV_A_NODE_TIER_ACK, a->ack);
	if (a->has_dirty)
		mnl_attr_put_u32(nlh, DFKV_A_NODE_DIRTY_PCT, a->dirty);
	if (a->has_flush_workers)
		mnl_attr_put_u32(nlh, DFKV_A_NODE_FLUSH_WORKERS, a->flush_workers);
	if (a->has_numa)
		mnl_attr_put_u32(nlh, DFKV_A_NODE_NUMA, a->numa);
	if (a->has_auth)
		mnl_attr_put_u32(nlh, DFKV_A_NODE_AUTH, a->auth);
	if (a->has_tenant_quota)
		mnl_attr_put_u64(nlh, DFKV_A_NODE_TENANT_QUOTA, a->tenant_quota);
}

/* Send a mutation and report the kernel's verdict. */
static int mutate(struct nlmsghdr *nlh, struct dfkv_genl *g, const char *cmd,
		  const char *name)
{
	int err = dfkv_genl_talk(g, nlh, NULL, NULL);

	if (err)
		return nl_error_req(g, err, nlh, "%s %s", cmd, name);
	return EXIT_OK;
}

static int node_add(int argc, char *argv[])
{
	char buf[MNL_SOCKET_BUFFER_SIZE];
	struct node_args a;
	struct dfkv_genl g;
	struct nlmsghdr *nlh;
	int ret;

	ret = parse(CMD_ADD, argc, argv,
		    ALLOW(OPT_RAM) | ALLOW(OPT_MAX_VALUE) | ALLOW(OPT_NO_EVICT) | ALLOW(OPT_DISK_ONLY) |
		    LIMIT_OPTS | TIER_OPTS | TENANT_OPTS | ALLOW(OPT_NUMA) |
		    ALLOW(OPT_PHASE), true, &a);
	if (ret)
		return ret < 0 ? EXIT_OK : ret;
	if (!a.has_ram)
		return usage_error(CMD_ADD, "--ram SIZE is required (the node's RAM budget)");
	ret = ctl_open(&g);
	if (ret)
		return ret;
	nlh = dfkv_genl_msg(&g, buf, DFKV_CMD_NODE_NEW, 0);
	mnl_attr_put_strz(nlh, DFKV_A_NODE_NAME, a.name);
	mnl_attr_put_u64(nlh, DFKV_A_NODE_RAM_BYTES, a.ram);
	if (a.has_max_value)
		mnl_attr_put_u64(nlh, DFKV_A_NODE_MAX_VALUE, a.max_value);
	mnl_attr_put_u32(nlh, DFKV_A_NODE_FLAGS,
			 (a.no_evict ? 0 : DFKV_NODE_F_EVICT) |
			 (a.disk_only ? DFKV_NODE_F_DISK_ONLY : 0));
	put_limits(nlh, &a);
	if (a.has_phase)
		mnl_attr_put_u32(nlh, DFKV_A_NODE_PHASE, a.phase);
	ret = mutate(nlh, &g, CMD_ADD, a.name);
	dfkv_genl_close(&g);
	return ret;
}

static int node_del(int argc, char *argv[])
{
	char buf[MNL_SOCKET_BUFFER_SIZE];
	struct node_args a;
	struct dfkv_genl g;
	struct nlmsghdr *nlh;
	int ret;

	ret = parse(CMD_DEL, argc, argv, 0, true, &a);
	if (ret)
		return ret < 0 ? EXIT_OK : ret;
	ret = ctl_open(&g);
	if (ret)
		return ret;
	nlh = dfkv_genl_msg(&g, buf, DFKV_CMD_NODE_DEL, 0);
	mnl_attr_put_strz(nlh, DFKV_A_NODE_NAME, a.name);
	ret = mutate(nlh, &g, CMD_DEL, a.name);
	dfkv_genl_close(&g);
	return ret;
}

static int node_set(int argc, char *argv[])
{
	char buf[MNL_SOCKET_BUFFER_SIZE];
	struct node_info ni;
	struct node_args a;
	struct dfkv_genl g;
	struct nlmsghdr *nlh;
	uint32_t flags = 0;
	int ret;

	ret = parse(CMD_SET, argc, argv,
		    ALLOW(OPT_MAX_VALUE) | ALLOW(OPT_EVICT) | ALLOW(OPT_STATE) |
		    LIMIT_OPTS | TIER_OPTS | TENANT_OPTS | ALLOW(OPT_PHASE),
		    true, &a);
	if (ret)
		return ret < 0 ? EXIT_OK : ret;
	if (!a.has_max_value && !a.has_evict && !a.has_state && !a.has_phase &&
	    !a.has_first_req && !a.has_idle && !a.has_max_conns &&
	    !a.has_frame && !a.has_min_rate &&
	    !a.has_policy && !a.has_ack && !a.has_dirty && !a.has_flush_workers &&
	    !a.has_auth && !a.has_tenant_quota)
		return usage_error(CMD_SET, "nothing to set (--max-value, --evict, --state, --phase, --first-request-ms, --idle-ms, --max-conns, --frame-ms, --min-rate, --policy, --ack, --dirty, --flush-workers, --auth or --tenant-quota)");
	ret = ctl_open(&g);
	if (ret)
		return ret;
	if (a.has_evict) {
		/* Flags are set as a whole: keep the ones we do not change. */
		ret = node_fetch(&g, a.name, &ni);
		if (ret)
			goto out;
		flags = ni.flags & ~(uint32_t)DFKV_NODE_F_EVICT;	/* disk-only kept */
		if (a.evict)
			flags |= DFKV_NODE_F_EVICT;
	}
	nlh = dfkv_genl_msg(&g, buf, DFKV_CMD_NODE_SET, 0);
	mnl_attr_put_strz(nlh, DFKV_A_NODE_NAME, a.name);
	if (a.has_max_value)
		mnl_attr_put_u64(nlh, DFKV_A_NODE_MAX_VALUE, a.max_value);
	if (a.has_evict)
		mnl_attr_put_u32(nlh, DFKV_A_NODE_FLAGS, flags);
	if (a.has_state)
		mnl_attr_put_u32(nlh, DFKV_A_NODE_STATE, a.state);
	if (a.has_phase)
		mnl_attr_put_u32(nlh, DFKV_A_NODE_PHASE, a.phase);
	put_limits(nlh, &a);
	ret = mutate(nlh, &g, CMD_SET, a.name);
out:
	dfkv_genl_close(&g);
	return ret;
}

static int node_show(int argc, char *argv[])
{
	struct node_info ni;
	struct node_args a;
	struct dfkv_genl g;
	int ret;

	ret = parse(CMD_SHOW, argc, argv, ALLOW_BYTES, true, &a);
	if (ret)
		return ret < 0 ? EXIT_OK : ret;
	ret = ctl_open(&g);
	if (ret)
		return ret;
	ret = node_fetch(&g, a.name, &ni);
	dfkv_genl_close(&g);
	if (!ret)
		print_node_report(stdout, &ni, a.raw);
	return ret;
}

static int node_list(int argc, char *argv[])
{
	struct node_info *v = NULL;
	struct node_args a;
	struct dfkv_genl g;
	char r[32], u[32], m[32], q[32];
	size_t n = 0, i;
	int ret;

	ret = parse(CMD_LIST, argc, argv, ALLOW_BYTES, false, &a);
	if (ret)
		return ret < 0 ? EXIT_OK : ret;
	ret = ctl_open(&g);
	if (ret)
		return ret;
	ret = node_fetch_all(&g, &v, &n);
	dfkv_genl_close(&g);
	if (ret)
		return ret;
	if (n)
		printf("%-31s %-9s %-5s %12s %12s %10s %12s %-8s %12s  %s\n",
		       "NAME", "STATE", "EVICT", "RAM", "USED", "OBJECTS",
		       "MAX-VALUE", "AUTH", "TENANT-QUOTA", "LISTENERS");
	for (i = 0; i < n; i++) {
		const struct node_info *ni = &v[i];
		char ls[256] = "-", one[96];
		size_t j, off = 0;

		for (j = 0; j < ni->n_listeners && off < sizeof(ls); j++)
			off += (size_t)snprintf(ls + off, sizeof(ls) - off,
						"%s%s", j ? "," : "",
						listener_str(&ni->listeners[j],
							     one, sizeof(one)));
		printf("%-31s %-9s %-5s %12s %12s %10llu %12s %-8s %12s  %s\n",
		       ni->name, state_name(ni->state),
		       ni->flags & DFKV_NODE_F_EVICT ? "on" : "off",
		       fmt_bytes(ni->ram_bytes, a.raw, r, sizeof(r)),
		       fmt_bytes(ni->stat[DFKV_STAT_USED_BYTES], a.raw, u,
				 sizeof(u)),
		       (unsigned long long)ni->stat[DFKV_STAT_OBJECTS],
		       fmt_bytes(ni->max_value, a.raw, m, sizeof(m)),
		       ni->has_auth ? auth_name(ni->auth) : "-",
		       ni->has_tenant_quota ?
		       fmt_quota(ni->tenant_quota, a.raw, q, sizeof(q)) : "-", ls);
	}
	free(v);
	return EXIT_OK;
}

static const struct ctl_action actions[] = {
	{ "add", node_add },
	{ "del", node_del },
	{ "set", node_set },
	{ "show", node_show },
	{ "list", node_list },
};

int node_main(int argc, char *argv[])
{
	return run_action("node", help, actions,
			  sizeof(actions) / sizeof(actions[0]),
			  "add, del, set, show or list", argc, argv);
}
