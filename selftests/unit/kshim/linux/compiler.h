/* SPDX-License-Identifier: GPL-2.0 */
#ifndef _KSHIM_LINUX_COMPILER_H
#define _KSHIM_LINUX_COMPILER_H

#include <linux/types.h>

#define READ_ONCE(x)		__atomic_load_n(&(x), __ATOMIC_RELAXED)
#define WRITE_ONCE(x, v)	__atomic_store_n(&(x), (v), __ATOMIC_RELAXED)
#define smp_mb()		__atomic_thread_fence(__ATOMIC_SEQ_CST)
#define likely(x)		__builtin_expect(!!(x), 1)
#define unlikely(x)		__builtin_expect(!!(x), 0)
#define ____cacheline_aligned_in_smp	__attribute__((aligned(64)))

#endif
