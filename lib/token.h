/* SPDX-License-Identifier: (GPL-2.0 WITH Linux-syscall-note) OR MIT */
/*
 * The small secret files dfkv reads: the mdsd bearer token file (SPEC.md
 * 7), read the same way by mdsd (which checks writes), libdfkv's discovery
 * and dfkvctl (which send it), and the tenant secret file (SPEC.md 9),
 * read by libdfkv's clients and by dfkvctl, so that every side agrees on
 * what the token or the secret is.  Internal to libdfkv; the tools link
 * it from libdfkv.a.
 */
#ifndef DFKV_LIB_TOKEN_H
#define DFKV_LIB_TOKEN_H

#include <stddef.h>
#include <stdint.h>

#define DFKV_TOKEN_MAX	4096	/* file bytes, the newline included */

/*
 * Read the token in path into tok (cap >= DFKV_TOKEN_MAX + 1 bytes,
 * NUL-terminated).  The file must be a regular file without any group or
 * other permission bit (mode 0600 or 0400), of at most DFKV_TOKEN_MAX
 * bytes; one trailing "\n" is stripped; what remains must be 1 or more
 * bytes of printable ASCII without spaces (0x21-0x7e), so that it fits
 * an "Authorization: Bearer" header as is.  Returns 0, or -errno with a
 * sentence naming the file and the reason in err.
 */
int dfkv_token_read(const char *path, char *tok, size_t cap, char *err,
		    size_t errlen);

/*
 * Read a tenant secret file into secret: the same rules as a token file,
 * and what remains must be exactly 64 hex digits (either case), the 32
 * bytes of the secret.  Returns 0, or -errno (-EINVAL for anything but
 * 64 hex digits) with a sentence in err; secret is zeroed on failure.
 */
int dfkv_secret_read(const char *path, uint8_t secret[32], char *err,
		     size_t errlen);

#endif /* DFKV_LIB_TOKEN_H */
