/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The one place for kernel-version gates.  Gate only where an interface
 * actually changed, name the release it changed in, and keep the rest of
 * kmod/ free of version tests.
 *
 * Outside the kernel (the native unit builds of the codecs, with
 * selftests/unit/kshim) only the unaligned accessors are provided.
 */
#ifndef _DFKV_COMPAT_H
#define _DFKV_COMPAT_H

#ifndef __KERNEL__

#include <asm/unaligned.h>

#else /* __KERNEL__ */

#include <linux/version.h>
#include <linux/blkdev.h>
#include <linux/err.h>
#include <linux/fs.h>
#include <linux/netlink.h>
#include <linux/skbuff.h>

/*
 * Whether the kernel built against is release @a.@b or later (the
 * sublevel never matters here).
 */
#define DFKV_KERNEL_GE(a, b) \
	(KERNEL_VERSION(a, b, 0) <= \
	 KERNEL_VERSION(LINUX_VERSION_MAJOR, LINUX_VERSION_PATCHLEVEL, 0))

/* 6.2 gave a family's pre_doit the split op of the command. */
#if DFKV_KERNEL_GE(6, 2)
#define dfkv_genl_pre_op genl_split_ops
#else
#define dfkv_genl_pre_op genl_ops
#endif

/*
 * The family a dump's request came to: 6.6 moved it from struct
 * genl_dumpit_info into the struct genl_info a dump has since.
 */
#if DFKV_KERNEL_GE(6, 6)
#define dfkv_genl_dump_family(cb)	(genl_info_dump(cb)->family)
#else
#define dfkv_genl_dump_family(cb)	(genl_dumpit_info(cb)->family)
#endif

/* 6.12 moved <asm/unaligned.h> to <linux/unaligned.h>. */
#if DFKV_KERNEL_GE(6, 12)
#include <linux/unaligned.h>
#else
#include <asm/unaligned.h>
#endif

/*
 * An extack message with arguments: NL_SET_ERR_MSG_FMT() came with 6.2;
 * before it an extack carries static strings only, so @fallback (a
 * literal) is set instead.
 */
