// SPDX-License-Identifier: GPL-2.0
/*
 * dfkvctl rm: remove a key (DFKV_IOC_REMOVE).
 */
#include <getopt.h>
#include <unistd.h>
#include <sys/ioctl.h>

#include "dfkvctl.h"

static const char help[] =
	"NAME\n"
	"    dfkvctl rm - remove a key\n"
	"\n"
	"SYNOPSIS\n"
	"    dfkvctl rm NODE KEY\n"
	"    dfkvctl rm NODE --ns NAMESPACE [--key] KEY\n"
	"\n"
	"DESCRIPTION\n"
	"    Binds /dev/dfkv to NODE and removes KEY.  The key is hidden at\n"
	"    once; a PUT still in flight for it cannot publish it again.\n"
	"    Removing a key that is not stored succeeds too.\n"
	"\n"
	"OPTIONS\n"
	"    --ns, --ns-hex, --key, --key-hex   see KEYS\n"
	"\n"
	KEY_HELP
	"EXIT STATUS\n"
	"    0 removed or absent; 1 no such node; 2 usage error; 3 any other\n"
	"    status or error.\n"
	"\n"
	"EXAMPLES\n"
	"    dfkvctl rm kv0 0123456789abcdef:00112233445566778899aabbccddeeff\n"
	"    dfkvctl rm kv0 --ns my-model block-0\n";

int rm_main(int argc, char *argv[])
{
	static const struct option opts[] = {
		KEY_OPTIONS,
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 }
	};
	struct key_args ka = { 0 };
	struct dfkv_ioc_op o = { .size = sizeof(o) };
	const char *node;
	char ks[KEY_STR_LEN], what[128];
	int c, fd, ret, rc;

	optind = 0;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
		switch (c) {
		case 'h':
			ret = print_help(help);
			goto out;
		case 'N': case 'X': case 'k': case 'K':
			ret = key_args_opt(&ka, "rm", c, optarg);
			if (ret)
				goto out;
			break;
		default:
			ret = opt_error("rm", c, argv);
			goto out;
		}
	}
	ret = data_args_finish("rm", argc, argv, &ka, &node, false);
	if (!ret)
		ret = key_args_resolve(&ka, "rm", 0, &o.key);
	if (ret)
		goto out;
	fd = dev_bind(node);
	if (fd < 0) {
		ret = -fd;
		goto out;
	}
	rc = ioctl(fd, DFKV_IOC_REMOVE, &o);
	snprintf(what, sizeof(what), "rm %s %s", node, key_str(&o.key, ks));
	ret = op_result(what, rc, o.status);
	close(fd);
out:
	key_args_free(&ka);
	return ret;
}
