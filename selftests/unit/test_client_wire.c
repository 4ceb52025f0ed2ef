// SPDX-License-Identifier: GPL-2.0
/*
 * Unit tests of libdfkv's TCP wire codec (lib/wire.c, SPEC.md section 2):
 * exact byte layout of both prefixes, and rejection of truncated, hostile
 * or inconsistent frames (wrong epoch, unknown op, payload_len 2^63, GET
 * replies longer than asked, PROBE/LEASE data not matching the keys).
 */
#define _GNU_SOURCE
#include <string.h>

/* kselftest_harness.h (6.1) is not -Wextra clean */
#pragma GCC diagnostic ignored "-Wunused-parameter"
#pragma GCC diagnostic ignored "-Wsign-compare"
#pragma GCC diagnostic ignored "-Wmisleading-indentation"
#include "kselftest_harness.h"
#include "wire.h"
#include "dfkv.h"

TEST(request_prefix_layout)
{
	struct dfkv_wire_req r = {
		.epoch = 6, .op = DFKV_OP_GET,
		.tenant = 0x0102030405060708ULL, .offset = 0x10,
		.length = 0x20, .payload_len = 0,
	}, d;
	uint8_t b[DFKV_REQ_PREFIX_LEN];

	for (int i = 0; i < 16; i++)
		r.id[i] = (uint8_t)(0xa0 + i);
	dfkv_wire_req_encode(&r, b);
	EXPECT_EQ(6, b[0]);
	EXPECT_EQ(2, b[1]);
	EXPECT_EQ(0xa0, b[2]);
	EXPECT_EQ(0xaf, b[17]);
	EXPECT_EQ(0x08, b[18]);		/* tenant u64le */
	EXPECT_EQ(0x01, b[25]);
	EXPECT_EQ(0x10, b[26]);
	EXPECT_EQ(0x20, b[34]);
	EXPECT_EQ(0, b[42]);
	ASSERT_EQ(0, dfkv_wire_req_decode(b, sizeof(b), 1 << 20, &d));
	EXPECT_EQ(0, memcmp(&r.id, &d.id, 16));
	EXPECT_EQ(r.tenant, d.tenant);
	EXPECT_EQ(r.offset, d.offset);
	EXPECT_EQ(r.length, d.length);
	for (size_t n = 0; n < DFKV_REQ_PREFIX_LEN; n++)
		ASSERT_EQ(DFKV_E_RANGE, dfkv_wire_req_decode(b, n, 1 << 20, &d));
}

TEST(request_rejects_hostile)
{
	struct dfkv_wire_req r = { .epoch = 6, .op = DFKV_OP_PUT,
				   .payload_len = 100 }, d;
	uint8_t b[DFKV_REQ_PREFIX_LEN];

	dfkv_wire_req_encode(&r, b);
	EXPECT_EQ(0, dfkv_wire_req_decode(b, sizeof(b), 100, &d));
	EXPECT_EQ(DFKV_STATUS_INVALID, dfkv_wire_req_decode(b, sizeof(b), 99, &d));
	r.payload_len = 1ULL << 63;
	dfkv_wire_req_encode(&r, b);
	EXPECT_EQ(DFKV_STATUS_INVALID, dfkv_wire_req_decode(b, sizeof(b), 1 << 20, &d));
	EXPECT_EQ(1ULL << 63, d.payload_len);
	r.payload_len = 0;		/* zero-byte PUT */
	dfkv_wire_req_encode(&r, b);
	EXPECT_EQ(DFKV_STATUS_INVALID, dfkv_wire_req_decode(b, sizeof(b), 1 << 20, &d));
	r = (struct dfkv_wire_req){ .epoch = 7, .op = DFKV_OP_GET };
	dfkv_wire_req_encode(&r, b);
	EXPECT_EQ(DFKV_STATUS_INVALID, dfkv_wire_req_decode(b, sizeof(b), 1 << 20, &d));
	for (int op = 0; op < 256; op++) {
		r = (struct dfkv_wire_req){ .epoch = 6, .op = (uint8_t)op };
		dfkv_wire_req_encode(&r, b);
		if (op == 5 || op == 6 || op == 7 || op == 8 || op == 0 || op > 14)
			EXPECT_EQ(DFKV_STATUS_INVALID,
				  dfkv_wire_req_decode(b, sizeof(b), 1 << 20, &d));
	}
	/* keyed ops: payload a non-zero multiple of 24, at most KEYS_MAX */
	r = (struct dfkv_wire_req){ .epoch = 6, .op = DFKV_OP_PROBE,
				    .payload_len = 24 * 3 };
	dfkv_wire_req_encode(&r, b);
	EXPECT_EQ(0, dfkv_wire_req_decode(b, sizeof(b), 1 << 20, &d));
	r.payload_len = 25;
	dfkv_wire_req_encode(&r, b);
	EXPECT_EQ(DFKV_STATUS_INVALID, dfkv_wire_req_decode(b, sizeof(b), 1 << 20, &d));
	r.payload_len = 24ULL * (DFKV_KEYS_MAX + 1);
	dfkv_wire_req_encode(&r, b);
	EXPECT_EQ(DFKV_STATUS_INVALID, dfkv_wire_req_decode(b, sizeof(b), 1 << 30, &d));
	/* EXIST with a payload cannot be framed consistently */
	r = (struct dfkv_wire_req){ .epoch = 6, .op = DFKV_OP_EXIST,
				    .payload_len = 1 };
	dfkv_wire_req_encode(&r, b);
	EXPECT_EQ(DFKV_STATUS_INVALID, dfkv_wire_req_decode(b, sizeof(b), 1 << 20, &d));
}

