// SPDX-License-Identifier: GPL-2.0
/*
 * Native unit test of the on-disk format codec (kmod/ondisk.c, with the
 * slab allocator's lattice from kmod/slab.c), built unchanged against
 * kshim/: CRC32C, geometry for tiny, ragged and huge devices, superblock
 * and record round trips, every single-bit flip caught, each record
 * invariant (position, generation, class, length, class conflict), the
 * rebuild scan, the epoch rules (graceful restart, cold reset after a
 * crash, format) on an in-memory device, and geometry refusals.
 */
#include <stdlib.h>
#include <string.h>

/* The harness's macros compare mixed types and ignore parameters. */
#pragma GCC diagnostic ignored "-Wsign-compare"
#pragma GCC diagnostic ignored "-Wunused-parameter"
#include "kselftest_harness.h"

#include <linux/crc32c.h>
#include <linux/errno.h>
#include "ondisk.h"
#include "slab.h"

#define KIB	1024ULL
#define MIB	(1024 * KIB)
#define GIB	(1024 * MIB)
#define TIB	(1024 * GIB)

static const u8 uuid_a[DFKV_OD_UUID_LEN] = {
	0x10, 0x32, 0x54, 0x76, 0x98, 0xba, 0xdc, 0xfe,
	0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xef,
};
static const u8 uuid_b[DFKV_OD_UUID_LEN] = { 1 };

static void geom_invariants(struct __test_metadata *_metadata,
			    const struct dfkv_od_geom *g, u64 dev, u64 ext)
{
	u64 align = ext < MIB ? ext : MIB;
	u64 end = g->data_off + (u64)g->nr_extents * ext;

	ASSERT_EQ(dev, g->dev_bytes);
	ASSERT_EQ(ext, g->extent_bytes);
	ASSERT_GE(g->nr_extents, 1);
	ASSERT_EQ(ext / 4096, g->max_slots);
	ASSERT_EQ(4096, g->records_off);
	ASSERT_EQ(0, g->records_bytes % 4096);
	ASSERT_GE(g->records_bytes, (u64)g->nr_extents * g->max_slots * 64);
	ASSERT_LT(g->records_bytes,
		  (u64)g->nr_extents * g->max_slots * 64 + 4096);
	ASSERT_EQ(0, g->data_off % align);
	ASSERT_GE(g->data_off, g->records_off + g->records_bytes);
	ASSERT_LE(end, dev);
	/* the last record lies in the record area, before the data */
	ASSERT_LE(dfkv_od_rec_pos(g, g->nr_extents - 1, g->max_slots - 1) + 64,
		  g->records_off + g->records_bytes);
	/* maximal: one more extent (and its records) would not fit */
	if (g->nr_extents < UINT32_MAX) {
		u64 n = g->nr_extents + 1ULL;
		u64 rec = (n * (ext / 64) + 4095) / 4096 * 4096;
		u64 doff = (4096 + rec + align - 1) / align * align;

		ASSERT_GT(doff + n * ext, dev);
	}
}

TEST(crc32c_check_value)
{
	EXPECT_EQ(0xe3069283U, dfkv_od_crc("123456789", 9));
	EXPECT_EQ(0, dfkv_od_crc("", 0));
}

TEST(geometry_sizes)
{
	static const struct { u64 dev, ext; int err; } t[] = {
		{ 0, 64 * KIB, -ENOSPC },
		{ 64 * KIB, 64 * KIB, -ENOSPC },	/* sb + records first */
		{ 128 * KIB - 1, 64 * KIB, -ENOSPC },
		{ 128 * KIB, 64 * KIB, 0 },		/* tiny: one extent */
		{ 8 * MIB + 12345, 64 * KIB, 0 },	/* ragged */
		{ 100 * MIB + 512, 4 * MIB, 0 },
		{ 5 * MIB - 1, 4 * MIB, -ENOSPC },
		{ 5 * MIB, 4 * MIB, 0 },
		{ 1 * GIB + 17 * MIB - 1, 1 * GIB, -ENOSPC },
		{ 1 * GIB + 17 * MIB, 1 * GIB, 0 },	/* 16 MiB of records */
		{ 2 * GIB, 1 * GIB, 0 },		/* 1 fits, 2 do not */
		{ 3 * TIB + 7 * 4096 + 3, 16 * MIB, 0 },	/* huge */
		{ 16 * TIB, 64 * KIB, 0 },
		{ 1ULL << 60, 64 * KIB, 0 },		/* > 2^32 extents */
		{ UINT64_MAX, 1 * GIB, 0 },
		{ UINT64_MAX, 64 * KIB, 0 },
		{ 1 * GIB, 32 * KIB, -EINVAL },
		{ 1 * GIB, 2 * GIB, -EINVAL },
		{ 1 * GIB, 96 * KIB, -EINVAL },
		{ 1 * GIB, 0, -EINVAL },
	};
	struct dfkv_od_geom g;

	for (unsigned int i = 0; i < ARRAY_SIZE(t); i++) {
		int err = dfkv_od_geometry(t[i].dev, t[i].ext, &g);

		ASSERT_EQ(t[i].err, err) TH_LOG("case %u", i);
		if (!err)
			geom_invariants(_metadata, &g, t[i].dev, t[i].ext);
	}
	ASSERT_EQ(0, dfkv_od_geometry(128 * KIB, 64 * KIB, &g));
	EXPECT_EQ(1, g.nr_extents);
	EXPECT_EQ(64 * KIB, g.data_off);
	ASSERT_EQ(0, dfkv_od_geometry(2 * GIB, 1 * GIB, &g));
	EXPECT_EQ(1, g.nr_extents);
	EXPECT_EQ(16 * MIB + 1 * MIB, g.data_off);
	ASSERT_EQ(0, dfkv_od_geometry(1ULL << 60, 64 * KIB, &g));
	EXPECT_EQ(UINT32_MAX, g.nr_extents);
}

TEST(geometry_many_sizes)
{
	struct dfkv_od_geom g;
	u64 seed = 42;

	for (int i = 0; i < 20000; i++) {
		u64 ext = 1ULL << (16 + i % 15);
		u64 dev;

		seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
		dev = seed >> (i % 40);
		if (dfkv_od_geometry(dev, ext, &g)) {
			u64 align = ext < MIB ? ext : MIB;
			u64 rec = (ext / 64 + 4095) / 4096 * 4096;

			/* too small: not even one extent fits */
			ASSERT_LT(dev, (4096 + rec + align - 1) / align * align +
				  ext);
			continue;
		}
		geom_invariants(_metadata, &g, dev, ext);
	}
}

