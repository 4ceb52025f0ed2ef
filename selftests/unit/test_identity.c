// SPDX-License-Identifier: GPL-2.0
/*
 * Unit tests of libdfkv identity (SPEC.md 1.1-1.3): every golden vector of
 * shared/spec/golden-vectors.json (layout fingerprint, namespace bytes,
 * tenant identities and hashes, object ids) reproduced by the C library,
 * plus the fail-closed rejections of the builders, the key renderer and
 * parser.  The vectors are embedded here; test_golden.py checks the same
 * vectors from the JSON file through the Python binding.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <string.h>

/* kselftest_harness.h (6.1) is not -Wextra clean */
#pragma GCC diagnostic ignored "-Wunused-parameter"
#pragma GCC diagnostic ignored "-Wsign-compare"
#pragma GCC diagnostic ignored "-Wmisleading-indentation"
#include "kselftest_harness.h"
#include "dfkv.h"

static size_t unhex(const char *h, uint8_t *out, size_t cap)
{
	size_t n = strlen(h) / 2;

	if (n > cap)
		return 0;
	for (size_t i = 0; i < n; i++) {
		unsigned int b;

		sscanf(h + 2 * i, "%2x", &b);
		out[i] = (uint8_t)b;
	}
	return n;
}

static void tohex(const uint8_t *p, size_t n, char *out)
{
	for (size_t i = 0; i < n; i++)
		sprintf(out + 2 * i, "%02x", p[i]);
	out[2 * n] = 0;
}

#define S(str) ((struct dfkv_span){ (str), sizeof(str) - 1 })

/* golden-vectors.json: namespaces[] */
static const char *const NS1_HEX =
	"44464b564e5300020400000061636d65200000006d6574612d6c6c616d612f4c6c616d612d332e312d38422d496e73747275637407000000306539653339660f000000766c6c6d2d6d756c746977722d76340800000062666c6f617431360800000068ec11bfe19e29bd040000001000000004000000200000000400000066756c6c140000000800000001000000020000000100000001000000";
static const char *const NS2_HEX =
	"44464b564e53000206000000676c6f62657817000000646565707365656b2d61692f446565705365656b2d5633040000006d61696e1500000073676c616e672d686963616368652f7261772d76310d000000666c6f6174385f65346d33666e08000000c2360125d38284f80400000040000000040000003d0000000400000066756c6c140000000800000001000000010000000100000001000000";
static const char NS3[] = "legacy-namespace\0with-nul";

static struct dfkv_ns_desc ns1_desc(void)
{
	return (struct dfkv_ns_desc){
		.size = sizeof(struct dfkv_ns_desc),
		.tenant = S("acme"),
		.model_id = S("meta-llama/Llama-3.1-8B-Instruct"),
		.model_revision = S("0e9e39f"),
		.layout_id = S("vllm-multiwr-v4"),
		.dtype = S("bfloat16"),
		.layout_fingerprint = 0xbd299ee1bf11ec68ULL,
		.block_tokens = 16, .num_layers = 32,
		.group = S("full"),
		.tp = 8, .pp = 1, .dp = 2, .pcp = 1, .dcp = 1,
	};
}

static struct dfkv_ns_desc ns2_desc(void)
{
	return (struct dfkv_ns_desc){
		.size = sizeof(struct dfkv_ns_desc),
		.tenant = S("globex"),
		.model_id = S("deepseek-ai/DeepSeek-V3"),
		.model_revision = S("main"),
		.layout_id = S("sglang-hicache/raw-v1"),
		.dtype = S("float8_e4m3fn"),
		.layout_fingerprint = 0xf88482d3250136c2ULL,
		.block_tokens = 64, .num_layers = 61,
		.group = S("full"),
		.tp = 8, .pp = 1, .dp = 1, .pcp = 1, .dcp = 1,
	};
}

static const uint8_t HASH9F[32] = {
	0x9f, 0x9f, 0x9f, 0x9f, 0x9f, 0x9f, 0x9f, 0x9f,
	0x9f, 0x9f, 0x9f, 0x9f, 0x9f, 0x9f, 0x9f, 0x9f,
	0x9f, 0x9f, 0x9f, 0x9f, 0x9f, 0x9f, 0x9f, 0x9f,
	0x9f, 0x9f, 0x9f, 0x9f, 0x9f, 0x9f, 0x9f, 0x9f,
};
static const uint8_t HASH0123[32] = {
	0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xef,
	0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xef,
	0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xef,
	0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xef,
};

