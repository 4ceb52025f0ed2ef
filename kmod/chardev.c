// SPDX-License-Identifier: GPL-2.0
/*
 * /dev/dfkv: the local fast path.  A file is bound once to a node of the
 * opener's network namespace; its ioctls copy size-versioned structs in
 * with copy_struct_from_user, run each op as a struct dfkv_req through the
 * executor of req.c in the caller's task (a PUT follower sleeps for its
 * leader here, a GET killably for its value's cold read), with the
 * caller's buffer as an iov_iter (one copy to or from the store's pages),
 * and write the results back.  Leases granted through a file belong to it
 * and are dropped when it is released.  So do the tenants DFKV_IOC_AUTH
 * authorized it for; a file opened with CAP_NET_ADMIN in the initial user
 * namespace acts for every tenant.
 *
 * No user memory is touched inside a node's operation bracket: the pages
 * of a PUT's or GET's buffer are faulted in and referenced first
 * (struct user_buf), structs are read before and written after it.  A
 * buffer that faults slowly (FUSE, userfaultfd) so holds no node, no
 * reservation and no pin, and deleting the node does not wait for it.
 */
#include <linux/module.h>
#include <linux/miscdevice.h>
#include <linux/fs.h>
#include <linux/slab.h>
#include <linux/uaccess.h>
#include <linux/uio.h>
#include <linux/nsproxy.h>
#include <linux/sched.h>
#include <linux/capability.h>
#include <linux/user_namespace.h>
#include <net/net_namespace.h>

#include "chardev.h"
#include "ioc.h"
#include "node.h"
#include "ops.h"
#include "req.h"

struct dfkv_file {
	struct dfkv_node *node;		/* set once by BIND */
	struct mutex bind_lock;
	struct dfkv_lease_owner owner;
	struct dfkv_auth auth;
};

/* Read a size-versioned struct: the user's size, then the struct. */
static int get_struct(void *dst, size_t ksize, size_t min,
		      const void __user *src)
{
	u32 usize;
	int err;

	if (get_user(usize, (const u32 __user *)src))
		return -EFAULT;
	err = dfkv_ioc_size(usize, min, PAGE_SIZE);
	if (err)
		return err;
	err = copy_struct_from_user(dst, ksize, src, usize);
	if (err)
		return err;
	*(u32 *)dst = usize;
	return 0;
}

/* Write the struct back, no more than the user's size of it. */
static int put_struct(void __user *dst, const void *src, size_t ksize)
{
	size_t n = min_t(size_t, *(const u32 *)src, ksize);

	return copy_to_user(dst, src, n) ? -EFAULT : 0;
}

static int dfkv_open(struct inode *inode, struct file *file)
{
	struct dfkv_file *df = kzalloc(sizeof(*df), GFP_KERNEL);

	if (!df)
		return -ENOMEM;
	mutex_init(&df->bind_lock);
	dfkv_lease_owner_init(&df->owner);
	/* An administrator's file acts for every tenant (SPEC.md 9). */
	dfkv_auth_init(&df->auth,
		       file_ns_capable(file, &init_user_ns, CAP_NET_ADMIN));
	file->private_data = df;
	return 0;
}

static int dfkv_release(struct inode *inode, struct file *file)
{
	struct dfkv_file *df = file->private_data;

	if (df->node) {
		dfkv_lease_drop_owner(&df->node->leases, &df->owner);
		dfkv_node_put(df->node);
	}
	dfkv_auth_destroy(&df->auth);
	kfree(df);
	return 0;
}

static long do_bind(struct dfkv_file *df, void __user *uarg)
{
	struct dfkv_ioc_bind b;
	struct dfkv_node *node;
	int err;

	err = get_struct(&b, sizeof(b), DFKV_IOC_BIND_SIZE_VER0, uarg);
	if (err)
		return err;
	err = dfkv_ioc_bind_check(&b);
	if (err)
		return err;
	node = dfkv_node_get(current->nsproxy->net_ns, b.node);
	if (!node)
		return -ENOENT;
	mutex_lock(&df->bind_lock);
	if (df->node) {
		mutex_unlock(&df->bind_lock);
		dfkv_node_put(node);
		return -EISCONN;
	}
	/* Publish the node to ioctls racing the bind (bound_node()). */
	smp_store_release(&df->node, node);
	mutex_unlock(&df->bind_lock);
	return 0;
}

