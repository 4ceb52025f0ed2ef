// SPDX-License-Identifier: GPL-2.0
/*
 * Tenants (SPEC.md sections 5, 6 and 9) seen by a hostile client built
 * from the spec alone: raw TCP frames, /dev/dfkv ioctls from a process
 * without CAP_NET_ADMIN, its own HMAC (OpenSSL) checked against
 * auth2-vectors.json, and the tenant commands over netlink.  With
 * auth=required every op on a key of a tenant the connection or file is
 * not authorized for is FORBIDDEN and changes nothing (batch and
 * scatter-gather entries too); the HELLO nonce, wrong, replayed and early
 * proofs, unknown tenants, the 16-tenant limit, the third failure closing
 * the connection, auth=off still verifying, TENANT_DEL revoking, secrets
 * never sent back nor logged; quotas exact through PUT, REMOVE, an
 * in-flight and an aborted PUT, eviction, 8 concurrent writers over TCP
 * and /dev/dfkv, the node default, and a disk rebuild after a node and a
 * module restart.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <linux/capability.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <sys/wait.h>

#include "kselftest_harness.h"
#include "testlib.h"
#include "dfkv_proof.h"

#define NODE	"t-auth"
#define NODE_EV	"t-auth-ev"
#define PORT	7412
#define TA	0x0a0a0a0a00000001ULL
#define TB	0x0b0b0b0b00000002ULL
#define VAL	3000		/* B's values in the fixture */

/* Register tenant t with its secret (and no quota of its own). */
static int register_tenant(struct dfkv_genl *g, const char *node, uint64_t t)
{
	uint8_t s[DFKV_TENANT_SECRET_LEN];

	dfkv_test_secret(t, s);
	return dfkv_test_tenant_set(g, node, t, s, sizeof(s), NULL);
}

/* HELLO and AUTH to node NODE (dfkv_proof.h). */
static int hello(int fd, uint8_t hs[DFKV_HS_LEN], uint64_t *caps)
{
	return dfkv_test_hello(fd, NODE, hs, caps);
}

static int auth(int fd, uint64_t t, const uint8_t *secret,
		const uint8_t *hs)
{
	return dfkv_test_auth(fd, NODE, t, secret, hs);
}

/* AUTH as t with its own secret over the connection's nonces. */
static int auth_as(int fd, uint64_t t, const uint8_t *hs)
{
	uint8_t s[DFKV_TENANT_SECRET_LEN];

	dfkv_test_secret(t, s);
	return auth(fd, t, s, hs);
}

/* A connection authorized for t (HELLO, AUTH); fd or -1. */
static int conn_as(uint64_t t)
{
	uint8_t nonce[DFKV_HS_LEN];
	int fd = dfkv_test_tcp_connect(PORT);

	if (fd < 0)
		return -1;
	if (hello(fd, nonce, NULL) != DFKV_STATUS_OK ||
	    auth_as(fd, t, nonce) != DFKV_STATUS_OK) {
		close(fd);
		return -1;
	}
	return fd;
}

FIXTURE(auth) {
	struct dfkv_genl g;
	struct dfkv_key kb[2];		/* B's, VAL bytes each */
	int dev;			/* /dev/dfkv as root: every tenant */
};

FIXTURE_SETUP(auth)
{
	struct dfkv_ioc_op o;
	char v[VAL];
	int i;

	ASSERT_EQ(0, dfkv_test_load());
	ASSERT_EQ(0, dfkv_genl_open(&self->g));
	dfkv_test_node_del(&self->g, NODE);
	ASSERT_EQ(0, dfkv_test_node_add_auth(&self->g, NODE, 64 << 20, 1,
					     DFKV_AUTH_REQUIRED, 0))
		TH_LOG("%s", self->g.errmsg);
	ASSERT_EQ(0, dfkv_test_listen(&self->g, NODE, "127.0.0.1", PORT, 1));
	ASSERT_EQ(0, register_tenant(&self->g, NODE, TA)) TH_LOG("%s",
								 self->g.errmsg);
	ASSERT_EQ(0, register_tenant(&self->g, NODE, TB));
	self->dev = dfkv_test_open(NODE);
	ASSERT_LE(0, self->dev);
	for (i = 0; i < 2; i++) {
		self->kb[i] = dfkv_test_key(TB, i);
		dfkv_test_fill(v, sizeof(v), &self->kb[i], 1);
		ASSERT_EQ(0, dfkv_test_put(self->dev, &self->kb[i], v,
					   sizeof(v), &o));
		ASSERT_EQ(DFKV_STATUS_OK, o.status);
	}
}

FIXTURE_TEARDOWN(auth)
{
	if (self->dev >= 0)
		close(self->dev);
	dfkv_test_node_del(&self->g, NODE);
	dfkv_genl_close(&self->g);
}

/* B's blocks are as the fixture stored them, read by B over TCP. */
static void expect_b_intact(struct __test_metadata *_metadata,
			    FIXTURE_DATA(auth) *self)
{
	struct dfkv_test_resp r;
	char out[VAL];
	int fd = conn_as(TB), i;

	ASSERT_LE(0, fd);
	for (i = 0; i < 2; i++) {
		memset(out, 0, sizeof(out));
		EXPECT_EQ(DFKV_STATUS_OK,
			  dfkv_test_tcp_call(fd, DFKV_OP_GET, &self->kb[i], 0,
					     0, NULL, 0, &r, out, sizeof(out)));
		EXPECT_EQ(VAL, r.data_len);
		EXPECT_TRUE(dfkv_test_verify(out, VAL, &self->kb[i], 1));
	}
	close(fd);
}

/* STATS replies carry text: read it away.  Its status. */
static int stats(int fd)
{
	struct dfkv_test_resp r;
	static char text[65536];

	return dfkv_test_tcp_call(fd, DFKV_OP_STATS, NULL, 0, 0, NULL, 0, &r,
				  text, sizeof(text));
}

/* The connection still answers (a refusal is an answer). */
static int stream_ok(int fd)
{
	struct dfkv_key k = dfkv_test_key(TA, 0x57);
	struct dfkv_test_resp r;

	return dfkv_test_tcp_call(fd, DFKV_OP_EXIST, &k, 0, 0, NULL, 0, &r,
				  NULL, 0) >= 0;
}

/* Key lists on the wire: keys[0..n) into p. */
static size_t wire_keys(uint8_t *p, const struct dfkv_key *keys, int n)
{
	for (int i = 0; i < n; i++)
		dfkv_test_wire_key(p + i * DFKV_BLOCK_KEY_LEN, &keys[i]);
	return (size_t)n * DFKV_BLOCK_KEY_LEN;
}

/*
 * Every tenant-scoped op over fd naming bad (alone, or after good in a
 * key list) is FORBIDDEN with nothing in the reply; the connection stays
 * open.  Returns the number of requests sent.
 */
static int expect_forbidden_tcp(struct __test_metadata *_metadata, int fd,
				const struct dfkv_key *bad,
				const struct dfkv_key *fresh,
				const struct dfkv_key *good)
{
	struct dfkv_key mixed[2] = { *good, *bad };
	uint8_t keys[2 * DFKV_BLOCK_KEY_LEN], out[256], v[VAL];
	static uint8_t big[256 << 10];
	const struct {
		int op;
		const struct dfkv_key *k;
		uint64_t off, len;
		const void *payload;
		uint64_t plen;
	} t[] = {
		{ DFKV_OP_GET, bad, 0, 0, NULL, 0 },
		{ DFKV_OP_GET, bad, 1, 10, NULL, 0 },
		{ DFKV_OP_PUT, bad, 0, 0, v, sizeof(v) },	/* present */
		{ DFKV_OP_PUT, fresh, 0, 0, v, 100 },		/* absent */
		{ DFKV_OP_PUT, fresh, 0, 0, big, sizeof(big) },	/* read away */
		{ DFKV_OP_EXIST, bad, 0, 0, NULL, 0 },
		{ DFKV_OP_REMOVE, bad, 0, 0, NULL, 0 },
		{ DFKV_OP_TOUCH, NULL, 0, 0, keys, sizeof(keys) },
		{ DFKV_OP_TOUCH, NULL, 1, 0, keys, sizeof(keys) },
		{ DFKV_OP_TOUCH, NULL, 0, 0, keys + 24, 24 },
		{ DFKV_OP_PROBE, NULL, 0, 0, keys, sizeof(keys) },
		{ DFKV_OP_PROBE, NULL, 0, 0, keys + 24, 24 },
		{ DFKV_OP_LEASE, NULL, 0, 0, keys, sizeof(keys) },
		{ DFKV_OP_LEASE, NULL, 0, 0, keys + 24, 24 },
	};
	struct dfkv_test_resp r;
	unsigned int i;

	memset(v, 0x77, sizeof(v));
	wire_keys(keys, mixed, 2);
	for (i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		EXPECT_EQ(DFKV_STATUS_FORBIDDEN,
			  dfkv_test_tcp_call(fd, t[i].op, t[i].k, t[i].off,
					     t[i].len, t[i].payload, t[i].plen,
					     &r, out, sizeof(out)))
			TH_LOG("case %u (op %d)", i, t[i].op);
		EXPECT_EQ(0, r.stored_len) TH_LOG("case %u", i);
		EXPECT_EQ(0, r.data_len) TH_LOG("case %u", i);
	}
	/* Not tenant-scoped: still served, so the stream was kept. */
	EXPECT_TRUE(stream_ok(fd));
	return (int)(sizeof(t) / sizeof(t[0]));
}

/* Nothing of the refused requests stayed behind. */
static void expect_untouched(struct __test_metadata *_metadata,
			     FIXTURE_DATA(auth) *self,
			     const struct dfkv_key *fresh)
{
	struct dfkv_ioc_op o;

	ASSERT_EQ(0, dfkv_test_simple(self->dev, DFKV_IOC_EXIST, fresh, &o));
	EXPECT_EQ(DFKV_STATUS_NOT_FOUND, o.status);
	EXPECT_EQ(0, dfkv_test_stat(&self->g, NODE, DFKV_STAT_LEASES));
	EXPECT_TRUE(dfkv_test_wait_stat(&self->g, NODE, DFKV_STAT_PINS, 0, 0));
	expect_b_intact(_metadata, self);
}

TEST_F(auth, tcp_authenticated_as_a_cannot_touch_b)
{
	struct dfkv_key ka = dfkv_test_key(TA, 1), fresh = dfkv_test_key(TB, 9);
	int64_t forbidden = dfkv_test_stat(&self->g, NODE, DFKV_STAT_FORBIDDEN);
	struct dfkv_test_resp r;
	char out[16];
	int fd = conn_as(TA), n;

	ASSERT_LE(0, fd);
	/* A's own key works. */
	ASSERT_EQ(DFKV_STATUS_OK, dfkv_test_tcp_call(fd, DFKV_OP_PUT, &ka, 0, 0,
						     "mine", 4, &r, NULL, 0));
	n = expect_forbidden_tcp(_metadata, fd, &self->kb[0], &fresh, &ka);
	ASSERT_EQ(DFKV_STATUS_OK, dfkv_test_tcp_call(fd, DFKV_OP_GET, &ka, 0, 0,
						     NULL, 0, &r, out,
						     sizeof(out)));
	EXPECT_EQ(0, memcmp(out, "mine", 4));
	EXPECT_EQ(forbidden + n, dfkv_test_stat(&self->g, NODE,
						DFKV_STAT_FORBIDDEN));
	close(fd);
	expect_untouched(_metadata, self, &fresh);
}

