/* SPDX-License-Identifier: (GPL-2.0 WITH Linux-syscall-note) OR MIT */
/*
 * libdfkv internal helpers shared by every file of the library: little-
 * endian loads and stores, span checks, size-delimited struct copy-in, and
 * the digest wrappers over OpenSSL's EVP (digest.c).  Nothing here is
 * exported.
 */
#ifndef DFKV_LIB_UTIL_H
#define DFKV_LIB_UTIL_H

#include <stddef.h>
#include <stdint.h>
#include <assert.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "dfkv.h"

static inline void dfkv_put_le32(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static inline void dfkv_put_le64(uint8_t *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static inline uint32_t dfkv_get_le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
	       (uint32_t)p[3] << 24;
}

static inline uint64_t dfkv_get_le64(const uint8_t *p)
{
	return (uint64_t)dfkv_get_le32(p) | (uint64_t)dfkv_get_le32(p + 4) << 32;
}

static inline uint64_t dfkv_get_be64(const uint8_t *p)
{
	uint64_t v = 0;

	for (int i = 0; i < 8; i++)
		v = v << 8 | p[i];
	return v;
}

/* A caller span is usable: non-null, non-empty, addressable. */
static inline bool dfkv_span_ok(const void *ptr, uint64_t len)
{
	return ptr && len > 0 && len <= (uint64_t)(SIZE_MAX / 2);
}

/*
 * Copy a caller's size-delimited struct (first member: u32 size) into
 * dst (ours, dst_size bytes, zero-filled first).  A size below min_size,
 * or a larger struct with a non-zero tail beyond ours, is DFKV_E_INVAL.
 */
int dfkv_copy_struct(void *dst, size_t dst_size, const void *src,
		     size_t min_size);

/* Digests (digest.c).  A part list is hashed in order. */
struct dfkv_part {
	const void *ptr;
	size_t len;
};
int dfkv_sha256(const struct dfkv_part *parts, size_t n, uint8_t out[32]);
int dfkv_md5(const void *p, size_t len, uint8_t out[16]);

#endif /* DFKV_LIB_UTIL_H */
