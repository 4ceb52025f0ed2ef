// SPDX-License-Identifier: GPL-2.0
/*
 * mdsd configuration: defaults, the config file ("key = value" lines whose
 * keys are the long option names) and the command line, which overrides
 * the file.  Every setting is validated here, before anything starts.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <openssl/crypto.h>
#include <openssl/sha.h>

#include "mdsd.h"
#include "token.h"

const char mdsd_usage[] =
	"NAME\n"
	"    mdsd - dfkv membership daemon\n"
	"\n"
	"SYNOPSIS\n"
	"    mdsd [--config FILE] [--listen ADDR:PORT] [--backend memory|etcd]\n"
	"         [--etcd URL[,URL...]] [--etcd-prefix PREFIX] [--snapshot FILE]\n"
	"         [--etcd-cacert FILE] [--etcd-cert FILE --etcd-key FILE]\n"
	"         [--etcd-user NAME --etcd-password-file FILE]\n"
	"         [--member-token-file FILE [--client-token-file FILE]] [--insecure]\n"
	"         [--ttl-ms MS] [--long-poll-ms MS] [--agent --group GROUP\n"
	"         [--advertise NODE=HOST:PORT]... [--advertise-rdma NODE=HOST:PORT]...\n"
	"         [--advertise-host HOST] [--weight N] [--host NAME]] [-v]\n"
	"\n"
	"DESCRIPTION\n"
	"    Serves the dfkv membership directory over HTTP/1.1 + JSON\n"
	"    (SPEC.md section 7): groups of members (cache nodes) and clients\n"
	"    (inference instances), each held by a lease that PUT heartbeats\n"
	"    renew.  With --agent it also registers this host's dfkv.ko nodes in\n"
	"    GROUP and keeps their leases alive.  See Documentation/mdsd.md.\n"
	"\n"
	"OPTIONS\n"
	"    -c, --config FILE       read settings (key = value) first\n"
	"    -l, --listen ADDR:PORT  HTTP address (default 127.0.0.1:7480;\n"
	"                            [::]:PORT for IPv6)\n"
	"    -b, --backend NAME      memory (default) or etcd\n"
	"    --etcd URLS             etcd v3 gateway URLs, comma separated\n"
	"                            (default http://127.0.0.1:2379)\n"
	"    --etcd-prefix PREFIX    key prefix in etcd (default /dfkv/mds)\n"
	"    --etcd-cacert FILE      CA bundle that verifies https:// etcd URLs\n"
	"                            (default: the system's)\n"
	"    --etcd-cert FILE        client certificate for etcd (PEM; with\n"
	"                            --etcd-key), for --client-cert-auth\n"
	"    --etcd-key FILE         its private key (PEM)\n"
	"    --etcd-user NAME        etcd user (etcd auth enabled; with\n"
	"                            --etcd-password-file)\n"
	"    --etcd-password-file FILE  its password (one line, mode 0600)\n"
	"    --member-token-file FILE  the member token: every PUT and DELETE\n"
	"                            needs \"Authorization: Bearer <token>\" (401\n"
	"                            otherwise); this token may write /members\n"
	"                            (cache hosts' agents) and /clients\n"
	"                            (administration).  FILE: mode 0600, at most\n"
	"                            4096 bytes, one trailing newline stripped\n"
	"    --token-file FILE       the same as --member-token-file\n"
	"    --client-token-file FILE  the client token (inference instances):\n"
	"                            writes /clients only, 403 on /members,\n"
	"                            and of them only the entries its client\n"
	"                            key (X-Dfkv-Client-Key) created;\n"
	"                            needs --member-token-file, another token\n"
	"    --insecure              allow a non-loopback --listen without\n"
	"                            --member-token-file (anyone may then add a\n"
	"                            cache member)\n"
	"    --snapshot FILE         memory backend: keep the directory in FILE\n"
	"    --ttl-ms MS             lease TTL when a PUT names none and for the\n"
	"                            agent's nodes (default 10000)\n"
	"    --long-poll-ms MS       longest wait_epoch wait (default 30000)\n"
	"    --body-limit BYTES      largest request body (default 65536)\n"
	"    --conn-timeout-s S      idle/slow connection timeout (default 10)\n"
	"    --max-connections N     concurrent connections (default 256)\n"
	"    --max-connections-per-peer N  of them from one address (default 32)\n"
	"    --reserved-write-connections N  the last N connections serve only\n"
	"                            authenticated writes (heartbeats; every\n"
	"                            write without a member token): other\n"
	"                            requests get 503 there (default: an\n"
	"                            eighth of --max-connections)\n"
	"    --max-long-polls N      wait_epoch requests waiting at once\n"
	"                            (default 128; more: 429)\n"
	"    --max-long-polls-per-peer N  of them from one address (default 8)\n"
	"    --http-threads N        threads running the requests, each\n"
	"                            blocking on its backend call (default 128);\n"
	"                            a waiting long-poll holds none\n"
	"    --max-group-weight N    the most a group's member weights add up\n"
	"                            to (default and at most 8192; more: 409)\n"
	"    --max-entries N         memory backend: entries in all groups\n"
	"                            (default 100000)\n"
	"    --no-node-metrics       leave host node stats out of /metrics\n"
	"    -a, --agent             register this host's kernel nodes\n"
	"    -g, --group GROUP       the agent's group (default \"default\")\n"
	"    --advertise NODE=ADDR   TCP address of NODE (repeatable; default:\n"
	"                            its first TCP listener)\n"
	"    --advertise-rdma NODE=ADDR  RDMA address of NODE (repeatable)\n"
	"    --advertise-host HOST   address published for wildcard listeners\n"
	"                            (0.0.0.0, ::; default: the host name)\n"
	"    --weight N              the agent's member weight (default 1)\n"
	"    --host NAME             \"host\" of the agent's members (default: the\n"
	"                            host name)\n"
	"    -v, --verbose           more log lines (twice: debug)\n"
	"    -h, --help              this text\n"
	"    -V, --version           print the version\n"
	"\n"
	"EXIT STATUS\n"
	"    0 after SIGTERM/SIGINT; 2 bad configuration; 1 start failure.\n";

enum {
	O_ETCD = 256, O_ETCD_PREFIX, O_SNAPSHOT, O_TTL, O_LONG_POLL,
	O_BODY_LIMIT, O_CONN_TIMEOUT, O_MAX_CONNS, O_MAX_ENTRIES,
	O_NO_NODE_METRICS, O_ADVERTISE, O_ADVERTISE_RDMA, O_WEIGHT, O_HOST,
	O_ADVERTISE_HOST, O_ETCD_CACERT, O_ETCD_CERT, O_ETCD_KEY, O_ETCD_USER,
	O_ETCD_PASSWORD_FILE, O_TOKEN_FILE, O_CLIENT_TOKEN_FILE, O_INSECURE,
	O_MAX_CONNS_PEER, O_RESERVED_WRITES, O_MAX_LONG_POLLS,
	O_MAX_LONG_POLLS_PEER, O_HTTP_THREADS, O_MAX_GROUP_WEIGHT,
};

static const struct option opts[] = {
	{ "config", required_argument, NULL, 'c' },
	{ "listen", required_argument, NULL, 'l' },
	{ "backend", required_argument, NULL, 'b' },
	{ "etcd", required_argument, NULL, O_ETCD },
	{ "etcd-prefix", required_argument, NULL, O_ETCD_PREFIX },
	{ "etcd-cacert", required_argument, NULL, O_ETCD_CACERT },
	{ "etcd-cert", required_argument, NULL, O_ETCD_CERT },
	{ "etcd-key", required_argument, NULL, O_ETCD_KEY },
	{ "etcd-user", required_argument, NULL, O_ETCD_USER },
	{ "etcd-password-file", required_argument, NULL, O_ETCD_PASSWORD_FILE },
	{ "member-token-file", required_argument, NULL, O_TOKEN_FILE },
	{ "token-file", required_argument, NULL, O_TOKEN_FILE },
	{ "client-token-file", required_argument, NULL, O_CLIENT_TOKEN_FILE },
	{ "insecure", no_argument, NULL, O_INSECURE },
	{ "snapshot", required_argument, NULL, O_SNAPSHOT },
	{ "ttl-ms", required_argument, NULL, O_TTL },
	{ "long-poll-ms", required_argument, NULL, O_LONG_POLL },
	{ "body-limit", required_argument, NULL, O_BODY_LIMIT },
	{ "conn-timeout-s", required_argument, NULL, O_CONN_TIMEOUT },
	{ "max-connections", required_argument, NULL, O_MAX_CONNS },
	{ "max-connections-per-peer", required_argument, NULL, O_MAX_CONNS_PEER },
	{ "reserved-write-connections", required_argument, NULL,
	  O_RESERVED_WRITES },
	{ "max-long-polls", required_argument, NULL, O_MAX_LONG_POLLS },
	{ "max-long-polls-per-peer", required_argument, NULL,
	  O_MAX_LONG_POLLS_PEER },
	{ "http-threads", required_argument, NULL, O_HTTP_THREADS },
	{ "max-group-weight", required_argument, NULL, O_MAX_GROUP_WEIGHT },
	{ "max-entries", required_argument, NULL, O_MAX_ENTRIES },
	{ "no-node-metrics", no_argument, NULL, O_NO_NODE_METRICS },
	{ "agent", no_argument, NULL, 'a' },
	{ "group", required_argument, NULL, 'g' },
	{ "advertise", required_argument, NULL, O_ADVERTISE },
	{ "advertise-rdma", required_argument, NULL, O_ADVERTISE_RDMA },
	{ "advertise-host", required_argument, NULL, O_ADVERTISE_HOST },
	{ "weight", required_argument, NULL, O_WEIGHT },
	{ "host", required_argument, NULL, O_HOST },
	{ "verbose", no_argument, NULL, 'v' },
	{ "help", no_argument, NULL, 'h' },
	{ "version", no_argument, NULL, 'V' },
	{ NULL, 0, NULL, 0 }
};

static const char short_opts[] = ":c:l:b:ag:vhV";

static int bad(const char *what, const char *val, const char *why)
{
	fprintf(stderr, "mdsd: bad %s '%s': %s\n", what, val, why);
	return 2;
}

static int parse_num(const char *s, uint64_t min, uint64_t max, uint64_t *out)
{
	unsigned long long v;
	char *end;

	if (!*s || *s == '-' || *s == '+')
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || *end || v < min || v > max)
		return -EINVAL;
	*out = v;
	return 0;
}

static int copy(char *dst, size_t cap, const char *what, const char *val)
{
	if (strlen(val) >= cap)
		return bad(what, val, "too long");
	memcpy(dst, val, strlen(val) + 1);
	return 0;
}

static int add_advertise(struct advertise *list, size_t *n, const char *what,
			 const char *val)
{
	const char *eq = strchr(val, '=');
	struct advertise *a;

	if (!eq || eq == val || (size_t)(eq - val) > MDS_ID_MAX)
		return bad(what, val, "expected NODE=HOST:PORT");
	if (*n >= MDSD_MAX_ADVERTISE)
		return bad(what, val, "too many");
	a = &list[*n];
	memcpy(a->node, val, (size_t)(eq - val));
	a->node[eq - val] = '\0';
	if (!mds_id_valid(a->node))
		return bad(what, val, "bad node name");
	if (strlen(eq + 1) > MDS_STR_MAX || !mds_addr_valid(eq + 1) ||
	    !eq[1])
		return bad(what, val, "bad HOST:PORT");
	snprintf(a->addr, sizeof(a->addr), "%s", eq + 1);
	(*n)++;
	return 0;
}

/* A count setting in min..max. */
static int limit(const char *name, const char *val, uint64_t min,
		 uint64_t max, unsigned int *out)
{
	char why[48];
	uint64_t v;

	if (parse_num(val, min, max, &v)) {
		snprintf(why, sizeof(why), "%llu..%llu",
			 (unsigned long long)min, (unsigned long long)max);
		return bad(name, val, why);
	}
	*out = (unsigned int)v;
	return 0;
}