/* golden-vectors.json: objects[0] (and [2]) key fields */
static struct dfkv_key_desc key1_desc(void)
{
	return (struct dfkv_key_desc){
		.size = sizeof(struct dfkv_key_desc),
		.pool = S("default"),
		.hash = { HASH9F, 32 },
		.dp = { 2, 0 }, .tp = { 8, 3 }, .pcp = { 1, 0 },
		.dcp = { 1, 0 }, .pp = { 1, 0 },
		.group = 0,
		.component = S("kv"),
	};
}

/* objects[1] */
static struct dfkv_key_desc key2_desc(void)
{
	return (struct dfkv_key_desc){
		.size = sizeof(struct dfkv_key_desc),
		.pool = S("hot"),
		.hash = { HASH0123, 32 },
		.dp = { 1, 0 }, .tp = { 8, -1 }, .pcp = { 1, 0 },
		.dcp = { 1, 0 }, .pp = { 1, 0 },
		.group = 1,
		.component = S("k"),
		.sg_width = 4, .sg_group = 2,
	};
}

static const char KEY1[] = "dfkv/pool/v2|pool=default|hash=9f9f9f9f9f9f9f9f9f9f9f9f9f9f9f9f9f9f9f9f9f9f9f9f9f9f9f9f9f9f9f9f|dp=2:0|tp=8:3|pcp=1:0|dcp=1:0|pp=1:0|group=0|component=kv";
static const char KEY2[] = "dfkv/pool/v2|pool=hot|hash=0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef|dp=1:0|tp=8:-1|pcp=1:0|dcp=1:0|pp=1:0|group=1|component=k|sg=4:2";
static const char KEY4[] = "raw\0binary\xffkey";

TEST(golden_layout_fingerprint)
{
	struct dfkv_span f[2] = { S("k:32x8x16x128"), S("v:32x8x16x128") };
	uint64_t fp = 1;

	ASSERT_EQ(0, dfkv_layout_fingerprint(f, 2, &fp));
	EXPECT_EQ(0xbd299ee1bf11ec68ULL, fp);
}

static void check_ns(struct __test_metadata *_metadata,
		     const struct dfkv_ns_desc *d, const char *want_hex)
{
	uint8_t want[512], got[512];
	size_t wn = unhex(want_hex, want, sizeof(want));
	uint64_t n = 0;

	ASSERT_EQ(DFKV_E_RANGE, dfkv_ns_build(d, NULL, 0, &n));
	EXPECT_EQ(wn, n);
	ASSERT_EQ(DFKV_E_RANGE, dfkv_ns_build(d, got, wn - 1, &n));
	ASSERT_EQ(0, dfkv_ns_build(d, got, sizeof(got), &n));
	ASSERT_EQ(wn, n);
	EXPECT_EQ(0, memcmp(want, got, wn));
}

TEST(golden_ns1_bytes)
{
	struct dfkv_ns_desc d = ns1_desc();

	check_ns(_metadata, &d, NS1_HEX);
}

TEST(golden_ns2_bytes)
{
	struct dfkv_ns_desc d = ns2_desc();

	check_ns(_metadata, &d, NS2_HEX);
}

static void check_tenant(struct __test_metadata *_metadata, const uint8_t *ns,
			 size_t len, const char *ident_hex, uint64_t tenant)
{
	uint64_t off, ilen, t = 0;
	char hex[256];

	ASSERT_EQ(0, dfkv_ns_tenant_identity(ns, len, &off, &ilen));
	ASSERT_LT(ilen, 100);
	tohex(ns + off, ilen, hex);
	EXPECT_STREQ(ident_hex, hex);
	ASSERT_EQ(0, dfkv_tenant_hash(ns, len, &t));
	EXPECT_EQ(tenant, t);
}

