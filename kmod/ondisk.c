// SPDX-License-Identifier: GPL-2.0
/*
 * dfkv on-disk format codec (see ondisk.h and Documentation/ondisk.md).
 * This file owns the byte layout of the superblock and the slot records,
 * the device geometry derived from (device size, extent size), every
 * validity rule of both, the epoch transitions of attach and graceful
 * detach, and the rebuild scan of a buffer of records.  It does no I/O and
 * takes no lock: the disk tier reads and writes the blocks and calls it.
 */
#include <linux/crc32c.h>
#include <linux/errno.h>
#include <linux/kernel.h>
#include <linux/limits.h>
#include <linux/log2.h>
#include <linux/string.h>

#include "compat.h"
#include "ondisk.h"

/* Superblock field offsets (format 2). */
#define SB_MAGIC	0x000
#define SB_FORMAT	0x008
#define SB_LATTICE	0x00c
#define SB_RECBYTES	0x010
#define SB_STATE	0x014
#define SB_DEVBYTES	0x018
#define SB_EXTBYTES	0x020
#define SB_NREXT	0x028
#define SB_RECOFF	0x030
#define SB_RECLEN	0x038
#define SB_DATAOFF	0x040
#define SB_EPOCH	0x048
#define SB_VALIDFROM	0x050
#define SB_UUID		0x058
#define SB_NAME		0x068
#define SB_RECHWM	0x0a8
#define SB_RESERVED	0x0b0
#define SB_CRC		0x1fc

/* Slot record field offsets (format 2). */
#define REC_MAGIC	0x00
#define REC_FORMAT	0x04
#define REC_CLASS	0x05
#define REC_FLAGS	0x06
#define REC_TENANT	0x08
#define REC_ID		0x10
#define REC_LENGTH	0x20
#define REC_GEN		0x28
#define REC_PCRC	0x2c
#define REC_EXTENT	0x30
#define REC_SLOT	0x34
#define REC_PART	0x38
#define REC_CRC		0x3c

static bool od_zero(const u8 *p, size_t len)
{
	size_t i;

	for (i = 0; i < len; i++)
		if (p[i])
			return false;
	return true;
}

/**
 * dfkv_od_crc() - CRC32C as the format uses it
 * @p: bytes
 * @len: their number
 *
 * Return: CRC-32C with initial value and final xor ~0.
 */
u32 dfkv_od_crc(const void *p, size_t len)
{
	return ~crc32c(~0U, p, len);
}

/**
 * dfkv_od_rec_crc() - CRC of a 64-byte record
 * @buf: the record
 * @uuid: the disk's uuid (DFKV_OD_UUID_LEN bytes), the CRC's salt
 *
 * Return: CRC32C of uuid followed by the record's bytes before its crc.
 */
u32 dfkv_od_rec_crc(const void *buf, const u8 *uuid)
{
	u32 crc = crc32c(~0U, uuid, DFKV_OD_UUID_LEN);

	return ~crc32c(crc, buf, REC_CRC);
}

static u64 od_records_bytes(u64 nr, u64 extent_bytes)
{
	return round_up(nr * (extent_bytes / DFKV_OD_BLOCK) * DFKV_OD_REC_BYTES,
			DFKV_OD_BLOCK);
}

static u64 od_data_off(u64 nr, u64 extent_bytes)
{
	u64 align = min_t(u64, extent_bytes, DFKV_OD_DATA_ALIGN_MAX);

	return round_up(DFKV_OD_RECORDS_OFF +
			od_records_bytes(nr, extent_bytes), align);
}

static bool od_extent_ok(u64 extent_bytes)
{
	return is_power_of_2(extent_bytes) &&
	       extent_bytes >= BIT_ULL(DFKV_SLAB_MIN_EXTENT_SHIFT) &&
	       extent_bytes <= BIT_ULL(DFKV_SLAB_MAX_EXTENT_SHIFT);
}

/**
 * dfkv_od_geometry() - lay a device out
 * @dev_bytes: device size
 * @extent_bytes: extent size, a power of two from 64 KiB to 1 GiB
 * @g: the geometry
 *
 * Takes the most extents that fit after the superblock and their records.
 *
 * Return: 0, -EINVAL for @extent_bytes, -ENOSPC when not one extent fits.
 */
