// SPDX-License-Identifier: GPL-2.0
/*
 * Native unit test of the disk image writer (tools/bench/mkimage.c): the
 * image it writes is read back and put through the module's own codec as
 * an attach would: the superblock decodes, matches the image's size and
 * is CLEAN at epoch 2 with a mark covering the records; the attach is a
 * REBUILD of window [2, 2]; the scan of the records below the mark
 * accepts exactly one record per part of every value (every key present
 * once, every slot claimed once, nothing rejected), and every part's
 * payload bytes in the image match its record's payload CRC.
 */
#define _GNU_SOURCE	/* memfd_create() */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>

/* The harness's macros compare mixed types and ignore parameters. */
#pragma GCC diagnostic ignored "-Wsign-compare"
#pragma GCC diagnostic ignored "-Wunused-parameter"
#include "kselftest_harness.h"

#include "mkimage.h"

#include <linux/errno.h>
#include "ondisk.h"
#include "slab.h"

struct seen {
	int fd;
	const struct dfkv_od_geom *g;
	struct dfkv_slab *slab;
	struct dfkv_od_rec *recs;
	u64 n, cap, bad_payload, bad_claim;
};

static int seen_found(void *ctx, const struct dfkv_od_rec *rec)
{
	struct seen *s = ctx;
	u64 len = dfkv_od_part_len(rec->length, rec->part, s->g->extent_bytes);
	u64 cls_size = dfkv_slab_class_size(s->slab, rec->cls);
	struct dfkv_slot slot = { rec->extent, rec->slot };
	u8 *buf = malloc(len);

	if (!buf || s->n == s->cap)
		return -ENOMEM;
	if (pread(s->fd, buf, len, dfkv_od_data_pos(s->g, rec->extent,
						      rec->slot, cls_size)) != (ssize_t)len ||
	    dfkv_od_crc(buf, len) != rec->payload_crc)
		s->bad_payload++;
	free(buf);
	if (dfkv_slab_claim(s->slab, slot, rec->cls, s))
		s->bad_claim++;
	s->recs[s->n++] = *rec;
	return 0;
}

static int key_part_cmp(const void *a, const void *b)
{
	const struct dfkv_od_rec *x = a, *y = b;
	int c = memcmp(&x->key, &y->key, sizeof(x->key));

	return c ? c : (x->part > y->part) - (x->part < y->part);
}

static int key_cmp(const void *a, const void *b)
{
	return memcmp(a, b, sizeof(struct dfkv_key));
}