TEST(positions_and_parts)
{
	struct dfkv_od_geom g;

	ASSERT_EQ(0, dfkv_od_geometry(64 * MIB, 4 * MIB, &g));
	EXPECT_EQ(4096, dfkv_od_rec_pos(&g, 0, 0));
	EXPECT_EQ(4096 + 64, dfkv_od_rec_pos(&g, 0, 1));
	EXPECT_EQ(4096 + 1024 * 64 * 3 + 5 * 64, dfkv_od_rec_pos(&g, 3, 5));
	EXPECT_EQ(g.data_off + 2 * 4 * MIB + 3 * 12288,
		  dfkv_od_data_pos(&g, 2, 3, 12288));
	EXPECT_EQ(1, dfkv_od_nr_parts(1, 4 * MIB));
	EXPECT_EQ(1, dfkv_od_nr_parts(4 * MIB, 4 * MIB));
	EXPECT_EQ(2, dfkv_od_nr_parts(4 * MIB + 1, 4 * MIB));
	EXPECT_EQ(1ULL << 34, dfkv_od_nr_parts(UINT64_MAX, 1 * GIB));
	EXPECT_EQ(4 * MIB, dfkv_od_part_len(9 * MIB, 0, 4 * MIB));
	EXPECT_EQ(4 * MIB, dfkv_od_part_len(9 * MIB, 1, 4 * MIB));
	EXPECT_EQ(1 * MIB, dfkv_od_part_len(9 * MIB, 2, 4 * MIB));
	EXPECT_EQ(0, dfkv_od_part_len(9 * MIB, 3, 4 * MIB));
}

static u8 sbbuf[DFKV_OD_SB_BYTES];

TEST(superblock_round_trip)
{
	struct dfkv_od_sb sb, out;

	ASSERT_EQ(0, dfkv_od_sb_format(&sb, 100 * MIB + 512, 4 * MIB, uuid_a,
				       "nvme0n1"));
	EXPECT_EQ(DFKV_OD_CLEAN, sb.state);
	EXPECT_EQ(1, sb.epoch);
	EXPECT_EQ(2, sb.valid_from);
	dfkv_od_sb_encode(&sb, sbbuf);
	EXPECT_EQ(0, memcmp(sbbuf, "DFKVDISK", 8));
	ASSERT_EQ(DFKV_OD_SB_OK, dfkv_od_sb_decode(sbbuf, &out));
	EXPECT_EQ(0, memcmp(&sb, &out, sizeof(sb)));
	EXPECT_STREQ("nvme0n1", out.name);
	EXPECT_EQ(DFKV_OD_SB_OK, dfkv_od_sb_match(&out, 100 * MIB + 512, 0));
	EXPECT_EQ(DFKV_OD_SB_OK,
		  dfkv_od_sb_match(&out, 100 * MIB + 512, 4 * MIB));
	/* the block's tail after the 512 bytes used is zero */
	for (int i = DFKV_OD_SB_USED; i < DFKV_OD_SB_BYTES; i++)
		ASSERT_EQ(0, sbbuf[i]);

	/* names */
	EXPECT_EQ(-EINVAL, dfkv_od_sb_format(&sb, 1 * GIB, 4 * MIB, uuid_a,
					     ""));
	{
		char n[DFKV_OD_NAME_MAX + 1];

		memset(n, 'x', sizeof(n) - 1);
		n[sizeof(n) - 1] = 0;
		EXPECT_EQ(-EINVAL, dfkv_od_sb_format(&sb, 1 * GIB, 4 * MIB,
						     uuid_a, n));
		n[DFKV_OD_NAME_MAX - 1] = 0;	/* 63 bytes: the longest */
		ASSERT_EQ(0, dfkv_od_sb_format(&sb, 1 * GIB, 4 * MIB, uuid_a,
					       n));
		dfkv_od_sb_encode(&sb, sbbuf);
		ASSERT_EQ(DFKV_OD_SB_OK, dfkv_od_sb_decode(sbbuf, &out));
		EXPECT_STREQ(n, out.name);
	}
	EXPECT_EQ(-ENOSPC, dfkv_od_sb_format(&sb, 1 * MIB, 4 * MIB, uuid_a,
					     "x"));
}

TEST(superblock_every_bit_flip)
{
	struct dfkv_od_sb sb, out;

	ASSERT_EQ(0, dfkv_od_sb_format(&sb, 3 * GIB + 4096, 16 * MIB, uuid_a,
				       "disk-a"));
	sb.state = DFKV_OD_DIRTY;
	sb.epoch = 0x89abcdefULL;	/* records hold 32-bit epochs */
	sb.valid_from = 77;
	dfkv_od_sb_encode(&sb, sbbuf);
	ASSERT_EQ(DFKV_OD_SB_OK, dfkv_od_sb_decode(sbbuf, &out));
	for (int bit = 0; bit < DFKV_OD_SB_USED * 8; bit++) {
		enum dfkv_od_sb_reason why;

		sbbuf[bit / 8] ^= 1 << (bit % 8);
		why = dfkv_od_sb_decode(sbbuf, &out);
		sbbuf[bit / 8] ^= 1 << (bit % 8);
		ASSERT_NE(DFKV_OD_SB_OK, why) TH_LOG("bit %d", bit);
		ASSERT_EQ(bit < 64 ? DFKV_OD_SB_FOREIGN : DFKV_OD_SB_CRC, why)
			TH_LOG("bit %d", bit);
	}
	/* bytes 512.. carry nothing */
	sbbuf[DFKV_OD_SB_USED] = 0xff;
	EXPECT_EQ(DFKV_OD_SB_OK, dfkv_od_sb_decode(sbbuf, &out));
}

/* Re-encodes a crafted block with a valid CRC. */
static void sb_recrc(u8 *b)
{
	u32 crc = dfkv_od_crc(b, 0x1fc);

	for (int i = 0; i < 4; i++)
		b[0x1fc + i] = crc >> (8 * i);
}

static void put64(u8 *b, u64 v)
{
	for (int i = 0; i < 8; i++)
		b[i] = v >> (8 * i);
}

