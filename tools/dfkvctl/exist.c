// SPDX-License-Identifier: GPL-2.0
/*
 * dfkvctl exist: is a key stored, and how long is it (DFKV_IOC_EXIST).
 */
#include <getopt.h>
#include <unistd.h>
#include <sys/ioctl.h>

#include "dfkvctl.h"

static const char help[] =
	"NAME\n"
	"    dfkvctl exist - tell whether a key is stored, and its length\n"
	"\n"
	"SYNOPSIS\n"
	"    dfkvctl exist NODE KEY\n"
	"    dfkvctl exist NODE --ns NAMESPACE [--key] KEY\n"
	"\n"
	"DESCRIPTION\n"
	"    Binds /dev/dfkv to NODE and asks whether KEY is stored.  When it\n"
	"    is, prints its stored length in bytes (a decimal number alone on a\n"
	"    line) on standard output.\n"
	"\n"
	"OPTIONS\n"
	"    --ns, --ns-hex, --key, --key-hex   see KEYS\n"
	"\n"
	KEY_HELP
	"EXIT STATUS\n"
	"    0 stored; 1 NOT_FOUND (a short message on stderr) or no such node;\n"
	"    2 usage error; 3 any other status or error.\n"
	"\n"
	"EXAMPLES\n"
	"    dfkvctl exist kv0 0123456789abcdef:00112233445566778899aabbccddeeff\n"
	"    if dfkvctl exist kv0 --ns my-model block-0 >/dev/null 2>&1; then ...\n";

int exist_main(int argc, char *argv[])
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
			ret = key_args_opt(&ka, "exist", c, optarg);
			if (ret)
				goto out;
			break;
		default:
			ret = opt_error("exist", c, argv);
			goto out;
		}
	}
	ret = data_args_finish("exist", argc, argv, &ka, &node, false);
	if (!ret)
		ret = key_args_resolve(&ka, "exist", 0, &o.key);
	if (ret)
		goto out;
	fd = dev_bind(node);
	if (fd < 0) {
		ret = -fd;
		goto out;
	}
	rc = ioctl(fd, DFKV_IOC_EXIST, &o);
	snprintf(what, sizeof(what), "exist %s %s", node, key_str(&o.key, ks));
	ret = op_result(what, rc, o.status);
	if (!ret)
		printf("%llu\n", (unsigned long long)o.stored_len);
	close(fd);
out:
	key_args_free(&ka);
	return ret;
}
