// SPDX-License-Identifier: GPL-2.0
/*
 * libFuzzer target for the TCP server's frame receiver (struct
 * dfkv_wire_rx in kmod/wire.c, the code dfkv.ko runs), differential: an
 * input is a max_value, a seed for how the stream is split into reads,
 * and the stream.  The receiver, fed reads of hostile sizes (one byte at a
 * time, whatever it asks for, anything between), must frame exactly what
 * a one-shot parse of the whole stream frames: the same prefixes, the
 * same payload boundaries, the same place where the stream stops (a bad
 * prefix, or a truncated frame), never asking for bytes of the next frame.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../../../kmod/wire.h"

#define MAX_FRAMES	256

struct frame {
	uint8_t op;
	size_t start, len;	/* the payload's place in the stream */
};

/* The stream parsed in one piece; returns the frames, *bad if it ended on a bad prefix. */
static int parse_whole(const uint8_t *s, size_t n, uint64_t max_value,
		       struct frame *f, int *bad)
{
	size_t off = 0;
	int nr = 0;

	*bad = 0;
	while (nr < MAX_FRAMES && n - off >= DFKV_REQ_PREFIX_LEN) {
		struct dfkv_wire_req r;

		if (dfkv_wire_parse_req(s + off, DFKV_EPOCH_TCP, max_value, &r)) {
			*bad = 1;
			break;
		}
		off += DFKV_REQ_PREFIX_LEN;
		if (r.payload_len > n - off)
			break;		/* truncated */
		f[nr].op = r.op;
		f[nr].start = off;
		f[nr].len = r.payload_len;
		nr++;
		off += r.payload_len;
	}
	return nr;
}

static uint64_t rnd(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

/* The same stream through the receiver, split into reads by seed. */
static int parse_split(const uint8_t *s, size_t n, uint64_t max_value,
		       uint64_t seed, struct frame *f, int *bad)
{
	struct dfkv_wire_rx rx;
	size_t off = 0, payload_start = 0;
	int nr = 0;

	memset(&rx, 0, sizeof(rx));
	*bad = 0;
	seed |= 1;
	while (nr < MAX_FRAMES && off < n) {
		uint64_t want = dfkv_wire_rx_want(&rx), got;
		enum dfkv_wire_rx_event ev;

		if (!want || rx.hdr_got > sizeof(rx.hdr) ||
		    rx.pay_got > rx.payload_len)
			abort();
		switch (rnd(&seed) % 3) {
		case 0: got = 1; break;
		case 1: got = want; break;
		default: got = 1 + rnd(&seed) % want; break;
		}
		if (got > n - off)
			got = n - off;
		if (!rx.in_payload)
			memcpy(rx.hdr + rx.hdr_got, s + off, got);
		off += got;
		ev = dfkv_wire_rx_got(&rx, got);
		if (ev == DFKV_RX_PREFIX) {
			struct dfkv_wire_req r;

			if (dfkv_wire_parse_req(rx.hdr, DFKV_EPOCH_TCP,
						max_value, &r)) {
				*bad = 1;
				break;
			}
			f[nr].op = r.op;
			payload_start = off;
			ev = dfkv_wire_rx_payload(&rx, r.payload_len);
		}
		if (ev == DFKV_RX_FRAME) {
			f[nr].start = payload_start;
			f[nr].len = rx.payload_len;
			if (off != payload_start + rx.payload_len)
				abort();	/* read past the frame */
			nr++;
			dfkv_wire_rx_next(&rx);
		}
	}
	return nr;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct frame a[MAX_FRAMES], b[MAX_FRAMES];
	uint64_t max_value, seed;
	int na, nb, bad_a, bad_b, i;

	if (size < 16)
		return 0;
	memcpy(&max_value, data, 8);
	memcpy(&seed, data + 8, 8);
	max_value %= 1ULL << 31;
	data += 16;
	size -= 16;
	na = parse_whole(data, size, max_value, a, &bad_a);
	nb = parse_split(data, size, max_value, seed, b, &bad_b);
	if (na != nb || bad_a != bad_b)
		abort();
	for (i = 0; i < na; i++)
		if (a[i].op != b[i].op || a[i].start != b[i].start ||
		    a[i].len != b[i].len)
			abort();
	return 0;
}
