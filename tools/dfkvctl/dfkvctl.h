/* SPDX-License-Identifier: GPL-2.0 */
/*
 * dfkvctl: administration tool for dfkv.ko.  One file per subcommand
 * (version.c, node.c, tenant.c, listener.c, disk.c, stats.c, monitor.c,
 * put.c, get.c, exist.c, rm.c, probe.c, key.c, apply.c); main.c holds the
 * subcommand table, json.c the JSON forms of nodes and stats.  This
 * header has what they share: exit codes, argument parsing, the netlink
 * connection, node and disk attribute decoding, the human reports and the
 * JSON helpers, and the /dev/dfkv binding.
 */
#ifndef DFKVCTL_H
#define DFKVCTL_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <linux/dfkv.h>

#include "genl.h"
#include "hist.h"

#ifndef DFKV_VERSION
#define DFKV_VERSION "0.0.0"
#endif

/* Exit statuses, documented in every man page. */
enum {
	EXIT_OK = 0,
	EXIT_NOTFOUND = 1,	/* a miss, or no such node */
	EXIT_USAGE = 2,		/* bad command line */
	EXIT_FAIL = 3,		/* anything else: kernel error, bad status */
};

extern const char *prog;	/* "dfkvctl", defined in util.c */

/* ------------------------------------------------------------ subcommands */

int version_main(int argc, char *argv[]);
int node_main(int argc, char *argv[]);
int tenant_main(int argc, char *argv[]);
int stats_main(int argc, char *argv[]);
int monitor_main(int argc, char *argv[]);
int put_main(int argc, char *argv[]);
int get_main(int argc, char *argv[]);
int exist_main(int argc, char *argv[]);
int rm_main(int argc, char *argv[]);
int probe_main(int argc, char *argv[]);
int key_main(int argc, char *argv[]);
/* members.c: the mdsd directory */
int members_main(int argc, char *argv[]);
int clients_main(int argc, char *argv[]);
int groups_main(int argc, char *argv[]);
int listener_main(int argc, char *argv[]);
int disk_main(int argc, char *argv[]);
/* apply.c, apply_conf.c: nodes from a configuration file */
int apply_main(int argc, char *argv[]);

/* -------------------------------------------------------------- messages */

