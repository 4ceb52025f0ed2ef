// SPDX-License-Identifier: GPL-2.0
/*
 * /dev/dfkv ioctls: every operation's success paths, SPEC.md's range
 * contract, immutability, leases, batches, and bad input (struct sizes,
 * flags, hostile lengths, bad pointers, unbound files, a buffer whose
 * fault never ends holding nothing of the node).
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <linux/userfaultfd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/uio.h>

#include "kselftest_harness.h"
#include "testlib.h"

#define NODE "t-ioctl"

FIXTURE(dev) {
	struct dfkv_genl g;
	int fd;
};

FIXTURE_SETUP(dev)
{
	ASSERT_EQ(0, dfkv_test_load());
	ASSERT_EQ(0, dfkv_genl_open(&self->g));
	dfkv_test_node_del(&self->g, NODE);
	ASSERT_EQ(0, dfkv_test_node_add(&self->g, NODE, 64 << 20, 0, 1));
	self->fd = dfkv_test_open(NODE);
	ASSERT_LE(0, self->fd);
}

FIXTURE_TEARDOWN(dev)
{
	close(self->fd);
	dfkv_test_node_del(&self->g, NODE);
	dfkv_genl_close(&self->g);
}

TEST_F(dev, put_get_roundtrip)
{
	static const uint64_t sizes[] = { 1, 4095, 4096, 65537, 1 << 20,
					  (5 << 20) + 3 };
	struct dfkv_ioc_op o;
	unsigned int i;

	for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		struct dfkv_key k = dfkv_test_key(7, i);
		uint64_t n = sizes[i];
		char *in = malloc(n), *out = malloc(n);

		ASSERT_NE(NULL, in);
		ASSERT_NE(NULL, out);
		dfkv_test_fill(in, n, &k, 1);
		ASSERT_EQ(0, dfkv_test_put(self->fd, &k, in, n, &o));
		EXPECT_EQ(DFKV_STATUS_OK, o.status);
		EXPECT_EQ(n, o.stored_len);
		memset(out, 0, n);
		ASSERT_EQ(0, dfkv_test_get(self->fd, &k, out, n, 0, 0, &o));
		EXPECT_EQ(DFKV_STATUS_OK, o.status);
		EXPECT_EQ(n, o.stored_len);
		EXPECT_EQ(n, o.data_len);
		EXPECT_TRUE(dfkv_test_verify(out, n, &k, 1));
		free(in);
		free(out);
	}
}

TEST_F(dev, range_contract)
{
	static const struct {
		uint64_t off, len;
		int status;
		uint64_t data_len;
	} t[] = {
		{ 0, 0, DFKV_STATUS_OK, 1000 },		/* whole value */
		{ 100, 0, DFKV_STATUS_OK, 900 },	/* remainder */
		{ 100, 50, DFKV_STATUS_OK, 50 },
		{ 990, 100, DFKV_STATUS_OK, 10 },	/* clamped */
		{ 0, UINT64_MAX, DFKV_STATUS_OK, 1000 },
		{ 1000, 0, DFKV_STATUS_OK, 0 },		/* at the end */
		{ 1000, 5, DFKV_STATUS_OK, 0 },
		{ 1001, 0, DFKV_STATUS_INVALID, 0 },	/* past the end */
		{ UINT64_MAX, 1, DFKV_STATUS_INVALID, 0 },
	};
	struct dfkv_key k = dfkv_test_key(7, 100);
	char in[1000], out[1000];
	struct dfkv_ioc_op o;
	unsigned int i;

	dfkv_test_fill(in, sizeof(in), &k, 2);
	ASSERT_EQ(0, dfkv_test_put(self->fd, &k, in, sizeof(in), &o));
	ASSERT_EQ(DFKV_STATUS_OK, o.status);
	for (i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		memset(out, 0, sizeof(out));
		ASSERT_EQ(0, dfkv_test_get(self->fd, &k, out, sizeof(out),
					   t[i].off, t[i].len, &o));
		EXPECT_EQ(t[i].status, o.status) TH_LOG("case %u", i);
		EXPECT_EQ(1000, o.stored_len) TH_LOG("case %u", i);
		EXPECT_EQ(t[i].data_len, o.data_len) TH_LOG("case %u", i);
		if (t[i].data_len)
			EXPECT_EQ(0, memcmp(out, in + t[i].off, t[i].data_len));
	}
}

TEST_F(dev, zero_length_put_invalid)
{
	struct dfkv_key k = dfkv_test_key(7, 200);
	struct dfkv_ioc_op o;
	char b = 1;

	ASSERT_EQ(0, dfkv_test_put(self->fd, &k, &b, 0, &o));
	EXPECT_EQ(DFKV_STATUS_INVALID, o.status);
	ASSERT_EQ(0, dfkv_test_put(self->fd, &k, NULL, 0, &o));
	EXPECT_EQ(DFKV_STATUS_INVALID, o.status);
	ASSERT_EQ(0, dfkv_test_simple(self->fd, DFKV_IOC_EXIST, &k, &o));
	EXPECT_EQ(DFKV_STATUS_NOT_FOUND, o.status);
}

TEST_F(dev, miss_exist_remove)
{
	struct dfkv_key k = dfkv_test_key(7, 300);
	struct dfkv_ioc_op o;
	char buf[64] = "value";

	ASSERT_EQ(0, dfkv_test_get(self->fd, &k, buf, sizeof(buf), 0, 0, &o));
	EXPECT_EQ(DFKV_STATUS_NOT_FOUND, o.status);
	EXPECT_EQ(0, o.stored_len);
	ASSERT_EQ(0, dfkv_test_simple(self->fd, DFKV_IOC_REMOVE, &k, &o));
	EXPECT_EQ(DFKV_STATUS_OK, o.status);	/* absent is fine */
	ASSERT_EQ(0, dfkv_test_put(self->fd, &k, buf, 5, &o));
	ASSERT_EQ(0, dfkv_test_simple(self->fd, DFKV_IOC_EXIST, &k, &o));
	EXPECT_EQ(DFKV_STATUS_OK, o.status);
	EXPECT_EQ(5, o.stored_len);
	ASSERT_EQ(0, dfkv_test_simple(self->fd, DFKV_IOC_REMOVE, &k, &o));
	EXPECT_EQ(DFKV_STATUS_OK, o.status);
	ASSERT_EQ(0, dfkv_test_simple(self->fd, DFKV_IOC_EXIST, &k, &o));
	EXPECT_EQ(DFKV_STATUS_NOT_FOUND, o.status);
	ASSERT_EQ(0, dfkv_test_get(self->fd, &k, buf, sizeof(buf), 0, 0, &o));
	EXPECT_EQ(DFKV_STATUS_NOT_FOUND, o.status);
}

