// SPDX-License-Identifier: GPL-2.0
/*
 * dfkvctl: the /dev/dfkv side shared by put, get, exist, rm and probe:
 * keys from the command line (hex block keys, or namespace + key strings
 * through libdfkv's identity functions), binding to a node, and turning
 * ioctl results into messages and exit statuses.
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/ioctl.h>

#include "dfkv.h"	/* libdfkv */
#include "dfkvctl.h"

int key_args_add(struct key_args *ka, const char *cmd, const char *arg)
{
	if (ka->n == DFKV_KEYS_MAX)
		return usage_error(cmd, "at most %d keys", DFKV_KEYS_MAX);
	ka->keys[ka->n] = arg;
	ka->kind[ka->n] = KEY_POSITIONAL;
	ka->n++;
	return 0;
}

int key_args_opt(struct key_args *ka, const char *cmd, int opt,
		 const char *arg)
{
	int ret;

	switch (opt) {
	case 'N':
	case 'X':
		if (ka->ns)
			return usage_error(cmd, "only one namespace (--ns or --ns-hex)");
		if (opt == 'N') {
			ka->ns = (const uint8_t *)arg;
			ka->ns_len = strlen(arg);
		} else {
			if (parse_hex_alloc(arg, &ka->ns_alloc, &ka->ns_len))
				return usage_error(cmd, "bad --ns-hex '%s'", arg);
			ka->ns = ka->ns_alloc;
		}
		if (!ka->ns_len)
			return usage_error(cmd, "the namespace must not be empty");
		return 0;
	case 'k':
	case 'K':
		ret = key_args_add(ka, cmd, arg);
		if (!ret)
			ka->kind[ka->n - 1] = opt == 'k' ? KEY_STRING : KEY_HEX;
		return ret;
	default:
		return EXIT_USAGE;
	}
}

int key_args_getopt(struct key_args *ka, const char *cmd, const char *help,
		    int argc, char *argv[])
{
	static const struct option opts[] = {
		KEY_OPTIONS,
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 }
	};
	int c, ret;

	optind = 0;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
		switch (c) {
		case 'h':
			return print_help(help);
		case 'N': case 'X': case 'k': case 'K':
			ret = key_args_opt(ka, cmd, c, optarg);
			if (ret)
				return ret;
			break;
		default:
			return opt_error(cmd, c, argv);
		}
	}
	return -1;
}

void key_args_free(struct key_args *ka)
{
	free(ka->ns_alloc);
	ka->ns_alloc = NULL;
}

int data_args_finish(const char *cmd, int argc, char *argv[],
		     struct key_args *ka, const char **node, bool multi)
{
	int ret;

	if (optind >= argc)
		return usage_error(cmd, "missing NODE");
	*node = argv[optind++];
	while (optind < argc) {
		ret = key_args_add(ka, cmd, argv[optind++]);
		if (ret)
			return ret;
	}
	if (!ka->n)
		return usage_error(cmd, "missing KEY");
	if (!multi && ka->n > 1)
		return usage_error(cmd, "one KEY only (got %zu)", ka->n);
	return 0;
}

/* "TENANTHEX:IDHEX": 16 hex digits, a colon, 32 hex digits. */
static int parse_block_key(const char *s, struct dfkv_key *k)
{
	uint8_t t[8];
	char th[17];
	int i;

	if (strlen(s) != KEY_STR_LEN - 1 || s[16] != ':')
		return -EINVAL;
	memcpy(th, s, 16);
	th[16] = '\0';
	if (parse_hex(th, 16, t) || parse_hex(s + 17, 32, k->id))
		return -EINVAL;
	k->tenant = 0;
	for (i = 0; i < 8; i++)
		k->tenant = k->tenant << 8 | t[i];
	return 0;
}

int key_args_resolve(const struct key_args *ka, const char *cmd, size_t i,
		     struct dfkv_key *out)
{
	const char *s = ka->keys[i];
	uint8_t *kb = NULL;
	size_t klen;
	int ret;