TEST_F(auth, tcp_without_auth_is_forbidden_everything)
{
	struct dfkv_key ka = dfkv_test_key(TA, 1), fresh = dfkv_test_key(TB, 9);
	uint8_t nonce[DFKV_HS_LEN];
	int fd = dfkv_test_tcp_connect(PORT);

	/* Not even a HELLO, then a HELLO but no AUTH. */
	ASSERT_LE(0, fd);
	expect_forbidden_tcp(_metadata, fd, &self->kb[0], &fresh, &ka);
	expect_forbidden_tcp(_metadata, fd, &ka, &fresh, &self->kb[1]);
	ASSERT_EQ(DFKV_STATUS_OK, hello(fd, nonce, NULL));
	expect_forbidden_tcp(_metadata, fd, &self->kb[0], &fresh, &ka);
	close(fd);
	expect_untouched(_metadata, self, &fresh);
}

TEST_F(auth, hello_reply_and_nonce)
{
	uint8_t n1[DFKV_HS_LEN], n2[DFKV_HS_LEN], n3[DFKV_HS_LEN];
	uint8_t zero[DFKV_HELLO_REQ_LEN] = { 0 }, d[DFKV_HELLO_REPLY_MAX];
	struct dfkv_test_resp r;
	uint64_t caps = 0;
	int fd = dfkv_test_tcp_connect(PORT), fd2 = dfkv_test_tcp_connect(PORT);

	ASSERT_LE(0, fd);
	ASSERT_LE(0, fd2);
	/* Capabilities without AUTH2: the same reply, name included. */
	ASSERT_EQ(DFKV_STATUS_OK, dfkv_test_tcp_call(fd, DFKV_OP_HELLO, NULL,
						     0, 0, zero, 8, &r, d,
						     sizeof(d)));
	EXPECT_EQ(DFKV_HELLO_REPLY_MIN + strlen(NODE), r.data_len);
	EXPECT_EQ(DFKV_CAP_AUTH | DFKV_CAP_AUTH_REQUIRED | DFKV_CAP_AUTH2,
		  dfkv_test_rd64(d) & 7);
	EXPECT_EQ(64 << 20, dfkv_test_rd64(d + 8));
	EXPECT_EQ(strlen(NODE), d[DFKV_HELLO_REPLY_MIN - 1]);
	EXPECT_EQ(0, memcmp(d + DFKV_HELLO_REPLY_MIN, NODE, strlen(NODE)));
	memcpy(n1, d + 16, DFKV_AUTH_NONCE_LEN);
	memset(n1 + DFKV_AUTH_NONCE_LEN, 0, DFKV_AUTH_NONCE_LEN);
	/* Without a client nonce any AUTH is FORBIDDEN, even a right one. */
	EXPECT_EQ(DFKV_STATUS_FORBIDDEN, auth_as(fd, TA, n1));
	ASSERT_EQ(DFKV_STATUS_OK, hello(fd, n2, &caps));
	ASSERT_EQ(DFKV_STATUS_OK, hello(fd2, n3, NULL));
	EXPECT_NE(0, memcmp(n1, zero, DFKV_AUTH_NONCE_LEN));
	EXPECT_NE(0, memcmp(n1, n2, DFKV_AUTH_NONCE_LEN));
	EXPECT_NE(0, memcmp(n2, n3, DFKV_AUTH_NONCE_LEN));
	/* The later HELLO replaced the nonces: a proof over n1 is stale. */
	EXPECT_EQ(DFKV_STATUS_FORBIDDEN, auth_as(fd, TA, n1));
	EXPECT_EQ(DFKV_STATUS_OK, auth_as(fd, TA, n2));
	/* Re-AUTH of a granted tenant is OK. */
	EXPECT_EQ(DFKV_STATUS_OK, auth_as(fd, TA, n2));
	/* A proof bound to another node's name does not pass here. */
	{
		uint8_t cp[DFKV_AUTH_PROOF_LEN], sp[DFKV_AUTH_PROOF_LEN];
		uint8_t sec[DFKV_TENANT_SECRET_LEN];
		struct dfkv_key k = { .tenant = TA };

		dfkv_test_secret(TA, sec);
		dfkv_proof(cp, sp, sec, NODE "x", n3, TA);
		EXPECT_EQ(DFKV_STATUS_FORBIDDEN,
			  dfkv_test_tcp_call(fd2, DFKV_OP_AUTH, &k, 0, 0, cp,
					     sizeof(cp), &r, NULL, 0));
	}
	close(fd);
	close(fd2);

	/* auth=off: the node still verifies AUTH (bit 0), does not require */
	ASSERT_EQ(0, dfkv_test_node_set_u32(&self->g, NODE, DFKV_A_NODE_AUTH,
					    DFKV_AUTH_OFF));
	fd = dfkv_test_tcp_connect(PORT);
	ASSERT_LE(0, fd);
	ASSERT_EQ(DFKV_STATUS_OK, hello(fd, n1, &caps));
	EXPECT_EQ(DFKV_CAP_AUTH | DFKV_CAP_AUTH2, caps & 7);
	close(fd);
}

/* A fixed-length hex string field of a vector into b; its length. */
static size_t vec_hex(const char *p, const char *field, uint8_t *b,
		      size_t cap)
{
	char key[40];
	const char *q;
	size_t n = 0;
	unsigned int x;

	snprintf(key, sizeof(key), "\"%s\"", field);
	q = strstr(p, key);
	if (!q)
		return 0;
	q = strchr(q + strlen(key), '"') + 1;
	for (; q[2 * n] != '"' && n < cap; n++) {
		if (sscanf(q + 2 * n, "%2x", &x) != 1)
			return 0;
		b[n] = (uint8_t)x;
	}
	return n;
}

/* No node needed: the client's own HMAC against the spec's vectors. */
TEST(proof_vectors)
{
	const char *repo = getenv("DFKV_REPO");
	char path[512], *json, *p;
	int n = 0;
	FILE *f;

	snprintf(path, sizeof(path), "%s/selftests/auth2-vectors.json",
		 repo ? repo : "..");
	f = fopen(path, "r");
	ASSERT_NE(NULL, f) TH_LOG("%s", path);
	json = calloc(1, 1 << 16);
	ASSERT_NE(NULL, json);
	ASSERT_LT(0, fread(json, 1, (1 << 16) - 1, f));
	fclose(f);
	for (p = strstr(json, "\"name\""); p; p = strstr(p + 1, "\"name\"")) {
		uint8_t sec[32], hs[DFKV_HS_LEN], tb[8], t[256], want[256];
		uint8_t cp[32], sp[32], wcp[32], wsp[32];
		char name[DFKV_AUTH2_NAME_MAX + 1] = "", *q;
		uint64_t tenant = 0;
		size_t tl, wl;

		q = strstr(p, "\"node_name\"");
		ASSERT_NE(NULL, q);
		q = strchr(q + 11, '"') + 1;
		ASSERT_EQ(1, sscanf(q, "%63[^\"]", name));
		ASSERT_EQ(32, vec_hex(p, "secret_hex", sec, 32));
		ASSERT_EQ(32, vec_hex(p, "server_nonce_hex", hs, 32));
		ASSERT_EQ(32, vec_hex(p, "client_nonce_hex", hs + 32, 32));
		ASSERT_EQ(8, vec_hex(p, "tenant", tb, 8));
		ASSERT_EQ(32, vec_hex(p, "client_proof_hex", wcp, 32));
		ASSERT_EQ(32, vec_hex(p, "server_proof_hex", wsp, 32));
		wl = vec_hex(p, "transcript_hex", want, sizeof(want));
		for (int i = 0; i < 8; i++)	/* big-endian rendering */
			tenant = tenant << 8 | tb[i];
		tl = dfkv_proof_transcript(t, name, hs, tenant);
		EXPECT_EQ(wl, tl) TH_LOG("vector %d", n);
		EXPECT_EQ(0, memcmp(t, want, tl)) TH_LOG("vector %d", n);
		dfkv_proof(cp, sp, sec, name, hs, tenant);
		EXPECT_EQ(0, memcmp(cp, wcp, 32)) TH_LOG("vector %d", n);
		EXPECT_EQ(0, memcmp(sp, wsp, 32)) TH_LOG("vector %d", n);
		n++;
	}
	EXPECT_LE(3, n);
	free(json);
}

TEST_F(auth, wrong_replayed_early_and_unknown_proofs)
{
	uint8_t n1[DFKV_HS_LEN], n2[DFKV_HS_LEN];
	uint8_t wrong[DFKV_TENANT_SECRET_LEN], zero[DFKV_HS_LEN] = { 0 };
	struct dfkv_key ka = dfkv_test_key(TA, 1), none = { .tenant = TA };
	int64_t fails = dfkv_test_stat(&self->g, NODE, DFKV_STAT_AUTH_FAILURES);
	int64_t oks = dfkv_test_stat(&self->g, NODE, DFKV_STAT_AUTH_OK);
	struct dfkv_test_resp r;
	int fd1 = dfkv_test_tcp_connect(PORT), fd2 = dfkv_test_tcp_connect(PORT);
	int fd3 = dfkv_test_tcp_connect(PORT), fd4 = dfkv_test_tcp_connect(PORT);
	uint64_t q = 0;

	ASSERT_LE(0, fd1);
	ASSERT_LE(0, fd2);
	ASSERT_LE(0, fd3);
	ASSERT_LE(0, fd4);
	/* AUTH before HELLO: no nonce yet, whatever the proof. */
	EXPECT_EQ(DFKV_STATUS_FORBIDDEN, auth_as(fd1, TA, zero));
	ASSERT_EQ(DFKV_STATUS_OK, hello(fd1, n1, NULL));
	ASSERT_EQ(DFKV_STATUS_OK, hello(fd2, n2, NULL));
	/* A proof made for fd1's nonce, replayed on fd2. */
	EXPECT_EQ(DFKV_STATUS_FORBIDDEN, auth_as(fd2, TA, n1));
	/* A wrong secret. */
	dfkv_test_secret(TB, wrong);
	EXPECT_EQ(DFKV_STATUS_FORBIDDEN, auth(fd2, TA, wrong, n2));
	/* Neither gave anything. */
	EXPECT_EQ(DFKV_STATUS_FORBIDDEN,
		  dfkv_test_tcp_call(fd2, DFKV_OP_EXIST, &ka, 0, 0, NULL, 0, &r,
				     NULL, 0));
	/* An unknown tenant, and one registered without a secret. */
	ASSERT_EQ(DFKV_STATUS_OK, hello(fd3, n1, NULL));
	EXPECT_EQ(DFKV_STATUS_FORBIDDEN, auth_as(fd3, 0x5eed, n1));
	ASSERT_EQ(0, dfkv_test_tenant_set(&self->g, NODE, 0x5eed, NULL, 0, &q));
	EXPECT_EQ(DFKV_STATUS_FORBIDDEN, auth_as(fd3, 0x5eed, n1));
	EXPECT_EQ(fails + 5, dfkv_test_stat(&self->g, NODE,
					    DFKV_STAT_AUTH_FAILURES));
	/* A proof of the wrong length is malformed. */
	ASSERT_EQ(DFKV_STATUS_OK, hello(fd4, n2, NULL));
	EXPECT_EQ(DFKV_STATUS_INVALID,
		  dfkv_test_tcp_call(fd4, DFKV_OP_AUTH, &none, 0, 0, zero, 31,
				     &r, NULL, 0));
	/* After failures below the third, the right proof still works. */
	ASSERT_EQ(DFKV_STATUS_OK, hello(fd1, n1, NULL));
	EXPECT_EQ(DFKV_STATUS_OK, auth_as(fd1, TA, n1));
	EXPECT_EQ(DFKV_STATUS_NOT_FOUND,
		  dfkv_test_tcp_call(fd1, DFKV_OP_EXIST, &ka, 0, 0, NULL, 0, &r,
				     NULL, 0));
	EXPECT_EQ(oks + 1, dfkv_test_stat(&self->g, NODE, DFKV_STAT_AUTH_OK));
	close(fd1);
	close(fd2);
	close(fd3);
	close(fd4);
}

