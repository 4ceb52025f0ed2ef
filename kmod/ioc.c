// SPDX-License-Identifier: GPL-2.0
/*
 * /dev/dfkv argument rules (see ioc.h): what chardev.c accepts, in one
 * place the native fuzz target runs too.
 */
#include <linux/errno.h>
#include <linux/string.h>

#include "ioc.h"

int dfkv_ioc_size(u32 usize, size_t min, size_t max)
{
	if (usize < min)
		return -EINVAL;
	return usize > max ? -E2BIG : 0;
}

int dfkv_ioc_bind_check(const struct dfkv_ioc_bind *b)
{
	if (b->flags || !memchr(b->node, '\0', sizeof(b->node)) || !b->node[0])
		return -EINVAL;
	return 0;
}

int dfkv_ioc_op_check(const struct dfkv_ioc_op *o, u32 op)
{
	u32 kind = op ? op : o->op;

	if (o->flags & ~__DFKV_OP_F_ALL || o->__reserved)
		return -EINVAL;
	if (op && o->op && o->op != op)
		return -EINVAL;
	if (kind != DFKV_OP_PUT && kind != DFKV_OP_GET &&
	    kind != DFKV_OP_EXIST && kind != DFKV_OP_REMOVE)
		return -EINVAL;
	/* scatter-gather moves data: PUT and GET only, no separate cap */
	if ((o->flags & DFKV_OP_F_IOV) &&
	    ((kind != DFKV_OP_PUT && kind != DFKV_OP_GET) || o->cap))
		return -EINVAL;
	return 0;
}

int dfkv_ioc_keys_check(const struct dfkv_ioc_keys *k, u32 op)
{
	u32 flags = op == DFKV_OP_TOUCH ? __DFKV_KEYS_F_ALL : 0;

	if (k->flags & ~flags || k->__reserved)
		return -EINVAL;
	if (op == DFKV_OP_RELEASE)
		return k->count ? -EINVAL : 0;
	return !k->count || k->count > DFKV_KEYS_MAX ? -EINVAL : 0;
}

int dfkv_ioc_batch_check(const struct dfkv_ioc_batch *b, size_t max_op_size)
{
	if (b->flags || b->__reserved || !b->count ||
	    b->count > DFKV_BATCH_MAX || b->op_size < DFKV_IOC_OP_SIZE_VER0 ||
	    b->op_size > max_op_size)
		return -EINVAL;
	return 0;
}

int dfkv_ioc_auth_check(const struct dfkv_ioc_auth *a)
{
	return a->flags ? -EINVAL : 0;
}
