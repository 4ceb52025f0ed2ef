// SPDX-License-Identifier: (GPL-2.0 WITH Linux-syscall-note) OR MIT
/*
 * libdfkv digests: SHA-256 (identity, SPEC 1.1/1.3) and MD5 (Ketama ring
 * points, SPEC 1.4) through OpenSSL's EVP interface, plus the size-
 * delimited struct copy-in used by every public entry point taking a
 * versioned struct.
 */
#include <openssl/evp.h>

#include "util.h"

static int digest(const EVP_MD *md, const struct dfkv_part *parts, size_t n,
		  uint8_t *out, unsigned int want)
{
	EVP_MD_CTX *ctx = EVP_MD_CTX_new();
	unsigned int got = 0;
	int ok;

	if (!ctx)
		return DFKV_E_NOMEM;
	ok = EVP_DigestInit_ex(ctx, md, NULL);
	for (size_t i = 0; ok && i < n; i++)
		ok = EVP_DigestUpdate(ctx, parts[i].ptr, parts[i].len);
	if (ok)
		ok = EVP_DigestFinal_ex(ctx, out, &got);
	EVP_MD_CTX_free(ctx);
	return ok && got == want ? 0 : DFKV_E_SYS;
}

int dfkv_sha256(const struct dfkv_part *parts, size_t n, uint8_t out[32])
{
	return digest(EVP_sha256(), parts, n, out, 32);
}

int dfkv_md5(const void *p, size_t len, uint8_t out[16])
{
	struct dfkv_part iov = { p, len };

	return digest(EVP_md5(), &iov, 1, out, 16);
}

int dfkv_copy_struct(void *dst, size_t dst_size, const void *src,
		     size_t min_size)
{
	uint32_t size;

	if (!src)
		return DFKV_E_INVAL;
	memcpy(&size, src, sizeof(size));
	if (size < min_size)
		return DFKV_E_INVAL;
	for (size_t i = dst_size; i < size; i++)
		if (((const uint8_t *)src)[i])
			return DFKV_E_INVAL;
	memset(dst, 0, dst_size);
	memcpy(dst, src, size < dst_size ? size : dst_size);
	return 0;
}
