// SPDX-License-Identifier: GPL-2.0
/*
 * The AUTH2 transcript and proofs (see dfkv_proof.h), on OpenSSL's
 * libcrypto, and a raw TCP client's HELLO and AUTH.
 */
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include "dfkv_proof.h"
#include "testlib.h"

size_t dfkv_proof_transcript(uint8_t t[DFKV_AUTH2_TRANSCRIPT_MAX],
			     const char *name, const uint8_t hs[DFKV_HS_LEN],
			     uint64_t tenant)
{
	size_t nl = strlen(name), n = 0;

	memcpy(t, DFKV_AUTH2_DOMAIN, DFKV_AUTH2_DOMAIN_LEN);
	n += DFKV_AUTH2_DOMAIN_LEN;
	t[n++] = (uint8_t)nl;
	memcpy(t + n, name, nl);
	n += nl;
	memcpy(t + n, hs, DFKV_HS_LEN);
	n += DFKV_HS_LEN;
	for (int i = 0; i < 8; i++)
		t[n++] = (uint8_t)(tenant >> (8 * i));
	return n;
}

static void hmac_tagged(uint8_t out[DFKV_AUTH_PROOF_LEN],
			const uint8_t secret[DFKV_TENANT_SECRET_LEN], char tag,
			const uint8_t *t, size_t n)
{
	uint8_t msg[1 + DFKV_AUTH2_TRANSCRIPT_MAX];
	unsigned int len = DFKV_AUTH_PROOF_LEN;

	msg[0] = (uint8_t)tag;
	memcpy(msg + 1, t, n);
	if (!HMAC(EVP_sha256(), secret, DFKV_TENANT_SECRET_LEN, msg, n + 1,
		  out, &len))
		memset(out, 0, DFKV_AUTH_PROOF_LEN);
}

void dfkv_proof(uint8_t client[DFKV_AUTH_PROOF_LEN],
		uint8_t server[DFKV_AUTH_PROOF_LEN],
		const uint8_t secret[DFKV_TENANT_SECRET_LEN], const char *name,
		const uint8_t hs[DFKV_HS_LEN], uint64_t tenant)
{
	uint8_t t[DFKV_AUTH2_TRANSCRIPT_MAX];
	size_t n = dfkv_proof_transcript(t, name, hs, tenant);

	hmac_tagged(client, secret, 'C', t, n);
	hmac_tagged(server, secret, 'S', t, n);
}

void dfkv_test_secret(uint64_t t, uint8_t secret[DFKV_TENANT_SECRET_LEN])
{
	char b[DFKV_TENANT_SECRET_LEN + 1];

	snprintf(b, sizeof(b), "S3cr3t:%016llx:dfkvtest",
		 (unsigned long long)t);
	memcpy(secret, b, DFKV_TENANT_SECRET_LEN);
}

int dfkv_test_hello(int fd, const char *name, uint8_t hs[DFKV_HS_LEN],
		    uint64_t *caps)
{
	uint8_t d[DFKV_HELLO_REPLY_MAX], c[DFKV_HELLO_REQ_LEN] = { 0 };
	size_t nl = strlen(name);
	struct dfkv_test_resp r;
	int st;

	c[0] = DFKV_CAP_AUTH2;
	if (getrandom(c + 8, DFKV_AUTH_NONCE_LEN, 0) != DFKV_AUTH_NONCE_LEN)
		return -1;
	st = dfkv_test_tcp_call(fd, DFKV_OP_HELLO, NULL, 0, 0, c, sizeof(c),
				&r, d, sizeof(d));
	if (st != DFKV_STATUS_OK)
		return st;
	if (r.data_len != DFKV_HELLO_REPLY_MIN + nl ||
	    d[DFKV_HELLO_REPLY_MIN - 1] != nl ||
	    memcmp(d + DFKV_HELLO_REPLY_MIN, name, nl))
		return -1;
	if (caps)
		*caps = dfkv_test_rd64(d);
	memcpy(hs, d + 16, DFKV_AUTH_NONCE_LEN);
	memcpy(hs + DFKV_AUTH_NONCE_LEN, c + 8, DFKV_AUTH_NONCE_LEN);
	return st;
}

int dfkv_test_auth(int fd, const char *name, uint64_t t,
		   const uint8_t secret[DFKV_TENANT_SECRET_LEN],
		   const uint8_t hs[DFKV_HS_LEN])
{
	uint8_t proof[DFKV_AUTH_PROOF_LEN], sproof[DFKV_AUTH_PROOF_LEN];
	uint8_t d[DFKV_AUTH_PROOF_LEN];
	struct dfkv_key k = { .tenant = t };
	struct dfkv_test_resp r;
	int st;

	dfkv_proof(proof, sproof, secret, name, hs, t);
	st = dfkv_test_tcp_call(fd, DFKV_OP_AUTH, &k, 0, 0, proof,
				sizeof(proof), &r, d, sizeof(d));
	if (st == DFKV_STATUS_OK &&
	    (r.data_len != sizeof(d) || memcmp(d, sproof, sizeof(d))))
		return -1;
	if (st != DFKV_STATUS_OK && r.data_len)
		return -1;
	return st;
}
