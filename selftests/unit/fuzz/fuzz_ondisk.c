// SPDX-License-Identifier: GPL-2.0
/*
 * libFuzzer target for the on-disk format codec (kmod/ondisk.c, the very
 * code dfkv.ko runs, with the slab lattice of kmod/slab.c).  An input is a
 * header (mode, extent size, device size, generation window, first
 * extent, extents to scan) and bytes read both as a superblock and as a
 * record area (zero-padded to whole extents).  The codec must never
 * crash; a superblock it accepts must re-encode to the same bytes and
 * match its own geometry; every record the rebuild scan accepts must
 * satisfy every invariant of Documentation/ondisk.md, re-checked here
 * independently, and a second scan of the cleaned buffer must accept the
 * same records and clear nothing.  Mode bits recompute the CRCs (and the
 * magics), or start from well-formed superblocks and records that the
 * input then perturbs, so the fuzzer gets past them to the semantic
 * checks.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <linux/crc32c.h>
#include <linux/errno.h>
#include "ondisk.h"
#include "slab.h"

#define HDR		26
#define SB_IN		512
#define MODE_FIX_RECS	0x01	/* fix magic and CRC of every record */
#define MODE_FIX_SB	0x02	/* fix magic and CRC of the superblock */
#define MODE_EMPTY	0x04	/* some records all zero */
#define MODE_SYN_RECS	0x08	/* records: this format, flags 0, in place,
				 * small class, generation, part, length */
#define MODE_SYN_SB	0x10	/* superblock: a formatted one xor input */

static struct dfkv_slab lattices[3];	/* 64, 128, 256 KiB extents */
static struct dfkv_od_scan sc;
static uint8_t sbblock[DFKV_OD_SB_BYTES], sbout[DFKV_OD_SB_BYTES];
static const uint8_t uuid[DFKV_OD_UUID_LEN] = { 0xd, 0xf, 0xc, 0x4 };

struct fctx {
	uint32_t first, n;
	int cls[8];		/* class seen per extent of the buffer */
	unsigned int found;
	uint8_t *buf;
};

