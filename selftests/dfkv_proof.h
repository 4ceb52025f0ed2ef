/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The AUTH proof of SPEC.md section 9, computed from the spec alone with
 * OpenSSL's HMAC (not dfkv's code): what the selftests' hostile clients
 * send, and checked against auth-vectors.json.  Link with -lcrypto.
 */
#ifndef DFKV_PROOF_H
#define DFKV_PROOF_H

#include <stddef.h>
#include <stdint.h>
#include <linux/dfkv.h>

/* "DFKVAUTH1" || nonce || u64le(tenant) into msg. */
void dfkv_proof_msg(uint8_t msg[DFKV_AUTH_MSG_LEN],
		    const uint8_t nonce[DFKV_AUTH_NONCE_LEN], uint64_t tenant);
/* HMAC-SHA256(secret, that message) into proof. */
void dfkv_proof(uint8_t proof[DFKV_AUTH_PROOF_LEN],
		const uint8_t secret[DFKV_TENANT_SECRET_LEN],
		const uint8_t nonce[DFKV_AUTH_NONCE_LEN], uint64_t tenant);
/* The selftests' secret of tenant t: 32 printable bytes (a leak shows). */
void dfkv_test_secret(uint64_t t, uint8_t secret[DFKV_TENANT_SECRET_LEN]);

#endif /* DFKV_PROOF_H */
