/* SPDX-License-Identifier: GPL-2.0 */
/*
 * dfkv on-disk format, version 2 (Documentation/ondisk.md): the superblock
 * and slot-record codecs, the device geometry, the validation of both with
 * a reason code, the epoch rules of attach, and the rebuild scan of a
 * buffer of records.  Pure code without I/O, shared by the disk tier
 * (disk.c) and built natively for unit tests and fuzzing.
 */
#ifndef _DFKV_ONDISK_H
#define _DFKV_ONDISK_H

#include <linux/types.h>
#include <linux/dfkv.h>

#include "slab.h"

#define DFKV_OD_FORMAT_VERSION	2
#define DFKV_OD_BLOCK		4096ULL	/* slot granule, sb block */
#define DFKV_OD_SB_BYTES	4096	/* the superblock block */
#define DFKV_OD_SB_USED		512	/* bytes of it that carry data */
#define DFKV_OD_REC_BYTES	64
#define DFKV_OD_RECORDS_OFF	4096ULL
#define DFKV_OD_DATA_ALIGN_MAX	0x100000ULL	/* 1 MiB */
#define DFKV_OD_UUID_LEN	16
#define DFKV_OD_NAME_MAX	64	/* including the terminating NUL */
#define DFKV_OD_SB_MAGIC	"DFKVDISK"	/* 8 bytes, no NUL on disk */
#define DFKV_OD_RECORD_MAGIC	0x524b4644U	/* "DFKR" */
#define DFKV_OD_EPOCH_MAX	0xffffffffULL	/* records hold 32 bits */
#define DFKV_OD_HWM_GRANULE	0x10000ULL	/* record-area bytes a mark step rounds to */

enum dfkv_od_state {
	DFKV_OD_CLEAN = 1,
	DFKV_OD_DIRTY = 2,
};

/* Where everything is; a pure function of (dev_bytes, extent_bytes). */
struct dfkv_od_geom {
	u64 dev_bytes;		/* device size the format is for */
	u64 extent_bytes;
	u64 records_off;
	u64 records_bytes;	/* padded to 4 KiB */
	u64 data_off;
	u32 nr_extents;
	u32 max_slots;		/* records per extent: extent_bytes / 4096 */
};

/* A decoded superblock. */
struct dfkv_od_sb {
	struct dfkv_od_geom geom;
	u32 format;
	u32 lattice;
	u32 state;		/* enum dfkv_od_state */
	u64 epoch;
	u64 valid_from;
	u64 rec_hwm;		/* extents below it may hold valid records */
	u8 uuid[DFKV_OD_UUID_LEN];
	char name[DFKV_OD_NAME_MAX];	/* NUL-terminated */
};

/* Why a superblock block is not usable (0: it is). */
enum dfkv_od_sb_reason {
	DFKV_OD_SB_OK = 0,
	DFKV_OD_SB_BLANK,	/* the whole 4 KiB block is zero */
	DFKV_OD_SB_FOREIGN,	/* not a dfkv magic */
	DFKV_OD_SB_CRC,
	DFKV_OD_SB_FORMAT,	/* another format version */
	DFKV_OD_SB_LATTICE,	/* another size-class lattice */
	DFKV_OD_SB_FIELDS,	/* a field breaks its rule */
	DFKV_OD_SB_GEOMETRY,	/* figures disagree with the derivation */
	DFKV_OD_SB_DEVICE,	/* formatted for another device size */
	DFKV_OD_SB_EXTENT,	/* not the extent size asked for */
	DFKV_OD_SB_NR_REASONS
};

/* A slot record, decoded. */
struct dfkv_od_rec {
	struct dfkv_key key;
	u64 length;		/* total value length */
	u64 gen;		/* epoch written in, <= DFKV_OD_EPOCH_MAX */
	u32 payload_crc;	/* dfkv_od_crc() of this part's bytes */
	u32 extent;
	u32 slot;
	u32 part;
	u16 flags;
	u8 cls;
};

/* Why a record is not valid (0: it is).  Everything but EMPTY is cleared. */
enum dfkv_od_rec_reason {
	DFKV_OD_REC_OK = 0,
	DFKV_OD_REC_EMPTY,	/* all zero: a free slot, nothing to clear */
	DFKV_OD_REC_MAGIC,
	DFKV_OD_REC_CRC,
	DFKV_OD_REC_FORMAT,
	DFKV_OD_REC_FLAGS,
	DFKV_OD_REC_POSITION,	/* extent/slot fields are not where it sits */
	DFKV_OD_REC_GENERATION,	/* outside the rebuild window */
	DFKV_OD_REC_CLASS,	/* no such class, or slot beyond its range */
	DFKV_OD_REC_LENGTH,	/* length/part do not fit the parts */
	DFKV_OD_REC_CONFLICT,	/* the extent's records disagree on class */
	DFKV_OD_REC_REFUSED,	/* the scan's caller refused it */
	DFKV_OD_REC_NR_REASONS
};