/* The node df is bound to, or an error pointer. */
static struct dfkv_node *bound_node(struct dfkv_file *df)
{
	/* Pairs with the release in do_bind(). */
	struct dfkv_node *node = smp_load_acquire(&df->node);

	return node ? node : ERR_PTR(-ENOTCONN);
}

/* The bound node with an operation bracket taken, or an error pointer. */
static struct dfkv_node *enter_node(struct dfkv_file *df)
{
	struct dfkv_node *node = bound_node(df);

	if (!IS_ERR(node) && !dfkv_node_enter(node))
		return ERR_PTR(-ENODEV);
	return node;
}

/* The pages of a caller's buffer, referenced for one operation. */
struct user_buf {
	struct page **pages;
	struct bio_vec *bv;
	unsigned int nr;
	bool dest;			/* written: dirty the pages */
	struct iov_iter iter;		/* ITER_BVEC over the pages */
};

static void user_buf_put(struct user_buf *ub)
{
	unsigned int i;

	for (i = 0; i < ub->nr; i++) {
		if (ub->dest)
			set_page_dirty_lock(ub->pages[i]);
		put_page(ub->pages[i]);
	}
	kvfree(ub->pages);
	kvfree(ub->bv);
	ub->pages = NULL;
	ub->bv = NULL;
	ub->nr = 0;
}

/* Fault in and reference the pages @from describes; ub->iter over them. */
static int user_buf_get(struct user_buf *ub, struct iov_iter *from)
{
	size_t len = iov_iter_count(from);
	int max = iov_iter_npages(from, INT_MAX);

	memset(ub, 0, sizeof(*ub));
	ub->dest = iov_iter_rw(from) == READ;
	if (max) {
		ub->pages = kvmalloc_array(max, sizeof(*ub->pages),
					   GFP_KERNEL_ACCOUNT);
		ub->bv = kvmalloc_array(max, sizeof(*ub->bv),
					GFP_KERNEL_ACCOUNT);
		if (!ub->pages || !ub->bv) {
			user_buf_put(ub);
			return -ENOMEM;
		}
	}
	while (iov_iter_count(from)) {
		size_t start, got;
		ssize_t n;

		n = iov_iter_get_pages2(from, ub->pages + ub->nr,
					iov_iter_count(from), max - ub->nr,
					&start);
		if (n <= 0) {
			user_buf_put(ub);
			return n ? n : -EFAULT;
		}
		for (got = 0; got < n; start = 0) {
			size_t part = min_t(size_t, n - got, PAGE_SIZE - start);

			bvec_set_page(&ub->bv[ub->nr], ub->pages[ub->nr], part,
				      start);
			ub->nr++;
			got += part;
		}
	}
	iov_iter_bvec(&ub->iter, ub->dest ? ITER_DEST : ITER_SOURCE, ub->bv,
		      ub->nr, len);
	return 0;
}

/*
 * The caller's buffer of an op as an iov_iter: one range of len bytes, or
 * with DFKV_OP_F_IOV the iovec array at buf.  Returns the bytes it holds or
 * a negative errno; *iovp is an allocation to kfree (or NULL).
 */
static ssize_t op_iter(const struct dfkv_ioc_op *o, int dir, u64 len,
		       struct iovec *stack, struct iovec **iovp,
		       struct iov_iter *iter)
{
	int err;

	*iovp = NULL;
	if (o->flags & DFKV_OP_F_IOV) {
		*iovp = stack;
		return import_iovec(dir, u64_to_user_ptr(o->buf), o->iovcnt,
				    UIO_FASTIOV, iovp, iter);
	}
	if (len > MAX_RW_COUNT)
		return -E2BIG;
	err = import_single_range(dir, u64_to_user_ptr(o->buf), len, stack,
				  iter);
	return err ? err : (ssize_t)len;
}

/* A file runs its requests in the caller's task: it reads each reply. */
static const struct dfkv_req_ops chardev_req_ops = {};

static void req_start(struct dfkv_req *req, struct dfkv_file *df,
		      struct dfkv_node *node, u8 op)
{
	dfkv_req_init(req, node, &df->auth, &df->owner, &chardev_req_ops);
	req->op = op;
}