/* Apply one setting (option code c) from the file or the command line. */
static int apply(struct mdsd_config *cfg, int c, const char *name,
		 const char *val)
{
	uint64_t v;

	switch (c) {
	case 'l':
		return copy(cfg->listen, sizeof(cfg->listen), name, val);
	case 'b':
		if (strcmp(val, "memory") && strcmp(val, "etcd"))
			return bad(name, val, "memory or etcd");
		return copy(cfg->backend, sizeof(cfg->backend), name, val);
	case O_ETCD:
		return copy(cfg->etcd, sizeof(cfg->etcd), name, val);
	case O_ETCD_PREFIX:
		if (val[0] != '/' || strstr(val, "//"))
			return bad(name, val, "must start with / and have no //");
		return copy(cfg->etcd_prefix, sizeof(cfg->etcd_prefix), name, val);
	case O_ETCD_CACERT:
		return copy(cfg->etcd_cacert, sizeof(cfg->etcd_cacert), name, val);
	case O_ETCD_CERT:
		return copy(cfg->etcd_cert, sizeof(cfg->etcd_cert), name, val);
	case O_ETCD_KEY:
		return copy(cfg->etcd_key, sizeof(cfg->etcd_key), name, val);
	case O_ETCD_USER:
		return copy(cfg->etcd_user, sizeof(cfg->etcd_user), name, val);
	case O_ETCD_PASSWORD_FILE:
		return copy(cfg->etcd_password_file,
			    sizeof(cfg->etcd_password_file), name, val);
	case O_TOKEN_FILE:
		return copy(cfg->member_token_file,
			    sizeof(cfg->member_token_file), name, val);
	case O_CLIENT_TOKEN_FILE:
		return copy(cfg->client_token_file,
			    sizeof(cfg->client_token_file), name, val);
	case O_INSECURE:
		cfg->insecure = true;
		return 0;
	case O_SNAPSHOT:
		return copy(cfg->snapshot, sizeof(cfg->snapshot), name, val);
	case O_TTL:
		if (parse_num(val, MDS_TTL_MIN_MS, MDS_TTL_MAX_MS, &v))
			return bad(name, val, "milliseconds, 100..86400000");
		cfg->ttl_ms = v;
		return 0;
	case O_LONG_POLL:
		if (parse_num(val, 0, 600000, &v))
			return bad(name, val, "milliseconds, 0..600000");
		cfg->long_poll_ms = (unsigned int)v;
		return 0;
	case O_BODY_LIMIT:
		if (parse_num(val, 256, 16 << 20, &v))
			return bad(name, val, "bytes, 256..16777216");
		cfg->body_limit = (size_t)v;
		return 0;
	case O_CONN_TIMEOUT:
		if (parse_num(val, 1, 3600, &v))
			return bad(name, val, "seconds, 1..3600");
		cfg->conn_timeout_s = (unsigned int)v;
		return 0;
	case O_MAX_CONNS:
		if (parse_num(val, 4, 65536, &v))
			return bad(name, val, "4..65536");
		cfg->max_conns = (unsigned int)v;
		return 0;
	case O_MAX_CONNS_PEER:
		return limit(name, val, 1, 65536, &cfg->max_conns_peer);
	case O_RESERVED_WRITES:
		cfg->reserved_set = true;
		return limit(name, val, 0, 65536, &cfg->reserved_writes);
	case O_MAX_LONG_POLLS:
		return limit(name, val, 1, 65536, &cfg->max_long_polls);
	case O_MAX_LONG_POLLS_PEER:
		return limit(name, val, 1, 65536, &cfg->max_long_polls_peer);
	case O_HTTP_THREADS:
		return limit(name, val, 1, 1024, &cfg->http_threads);
	case O_MAX_GROUP_WEIGHT:
		return limit(name, val, 1, MDS_GROUP_WEIGHT_MAX,
			     &cfg->max_group_weight);
	case O_MAX_ENTRIES:
		if (parse_num(val, 1, 10000000, &v))
			return bad(name, val, "1..10000000");
		cfg->max_entries = (unsigned int)v;
		return 0;
	case O_NO_NODE_METRICS:
		cfg->node_metrics = false;
		return 0;
	case 'a':
		cfg->agent = true;
		return 0;
	case 'g':
		if (!mds_id_valid(val))
			return bad(name, val, "1-64 characters of [A-Za-z0-9._-]");
		return copy(cfg->group, sizeof(cfg->group), name, val);
	case O_ADVERTISE:
		return add_advertise(cfg->tcp, &cfg->n_tcp, name, val);
	case O_ADVERTISE_RDMA:
		return add_advertise(cfg->rdma, &cfg->n_rdma, name, val);
	case O_WEIGHT:
		if (parse_num(val, 1, MDS_WEIGHT_MAX, &v))
			return bad(name, val, "1..1000");
		cfg->weight = (uint32_t)v;
		return 0;
	case O_HOST:
		if (!mds_host_valid(val))
			return bad(name, val, "[A-Za-z0-9._:-], at most 255");
		return copy(cfg->host, sizeof(cfg->host), name, val);
	case O_ADVERTISE_HOST:
		if (!mds_host_valid(val))
			return bad(name, val, "[A-Za-z0-9._:-], at most 255");
		return copy(cfg->advertise_host, sizeof(cfg->advertise_host),
			    name, val);
	case 'v':
		cfg->verbose++;
		return 0;
	}
	return bad("setting", name, "unknown");
}