TEST(golden_tenants)
{
	uint8_t b[512];
	size_t n;

	n = unhex(NS1_HEX, b, sizeof(b));
	check_tenant(_metadata, b, n, "61636d65", 0xc60d41cfce5eb80fULL);
	n = unhex(NS2_HEX, b, sizeof(b));
	check_tenant(_metadata, b, n, "676c6f626578", 0x88dd247657612efdULL);
	check_tenant(_metadata, (const uint8_t *)NS3, sizeof(NS3) - 1,
		     "6c65676163792d6e616d65737061636500776974682d6e756c",
		     0x15859dc67a42d19eULL);
}

static void check_object(struct __test_metadata *_metadata, const char *ns_hex,
			 const void *ns_raw, size_t ns_raw_len,
			 const void *key, size_t key_len, const char *id_hex,
			 uint64_t tenant)
{
	uint8_t nsb[512], id[16];
	const void *ns = ns_raw;
	size_t ns_len = ns_raw_len;
	struct dfkv_key bk;
	char hex[33];

	if (ns_hex) {
		ns_len = unhex(ns_hex, nsb, sizeof(nsb));
		ns = nsb;
	}
	ASSERT_EQ(0, dfkv_object_id(ns, ns_len, key, key_len, id));
	tohex(id, 16, hex);
	EXPECT_STREQ(id_hex, hex);
	ASSERT_EQ(0, dfkv_block_key(ns, ns_len, key, key_len, &bk));
	EXPECT_EQ(0, memcmp(bk.id, id, 16));
	EXPECT_EQ(tenant, bk.tenant);
}

TEST(golden_objects)
{
	check_object(_metadata, NS1_HEX, NULL, 0, KEY1, sizeof(KEY1) - 1,
		     "1b15a4a4c73eaf41da7a19e3d0715379", 0xc60d41cfce5eb80fULL);
	check_object(_metadata, NS1_HEX, NULL, 0, KEY2, sizeof(KEY2) - 1,
		     "ce85c2383cfdfb39e9257cdf8b93de9d", 0xc60d41cfce5eb80fULL);
	check_object(_metadata, NS2_HEX, NULL, 0, KEY1, sizeof(KEY1) - 1,
		     "39f1014471238bed39feebd76a44f00a", 0x88dd247657612efdULL);
	check_object(_metadata, NULL, NS3, sizeof(NS3) - 1, KEY4,
		     sizeof(KEY4) - 1, "02be29be5fcd99d7dce6edbdc70173aa",
		     0x15859dc67a42d19eULL);
}

static void check_key(struct __test_metadata *_metadata,
		      const struct dfkv_key_desc *d, const char *want)
{
	char out[DFKV_KEY_RENDER_MAX];
	uint8_t hb[DFKV_KEY_HASH_MAX];
	struct dfkv_key_desc p;
	uint64_t n = 0;

	ASSERT_EQ(0, dfkv_key_render(d, out, sizeof(out), &n));
	ASSERT_EQ(strlen(want), n);
	EXPECT_EQ(0, memcmp(want, out, n));
	ASSERT_EQ(DFKV_E_RANGE, dfkv_key_render(d, out, n - 1, &n));
	EXPECT_EQ(strlen(want), n);
	/* parse gives back the same fields */
	ASSERT_EQ(0, dfkv_key_parse(want, strlen(want), &p, hb));
	EXPECT_EQ(d->pool.len, p.pool.len);
	EXPECT_EQ(0, memcmp(d->pool.ptr, p.pool.ptr, p.pool.len));
	EXPECT_EQ(d->hash.len, p.hash.len);
	EXPECT_EQ(0, memcmp(d->hash.ptr, p.hash.ptr, p.hash.len));
	EXPECT_EQ(d->tp.size, p.tp.size);
	EXPECT_EQ(d->tp.rank, p.tp.rank);
	EXPECT_EQ(d->dp.size, p.dp.size);
	EXPECT_EQ(d->group, p.group);
	EXPECT_EQ(d->sg_width, p.sg_width);
	EXPECT_EQ(d->sg_group, p.sg_group);
	EXPECT_EQ(d->component.len, p.component.len);
}

TEST(golden_key_render)
{
	struct dfkv_key_desc d1 = key1_desc(), d2 = key2_desc();

	check_key(_metadata, &d1, KEY1);
	check_key(_metadata, &d2, KEY2);
}

