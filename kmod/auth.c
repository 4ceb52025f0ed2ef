// SPDX-License-Identifier: GPL-2.0
/*
 * Authentication of connections and files for tenants (SPEC.md section 9,
 * AUTH2; see auth.h).  A HELLO keeps the client's nonce, draws a fresh
 * server nonce from the kernel's random source and tells the node's name;
 * an AUTH's proof is checked by the node's tenants (tenant.c) over the
 * transcript that binds the name, both nonces and the tenant, and the
 * node proves the same secret back.  With auth=required every
 * tenant-scoped operation asks dfkv_auth_allows() first (ops.c), the one
 * place every transport goes through.
 */
#include <linux/random.h>
#include <linux/string.h>

#include "compat.h"
#include "auth.h"
#include "node.h"

void dfkv_auth_init(struct dfkv_auth *a, bool all)
{
	memset(a, 0, sizeof(*a));
	a->all = all;
	mutex_init(&a->lock);
}

void dfkv_auth_destroy(struct dfkv_auth *a)
{
	mutex_destroy(&a->lock);
}

size_t dfkv_auth_hello(struct dfkv_node *node, struct dfkv_auth *a,
		       const u8 *payload, u64 len, u8 *reply)
{
	u64 caps = DFKV_CAP_AUTH | DFKV_CAP_AUTH2;
	size_t name_len = strlen(node->name);
	bool cn = len >= DFKV_HELLO_REQ_LEN &&
		  (get_unaligned_le64(payload) & DFKV_CAP_AUTH2);

	if (READ_ONCE(node->tenants.auth_required))
		caps |= DFKV_CAP_AUTH_REQUIRED;
	put_unaligned_le64(caps, reply);
	put_unaligned_le64(READ_ONCE(node->max_value), reply + 8);
	mutex_lock(&a->lock);
	get_random_bytes(a->server_nonce, sizeof(a->server_nonce));
	if (cn)
		memcpy(a->client_nonce, payload + 8, sizeof(a->client_nonce));
	a->nonces_set = cn;
	memcpy(reply + 16, a->server_nonce, sizeof(a->server_nonce));
	mutex_unlock(&a->lock);
	reply[16 + DFKV_AUTH_NONCE_LEN] = name_len;
	memcpy(reply + DFKV_HELLO_REPLY_MIN, node->name, name_len);
	return DFKV_HELLO_REPLY_MIN + name_len;
}

/* T = DFKVAUTH2 || u8 name_len || name || sn || cn || u64le tenant. */
static size_t auth_transcript(const struct dfkv_node *node,
			      const struct dfkv_auth *a, u64 tenant, u8 *t)
{
	size_t name_len = strlen(node->name), n = 0;

	memcpy(t, DFKV_AUTH2_DOMAIN, DFKV_AUTH2_DOMAIN_LEN);
	n += DFKV_AUTH2_DOMAIN_LEN;
	t[n++] = name_len;
	memcpy(t + n, node->name, name_len);
	n += name_len;
	memcpy(t + n, a->server_nonce, DFKV_AUTH_NONCE_LEN);
	n += DFKV_AUTH_NONCE_LEN;
	memcpy(t + n, a->client_nonce, DFKV_AUTH_NONCE_LEN);
	n += DFKV_AUTH_NONCE_LEN;
	put_unaligned_le64(tenant, t + n);
	return n + 8;
}

/* Record a grant; false when the connection has all it may have. */
static bool auth_grant_locked(struct dfkv_auth *a, u64 tenant, u64 secret_id)
{
	u32 i;

	for (i = 0; i < a->nr; i++) {
		if (a->grants[i].hash == tenant) {
			WRITE_ONCE(a->grants[i].secret_id, secret_id);
			return true;
		}
	}
	if (a->nr == DFKV_AUTH_TENANTS_MAX)
		return false;
	a->grants[a->nr].hash = tenant;
	a->grants[a->nr].secret_id = secret_id;
	/* Publish the grant whole to lockless dfkv_auth_allows(). */
	smp_store_release(&a->nr, a->nr + 1);
	return true;
}