	if (ka->kind[i] == KEY_POSITIONAL && !ka->ns) {
		if (parse_block_key(s, out))
			return usage_error(cmd, "bad key '%s': expected TENANTHEX:IDHEX (16 and 32 hex digits), or --ns NAMESPACE with a key string",
					   s);
		return 0;
	}
	if (!ka->ns)
		return usage_error(cmd, "--key and --key-hex need --ns or --ns-hex");
	if (ka->kind[i] == KEY_HEX) {
		if (parse_hex_alloc(s, &kb, &klen))
			return usage_error(cmd, "bad --key-hex '%s'", s);
	} else {
		klen = strlen(s);
		if (!klen)
			return usage_error(cmd, "the key must not be empty");
	}
	ret = dfkv_block_key(ka->ns, ka->ns_len, kb ? kb : (const uint8_t *)s,
			     klen, out);
	free(kb);
	if (ret) {
		err_msg("%s: cannot compute the block key: %s", cmd,
			dfkv_strerror(ret));
		return EXIT_FAIL;
	}
	return 0;
}

char *key_str(const struct dfkv_key *k, char *buf)
{
	int i;

	snprintf(buf, KEY_STR_LEN, "%016llx:", (unsigned long long)k->tenant);
	for (i = 0; i < DFKV_OBJECT_ID_LEN; i++)
		snprintf(buf + 17 + 2 * i, 3, "%02x", k->id[i]);
	return buf;
}

int dev_bind(const char *node)
{
	struct dfkv_ioc_bind b = { .size = sizeof(b) };
	int fd;

	if (strlen(node) >= sizeof(b.node)) {
		err_msg("node name '%s' is too long (at most %d characters)",
			node, DFKV_NODE_NAME_MAX - 1);
		return -EXIT_USAGE;
	}
	strcpy(b.node, node);
	fd = open("/dev/dfkv", O_RDWR | O_CLOEXEC);
	if (fd < 0) {
		if (errno == ENOENT || errno == ENXIO || errno == ENODEV)
			err_msg("/dev/dfkv: %s (is the dfkv module loaded?)",
				strerror(errno));
		else if (errno == EACCES || errno == EPERM)
			err_msg("/dev/dfkv: %s (root or the dfkv group is needed)",
				strerror(errno));
		else
			err_msg("/dev/dfkv: %s", strerror(errno));
		return -EXIT_FAIL;
	}
	if (ioctl(fd, DFKV_IOC_BIND, &b) < 0) {
		int e = errno;

		close(fd);
		if (e == ENOENT) {
			err_msg("no node '%s' in this network namespace", node);
			return -EXIT_NOTFOUND;
		}
		err_msg("bind to node '%s': %s", node, strerror(e));
		return -EXIT_FAIL;
	}
	return fd;
}

static const char *status_upper(uint32_t status, char *buf, size_t len)
{
	const char *n = status_name(status);
	size_t i;

	for (i = 0; n[i] && i + 1 < len; i++)
		buf[i] = (char)toupper((unsigned char)n[i]);
	buf[i] = '\0';
	return buf;
}

int op_result(const char *what, int rc, uint32_t status)
{
	char name[32];

	if (rc < 0) {
		if (errno == ENODEV)
			err_msg("%s: the node is being deleted", what);
		else
			err_msg("%s: %s", what, strerror(errno));
		return EXIT_FAIL;
	}
	if (status == DFKV_STATUS_OK)
		return EXIT_OK;
	err_msg("%s: %s (%s)", what, status_upper(status, name, sizeof(name)),
		dfkv_strerror((int)status));
	return status == DFKV_STATUS_NOT_FOUND ? EXIT_NOTFOUND : EXIT_FAIL;
}

/*
 * A data command on one key and nothing else (exist, rm): options, bind,
 * the ioctl, the result; print_len prints the stored length on success.
 */
int key_op_main(const char *cmd, const char *help, unsigned long ioc,
		bool print_len, int argc, char *argv[])
{
	struct key_args ka = { 0 };
	struct dfkv_ioc_op o = { .size = sizeof(o) };
	const char *node;
	char ks[KEY_STR_LEN], what[128];
	int fd, ret, rc;

	ret = key_args_getopt(&ka, cmd, help, argc, argv);
	if (ret >= 0)
		goto out;
	ret = data_args_finish(cmd, argc, argv, &ka, &node, false);
	if (!ret)
		ret = key_args_resolve(&ka, cmd, 0, &o.key);
	if (ret)
		goto out;
	fd = dev_bind(node);
	if (fd < 0) {
		ret = -fd;
		goto out;
	}
	rc = ioctl(fd, ioc, &o);
	snprintf(what, sizeof(what), "%s %s %s", cmd, node, key_str(&o.key, ks));
	ret = op_result(what, rc, o.status);
	if (!ret && print_len)
		printf("%llu\n", (unsigned long long)o.stored_len);
	close(fd);
out:
	key_args_free(&ka);
	return ret;
}
