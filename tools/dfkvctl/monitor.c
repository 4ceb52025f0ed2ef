// SPDX-License-Identifier: GPL-2.0
/*
 * dfkvctl monitor: join the "events" multicast group and print one line
 * per DFKV_CMD_NODE_EVENT and DFKV_CMD_DISK_EVENT until killed.  Events
 * carry names and states only (anyone may listen): a disk's path and
 * reason, a node's settings are for `show`.
 */
#include <errno.h>
#include <getopt.h>
#include <string.h>
#include <time.h>
#include <linux/genetlink.h>

#include "dfkvctl.h"

static const char help[] =
	"NAME\n"
	"    dfkvctl monitor - print node and disk events as they happen\n"
	"\n"
	"SYNOPSIS\n"
	"    dfkvctl monitor [--timestamp]\n"
	"\n"
	"DESCRIPTION\n"
	"    Joins the \"events\" multicast group of the dfkv generic netlink\n"
	"    family and prints one line per event of the caller's network\n"
	"    namespace, flushing standard output after each, until killed:\n"
	"\n"
	"        node new NAME state STATE ram SIZE max-value SIZE evict on|off\n"
	"        node del NAME\n"
	"        node state NAME STATE\n"
	"        disk add NODE DISK state STATE\n"
	"        disk del NODE DISK\n"
	"        disk state NODE DISK STATE [reason TEXT]\n"
	"\n"
	"    Sizes are exact byte counts.  When the kernel drops events because\n"
	"    the socket buffer overflowed, a line \"events lost\" is printed and\n"
	"    monitoring goes on.\n"
	"\n"
	"OPTIONS\n"
	"    -t, --timestamp   prefix every line with the local time\n"
	"                      (YYYY-mm-ddTHH:MM:SS.mmm)\n"
	"\n"
	"EXIT STATUS\n"
	"    Runs until killed; 3 when the module is not loaded or the socket\n"
	"    fails.\n"
	"\n"
	"EXAMPLES\n"
	"    dfkvctl monitor\n"
	"    timeout 60 dfkvctl monitor -t > events.log\n";

struct monitor {
	struct dfkv_genl *g;
	bool timestamp;
};

static void stamp(void)
{
	struct timespec ts;
	struct tm tm;
	char buf[32];

	clock_gettime(CLOCK_REALTIME, &ts);
	localtime_r(&ts.tv_sec, &tm);
	strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%S", &tm);
	printf("%s.%03ld ", buf, ts.tv_nsec / 1000000);
}

static int event_cb(const struct nlmsghdr *nlh, void *data)
{
	struct monitor *m = data;
	const struct genlmsghdr *gh = mnl_nlmsg_get_payload(nlh);
	struct node_info ni;

	if (nlh->nlmsg_type != m->g->family ||
	    nlh->nlmsg_len < mnl_nlmsg_size(sizeof(*gh)) ||
	    (gh->cmd != DFKV_CMD_NODE_EVENT && gh->cmd != DFKV_CMD_DISK_EVENT))
		return MNL_CB_OK;
	node_info_parse(nlh, &ni);
	if (m->timestamp)
		stamp();
	switch (ni.event) {
	case DFKV_EVENT_DISK_ADD:
		printf("disk add %s %s state %s\n", ni.name, ni.disk.name,
		       disk_state_name(ni.disk.state));
		break;
	case DFKV_EVENT_DISK_STATE:
		printf("disk state %s %s %s\n", ni.name, ni.disk.name,
		       disk_state_name(ni.disk.state));
		break;
	case DFKV_EVENT_DISK_DEL:
		printf("disk del %s %s\n", ni.name, ni.disk.name);
		break;
	case DFKV_EVENT_NODE_NEW:
		printf("node new %s state %s\n", ni.name, state_name(ni.state));
		break;
	case DFKV_EVENT_NODE_DEL:
		printf("node del %s\n", ni.name);
		break;
	case DFKV_EVENT_NODE_STATE:
		printf("node state %s %s\n", ni.name, state_name(ni.state));
		break;
	case DFKV_EVENT_NODE_PHASE:
		printf("node phase %s %s\n", ni.name, phase_name(ni.phase));
		break;
	case DFKV_EVENT_NODE_LISTENERS:
		printf("node listeners %s\n", ni.name);
		break;
	default:
		printf("%s event%u %s\n", gh->cmd == DFKV_CMD_DISK_EVENT ?
		       "disk" : "node", ni.event, ni.name);
		break;
	}
	fflush(stdout);
	return MNL_CB_OK;
}

int monitor_main(int argc, char *argv[])
{
	static const struct option opts[] = {
		{ "timestamp", no_argument, NULL, 't' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 }
	};
	char buf[MNL_SOCKET_BUFFER_SIZE];
	struct dfkv_genl g;
	struct monitor m = { .g = &g };
	int c, ret;

	optind = 0;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":th", opts, NULL)) != -1) {
		switch (c) {
		case 't':
			m.timestamp = true;
			break;
		case 'h':
			return print_help(help);
		default:
			return opt_error("monitor", c, argv);
		}
	}
	if (optind < argc)
		return usage_error("monitor", "unexpected argument '%s'",
				   argv[optind]);
	ret = ctl_open(&g);
	if (ret)
		return ret;
	ret = dfkv_genl_subscribe(&g);
	if (ret) {
		err_msg("monitor: cannot join the \"%s\" group: %s",
			DFKV_MCGRP_EVENTS, strerror(-ret));
		dfkv_genl_close(&g);
		return EXIT_FAIL;
	}
	for (;;) {
		ssize_t n = mnl_socket_recvfrom(g.nl, buf, sizeof(buf));

		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno == ENOBUFS) {
				if (m.timestamp)
					stamp();
				printf("events lost\n");
				fflush(stdout);
				continue;
			}
			err_msg("monitor: %s", strerror(errno));
			break;
		}
		if (mnl_cb_run(buf, n, 0, 0, event_cb, &m) == MNL_CB_ERROR) {
			err_msg("monitor: bad message: %s", strerror(errno));
			break;
		}
	}
	dfkv_genl_close(&g);
	return EXIT_FAIL;
}