TEST_F(dev, values_are_immutable)
{
	struct dfkv_key k = dfkv_test_key(7, 400);
	struct dfkv_ioc_op o;
	char out[16] = { 0 };

	ASSERT_EQ(0, dfkv_test_put(self->fd, &k, "first", 5, &o));
	ASSERT_EQ(DFKV_STATUS_OK, o.status);
	ASSERT_EQ(0, dfkv_test_put(self->fd, &k, "second!", 7, &o));
	EXPECT_EQ(DFKV_STATUS_OK, o.status);
	EXPECT_EQ(5, o.stored_len);
	ASSERT_EQ(0, dfkv_test_get(self->fd, &k, out, sizeof(out), 0, 0, &o));
	EXPECT_EQ(5, o.data_len);
	EXPECT_EQ(0, memcmp(out, "first", 5));
}

TEST_F(dev, get_capacity_too_small)
{
	struct dfkv_key k = dfkv_test_key(7, 500);
	struct dfkv_ioc_op o;
	char in[100], out[100];

	memset(in, 'x', sizeof(in));
	memset(out, 0, sizeof(out));
	ASSERT_EQ(0, dfkv_test_put(self->fd, &k, in, sizeof(in), &o));
	ASSERT_EQ(0, dfkv_test_get(self->fd, &k, out, 99, 0, 0, &o));
	EXPECT_EQ(DFKV_STATUS_TOO_LARGE, o.status);
	EXPECT_EQ(100, o.stored_len);
	EXPECT_EQ(0, o.data_len);
	EXPECT_EQ(0, out[0]);	/* nothing written */
}

TEST_F(dev, struct_sizes)
{
	struct {
		struct dfkv_ioc_op op;
		uint64_t tail[4];
	} big;
	struct dfkv_key k = dfkv_test_key(7, 600);
	struct dfkv_ioc_op o;

	memset(&o, 0, sizeof(o));
	o.size = DFKV_IOC_OP_SIZE_VER0 - 8;
	o.key = k;
	EXPECT_EQ(-1, ioctl(self->fd, DFKV_IOC_EXIST, &o));
	EXPECT_EQ(EINVAL, errno);
	o.size = 0;
	EXPECT_EQ(-1, ioctl(self->fd, DFKV_IOC_EXIST, &o));
	EXPECT_EQ(EINVAL, errno);

	memset(&big, 0, sizeof(big));
	big.op.size = sizeof(big);
	big.op.key = k;
	EXPECT_EQ(0, ioctl(self->fd, DFKV_IOC_EXIST, &big));	/* zero tail */
	EXPECT_EQ(DFKV_STATUS_NOT_FOUND, big.op.status);
	big.tail[2] = 1;
	EXPECT_EQ(-1, ioctl(self->fd, DFKV_IOC_EXIST, &big));
	EXPECT_EQ(E2BIG, errno);
}

/*
 * A binary built against the first version of each struct issues ioctl
 * numbers encoding that version's size: every ioctl works, with VER0
 * sizes (the node dispatches on type, number and direction).
 */
#define IOC_VER0(cmd, size) \
	(((cmd) & ~(_IOC_SIZEMASK << _IOC_SIZESHIFT)) | \
	 ((size) << _IOC_SIZESHIFT))

TEST_F(dev, first_version_binaries)
{
	struct dfkv_key k = dfkv_test_key(7, 650), keys[1] = { k };
	struct dfkv_ioc_batch b;
	struct dfkv_ioc_keys r;
	unsigned char ents[2][DFKV_IOC_OP_SIZE_VER0];
	struct dfkv_ioc_op o;
	char val[100], out[100];
	uint64_t lens[2];
	int fd;

	fd = open("/dev/dfkv", O_RDWR);
	ASSERT_LE(0, fd);
	{
		struct dfkv_ioc_bind bd = { .size = DFKV_IOC_BIND_SIZE_VER0 };

		strcpy(bd.node, NODE);
		ASSERT_EQ(0, ioctl(fd, IOC_VER0(DFKV_IOC_BIND,
						DFKV_IOC_BIND_SIZE_VER0), &bd));
	}
	memset(val, 'v', sizeof(val));
	memset(&o, 0, sizeof(o));
	o.size = DFKV_IOC_OP_SIZE_VER0;
	o.key = k;
	o.buf = (uintptr_t)val;
	o.length = sizeof(val);
	ASSERT_EQ(0, ioctl(fd, IOC_VER0(DFKV_IOC_PUT, DFKV_IOC_OP_SIZE_VER0),
			   &o));
	EXPECT_EQ(DFKV_STATUS_OK, o.status);
	memset(&o, 0, sizeof(o));
	o.size = DFKV_IOC_OP_SIZE_VER0;
	o.key = k;
	o.buf = (uintptr_t)out;
	o.cap = sizeof(out);
	o.iovcnt = 0xdead;	/* past VER0: neither read nor written */
	ASSERT_EQ(0, ioctl(fd, IOC_VER0(DFKV_IOC_GET, DFKV_IOC_OP_SIZE_VER0),
			   &o));
	EXPECT_EQ(DFKV_STATUS_OK, o.status);
	EXPECT_EQ(sizeof(val), o.data_len);
	EXPECT_EQ(0, memcmp(val, out, sizeof(val)));
	EXPECT_EQ(0xdead, o.iovcnt);
	memset(&o, 0, sizeof(o));
	o.size = DFKV_IOC_OP_SIZE_VER0;
	o.key = k;
	ASSERT_EQ(0, ioctl(fd, IOC_VER0(DFKV_IOC_EXIST, DFKV_IOC_OP_SIZE_VER0),
			   &o));
	EXPECT_EQ(sizeof(val), o.stored_len);

	memset(&r, 0, sizeof(r));
	r.size = DFKV_IOC_KEYS_SIZE_VER0;
	r.keys = (uintptr_t)keys;
	r.count = 1;
	r.results = (uintptr_t)lens;
	ASSERT_EQ(0, ioctl(fd, IOC_VER0(DFKV_IOC_PROBE,
					DFKV_IOC_KEYS_SIZE_VER0), &r));
	EXPECT_EQ(sizeof(val), lens[0]);
	r.results = 0;
	ASSERT_EQ(0, ioctl(fd, IOC_VER0(DFKV_IOC_TOUCH,
					DFKV_IOC_KEYS_SIZE_VER0), &r));
	EXPECT_EQ(DFKV_STATUS_OK, r.status);
	r.results = (uintptr_t)lens;
	ASSERT_EQ(0, ioctl(fd, IOC_VER0(DFKV_IOC_LEASE,
					DFKV_IOC_KEYS_SIZE_VER0), &r));
	EXPECT_EQ(DFKV_STATUS_OK, r.status);
	EXPECT_EQ(1, r.nr_hits);
	EXPECT_NE(0, r.lease_id);
	r.keys = 0;
	r.count = 0;
	r.results = 0;
	ASSERT_EQ(0, ioctl(fd, IOC_VER0(DFKV_IOC_RELEASE,
					DFKV_IOC_KEYS_SIZE_VER0), &r));
	EXPECT_EQ(DFKV_STATUS_OK, r.status);
	{
		/* no tenant of that hash on the node: refused, not ENOTTY */
		struct dfkv_ioc_auth au = { .size = DFKV_IOC_AUTH_SIZE_VER0,
					    .tenant_hash = 0x1234 };

		EXPECT_EQ(-1, ioctl(fd, IOC_VER0(DFKV_IOC_AUTH,
						 DFKV_IOC_AUTH_SIZE_VER0), &au));
		EXPECT_EQ(EACCES, errno);
	}

	/* A batch of two VER0 entries, packed at 88 bytes each. */
	memset(&o, 0, sizeof(o));
	o.size = DFKV_IOC_OP_SIZE_VER0;
	o.op = DFKV_OP_EXIST;
	o.key = k;
	memcpy(ents[0], &o, DFKV_IOC_OP_SIZE_VER0);
	o.op = DFKV_OP_REMOVE;
	memcpy(ents[1], &o, DFKV_IOC_OP_SIZE_VER0);
	memset(&b, 0, sizeof(b));
	b.size = DFKV_IOC_BATCH_SIZE_VER0;
	b.ops = (uintptr_t)ents;
	b.count = 2;
	b.op_size = DFKV_IOC_OP_SIZE_VER0;
	ASSERT_EQ(0, ioctl(fd, IOC_VER0(DFKV_IOC_BATCH,
					DFKV_IOC_BATCH_SIZE_VER0), &b));
	EXPECT_EQ(2, b.nr_done);
	memcpy(&o, ents[0], DFKV_IOC_OP_SIZE_VER0);
	EXPECT_EQ(DFKV_STATUS_OK, o.status);
	EXPECT_EQ(sizeof(val), o.stored_len);
	memcpy(&o, ents[1], DFKV_IOC_OP_SIZE_VER0);
	EXPECT_EQ(DFKV_STATUS_OK, o.status);
	memset(&o, 0, sizeof(o));
	o.key = k;
	o.size = DFKV_IOC_OP_SIZE_VER0;
	ASSERT_EQ(0, ioctl(fd, IOC_VER0(DFKV_IOC_EXIST, DFKV_IOC_OP_SIZE_VER0),
			   &o));
	EXPECT_EQ(DFKV_STATUS_NOT_FOUND, o.status);
	o.op = 0;	/* EXIST wrote its op back */
	ASSERT_EQ(0, ioctl(fd, IOC_VER0(DFKV_IOC_REMOVE, DFKV_IOC_OP_SIZE_VER0),
			   &o));
	EXPECT_EQ(DFKV_STATUS_OK, o.status);
	/* Same number, other direction: not an ioctl of dfkv. */
	EXPECT_EQ(-1, ioctl(fd, _IOR(DFKV_IOC_MAGIC, _IOC_NR(DFKV_IOC_GET),
				     struct dfkv_ioc_op), &o));
	EXPECT_EQ(ENOTTY, errno);
	close(fd);
}