static bool truthy(const char *v, bool *out)
{
	if (!strcmp(v, "true") || !strcmp(v, "yes") || !strcmp(v, "1") ||
	    !strcmp(v, "on")) {
		*out = true;
		return true;
	}
	if (!strcmp(v, "false") || !strcmp(v, "no") || !strcmp(v, "0") ||
	    !strcmp(v, "off")) {
		*out = false;
		return true;
	}
	return false;
}

static char *trim(char *s)
{
	char *e;

	while (*s == ' ' || *s == '\t')
		s++;
	e = s + strlen(s);
	while (e > s && strchr(" \t\r\n", e[-1]))
		*--e = '\0';
	return s;
}

static int load_file(struct mdsd_config *cfg, const char *path)
{
	char line[2048];
	unsigned int lineno = 0;
	FILE *f = fopen(path, "re");
	int ret = 0;

	if (!f) {
		fprintf(stderr, "mdsd: cannot open config %s: %s\n", path,
			strerror(errno));
		return 2;
	}
	while (!ret && fgets(line, sizeof(line), f)) {
		const struct option *o;
		char *key, *val, *eq;
		bool flag;

		lineno++;
		key = trim(line);
		if (!*key || *key == '#')
			continue;
		eq = strchr(key, '=');
		if (!eq) {
			fprintf(stderr, "mdsd: %s:%u: expected key = value\n",
				path, lineno);
			ret = 2;
			break;
		}
		*eq = '\0';
		val = trim(eq + 1);
		key = trim(key);
		for (o = opts; o->name; o++) {
			if (!strcmp(o->name, key))
				break;
		}
		if (!o->name || o->val == 'c' || o->val == 'h' ||
		    o->val == 'V') {
			fprintf(stderr, "mdsd: %s:%u: unknown setting '%s'\n",
				path, lineno, key);
			ret = 2;
			break;
		}
		if (o->has_arg == no_argument) {
			if (!truthy(val, &flag)) {
				fprintf(stderr, "mdsd: %s:%u: '%s' takes true or false\n",
					path, lineno, key);
				ret = 2;
				break;
			}
			if (o->val == 'a')
				cfg->agent = flag;
			else if (o->val == O_NO_NODE_METRICS)
				cfg->node_metrics = !flag;
			else if (o->val == 'v')
				cfg->verbose = flag;
			else if (o->val == O_INSECURE)
				cfg->insecure = flag;
			continue;
		}
		ret = apply(cfg, o->val, key, val);
		if (ret)
			fprintf(stderr, "mdsd: in %s:%u\n", path, lineno);
	}
	fclose(f);
	return ret;
}

