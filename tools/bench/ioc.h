/* SPDX-License-Identifier: GPL-2.0 */
/*
 * /dev/dfkv helpers shared by dfkv-bench and dfkv-rebuild: the bench keys
 * (a tenant, a thread and an index), a file bound to a node, and one
 * PUT, GET or REMOVE that reports plain success.
 */
#ifndef DFKV_BENCH_IOC_H
#define DFKV_BENCH_IOC_H

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/ioctl.h>
#include <linux/dfkv.h>

static inline struct dfkv_key bench_key(uint64_t tenant, int tid, uint64_t idx)
{
	struct dfkv_key k = { .tenant = tenant };
	uint64_t t = (uint64_t)tid;

	memcpy(k.id, &t, sizeof(t));
	memcpy(k.id + 8, &idx, sizeof(idx));
	return k;
}

/* An fd bound to node, or -errno. */
static inline int ioc_open(const char *node)
{
	struct dfkv_ioc_bind b = { .size = sizeof(b) };
	int fd = open("/dev/dfkv", O_RDWR | O_CLOEXEC);

	if (fd < 0)
		return -errno;
	snprintf(b.node, sizeof(b.node), "%s", node);
	if (ioctl(fd, DFKV_IOC_BIND, &b)) {
		int err = -errno;

		close(fd);
		return err;
	}
	return fd;
}

static inline void ioc_op_init(struct dfkv_ioc_op *op, const struct dfkv_key *k)
{
	memset(op, 0, sizeof(*op));
	op->size = sizeof(*op);
	op->key = *k;
}

/* 1 when the PUT stored (or found) the value, else 0. */
static inline int ioc_put(int fd, const struct dfkv_key *k, const void *buf,
			  uint64_t len)
{
	struct dfkv_ioc_op op;

	ioc_op_init(&op, k);
	op.buf = (uintptr_t)buf;
	op.length = len;
	return ioctl(fd, DFKV_IOC_PUT, &op) == 0 && op.status == DFKV_STATUS_OK;
}

/* 1 when the GET returned the whole value of exactly len bytes, else 0. */
static inline int ioc_get(int fd, const struct dfkv_key *k, void *buf,
			  uint64_t len)
{
	struct dfkv_ioc_op op;

	ioc_op_init(&op, k);
	op.buf = (uintptr_t)buf;
	op.cap = len;
	return ioctl(fd, DFKV_IOC_GET, &op) == 0 &&
	       op.status == DFKV_STATUS_OK && op.data_len == len &&
	       op.stored_len == len;
}

static inline int ioc_remove(int fd, const struct dfkv_key *k)
{
	struct dfkv_ioc_op op;

	ioc_op_init(&op, k);
	return ioctl(fd, DFKV_IOC_REMOVE, &op) == 0 &&
	       op.status == DFKV_STATUS_OK;
}

#endif /* DFKV_BENCH_IOC_H */
