// SPDX-License-Identifier: GPL-2.0
/*
 * Node and tenant counters: per-CPU node counters summed on demand, and the
 * per-node tenant table (an rhashtable of struct dfkv_tenant keyed by the
 * tenant hash, read under RCU).  Every entry of the store holds a reference
 * on its tenant; the last one unlinks and frees it, so the table holds the
 * tenants that have blocks, not every hash a peer ever named.  Creation and
 * the final put serialize on a per-node lock (taken only when a tenant
 * comes or goes); a tenant in the table under that lock is always live.
 */
#include <linux/slab.h>
#include <linux/rhashtable.h>
#include <linux/string.h>

#include "stats.h"

static const struct rhashtable_params tenant_params = {
	.key_len = sizeof(u64),
	.key_offset = offsetof(struct dfkv_tenant, hash),
	.head_offset = offsetof(struct dfkv_tenant, node),
	.automatic_shrinking = true,
};

int dfkv_stats_init(struct dfkv_stats *st)
{
	int err;

	st->pcpu = alloc_percpu(struct dfkv_counters);
	if (!st->pcpu)
		return -ENOMEM;
	err = rhashtable_init(&st->tenants, &tenant_params);
	if (err) {
		free_percpu(st->pcpu);
		return err;
	}
	atomic_set(&st->nr_tenants, 0);
	spin_lock_init(&st->tenants_lock);
	st->tenants_gen = 1;
	return 0;
}

static void tenant_free(void *ptr, void *arg)
{
	kfree(ptr);
}

/* Called once no data path can reach the node any more. */
void dfkv_stats_destroy(struct dfkv_stats *st)
{
	rhashtable_free_and_destroy(&st->tenants, tenant_free, NULL);
	free_percpu(st->pcpu);
}

void dfkv_stats_snapshot(struct dfkv_stats *st, struct dfkv_counters *snap)
{
	int cpu, i, j;

	memset(snap, 0, sizeof(*snap));
	for_each_possible_cpu(cpu) {
		const struct dfkv_counters *p = per_cpu_ptr(st->pcpu, cpu);

		for (i = 0; i < __DFKV_OP_MAX; i++)
			for (j = 0; j < __DFKV_STATUS_MAX; j++)
				snap->ops[i][j] += READ_ONCE(p->ops[i][j]);
		snap->bytes_in += READ_ONCE(p->bytes_in);
		snap->bytes_out += READ_ONCE(p->bytes_out);
		snap->hits += READ_ONCE(p->hits);
		snap->misses += READ_ONCE(p->misses);
		snap->evictions += READ_ONCE(p->evictions);
		snap->lease_grants += READ_ONCE(p->lease_grants);
		snap->lease_expiries += READ_ONCE(p->lease_expiries);
		snap->ram_hits += READ_ONCE(p->ram_hits);
		snap->ram_misses += READ_ONCE(p->ram_misses);
		snap->ram_puts += READ_ONCE(p->ram_puts);
		snap->ram_bypasses += READ_ONCE(p->ram_bypasses);
		snap->ram_evictions += READ_ONCE(p->ram_evictions);
		snap->flushed += READ_ONCE(p->flushed);
		snap->flush_retries += READ_ONCE(p->flush_retries);
		snap->flush_drops += READ_ONCE(p->flush_drops);
		snap->promoted += READ_ONCE(p->promoted);
		snap->coalesced += READ_ONCE(p->coalesced);
	}
}

struct dfkv_tenant *dfkv_tenant_find(struct dfkv_stats *st, u64 hash)
{
	return rhashtable_lookup(&st->tenants, &hash, tenant_params);
}

struct dfkv_tenant *dfkv_tenant_get(struct dfkv_stats *st, u64 hash)
{
	struct dfkv_tenant *t, *new;

	rcu_read_lock();
	t = dfkv_tenant_find(st, hash);
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
	spin_lock(&st->tenants_lock);
	t = rhashtable_lookup_get_insert_fast(&st->tenants, &new->node,
					      tenant_params);
	if (!t) {
		t = new;
		new = NULL;
		atomic_inc(&st->nr_tenants);
		st->tenants_gen++;
	} else if (IS_ERR(t)) {
		t = NULL;
	} else {
		refcount_inc(&t->refs);
	}
	spin_unlock(&st->tenants_lock);
	kfree(new);
	return t;
}

void dfkv_tenant_put(struct dfkv_stats *st, struct dfkv_tenant *t)
{
	bool last;

	if (refcount_dec_not_one(&t->refs))
		return;
	/* Maybe the last: drop it to zero only under the lock. */
	spin_lock(&st->tenants_lock);
	last = refcount_dec_and_test(&t->refs);
	if (last) {
		rhashtable_remove_fast(&st->tenants, &t->node, tenant_params);
		atomic_dec(&st->nr_tenants);
		st->tenants_gen++;
	}
	spin_unlock(&st->tenants_lock);
	if (last)
		kfree_rcu(t, rcu);
}
