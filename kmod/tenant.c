// SPDX-License-Identifier: GPL-2.0
/*
 * Tenants of a node: the table, registration with secrets and quotas,
 * quota charges, and checking a connection's proof of a secret (see
 * tenant.h).  Creation and the final put serialize on a per-node spinlock
 * taken only when a tenant comes or goes; a tenant in the table under it
 * is always live.  A secret lives only in its registered tenant, is never
 * copied out, and is wiped with memzero_explicit() when it is dropped or
 * the tenant is unregistered.  Every proof is checked with an HMAC
 * transform allocated for it and freed (its keyed state wiped) before the
 * check returns, so no key outlives its verification.  Proving is open
 * to error injection (fail_function): the fault-injection selftest fails
 * it as its transform allocation fails, from any task (a TCP worker's).
 */
#include <linux/error-injection.h>
#include <linux/slab.h>
#include <linux/random.h>
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

	err = rhashtable_init(&ts->table, &tenant_params);
	if (err)
		return err;
	atomic_set(&ts->nr, 0);
	spin_lock_init(&ts->lock);
	ts->gen = 1;
	mutex_init(&ts->reg_lock);
	ts->next_secret_id = 1;
	get_random_bytes(ts->decoy, sizeof(ts->decoy));
	return 0;
}

static void tenant_free(void *ptr, void *arg)
{
	kfree_sensitive(ptr);
}