#if DFKV_KERNEL_GE(6, 2)
#define DFKV_ERR_MSG_FMT(extack, fallback, fmt, args...) \
	NL_SET_ERR_MSG_FMT(extack, fmt, ##args)
#else
#define DFKV_ERR_MSG_FMT(extack, fallback, fmt, args...) \
	NL_SET_ERR_MSG(extack, fallback)
#endif

/*
 * A ubuf_info of the module's own, for zero-copy sends of its pages
 * (msghdr.msg_ubuf, 6.0 on): 6.10 moved the callback the stack calls as
 * it lets go of them into a struct ubuf_info_ops.  One reference, the
 * sender's, to begin with.
 */
struct dfkv_ubuf {
	struct ubuf_info ubuf;
#if DFKV_KERNEL_GE(6, 10)
	struct ubuf_info_ops ops;
#endif
};

static inline void dfkv_ubuf_init(struct dfkv_ubuf *u,
				  void (*done)(struct sk_buff *skb,
					       struct ubuf_info *ubuf,
					       bool zerocopy_success))
{
#if DFKV_KERNEL_GE(6, 10)
	u->ops = (struct ubuf_info_ops){ .complete = done };
	u->ubuf.ops = &u->ops;
#else
	u->ubuf.callback = done;
#endif
	u->ubuf.flags = SKBFL_ZEROCOPY_FRAG | SKBFL_DONT_ORPHAN;
	refcount_set(&u->ubuf.refcnt, 1);
}

/*
 * An exclusive read-write open of a block device by path.
 *
 *   ..6.4  blkdev_get_by_path(path, FMODE_* | FMODE_EXCL, holder)
 *          blkdev_put(bdev, the same mode)
 *   6.5..  blk_mode_t: blkdev_get_by_path(path, BLK_OPEN_*, holder, hops),
 *          exclusive because a holder is given; blkdev_put(bdev, holder)
 *   6.8..  blkdev_get_by_path() is gone: bdev_open_by_path() returns a
 *          struct bdev_handle, bdev_release() closes it
 *   6.9..  bdev_file_open_by_path() returns a struct file, file_bdev()
 *          names its device, fput() closes it
 *   6.10.. bdev_fput() yields the exclusive claim at once (fput() defers
 *          the release, so a reopen right after a close could see -EBUSY)
 */
#if DFKV_KERNEL_GE(6, 9)

struct dfkv_bdev {
	struct file *file;
};

static inline int dfkv_bdev_open(const char *path, void *holder,
				 struct dfkv_bdev *b)
{
	struct file *f;

	f = bdev_file_open_by_path(path, BLK_OPEN_READ | BLK_OPEN_WRITE,
				   holder, NULL);
	if (IS_ERR(f))
		return PTR_ERR(f);
	b->file = f;
	return 0;
}

static inline struct block_device *dfkv_bdev_get(const struct dfkv_bdev *b)
{
	return file_bdev(b->file);
}

static inline void dfkv_bdev_close(struct dfkv_bdev *b)
{
#if DFKV_KERNEL_GE(6, 10)
	bdev_fput(b->file);
#else
	fput(b->file);
#endif
	b->file = NULL;
}

#elif DFKV_KERNEL_GE(6, 8)

struct dfkv_bdev {
	struct bdev_handle *handle;
};

static inline int dfkv_bdev_open(const char *path, void *holder,
				 struct dfkv_bdev *b)
{
	struct bdev_handle *h;

	h = bdev_open_by_path(path, BLK_OPEN_READ | BLK_OPEN_WRITE, holder,
			      NULL);
	if (IS_ERR(h))
		return PTR_ERR(h);
	b->handle = h;
	return 0;
}

static inline struct block_device *dfkv_bdev_get(const struct dfkv_bdev *b)
{
	return b->handle->bdev;
}

static inline void dfkv_bdev_close(struct dfkv_bdev *b)
{
	bdev_release(b->handle);
	b->handle = NULL;
}

#else /* up to 6.7: blkdev_get_by_path() */

struct dfkv_bdev {
	struct block_device *bdev;
	void *holder;
};

#if DFKV_KERNEL_GE(6, 5)
static inline struct block_device *dfkv_blkdev_get(const char *path,
						   void *holder)
{
	return blkdev_get_by_path(path, BLK_OPEN_READ | BLK_OPEN_WRITE,
				  holder, NULL);
}

static inline void dfkv_blkdev_put(struct block_device *bdev, void *holder)
{
	blkdev_put(bdev, holder);
}
#else
#define DFKV_BDEV_MODE	(FMODE_READ | FMODE_WRITE | FMODE_EXCL)

static inline struct block_device *dfkv_blkdev_get(const char *path,
						   void *holder)
{
	return blkdev_get_by_path(path, DFKV_BDEV_MODE, holder);
}

static inline void dfkv_blkdev_put(struct block_device *bdev, void *holder)
{
	blkdev_put(bdev, DFKV_BDEV_MODE);
}
#endif

static inline int dfkv_bdev_open(const char *path, void *holder,
				 struct dfkv_bdev *b)
{
	struct block_device *bdev = dfkv_blkdev_get(path, holder);

	if (IS_ERR(bdev))
		return PTR_ERR(bdev);
	b->bdev = bdev;
	b->holder = holder;
	return 0;
}

static inline struct block_device *dfkv_bdev_get(const struct dfkv_bdev *b)
{
	return b->bdev;
}

static inline void dfkv_bdev_close(struct dfkv_bdev *b)
{
	dfkv_blkdev_put(b->bdev, b->holder);
	b->bdev = NULL;
}

#endif /* blkdev open */

#endif /* __KERNEL__ */

#endif /* _DFKV_COMPAT_H */
