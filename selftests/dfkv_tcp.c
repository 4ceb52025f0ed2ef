// SPDX-License-Identifier: GPL-2.0
/*
 * The in-kernel TCP server (wire epoch 6) seen from a raw socket: every
 * op, pipelining with FIFO replies, the range contract, bad frames
 * (unknown epoch or op, hostile payload lengths, truncation), deadlines,
 * dripping peers (headers and payloads: the RAM they hold is capped and
 * they are dropped; on a disk-only node the stages a peer's PUTs and
 * unread GET replies hold are capped per peer address), same-key
 * followers parked without sleeping workers, the connection limit,
 * leases tied to a connection, IPv6, listener administration and node
 * deletion with live connections.
 */
#include <dirent.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <arpa/inet.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/resource.h>
#include <sys/socket.h>

#include "kselftest_harness.h"
#include "testlib.h"

#define NODE "t-tcp"
#define PORT 7411

/* A stat of the test's node reaching want (ge: at least want), 60 s at most. */
static int wait_stat(struct dfkv_genl *g, int stat, int64_t want, int ge)
{
	return dfkv_test_wait_stat(g, NODE, stat, want, ge);
}

struct resp {
	int status;
	uint64_t stored_len;
	uint64_t data_len;
};

static void le64(uint8_t *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = v >> (8 * i);
}

