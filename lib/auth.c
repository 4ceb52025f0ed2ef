// SPDX-License-Identifier: (GPL-2.0 WITH Linux-syscall-note) OR MIT
/*
 * libdfkv tenant authentication (SPEC.md section 9, AUTH2): the two proofs
 * (HMAC-SHA256 through OpenSSL) over the transcript that binds the node's
 * name, both nonces and the tenant, and the handshake the network
 * transports run on every connection they open.  HELLO carries a fresh
 * client nonce (OpenSSL's CSPRNG); its reply tells the node's
 * capabilities, max_value_bytes, its nonce and its name, which must be the
 * member's the client routed to.  With a tenant secret the client then
 * sends AUTH and checks the node's server proof before any other request
 * goes out, whatever the node's auth setting: a node that fails any step
 * is failed as unreachable (and counted), so no tenant request reaches it.
 * The transports (tcp.c, rdma.c) only carry the two requests.
 */
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>

#include "client.h"

static_assert(DFKV_HELLO_REQ_LEN <= DFKV_HELLO_MAX, "HELLO payload");

/* out = HMAC-SHA256(secret, tag || t[0..n)). */
static bool hmac_tagged(const uint8_t *secret, char tag, const uint8_t *t,
			size_t n, uint8_t *out)
{
	uint8_t msg[1 + DFKV_AUTH2_TRANSCRIPT_MAX];
	unsigned int len = 0;

	msg[0] = (uint8_t)tag;
	memcpy(msg + 1, t, n);
	return HMAC(EVP_sha256(), secret, DFKV_TENANT_SECRET_LEN, msg, n + 1,
		    out, &len) && len == DFKV_AUTH_PROOF_LEN;
}

DFKV_API int dfkv_auth2_proofs(const uint8_t secret[DFKV_TENANT_SECRET_LEN],
			       const char *name, size_t name_len,
			       const uint8_t server_nonce[DFKV_AUTH_NONCE_LEN],
			       const uint8_t client_nonce[DFKV_AUTH_NONCE_LEN],
			       uint64_t tenant_hash,
			       uint8_t client_proof[DFKV_AUTH_PROOF_LEN],
			       uint8_t server_proof[DFKV_AUTH_PROOF_LEN])
{
	uint8_t t[DFKV_AUTH2_TRANSCRIPT_MAX];
	size_t n = 0;

	if (!secret || !name || !server_nonce || !client_nonce ||
	    !client_proof || !server_proof || !name_len ||
	    name_len > DFKV_AUTH2_NAME_MAX)
		return DFKV_E_INVAL;
	memcpy(t, DFKV_AUTH2_DOMAIN, DFKV_AUTH2_DOMAIN_LEN);
	n += DFKV_AUTH2_DOMAIN_LEN;
	t[n++] = (uint8_t)name_len;
	memcpy(t + n, name, name_len);
	n += name_len;
	memcpy(t + n, server_nonce, DFKV_AUTH_NONCE_LEN);
	n += DFKV_AUTH_NONCE_LEN;
	memcpy(t + n, client_nonce, DFKV_AUTH_NONCE_LEN);
	n += DFKV_AUTH_NONCE_LEN;
	dfkv_put_le64(t + n, tenant_hash);
	n += 8;
	if (!hmac_tagged(secret, 'C', t, n, client_proof) ||
	    !hmac_tagged(secret, 'S', t, n, server_proof)) {
		OPENSSL_cleanse(client_proof, DFKV_AUTH_PROOF_LEN);
		OPENSSL_cleanse(server_proof, DFKV_AUTH_PROOF_LEN);
		return DFKV_E_SYS;
	}
	return 0;
}

bool dfkv_handshake_start(struct dfkv_handshake *h, struct dfkv_peer *p)
{
	memset(h, 0, sizeof(*h));
	dfkv_put_le64(h->hello_payload, DFKV_CAP_AUTH2);
	if (RAND_bytes(h->hello_payload + 8, DFKV_AUTH_NONCE_LEN) != 1)
		return false;
	h->hello = (struct dfkv_req){
		.op = DFKV_OP_HELLO, .peer = p, .status = DFKV_E_NOT_RUN,
		.val = h->hello_payload, .val_len = sizeof(h->hello_payload),
		.buf = h->reply, .cap = sizeof(h->reply),
	};
	return true;
}

/* The node proved nothing it had to: fail it, and count that. */
static enum dfkv_hs_next hs_failed(struct dfkv_peer *p)
{
	atomic_fetch_add(&p->auth_failures, 1);
	return DFKV_HS_FAILED;
}

enum dfkv_hs_next dfkv_handshake_hello(struct dfkv_client *c,
				       struct dfkv_handshake *h)
{
	struct dfkv_peer *p = h->hello.peer;
	const uint8_t *name = h->reply + DFKV_HELLO_REPLY_MIN;
	size_t name_len = h->reply[DFKV_HELLO_REPLY_MIN - 1];
	uint64_t caps;

	/* a node that does not answer HELLO has no capabilities and no name */
	if (h->hello.status != DFKV_STATUS_OK)
		return c->has_secret ? hs_failed(p) : DFKV_HS_DONE;
	if (h->hello.data_len < DFKV_HELLO_REPLY_MIN ||
	    h->hello.data_len != DFKV_HELLO_REPLY_MIN + name_len ||
	    name_len != strlen(p->name) || memcmp(name, p->name, name_len))
		return hs_failed(p);	/* not the member routed to */
	caps = dfkv_get_le64(h->reply);
	atomic_store(&p->max_value, dfkv_get_le64(h->reply + 8));
	if (!c->has_secret)
		return DFKV_HS_DONE;
	if (!(caps & DFKV_CAP_AUTH2) ||
	    dfkv_auth2_proofs(c->secret, p->name, name_len, h->reply + 16,
			      h->hello_payload + 8, c->tenant, h->proof,
			      h->server_proof))
		return hs_failed(p);	/* no downgrade */
	h->auth = (struct dfkv_req){
		.op = DFKV_OP_AUTH, .peer = p, .status = DFKV_E_NOT_RUN,
		.key.tenant = c->tenant,
		.val = h->proof, .val_len = sizeof(h->proof),
		.buf = h->auth_reply, .cap = sizeof(h->auth_reply),
	};
	return DFKV_HS_AUTH;
}

enum dfkv_hs_next dfkv_handshake_auth(struct dfkv_handshake *h)
{
	if (h->auth.status != DFKV_STATUS_OK ||
	    h->auth.data_len != DFKV_AUTH_PROOF_LEN ||
	    CRYPTO_memcmp(h->auth_reply, h->server_proof, DFKV_AUTH_PROOF_LEN))
		return hs_failed(h->auth.peer);
	return DFKV_HS_DONE;
}
