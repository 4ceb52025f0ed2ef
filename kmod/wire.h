/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The wire frames of SPEC.md sections 2 and 3: parsing and checking a
 * request prefix, encoding a reply prefix and block-key lists.  Pure code,
 * shared by the TCP and (later) RDMA transports and built natively for
 * unit tests and fuzzing.
 */
#ifndef _DFKV_WIRE_H
#define _DFKV_WIRE_H

#include <linux/types.h>
#include <linux/dfkv.h>

struct dfkv_wire_req {
	u8 epoch;
	u8 op;
	struct dfkv_key key;
	u64 offset;
	u64 length;
	u64 payload_len;
};

/*
 * Parse a DFKV_REQ_PREFIX_LEN-byte request prefix of the given epoch.
 * Returns 0, or -EPROTO for a frame the stream cannot go on from (wrong
 * epoch, unknown op, a payload length the op cannot carry, over
 * max_value for PUT): the caller answers INVALID and closes.
 */
int dfkv_wire_parse_req(const u8 *buf, u8 epoch, u64 max_value,
			struct dfkv_wire_req *req);

/* Encode a DFKV_RESP_PREFIX_LEN-byte reply prefix. */
void dfkv_wire_put_resp(u8 *buf, u8 epoch, u8 status, u64 stored_len,
			u64 data_len);

/* Decode n block keys of DFKV_BLOCK_KEY_LEN bytes each. */
void dfkv_wire_get_keys(const u8 *buf, u32 n, struct dfkv_key *keys);

#endif /* _DFKV_WIRE_H */
