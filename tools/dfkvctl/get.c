// SPDX-License-Identifier: GPL-2.0
/*
 * dfkvctl get: read a value or a range of it through /dev/dfkv
 * (DFKV_IOC_EXIST for the length, then DFKV_IOC_GET).
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/ioctl.h>

#include "dfkvctl.h"

static const char help[] =
	"NAME\n"
	"    dfkvctl get - read a value, or a range of it\n"
	"\n"
	"SYNOPSIS\n"
	"    dfkvctl get NODE KEY [--offset N] [--length N] [--out FILE]\n"
	"    dfkvctl get NODE --ns NAMESPACE [--key] KEY [...]\n"
	"\n"
	"DESCRIPTION\n"
	"    Binds /dev/dfkv to NODE and writes the raw bytes of the value stored\n"
	"    under KEY (or of the range OFFSET..OFFSET+LENGTH) to standard output\n"
	"    or to FILE.  The range follows the protocol's rules: LENGTH 0 (the\n"
	"    default) means the whole remainder, a LENGTH past the end is\n"
	"    clamped, OFFSET equal to the stored length gives zero bytes, and an\n"
	"    OFFSET beyond it is INVALID.  FILE is only created once the read\n"
	"    succeeded.\n"
	"\n"
	"OPTIONS\n"
	"    --offset N            first byte to read (default 0)\n"
	"    --length N            bytes to read (default 0: up to the end)\n"
	"    -o, --out FILE        write to FILE instead of standard output\n"
	"    --ns, --ns-hex, --key, --key-hex   see KEYS\n"
	"    N accepts the K, M, G, T suffixes of SIZE (binary).\n"
	"\n"
	KEY_HELP
	"EXIT STATUS\n"
	"    0 the bytes were written; 1 NOT_FOUND (a short message on stderr)\n"
	"    or no such node; 2 usage error; 3 any other status (e.g. INVALID\n"
	"    for an offset past the end) or error.\n"
	"\n"
	"EXAMPLES\n"
	"    dfkvctl get kv0 0123456789abcdef:00112233445566778899aabbccddeeff\n"
	"    dfkvctl get kv0 --ns my-model block-0 --offset 4K --length 4K -o part.bin\n";

static int write_all(int fd, const uint8_t *p, size_t n)
{
	while (n) {
		ssize_t w = write(fd, p, n);

		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			return -errno;
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

int get_main(int argc, char *argv[])
{
	enum { OPT_OFFSET = 256, OPT_LENGTH };
	static const struct option opts[] = {
		{ "offset", required_argument, NULL, OPT_OFFSET },
		{ "length", required_argument, NULL, OPT_LENGTH },
		{ "out", required_argument, NULL, 'o' },
		KEY_OPTIONS,
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 }
	};
	struct key_args ka = { 0 };
	struct dfkv_ioc_op o;
	struct dfkv_key key;
	const char *node, *out = NULL;
	uint64_t offset = 0, length = 0, stored, need;
	uint8_t *buf = NULL;
	char ks[KEY_STR_LEN], what[128];
	int c, fd = -1, ofd, ret, rc, tries;

	optind = 0;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":o:h", opts, NULL)) != -1) {
		switch (c) {
		case OPT_OFFSET:
			if (parse_size(optarg, &offset)) {
				ret = usage_error("get", "bad --offset '%s'", optarg);
				goto out;
			}
			break;
		case OPT_LENGTH:
			if (parse_size(optarg, &length)) {
				ret = usage_error("get", "bad --length '%s'", optarg);
				goto out;
			}
			break;
		case 'o':
			out = optarg;
			break;
		case 'h':
			ret = print_help(help);
			goto out;
		case 'N': case 'X': case 'k': case 'K':
			ret = key_args_opt(&ka, "get", c, optarg);
			if (ret)
				goto out;
			break;
		default:
			ret = opt_error("get", c, argv);
			goto out;
		}
	}
	ret = data_args_finish("get", argc, argv, &ka, &node, false);
	if (ret)
		goto out;
	ret = key_args_resolve(&ka, "get", 0, &key);
	if (ret)
		goto out;
	fd = dev_bind(node);
	if (fd < 0) {
		ret = -fd;
		goto out;
	}
	snprintf(what, sizeof(what), "get %s %s", node, key_str(&key, ks));

	/* The stored length sizes the buffer; retry if the key changes. */
	memset(&o, 0, sizeof(o));
	o.size = sizeof(o);
	o.key = key;
	rc = ioctl(fd, DFKV_IOC_EXIST, &o);
	ret = op_result(what, rc, o.status);
	if (ret)
		goto out;
	stored = o.stored_len;
	for (tries = 0; tries < 4; tries++) {
		need = offset <= stored ? stored - offset : 0;
		if (length && length < need)
			need = length;
		free(buf);
		buf = malloc(need ? need : 1);
		if (!buf) {
			err_msg("%s: %s", what, strerror(ENOMEM));
			ret = EXIT_FAIL;
			goto out;
		}
		memset(&o, 0, sizeof(o));
		o.size = sizeof(o);
		o.key = key;
		o.offset = offset;
		o.length = length;
		o.buf = (uintptr_t)buf;
		o.cap = need;
		rc = ioctl(fd, DFKV_IOC_GET, &o);
		if (rc == 0 && o.status == DFKV_STATUS_TOO_LARGE &&
		    o.stored_len != stored) {
			stored = o.stored_len;
			continue;
		}
		break;
	}
	ret = op_result(what, rc, o.status);
	if (ret)
		goto out;
	if (out) {
		ofd = open(out, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
		if (ofd < 0) {
			err_msg("get: %s: %s", out, strerror(errno));
			ret = EXIT_FAIL;
			goto out;
		}
	} else {
		ofd = STDOUT_FILENO;
	}
	rc = write_all(ofd, buf, o.data_len);
	if (ofd != STDOUT_FILENO && close(ofd) && !rc)
		rc = -errno;
	if (rc) {
		err_msg("get: %s: %s", out ? out : "stdout", strerror(-rc));
		ret = EXIT_FAIL;
	}
out:
	if (fd >= 0)
		close(fd);
	free(buf);
	key_args_free(&ka);
	return ret;
}