TEST_F(auth, third_failure_closes_the_connection)
{
	uint8_t nonce[DFKV_HS_LEN], stale[DFKV_HS_LEN];
	int fd = dfkv_test_tcp_connect(PORT);

	ASSERT_LE(0, fd);
	ASSERT_EQ(DFKV_STATUS_OK, hello(fd, stale, NULL));
	ASSERT_EQ(DFKV_STATUS_OK, hello(fd, nonce, NULL));
	/* Three kinds of failure: unknown tenant, stale nonce, wrong secret */
	EXPECT_EQ(DFKV_STATUS_FORBIDDEN, auth_as(fd, 0x5eed, nonce));
	EXPECT_TRUE(stream_ok(fd));
	EXPECT_EQ(DFKV_STATUS_FORBIDDEN, auth_as(fd, TA, stale));
	EXPECT_TRUE(stream_ok(fd));
	EXPECT_EQ(DFKV_STATUS_FORBIDDEN, auth_as(fd, TB, stale));
	EXPECT_TRUE(dfkv_test_peer_closed(fd));
	close(fd);
	/* Failures are the connection's: a new one authenticates. */
	fd = conn_as(TA);
	EXPECT_LE(0, fd);
	close(fd);
}

#define NTEN	(DFKV_AUTH_TENANTS_MAX + 1)
#define T17(i)	(0x1700000000000000ULL + (i))

TEST_F(auth, seventeen_tenants_on_one_connection)
{
	uint8_t nonce[DFKV_HS_LEN];
	struct dfkv_test_resp r;
	struct dfkv_key k;
	int fd = dfkv_test_tcp_connect(PORT), i;
	int64_t fails;

	ASSERT_LE(0, fd);
	for (i = 0; i < NTEN; i++)
		ASSERT_EQ(0, register_tenant(&self->g, NODE, T17(i)));
	ASSERT_EQ(DFKV_STATUS_OK, hello(fd, nonce, NULL));
	for (i = 0; i < DFKV_AUTH_TENANTS_MAX; i++)
		EXPECT_EQ(DFKV_STATUS_OK, auth_as(fd, T17(i), nonce))
			TH_LOG("tenant %d", i);
	fails = dfkv_test_stat(&self->g, NODE, DFKV_STAT_AUTH_FAILURES);
	EXPECT_EQ(DFKV_STATUS_FORBIDDEN, auth_as(fd, T17(NTEN - 1), nonce));
	EXPECT_EQ(fails + 1, dfkv_test_stat(&self->g, NODE,
					    DFKV_STAT_AUTH_FAILURES));
	/* The 16 granted stay granted (re-AUTH too), the 17th is not. */
	EXPECT_EQ(DFKV_STATUS_OK, auth_as(fd, T17(3), nonce));
	for (i = 0; i < NTEN; i++) {
		k = dfkv_test_key(T17(i), 1);
		EXPECT_EQ(i < DFKV_AUTH_TENANTS_MAX ? DFKV_STATUS_NOT_FOUND :
			  DFKV_STATUS_FORBIDDEN,
			  dfkv_test_tcp_call(fd, DFKV_OP_EXIST, &k, 0, 0, NULL,
					     0, &r, NULL, 0)) TH_LOG("tenant %d", i);
	}
	close(fd);
}

TEST_F(auth, auth_off_still_verifies)
{
	uint8_t nonce[DFKV_HS_LEN], wrong[DFKV_TENANT_SECRET_LEN];
	struct dfkv_test_resp r;
	char out[VAL];
	int fd;

	ASSERT_EQ(0, dfkv_test_node_set_u32(&self->g, NODE, DFKV_A_NODE_AUTH,
					    DFKV_AUTH_OFF));
	fd = dfkv_test_tcp_connect(PORT);
	ASSERT_LE(0, fd);
	/* Unauthenticated requests are served (every claim believed). */
	EXPECT_EQ(DFKV_STATUS_OK,
		  dfkv_test_tcp_call(fd, DFKV_OP_GET, &self->kb[0], 0, 0, NULL,
				     0, &r, out, sizeof(out)));
	ASSERT_EQ(DFKV_STATUS_OK, hello(fd, nonce, NULL));
	dfkv_test_secret(TB, wrong);
	EXPECT_EQ(DFKV_STATUS_FORBIDDEN, auth(fd, TA, wrong, nonce));
	EXPECT_EQ(DFKV_STATUS_FORBIDDEN, auth_as(fd, 0x5eed, nonce));
	/* Refused, it goes on unauthenticated. */
	EXPECT_EQ(DFKV_STATUS_OK,
		  dfkv_test_tcp_call(fd, DFKV_OP_GET, &self->kb[1], 0, 0, NULL,
				     0, &r, out, sizeof(out)));
	EXPECT_TRUE(dfkv_test_verify(out, VAL, &self->kb[1], 1));
	EXPECT_EQ(DFKV_STATUS_OK, auth_as(fd, TA, nonce));
	close(fd);
	/* Back to required: the same unauthenticated GET is refused. */
	ASSERT_EQ(0, dfkv_test_node_set_u32(&self->g, NODE, DFKV_A_NODE_AUTH,
					    DFKV_AUTH_REQUIRED));
	fd = dfkv_test_tcp_connect(PORT);
	ASSERT_LE(0, fd);
	EXPECT_EQ(DFKV_STATUS_FORBIDDEN,
		  dfkv_test_tcp_call(fd, DFKV_OP_GET, &self->kb[0], 0, 0, NULL,
				     0, &r, out, sizeof(out)));
	close(fd);
}

TEST_F(auth, tenant_del_revokes_on_open_connections)
{
	struct dfkv_key ka = dfkv_test_key(TA, 1);
	uint8_t nonce[DFKV_HS_LEN];
	struct dfkv_test_resp r;
	int fd = dfkv_test_tcp_connect(PORT);

	ASSERT_LE(0, fd);
	ASSERT_EQ(DFKV_STATUS_OK, hello(fd, nonce, NULL));
	ASSERT_EQ(DFKV_STATUS_OK, auth_as(fd, TA, nonce));
	ASSERT_EQ(DFKV_STATUS_OK, dfkv_test_tcp_call(fd, DFKV_OP_PUT, &ka, 0, 0,
						     "a", 1, &r, NULL, 0));
	ASSERT_EQ(0, dfkv_test_tenant_del(&self->g, NODE, TA));
	EXPECT_EQ(-ENOENT, dfkv_test_tenant_del(&self->g, NODE, TA));
	EXPECT_EQ(DFKV_STATUS_FORBIDDEN,
		  dfkv_test_tcp_call(fd, DFKV_OP_EXIST, &ka, 0, 0, NULL, 0, &r,
				     NULL, 0));
	EXPECT_EQ(DFKV_STATUS_FORBIDDEN, auth_as(fd, TA, nonce));
	/* Its blocks stay. */
	{
		struct dfkv_ioc_op o;

		ASSERT_EQ(0, dfkv_test_simple(self->dev, DFKV_IOC_EXIST, &ka,
					      &o));
		EXPECT_EQ(DFKV_STATUS_OK, o.status);
	}
	/* Registered again, a new proof authorizes again. */
	ASSERT_EQ(0, register_tenant(&self->g, NODE, TA));
	EXPECT_EQ(DFKV_STATUS_OK, auth_as(fd, TA, nonce));
	EXPECT_EQ(DFKV_STATUS_OK, dfkv_test_tcp_call(fd, DFKV_OP_EXIST, &ka, 0,
						     0, NULL, 0, &r, NULL, 0));
	close(fd);
}

/* ------------------------------------------------------------ /dev/dfkv */

/* DFKV_IOC_AUTH; the ioctl's return value (errno on -1). */
static int ioc_auth(int fd, uint64_t t, const uint8_t *secret, uint32_t flags)
{
	struct dfkv_ioc_auth a = { .size = sizeof(a), .flags = flags,
				   .tenant_hash = t };

	memcpy(a.secret, secret, sizeof(a.secret));
	return ioctl(fd, DFKV_IOC_AUTH, &a);
}

static int ioc_auth_as(int fd, uint64_t t)
{
	uint8_t s[DFKV_TENANT_SECRET_LEN];

	dfkv_test_secret(t, s);
	return ioc_auth(fd, t, s, 0);
}

static int keys_ioctl(int fd, unsigned long cmd, const struct dfkv_key *keys,
		      uint32_t n, uint64_t *res, struct dfkv_ioc_keys *out)
{
	memset(out, 0, sizeof(*out));
	out->size = sizeof(*out);
	out->keys = (uintptr_t)keys;
	out->count = n;
	out->results = (uintptr_t)res;
	return ioctl(fd, cmd, out);
}

/*
 * A GET into memory that is not mapped tells nothing of another tenant's
 * key: FORBIDDEN for the stored key bad as for the absent key fresh, never
 * the EFAULT that would say bad exists (and, by bisecting the buffer's
 * mapped part, its length).
 */
static void expect_get_unmapped_forbidden(struct __test_metadata *_metadata,
					  int fd, const struct dfkv_key *bad,
					  const struct dfkv_key *fresh)
{
	const struct dfkv_key *k[2] = { bad, fresh };
	struct dfkv_ioc_op o;
	void *hole;
	int i;

	hole = mmap(NULL, 1 << 20, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1,
		    0);
	ASSERT_NE(MAP_FAILED, hole);
	for (i = 0; i < 2; i++) {
		EXPECT_EQ(0, dfkv_test_get(fd, k[i], hole, 1 << 20, 0, 0, &o))
			TH_LOG("key %d: %s", i, strerror(errno));
		EXPECT_EQ(DFKV_STATUS_FORBIDDEN, o.status) TH_LOG("key %d", i);
		EXPECT_EQ(0, o.stored_len) TH_LOG("key %d", i);
	}
	munmap(hole, 1 << 20);
}

/*
 * Every op of fd on bad (a key list: after good) is FORBIDDEN, writes
 * nothing into the caller's buffers, and leaves fresh absent.
 */