static uint64_t rd64(const uint8_t *p)
{
	uint64_t v = 0;

	for (int i = 7; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

static int connect_to(const char *addr, uint16_t port)
{
	struct sockaddr_in6 s6 = { .sin6_family = AF_INET6,
				   .sin6_port = htons(port) };
	struct sockaddr_in s4 = { .sin_family = AF_INET,
				  .sin_port = htons(port) };
	int one = 1, fd;

	if (inet_pton(AF_INET, addr, &s4.sin_addr) == 1) {
		fd = socket(AF_INET, SOCK_STREAM, 0);
		if (fd >= 0 && connect(fd, (void *)&s4, sizeof(s4)) == 0)
			goto ok;
	} else if (inet_pton(AF_INET6, addr, &s6.sin6_addr) == 1) {
		fd = socket(AF_INET6, SOCK_STREAM, 0);
		if (fd >= 0 && connect(fd, (void *)&s6, sizeof(s6)) == 0)
			goto ok;
	} else {
		return -1;
	}
	if (fd >= 0)
		close(fd);
	return -1;
ok:
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	return fd;
}

static int write_all(int fd, const void *buf, size_t len)
{
	const uint8_t *p = buf;

	while (len) {
		ssize_t n = send(fd, p, len, MSG_NOSIGNAL);

		if (n <= 0)
			return -1;
		p += n;
		len -= n;
	}
	return 0;
}

/* Read exactly len bytes; 0, or -1 on EOF/error/DFKV_TEST_WAIT_MS of
 * silence. */
static int read_all(int fd, void *buf, size_t len)
{
	uint8_t *p = buf;

	while (len) {
		struct pollfd pfd = { .fd = fd, .events = POLLIN };
		ssize_t n;

		if (poll(&pfd, 1, DFKV_TEST_WAIT_MS) != 1)
			return -1;
		n = recv(fd, p, len, 0);
		if (n <= 0)
			return -1;
		p += n;
		len -= n;
	}
	return 0;
}

static void prefix(uint8_t *h, int epoch, int op, const struct dfkv_key *k,
		   uint64_t off, uint64_t len, uint64_t plen)
{
	memset(h, 0, DFKV_REQ_PREFIX_LEN);
	h[0] = epoch;
	h[1] = op;
	if (k) {
		memcpy(h + 2, k->id, 16);
		le64(h + 18, k->tenant);
	}
	le64(h + 26, off);
	le64(h + 34, len);
	le64(h + 42, plen);
}

static int send_req(int fd, int op, const struct dfkv_key *k, uint64_t off,
		    uint64_t len, const void *payload, uint64_t plen)
{
	uint8_t h[DFKV_REQ_PREFIX_LEN];

	prefix(h, DFKV_EPOCH_TCP, op, k, off, len, plen);
	if (write_all(fd, h, sizeof(h)))
		return -1;
	return plen ? write_all(fd, payload, plen) : 0;
}

/* Read a reply; its data (if any) into buf (cap bytes at most). */
static int recv_resp(int fd, struct resp *r, void *buf, size_t cap)
{
	uint8_t h[DFKV_RESP_PREFIX_LEN];

	if (read_all(fd, h, sizeof(h)) || h[0] != DFKV_EPOCH_TCP)
		return -1;
	r->status = h[1];
	r->stored_len = rd64(h + 2);
	r->data_len = rd64(h + 10);
	if (r->data_len > cap)
		return -1;
	return r->data_len ? read_all(fd, buf, r->data_len) : 0;
}

FIXTURE(tcp) {
	struct dfkv_genl g;
	int fd;
};

FIXTURE_SETUP(tcp)
{
	ASSERT_EQ(0, dfkv_test_load());
	ASSERT_EQ(0, dfkv_genl_open(&self->g));
	dfkv_test_node_del(&self->g, NODE);
	ASSERT_EQ(0, dfkv_test_node_add(&self->g, NODE, 64 << 20, 0, 1));
	ASSERT_EQ(0, dfkv_test_listen(&self->g, NODE, "127.0.0.1", PORT, 1));
	self->fd = connect_to("127.0.0.1", PORT);
	ASSERT_LE(0, self->fd);
}

FIXTURE_TEARDOWN(tcp)
{
	if (self->fd >= 0)
		close(self->fd);
	dfkv_test_node_del(&self->g, NODE);
	dfkv_genl_close(&self->g);
}

TEST_F(tcp, put_get_byte_exact_and_shared_with_ioctl)
{
	static const uint64_t sizes[] = { 1, 4096, 65537, (5 << 20) + 3 };
	int64_t out0 = dfkv_test_stat(&self->g, NODE, DFKV_STAT_BYTES_OUT);
	uint64_t sent = 0;
	struct resp r;

	for (unsigned int i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		struct dfkv_key k = dfkv_test_key(20, i);
		uint64_t n = sizes[i];
		char *in = malloc(n), *out = malloc(n);
		struct dfkv_ioc_op o;
		int dev;

		dfkv_test_fill(in, n, &k, 3);
		ASSERT_EQ(0, send_req(self->fd, DFKV_OP_PUT, &k, 0, 0, in, n));
		ASSERT_EQ(0, recv_resp(self->fd, &r, NULL, 0));
		EXPECT_EQ(DFKV_STATUS_OK, r.status);
		EXPECT_EQ(n, r.stored_len);
		ASSERT_EQ(0, send_req(self->fd, DFKV_OP_GET, &k, 0, 0, NULL, 0));
		ASSERT_EQ(0, recv_resp(self->fd, &r, out, n));
		EXPECT_EQ(DFKV_STATUS_OK, r.status);
		EXPECT_EQ(n, r.data_len);
		EXPECT_TRUE(dfkv_test_verify(out, n, &k, 3));
		/* Bytes served over TCP count in bytes_out. */
		sent += n;
		EXPECT_EQ(out0 + (int64_t)sent,
			  dfkv_test_stat(&self->g, NODE, DFKV_STAT_BYTES_OUT));
		/* The same block through /dev/dfkv. */
		dev = dfkv_test_open(NODE);
		ASSERT_LE(0, dev);
		memset(out, 0, n);
		ASSERT_EQ(0, dfkv_test_get(dev, &k, out, n, 0, 0, &o));
		EXPECT_EQ(n, o.data_len);
		EXPECT_TRUE(dfkv_test_verify(out, n, &k, 3));
		sent += n;
		close(dev);
		free(in);
		free(out);
	}
}

TEST_F(tcp, range_contract_exist_remove)
{
	struct dfkv_key k = dfkv_test_key(21, 1);
	char in[1000], out[1000];
	struct resp r;

	dfkv_test_fill(in, sizeof(in), &k, 4);
	ASSERT_EQ(0, send_req(self->fd, DFKV_OP_PUT, &k, 0, 0, in, sizeof(in)));
	ASSERT_EQ(0, recv_resp(self->fd, &r, NULL, 0));
	ASSERT_EQ(0, send_req(self->fd, DFKV_OP_GET, &k, 990, 100, NULL, 0));
	ASSERT_EQ(0, recv_resp(self->fd, &r, out, sizeof(out)));
	EXPECT_EQ(DFKV_STATUS_OK, r.status);
	EXPECT_EQ(10, r.data_len);
	EXPECT_EQ(1000, r.stored_len);
	EXPECT_EQ(0, memcmp(out, in + 990, 10));
	ASSERT_EQ(0, send_req(self->fd, DFKV_OP_GET, &k, 1000, 0, NULL, 0));
	ASSERT_EQ(0, recv_resp(self->fd, &r, out, sizeof(out)));
	EXPECT_EQ(DFKV_STATUS_OK, r.status);
	EXPECT_EQ(0, r.data_len);
	ASSERT_EQ(0, send_req(self->fd, DFKV_OP_GET, &k, 1001, 0, NULL, 0));
	ASSERT_EQ(0, recv_resp(self->fd, &r, out, sizeof(out)));
	EXPECT_EQ(DFKV_STATUS_INVALID, r.status);
	EXPECT_EQ(1000, r.stored_len);
	ASSERT_EQ(0, send_req(self->fd, DFKV_OP_EXIST, &k, 0, 0, NULL, 0));
	ASSERT_EQ(0, recv_resp(self->fd, &r, NULL, 0));
	EXPECT_EQ(DFKV_STATUS_OK, r.status);
	EXPECT_EQ(1000, r.stored_len);
	ASSERT_EQ(0, send_req(self->fd, DFKV_OP_REMOVE, &k, 0, 0, NULL, 0));
	ASSERT_EQ(0, recv_resp(self->fd, &r, NULL, 0));
	EXPECT_EQ(DFKV_STATUS_OK, r.status);
	ASSERT_EQ(0, send_req(self->fd, DFKV_OP_GET, &k, 0, 0, NULL, 0));
	ASSERT_EQ(0, recv_resp(self->fd, &r, out, sizeof(out)));
	EXPECT_EQ(DFKV_STATUS_NOT_FOUND, r.status);
	EXPECT_EQ(0, r.stored_len);
}

TEST_F(tcp, pipelined_replies_in_order)
{
	enum { N = 200 };
	char val[300], out[300];
	struct resp r;
	int i;

	/* Everything goes out before any reply is read. */
	for (i = 0; i < N; i++) {
		struct dfkv_key k = dfkv_test_key(22, i / 2);

		if (i % 2 == 0) {
			dfkv_test_fill(val, 1 + i, &k, 5);
			ASSERT_EQ(0, send_req(self->fd, DFKV_OP_PUT, &k, 0, 0,
					      val, 1 + i));
		} else {
			ASSERT_EQ(0, send_req(self->fd, DFKV_OP_GET, &k, 0, 0,
					      NULL, 0));
		}
	}
	for (i = 0; i < N; i++) {
		struct dfkv_key k = dfkv_test_key(22, i / 2);

		ASSERT_EQ(0, recv_resp(self->fd, &r, out, sizeof(out)));
		EXPECT_EQ(DFKV_STATUS_OK, r.status);
		if (i % 2) {
			EXPECT_EQ(i, r.data_len);	/* the PUT before it */
			EXPECT_TRUE(dfkv_test_verify(out, r.data_len, &k, 5));
		}
	}
}

TEST_F(tcp, keys_ops_hello_stats)
{
	struct dfkv_key k[3] = { dfkv_test_key(23, 1), dfkv_test_key(23, 2),
				 dfkv_test_key(23, 3) };
	uint8_t keys[3 * 24], out[4096];
	struct resp r;
	int i;

	for (i = 0; i < 3; i++) {
		le64(keys + 24 * i, k[i].tenant);
		memcpy(keys + 24 * i + 8, k[i].id, 16);
	}
	ASSERT_EQ(0, send_req(self->fd, DFKV_OP_PUT, &k[0], 0, 0, "aaaa", 4));
	ASSERT_EQ(0, recv_resp(self->fd, &r, NULL, 0));
	ASSERT_EQ(0, send_req(self->fd, DFKV_OP_PUT, &k[2], 0, 0, "cc", 2));
	ASSERT_EQ(0, recv_resp(self->fd, &r, NULL, 0));

	ASSERT_EQ(0, send_req(self->fd, DFKV_OP_PROBE, NULL, 0, 0, keys, 72));
	ASSERT_EQ(0, recv_resp(self->fd, &r, out, sizeof(out)));
	EXPECT_EQ(DFKV_STATUS_OK, r.status);
	ASSERT_EQ(24, r.data_len);
	EXPECT_EQ(4, rd64(out));
	EXPECT_EQ(0, rd64(out + 8));
	EXPECT_EQ(2, rd64(out + 16));

	ASSERT_EQ(0, send_req(self->fd, DFKV_OP_TOUCH, NULL, 0, 0, keys, 72));
	ASSERT_EQ(0, recv_resp(self->fd, &r, out, sizeof(out)));
	EXPECT_EQ(DFKV_STATUS_OK, r.status);
	EXPECT_EQ(0, r.data_len);
	/* offset is the walk: 1 reverse; any other value is INVALID */
	ASSERT_EQ(0, send_req(self->fd, DFKV_OP_TOUCH, NULL,
			      DFKV_TOUCH_WALK_REVERSE, 0, keys, 72));
	ASSERT_EQ(0, recv_resp(self->fd, &r, out, sizeof(out)));
	EXPECT_EQ(DFKV_STATUS_OK, r.status);
	ASSERT_EQ(0, send_req(self->fd, DFKV_OP_TOUCH, NULL, 2, 0, keys, 72));
	ASSERT_EQ(0, recv_resp(self->fd, &r, out, sizeof(out)));
	EXPECT_EQ(DFKV_STATUS_INVALID, r.status);
	EXPECT_EQ(0, r.data_len);

	/* LEASE: id, then the leading hits only (stops at k[1]). */
	ASSERT_EQ(0, send_req(self->fd, DFKV_OP_LEASE, NULL, 0, 0, keys, 72));
	ASSERT_EQ(0, recv_resp(self->fd, &r, out, sizeof(out)));
	EXPECT_EQ(DFKV_STATUS_OK, r.status);
	ASSERT_EQ(16, r.data_len);
	EXPECT_NE(0, rd64(out));
	EXPECT_EQ(4, rd64(out + 8));
	EXPECT_EQ(1, dfkv_test_stat(&self->g, NODE, DFKV_STAT_LEASES));
	ASSERT_EQ(0, send_req(self->fd, DFKV_OP_RELEASE, NULL, rd64(out), 0,
			      NULL, 0));
	ASSERT_EQ(0, recv_resp(self->fd, &r, NULL, 0));
	EXPECT_EQ(DFKV_STATUS_OK, r.status);
	ASSERT_EQ(0, send_req(self->fd, DFKV_OP_RELEASE, NULL, 12345, 0, NULL,
			      0));
	ASSERT_EQ(0, recv_resp(self->fd, &r, NULL, 0));
	EXPECT_EQ(DFKV_STATUS_LEASE_EXPIRED, r.status);

	/* A lease ends with its connection. */
	ASSERT_EQ(0, send_req(self->fd, DFKV_OP_LEASE, NULL, 0, 0, keys, 24));
	ASSERT_EQ(0, recv_resp(self->fd, &r, out, sizeof(out)));
	EXPECT_EQ(1, dfkv_test_stat(&self->g, NODE, DFKV_STAT_LEASES));
	close(self->fd);
	self->fd = -1;
	for (i = 0; i < 50 && dfkv_test_stat(&self->g, NODE,
					     DFKV_STAT_LEASES); i++)
		usleep(100 * 1000);
	EXPECT_EQ(0, dfkv_test_stat(&self->g, NODE, DFKV_STAT_LEASES));
	EXPECT_TRUE(wait_stat(&self->g, DFKV_STAT_PINS, 0, 0));

	self->fd = connect_to("127.0.0.1", PORT);
	ASSERT_LE(0, self->fd);
	ASSERT_EQ(0, send_req(self->fd, DFKV_OP_HELLO, NULL, 0, 0, "\1\0\0\0\0\0\0\0", 8));
	ASSERT_EQ(0, recv_resp(self->fd, &r, out, sizeof(out)));
	EXPECT_EQ(DFKV_STATUS_OK, r.status);
	ASSERT_EQ(DFKV_HELLO_REPLY_MIN + strlen(NODE), r.data_len);
	EXPECT_EQ(0, memcmp(out + DFKV_HELLO_REPLY_MIN, NODE, strlen(NODE)));
	EXPECT_EQ(64 << 20, rd64(out + 8));
	ASSERT_EQ(0, send_req(self->fd, DFKV_OP_STATS, NULL, 0, 0, NULL, 0));
	ASSERT_EQ(0, recv_resp(self->fd, &r, out, sizeof(out) - 1));
	EXPECT_EQ(DFKV_STATUS_OK, r.status);
	out[r.data_len] = 0;
	EXPECT_NE(NULL, strstr((char *)out, "objects 2\n"));
}

TEST_F(tcp, zero_length_put_keeps_connection)
{
	struct dfkv_key k = dfkv_test_key(24, 1);
	struct resp r;

	ASSERT_EQ(0, send_req(self->fd, DFKV_OP_PUT, &k, 0, 0, NULL, 0));
	ASSERT_EQ(0, recv_resp(self->fd, &r, NULL, 0));
	EXPECT_EQ(DFKV_STATUS_INVALID, r.status);
	ASSERT_EQ(0, send_req(self->fd, DFKV_OP_EXIST, &k, 0, 0, NULL, 0));
	ASSERT_EQ(0, recv_resp(self->fd, &r, NULL, 0));
	EXPECT_EQ(DFKV_STATUS_NOT_FOUND, r.status);
}

/* Frames the stream cannot go on from: INVALID, then the close. */
TEST_F(tcp, bad_frames_are_invalid_and_close)
{
	static const struct { int epoch, op; uint64_t plen; } bad[] = {
		{ 5, DFKV_OP_GET, 0 },			/* unknown epoch */
		{ 7, DFKV_OP_GET, 0 },			/* RDMA epoch on TCP */
		{ DFKV_EPOCH_TCP, 99, 0 },		/* unknown op */
		{ DFKV_EPOCH_TCP, 0, 0 },
		{ DFKV_EPOCH_TCP, DFKV_OP_PUT, (64 << 20) + 1 },
		{ DFKV_EPOCH_TCP, DFKV_OP_PUT, UINT64_MAX },
		{ DFKV_EPOCH_TCP, DFKV_OP_GET, 5 },	/* GET has no payload */
		{ DFKV_EPOCH_TCP, DFKV_OP_PROBE, 25 },	/* not whole keys */
		{ DFKV_EPOCH_TCP, DFKV_OP_PROBE, 0 },
		{ DFKV_EPOCH_TCP, DFKV_OP_PROBE, 24 * (DFKV_KEYS_MAX + 1) },
		{ DFKV_EPOCH_TCP, DFKV_OP_HELLO, 1 << 20 },
	};
	struct dfkv_key k = dfkv_test_key(25, 1);
	int64_t errs = dfkv_test_stat(&self->g, NODE, DFKV_STAT_PROTO_ERRORS);
	uint8_t h[DFKV_REQ_PREFIX_LEN];
	struct resp r;

	for (unsigned int i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		int fd = connect_to("127.0.0.1", PORT);

		ASSERT_LE(0, fd);
		prefix(h, bad[i].epoch, bad[i].op, &k, 0, 0, bad[i].plen);
		ASSERT_EQ(0, write_all(fd, h, sizeof(h)));
		ASSERT_EQ(0, recv_resp(fd, &r, NULL, 0)) TH_LOG("case %u", i);
		EXPECT_EQ(DFKV_STATUS_INVALID, r.status) TH_LOG("case %u", i);
		EXPECT_TRUE(dfkv_test_peer_closed(fd)) TH_LOG("case %u", i);
		close(fd);
	}
	EXPECT_EQ(errs + 11, dfkv_test_stat(&self->g, NODE,
					   DFKV_STAT_PROTO_ERRORS));
	/* The node serves the next connection as ever. */
	ASSERT_EQ(0, send_req(self->fd, DFKV_OP_PUT, &k, 0, 0, "ok", 2));
	ASSERT_EQ(0, recv_resp(self->fd, &r, NULL, 0));
	EXPECT_EQ(DFKV_STATUS_OK, r.status);
}

TEST_F(tcp, truncated_put_is_not_published)
{
	struct dfkv_key k = dfkv_test_key(26, 1);
	uint8_t h[DFKV_REQ_PREFIX_LEN], half[4096] = { 1 };
	int fd = connect_to("127.0.0.1", PORT), i;
	struct resp r;

	ASSERT_LE(0, fd);
	prefix(h, DFKV_EPOCH_TCP, DFKV_OP_PUT, &k, 0, 0, 1 << 20);
	ASSERT_EQ(0, write_all(fd, h, sizeof(h)));
	ASSERT_EQ(0, write_all(fd, half, sizeof(half)));
	close(fd);
	for (i = 0; i < 50 && dfkv_test_stat(&self->g, NODE,
					     DFKV_STAT_CONNS) > 1; i++)
		usleep(100 * 1000);
	EXPECT_EQ(1, dfkv_test_stat(&self->g, NODE, DFKV_STAT_CONNS));
	ASSERT_EQ(0, send_req(self->fd, DFKV_OP_EXIST, &k, 0, 0, NULL, 0));
	ASSERT_EQ(0, recv_resp(self->fd, &r, NULL, 0));
	EXPECT_EQ(DFKV_STATUS_NOT_FOUND, r.status);
	/* The key is free for a complete PUT. */
	ASSERT_EQ(0, send_req(self->fd, DFKV_OP_PUT, &k, 0, 0, "full", 4));
	ASSERT_EQ(0, recv_resp(self->fd, &r, NULL, 0));
	EXPECT_EQ(DFKV_STATUS_OK, r.status);
	EXPECT_EQ(4, r.stored_len);
}

TEST_F(tcp, dripping_peer_blocks_nobody_and_meets_its_deadline)
{
	struct dfkv_key k = dfkv_test_key(27, 1);
	uint8_t h[DFKV_REQ_PREFIX_LEN];
	int drip, silent, i;
	struct resp r;
	char out[8];

	ASSERT_EQ(0, dfkv_test_node_set_u32(&self->g, NODE,
					    DFKV_A_NODE_FIRST_REQUEST_MS, 1500));
	ASSERT_EQ(0, dfkv_test_node_set_u32(&self->g, NODE,
					    DFKV_A_NODE_FRAME_MS, 1500));
	silent = connect_to("127.0.0.1", PORT);
	drip = connect_to("127.0.0.1", PORT);
	ASSERT_LE(0, silent);
	ASSERT_LE(0, drip);
	prefix(h, DFKV_EPOCH_TCP, DFKV_OP_GET, &k, 0, 0, 0);
	for (i = 0; i < 10; i++) {
		ASSERT_EQ(0, write_all(drip, h + i, 1));
		/* Others are served between the drops. */
		ASSERT_EQ(0, send_req(self->fd, DFKV_OP_PUT, &k, 0, 0, "x", 1));
		ASSERT_EQ(0, recv_resp(self->fd, &r, NULL, 0));
		ASSERT_EQ(0, send_req(self->fd, DFKV_OP_GET, &k, 0, 0, NULL, 0));
		ASSERT_EQ(0, recv_resp(self->fd, &r, out, sizeof(out)));
		EXPECT_EQ(DFKV_STATUS_OK, r.status);
		usleep(50 * 1000);
	}
	/* Neither the silent nor the dripping peer outlives the deadline. */
	EXPECT_TRUE(dfkv_test_peer_closed(silent));
	EXPECT_TRUE(dfkv_test_peer_closed(drip));
	EXPECT_LE(2, dfkv_test_stat(&self->g, NODE, DFKV_STAT_DEADLINE_DROPS));
	close(silent);
	close(drip);
}

/* One task's kernel stack is in fn. */
static int stack_in(const char *path, const char *fn)
{
	char line[256];
	int in = 0;
	FILE *f;

	f = fopen(path, "r");
	if (!f)
		return 0;
	while (!in && fgets(line, sizeof(line), f))
		in = strstr(line, fn) != NULL;
	fclose(f);
	return in;
}

/*
 * Tasks whose kernel stack is in fn (a sleeping worker, say): every
 * thread of every process, as /proc lists them (kernel threads are
 * processes of their own).
 */
static int tasks_in(const char *fn)
{
	struct dirent *p, *t;
	char path[sizeof(p->d_name) + 16], tpath[2 * sizeof(path)];
	DIR *procs, *tasks;
	int n = 0;

	procs = opendir("/proc");
	if (!procs)
		return 0;
	while ((p = readdir(procs))) {
		if (p->d_name[0] < '1' || p->d_name[0] > '9')
			continue;
		snprintf(path, sizeof(path), "/proc/%s/task", p->d_name);
		tasks = opendir(path);
		if (!tasks)
			continue;	/* gone meanwhile */
		while ((t = readdir(tasks))) {
			if (t->d_name[0] == '.')
				continue;
			snprintf(tpath, sizeof(tpath), "%s/%s/stack", path,
				 t->d_name);
			n += stack_in(tpath, fn);
		}
		closedir(tasks);
	}
	closedir(procs);
	return n;
}

/* No task sleeps in fn over a couple of seconds of samples. */
static int never_in(const char *fn)
{
	int i;

	for (i = 0; i < 20; i++) {
		if (tasks_in(fn))
			return 0;
		usleep(100 * 1000);
	}
	return 1;
}

#define DRIPPERS	1024
#define DRIP_LEN	(4 << 20)

/*
 * 1024 peers send 4 MiB PUT headers and drip: the RAM held for them stays
 * under the node's cap (an eighth of 64 MiB; the rest are BUSY), another
 * tenant's block stays readable meanwhile, every dripper is dropped by
 * the frame deadline with nothing left reserved, and a normal PUT
 * succeeds then.
 */
TEST_F_TIMEOUT(tcp, dripping_puts_hold_bounded_ram_and_are_dropped, 600)
{
	struct dfkv_key victim = dfkv_test_key(90, 1), k;
	static int fds[DRIPPERS];
	uint8_t h[DFKV_REQ_PREFIX_LEN];
	char val[5000], out[5000];
	struct rlimit rl;
	struct resp r;
	int i;

	ASSERT_EQ(0, getrlimit(RLIMIT_NOFILE, &rl));
	rl.rlim_cur = rl.rlim_max;
	ASSERT_EQ(0, setrlimit(RLIMIT_NOFILE, &rl));
	ASSERT_LE(DRIPPERS + 64, rl.rlim_cur);
	memset(val, 'v', sizeof(val));
	ASSERT_EQ(0, send_req(self->fd, DFKV_OP_PUT, &victim, 0, 0, val,
			      sizeof(val)));
	ASSERT_EQ(0, recv_resp(self->fd, &r, NULL, 0));
	ASSERT_EQ(DFKV_STATUS_OK, r.status);
	ASSERT_EQ(0, dfkv_test_node_set_u32(&self->g, NODE,
					    DFKV_A_NODE_MAX_CONNS, 4096));
	/*
	 * No deadline while the drippers connect, however slow the machine
	 * (a debug kernel under emulation takes longer than a frame): each
	 * is either holding its reservation or refused BUSY when counted.
	 */
	ASSERT_EQ(0, dfkv_test_node_set_u32(&self->g, NODE,
					    DFKV_A_NODE_FRAME_MS, 3600000));
	ASSERT_EQ(0, dfkv_test_node_set_u32(&self->g, NODE,
					    DFKV_A_NODE_MIN_RATE, 0));
	for (i = 0; i < DRIPPERS; i++) {
		fds[i] = connect_to("127.0.0.1", PORT);
		ASSERT_LE(0, fds[i]) TH_LOG("dripper %d", i);
		k = dfkv_test_key(91, i);
		prefix(h, DFKV_EPOCH_TCP, DFKV_OP_PUT, &k, 0, 0, DRIP_LEN);
		ASSERT_EQ(0, write_all(fds[i], h, sizeof(h)));
		ASSERT_EQ(0, write_all(fds[i], "d", 1));
	}
	EXPECT_TRUE(wait_stat(&self->g, DFKV_STAT_RECV_BUSY, DRIPPERS - 2, 1));
	EXPECT_GE(8 << 20, dfkv_test_stat(&self->g, NODE,
					  DFKV_STAT_RECV_RESERVED));
	ASSERT_EQ(0, send_req(self->fd, DFKV_OP_GET, &victim, 0, 0, NULL, 0));
	ASSERT_EQ(0, recv_resp(self->fd, &r, out, sizeof(out)));
	EXPECT_EQ(DFKV_STATUS_OK, r.status);
	EXPECT_EQ(0, memcmp(val, out, sizeof(val)));
	/* Every dripper goes at the frame deadline, in force at once. */
	ASSERT_EQ(0, dfkv_test_node_set_u32(&self->g, NODE,
					    DFKV_A_NODE_FRAME_MS, 4000));
	EXPECT_TRUE(wait_stat(&self->g, DFKV_STAT_CONNS, 1, 0));
	EXPECT_LE(DRIPPERS, dfkv_test_stat(&self->g, NODE,
					   DFKV_STAT_DEADLINE_DROPS));
	EXPECT_EQ(0, dfkv_test_stat(&self->g, NODE, DFKV_STAT_RECV_RESERVED));
	for (i = 0; i < DRIPPERS; i++)
		close(fds[i]);
	k = dfkv_test_key(90, 2);
	ASSERT_EQ(0, send_req(self->fd, DFKV_OP_PUT, &k, 0, 0, val,
			      sizeof(val)));
	ASSERT_EQ(0, recv_resp(self->fd, &r, NULL, 0));
	EXPECT_EQ(DFKV_STATUS_OK, r.status);
	EXPECT_TRUE(wait_stat(&self->g, DFKV_STAT_PINS, 0, 0));
}

/*
 * A connection to 127.0.0.1:port from source address src, with a
 * receive buffer of rcvbuf bytes (0: the default); fd or -1.
 */
static int connect_from(const char *src, uint16_t port, int rcvbuf)
{
	struct sockaddr_in from = { .sin_family = AF_INET };
	struct sockaddr_in to = { .sin_family = AF_INET,
				  .sin_port = htons(port),
				  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	int one = 1, fd = socket(AF_INET, SOCK_STREAM, 0);

	if (fd < 0)
		return -1;
	if (inet_pton(AF_INET, src, &from.sin_addr) != 1 ||
	    (rcvbuf && setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf,
				  sizeof(rcvbuf))) ||
	    bind(fd, (void *)&from, sizeof(from)) ||
	    connect(fd, (void *)&to, sizeof(to))) {
		close(fd);
		return -1;
	}
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	return fd;
}

#define SLOW_NODE_RAM	(256 << 20)
#define HONEST_PUTS	96
#define HONEST_LEN	(1 << 20)
#define SLOW_MAX	128

/*
 * Rounds of slow peers on 127.0.0.1 (6 announcing 48 MiB PUTs, 32
 * announcing 4 MiB, 128 announcing 64 KiB), each sending a byte now and
 * then, on a 256 MiB node: meanwhile an honest client on 127.0.0.2 has
 * every one of its 96 PUTs of 1 MiB stored and reads every one back
 * exact (then removes them, so no round evicts another's).  The rate floor then drops every slow peer (the frame deadline
 * is out of reach) and nothing stays reserved.
 */
TEST_F_TIMEOUT(tcp, slow_peers_never_refuse_another_peers_puts, 900)
{
	static const struct { int n; uint64_t len; } rounds[] = {
		{ 6, 48 << 20 }, { 32, 4 << 20 }, { SLOW_MAX, 64 << 10 },
	};
	uint8_t h[DFKV_REQ_PREFIX_LEN];
	int slow[SLOW_MAX], honest, r_i, i;
	int64_t drops;
	struct dfkv_key k;
	struct resp r;
	char *in, *out;

	in = malloc(HONEST_LEN);
	out = malloc(HONEST_LEN);
	ASSERT_NE(NULL, in);
	ASSERT_NE(NULL, out);
	close(self->fd);
	self->fd = -1;
	ASSERT_EQ(0, dfkv_test_node_del(&self->g, NODE));
	ASSERT_EQ(0, dfkv_test_node_add(&self->g, NODE, SLOW_NODE_RAM, 0, 1));
	ASSERT_EQ(0, dfkv_test_listen(&self->g, NODE, "127.0.0.1", PORT, 1));
	ASSERT_EQ(0, dfkv_test_node_set_u32(&self->g, NODE,
					    DFKV_A_NODE_FRAME_MS, 3600000));
	honest = connect_from("127.0.0.2", PORT, 0);
	ASSERT_LE(0, honest);

	for (r_i = 0; r_i < 3; r_i++) {
		int n = rounds[r_i].n;

		drops = dfkv_test_stat(&self->g, NODE,
				       DFKV_STAT_DEADLINE_DROPS);
		for (i = 0; i < n; i++) {
			slow[i] = connect_from("127.0.0.1", PORT, 0);
			ASSERT_LE(0, slow[i]);
			k = dfkv_test_key(94 + r_i, i);
			prefix(h, DFKV_EPOCH_TCP, DFKV_OP_PUT, &k, 0, 0,
			       rounds[r_i].len);
			ASSERT_EQ(0, write_all(slow[i], h, sizeof(h)));
			ASSERT_EQ(0, write_all(slow[i], "s", 1));
		}
		for (i = 0; i < HONEST_PUTS; i++) {
			k = dfkv_test_key(97 + r_i, i);
			dfkv_test_fill(in, HONEST_LEN, &k, r_i);
			ASSERT_EQ(0, send_req(honest, DFKV_OP_PUT, &k, 0, 0, in,
					      HONEST_LEN));
			ASSERT_EQ(0, recv_resp(honest, &r, NULL, 0));
			EXPECT_EQ(DFKV_STATUS_OK, r.status)
				TH_LOG("round %d, PUT %d", r_i, i);
			/* A byte at a time; a dropped peer's send fails. */
			write_all(slow[i % n], "s", 1);
		}
		for (i = 0; i < HONEST_PUTS; i++) {
			k = dfkv_test_key(97 + r_i, i);
			memset(out, 0, HONEST_LEN);
			ASSERT_EQ(0, send_req(honest, DFKV_OP_GET, &k, 0, 0,
					      NULL, 0));
			ASSERT_EQ(0, recv_resp(honest, &r, out, HONEST_LEN));
			EXPECT_EQ(DFKV_STATUS_OK, r.status)
				TH_LOG("round %d, GET %d", r_i, i);
			EXPECT_EQ(HONEST_LEN, r.data_len);
			EXPECT_TRUE(dfkv_test_verify(out, HONEST_LEN, &k, r_i));
			/* Room for the next round's, without evicting. */
			ASSERT_EQ(0, send_req(honest, DFKV_OP_REMOVE, &k, 0, 0,
					      NULL, 0));
			ASSERT_EQ(0, recv_resp(honest, &r, NULL, 0));
		}
		/* Under the rate floor, every slow peer goes. */
		EXPECT_TRUE(wait_stat(&self->g, DFKV_STAT_CONNS, 1, 0));
		EXPECT_LE(drops + n, dfkv_test_stat(&self->g, NODE,
						    DFKV_STAT_DEADLINE_DROPS));
		EXPECT_EQ(0, dfkv_test_stat(&self->g, NODE,
					    DFKV_STAT_RECV_RESERVED));
		for (i = 0; i < n; i++)
			close(slow[i]);
	}
	close(honest);
	free(in);
	free(out);
}

#define STAGE_NODE_RAM	(16 << 20)	/* the stage bound: a share is 4 MiB */
#define STAGE_LEN	(2 << 20)
#define STAGE_PUTS	3
#define STAGE_GETS	8
#define STAGE_SHARE	2	/* values of STAGE_LEN in a peer's share */

/* A reply's prefix only (its data, if any, left in the socket): status. */
static int recv_status(int fd)
{
	uint8_t h[DFKV_RESP_PREFIX_LEN];

	if (read_all(fd, h, sizeof(h)) || h[0] != DFKV_EPOCH_TCP)
		return -1;
	return h[1];
}

/*
 * A disk-only node stages every value in flight (its stage bound is its
 * RAM budget, 16 MiB here).  A hostile peer on 127.0.0.3 announces 2 MiB
 * PUTs on 3 connections and drips them (one is admitted and staged, the
 * receive cap refuses the others), then GETs 8 cold 2 MiB values on 8
 * connections and never reads the replies' data: its share, a quarter
 * of the bound, holds the PUT's stage and one GET's, and the 7 other
 * GETs are BUSY, each one more stage_busy (one GET at a time, its status
 * read before the next is sent, so that the node's bound, 16 MiB, never
 * refuses one first).  A second hostile peer, 127.0.0.4, fills its share
 * with 2 unread cold GETs: its PUT is then refused at its admission (BUSY
 * once its payload is drained), one more stage_busy.  Meanwhile an
 * honest peer on 127.0.0.2 stores a value and reads a cold one back
 * exact, which counts no stage_busy.
 * Without the per-peer share the hostile GETs would fill the bound and
 * the honest PUT would be BUSY.
 */
TEST_F_TIMEOUT(tcp, disk_only_stages_are_bounded_per_peer, 600)
{
	const char *img = "/tmp/dfkv-tcp-stage.img";
	int put[STAGE_PUTS], get[STAGE_GETS], hoard[STAGE_SHARE + 1], honest;
	int i, ok = 0, busy = 0;
	int64_t refused, stage_busy;
	struct pollfd pfd = { .events = POLLIN };
	uint8_t h[DFKV_REQ_PREFIX_LEN];
	char dev[64], cmd[160], *val;
	struct dfkv_key k;
	struct resp r;

	val = malloc(STAGE_LEN);
	ASSERT_NE(NULL, val);
	close(self->fd);
	self->fd = -1;
	ASSERT_EQ(0, dfkv_test_node_del(&self->g, NODE));
	ASSERT_EQ(0, dfkv_test_new_loop(img, dev, sizeof(dev)));
	ASSERT_EQ(0, dfkv_test_node_add_disk_only(&self->g, NODE,
						  STAGE_NODE_RAM, 4 << 20));
	ASSERT_EQ(0, dfkv_test_disk_add(&self->g, NODE, dev, "d0", 1))
		TH_LOG("%s", self->g.errmsg);
	ASSERT_EQ(0, dfkv_test_listen(&self->g, NODE, "127.0.0.1", PORT, 1));
	/* The hostile peer holds for as long as the test needs. */
	ASSERT_EQ(0, dfkv_test_node_set_u32(&self->g, NODE,
					    DFKV_A_NODE_FRAME_MS, 3600000));
	ASSERT_EQ(0, dfkv_test_node_set_u32(&self->g, NODE,
					    DFKV_A_NODE_MIN_RATE, 0));
	honest = connect_from("127.0.0.2", PORT, 0);
	ASSERT_LE(0, honest);
	/* Cold values on the disk: 8 for the hostile GETs, 1 the honest's. */
	for (i = 0; i <= STAGE_GETS; i++) {
		k = dfkv_test_key(100, i);
		dfkv_test_fill(val, STAGE_LEN, &k, 1);
		ASSERT_EQ(0, send_req(honest, DFKV_OP_PUT, &k, 0, 0, val,
				      STAGE_LEN));
		ASSERT_EQ(0, recv_resp(honest, &r, NULL, 0));
		ASSERT_EQ(DFKV_STATUS_OK, r.status) TH_LOG("PUT %d", i);
	}

	/*
	 * The dripping PUTs: the first is staged, the receive cap refuses
	 * the others (their BUSY comes once their payload did, never).
	 */
	refused = dfkv_test_stat(&self->g, NODE, DFKV_STAT_RECV_BUSY);
	for (i = 0; i < STAGE_PUTS; i++) {
		put[i] = connect_from("127.0.0.3", PORT, 0);
		ASSERT_LE(0, put[i]);
		k = dfkv_test_key(101, i);
		prefix(h, DFKV_EPOCH_TCP, DFKV_OP_PUT, &k, 0, 0, STAGE_LEN);
		ASSERT_EQ(0, write_all(put[i], h, sizeof(h)));
		ASSERT_EQ(0, write_all(put[i], "d", 1));
		if (!i)
			ASSERT_TRUE(wait_stat(&self->g,
					      DFKV_STAT_RECV_RESERVED, 1, 1));
	}
	EXPECT_TRUE(wait_stat(&self->g, DFKV_STAT_RECV_BUSY,
			      refused + STAGE_PUTS - 1, 1));
	/* The stalled GETs: one more stage fits the peer's share. */
	stage_busy = dfkv_test_stat(&self->g, NODE, DFKV_STAT_STAGE_BUSY);
	for (i = 0; i < STAGE_GETS; i++) {
		int st;

		get[i] = connect_from("127.0.0.3", PORT, 4096);
		ASSERT_LE(0, get[i]);
		k = dfkv_test_key(100, i);
		ASSERT_EQ(0, send_req(get[i], DFKV_OP_GET, &k, 0, 0, NULL, 0));
		st = recv_status(get[i]);
		ok += st == DFKV_STATUS_OK;
		busy += st == DFKV_STATUS_BUSY;
	}
	EXPECT_EQ(1, ok);
	EXPECT_EQ(STAGE_GETS - 1, busy);
	/* Counted before each reply went out: exact, nothing to wait for. */
	EXPECT_EQ(stage_busy + STAGE_GETS - 1,
		  dfkv_test_stat(&self->g, NODE, DFKV_STAT_STAGE_BUSY));

	/* The second hostile peer's GETs fill its share, its PUT is BUSY. */
	for (i = 0; i < STAGE_SHARE; i++) {
		hoard[i] = connect_from("127.0.0.4", PORT, 4096);
		ASSERT_LE(0, hoard[i]);
		k = dfkv_test_key(100, 1 + i);
		ASSERT_EQ(0, send_req(hoard[i], DFKV_OP_GET, &k, 0, 0, NULL,
				      0));
		EXPECT_EQ(DFKV_STATUS_OK, recv_status(hoard[i]));
	}
	hoard[i] = connect_from("127.0.0.4", PORT, 0);
	ASSERT_LE(0, hoard[i]);
	k = dfkv_test_key(103, 0);
	ASSERT_EQ(0, send_req(hoard[i], DFKV_OP_PUT, &k, 0, 0, val,
			      STAGE_LEN));
	ASSERT_EQ(0, recv_resp(hoard[i], &r, NULL, 0));
	EXPECT_EQ(DFKV_STATUS_BUSY, r.status);
	EXPECT_EQ(stage_busy + STAGE_GETS,
		  dfkv_test_stat(&self->g, NODE, DFKV_STAT_STAGE_BUSY));

	/* While it holds, the honest peer stores and loads exact. */
	k = dfkv_test_key(102, 0);
	dfkv_test_fill(val, STAGE_LEN, &k, 2);
	ASSERT_EQ(0, send_req(honest, DFKV_OP_PUT, &k, 0, 0, val, STAGE_LEN));
	ASSERT_EQ(0, recv_resp(honest, &r, NULL, 0));
	EXPECT_EQ(DFKV_STATUS_OK, r.status);
	k = dfkv_test_key(100, STAGE_GETS);
	memset(val, 0, STAGE_LEN);
	ASSERT_EQ(0, send_req(honest, DFKV_OP_GET, &k, 0, 0, NULL, 0));
	ASSERT_EQ(0, recv_resp(honest, &r, val, STAGE_LEN));
	EXPECT_EQ(DFKV_STATUS_OK, r.status);
	EXPECT_EQ(STAGE_LEN, r.data_len);
	EXPECT_TRUE(dfkv_test_verify(val, STAGE_LEN, &k, 1));
	/* The staged hostile PUT is still receiving: no reply yet. */
	pfd.fd = put[0];
	EXPECT_EQ(0, poll(&pfd, 1, 0));
	EXPECT_EQ(stage_busy + STAGE_GETS,
		  dfkv_test_stat(&self->g, NODE, DFKV_STAT_STAGE_BUSY));

	for (i = 0; i < STAGE_PUTS; i++)
		close(put[i]);
	for (i = 0; i <= STAGE_SHARE; i++)
		close(hoard[i]);
	for (i = 0; i < STAGE_GETS; i++)
		close(get[i]);
	close(honest);
	EXPECT_TRUE(wait_stat(&self->g, DFKV_STAT_CONNS, 0, 0));
	EXPECT_TRUE(wait_stat(&self->g, DFKV_STAT_PINS, 0, 0));
	EXPECT_EQ(0, dfkv_test_stat(&self->g, NODE, DFKV_STAT_RECV_RESERVED));
	EXPECT_EQ(0, dfkv_test_node_del(&self->g, NODE));
	snprintf(cmd, sizeof(cmd), "losetup -d %s; rm -f %s", dev, img);
	EXPECT_EQ(0, system(cmd));
	free(val);
}

#define STUCK_LEN	(40 << 20)

/*
 * A reader that sends GETs of a large value and never reads the replies
 * stalls its connection's send: the frame deadline, which
 * first_request_ms = 0 does not switch off, drops it, its pin goes, and
 * once the value is removed its RAM takes another value of that size.
 */
TEST_F(tcp, stalled_reader_is_dropped_and_releases_its_entry)
{
	struct dfkv_key k = dfkv_test_key(93, 1), k2 = dfkv_test_key(93, 2);
	int small = 4096, fd, i;
	struct sockaddr_in sa = { .sin_family = AF_INET,
				  .sin_port = htons(PORT),
				  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	int64_t drops;
	struct resp r;
	char *val;

	val = malloc(STUCK_LEN);
	ASSERT_NE(NULL, val);
	dfkv_test_fill(val, STUCK_LEN, &k, 7);
	ASSERT_EQ(0, send_req(self->fd, DFKV_OP_PUT, &k, 0, 0, val,
			      STUCK_LEN));
	ASSERT_EQ(0, recv_resp(self->fd, &r, NULL, 0));
	ASSERT_EQ(DFKV_STATUS_OK, r.status);
	ASSERT_EQ(0, dfkv_test_node_set_u32(&self->g, NODE,
					    DFKV_A_NODE_FIRST_REQUEST_MS, 0));
	ASSERT_EQ(0, dfkv_test_node_set_u32(&self->g, NODE,
					    DFKV_A_NODE_FRAME_MS, 2000));
	drops = dfkv_test_stat(&self->g, NODE, DFKV_STAT_DEADLINE_DROPS);

	fd = socket(AF_INET, SOCK_STREAM, 0);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &small,
				sizeof(small)));
	ASSERT_EQ(0, connect(fd, (void *)&sa, sizeof(sa)));
	for (i = 0; i < 4; i++)
		ASSERT_EQ(0, send_req(fd, DFKV_OP_GET, &k, 0, 0, NULL, 0));
	/*
	 * Stuck in the first reply, the entry pinned (by the request, and
	 * for the pages lent to the socket); then dropped, its lent pages
	 * with it (the connection is reset, its queue purged).
	 */
	EXPECT_TRUE(wait_stat(&self->g, DFKV_STAT_PINS, 1, 1));
	EXPECT_TRUE(wait_stat(&self->g, DFKV_STAT_DEADLINE_DROPS, drops + 1,
			      1));
	EXPECT_TRUE(wait_stat(&self->g, DFKV_STAT_CONNS, 1, 0));
	EXPECT_TRUE(wait_stat(&self->g, DFKV_STAT_PINS, 0, 0));
	close(fd);

	/* Its RAM is free: a value as large fits once it is removed. */
	ASSERT_EQ(0, send_req(self->fd, DFKV_OP_REMOVE, &k, 0, 0, NULL, 0));
	ASSERT_EQ(0, recv_resp(self->fd, &r, NULL, 0));
	EXPECT_EQ(DFKV_STATUS_OK, r.status);
	dfkv_test_fill(val, STUCK_LEN, &k2, 8);
	ASSERT_EQ(0, send_req(self->fd, DFKV_OP_PUT, &k2, 0, 0, val,
			      STUCK_LEN));
	ASSERT_EQ(0, recv_resp(self->fd, &r, NULL, 0));
	EXPECT_EQ(DFKV_STATUS_OK, r.status);
	free(val);
}

/*
 * A reader that takes its GET reply a KiB every half second moves it, so
 * no frame deadline drops it, but far under the rate floor: that does,
 * and the entry's pin goes with the connection.
 */
TEST_F(tcp, trickling_reader_is_dropped_by_the_rate_floor)
{
	struct dfkv_key k = dfkv_test_key(93, 3);
	int small = 4096, fd, i;
	struct sockaddr_in sa = { .sin_family = AF_INET,
				  .sin_port = htons(PORT),
				  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	int64_t drops;
	struct resp r;
	char buf[1024];
	char *val;

	val = malloc(STUCK_LEN);
	ASSERT_NE(NULL, val);
	memset(val, 't', STUCK_LEN);
	ASSERT_EQ(0, send_req(self->fd, DFKV_OP_PUT, &k, 0, 0, val,
			      STUCK_LEN));
	ASSERT_EQ(0, recv_resp(self->fd, &r, NULL, 0));
	ASSERT_EQ(DFKV_STATUS_OK, r.status);
	free(val);
	ASSERT_EQ(0, dfkv_test_node_set_u32(&self->g, NODE,
					    DFKV_A_NODE_FRAME_MS, 3600000));
	ASSERT_EQ(0, dfkv_test_node_set_u32(&self->g, NODE,
					    DFKV_A_NODE_MIN_RATE, 65536));
	drops = dfkv_test_stat(&self->g, NODE, DFKV_STAT_DEADLINE_DROPS);

	fd = socket(AF_INET, SOCK_STREAM, 0);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &small,
				sizeof(small)));
	ASSERT_EQ(0, connect(fd, (void *)&sa, sizeof(sa)));
	ASSERT_EQ(0, send_req(fd, DFKV_OP_GET, &k, 0, 0, NULL, 0));
	for (i = 0; i < 240; i++) {
		ssize_t n = recv(fd, buf, sizeof(buf), MSG_DONTWAIT);

		if (n == 0 || (n < 0 && errno != EAGAIN))
			break;	/* dropped */
		usleep(500 * 1000);
	}
	EXPECT_LT(drops, dfkv_test_stat(&self->g, NODE,
					DFKV_STAT_DEADLINE_DROPS));
	EXPECT_TRUE(wait_stat(&self->g, DFKV_STAT_PINS, 0, 0));
	close(fd);
}

