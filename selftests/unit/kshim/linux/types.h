/* SPDX-License-Identifier: GPL-2.0 */
/*
 * kshim: minimal userspace stand-ins for the kernel headers that dfkv's
 * pure kernel code (kmod/slab.c) includes, so that it builds and runs
 * natively, unchanged, under ASan and UBSan.  Only what that code uses.
 * Shared state (jiffies, warning and held-lock counters) is defined weak
 * here so that every translation unit of a test sees one copy.
 */
#ifndef _KSHIM_LINUX_TYPES_H
#define _KSHIM_LINUX_TYPES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include_next <linux/types.h>	/* the uapi __u32 etc. */

typedef uint8_t u8;
typedef uint16_t u16;
typedef uint32_t u32;
typedef uint64_t u64;
typedef int8_t s8;
typedef int16_t s16;
typedef int32_t s32;
typedef int64_t s64;
typedef unsigned int gfp_t;

#define __weak __attribute__((weak))

#endif