static void expect_forbidden_dev(struct __test_metadata *_metadata, int fd,
				 const struct dfkv_key *bad,
				 const struct dfkv_key *fresh,
				 const struct dfkv_key *good)
{
	static const unsigned long kcmd[] = {
		DFKV_IOC_TOUCH, DFKV_IOC_PROBE, DFKV_IOC_LEASE,
	};
	struct dfkv_key mixed[2] = { *good, *bad };
	char v[VAL], out[VAL], in[100];
	struct iovec iov[3] = { { in, 10 }, { in + 10, 1 }, { in + 20, 80 } };
	uint64_t res[2];
	struct dfkv_ioc_keys kr;
	struct dfkv_ioc_op o;
	unsigned int i;

	memset(v, 0x77, sizeof(v));
	memset(in, 0x66, sizeof(in));
	memset(out, 0xee, sizeof(out));
	ASSERT_EQ(0, dfkv_test_get(fd, bad, out, sizeof(out), 0, 0, &o));
	EXPECT_EQ(DFKV_STATUS_FORBIDDEN, o.status);
	EXPECT_EQ(0, o.stored_len);
	EXPECT_EQ(0, o.data_len);
	EXPECT_EQ((char)0xee, out[0]);
	EXPECT_EQ((char)0xee, out[VAL - 1]);
	expect_get_unmapped_forbidden(_metadata, fd, bad, fresh);
	ASSERT_EQ(0, dfkv_test_put(fd, bad, v, sizeof(v), &o));
	EXPECT_EQ(DFKV_STATUS_FORBIDDEN, o.status);
	ASSERT_EQ(0, dfkv_test_put(fd, fresh, v, 10, &o));
	EXPECT_EQ(DFKV_STATUS_FORBIDDEN, o.status);
	ASSERT_EQ(0, dfkv_test_simple(fd, DFKV_IOC_EXIST, bad, &o));
	EXPECT_EQ(DFKV_STATUS_FORBIDDEN, o.status);
	EXPECT_EQ(0, o.stored_len);
	ASSERT_EQ(0, dfkv_test_simple(fd, DFKV_IOC_REMOVE, bad, &o));
	EXPECT_EQ(DFKV_STATUS_FORBIDDEN, o.status);
	for (i = 0; i < 3; i++) {
		res[0] = res[1] = 0x1234;
		ASSERT_EQ(0, keys_ioctl(fd, kcmd[i], mixed, 2,
					kcmd[i] == DFKV_IOC_TOUCH ? NULL : res,
					&kr)) TH_LOG("keys %u", i);
		EXPECT_EQ(DFKV_STATUS_FORBIDDEN, kr.status) TH_LOG("keys %u", i);
		/* Nothing of the refused keys comes back. */
		EXPECT_EQ(0x1234, res[0]) TH_LOG("keys %u", i);
		EXPECT_EQ(0x1234, res[1]) TH_LOG("keys %u", i);
		EXPECT_EQ(0, kr.nr_hits) TH_LOG("keys %u", i);
		if (kcmd[i] == DFKV_IOC_LEASE)
			EXPECT_EQ(0, kr.lease_id);
	}
	/* Scatter-gather PUT and GET. */
	memset(&o, 0, sizeof(o));
	o.size = sizeof(o);
	o.key = *fresh;
	o.flags = DFKV_OP_F_IOV;
	o.buf = (uintptr_t)iov;
	o.iovcnt = 3;
	o.length = 91;
	ASSERT_EQ(0, ioctl(fd, DFKV_IOC_PUT, &o));
	EXPECT_EQ(DFKV_STATUS_FORBIDDEN, o.status);
	o.op = 0;		/* the PUT wrote its op back */
	o.key = *bad;
	o.length = 0;
	ASSERT_EQ(0, ioctl(fd, DFKV_IOC_GET, &o));
	EXPECT_EQ(DFKV_STATUS_FORBIDDEN, o.status);
	EXPECT_EQ(0, o.data_len);
	EXPECT_EQ(0x66, in[0]);
}

/* A batch of six: two of good's tenant, four of bad's; each its status. */
static void expect_batch_statuses(struct __test_metadata *_metadata, int fd,
				  const struct dfkv_key *bad,
				  const struct dfkv_key *fresh,
				  const struct dfkv_key *good)
{
	struct dfkv_ioc_op ops[6];
	struct dfkv_ioc_batch b = { .size = sizeof(b), .count = 6,
				    .op_size = sizeof(ops[0]),
				    .ops = (uintptr_t)ops };
	static const int want[6] = {
		DFKV_STATUS_OK, DFKV_STATUS_FORBIDDEN, DFKV_STATUS_FORBIDDEN,
		DFKV_STATUS_OK, DFKV_STATUS_FORBIDDEN, DFKV_STATUS_FORBIDDEN,
	};
	char out[2][VAL];
	int i;

	ops[0] = (struct dfkv_ioc_op){ .size = sizeof(ops[0]),
				       .op = DFKV_OP_PUT, .key = *good,
				       .buf = (uintptr_t)"good", .length = 4 };
	ops[1] = (struct dfkv_ioc_op){ .size = sizeof(ops[0]),
				       .op = DFKV_OP_PUT, .key = *fresh,
				       .buf = (uintptr_t)"bad", .length = 3 };
	ops[2] = (struct dfkv_ioc_op){ .size = sizeof(ops[0]),
				       .op = DFKV_OP_GET, .key = *bad,
				       .buf = (uintptr_t)out[0], .cap = VAL };
	ops[3] = (struct dfkv_ioc_op){ .size = sizeof(ops[0]),
				       .op = DFKV_OP_GET, .key = *good,
				       .buf = (uintptr_t)out[1], .cap = VAL };
	ops[4] = (struct dfkv_ioc_op){ .size = sizeof(ops[0]),
				       .op = DFKV_OP_EXIST, .key = *bad };
	ops[5] = (struct dfkv_ioc_op){ .size = sizeof(ops[0]),
				       .op = DFKV_OP_REMOVE, .key = *bad };
	ASSERT_EQ(0, ioctl(fd, DFKV_IOC_BATCH, &b));
	EXPECT_EQ(6, b.nr_done);
	for (i = 0; i < 6; i++)
		EXPECT_EQ(want[i], ops[i].status) TH_LOG("entry %d", i);
	EXPECT_EQ(4, ops[3].data_len);
	EXPECT_EQ(0, ops[2].data_len);
}

/*
 * Run fn in a child without CAP_NET_ADMIN (root acts for every tenant);
 * the child's EXPECTs are its exit status.  sync (if not NULL) is a pipe
 * pair the parent's step runs between: the child writes a byte when it
 * wants step, reads one when step is done.
 */
typedef void (*child_fn)(struct __test_metadata *_metadata,
			 FIXTURE_DATA(auth) *self, int *sync);
typedef void (*parent_step)(struct __test_metadata *_metadata,
			    FIXTURE_DATA(auth) *self);

static void run_unprivileged(struct __test_metadata *_metadata,
			     FIXTURE_DATA(auth) *self, child_fn fn,
			     parent_step step)
{
	int to_parent[2], to_child[2], status;
	int sync[2];
	pid_t pid;
	char c;

	ASSERT_EQ(0, pipe(to_parent));
	ASSERT_EQ(0, pipe(to_child));
	fflush(stdout);
	fflush(stderr);
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		struct dfkv_genl g;
		int null = open("/dev/null", O_RDWR);

		/*
		 * The fixture's netlink socket is the parent's: a teardown
		 * run here (a failed ASSERT) must not talk on it.
		 */
		dup2(null, mnl_socket_get_fd(self->g.nl));
		sync[0] = to_child[0];
		sync[1] = to_parent[1];
		/* Privileges gone: an admin command is refused now. */
		if (dfkv_test_drop_cap(CAP_NET_ADMIN) ||
		    dfkv_genl_open(&g) ||
		    dfkv_test_node_set_u32(&g, NODE, DFKV_A_NODE_AUTH,
					   DFKV_AUTH_REQUIRED) != -EPERM) {
			TH_LOG("CAP_NET_ADMIN not dropped");
			_exit(2);
		}
		/* ...and so is reading tenants (they reveal who is here). */
		{
			struct dfkv_test_tenant t;

			EXPECT_EQ(-EPERM, dfkv_test_tenant_get(&g, NODE, TA,
							       &t));
		}
		/* ...or the node's counters of tenants and their AUTHs. */
		EXPECT_LE(0, dfkv_test_stat(&g, NODE, DFKV_STAT_OBJECTS));
		EXPECT_EQ(-1, dfkv_test_stat(&g, NODE, DFKV_STAT_TENANTS));
		EXPECT_EQ(-1, dfkv_test_stat(&g, NODE, DFKV_STAT_AUTH_OK));
		EXPECT_EQ(-1, dfkv_test_stat(&g, NODE,
					     DFKV_STAT_AUTH_FAILURES));
		EXPECT_EQ(-1, dfkv_test_stat(&g, NODE, DFKV_STAT_FORBIDDEN));
		EXPECT_EQ(-1, dfkv_test_stat(&g, NODE,
					     DFKV_STAT_QUOTA_REJECTIONS));
		dfkv_genl_close(&g);
		fn(_metadata, self, sync);
		_exit(_metadata->passed ? 0 : 1);
	}
	if (step) {
		if (read(to_parent[0], &c, 1) == 1) {
			step(_metadata, self);
			ASSERT_EQ(1, write(to_child[1], "g", 1));
		}
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_TRUE(WIFEXITED(status));
	EXPECT_EQ(0, WEXITSTATUS(status));
	close(to_parent[0]);
	close(to_parent[1]);
	close(to_child[0]);
	close(to_child[1]);
}

static void child_cross_tenant(struct __test_metadata *_metadata,
			       FIXTURE_DATA(auth) *self, int *sync)
{
	struct dfkv_key ka = dfkv_test_key(TA, 5), fresh = dfkv_test_key(TB, 9);
	uint8_t wrong[DFKV_TENANT_SECRET_LEN];
	struct dfkv_ioc_op o;
	char out[VAL];
	int fd = dfkv_test_open(NODE), unbound;

	(void)sync;
	ASSERT_LE(0, fd);
	/* Not authorized for anyone yet. */
	expect_forbidden_dev(_metadata, fd, &self->kb[0], &fresh, &ka);
	expect_forbidden_dev(_metadata, fd, &ka, &fresh, &self->kb[1]);
	/* DFKV_IOC_AUTH: wrong secret, unknown tenant, flags, unbound. */
	dfkv_test_secret(TB, wrong);
	EXPECT_EQ(-1, ioc_auth(fd, TA, wrong, 0));
	EXPECT_EQ(EACCES, errno);
	EXPECT_EQ(-1, ioc_auth_as(fd, 0x5eed));
	EXPECT_EQ(EACCES, errno);
	dfkv_test_secret(TA, wrong);
	EXPECT_EQ(-1, ioc_auth(fd, TA, wrong, 1));
	EXPECT_EQ(EINVAL, errno);
	unbound = open("/dev/dfkv", O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, unbound);
	EXPECT_EQ(-1, ioc_auth_as(unbound, TA));
	EXPECT_EQ(ENOTCONN, errno);
	close(unbound);
	/* Authorized for A: A's keys work, B's do not. */
	ASSERT_EQ(0, ioc_auth_as(fd, TA));
	ASSERT_EQ(0, dfkv_test_put(fd, &ka, "mine", 4, &o));
	EXPECT_EQ(DFKV_STATUS_OK, o.status);
	expect_forbidden_dev(_metadata, fd, &self->kb[0], &fresh, &ka);
	expect_batch_statuses(_metadata, fd, &self->kb[0], &fresh, &ka);
	/* A scatter-gather PUT of A's is fine. */
	{
		struct iovec iov[2] = { { "ab", 2 }, { "cd", 2 } };

		memset(&o, 0, sizeof(o));
		o.size = sizeof(o);
		o.key = dfkv_test_key(TA, 6);
		o.flags = DFKV_OP_F_IOV;
		o.buf = (uintptr_t)iov;
		o.iovcnt = 2;
		o.length = 4;
		ASSERT_EQ(0, ioctl(fd, DFKV_IOC_PUT, &o));
		EXPECT_EQ(DFKV_STATUS_OK, o.status);
	}
	/* With B's secret too, B's bytes are readable. */
	ASSERT_EQ(0, ioc_auth_as(fd, TB));
	ASSERT_EQ(0, dfkv_test_get(fd, &self->kb[0], out, sizeof(out), 0, 0,
				   &o));
	EXPECT_EQ(DFKV_STATUS_OK, o.status);
	EXPECT_TRUE(dfkv_test_verify(out, VAL, &self->kb[0], 1));
	close(fd);
}