int dfkv_od_geometry(u64 dev_bytes, u64 extent_bytes, struct dfkv_od_geom *g)
{
	u64 lo = 0, hi;

	memset(g, 0, sizeof(*g));
	if (!od_extent_ok(extent_bytes))
		return -EINVAL;
	/* n * extent_bytes <= dev_bytes and n < 2^32 keep every sum in u64 */
	hi = min_t(u64, dev_bytes >> ilog2(extent_bytes), U32_MAX);
	while (lo < hi) {
		u64 mid = hi - (hi - lo) / 2;

		if (od_data_off(mid, extent_bytes) + mid * extent_bytes <=
		    dev_bytes)
			lo = mid;
		else
			hi = mid - 1;
	}
	if (!lo)
		return -ENOSPC;
	g->dev_bytes = dev_bytes;
	g->extent_bytes = extent_bytes;
	g->nr_extents = lo;
	g->max_slots = extent_bytes / DFKV_OD_BLOCK;
	g->records_off = DFKV_OD_RECORDS_OFF;
	g->records_bytes = od_records_bytes(lo, extent_bytes);
	g->data_off = od_data_off(lo, extent_bytes);
	return 0;
}

/* Byte offset on the device of the record of (@extent, @slot). */
u64 dfkv_od_rec_pos(const struct dfkv_od_geom *g, u32 extent, u32 slot)
{
	return g->records_off +
	       ((u64)extent * g->max_slots + slot) * DFKV_OD_REC_BYTES;
}

/* Byte offset on the device of the payload of (@extent, @slot). */
u64 dfkv_od_data_pos(const struct dfkv_od_geom *g, u32 extent, u32 slot,
		     u64 class_size)
{
	return g->data_off + (u64)extent * g->extent_bytes +
	       (u64)slot * class_size;
}

/* Parts a value of @length bytes takes: ceil(length / extent_bytes). */
u64 dfkv_od_nr_parts(u64 length, u64 extent_bytes)
{
	return (length >> ilog2(extent_bytes)) +
	       !!(length & (extent_bytes - 1));
}

/* Bytes of part @part of a value of @length bytes; 0 beyond the last. */
u64 dfkv_od_part_len(u64 length, u32 part, u64 extent_bytes)
{
	u64 start = (u64)part << ilog2(extent_bytes);

	if (start >= length)
		return 0;
	return min_t(u64, extent_bytes, length - start);
}

/**
 * dfkv_od_sb_format() - a new superblock
 * @sb: the superblock
 * @dev_bytes: device size
 * @extent_bytes: extent size
 * @uuid: DFKV_OD_UUID_LEN random bytes
 * @name: the disk's name, 1 to DFKV_OD_NAME_MAX - 1 bytes
 *
 * CLEAN at epoch 1 with an empty window (valid_from 2).
 *
 * Return: 0, -EINVAL or -ENOSPC (see dfkv_od_geometry()).
 */
int dfkv_od_sb_format(struct dfkv_od_sb *sb, u64 dev_bytes,
		      u64 extent_bytes, const u8 *uuid, const char *name)
{
	size_t len = strnlen(name, DFKV_OD_NAME_MAX);
	int err;

	memset(sb, 0, sizeof(*sb));
	if (!len || len >= DFKV_OD_NAME_MAX)
		return -EINVAL;
	err = dfkv_od_geometry(dev_bytes, extent_bytes, &sb->geom);
	if (err)
		return err;
	sb->format = DFKV_OD_FORMAT_VERSION;
	sb->lattice = DFKV_SLAB_LATTICE_VERSION;
	sb->state = DFKV_OD_CLEAN;
	sb->epoch = 1;
	sb->valid_from = 2;
	memcpy(sb->uuid, uuid, DFKV_OD_UUID_LEN);
	memcpy(sb->name, name, len);
	return 0;
}

/**
 * dfkv_od_sb_encode() - encode a superblock
 * @sb: the superblock, written as it is (no check)
 * @buf: DFKV_OD_SB_BYTES bytes
 */
