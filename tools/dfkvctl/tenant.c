// SPDX-License-Identifier: GPL-2.0
/*
 * dfkvctl tenant: register, change, unregister and list the tenants of a
 * node (DFKV_CMD_TENANT_SET, _DEL, _GET and its dump; SPEC.md 5, 6, 9):
 * tenant hashes, secrets (write-only: read from a file or generated into
 * a new one, never printed), quotas, and the per-tenant counters that
 * 'dfkvctl stats NODE --tenants' shows too.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>
#include <json-c/json.h>

#include "dfkv.h"
#include "token.h"
#include "dfkvctl.h"

static const char help[] =
	"NAME\n"
	"    dfkvctl tenant - register tenants' secrets and quotas on a node\n"
	"\n"
	"SYNOPSIS\n"
	"    dfkvctl tenant add NODE TENANT [--secret-file F | --generate-secret F]\n"
	"                                   [--quota SIZE]\n"
	"    dfkvctl tenant set NODE TENANT [--secret-file F | --generate-secret F]\n"
	"                                   [--add-secret F] [--drop-secret F]\n"
	"                                   [--quota SIZE]\n"
	"    dfkvctl tenant del NODE TENANT\n"
	"    dfkvctl tenant list NODE [--json] [--bytes]\n"
	"    TENANT: --tenant HEX | --ns NAMESPACE\n"
	"\n"
	"DESCRIPTION\n"
	"    A tenant is named by its tenant hash, the first half of every block\n"
	"    key (SPEC.md 1.3).  Registering it on a node gives it a secret (two\n"
	"    during a rotation) and,\n"
	"    optionally, a quota of its own.  A client that holds the secret\n"
	"    (libdfkv's tenant_secret option) authenticates every connection for\n"
	"    the tenant; on a node with --auth required (see dfkvctl node) only\n"
	"    such clients can read or write the tenant's blocks.  The secret is\n"
	"    write-only: no command prints it back.\n"
	"\n"
	"    add   Register a tenant; refused when it is registered already.\n"
	"    set   Change what is given of a tenant (register it if need be).\n"
	"          --secret-file makes F the tenant's only secret: connections\n"
	"          authorized with another one lose that at once.  To rotate\n"
	"          without downtime: --add-secret NEW on every node of the\n"
	"          group, hand NEW to the engines and let them reconnect, then\n"
	"          --drop-secret OLD (Documentation/tenants.md).\n"
	"    del   Unregister a tenant: its secret is forgotten, connections\n"
	"          lose what they were granted for it; its blocks stay.\n"
	"    list  One line per tenant of NODE, registered or holding blocks:\n"
	"          its hash, whether it is registered and has a secret (yes or\n"
	"          no, nothing else), the quota in force (its own or the node's\n"
	"          default, see --tenant-quota of dfkvctl node), the bytes\n"
	"          charged to it (committed blocks and PUTs being received),\n"
	"          objects, bytes stored, in and out, hits, misses and hit\n"
	"          ratio, PUTs refused over its quota, refused AUTHs and\n"
	"          requests answered FORBIDDEN.\n"
	"\n"
	"    Changing tenants and listing them need CAP_NET_ADMIN.\n"
	"\n"
	"OPTIONS\n"
	"    --tenant HEX        the tenant hash, 16 hex digits (as in\n"
	"                        TENANTHEX:IDHEX keys and in 'tenant list')\n"
	"    --ns NAMESPACE      the tenant of a namespace, computed as libdfkv\n"
	"                        does (the tenant field of a canonical\n"
	"                        namespace, else the whole string)\n"
	"    --secret-file F     the secret: a file holding exactly 64 hex digits\n"
	"                        (and one optional newline), mode 0600 or 0400\n"
	"    --generate-secret F write a new random secret to F, a new file\n"
	"                        (mode 0600; an existing F is never overwritten),\n"
	"                        and register it; hand F to the tenant's clients\n"
	"    --add-secret F      set: add the secret of F (as --secret-file) as the\n"
	"                        tenant's second one, for a rotation; refused when\n"
	"                        it holds two already\n"
	"    --drop-secret F     set: drop the secret of F; the connections and\n"
	"                        files authorized with it lose that at once;\n"
	"                        refused for the tenant's only secret\n"
	"    --quota SIZE        committed bytes the tenant may hold on the node\n"
	"                        (0 = unlimited); a PUT of a new key over it gets\n"
	"                        QUOTA_EXCEEDED; lowering it below the usage\n"
	"                        evicts nothing, new PUTs are refused\n"
	"    -j, --json          list: print {\"node\", \"tenants\": [{\"tenant\",\n"
	"                        \"registered\", \"has_secret\", \"secrets\" (how\n"
	"                        many it holds), \"own_quota\",\n"
	"                        \"quota_bytes\" (0 = unlimited), and every counter\n"
	"                        by name: \"charged_bytes\", \"objects\",\n"
	"                        \"used_bytes\", \"hits\", \"quota_rejections\",\n"
	"                        \"auth_ok\", \"auth_failures\", \"forbidden\",\n"
	"                        ...}]}\n"
	"    -b, --bytes         list: exact byte counts instead of KiB/MiB\n"
	"\n"
	"    SIZE is a number of bytes with an optional binary suffix (K, M, G,\n"
	"    T).\n"
	"\n"
	"EXIT STATUS\n"
	"    0 success; 1 no such node or tenant; 2 usage error; 3 the kernel\n"
	"    refused, the tenant is registered already (add), or a secret file\n"
	"    is unusable.\n"
	"\n"
	"EXAMPLES\n"
	"    dfkvctl tenant add kv0 --ns acme --generate-secret /etc/dfkv/acme.secret\n"
	"    dfkvctl tenant set kv0 --tenant 0123456789abcdef --quota 10G\n"
	"    dfkvctl tenant set kv0 --ns acme --add-secret new.secret\n"
	"    dfkvctl tenant set kv0 --ns acme --drop-secret old.secret\n"
	"    dfkvctl tenant list kv0\n"
	"    dfkvctl tenant del kv0 --ns acme\n";

#define CMD_ADD		"tenant add"
#define CMD_SET		"tenant set"
#define CMD_DEL		"tenant del"
#define CMD_LIST	"tenant list"

enum { OPT_TENANT = 256, OPT_NS, OPT_SECRET_FILE, OPT_GENERATE, OPT_QUOTA,
       OPT_JSON, OPT_BYTES, OPT_ADD_SECRET, OPT_DROP_SECRET };

static const struct option tenant_opts[] = {
	{ "tenant", required_argument, NULL, OPT_TENANT },
	{ "ns", required_argument, NULL, OPT_NS },
	{ "secret-file", required_argument, NULL, OPT_SECRET_FILE },
	{ "generate-secret", required_argument, NULL, OPT_GENERATE },
	{ "add-secret", required_argument, NULL, OPT_ADD_SECRET },
	{ "drop-secret", required_argument, NULL, OPT_DROP_SECRET },
	{ "quota", required_argument, NULL, OPT_QUOTA },
	{ "json", no_argument, NULL, OPT_JSON },
	{ "bytes", no_argument, NULL, OPT_BYTES },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 }
};

#define ALLOW(o)	(1U << ((o) - OPT_TENANT))
#define NAME_OPTS	(ALLOW(OPT_TENANT) | ALLOW(OPT_NS))
#define ADD_OPTS	(NAME_OPTS | ALLOW(OPT_SECRET_FILE) | \
			 ALLOW(OPT_GENERATE) | ALLOW(OPT_QUOTA))
#define SET_OPTS	(ADD_OPTS | ALLOW(OPT_ADD_SECRET) | \
			 ALLOW(OPT_DROP_SECRET))

/* What the options of one invocation asked for. */
struct tenant_args {
	const char *node;
	uint64_t tenant, quota;
	const char *secret_file, *generate, *add_secret, *drop_secret;
	bool has_tenant, has_quota, json, raw;
};