static int resp(uint8_t status, uint64_t stored, uint64_t data,
		const struct dfkv_wire_req *req, uint8_t epoch)
{
	struct dfkv_wire_resp r = { epoch, status, stored, data }, d;
	uint8_t b[DFKV_RESP_PREFIX_LEN];

	dfkv_wire_resp_encode(&r, b);
	for (size_t n = 0; n < DFKV_RESP_PREFIX_LEN; n++)
		if (dfkv_wire_resp_decode(b, n, req, &d) != DFKV_E_RANGE)
			return 99;
	return dfkv_wire_resp_decode(b, sizeof(b), req, &d);
}

TEST(response_checks)
{
	struct dfkv_wire_req get = { .epoch = 6, .op = DFKV_OP_GET,
				     .offset = 10, .length = 100 };
	struct dfkv_wire_req probe = { .epoch = 6, .op = DFKV_OP_PROBE,
				       .payload_len = 24 * 4 };
	struct dfkv_wire_req lease = { .epoch = 6, .op = DFKV_OP_LEASE,
				       .payload_len = 24 * 4 };
	struct dfkv_wire_req put = { .epoch = 6, .op = DFKV_OP_PUT,
				     .payload_len = 5 };

	/* GET: exactly the clamped range */
	EXPECT_EQ(0, resp(0, 1000, 100, &get, 6));
	EXPECT_EQ(0, resp(0, 50, 40, &get, 6));
	EXPECT_EQ(0, resp(0, 10, 0, &get, 6));	/* offset == stored */
	EXPECT_EQ(DFKV_E_PROTO, resp(0, 50, 41, &get, 6));
	EXPECT_EQ(DFKV_E_PROTO, resp(0, 50, 39, &get, 6));
	EXPECT_EQ(DFKV_E_PROTO, resp(0, 1000, 101, &get, 6));
	EXPECT_EQ(DFKV_E_PROTO, resp(0, 5, 0, &get, 6));	/* offset > stored */
	EXPECT_EQ(DFKV_E_PROTO, resp(0, 1000, 1ULL << 63, &get, 6));
	get.length = 0;
	EXPECT_EQ(0, resp(0, 1000, 990, &get, 6));
	/* failures carry no data; statuses and epoch are checked */
	EXPECT_EQ(0, resp(DFKV_STATUS_NOT_FOUND, 0, 0, &get, 6));
	EXPECT_EQ(DFKV_E_PROTO, resp(DFKV_STATUS_NOT_FOUND, 0, 1, &get, 6));
	EXPECT_EQ(DFKV_E_PROTO, resp(__DFKV_STATUS_MAX, 0, 0, &get, 6));
	EXPECT_EQ(DFKV_E_PROTO, resp(0, 1000, 990, &get, 7));
	/* PROBE: 8 bytes per key */
	EXPECT_EQ(0, resp(0, 0, 32, &probe, 6));
	EXPECT_EQ(DFKV_E_PROTO, resp(0, 0, 24, &probe, 6));
	EXPECT_EQ(DFKV_E_PROTO, resp(0, 0, 40, &probe, 6));
	/* LEASE: id + at most one length per key */
	EXPECT_EQ(0, resp(0, 0, 8, &lease, 6));
	EXPECT_EQ(0, resp(0, 0, 40, &lease, 6));
	EXPECT_EQ(DFKV_E_PROTO, resp(0, 0, 48, &lease, 6));
	EXPECT_EQ(DFKV_E_PROTO, resp(0, 0, 0, &lease, 6));
	EXPECT_EQ(DFKV_E_PROTO, resp(0, 0, 12, &lease, 6));
	/* PUT: no data */
	EXPECT_EQ(0, resp(0, 5, 0, &put, 6));
	EXPECT_EQ(DFKV_E_PROTO, resp(0, 5, 5, &put, 6));
}

TEST(keys_roundtrip)
{
	struct dfkv_key k[3], d[3];
	uint8_t b[3 * DFKV_BLOCK_KEY_LEN];
	uint32_t n;

	for (int i = 0; i < 3; i++) {
		k[i].tenant = 0x1111111111111111ULL * (uint64_t)(i + 1);
		memset(k[i].id, 0x40 + i, sizeof(k[i].id));
	}
	dfkv_wire_keys_encode(k, 3, b);
	EXPECT_EQ(0x11, b[0]);
	EXPECT_EQ(0x40, b[8]);
	EXPECT_EQ(0x22, b[24]);
	ASSERT_EQ(0, dfkv_wire_keys_decode(b, sizeof(b), 3, d, &n));
	EXPECT_EQ(3, n);
	EXPECT_EQ(0, memcmp(k, d, sizeof(k)));
	EXPECT_EQ(DFKV_STATUS_INVALID, dfkv_wire_keys_decode(b, sizeof(b), 2, d, &n));
	EXPECT_EQ(DFKV_STATUS_INVALID, dfkv_wire_keys_decode(b, 23, 3, d, &n));
	EXPECT_EQ(DFKV_STATUS_INVALID, dfkv_wire_keys_decode(b, 0, 3, d, &n));
	EXPECT_EQ(0, n);
}

TEST(u64s_roundtrip)
{
	uint64_t v[2] = { 1, 0xfedcba9876543210ULL }, w[2];
	uint8_t b[16];

	dfkv_wire_u64s_encode(v, 2, b);
	EXPECT_EQ(0x10, b[8]);
	EXPECT_EQ(0xfe, b[15]);
	dfkv_wire_u64s_decode(b, 2, w);
	EXPECT_EQ(0, memcmp(v, w, sizeof(v)));
}

TEST_HARNESS_MAIN