void dfkv_od_sb_encode(const struct dfkv_od_sb *sb, void *buf)
{
	const struct dfkv_od_geom *g = &sb->geom;
	u8 *b = buf;

	memset(b, 0, DFKV_OD_SB_BYTES);
	memcpy(b + SB_MAGIC, DFKV_OD_SB_MAGIC, 8);
	put_unaligned_le32(sb->format, b + SB_FORMAT);
	put_unaligned_le32(sb->lattice, b + SB_LATTICE);
	put_unaligned_le32(DFKV_OD_REC_BYTES, b + SB_RECBYTES);
	put_unaligned_le32(sb->state, b + SB_STATE);
	put_unaligned_le64(g->dev_bytes, b + SB_DEVBYTES);
	put_unaligned_le64(g->extent_bytes, b + SB_EXTBYTES);
	put_unaligned_le64(g->nr_extents, b + SB_NREXT);
	put_unaligned_le64(g->records_off, b + SB_RECOFF);
	put_unaligned_le64(g->records_bytes, b + SB_RECLEN);
	put_unaligned_le64(g->data_off, b + SB_DATAOFF);
	put_unaligned_le64(sb->epoch, b + SB_EPOCH);
	put_unaligned_le64(sb->valid_from, b + SB_VALIDFROM);
	put_unaligned_le64(sb->rec_hwm, b + SB_RECHWM);
	memcpy(b + SB_UUID, sb->uuid, DFKV_OD_UUID_LEN);
	memcpy(b + SB_NAME, sb->name,
	       strnlen(sb->name, DFKV_OD_NAME_MAX - 1));
	put_unaligned_le32(dfkv_od_crc(b, SB_CRC), b + SB_CRC);
}

/* Whether the recorded figures are the derivation's. */
static bool od_sb_geometry_ok(const u8 *b)
{
	struct dfkv_od_geom g;

	if (dfkv_od_geometry(get_unaligned_le64(b + SB_DEVBYTES),
			     get_unaligned_le64(b + SB_EXTBYTES), &g))
		return false;
	return get_unaligned_le64(b + SB_NREXT) == g.nr_extents &&
	       get_unaligned_le64(b + SB_RECOFF) == g.records_off &&
	       get_unaligned_le64(b + SB_RECLEN) == g.records_bytes &&
	       get_unaligned_le64(b + SB_DATAOFF) == g.data_off;
}

/**
 * dfkv_od_sb_decode() - decode and check a superblock block
 * @buf: DFKV_OD_SB_BYTES bytes read from offset 0
 * @sb: the superblock; filled as far as it could be read, valid only
 *      when DFKV_OD_SB_OK is returned
 *
 * Return: DFKV_OD_SB_OK or why the block is not a usable superblock.
 */
enum dfkv_od_sb_reason dfkv_od_sb_decode(const void *buf,
					 struct dfkv_od_sb *sb)
{
	struct dfkv_od_geom *g = &sb->geom;
	const u8 *b = buf;
	size_t len;

	memset(sb, 0, sizeof(*sb));
	if (od_zero(b, DFKV_OD_SB_BYTES))
		return DFKV_OD_SB_BLANK;
	if (memcmp(b + SB_MAGIC, DFKV_OD_SB_MAGIC, 8))
		return DFKV_OD_SB_FOREIGN;
	if (get_unaligned_le32(b + SB_CRC) != dfkv_od_crc(b, SB_CRC))
		return DFKV_OD_SB_CRC;

	sb->format = get_unaligned_le32(b + SB_FORMAT);
	sb->lattice = get_unaligned_le32(b + SB_LATTICE);
	sb->state = get_unaligned_le32(b + SB_STATE);
	g->dev_bytes = get_unaligned_le64(b + SB_DEVBYTES);
	g->extent_bytes = get_unaligned_le64(b + SB_EXTBYTES);
	g->nr_extents = min_t(u64, get_unaligned_le64(b + SB_NREXT),
			      U32_MAX);
	g->records_off = get_unaligned_le64(b + SB_RECOFF);
	g->records_bytes = get_unaligned_le64(b + SB_RECLEN);
	g->data_off = get_unaligned_le64(b + SB_DATAOFF);
	if (od_extent_ok(g->extent_bytes))
		g->max_slots = g->extent_bytes / DFKV_OD_BLOCK;
	sb->epoch = get_unaligned_le64(b + SB_EPOCH);
	sb->valid_from = get_unaligned_le64(b + SB_VALIDFROM);
	sb->rec_hwm = get_unaligned_le64(b + SB_RECHWM);
	memcpy(sb->uuid, b + SB_UUID, DFKV_OD_UUID_LEN);
	len = strnlen((const char *)b + SB_NAME, DFKV_OD_NAME_MAX);
	memcpy(sb->name, b + SB_NAME, min_t(size_t, len, DFKV_OD_NAME_MAX - 1));