/* ------------------------------------------------------- rejections */

TEST(object_id_rejects_null_and_empty)
{
	uint8_t id[16];
	uint64_t t = 7;

	memset(id, 0xaa, sizeof(id));
	EXPECT_EQ(DFKV_E_INVAL, dfkv_object_id(NULL, 3, "k", 1, id));
	EXPECT_EQ(0, id[0]);	/* output initialised to failure */
	EXPECT_EQ(DFKV_E_INVAL, dfkv_object_id("ns", 0, "k", 1, id));
	EXPECT_EQ(DFKV_E_INVAL, dfkv_object_id("ns", 2, NULL, 1, id));
	EXPECT_EQ(DFKV_E_INVAL, dfkv_object_id("ns", 2, "k", 0, id));
	EXPECT_EQ(DFKV_E_INVAL, dfkv_object_id("ns", 2, "k", 1, NULL));
	EXPECT_EQ(DFKV_E_INVAL, dfkv_object_id("ns", UINT64_MAX, "k", 1, id));
	EXPECT_EQ(DFKV_E_INVAL, dfkv_tenant_hash(NULL, 2, &t));
	EXPECT_EQ(0, t);
	EXPECT_EQ(DFKV_E_INVAL, dfkv_tenant_hash("ns", 0, &t));
	EXPECT_EQ(DFKV_E_INVAL, dfkv_tenant_hash("ns", 2, NULL));
	EXPECT_EQ(DFKV_E_INVAL, dfkv_block_key("ns", 2, "", 0, &(struct dfkv_key){ 0 }));
}

TEST(embedded_nul_is_identity)
{
	uint8_t a[16], b[16];

	ASSERT_EQ(0, dfkv_object_id("ns", 2, "k\0a", 3, a));
	ASSERT_EQ(0, dfkv_object_id("ns", 2, "k\0b", 3, b));
	EXPECT_NE(0, memcmp(a, b, 16));
	/* length framing: ("ab","c") differs from ("a","bc") */
	ASSERT_EQ(0, dfkv_object_id("ab", 2, "c", 1, a));
	ASSERT_EQ(0, dfkv_object_id("a", 1, "bc", 2, b));
	EXPECT_NE(0, memcmp(a, b, 16));
}

TEST(tenant_identity_edges)
{
	uint8_t ns[32] = "DFKVNS\0\2";
	uint64_t off = 9, len = 9, t1, t2;

	/* magic only: opaque */
	ASSERT_EQ(0, dfkv_ns_tenant_identity(ns, 8, &off, &len));
	EXPECT_EQ(0, off);
	EXPECT_EQ(8, len);
	/* first field of length 0: whole namespace */
	memset(ns + 8, 0, 8);
	ASSERT_EQ(0, dfkv_ns_tenant_identity(ns, 16, &off, &len));
	EXPECT_EQ(0, off);
	EXPECT_EQ(16, len);
	/* field running past the end: whole namespace */
	ns[8] = 5;
	memcpy(ns + 12, "abcd", 4);
	ASSERT_EQ(0, dfkv_ns_tenant_identity(ns, 16, &off, &len));
	EXPECT_EQ(0, off);
	EXPECT_EQ(16, len);
	/* exactly fitting field, nothing after it inspected */
	ns[8] = 4;
	ASSERT_EQ(0, dfkv_ns_tenant_identity(ns, 16, &off, &len));
	EXPECT_EQ(12, off);
	EXPECT_EQ(4, len);
	ASSERT_EQ(0, dfkv_tenant_hash(ns, 16, &t1));
	ns[16] = 'x';
	ASSERT_EQ(0, dfkv_tenant_hash(ns, 17, &t2));
	EXPECT_EQ(t1, t2);
	/* a namespace of only that tenant string but no magic differs */
	ASSERT_EQ(0, dfkv_tenant_hash("abcd", 4, &t2));
	EXPECT_EQ(t1, t2);	/* identity is the field content */
	EXPECT_EQ(DFKV_E_INVAL, dfkv_ns_tenant_identity(ns, 0, &off, &len));
}

