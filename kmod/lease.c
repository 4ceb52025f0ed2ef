// SPDX-License-Identifier: GPL-2.0
/*
 * Lease table of a node.  Each lease holds a reference and a pin on the
 * entries it covers.  The table is a list under one spinlock, touched only
 * by LEASE, RELEASE, owner teardown and the reaper (a delayed work that
 * runs while leases exist); entries are unpinned outside the lock, since
 * dropping the last reference of a dead entry frees its slots.
 */
#include <linux/slab.h>
#include <linux/jiffies.h>

#include "lease.h"
#include "store.h"
#include "stats.h"

#define REAP_INTERVAL	(HZ / 10)

struct dfkv_lease {
	struct list_head list;
	struct dfkv_lease_owner *owner;
	u64 id;
	unsigned long expires;
	u32 nr;
	struct dfkv_entry *e[];
};

static void lease_free(struct dfkv_lease *ls)
{
	u32 i;

	for (i = 0; i < ls->nr; i++)
		dfkv_store_unpin(ls->e[i]);
	kfree(ls);
}

/* Unlink ls; called with l->lock held. */
static void lease_unlink(struct dfkv_leases *l, struct dfkv_lease *ls,
			 struct list_head *dead)
{
	list_move_tail(&ls->list, dead);
	ls->owner->nr--;
	l->nr--;
}

static void leases_free_list(struct list_head *dead)
{
	struct dfkv_lease *ls, *tmp;

	list_for_each_entry_safe(ls, tmp, dead, list) {
		list_del(&ls->list);
		lease_free(ls);
	}
}

static void lease_reap(struct work_struct *work)
{
	struct dfkv_leases *l = container_of(to_delayed_work(work),
					     struct dfkv_leases, reaper);
	struct dfkv_lease *ls, *tmp;
	u64 expired = 0;
	LIST_HEAD(dead);
	bool again;

	spin_lock(&l->lock);
	list_for_each_entry_safe(ls, tmp, &l->list, list) {
		if (time_after_eq(jiffies, ls->expires)) {
			lease_unlink(l, ls, &dead);
			expired++;
		}
	}
	again = l->nr && !l->dead;
	spin_unlock(&l->lock);
	if (expired)
		this_cpu_add(l->stats->pcpu->lease_expiries, expired);
	leases_free_list(&dead);
	if (again)
		schedule_delayed_work(&l->reaper, REAP_INTERVAL);
}

void dfkv_leases_init(struct dfkv_leases *l, struct dfkv_store *st,
		      struct dfkv_stats *stats)
{
	spin_lock_init(&l->lock);
	INIT_LIST_HEAD(&l->list);
	INIT_DELAYED_WORK(&l->reaper, lease_reap);
	l->next_id = 1;
	l->store = st;
	l->stats = stats;
}

void dfkv_leases_shutdown(struct dfkv_leases *l)
{
	struct dfkv_lease *ls, *tmp;
	LIST_HEAD(dead);

	spin_lock(&l->lock);
	l->dead = true;
	spin_unlock(&l->lock);
	cancel_delayed_work_sync(&l->reaper);
	spin_lock(&l->lock);
	list_for_each_entry_safe(ls, tmp, &l->list, list)
		lease_unlink(l, ls, &dead);
	spin_unlock(&l->lock);
	leases_free_list(&dead);
}

int dfkv_lease_grant(struct dfkv_leases *l, struct dfkv_lease_owner *owner,
		     const struct dfkv_key *keys, u32 n, u64 ttl_ms,
		     u64 *lens, u32 *nr_hits, u64 *id)
{
	struct dfkv_lease *ls;
	bool arm;
	u32 i;

	*nr_hits = 0;
	*id = 0;
	if (!n || n > DFKV_KEYS_MAX || ttl_ms > DFKV_LEASE_TTL_MAX_MS)
		return DFKV_STATUS_INVALID;
	if (!ttl_ms)
		ttl_ms = DFKV_LEASE_TTL_DEFAULT_MS;

	ls = kzalloc(struct_size(ls, e, n), GFP_KERNEL_ACCOUNT);
	if (!ls)
		return DFKV_STATUS_CACHE_FULL;
	for (i = 0; i < n; i++) {
		ls->e[i] = dfkv_store_pin(l->store, &keys[i]);
		if (!ls->e[i])
			break;
		lens[i] = ls->e[i]->len;
		ls->nr++;
	}
	if (!ls->nr) {
		kfree(ls);
		return DFKV_STATUS_OK;
	}
	ls->owner = owner;
	ls->expires = jiffies + msecs_to_jiffies(ttl_ms);

	spin_lock(&l->lock);
	if (l->dead || owner->nr >= DFKV_LEASES_PER_OWNER) {
		bool dead = l->dead;

		spin_unlock(&l->lock);
		lease_free(ls);
		return dead ? DFKV_STATUS_BUSY : DFKV_STATUS_QUOTA_EXCEEDED;
	}
	ls->id = l->next_id++;
	list_add_tail(&ls->list, &l->list);
	owner->nr++;
	arm = !l->nr++;
	spin_unlock(&l->lock);
	if (arm)
		schedule_delayed_work(&l->reaper, REAP_INTERVAL);

	this_cpu_add(l->stats->pcpu->lease_grants, 1);
	*nr_hits = ls->nr;
	*id = ls->id;
	return DFKV_STATUS_OK;
}

int dfkv_lease_release(struct dfkv_leases *l, struct dfkv_lease_owner *owner,
		       u64 id)
{
	struct dfkv_lease *ls, *found = NULL;
	LIST_HEAD(dead);

	spin_lock(&l->lock);
	list_for_each_entry(ls, &l->list, list) {
		if (ls->id == id && ls->owner == owner) {
			found = ls;
			lease_unlink(l, ls, &dead);
			break;
		}
	}
	spin_unlock(&l->lock);
	if (!found)
		return DFKV_STATUS_LEASE_EXPIRED;
	leases_free_list(&dead);
	return DFKV_STATUS_OK;
}

void dfkv_lease_drop_owner(struct dfkv_leases *l,
			   struct dfkv_lease_owner *owner)
{
	struct dfkv_lease *ls, *tmp;
	LIST_HEAD(dead);

	spin_lock(&l->lock);
	list_for_each_entry_safe(ls, tmp, &l->list, list)
		if (ls->owner == owner)
			lease_unlink(l, ls, &dead);
	spin_unlock(&l->lock);
	leases_free_list(&dead);
}