/* Write m's image, scan it as an attach would and check every record. */
static void check_image(struct __test_metadata *_metadata,
			const struct mkimage *m, u64 parts)
{
	int fd = memfd_create("dfkv-image", 0);
	struct mkimage_out o;
	struct dfkv_od_sb sb, next;
	struct dfkv_od_scan *sc = calloc(1, sizeof(*sc));
	struct dfkv_slab slab;
	struct dfkv_key *want = calloc(m->records, sizeof(*want));
	struct seen s = { .fd = fd, .cap = m->records * parts };
	u8 blk[DFKV_OD_SB_BYTES], *recs;
	u64 gmin, gmax, bytes, i;

	ASSERT_LE(0, fd);
	ASSERT_NE(NULL, sc);
	ASSERT_NE(NULL, want);
	ASSERT_EQ(0, mkimage_write(fd, m, &o));
	ASSERT_EQ(o.dev_bytes, lseek(fd, 0, SEEK_END));

	/* the superblock: what a clean close leaves */
	ASSERT_EQ(sizeof(blk), pread(fd, blk, sizeof(blk), 0));
	ASSERT_EQ(DFKV_OD_SB_OK, dfkv_od_sb_decode(blk, &sb));
	ASSERT_EQ(DFKV_OD_SB_OK, dfkv_od_sb_match(&sb, o.dev_bytes,
						  o.extent_bytes));
	EXPECT_EQ(DFKV_OD_CLEAN, sb.state);
	EXPECT_EQ(2, sb.epoch);
	EXPECT_EQ(2, sb.valid_from);
	EXPECT_STREQ(m->name, sb.name);
	EXPECT_EQ(o.rec_hwm, sb.rec_hwm);
	ASSERT_GE(sb.rec_hwm, o.extents_used);
	ASSERT_GE(sb.geom.nr_extents, o.extents_used);

	/* the attach rebuilds epochs 2..2 */
	ASSERT_EQ(DFKV_OD_ATTACH_REBUILD,
		  dfkv_od_sb_attach(&sb, &next, &gmin, &gmax));
	EXPECT_EQ(2, gmin);
	EXPECT_EQ(2, gmax);
	ASSERT_EQ(0, dfkv_slab_init(&slab, sb.geom.extent_bytes,
				    sb.geom.nr_extents, NULL, NULL));
	ASSERT_EQ(0, dfkv_od_scan_init(sc, &sb, &slab, gmin, gmax));

	/* the scan of the records below the mark */
	bytes = sb.rec_hwm * (sb.geom.extent_bytes / 64);
	recs = malloc(bytes);
	s.recs = calloc(s.cap, sizeof(*s.recs));
	s.g = &sb.geom;
	s.slab = &slab;
	ASSERT_NE(NULL, recs);
	ASSERT_NE(NULL, s.recs);
	ASSERT_EQ(bytes, pread(fd, recs, bytes, sb.geom.records_off));
	ASSERT_EQ(0, dfkv_od_scan(sc, recs, 0, sb.rec_hwm, seen_found, NULL,
				  &s));
	EXPECT_EQ(m->records * parts, sc->count[DFKV_OD_REC_OK]);
	for (i = DFKV_OD_REC_EMPTY + 1; i < DFKV_OD_REC_NR_REASONS; i++)
		EXPECT_EQ(0, sc->count[i]);
	EXPECT_EQ(0, s.bad_payload);
	EXPECT_EQ(0, s.bad_claim);
	ASSERT_EQ(m->records * parts, s.n);

	/* every key once, with each of its parts once */
	for (i = 0; i < m->records; i++)
		ASSERT_EQ(0, mkimage_key(m->ns, i, &want[i]));
	qsort(want, m->records, sizeof(*want), key_cmp);
	qsort(s.recs, s.n, sizeof(*s.recs), key_part_cmp);
	for (i = 0; i < s.n; i++) {
		ASSERT_EQ(0, key_cmp(&s.recs[i].key, &want[i / parts]));
		ASSERT_EQ(i % parts, s.recs[i].part);
		ASSERT_EQ(m->value_bytes, s.recs[i].length);
		ASSERT_EQ(2, s.recs[i].gen);
		dfkv_slab_free(&slab, (struct dfkv_slot){ s.recs[i].extent,
							  s.recs[i].slot });
	}
	dfkv_slab_destroy(&slab);
	free(s.recs);
	free(recs);
	free(want);
	free(sc);
	close(fd);
}

TEST(small_values_default_extent)
{
	struct mkimage m = { .records = 2500, .value_bytes = 4096,
			     .name = "img", .ns = "unit" };

	check_image(_metadata, &m, 1);
}

TEST(odd_length_in_a_larger_class)
{
	struct mkimage m = { .records = 700, .value_bytes = 5000,
			     .extent_bytes = 64 * 1024, .name = "img",
			     .ns = "unit" };

	check_image(_metadata, &m, 1);
}

TEST(values_of_several_parts)
{
	struct mkimage m = { .records = 40, .value_bytes = 3 * 65536 + 100,
			     .extent_bytes = 64 * 1024, .name = "img",
			     .ns = "unit" };

	check_image(_metadata, &m, 4);
}

TEST(image_too_small)
{
	struct mkimage m = { .records = 2000, .value_bytes = 4096,
			     .dev_bytes = 1 << 20, .extent_bytes = 64 * 1024,
			     .name = "img", .ns = "unit" };
	struct mkimage_out o;
	int fd = memfd_create("dfkv-image", 0);

	ASSERT_LE(0, fd);
	EXPECT_EQ(-ENOSPC, mkimage_write(fd, &m, &o));
	close(fd);
}

TEST_HARNESS_MAIN
