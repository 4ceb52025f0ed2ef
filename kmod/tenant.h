/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The tenants of a node (SPEC.md sections 6 and 9): an rhashtable of
 * struct dfkv_tenant keyed by the tenant hash, read under RCU.  A tenant
 * exists while the store has an entry of it (each holds a reference) or
 * while it is registered (the registration holds one), so the table holds
 * what an operator listed and what has blocks, never every hash a peer
 * named.  A registered tenant may have one secret, or two during a
 * rotation, which authenticate connections and files for it (auth.c),
 * and its own quota; the others
 * have the node's default quota.  Quotas charge the payload bytes of a
 * tenant's entries from the moment a PUT leader reserves one until it is
 * dead (aborted, removed, evicted, lost with its disk), so usage is exact
 * and concurrent PUTs cannot oversubscribe it.
 */
#ifndef _DFKV_TENANT_H
#define _DFKV_TENANT_H

#include <linux/rhashtable-types.h>
#include <linux/atomic.h>
#include <linux/refcount.h>
#include <linux/spinlock.h>
#include <linux/mutex.h>
#include <linux/dfkv.h>

struct netlink_ext_ack;

/*
 * One secret of a tenant.  id names it for the grants made with it (0: the
 * slot is empty); ids are never reused, so a grant whose id no slot holds
 * any more was revoked.
 */
struct dfkv_tenant_secret {
	u64 id;
	u8 key[DFKV_TENANT_SECRET_LEN];
};

struct dfkv_tenant {
	struct rhash_head node;
	u64 hash;
	refcount_t refs;		/* entries, and the registration */
	/*
	 * Registration, under dfkv_tenants.reg_lock.  registered and the
	 * secrets' ids are published with smp_store_release() and read
	 * with smp_load_acquire() outside it; has_quota and quota with
	 * READ_ONCE().
	 */
	bool registered;
	bool has_quota;
	u64 quota;			/* bytes, 0 = unlimited */
	struct dfkv_tenant_secret secrets[DFKV_TENANT_SECRETS_MAX];
	atomic64_t charged;		/* quota usage: reserved + committed */
	atomic64_t objects;
	atomic64_t used_bytes;
	atomic64_t bytes_in;
	atomic64_t bytes_out;
	atomic64_t hits;
	atomic64_t misses;
	atomic64_t puts;
	atomic64_t auth_ok;
	atomic64_t auth_failures;
	atomic64_t forbidden;
	atomic64_t quota_rejections;
	struct rcu_head rcu;
};

struct dfkv_tenants {
	struct rhashtable table;
	atomic_t nr;
	spinlock_t lock;		/* a tenant's creation and last put */
	u32 gen;			/* under lock: for dumps */
	/* node settings, READ_ONCE */
	bool auth_required;
	u64 default_quota;		/* 0 = unlimited */
	/*
	 * Registrations, secrets and proofs: an operator's commands and
	 * the AUTH of a connection, never a data-path operation.
	 */
	struct mutex reg_lock;
	u64 next_secret_id;
	/* the key of the HMACs an unknown tenant's proof is checked with */
	u8 decoy[DFKV_TENANT_SECRET_LEN];
};

int dfkv_tenants_init(struct dfkv_tenants *ts);
/* Once no data path, dump or registration can reach the table. */
void dfkv_tenants_destroy(struct dfkv_tenants *ts);

/* Look up a tenant under RCU (caller holds rcu_read_lock), or NULL. */
struct dfkv_tenant *dfkv_tenant_find(struct dfkv_tenants *ts, u64 hash);
/* Find or create a tenant and take a reference; NULL on allocation failure. */
struct dfkv_tenant *dfkv_tenant_get(struct dfkv_tenants *ts, u64 hash);
/* Drop a reference; the last one unlinks the tenant.  Process context. */
void dfkv_tenant_put(struct dfkv_tenants *ts, struct dfkv_tenant *t);

/* The quota in force for t: its own, or the node's default. */
u64 dfkv_tenant_quota(struct dfkv_tenants *ts, const struct dfkv_tenant *t);
/*
 * Charge len bytes of a new entry to its tenant: false (and counted) when
 * that would take it over its quota.  Rebuilt entries are charged with
 * force, whatever the quota (a lowered quota refuses new PUTs only).
 */
bool dfkv_tenant_charge(struct dfkv_tenants *ts, struct dfkv_tenant *t,
			u64 len, bool force);
void dfkv_tenant_uncharge(struct dfkv_tenant *t, u64 len);

/*
 * Register a tenant or change a registered one: its secrets (secret: the
 * only one; add_secret: a second one; drop_secret: the one to drop; NULL:
 * keep) and a quota (NULL: keep; on creation, none: the default applies).
 */
struct dfkv_tenant_cfg {
	u64 hash;
	const u8 *secret;
	const u8 *add_secret;
	const u8 *drop_secret;
	const u64 *quota;
};

int dfkv_tenant_register(struct dfkv_tenants *ts,
			 const struct dfkv_tenant_cfg *cfg,
			 struct netlink_ext_ack *extack);
/* Unregister: wipes the secrets; its blocks stay.  -ENOENT if not listed. */
int dfkv_tenant_unregister(struct dfkv_tenants *ts, u64 hash);
/* How many secrets t holds. */
u32 dfkv_tenant_secrets(const struct dfkv_tenant *t);

/*
 * An AUTH2 proof (SPEC.md section 9): is client_proof HMAC-SHA256(secret,
 * "C" || transcript) for one of the tenant's secrets?  Then server_proof
 * is HMAC-SHA256(that secret, "S" || transcript), *secret_id names it and
 * the result is 0; -EACCES otherwise, after the same HMACs (an unknown
 * tenant's are keyed with the decoy), so the time taken does not tell
 * which tenants exist.  Each call keys a transform of its own and frees
 * it.  Counts the outcome on the tenant.
 */
int dfkv_tenant_prove(struct dfkv_tenants *ts, u64 hash,
		      const u8 *transcript, size_t len,
		      const u8 *client_proof, u8 *server_proof, u64 *secret_id);
/*
 * /dev/dfkv: is secret one of the tenant's secrets (constant time)?  On
 * success *secret_id names it.  Counts the outcome on the tenant.
 */
bool dfkv_tenant_check_secret(struct dfkv_tenants *ts, u64 hash,
			      const u8 *secret, u64 *secret_id);
/* Does the tenant still hold the secret a grant of secret_id was made with? */
bool dfkv_tenant_granted(struct dfkv_tenants *ts, u64 hash, u64 secret_id);

#endif /* _DFKV_TENANT_H */
