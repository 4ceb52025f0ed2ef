/* SPDX-License-Identifier: GPL-2.0 */
#ifndef _KSHIM_LINUX_JIFFIES_H
#define _KSHIM_LINUX_JIFFIES_H

#include <linux/types.h>

/* The clock does not tick by itself: tests set it. */
__weak volatile unsigned long jiffies;

#define time_after(a, b)	((long)((b) - (a)) < 0)
#define time_before(a, b)	time_after(b, a)

#endif