TEST_F(auth, dev_without_cap_net_admin)
{
	struct dfkv_key fresh = dfkv_test_key(TB, 9);
	int64_t fails = dfkv_test_stat(&self->g, NODE, DFKV_STAT_AUTH_FAILURES);

	run_unprivileged(_metadata, self, child_cross_tenant, NULL);
	expect_untouched(_metadata, self, &fresh);
	/* two wrong or unknown (flags and unbound are not AUTHs) */
	EXPECT_EQ(fails + 2, dfkv_test_stat(&self->g, NODE,
					    DFKV_STAT_AUTH_FAILURES));
	/* What A stored is there. */
	{
		struct dfkv_key ka[2] = { dfkv_test_key(TA, 5),
					  dfkv_test_key(TA, 6) };
		uint64_t res[2] = { 0 };
		struct dfkv_ioc_keys kr;

		ASSERT_EQ(0, keys_ioctl(self->dev, DFKV_IOC_PROBE, ka, 2, res,
					&kr));
		EXPECT_EQ(DFKV_STATUS_OK, kr.status);
		EXPECT_EQ(4, res[0]);
		EXPECT_EQ(4, res[1]);
	}
}

static void child_seventeen(struct __test_metadata *_metadata,
			    FIXTURE_DATA(auth) *self, int *sync)
{
	int fd = dfkv_test_open(NODE), i;

	(void)self;
	(void)sync;
	ASSERT_LE(0, fd);
	for (i = 0; i < DFKV_AUTH_TENANTS_MAX; i++)
		EXPECT_EQ(0, ioc_auth_as(fd, T17(i))) TH_LOG("tenant %d", i);
	EXPECT_EQ(-1, ioc_auth_as(fd, T17(NTEN - 1)));
	EXPECT_EQ(ENOSPC, errno);
	EXPECT_EQ(0, ioc_auth_as(fd, T17(0)));
	close(fd);
}

TEST_F(auth, dev_seventeen_tenants)
{
	for (int i = 0; i < NTEN; i++)
		ASSERT_EQ(0, register_tenant(&self->g, NODE, T17(i)));
	run_unprivileged(_metadata, self, child_seventeen, NULL);
}

static void child_revoked(struct __test_metadata *_metadata,
			  FIXTURE_DATA(auth) *self, int *sync)
{
	struct dfkv_key ka = dfkv_test_key(TA, 7);
	struct dfkv_ioc_op o;
	int fd = dfkv_test_open(NODE);
	char c;

	(void)self;
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, ioc_auth_as(fd, TA));
	ASSERT_EQ(0, dfkv_test_put(fd, &ka, "a", 1, &o));
	EXPECT_EQ(DFKV_STATUS_OK, o.status);
	/* the parent deletes A */
	ASSERT_EQ(1, write(sync[1], "d", 1));
	ASSERT_EQ(1, read(sync[0], &c, 1));
	ASSERT_EQ(0, dfkv_test_simple(fd, DFKV_IOC_EXIST, &ka, &o));
	EXPECT_EQ(DFKV_STATUS_FORBIDDEN, o.status);
	EXPECT_EQ(-1, ioc_auth_as(fd, TA));
	EXPECT_EQ(EACCES, errno);
	close(fd);
}

static void delete_a(struct __test_metadata *_metadata,
		     FIXTURE_DATA(auth) *self)
{
	ASSERT_EQ(0, dfkv_test_tenant_del(&self->g, NODE, TA));
}

TEST_F(auth, dev_tenant_del_revokes)
{
	run_unprivileged(_metadata, self, child_revoked, delete_a);
}

/* --------------------------------------------------------------- netlink */

struct leak_ctx {
	const uint8_t *secret;
	int msgs, leaks;
};

static int leak_cb(const struct nlmsghdr *nlh, void *data)
{
	struct leak_ctx *c = data;

	c->msgs++;
	if (memmem(nlh, nlh->nlmsg_len, c->secret, DFKV_TENANT_SECRET_LEN))
		c->leaks++;
	return MNL_CB_OK;
}

/* Replies of TENANT_GET (doit, dump) and NODE_GET: none holds secret. */
static void expect_no_secret_in_replies(struct __test_metadata *_metadata,
					struct dfkv_genl *g,
					const uint8_t *secret)
{
	static const struct { uint8_t cmd; uint16_t flags; int tenant; } req[] = {
		{ DFKV_CMD_TENANT_GET, 0, 1 },
		{ DFKV_CMD_TENANT_GET, NLM_F_DUMP, 0 },
		{ DFKV_CMD_NODE_GET, 0, 0 },
		{ DFKV_CMD_NODE_GET, NLM_F_DUMP, 0 },
	};
	char buf[MNL_SOCKET_BUFFER_SIZE];

	for (unsigned int i = 0; i < sizeof(req) / sizeof(req[0]); i++) {
		struct nlmsghdr *nlh = dfkv_genl_msg(g, buf, req[i].cmd,
						     req[i].flags);
		struct leak_ctx c = { .secret = secret };

		if (!(req[i].flags & NLM_F_DUMP) || req[i].cmd ==
		    DFKV_CMD_TENANT_GET)
			mnl_attr_put_strz(nlh, DFKV_A_NODE_NAME, NODE);
		if (req[i].tenant)
			mnl_attr_put_u64(nlh, DFKV_A_TENANT_HASH, TA);
		ASSERT_EQ(0, dfkv_genl_talk(g, nlh, leak_cb, &c)) TH_LOG("req %u",
									 i);
		EXPECT_LT(0, c.msgs) TH_LOG("req %u", i);
		EXPECT_EQ(0, c.leaks) TH_LOG("req %u", i);
	}
}

/* The kernel log (all of /dev/kmsg's records) holds none of needle. */
static int kmsg_has(const void *needle, size_t len)
{
	static char rec[8192];
	int fd = open("/dev/kmsg", O_RDONLY | O_NONBLOCK), found = 0;
	ssize_t n;

	if (fd < 0)
		return -1;
	while ((n = read(fd, rec, sizeof(rec))) > 0 || (n < 0 && errno == EPIPE))
		if (n > 0 && memmem(rec, n, needle, len))
			found = 1;
	close(fd);
	return found;
}

static void expect_not_logged(struct __test_metadata *_metadata,
			      const uint8_t *secret)
{
	char hex[2 * DFKV_TENANT_SECRET_LEN + 1];
	int i;

	EXPECT_EQ(0, kmsg_has(secret, DFKV_TENANT_SECRET_LEN));
	/* the first 8 bytes are enough to tell a leak (printable prefix) */
	EXPECT_EQ(0, kmsg_has(secret, 8));
	for (i = 0; i < DFKV_TENANT_SECRET_LEN; i++)
		sprintf(hex + 2 * i, "%02x", secret[i]);
	EXPECT_EQ(0, kmsg_has(hex, 16));
}

/*
 * A secret is exactly 32 bytes: the policy refuses any other length with
 * -ERANGE and an extended ack, as every out-of-range attribute.
 */
/* An EXIST of t's key 1 on fd: its status. */
static int exist_as(int fd, uint64_t t)
{
	struct dfkv_key k = dfkv_test_key(t, 1);
	struct dfkv_test_resp r;

	return dfkv_test_tcp_call(fd, DFKV_OP_EXIST, &k, 0, 0, NULL, 0, &r,
				  NULL, 0);
}

/* A connection authorized for TA with secret s; fd or -1. */
static int conn_with(const uint8_t *s)
{
	uint8_t hs[DFKV_HS_LEN];
	int fd = dfkv_test_tcp_connect(PORT);

	if (fd >= 0 && (hello(fd, hs, NULL) != DFKV_STATUS_OK ||
			auth(fd, TA, s, hs) != DFKV_STATUS_OK)) {
		close(fd);
		fd = -1;
	}
	return fd;
}

TEST_F(auth, rotation_with_two_secrets)
{
	uint8_t s1[DFKV_TENANT_SECRET_LEN], s2[DFKV_TENANT_SECRET_LEN];
	uint8_t s3[DFKV_TENANT_SECRET_LEN];
	struct dfkv_test_tenant t;
	int old, new, fd;

	dfkv_test_secret(TA, s1);
	memcpy(s2, "R0tat3d-s3cret-of-A-0123456789ab", sizeof(s2));
	memcpy(s3, "Th1rd-s3cret-of-A-0123456789abcd", sizeof(s3));
	old = conn_with(s1);
	ASSERT_LE(0, old);
	/* Add the successor: both authorize, the old grant stays. */
	ASSERT_EQ(0, dfkv_test_tenant_secret(&self->g, NODE, TA,
					     DFKV_A_TENANT_SECRET_ADD, s2))
		TH_LOG("%s", self->g.errmsg);
	ASSERT_EQ(0, dfkv_test_tenant_get(&self->g, NODE, TA, &t));
	EXPECT_EQ(2, t.secrets);
	new = conn_with(s2);
	ASSERT_LE(0, new);
	fd = conn_with(s1);
	EXPECT_LE(0, fd);
	close(fd);
	EXPECT_EQ(DFKV_STATUS_NOT_FOUND, exist_as(old, TA));
	EXPECT_EQ(DFKV_STATUS_NOT_FOUND, exist_as(new, TA));
	/* Adding what it holds changes nothing; a third one is refused. */
	EXPECT_EQ(0, dfkv_test_tenant_secret(&self->g, NODE, TA,
					     DFKV_A_TENANT_SECRET_ADD, s2));
	EXPECT_EQ(-ENOSPC, dfkv_test_tenant_secret(&self->g, NODE, TA,
						   DFKV_A_TENANT_SECRET_ADD,
						   s3));
	EXPECT_NE(NULL, strstr(self->g.errmsg, "two secrets"));
	EXPECT_EQ(-ENOENT, dfkv_test_tenant_secret(&self->g, NODE, TA,
						   DFKV_A_TENANT_SECRET_DROP,
						   s3));
	/* Drop the old one: its grants go at once, the new ones stay. */
	ASSERT_EQ(0, dfkv_test_tenant_secret(&self->g, NODE, TA,
					     DFKV_A_TENANT_SECRET_DROP, s1));
	EXPECT_EQ(DFKV_STATUS_FORBIDDEN, exist_as(old, TA));
	EXPECT_EQ(DFKV_STATUS_NOT_FOUND, exist_as(new, TA));
	EXPECT_EQ(-1, conn_with(s1));
	ASSERT_EQ(0, dfkv_test_tenant_get(&self->g, NODE, TA, &t));
	EXPECT_EQ(1, t.secrets);
	/* The only secret is not dropped (replace it, or delete the tenant). */
	EXPECT_EQ(-EBUSY, dfkv_test_tenant_secret(&self->g, NODE, TA,
						  DFKV_A_TENANT_SECRET_DROP,
						  s2));
	EXPECT_EQ(DFKV_STATUS_NOT_FOUND, exist_as(new, TA));
	/* Setting the secret it holds keeps that secret's grants. */
	ASSERT_EQ(0, dfkv_test_tenant_set(&self->g, NODE, TA, s2, sizeof(s2),
					   NULL));
	EXPECT_EQ(DFKV_STATUS_NOT_FOUND, exist_as(new, TA));
	close(old);
	close(new);
	expect_no_secret_in_replies(_metadata, &self->g, s2);
}