/*
 * Read a token file once: only its SHA-256 is kept, and a presented token
 * is compared by its digest (http.c), so the secret itself does not stay
 * in memory and the comparison takes the same time whatever the length
 * or the first differing byte of what is presented.
 */
static int load_token(const char *path, unsigned char sha256[32])
{
	char tok[DFKV_TOKEN_MAX + 1], why[1200];

	if (dfkv_token_read(path, tok, sizeof(tok), why, sizeof(why))) {
		fprintf(stderr, "mdsd: %s\n", why);
		return 2;
	}
	SHA256((const unsigned char *)tok, strlen(tok), sha256);
	OPENSSL_cleanse(tok, sizeof(tok));
	return 0;
}

/* "ADDR:PORT" or "[V6]:PORT" into cfg->listen_addr. */
static int parse_listen(struct mdsd_config *cfg)
{
	char host[MDS_STR_MAX + 1], *port;
	struct addrinfo hints = { 0 }, *ai;

	snprintf(host, sizeof(host), "%s", cfg->listen);
	if (host[0] == '[') {
		char *rb = strchr(host, ']');

		if (!rb || rb[1] != ':')
			return -EINVAL;
		*rb = '\0';
		port = rb + 2;
		memmove(host, host + 1, strlen(host + 1) + 1);
	} else {
		port = strrchr(host, ':');
		if (!port)
			return -EINVAL;
		*port++ = '\0';
	}
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
	if (getaddrinfo(host[0] ? host : NULL, port, &hints, &ai))
		return -EINVAL;
	memcpy(&cfg->listen_addr, ai->ai_addr, ai->ai_addrlen);
	cfg->listen_len = ai->ai_addrlen;
	freeaddrinfo(ai);
	return 0;
}

