/* SPDX-License-Identifier: GPL-2.0 */
#ifndef _KSHIM_LINUX_LOG2_H
#define _KSHIM_LINUX_LOG2_H

#include <linux/types.h>

static inline bool is_power_of_2(unsigned long n)
{
	return n && !(n & (n - 1));
}

#define ilog2(n)	(63 - __builtin_clzll((unsigned long long)(n)))

#endif