/* Run one op on df's node; the buffer's pages are in ub. */
static int exec_op_node(struct dfkv_file *df, struct dfkv_node *node,
			struct dfkv_ioc_op *o, struct user_buf *ub)
{
	struct dfkv_req req;
	int err = 0;

	req_start(&req, df, node, o->op);
	req.key = o->key;
	req.offset = o->offset;
	req.length = o->length;
	req.cap = iov_iter_count(&ub->iter);
	if (o->op == DFKV_OP_PUT)
		req.payload_len = o->length;
	if (!dfkv_req_begin(&req)) {
		dfkv_req_done(&req);
		return -ENODEV;
	}
	if (req.rx == DFKV_REQ_RX_PUT &&
	    dfkv_store_put_copy(&req.put, 0, o->length, &ub->iter) != o->length)
		err = -EFAULT;
	dfkv_req_exec(&req, err);	/* a follower, a cold GET sleeps here */
	if (req.rd.e)
		dfkv_req_read(&req, &ub->iter, -EFAULT);
	o->stored_len = req.rsp.stored_len;
	o->data_len = req.rsp.data_len;
	err = req.rsp.status;
	dfkv_req_done(&req);
	return err;
}

/* Reference the pages of @iter (if any), then run o on df's node. */
static int exec_op_pinned(struct dfkv_file *df, struct dfkv_ioc_op *o,
			  struct iov_iter *iter)
{
	struct user_buf ub = {};
	struct dfkv_node *node;
	int ret;

	if (iter) {
		ret = user_buf_get(&ub, iter);
		if (ret)
			return ret;
	} else {
		iov_iter_kvec(&ub.iter, ITER_SOURCE, NULL, 0, 0);
	}
	node = bound_node(df);
	if (IS_ERR(node))
		ret = PTR_ERR(node);
	else
		ret = exec_op_node(df, node, o, &ub);
	user_buf_put(&ub);
	return ret;
}

/* A PUT the node refuses for its length alone references no page. */
static bool put_len_ok(struct dfkv_file *df, u64 len)
{
	struct dfkv_node *node = enter_node(df);
	bool ok;

	if (IS_ERR(node))
		return true;	/* the op says so */
	ok = len && len <= READ_ONCE(node->max_value);
	dfkv_node_exit(node);
	return ok;
}

/*
 * GET: reference only the part of the caller's buffer the range can fill
 * (a large cap for a small value costs nothing), from a look at the
 * value's length first, taken only for a tenant the file may act for (so
 * an unmapped buffer's EFAULT tells nothing of another tenant's key).
 * Should the value change in between (a REMOVE and
 * a longer PUT of the key), a TOO_LARGE the caller's cap would not have
 * given is tried again.
 */
static int exec_get(struct dfkv_file *df, struct dfkv_ioc_op *o,
		    struct iov_iter *iter)
{
	size_t cap = iov_iter_count(iter);
	int tries, ret = 0;

	for (tries = 0; tries < 3; tries++) {
		struct iov_iter it = *iter;
		struct dfkv_node *node = enter_node(df);
		u64 want;

		if (IS_ERR(node))
			return PTR_ERR(node);
		want = dfkv_op_get_want(node, &df->auth, &o->key, o->offset,
					o->length);
		dfkv_node_exit(node);
		iov_iter_truncate(&it, want);
		ret = exec_op_pinned(df, o, &it);
		if (ret != DFKV_STATUS_TOO_LARGE || want >= cap)
			break;
	}
	return ret;
}