#define FOLLOWERS	300

/*
 * 300 same-key PUTs behind a dripping leader park their connections: no
 * worker sleeps for them, an unrelated GET is served, and when the
 * leader's payload is in every follower gets its OK.  Then 300 more park
 * behind another dripping leader and deleting the node does not wait for
 * that leader.
 */
TEST_F_TIMEOUT(tcp, followers_park_without_sleeping_workers, 600)
{
	struct dfkv_key k = dfkv_test_key(92, 1), other = dfkv_test_key(92, 2);
	static int fds[FOLLOWERS];
	uint8_t h[DFKV_REQ_PREFIX_LEN];
	char val[4096], out[4096];
	struct resp r;
	int leader, i;

	memset(val, 'L', sizeof(val));
	ASSERT_EQ(0, send_req(self->fd, DFKV_OP_PUT, &other, 0, 0, "o", 1));
	ASSERT_EQ(0, recv_resp(self->fd, &r, NULL, 0));
	/* The dripping leaders must outlive the whole test. */
	ASSERT_EQ(0, dfkv_test_node_set_u32(&self->g, NODE,
					    DFKV_A_NODE_FRAME_MS, 3600000));
	ASSERT_EQ(0, dfkv_test_node_set_u32(&self->g, NODE,
					    DFKV_A_NODE_MIN_RATE, 0));
	leader = connect_to("127.0.0.1", PORT);
	ASSERT_LE(0, leader);
	prefix(h, DFKV_EPOCH_TCP, DFKV_OP_PUT, &k, 0, 0, sizeof(val));
	ASSERT_EQ(0, write_all(leader, h, sizeof(h)));
	ASSERT_EQ(0, write_all(leader, val, 100));
	for (i = 0; i < FOLLOWERS; i++) {
		fds[i] = connect_to("127.0.0.1", PORT);
		ASSERT_LE(0, fds[i]);
		ASSERT_EQ(0, send_req(fds[i], DFKV_OP_PUT, &k, 0, 0, val,
				      sizeof(val)));
	}
	ASSERT_EQ(0, send_req(self->fd, DFKV_OP_GET, &other, 0, 0, NULL, 0));
	ASSERT_EQ(0, recv_resp(self->fd, &r, out, sizeof(out)));
	EXPECT_EQ(DFKV_STATUS_OK, r.status);
	EXPECT_TRUE(never_in("dfkv_store_put_wait"));
	ASSERT_EQ(0, write_all(leader, val + 100, sizeof(val) - 100));
	ASSERT_EQ(0, recv_resp(leader, &r, NULL, 0));
	EXPECT_EQ(DFKV_STATUS_OK, r.status);
	for (i = 0; i < FOLLOWERS; i++) {
		ASSERT_EQ(0, recv_resp(fds[i], &r, NULL, 0));
		EXPECT_EQ(DFKV_STATUS_OK, r.status);
		EXPECT_EQ(sizeof(val), r.stored_len);
		close(fds[i]);
	}
	close(leader);

	/* Parked behind a leader that never finishes: NODE_DEL goes on. */
	k = dfkv_test_key(92, 3);
	leader = connect_to("127.0.0.1", PORT);
	ASSERT_LE(0, leader);
	prefix(h, DFKV_EPOCH_TCP, DFKV_OP_PUT, &k, 0, 0, sizeof(val));
	ASSERT_EQ(0, write_all(leader, h, sizeof(h)));
	for (i = 0; i < FOLLOWERS; i++) {
		fds[i] = connect_to("127.0.0.1", PORT);
		ASSERT_LE(0, fds[i]);
		ASSERT_EQ(0, send_req(fds[i], DFKV_OP_PUT, &k, 0, 0, val,
				      sizeof(val)));
	}
	ASSERT_EQ(0, send_req(self->fd, DFKV_OP_EXIST, &other, 0, 0, NULL, 0));
	ASSERT_EQ(0, recv_resp(self->fd, &r, NULL, 0));
	EXPECT_TRUE(never_in("dfkv_store_put_wait"));
	ASSERT_EQ(0, dfkv_test_node_del(&self->g, NODE));
	for (i = 0; i < FOLLOWERS; i++) {
		EXPECT_TRUE(dfkv_test_peer_closed(fds[i]));
		close(fds[i]);
	}
	close(leader);
}

