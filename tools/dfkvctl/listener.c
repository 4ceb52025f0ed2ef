// SPDX-License-Identifier: GPL-2.0
/*
 * dfkvctl listener: add, delete and list the network listeners of a node
 * (DFKV_CMD_LISTENER_ADD, _DEL; the list comes from DFKV_CMD_NODE_GET).
 */
#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <json-c/json.h>

#include "dfkvctl.h"

static const char help[] =
	"NAME\n"
	"    dfkvctl listener - add, delete and list a node's TCP and RDMA listeners\n"
	"\n"
	"SYNOPSIS\n"
	"    dfkvctl listener add NODE ADDR [--port N] [--transport tcp|rdma]\n"
	"    dfkvctl listener del NODE ADDR [--port N] [--transport tcp|rdma]\n"
	"    dfkvctl listener list [NODE] [--json]\n"
	"\n"
	"DESCRIPTION\n"
	"    A listener is a TCP socket of dfkv.ko on which node NODE serves the\n"
	"    wire protocol (epoch 6, SPEC.md section 2) to remote clients such\n"
	"    as libdfkv.  It lives in the network namespace of the node (run\n"
	"    dfkvctl in that namespace: ip netns exec NS dfkvctl ...), so ADDR\n"
	"    must be an address of that namespace, or a wildcard.  A node may\n"
	"    have several listeners (IPv4 and IPv6); deleting the node closes\n"
	"    them.  Clients on the node's own host and namespace need none:\n"
	"    libdfkv uses /dev/dfkv for them.\n"
	"\n"
	"    add   Listen on ADDR, port N.  Fails when the address is not one of\n"
	"          the namespace, or the port is taken.\n"
	"    del   Stop listening there; open connections are closed.\n"
	"    list  One line per listener: node, transport, address, port (of\n"
	"          NODE, or of every node of the namespace).\n"
	"\n"
	"    ADDR is an IPv4 or IPv6 literal: 0.0.0.0 or :: for every address,\n"
	"    127.0.0.1, 192.0.2.1, fd00::1, [fd00::1].  ADDR:PORT and\n"
	"    [ADDR]:PORT are accepted too.\n"
	"\n"
	"OPTIONS\n"
	"    -p, --port N    TCP port, 1-65535 (default 7400; 7401 for RDMA)\n"
	"    -t, --transport tcp|rdma\n"
	"                    tcp (default), or rdma: an rdma_cm listener (wire\n"
	"                    epoch 7, SPEC.md section 3); ADDR must then be the\n"
	"                    address of an RDMA device's netdev (RoCE, rxe)\n"
	"    -j, --json      list: JSON {\"listeners\": [{\"node\", \"addr\",\n"
	"                    \"port\", \"transport\"}]}\n"
	"\n"
	"EXIT STATUS\n"
	"    0 success; 1 no such node; 2 usage error; 3 the kernel refused (its\n"
	"    message is printed on stderr).\n"
	"\n"
	"EXAMPLES\n"
	"    dfkvctl listener add kv0 0.0.0.0\n"
	"    dfkvctl listener add kv0 fd00::1 --port 7410\n"
	"    dfkvctl listener add kv0 10.0.0.5 --transport rdma\n"
	"    dfkvctl listener list kv0\n"
	"    dfkvctl listener del kv0 0.0.0.0\n";

#define CMD_ADD		"listener add"
#define CMD_DEL		"listener del"
#define CMD_LIST	"listener list"

static const struct option opts[] = {
	{ "port", required_argument, NULL, 'p' },
	{ "transport", required_argument, NULL, 't' },
	{ "json", no_argument, NULL, 'j' },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 }
};

struct listener_args {
	const char *pos[3];
	int npos;
	uint16_t port;
	uint32_t transport;
	bool has_port, json;
};