TEST(superblock_refusals)
{
	struct dfkv_od_sb sb, out;
	u8 copy[DFKV_OD_SB_BYTES];

	memset(sbbuf, 0, sizeof(sbbuf));
	EXPECT_EQ(DFKV_OD_SB_BLANK, dfkv_od_sb_decode(sbbuf, &out));
	/* an ext4 superblock sits at 1024, its magic 0xef53 at 1080 */
	sbbuf[1080] = 0x53;
	sbbuf[1081] = 0xef;
	EXPECT_EQ(DFKV_OD_SB_FOREIGN, dfkv_od_sb_decode(sbbuf, &out));

	ASSERT_EQ(0, dfkv_od_sb_format(&sb, 1 * GIB, 4 * MIB, uuid_a, "d"));
	dfkv_od_sb_encode(&sb, sbbuf);
	memcpy(copy, sbbuf, sizeof(copy));

	sbbuf[0x008] = 1;			/* format 1: no mark */
	sb_recrc(sbbuf);
	EXPECT_EQ(DFKV_OD_SB_FORMAT, dfkv_od_sb_decode(sbbuf, &out));
	memcpy(sbbuf, copy, sizeof(copy));
	sbbuf[0x00c] = DFKV_SLAB_LATTICE_VERSION + 1;
	sb_recrc(sbbuf);
	EXPECT_EQ(DFKV_OD_SB_LATTICE, dfkv_od_sb_decode(sbbuf, &out));

	/* fields breaking their rules, each with a valid CRC */
	{
		static const struct { int off; u64 v; int width; } f[] = {
			{ 0x010, 128, 4 },	/* record size */
			{ 0x014, 0, 4 },	/* state */
			{ 0x014, 3, 4 },
			{ 0x048, 0, 8 },	/* epoch */
			{ 0x048, UINT64_MAX, 8 },
			{ 0x048, DFKV_OD_EPOCH_MAX + 1, 8 },
			{ 0x050, 0, 8 },	/* valid_from */
			{ 0x050, 3, 8 },	/* > epoch + 1 */
			{ 0x068, 0, 1 },	/* empty name */
			{ 0x06a, 'z', 1 },	/* garbage after the NUL */
			{ 0x0a8, 1 * GIB / (4 * MIB), 8 },	/* mark > nr_extents */
			{ 0x0b0, 1, 1 },	/* reserved */
			{ 0x1fb, 1, 1 },
		};

		for (unsigned int i = 0; i < ARRAY_SIZE(f); i++) {
			memcpy(sbbuf, copy, sizeof(copy));
			for (int j = 0; j < f[i].width; j++)
				sbbuf[f[i].off + j] = f[i].v >> (8 * j);
			sb_recrc(sbbuf);
			EXPECT_EQ(DFKV_OD_SB_FIELDS,
				  dfkv_od_sb_decode(sbbuf, &out))
				TH_LOG("field %u", i);
		}
		/* a name filling all 64 bytes has no NUL */
		memcpy(sbbuf, copy, sizeof(copy));
		memset(sbbuf + 0x068, 'n', 64);
		sb_recrc(sbbuf);
		EXPECT_EQ(DFKV_OD_SB_FIELDS, dfkv_od_sb_decode(sbbuf, &out));
	}

	/* figures that disagree with the derivation */
	{
		static const struct { int off; u64 v; } f[] = {
			{ 0x020, 8 * MIB },		/* extent size */
			{ 0x020, 3 * MIB },
			{ 0x028, 1 },			/* nr_extents */
			{ 0x028, 1ULL << 40 },
			{ 0x030, 8192 },		/* records_off */
			{ 0x038, 4096 },		/* records_bytes */
			{ 0x040, 0 },			/* data_off */
			{ 0x018, 1 * MIB },		/* dev too small */
			{ 0x018, 2 * GIB },		/* other geometry */
		};

		for (unsigned int i = 0; i < ARRAY_SIZE(f); i++) {
			memcpy(sbbuf, copy, sizeof(copy));
			put64(sbbuf + f[i].off, f[i].v);
			sb_recrc(sbbuf);
			EXPECT_EQ(DFKV_OD_SB_GEOMETRY,
				  dfkv_od_sb_decode(sbbuf, &out))
				TH_LOG("figure %u", i);
		}
	}

	/* a good superblock on the wrong device, or of another extent */
	memcpy(sbbuf, copy, sizeof(copy));
	ASSERT_EQ(DFKV_OD_SB_OK, dfkv_od_sb_decode(sbbuf, &out));
	EXPECT_EQ(DFKV_OD_SB_DEVICE, dfkv_od_sb_match(&out, 1 * GIB - 4096, 0));
	EXPECT_EQ(DFKV_OD_SB_DEVICE, dfkv_od_sb_match(&out, 2 * GIB, 0));
	EXPECT_EQ(DFKV_OD_SB_EXTENT,
		  dfkv_od_sb_match(&out, 1 * GIB, 16 * MIB));
	/* decoding and matching never touch the block */
	EXPECT_EQ(0, memcmp(sbbuf, copy, sizeof(copy)));
	for (int i = 0; i < DFKV_OD_SB_NR_REASONS; i++)
		EXPECT_NE(NULL, dfkv_od_sb_reason_str(i));
	EXPECT_STREQ("?", dfkv_od_sb_reason_str(DFKV_OD_SB_NR_REASONS));
}

TEST(epoch_rules)
{
	struct dfkv_od_sb sb, next;
	u64 lo, hi;

	/* format: CLEAN, nothing valid yet */
	ASSERT_EQ(0, dfkv_od_sb_format(&sb, 1 * GIB, 4 * MIB, uuid_a, "d"));
	EXPECT_EQ(DFKV_OD_ATTACH_REBUILD,
		  dfkv_od_sb_attach(&sb, &next, &lo, &hi));
	EXPECT_GT(lo, hi);
	EXPECT_EQ(DFKV_OD_DIRTY, next.state);
	EXPECT_EQ(2, next.epoch);
	EXPECT_EQ(2, next.valid_from);

	/* graceful flush then attach: window is what was written */
	sb = next;
	dfkv_od_sb_clean(&sb);
	EXPECT_EQ(DFKV_OD_CLEAN, sb.state);
	EXPECT_EQ(2, sb.epoch);
	EXPECT_EQ(DFKV_OD_ATTACH_REBUILD,
		  dfkv_od_sb_attach(&sb, &next, &lo, &hi));
	EXPECT_EQ(2, lo);
	EXPECT_EQ(2, hi);
	EXPECT_EQ(3, next.epoch);
	EXPECT_EQ(2, next.valid_from);
	EXPECT_EQ(DFKV_OD_DIRTY, next.state);

	/* crash: DIRTY 3 on disk; cold reset */
	sb = next;
	EXPECT_EQ(DFKV_OD_ATTACH_COLD,
		  dfkv_od_sb_attach(&sb, &next, &lo, &hi));
	EXPECT_EQ(4, next.epoch);
	EXPECT_EQ(4, next.valid_from);
	EXPECT_EQ(DFKV_OD_DIRTY, next.state);
	EXPECT_GT(lo, hi);
	EXPECT_EQ(4, lo);
	EXPECT_EQ(3, hi);

	/* then a clean epoch 4: records of 4 only, below its mark */
	sb = next;
	sb.rec_hwm = 7;
	dfkv_od_sb_clean(&sb);
	EXPECT_EQ(DFKV_OD_ATTACH_REBUILD,
		  dfkv_od_sb_attach(&sb, &next, &lo, &hi));
	EXPECT_EQ(4, lo);
	EXPECT_EQ(4, hi);
	EXPECT_EQ(7, next.rec_hwm);
	/* the transitions encode into valid superblocks */
	dfkv_od_sb_encode(&next, sbbuf);
	EXPECT_EQ(DFKV_OD_SB_OK, dfkv_od_sb_decode(sbbuf, &sb));
	EXPECT_EQ(0, memcmp(&sb, &next, sizeof(sb)));

	/* the last epoch: one more attach is refused, and writes nothing */
	sb.epoch = DFKV_OD_EPOCH_MAX - 1;
	ASSERT_EQ(DFKV_OD_ATTACH_COLD,
		  dfkv_od_sb_attach(&sb, &next, &lo, &hi));
	dfkv_od_sb_clean(&next);
	dfkv_od_sb_encode(&next, sbbuf);
	ASSERT_EQ(DFKV_OD_SB_OK, dfkv_od_sb_decode(sbbuf, &sb));
	EXPECT_EQ(DFKV_OD_EPOCH_MAX, sb.epoch);
	EXPECT_EQ(-EOVERFLOW, dfkv_od_sb_attach(&sb, &next, &lo, &hi));
}

