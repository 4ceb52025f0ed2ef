// SPDX-License-Identifier: GPL-2.0
/*
 * libFuzzer target for /dev/dfkv's argument rules (kmod/ioc.c, the code
 * dfkv.ko runs): an input names a struct (bind, op, keys, batch) and an
 * ioctl, then gives the user's bytes.  They are read the way the module
 * reads them (copy_struct_from_user: a shorter struct is zero-extended, a
 * longer one must end in zeros), and every struct the rules accept must
 * hold what the module relies on afterwards: bounded counts and sizes, a
 * terminated node name, known flags, an op that matches its ioctl.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../../../kmod/ioc.h"

#define MAX_SIZE	4096	/* PAGE_SIZE, as chardev.c passes it */

/* copy_struct_from_user() over the input: 0, -EINVAL or -E2BIG. */
static int read_struct(void *dst, size_t ksize, size_t min,
		       const uint8_t *src, size_t avail)
{
	uint8_t user[MAX_SIZE] = { 0 };
	uint32_t usize;
	int err;

	if (avail < 4)
		return -EFAULT;
	memcpy(&usize, src, 4);
	err = dfkv_ioc_size(usize, min, MAX_SIZE);
	if (err)
		return err;
	if (usize > MAX_SIZE || usize < 4)
		abort();		/* the size rule let it through */
	memcpy(user, src, avail < usize ? avail : usize);
	memset(dst, 0, ksize);
	memcpy(dst, user, usize < ksize ? usize : ksize);
	for (size_t i = ksize; i < usize; i++)
		if (user[i])
			return -E2BIG;
	return 0;
}

static void check_op(const uint8_t *d, size_t n, uint32_t op)
{
	struct dfkv_ioc_op o;
	uint32_t kind;

	if (read_struct(&o, sizeof(o), DFKV_IOC_OP_SIZE_VER0, d, n) ||
	    dfkv_ioc_op_check(&o, op))
		return;
	kind = op ? op : o.op;
	if (o.flags & ~__DFKV_OP_F_ALL || o.__reserved ||
	    (op && o.op && o.op != op) ||
	    (kind != DFKV_OP_PUT && kind != DFKV_OP_GET &&
	     kind != DFKV_OP_EXIST && kind != DFKV_OP_REMOVE) ||
	    ((o.flags & DFKV_OP_F_IOV) &&
	     ((kind != DFKV_OP_PUT && kind != DFKV_OP_GET) || o.cap)))
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const uint32_t ops[] = {
		0, DFKV_OP_PUT, DFKV_OP_GET, DFKV_OP_EXIST, DFKV_OP_REMOVE,
	};
	static const uint32_t key_ops[] = {
		DFKV_OP_TOUCH, DFKV_OP_PROBE, DFKV_OP_LEASE, DFKV_OP_RELEASE,
	};

	if (size < 2)
		return 0;
	switch (data[0] % 4) {
	case 0: {
		struct dfkv_ioc_bind b;

		if (read_struct(&b, sizeof(b), DFKV_IOC_BIND_SIZE_VER0,
				data + 2, size - 2) || dfkv_ioc_bind_check(&b))
			return 0;
		if (b.flags || !b.node[0] ||
		    strnlen(b.node, sizeof(b.node)) == sizeof(b.node))
			abort();
		break;
	}
	case 1:
		check_op(data + 2, size - 2, ops[data[1] % 5]);
		break;
	case 2: {
		struct dfkv_ioc_keys k;
		uint32_t op = key_ops[data[1] % 4];

		if (read_struct(&k, sizeof(k), DFKV_IOC_KEYS_SIZE_VER0,
				data + 2, size - 2) ||
		    dfkv_ioc_keys_check(&k, op))
			return 0;
		/* only TOUCH takes a flag: its walk */
		if (k.flags & ~(op == DFKV_OP_TOUCH ? __DFKV_KEYS_F_ALL : 0) ||
		    k.__reserved ||
		    (op == DFKV_OP_RELEASE ? k.count != 0 :
		     !k.count || k.count > DFKV_KEYS_MAX))
			abort();
		break;
	}
	default: {
		struct dfkv_ioc_batch b;

		if (read_struct(&b, sizeof(b), DFKV_IOC_BATCH_SIZE_VER0,
				data + 2, size - 2) ||
		    dfkv_ioc_batch_check(&b, MAX_SIZE))
			return 0;
		if (b.flags || b.__reserved || !b.count ||
		    b.count > DFKV_BATCH_MAX ||
		    b.op_size < DFKV_IOC_OP_SIZE_VER0 || b.op_size > MAX_SIZE)
			abort();
		/* each entry as the batch reads it, op_size bytes */
		check_op(data + 2, size - 2, 0);
		break;
	}
	}
	return 0;
}