/* --tenant HEX: 16 hex digits, the hash as keys render it. */
static int tenant_hex(const char *cmd, const char *s, uint64_t *out)
{
	uint8_t b[8];

	if (parse_hex(s, 16, b))
		return usage_error(cmd, "bad --tenant '%s' (16 hex digits)", s);
	*out = 0;
	for (int i = 0; i < 8; i++)
		*out = *out << 8 | b[i];
	return 0;
}

/*
 * Parse the options (allowed: OPT_* bits) and the positional NODE; the
 * actions that change a tenant need one (name).  Returns 0, -1 after the
 * help page, or an exit status.
 */
static int parse(const char *cmd, int argc, char *argv[], unsigned int allowed,
		 bool name, struct tenant_args *a)
{
	int c, ret = 0;

	memset(a, 0, sizeof(*a));
	optind = 0;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":jbh", tenant_opts, NULL)) != -1) {
		if (c == 'h') {
			print_help(help);
			return -1;
		}
		if (c == '?' || c == ':')
			return opt_error(cmd, c, argv);
		if (c == 'j')
			c = OPT_JSON;
		if (c == 'b')
			c = OPT_BYTES;
		if (!(allowed & ALLOW(c)))
			return usage_error(cmd, "option '--%s' does not apply here",
					   tenant_opts[c - OPT_TENANT].name);
		if ((c == OPT_TENANT || c == OPT_NS) && a->has_tenant)
			return usage_error(cmd, "give the tenant once (--tenant HEX or --ns NAMESPACE)");
		switch (c) {
		case OPT_TENANT:
			ret = tenant_hex(cmd, optarg, &a->tenant);
			a->has_tenant = true;
			break;
		case OPT_NS:
			if (!*optarg ||
			    dfkv_tenant_hash(optarg, strlen(optarg), &a->tenant))
				return usage_error(cmd, "bad --ns '%s'", optarg);
			a->has_tenant = true;
			break;
		case OPT_SECRET_FILE:
			a->secret_file = optarg;
			break;
		case OPT_GENERATE:
			a->generate = optarg;
			break;
		case OPT_ADD_SECRET:
			a->add_secret = optarg;
			break;
		case OPT_DROP_SECRET:
			a->drop_secret = optarg;
			break;
		case OPT_QUOTA:
			if (parse_size(optarg, &a->quota))
				return usage_error(cmd, "bad --quota '%s'", optarg);
			a->has_quota = true;
			break;
		case OPT_JSON:
			a->json = true;
			break;
		case OPT_BYTES:
			a->raw = true;
			break;
		}
		if (ret)
			return ret;
	}
	if (optind < argc)
		a->node = argv[optind++];
	if (optind < argc)
		return usage_error(cmd, "unexpected argument '%s'", argv[optind]);
	if (!a->node)
		return usage_error(cmd, "missing NODE");
	if (strlen(a->node) >= DFKV_NODE_NAME_MAX)
		return usage_error(cmd, "node name '%s' is too long", a->node);
	if (name && !a->has_tenant)
		return usage_error(cmd, "missing --tenant HEX or --ns NAMESPACE");
	if (a->secret_file && a->generate)
		return usage_error(cmd, "--secret-file and --generate-secret exclude each other");
	if ((a->secret_file || a->generate) && (a->add_secret || a->drop_secret))
		return usage_error(cmd, "--secret-file and --generate-secret replace every secret: they exclude --add-secret and --drop-secret");
	return 0;
}