void err_msg(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Print "usage" text to stderr and return EXIT_USAGE. */
int usage_error(const char *cmd, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* Print a man page to stdout; returns EXIT_OK. */
int print_help(const char *text);

/* A subcommand's actions ("node add", "listener del", ...). */
struct ctl_action {
	const char *name;
	int (*fn)(int argc, char *argv[]);
};

/*
 * Run the action argv[1] names (or the help page); names lists the
 * actions for error messages, e.g. "add, del or list".
 */
int run_action(const char *cmd, const char *help,
	       const struct ctl_action *actions, size_t n, const char *names,
	       int argc, char *argv[]);
/* True when argv[1..] asks for help (-h / --help) before anything else. */
bool wants_help(int argc, char *argv[]);

/* ------------------------------------------------------------- parsing */

/*
 * Report a getopt_long failure (optstring starting with ':', opterr = 0):
 * c is what getopt_long returned ('?' or ':').  Returns EXIT_USAGE.
 */
int opt_error(const char *cmd, int c, char *argv[]);

/* "123", "4K", "64M", "1G", "2T" (binary; "KiB", "k", "MB"... too). */
int parse_size(const char *s, uint64_t *out);
int parse_u64(const char *s, uint64_t *out);
/* Whole-string hex into exactly n bytes. */
int parse_hex(const char *s, size_t n_hex, uint8_t *out);
/* Arbitrary-length hex string into a malloc()ed buffer. */
int parse_hex_alloc(const char *s, uint8_t **out, size_t *len);
/* Human form of a byte count: "1.50 MiB" (or exact with raw). */
const char *fmt_bytes(uint64_t v, bool raw, char *buf, size_t len);

/* ------------------------------------------------------------- netlink */

/*
 * Open the dfkv family; prints a clear message (module not loaded...) and
 * returns an exit status on failure, EXIT_OK on success.
 */
int ctl_open(struct dfkv_genl *g);
/*
 * Report a failed netlink request: "dfkvctl: WHAT: <extack text> (<errno>)".
 * Returns the exit status (EXIT_NOTFOUND for -ENOENT, EXIT_FAIL otherwise).
 */
int nl_error(struct dfkv_genl *g, int err, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* The same, also naming the option behind the attribute the kernel
 * pointed at in req (extended ack offset). */
int nl_error_req(struct dfkv_genl *g, int err, const struct nlmsghdr *req,
		 const char *fmt, ...) __attribute__((format(printf, 4, 5)));

#define MAX_STATS_OPS	(__DFKV_OP_MAX * __DFKV_STATUS_MAX)

/* Most listeners of one node that dfkvctl decodes. */
#define MAX_LISTENERS	32
#define MAX_NUMA_NODES	64	/* NUMA nodes with arena pages, kept per node */
/* "addr" of a listener: an IPv6 literal, maybe with "%ifname". */
#define LISTEN_ADDR_MAX	64

struct listener_info {
	char addr[LISTEN_ADDR_MAX];
	uint16_t port;
	uint32_t transport;	/* enum dfkv_listener_kind */
};

/* The DFKV_A_DISK_* attributes of a DISK_GET reply or a DISK_EVENT. */
struct disk_attrs {
	char name[DFKV_DISK_NAME_MAX];
	char path[DFKV_DISK_PATH_MAX];
	char reason[128];
	uint64_t dev_bytes, extent_bytes, epoch;
	uint32_t state;			/* enum dfkv_disk_state */
	bool has_name, has_path, has_state, has_dev_bytes, has_extent,
	     has_epoch;
};

/*
 * A node, tenant or disk as decoded from a DFKV_CMD_NODE_GET, NODE_EVENT,
 * TENANT_GET, DISK_GET or DISK_EVENT reply: name is the node's name, disk
 * holds the disk attributes, stat[] the stats nest of whichever it is.
 */
struct node_info {
	char name[DFKV_NODE_NAME_MAX];
	uint64_t ram_bytes, max_value, ctime_ns, extent_bytes, tenant;
	uint64_t tenant_quota;		/* node: the default tenant quota */
	uint64_t quota;			/* tenant: the quota in force */
	uint32_t auth;			/* node: enum dfkv_auth_mode */
	uint32_t tenant_flags;		/* tenant: enum dfkv_tenant_flags */
	uint32_t tenant_secrets;	/* tenant: secrets held */
	uint32_t flags, state, event;
	uint32_t phase;			/* node: enum dfkv_node_phase */
	uint32_t first_request_ms, idle_ms, max_conns, frame_ms, min_rate;
	uint32_t tier_policy, tier_ack, dirty_pct, flush_workers, numa;
	bool has_ram, has_max_value, has_flags, has_state, has_ctime,
	     has_extent, has_tenant, has_stats;
	bool has_first_request_ms, has_idle_ms, has_max_conns, has_listeners;
	bool has_frame_ms, has_min_rate;
	bool has_tier_policy, has_tier_ack, has_dirty_pct, has_flush_workers,
	     has_numa;
	bool has_tenant_quota, has_quota, has_auth, has_tenant_flags;
	bool has_tenant_secrets, has_phase;
	struct disk_attrs disk;
	struct listener_info listeners[MAX_LISTENERS];
	size_t n_listeners;
	uint64_t stat[DFKV_STAT_MAX + 1];
	bool has_stat[DFKV_STAT_MAX + 1];
	uint64_t ops[__DFKV_OP_MAX][__DFKV_STATUS_MAX];
	struct { uint32_t node; uint64_t pages; } numa_pages[MAX_NUMA_NODES];
	size_t n_numa_pages;
	struct dfkv_latency latency;	/* node: its latency histograms */
};

/* Decode one reply message into *ni (zeroed first). */
void node_info_parse(const struct nlmsghdr *nlh, struct node_info *ni);

/* Replies of a dump (nodes or tenants) collected into an array. */
struct info_list {
	struct node_info *v;
	size_t n, cap;
	bool oom;
};

/* dfkv_genl_talk() callback appending each reply to a struct info_list. */
int info_list_cb(const struct nlmsghdr *nlh, void *data);
/*
 * A dump into a struct info_list, started over while the objects change
 * under it (dfkv_genl_dump()).
 */
int info_list_dump(struct dfkv_genl *g, struct nlmsghdr *nlh,
		   struct info_list *l);
/* dfkv_genl_talk() callback decoding the one reply into a node_info. */
int info_one_cb(const struct nlmsghdr *nlh, void *data);

/* Fetch one node (DFKV_CMD_NODE_GET doit); returns an exit status. */
int node_fetch(struct dfkv_genl *g, const char *name, struct node_info *ni);

/*
 * Fetch every node of the netns (dump) into a malloc()ed array; returns
 * an exit status.
 */
int node_fetch_all(struct dfkv_genl *g, struct node_info **out, size_t *n);

const char *state_name(uint32_t state);
const char *phase_name(uint32_t phase);	/* "up", "rebuilding" */
int state_parse(const char *s, uint32_t *out);
int phase_parse(const char *s, uint32_t *out);
const char *op_name(uint32_t op);
const char *status_name(uint32_t status);	/* "ok", "not_found"... */
const char *event_name(uint32_t event);
const char *transport_name(uint32_t transport);	/* "tcp", "rdma" */
const char *disk_state_name(uint32_t state);	/* "up", "failed" */
const char *tier_policy_name(uint32_t policy);	/* "writeback", ... */
int tier_policy_parse(const char *s, uint32_t *out);
const char *tier_ack_name(uint32_t ack);		/* "ram", "disk" */
int tier_ack_parse(const char *s, uint32_t *out);
const char *auth_name(uint32_t mode);		/* "off", "required" */
int auth_parse(const char *s, uint32_t *out);
/* A quota: "unlimited" for 0, else as fmt_bytes. */
const char *fmt_quota(uint64_t quota, bool raw, char *buf, size_t len);
/* "interleave" or the NUMA node id. */
const char *numa_str(uint32_t numa, char *buf, size_t len);
/* "ADDR:PORT", IPv6 addresses in brackets. */
const char *listener_str(const struct listener_info *l, char *buf, size_t len);
/* The table of stats in a human-readable block (node show, stats). */
void print_node_report(FILE *f, const struct node_info *ni, bool raw);
/* One disk (disk show). */
void print_disk_report(FILE *f, const struct node_info *ni, bool raw);
/* The capacity, slots and objects lines of a report (node or disk). */
void print_usage(FILE *f, const struct node_info *ni, bool raw, bool tenants);
/* "12.5%": part of whole, "-" when whole is 0. */
void pct(char *buf, size_t len, uint64_t part, uint64_t whole);

/*
 * The tenants of node (the DFKV_CMD_TENANT_GET dump) as a table or JSON:
 * 'dfkvctl tenant list' and 'dfkvctl stats NODE --tenants'.  Returns an
 * exit status.
 */
int tenant_list_show(struct dfkv_genl *g, const char *node, bool json,
		     bool raw);

/* ---------------------------------------------------------- JSON (json.c) */

struct json_object;
/* Every counter of ni->stat[] present, by name, plus derived figures. */
struct json_object *stats_json(const struct node_info *ni);
/* A node: its configuration, listeners and stats_json() (stats --json). */
struct json_object *node_json(const struct node_info *ni);
/* A node's name and latency histograms (stats --latency --json). */
struct json_object *node_latency_json(const struct node_info *ni);
/* Pretty-print o on stdout and drop it. */
void json_print(struct json_object *o);

/* ------------------------------------------------------------ data path */

enum key_kind {
	KEY_POSITIONAL,	/* TENANTHEX:IDHEX, or a key string with --ns */
	KEY_STRING,	/* --key STRING (needs --ns) */
	KEY_HEX,	/* --key-hex HEX (needs --ns) */
};

/* Keys given on the command line of put/get/exist/rm/probe. */
struct key_args {
	const uint8_t *ns;	/* --ns / --ns-hex, NULL for hex keys */
	size_t ns_len;
	uint8_t *ns_alloc;
	const char *keys[DFKV_KEYS_MAX];	/* strings as given */
	uint8_t kind[DFKV_KEYS_MAX];		/* enum key_kind */
	size_t n;
};

/* The KEYS section of the data commands' man pages. */
#define KEY_HELP							\
	"KEYS\n"							\
	"    A key is given in one of two ways:\n"				\
	"\n"								\
	"    TENANTHEX:IDHEX\n"						\
	"        The 24-byte block key the node sees: the tenant hash as 16\n"	\
	"        hex digits, a colon, the object id as 32 hex digits.\n"	\
	"\n"								\
	"    --ns NAMESPACE KEY, --ns NAMESPACE --key KEY\n"		\
	"        A namespace and an object key (strings), turned into a block\n" \
	"        key by libdfkv's identity rules (SPEC.md 1.3): object id =\n"	\
	"        SHA-256 of both, tenant hash from the namespace's tenant field\n" \
	"        (or the whole namespace when it is not canonical).  With --ns,\n" \
	"        every positional KEY is a key string.  --ns-hex and --key-hex\n" \
	"        take binary namespaces and keys (e.g. canonical descriptors)\n"	\
	"        as hex.  'dfkvctl key' prints the block key they give.\n"	\
	"\n"

/* Options shared by the data commands (for getopt_long tables). */
#define KEY_OPTIONS							\
	{ "ns", required_argument, NULL, 'N' },				\
	{ "ns-hex", required_argument, NULL, 'X' },			\
	{ "key", required_argument, NULL, 'k' },			\
	{ "key-hex", required_argument, NULL, 'K' }

/* Handle one of the KEY_OPTIONS; returns 0 or an exit status. */
int key_args_opt(struct key_args *ka, const char *cmd, int opt,
		 const char *arg);
int key_args_add(struct key_args *ka, const char *cmd, const char *arg);
/* Turn the i-th key into a block key; returns 0 or an exit status. */
int key_args_resolve(const struct key_args *ka, const char *cmd, size_t i,
		     struct dfkv_key *out);
void key_args_free(struct key_args *ka);
/*
 * Parse the options of a command that takes only key options and --help;
 * -1 when the caller goes on (positional args from optind), else the exit
 * status to return (help printed, or a usage error).
 */
int key_args_getopt(struct key_args *ka, const char *cmd, const char *help,
		    int argc, char *argv[]);
/*
 * After getopt: the first positional argument is NODE, the rest are keys.
 * Exactly one key unless multi.  Returns 0 or an exit status.
 */
int data_args_finish(const char *cmd, int argc, char *argv[],
		     struct key_args *ka, const char **node, bool multi);
/* "0123456789abcdef:00112233445566778899aabbccddeeff" */
#define KEY_STR_LEN	(16 + 1 + 32 + 1)
char *key_str(const struct dfkv_key *k, char *buf);

/* Open /dev/dfkv and bind it to node; returns fd or -exit status. */
int dev_bind(const char *node);
/* exist/rm: one key, one ioctl; print_len prints stored_len on success. */
int key_op_main(const char *cmd, const char *help, unsigned long ioc,
		bool print_len, int argc, char *argv[]);
/*
 * Report an ioctl result: an errno (rc < 0) or a protocol status.
 * Returns the exit status (0 for OK).
 */
int op_result(const char *what, int rc, uint32_t status);

#endif /* DFKVCTL_H */
