// SPDX-License-Identifier: GPL-2.0
/*
 * /dev/dfkv: the local fast path.  A file is bound once to a node of the
 * opener's network namespace and holds a session there (sess.h: the
 * leases and tenant grants it takes, dropped when it is released; a file
 * opened with CAP_NET_ADMIN in the initial user namespace acts for every
 * tenant).  Its ioctls copy size-versioned structs in with
 * copy_struct_from_user, run each op through the executor of req.c in
 * the caller's task (dfkv_req_run_local(): a PUT follower sleeps for its
 * leader there, a GET killably for its value's cold read), and write the
 * results back.
 *
 * No user memory is touched inside a node's operation bracket: the
 * executor asks for the op's buffer before it enters the node, and this
 * file faults its pages in and references them then (struct user_buf),
 * as an iov_iter the executor copies to or from the store's pages once;
 * structs are read before and written after.  A buffer that faults
 * slowly (FUSE, userfaultfd) so holds no node, no reservation and no pin,
 * and deleting the node does not wait for it.
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
#include "req.h"

struct dfkv_file {
	struct dfkv_sess sess;		/* its node set once by BIND */
	struct mutex bind_lock;
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
	/* An administrator's file acts for every tenant (SPEC.md 9). */
	dfkv_sess_init(&df->sess, NULL,
		       file_ns_capable(file, &init_user_ns, CAP_NET_ADMIN));
	file->private_data = df;
	return 0;
}

static int dfkv_release(struct inode *inode, struct file *file)
{
	struct dfkv_file *df = file->private_data;
	struct dfkv_node *node = df->sess.node;

	dfkv_sess_destroy(&df->sess);
	if (node)
		dfkv_node_put(node);
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
	if (df->sess.node) {
		mutex_unlock(&df->bind_lock);
		dfkv_node_put(node);
		return -EISCONN;
	}
	dfkv_sess_bind(&df->sess, node);
	mutex_unlock(&df->bind_lock);
	return 0;
}

/* The node df is bound to, or an error pointer. */
static struct dfkv_node *bound_node(struct dfkv_file *df)
{
	struct dfkv_node *node = dfkv_sess_node(&df->sess);

	return node ? node : ERR_PTR(-ENOTCONN);
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

/* An op's buffer: the caller's, its pages referenced while the op runs. */
struct ioc_buf {
	struct dfkv_req_local lo;
	struct iov_iter user;		/* the caller's buffer, as given */
	struct user_buf ub;
};

static int ioc_buf_get(struct dfkv_req_local *lo, u64 len,
		       struct iov_iter **iter)
{
	struct ioc_buf *b = container_of(lo, struct ioc_buf, lo);
	struct iov_iter it = b->user;
	int ret;

	iov_iter_truncate(&it, len);
	ret = user_buf_get(&b->ub, &it);
	if (!ret)
		*iter = &b->ub.iter;
	return ret;
}

static void ioc_buf_put(struct dfkv_req_local *lo)
{
	struct ioc_buf *b = container_of(lo, struct ioc_buf, lo);

	user_buf_put(&b->ub);
}

/* Run o on df's node with the caller's buffer in @iter (or none). */
static int run_op(struct dfkv_file *df, struct dfkv_ioc_op *o,
		  struct iov_iter *iter)
{
	struct ioc_buf b = {
		.lo = {
			.op = o->op,
			.key = o->key,
			.offset = o->offset,
			.length = o->length,
			.cap = iter ? iov_iter_count(iter) : 0,
			.buf_get = ioc_buf_get,
			.buf_put = ioc_buf_put,
		},
	};
	struct dfkv_node *node = bound_node(df);
	int ret;

	if (IS_ERR(node))
		return PTR_ERR(node);
	if (iter)
		b.user = *iter;
	ret = dfkv_req_run_local(&df->sess, &b.lo);
	o->stored_len = b.lo.stored_len;
	o->data_len = b.lo.data_len;
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
	ret = run_op(df, o, o->op == DFKV_OP_GET || o->op == DFKV_OP_PUT ?
		     &iter : NULL);
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
	dfkv_req_init_local(&req, &df->sess, op);
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
		dfkv_sess_lease_undo(&df->sess, k.lease_id);
out:
	kvfree(lens);
	kfree(keys);
	return ret;
}

static long do_auth(struct dfkv_file *df, void __user *uarg)
{
	struct dfkv_ioc_auth a;
	int err;

	err = get_struct(&a, sizeof(a), DFKV_IOC_AUTH_SIZE_VER0, uarg);
	if (!err)
		err = dfkv_ioc_auth_check(&a);
	if (!err)
		err = dfkv_sess_auth_secret(&df->sess, a.tenant_hash, a.secret);
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