/* 127.0.0.0/8, ::1 or ::ffff:127.0.0.0/104 (a wildcard is not). */
static bool loopback(const struct sockaddr_storage *ss)
{
	if (ss->ss_family == AF_INET)
		return (ntohl(((const struct sockaddr_in *)ss)->sin_addr.s_addr)
			>> 24) == 127;
	if (ss->ss_family == AF_INET6) {
		const struct in6_addr *a =
			&((const struct sockaddr_in6 *)ss)->sin6_addr;

		return IN6_IS_ADDR_LOOPBACK(a) ||
		       (IN6_IS_ADDR_V4MAPPED(a) && a->s6_addr[12] == 127);
	}
	return false;
}

/* The credentials and what they imply, once every setting is in. */
static int check_auth(struct mdsd_config *cfg)
{
	int ret;

	if (parse_listen(cfg))
		return bad("listen", cfg->listen, "ADDR:PORT or [ADDR]:PORT");
	if (cfg->client_token_file[0] && !cfg->member_token_file[0])
		return bad("client-token-file", cfg->client_token_file,
			   "needs --member-token-file");
	if (!cfg->member_token_file[0]) {
		if (!cfg->insecure && !loopback(&cfg->listen_addr))
			return bad("listen", cfg->listen,
				   "not a loopback address: without --member-token-file anyone could add a cache member (--insecure to allow it)");
		return 0;
	}
	ret = load_token(cfg->member_token_file, cfg->member_sha256);
	if (ret)
		return ret;
	cfg->member_auth = true;
	if (cfg->client_token_file[0]) {
		ret = load_token(cfg->client_token_file, cfg->client_sha256);
		if (ret)
			return ret;
		if (!CRYPTO_memcmp(cfg->member_sha256, cfg->client_sha256,
				   sizeof(cfg->client_sha256)))
			return bad("client-token-file", cfg->client_token_file,
				   "the same token as --member-token-file");
		cfg->client_auth = true;
	}
	return 0;
}

