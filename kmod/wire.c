// SPDX-License-Identifier: GPL-2.0
/*
 * Wire frame codec (see wire.h).  Every length a peer sends is checked
 * here against what its op may carry before anything is allocated or
 * received for it.
 */
#include <linux/errno.h>
#include <linux/string.h>

#include "compat.h"
#include "wire.h"

/* Largest payload op may carry, 0 when it carries none; -1: unknown op. */
static s64 payload_max(u8 op, u64 max_value)
{
	switch (op) {
	case DFKV_OP_PUT:
		return max_value;
	case DFKV_OP_TOUCH:
	case DFKV_OP_PROBE:
	case DFKV_OP_LEASE:
		return (s64)DFKV_KEYS_MAX * DFKV_BLOCK_KEY_LEN;
	case DFKV_OP_HELLO:
		return DFKV_HELLO_MAX;
	case DFKV_OP_AUTH:
		return DFKV_AUTH_PROOF_LEN;
	case DFKV_OP_GET:
	case DFKV_OP_EXIST:
	case DFKV_OP_STATS:
	case DFKV_OP_REMOVE:
	case DFKV_OP_RELEASE:
		return 0;
	}
	return -1;
}

int dfkv_wire_parse_req(const u8 *buf, u8 epoch, u64 max_value,
			struct dfkv_wire_req *req)
{
	s64 max;

	req->epoch = buf[0];
	req->op = buf[1];
	memcpy(req->key.id, buf + 2, DFKV_OBJECT_ID_LEN);
	req->key.tenant = get_unaligned_le64(buf + 18);
	req->offset = get_unaligned_le64(buf + 26);
	req->length = get_unaligned_le64(buf + 34);
	req->payload_len = get_unaligned_le64(buf + 42);

	if (req->epoch != epoch)
		return -EPROTO;
	max = payload_max(req->op, max_value);
	if (max < 0 || req->payload_len > (u64)max)
		return -EPROTO;
	if ((req->op == DFKV_OP_TOUCH || req->op == DFKV_OP_PROBE ||
	     req->op == DFKV_OP_LEASE) &&
	    (!req->payload_len || req->payload_len % DFKV_BLOCK_KEY_LEN))
		return -EPROTO;
	return 0;
}

void dfkv_wire_put_resp(u8 *buf, u8 epoch, u8 status, u64 stored_len,
			u64 data_len)
{
	buf[0] = epoch;
	buf[1] = status;
	put_unaligned_le64(stored_len, buf + 2);
	put_unaligned_le64(data_len, buf + 10);
}

void dfkv_wire_get_keys(const u8 *buf, u32 n, struct dfkv_key *keys)
{
	u32 i;

	for (i = 0; i < n; i++, buf += DFKV_BLOCK_KEY_LEN) {
		keys[i].tenant = get_unaligned_le64(buf);
		memcpy(keys[i].id, buf + 8, DFKV_OBJECT_ID_LEN);
	}
}

u64 dfkv_wire_rx_want(const struct dfkv_wire_rx *rx)
{
	if (rx->in_payload)
		return rx->payload_len - rx->pay_got;
	return sizeof(rx->hdr) - rx->hdr_got;
}

enum dfkv_wire_rx_event dfkv_wire_rx_got(struct dfkv_wire_rx *rx, u64 n)
{
	if (rx->in_payload) {
		rx->pay_got += n;
		return rx->pay_got == rx->payload_len ? DFKV_RX_FRAME :
			DFKV_RX_MORE;
	}
	rx->hdr_got += n;
	return rx->hdr_got == sizeof(rx->hdr) ? DFKV_RX_PREFIX : DFKV_RX_MORE;
}

enum dfkv_wire_rx_event dfkv_wire_rx_payload(struct dfkv_wire_rx *rx, u64 len)
{
	rx->in_payload = true;
	rx->payload_len = len;
	rx->pay_got = 0;
	return len ? DFKV_RX_MORE : DFKV_RX_FRAME;
}

void dfkv_wire_rx_next(struct dfkv_wire_rx *rx)
{
	rx->hdr_got = 0;
	rx->in_payload = false;
	rx->payload_len = 0;
	rx->pay_got = 0;
}