TEST(ns_build_rejects)
{
	struct dfkv_ns_desc d;
	uint8_t out[512], big[sizeof(d) + 8];
	uint64_t n = 5;

	d = ns1_desc();
	d.tenant = (struct dfkv_span){ "", 0 };
	EXPECT_EQ(DFKV_E_INVAL, dfkv_ns_build(&d, out, sizeof(out), &n));
	EXPECT_EQ(0, n);
	d = ns1_desc();
	d.tenant = (struct dfkv_span){ NULL, 4 };
	EXPECT_EQ(DFKV_E_INVAL, dfkv_ns_build(&d, out, sizeof(out), &n));
	d = ns1_desc();
	d.tenant = S("ac\xffme");	/* not UTF-8 */
	EXPECT_EQ(DFKV_E_INVAL, dfkv_ns_build(&d, out, sizeof(out), &n));
	d.tenant = S("\xc0\xaf");	/* overlong */
	EXPECT_EQ(DFKV_E_INVAL, dfkv_ns_build(&d, out, sizeof(out), &n));
	d.tenant = S("\xed\xa0\x80");	/* surrogate */
	EXPECT_EQ(DFKV_E_INVAL, dfkv_ns_build(&d, out, sizeof(out), &n));
	d.tenant = S("caf\xc3\xa9-\xf0\x9f\x98\x80");	/* valid */
	EXPECT_EQ(0, dfkv_ns_build(&d, out, sizeof(out), &n));
	d = ns1_desc();
	d.group = (struct dfkv_span){ "x", 0 };
	EXPECT_EQ(DFKV_E_INVAL, dfkv_ns_build(&d, out, sizeof(out), &n));
	d = ns1_desc();
	d.dcp = 0;
	EXPECT_EQ(DFKV_E_INVAL, dfkv_ns_build(&d, out, sizeof(out), &n));
	d = ns1_desc();
	d.block_tokens = 0;
	EXPECT_EQ(DFKV_E_INVAL, dfkv_ns_build(&d, out, sizeof(out), &n));
	d = ns1_desc();
	d.__reserved = 1;
	EXPECT_EQ(DFKV_E_INVAL, dfkv_ns_build(&d, out, sizeof(out), &n));
	d = ns1_desc();
	d.size = DFKV_NS_DESC_SIZE_VER0 - 8;
	EXPECT_EQ(DFKV_E_INVAL, dfkv_ns_build(&d, out, sizeof(out), &n));
	/* a newer, larger struct is accepted only with a zero tail */
	d = ns1_desc();
	memset(big, 0, sizeof(big));
	d.size = sizeof(big);
	memcpy(big, &d, sizeof(d));
	EXPECT_EQ(0, dfkv_ns_build((void *)big, out, sizeof(out), &n));
	big[sizeof(d) + 3] = 1;
	EXPECT_EQ(DFKV_E_INVAL, dfkv_ns_build((void *)big, out, sizeof(out), &n));
	EXPECT_EQ(DFKV_E_INVAL, dfkv_ns_build(NULL, out, sizeof(out), &n));
	d = ns1_desc();
	EXPECT_EQ(DFKV_E_INVAL, dfkv_ns_build(&d, NULL, 10, &n));
	EXPECT_EQ(DFKV_E_INVAL, dfkv_ns_build(&d, out, sizeof(out), NULL));
}

TEST(layout_fingerprint_rejects)
{
	struct dfkv_span f[2] = { S("k"), { "v", 0 } };
	uint64_t fp = 3;

	EXPECT_EQ(DFKV_E_INVAL, dfkv_layout_fingerprint(f, 2, &fp));
	EXPECT_EQ(0, fp);
	EXPECT_EQ(DFKV_E_INVAL, dfkv_layout_fingerprint(f, 0, &fp));
	EXPECT_EQ(DFKV_E_INVAL, dfkv_layout_fingerprint(NULL, 1, &fp));
	EXPECT_EQ(DFKV_E_INVAL, dfkv_layout_fingerprint(f, 1, NULL));
	EXPECT_EQ(0, dfkv_layout_fingerprint(f, 1, &fp));
	EXPECT_NE(0, fp);
}