TEST_F(tcp, connection_limit)
{
	int extra[2], i;
	struct resp r;
	struct dfkv_key k = dfkv_test_key(28, 1);

	ASSERT_EQ(0, dfkv_test_node_set_u32(&self->g, NODE,
					    DFKV_A_NODE_MAX_CONNS, 2));
	extra[0] = connect_to("127.0.0.1", PORT);
	ASSERT_LE(0, extra[0]);
	ASSERT_EQ(0, send_req(extra[0], DFKV_OP_EXIST, &k, 0, 0, NULL, 0));
	ASSERT_EQ(0, recv_resp(extra[0], &r, NULL, 0));
	extra[1] = connect_to("127.0.0.1", PORT);	/* the third */
	ASSERT_LE(0, extra[1]);
	EXPECT_TRUE(dfkv_test_peer_closed(extra[1]));
	EXPECT_LE(1, dfkv_test_stat(&self->g, NODE, DFKV_STAT_CONNS_REFUSED));
	for (i = 0; i < 2; i++)
		close(extra[i]);
}

TEST_F(tcp, ipv6_and_listener_admin)
{
	struct dfkv_key k = dfkv_test_key(29, 1);
	char buf[MNL_SOCKET_BUFFER_SIZE];
	struct nlmsghdr *nlh;
	struct resp r;
	int fd;

	ASSERT_EQ(0, dfkv_test_listen(&self->g, NODE, "::1", PORT, 1));
	fd = connect_to("::1", PORT);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, send_req(fd, DFKV_OP_PUT, &k, 0, 0, "v6", 2));
	ASSERT_EQ(0, recv_resp(fd, &r, NULL, 0));
	EXPECT_EQ(DFKV_STATUS_OK, r.status);
	close(fd);

	EXPECT_EQ(-EEXIST, dfkv_test_listen(&self->g, NODE, "127.0.0.1", PORT, 1));
	EXPECT_EQ(-EINVAL, dfkv_test_listen(&self->g, NODE, "not-an-ip", PORT, 1));
	EXPECT_NE(0, self->g.errmsg[0]);
	EXPECT_EQ(-ENOENT, dfkv_test_listen(&self->g, NODE, "127.0.0.1", PORT + 1, 0));
	EXPECT_EQ(-ENOENT, dfkv_test_listen(&self->g, "t-none", "127.0.0.1", PORT, 1));
	nlh = dfkv_genl_msg(&self->g, buf, DFKV_CMD_LISTENER_ADD, 0);
	mnl_attr_put_strz(nlh, DFKV_A_NODE_NAME, NODE);
	mnl_attr_put_strz(nlh, DFKV_A_LISTEN_ADDR, "127.0.0.1");
	/* no such transport (RDMA listeners are dfkv_rdma.sh's) */
	mnl_attr_put_u32(nlh, DFKV_A_LISTEN_TRANSPORT, __DFKV_LISTENER_MAX);
	EXPECT_EQ(-ERANGE, dfkv_genl_talk(&self->g, nlh, NULL, NULL));

	/* Deleting a listener stops new connections there. */
	ASSERT_EQ(0, dfkv_test_listen(&self->g, NODE, "::1", PORT, 0));
	EXPECT_GT(0, connect_to("::1", PORT));
}

