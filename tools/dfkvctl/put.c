// SPDX-License-Identifier: GPL-2.0
/*
 * dfkvctl put: store a value through /dev/dfkv (DFKV_IOC_PUT).
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
	"    dfkvctl put - store a value under a key\n"
	"\n"
	"SYNOPSIS\n"
	"    dfkvctl put NODE KEY (--file FILE | --value STRING)\n"
	"    dfkvctl put NODE --ns NAMESPACE [--key] KEY (--file FILE | --value STRING)\n"
	"\n"
	"DESCRIPTION\n"
	"    Binds /dev/dfkv to NODE and stores the value under KEY with one\n"
	"    PUT.  Values are immutable: storing a key that is already present\n"
	"    succeeds and keeps the stored bytes (a note on stderr says so when\n"
	"    the lengths differ).  An empty value is INVALID; a value above the\n"
	"    node's max-value is TOO_LARGE.\n"
	"\n"
	"OPTIONS\n"
	"    -f, --file FILE       the value is the content of FILE (- for stdin)\n"
	"    -v, --value STRING    the value is STRING (without a trailing NUL)\n"
	"    --ns, --ns-hex, --key, --key-hex   see KEYS\n"
	"\n"
	KEY_HELP
	"EXIT STATUS\n"
	"    0 stored (OK); 1 no such node; 2 usage error; 3 any other status\n"
	"    (printed by name, e.g. CACHE_FULL, TOO_LARGE) or error.\n"
	"\n"
	"EXAMPLES\n"
	"    dfkvctl put kv0 0123456789abcdef:00112233445566778899aabbccddeeff -v hello\n"
	"    dfkvctl put kv0 --ns my-model --key block-0 --file block0.bin\n";

static int read_all(const char *path, uint8_t **out, size_t *len)
{
	size_t cap = 1 << 16, n = 0;
	uint8_t *buf = malloc(cap), *nb;
	int fd = strcmp(path, "-") ? open(path, O_RDONLY | O_CLOEXEC) : 0;
	ssize_t r;

	if (!buf || fd < 0) {
		err_msg("put: %s: %s", path, strerror(buf ? errno : ENOMEM));
		free(buf);
		return EXIT_FAIL;
	}
	for (;;) {
		if (n == cap) {
			cap *= 2;
			nb = realloc(buf, cap);
			if (!nb) {
				err_msg("put: %s: %s", path, strerror(ENOMEM));
				goto fail;
			}
			buf = nb;
		}
		r = read(fd, buf + n, cap - n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			err_msg("put: %s: %s", path, strerror(errno));
			goto fail;
		}
		if (!r)
			break;
		n += (size_t)r;
	}
	if (fd)
		close(fd);
	*out = buf;
	*len = n;
	return 0;
fail:
	if (fd)
		close(fd);
	free(buf);
	return EXIT_FAIL;
}

int put_main(int argc, char *argv[])
{
	static const struct option opts[] = {
		{ "file", required_argument, NULL, 'f' },
		{ "value", required_argument, NULL, 'v' },
		KEY_OPTIONS,
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 }
	};
	struct key_args ka = { 0 };
	struct dfkv_ioc_op o = { .size = sizeof(o) };
	const char *node, *file = NULL, *value = NULL;
	uint8_t *data = NULL;
	size_t len = 0;
	char ks[KEY_STR_LEN], what[128];
	int c, fd, ret, rc;

	optind = 0;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":f:v:h", opts, NULL)) != -1) {
		switch (c) {
		case 'f':
			file = optarg;
			break;
		case 'v':
			value = optarg;
			break;
		case 'h':
			ret = print_help(help);
			goto out;
		case 'N': case 'X': case 'k': case 'K':
			ret = key_args_opt(&ka, "put", c, optarg);
			if (ret)
				goto out;
			break;
		default:
			ret = opt_error("put", c, argv);
			goto out;
		}
	}
	ret = data_args_finish("put", argc, argv, &ka, &node, false);
	if (ret)
		goto out;
	if (!!file == !!value) {
		ret = usage_error("put", "give the value with exactly one of --file or --value");
		goto out;
	}
	ret = key_args_resolve(&ka, "put", 0, &o.key);
	if (ret)
		goto out;
	if (file) {
		ret = read_all(file, &data, &len);
		if (ret)
			goto out;
	} else {
		len = strlen(value);
	}
	fd = dev_bind(node);
	if (fd < 0) {
		ret = -fd;
		goto out;
	}
	o.buf = (uintptr_t)(data ? (const void *)data : (const void *)value);
	o.length = len;
	rc = ioctl(fd, DFKV_IOC_PUT, &o);
	snprintf(what, sizeof(what), "put %s %s", node, key_str(&o.key, ks));
	ret = op_result(what, rc, o.status);
	if (!ret && o.stored_len != len)
		fprintf(stderr, "%s: note: %s was already stored with %llu bytes; the stored value is kept\n",
			prog, ks, (unsigned long long)o.stored_len);
	close(fd);
out:
	free(data);
	key_args_free(&ka);
	return ret;
}
