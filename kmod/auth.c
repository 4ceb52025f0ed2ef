// SPDX-License-Identifier: GPL-2.0
/*
 * Authentication of connections and files for tenants (SPEC.md section 9;
 * see auth.h).  A HELLO draws a fresh nonce from the kernel's random
 * source; an AUTH's proof is checked by the node's tenants (tenant.c) over
 * DFKV_AUTH_DOMAIN || nonce || u64le(tenant).  With auth=required every
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

void dfkv_auth_hello(struct dfkv_node *node, struct dfkv_auth *a, u8 *reply)
{
	u64 caps = DFKV_CAP_AUTH;

	if (READ_ONCE(node->tenants.auth_required))
		caps |= DFKV_CAP_AUTH_REQUIRED;
	put_unaligned_le64(caps, reply);
	put_unaligned_le64(READ_ONCE(node->max_value), reply + 8);
	mutex_lock(&a->lock);
	get_random_bytes(a->nonce, sizeof(a->nonce));
	a->nonce_set = true;
	memcpy(reply + 16, a->nonce, sizeof(a->nonce));
	mutex_unlock(&a->lock);
}

/* Record a grant; false when the connection has all it may have. */
static bool auth_grant_locked(struct dfkv_auth *a, u64 tenant, u64 reg_id)
{
	u32 i;

	for (i = 0; i < a->nr; i++) {
		if (a->grants[i].hash == tenant) {
			WRITE_ONCE(a->grants[i].reg_id, reg_id);
			return true;
		}
	}
	if (a->nr == DFKV_AUTH_TENANTS_MAX)
		return false;
	a->grants[a->nr].hash = tenant;
	a->grants[a->nr].reg_id = reg_id;
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
		    const u8 *proof, bool *close)
{
	u8 msg[DFKV_AUTH_MSG_LEN];
	bool ok = false;
	u64 reg_id;

	mutex_lock(&a->lock);
	if (a->nonce_set) {
		memcpy(msg, DFKV_AUTH_DOMAIN, DFKV_AUTH_DOMAIN_LEN);
		memcpy(msg + DFKV_AUTH_DOMAIN_LEN, a->nonce, sizeof(a->nonce));
		put_unaligned_le64(tenant, msg + DFKV_AUTH_DOMAIN_LEN +
				   DFKV_AUTH_NONCE_LEN);
		ok = dfkv_tenant_verify(&node->tenants, tenant, msg,
					sizeof(msg), proof, NULL, &reg_id) &&
		     auth_grant_locked(a, tenant, reg_id);
	}
	if (!ok)
		a->failures++;
	*close = a->failures >= DFKV_AUTH_FAILURES_MAX;
	mutex_unlock(&a->lock);
	auth_count(node, ok);
	return ok ? DFKV_STATUS_OK : DFKV_STATUS_FORBIDDEN;
}

int dfkv_auth_secret(struct dfkv_node *node, struct dfkv_auth *a, u64 tenant,
		     const u8 *secret)
{
	int err = 0;
	u64 reg_id;

	mutex_lock(&a->lock);
	if (!dfkv_tenant_verify(&node->tenants, tenant, NULL, 0, NULL, secret,
				&reg_id))
		err = -EACCES;
	else if (!auth_grant_locked(a, tenant, reg_id))
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
						   READ_ONCE(a->grants[i].reg_id));
	return false;
}

bool dfkv_auth_allows(struct dfkv_node *node, const struct dfkv_auth *a,
		      const struct dfkv_key *keys, u32 n)
{
	struct dfkv_tenant *t;
	u32 i, nr;

	if (a->all || !READ_ONCE(node->tenants.auth_required))
		return true;
	nr = smp_load_acquire(&a->nr);	/* pairs with auth_grant_locked() */
	for (i = 0; i < n; i++) {
		if (i && keys[i].tenant == keys[i - 1].tenant)
			continue;
		if (!auth_granted(node, a, nr, keys[i].tenant))
			break;
	}
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
