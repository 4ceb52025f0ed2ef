// SPDX-License-Identifier: GPL-2.0
/*
 * dfkvctl exist: is a key stored, and how long is it (DFKV_IOC_EXIST).
 */
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
	return key_op_main("exist", help, DFKV_IOC_EXIST, true, argc, argv);
}
