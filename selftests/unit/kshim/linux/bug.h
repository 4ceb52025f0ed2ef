/* SPDX-License-Identifier: GPL-2.0 */
#ifndef _KSHIM_LINUX_BUG_H
#define _KSHIM_LINUX_BUG_H

#include <stdio.h>
#include <linux/compiler.h>

/* Every WARN counts here; tests assert on it. */
__weak unsigned long kshim_warnings;

#define WARN(cond, fmt...) ({						\
	bool __w = !!(cond);						\
	if (__w) {							\
		__atomic_add_fetch(&kshim_warnings, 1, __ATOMIC_RELAXED); \
		fprintf(stderr, "# WARNING %s:%d: ", __FILE__, __LINE__); \
		fprintf(stderr, fmt);					\
	}								\
	__w;								\
})
#define WARN_ON(cond)		WARN(cond, "%s\n", #cond)
#define WARN_ON_ONCE(cond)	WARN_ON(cond)
#define BUG_ON(cond)		do { if (cond) __builtin_trap(); } while (0)

#endif