/* A cold reset or an empty window drops the mark: nothing below it counts. */
TEST(hwm_attach)
{
	struct dfkv_od_sb sb, next;
	u64 lo, hi;

	ASSERT_EQ(0, dfkv_od_sb_format(&sb, 1 * GIB, 4 * MIB, uuid_a, "d"));
	EXPECT_EQ(0, sb.rec_hwm);
	sb.state = DFKV_OD_DIRTY;
	sb.epoch = 5;
	sb.valid_from = 3;
	sb.rec_hwm = 40;
	EXPECT_EQ(DFKV_OD_ATTACH_COLD,
		  dfkv_od_sb_attach(&sb, &next, &lo, &hi));
	EXPECT_EQ(0, next.rec_hwm);
	/* CLEAN with an empty window (a clean close after a cold reset) */
	sb.state = DFKV_OD_CLEAN;
	sb.valid_from = 6;
	EXPECT_EQ(DFKV_OD_ATTACH_REBUILD,
		  dfkv_od_sb_attach(&sb, &next, &lo, &hi));
	EXPECT_GT(lo, hi);
	EXPECT_EQ(0, next.rec_hwm);
	/* the mark round-trips */
	sb.valid_from = 3;
	EXPECT_EQ(DFKV_OD_ATTACH_REBUILD,
		  dfkv_od_sb_attach(&sb, &next, &lo, &hi));
	dfkv_od_sb_encode(&next, sbbuf);
	ASSERT_EQ(DFKV_OD_SB_OK, dfkv_od_sb_decode(sbbuf, &sb));
	EXPECT_EQ(40, sb.rec_hwm);
}

/* The mark's steps: granules of 64 KiB of records, an eighth at least. */
TEST(hwm_cover)
{
	struct dfkv_od_geom g;
	u64 hwm, raises;

	/* 4 MiB extents: a granule is one extent (64 KiB of records) */
	ASSERT_EQ(0, dfkv_od_geometry(1 * GIB, 4 * MIB, &g));
	EXPECT_EQ(0, dfkv_od_hwm_cover(&g, 0, 0));
	EXPECT_EQ(1, dfkv_od_hwm_cover(&g, 0, 1));
	EXPECT_EQ(5, dfkv_od_hwm_cover(&g, 5, 3));	/* covered: unchanged */
	EXPECT_EQ(6, dfkv_od_hwm_cover(&g, 5, 6));
	EXPECT_EQ(90, dfkv_od_hwm_cover(&g, 80, 81));	/* + an eighth */
	EXPECT_EQ(g.nr_extents, dfkv_od_hwm_cover(&g, g.nr_extents - 1,
						  g.nr_extents));
	/* 64 KiB extents: 64 of them make a granule */
	ASSERT_EQ(0, dfkv_od_geometry(24 * GIB, 64 * KIB, &g));
	EXPECT_EQ(64, dfkv_od_hwm_cover(&g, 0, 1));
	EXPECT_EQ(128, dfkv_od_hwm_cover(&g, 64, 65));
	EXPECT_EQ(0, dfkv_od_hwm_cover(&g, 0, 200) % 64);
	/* filling the disk extent by extent raises it a few hundred times */
	for (hwm = 0, raises = 0; hwm < g.nr_extents; raises++) {
		u64 next = dfkv_od_hwm_cover(&g, hwm, hwm + 1);

		ASSERT_GT(next, hwm);
		ASSERT_LE(next - hwm, hwm / 8 + 64);
		hwm = next;
	}
	EXPECT_EQ(g.nr_extents, hwm);
	EXPECT_LT(raises, 200);
}

/* One disk's codec state for the record tests. */
struct disk {
	struct dfkv_od_sb sb;
	struct dfkv_slab slab;
	struct dfkv_od_scan sc;
};

static void disk_init(struct __test_metadata *_metadata, struct disk *d,
		      u64 dev, u64 ext, u64 lo, u64 hi)
{
	ASSERT_EQ(0, dfkv_od_sb_format(&d->sb, dev, ext, uuid_a, "d"));
	ASSERT_EQ(0, dfkv_slab_init(&d->slab, ext, d->sb.geom.nr_extents,
				    NULL, NULL));
	ASSERT_EQ(0, dfkv_od_scan_init(&d->sc, &d->sb, &d->slab, lo, hi));
}

static struct dfkv_od_rec mkrec(u64 tenant, u8 id0, u64 len, u64 gen,
				u32 ext, u32 slot, u32 part, u8 cls)
{
	struct dfkv_od_rec r;

	memset(&r, 0, sizeof(r));
	r.key.tenant = tenant;
	for (int i = 0; i < DFKV_OBJECT_ID_LEN; i++)
		r.key.id[i] = id0 + i;
	r.length = len;
	r.gen = gen;
	r.extent = ext;
	r.slot = slot;
	r.part = part;
	r.cls = cls;
	return r;
}

TEST(lattice_is_the_slabs)
{
	struct disk d;
	struct dfkv_slab other;

	disk_init(_metadata, &d, 64 * MIB, 4 * MIB, 1, 1);
	ASSERT_EQ(d.slab.nr_classes, d.sc.nr_classes);
	for (int i = 0; i < d.slab.nr_classes; i++) {
		EXPECT_EQ(dfkv_slab_class_size(&d.slab, i), d.sc.class_size[i]);
		EXPECT_EQ(dfkv_slab_slots_per_extent(&d.slab, i),
			  d.sc.class_slots[i]);
	}
	EXPECT_EQ(1024, d.sc.class_slots[0]);
	EXPECT_EQ(4 * MIB, d.sc.class_size[d.sc.nr_classes - 1]);
	ASSERT_EQ(0, dfkv_slab_init(&other, 8 * MIB, 1, NULL, NULL));
	EXPECT_EQ(-EINVAL, dfkv_od_scan_init(&d.sc, &d.sb, &other, 1, 1));
	dfkv_slab_destroy(&other);
	dfkv_slab_destroy(&d.slab);
}

