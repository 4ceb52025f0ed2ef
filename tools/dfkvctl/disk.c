// SPDX-License-Identifier: GPL-2.0
/*
 * dfkvctl disk: attach, detach, show and list the disks of a node
 * (DFKV_CMD_DISK_ADD, _DEL, _GET and its dump).
 */
#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <json-c/json.h>

#include "dfkvctl.h"

static const char help[] =
	"NAME\n"
	"    dfkvctl disk - attach, detach and show the disks of a node\n"
	"\n"
	"SYNOPSIS\n"
	"    dfkvctl disk add NODE PATH [--format] [--name NAME] [--extent SIZE]\n"
	"    dfkvctl disk del NODE NAME\n"
	"    dfkvctl disk show [NODE [NAME]] [--json] [--bytes]\n"
	"    dfkvctl disk list [NODE] [--json] [--bytes]\n"
	"\n"
	"DESCRIPTION\n"
	"    A disk is a raw block device (an NVMe namespace, a partition, a\n"
	"    loop or virtio device) that holds a node's capacity tier: a\n"
	"    superblock, a CRC-protected record per slot and fixed-size extents\n"
	"    carved by the slab allocator (Documentation/ondisk.md).  The node's\n"
	"    RAM budget becomes a RAM tier in front of its disks (see dfkvctl\n"
	"    node, --policy).  Each block lives on one disk, chosen from the\n"
	"    disk names by the same Ketama ring clients use for nodes; the\n"
	"    name is stored in the superblock, so a disk keeps its blocks when\n"
	"    its device path changes.  Adding and deleting disks needs\n"
	"    CAP_NET_ADMIN in the node's network namespace; show and list do\n"
	"    not.\n"
	"\n"
	"    add   Open PATH exclusively and attach it to NODE.  A device that\n"
	"          holds a clean dfkv format is rebuilt from its records: its\n"
	"          blocks are served again.  One that was not detached cleanly\n"
	"          (a crash, a failed disk) is cold-reset: none of its old blocks\n"
	"          is served.  A device with anything else on it (a file system,\n"
	"          a dfkv format of another extent size or device size, nothing\n"
	"          at all) is refused and left untouched, unless --format is\n"
	"          given.\n"
	"    del   Flush the disk's dirty blocks, mark it clean and release the\n"
	"          device.  Its blocks are served again after the next add.\n"
	"    show  Every attribute of the disks (of NODE, or of every node of the\n"
	"          namespace; or the one disk NAME) and their statistics: usage,\n"
	"          objects, extents, bios and bytes read and written,\n"
	"          I/O errors, record blocks written, and the records the last\n"
	"          rebuild accepted and rejected and how long it took.\n"
	"    list  One line per disk.\n"
	"\n"
	"    A disk whose metadata cannot be written fails closed: its state\n"
	"    turns \"failed\" (with the reason), its blocks become misses, the\n"
	"    node keeps serving from RAM and its other disks, and an event is\n"
	"    sent (dfkvctl monitor).  Delete it and add it again once the device\n"
	"    works: it is cold-reset.\n"
	"\n"
	"OPTIONS\n"
	"    --format         write a new format over whatever the device holds\n"
	"                     (every block on it is lost)\n"
	"    --name NAME      the disk's name, 1-63 characters (default: the\n"
	"                     last component of PATH); stored at format, so it\n"
	"                     applies with --format only, or must match\n"
	"    --extent SIZE    extent size, a power of two from 64K to 1G (default\n"
	"                     4M); without --format it must match the format's\n"
	"    -j, --json       show, list: {\"disks\": [{\"node\", \"name\", \"path\",\n"
	"                     \"state\", \"reason\", \"dev_bytes\", \"extent_bytes\",\n"
	"                     \"epoch\", \"stats\": {...}}]} with exact numbers\n"
	"    -b, --bytes      exact byte counts instead of KiB/MiB/GiB\n"
	"\n"
	"EXIT STATUS\n"
	"    0 success; 1 no such node or disk; 2 usage error; 3 the kernel\n"
	"    refused (its message is printed on stderr, e.g. a foreign file\n"
	"    system: use --format).\n"
	"\n"
	"EXAMPLES\n"
	"    dfkvctl disk add kv0 /dev/nvme1n1 --format --name nvme1\n"
	"    dfkvctl disk add kv0 /dev/nvme1n1\n"
	"    dfkvctl disk show kv0 nvme1\n"
	"    dfkvctl disk list\n"
	"    dfkvctl disk del kv0 nvme1\n";

#define CMD_ADD		"disk add"
#define CMD_DEL		"disk del"
#define CMD_SHOW	"disk show"
#define CMD_LIST	"disk list"

enum { OPT_FORMAT = 256, OPT_NAME, OPT_EXTENT };

static const struct option opts[] = {
	{ "format", no_argument, NULL, OPT_FORMAT },
	{ "name", required_argument, NULL, OPT_NAME },
	{ "extent", required_argument, NULL, OPT_EXTENT },
	{ "json", no_argument, NULL, 'j' },
	{ "bytes", no_argument, NULL, 'b' },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 }
};

