// SPDX-License-Identifier: GPL-2.0
/*
 * libFuzzer target for the module's request parser (kmod/wire.c, the very
 * code dfkv.ko runs): an input is a max_value and a stream of frames,
 * framed exactly as the TCP server frames them.  Accepted prefixes must
 * respect every limit the server relies on before it allocates.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../../../kmod/wire.h"

static uint64_t payload_limit(uint8_t op, uint64_t max_value)
{
	switch (op) {
	case DFKV_OP_PUT:
		return max_value;
	case DFKV_OP_TOUCH:
	case DFKV_OP_PROBE:
	case DFKV_OP_LEASE:
		return (uint64_t)DFKV_KEYS_MAX * DFKV_BLOCK_KEY_LEN;
	case DFKV_OP_HELLO:
		return DFKV_HELLO_MAX;
	case DFKV_OP_AUTH:
		return DFKV_AUTH_PROOF_LEN;
	default:
		return 0;
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct dfkv_wire_req r;
	uint64_t max_value;

	if (size < 8)
		return 0;
	memcpy(&max_value, data, 8);
	max_value %= 1ULL << 31;
	data += 8;
	size -= 8;
	while (size >= DFKV_REQ_PREFIX_LEN) {
		if (dfkv_wire_parse_req(data, DFKV_EPOCH_TCP, max_value, &r))
			return 0;	/* the server closes here */
		if (r.epoch != DFKV_EPOCH_TCP ||
		    r.payload_len > payload_limit(r.op, max_value))
			abort();
		data += DFKV_REQ_PREFIX_LEN;
		size -= DFKV_REQ_PREFIX_LEN;
		if (r.payload_len > size)
			return 0;	/* truncated: the server waits */
		if (r.op == DFKV_OP_TOUCH || r.op == DFKV_OP_PROBE ||
		    r.op == DFKV_OP_LEASE) {
			uint32_t n = r.payload_len / DFKV_BLOCK_KEY_LEN;
			struct dfkv_key *keys;

			if (!n || n * DFKV_BLOCK_KEY_LEN != r.payload_len)
				abort();
			keys = malloc(n * sizeof(*keys));
			dfkv_wire_get_keys(data, n, keys);
			free(keys);
		}
		data += r.payload_len;
		size -= r.payload_len;
	}
	return 0;
}