TEST_F(auth, stats_needs_a_grant)
{
	int fd = dfkv_test_tcp_connect(PORT);

	ASSERT_LE(0, fd);
	EXPECT_EQ(DFKV_STATUS_FORBIDDEN, stats(fd));
	EXPECT_TRUE(stream_ok(fd));
	close(fd);
	fd = conn_as(TB);
	ASSERT_LE(0, fd);
	EXPECT_EQ(DFKV_STATUS_OK, stats(fd));
	close(fd);
	ASSERT_EQ(0, dfkv_test_node_set_u32(&self->g, NODE, DFKV_A_NODE_AUTH,
					    DFKV_AUTH_OFF));
	fd = dfkv_test_tcp_connect(PORT);
	ASSERT_LE(0, fd);
	EXPECT_EQ(DFKV_STATUS_OK, stats(fd));
	close(fd);
}

TEST_F(auth, tenant_secret_of_another_length_is_refused)
{
	uint8_t s[DFKV_TENANT_SECRET_LEN + 1] = { 0 };
	struct dfkv_test_tenant t;
	int fd;

	EXPECT_EQ(-ERANGE, dfkv_test_tenant_set(&self->g, NODE, TA, s, 31,
						NULL));
	EXPECT_NE(0, self->g.errmsg[0]);
	EXPECT_EQ(-ERANGE, dfkv_test_tenant_set(&self->g, NODE, TA, s, 33,
						NULL));
	EXPECT_NE(0, self->g.errmsg[0]);
	/* Neither changed A's secret. */
	ASSERT_EQ(0, dfkv_test_tenant_get(&self->g, NODE, TA, &t));
	EXPECT_EQ(DFKV_TENANT_F_REGISTERED | DFKV_TENANT_F_SECRET, t.flags);
	fd = conn_as(TA);
	EXPECT_LE(0, fd);
	close(fd);
}

TEST_F(auth, tenant_commands_and_secrets_never_shown)
{
	uint8_t s1[DFKV_TENANT_SECRET_LEN], s2[DFKV_TENANT_SECRET_LEN];
	uint8_t nonce[DFKV_HS_LEN], n2[DFKV_HS_LEN];
	struct dfkv_test_tenant t;
	uint64_t q = 12345;
	int old, fd;

	dfkv_test_secret(TA, s1);
	memcpy(s2, "N3w-s3cret-of-A-0123456789abcdef", sizeof(s2));
	/* Strict attributes: no node, no tenant */
	EXPECT_EQ(-ENOENT, dfkv_test_tenant_set(&self->g, "t-none", TA, s2,
						sizeof(s2), NULL));
	EXPECT_EQ(-ENOENT, dfkv_test_tenant_get(&self->g, NODE, 0x5eed, &t));
	EXPECT_EQ(-ENOENT, dfkv_test_tenant_del(&self->g, NODE, 0x5eed));
	/* A's entry: registered with a secret, the node's quota (0). */
	ASSERT_EQ(0, dfkv_test_tenant_get(&self->g, NODE, TA, &t));
	EXPECT_EQ(DFKV_TENANT_F_REGISTERED | DFKV_TENANT_F_SECRET, t.flags);
	EXPECT_EQ(0, t.quota);
	/* A quota alone keeps the secret. */
	ASSERT_EQ(0, dfkv_test_tenant_set(&self->g, NODE, TA, NULL, 0, &q));
	ASSERT_EQ(0, dfkv_test_tenant_get(&self->g, NODE, TA, &t));
	EXPECT_EQ(DFKV_TENANT_F_REGISTERED | DFKV_TENANT_F_SECRET |
		  DFKV_TENANT_F_QUOTA, t.flags);
	EXPECT_EQ(12345, t.quota);
	old = conn_as(TA);
	ASSERT_LE(0, old);
	expect_no_secret_in_replies(_metadata, &self->g, s1);
	/* Replacing the secret: the old one no longer works, the new one
	 * does, and a connection granted with the old one loses that. */
	ASSERT_EQ(0, dfkv_test_tenant_set(&self->g, NODE, TA, s2, sizeof(s2),
					   NULL));
	fd = dfkv_test_tcp_connect(PORT);
	ASSERT_LE(0, fd);
	ASSERT_EQ(DFKV_STATUS_OK, hello(fd, nonce, NULL));
	EXPECT_EQ(DFKV_STATUS_FORBIDDEN, auth(fd, TA, s1, nonce));
	EXPECT_EQ(DFKV_STATUS_OK, auth(fd, TA, s2, nonce));
	close(fd);
	{
		struct dfkv_key ka = dfkv_test_key(TA, 1);
		struct dfkv_test_resp r;

		EXPECT_EQ(DFKV_STATUS_FORBIDDEN,
			  dfkv_test_tcp_call(old, DFKV_OP_EXIST, &ka, 0, 0,
					     NULL, 0, &r, NULL, 0));
	}
	close(old);
	/* The same over /dev/dfkv (as root this still counts the AUTH). */
	EXPECT_EQ(-1, ioc_auth(self->dev, TA, s1, 0));
	EXPECT_EQ(0, ioc_auth(self->dev, TA, s2, 0));
	expect_no_secret_in_replies(_metadata, &self->g, s2);
	/* A's stats name what happened (no secret there either). */
	ASSERT_EQ(0, dfkv_test_tenant_get(&self->g, NODE, TA, &t));
	EXPECT_LE(3, t.stat[DFKV_STAT_AUTH_OK]);
	EXPECT_LE(2, t.stat[DFKV_STAT_AUTH_FAILURES]);
	ASSERT_EQ(0, dfkv_test_tenant_del(&self->g, NODE, TA));
	/* After deletion the wiped secret does not authorize. */
	fd = dfkv_test_tcp_connect(PORT);
	ASSERT_LE(0, fd);
	ASSERT_EQ(DFKV_STATUS_OK, hello(fd, n2, NULL));
	EXPECT_EQ(DFKV_STATUS_FORBIDDEN, auth(fd, TA, s2, n2));
	close(fd);
	ASSERT_LE(0, kmsg_has("", 0)) TH_LOG("cannot read /dev/kmsg");
	expect_not_logged(_metadata, s1);
	expect_not_logged(_metadata, s2);
}

struct dump_seen {
	int n;
	uint64_t hash[8];
	uint32_t flags[8];
};

static int dump_cb(const struct nlmsghdr *nlh, void *data)
{
	const struct nlattr *tb[DFKV_A_MAX + 1];
	struct dump_seen *d = data;

	dfkv_genl_parse(nlh, tb);
	if (!tb[DFKV_A_TENANT_HASH] || d->n >= 8)
		return MNL_CB_OK;
	d->hash[d->n] = mnl_attr_get_u64(tb[DFKV_A_TENANT_HASH]);
	d->flags[d->n++] = tb[DFKV_A_TENANT_FLAGS] ?
		mnl_attr_get_u32(tb[DFKV_A_TENANT_FLAGS]) : ~0U;
	return MNL_CB_OK;
}

/* The dump's flags of tenant t, or -1 when it is not listed. */
static int64_t dumped(struct dfkv_genl *g, uint64_t t)
{
	char buf[MNL_SOCKET_BUFFER_SIZE];
	struct nlmsghdr *nlh = dfkv_genl_msg(g, buf, DFKV_CMD_TENANT_GET,
					     NLM_F_DUMP);
	struct dump_seen d = { 0 };

	mnl_attr_put_strz(nlh, DFKV_A_NODE_NAME, NODE);
	if (dfkv_genl_talk(g, nlh, dump_cb, &d))
		return -2;
	for (int i = 0; i < d.n; i++)
		if (d.hash[i] == t)
			return d.flags[i];
	return -1;
}

struct node_auth {
	uint32_t auth;
	uint64_t quota;
};

static int node_auth_cb(const struct nlmsghdr *nlh, void *data)
{
	const struct nlattr *tb[DFKV_A_MAX + 1];
	struct node_auth *n = data;

	dfkv_genl_parse(nlh, tb);
	if (tb[DFKV_A_NODE_AUTH])
		n->auth = mnl_attr_get_u32(tb[DFKV_A_NODE_AUTH]);
	if (tb[DFKV_A_NODE_TENANT_QUOTA])
		n->quota = mnl_attr_get_u64(tb[DFKV_A_NODE_TENANT_QUOTA]);
	return MNL_CB_OK;
}

#define TU	0x7777777700000077ULL	/* never registered */

TEST_F(auth, tenant_dump_and_node_attributes)
{
	char buf[MNL_SOCKET_BUFFER_SIZE];
	struct node_auth na = { 0 };
	struct nlmsghdr *nlh;
	struct dfkv_ioc_op o;
	struct dfkv_key ku = dfkv_test_key(TU, 1);

	ASSERT_EQ(0, dfkv_test_put(self->dev, &ku, "u", 1, &o));
	/* Registered ones (blocks or not) and those with blocks. */
	EXPECT_EQ(DFKV_TENANT_F_REGISTERED | DFKV_TENANT_F_SECRET,
		  dumped(&self->g, TA));
	EXPECT_EQ(DFKV_TENANT_F_REGISTERED | DFKV_TENANT_F_SECRET,
		  dumped(&self->g, TB));
	EXPECT_EQ(0, dumped(&self->g, TU));
	/* Unregistered: A (no blocks) goes, B (blocks) stays listed. */
	ASSERT_EQ(0, dfkv_test_tenant_del(&self->g, NODE, TA));
	ASSERT_EQ(0, dfkv_test_tenant_del(&self->g, NODE, TB));
	EXPECT_EQ(-1, dumped(&self->g, TA));
	EXPECT_EQ(0, dumped(&self->g, TB));
	EXPECT_EQ(-ENOENT, dfkv_test_tenant_del(&self->g, NODE, TU));
	/* The node's auth mode and default quota come back. */
	ASSERT_EQ(0, dfkv_test_node_set_u64(&self->g, NODE,
					    DFKV_A_NODE_TENANT_QUOTA, 4242));
	nlh = dfkv_genl_msg(&self->g, buf, DFKV_CMD_NODE_GET, 0);
	mnl_attr_put_strz(nlh, DFKV_A_NODE_NAME, NODE);
	ASSERT_EQ(0, dfkv_genl_talk(&self->g, nlh, node_auth_cb, &na));
	EXPECT_EQ(DFKV_AUTH_REQUIRED, na.auth);
	EXPECT_EQ(4242, na.quota);
}

