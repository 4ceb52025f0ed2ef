// SPDX-License-Identifier: GPL-2.0
/*
 * Tenants of a node: the table, registration with secrets and quotas,
 * quota charges, and checking a connection's proof of a secret (see
 * tenant.h).  Creation and the final put serialize on a per-node spinlock
 * taken only when a tenant comes or goes; a tenant in the table under it
 * is always live.  A secret lives only in its registered tenant, is never
 * copied out, and is wiped with memzero_explicit() when it is replaced or
 * the tenant is unregistered.
 */
#include <linux/slab.h>
#include <linux/rhashtable.h>
#include <linux/string.h>
#include <crypto/hash.h>
#include <crypto/algapi.h>
#include <net/netlink.h>

#include "tenant.h"

static const struct rhashtable_params tenant_params = {
	.key_len = sizeof(u64),
	.key_offset = offsetof(struct dfkv_tenant, hash),
	.head_offset = offsetof(struct dfkv_tenant, node),
	.automatic_shrinking = true,
};

int dfkv_tenants_init(struct dfkv_tenants *ts)
{
	int err;

	ts->hmac = crypto_alloc_shash("hmac(sha256)", 0, 0);
	if (IS_ERR(ts->hmac))
		return PTR_ERR(ts->hmac);
	err = rhashtable_init(&ts->table, &tenant_params);
	if (err) {
		crypto_free_shash(ts->hmac);
		return err;
	}
	atomic_set(&ts->nr, 0);
	spin_lock_init(&ts->lock);
	ts->gen = 1;
	mutex_init(&ts->reg_lock);
	ts->next_reg_id = 1;
	return 0;
}

static void tenant_free(void *ptr, void *arg)
{
	kfree_sensitive(ptr);
}

void dfkv_tenants_destroy(struct dfkv_tenants *ts)
{
	rhashtable_free_and_destroy(&ts->table, tenant_free, NULL);
	crypto_free_shash(ts->hmac);	/* zeroes the last key it held */
	mutex_destroy(&ts->reg_lock);
}

struct dfkv_tenant *dfkv_tenant_find(struct dfkv_tenants *ts, u64 hash)
{
	return rhashtable_lookup(&ts->table, &hash, tenant_params);
}

struct dfkv_tenant *dfkv_tenant_get(struct dfkv_tenants *ts, u64 hash)
{
	struct dfkv_tenant *t, *new;

	rcu_read_lock();
	t = dfkv_tenant_find(ts, hash);
	if (t && !refcount_inc_not_zero(&t->refs))
		t = NULL;	/* going: its last put holds the lock */
	rcu_read_unlock();
	if (t)
		return t;

	new = kzalloc(sizeof(*new), GFP_KERNEL_ACCOUNT);
	if (!new)
		return NULL;
	new->hash = hash;
	refcount_set(&new->refs, 1);
	spin_lock(&ts->lock);
	t = rhashtable_lookup_get_insert_fast(&ts->table, &new->node,
					      tenant_params);
	if (!t) {
		t = new;
		new = NULL;
		atomic_inc(&ts->nr);
		ts->gen++;
	} else if (IS_ERR(t)) {
		t = NULL;
	} else {
		refcount_inc(&t->refs);
	}
	spin_unlock(&ts->lock);
	kfree(new);
	return t;
}

void dfkv_tenant_put(struct dfkv_tenants *ts, struct dfkv_tenant *t)
{
	bool last;

	if (refcount_dec_not_one(&t->refs))
		return;
	/* Maybe the last: drop it to zero only under the lock. */
	spin_lock(&ts->lock);
	last = refcount_dec_and_test(&t->refs);
	if (last) {
		rhashtable_remove_fast(&ts->table, &t->node, tenant_params);
		atomic_dec(&ts->nr);
		ts->gen++;
	}
	spin_unlock(&ts->lock);
	if (last)
		kfree_rcu(t, rcu);	/* unregistered: no secret left */
}

u64 dfkv_tenant_quota(struct dfkv_tenants *ts, const struct dfkv_tenant *t)
{
	if (READ_ONCE(t->has_quota))
		return READ_ONCE(t->quota);
	return READ_ONCE(ts->default_quota);
}

bool dfkv_tenant_charge(struct dfkv_tenants *ts, struct dfkv_tenant *t,
			u64 len, bool force)
{
	u64 quota = dfkv_tenant_quota(ts, t);
	s64 cur = atomic64_read(&t->charged);

	if (force || !quota) {
		atomic64_add(len, &t->charged);
		return true;
	}
	do {
		if (len > quota || cur > quota - len) {
			atomic64_inc(&t->quota_rejections);
			return false;
		}
	} while (!atomic64_try_cmpxchg(&t->charged, &cur, cur + len));
	return true;
}

