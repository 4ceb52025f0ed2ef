// SPDX-License-Identifier: GPL-2.0
/*
 * The image writer behind dfkv-mkimage (mkimage.h).  It replays what the
 * module does to a fresh disk, with the module's code: format
 * (dfkv_od_sb_format, CLEAN at epoch 1), attach (dfkv_od_sb_attach: DIRTY
 * at epoch 2), one PUT per value (dfkv_slab_alloc picks every part's slot,
 * the committer's mark raise dfkv_od_hwm_cover, dfkv_od_rec_encode with
 * generation 2 and the part's payload CRC), then the graceful close
 * (dfkv_od_sb_clean).  Every value is all zero bytes: the payload area is
 * left as holes of the sparse file, which read as those zeros, so only
 * the superblock and the records take space and time.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/random.h>

#include "dfkv.h"
#include "mkimage.h"

#include <linux/errno.h>
#include "ondisk.h"
#include "slab.h"

#define MKIMAGE_EXTENT_DEFAULT	(4ULL << 20)	/* the module's, disk.h */

int mkimage_key(const char *ns, uint64_t idx, struct dfkv_key *k)
{
	char name[24];
	int n = snprintf(name, sizeof(name), "%llu", (unsigned long long)idx);
	uint64_t tenant;

	if (dfkv_tenant_hash(ns, strlen(ns), &tenant))
		return -EINVAL;
	k->tenant = tenant;
	return dfkv_object_id(ns, strlen(ns), name, n, k->id) ? -EINVAL : 0;
}

/* Extents a store of m's values binds: whole-extent parts, then tails. */
static uint64_t extents_needed(const struct dfkv_slab *s,
			       const struct mkimage *m)
{
	u64 parts = dfkv_od_nr_parts(m->value_bytes, s->extent_bytes);
	u64 tail = dfkv_od_part_len(m->value_bytes, parts - 1, s->extent_bytes);
	u64 per = dfkv_slab_slots_per_extent(s, dfkv_slab_class(s, tail));

	return m->records * (parts - 1) + (m->records + per - 1) / per;
}

/* Size of an image that holds m: a lattice is needed to know. */
static int image_bytes(const struct mkimage *m, u64 ext, u64 *dev)
{
	struct dfkv_slab s;
	u64 need;
	int err;

	if (m->dev_bytes) {
		*dev = m->dev_bytes;
		return 0;
	}
	err = dfkv_slab_init(&s, ext, 1, NULL, NULL);
	if (err)
		return err;
	need = extents_needed(&s, m);
	dfkv_slab_destroy(&s);
	if (!need)
		need = 1;	/* no value: the smallest disk */
	/* the data, its records, the superblock and the alignment */
	*dev = need * ext + need * (ext / 64) + 4 * DFKV_OD_DATA_ALIGN_MAX;
	return 0;
}

/* The records of extents [0, n) in RAM, grown as extents are bound. */
struct recbuf {
	u8 *p;
	u64 extents;
	u64 span;	/* record bytes per extent */
};

static int recbuf_reserve(struct recbuf *b, u64 extent)
{
	u64 n = b->extents;
	u8 *p;

	if (extent < n)
		return 0;
	while (n <= extent)
		n = n ? n * 2 : 64;
	p = realloc(b->p, n * b->span);
	if (!p)
		return -ENOMEM;
	memset(p + b->extents * b->span, 0, (n - b->extents) * b->span);
	b->p = p;
	b->extents = n;
	return 0;
}

/* Give the slots of b's records back, so the allocator is destroyed empty. */
static void free_all(struct dfkv_slab *s, const struct recbuf *b, u64 top)
{
	static const u8 empty[DFKV_OD_REC_BYTES];
	u64 per = b->span / DFKV_OD_REC_BYTES, e, i;

	for (e = 0; e < top; e++)
		for (i = 0; i < per; i++)
			if (memcmp(b->p + e * b->span + i * DFKV_OD_REC_BYTES,
				   empty, sizeof(empty)))
				dfkv_slab_free(s, (struct dfkv_slot){ e, i });
}