static void auth_count(struct dfkv_node *node, bool ok)
{
	if (ok)
		this_cpu_inc(node->stats.pcpu->auth_ok);
	else
		this_cpu_inc(node->stats.pcpu->auth_failures);
}

int dfkv_auth_proof(struct dfkv_node *node, struct dfkv_auth *a, u64 tenant,
		    const u8 *proof, u8 *server_proof, bool *close)
{
	u8 t[DFKV_AUTH2_TRANSCRIPT_MAX];
	int status = DFKV_STATUS_FORBIDDEN;
	u64 secret_id;
	size_t len;
	int err;

	mutex_lock(&a->lock);
	if (a->nonces_set) {
		len = auth_transcript(node, a, tenant, t);
		err = dfkv_tenant_prove(&node->tenants, tenant, t, len, proof,
					server_proof, &secret_id);
		if (!err && auth_grant_locked(a, tenant, secret_id))
			status = DFKV_STATUS_OK;
		else if (err && err != -EACCES)
			status = DFKV_STATUS_BUSY;	/* no transform: retry */
	}
	if (status == DFKV_STATUS_FORBIDDEN)
		a->failures++;
	*close = a->failures >= DFKV_AUTH_FAILURES_MAX;
	mutex_unlock(&a->lock);
	auth_count(node, status == DFKV_STATUS_OK);
	return status;
}

int dfkv_auth_secret(struct dfkv_node *node, struct dfkv_auth *a, u64 tenant,
		     const u8 *secret)
{
	u64 secret_id;
	int err = 0;

	mutex_lock(&a->lock);
	if (!dfkv_tenant_check_secret(&node->tenants, tenant, secret,
				      &secret_id))
		err = -EACCES;
	else if (!auth_grant_locked(a, tenant, secret_id))
		err = -ENOSPC;
	mutex_unlock(&a->lock);
	auth_count(node, !err);
	return err;
}

static bool auth_granted(struct dfkv_node *node, const struct dfkv_auth *a,
			 u32 nr, u64 tenant)
{
	u32 i;

	for (i = 0; i < nr; i++)
		if (a->grants[i].hash == tenant)
			return dfkv_tenant_granted(&node->tenants, tenant,
						   READ_ONCE(a->grants[i].secret_id));
	return false;
}

/* The first of n keys a may not act for, or n. */
static u32 auth_first_refused(struct dfkv_node *node,
			      const struct dfkv_auth *a,
			      const struct dfkv_key *keys, u32 n)
{
	u32 i, nr;

	if (a->all || !READ_ONCE(node->tenants.auth_required))
		return n;
	nr = smp_load_acquire(&a->nr);	/* pairs with auth_grant_locked() */
	for (i = 0; i < n; i++) {
		if (i && keys[i].tenant == keys[i - 1].tenant)
			continue;
		if (!auth_granted(node, a, nr, keys[i].tenant))
			break;
	}
	return i;
}

bool dfkv_auth_may(struct dfkv_node *node, const struct dfkv_auth *a,
		   const struct dfkv_key *key)
{
	return auth_first_refused(node, a, key, 1) == 1;
}

bool dfkv_auth_allows(struct dfkv_node *node, const struct dfkv_auth *a,
		      const struct dfkv_key *keys, u32 n)
{
	struct dfkv_tenant *t;
	u32 i = auth_first_refused(node, a, keys, n);

	if (i == n)
		return true;
	this_cpu_inc(node->stats.pcpu->forbidden);
	rcu_read_lock();
	t = dfkv_tenant_find(&node->tenants, keys[i].tenant);
	if (t)
		atomic64_inc(&t->forbidden);
	rcu_read_unlock();
	return false;
}

bool dfkv_auth_any(struct dfkv_node *node, const struct dfkv_auth *a)
{
	u32 i, nr;

	if (a->all || !READ_ONCE(node->tenants.auth_required))
		return true;
	nr = smp_load_acquire(&a->nr);	/* pairs with auth_grant_locked() */
	for (i = 0; i < nr; i++)
		if (dfkv_tenant_granted(&node->tenants, a->grants[i].hash,
					READ_ONCE(a->grants[i].secret_id)))
			return true;
	this_cpu_inc(node->stats.pcpu->forbidden);
	return false;
}
