// SPDX-License-Identifier: GPL-2.0
/*
 * The module's wire codec (kmod/wire.c), built natively: request prefixes
 * of every op, and the frames the server must refuse before it allocates
 * or receives anything for them.
 */
#include <errno.h>
#include <string.h>

#include "kselftest_harness.h"
#include "../../kmod/wire.h"

static void prefix(uint8_t *h, int epoch, int op, uint64_t plen)
{
	memset(h, 0, DFKV_REQ_PREFIX_LEN);
	h[0] = epoch;
	h[1] = op;
	for (int i = 0; i < 8; i++)
		h[42 + i] = plen >> (8 * i);
}

TEST(parses_fields_little_endian)
{
	uint8_t h[DFKV_REQ_PREFIX_LEN];
	struct dfkv_wire_req r;

	for (int i = 0; i < DFKV_REQ_PREFIX_LEN; i++)
		h[i] = i;
	h[0] = DFKV_EPOCH_TCP;
	h[1] = DFKV_OP_PUT;
	memset(h + 42, 0, 8);
	h[42] = 0x10;
	ASSERT_EQ(0, dfkv_wire_parse_req(h, DFKV_EPOCH_TCP, 1 << 20, &r));
	EXPECT_EQ(DFKV_OP_PUT, r.op);
	EXPECT_EQ(2, r.key.id[0]);
	EXPECT_EQ(17, r.key.id[15]);
	EXPECT_EQ(0x1918171615141312ULL, r.key.tenant);
	EXPECT_EQ(0x21201f1e1d1c1b1aULL, r.offset);
	EXPECT_EQ(0x2928272625242322ULL, r.length);
	EXPECT_EQ(0x10, r.payload_len);
}

TEST(refuses_what_cannot_be_framed)
{
	static const struct { int epoch, op; uint64_t plen; int ok; } t[] = {
		{ DFKV_EPOCH_TCP, DFKV_OP_GET, 0, 1 },
		{ DFKV_EPOCH_TCP, DFKV_OP_PUT, 0, 1 },	/* INVALID, framed */
		{ DFKV_EPOCH_TCP, DFKV_OP_PUT, 4096, 1 },
		{ DFKV_EPOCH_TCP, DFKV_OP_PUT, 4097, 0 },	/* > max_value */
		{ DFKV_EPOCH_TCP, DFKV_OP_PUT, UINT64_MAX, 0 },
		{ DFKV_EPOCH_TCP, DFKV_OP_PUT, 1ULL << 63, 0 },
		{ DFKV_EPOCH_RDMA, DFKV_OP_GET, 0, 0 },
		{ 0, DFKV_OP_GET, 0, 0 },
		{ DFKV_EPOCH_TCP, 0, 0, 0 },
		{ DFKV_EPOCH_TCP, 5, 0, 0 },
		{ DFKV_EPOCH_TCP, 255, 0, 0 },
		{ DFKV_EPOCH_TCP, DFKV_OP_GET, 1, 0 },
		{ DFKV_EPOCH_TCP, DFKV_OP_REMOVE, 24, 0 },
		{ DFKV_EPOCH_TCP, DFKV_OP_PROBE, 0, 0 },
		{ DFKV_EPOCH_TCP, DFKV_OP_PROBE, 23, 0 },
		{ DFKV_EPOCH_TCP, DFKV_OP_PROBE, 48, 1 },
		{ DFKV_EPOCH_TCP, DFKV_OP_LEASE, 24 * DFKV_KEYS_MAX, 1 },
		{ DFKV_EPOCH_TCP, DFKV_OP_LEASE, 24 * (DFKV_KEYS_MAX + 1), 0 },
		{ DFKV_EPOCH_TCP, DFKV_OP_HELLO, DFKV_HELLO_MAX, 1 },
		{ DFKV_EPOCH_TCP, DFKV_OP_HELLO, DFKV_HELLO_MAX + 1, 0 },
		{ DFKV_EPOCH_TCP, DFKV_OP_AUTH, DFKV_AUTH_PROOF_LEN, 1 },
		{ DFKV_EPOCH_TCP, DFKV_OP_AUTH, DFKV_AUTH_PROOF_LEN + 1, 0 },
	};
	uint8_t h[DFKV_REQ_PREFIX_LEN];
	struct dfkv_wire_req r;

	for (unsigned int i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		prefix(h, t[i].epoch, t[i].op, t[i].plen);
		EXPECT_EQ(t[i].ok ? 0 : -EPROTO,
			  dfkv_wire_parse_req(h, DFKV_EPOCH_TCP, 4096, &r))
			TH_LOG("case %u", i);
	}
}

TEST(reply_and_keys)
{
	uint8_t b[DFKV_RESP_PREFIX_LEN], k[2 * DFKV_BLOCK_KEY_LEN];
	struct dfkv_key keys[2];

	dfkv_wire_put_resp(b, DFKV_EPOCH_TCP, DFKV_STATUS_TOO_LARGE,
			   0x0102030405060708ULL, 9);
	EXPECT_EQ(DFKV_EPOCH_TCP, b[0]);
	EXPECT_EQ(DFKV_STATUS_TOO_LARGE, b[1]);
	EXPECT_EQ(0x08, b[2]);
	EXPECT_EQ(0x01, b[9]);
	EXPECT_EQ(9, b[10]);
	for (unsigned int i = 0; i < sizeof(k); i++)
		k[i] = i;
	dfkv_wire_get_keys(k, 2, keys);
	EXPECT_EQ(0x0706050403020100ULL, keys[0].tenant);
	EXPECT_EQ(8, keys[0].id[0]);
	EXPECT_EQ(0x1f1e1d1c1b1a1918ULL, keys[1].tenant);
	EXPECT_EQ(47, keys[1].id[15]);
}

TEST_HARNESS_MAIN