/*
 * What record validation needs: the geometry, this disk's uuid, the
 * size-class lattice and the generation window.  About 1 KiB: allocate it.
 */
struct dfkv_od_scan {
	struct dfkv_od_geom geom;
	u8 uuid[DFKV_OD_UUID_LEN];
	u64 gen_min, gen_max;	/* window; empty when gen_min > gen_max */
	u32 nr_classes;
	u32 class_slots[DFKV_SLAB_MAX_CLASSES];
	u64 class_size[DFKV_SLAB_MAX_CLASSES];
	/* dfkv_od_scan() counts each record it saw by reason */
	u64 count[DFKV_OD_REC_NR_REASONS];
};

/*
 * Rebuild callbacks.  @found gets every valid record; it returns 0 to keep
 * it, DFKV_OD_SCAN_REFUSE to have it cleared (reason REFUSED), or a
 * negative errno that stops the scan.  @reject (may be NULL) is told of
 * every record the scan zeroed in the buffer.
 */
#define DFKV_OD_SCAN_REFUSE	1
typedef int (*dfkv_od_found_fn)(void *ctx, const struct dfkv_od_rec *rec);
typedef void (*dfkv_od_reject_fn)(void *ctx, u32 extent, u32 slot,
				  enum dfkv_od_rec_reason why);

/* CRC32C as the format uses it: init ~0, final xor ~0. */
u32 dfkv_od_crc(const void *p, size_t len);

/* Geometry */
int dfkv_od_geometry(u64 dev_bytes, u64 extent_bytes,
		     struct dfkv_od_geom *g);
u64 dfkv_od_rec_pos(const struct dfkv_od_geom *g, u32 extent, u32 slot);
u64 dfkv_od_data_pos(const struct dfkv_od_geom *g, u32 extent, u32 slot,
		     u64 class_size);
u64 dfkv_od_nr_parts(u64 length, u64 extent_bytes);
u64 dfkv_od_part_len(u64 length, u32 part, u64 extent_bytes);

/* Superblock */
int dfkv_od_sb_format(struct dfkv_od_sb *sb, u64 dev_bytes,
		      u64 extent_bytes, const u8 *uuid, const char *name);
void dfkv_od_sb_encode(const struct dfkv_od_sb *sb, void *buf);
enum dfkv_od_sb_reason dfkv_od_sb_decode(const void *buf,
					 struct dfkv_od_sb *sb);
enum dfkv_od_sb_reason dfkv_od_sb_match(const struct dfkv_od_sb *sb,
					u64 dev_bytes, u64 extent_bytes);
/* dfkv_od_sb_attach(): what the attach is */
enum {
	DFKV_OD_ATTACH_REBUILD = 0,	/* CLEAN: scan the window */
	DFKV_OD_ATTACH_COLD = 1,	/* DIRTY: cold reset, no scan */
};

int dfkv_od_sb_attach(const struct dfkv_od_sb *cur, struct dfkv_od_sb *next,
		      u64 *gen_min, u64 *gen_max);
void dfkv_od_sb_clean(struct dfkv_od_sb *sb);
u64 dfkv_od_hwm_cover(const struct dfkv_od_geom *g, u64 hwm, u64 need);
const char *dfkv_od_sb_reason_str(enum dfkv_od_sb_reason why);

/* Records */
u32 dfkv_od_rec_crc(const void *buf, const u8 *uuid);
void dfkv_od_rec_encode(void *buf, const struct dfkv_od_rec *rec,
			const u8 *uuid);
int dfkv_od_scan_init(struct dfkv_od_scan *sc, const struct dfkv_od_sb *sb,
		      const struct dfkv_slab *lattice, u64 gen_min,
		      u64 gen_max);
enum dfkv_od_rec_reason dfkv_od_rec_check(const struct dfkv_od_scan *sc,
					  const void *buf, u32 extent,
					  u32 slot, struct dfkv_od_rec *rec);
long dfkv_od_scan(struct dfkv_od_scan *sc, void *buf, u32 first, u32 n,
		  dfkv_od_found_fn found, dfkv_od_reject_fn reject, void *ctx);
const char *dfkv_od_rec_reason_str(enum dfkv_od_rec_reason why);

#endif /* _DFKV_ONDISK_H */