static uint64_t le64(const uint8_t *p)
{
	uint64_t v = 0;

	for (int i = 7; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

static void put32(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = v >> (8 * i);
}

/* Every invariant of an accepted record, checked without the codec. */
static int found(void *ctx, const struct dfkv_od_rec *r)
{
	struct fctx *f = ctx;
	const struct dfkv_od_geom *g = &sc.geom;
	uint64_t e = g->extent_bytes, parts, plen, start;
	const struct dfkv_slab *lat = &lattices[__builtin_ctzll(e) - 16];
	uint32_t x;
	const uint8_t *raw;

	if (r->extent < f->first || r->extent - f->first >= f->n ||
	    r->extent >= g->nr_extents || r->slot >= g->max_slots)
		abort();
	x = r->extent - f->first;
	raw = f->buf + ((size_t)x * g->max_slots + r->slot) * 64;
	if (le64(raw + 0x30) != (r->extent | (uint64_t)r->slot << 32))
		abort();	/* the record sits where it says */
	if (raw[0] != 'D' || raw[1] != 'F' || raw[2] != 'K' || raw[3] != 'R' ||
	    raw[4] != DFKV_OD_FORMAT_VERSION || raw[6] || raw[7] || r->flags)
		abort();
	if (dfkv_od_rec_crc(raw, uuid) !=
	    (uint32_t)(raw[60] | raw[61] << 8 | raw[62] << 16 |
		       (uint32_t)raw[63] << 24))
		abort();
	if (r->gen < sc.gen_min || r->gen > sc.gen_max)
		abort();
	if (r->cls >= sc.nr_classes ||
	    r->slot >= dfkv_slab_slots_per_extent(lat, r->cls))
		abort();
	if (!r->length || r->length > (uint64_t)g->nr_extents * e)
		abort();
	parts = r->length / e + (r->length % e != 0);
	if (r->part >= parts)
		abort();
	start = (uint64_t)r->part * e;
	plen = r->length - start < e ? r->length - start : e;
	if (plen > dfkv_slab_class_size(lat, r->cls))
		abort();
	/* one class per extent */
	if (x < 8) {
		if (f->cls[x] >= 0 && f->cls[x] != r->cls)
			abort();
		f->cls[x] = r->cls;
	}
	f->found++;
	return 0;
}

static void put64(uint8_t *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = v >> (8 * i);
}

static void fuzz_sb(const uint8_t *in, size_t len, uint8_t mode, uint64_t dev)
{
	struct dfkv_od_sb sb, next, again;
	enum dfkv_od_sb_reason why;
	struct dfkv_od_geom g;
	uint64_t lo, hi;
	int k;

	memset(sbblock, 0, sizeof(sbblock));
	if (mode & MODE_SYN_SB) {
		if (dfkv_od_sb_format(&sb, dev, 64 * 1024ULL << (dev % 15),
				      uuid, "synth"))
			return;
		sb.state = 1 + (dev >> 20) % 2;
		sb.epoch = 1 + (dev >> 8) % 16;
		sb.valid_from = 1 + (dev >> 12) % 16;
		dfkv_od_sb_encode(&sb, sbblock);
		for (size_t i = 0; i < len; i++)
			sbblock[i] ^= in[i];
	} else {
		memcpy(sbblock, in, len);
	}
	if (mode & MODE_FIX_SB) {
		memcpy(sbblock, DFKV_OD_SB_MAGIC, 8);
		put32(sbblock + 0x1fc, dfkv_od_crc(sbblock, 0x1fc));
	}
	why = dfkv_od_sb_decode(sbblock, &sb);
	if (why >= DFKV_OD_SB_NR_REASONS || !dfkv_od_sb_reason_str(why))
		abort();
	if (why != DFKV_OD_SB_OK)
		return;
	/* accepted: a fixed point of encode, its own geometry, sane epochs */
	dfkv_od_sb_encode(&sb, sbout);
	if (memcmp(sbout, sbblock, SB_IN))
		abort();
	if (dfkv_od_geometry(sb.geom.dev_bytes, sb.geom.extent_bytes, &g) ||
	    memcmp(&g, &sb.geom, sizeof(g)))
		abort();
	if (dfkv_od_sb_match(&sb, sb.geom.dev_bytes, sb.geom.extent_bytes))
		abort();
	if (g.data_off + (uint64_t)g.nr_extents * g.extent_bytes >
	    g.dev_bytes || !sb.name[0] || !sb.epoch ||
	    sb.valid_from > sb.epoch + 1 || sb.rec_hwm > g.nr_extents)
		abort();
	k = dfkv_od_sb_attach(&sb, &next, &lo, &hi);
	if (sb.epoch == DFKV_OD_EPOCH_MAX) {
		if (k != -EOVERFLOW)
			abort();
		return;
	}
	if (k != (sb.state == DFKV_OD_DIRTY ? DFKV_OD_ATTACH_COLD :
		  DFKV_OD_ATTACH_REBUILD))
		abort();
	if (next.state != DFKV_OD_DIRTY || next.epoch != sb.epoch + 1 ||
	    hi != sb.epoch || (sb.state == DFKV_OD_DIRTY && lo <= hi) ||
	    next.rec_hwm != (lo > hi ? 0 : sb.rec_hwm))
		abort();
	dfkv_od_sb_encode(&next, sbout);
	if (dfkv_od_sb_decode(sbout, &again) != DFKV_OD_SB_OK)
		abort();
	dfkv_od_sb_clean(&next);
	dfkv_od_sb_encode(&next, sbout);
	if (dfkv_od_sb_decode(sbout, &again) != DFKV_OD_SB_OK ||
	    again.state != DFKV_OD_CLEAN)
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct dfkv_od_sb sb;
	struct fctx f;
	uint8_t mode, *buf;
	uint64_t e, dev, raw_dev;
	size_t span, len;
	long ret, ret2;
	unsigned int found1, nx;
	int k;

	if (!lattices[0].classes)
		for (k = 0; k < 3; k++)
			if (dfkv_slab_init(&lattices[k], 64 * 1024ULL << k, 1,
					   NULL, NULL))
				abort();
	if (size < HDR)
		return 0;
	mode = data[0];
	e = 64 * 1024ULL << (data[1] % 3);
	dev = le64(data + 2);
	raw_dev = dev;
	/* geometry of an arbitrary size: checked, then made to fit */
	if (!dfkv_od_geometry(dev, e, &sb.geom) &&
	    sb.geom.data_off + (uint64_t)sb.geom.nr_extents * e > dev)
		abort();
	dev = e * (2 + dev % 4096) + (dev >> 32) % e;
	if (dfkv_od_sb_format(&sb, dev, e, uuid, "fuzz"))
		abort();
	memset(&f, 0, sizeof(f));
	if (dfkv_od_scan_init(&sc, &sb, &lattices[data[1] % 3], data[10] % 8,
			      data[11] % 8))
		abort();
	f.first = le64(data + 12) % sb.geom.nr_extents;
	nx = 1 + data[20] % 4;
	data += HDR;
	size -= HDR;

	/* the same bytes are read as a superblock and as a record area */
	fuzz_sb(data, size < SB_IN ? size : SB_IN, mode, raw_dev);

	span = (size_t)sb.geom.max_slots * 64;
	f.n = nx;
	if (f.n > sb.geom.nr_extents - f.first)
		f.n = sb.geom.nr_extents - f.first;
	len = f.n * span;
	buf = calloc(1, len);
	memcpy(buf, data, size < len ? size : len);
	for (size_t i = 0; i < len; i += 64) {
		if ((mode & MODE_EMPTY) && buf[i + 5] & 0x80) {
			memset(buf + i, 0, 64);
			continue;
		}
		if (mode & MODE_SYN_RECS) {
			uint8_t *r = buf + i;

			r[4] = DFKV_OD_FORMAT_VERSION;
			r[5] %= sc.nr_classes + 1;
			r[6] = r[7] = 0;
			put64(r + 0x20, le64(r + 0x20) % (4 * e + 2));
			put64(r + 0x28, r[0x28] % 9);
			put32(r + 0x30, f.first + i / span);
			put32(r + 0x34, (i % span) / 64);
			put32(r + 0x38, r[0x38] % 5);
		}
		if (mode & (MODE_FIX_RECS | MODE_SYN_RECS)) {
			put32(buf + i, DFKV_OD_RECORD_MAGIC);
			put32(buf + i + 60, dfkv_od_rec_crc(buf + i, uuid));
		}
	}
	f.buf = buf;
	for (k = 0; k < 8; k++)
		f.cls[k] = -1;
	ret = dfkv_od_scan(&sc, buf, f.first, f.n, found, NULL, &f);
	if (ret < 0 || (size_t)ret > len / 64)
		abort();
	/* what is left is empty or valid, and stays so */
	found1 = f.found;
	f.found = 0;
	for (k = 0; k < 8; k++)
		f.cls[k] = -1;
	ret2 = dfkv_od_scan(&sc, buf, f.first, f.n, found, NULL, &f);
	if (ret2 != 0 || f.found != found1)
		abort();
	for (size_t i = 0; i < len; i += 64) {
		struct dfkv_od_rec r;
		uint32_t x = i / span, slot = (i % span) / 64;
		enum dfkv_od_rec_reason why;

		why = dfkv_od_rec_check(&sc, buf + i, f.first + x, slot, &r);
		if (why != DFKV_OD_REC_OK && why != DFKV_OD_REC_EMPTY)
			abort();
		if (!dfkv_od_rec_reason_str(why))
			abort();
	}
	free(buf);
	return 0;
}
