/* SPDX-License-Identifier: GPL-2.0 */
#ifndef _KSHIM_LINUX_KERNEL_H
#define _KSHIM_LINUX_KERNEL_H

#include <sched.h>
#include <linux/bug.h>
#include <linux/compiler.h>
#include <linux/types.h>

#define BIT_ULL(n)		(1ULL << (n))
#define DIV_ROUND_UP(n, d)	(((n) + (d) - 1) / (d))
#define round_up(x, y)		((((x) - 1) | ((__typeof__(x))((y) - 1))) + 1)
#define round_down(x, y)	((x) & ~((__typeof__(x))((y) - 1)))
#define min(a, b)		({ __typeof__(a) _a = (a); __typeof__(b) _b = (b); _a < _b ? _a : _b; })
#define max(a, b)		({ __typeof__(a) _a = (a); __typeof__(b) _b = (b); _a > _b ? _a : _b; })
#define min_t(t, a, b)		min((t)(a), (t)(b))
#define max_t(t, a, b)		max((t)(a), (t)(b))
#ifndef ARRAY_SIZE
#define ARRAY_SIZE(a)		(sizeof(a) / sizeof((a)[0]))
#endif
#define container_of(ptr, type, member) \
	((type *)((char *)(ptr) - offsetof(type, member)))

/* Spinlocks held by this thread (linux/spinlock.h keeps it). */
__weak __thread int kshim_locks_held;

/* Sleeping with a spinlock held is a bug: abort like lockdep would. */
#define might_sleep() do {						\
	if (kshim_locks_held) {						\
		fprintf(stderr, "# BUG %s:%d: might_sleep() with %d spinlock(s) held\n", \
			__FILE__, __LINE__, kshim_locks_held);		\
		__builtin_trap();					\
	}								\
} while (0)
#define cond_resched()		sched_yield()

#endif
