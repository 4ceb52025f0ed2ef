/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The tenants of a node (SPEC.md sections 6 and 9): an rhashtable of
 * struct dfkv_tenant keyed by the tenant hash, read under RCU.  A tenant
 * exists while the store has an entry of it (each holds a reference) or
 * while it is registered (the registration holds one), so the table holds
 * what an operator listed and what has blocks, never every hash a peer
 * named.  A registered tenant may have a secret, which authenticates
 * connections and files for it (auth.c), and its own quota; the others
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

struct crypto_shash;
struct netlink_ext_ack;

struct dfkv_tenant {
	struct rhash_head node;
	u64 hash;
	refcount_t refs;		/* entries, and the registration */
	/* registration, under dfkv_tenants.reg_lock (READ_ONCE outside) */
	bool registered;
	bool has_secret;
	bool has_quota;
	u64 reg_id;			/* this registration, for grants */
	u64 quota;			/* bytes, 0 = unlimited */
	u8 secret[DFKV_TENANT_SECRET_LEN];
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
	u64 next_reg_id;
	struct crypto_shash *hmac;	/* hmac(sha256), keyed per proof */
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
 * Register a tenant or change a registered one: a secret (NULL: keep) and
 * a quota (NULL: keep; on creation, none: the default applies).
 */
struct dfkv_tenant_cfg {
	u64 hash;
	const u8 *secret;
	const u64 *quota;
};

int dfkv_tenant_register(struct dfkv_tenants *ts,
			 const struct dfkv_tenant_cfg *cfg,
			 struct netlink_ext_ack *extack);
/* Unregister: wipes the secret; its blocks stay.  -ENOENT if not listed. */
int dfkv_tenant_unregister(struct dfkv_tenants *ts, u64 hash);

/*
 * Check a proof of the tenant's secret over msg (SPEC.md section 9), or
 * the secret itself (proof NULL, /dev/dfkv), in constant time.  On
 * success *reg_id names the registration that granted it.  Counts the
 * outcome on the tenant.
 */
bool dfkv_tenant_verify(struct dfkv_tenants *ts, u64 hash, const u8 *msg,
			size_t msg_len, const u8 *proof, const u8 *secret,
			u64 *reg_id);
/* Is the registration that granted reg_id for hash still in force? */
bool dfkv_tenant_granted(struct dfkv_tenants *ts, u64 hash, u64 reg_id);

#endif /* _DFKV_TENANT_H */
