/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Counters of a node and of its tenants.  Node counters are per-CPU so the
 * data path never shares a cache line; gauges that must be exact (objects,
 * bytes) live in the store and the tenant as atomics.  A tenant exists
 * while the store has an entry of it (reserved or committed): each entry
 * holds a reference, so their number is bounded by the entries.
 */
#ifndef _DFKV_STATS_H
#define _DFKV_STATS_H

#include <linux/percpu.h>
#include <linux/rhashtable-types.h>
#include <linux/atomic.h>
#include <linux/refcount.h>
#include <linux/spinlock.h>
#include <linux/dfkv.h>

/* A node's counters: per CPU on the data path, summed for a snapshot. */
struct dfkv_counters {
	u64 ops[__DFKV_OP_MAX][__DFKV_STATUS_MAX];
	u64 bytes_in;
	u64 bytes_out;
	u64 hits;
	u64 misses;
	u64 evictions;
	u64 lease_grants;
	u64 lease_expiries;
	/* RAM tier in front of disks */
	u64 ram_hits;
	u64 ram_misses;
	u64 ram_puts;
	u64 ram_bypasses;
	u64 ram_evictions;
	u64 flushed;
	u64 flush_retries;
	u64 flush_drops;
	u64 promoted;
	u64 coalesced;
};

struct dfkv_tenant {
	struct rhash_head node;
	u64 hash;
	refcount_t refs;		/* entries of this tenant */
	atomic64_t objects;
	atomic64_t used_bytes;
	atomic64_t bytes_in;
	atomic64_t bytes_out;
	atomic64_t hits;
	atomic64_t misses;
	atomic64_t puts;
	struct rcu_head rcu;
};

struct dfkv_stats {
	struct dfkv_counters __percpu *pcpu;
	struct rhashtable tenants;
	atomic_t nr_tenants;
	spinlock_t tenants_lock;	/* a tenant's creation and last put */
	u32 tenants_gen;		/* under tenants_lock: for dumps */
};

int dfkv_stats_init(struct dfkv_stats *st);
void dfkv_stats_destroy(struct dfkv_stats *st);
void dfkv_stats_snapshot(struct dfkv_stats *st, struct dfkv_counters *snap);

/* Count one finished operation. */
static inline void dfkv_stats_op(struct dfkv_stats *st, unsigned int op,
				 unsigned int status)
{
	if (op < __DFKV_OP_MAX && status < __DFKV_STATUS_MAX)
		this_cpu_inc(st->pcpu->ops[op][status]);
}

/* Look up a tenant under RCU (caller holds rcu_read_lock), or NULL. */
struct dfkv_tenant *dfkv_tenant_find(struct dfkv_stats *st, u64 hash);
/* Find or create a tenant and take a reference; NULL on allocation failure. */
struct dfkv_tenant *dfkv_tenant_get(struct dfkv_stats *st, u64 hash);
/* Drop a reference; the last one unlinks the tenant.  Process context. */
void dfkv_tenant_put(struct dfkv_stats *st, struct dfkv_tenant *t);

#endif /* _DFKV_STATS_H */
