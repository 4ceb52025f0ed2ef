// SPDX-License-Identifier: GPL-2.0
/*
 * The helper library of dfkv's C selftests (see testlib.h), linked into
 * each of them; not a test itself.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <linux/capability.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>

#include "testlib.h"

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

/* NODE_NEW; auth 0 leaves DFKV_A_NODE_AUTH and the default quota out. */
static int node_new(struct dfkv_genl *g, const char *name, uint64_t ram,
		    uint64_t max_value, uint32_t flags, uint32_t auth,
		    uint64_t tenant_quota)
{
	char buf[MNL_SOCKET_BUFFER_SIZE];
	struct nlmsghdr *nlh = dfkv_genl_msg(g, buf, DFKV_CMD_NODE_NEW, 0);

	mnl_attr_put_strz(nlh, DFKV_A_NODE_NAME, name);
	mnl_attr_put_u64(nlh, DFKV_A_NODE_RAM_BYTES, ram);
	if (max_value)
		mnl_attr_put_u64(nlh, DFKV_A_NODE_MAX_VALUE, max_value);
	mnl_attr_put_u32(nlh, DFKV_A_NODE_FLAGS, flags);
	if (auth) {
		mnl_attr_put_u32(nlh, DFKV_A_NODE_AUTH, auth);
		mnl_attr_put_u64(nlh, DFKV_A_NODE_TENANT_QUOTA, tenant_quota);
	}
	return dfkv_genl_talk(g, nlh, NULL, NULL);
}

int dfkv_test_node_add(struct dfkv_genl *g, const char *name, uint64_t ram,
		       uint64_t max_value, int evict)
{
	return node_new(g, name, ram, max_value,
			evict ? DFKV_NODE_F_EVICT : 0, 0, 0);
}

int dfkv_test_node_add_disk_only(struct dfkv_genl *g, const char *name,
				 uint64_t ram, uint64_t max_value)
{
	return node_new(g, name, ram, max_value,
			DFKV_NODE_F_EVICT | DFKV_NODE_F_DISK_ONLY, 0, 0);
}