TEST_F(dev, unknown_flags_and_ops)
{
	struct dfkv_key k = dfkv_test_key(7, 700);
	struct dfkv_ioc_op o;

	memset(&o, 0, sizeof(o));
	o.size = sizeof(o);
	o.key = k;
	o.flags = 1;
	EXPECT_EQ(-1, ioctl(self->fd, DFKV_IOC_EXIST, &o));
	EXPECT_EQ(EINVAL, errno);
	o.flags = 0;
	o.op = DFKV_OP_PUT;	/* does not match the ioctl */
	EXPECT_EQ(-1, ioctl(self->fd, DFKV_IOC_EXIST, &o));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(-1, ioctl(self->fd, _IO(DFKV_IOC_MAGIC, 99), &o));
	EXPECT_EQ(ENOTTY, errno);
}

TEST_F(dev, hostile_lengths)
{
	struct dfkv_key k = dfkv_test_key(7, 800);
	struct dfkv_ioc_op o;
	char buf[64];
	void *low;

	ASSERT_EQ(0, dfkv_test_put(self->fd, &k, buf, UINT64_MAX, &o));
	EXPECT_EQ(DFKV_STATUS_TOO_LARGE, o.status);
	ASSERT_EQ(0, dfkv_test_put(self->fd, &k, buf, (64ULL << 20) + 1, &o));
	EXPECT_EQ(DFKV_STATUS_TOO_LARGE, o.status);	/* > max_value */
	ASSERT_EQ(0, dfkv_test_simple(self->fd, DFKV_IOC_EXIST, &k, &o));
	EXPECT_EQ(DFKV_STATUS_NOT_FOUND, o.status);
	ASSERT_EQ(0, dfkv_test_put(self->fd, &k, "abc", 3, &o));
	/*
	 * A huge capacity is clamped to what the range needs.  The kernel
	 * still checks the buffer up to MAX_RW_COUNT, as read(2) does, so
	 * the buffer sits low in the address space: on the stack, up to
	 * 16 GiB below the top at random, 2 GiB past it could be EFAULT.
	 */
	low = mmap((void *)(4UL << 30), 4096, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
	ASSERT_NE(MAP_FAILED, low);
	EXPECT_EQ(0, dfkv_test_get(self->fd, &k, low, UINT64_MAX - 4096, 0, 0,
				   &o));
	EXPECT_EQ(DFKV_STATUS_OK, o.status);
	EXPECT_EQ(3, o.data_len);
	EXPECT_EQ(0, memcmp(low, "abc", 3));
	munmap(low, 4096);
}

TEST_F(dev, bad_pointers)
{
	struct dfkv_key k = dfkv_test_key(7, 900);
	void *hole = mmap(NULL, 1 << 20, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS,
			  -1, 0);
	struct dfkv_ioc_op o;
	char buf[16];

	ASSERT_NE(MAP_FAILED, hole);
	EXPECT_EQ(-1, dfkv_test_put(self->fd, &k, hole, 4096, &o));
	EXPECT_EQ(EFAULT, errno);
	EXPECT_EQ(-1, dfkv_test_put(self->fd, &k, (void *)8, 4096, &o));
	EXPECT_EQ(EFAULT, errno);
	ASSERT_EQ(0, dfkv_test_simple(self->fd, DFKV_IOC_EXIST, &k, &o));
	EXPECT_EQ(DFKV_STATUS_NOT_FOUND, o.status);	/* nothing stored */
	ASSERT_EQ(0, dfkv_test_put(self->fd, &k, "abcdef", 6, &o));
	EXPECT_EQ(-1, dfkv_test_get(self->fd, &k, hole, 4096, 0, 0, &o));
	EXPECT_EQ(EFAULT, errno);
	EXPECT_EQ(-1, ioctl(self->fd, DFKV_IOC_GET, hole));
	EXPECT_EQ(EFAULT, errno);
	/* The value is intact after the faults. */
	ASSERT_EQ(0, dfkv_test_get(self->fd, &k, buf, sizeof(buf), 0, 0, &o));
	EXPECT_EQ(6, o.data_len);
	EXPECT_EQ(0, memcmp(buf, "abcdef", 6));
	munmap(hole, 1 << 20);
}

TEST_F(dev, bind_rules)
{
	struct dfkv_ioc_bind b = { .size = sizeof(b) };
	struct dfkv_key k = dfkv_test_key(7, 1000);
	struct dfkv_ioc_op o;
	int fd = open("/dev/dfkv", O_RDWR);

	ASSERT_LE(0, fd);
	EXPECT_EQ(-1, dfkv_test_simple(fd, DFKV_IOC_EXIST, &k, &o));
	EXPECT_EQ(ENOTCONN, errno);
	strcpy(b.node, "no-such-node");
	EXPECT_EQ(-1, ioctl(fd, DFKV_IOC_BIND, &b));
	EXPECT_EQ(ENOENT, errno);
	memset(b.node, 'a', sizeof(b.node));	/* no NUL */
	EXPECT_EQ(-1, ioctl(fd, DFKV_IOC_BIND, &b));
	EXPECT_EQ(EINVAL, errno);
	strcpy(b.node, NODE);
	b.flags = 2;
	EXPECT_EQ(-1, ioctl(fd, DFKV_IOC_BIND, &b));
	EXPECT_EQ(EINVAL, errno);
	b.flags = 0;
	EXPECT_EQ(0, ioctl(fd, DFKV_IOC_BIND, &b));
	EXPECT_EQ(-1, ioctl(fd, DFKV_IOC_BIND, &b));
	EXPECT_EQ(EISCONN, errno);
	close(fd);
}

TEST_F(dev, probe_and_touch)
{
	struct dfkv_key keys[3] = { dfkv_test_key(8, 1), dfkv_test_key(8, 2),
				    dfkv_test_key(8, 3) };
	struct dfkv_ioc_keys r;
	struct dfkv_ioc_op o;
	uint64_t lens[3];

	ASSERT_EQ(0, dfkv_test_put(self->fd, &keys[0], "aa", 2, &o));
	ASSERT_EQ(0, dfkv_test_put(self->fd, &keys[2], "cccc", 4, &o));
	ASSERT_EQ(0, dfkv_test_keys(self->fd, DFKV_IOC_PROBE, keys, 3, lens, 0, &r));
	EXPECT_EQ(DFKV_STATUS_OK, r.status);
	EXPECT_EQ(2, lens[0]);
	EXPECT_EQ(0, lens[1]);
	EXPECT_EQ(4, lens[2]);
	ASSERT_EQ(0, dfkv_test_keys(self->fd, DFKV_IOC_TOUCH, keys, 3, NULL, 0, &r));
	EXPECT_EQ(DFKV_STATUS_OK, r.status);
	EXPECT_EQ(-1, dfkv_test_keys(self->fd, DFKV_IOC_PROBE, keys, 0, lens, 0,
				 &r));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(-1, dfkv_test_keys(self->fd, DFKV_IOC_PROBE, keys,
				 DFKV_KEYS_MAX + 1, lens, 0, &r));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(-1, dfkv_test_keys(self->fd, DFKV_IOC_PROBE, (void *)8, 3, lens,
				 0, &r));
	EXPECT_EQ(EFAULT, errno);
}

static int touch_ioctl(int fd, struct dfkv_key *keys, uint32_t n,
		       uint32_t flags, struct dfkv_ioc_keys *out)
{
	memset(out, 0, sizeof(*out));
	out->size = sizeof(*out);
	out->flags = flags;
	out->keys = (uintptr_t)keys;
	out->count = n;
	return ioctl(fd, DFKV_IOC_TOUCH, out);
}

#define WALK_KEYS	32
#define WALK_LEN	(256 << 10)

/*
 * The TOUCH walks seen through eviction order: an 8 MiB node (16 extents
 * of 512 KiB, two 256 KiB slots each) holds exactly WALK_KEYS values; all
 * are touched with the walk of flags, then one more PUT evicts the least
 * recently used.  Returns the index of the touched key that went, -1 when
 * not exactly one did.
 */
static int touch_walk_evicts(struct __test_metadata *_metadata,
			     FIXTURE_DATA(dev) *self, uint32_t flags)
{
	struct dfkv_key keys[WALK_KEYS], extra = dfkv_test_key(10, 999);
	struct dfkv_ioc_keys r;
	struct dfkv_ioc_op o;
	int i, gone = -1, nr_gone = 0;
	char *v = malloc(WALK_LEN);

	ASSERT_NE(NULL, v);
	memset(v, 0x5a, WALK_LEN);
	close(self->fd);
	ASSERT_EQ(0, dfkv_test_node_del(&self->g, NODE));
	ASSERT_EQ(0, dfkv_test_node_add(&self->g, NODE, 8 << 20, 0, 1));
	self->fd = dfkv_test_open(NODE);
	ASSERT_LE(0, self->fd);
	for (i = 0; i < WALK_KEYS; i++) {
		keys[i] = dfkv_test_key(10, i);
		ASSERT_EQ(0, dfkv_test_put(self->fd, &keys[i], v, WALK_LEN,
					   &o));
		ASSERT_EQ(DFKV_STATUS_OK, o.status);
	}
	ASSERT_EQ(0, dfkv_test_stat(&self->g, NODE, DFKV_STAT_EVICTIONS));
	ASSERT_EQ(0, touch_ioctl(self->fd, keys, WALK_KEYS, flags, &r));
	ASSERT_EQ(DFKV_STATUS_OK, r.status);
	ASSERT_EQ(0, dfkv_test_put(self->fd, &extra, v, WALK_LEN, &o));
	ASSERT_EQ(DFKV_STATUS_OK, o.status);
	EXPECT_EQ(1, dfkv_test_stat(&self->g, NODE, DFKV_STAT_EVICTIONS));
	for (i = 0; i < WALK_KEYS; i++) {
		ASSERT_EQ(0, dfkv_test_simple(self->fd, DFKV_IOC_EXIST,
					      &keys[i], &o));
		if (o.status == DFKV_STATUS_NOT_FOUND) {
			gone = i;
			nr_gone++;
		}
	}
	free(v);
	return nr_gone == 1 ? gone : -1;
}

/* Forward (0): the first key ends least recently used, and goes first. */
TEST_F(dev, touch_forward_walk_evicts_the_first_key)
{
	EXPECT_EQ(0, touch_walk_evicts(_metadata, self, 0));
}

/* Reverse: the first key (the shared prefix) ends most recently used. */
TEST_F(dev, touch_reverse_walk_evicts_the_last_key)
{
	EXPECT_EQ(WALK_KEYS - 1,
		  touch_walk_evicts(_metadata, self, DFKV_TOUCH_REVERSE));
}

/* The walk is TOUCH's flag alone; unknown flags are refused. */
TEST_F(dev, touch_flags_checked)
{
	struct dfkv_key k = dfkv_test_key(10, 1000);
	struct dfkv_ioc_keys r;
	uint64_t len;

	EXPECT_EQ(0, touch_ioctl(self->fd, &k, 1, DFKV_TOUCH_REVERSE, &r));
	EXPECT_EQ(DFKV_STATUS_OK, r.status);
	EXPECT_EQ(-1, touch_ioctl(self->fd, &k, 1, DFKV_TOUCH_REVERSE << 1,
				  &r));
	EXPECT_EQ(EINVAL, errno);
	ASSERT_EQ(0, dfkv_test_keys(self->fd, DFKV_IOC_PROBE, &k, 1, &len, 0, &r));
	r.flags = DFKV_TOUCH_REVERSE;
	EXPECT_EQ(-1, ioctl(self->fd, DFKV_IOC_PROBE, &r));
	EXPECT_EQ(EINVAL, errno);
}

#define FLOOD_FILES	20

/*
 * A lease flood (20,000 live leases) does not slow the rest: the table's
 * work is counted in lease_scans, which moves by exactly the leases ended
 * (one for a RELEASE, a file's own for its close, the lapsed for expiry),
 * never by the others.  A key named twice is refused and pins nothing.
 */
TEST_F(dev, lease_flood_costs_only_what_ends)
{
	struct dfkv_key keys[3] = { dfkv_test_key(9, 50), dfkv_test_key(9, 51),
				    dfkv_test_key(9, 50) };
	int fds[FLOOD_FILES], f, i;
	struct dfkv_ioc_keys r;
	struct dfkv_ioc_op o;
	uint64_t lens[3], id = 0;
	int64_t scans;

	ASSERT_EQ(0, dfkv_test_put(self->fd, &keys[0], "a", 1, &o));
	ASSERT_EQ(0, dfkv_test_put(self->fd, &keys[1], "b", 1, &o));
	ASSERT_EQ(0, dfkv_test_keys(self->fd, DFKV_IOC_LEASE, keys, 3, lens, 0, &r));
	EXPECT_EQ(DFKV_STATUS_INVALID, r.status);
	EXPECT_EQ(0, r.lease_id);
	EXPECT_EQ(0, dfkv_test_stat(&self->g, NODE, DFKV_STAT_PINS));
	for (f = 0; f < FLOOD_FILES; f++) {
		fds[f] = dfkv_test_open(NODE);
		ASSERT_LE(0, fds[f]);
		for (i = 0; i < 1000; i++) {
			ASSERT_EQ(0, dfkv_test_keys(fds[f], DFKV_IOC_LEASE, keys, 2,
						lens, 600000, &r));
			ASSERT_EQ(DFKV_STATUS_OK, r.status);
			id = r.lease_id;
		}
	}
	EXPECT_EQ(FLOOD_FILES * 1000,
		  dfkv_test_stat(&self->g, NODE, DFKV_STAT_LEASES));
	scans = dfkv_test_stat(&self->g, NODE, DFKV_STAT_LEASE_SCANS);
	memset(&r, 0, sizeof(r));
	r.size = sizeof(r);
	r.lease_id = id;
	ASSERT_EQ(0, ioctl(fds[FLOOD_FILES - 1], DFKV_IOC_RELEASE, &r));
	EXPECT_EQ(DFKV_STATUS_OK, r.status);
	EXPECT_EQ(scans + 1,
		  dfkv_test_stat(&self->g, NODE, DFKV_STAT_LEASE_SCANS));
	close(fds[0]);
	EXPECT_EQ(scans + 1001,
		  dfkv_test_stat(&self->g, NODE, DFKV_STAT_LEASE_SCANS));
	/* 100 lapse while 18,999 live ones wait: the reaper ends 100. */
	for (i = 0; i < 100; i++)
		ASSERT_EQ(0, dfkv_test_keys(self->fd, DFKV_IOC_LEASE, keys, 2, lens,
					50, &r));
	for (i = 0; i < 100 && dfkv_test_stat(&self->g, NODE,
					      DFKV_STAT_LEASE_SCANS) <
				scans + 1101; i++)
		usleep(100 * 1000);
	usleep(300 * 1000);	/* reaper rounds over the live ones */
	EXPECT_EQ(scans + 1101,
		  dfkv_test_stat(&self->g, NODE, DFKV_STAT_LEASE_SCANS));
	for (f = 1; f < FLOOD_FILES; f++)
		close(fds[f]);
	EXPECT_EQ(0, dfkv_test_stat(&self->g, NODE, DFKV_STAT_LEASES));
	EXPECT_EQ(0, dfkv_test_stat(&self->g, NODE, DFKV_STAT_PINS));
}

TEST_F(dev, lease_release_expiry)
{
	struct dfkv_key keys[4] = { dfkv_test_key(9, 1), dfkv_test_key(9, 2),
				    dfkv_test_key(9, 3), dfkv_test_key(9, 4) };
	struct dfkv_ioc_keys r;
	struct dfkv_ioc_op o;
	uint64_t lens[4] = { 0 }, id;

	ASSERT_EQ(0, dfkv_test_put(self->fd, &keys[0], "a", 1, &o));
	ASSERT_EQ(0, dfkv_test_put(self->fd, &keys[1], "bb", 2, &o));
	ASSERT_EQ(0, dfkv_test_put(self->fd, &keys[3], "dddd", 4, &o));
	/* Leading hits only: stops at the first miss. */
	ASSERT_EQ(0, dfkv_test_keys(self->fd, DFKV_IOC_LEASE, keys, 4, lens, 0, &r));
	EXPECT_EQ(DFKV_STATUS_OK, r.status);
	EXPECT_EQ(2, r.nr_hits);
	EXPECT_EQ(1, lens[0]);
	EXPECT_EQ(2, lens[1]);
	EXPECT_EQ(0, lens[3]);
	EXPECT_NE(0, r.lease_id);
	EXPECT_EQ(1, dfkv_test_stat(&self->g, NODE, DFKV_STAT_LEASES));
	id = r.lease_id;
	memset(&r, 0, sizeof(r));
	r.size = sizeof(r);
	r.lease_id = id;
	ASSERT_EQ(0, ioctl(self->fd, DFKV_IOC_RELEASE, &r));
	EXPECT_EQ(DFKV_STATUS_OK, r.status);
	ASSERT_EQ(0, ioctl(self->fd, DFKV_IOC_RELEASE, &r));
	EXPECT_EQ(DFKV_STATUS_LEASE_EXPIRED, r.status);
	EXPECT_EQ(0, dfkv_test_stat(&self->g, NODE, DFKV_STAT_LEASES));

	/* A short lease lapses by itself. */
	ASSERT_EQ(0, dfkv_test_keys(self->fd, DFKV_IOC_LEASE, keys, 2, lens, 100,
				&r));
	EXPECT_EQ(2, r.nr_hits);
	id = r.lease_id;
	usleep(800 * 1000);
	memset(&r, 0, sizeof(r));
	r.size = sizeof(r);
	r.lease_id = id;
	ASSERT_EQ(0, ioctl(self->fd, DFKV_IOC_RELEASE, &r));
	EXPECT_EQ(DFKV_STATUS_LEASE_EXPIRED, r.status);
	EXPECT_LE(1, dfkv_test_stat(&self->g, NODE, DFKV_STAT_LEASE_EXPIRIES));

	/* Another file cannot release this file's lease. */
	ASSERT_EQ(0, dfkv_test_keys(self->fd, DFKV_IOC_LEASE, keys, 2, lens, 0, &r));
	id = r.lease_id;
	{
		int fd2 = dfkv_test_open(NODE);

		ASSERT_LE(0, fd2);
		memset(&r, 0, sizeof(r));
		r.size = sizeof(r);
		r.lease_id = id;
		ASSERT_EQ(0, ioctl(fd2, DFKV_IOC_RELEASE, &r));
		EXPECT_EQ(DFKV_STATUS_LEASE_EXPIRED, r.status);
		close(fd2);
	}
	/* Closing the file drops its leases. */
	close(self->fd);
	self->fd = dfkv_test_open(NODE);
	EXPECT_EQ(0, dfkv_test_stat(&self->g, NODE, DFKV_STAT_LEASES));
	EXPECT_EQ(0, dfkv_test_stat(&self->g, NODE, DFKV_STAT_PINS));
}

TEST_F(dev, batch)
{
	struct dfkv_key k[3] = { dfkv_test_key(10, 1), dfkv_test_key(10, 2),
				 dfkv_test_key(10, 3) };
	struct dfkv_ioc_op ops[6];
	struct dfkv_ioc_batch b;
	char out[8] = { 0 };

	memset(ops, 0, sizeof(ops));
	for (int i = 0; i < 6; i++)
		ops[i].size = sizeof(ops[0]);
	ops[0].op = DFKV_OP_PUT;
	ops[0].key = k[0];
	ops[0].buf = (uintptr_t)"one";
	ops[0].length = 3;
	ops[1].op = DFKV_OP_PUT;
	ops[1].key = k[1];
	ops[1].buf = (uintptr_t)"x";
	ops[1].length = 0;			/* INVALID, batch goes on */
	ops[2].op = DFKV_OP_GET;
	ops[2].key = k[0];
	ops[2].buf = (uintptr_t)out;
	ops[2].cap = sizeof(out);
	ops[3].op = DFKV_OP_EXIST;
	ops[3].key = k[2];
	ops[4].op = DFKV_OP_REMOVE;
	ops[4].key = k[0];
	ops[5].op = DFKV_OP_EXIST;
	ops[5].key = k[0];
	memset(&b, 0, sizeof(b));
	b.size = sizeof(b);
	b.ops = (uintptr_t)ops;
	b.count = 6;
	b.op_size = sizeof(ops[0]);
	ASSERT_EQ(0, ioctl(self->fd, DFKV_IOC_BATCH, &b));
	EXPECT_EQ(6, b.nr_done);
	EXPECT_EQ(DFKV_STATUS_OK, ops[0].status);
	EXPECT_EQ(DFKV_STATUS_INVALID, ops[1].status);
	EXPECT_EQ(DFKV_STATUS_OK, ops[2].status);
	EXPECT_EQ(3, ops[2].data_len);
	EXPECT_EQ(0, memcmp(out, "one", 3));
	EXPECT_EQ(DFKV_STATUS_NOT_FOUND, ops[3].status);
	EXPECT_EQ(DFKV_STATUS_OK, ops[4].status);
	EXPECT_EQ(DFKV_STATUS_NOT_FOUND, ops[5].status);

	/* A bad entry stops the batch; nr_done says where. */
	ops[1].op = 77;
	ops[1].length = 1;
	EXPECT_EQ(-1, ioctl(self->fd, DFKV_IOC_BATCH, &b));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(1, b.nr_done);
	b.count = DFKV_BATCH_MAX + 1;
	EXPECT_EQ(-1, ioctl(self->fd, DFKV_IOC_BATCH, &b));
	EXPECT_EQ(EINVAL, errno);
	b.count = 2;
	b.op_size = 8;
	EXPECT_EQ(-1, ioctl(self->fd, DFKV_IOC_BATCH, &b));
	EXPECT_EQ(EINVAL, errno);
}

TEST_F(dev, scatter_gather)
{
	struct dfkv_key k = dfkv_test_key(7, 1200);
	char in[10000], out[10000] = { 0 };
	struct iovec put_iov[3] = {
		{ in, 1 }, { in + 1, 4999 }, { in + 5000, 5000 },
	};
	struct iovec get_iov[4] = {
		{ out, 3000 }, { out + 3000, 1 }, { out + 3001, 0 },
		{ out + 3001, 6999 },
	};
	struct dfkv_ioc_op o;

	dfkv_test_fill(in, sizeof(in), &k, 9);
	memset(&o, 0, sizeof(o));
	o.size = sizeof(o);
	o.key = k;
	o.flags = DFKV_OP_F_IOV;
	o.buf = (uintptr_t)put_iov;
	o.iovcnt = 3;
	o.length = sizeof(in) - 1;		/* must match the total */
	EXPECT_EQ(-1, ioctl(self->fd, DFKV_IOC_PUT, &o));
	EXPECT_EQ(EINVAL, errno);
	o.length = sizeof(in);
	ASSERT_EQ(0, ioctl(self->fd, DFKV_IOC_PUT, &o));
	EXPECT_EQ(DFKV_STATUS_OK, o.status);
	EXPECT_EQ(sizeof(in), o.stored_len);

	memset(&o, 0, sizeof(o));
	o.size = sizeof(o);
	o.key = k;
	o.flags = DFKV_OP_F_IOV;
	o.buf = (uintptr_t)get_iov;
	o.iovcnt = 4;
	ASSERT_EQ(0, ioctl(self->fd, DFKV_IOC_GET, &o));
	EXPECT_EQ(DFKV_STATUS_OK, o.status);
	EXPECT_EQ(sizeof(in), o.data_len);
	EXPECT_EQ(0, memcmp(in, out, sizeof(in)));
	/* A range into fewer bytes than it holds is TOO_LARGE. */
	o.iovcnt = 2;
	ASSERT_EQ(0, ioctl(self->fd, DFKV_IOC_GET, &o));
	EXPECT_EQ(DFKV_STATUS_TOO_LARGE, o.status);
	o.offset = 9000;
	ASSERT_EQ(0, ioctl(self->fd, DFKV_IOC_GET, &o));
	EXPECT_EQ(DFKV_STATUS_OK, o.status);
	EXPECT_EQ(1000, o.data_len);
	EXPECT_EQ(0, memcmp(out, in + 9000, 1000));

	/* Bad uses: cap with an iovec, other ops, bad arrays. */
	o.cap = 10;
	EXPECT_EQ(-1, ioctl(self->fd, DFKV_IOC_GET, &o));
	EXPECT_EQ(EINVAL, errno);
	o.cap = 0;
	o.iovcnt = 100000;
	EXPECT_EQ(-1, ioctl(self->fd, DFKV_IOC_GET, &o));
	EXPECT_EQ(EINVAL, errno);
	o.iovcnt = 2;
	o.buf = 8;
	EXPECT_EQ(-1, ioctl(self->fd, DFKV_IOC_GET, &o));
	EXPECT_EQ(EFAULT, errno);
	o.buf = (uintptr_t)get_iov;
	EXPECT_EQ(-1, ioctl(self->fd, DFKV_IOC_EXIST, &o));
	EXPECT_EQ(EINVAL, errno);
	o.__reserved = 1;
	EXPECT_EQ(-1, ioctl(self->fd, DFKV_IOC_GET, &o));
	EXPECT_EQ(EINVAL, errno);
}

TEST_F(dev, deleted_node_fails_cleanly)
{
	struct dfkv_key k = dfkv_test_key(7, 1100);
	struct dfkv_ioc_op o;

	ASSERT_EQ(0, dfkv_test_put(self->fd, &k, "abc", 3, &o));
	ASSERT_EQ(0, dfkv_test_node_del(&self->g, NODE));
	EXPECT_EQ(-1, dfkv_test_simple(self->fd, DFKV_IOC_EXIST, &k, &o));
	EXPECT_EQ(ENODEV, errno);
	/* A new node of the same name is a new, empty cache. */
	ASSERT_EQ(0, dfkv_test_node_add(&self->g, NODE, 8 << 20, 0, 1));
	close(self->fd);
	self->fd = dfkv_test_open(NODE);
	ASSERT_LE(0, self->fd);
	ASSERT_EQ(0, dfkv_test_simple(self->fd, DFKV_IOC_EXIST, &k, &o));
	EXPECT_EQ(DFKV_STATUS_NOT_FOUND, o.status);
}

#define SLOW_LEN	(64 << 10)

struct slow_put {
	int fd;
	void *buf;
	int rc, err;
};

static void *slow_put_run(void *arg)
{
	struct dfkv_key k = dfkv_test_key(7, 1200);
	struct slow_put *sp = arg;
	struct dfkv_ioc_op o;

	sp->rc = dfkv_test_put(sp->fd, &k, sp->buf, SLOW_LEN, &o);
	sp->err = errno;
	return NULL;
}

struct uffd_resolver {
	int uffd;
	void *buf;
	int done;	/* set once the fault was resolved */
};

/* A watchdog: resolve the fault after 60 s, so a regression cannot hang. */
static void *uffd_resolve_late(void *arg)
{
	struct uffd_resolver *r = arg;
	struct uffdio_zeropage z = {
		.range = { .start = (uintptr_t)r->buf, .len = SLOW_LEN },
	};
	int i;

	for (i = 0; i < 600 && !__atomic_load_n(&r->done, __ATOMIC_ACQUIRE); i++)
		usleep(100 * 1000);
	if (!__atomic_exchange_n(&r->done, 1, __ATOMIC_ACQ_REL))
		ioctl(r->uffd, UFFDIO_ZEROPAGE, &z);
	return NULL;
}

/*
 * A PUT from a buffer whose page fault does not end (userfaultfd; FUSE
 * behaves the same) holds nothing of the node while it waits: NODE_DEL
 * completes before the fault is resolved, and the PUT then fails with
 * ENODEV.
 */
TEST_F(dev, slow_faulting_buffer_holds_no_node)
{
	struct uffdio_api api = { .api = UFFD_API };
	struct uffdio_register reg = { .mode = UFFDIO_REGISTER_MODE_MISSING };
	struct uffdio_zeropage z = { .range = { .len = SLOW_LEN } };
	struct uffd_resolver res = { 0 };
	struct slow_put sp = { 0 };
	pthread_t put, watchdog;
	struct uffd_msg msg;
	struct pollfd pfd;
	int deleted_first;

	res.uffd = syscall(SYS_userfaultfd, O_CLOEXEC);
	ASSERT_LE(0, res.uffd);
	ASSERT_EQ(0, ioctl(res.uffd, UFFDIO_API, &api));
	res.buf = mmap(NULL, SLOW_LEN, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, res.buf);
	reg.range.start = (uintptr_t)res.buf;
	reg.range.len = SLOW_LEN;
	ASSERT_EQ(0, ioctl(res.uffd, UFFDIO_REGISTER, &reg));
	sp.fd = self->fd;
	sp.buf = res.buf;
	ASSERT_EQ(0, pthread_create(&put, NULL, slow_put_run, &sp));
	/* The PUT is now waiting in the fault. */
	pfd.fd = res.uffd;
	pfd.events = POLLIN;
	ASSERT_EQ(1, poll(&pfd, 1, 60000));
	ASSERT_EQ(sizeof(msg), read(res.uffd, &msg, sizeof(msg)));
	EXPECT_EQ(UFFD_EVENT_PAGEFAULT, msg.event);
	ASSERT_EQ(0, pthread_create(&watchdog, NULL, uffd_resolve_late, &res));
	EXPECT_EQ(0, dfkv_test_node_del(&self->g, NODE));
	deleted_first = !__atomic_exchange_n(&res.done, 1, __ATOMIC_ACQ_REL);
	EXPECT_TRUE(deleted_first);
	if (deleted_first) {
		z.range.start = (uintptr_t)res.buf;
		EXPECT_EQ(0, ioctl(res.uffd, UFFDIO_ZEROPAGE, &z));
	}
	pthread_join(watchdog, NULL);
	pthread_join(put, NULL);
	EXPECT_EQ(-1, sp.rc);
	EXPECT_EQ(ENODEV, sp.err);
	munmap(res.buf, SLOW_LEN);
	close(res.uffd);
	ASSERT_EQ(0, dfkv_test_node_add(&self->g, NODE, 8 << 20, 0, 1));
}

TEST_HARNESS_MAIN

#define LEASE_NODE	"t-lease-rd"
#define LEASE_KEYS	4
#define LEASE_LEN	(64 << 10)

/* Wait (up to 30 s, a bound only) for a node counter to reach want. */
static int stat_reaches(struct dfkv_genl *g, const char *node, int stat,
			int64_t want)
{
	int i;

	for (i = 0; i < 300; i++) {
		if (dfkv_test_stat(g, node, stat) == want)
			return 1;
		usleep(100 * 1000);
	}
	return 0;
}

/*
 * LEASE_KEYS blocks on disk dev only: PUT into a node with a RAM tier in
 * front of it, flushed, then the node restarted gracefully (the rebuilt
 * blocks are not in RAM).  Returns a file bound to the new node.
 */
static int disk_only_blocks(struct __test_metadata *_metadata,
			    struct dfkv_genl *g, const char *dev,
			    struct dfkv_key *keys)
{
	struct dfkv_ioc_op o;
	char *v = malloc(LEASE_LEN);
	int fd, i;

	ASSERT_NE(NULL, v);
	dfkv_test_node_del(g, LEASE_NODE);
	ASSERT_EQ(0, dfkv_test_node_add(g, LEASE_NODE, 16 << 20, 0, 1));
	ASSERT_EQ(0, dfkv_test_disk_add(g, LEASE_NODE, dev, "d0", 1))
		TH_LOG("%s", g->errmsg);
	fd = dfkv_test_open(LEASE_NODE);
	ASSERT_LE(0, fd);
	for (i = 0; i < LEASE_KEYS; i++) {
		keys[i] = dfkv_test_key(11, i);
		dfkv_test_fill(v, LEASE_LEN, &keys[i], 0);
		ASSERT_EQ(0, dfkv_test_put(fd, &keys[i], v, LEASE_LEN, &o));
		ASSERT_EQ(DFKV_STATUS_OK, o.status);
	}
	free(v);
	ASSERT_TRUE(stat_reaches(g, LEASE_NODE, DFKV_STAT_FLUSHED,
				 LEASE_KEYS));
	close(fd);
	ASSERT_EQ(0, dfkv_test_node_del(g, LEASE_NODE));
	ASSERT_EQ(0, dfkv_test_node_add(g, LEASE_NODE, 16 << 20, 0, 1));
	ASSERT_EQ(0, dfkv_test_disk_add(g, LEASE_NODE, dev, "d0", 0))
		TH_LOG("%s", g->errmsg);
	fd = dfkv_test_open(LEASE_NODE);
	ASSERT_LE(0, fd);
	EXPECT_EQ(0, dfkv_test_stat(g, LEASE_NODE, DFKV_STAT_PROMOTED));
	return fd;
}

/*
 * A LEASE of blocks held only on disk starts their reads into RAM at
 * once (SPEC.md 6): counted in LEASE_READS, and once they are promoted
 * the GETs that follow are RAM hits, byte-exact, with no disk read of
 * their own.  Blocks already in RAM start nothing.
 */
TEST_F(dev, lease_reads_disk_only_blocks_into_ram)
{
	const char *img = "/tmp/dfkv-ioctl-lease.img";
	struct dfkv_key keys[LEASE_KEYS];
	uint64_t lens[LEASE_KEYS];
	struct dfkv_ioc_keys r;
	struct dfkv_ioc_op o;
	char dev[64], cmd[128], *v = malloc(LEASE_LEN + 1);
	int fd, i;

	ASSERT_NE(NULL, v);
	ASSERT_EQ(0, dfkv_test_new_loop(img, dev, sizeof(dev)));
	fd = disk_only_blocks(_metadata, &self->g, dev, keys);
	ASSERT_EQ(0, dfkv_test_keys(fd, DFKV_IOC_LEASE, keys, LEASE_KEYS, lens, 0,
				&r));
	ASSERT_EQ(DFKV_STATUS_OK, r.status);
	ASSERT_EQ(LEASE_KEYS, r.nr_hits);
	EXPECT_EQ(LEASE_KEYS,
		  dfkv_test_stat(&self->g, LEASE_NODE, DFKV_STAT_LEASE_READS));
	EXPECT_TRUE(stat_reaches(&self->g, LEASE_NODE, DFKV_STAT_PROMOTED,
				 LEASE_KEYS));
	for (i = 0; i < LEASE_KEYS; i++) {
		ASSERT_EQ(0, dfkv_test_get(fd, &keys[i], v, LEASE_LEN + 1, 0, 0,
					   &o));
		EXPECT_EQ(DFKV_STATUS_OK, o.status);
		EXPECT_EQ(LEASE_LEN, o.data_len);
		EXPECT_TRUE(dfkv_test_verify(v, LEASE_LEN, &keys[i], 0));
	}
	EXPECT_EQ(LEASE_KEYS,
		  dfkv_test_stat(&self->g, LEASE_NODE, DFKV_STAT_RAM_HITS));
	EXPECT_EQ(0, dfkv_test_stat(&self->g, LEASE_NODE, DFKV_STAT_RAM_MISSES));
	EXPECT_EQ(0, dfkv_test_stat(&self->g, LEASE_NODE, DFKV_STAT_COALESCED));
	EXPECT_EQ(LEASE_KEYS,
		  dfkv_test_stat(&self->g, LEASE_NODE, DFKV_STAT_PROMOTED));
	/* in RAM now: a second LEASE reads nothing */
	ASSERT_EQ(0, dfkv_test_keys(fd, DFKV_IOC_LEASE, keys, LEASE_KEYS, lens, 0,
				&r));
	EXPECT_EQ(LEASE_KEYS, r.nr_hits);
	EXPECT_EQ(LEASE_KEYS,
		  dfkv_test_stat(&self->g, LEASE_NODE, DFKV_STAT_LEASE_READS));
	close(fd);
	free(v);
	EXPECT_EQ(0, dfkv_test_node_del(&self->g, LEASE_NODE));
	snprintf(cmd, sizeof(cmd), "losetup -d %s; rm -f %s", dev, img);
	EXPECT_EQ(0, system(cmd));
}

/*
 * The read a LEASE started fails (the disk's table swapped to dm-error):
 * the GETs that follow are misses, never errors or wrong bytes.
 */
TEST_F(dev, failed_lease_read_makes_a_miss)
{
	const char *img = "/tmp/dfkv-ioctl-lease-err.img";
	const char *dm = "/dev/mapper/dfkvleaserr";
	struct dfkv_key keys[LEASE_KEYS];
	uint64_t lens[LEASE_KEYS];
	struct dfkv_ioc_keys r;
	struct dfkv_ioc_op o;
	char dev[64], cmd[256], *v = malloc(LEASE_LEN + 1);
	int fd, i, gone;

	ASSERT_NE(NULL, v);
	setenv("DM_DISABLE_UDEV", "1", 1);	/* no udev in the VM */
	ASSERT_EQ(0, dfkv_test_new_loop(img, dev, sizeof(dev)));
	snprintf(cmd, sizeof(cmd),
		 "modprobe dm_mod 2>/dev/null; dmsetup create dfkvleaserr --table '0 131072 linear %s 0'",
		 dev);
	ASSERT_EQ(0, system(cmd));
	fd = disk_only_blocks(_metadata, &self->g, dm, keys);
	ASSERT_EQ(0, system("dmsetup suspend dfkvleaserr && dmsetup reload dfkvleaserr --table '0 131072 error' && dmsetup resume dfkvleaserr"));
	ASSERT_EQ(0, dfkv_test_keys(fd, DFKV_IOC_LEASE, keys, LEASE_KEYS, lens, 0,
				&r));
	ASSERT_EQ(DFKV_STATUS_OK, r.status);
	EXPECT_EQ(LEASE_KEYS, r.nr_hits);
	EXPECT_EQ(LEASE_KEYS,
		  dfkv_test_stat(&self->g, LEASE_NODE, DFKV_STAT_LEASE_READS));
	/* The failed reads remove their blocks: wait until all are gone. */
	for (i = 0, gone = 0; i < 300 && gone < LEASE_KEYS; i++) {
		int j;

		for (j = 0, gone = 0; j < LEASE_KEYS; j++) {
			ASSERT_EQ(0, dfkv_test_simple(fd, DFKV_IOC_EXIST,
						      &keys[j], &o));
			gone += o.status == DFKV_STATUS_NOT_FOUND;
		}
		if (gone < LEASE_KEYS)
			usleep(100 * 1000);
	}
	EXPECT_EQ(LEASE_KEYS, gone);
	for (i = 0; i < LEASE_KEYS; i++) {
		ASSERT_EQ(0, dfkv_test_get(fd, &keys[i], v, LEASE_LEN + 1, 0, 0,
					   &o));
		EXPECT_EQ(DFKV_STATUS_NOT_FOUND, o.status);
		EXPECT_EQ(0, o.data_len);
	}
	EXPECT_EQ(0, dfkv_test_stat(&self->g, LEASE_NODE, DFKV_STAT_PROMOTED));
	close(fd);
	free(v);
	EXPECT_EQ(0, dfkv_test_node_del(&self->g, LEASE_NODE));
	snprintf(cmd, sizeof(cmd),
		 "dmsetup remove --retry dfkvleaserr; losetup -d %s; rm -f %s",
		 dev, img);
	EXPECT_EQ(0, system(cmd));
}
