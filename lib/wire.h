/* SPDX-License-Identifier: (GPL-2.0 WITH Linux-syscall-note) OR MIT */
/*
 * dfkv TCP wire codec (SPEC.md section 2, epoch 6): the 50-byte request
 * prefix, the 18-byte response prefix, block-key lists, and the checks a
 * receiver applies before trusting any length in a frame.  Pure code with
 * no I/O, usable by the client, test servers and fuzzers alike.
 */
#ifndef DFKV_LIB_WIRE_H
#define DFKV_LIB_WIRE_H

#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>
#include <linux/dfkv.h>

struct dfkv_wire_req {
	uint8_t epoch;
	uint8_t op;
	uint8_t id[DFKV_OBJECT_ID_LEN];
	uint64_t tenant;
	uint64_t offset;
	uint64_t length;
	uint64_t payload_len;
};

struct dfkv_wire_resp {
	uint8_t epoch;
	uint8_t status;
	uint64_t stored_len;
	uint64_t data_len;
};

/* Largest STATS/HELLO reply a client accepts. */
#define DFKV_WIRE_TEXT_MAX	(1u << 20)

void dfkv_wire_req_encode(const struct dfkv_wire_req *r,
			  uint8_t out[DFKV_REQ_PREFIX_LEN]);
void dfkv_wire_resp_encode(const struct dfkv_wire_resp *r,
			   uint8_t out[DFKV_RESP_PREFIX_LEN]);

/*
 * Decode a request prefix from len bytes.  Returns 0, DFKV_E_RANGE when
 * fewer than DFKV_REQ_PREFIX_LEN bytes are available, or
 * DFKV_STATUS_INVALID for a frame to refuse (wrong epoch, unknown op,
 * payload_len above max_payload or inconsistent with the op).  *r is
 * filled whenever the prefix was complete.
 */
int dfkv_wire_req_decode(const uint8_t *buf, size_t len,
			 uint64_t max_payload, struct dfkv_wire_req *r);

/*
 * Decode a response prefix answering req (the request as sent) and check
 * it: epoch, a known status, and a data_len the request allows (0 on
 * failures; GET at most req->length; PROBE exactly 8 per key; LEASE 8 +
 * 8 per leading hit; STATS/HELLO at most DFKV_WIRE_TEXT_MAX).  Returns 0,
 * DFKV_E_RANGE (need more bytes) or DFKV_E_PROTO.
 */
int dfkv_wire_resp_decode(const uint8_t *buf, size_t len,
			  const struct dfkv_wire_req *req,
			  struct dfkv_wire_resp *r);

/* n block keys as 24-byte records (tenant u64le, id). */
void dfkv_wire_keys_encode(const struct dfkv_key *keys, uint32_t n,
			   uint8_t *out);
/* Decode a keys payload; DFKV_STATUS_INVALID unless len is a non-zero
 * multiple of 24 with at most max keys. */
int dfkv_wire_keys_decode(const uint8_t *buf, uint64_t len, uint32_t max,
			  struct dfkv_key *keys, uint32_t *n);

/* Little-endian u64 arrays (PROBE results, LEASE replies). */
void dfkv_wire_u64s_decode(const uint8_t *buf, uint32_t n, uint64_t *out);
void dfkv_wire_u64s_encode(const uint64_t *v, uint32_t n, uint8_t *out);

#endif /* DFKV_LIB_WIRE_H */