int dfkv_test_node_add_auth(struct dfkv_genl *g, const char *name,
			    uint64_t ram, int evict, uint32_t auth,
			    uint64_t tenant_quota)
{
	return node_new(g, name, ram, 0, evict ? DFKV_NODE_F_EVICT : 0, auth,
			tenant_quota);
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

int dfkv_test_keys(int fd, unsigned long cmd, struct dfkv_key *keys,
		   uint32_t n, uint64_t *res, uint64_t ttl,
		   struct dfkv_ioc_keys *out)
{
	memset(out, 0, sizeof(*out));
	out->size = sizeof(*out);
	out->keys = (uintptr_t)keys;
	out->count = n;
	out->results = (uintptr_t)res;
	out->ttl_ms = ttl;
	return ioctl(fd, cmd, out);
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

int dfkv_test_wait_stat(struct dfkv_genl *g, const char *node, int stat,
			int64_t want, int ge)
{
	int64_t v;
	int i;

	for (i = 0; i < 600; i++) {
		v = dfkv_test_stat(g, node, stat);
		if (v == want || (ge && v > want))
			return 1;
		usleep(100 * 1000);
	}
	return 0;
}

int dfkv_test_listener(struct dfkv_genl *g, const char *node,
		       const char *addr, uint16_t port, uint32_t kind, int add)
{
	char buf[MNL_SOCKET_BUFFER_SIZE];
	struct nlmsghdr *nlh = dfkv_genl_msg(g, buf, add ? DFKV_CMD_LISTENER_ADD :
					     DFKV_CMD_LISTENER_DEL, 0);

	mnl_attr_put_strz(nlh, DFKV_A_NODE_NAME, node);
	mnl_attr_put_strz(nlh, DFKV_A_LISTEN_ADDR, addr);
	mnl_attr_put_u16(nlh, DFKV_A_LISTEN_PORT, port);
	mnl_attr_put_u32(nlh, DFKV_A_LISTEN_TRANSPORT, kind);
	return dfkv_genl_talk(g, nlh, NULL, NULL);
}

int dfkv_test_listen(struct dfkv_genl *g, const char *node, const char *addr,
		     uint16_t port, int add)
{
	return dfkv_test_listener(g, node, addr, port, DFKV_LISTENER_TCP, add);
}

/* NODE_SET of one attribute of len bytes (4 or 8). */
static int node_set(struct dfkv_genl *g, const char *node, int attr,
		    const void *val, size_t len)
{
	char buf[MNL_SOCKET_BUFFER_SIZE];
	struct nlmsghdr *nlh = dfkv_genl_msg(g, buf, DFKV_CMD_NODE_SET, 0);

	mnl_attr_put_strz(nlh, DFKV_A_NODE_NAME, node);
	mnl_attr_put(nlh, attr, len, val);
	return dfkv_genl_talk(g, nlh, NULL, NULL);
}

int dfkv_test_node_set_u32(struct dfkv_genl *g, const char *node, int attr,
			   uint32_t val)
{
	return node_set(g, node, attr, &val, sizeof(val));
}

int dfkv_test_node_set_u64(struct dfkv_genl *g, const char *node, int attr,
			   uint64_t val)
{
	return node_set(g, node, attr, &val, sizeof(val));
}

/* A TENANT_SET, _DEL or _GET request naming node and tenant, into buf. */
static struct nlmsghdr *tenant_msg(struct dfkv_genl *g, void *buf, uint8_t cmd,
				   const char *node, uint64_t tenant)
{
	struct nlmsghdr *nlh = dfkv_genl_msg(g, buf, cmd, 0);

	mnl_attr_put_strz(nlh, DFKV_A_NODE_NAME, node);
	mnl_attr_put_u64(nlh, DFKV_A_TENANT_HASH, tenant);
	return nlh;
}

int dfkv_test_tenant_set(struct dfkv_genl *g, const char *node,
			 uint64_t tenant, const void *secret, size_t secret_len,
			 const uint64_t *quota)
{
	char buf[MNL_SOCKET_BUFFER_SIZE];
	struct nlmsghdr *nlh = tenant_msg(g, buf, DFKV_CMD_TENANT_SET, node,
					  tenant);

	if (secret)
		mnl_attr_put(nlh, DFKV_A_TENANT_SECRET, secret_len, secret);
	if (quota)
		mnl_attr_put_u64(nlh, DFKV_A_TENANT_QUOTA, *quota);
	return dfkv_genl_talk(g, nlh, NULL, NULL);
}

int dfkv_test_tenant_secret(struct dfkv_genl *g, const char *node,
			    uint64_t tenant, int attr, const void *secret)
{
	char buf[MNL_SOCKET_BUFFER_SIZE];
	struct nlmsghdr *nlh = tenant_msg(g, buf, DFKV_CMD_TENANT_SET, node,
					  tenant);

	mnl_attr_put(nlh, (uint16_t)attr, DFKV_TENANT_SECRET_LEN, secret);
	return dfkv_genl_talk(g, nlh, NULL, NULL);
}

int dfkv_test_tenant_del(struct dfkv_genl *g, const char *node,
			 uint64_t tenant)
{
	char buf[MNL_SOCKET_BUFFER_SIZE];

	return dfkv_genl_talk(g, tenant_msg(g, buf, DFKV_CMD_TENANT_DEL, node,
					    tenant), NULL, NULL);
}

static int tenant_get_cb(const struct nlmsghdr *nlh, void *data)
{
	const struct nlattr *tb[DFKV_A_MAX + 1], *st[DFKV_STAT_MAX + 1];
	struct dfkv_test_tenant *t = data;
	int i;

	dfkv_genl_parse(nlh, tb);
	if (tb[DFKV_A_TENANT_FLAGS])
		t->flags = mnl_attr_get_u32(tb[DFKV_A_TENANT_FLAGS]);
	if (tb[DFKV_A_TENANT_SECRETS])
		t->secrets = mnl_attr_get_u32(tb[DFKV_A_TENANT_SECRETS]);
	if (tb[DFKV_A_TENANT_QUOTA])
		t->quota = mnl_attr_get_u64(tb[DFKV_A_TENANT_QUOTA]);
	if (!tb[DFKV_A_TENANT_STATS])
		return MNL_CB_OK;
	dfkv_genl_parse_stats(tb[DFKV_A_TENANT_STATS], st);
	for (i = DFKV_STAT_BYTES_IN; i <= DFKV_STAT_MAX; i++)
		if (st[i] && mnl_attr_get_payload_len(st[i]) == 8)
			t->stat[i] = (int64_t)mnl_attr_get_u64(st[i]);
	return MNL_CB_OK;
}

int dfkv_test_tenant_get(struct dfkv_genl *g, const char *node,
			 uint64_t tenant, struct dfkv_test_tenant *out)
{
	char buf[MNL_SOCKET_BUFFER_SIZE];

	memset(out, 0, sizeof(*out));
	memset(out->stat, 0xff, sizeof(out->stat));
	return dfkv_genl_talk(g, tenant_msg(g, buf, DFKV_CMD_TENANT_GET, node,
					    tenant), tenant_get_cb, out);
}

int dfkv_test_new_loop(const char *img, char *dev, size_t len)
{
	char cmd[256];
	FILE *p;

	snprintf(cmd, sizeof(cmd),
		 "modprobe loop 2>/dev/null; rm -f %s && truncate -s 64M %s && losetup -f --show %s",
		 img, img, img);
	p = popen(cmd, "r");
	if (!p)
		return -1;
	if (!fgets(dev, len, p)) {
		pclose(p);
		return -1;
	}
	dev[strcspn(dev, "\n")] = '\0';
	return pclose(p) ? -1 : 0;
}

int dfkv_test_disk_add(struct dfkv_genl *g, const char *node, const char *dev,
		       const char *name, int format)
{
	char buf[MNL_SOCKET_BUFFER_SIZE];
	struct nlmsghdr *nlh = dfkv_genl_msg(g, buf, DFKV_CMD_DISK_ADD, 0);

	mnl_attr_put_strz(nlh, DFKV_A_NODE_NAME, node);
	mnl_attr_put_strz(nlh, DFKV_A_DISK_PATH, dev);
	if (name)
		mnl_attr_put_strz(nlh, DFKV_A_DISK_NAME, name);
	if (format)
		mnl_attr_put(nlh, DFKV_A_DISK_FORMAT, 0, NULL);
	return dfkv_genl_talk(g, nlh, NULL, NULL);
}

int dfkv_test_disk_del(struct dfkv_genl *g, const char *node,
		       const char *name)
{
	char buf[MNL_SOCKET_BUFFER_SIZE];
	struct nlmsghdr *nlh = dfkv_genl_msg(g, buf, DFKV_CMD_DISK_DEL, 0);

	mnl_attr_put_strz(nlh, DFKV_A_NODE_NAME, node);
	mnl_attr_put_strz(nlh, DFKV_A_DISK_NAME, name);
	return dfkv_genl_talk(g, nlh, NULL, NULL);
}

int dfkv_test_drop_cap(int cap)
{
	struct __user_cap_header_struct h = {
		.version = _LINUX_CAPABILITY_VERSION_3,
	};
	struct __user_cap_data_struct d[2];
	uint32_t bit = 1U << (cap % 32);

	if (syscall(SYS_capget, &h, d))
		return -errno;
	d[cap / 32].effective &= ~bit;
	d[cap / 32].permitted &= ~bit;
	d[cap / 32].inheritable &= ~bit;
	if (syscall(SYS_capset, &h, d))
		return -errno;
	return 0;
}

void dfkv_test_le64(uint8_t *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = v >> (8 * i);
}

uint64_t dfkv_test_rd64(const uint8_t *p)
{
	uint64_t v = 0;

	for (int i = 7; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

void dfkv_test_wire_key(uint8_t *p, const struct dfkv_key *k)
{
	dfkv_test_le64(p, k->tenant);
	memcpy(p + 8, k->id, DFKV_OBJECT_ID_LEN);
}

int dfkv_test_tcp_connect(uint16_t port)
{
	struct sockaddr_in sa = {
		.sin_family = AF_INET,
		.sin_port = htons(port),
		.sin_addr.s_addr = htonl(INADDR_LOOPBACK),
	};
	int one = 1, fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return -1;
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa))) {
		close(fd);
		return -1;
	}
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	return fd;
}

/* Send or receive all of len bytes (DFKV_TEST_WAIT_MS without progress
 * is a failure). */
static int xfer_all(int fd, void *buf, size_t len, int out)
{
	uint8_t *p = buf;

	while (len) {
		struct pollfd pfd = { .fd = fd, .events = out ? POLLOUT : POLLIN };
		ssize_t n;

		if (poll(&pfd, 1, DFKV_TEST_WAIT_MS) != 1)
			return -1;
		n = out ? send(fd, p, len, MSG_NOSIGNAL) : recv(fd, p, len, 0);
		if (n <= 0)
			return -1;
		p += n;
		len -= n;
	}
	return 0;
}

int dfkv_test_tcp_send(int fd, int op, const struct dfkv_key *k,
		       uint64_t off, uint64_t len, const void *payload,
		       uint64_t plen)
{
	uint8_t h[DFKV_REQ_PREFIX_LEN] = { DFKV_EPOCH_TCP, (uint8_t)op };

	if (k) {
		memcpy(h + 2, k->id, DFKV_OBJECT_ID_LEN);
		dfkv_test_le64(h + 18, k->tenant);
	}
	dfkv_test_le64(h + 26, off);
	dfkv_test_le64(h + 34, len);
	dfkv_test_le64(h + 42, plen);
	if (xfer_all(fd, h, sizeof(h), 1))
		return -1;
	return plen ? xfer_all(fd, (void *)payload, plen, 1) : 0;
}

int dfkv_test_tcp_recv(int fd, struct dfkv_test_resp *r, void *buf,
		       size_t cap)
{
	uint8_t h[DFKV_RESP_PREFIX_LEN];

	if (xfer_all(fd, h, sizeof(h), 0) || h[0] != DFKV_EPOCH_TCP)
		return -1;
	r->status = h[1];
	r->stored_len = dfkv_test_rd64(h + 2);
	r->data_len = dfkv_test_rd64(h + 10);
	if (r->data_len > cap)
		return -1;
	return r->data_len ? xfer_all(fd, buf, r->data_len, 0) : 0;
}

int dfkv_test_tcp_call(int fd, int op, const struct dfkv_key *k,
		       uint64_t off, uint64_t len, const void *payload,
		       uint64_t plen, struct dfkv_test_resp *r, void *buf,
		       size_t cap)
{
	if (dfkv_test_tcp_send(fd, op, k, off, len, payload, plen) ||
	    dfkv_test_tcp_recv(fd, r, buf, cap))
		return -1;
	return r->status;
}

int dfkv_test_peer_closed(int fd)
{
	struct pollfd pfd = { .fd = fd, .events = POLLIN };
	char c;

	if (poll(&pfd, 1, DFKV_TEST_WAIT_MS) != 1)
		return 0;
	return recv(fd, &c, 1, 0) <= 0;
}