static int pwrite_all(int fd, const void *buf, u64 len, u64 off)
{
	const u8 *p = buf;

	while (len) {
		ssize_t n = pwrite(fd, p, len, off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 ? -errno : -EIO;
		p += n;
		len -= n;
		off += n;
	}
	return 0;
}

/* Store every value's records in b; the mark as the committer raised it. */
static int put_all(const struct mkimage *m, const struct dfkv_od_sb *sb,
		   struct dfkv_slab *s, struct recbuf *b, u64 *hwm, u64 *top)
{
	const struct dfkv_od_geom *g = &sb->geom;
	u64 parts = dfkv_od_nr_parts(m->value_bytes, g->extent_bytes);
	u32 crc_full, crc_tail;
	struct dfkv_od_rec rec = { .length = m->value_bytes, .gen = sb->epoch };
	u8 *zero = calloc(1, g->extent_bytes);
	u64 i, p;
	int err = 0;

	if (!zero)
		return -ENOMEM;
	crc_full = dfkv_od_crc(zero, g->extent_bytes);
	crc_tail = dfkv_od_crc(zero, dfkv_od_part_len(m->value_bytes, parts - 1,
						      g->extent_bytes));
	free(zero);
	for (i = 0; i < m->records && !err; i++) {
		err = mkimage_key(m->ns, i, &rec.key);
		for (p = 0; p < parts && !err; p++) {
			struct dfkv_slot slot;
			u64 len = dfkv_od_part_len(m->value_bytes, p,
						   g->extent_bytes);

			err = dfkv_slab_alloc(s, len, b, &slot);
			if (err)
				break;
			rec.extent = slot.extent;
			rec.slot = slot.index;
			rec.part = p;
			rec.cls = dfkv_slot_class(s, slot);
			rec.payload_crc = p + 1 < parts ? crc_full : crc_tail;
			err = recbuf_reserve(b, slot.extent);
			if (err)
				break;
			if (slot.extent >= *hwm)
				*hwm = dfkv_od_hwm_cover(g, *hwm, slot.extent + 1ULL);
			if (slot.extent + 1ULL > *top)
				*top = slot.extent + 1ULL;
			dfkv_od_rec_encode(b->p + dfkv_od_rec_pos(g, slot.extent,
								  slot.index) -
					   g->records_off, &rec, sb->uuid);
		}
	}
	return err;
}

int mkimage_write(int fd, const struct mkimage *m, struct mkimage_out *out)
{
	u64 ext = m->extent_bytes ? m->extent_bytes : MKIMAGE_EXTENT_DEFAULT;
	struct dfkv_od_sb fmt, sb;
	struct dfkv_slab s;
	struct recbuf b = { .span = ext / DFKV_OD_BLOCK * DFKV_OD_REC_BYTES };
	u8 uuid[DFKV_OD_UUID_LEN], *blk;
	u64 dev, gmin, gmax, hwm, top = 0;
	int err;

	if (!m->value_bytes || !m->ns || !m->name)
		return -EINVAL;
	err = image_bytes(m, ext, &dev);
	if (err)
		return err;
	if (getrandom(uuid, sizeof(uuid), 0) != sizeof(uuid))
		return -errno;
	/* format, then the attach that the values were written in */
	err = dfkv_od_sb_format(&fmt, dev, ext, uuid, m->name);
	if (err)
		return err;
	if (dfkv_od_sb_attach(&fmt, &sb, &gmin, &gmax) < 0)
		return -EOVERFLOW;
	hwm = sb.rec_hwm;
	err = dfkv_slab_init(&s, ext, sb.geom.nr_extents, NULL, NULL);
	if (err)
		return err;
	err = put_all(m, &sb, &s, &b, &hwm, &top);
	free_all(&s, &b, top);
	dfkv_slab_destroy(&s);
	if (!err && (ftruncate(fd, 0) || ftruncate(fd, dev)))
		err = -errno;
	if (!err && top)
		err = pwrite_all(fd, b.p, top * b.span, sb.geom.records_off);
	free(b.p);
	if (err)
		return err;
	/* the graceful close: CLEAN, same epoch, the mark as raised */
	sb.rec_hwm = hwm;
	dfkv_od_sb_clean(&sb);
	blk = calloc(1, DFKV_OD_SB_BYTES);
	if (!blk)
		return -ENOMEM;
	dfkv_od_sb_encode(&sb, blk);
	err = pwrite_all(fd, blk, DFKV_OD_SB_BYTES, 0);
	free(blk);
	if (!err && fsync(fd))
		err = -errno;
	if (err)
		return err;
	*out = (struct mkimage_out){
		.dev_bytes = dev, .extent_bytes = ext,
		.nr_extents = sb.geom.nr_extents, .extents_used = top,
		.rec_hwm = hwm, .epoch = sb.epoch,
		.record_bytes = top * b.span,
	};
	return 0;
}