	if (sb->format != DFKV_OD_FORMAT_VERSION)
		return DFKV_OD_SB_FORMAT;
	if (sb->lattice != DFKV_SLAB_LATTICE_VERSION)
		return DFKV_OD_SB_LATTICE;
	if (get_unaligned_le32(b + SB_RECBYTES) != DFKV_OD_REC_BYTES ||
	    (sb->state != DFKV_OD_CLEAN && sb->state != DFKV_OD_DIRTY) ||
	    !sb->epoch || sb->epoch > DFKV_OD_EPOCH_MAX || !sb->valid_from ||
	    sb->valid_from > sb->epoch + 1 ||
	    sb->rec_hwm > get_unaligned_le64(b + SB_NREXT) ||
	    !len || len >= DFKV_OD_NAME_MAX ||
	    !od_zero(b + SB_NAME + len, DFKV_OD_NAME_MAX - len) ||
	    !od_zero(b + SB_RESERVED, SB_CRC - SB_RESERVED))
		return DFKV_OD_SB_FIELDS;
	if (!od_sb_geometry_ok(b))
		return DFKV_OD_SB_GEOMETRY;
	return DFKV_OD_SB_OK;
}

/**
 * dfkv_od_sb_match() - whether a decoded superblock fits a device
 * @sb: a superblock dfkv_od_sb_decode() accepted
 * @dev_bytes: the device's size
 * @extent_bytes: the extent size asked for, 0 for the recorded one
 *
 * Return: DFKV_OD_SB_OK, DFKV_OD_SB_DEVICE or DFKV_OD_SB_EXTENT.
 */
enum dfkv_od_sb_reason dfkv_od_sb_match(const struct dfkv_od_sb *sb,
					u64 dev_bytes, u64 extent_bytes)
{
	if (sb->geom.dev_bytes != dev_bytes)
		return DFKV_OD_SB_DEVICE;
	if (extent_bytes && sb->geom.extent_bytes != extent_bytes)
		return DFKV_OD_SB_EXTENT;
	return DFKV_OD_SB_OK;
}

/**
 * dfkv_od_sb_attach() - the superblock to write before traffic
 * @cur: the superblock read from the device (decoded and matched)
 * @next: DIRTY at the next epoch; on a cold reset valid_from is that
 *        epoch
 * @gen_min: first generation the rebuild accepts
 * @gen_max: last generation the rebuild accepts
 *
 * The window [@gen_min, @gen_max] is empty (@gen_min > @gen_max) after a
 * cold reset or when nothing was ever written: skip the scan then.  No
 * record on the device can be valid in a later window then either, so
 * @next's record high-water mark is 0; otherwise it is @cur's, and the
 * scan reads the extents below it.
 *
 * Return: DFKV_OD_ATTACH_REBUILD, DFKV_OD_ATTACH_COLD (@cur was DIRTY), or
 * -EOVERFLOW when @cur's epoch is DFKV_OD_EPOCH_MAX (the disk needs a
 * format; nothing is to be written).
 */
int dfkv_od_sb_attach(const struct dfkv_od_sb *cur, struct dfkv_od_sb *next,
		      u64 *gen_min, u64 *gen_max)
{
	bool cold = cur->state != DFKV_OD_CLEAN;

	if (cur->epoch >= DFKV_OD_EPOCH_MAX)
		return -EOVERFLOW;
	*next = *cur;
	next->epoch = cur->epoch + 1;
	next->state = DFKV_OD_DIRTY;
	if (cold)
		next->valid_from = next->epoch;
	*gen_min = next->valid_from;
	*gen_max = cur->epoch;
	if (*gen_min > *gen_max)
		next->rec_hwm = 0;
	return cold ? DFKV_OD_ATTACH_COLD : DFKV_OD_ATTACH_REBUILD;
}

/* The superblock to write after a graceful flush: CLEAN, same epoch. */
void dfkv_od_sb_clean(struct dfkv_od_sb *sb)
{
	sb->state = DFKV_OD_CLEAN;
}

/**
 * dfkv_od_hwm_cover() - a record high-water mark covering extents
 * @g: the geometry
 * @hwm: the mark now (0 for a mark computed afresh)
 * @need: extents [0, @need) must be below the new mark
 *
 * The mark grows in steps: at least an eighth of itself, in whole
 * granules of DFKV_OD_HWM_GRANULE bytes of record area (at least one
 * extent), never past nr_extents.  So filling a disk raises it a
 * logarithmic number of times, and the scan reads at most an eighth and
 * a granule more than the extents in use.
 *
 * Return: the new mark, >= min(@need, nr_extents); @hwm when it already
 * covers @need.
 */
