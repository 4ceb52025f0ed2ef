// SPDX-License-Identifier: GPL-2.0
/*
 * The AUTH2 transcript and proofs (see dfkv_proof.h), on OpenSSL's
 * libcrypto.
 */
#include <stdio.h>
#include <string.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include "dfkv_proof.h"

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
