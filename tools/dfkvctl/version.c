// SPDX-License-Identifier: GPL-2.0
/*
 * dfkvctl version: the tool's, libdfkv's and the module's versions and ABI.
 */
#include <errno.h>
#include <string.h>

#include "dfkv.h"	/* libdfkv */
#include "dfkvctl.h"

static const char help[] =
	"NAME\n"
	"    dfkvctl version - show the tool, library and module versions\n"
	"\n"
	"SYNOPSIS\n"
	"    dfkvctl version\n"
	"\n"
	"DESCRIPTION\n"
	"    Prints the version of dfkvctl and of the libdfkv it was linked with,\n"
	"    the ABI version of the uapi header it was built against, then asks\n"
	"    the module (DFKV_CMD_VERSION_GET) for its version and ABI version.\n"
	"    A different ABI version on the two sides is reported on stderr.\n"
	"\n"
	"EXIT STATUS\n"
	"    0 when the module answered with the same ABI version; 3 when the\n"
	"    module is not loaded or its ABI differs.\n"
	"\n"
	"EXAMPLES\n"
	"    $ dfkvctl version\n"
	"    dfkvctl 0.1.0 (libdfkv 0.1.0, ABI 1)\n"
	"    dfkv.ko 0.1.0 (ABI 1)\n";

struct version {
	char text[64];
	uint32_t abi;
	bool has_abi;
};

static int version_cb(const struct nlmsghdr *nlh, void *data)
{
	const struct nlattr *tb[DFKV_A_MAX + 1];
	struct version *v = data;

	dfkv_genl_parse(nlh, tb);
	if (tb[DFKV_A_VERSION] &&
	    mnl_attr_validate(tb[DFKV_A_VERSION], MNL_TYPE_NUL_STRING) == 0)
		snprintf(v->text, sizeof(v->text), "%s",
			 mnl_attr_get_str(tb[DFKV_A_VERSION]));
	if (tb[DFKV_A_ABI_VERSION]) {
		v->abi = mnl_attr_get_u32(tb[DFKV_A_ABI_VERSION]);
		v->has_abi = true;
	}
	return MNL_CB_OK;
}

int version_main(int argc, char *argv[])
{
	char buf[MNL_SOCKET_BUFFER_SIZE];
	struct version v = { .text = "unknown" };
	struct dfkv_genl g;
	struct nlmsghdr *nlh;
	int ret;

	if (wants_help(argc, argv))
		return print_help(help);
	if (argc > 1)
		return usage_error("version", "unexpected argument '%s'", argv[1]);

	printf("dfkvctl %s (libdfkv %s, ABI %d)\n", DFKV_VERSION,
	       dfkv_version(), DFKV_ABI_VERSION);
	fflush(stdout);
	ret = dfkv_genl_open(&g);
	if (ret == -ENOENT) {
		printf("dfkv.ko not loaded\n");
		err_msg("the dfkv module is not loaded (no generic netlink family \"%s\")",
			DFKV_GENL_NAME);
		return EXIT_FAIL;
	}
	if (ret) {
		err_msg("cannot open generic netlink: %s", strerror(-ret));
		return EXIT_FAIL;
	}
	nlh = dfkv_genl_msg(&g, buf, DFKV_CMD_VERSION_GET, 0);
	ret = dfkv_genl_talk(&g, nlh, version_cb, &v);
	if (ret) {
		ret = nl_error(&g, ret, "version");
		dfkv_genl_close(&g);
		return ret == EXIT_NOTFOUND ? EXIT_FAIL : ret;
	}
	dfkv_genl_close(&g);
	if (v.has_abi)
		printf("dfkv.ko %s (ABI %u)\n", v.text, v.abi);
	else
		printf("dfkv.ko %s (ABI unknown)\n", v.text);
	if (!v.has_abi || v.abi != DFKV_ABI_VERSION) {
		err_msg("ABI mismatch: dfkvctl speaks ABI %d, the module ABI %s",
			DFKV_ABI_VERSION, v.has_abi ? "differs" : "unknown");
		return EXIT_FAIL;
	}
	return EXIT_OK;
}
