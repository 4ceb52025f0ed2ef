// SPDX-License-Identifier: (GPL-2.0 WITH Linux-syscall-note) OR MIT
/*
 * libdfkv tenant authentication (SPEC.md section 9): the AUTH proof
 * (HMAC-SHA256 through OpenSSL), and the handshake the network transports
 * run on every connection they open: HELLO, which tells the node's
 * capabilities, max_value_bytes and a fresh nonce, then AUTH for the
 * client's tenant when a secret is configured and the node verifies it.
 * The transports (tcp.c, rdma.c) only carry the two requests.
 */
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include "client.h"

static_assert(DFKV_AUTH_MSG_LEN == DFKV_AUTH_DOMAIN_LEN +
	      DFKV_AUTH_NONCE_LEN + 8, "AUTH message");

DFKV_API int dfkv_auth_proof(const uint8_t secret[DFKV_TENANT_SECRET_LEN],
			     const uint8_t nonce[DFKV_AUTH_NONCE_LEN],
			     uint64_t tenant_hash,
			     uint8_t proof[DFKV_AUTH_PROOF_LEN])
{
	uint8_t msg[DFKV_AUTH_MSG_LEN];
	unsigned int len = 0;

	if (!secret || !nonce || !proof)
		return DFKV_E_INVAL;
	memcpy(msg, DFKV_AUTH_DOMAIN, DFKV_AUTH_DOMAIN_LEN);
	memcpy(msg + DFKV_AUTH_DOMAIN_LEN, nonce, DFKV_AUTH_NONCE_LEN);
	dfkv_put_le64(msg + DFKV_AUTH_DOMAIN_LEN + DFKV_AUTH_NONCE_LEN,
		      tenant_hash);
	if (!HMAC(EVP_sha256(), secret, DFKV_TENANT_SECRET_LEN, msg, sizeof(msg),
		  proof, &len) || len != DFKV_AUTH_PROOF_LEN) {
		memset(proof, 0, DFKV_AUTH_PROOF_LEN);
		return DFKV_E_SYS;
	}
	return 0;
}

void dfkv_handshake_start(struct dfkv_handshake *h, struct dfkv_peer *p)
{
	memset(h, 0, sizeof(*h));
	h->hello = (struct dfkv_req){
		.op = DFKV_OP_HELLO, .peer = p, .status = DFKV_E_NOT_RUN,
		.val = h->caps, .val_len = sizeof(h->caps),
		.buf = h->reply, .cap = sizeof(h->reply),
	};
}

bool dfkv_handshake_hello(struct dfkv_client *c, struct dfkv_handshake *h)
{
	uint64_t caps;

	/* a node that does not answer HELLO has no capabilities */
	if (h->hello.status != DFKV_STATUS_OK || h->hello.data_len < 16)
		return false;
	caps = dfkv_get_le64(h->reply);
	atomic_store(&h->hello.peer->max_value, dfkv_get_le64(h->reply + 8));
	h->required = caps & DFKV_CAP_AUTH_REQUIRED;
	if (!c->has_secret || !(caps & DFKV_CAP_AUTH) ||
	    h->hello.data_len < DFKV_HELLO_REPLY_LEN ||
	    dfkv_auth_proof(c->secret, h->reply + 16, c->tenant, h->proof))
		return false;
	h->auth = (struct dfkv_req){
		.op = DFKV_OP_AUTH, .peer = h->hello.peer,
		.status = DFKV_E_NOT_RUN, .key.tenant = c->tenant,
		.val = h->proof, .val_len = sizeof(h->proof),
	};
	return true;
}

bool dfkv_handshake_refused(const struct dfkv_handshake *h)
{
	return h->required && h->auth.op == DFKV_OP_AUTH &&
	       h->auth.status != DFKV_STATUS_OK;
}
