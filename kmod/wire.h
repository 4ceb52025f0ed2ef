/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The wire frames of SPEC.md sections 2 and 3: parsing and checking a
 * request prefix, encoding a reply prefix and block-key lists, and the
 * TCP server's frame receiver.  Pure code, shared by the TCP and RDMA
 * transports (RDMA's own HELLO, request header and descriptor layouts are
 * in uapi/linux/dfkv.h) and built natively for unit tests and fuzzing.
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

/*
 * The receive side of a frame stream, as the TCP server runs it over
 * non-blocking reads of any size: a prefix gathered into hdr, then its
 * payload counted while the caller receives it wherever it belongs (a
 * reserved entry, a buffer, nowhere).  The caller asks how many bytes the
 * frame needs next (never more, so no read takes bytes of the next
 * frame), reports what arrived, parses the prefix when told to and gives
 * its payload length.  Pure, so it is fuzzed natively with hostile splits.
 */
struct dfkv_wire_rx {
	u8 hdr[DFKV_REQ_PREFIX_LEN];
	size_t hdr_got;
	bool in_payload;
	u64 payload_len;
	u64 pay_got;
};

enum dfkv_wire_rx_event {
	DFKV_RX_MORE,		/* receive dfkv_wire_rx_want() bytes more */
	DFKV_RX_PREFIX,		/* hdr is whole: parse, dfkv_wire_rx_payload() */
	DFKV_RX_FRAME,		/* the payload is complete too */
};

/* Bytes the frame needs next: the rest of the prefix or of the payload. */
u64 dfkv_wire_rx_want(const struct dfkv_wire_rx *rx);
/* n bytes (at most dfkv_wire_rx_want()) arrived. */
enum dfkv_wire_rx_event dfkv_wire_rx_got(struct dfkv_wire_rx *rx, u64 n);
/* After DFKV_RX_PREFIX: the frame carries len payload bytes. */
enum dfkv_wire_rx_event dfkv_wire_rx_payload(struct dfkv_wire_rx *rx, u64 len);
/* The frame was handled: expect the next prefix. */
void dfkv_wire_rx_next(struct dfkv_wire_rx *rx);

#endif /* _DFKV_WIRE_H */