TEST(record_round_trip_and_bit_flips)
{
	struct dfkv_od_rec r, out;
	u8 b[64];
	struct disk d;

	disk_init(_metadata, &d, 64 * MIB, 4 * MIB, 5, 9);
	r = mkrec(0x0123456789abcdefULL, 0x40, 12288, 7, 3, 17, 0, 2);
	r.payload_crc = 0xfedcba98;
	ASSERT_EQ(12288, d.sc.class_size[2]);
	dfkv_od_rec_encode(b, &r, uuid_a);
	EXPECT_EQ('D', b[0]);
	EXPECT_EQ('F', b[1]);
	EXPECT_EQ('K', b[2]);
	EXPECT_EQ('R', b[3]);
	/* generation: 32 bits at 0x28, then the payload CRC at 0x2c */
	EXPECT_EQ(7, b[0x28]);
	EXPECT_EQ(0, b[0x29] | b[0x2a] | b[0x2b]);
	EXPECT_EQ(0x98, b[0x2c]);
	EXPECT_EQ(0xfe, b[0x2f]);
	ASSERT_EQ(DFKV_OD_REC_OK, dfkv_od_rec_check(&d.sc, b, 3, 17, &out));
	EXPECT_EQ(0, memcmp(&r, &out, sizeof(r)));
	EXPECT_EQ(DFKV_OD_REC_OK, dfkv_od_rec_check(&d.sc, b, 3, 17, NULL));

	for (int bit = 0; bit < 64 * 8; bit++) {
		enum dfkv_od_rec_reason why;

		b[bit / 8] ^= 1 << (bit % 8);
		why = dfkv_od_rec_check(&d.sc, b, 3, 17, &out);
		b[bit / 8] ^= 1 << (bit % 8);
		ASSERT_EQ(bit < 32 ? DFKV_OD_REC_MAGIC : DFKV_OD_REC_CRC, why)
			TH_LOG("bit %d", bit);
	}
	/* another format's uuid salts another CRC */
	dfkv_od_rec_encode(b, &r, uuid_b);
	EXPECT_EQ(DFKV_OD_REC_CRC, dfkv_od_rec_check(&d.sc, b, 3, 17, &out));
	memset(b, 0, sizeof(b));
	EXPECT_EQ(DFKV_OD_REC_EMPTY, dfkv_od_rec_check(&d.sc, b, 3, 17, &out));
	dfkv_slab_destroy(&d.slab);
}

/* Encodes @r, then patches byte @off to @v with a fresh CRC. */
static void rec_patch(u8 *b, const struct dfkv_od_rec *r, int off, u8 v)
{
	u32 crc;

	dfkv_od_rec_encode(b, r, uuid_a);
	b[off] = v;
	crc = dfkv_od_rec_crc(b, uuid_a);
	for (int i = 0; i < 4; i++)
		b[60 + i] = crc >> (8 * i);
}

TEST(record_invariants)
{
	struct disk d;
	struct dfkv_od_rec r;
	u8 b[64];
	int last;
	u64 ext = 4 * MIB, cap;

	disk_init(_metadata, &d, 64 * MIB, ext, 5, 9);
	last = d.sc.nr_classes - 1;
	cap = (u64)d.sb.geom.nr_extents * ext;
	static const struct {
		u64 len, gen;
		u32 ext, slot, part;
		int cls;	/* -1: the last class */
		int at_ext, at_slot;
		enum dfkv_od_rec_reason why;
	} t[] = {
		{ 4096, 5, 0, 0, 0, 0, 0, 0, DFKV_OD_REC_OK },
		{ 4096, 9, 0, 1023, 0, 0, 0, 1023, DFKV_OD_REC_OK },
		{ 4096, 9, 0, 0, 0, 0, 0, 1, DFKV_OD_REC_POSITION },
		{ 4096, 9, 0, 0, 0, 0, 1, 0, DFKV_OD_REC_POSITION },
		{ 4096, 9, 1, 0, 0, 0, 0, 0, DFKV_OD_REC_POSITION },
		{ 4096, 9, 99, 0, 0, 0, 99, 0, DFKV_OD_REC_POSITION },
		{ 4096, 9, 0, 1024, 0, 0, 0, 1024, DFKV_OD_REC_POSITION },
		{ 4096, 4, 0, 0, 0, 0, 0, 0, DFKV_OD_REC_GENERATION },
		{ 4096, 10, 0, 0, 0, 0, 0, 0, DFKV_OD_REC_GENERATION },
		{ 4096, 0, 0, 0, 0, 0, 0, 0, DFKV_OD_REC_GENERATION },
		{ 4096, 5, 0, 0, 0, 63, 0, 0, DFKV_OD_REC_CLASS },
		{ 4096, 5, 0, 0, 0, 255, 0, 0, DFKV_OD_REC_CLASS },
		{ 8192, 5, 0, 512, 0, 1, 0, 512, DFKV_OD_REC_CLASS },
		{ 8192, 5, 0, 511, 0, 1, 0, 511, DFKV_OD_REC_OK },
		{ 4 * MIB, 5, 0, 1, 0, -1, 0, 1, DFKV_OD_REC_CLASS },
		{ 0, 5, 0, 0, 0, 0, 0, 0, DFKV_OD_REC_LENGTH },
		{ 4097, 5, 0, 0, 0, 0, 0, 0, DFKV_OD_REC_LENGTH },
		{ 4097, 5, 0, 0, 0, 1, 0, 0, DFKV_OD_REC_OK },
		/* a larger class than needed still holds the part */
		{ 100, 5, 0, 0, 0, 5, 0, 0, DFKV_OD_REC_OK },
		/* a whole-extent part needs the one-slot class */
		{ 9 * MIB, 5, 2, 0, 0, -1, 2, 0, DFKV_OD_REC_OK },
		{ 9 * MIB, 5, 2, 0, 1, -1, 2, 0, DFKV_OD_REC_OK },
		{ 9 * MIB, 5, 2, 0, 2, -1, 2, 0, DFKV_OD_REC_OK },
		{ 9 * MIB, 5, 2, 0, 2, 0, 2, 0, DFKV_OD_REC_LENGTH },
		{ 9 * MIB, 5, 2, 0, 0, 0, 2, 0, DFKV_OD_REC_LENGTH },
		{ 9 * MIB, 5, 2, 0, 3, -1, 2, 0, DFKV_OD_REC_LENGTH },
		{ UINT64_MAX, 5, 2, 0, 0, -1, 2, 0, DFKV_OD_REC_LENGTH },
	};

	for (unsigned int i = 0; i < ARRAY_SIZE(t); i++) {
		r = mkrec(1, 2, t[i].len, t[i].gen, t[i].ext, t[i].slot,
			  t[i].part, t[i].cls < 0 ? last : t[i].cls);
		dfkv_od_rec_encode(b, &r, uuid_a);
		EXPECT_EQ(t[i].why, dfkv_od_rec_check(&d.sc, b, t[i].at_ext,
						      t[i].at_slot, NULL))
			TH_LOG("case %u", i);
	}
	/* the length bound is the disk */
	r = mkrec(1, 2, cap, 5, 0, 0, (u32)(cap / ext - 1), last);
	dfkv_od_rec_encode(b, &r, uuid_a);
	EXPECT_EQ(DFKV_OD_REC_OK, dfkv_od_rec_check(&d.sc, b, 0, 0, NULL));
	r.length = cap + 1;
	dfkv_od_rec_encode(b, &r, uuid_a);
	EXPECT_EQ(DFKV_OD_REC_LENGTH, dfkv_od_rec_check(&d.sc, b, 0, 0, NULL));

	/* format and flags, with valid CRCs */
	r = mkrec(1, 2, 4096, 5, 0, 0, 0, 0);
	rec_patch(b, &r, 4, 1);	/* format 1 */
	EXPECT_EQ(DFKV_OD_REC_FORMAT, dfkv_od_rec_check(&d.sc, b, 0, 0, NULL));
	rec_patch(b, &r, 6, 1);
	EXPECT_EQ(DFKV_OD_REC_FLAGS, dfkv_od_rec_check(&d.sc, b, 0, 0, NULL));
	rec_patch(b, &r, 7, 0x80);
	EXPECT_EQ(DFKV_OD_REC_FLAGS, dfkv_od_rec_check(&d.sc, b, 0, 0, NULL));
	for (int i = 0; i < DFKV_OD_REC_NR_REASONS; i++)
		EXPECT_NE(NULL, dfkv_od_rec_reason_str(i));
	dfkv_slab_destroy(&d.slab);
}

