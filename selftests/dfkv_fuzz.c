// SPDX-License-Identifier: GPL-2.0
/*
 * A random tester against a live node, bounded in count and time, with a
 * fixed seed it prints (DFKV_FUZZ_SEED overrides it, to replay a run):
 * random ioctl numbers, structs, sizes and pointers on bound and unbound
 * files; random generic netlink messages (commands, flags, attributes of
 * any type, size and nesting, dumps); random TCP frame streams (random
 * bytes, and well-formed prefixes with hostile fields, split into tiny
 * writes, abandoned midway).  It runs in a network namespace of its own,
 * without CAP_SYS_ADMIN (no random path can become an attached disk).
 * Afterwards the node still stores and loads byte-exact over both paths;
 * the guest's kernel log (checked by vm-run) must show no report.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <linux/capability.h>
#include <netinet/in.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/syscall.h>

#include "kselftest_harness.h"
#include "testlib.h"

#define NODE		"fz"
#define PORT		7499
#define BUDGET_S	120	/* each phase stops at its count or this */

static uint64_t seed;

static uint64_t rnd(void)
{
	seed ^= seed << 13;
	seed ^= seed >> 7;
	seed ^= seed << 17;
	return seed;
}

static int deadline_passed(time_t start)
{
	return time(NULL) - start > BUDGET_S;
}

/* Pointers worth trying: valid, NULL, tiny, unmapped, kernel, the edge. */
static uint64_t some_pointer(char *valid, size_t len, void *hole)
{
	switch (rnd() % 7) {
	case 0: return (uintptr_t)valid;
	case 1: return 0;
	case 2: return 8;
	case 3: return (uintptr_t)hole;
	case 4: return 0xffff888000000000ULL;
	case 5: return (uintptr_t)valid + len - 1;
	default: return rnd();
	}
}

static uint32_t some_size(void)
{
	static const uint32_t sizes[] = {
		0, 4, DFKV_IOC_OP_SIZE_VER0 - 1, DFKV_IOC_OP_SIZE_VER0,
		DFKV_IOC_OP_SIZE_VER1, DFKV_IOC_KEYS_SIZE_VER0,
		DFKV_IOC_BATCH_SIZE_VER0, DFKV_IOC_BIND_SIZE_VER0, 512, 4097,
	};

	return rnd() & 1 ? sizes[rnd() % (sizeof(sizes) / sizeof(sizes[0]))] :
		(uint32_t)rnd();
}

static void drop_sys_admin(void)
{
	struct __user_cap_header_struct h = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct d[2];

	if (syscall(SYS_capget, &h, d))
		return;
	d[CAP_SYS_ADMIN / 32].effective &= ~(1U << (CAP_SYS_ADMIN % 32));
	d[CAP_SYS_ADMIN / 32].permitted &= ~(1U << (CAP_SYS_ADMIN % 32));
	d[CAP_SYS_ADMIN / 32].inheritable &= ~(1U << (CAP_SYS_ADMIN % 32));
	syscall(SYS_capset, &h, d);
}