void dfkv_tenant_uncharge(struct dfkv_tenant *t, u64 len)
{
	atomic64_sub(len, &t->charged);
}

static void tenant_wipe_secret(struct dfkv_tenant *t)
{
	memzero_explicit(t->secret, sizeof(t->secret));
	WRITE_ONCE(t->has_secret, false);
}

int dfkv_tenant_register(struct dfkv_tenants *ts,
			 const struct dfkv_tenant_cfg *cfg,
			 struct netlink_ext_ack *extack)
{
	struct dfkv_tenant *t = dfkv_tenant_get(ts, cfg->hash);
	bool was;

	if (!t) {
		NL_SET_ERR_MSG(extack, "out of memory for the tenant");
		return -ENOMEM;
	}
	mutex_lock(&ts->reg_lock);
	was = t->registered;
	if (!was) {
		/* The registration keeps the reference just taken. */
		WRITE_ONCE(t->reg_id, ts->next_reg_id++);
		WRITE_ONCE(t->registered, true);
	}
	if (cfg->secret) {
		tenant_wipe_secret(t);
		memcpy(t->secret, cfg->secret, sizeof(t->secret));
		WRITE_ONCE(t->has_secret, true);
	}
	if (cfg->quota) {
		WRITE_ONCE(t->quota, *cfg->quota);
		WRITE_ONCE(t->has_quota, true);
	}
	mutex_unlock(&ts->reg_lock);
	if (was)
		dfkv_tenant_put(ts, t);
	return 0;
}

/*
 * The registered tenant of hash, or NULL; it stays in the table while
 * reg_lock is held, since its registration holds a reference.
 */
static struct dfkv_tenant *tenant_registered(struct dfkv_tenants *ts,
					     u64 hash)
{
	struct dfkv_tenant *t;

	lockdep_assert_held(&ts->reg_lock);
	rcu_read_lock();
	t = dfkv_tenant_find(ts, hash);
	if (t && !t->registered)
		t = NULL;
	rcu_read_unlock();
	return t;
}

int dfkv_tenant_unregister(struct dfkv_tenants *ts, u64 hash)
{
	struct dfkv_tenant *t;

	mutex_lock(&ts->reg_lock);
	t = tenant_registered(ts, hash);
	if (!t) {
		mutex_unlock(&ts->reg_lock);
		return -ENOENT;
	}
	tenant_wipe_secret(t);
	WRITE_ONCE(t->has_quota, false);
	WRITE_ONCE(t->quota, 0);
	WRITE_ONCE(t->registered, false);
	mutex_unlock(&ts->reg_lock);
	dfkv_tenant_put(ts, t);
	return 0;
}

/* HMAC-SHA256(secret, msg), with the node's transform, under reg_lock. */
static bool tenant_proof_ok(struct dfkv_tenants *ts, struct dfkv_tenant *t,
			    const u8 *msg, size_t msg_len, const u8 *proof)
{
	u8 mac[DFKV_AUTH_PROOF_LEN];
	bool ok;

	lockdep_assert_held(&ts->reg_lock);
	ok = !crypto_shash_setkey(ts->hmac, t->secret, sizeof(t->secret)) &&
	     !crypto_shash_tfm_digest(ts->hmac, msg, msg_len, mac) &&
	     !crypto_memneq(mac, proof, sizeof(mac));
	memzero_explicit(mac, sizeof(mac));
	return ok;
}

bool dfkv_tenant_verify(struct dfkv_tenants *ts, u64 hash, const u8 *msg,
			size_t msg_len, const u8 *proof, const u8 *secret,
			u64 *reg_id)
{
	struct dfkv_tenant *t;
	bool ok = false;

	mutex_lock(&ts->reg_lock);
	t = tenant_registered(ts, hash);
	if (t && t->has_secret) {
		if (proof)
			ok = tenant_proof_ok(ts, t, msg, msg_len, proof);
		else
			ok = !crypto_memneq(secret, t->secret,
					    sizeof(t->secret));
		*reg_id = t->reg_id;
		atomic64_inc(ok ? &t->auth_ok : &t->auth_failures);
	}
	mutex_unlock(&ts->reg_lock);
	return ok;
}

bool dfkv_tenant_granted(struct dfkv_tenants *ts, u64 hash, u64 reg_id)
{
	struct dfkv_tenant *t;
	bool ok;

	rcu_read_lock();
	t = dfkv_tenant_find(ts, hash);
	ok = t && READ_ONCE(t->registered) && READ_ONCE(t->reg_id) == reg_id;
	rcu_read_unlock();
	return ok;
}