TEST(key_render_rejects)
{
	char out[DFKV_KEY_RENDER_MAX];
	uint8_t longhash[DFKV_KEY_HASH_MAX + 1] = { 0 };
	struct dfkv_key_desc d;
	uint64_t n;

#define BAD(...) do { d = key2_desc(); __VA_ARGS__; \
	EXPECT_EQ(DFKV_E_INVAL, dfkv_key_render(&d, out, sizeof(out), &n)); \
	EXPECT_EQ(0, n); } while (0)
	BAD(d.pool = S("de|fault"));
	BAD(d.pool = S("de fault"));
	BAD(d.pool = (struct dfkv_span){ "x", 0 });
	BAD(d.pool = (struct dfkv_span){ NULL, 3 });
	BAD(d.component = S("k=v"));
	BAD(d.component = S("k\0"));
	BAD(d.hash = (struct dfkv_span){ HASH9F, 0 });
	BAD(d.hash = (struct dfkv_span){ longhash, sizeof(longhash) });
	BAD(d.tp.size = 0);
	BAD(d.tp.rank = 8);
	BAD(d.tp.rank = -2);
	BAD(d.dp = ((struct dfkv_rank){ 0, -1 }));
	BAD(d.sg_group = 4);
	BAD(d.sg_width = 0);		/* group 2 without a width */
	BAD(d.size = 8);
#undef BAD
	d = key2_desc();
	d.sg_width = 0;
	d.sg_group = 0;
	EXPECT_EQ(0, dfkv_key_render(&d, out, sizeof(out), &n));
	EXPECT_EQ(NULL, (char *)memmem(out, n, "|sg=", 4));
	/* the longest rendering fits DFKV_KEY_RENDER_MAX */
	{
		char name[DFKV_KEY_NAME_MAX];
		uint8_t h[DFKV_KEY_HASH_MAX];

		memset(name, 'z', sizeof(name));
		memset(h, 0xee, sizeof(h));
		d.pool = (struct dfkv_span){ name, sizeof(name) };
		d.component = (struct dfkv_span){ name, sizeof(name) };
		d.hash = (struct dfkv_span){ h, sizeof(h) };
		d.dp = d.tp = d.pcp = d.dcp = d.pp =
			(struct dfkv_rank){ UINT32_MAX, INT32_MAX };
		d.group = UINT32_MAX;
		d.sg_width = UINT32_MAX;
		d.sg_group = UINT32_MAX - 1;
		EXPECT_EQ(0, dfkv_key_render(&d, out, sizeof(out), &n));
		EXPECT_LE(n, DFKV_KEY_RENDER_MAX);
	}
}

