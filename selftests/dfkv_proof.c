// SPDX-License-Identifier: GPL-2.0
/*
 * The AUTH proof (see dfkv_proof.h), on OpenSSL's libcrypto.
 */
#include <stdio.h>
#include <string.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include "dfkv_proof.h"

void dfkv_proof_msg(uint8_t msg[DFKV_AUTH_MSG_LEN],
		    const uint8_t nonce[DFKV_AUTH_NONCE_LEN], uint64_t tenant)
{
	memcpy(msg, DFKV_AUTH_DOMAIN, DFKV_AUTH_DOMAIN_LEN);
	memcpy(msg + DFKV_AUTH_DOMAIN_LEN, nonce, DFKV_AUTH_NONCE_LEN);
	for (int i = 0; i < 8; i++)
		msg[DFKV_AUTH_DOMAIN_LEN + DFKV_AUTH_NONCE_LEN + i] =
			(uint8_t)(tenant >> (8 * i));
}

void dfkv_proof(uint8_t proof[DFKV_AUTH_PROOF_LEN],
		const uint8_t secret[DFKV_TENANT_SECRET_LEN],
		const uint8_t nonce[DFKV_AUTH_NONCE_LEN], uint64_t tenant)
{
	uint8_t msg[DFKV_AUTH_MSG_LEN];
	unsigned int len = DFKV_AUTH_PROOF_LEN;

	dfkv_proof_msg(msg, nonce, tenant);
	if (!HMAC(EVP_sha256(), secret, DFKV_TENANT_SECRET_LEN, msg,
		  sizeof(msg), proof, &len))
		memset(proof, 0, DFKV_AUTH_PROOF_LEN);
}

void dfkv_test_secret(uint64_t t, uint8_t secret[DFKV_TENANT_SECRET_LEN])
{
	char b[DFKV_TENANT_SECRET_LEN + 1];

	snprintf(b, sizeof(b), "S3cr3t:%016llx:dfkvtest",
		 (unsigned long long)t);
	memcpy(secret, b, DFKV_TENANT_SECRET_LEN);
}
