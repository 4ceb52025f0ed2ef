/* SPDX-License-Identifier: GPL-2.0 */
#ifndef _KSHIM_LINUX_BITMAP_H
#define _KSHIM_LINUX_BITMAP_H

#include <string.h>
#include <linux/kernel.h>

#define BITS_PER_LONG		(8 * sizeof(long))
#define BITS_TO_LONGS(n)	DIV_ROUND_UP(n, BITS_PER_LONG)
#define DECLARE_BITMAP(name, bits)	unsigned long name[BITS_TO_LONGS(bits)]

static inline void __set_bit(unsigned long nr, unsigned long *map)
{
	map[nr / BITS_PER_LONG] |= 1UL << (nr % BITS_PER_LONG);
}

static inline void __clear_bit(unsigned long nr, unsigned long *map)
{
	map[nr / BITS_PER_LONG] &= ~(1UL << (nr % BITS_PER_LONG));
}

static inline bool test_bit(unsigned long nr, const unsigned long *map)
{
	return map[nr / BITS_PER_LONG] >> (nr % BITS_PER_LONG) & 1;
}

static inline unsigned long find_next_bit(const unsigned long *map,
					  unsigned long size,
					  unsigned long off)
{
	for (; off < size; off++)
		if (test_bit(off, map))
			return off;
	return size;
}

static inline unsigned long find_next_zero_bit(const unsigned long *map,
					       unsigned long size,
					       unsigned long off)
{
	for (; off < size; off++)
		if (!test_bit(off, map))
			return off;
	return size;
}

#define find_first_bit(map, size)	find_next_bit(map, size, 0)
#define find_first_zero_bit(map, size)	find_next_zero_bit(map, size, 0)

static inline void bitmap_zero(unsigned long *map, unsigned long bits)
{
	memset(map, 0, BITS_TO_LONGS(bits) * sizeof(long));
}

#endif