static int parse_port(const char *cmd, const char *s, uint16_t *out)
{
	uint64_t v;

	if (parse_u64(s, &v) || !v || v > 65535)
		return usage_error(cmd, "bad port '%s' (1-65535)", s);
	*out = (uint16_t)v;
	return 0;
}

/* Returns 0, -1 (help printed) or an exit status. */
static int parse(const char *cmd, int argc, char *argv[], bool list,
		 struct listener_args *a)
{
	int c, ret;

	memset(a, 0, sizeof(*a));
	a->port = DFKV_PORT_TCP;
	a->transport = DFKV_LISTENER_TCP;
	optind = 0;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":p:t:jh", opts, NULL)) != -1) {
		switch (c) {
		case 'h':
			print_help(help);
			return -1;
		case 'p':
			if (list)
				return usage_error(cmd, "option '--port' does not apply here");
			ret = parse_port(cmd, optarg, &a->port);
			if (ret)
				return ret;
			a->has_port = true;
			break;
		case 't':
			if (list)
				return usage_error(cmd, "option '--transport' does not apply here");
			if (!strcmp(optarg, "tcp"))
				a->transport = DFKV_LISTENER_TCP;
			else if (!strcmp(optarg, "rdma"))
				a->transport = DFKV_LISTENER_RDMA;
			else
				return usage_error(cmd, "bad transport '%s' (tcp or rdma)",
						   optarg);
			break;
		case 'j':
			if (!list)
				return usage_error(cmd, "option '--json' does not apply here");
			a->json = true;
			break;
		default:
			return opt_error(cmd, c, argv);
		}
	}
	while (optind < argc) {
		if (a->npos == (list ? 1 : 2))
			return usage_error(cmd, "unexpected argument '%s'",
					   argv[optind]);
		a->pos[a->npos++] = argv[optind++];
	}
	if (!list && a->npos < 1)
		return usage_error(cmd, "missing NODE");
	if (!list && a->npos < 2)
		return usage_error(cmd, "missing ADDR");
	if (a->transport == DFKV_LISTENER_RDMA && !a->has_port)
		a->port = DFKV_PORT_RDMA;
	if (a->npos && strlen(a->pos[0]) >= DFKV_NODE_NAME_MAX)
		return usage_error(cmd, "node name '%s' is longer than %d characters",
				   a->pos[0], DFKV_NODE_NAME_MAX - 1);
	return 0;
}

/*
 * Split ADDR, [ADDR], [ADDR]:PORT or A.B.C.D:PORT into the address (into
 * out) and an optional port.  Returns 0 or an exit status.
 */
static int split_addr(const char *cmd, const char *s, char *out, size_t len,
		      struct listener_args *a)
{
	const char *port = NULL, *end;
	size_t n;

	if (*s == '[') {
		end = strchr(s, ']');
		if (!end || (end[1] && end[1] != ':') || end == s + 1)
			return usage_error(cmd, "bad address '%s'", s);
		n = (size_t)(end - s - 1);
		s++;
		if (end[1] == ':')
			port = end + 2;
	} else {
		end = strchr(s, ':');
		if (end && !strchr(end + 1, ':')) {	/* IPv4:PORT */
			n = (size_t)(end - s);
			port = end + 1;
		} else {
			n = strlen(s);
		}
	}
	if (!n || n >= len)
		return usage_error(cmd, "bad address '%s'", s);
	memcpy(out, s, n);
	out[n] = '\0';
	if (port) {
		uint16_t p = 0;
		int ret = parse_port(cmd, port, &p);

		if (ret)
			return ret;
		if (a->has_port && p != a->port)
			return usage_error(cmd, "two different ports (%u and --port %u)",
					   p, a->port);
		a->port = p;
	}
	return 0;
}