u64 dfkv_od_hwm_cover(const struct dfkv_od_geom *g, u64 hwm, u64 need)
{
	u64 span = g->extent_bytes / DFKV_OD_BLOCK * DFKV_OD_REC_BYTES;
	/* both powers of two: so is the granule */
	u64 granule = max_t(u64, DFKV_OD_HWM_GRANULE / span, 1);

	if (need <= hwm)
		return hwm;
	need = max_t(u64, need, hwm + hwm / 8);
	return min_t(u64, round_up(need, granule), g->nr_extents);
}

static const char * const od_sb_reasons[DFKV_OD_SB_NR_REASONS] = {
	[DFKV_OD_SB_OK] = "ok",
	[DFKV_OD_SB_BLANK] = "blank",
	[DFKV_OD_SB_FOREIGN] = "not a dfkv disk",
	[DFKV_OD_SB_CRC] = "superblock checksum",
	[DFKV_OD_SB_FORMAT] = "format version",
	[DFKV_OD_SB_LATTICE] = "size-class lattice version",
	[DFKV_OD_SB_FIELDS] = "superblock fields",
	[DFKV_OD_SB_GEOMETRY] = "geometry",
	[DFKV_OD_SB_DEVICE] = "device size",
	[DFKV_OD_SB_EXTENT] = "extent size",
};

const char *dfkv_od_sb_reason_str(enum dfkv_od_sb_reason why)
{
	if ((unsigned int)why >= DFKV_OD_SB_NR_REASONS)
		return "?";
	return od_sb_reasons[why];
}

/**
 * dfkv_od_rec_encode() - encode a slot record
 * @buf: DFKV_OD_REC_BYTES bytes
 * @rec: the record (format 1; gen at most DFKV_OD_EPOCH_MAX)
 * @uuid: the disk's uuid
 */
void dfkv_od_rec_encode(void *buf, const struct dfkv_od_rec *rec,
			const u8 *uuid)
{
	u8 *b = buf;

	put_unaligned_le32(DFKV_OD_RECORD_MAGIC, b + REC_MAGIC);
	b[REC_FORMAT] = DFKV_OD_FORMAT_VERSION;
	b[REC_CLASS] = rec->cls;
	put_unaligned_le16(rec->flags, b + REC_FLAGS);
	put_unaligned_le64(rec->key.tenant, b + REC_TENANT);
	memcpy(b + REC_ID, rec->key.id, DFKV_OBJECT_ID_LEN);
	put_unaligned_le64(rec->length, b + REC_LENGTH);
	put_unaligned_le32(rec->gen, b + REC_GEN);
	put_unaligned_le32(rec->payload_crc, b + REC_PCRC);
	put_unaligned_le32(rec->extent, b + REC_EXTENT);
	put_unaligned_le32(rec->slot, b + REC_SLOT);
	put_unaligned_le32(rec->part, b + REC_PART);
	put_unaligned_le32(dfkv_od_rec_crc(b, uuid), b + REC_CRC);
}

static void od_rec_decode(const u8 *b, struct dfkv_od_rec *rec)
{
	rec->cls = b[REC_CLASS];
	rec->flags = get_unaligned_le16(b + REC_FLAGS);
	rec->key.tenant = get_unaligned_le64(b + REC_TENANT);
	memcpy(rec->key.id, b + REC_ID, DFKV_OBJECT_ID_LEN);
	rec->length = get_unaligned_le64(b + REC_LENGTH);
	rec->gen = get_unaligned_le32(b + REC_GEN);
	rec->payload_crc = get_unaligned_le32(b + REC_PCRC);
	rec->extent = get_unaligned_le32(b + REC_EXTENT);
	rec->slot = get_unaligned_le32(b + REC_SLOT);
	rec->part = get_unaligned_le32(b + REC_PART);
}

/**
 * dfkv_od_scan_init() - set up record validation for a disk
 * @sc: the context
 * @sb: the disk's superblock (decoded)
 * @lattice: an allocator initialized with the disk's extent size, whose
 *           size classes are copied
 * @gen_min: first generation accepted (dfkv_od_sb_attach())
 * @gen_max: last generation accepted
 *
 * Return: 0, or -EINVAL when @lattice does not fit @sb.
 */