/* What a scan reported. */
struct seen {
	int found, rejected;
	int why[DFKV_OD_REC_NR_REASONS];
	struct dfkv_od_rec recs[64];
	int refuse_id0;		/* refuse records whose id[0] is this */
	int fail_at;		/* return -EIO at this found call (1-based) */
	struct dfkv_slab *claim;	/* claim found slots in this slab */
	int claim_errors;
};

static int seen_found(void *ctx, const struct dfkv_od_rec *rec)
{
	struct seen *s = ctx;

	if (s->fail_at && s->found + 1 == s->fail_at)
		return -EIO;
	if (rec->key.id[0] == s->refuse_id0)
		return DFKV_OD_SCAN_REFUSE;
	if (s->claim) {
		struct dfkv_slot slot = { rec->extent, rec->slot };

		if (dfkv_slab_claim(s->claim, slot, rec->cls, s))
			s->claim_errors++;
	}
	if (s->found < 64)
		s->recs[s->found] = *rec;
	s->found++;
	return 0;
}

static void seen_reject(void *ctx, u32 extent, u32 slot,
			enum dfkv_od_rec_reason why)
{
	struct seen *s = ctx;

	s->rejected++;
	s->why[why]++;
}

/* Frees every claimed or allocated slot, so the slab can go quietly. */
static void slab_free_all(struct dfkv_slab *sl, u32 nr_extents)
{
	for (u32 x = 0; x < nr_extents; x++) {
		struct dfkv_slot s = { x, 0 };
		int cls = dfkv_slot_class(sl, s);

		if (cls < 0)
			continue;
		for (u32 i = 0; i < dfkv_slab_slots_per_extent(sl, cls); i++) {
			s.index = i;
			if (dfkv_slab_owner(sl, s))
				dfkv_slab_free(sl, s);
		}
	}
}