/* ---------------------------------------------------------------- quotas */

/* PUT len bytes of (tenant t, n) through fd; its status or -1. */
static int put_n(int fd, uint64_t t, uint64_t n, uint64_t len)
{
	static char v[1 << 20];
	struct dfkv_key k = dfkv_test_key(t, n);
	struct dfkv_ioc_op o;

	if (len > sizeof(v) || dfkv_test_put(fd, &k, v, len, &o))
		return -1;
	return (int)o.status;
}

static int64_t tstat(struct dfkv_genl *g, const char *node, uint64_t t,
		     int stat)
{
	struct dfkv_test_tenant ts;

	return dfkv_test_tenant_get(g, node, t, &ts) ? -2 : ts.stat[stat];
}

#define TC	0x0c0c0c0c00000003ULL

TEST_F(auth, quota_is_exact_and_per_tenant)
{
	int64_t rej = dfkv_test_stat(&self->g, NODE, DFKV_STAT_QUOTA_REJECTIONS);
	struct dfkv_key kc = dfkv_test_key(TC, 5), kb = dfkv_test_key(TB, 50);
	struct dfkv_ioc_op ops[3], o;
	struct dfkv_ioc_batch b = { .size = sizeof(b), .count = 3,
				    .op_size = sizeof(ops[0]),
				    .ops = (uintptr_t)ops };
	struct dfkv_test_tenant t;
	uint64_t q = 3000;
	int i;

	ASSERT_EQ(0, dfkv_test_tenant_set(&self->g, NODE, TC, NULL, 0, &q));
	for (i = 0; i < 3; i++)
		EXPECT_EQ(DFKV_STATUS_OK, put_n(self->dev, TC, i, 1000));
	/* One byte over: refused for C only. */
	EXPECT_EQ(DFKV_STATUS_QUOTA_EXCEEDED, put_n(self->dev, TC, 3, 1));
	EXPECT_EQ(DFKV_STATUS_OK, put_n(self->dev, TB, 10, 5000));
	/* A key already present is OK at the quota (and keeps its bytes). */
	EXPECT_EQ(DFKV_STATUS_OK, put_n(self->dev, TC, 0, 1000));
	EXPECT_EQ(DFKV_STATUS_OK, put_n(self->dev, TC, 1, 999));
	ASSERT_EQ(0, dfkv_test_tenant_get(&self->g, NODE, TC, &t));
	EXPECT_EQ(DFKV_TENANT_F_REGISTERED | DFKV_TENANT_F_QUOTA, t.flags);
	EXPECT_EQ(3000, t.quota);
	EXPECT_EQ(3000, t.stat[DFKV_STAT_CHARGED_BYTES]);
	EXPECT_EQ(3000, t.stat[DFKV_STAT_USED_BYTES]);
	EXPECT_EQ(3, t.stat[DFKV_STAT_OBJECTS]);
	EXPECT_EQ(1, t.stat[DFKV_STAT_QUOTA_REJECTIONS]);
	/* A mixed batch: C's new key refused, B's admitted, C's read. */
	memset(ops, 0, sizeof(ops));
	ops[0] = (struct dfkv_ioc_op){ .size = sizeof(ops[0]), .op = DFKV_OP_PUT,
				       .key = kc, .buf = (uintptr_t)"ccc",
				       .length = 3 };
	ops[1] = (struct dfkv_ioc_op){ .size = sizeof(ops[0]), .op = DFKV_OP_PUT,
				       .key = kb, .buf = (uintptr_t)"bbb",
				       .length = 3 };
	ops[2] = (struct dfkv_ioc_op){ .size = sizeof(ops[0]),
				       .op = DFKV_OP_EXIST,
				       .key = dfkv_test_key(TC, 2) };
	ASSERT_EQ(0, ioctl(self->dev, DFKV_IOC_BATCH, &b));
	EXPECT_EQ(3, b.nr_done);
	EXPECT_EQ(DFKV_STATUS_QUOTA_EXCEEDED, ops[0].status);
	EXPECT_EQ(DFKV_STATUS_OK, ops[1].status);
	EXPECT_EQ(DFKV_STATUS_OK, ops[2].status);
	EXPECT_EQ(rej + 2, dfkv_test_stat(&self->g, NODE,
					  DFKV_STAT_QUOTA_REJECTIONS));
	/* REMOVE gives the bytes back, to the byte. */
	kc = dfkv_test_key(TC, 1);
	ASSERT_EQ(0, dfkv_test_simple(self->dev, DFKV_IOC_REMOVE, &kc, &o));
	EXPECT_EQ(2000, tstat(&self->g, NODE, TC, DFKV_STAT_CHARGED_BYTES));
	EXPECT_EQ(2000, tstat(&self->g, NODE, TC, DFKV_STAT_USED_BYTES));
	EXPECT_EQ(DFKV_STATUS_QUOTA_EXCEEDED, put_n(self->dev, TC, 3, 1001));
	EXPECT_EQ(DFKV_STATUS_OK, put_n(self->dev, TC, 3, 1000));
	EXPECT_EQ(3000, tstat(&self->g, NODE, TC, DFKV_STAT_CHARGED_BYTES));
	/* A quota lowered below the usage evicts nothing, refuses new. */
	q = 1000;
	ASSERT_EQ(0, dfkv_test_tenant_set(&self->g, NODE, TC, NULL, 0, &q));
	EXPECT_EQ(3, tstat(&self->g, NODE, TC, DFKV_STAT_OBJECTS));
	EXPECT_EQ(DFKV_STATUS_QUOTA_EXCEEDED, put_n(self->dev, TC, 4, 1));
	/* 0 is unlimited. */
	q = 0;
	ASSERT_EQ(0, dfkv_test_tenant_set(&self->g, NODE, TC, NULL, 0, &q));
	EXPECT_EQ(DFKV_STATUS_OK, put_n(self->dev, TC, 4, 100000));
	/* The same quota over TCP: the refusal is the tenant's only. */
	q = 103000;
	ASSERT_EQ(0, dfkv_test_tenant_set(&self->g, NODE, TC, NULL, 0, &q));
	ASSERT_EQ(0, register_tenant(&self->g, NODE, TC));
	{
		struct dfkv_key k = dfkv_test_key(TC, 6);
		struct dfkv_test_resp r;
		int fd = conn_as(TC);

		ASSERT_LE(0, fd);
		EXPECT_EQ(DFKV_STATUS_QUOTA_EXCEEDED,
			  dfkv_test_tcp_call(fd, DFKV_OP_PUT, &k, 0, 0, "x", 1,
					     &r, NULL, 0));
		close(fd);
	}
}

#define TK	0x1313131300000013ULL

/* Poll a stat of tenant t until it is want (10 s at most); the last value. */
static int64_t stat_becomes(struct dfkv_genl *g, const char *node, uint64_t t,
			    int stat, int64_t want)
{
	int64_t v = -1;

	for (int i = 0; i < 100; i++) {
		v = tstat(g, node, t, stat);
		if (v == want)
			break;
		usleep(100 * 1000);
	}
	return v;
}

static int64_t charge_becomes(struct dfkv_genl *g, uint64_t t, int64_t want)
{
	return stat_becomes(g, NODE, t, DFKV_STAT_CHARGED_BYTES, want);
}

/*
 * A PUT still receiving its payload holds its charge: another PUT that
 * would go over is refused meanwhile; when the first one's peer goes
 * away its bytes come back, to the byte.
 */
TEST_F(auth, inflight_put_is_charged_and_an_aborted_one_gives_back)
{
	uint8_t h[DFKV_REQ_PREFIX_LEN] = { DFKV_EPOCH_TCP, DFKV_OP_PUT }, v[1000];
	struct dfkv_key k = dfkv_test_key(TK, 1);
	uint64_t q = 3000;
	int fd;

	ASSERT_EQ(0, dfkv_test_tenant_set(&self->g, NODE, TK, NULL, 0, &q));
	ASSERT_EQ(0, register_tenant(&self->g, NODE, TK));
	EXPECT_EQ(DFKV_STATUS_OK, put_n(self->dev, TK, 0, 500));
	fd = conn_as(TK);
	ASSERT_LE(0, fd);
	memcpy(h + 2, k.id, DFKV_OBJECT_ID_LEN);
	dfkv_test_le64(h + 18, k.tenant);
	dfkv_test_le64(h + 42, 2000);
	memset(v, 'k', sizeof(v));
	ASSERT_EQ(sizeof(h), write(fd, h, sizeof(h)));
	ASSERT_EQ(sizeof(v), write(fd, v, sizeof(v)));
	EXPECT_EQ(2500, charge_becomes(&self->g, TK, 2500));
	EXPECT_EQ(DFKV_STATUS_QUOTA_EXCEEDED, put_n(self->dev, TK, 2, 501));
	EXPECT_EQ(DFKV_STATUS_OK, put_n(self->dev, TK, 3, 500));
	close(fd);
	EXPECT_EQ(1000, charge_becomes(&self->g, TK, 1000));
	EXPECT_EQ(1000, tstat(&self->g, NODE, TK, DFKV_STAT_USED_BYTES));
	EXPECT_EQ(DFKV_STATUS_OK, put_n(self->dev, TK, 1, 2000));
	EXPECT_EQ(3000, tstat(&self->g, NODE, TK, DFKV_STAT_CHARGED_BYTES));
}

#define THREADS	8
#define PER	20
#define TD	0x0d0d0d0d00000004ULL

struct filler {
	int t, ok;
	uint64_t ok_bytes;
};

/* Even threads PUT over /dev/dfkv, odd ones over TCP (authorized for TD). */
static void *fill_run(void *arg)
{
	static const char v[2000];
	struct filler *f = arg;
	int tcp = f->t & 1;
	int fd = tcp ? conn_as(TD) : dfkv_test_open(NODE);

	if (fd < 0)
		return NULL;
	for (int i = 0; i < PER; i++) {
		uint64_t len = 1000 + 8 * i + f->t;	/* all distinct */
		struct dfkv_key k = dfkv_test_key(TD, (uint64_t)f->t * PER + i);
		struct dfkv_test_resp r;
		int st = tcp ? dfkv_test_tcp_call(fd, DFKV_OP_PUT, &k, 0, 0, v,
						  len, &r, NULL, 0) :
			put_n(fd, TD, (uint64_t)f->t * PER + i, len);

		if (st == DFKV_STATUS_OK) {
			f->ok++;
			f->ok_bytes += len;
		}
	}
	close(fd);
	return NULL;
}