int dfkv_od_scan_init(struct dfkv_od_scan *sc, const struct dfkv_od_sb *sb,
		      const struct dfkv_slab *lattice, u64 gen_min,
		      u64 gen_max)
{
	int i;

	memset(sc, 0, sizeof(*sc));
	if (!sb->geom.max_slots ||
	    lattice->extent_bytes != sb->geom.extent_bytes ||
	    lattice->nr_classes <= 0 ||
	    lattice->nr_classes > DFKV_SLAB_MAX_CLASSES)
		return -EINVAL;
	for (i = 0; i < lattice->nr_classes; i++) {
		sc->class_size[i] = dfkv_slab_class_size(lattice, i);
		sc->class_slots[i] = dfkv_slab_slots_per_extent(lattice, i);
		if (!sc->class_slots[i] ||
		    sc->class_slots[i] > sb->geom.max_slots)
			return -EINVAL;
	}
	sc->nr_classes = lattice->nr_classes;
	sc->geom = sb->geom;
	memcpy(sc->uuid, sb->uuid, DFKV_OD_UUID_LEN);
	sc->gen_min = gen_min;
	sc->gen_max = gen_max;
	return 0;
}

/**
 * dfkv_od_rec_check() - validate one record
 * @sc: the disk's context
 * @buf: the DFKV_OD_REC_BYTES bytes read for (@extent, @slot)
 * @extent: where it was read from
 * @slot: where it was read from
 * @rec: the decoded record, or NULL; meaningful when the record passed
 *       its CRC
 *
 * Checks the record alone: the per-extent class agreement is
 * dfkv_od_scan()'s, the assembly of parts the caller's.
 *
 * Return: DFKV_OD_REC_OK, DFKV_OD_REC_EMPTY or why it is invalid.
 */
enum dfkv_od_rec_reason dfkv_od_rec_check(const struct dfkv_od_scan *sc,
					  const void *buf, u32 extent,
					  u32 slot, struct dfkv_od_rec *rec)
{
	const struct dfkv_od_geom *g = &sc->geom;
	struct dfkv_od_rec tmp;
	const u8 *b = buf;
	u64 parts;

	if (!rec)
		rec = &tmp;
	memset(rec, 0, sizeof(*rec));
	if (od_zero(b, DFKV_OD_REC_BYTES))
		return DFKV_OD_REC_EMPTY;
	if (get_unaligned_le32(b + REC_MAGIC) != DFKV_OD_RECORD_MAGIC)
		return DFKV_OD_REC_MAGIC;
	if (get_unaligned_le32(b + REC_CRC) != dfkv_od_rec_crc(b, sc->uuid))
		return DFKV_OD_REC_CRC;
	od_rec_decode(b, rec);
	if (b[REC_FORMAT] != DFKV_OD_FORMAT_VERSION)
		return DFKV_OD_REC_FORMAT;
	if (rec->flags)
		return DFKV_OD_REC_FLAGS;
	if (rec->extent != extent || rec->slot != slot ||
	    extent >= g->nr_extents || slot >= g->max_slots)
		return DFKV_OD_REC_POSITION;
	if (rec->gen < sc->gen_min || rec->gen > sc->gen_max)
		return DFKV_OD_REC_GENERATION;
	if (rec->cls >= sc->nr_classes || slot >= sc->class_slots[rec->cls])
		return DFKV_OD_REC_CLASS;
	/* nr_extents * extent_bytes <= dev_bytes: no overflow */
	if (!rec->length ||
	    rec->length > (u64)g->nr_extents * g->extent_bytes)
		return DFKV_OD_REC_LENGTH;
	parts = dfkv_od_nr_parts(rec->length, g->extent_bytes);
	if (rec->part >= parts ||
	    dfkv_od_part_len(rec->length, rec->part, g->extent_bytes) >
	    sc->class_size[rec->cls])
		return DFKV_OD_REC_LENGTH;
	return DFKV_OD_REC_OK;
}

static void od_reject(struct dfkv_od_scan *sc, u8 *r, u32 extent, u32 slot,
		      enum dfkv_od_rec_reason why, dfkv_od_reject_fn reject,
		      void *ctx)
{
	memset(r, 0, DFKV_OD_REC_BYTES);
	sc->count[why]++;
	if (reject)
		reject(ctx, extent, slot, why);
}

