// SPDX-License-Identifier: GPL-2.0
/*
 * dfkvctl key: print the block key of a namespace and object key
 * (libdfkv's identity, SPEC.md 1.3), without touching any node.
 */
#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "dfkvctl.h"

static const char help[] =
	"NAME\n"
	"    dfkvctl key - compute the block key of a namespace and key\n"
	"\n"
	"SYNOPSIS\n"
	"    dfkvctl key --ns NAMESPACE KEY... | --key KEY...\n"
	"    dfkvctl key --ns-hex HEX --key-hex HEX...\n"
	"\n"
	"DESCRIPTION\n"
	"    Prints, one per line, the TENANTHEX:IDHEX block key that the data\n"
	"    commands (put, get, exist, rm, probe) use for each KEY in\n"
	"    NAMESPACE.  Nothing is sent to the kernel.\n"
	"\n"
	KEY_HELP
	"EXIT STATUS\n"
	"    0 success; 2 usage error; 3 the identity function refused the\n"
	"    input.\n"
	"\n"
	"EXAMPLES\n"
	"    $ dfkvctl key --ns my-model block-0\n"
	"    e7d1907659ca1b26:b838056907f46e29f9ae128715434f41\n";

int key_main(int argc, char *argv[])
{
	struct key_args *ka = calloc(1, sizeof(*ka));
	struct dfkv_key k;
	char ks[KEY_STR_LEN];
	size_t i;
	int ret = 0;

	if (!ka) {
		err_msg("key: %s", strerror(ENOMEM));
		return EXIT_FAIL;
	}
	ret = key_args_getopt(ka, "key", help, argc, argv);
	if (ret >= 0)
		goto out;
	ret = 0;
	while (optind < argc && !ret)
		ret = key_args_add(ka, "key", argv[optind++]);
	if (ret)
		goto out;
	if (!ka->ns) {
		ret = usage_error("key", "missing --ns NAMESPACE (or --ns-hex)");
		goto out;
	}
	if (!ka->n) {
		ret = usage_error("key", "missing KEY");
		goto out;
	}
	for (i = 0; i < ka->n; i++) {
		ret = key_args_resolve(ka, "key", i, &k);
		if (ret)
			goto out;
		printf("%s\n", key_str(&k, ks));
	}
out:
	key_args_free(ka);
	free(ka);
	return ret;
}
