/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A dfkv disk image written natively (mkimage.c): a sparse file in
 * on-disk format 2 holding N values exactly as dfkv.ko leaves them after
 * a clean close, made with the module's own codec (kmod/ondisk.c) and
 * allocator (kmod/slab.c).  Used by dfkv-mkimage and its unit test.
 */
#ifndef DFKV_BENCH_MKIMAGE_H
#define DFKV_BENCH_MKIMAGE_H

#include <stdint.h>
#include <linux/dfkv.h>

struct mkimage {
	uint64_t records;	/* values to store */
	uint64_t value_bytes;	/* each value's length, >= 1 */
	uint64_t dev_bytes;	/* image size, 0: just large enough */
	uint64_t extent_bytes;	/* 0: the module's default (4 MiB) */
	const char *name;	/* disk name in the superblock */
	const char *ns;		/* namespace of the keys */
};

/* What was written. */
struct mkimage_out {
	uint64_t dev_bytes;
	uint64_t extent_bytes;
	uint64_t nr_extents;
	uint64_t extents_used;
	uint64_t rec_hwm;
	uint64_t epoch;
	uint64_t record_bytes;	/* record-area bytes written */
};

/*
 * The key of value @idx: namespace @ns and the decimal digits of @idx as
 * key bytes, hashed as libdfkv does (SPEC 1.3).  0 or -EINVAL.
 */
int mkimage_key(const char *ns, uint64_t idx, struct dfkv_key *k);

/*
 * Write the image to @fd (truncated first, so every byte not written is a
 * hole reading as zero): a CLEAN superblock at epoch 2 and one record per
 * part of each value, every value all zero bytes.  0 or -errno.
 */
int mkimage_write(int fd, const struct mkimage *m, struct mkimage_out *out);

#endif /* DFKV_BENCH_MKIMAGE_H */