struct disk_args {
	const char *pos[2];
	int npos;
	const char *name;
	uint64_t extent;
	bool format, has_extent, json, raw;
};

enum disk_action { ADD, DEL, REPORT };

/*
 * Options and positional arguments of one action: add takes the disk
 * options, show and list the output ones; min/max bound the positional
 * count.  Returns 0, -1 (help printed) or an exit status.
 */
static int parse(const char *cmd, int argc, char *argv[], enum disk_action act,
		 int min, int max, struct disk_args *a)
{
	bool add = act == ADD;
	int c;

	memset(a, 0, sizeof(*a));
	optind = 0;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":jbh", opts, NULL)) != -1) {
		if (c == 'h') {
			print_help(help);
			return -1;
		}
		if (c == '?' || c == ':')
			return opt_error(cmd, c, argv);
		if (c >= OPT_FORMAT ? !add : act != REPORT)
			return usage_error(cmd, "option '%s' does not apply here",
					   argv[optind - 1]);
		switch (c) {
		case OPT_FORMAT:
			a->format = true;
			break;
		case OPT_NAME:
			if (!*optarg || strlen(optarg) >= DFKV_DISK_NAME_MAX)
				return usage_error(cmd, "bad --name '%s' (1 to %d characters)",
						   optarg, DFKV_DISK_NAME_MAX - 1);
			a->name = optarg;
			break;
		case OPT_EXTENT:
			if (parse_size(optarg, &a->extent))
				return usage_error(cmd, "bad --extent '%s'", optarg);
			a->has_extent = true;
			break;
		case 'j':
			a->json = true;
			break;
		case 'b':
			a->raw = true;
			break;
		}
	}
	while (optind < argc) {
		if (a->npos == max)
			return usage_error(cmd, "unexpected argument '%s'",
					   argv[optind]);
		a->pos[a->npos++] = argv[optind++];
	}
	if (a->npos < min)
		return usage_error(cmd, "missing %s", a->npos ? (add ? "PATH" : "NAME") :
				   "NODE");
	if (a->npos && strlen(a->pos[0]) >= DFKV_NODE_NAME_MAX)
		return usage_error(cmd, "node name '%s' is longer than %d characters",
				   a->pos[0], DFKV_NODE_NAME_MAX - 1);
	if (a->npos > 1 && strlen(a->pos[1]) >=
	    (add ? DFKV_DISK_PATH_MAX : DFKV_DISK_NAME_MAX))
		return usage_error(cmd, "%s '%s' is too long", add ? "path" : "disk name",
				   a->pos[1]);
	return 0;
}

/* DISK_ADD (with the disk options) or DISK_DEL. */
static int disk_mutate(int argc, char *argv[], bool add)
{
	const char *cmd = add ? CMD_ADD : CMD_DEL;
	char buf[MNL_SOCKET_BUFFER_SIZE];
	struct disk_args a;
	struct dfkv_genl g;
	struct nlmsghdr *nlh;
	int ret, err;

	ret = parse(cmd, argc, argv, add ? ADD : DEL, 2, 2, &a);
	if (ret)
		return ret < 0 ? EXIT_OK : ret;
	ret = ctl_open(&g);
	if (ret)
		return ret;
	nlh = dfkv_genl_msg(&g, buf, add ? DFKV_CMD_DISK_ADD : DFKV_CMD_DISK_DEL,
			    0);
	mnl_attr_put_strz(nlh, DFKV_A_NODE_NAME, a.pos[0]);
	mnl_attr_put_strz(nlh, add ? DFKV_A_DISK_PATH : DFKV_A_DISK_NAME,
			  a.pos[1]);
	if (a.name)
		mnl_attr_put_strz(nlh, DFKV_A_DISK_NAME, a.name);
	if (a.format)
		mnl_attr_put(nlh, DFKV_A_DISK_FORMAT, 0, NULL);
	if (a.has_extent)
		mnl_attr_put_u64(nlh, DFKV_A_DISK_EXTENT_BYTES, a.extent);
	err = dfkv_genl_talk(&g, nlh, NULL, NULL);
	if (err)
		ret = nl_error_req(&g, err, nlh, "%s %s %s", cmd, a.pos[0],
				   a.pos[1]);
	dfkv_genl_close(&g);
	return ret;
}

static int disk_add(int argc, char *argv[])
{
	return disk_mutate(argc, argv, true);
}

static int disk_del(int argc, char *argv[])
{
	return disk_mutate(argc, argv, false);
}

/* DISK_GET: the one disk pos[1] of node pos[0], or a dump (of pos[0]). */
static int fetch(const char *cmd, const struct disk_args *a,
		 struct info_list *l)
{
	char buf[MNL_SOCKET_BUFFER_SIZE];
	struct dfkv_genl g;
	struct nlmsghdr *nlh;
	int ret, err;

