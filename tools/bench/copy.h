/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The copy the kernel's user copies run, in userspace, as a reference for
 * dfkv-bench: x86-64's copy_to_user/copy_from_user (6.1,
 * copy_user_generic) use "rep movsb" when the CPU has ERMS, and under
 * QEMU's software emulation that instruction runs many times slower than
 * glibc's vector memcpy.  copy.c measures it in the same process as the
 * ioctls so the bench can compare dfkv with the copy it can reach.
 */
#ifndef DFKV_BENCH_COPY_H
#define DFKV_BENCH_COPY_H

#include <stdbool.h>
#include <stddef.h>

/* Copy n bytes with one "rep movsb" (x86 only; see copy_movsb_ok()). */
void copy_movsb(void *dst, const void *src, size_t n);

/* This build can run copy_movsb() (an x86 target). */
bool copy_movsb_ok(void);

/*
 * The kernel copies user memory with "rep movsb": /proc/cpuinfo lists
 * "erms" (the flag the kernel patches its copy routine by).  false when
 * it does not, or on another architecture.
 */
bool copy_kernel_uses_movsb(void);

#endif /* DFKV_BENCH_COPY_H */
