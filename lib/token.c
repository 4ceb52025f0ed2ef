// SPDX-License-Identifier: (GPL-2.0 WITH Linux-syscall-note) OR MIT
/*
 * The mdsd bearer token file and the tenant secret file: see token.h for
 * the rules.  Both are read by one function; what the content must be is
 * the only difference.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <openssl/crypto.h>

#include "token.h"

static int fail(char *err, size_t errlen, int ret, const char *kind,
		const char *path, const char *why)
{
	snprintf(err, errlen, "%s file %s: %s", kind, path, why);
	return ret;
}

/* The token rules of token.h for a file of kind ("token", "secret"). */
static int token_read(const char *kind, const char *path, char *tok,
		      size_t cap, char *err, size_t errlen)
{
	char buf[DFKV_TOKEN_MAX + 1];
	struct stat st;
	size_t len = 0;
	int fd, ret = 0;

	tok[0] = 0;
	if (cap < sizeof(buf))
		return fail(err, errlen, -EINVAL, kind, path, "buffer too small");
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	if (fd < 0)
		return fail(err, errlen, -errno, kind, path, strerror(errno));
	if (fstat(fd, &st)) {
		ret = fail(err, errlen, -errno, kind, path, strerror(errno));
		goto out;
	}
	if (!S_ISREG(st.st_mode)) {
		ret = fail(err, errlen, -EINVAL, kind, path, "not a regular file");
		goto out;
	}
	if (st.st_mode & (S_IRWXG | S_IRWXO)) {
		ret = fail(err, errlen, -EPERM, kind, path,
			   "group or other may access it (chmod 600)");
		goto out;
	}
	/* Read one byte more than allowed: a longer file is refused. */
	while (len < sizeof(buf)) {
		ssize_t n = read(fd, buf + len, sizeof(buf) - len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			ret = fail(err, errlen, -errno, kind, path, strerror(errno));
			goto out;
		}
		if (!n)
			break;
		len += (size_t)n;
	}
	if (len > DFKV_TOKEN_MAX) {
		ret = fail(err, errlen, -EFBIG, kind, path, "larger than 4096 bytes");
		goto out;
	}
	if (len && buf[len - 1] == '\n')
		len--;
	if (!len) {
		ret = fail(err, errlen, -EINVAL, kind, path, "empty");
		goto out;
	}
	for (size_t i = 0; i < len; i++)
		if (buf[i] < 0x21 || buf[i] > 0x7e) {
			ret = fail(err, errlen, -EINVAL, kind, path,
				   "it must be printable ASCII without spaces");
			goto out;
		}
	memcpy(tok, buf, len);
	tok[len] = 0;
out:
	explicit_bzero(buf, sizeof(buf));
	close(fd);
	return ret;
}

int dfkv_token_read(const char *path, char *tok, size_t cap, char *err,
		    size_t errlen)
{
	return token_read("token", path, tok, cap, err, errlen);
}

int dfkv_secret_read(const char *path, uint8_t secret[32], char *err,
		     size_t errlen)
{
	char tok[DFKV_TOKEN_MAX + 1];
	int ret = token_read("secret", path, tok, sizeof(tok), err, errlen);
	bool hex = !ret && strlen(tok) == 64;

	for (size_t i = 0; hex && i < 32; i++) {
		int hi = OPENSSL_hexchar2int((unsigned char)tok[2 * i]);
		int lo = OPENSSL_hexchar2int((unsigned char)tok[2 * i + 1]);

		hex = hi >= 0 && lo >= 0;
		if (hex)
			secret[i] = (uint8_t)(hi << 4 | lo);
	}
	if (!ret && !hex)
		ret = fail(err, errlen, -EINVAL, "secret", path,
			   "it must hold exactly 64 hex digits (and one optional newline)");
	if (ret)
		explicit_bzero(secret, 32);
	explicit_bzero(tok, sizeof(tok));
	return ret;
}
