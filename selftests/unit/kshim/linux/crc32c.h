/* SPDX-License-Identifier: GPL-2.0 */
/*
 * kshim: the kernel's crc32c() (lib/libcrc32c.c) for natively built pure
 * code (kmod/ondisk.c): CRC-32C, reflected polynomial 0x82F63B78, no pre-
 * or post-inversion (the caller passes ~0 and inverts, as in the kernel).
 * Table-driven, the table built on first use.
 */
#ifndef _KSHIM_LINUX_CRC32C_H
#define _KSHIM_LINUX_CRC32C_H

#include <linux/types.h>

static inline const u32 *kshim_crc32c_table(void)
{
	static u32 table[256];
	static int ready;
	u32 i, j, c;

	if (__atomic_load_n(&ready, __ATOMIC_ACQUIRE))
		return table;
	for (i = 0; i < 256; i++) {
		c = i;
		for (j = 0; j < 8; j++)
			c = (c >> 1) ^ (c & 1 ? 0x82f63b78U : 0);
		table[i] = c;	/* identical values if two threads race */
	}
	__atomic_store_n(&ready, 1, __ATOMIC_RELEASE);
	return table;
}

static inline u32 crc32c(u32 crc, const void *address, unsigned int length)
{
	const u32 *t = kshim_crc32c_table();
	const u8 *p = address;

	while (length--)
		crc = (crc >> 8) ^ t[(crc ^ *p++) & 0xff];
	return crc;
}

#endif
