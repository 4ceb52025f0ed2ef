/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What the tests of libdfkv's scatter-gather calls share (the VM's
 * selftests/dfkv_client_sg.c and selftests/unit/test_client_sg.c):
 * splitting a buffer into an iovec list, and the range rules of
 * dfkv_get_sg checked case by case from the table in sg-ranges.json
 * (which unit/test_client_sg.py reads too).  The checks use the harness's
 * EXPECT/ASSERT: include this after kselftest_harness.h.
 */
#ifndef DFKV_SELFTEST_CLIENT_SG_H
#define DFKV_SELFTEST_CLIENT_SG_H

#include <stdint.h>
#include <string.h>
#include <json-c/json.h>

#include <dfkv.h>
#include "names_gen.h"

/* The largest value and the most buffers sg-ranges.json may ask for. */
#define SG_RANGES_VALUE_MAX	16384
#define SG_RANGES_BUFS_MAX	8

/*
 * buf (len bytes) split into iovecs of the sizes in pat (np of them,
 * repeated), the last one taking the rest.  Returns the count (at most
 * max).
 */
static inline size_t sg_split(void *buf, uint64_t len, const uint64_t *pat,
			      size_t np, struct dfkv_iov *iov, size_t max)
{
	uint64_t off = 0;
	size_t n = 0;

	while (n < max && (off < len || !n)) {
		uint64_t k = pat[n % np];

		if (k > len - off || n == max - 1)
			k = len - off;
		iov[n++] = (struct dfkv_iov){ (uint8_t *)buf + off, k };
		off += k;
	}
	return n;
}

/* Field k of o as a number (UINT64_MAX when o has none). */
static inline uint64_t sg_ranges_u64(json_object *o, const char *k)
{
	json_object *v;

	return json_object_object_get_ex(o, k, &v) ?
		(uint64_t)json_object_get_int64(v) : UINT64_MAX;
}

/* The status a case names ("ok", "too_large"...), -1 for none. */
static inline int sg_ranges_status(json_object *o)
{
	json_object *v;
	const char *name;

	if (!json_object_object_get_ex(o, "status", &v))
		return -1;
	name = json_object_get_string(v);
	for (uint32_t s = 0; s < __DFKV_STATUS_MAX; s++)
		if (dfkv_status_str(s) && !strcmp(dfkv_status_str(s), name))
			return (int)s;
	return -1;
}

/*
 * Every case of the table at path against c: a value made by fill (seed
 * 9) stored under "range", read back by dfkv_get_sg into the case's
 * first buffers of buffer_sizes; the status, the bytes written, the
 * stored length and (when OK) the bytes themselves must be the case's.
 */
static inline void sg_check_ranges(struct __test_metadata *_metadata,
				  struct dfkv_client *c, const char *path,
				  void (*fill)(uint8_t *, size_t, unsigned int))
{
	static uint8_t val[SG_RANGES_VALUE_MAX], got[SG_RANGES_VALUE_MAX];
	struct dfkv_iov giov[SG_RANGES_BUFS_MAX];
	json_object *root = json_object_from_file(path), *sizes, *cases;
	uint64_t vlen, off = 0, len, stored;
	size_t nb;

	ASSERT_NE(NULL, root) TH_LOG("%s", path);
	vlen = sg_ranges_u64(root, "value_len");
	ASSERT_GE(sizeof(val), vlen);
	ASSERT_TRUE(json_object_object_get_ex(root, "buffer_sizes", &sizes));
	ASSERT_TRUE(json_object_object_get_ex(root, "cases", &cases));
	nb = json_object_array_length(sizes);
	ASSERT_GE(SG_RANGES_BUFS_MAX, nb);
	for (size_t i = 0; i < nb; i++) {
		uint64_t k = (uint64_t)json_object_get_int64(
			json_object_array_get_idx(sizes, i));

		ASSERT_GE(sizeof(got) - off, k);
		giov[i] = (struct dfkv_iov){ k ? got + off : NULL, k };
		off += k;
	}
	fill(val, vlen, 9);
	ASSERT_EQ(0, dfkv_put(c, "range", 5, val, vlen));
	for (size_t i = 0; i < json_object_array_length(cases); i++) {
		json_object *t = json_object_array_get_idx(cases, i);
		uint64_t toff = sg_ranges_u64(t, "offset");
		uint64_t data_len = sg_ranges_u64(t, "data_len");
		uint64_t n = sg_ranges_u64(t, "buffers");
		int status = sg_ranges_status(t);

		ASSERT_LE(0, status) TH_LOG("case %zu", i);
		ASSERT_GE(nb, n) TH_LOG("case %zu", i);
		memset(got, 0, sizeof(got));
		len = stored = 77;
		EXPECT_EQ(status,
			  dfkv_get_sg(c, "range", 5, toff,
				      sg_ranges_u64(t, "length"), giov,
				      (size_t)n, &len, &stored)) {
			TH_LOG("case %zu", i);
		}
		EXPECT_EQ(data_len, len);
		EXPECT_EQ(vlen, stored);
		if (status == DFKV_STATUS_OK)
			EXPECT_EQ(0, memcmp(val + toff, got, len)) {
				TH_LOG("case %zu", i);
			}
	}
	json_object_put(root);
}

#endif /* DFKV_SELFTEST_CLIENT_SG_H */