static int listener_mutate(int argc, char *argv[], bool add)
{
	const char *cmd = add ? CMD_ADD : CMD_DEL;
	char buf[MNL_SOCKET_BUFFER_SIZE], addr[LISTEN_ADDR_MAX];
	struct listener_args a;
	struct dfkv_genl g;
	struct nlmsghdr *nlh;
	int ret, err;

	ret = parse(cmd, argc, argv, false, &a);
	if (ret)
		return ret < 0 ? EXIT_OK : ret;
	ret = split_addr(cmd, a.pos[1], addr, sizeof(addr), &a);
	if (ret)
		return ret;
	ret = ctl_open(&g);
	if (ret)
		return ret;
	nlh = dfkv_genl_msg(&g, buf, add ? DFKV_CMD_LISTENER_ADD :
					   DFKV_CMD_LISTENER_DEL, 0);
	mnl_attr_put_strz(nlh, DFKV_A_NODE_NAME, a.pos[0]);
	mnl_attr_put_strz(nlh, DFKV_A_LISTEN_ADDR, addr);
	mnl_attr_put_u16(nlh, DFKV_A_LISTEN_PORT, a.port);
	mnl_attr_put_u32(nlh, DFKV_A_LISTEN_TRANSPORT, a.transport);
	err = dfkv_genl_talk(&g, nlh, NULL, NULL);
	if (err)
		ret = nl_error_req(&g, err, nlh, "%s %s %s port %u", cmd,
				   a.pos[0], addr, a.port);
	dfkv_genl_close(&g);
	return ret;
}

static int listener_add(int argc, char *argv[])
{
	return listener_mutate(argc, argv, true);
}

static int listener_del(int argc, char *argv[])
{
	return listener_mutate(argc, argv, false);
}

static int listener_list(int argc, char *argv[])
{
	struct node_info *v = NULL, one;
	struct listener_args a;
	struct dfkv_genl g;
	json_object *arr = NULL;
	size_t n = 0, i, j;
	int ret;

	ret = parse(CMD_LIST, argc, argv, true, &a);
	if (ret)
		return ret < 0 ? EXIT_OK : ret;
	ret = ctl_open(&g);
	if (ret)
		return ret;
	if (a.npos) {
		ret = node_fetch(&g, a.pos[0], &one);
		if (!ret) {
			v = &one;
			n = 1;
		}
	} else {
		ret = node_fetch_all(&g, &v, &n);
	}
	dfkv_genl_close(&g);
	if (ret)
		return ret;
	if (a.json)
		arr = json_object_new_array();
	else
		printf("%-31s %-9s %-39s %5s\n", "NODE", "TRANSPORT", "ADDRESS",
		       "PORT");
	for (i = 0; i < n; i++) {
		for (j = 0; j < v[i].n_listeners; j++) {
			const struct listener_info *l = &v[i].listeners[j];

			if (arr) {
				json_object *o = json_object_new_object();

				json_object_object_add(o, "node",
					json_object_new_string(v[i].name));
				json_object_object_add(o, "addr",
					json_object_new_string(l->addr));
				json_object_object_add(o, "port",
					json_object_new_uint64(l->port));
				json_object_object_add(o, "transport",
					json_object_new_string(transport_name(l->transport)));
				json_object_array_add(arr, o);
			} else {
				printf("%-31s %-9s %-39s %5u\n", v[i].name,
				       transport_name(l->transport), l->addr,
				       l->port);
			}
		}
	}
	if (arr) {
		json_object *o = json_object_new_object();

		json_object_object_add(o, "listeners", arr);
		puts(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PRETTY |
						       JSON_C_TO_STRING_NOSLASHESCAPE));
		json_object_put(o);
	}
	if (v != &one)
		free(v);
	return EXIT_OK;
}

static const struct ctl_action actions[] = {
	{ "add", listener_add },
	{ "del", listener_del },
	{ "list", listener_list },
};

int listener_main(int argc, char *argv[])
{
	return run_action("listener", help, actions,
			  sizeof(actions) / sizeof(actions[0]),
			  "add, del or list", argc, argv);
}
