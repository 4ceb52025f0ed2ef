// SPDX-License-Identifier: GPL-2.0
/*
 * dfkvctl probe: stored lengths of several keys at once (DFKV_IOC_PROBE).
 */
#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/ioctl.h>

#include "dfkvctl.h"

static const char help[] =
	"NAME\n"
	"    dfkvctl probe - stored lengths of several keys at once\n"
	"\n"
	"SYNOPSIS\n"
	"    dfkvctl probe NODE KEY...\n"
	"    dfkvctl probe NODE --ns NAMESPACE KEY... | --key KEY...\n"
	"\n"
	"DESCRIPTION\n"
	"    Binds /dev/dfkv to NODE and asks for the stored length of every KEY\n"
	"    (at most 4096) in one PROBE, which pins nothing.  Prints one line\n"
	"    per key, in order: the key as given, then its stored length in\n"
	"    bytes or \"absent\".\n"
	"\n"
	"OPTIONS\n"
	"    --ns, --ns-hex, --key, --key-hex   see KEYS (--key repeats)\n"
	"\n"
	KEY_HELP
	"EXIT STATUS\n"
	"    0 every key is stored; 1 at least one is absent (a count on\n"
	"    stderr) or no such node; 2 usage error; 3 any other status or\n"
	"    error.\n"
	"\n"
	"EXAMPLES\n"
	"    dfkvctl probe kv0 0123456789abcdef:00112233445566778899aabbccddeeff \\\n"
	"                      0123456789abcdef:ffeeddccbbaa99887766554433221100\n"
	"    dfkvctl probe kv0 --ns my-model block-0 block-1 block-2\n";

int probe_main(int argc, char *argv[])
{
	struct dfkv_ioc_keys k = { .size = sizeof(k) };
	struct key_args *ka = calloc(1, sizeof(*ka));
	struct dfkv_key *keys = NULL;
	uint64_t *lens = NULL;
	const char *node;
	char what[128];
	size_t i, absent = 0;
	int fd, ret, rc;

	if (!ka) {
		err_msg("probe: %s", strerror(ENOMEM));
		return EXIT_FAIL;
	}
	ret = key_args_getopt(ka, "probe", help, argc, argv);
	if (ret >= 0)
		goto out;
	ret = data_args_finish("probe", argc, argv, ka, &node, true);
	if (ret)
		goto out;
	keys = calloc(ka->n, sizeof(*keys));
	lens = calloc(ka->n, sizeof(*lens));
	if (!keys || !lens) {
		err_msg("probe: %s", strerror(ENOMEM));
		ret = EXIT_FAIL;
		goto out;
	}
	for (i = 0; i < ka->n; i++) {
		ret = key_args_resolve(ka, "probe", i, &keys[i]);
		if (ret)
			goto out;
	}
	fd = dev_bind(node);
	if (fd < 0) {
		ret = -fd;
		goto out;
	}
	k.count = (uint32_t)ka->n;
	k.keys = (uintptr_t)keys;
	k.results = (uintptr_t)lens;
	rc = ioctl(fd, DFKV_IOC_PROBE, &k);
	snprintf(what, sizeof(what), "probe %s", node);
	ret = op_result(what, rc, k.status);
	close(fd);
	if (ret)
		goto out;
	for (i = 0; i < ka->n; i++) {
		if (lens[i])
			printf("%s %llu\n", ka->keys[i],
			       (unsigned long long)lens[i]);
		else
			printf("%s absent\n", ka->keys[i]);
		absent += !lens[i];
	}
	if (absent) {
		fflush(stdout);
		err_msg("probe: %zu of %zu keys absent", absent, ka->n);
		ret = EXIT_NOTFOUND;
	}
out:
	free(keys);
	free(lens);
	key_args_free(ka);
	free(ka);
	return ret;
}