/**
 * dfkv_od_scan() - validate the records of consecutive extents
 * @sc: the disk's context (its counts are added to)
 * @buf: the records of extents [@first, @first + @n), as read from
 *       dfkv_od_rec_pos(@first, 0): @n * max_slots * 64 bytes
 * @first: first extent in @buf
 * @n: extents in @buf
 * @found: called for each valid record, or NULL
 * @reject: called for each record zeroed, or NULL
 * @ctx: first argument of the callbacks
 *
 * Each record is checked alone (dfkv_od_rec_check()); then, when the
 * valid records of one extent disagree on the class, all of them are
 * rejected (CONFLICT).  Every rejected record is zeroed in @buf, which the
 * caller writes back; empty ones are left alone.  @found sees an extent's
 * records only after the whole extent was checked.
 *
 * Return: the number of records zeroed, -EINVAL for a range beyond the
 * disk, or the negative errno @found returned (the scan stops there).
 */
long dfkv_od_scan(struct dfkv_od_scan *sc, void *buf, u32 first, u32 n,
		  dfkv_od_found_fn found, dfkv_od_reject_fn reject, void *ctx)
{
	size_t span = (size_t)sc->geom.max_slots * DFKV_OD_REC_BYTES;
	struct dfkv_od_rec rec;
	long zeroed = 0;
	u32 x, i;

	if (first > sc->geom.nr_extents || n > sc->geom.nr_extents - first)
		return -EINVAL;
	for (x = first; x < first + n; x++) {
		u8 *eb = (u8 *)buf + (size_t)(x - first) * span;
		bool conflict = false;
		int cls = -1;

		for (i = 0; i < sc->geom.max_slots; i++) {
			u8 *r = eb + (size_t)i * DFKV_OD_REC_BYTES;
			enum dfkv_od_rec_reason why;

			why = dfkv_od_rec_check(sc, r, x, i, &rec);
			if (why == DFKV_OD_REC_EMPTY) {
				sc->count[why]++;
				continue;
			}
			if (why != DFKV_OD_REC_OK) {
				od_reject(sc, r, x, i, why, reject, ctx);
				zeroed++;
				continue;
			}
			if (cls < 0)
				cls = rec.cls;
			else if (cls != rec.cls)
				conflict = true;
		}
		if (cls < 0)
			continue;
		/* what is left non-zero passed dfkv_od_rec_check() */
		for (i = 0; i < sc->geom.max_slots; i++) {
			u8 *r = eb + (size_t)i * DFKV_OD_REC_BYTES;
			int ret = 0;

			if (!get_unaligned_le32(r + REC_MAGIC))
				continue;
			if (conflict) {
				od_reject(sc, r, x, i, DFKV_OD_REC_CONFLICT,
					  reject, ctx);
				zeroed++;
				continue;
			}
			od_rec_decode(r, &rec);
			if (found)
				ret = found(ctx, &rec);
			if (ret < 0)
				return ret;
			if (ret == DFKV_OD_SCAN_REFUSE) {
				od_reject(sc, r, x, i, DFKV_OD_REC_REFUSED,
					  reject, ctx);
				zeroed++;
				continue;
			}
			sc->count[DFKV_OD_REC_OK]++;
		}
	}
	return zeroed;
}

static const char * const od_rec_reasons[DFKV_OD_REC_NR_REASONS] = {
	[DFKV_OD_REC_OK] = "ok",
	[DFKV_OD_REC_EMPTY] = "empty",
	[DFKV_OD_REC_MAGIC] = "magic",
	[DFKV_OD_REC_CRC] = "checksum",
	[DFKV_OD_REC_FORMAT] = "format",
	[DFKV_OD_REC_FLAGS] = "flags",
	[DFKV_OD_REC_POSITION] = "position",
	[DFKV_OD_REC_GENERATION] = "generation",
	[DFKV_OD_REC_CLASS] = "class",
	[DFKV_OD_REC_LENGTH] = "length",
	[DFKV_OD_REC_CONFLICT] = "class conflict",
	[DFKV_OD_REC_REFUSED] = "refused",
};

const char *dfkv_od_rec_reason_str(enum dfkv_od_rec_reason why)
{
	if ((unsigned int)why >= DFKV_OD_REC_NR_REASONS)
		return "?";
	return od_rec_reasons[why];
}
