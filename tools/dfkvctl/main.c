// SPDX-License-Identifier: GPL-2.0
/*
 * dfkvctl: the subcommand table and the top-level help.
 */
#include <stdio.h>
#include <string.h>

#include "dfkvctl.h"

static const struct {
	const char *name;
	int (*fn)(int argc, char *argv[]);
	const char *summary;
} subcommands[] = {
	{ "version", version_main, "Show the tool, library and module versions" },
	{ "node", node_main, "Create, delete, modify and list cache nodes" },
	{ "tenant", tenant_main, "Register tenants' secrets and quotas, list tenants" },
	{ "listener", listener_main, "Add, delete and list a node's TCP listeners" },
	{ "disk", disk_main, "Attach, detach and show a node's disks" },
	{ "apply", apply_main, "Create or update nodes from a configuration file" },
	{ "stats", stats_main, "Show node or tenant statistics (table or JSON)" },
	{ "monitor", monitor_main, "Print node and disk events as they happen" },
	{ "put", put_main, "Store a value under a key through /dev/dfkv" },
	{ "get", get_main, "Read a value (or a range of it) through /dev/dfkv" },
	{ "exist", exist_main, "Tell whether a key is stored, and its length" },
	{ "rm", rm_main, "Remove a key" },
	{ "probe", probe_main, "Stored lengths of several keys at once" },
	{ "key", key_main, "Compute the block key of a namespace and key" },
	{ "members", members_main, "Show a group's members in mdsd (--mds URL)" },
	{ "clients", clients_main, "Show a group's registered clients in mdsd" },
	{ "groups", groups_main, "Show the groups known to mdsd" },
};

#define N_SUBCOMMANDS (sizeof(subcommands) / sizeof(subcommands[0]))

static void show_usage(FILE *f)
{
	size_t i;

	fprintf(f,
		"NAME\n"
		"    dfkvctl - administer dfkv cache nodes\n"
		"\n"
		"SYNOPSIS\n"
		"    dfkvctl COMMAND [ARGS...]\n"
		"    dfkvctl help [COMMAND]\n"
		"    dfkvctl COMMAND --help\n"
		"\n"
		"DESCRIPTION\n"
		"    dfkvctl talks to dfkv.ko over the generic netlink family \"dfkv\"\n"
		"    (nodes, statistics, events) and over /dev/dfkv (the data commands).\n"
		"    Nodes live in the network namespace that created them; run dfkvctl\n"
		"    inside that namespace (ip netns exec NS dfkvctl ...).\n"
		"\n"
		"COMMANDS\n");
	for (i = 0; i < N_SUBCOMMANDS; i++)
		fprintf(f, "    %-9s %s\n", subcommands[i].name,
			subcommands[i].summary);
	fprintf(f,
		"    help      Show this page, or the page of COMMAND\n"
		"\n"
		"EXIT STATUS\n"
		"    0 success; 1 not found (a miss, or no such node); 2 usage error;\n"
		"    3 any other failure (the kernel's message is printed on stderr).\n");
}

static int find(const char *name)
{
	size_t i;

	for (i = 0; i < N_SUBCOMMANDS; i++)
		if (!strcmp(name, subcommands[i].name))
			return (int)i;
	return -1;
}

int main(int argc, char *argv[])
{
	int i;

	if (argc < 2) {
		show_usage(stderr);
		return EXIT_USAGE;
	}
	if (!strcmp(argv[1], "help") || !strcmp(argv[1], "--help") ||
	    !strcmp(argv[1], "-h")) {
		if (argc > 2) {
			char help[] = "--help";
			char *av[] = { argv[2], help, NULL };

			i = find(argv[2]);
			if (i < 0)
				return usage_error(NULL, "unknown command '%s'",
						   argv[2]);
			return subcommands[i].fn(2, av);
		}
		show_usage(stdout);
		return EXIT_OK;
	}
	if (!strcmp(argv[1], "--version") || !strcmp(argv[1], "-V")) {
		printf("dfkvctl %s\n", DFKV_VERSION);
		return EXIT_OK;
	}
	i = find(argv[1]);
	if (i < 0)
		return usage_error(NULL, "unknown command '%s' (see '%s help')",
				   argv[1], prog);
	return subcommands[i].fn(argc - 1, argv + 1);
}
