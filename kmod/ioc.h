/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The rules of /dev/dfkv's argument structs (SPEC.md section 4), checked
 * before anything is acted on: a user's struct size against the first
 * version's and a page, then each struct's flags, reserved fields, counts
 * and op.  Pure (no user memory: chardev.c copies the structs in first),
 * so they are fuzzed natively.  Each returns 0 or a negative errno.
 */
#ifndef _DFKV_IOC_H
#define _DFKV_IOC_H

#include <linux/types.h>
#include <linux/dfkv.h>

/* A struct's size as the user gave it: at least min, at most max. */
int dfkv_ioc_size(u32 usize, size_t min, size_t max);
int dfkv_ioc_bind_check(const struct dfkv_ioc_bind *b);
/* PUT, GET, EXIST or REMOVE, alone (op: the ioctl's) or in a batch (0). */
int dfkv_ioc_op_check(const struct dfkv_ioc_op *o, u32 op);
int dfkv_ioc_keys_check(const struct dfkv_ioc_keys *k, u32 op);
int dfkv_ioc_batch_check(const struct dfkv_ioc_batch *b, size_t max_op_size);
int dfkv_ioc_auth_check(const struct dfkv_ioc_auth *a);

#endif /* _DFKV_IOC_H */