/* Each phase returns how many inputs it sent. */
static long fuzz_ioctls(int bound, int unbound, long count)
{
	static const unsigned long cmds[] = {
		DFKV_IOC_BIND, DFKV_IOC_PUT, DFKV_IOC_GET, DFKV_IOC_EXIST,
		DFKV_IOC_REMOVE, DFKV_IOC_TOUCH, DFKV_IOC_PROBE, DFKV_IOC_LEASE,
		DFKV_IOC_RELEASE, DFKV_IOC_BATCH,
	};
	size_t vlen = 256 << 10;
	char *valid = malloc(vlen);
	void *hole = mmap(NULL, 1 << 20, PROT_NONE,
			  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	time_t start = time(NULL);
	union {
		uint64_t w[64];
		uint32_t size;
	} arg;
	long i;

	for (i = 0; i < (long)vlen; i++)
		valid[i] = (char)rnd();
	for (i = 0; i < count && !deadline_passed(start); i++) {
		unsigned long cmd = cmds[rnd() % (sizeof(cmds) / sizeof(cmds[0]))];
		unsigned int j;

		for (j = 0; j < 64; j++)
			arg.w[j] = rnd() & 1 ? rnd() % 4096 : rnd();
		for (j = 0; j < 64; j++)
			if (!(rnd() % 4))
				arg.w[j] = some_pointer(valid, vlen, hole);
		arg.size = some_size();
		if (!(rnd() % 8))	/* the size bits say little */
			cmd ^= (rnd() % 512) << _IOC_SIZESHIFT;
		if (!(rnd() % 16))
			cmd = _IOC(rnd() % 4, DFKV_IOC_MAGIC, rnd() % 16,
				   rnd() % 1024);
		ioctl(rnd() % 4 ? bound : unbound, cmd,
		      rnd() % 16 ? (void *)&arg : (void *)(uintptr_t)
		      some_pointer(valid, vlen, hole));
	}
	munmap(hole, 1 << 20);
	free(valid);
	return i;
}

static int drain_cb(const struct nlmsghdr *nlh, void *data)
{
	(void)nlh;
	(void)data;
	return MNL_CB_OK;
}

static long fuzz_netlink(struct dfkv_genl *g, long count)
{
	char buf[MNL_SOCKET_BUFFER_SIZE], junk[256];
	time_t start = time(NULL);
	long i;

	for (i = 0; i < count && !deadline_passed(start); i++) {
		uint16_t flags = rnd() % 4 ? 0 : NLM_F_DUMP;
		struct nlmsghdr *nlh = dfkv_genl_msg(g, buf, rnd() % 20, flags);
		int n = rnd() % 9, j;

		for (j = 0; j < n; j++) {
			uint16_t type = rnd() % (DFKV_A_MAX + 4);
			size_t len = rnd() % 3 ? rnd() % 16 : rnd() % sizeof(junk);
			size_t k;

			for (k = 0; k < len; k++)
				junk[k] = (char)rnd();
			if (!(rnd() % 8))
				type |= NLA_F_NESTED;
			if (!(rnd() % 4))
				mnl_attr_put_strz(nlh, type & ~NLA_F_NESTED,
						  rnd() % 2 ? NODE : "fz-other");
			else
				mnl_attr_put(nlh, type, len, junk);
		}
		dfkv_genl_talk(g, nlh, drain_cb, NULL);
	}
	return i;
}

static int tcp_connect(void)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(PORT) };
	struct timeval tv = { .tv_sec = 2 };
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (fd < 0)
		return -1;
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	if (connect(fd, (struct sockaddr *)&a, sizeof(a))) {
		close(fd);
		return -1;
	}
	return fd;
}

static long fuzz_tcp(long count)
{
	time_t start = time(NULL);
	uint8_t frame[4096];
	long i;

	for (i = 0; i < count && !deadline_passed(start); i++) {
		int fd = tcp_connect(), frames = 1 + rnd() % 8, f;

		if (fd < 0)
			continue;
		for (f = 0; f < frames; f++) {
			size_t len = DFKV_REQ_PREFIX_LEN + rnd() % 200, k, off;
			struct pollfd p = { .fd = fd, .events = POLLIN };
			char sink[4096];

			for (k = 0; k < len; k++)
				frame[k] = (uint8_t)rnd();
			if (rnd() % 4) {	/* a prefix that parses */
				uint64_t plen = rnd() % 3 ? len - DFKV_REQ_PREFIX_LEN :
					rnd();

				frame[0] = rnd() % 8 ? DFKV_EPOCH_TCP : (uint8_t)rnd();
				frame[1] = rnd() % 17;
				memcpy(frame + 42, &plen, 8);
			}
			for (off = 0; off < len; ) {	/* tiny writes */
				size_t n = rnd() % 2 ? len - off : 1 + rnd() % 7;

				if (n > len - off)
					n = len - off;
				if (send(fd, frame + off, n, MSG_NOSIGNAL) <= 0)
					break;
				off += n;
			}
			if (!(rnd() % 6))
				break;		/* abandoned midway */
			while (poll(&p, 1, 20) == 1 &&
			       recv(fd, sink, sizeof(sink), MSG_DONTWAIT) > 0)
				;
		}
		close(fd);
	}
	return i;
}

