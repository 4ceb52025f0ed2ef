/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What a connection or an open file may do for which tenants (SPEC.md
 * section 9): the two nonces of its last HELLO, the tenants an AUTH
 * granted (each with the id of the secret it was proven with), its
 * failures.  Grants are only ever appended (a revoked one fails
 * dfkv_tenant_granted()), so requests executing concurrently (RDMA) read
 * them without a lock; HELLO and AUTH serialize on the lock.
 */
#ifndef _DFKV_AUTH_H
#define _DFKV_AUTH_H

#include <linux/mutex.h>
#include <linux/dfkv.h>

struct dfkv_node;
struct dfkv_key;

struct dfkv_auth_grant {
	u64 hash;
	u64 secret_id;
};

struct dfkv_auth {
	bool all;		/* an administrator's file: every tenant */
	bool nonces_set;	/* a HELLO with a client nonce came */
	u8 failures;
	u32 nr;			/* smp_store_release() after the grant */
	struct mutex lock;	/* HELLO and AUTH */
	u8 server_nonce[DFKV_AUTH_NONCE_LEN];
	u8 client_nonce[DFKV_AUTH_NONCE_LEN];
	struct dfkv_auth_grant grants[DFKV_AUTH_TENANTS_MAX];
};

void dfkv_auth_init(struct dfkv_auth *a, bool all);
void dfkv_auth_destroy(struct dfkv_auth *a);

/*
 * HELLO with its payload (the client's capabilities and nonce): fills
 * reply (DFKV_HELLO_REPLY_MAX bytes) with a fresh server nonce and the
 * node's name, and returns its length.
 */
size_t dfkv_auth_hello(struct dfkv_node *node, struct dfkv_auth *a,
		       const u8 *payload, u64 len, u8 *reply);
/*
 * AUTH of a wire connection: the status of its reply, the server proof in
 * server_proof (DFKV_AUTH_PROOF_LEN bytes) on OK, and in *close whether
 * this was the failure that closes the connection.
 */
int dfkv_auth_proof(struct dfkv_node *node, struct dfkv_auth *a, u64 tenant,
		    const u8 *proof, u8 *server_proof, bool *close);
/* DFKV_IOC_AUTH: 0, -EACCES (wrong or unknown) or -ENOSPC (too many). */
int dfkv_auth_secret(struct dfkv_node *node, struct dfkv_auth *a, u64 tenant,
		     const u8 *secret);
/*
 * May a act for the tenants of these n keys?  Always with auth=off.  A
 * refusal is counted; the caller answers FORBIDDEN and touches nothing.
 */
bool dfkv_auth_allows(struct dfkv_node *node, const struct dfkv_auth *a,
		      const struct dfkv_key *keys, u32 n);
/* dfkv_auth_allows() for one key, counting nothing: a look ahead. */
bool dfkv_auth_may(struct dfkv_node *node, const struct dfkv_auth *a,
		   const struct dfkv_key *key);
/* May a see the node's counters?  With auth=required: one grant in force. */
bool dfkv_auth_any(struct dfkv_node *node, const struct dfkv_auth *a);

#endif /* _DFKV_AUTH_H */