/* Run one PUT/GET/EXIST/REMOVE on df's node; fills o's outputs. */
static int exec_op(struct dfkv_file *df, struct dfkv_ioc_op *o)
{
	struct iovec stack[UIO_FASTIOV], *iov = NULL;
	struct iov_iter iter;
	ssize_t n = 0;
	int ret;

	o->stored_len = 0;
	o->data_len = 0;
	switch (o->op) {
	case DFKV_OP_PUT:
		n = op_iter(o, ITER_SOURCE, o->length, stack, &iov, &iter);
		if (n == -E2BIG) {
			o->status = DFKV_STATUS_TOO_LARGE;
			return 0;
		}
		if (n >= 0 && n != o->length)
			n = -EINVAL;
		break;
	case DFKV_OP_GET:
		n = op_iter(o, ITER_DEST, min_t(u64, o->cap, MAX_RW_COUNT),
			    stack, &iov, &iter);
		break;
	default:	/* EXIST, REMOVE (dfkv_ioc_op_check()) */
		break;
	}
	if (n < 0) {
		kfree(iov);
		return n;
	}
	if (o->op == DFKV_OP_GET)
		ret = exec_get(df, o, &iter);
	else if (o->op == DFKV_OP_PUT && put_len_ok(df, o->length))
		ret = exec_op_pinned(df, o, &iter);
	else
		ret = exec_op_pinned(df, o, NULL);
	kfree(iov);
	if (ret < 0)
		return ret;
	o->status = ret;
	return 0;
}

static long do_op(struct dfkv_file *df, u32 op, void __user *uarg)
{
	struct dfkv_ioc_op o;
	int err;

	err = get_struct(&o, sizeof(o), DFKV_IOC_OP_SIZE_VER0, uarg);
	if (err)
		return err;
	err = dfkv_ioc_op_check(&o, op);
	if (err)
		return err;
	o.op = op;
	err = exec_op(df, &o);
	if (err)
		return err;
	return put_struct(uarg, &o, sizeof(o));
}

static long do_batch(struct dfkv_file *df, void __user *uarg)
{
	struct dfkv_ioc_batch b;
	struct dfkv_ioc_op o;
	u32 i;
	int err;

	err = get_struct(&b, sizeof(b), DFKV_IOC_BATCH_SIZE_VER0, uarg);
	if (err)
		return err;
	err = dfkv_ioc_batch_check(&b, PAGE_SIZE);
	if (err)
		return err;
	b.nr_done = 0;
	for (i = 0; i < b.count; i++) {
		void __user *uop = u64_to_user_ptr(b.ops + (u64)i * b.op_size);

		err = copy_struct_from_user(&o, sizeof(o), uop, b.op_size);
		if (err)
			break;
		err = dfkv_ioc_op_check(&o, 0);
		if (err)
			break;
		o.size = b.op_size;
		err = exec_op(df, &o);
		if (err)
			break;
		err = put_struct(uop, &o, sizeof(o));
		if (err)
			break;
		b.nr_done++;
		cond_resched();
	}
	if (put_struct(uarg, &b, sizeof(b)))
		return -EFAULT;
	return err;
}

static long do_keys(struct dfkv_file *df, u32 op, void __user *uarg)
{
	struct dfkv_ioc_keys k;
	struct dfkv_node *node;
	struct dfkv_req req;
	struct dfkv_key *keys = NULL;
	u64 *lens = NULL;
	int ret;

	ret = get_struct(&k, sizeof(k), DFKV_IOC_KEYS_SIZE_VER0, uarg);
	if (ret)
		return ret;
	ret = dfkv_ioc_keys_check(&k, op);
	if (ret)
		return ret;
	if (k.count) {
		keys = memdup_user(u64_to_user_ptr(k.keys),
				   array_size(k.count, sizeof(*keys)));
		if (IS_ERR(keys))
			return PTR_ERR(keys);
		lens = kvcalloc(k.count, sizeof(*lens), GFP_KERNEL);
		if (!lens) {
			ret = -ENOMEM;
			goto out;
		}
	}
	node = bound_node(df);
	if (IS_ERR(node)) {
		ret = PTR_ERR(node);
		goto out;
	}
	req_start(&req, df, node, op);
	req.keys = keys;
	req.lens = lens;
	req.nr_keys = k.count;
	req.length = k.ttl_ms;
	req.offset = k.lease_id;	/* RELEASE */
	if (op == DFKV_OP_TOUCH)
		req.offset = k.flags & DFKV_TOUCH_REVERSE ?
			DFKV_TOUCH_WALK_REVERSE : DFKV_TOUCH_WALK_FORWARD;
	if (!dfkv_req_begin(&req)) {
		dfkv_req_done(&req);
		ret = -ENODEV;
		goto out;
	}
	dfkv_req_exec(&req, 0);
	k.status = req.rsp.status;
	k.nr_hits = req.rsp.nr_hits;
	if (op == DFKV_OP_LEASE)
		k.lease_id = req.rsp.lease_id;
	dfkv_req_done(&req);
	ret = 0;
	if (k.nr_hits && k.results &&
	    copy_to_user(u64_to_user_ptr(k.results), lens,
			 array_size(k.nr_hits, sizeof(*lens))))
		ret = -EFAULT;
	if (!ret)
		ret = put_struct(uarg, &k, sizeof(k));
	if (ret && op == DFKV_OP_LEASE && k.lease_id)
		dfkv_lease_release(&node->leases, &df->owner, k.lease_id);
out:
	kvfree(lens);
	kfree(keys);
	return ret;
}