TEST(key_parse_rejects_non_canonical)
{
	static const char *const bad[] = {
		"",
		"dfkv/pool/v1|pool=default|hash=9f|dp=1:0|tp=1:0|pcp=1:0|dcp=1:0|pp=1:0|group=0|component=kv",
		"dfkv/pool/v2|pool=default|hash=9F|dp=1:0|tp=1:0|pcp=1:0|dcp=1:0|pp=1:0|group=0|component=kv",
		"dfkv/pool/v2|pool=default|hash=9f9|dp=1:0|tp=1:0|pcp=1:0|dcp=1:0|pp=1:0|group=0|component=kv",
		"dfkv/pool/v2|pool=default|hash=|dp=1:0|tp=1:0|pcp=1:0|dcp=1:0|pp=1:0|group=0|component=kv",
		"dfkv/pool/v2|pool=default|hash=9f|dp=01:0|tp=1:0|pcp=1:0|dcp=1:0|pp=1:0|group=0|component=kv",
		"dfkv/pool/v2|pool=default|hash=9f|dp=+1:0|tp=1:0|pcp=1:0|dcp=1:0|pp=1:0|group=0|component=kv",
		"dfkv/pool/v2|pool=default|hash=9f|dp=1:1|tp=1:0|pcp=1:0|dcp=1:0|pp=1:0|group=0|component=kv",
		"dfkv/pool/v2|pool=default|hash=9f|dp=1:-2|tp=1:0|pcp=1:0|dcp=1:0|pp=1:0|group=0|component=kv",
		"dfkv/pool/v2|pool=default|hash=9f|dp=0:-1|tp=1:0|pcp=1:0|dcp=1:0|pp=1:0|group=0|component=kv",
		"dfkv/pool/v2|pool=default|hash=9f|tp=1:0|dp=1:0|pcp=1:0|dcp=1:0|pp=1:0|group=0|component=kv",
		"dfkv/pool/v2|pool=default|hash=9f|dp=1:0|tp=1:0|pcp=1:0|dcp=1:0|pp=1:0|group=00|component=kv",
		"dfkv/pool/v2|pool=default|hash=9f|dp=1:0|tp=1:0|pcp=1:0|dcp=1:0|pp=1:0|group=0|component=",
		"dfkv/pool/v2|pool=default|hash=9f|dp=1:0|tp=1:0|pcp=1:0|dcp=1:0|pp=1:0|group=0|component=kv|",
		"dfkv/pool/v2|pool=default|hash=9f|dp=1:0|tp=1:0|pcp=1:0|dcp=1:0|pp=1:0|group=0|component=kv|sg=0:0",
		"dfkv/pool/v2|pool=default|hash=9f|dp=1:0|tp=1:0|pcp=1:0|dcp=1:0|pp=1:0|group=0|component=kv|sg=4:4",
		"dfkv/pool/v2|pool=default|hash=9f|dp=1:0|tp=1:0|pcp=1:0|dcp=1:0|pp=1:0|group=0|component=kv|sg=4:1|x=1",
		"dfkv/pool/v2|pool=default|hash=9f|dp=1:0|tp=1:0|pcp=1:0|dcp=1:0|pp=1:0|group=0|component=kv ",
		"dfkv/pool/v2|pool=de fault|hash=9f|dp=1:0|tp=1:0|pcp=1:0|dcp=1:0|pp=1:0|group=0|component=kv",
		"dfkv/pool/v2|pool=default|hash=9f|dp=1:0|tp=1:0|pcp=1:0|dcp=1:0|pp=1:0|group=4294967296|component=kv",
		"dfkv/pool/v2|pool=default|hash=9f|dp=1:0|tp=1:0|pcp=1:0|dcp=1:0|pp=1:0|group=0",
	};
	static const char good[] =
		"dfkv/pool/v2|pool=default|hash=9f|dp=1:0|tp=1:0|pcp=1:0|dcp=1:0|pp=1:0|group=4294967295|component=kv|sg=4:3";
	uint8_t hb[DFKV_KEY_HASH_MAX];
	struct dfkv_key_desc d;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		d.size = 1;
		EXPECT_EQ(DFKV_E_INVAL,
			  dfkv_key_parse(bad[i], strlen(bad[i]), &d, hb)) {
			TH_LOG("accepted: %s", bad[i]);
		}
		EXPECT_EQ(0, d.pool.len);
	}
	/* an embedded NUL is not a terminator */
	EXPECT_EQ(DFKV_E_INVAL, dfkv_key_parse(good, sizeof(good), &d, hb));
	EXPECT_EQ(0, dfkv_key_parse(good, sizeof(good) - 1, &d, hb));
	EXPECT_EQ(UINT32_MAX, d.group);
	EXPECT_EQ(DFKV_E_INVAL, dfkv_key_parse(NULL, 3, &d, hb));
	EXPECT_EQ(DFKV_E_INVAL, dfkv_key_parse(good, sizeof(good) - 1, NULL, hb));
}

TEST(strerror_covers_every_status)
{
	for (int s = 0; s < __DFKV_STATUS_MAX; s++)
		EXPECT_STRNE("unknown status", dfkv_strerror(s));
	for (int s = __DFKV_E_MIN + 1; s < 0; s++)
		EXPECT_STRNE("unknown status", dfkv_strerror(s));
	EXPECT_STREQ("unknown status", dfkv_strerror(__DFKV_STATUS_MAX));
	EXPECT_STREQ("unknown status", dfkv_strerror(__DFKV_E_MIN));
	EXPECT_STREQ("ok", dfkv_strerror(DFKV_STATUS_OK));
	ASSERT_NE(NULL, dfkv_version());
	EXPECT_NE(0, strlen(dfkv_version()));
}

TEST_HARNESS_MAIN