	ret = ctl_open(&g);
	if (ret)
		return ret;
	nlh = dfkv_genl_msg(&g, buf, DFKV_CMD_DISK_GET,
			    a->npos == 2 ? 0 : NLM_F_DUMP);
	if (a->npos)
		mnl_attr_put_strz(nlh, DFKV_A_NODE_NAME, a->pos[0]);
	if (a->npos == 2)
		mnl_attr_put_strz(nlh, DFKV_A_DISK_NAME, a->pos[1]);
	err = a->npos == 2 ? dfkv_genl_talk(&g, nlh, info_list_cb, l) :
		info_list_dump(&g, nlh, l);
	if (!err && !l->oom && a->npos == 1 && !l->n) {
		/* An empty dump of one node: tell a missing node apart. */
		struct node_info ni;

		ret = node_fetch(&g, a->pos[0], &ni);
	} else if (l->oom) {
		err_msg("out of memory");
		ret = EXIT_FAIL;
	} else if (err) {
		ret = nl_error_req(&g, err, nlh, "%s%s%s%s%s", cmd,
				   a->npos ? " " : "", a->npos ? a->pos[0] : "",
				   a->npos == 2 ? " " : "",
				   a->npos == 2 ? a->pos[1] : "");
	}
	dfkv_genl_close(&g);
	return ret;
}

static json_object *disk_json(const struct node_info *ni)
{
	const struct disk_attrs *d = &ni->disk;
	json_object *o = json_object_new_object();
	json_object *st = stats_json(ni);

	json_object_object_add(o, "node", json_object_new_string(ni->name));
	json_object_object_add(o, "name", json_object_new_string(d->name));
	json_object_object_add(o, "path", json_object_new_string(d->path));
	json_object_object_add(o, "state",
			       json_object_new_string(disk_state_name(d->state)));
	json_object_object_add(o, "reason", d->reason[0] ?
			       json_object_new_string(d->reason) : NULL);
	json_object_object_add(o, "dev_bytes",
			       json_object_new_uint64(d->dev_bytes));
	json_object_object_add(o, "extent_bytes",
			       json_object_new_uint64(d->extent_bytes));
	json_object_object_add(o, "epoch", json_object_new_uint64(d->epoch));
	json_object_object_del(st, "ops");
	json_object_object_del(st, "hit_ratio");
	json_object_object_add(o, "stats", st);
	return o;
}

static void print_list(const struct info_list *l, bool raw)
{
	size_t i;

	if (l->n)
		printf("%-20s %-20s %-6s %10s %10s %10s %10s  %s\n", "NODE",
		       "NAME", "STATE", "SIZE", "USED", "OBJECTS", "EPOCH",
		       "PATH");
	for (i = 0; i < l->n; i++) {
		const struct node_info *ni = &l->v[i];
		char sz[32], u[32];

		printf("%-20s %-20s %-6s %10s %10s %10llu %10llu  %s\n",
		       ni->name, ni->disk.name, disk_state_name(ni->disk.state),
		       fmt_bytes(ni->disk.dev_bytes, raw, sz, sizeof(sz)),
		       fmt_bytes(ni->stat[DFKV_STAT_USED_BYTES], raw, u,
				 sizeof(u)),
		       (unsigned long long)ni->stat[DFKV_STAT_OBJECTS],
		       (unsigned long long)ni->disk.epoch, ni->disk.path);
	}
}

static int disk_report(int argc, char *argv[], bool list)
{
	const char *cmd = list ? CMD_LIST : CMD_SHOW;
	struct info_list l = { 0 };
	struct disk_args a;
	size_t i;
	int ret;

	ret = parse(cmd, argc, argv, REPORT, 0, list ? 1 : 2, &a);
	if (ret)
		return ret < 0 ? EXIT_OK : ret;
	ret = fetch(cmd, &a, &l);
	if (!ret && a.json) {
		json_object *o = json_object_new_object();
		json_object *arr = json_object_new_array();

		for (i = 0; i < l.n; i++)
			json_object_array_add(arr, disk_json(&l.v[i]));
		json_object_object_add(o, "disks", arr);
		json_print(o);
	} else if (!ret && list) {
		print_list(&l, a.raw);
	} else if (!ret) {
		for (i = 0; i < l.n; i++) {
			if (i)
				putchar('\n');
			print_disk_report(stdout, &l.v[i], a.raw);
		}
	}
	free(l.v);
	return ret;
}

static int disk_show(int argc, char *argv[])
{
	return disk_report(argc, argv, false);
}

static int disk_list(int argc, char *argv[])
{
	return disk_report(argc, argv, true);
}

static const struct ctl_action actions[] = {
	{ "add", disk_add },
	{ "del", disk_del },
	{ "show", disk_show },
	{ "list", disk_list },
};

int disk_main(int argc, char *argv[])
{
	return run_action("disk", help, actions,
			  sizeof(actions) / sizeof(actions[0]),
			  "add, del, show or list", argc, argv);
}
