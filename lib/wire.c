// SPDX-License-Identifier: (GPL-2.0 WITH Linux-syscall-note) OR MIT
/*
 * dfkv TCP wire codec (SPEC.md section 2, epoch 6): encoding and strictly
 * checked decoding of request/response prefixes and block-key payloads.
 * Every length read from the network is validated here before a caller
 * allocates or reads anything by it.
 */
#include "util.h"
#include "wire.h"

void dfkv_wire_req_encode(const struct dfkv_wire_req *r,
			  uint8_t out[DFKV_REQ_PREFIX_LEN])
{
	out[0] = r->epoch;
	out[1] = r->op;
	memcpy(out + 2, r->id, DFKV_OBJECT_ID_LEN);
	dfkv_put_le64(out + 18, r->tenant);
	dfkv_put_le64(out + 26, r->offset);
	dfkv_put_le64(out + 34, r->length);
	dfkv_put_le64(out + 42, r->payload_len);
}

void dfkv_wire_resp_encode(const struct dfkv_wire_resp *r,
			   uint8_t out[DFKV_RESP_PREFIX_LEN])
{
	out[0] = r->epoch;
	out[1] = r->status;
	dfkv_put_le64(out + 2, r->stored_len);
	dfkv_put_le64(out + 10, r->data_len);
}

static bool op_known(uint8_t op)
{
	switch (op) {
	case DFKV_OP_PUT: case DFKV_OP_GET: case DFKV_OP_EXIST:
	case DFKV_OP_STATS: case DFKV_OP_REMOVE: case DFKV_OP_TOUCH:
	case DFKV_OP_PROBE: case DFKV_OP_LEASE: case DFKV_OP_RELEASE:
	case DFKV_OP_HELLO: case DFKV_OP_AUTH:
		return true;
	default:
		return false;
	}
}

int dfkv_wire_req_decode(const uint8_t *buf, size_t len,
			 uint64_t max_payload, struct dfkv_wire_req *r)
{
	uint64_t p;

	if (len < DFKV_REQ_PREFIX_LEN)
		return DFKV_E_RANGE;
	r->epoch = buf[0];
	r->op = buf[1];
	memcpy(r->id, buf + 2, DFKV_OBJECT_ID_LEN);
	r->tenant = dfkv_get_le64(buf + 18);
	r->offset = dfkv_get_le64(buf + 26);
	r->length = dfkv_get_le64(buf + 34);
	r->payload_len = p = dfkv_get_le64(buf + 42);
	if (r->epoch != DFKV_EPOCH_TCP || !op_known(r->op))
		return DFKV_STATUS_INVALID;
	switch (r->op) {
	case DFKV_OP_PUT:
		if (!p || p > max_payload)
			return DFKV_STATUS_INVALID;
		break;
	case DFKV_OP_TOUCH:
	case DFKV_OP_PROBE:
	case DFKV_OP_LEASE:
		if (!p || p % DFKV_BLOCK_KEY_LEN ||
		    p / DFKV_BLOCK_KEY_LEN > DFKV_KEYS_MAX)
			return DFKV_STATUS_INVALID;
		break;
	case DFKV_OP_HELLO:
		if (p > 4096)
			return DFKV_STATUS_INVALID;
		break;
	case DFKV_OP_AUTH:
		if (p != DFKV_AUTH_PROOF_LEN)
			return DFKV_STATUS_INVALID;
		break;
	default:
		if (p)
			return DFKV_STATUS_INVALID;
	}
	return 0;
}

int dfkv_wire_resp_decode(const uint8_t *buf, size_t len,
			  const struct dfkv_wire_req *req,
			  struct dfkv_wire_resp *r)
{
	uint64_t d, nkeys;

	if (len < DFKV_RESP_PREFIX_LEN)
		return DFKV_E_RANGE;
	r->epoch = buf[0];
	r->status = buf[1];
	r->stored_len = dfkv_get_le64(buf + 2);
	r->data_len = d = dfkv_get_le64(buf + 10);
	if (r->epoch != req->epoch || r->status >= __DFKV_STATUS_MAX)
		return DFKV_E_PROTO;
	if (r->status != DFKV_STATUS_OK)
		return d ? DFKV_E_PROTO : 0;
	nkeys = req->payload_len / DFKV_BLOCK_KEY_LEN;
	switch (req->op) {
	case DFKV_OP_GET: {
		/* exactly the clamped range */
		uint64_t want;

		if (req->offset > r->stored_len)
			return DFKV_E_PROTO;
		want = r->stored_len - req->offset;
		if (req->length && req->length < want)
			want = req->length;
		return d == want ? 0 : DFKV_E_PROTO;
	}
	case DFKV_OP_PROBE:
		return d == 8 * nkeys ? 0 : DFKV_E_PROTO;
	case DFKV_OP_LEASE:
		return d >= 8 && d % 8 == 0 && (d - 8) / 8 <= nkeys ?
			0 : DFKV_E_PROTO;
	case DFKV_OP_STATS:
	case DFKV_OP_HELLO:
		return d <= DFKV_WIRE_TEXT_MAX ? 0 : DFKV_E_PROTO;
	case DFKV_OP_AUTH:
		return !d || d == DFKV_AUTH_PROOF_LEN ? 0 : DFKV_E_PROTO;
	default:
		return d ? DFKV_E_PROTO : 0;
	}
}

void dfkv_wire_keys_encode(const struct dfkv_key *keys, uint32_t n,
			   uint8_t *out)
{
	for (uint32_t i = 0; i < n; i++, out += DFKV_BLOCK_KEY_LEN) {
		dfkv_put_le64(out, keys[i].tenant);
		memcpy(out + 8, keys[i].id, DFKV_OBJECT_ID_LEN);
	}
}

int dfkv_wire_keys_decode(const uint8_t *buf, uint64_t len, uint32_t max,
			  struct dfkv_key *keys, uint32_t *n)
{
	uint64_t cnt = len / DFKV_BLOCK_KEY_LEN;

	*n = 0;
	if (!len || len % DFKV_BLOCK_KEY_LEN || cnt > max)
		return DFKV_STATUS_INVALID;
	for (uint64_t i = 0; i < cnt; i++, buf += DFKV_BLOCK_KEY_LEN) {
		keys[i].tenant = dfkv_get_le64(buf);
		memcpy(keys[i].id, buf + 8, DFKV_OBJECT_ID_LEN);
	}
	*n = (uint32_t)cnt;
	return 0;
}

void dfkv_wire_u64s_decode(const uint8_t *buf, uint32_t n, uint64_t *out)
{
	for (uint32_t i = 0; i < n; i++)
		out[i] = dfkv_get_le64(buf + 8 * (size_t)i);
}

void dfkv_wire_u64s_encode(const uint64_t *v, uint32_t n, uint8_t *out)
{
	for (uint32_t i = 0; i < n; i++)
		dfkv_put_le64(out + 8 * (size_t)i, v[i]);
}
