/* SPDX-License-Identifier: GPL-2.0 */
/*
 * kshim: little-endian unaligned accessors of <asm/unaligned.h>, for the
 * natively built wire and on-disk codecs (kmod/wire.c, kmod/ondisk.c).
 */
#ifndef _KSHIM_ASM_UNALIGNED_H
#define _KSHIM_ASM_UNALIGNED_H

#include <linux/types.h>

static inline u64 get_unaligned_le64(const void *p)
{
	const u8 *b = p;
	u64 v = 0;
	int i;

	for (i = 7; i >= 0; i--)
		v = v << 8 | b[i];
	return v;
}

static inline void put_unaligned_le64(u64 v, void *p)
{
	u8 *b = p;
	int i;

	for (i = 0; i < 8; i++)
		b[i] = v >> (8 * i);
}

static inline u16 get_unaligned_le16(const void *p)
{
	const u8 *b = p;

	return (u16)(b[0] | b[1] << 8);
}

static inline u32 get_unaligned_le32(const void *p)
{
	const u8 *b = p;

	return (u32)b[0] | (u32)b[1] << 8 | (u32)b[2] << 16 |
	       (u32)b[3] << 24;
}

static inline void put_unaligned_le16(u16 v, void *p)
{
	u8 *b = p;

	b[0] = v;
	b[1] = v >> 8;
}

static inline void put_unaligned_le32(u32 v, void *p)
{
	u8 *b = p;
	int i;

	for (i = 0; i < 4; i++)
		b[i] = v >> (8 * i);
}

#endif