/* A request naming the node and the tenant. */
static struct nlmsghdr *tenant_msg(struct dfkv_genl *g, void *buf, uint8_t cmd,
				   const struct tenant_args *a)
{
	struct nlmsghdr *nlh = dfkv_genl_msg(g, buf, cmd, 0);

	mnl_attr_put_strz(nlh, DFKV_A_NODE_NAME, a->node);
	mnl_attr_put_u64(nlh, DFKV_A_TENANT_HASH, a->tenant);
	return nlh;
}

/* add: EXIT_OK unless the tenant is registered already. */
static int check_new(struct dfkv_genl *g, const struct tenant_args *a)
{
	char buf[MNL_SOCKET_BUFFER_SIZE];
	struct node_info ni = { 0 };
	int err = dfkv_genl_talk(g, tenant_msg(g, buf, DFKV_CMD_TENANT_GET, a),
				 info_one_cb, &ni);

	/* unknown (or no such node: then TENANT_SET says so) */
	if (err == -ENOENT)
		return EXIT_OK;
	if (err)
		return nl_error(g, err, "tenant %016llx on %s",
				(unsigned long long)a->tenant, a->node);
	if (ni.tenant_flags & DFKV_TENANT_F_REGISTERED) {
		err_msg("%s: tenant %016llx is already registered on %s (change it with 'dfkvctl tenant set')",
			CMD_ADD, (unsigned long long)a->tenant, a->node);
		return EXIT_FAIL;
	}
	return EXIT_OK;
}