TEST_F(tcp, delete_node_with_transfers_in_flight)
{
	struct dfkv_key k = dfkv_test_key(30, 1);
	uint8_t h[DFKV_REQ_PREFIX_LEN], chunk[8192] = { 0 };
	int fd = connect_to("127.0.0.1", PORT);

	ASSERT_LE(0, fd);
	prefix(h, DFKV_EPOCH_TCP, DFKV_OP_PUT, &k, 0, 0, 4 << 20);
	ASSERT_EQ(0, write_all(fd, h, sizeof(h)));
	ASSERT_EQ(0, write_all(fd, chunk, sizeof(chunk)));
	ASSERT_EQ(0, dfkv_test_node_del(&self->g, NODE));
	EXPECT_TRUE(dfkv_test_peer_closed(fd));
	EXPECT_TRUE(dfkv_test_peer_closed(self->fd));
	close(fd);
	/* A new node may take the port at once. */
	ASSERT_EQ(0, dfkv_test_node_add(&self->g, NODE, 8 << 20, 0, 1));
	ASSERT_EQ(0, dfkv_test_listen(&self->g, NODE, "127.0.0.1", PORT, 1));
}

/* Unloading the module closes live connections and frees everything. */
TEST_F(tcp, unload_module_with_live_connections)
{
	struct dfkv_key k = dfkv_test_key(31, 1);
	uint8_t h[DFKV_REQ_PREFIX_LEN], chunk[8192] = { 0 };
	int fd[3], i;

	for (i = 0; i < 3; i++) {
		fd[i] = connect_to("127.0.0.1", PORT);
		ASSERT_LE(0, fd[i]);
	}
	prefix(h, DFKV_EPOCH_TCP, DFKV_OP_PUT, &k, 0, 0, 1 << 20);
	ASSERT_EQ(0, write_all(fd[0], h, sizeof(h)));
	ASSERT_EQ(0, write_all(fd[0], chunk, sizeof(chunk)));
	ASSERT_EQ(0, send_req(fd[1], DFKV_OP_PUT, &k, 0, 0, chunk, 100));
	for (i = 0; i < 50; i++)
		ASSERT_EQ(0, send_req(fd[2], DFKV_OP_GET, &k, 0, 0, NULL, 0));
	dfkv_genl_close(&self->g);
	EXPECT_EQ(0, system("rmmod dfkv"));
	for (i = 0; i < 3; i++) {
		char buf[65536];
		struct pollfd pfd = { .fd = fd[i], .events = POLLIN };
		int ready;

		/* Whatever was answered, the stream ends (not a timeout). */
		do {
			ready = poll(&pfd, 1, DFKV_TEST_WAIT_MS);
		} while (ready == 1 && recv(fd[i], buf, sizeof(buf), 0) > 0);
		EXPECT_EQ(1, ready);
		close(fd[i]);
	}
	ASSERT_EQ(0, dfkv_test_load());
	ASSERT_EQ(0, dfkv_genl_open(&self->g));
}

TEST_HARNESS_MAIN