TEST_F(auth, concurrent_puts_never_exceed_the_quota)
{
	pthread_t th[THREADS];
	struct filler f[THREADS];
	uint64_t q = 40000, sum = 0;
	int i, ok = 0;

	ASSERT_EQ(0, dfkv_test_tenant_set(&self->g, NODE, TD, NULL, 0, &q));
	ASSERT_EQ(0, register_tenant(&self->g, NODE, TD));
	for (i = 0; i < THREADS; i++) {
		f[i] = (struct filler){ .t = i };
		ASSERT_EQ(0, pthread_create(&th[i], NULL, fill_run, &f[i]));
	}
	for (i = 0; i < THREADS; i++) {
		pthread_join(th[i], NULL);
		sum += f[i].ok_bytes;
		ok += f[i].ok;
	}
	EXPECT_GE(q, sum);
	EXPECT_LT(0, ok);
	/* Usage is exactly what was acknowledged, and within the quota. */
	EXPECT_EQ((int64_t)sum, tstat(&self->g, NODE, TD,
				      DFKV_STAT_CHARGED_BYTES));
	EXPECT_EQ((int64_t)sum, tstat(&self->g, NODE, TD,
				      DFKV_STAT_USED_BYTES));
	EXPECT_EQ(ok, tstat(&self->g, NODE, TD, DFKV_STAT_OBJECTS));
	EXPECT_EQ(THREADS * PER - ok, tstat(&self->g, NODE, TD,
					    DFKV_STAT_QUOTA_REJECTIONS));
	/* Nothing bigger than the smallest value could have fitted more. */
	EXPECT_LT(q - 1000 - 8 * PER - THREADS, sum);
}

#define TE	0x0e0e0e0e00000005ULL
#define TF	0x0f0f0f0f00000006ULL
#define EVSZ	(64 << 10)

/* The stored bytes of t's keys 0..n-1 (PROBE). */
static uint64_t present_bytes(struct __test_metadata *_metadata, int fd,
			      uint64_t t, int n)
{
	struct dfkv_key keys[64];
	uint64_t res[64], sum = 0;
	struct dfkv_ioc_keys kr;

	for (int i = 0; i < n; i++)
		keys[i] = dfkv_test_key(t, i);
	EXPECT_EQ(0, keys_ioctl(fd, DFKV_IOC_PROBE, keys, n, res, &kr));
	for (int i = 0; i < n; i++)
		sum += res[i];
	return sum;
}

TEST_F(auth, eviction_gives_usage_back)
{
	uint64_t q = 4 * EVSZ, left;
	int fd, i;

	dfkv_test_node_del(&self->g, NODE_EV);
	ASSERT_EQ(0, dfkv_test_node_add_auth(&self->g, NODE_EV, 2 << 20, 1,
					     DFKV_AUTH_REQUIRED, 0));
	ASSERT_EQ(0, dfkv_test_tenant_set(&self->g, NODE_EV, TE, NULL, 0, &q));
	fd = dfkv_test_open(NODE_EV);
	ASSERT_LE(0, fd);
	for (i = 0; i < 4; i++)
		EXPECT_EQ(DFKV_STATUS_OK, put_n(fd, TE, i, EVSZ));
	EXPECT_EQ(DFKV_STATUS_QUOTA_EXCEEDED, put_n(fd, TE, 4, EVSZ));
	/* F (no quota) fills the node twice over: E's old blocks go. */
	for (i = 0; i < 64; i++)
		EXPECT_EQ(DFKV_STATUS_OK, put_n(fd, TF, i, EVSZ));
	EXPECT_LT(0, dfkv_test_stat(&self->g, NODE_EV, DFKV_STAT_EVICTIONS));
	left = present_bytes(_metadata, fd, TE, 4);
	EXPECT_GT(q, left);
	EXPECT_EQ((int64_t)left, tstat(&self->g, NODE_EV, TE,
				       DFKV_STAT_CHARGED_BYTES));
	EXPECT_EQ((int64_t)left, tstat(&self->g, NODE_EV, TE,
				       DFKV_STAT_USED_BYTES));
	EXPECT_EQ((int64_t)present_bytes(_metadata, fd, TF, 64),
		  tstat(&self->g, NODE_EV, TF, DFKV_STAT_CHARGED_BYTES));
	/* What eviction gave back E may use again. */
	EXPECT_EQ(DFKV_STATUS_OK, put_n(fd, TE, 4, EVSZ));
	close(fd);
	ASSERT_EQ(0, dfkv_test_node_del(&self->g, NODE_EV));
}

#define NODE_DISK	"t-auth-disk"
#define TR		0x1414141400000014ULL

static void disk_node_up(struct __test_metadata *_metadata,
			 struct dfkv_genl *g, const char *dev, int format)
{
	dfkv_test_node_del(g, NODE_DISK);
	ASSERT_EQ(0, dfkv_test_node_add_auth(g, NODE_DISK, 16 << 20, 1,
					     DFKV_AUTH_REQUIRED, 0));
	ASSERT_EQ(0, dfkv_test_disk_add(g, NODE_DISK, dev, "d0", format))
		TH_LOG("%s", g->errmsg);
}

/*
 * A graceful stop: every block flushed (no dirty bytes, no backlog: a
 * DISK_DEL right after the PUTs was seen to close the disk clean without
 * them), the disk closed, the node gone.
 */
static void disk_node_down(struct __test_metadata *_metadata,
			   struct dfkv_genl *g)
{
	int i;

	for (i = 0; i < 100; i++) {
		if (!dfkv_test_stat(g, NODE_DISK, DFKV_STAT_DIRTY_BYTES) &&
		    !dfkv_test_stat(g, NODE_DISK, DFKV_STAT_FLUSH_BACKLOG))
			break;
		usleep(100 * 1000);
	}
	EXPECT_EQ(0, dfkv_test_stat(g, NODE_DISK, DFKV_STAT_DIRTY_BYTES));
	ASSERT_EQ(0, dfkv_test_disk_del(g, NODE_DISK, "d0")) TH_LOG("%s",
								   g->errmsg);
	ASSERT_EQ(0, dfkv_test_node_del(g, NODE_DISK));
}

/*
 * After a rebuild TR is charged its 2000 bytes again (its registration
 * did not survive, its blocks did): with a quota of 2500 now, 501 more
 * bytes are refused, 500 would fit.
 */
static void expect_rebuilt(struct __test_metadata *_metadata,
			   struct dfkv_genl *g)
{
	uint64_t q = 2500;
	int fd;

	EXPECT_EQ(2, stat_becomes(g, NODE_DISK, TR, DFKV_STAT_OBJECTS, 2));
	EXPECT_EQ(2000, tstat(g, NODE_DISK, TR, DFKV_STAT_USED_BYTES));
	EXPECT_EQ(2000, tstat(g, NODE_DISK, TR, DFKV_STAT_CHARGED_BYTES));
	ASSERT_EQ(0, dfkv_test_tenant_set(g, NODE_DISK, TR, NULL, 0, &q));
	fd = dfkv_test_open(NODE_DISK);
	ASSERT_LE(0, fd);
	EXPECT_EQ(DFKV_STATUS_QUOTA_EXCEEDED, put_n(fd, TR, 2, 501));
	close(fd);
}

/* Node restart and module restart with a disk: the rebuild restores usage. */
TEST_F(auth, disk_rebuild_restores_usage)
{
	const char *img = "/tmp/dfkv-auth-disk.img";
	char dev[64], cmd[160];
	uint64_t q = 3000;
	int fd;

	ASSERT_EQ(0, dfkv_test_new_loop(img, dev, sizeof(dev)));
	disk_node_up(_metadata, &self->g, dev, 1);
	ASSERT_EQ(0, dfkv_test_tenant_set(&self->g, NODE_DISK, TR, NULL, 0, &q));
	fd = dfkv_test_open(NODE_DISK);
	ASSERT_LE(0, fd);
	EXPECT_EQ(DFKV_STATUS_OK, put_n(fd, TR, 0, 1000));
	EXPECT_EQ(DFKV_STATUS_OK, put_n(fd, TR, 1, 1000));
	EXPECT_EQ(DFKV_STATUS_QUOTA_EXCEEDED, put_n(fd, TR, 2, 1001));
	close(fd);
	for (int i = 0; i < 100 && dfkv_test_stat(&self->g, NODE_DISK,
						  DFKV_STAT_FLUSHED) < 2; i++)
		usleep(100 * 1000);
	EXPECT_EQ(2, dfkv_test_stat(&self->g, NODE_DISK, DFKV_STAT_FLUSHED));
	disk_node_down(_metadata, &self->g);
	disk_node_up(_metadata, &self->g, dev, 0);
	expect_rebuilt(_metadata, &self->g);
	/* The module too: nothing of the old one's state but the disk. */
	disk_node_down(_metadata, &self->g);
	close(self->dev);
	self->dev = -1;
	dfkv_genl_close(&self->g);
	ASSERT_EQ(0, system("rmmod dfkv"));
	ASSERT_EQ(0, dfkv_test_load());
	ASSERT_EQ(0, dfkv_genl_open(&self->g));
	disk_node_up(_metadata, &self->g, dev, 0);
	expect_rebuilt(_metadata, &self->g);
	disk_node_down(_metadata, &self->g);
	snprintf(cmd, sizeof(cmd), "losetup -d %s; rm -f %s", dev, img);
	EXPECT_EQ(0, system(cmd));
}

#define TH	0x1010101000000007ULL
#define TI	0x1111111100000008ULL
#define TJ	0x1212121200000009ULL

TEST_F(auth, default_quota_for_unlisted_tenants)
{
	struct dfkv_test_tenant t;
	uint64_t zero = 0;

	ASSERT_EQ(0, dfkv_test_node_set_u64(&self->g, NODE,
					    DFKV_A_NODE_TENANT_QUOTA, 2000));
	/* H is not registered: the default holds. */
	EXPECT_EQ(DFKV_STATUS_OK, put_n(self->dev, TH, 0, 1500));
	EXPECT_EQ(DFKV_STATUS_QUOTA_EXCEEDED, put_n(self->dev, TH, 1, 501));
	EXPECT_EQ(DFKV_STATUS_OK, put_n(self->dev, TH, 1, 500));
	ASSERT_EQ(0, dfkv_test_tenant_get(&self->g, NODE, TH, &t));
	EXPECT_EQ(0, t.flags & DFKV_TENANT_F_REGISTERED);
	EXPECT_EQ(2000, t.quota);
	EXPECT_EQ(2000, t.stat[DFKV_STAT_CHARGED_BYTES]);
	/* I is registered without a quota of its own: the default too. */
	ASSERT_EQ(0, register_tenant(&self->g, NODE, TI));
	ASSERT_EQ(0, dfkv_test_tenant_get(&self->g, NODE, TI, &t));
	EXPECT_EQ(0, t.flags & DFKV_TENANT_F_QUOTA);
	EXPECT_EQ(2000, t.quota);
	EXPECT_EQ(DFKV_STATUS_QUOTA_EXCEEDED, put_n(self->dev, TI, 0, 2001));
	/* J has its own quota, 0: unlimited whatever the default. */
	ASSERT_EQ(0, dfkv_test_tenant_set(&self->g, NODE, TJ, NULL, 0, &zero));
	EXPECT_EQ(DFKV_STATUS_OK, put_n(self->dev, TJ, 0, 3000));
	/* The default lifted: H goes on. */
	ASSERT_EQ(0, dfkv_test_node_set_u64(&self->g, NODE,
					    DFKV_A_NODE_TENANT_QUOTA, 0));
	EXPECT_EQ(DFKV_STATUS_OK, put_n(self->dev, TH, 2, 5000));
}

TEST_HARNESS_MAIN