/*
 * Write a fresh secret to path, a new file of mode 0600, as 64 hex digits
 * and a newline.  Returns an exit status.
 */
static int secret_generate(const char *path, uint8_t secret[32])
{
	static const char digits[] = "0123456789abcdef";
	char hex[65];
	int fd, ret = EXIT_OK;

	if (getrandom(secret, 32, 0) != 32) {
		err_msg("%s: getrandom: %s", CMD_ADD, strerror(errno));
		return EXIT_FAIL;
	}
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
		  0600);
	if (fd < 0) {
		err_msg("--generate-secret %s: %s%s", path, strerror(errno),
			errno == EEXIST ? " (an existing file is never overwritten)" : "");
		return EXIT_FAIL;
	}
	for (int i = 0; i < 32; i++) {
		hex[2 * i] = digits[secret[i] >> 4];
		hex[2 * i + 1] = digits[secret[i] & 15];
	}
	hex[64] = '\n';
	if (fchmod(fd, 0600) || write(fd, hex, sizeof(hex)) != sizeof(hex) ||
	    fsync(fd)) {
		err_msg("--generate-secret %s: %s", path, strerror(errno));
		unlink(path);
		ret = EXIT_FAIL;
	}
	close(fd);
	explicit_bzero(hex, sizeof(hex));
	return ret;
}

/* add and set: DFKV_CMD_TENANT_SET. */
static int tenant_put(const char *cmd, int argc, char *argv[])
{
	char buf[MNL_SOCKET_BUFFER_SIZE], why[512];
	bool add = !strcmp(cmd, CMD_ADD);
	uint8_t secret[DFKV_TENANT_SECRET_LEN];
	uint8_t add_secret[DFKV_TENANT_SECRET_LEN];
	uint8_t drop_secret[DFKV_TENANT_SECRET_LEN];
	struct tenant_args a;
	struct dfkv_genl g;
	struct nlmsghdr *nlh;
	int ret, err;

	ret = parse(cmd, argc, argv, add ? ADD_OPTS : SET_OPTS, true, &a);
	if (ret)
		return ret < 0 ? EXIT_OK : ret;
	if (!add && !a.secret_file && !a.generate && !a.has_quota &&
	    !a.add_secret && !a.drop_secret)
		return usage_error(cmd, "nothing to set (--secret-file, --generate-secret, --add-secret, --drop-secret or --quota)");
	if ((a.secret_file &&
	     dfkv_secret_read(a.secret_file, secret, why, sizeof(why))) ||
	    (a.add_secret &&
	     dfkv_secret_read(a.add_secret, add_secret, why, sizeof(why))) ||
	    (a.drop_secret &&
	     dfkv_secret_read(a.drop_secret, drop_secret, why, sizeof(why)))) {
		err_msg("%s: %s", cmd, why);
		ret = EXIT_FAIL;
		goto out;
	}
	ret = ctl_open(&g);
	if (ret)
		goto out;
	if (add)
		ret = check_new(&g, &a);
	if (!ret && a.generate)
		ret = secret_generate(a.generate, secret);
	if (ret)
		goto close;
	nlh = tenant_msg(&g, buf, DFKV_CMD_TENANT_SET, &a);
	if (a.secret_file || a.generate)
		mnl_attr_put(nlh, DFKV_A_TENANT_SECRET, sizeof(secret), secret);
	if (a.add_secret)
		mnl_attr_put(nlh, DFKV_A_TENANT_SECRET_ADD, sizeof(add_secret),
			     add_secret);
	if (a.drop_secret)
		mnl_attr_put(nlh, DFKV_A_TENANT_SECRET_DROP,
			     sizeof(drop_secret), drop_secret);
	if (a.has_quota)
		mnl_attr_put_u64(nlh, DFKV_A_TENANT_QUOTA, a.quota);
	err = dfkv_genl_talk(&g, nlh, NULL, NULL);
	explicit_bzero(buf, sizeof(buf));
	if (err) {
		ret = nl_error(&g, err, "%s %s %016llx", cmd, a.node,
			       (unsigned long long)a.tenant);
		if (a.generate)
			unlink(a.generate);	/* it was never registered */
	}
close:
	dfkv_genl_close(&g);
out:
	explicit_bzero(secret, sizeof(secret));
	explicit_bzero(add_secret, sizeof(add_secret));
	explicit_bzero(drop_secret, sizeof(drop_secret));
	return ret;
}

