/* SPDX-License-Identifier: GPL-2.0 */
/*
 * kshim: little-endian unaligned accessors of <asm/unaligned.h>, for the
 * natively built wire codec (kmod/wire.c).
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

#endif