TEST(scan_buffer)
{
	struct disk d;
	struct seen s;
	struct dfkv_od_rec r;
	u64 ext = 64 * KIB;
	u32 m, n;
	u8 *buf, *rp;
	size_t len;
	long ret;

	/* 64 KiB extents: 16 records (1 KiB) per extent */
	disk_init(_metadata, &d, 4 * MIB, ext, 3, 3);
	m = d.sb.geom.max_slots;
	n = 8;
	ASSERT_EQ(16, m);
	len = (size_t)n * m * 64;
	buf = calloc(1, len);
	ASSERT_NE(NULL, buf);

#define AT(x, i)	(buf + ((size_t)(x) * m + (i)) * 64)
	/* extent 0: class 0, slots 0 and 5 valid, slot 7 torn */
	r = mkrec(9, 0x10, 4096, 3, 0, 0, 0, 0);
	dfkv_od_rec_encode(AT(0, 0), &r, uuid_a);
	r = mkrec(9, 0x11, 100, 3, 0, 5, 0, 0);
	dfkv_od_rec_encode(AT(0, 5), &r, uuid_a);
	r = mkrec(9, 0x12, 100, 3, 0, 7, 0, 0);
	dfkv_od_rec_encode(AT(0, 7), &r, uuid_a);
	AT(0, 7)[40] ^= 4;
	/* extent 1: class conflict (class 0 and class 1) */
	r = mkrec(9, 0x20, 4096, 3, 1, 0, 0, 0);
	dfkv_od_rec_encode(AT(1, 0), &r, uuid_a);
	r = mkrec(9, 0x21, 8192, 3, 1, 3, 0, 1);
	dfkv_od_rec_encode(AT(1, 3), &r, uuid_a);
	/* extent 2: a record of the old epoch (stale) and a moved one */
	r = mkrec(9, 0x30, 4096, 2, 2, 0, 0, 0);
	dfkv_od_rec_encode(AT(2, 0), &r, uuid_a);
	r = mkrec(9, 0x31, 4096, 3, 2, 1, 0, 0);
	dfkv_od_rec_encode(AT(2, 2), &r, uuid_a);
	/* extents 3..5: a 3-part value: two whole extents and a tail */
	for (u32 p = 0; p < 3; p++) {
		r = mkrec(9, 0x40, 2 * ext + 5000, 3, 3 + p, 0, p,
			  p < 2 ? d.sc.nr_classes - 1 : 1);
		dfkv_od_rec_encode(AT(3 + p, 0), &r, uuid_a);
	}
	/* extent 6: one to be refused by the caller; extent 7: junk */
	r = mkrec(9, 0x66, 4096, 3, 6, 1, 0, 0);
	dfkv_od_rec_encode(AT(6, 1), &r, uuid_a);
	memset(AT(7, 15), 0xa5, 64);
	rp = malloc(len);
	ASSERT_NE(NULL, rp);
	memcpy(rp, buf, len);

	memset(&s, 0, sizeof(s));
	s.refuse_id0 = 0x66;
	s.claim = &d.slab;
	ret = dfkv_od_scan(&d.sc, buf, 0, n, seen_found, seen_reject, &s);
	ASSERT_EQ(7, ret);
	EXPECT_EQ(7, s.rejected);
	EXPECT_EQ(1, s.why[DFKV_OD_REC_CRC]);
	EXPECT_EQ(2, s.why[DFKV_OD_REC_CONFLICT]);
	EXPECT_EQ(1, s.why[DFKV_OD_REC_GENERATION]);
	EXPECT_EQ(1, s.why[DFKV_OD_REC_POSITION]);
	EXPECT_EQ(1, s.why[DFKV_OD_REC_REFUSED]);
	EXPECT_EQ(1, s.why[DFKV_OD_REC_MAGIC]);
	ASSERT_EQ(5, s.found);
	EXPECT_EQ(0, s.claim_errors);
	EXPECT_EQ(0x10, s.recs[0].key.id[0]);
	EXPECT_EQ(0x11, s.recs[1].key.id[0]);
	EXPECT_EQ(5, s.recs[1].slot);
	for (int p = 0; p < 3; p++) {
		EXPECT_EQ(0x40, s.recs[2 + p].key.id[0]);
		EXPECT_EQ(p, s.recs[2 + p].part);
		EXPECT_EQ(3 + p, s.recs[2 + p].extent);
		EXPECT_EQ(2 * ext + 5000, s.recs[2 + p].length);
	}
	EXPECT_EQ(5, d.sc.count[DFKV_OD_REC_OK]);
	EXPECT_EQ(n * m - 5 - 7, d.sc.count[DFKV_OD_REC_EMPTY]);
	/* the rejected records are zero, the others untouched */
	for (u32 x = 0; x < n; x++)
		for (u32 i = 0; i < m; i++) {
			int zero = 1;

			for (int k = 0; k < 64; k++)
				zero &= !AT(x, i)[k];
			if (!zero)
				EXPECT_EQ(0, memcmp(AT(x, i),
						    rp + (AT(x, i) - buf), 64));
		}
	EXPECT_EQ(0, AT(0, 7)[0]);
	EXPECT_EQ(0, AT(1, 0)[0]);
	EXPECT_EQ(0, AT(1, 3)[0]);
	EXPECT_EQ(0, AT(7, 15)[0]);
	EXPECT_EQ(0, AT(6, 1)[0]);

	/* a second scan of the cleaned buffer finds the same, clears none */
	memset(&s, 0, sizeof(s));
	ret = dfkv_od_scan(&d.sc, buf, 0, n, seen_found, seen_reject, &s);
	EXPECT_EQ(0, ret);
	EXPECT_EQ(5, s.found);

	/* the caller's error stops the scan */
	memset(&s, 0, sizeof(s));
	s.fail_at = 2;
	EXPECT_EQ(-EIO, dfkv_od_scan(&d.sc, buf, 0, n, seen_found, NULL, &s));
	/* chunks: extents 3..5 alone, and ranges beyond the disk */
	memset(&s, 0, sizeof(s));
	EXPECT_EQ(0, dfkv_od_scan(&d.sc, AT(3, 0), 3, 3, seen_found, NULL,
				  &s));
	EXPECT_EQ(3, s.found);
	EXPECT_EQ(-EINVAL, dfkv_od_scan(&d.sc, buf, d.sb.geom.nr_extents, 1,
					NULL, NULL, NULL));
	EXPECT_EQ(-EINVAL, dfkv_od_scan(&d.sc, buf, 1, UINT32_MAX, NULL, NULL,
					NULL));
	EXPECT_EQ(0, dfkv_od_scan(&d.sc, buf, d.sb.geom.nr_extents, 0, NULL,
				  NULL, NULL));
#undef AT
	free(rp);
	free(buf);
	slab_free_all(&d.slab, d.sb.geom.nr_extents);
	dfkv_slab_destroy(&d.slab);
}

/*
 * An in-memory device driven through the write and attach rules: PUTs,
 * REMOVE, graceful restart, crash and cold reset, and a corrupted record.
 */
struct dev {
	u8 *mem;
	u64 size;
	struct dfkv_od_sb sb;		/* the running superblock */
	struct dfkv_slab slab;
	struct dfkv_od_scan sc;
};

struct put {
	u8 id0;
	u64 len;
	struct dfkv_slot slots[4];
	u32 nr;
};

static void dev_sb_write(struct dev *v)
{
	dfkv_od_sb_encode(&v->sb, v->mem);
}

static int dev_put(struct dev *v, struct put *p)
{
	u64 ext = v->sb.geom.extent_bytes;

	p->nr = dfkv_od_nr_parts(p->len, ext);
	for (u32 i = 0; i < p->nr; i++) {
		u64 plen = dfkv_od_part_len(p->len, i, ext);
		int cls;

		if (dfkv_slab_alloc(&v->slab, plen, p, &p->slots[i]))
			return -1;
		cls = dfkv_slot_class(&v->slab, p->slots[i]);
		memset(v->mem + dfkv_od_data_pos(&v->sb.geom,
						 p->slots[i].extent,
						 p->slots[i].index,
						 dfkv_slab_class_size(&v->slab,
								      cls)),
		       p->id0, plen);
	}
	/* payload durable: now the records */
	for (u32 i = 0; i < p->nr; i++) {
		struct dfkv_od_rec r = mkrec(7, p->id0, p->len, v->sb.epoch,
					     p->slots[i].extent,
					     p->slots[i].index, i,
					     dfkv_slot_class(&v->slab,
							     p->slots[i]));

		dfkv_od_rec_encode(v->mem + dfkv_od_rec_pos(&v->sb.geom,
							    r.extent, r.slot),
				   &r, v->sb.uuid);
	}
	return 0;
}

static void dev_remove(struct dev *v, struct put *p)
{
	for (u32 i = 0; i < p->nr; i++) {
		memset(v->mem + dfkv_od_rec_pos(&v->sb.geom,
						p->slots[i].extent,
						p->slots[i].index), 0, 64);
		dfkv_slab_free(&v->slab, p->slots[i]);
	}
	p->nr = 0;
}

static void dev_down(struct dev *v)
{
	slab_free_all(&v->slab, v->sb.geom.nr_extents);
	dfkv_slab_destroy(&v->slab);
}

/* Attach as bdev.c will: decode, match, attach, write DIRTY, scan. */
static int dev_attach(struct __test_metadata *_metadata, struct dev *v,
		      struct seen *s, bool *cold)
{
	struct dfkv_od_sb cur;
	enum dfkv_od_sb_reason why;
	u64 lo, hi;
	long ret;

