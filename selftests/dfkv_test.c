// SPDX-License-Identifier: GPL-2.0
/*
 * Fixtures shared by dfkv's C selftests (see dfkv_test.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/ioctl.h>

#include "dfkv_test.h"

int dfkv_test_load(void)
{
	const char *ko = getenv("DFKV_KO");
	const char *repo = getenv("DFKV_REPO");
	char cmd[1024];

	if (!ko)
		ko = "../kmod/dfkv.ko";
	if (!repo)
		repo = "..";
	/* dfkv-insmod loads the modules dfkv.ko depends on first */
	snprintf(cmd, sizeof(cmd),
		 "grep -q '^dfkv ' /proc/modules || %s/tools/dfkv-insmod %s",
		 repo, ko);
	return system(cmd) ? -1 : 0;
}

int dfkv_test_node_add(struct dfkv_genl *g, const char *name, uint64_t ram,
		       uint64_t max_value, int evict)
{
	char buf[MNL_SOCKET_BUFFER_SIZE];
	struct nlmsghdr *nlh = dfkv_genl_msg(g, buf, DFKV_CMD_NODE_NEW, 0);

	mnl_attr_put_strz(nlh, DFKV_A_NODE_NAME, name);
	mnl_attr_put_u64(nlh, DFKV_A_NODE_RAM_BYTES, ram);
	if (max_value)
		mnl_attr_put_u64(nlh, DFKV_A_NODE_MAX_VALUE, max_value);
	mnl_attr_put_u32(nlh, DFKV_A_NODE_FLAGS, evict ? DFKV_NODE_F_EVICT : 0);
	return dfkv_genl_talk(g, nlh, NULL, NULL);
}

int dfkv_test_node_del(struct dfkv_genl *g, const char *name)
{
	char buf[MNL_SOCKET_BUFFER_SIZE];
	struct nlmsghdr *nlh = dfkv_genl_msg(g, buf, DFKV_CMD_NODE_DEL, 0);

	mnl_attr_put_strz(nlh, DFKV_A_NODE_NAME, name);
	return dfkv_genl_talk(g, nlh, NULL, NULL);
}

int dfkv_test_open(const char *node)
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

struct dfkv_key dfkv_test_key(uint64_t t, uint64_t n)
{
	struct dfkv_key k = { .tenant = t };

	memcpy(k.id, &n, sizeof(n));
	memcpy(k.id + 8, &t, sizeof(t));
	return k;
}

static void op_init(struct dfkv_ioc_op *o, const struct dfkv_key *k)
{
	memset(o, 0, sizeof(*o));
	o->size = sizeof(*o);
	o->key = *k;
}

int dfkv_test_put(int fd, const struct dfkv_key *k, const void *buf,
		  uint64_t len, struct dfkv_ioc_op *out)
{
	op_init(out, k);
	out->buf = (uintptr_t)buf;
	out->length = len;
	return ioctl(fd, DFKV_IOC_PUT, out);
}

int dfkv_test_get(int fd, const struct dfkv_key *k, void *buf, uint64_t cap,
		  uint64_t off, uint64_t len, struct dfkv_ioc_op *out)
{
	op_init(out, k);
	out->buf = (uintptr_t)buf;
	out->cap = cap;
	out->offset = off;
	out->length = len;
	return ioctl(fd, DFKV_IOC_GET, out);
}

int dfkv_test_simple(int fd, unsigned long cmd, const struct dfkv_key *k,
		     struct dfkv_ioc_op *out)
{
	op_init(out, k);
	return ioctl(fd, cmd, out);
}

static uint8_t pattern(const struct dfkv_key *k, uint32_t seed, size_t i)
{
	uint64_t x;

	memcpy(&x, k->id, sizeof(x));
	x ^= k->tenant * 0x9e3779b97f4a7c15ULL + seed + i * 0xff51afd7ed558ccdULL;
	x ^= x >> 29;
	return (uint8_t)(x ^ (x >> 17));
}

void dfkv_test_fill(void *buf, size_t len, const struct dfkv_key *k,
		    uint32_t seed)
{
	uint8_t *p = buf;
	size_t i;

	for (i = 0; i < len; i++)
		p[i] = pattern(k, seed, i);
}

int dfkv_test_verify(const void *buf, size_t len, const struct dfkv_key *k,
		     uint32_t seed)
{
	const uint8_t *p = buf;
	size_t i;

	for (i = 0; i < len; i++)
		if (p[i] != pattern(k, seed, i))
			return 0;
	return 1;
}

struct stat_ctx {
	int stat;
	int64_t val;
};

static int stat_cb(const struct nlmsghdr *nlh, void *data)
{
	const struct nlattr *tb[DFKV_A_MAX + 1], *st[DFKV_STAT_MAX + 1];
	struct stat_ctx *c = data;

	dfkv_genl_parse(nlh, tb);
	if (!tb[DFKV_A_NODE_STATS])
		return MNL_CB_OK;
	dfkv_genl_parse_stats(tb[DFKV_A_NODE_STATS], st);
	if (st[c->stat])
		c->val = (int64_t)mnl_attr_get_u64(st[c->stat]);
	return MNL_CB_OK;
}

int64_t dfkv_test_stat(struct dfkv_genl *g, const char *node, int stat)
{
	char buf[MNL_SOCKET_BUFFER_SIZE];
	struct nlmsghdr *nlh = dfkv_genl_msg(g, buf, DFKV_CMD_NODE_GET, 0);
	struct stat_ctx c = { .stat = stat, .val = -1 };

	mnl_attr_put_strz(nlh, DFKV_A_NODE_NAME, node);
	if (dfkv_genl_talk(g, nlh, stat_cb, &c))
		return -1;
	return c.val;
}

int dfkv_test_listen(struct dfkv_genl *g, const char *node, const char *addr,
		     uint16_t port, int add)
{
	char buf[MNL_SOCKET_BUFFER_SIZE];
	struct nlmsghdr *nlh = dfkv_genl_msg(g, buf, add ? DFKV_CMD_LISTENER_ADD :
					     DFKV_CMD_LISTENER_DEL, 0);

	mnl_attr_put_strz(nlh, DFKV_A_NODE_NAME, node);
	mnl_attr_put_strz(nlh, DFKV_A_LISTEN_ADDR, addr);
	mnl_attr_put_u16(nlh, DFKV_A_LISTEN_PORT, port);
	return dfkv_genl_talk(g, nlh, NULL, NULL);
}

int dfkv_test_node_set_u32(struct dfkv_genl *g, const char *node, int attr,
			   uint32_t val)
{
	char buf[MNL_SOCKET_BUFFER_SIZE];
	struct nlmsghdr *nlh = dfkv_genl_msg(g, buf, DFKV_CMD_NODE_SET, 0);

	mnl_attr_put_strz(nlh, DFKV_A_NODE_NAME, node);
	mnl_attr_put_u32(nlh, attr, val);
	return dfkv_genl_talk(g, nlh, NULL, NULL);
}
