// SPDX-License-Identifier: GPL-2.0
/*
 * dfkvctl rm: remove a key (DFKV_IOC_REMOVE).
 */
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
	return key_op_main("rm", help, DFKV_IOC_REMOVE, false, argc, argv);
}
