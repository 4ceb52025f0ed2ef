/* SPDX-License-Identifier: GPL-2.0 */
/*
 * kshim: the kernel's U32_MAX and friends on top of the uapi
 * <linux/limits.h> (which glibc's <limits.h> includes).
 */
#ifndef _KSHIM_LINUX_LIMITS_H
#define _KSHIM_LINUX_LIMITS_H

#include_next <linux/limits.h>
#include <stdint.h>

#define U8_MAX		((uint8_t)~0U)
#define U16_MAX		((uint16_t)~0U)
#define U32_MAX		((uint32_t)~0U)
#define U64_MAX		((uint64_t)~0ULL)

#endif