static long do_auth(struct dfkv_file *df, void __user *uarg)
{
	struct dfkv_ioc_auth a;
	struct dfkv_node *node;
	int err;

	err = get_struct(&a, sizeof(a), DFKV_IOC_AUTH_SIZE_VER0, uarg);
	if (!err)
		err = dfkv_ioc_auth_check(&a);
	if (!err) {
		node = enter_node(df);
		if (IS_ERR(node)) {
			err = PTR_ERR(node);
		} else {
			err = dfkv_auth_secret(node, &df->auth, a.tenant_hash,
					       a.secret);
			dfkv_node_exit(node);
		}
	}
	memzero_explicit(&a, sizeof(a));
	return err;
}

/*
 * An ioctl number without its size bits.  The argument's own size field
 * carries its version (SPEC.md section 4), so a binary built against an
 * older, shorter struct issues another number for the same ioctl: match
 * type, number and direction only.
 */
#define IOC_UNSIZED(cmd)	((cmd) & ~(_IOC_SIZEMASK << _IOC_SIZESHIFT))

static long dfkv_ioctl(struct file *file, unsigned int cmd, unsigned long arg)
{
	struct dfkv_file *df = file->private_data;
	void __user *uarg = (void __user *)arg;

	switch (IOC_UNSIZED(cmd)) {
	case IOC_UNSIZED(DFKV_IOC_BIND):
		return do_bind(df, uarg);
	case IOC_UNSIZED(DFKV_IOC_PUT):
		return do_op(df, DFKV_OP_PUT, uarg);
	case IOC_UNSIZED(DFKV_IOC_GET):
		return do_op(df, DFKV_OP_GET, uarg);
	case IOC_UNSIZED(DFKV_IOC_EXIST):
		return do_op(df, DFKV_OP_EXIST, uarg);
	case IOC_UNSIZED(DFKV_IOC_REMOVE):
		return do_op(df, DFKV_OP_REMOVE, uarg);
	case IOC_UNSIZED(DFKV_IOC_TOUCH):
		return do_keys(df, DFKV_OP_TOUCH, uarg);
	case IOC_UNSIZED(DFKV_IOC_PROBE):
		return do_keys(df, DFKV_OP_PROBE, uarg);
	case IOC_UNSIZED(DFKV_IOC_LEASE):
		return do_keys(df, DFKV_OP_LEASE, uarg);
	case IOC_UNSIZED(DFKV_IOC_RELEASE):
		return do_keys(df, DFKV_OP_RELEASE, uarg);
	case IOC_UNSIZED(DFKV_IOC_BATCH):
		return do_batch(df, uarg);
	case IOC_UNSIZED(DFKV_IOC_AUTH):
		return do_auth(df, uarg);
	default:
		return -ENOTTY;
	}
}

static const struct file_operations dfkv_fops = {
	.owner = THIS_MODULE,
	.open = dfkv_open,
	.release = dfkv_release,
	.unlocked_ioctl = dfkv_ioctl,
	.compat_ioctl = compat_ptr_ioctl,
	.llseek = noop_llseek,
};

static struct miscdevice dfkv_misc = {
	.minor = MISC_DYNAMIC_MINOR,
	.name = "dfkv",
	.fops = &dfkv_fops,
	.mode = 0600,
};

int __init dfkv_chardev_init(void)
{
	return misc_register(&dfkv_misc);
}

void dfkv_chardev_exit(void)
{
	misc_deregister(&dfkv_misc);
}