static int tenant_add(int argc, char *argv[])
{
	return tenant_put(CMD_ADD, argc, argv);
}

static int tenant_set(int argc, char *argv[])
{
	return tenant_put(CMD_SET, argc, argv);
}

static int tenant_del(int argc, char *argv[])
{
	char buf[MNL_SOCKET_BUFFER_SIZE];
	struct tenant_args a;
	struct dfkv_genl g;
	int ret, err;

	ret = parse(CMD_DEL, argc, argv, NAME_OPTS, true, &a);
	if (ret)
		return ret < 0 ? EXIT_OK : ret;
	ret = ctl_open(&g);
	if (ret)
		return ret;
	err = dfkv_genl_talk(&g, tenant_msg(&g, buf, DFKV_CMD_TENANT_DEL, &a),
			     NULL, NULL);
	if (err)
		ret = nl_error(&g, err, "%s %s %016llx", CMD_DEL, a.node,
			       (unsigned long long)a.tenant);
	dfkv_genl_close(&g);
	return ret;
}

/* ---------------------------------------------------------------- list */

static const char *yes_no(bool b)
{
	return b ? "yes" : "no";
}

static json_object *tenant_json(const struct node_info *t)
{
	json_object *o = stats_json(t);
	char hex[17];

	json_object_object_del(o, "ops");
	snprintf(hex, sizeof(hex), "%016llx", (unsigned long long)t->tenant);
	json_object_object_add(o, "tenant", json_object_new_string(hex));
	json_object_object_add(o, "registered", json_object_new_boolean(
		t->tenant_flags & DFKV_TENANT_F_REGISTERED));
	json_object_object_add(o, "has_secret", json_object_new_boolean(
		t->tenant_flags & DFKV_TENANT_F_SECRET));
	json_object_object_add(o, "secrets",
			       json_object_new_int((int)t->tenant_secrets));
	json_object_object_add(o, "own_quota", json_object_new_boolean(
		t->tenant_flags & DFKV_TENANT_F_QUOTA));
	json_object_object_add(o, "quota_bytes",
			       json_object_new_uint64(t->quota));
	return o;
}