/* The node still works: byte-exact over /dev/dfkv and TCP. */
static int node_sane(void)
{
	struct dfkv_key k = dfkv_test_key(4242, 1);
	uint8_t h[DFKV_REQ_PREFIX_LEN] = { DFKV_EPOCH_TCP, DFKV_OP_EXIST };
	char val[3000], out[3000];
	struct dfkv_ioc_op o;
	uint8_t r[DFKV_RESP_PREFIX_LEN];
	int fd = dfkv_test_open(NODE), ok;

	if (fd < 0)
		return 0;
	dfkv_test_fill(val, sizeof(val), &k, 7);
	ok = !dfkv_test_put(fd, &k, val, sizeof(val), &o) &&
		o.status == DFKV_STATUS_OK &&
		!dfkv_test_get(fd, &k, out, sizeof(out), 0, 0, &o) &&
		o.status == DFKV_STATUS_OK && !memcmp(val, out, sizeof(val));
	close(fd);
	fd = tcp_connect();
	if (fd < 0)
		return 0;
	memcpy(h + 2, k.id, 16);
	memcpy(h + 18, &k.tenant, 8);
	ok = ok && send(fd, h, sizeof(h), 0) == sizeof(h) &&
		recv(fd, r, sizeof(r), MSG_WAITALL) == sizeof(r) &&
		r[1] == DFKV_STATUS_OK;
	close(fd);
	return ok;
}

FIXTURE(fuzz) {
	struct dfkv_genl g;
};

FIXTURE_SETUP(fuzz)
{
	const char *s = getenv("DFKV_FUZZ_SEED");

	seed = s ? strtoull(s, NULL, 0) : 0x5eedf00dcafeULL;
	if (!seed)
		seed = 1;
	TH_LOG("seed 0x%llx (DFKV_FUZZ_SEED replays a run)",
	       (unsigned long long)seed);
	ASSERT_EQ(0, dfkv_test_load());
	ASSERT_EQ(0, unshare(CLONE_NEWNET));
	ASSERT_EQ(0, system("ip link set lo up"));
	drop_sys_admin();
	ASSERT_EQ(0, dfkv_genl_open(&self->g));
	ASSERT_EQ(0, dfkv_test_node_add(&self->g, NODE, 32 << 20, 1 << 20, 1));
	ASSERT_EQ(0, dfkv_test_listen(&self->g, NODE, "127.0.0.1", PORT, 1));
}

FIXTURE_TEARDOWN(fuzz)
{
	dfkv_genl_close(&self->g);
}

TEST_F_TIMEOUT(fuzz, random_input_on_every_interface, 900)
{
	int bound = dfkv_test_open(NODE), unbound = open("/dev/dfkv", O_RDWR);
	long ioctls, msgs, streams;

	ASSERT_LE(0, bound);
	ASSERT_LE(0, unbound);
	ioctls = fuzz_ioctls(bound, unbound, 30000);
	close(bound);
	close(unbound);
	EXPECT_TRUE(node_sane());
	msgs = fuzz_netlink(&self->g, 5000);
	/* Random NODE_SETs may have changed it: make it the same again. */
	dfkv_test_node_del(&self->g, NODE);
	ASSERT_EQ(0, dfkv_test_node_add(&self->g, NODE, 32 << 20, 1 << 20, 1));
	ASSERT_EQ(0, dfkv_test_listen(&self->g, NODE, "127.0.0.1", PORT, 1));
	streams = fuzz_tcp(400);
	EXPECT_TRUE(node_sane());
	/* tools/vm/fuzz adds these up */
	TH_LOG("executions: %ld ioctls, %ld netlink messages, %ld TCP streams",
	       ioctls, msgs, streams);
	/* The namespace's nodes die with it. */
}

TEST_HARNESS_MAIN
