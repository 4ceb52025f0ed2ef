// SPDX-License-Identifier: GPL-2.0
/*
 * Unit tests of libdfkv's tenant authentication (SPEC.md 9) that need no
 * node: every AUTH2 vector of auth2-vectors.json (the repository's copy in
 * selftests/; test_auth.py checks it against shared/spec and runs the same
 * vectors from Python), the tenant secret file's rules, and how
 * dfkv_open_v2 takes the secret options.  The handshake over TCP is in
 * test_client_tcp.c.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <json-c/json.h>

/* kselftest_harness.h (6.1) is not -Wextra clean */
#pragma GCC diagnostic ignored "-Wunused-parameter"
#pragma GCC diagnostic ignored "-Wsign-compare"
#pragma GCC diagnostic ignored "-Wmisleading-indentation"
#include "kselftest_harness.h"
#include "dfkv.h"
#include "token.h"

#ifndef AUTH_VECTORS
#define AUTH_VECTORS "../auth2-vectors.json"
#endif

static int unhex(const char *s, uint8_t *out, size_t n)
{
	if (strlen(s) != 2 * n)
		return -1;
	for (size_t i = 0; i < n; i++)
		if (sscanf(s + 2 * i, "%2hhx", &out[i]) != 1)
			return -1;
	return 0;
}

static const char *field(json_object *v, const char *name)
{
	json_object *f;

	return json_object_object_get_ex(v, name, &f) ?
		json_object_get_string(f) : "";
}

TEST(proof_vectors)
{
	json_object *root = json_object_from_file(AUTH_VECTORS), *arr;
	size_t n;

	ASSERT_NE(NULL, root);
	ASSERT_TRUE(json_object_object_get_ex(root, "auth2", &arr));
	n = json_object_array_length(arr);
	ASSERT_GE(n, 4);
	for (size_t i = 0; i < n; i++) {
		json_object *v = json_object_array_get_idx(arr, i);
		uint8_t secret[32], sn[32], cn[32], wc[32], ws[32], c[32], s[32];
		const char *name = field(v, "node_name");
		uint64_t tenant;

		ASSERT_EQ(0, unhex(field(v, "secret_hex"), secret, 32));
		ASSERT_EQ(0, unhex(field(v, "server_nonce_hex"), sn, 32));
		ASSERT_EQ(0, unhex(field(v, "client_nonce_hex"), cn, 32));
		ASSERT_EQ(0, unhex(field(v, "client_proof_hex"), wc, 32));
		ASSERT_EQ(0, unhex(field(v, "server_proof_hex"), ws, 32));
		tenant = strtoull(field(v, "tenant"), NULL, 16);
		ASSERT_EQ(0, dfkv_auth2_proofs(secret, name, strlen(name), sn,
					       cn, tenant, c, s));
		EXPECT_EQ(0, memcmp(wc, c, 32)) {
			TH_LOG("client proof of vector %s", field(v, "name"));
		}
		EXPECT_EQ(0, memcmp(ws, s, 32)) {
			TH_LOG("server proof of vector %s", field(v, "name"));
		}
	}
	json_object_put(root);
}

TEST(proof_arguments)
{
	uint8_t b[32] = { 0 };
	char name[DFKV_AUTH2_NAME_MAX + 2];

	memset(name, 'n', sizeof(name));
	EXPECT_EQ(DFKV_E_INVAL, dfkv_auth2_proofs(NULL, "n", 1, b, b, 0, b, b));
	EXPECT_EQ(DFKV_E_INVAL, dfkv_auth2_proofs(b, NULL, 1, b, b, 0, b, b));
	EXPECT_EQ(DFKV_E_INVAL, dfkv_auth2_proofs(b, "n", 0, b, b, 0, b, b));
	EXPECT_EQ(DFKV_E_INVAL, dfkv_auth2_proofs(b, "n", 1, NULL, b, 0, b, b));
	EXPECT_EQ(DFKV_E_INVAL, dfkv_auth2_proofs(b, "n", 1, b, NULL, 0, b, b));
	EXPECT_EQ(DFKV_E_INVAL, dfkv_auth2_proofs(b, "n", 1, b, b, 0, NULL, b));
	EXPECT_EQ(DFKV_E_INVAL, dfkv_auth2_proofs(b, "n", 1, b, b, 0, b, NULL));
	EXPECT_EQ(DFKV_E_INVAL, dfkv_auth2_proofs(b, name,
						  DFKV_AUTH2_NAME_MAX + 1,
						  b, b, 0, b, b));
	EXPECT_EQ(0, dfkv_auth2_proofs(b, name, DFKV_AUTH2_NAME_MAX, b, b, 0,
				       b, b));
}

#define GOOD_HEX "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f"

/* A file of content in a fresh directory, with mode; its path in path. */
static void put_file(char *path, size_t len, const char *content, mode_t mode)
{
	char dir[] = "/tmp/dfkv-secret-XXXXXX";
	int fd;

	if (!mkdtemp(dir))
		abort();
	snprintf(path, len, "%s/secret", dir);
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0600);
	if (fd < 0 || write(fd, content, strlen(content)) !=
		      (ssize_t)strlen(content) || fchmod(fd, mode))
		abort();
	close(fd);
}