static void tenant_row(const struct node_info *t, bool raw)
{
	const uint64_t *s = t->stat;
	char q[32], ch[32], u[32], in[32], out[32], hr[16];

	pct(hr, sizeof(hr), s[DFKV_STAT_HITS],
	    s[DFKV_STAT_HITS] + s[DFKV_STAT_MISSES]);
	printf("%016llx %-3s %-6s %10s %10s %8llu %10s %10s %10s %8llu %8llu %6s %9llu %9llu %9llu\n",
	       (unsigned long long)t->tenant,
	       yes_no(t->tenant_flags & DFKV_TENANT_F_REGISTERED),
	       yes_no(t->tenant_flags & DFKV_TENANT_F_SECRET),
	       fmt_quota(t->quota, raw, q, sizeof(q)),
	       fmt_bytes(s[DFKV_STAT_CHARGED_BYTES], raw, ch, sizeof(ch)),
	       (unsigned long long)s[DFKV_STAT_OBJECTS],
	       fmt_bytes(s[DFKV_STAT_USED_BYTES], raw, u, sizeof(u)),
	       fmt_bytes(s[DFKV_STAT_BYTES_IN], raw, in, sizeof(in)),
	       fmt_bytes(s[DFKV_STAT_BYTES_OUT], raw, out, sizeof(out)),
	       (unsigned long long)s[DFKV_STAT_HITS],
	       (unsigned long long)s[DFKV_STAT_MISSES], hr,
	       (unsigned long long)s[DFKV_STAT_QUOTA_REJECTIONS],
	       (unsigned long long)s[DFKV_STAT_AUTH_FAILURES],
	       (unsigned long long)s[DFKV_STAT_FORBIDDEN]);
}

int tenant_list_show(struct dfkv_genl *g, const char *node, bool json,
		     bool raw)
{
	char buf[MNL_SOCKET_BUFFER_SIZE];
	struct info_list l = { 0 };
	struct nlmsghdr *nlh;
	size_t i;
	int err;

	nlh = dfkv_genl_msg(g, buf, DFKV_CMD_TENANT_GET, NLM_F_DUMP);
	mnl_attr_put_strz(nlh, DFKV_A_NODE_NAME, node);
	err = info_list_dump(g, nlh, &l);
	if (l.oom) {
		free(l.v);
		err_msg("out of memory");
		return EXIT_FAIL;
	}
	if (err) {
		free(l.v);
		return nl_error(g, err, "tenants of %s", node);
	}
	if (json) {
		json_object *o = json_object_new_object();
		json_object *arr = json_object_new_array();

		json_object_object_add(o, "node", json_object_new_string(node));
		for (i = 0; i < l.n; i++)
			json_object_array_add(arr, tenant_json(&l.v[i]));
		json_object_object_add(o, "tenants", arr);
		json_print(o);
	} else {
		printf("%-16s %-3s %-6s %10s %10s %8s %10s %10s %10s %8s %8s %6s %9s %9s %9s\n",
		       "TENANT", "REG", "SECRET", "QUOTA", "CHARGED", "OBJECTS",
		       "USED", "IN", "OUT", "HITS", "MISSES", "HIT%",
		       "QUOTA-REJ", "AUTH-FAIL", "FORBIDDEN");
		for (i = 0; i < l.n; i++)
			tenant_row(&l.v[i], raw);
	}
	free(l.v);
	return EXIT_OK;
}

static int tenant_list(int argc, char *argv[])
{
	struct tenant_args a;
	struct dfkv_genl g;
	int ret;

	ret = parse(CMD_LIST, argc, argv, ALLOW(OPT_JSON) | ALLOW(OPT_BYTES),
		    false, &a);
	if (ret)
		return ret < 0 ? EXIT_OK : ret;
	ret = ctl_open(&g);
	if (ret)
		return ret;
	ret = tenant_list_show(&g, a.node, a.json, a.raw);
	dfkv_genl_close(&g);
	return ret;
}

static const struct ctl_action actions[] = {
	{ "add", tenant_add },
	{ "set", tenant_set },
	{ "del", tenant_del },
	{ "list", tenant_list },
};

int tenant_main(int argc, char *argv[])
{
	return run_action("tenant", help, actions,
			  sizeof(actions) / sizeof(actions[0]),
			  "add, set, del or list", argc, argv);
}
