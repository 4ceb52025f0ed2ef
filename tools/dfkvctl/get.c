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

/* What the command line asked for. */
struct get_args {
	struct key_args ka;
	const char *node, *out;
	uint64_t offset, length;
};

/*
 * Parse the options, the node and the key; -1 when the caller goes on,
 * else the exit status to return (help printed, or a usage error).
 */
static int get_getopt(struct get_args *a, int argc, char *argv[])
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
	int c, ret;

	optind = 0;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":o:h", opts, NULL)) != -1) {
		switch (c) {
		case OPT_OFFSET:
			if (parse_size(optarg, &a->offset))
				return usage_error("get", "bad --offset '%s'",
						   optarg);
			break;
		case OPT_LENGTH:
			if (parse_size(optarg, &a->length))
				return usage_error("get", "bad --length '%s'",
						   optarg);
			break;
		case 'o':
			a->out = optarg;
			break;
		case 'h':
			return print_help(help);
		case 'N': case 'X': case 'k': case 'K':
			ret = key_args_opt(&a->ka, "get", c, optarg);
			if (ret)
				return ret;
			break;
		default:
			return opt_error("get", c, argv);
		}
	}
	ret = data_args_finish("get", argc, argv, &a->ka, &a->node, false);
	return ret ? ret : -1;
}

/*
 * Read the range of key into *bufp (malloc()ed, the caller frees it); o
 * holds the GET's result.  The stored length (DFKV_IOC_EXIST) sizes the
 * buffer; the read is retried if the key changes length meanwhile.
 * Returns the exit status.
 */
static int get_read(int fd, const char *what, const struct dfkv_key *key,
		    const struct get_args *a, uint8_t **bufp,
		    struct dfkv_ioc_op *o)
{
	uint64_t stored, need;
	int rc, ret, tries;

	memset(o, 0, sizeof(*o));
	o->size = sizeof(*o);
	o->key = *key;
	rc = ioctl(fd, DFKV_IOC_EXIST, o);
	ret = op_result(what, rc, o->status);
	if (ret)
		return ret;
	stored = o->stored_len;
	for (tries = 0; tries < 4; tries++) {
		need = a->offset <= stored ? stored - a->offset : 0;
		if (a->length && a->length < need)
			need = a->length;
		free(*bufp);
		*bufp = malloc(need ? need : 1);
		if (!*bufp) {
			err_msg("%s: %s", what, strerror(ENOMEM));
			return EXIT_FAIL;
		}
		memset(o, 0, sizeof(*o));
		o->size = sizeof(*o);
		o->key = *key;
		o->offset = a->offset;
		o->length = a->length;
		o->buf = (uintptr_t)*bufp;
		o->cap = need;
		rc = ioctl(fd, DFKV_IOC_GET, o);
		if (rc == 0 && o->status == DFKV_STATUS_TOO_LARGE &&
		    o->stored_len != stored) {
			stored = o->stored_len;
			continue;
		}
		break;
	}
	return op_result(what, rc, o->status);
}

/*
 * Write the bytes read to out (created only now), or to standard output
 * when out is NULL.  Returns the exit status.
 */
static int get_write(const char *out, const uint8_t *buf, size_t n)
{
	int ofd, rc;

	if (out) {
		ofd = open(out, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
		if (ofd < 0) {
			err_msg("get: %s: %s", out, strerror(errno));
			return EXIT_FAIL;
		}
	} else {
		ofd = STDOUT_FILENO;
	}
	rc = write_all(ofd, buf, n);
	if (ofd != STDOUT_FILENO && close(ofd) && !rc)
		rc = -errno;
	if (rc) {
		err_msg("get: %s: %s", out ? out : "stdout", strerror(-rc));
		return EXIT_FAIL;
	}
	return EXIT_OK;
}

int get_main(int argc, char *argv[])
{
	struct get_args a = { 0 };
	struct dfkv_ioc_op o;
	struct dfkv_key key;
	uint8_t *buf = NULL;
	char ks[KEY_STR_LEN], what[128];
	int fd = -1, ret;

	ret = get_getopt(&a, argc, argv);
	if (ret >= 0)
		goto out;
	ret = key_args_resolve(&a.ka, "get", 0, &key);
	if (ret)
		goto out;
	fd = dev_bind(a.node);
	if (fd < 0) {
		ret = -fd;
		goto out;
	}
	snprintf(what, sizeof(what), "get %s %s", a.node, key_str(&key, ks));
	ret = get_read(fd, what, &key, &a, &buf, &o);
	if (!ret)
		ret = get_write(a.out, buf, o.data_len);
out:
	if (fd >= 0)
		close(fd);
	free(buf);
	key_args_free(&a.ka);
	return ret;
}