static void drop_file(const char *path)
{
	char dir[256];

	snprintf(dir, sizeof(dir), "%.*s", (int)(strrchr(path, '/') - path),
		 path);
	unlink(path);
	rmdir(dir);
}

/* dfkv_secret_read of a file holding content with mode. */
static int read_secret(const char *content, mode_t mode, uint8_t secret[32],
		       char *why, size_t whylen)
{
	char path[256];
	int rc;

	put_file(path, sizeof(path), content, mode);
	rc = dfkv_secret_read(path, secret, why, whylen);
	drop_file(path);
	return rc;
}

TEST(secret_file_rules)
{
	static const struct {
		const char *what, *content;
		mode_t mode;
		int rc;
	} cases[] = {
		{ "64 digits", GOOD_HEX, 0600, 0 },
		{ "and a newline", GOOD_HEX "\n", 0400, 0 },
		{ "upper case", "000102030405060708090A0B0C0D0E0F"
				"101112131415161718191A1B1C1D1E1F\n", 0600, 0 },
		{ "63 digits", GOOD_HEX "\n" + 1, 0600, -EINVAL },
		{ "65 digits", "0" GOOD_HEX, 0600, -EINVAL },
		{ "not hex", "0g0102030405060708090a0b0c0d0e0f"
			     "101112131415161718191a1b1c1d1e1f\n", 0600, -EINVAL },
		{ "0x prefix", "0x0102030405060708090a0b0c0d0e0f"
			       "101112131415161718191a1b1c1d1e1f", 0600, -EINVAL },
		{ "two newlines", GOOD_HEX "\n\n", 0600, -EINVAL },
		{ "a space", GOOD_HEX " \n", 0600, -EINVAL },
		{ "empty", "", 0600, -EINVAL },
		{ "readable by others", GOOD_HEX "\n", 0644, -EPERM },
		{ "readable by the group", GOOD_HEX "\n", 0640, -EPERM },
	};
	uint8_t want[32], got[32];
	char why[512];

	for (int i = 0; i < 32; i++)
		want[i] = (uint8_t)i;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		int rc;

		why[0] = 0;
		memset(got, 0xaa, sizeof(got));
		rc = read_secret(cases[i].content, cases[i].mode, got, why,
				 sizeof(why));
		EXPECT_EQ(cases[i].rc, rc) {
			TH_LOG("%s: %s", cases[i].what, why);
		}
		if (!cases[i].rc) {
			EXPECT_EQ(0, memcmp(want, got, 32));
			continue;
		}
		/* a clear sentence naming the file, and nothing half read */
		EXPECT_NE(NULL, strstr(why, "secret file /tmp/dfkv-secret-"));
		EXPECT_EQ(0, memcmp(got, (uint8_t[32]){ 0 }, 32));
	}
	EXPECT_EQ(-ENOENT, dfkv_secret_read("/nonexistent/secret", got, why,
					    sizeof(why)));
	EXPECT_EQ(-EINVAL, read_secret(GOOD_HEX "0\n", 0600, got, why,
				       sizeof(why)));
	EXPECT_NE(NULL, strstr(why, "exactly 64 hex digits"));
}

TEST(open_takes_the_secret)
{
	struct dfkv_client_options_v2 o = {
		.size = sizeof(o), .transport = DFKV_TRANSPORT_TCP,
		.members = "a=127.0.0.1:1", .ns = "ns", .ns_len = 2,
	};
	static const uint8_t raw[32] = { 7 };
	struct dfkv_client *c;
	char path[256];

	o.tenant_secret = raw;
	ASSERT_EQ(0, dfkv_open_v2(&o, &c));
	dfkv_close(c);
	/* one of the two, not both */
	o.tenant_secret_file = "/nonexistent/secret";
	EXPECT_EQ(DFKV_E_INVAL, dfkv_open_v2(&o, &c));
	EXPECT_EQ(NULL, c);
	o.tenant_secret = NULL;
	errno = 0;
	EXPECT_EQ(DFKV_E_AUTH, dfkv_open_v2(&o, &c));
	EXPECT_EQ(ENOENT, errno);
	put_file(path, sizeof(path), GOOD_HEX "\n", 0600);
	o.tenant_secret_file = path;
	ASSERT_EQ(0, dfkv_open_v2(&o, &c));
	dfkv_close(c);
	ASSERT_EQ(0, chmod(path, 0644));
	EXPECT_EQ(DFKV_E_AUTH, dfkv_open_v2(&o, &c));
	EXPECT_EQ(EPERM, errno);
	drop_file(path);
	put_file(path, sizeof(path), "0" GOOD_HEX "\n", 0600);
	EXPECT_EQ(DFKV_E_AUTH, dfkv_open_v2(&o, &c));
	EXPECT_EQ(EINVAL, errno);
	drop_file(path);
	/* a VER4 caller's struct ends before the secret: never read */
	o.size = DFKV_CLIENT_OPTIONS_V2_SIZE_VER4;
	o.tenant_secret = raw;
	ASSERT_EQ(0, dfkv_open_v2(&o, &c));
	dfkv_close(c);
	EXPECT_STREQ("mdsd token refused, or token or secret file unusable",
		     dfkv_strerror(DFKV_E_AUTH));
}

TEST_HARNESS_MAIN