void dfkv_tenants_destroy(struct dfkv_tenants *ts)
{
	rhashtable_free_and_destroy(&ts->table, tenant_free, NULL);
	memzero_explicit(ts->decoy, sizeof(ts->decoy));
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

/* How many secrets t holds; lockless readers get a snapshot. */
u32 dfkv_tenant_secrets(const struct dfkv_tenant *t)
{
	u32 i, n = 0;

	for (i = 0; i < DFKV_TENANT_SECRETS_MAX; i++)
		/* pairs with secret_add() and secret_drop() */
		if (smp_load_acquire(&t->secrets[i].id))
			n++;
	return n;
}

/* The slot of t that holds key, or -1; compares every slot in full. */
static int secret_find(const struct dfkv_tenant *t, const u8 *key)
{
	int i, found = -1;

	for (i = 0; i < DFKV_TENANT_SECRETS_MAX; i++)
		if (t->secrets[i].id &&
		    !crypto_memneq(t->secrets[i].key, key,
				   DFKV_TENANT_SECRET_LEN))
			found = i;
	return found;
}

static int secret_free_slot(const struct dfkv_tenant *t)
{
	int i;

	for (i = 0; i < DFKV_TENANT_SECRETS_MAX; i++)
		if (!t->secrets[i].id)
			return i;
	return -1;
}

/* Revoke the grants made with slot i first, then wipe its key. */
static void secret_drop(struct dfkv_tenant *t, int i)
{
	/* pairs with dfkv_tenant_granted(): no grant of it passes after */
	smp_store_release(&t->secrets[i].id, 0);
	memzero_explicit(t->secrets[i].key, sizeof(t->secrets[i].key));
}

static void secret_add(struct dfkv_tenants *ts, struct dfkv_tenant *t,
		       int i, const u8 *key)
{
	memcpy(t->secrets[i].key, key, sizeof(t->secrets[i].key));
	/* pairs with dfkv_tenant_granted(): the id is published last */
	smp_store_release(&t->secrets[i].id, ts->next_secret_id++);
}

/* Apply cfg's secrets to t: validates all before it changes anything. */
static int tenant_set_secrets(struct dfkv_tenants *ts, struct dfkv_tenant *t,
			      const struct dfkv_tenant_cfg *cfg,
			      struct netlink_ext_ack *extack)
{
	int i, keep, drop = -1;
	bool add;

	lockdep_assert_held(&ts->reg_lock);
	if (cfg->secret) {
		keep = secret_find(t, cfg->secret);
		for (i = 0; i < DFKV_TENANT_SECRETS_MAX; i++)
			if (i != keep && t->secrets[i].id)
				secret_drop(t, i);
		if (keep < 0)
			secret_add(ts, t, 0, cfg->secret);
		return 0;
	}
	if (cfg->drop_secret) {
		drop = secret_find(t, cfg->drop_secret);
		if (drop < 0) {
			NL_SET_ERR_MSG(extack, "the tenant holds no such secret");
			return -ENOENT;
		}
		if (dfkv_tenant_secrets(t) == 1 && !cfg->add_secret) {
			NL_SET_ERR_MSG(extack,
				       "that is the tenant's only secret: add its successor first");
			return -EBUSY;
		}
	}
	add = cfg->add_secret && secret_find(t, cfg->add_secret) < 0;
	if (add && drop < 0 && secret_free_slot(t) < 0) {
		NL_SET_ERR_MSG(extack,
			       "the tenant holds two secrets already: drop one first");
		return -ENOSPC;
	}
	if (drop >= 0)
		secret_drop(t, drop);
	if (add)
		secret_add(ts, t, secret_free_slot(t), cfg->add_secret);
	return 0;
}

int dfkv_tenant_register(struct dfkv_tenants *ts,
			 const struct dfkv_tenant_cfg *cfg,
			 struct netlink_ext_ack *extack)
{
	struct dfkv_tenant *t;
	bool was;
	int err;

	if (cfg->secret && (cfg->add_secret || cfg->drop_secret)) {
		NL_SET_ERR_MSG(extack,
			       "a secret replaces all of them: it does not combine with adding or dropping one");
		return -EINVAL;
	}
	t = dfkv_tenant_get(ts, cfg->hash);
	if (!t) {
		NL_SET_ERR_MSG(extack, "out of memory for the tenant");
		return -ENOMEM;
	}
	mutex_lock(&ts->reg_lock);
	was = t->registered;
	err = tenant_set_secrets(ts, t, cfg, extack);
	if (err)
		goto unlock;
	/* The registration keeps the reference just taken. */
	if (!was)	/* pairs with dfkv_tenant_granted() */
		smp_store_release(&t->registered, true);
	if (cfg->quota) {
		WRITE_ONCE(t->quota, *cfg->quota);
		WRITE_ONCE(t->has_quota, true);
	}
unlock:
	mutex_unlock(&ts->reg_lock);
	if (was || err)
		dfkv_tenant_put(ts, t);
	return err;
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
	int i;

	mutex_lock(&ts->reg_lock);
	t = tenant_registered(ts, hash);
	if (!t) {
		mutex_unlock(&ts->reg_lock);
		return -ENOENT;
	}
	for (i = 0; i < DFKV_TENANT_SECRETS_MAX; i++)
		if (t->secrets[i].id)
			secret_drop(t, i);
	WRITE_ONCE(t->has_quota, false);
	WRITE_ONCE(t->quota, 0);
	/* pairs with dfkv_tenant_granted(), after the secrets went */
	smp_store_release(&t->registered, false);
	mutex_unlock(&ts->reg_lock);
	dfkv_tenant_put(ts, t);
	return 0;
}

/* out = HMAC-SHA256(key, tag || msg) with tfm, which this call keys. */
static int hmac_tagged(struct crypto_shash *tfm, const u8 *key, u8 tag,
		       const u8 *msg, size_t len, u8 *out)
{
	SHASH_DESC_ON_STACK(desc, tfm);
	int err;

	desc->tfm = tfm;
	err = crypto_shash_setkey(tfm, key, DFKV_TENANT_SECRET_LEN);
	if (!err)
		err = crypto_shash_init(desc);
	if (!err)
		err = crypto_shash_update(desc, &tag, 1);
	if (!err)
		err = crypto_shash_finup(desc, msg, len, out);
	shash_desc_zero(desc);
	return err;
}

int dfkv_tenant_prove(struct dfkv_tenants *ts, u64 hash,
		      const u8 *transcript, size_t len,
		      const u8 *client_proof, u8 *server_proof, u64 *secret_id)
{
	u8 mac[DFKV_AUTH_PROOF_LEN];
	struct crypto_shash *tfm;
	struct dfkv_tenant *t;
	int i, found = -1, err = 0;

	tfm = crypto_alloc_shash("hmac(sha256)", 0, 0);
	if (IS_ERR(tfm))
		return PTR_ERR(tfm);
	mutex_lock(&ts->reg_lock);
	t = tenant_registered(ts, hash);
	/* as many HMACs for an unknown tenant or empty slot as for a held one */
	for (i = 0; i < DFKV_TENANT_SECRETS_MAX && !err; i++) {
		bool held = t && t->secrets[i].id;

		err = hmac_tagged(tfm, held ? t->secrets[i].key : ts->decoy,
				  'C', transcript, len, mac);
		if (!err && held && found < 0 &&
		    !crypto_memneq(mac, client_proof, sizeof(mac)))
			found = i;
	}
	if (!err && found >= 0) {
		err = hmac_tagged(tfm, t->secrets[found].key, 'S', transcript,
				  len, server_proof);
		*secret_id = t->secrets[found].id;
	}
	if (t)
		atomic64_inc(!err && found >= 0 ? &t->auth_ok :
			     &t->auth_failures);
	mutex_unlock(&ts->reg_lock);
	memzero_explicit(mac, sizeof(mac));
	crypto_free_shash(tfm);	/* wipes the keyed state */
	if (err)
		return err;
	return found >= 0 ? 0 : -EACCES;
}

ALLOW_ERROR_INJECTION(dfkv_tenant_prove, ERRNO);

bool dfkv_tenant_check_secret(struct dfkv_tenants *ts, u64 hash,
			      const u8 *secret, u64 *secret_id)
{
	struct dfkv_tenant *t;
	int i = -1;

	mutex_lock(&ts->reg_lock);
	t = tenant_registered(ts, hash);
	if (t) {
		i = secret_find(t, secret);
		if (i >= 0)
			*secret_id = t->secrets[i].id;
		atomic64_inc(i >= 0 ? &t->auth_ok : &t->auth_failures);
	}
	mutex_unlock(&ts->reg_lock);
	return i >= 0;
}

bool dfkv_tenant_granted(struct dfkv_tenants *ts, u64 hash, u64 secret_id)
{
	struct dfkv_tenant *t;
	bool ok = false;
	int i;

	rcu_read_lock();
	t = dfkv_tenant_find(ts, hash);
	/* pairs with dfkv_tenant_register() and secret_add()/_drop() */
	if (t && smp_load_acquire(&t->registered))
		for (i = 0; i < DFKV_TENANT_SECRETS_MAX; i++)
			/* the same pairing, per secret */
			if (smp_load_acquire(&t->secrets[i].id) == secret_id)
				ok = true;
	rcu_read_unlock();
	return ok;
}