	why = dfkv_od_sb_decode(v->mem, &cur);
	if (why)
		return -why;
	why = dfkv_od_sb_match(&cur, v->size, 0);
	if (why)
		return -why;
	*cold = dfkv_od_sb_attach(&cur, &v->sb, &lo, &hi) ==
		DFKV_OD_ATTACH_COLD;
	dev_sb_write(v);
	EXPECT_EQ(0, dfkv_slab_init(&v->slab, cur.geom.extent_bytes,
				    cur.geom.nr_extents, NULL, NULL));
	EXPECT_EQ(0, dfkv_od_scan_init(&v->sc, &cur, &v->slab, lo, hi));
	memset(s, 0, sizeof(*s));
	s->claim = &v->slab;
	if (lo > hi)
		return 0;	/* empty window: no scan */
	ret = dfkv_od_scan(&v->sc, v->mem + cur.geom.records_off, 0,
			   cur.geom.nr_extents, seen_found, seen_reject, s);
	EXPECT_GE(ret, 0);
	return 0;
}

static bool found_key(const struct seen *s, u8 id0, u32 part)
{
	for (int i = 0; i < s->found && i < 64; i++)
		if (s->recs[i].key.id[0] == id0 && s->recs[i].part == part)
			return true;
	return false;
}

TEST(lifecycle_restart_crash_corruption)
{
	struct dev v = { .size = 8 * MIB + 4096 + 7 };
	struct put p[4] = {
		{ .id0 = 0xa1, .len = 4096 },
		{ .id0 = 0xa2, .len = 30000 },
		{ .id0 = 0xa3, .len = 64 * KIB * 2 + 1 },	/* 3 parts */
		{ .id0 = 0xa4, .len = 5000 },
	};
	struct seen s;
	bool cold;

	v.mem = calloc(1, v.size);
	ASSERT_NE(NULL, v.mem);

	/* a blank device is refused without --format */
	EXPECT_EQ(-DFKV_OD_SB_BLANK, dev_attach(_metadata, &v, &s, &cold));
	ASSERT_EQ(0, dfkv_od_sb_format(&v.sb, v.size, 64 * KIB, uuid_a,
				       "loop0"));
	dev_sb_write(&v);
	ASSERT_EQ(0, dev_attach(_metadata, &v, &s, &cold));
	EXPECT_FALSE(cold);
	EXPECT_EQ(0, s.found);
	EXPECT_EQ(2, v.sb.epoch);
	for (int i = 0; i < 4; i++)
		ASSERT_EQ(0, dev_put(&v, &p[i]));
	dev_remove(&v, &p[3]);
	/* graceful: everything written, then CLEAN */
	dfkv_od_sb_clean(&v.sb);
	dev_sb_write(&v);
	dev_down(&v);

	/* restart: every surviving part is found, the removed one is not */
	ASSERT_EQ(0, dev_attach(_metadata, &v, &s, &cold));
	EXPECT_FALSE(cold);
	EXPECT_EQ(3, v.sb.epoch);
	EXPECT_EQ(5, s.found);
	EXPECT_EQ(0, s.rejected);
	EXPECT_EQ(0, s.claim_errors);
	EXPECT_TRUE(found_key(&s, 0xa1, 0));
	EXPECT_TRUE(found_key(&s, 0xa2, 0));
	EXPECT_TRUE(found_key(&s, 0xa3, 0));
	EXPECT_TRUE(found_key(&s, 0xa3, 1));
	EXPECT_TRUE(found_key(&s, 0xa3, 2));
	EXPECT_FALSE(found_key(&s, 0xa4, 0));
	for (int i = 0; i < s.found; i++) {
		const struct dfkv_od_rec *r = &s.recs[i];
		struct dfkv_slot sl = { r->extent, r->slot };
		u64 off = dfkv_od_data_pos(&v.sb.geom, r->extent, r->slot,
					   dfkv_slab_class_size(&v.slab,
								r->cls));
		u64 plen = dfkv_od_part_len(r->length, r->part, 64 * KIB);

		EXPECT_EQ(r->cls, dfkv_slot_class(&v.slab, sl));
		for (u64 k = 0; k < plen; k++)
			ASSERT_EQ(r->key.id[0], v.mem[off + k]);
	}

	/* flip a byte of one record between runs: rejected and cleared */
	{
		u64 pos = dfkv_od_rec_pos(&v.sb.geom, s.recs[0].extent,
					  s.recs[0].slot);

		dfkv_od_sb_clean(&v.sb);
		dev_sb_write(&v);
		dev_down(&v);
		v.mem[pos + 20] ^= 0x10;
		ASSERT_EQ(0, dev_attach(_metadata, &v, &s, &cold));
		EXPECT_EQ(4, s.found);
		EXPECT_EQ(1, s.why[DFKV_OD_REC_CRC]);
		for (int k = 0; k < 64; k++)
			ASSERT_EQ(0, v.mem[pos + k]);
	}

	/* more PUTs in epoch 4, then a crash (no CLEAN): cold reset */
	p[3].len = 4096;
	ASSERT_EQ(0, dev_put(&v, &p[3]));
	dev_down(&v);
	ASSERT_EQ(0, dev_attach(_metadata, &v, &s, &cold));
	EXPECT_TRUE(cold);
	EXPECT_EQ(5, v.sb.epoch);
	EXPECT_EQ(5, v.sb.valid_from);
	EXPECT_EQ(0, s.found);
	/* even a scan over the window finds nothing of before the crash */
	{
		struct dfkv_od_scan sc2;
		struct seen s2;

		memset(&s2, 0, sizeof(s2));
		ASSERT_EQ(0, dfkv_od_scan_init(&sc2, &v.sb, &v.slab,
					       v.sb.valid_from, v.sb.epoch));
		EXPECT_LT(0, dfkv_od_scan(&sc2, v.mem + v.sb.geom.records_off,
					  0, v.sb.geom.nr_extents, seen_found,
					  seen_reject, &s2));
		EXPECT_EQ(0, s2.found);
		EXPECT_EQ(s2.rejected, s2.why[DFKV_OD_REC_GENERATION]);
	}
	/* the crash-reset disk works on: a PUT, CLEAN, restart finds it */
	p[3].id0 = 0xb4;
	ASSERT_EQ(0, dev_put(&v, &p[3]));
	dfkv_od_sb_clean(&v.sb);
	dev_sb_write(&v);
	dev_down(&v);
	ASSERT_EQ(0, dev_attach(_metadata, &v, &s, &cold));
	EXPECT_FALSE(cold);
	EXPECT_EQ(1, s.found);
	EXPECT_TRUE(found_key(&s, 0xb4, 0));

	/* the same image on a device of another size is refused as is */
	dfkv_od_sb_clean(&v.sb);
	dev_sb_write(&v);
	dev_down(&v);
	{
		u8 *before = malloc(v.size);

		ASSERT_NE(NULL, before);
		memcpy(before, v.mem, v.size);
		v.size -= 4096;
		EXPECT_EQ(-DFKV_OD_SB_DEVICE,
			  dev_attach(_metadata, &v, &s, &cold));
		v.size += 4096;
		EXPECT_EQ(0, memcmp(before, v.mem, v.size));
		free(before);
	}
	free(v.mem);
}

TEST_HARNESS_MAIN
