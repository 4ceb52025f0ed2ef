/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The AUTH2 transcript and proofs of SPEC.md section 9, computed from the
 * spec alone with OpenSSL's HMAC (not dfkv's code): what the selftests'
 * hostile clients send and check, and checked against auth2-vectors.json.
 * A handshake's nonces travel as hs = server nonce || client nonce.  And
 * the handshake of a raw TCP client (testlib's frames).  Link with
 * -lcrypto.
 */
#ifndef DFKV_PROOF_H
#define DFKV_PROOF_H

#include <stddef.h>
#include <stdint.h>
#include <linux/dfkv.h>

#define DFKV_HS_LEN	(2 * DFKV_AUTH_NONCE_LEN)

/* T = "DFKVAUTH2" || u8 len || name || hs || u64le(tenant); its length. */
size_t dfkv_proof_transcript(uint8_t t[DFKV_AUTH2_TRANSCRIPT_MAX],
			     const char *name, const uint8_t hs[DFKV_HS_LEN],
			     uint64_t tenant);
/* HMAC-SHA256(secret, "C" || T) into client, ("S" || T) into server. */
void dfkv_proof(uint8_t client[DFKV_AUTH_PROOF_LEN],
		uint8_t server[DFKV_AUTH_PROOF_LEN],
		const uint8_t secret[DFKV_TENANT_SECRET_LEN], const char *name,
		const uint8_t hs[DFKV_HS_LEN], uint64_t tenant);
/* The selftests' secret of tenant t: 32 printable bytes (a leak shows). */
void dfkv_test_secret(uint64_t t, uint8_t secret[DFKV_TENANT_SECRET_LEN]);

/*
 * HELLO with a fresh client nonce to node name: hs and the capabilities
 * (caps may be NULL); its status, or -1 when the reply is not AUTH2's or
 * does not name the node.
 */
int dfkv_test_hello(int fd, const char *name, uint8_t hs[DFKV_HS_LEN],
		    uint64_t *caps);
/*
 * AUTH as tenant t with the client proof of secret over hs; its status,
 * or -1 when an OK does not carry the server proof of the same secret
 * (or a refusal carries data).
 */
int dfkv_test_auth(int fd, const char *name, uint64_t t,
		   const uint8_t secret[DFKV_TENANT_SECRET_LEN],
		   const uint8_t hs[DFKV_HS_LEN]);

#endif /* DFKV_PROOF_H */