static void defaults(struct mdsd_config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	snprintf(cfg->listen, sizeof(cfg->listen), "127.0.0.1:7480");
	snprintf(cfg->backend, sizeof(cfg->backend), "memory");
	snprintf(cfg->etcd, sizeof(cfg->etcd), "http://127.0.0.1:2379");
	snprintf(cfg->etcd_prefix, sizeof(cfg->etcd_prefix), "/dfkv/mds");
	snprintf(cfg->group, sizeof(cfg->group), "default");
	cfg->ttl_ms = 10000;
	cfg->weight = 1;
	cfg->long_poll_ms = 30000;
	cfg->body_limit = 64 << 10;
	cfg->conn_timeout_s = 10;
	cfg->max_conns = 256;
	cfg->max_conns_peer = 32;
	cfg->max_long_polls = 128;
	cfg->max_long_polls_peer = 8;
	cfg->http_threads = 128;
	cfg->max_group_weight = MDS_GROUP_WEIGHT_MAX;
	cfg->max_entries = 100000;
	cfg->node_metrics = true;
	if (gethostname(cfg->host, sizeof(cfg->host) - 1))
		cfg->host[0] = '\0';
}

int mdsd_config_load(struct mdsd_config *cfg, int argc, char *argv[])
{
	const char *config = NULL;
	int c, ret;

	defaults(cfg);
	/* First pass: --config, --help, --version and syntax errors. */
	opterr = 0;
	optind = 1;
	while ((c = getopt_long(argc, argv, short_opts, opts, NULL)) != -1) {
		switch (c) {
		case 'c':
			config = optarg;
			break;
		case 'h':
			fputs(mdsd_usage, stdout);
			return -1;
		case 'V':
			printf("mdsd %s\n", DFKV_VERSION);
			return -1;
		case '?':
			fprintf(stderr, "mdsd: unknown option '%s' (see --help)\n",
				argv[optind - 1]);
			return 2;
		case ':':
			fprintf(stderr, "mdsd: option '%s' needs a value\n",
				argv[optind - 1]);
			return 2;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "mdsd: unexpected argument '%s'\n", argv[optind]);
		return 2;
	}
	if (config) {
		ret = load_file(cfg, config);
		if (ret)
			return ret;
	}
	optind = 1;
	while ((c = getopt_long(argc, argv, short_opts, opts, NULL)) != -1) {
		const struct option *o = opts;

		if (c == 'c')
			continue;
		while (o->name && o->val != c)
			o++;
		ret = apply(cfg, c, o->name ? o->name : "option",
			    optarg ? optarg : "");
		if (ret)
			return ret;
	}
	if (!strcmp(cfg->backend, "memory") && cfg->snapshot[0] &&
	    strlen(cfg->snapshot) > 1000)
		return bad("snapshot", cfg->snapshot, "path too long");
	if (!strcmp(cfg->backend, "etcd") && !cfg->etcd[0])
		return bad("etcd", "", "no URL");
	if (!cfg->etcd_cert[0] != !cfg->etcd_key[0])
		return bad("etcd-cert", cfg->etcd_cert,
			   "--etcd-cert and --etcd-key go together");
	if (!cfg->etcd_user[0] != !cfg->etcd_password_file[0])
		return bad("etcd-user", cfg->etcd_user,
			   "--etcd-user and --etcd-password-file go together");
	ret = check_auth(cfg);
	if (ret)
		return ret;
	if (!cfg->reserved_set)
		cfg->reserved_writes = cfg->max_conns / 8;
	if (cfg->reserved_writes >= cfg->max_conns) {
		fprintf(stderr, "mdsd: --reserved-write-connections %u must be below --max-connections %u\n",
			cfg->reserved_writes, cfg->max_conns);
		return 2;
	}
	return 0;
}
