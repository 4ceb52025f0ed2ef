// SPDX-License-Identifier: GPL-2.0
/*
 * Lease table of a node.  Each lease holds a reference and a pin on the
 * entries it hit, and sits in three places: the id xarray (RELEASE finds
 * it in O(1)), its owner's list (closing a connection or file walks only
 * its own leases) and the expiry slot of its deadline (slots are
 * REAP_INTERVAL wide, kept in an xarray by number, so the reaper visits
 * only what expired).  Every lease ended is counted in scans, which is the
 * whole of the table's work: no path walks leases it does not end.
 *
 * A lease is sized by its hits (up to DFKV_KEYS_MAX), an owner holds at
 * most DFKV_LEASES_PER_OWNER and a node DFKV_LEASES_PER_NODE.  The table
 * changes under a mutex, taken by LEASE, RELEASE, owner teardown and the
 * reaper (a delayed work running while leases exist); entries are unpinned
 * outside it, since dropping the last reference of a dead entry frees its
 * slots.
 */
#include <linux/slab.h>
#include <linux/jiffies.h>
#include <linux/sort.h>

#include "lease.h"
#include "store.h"
#include "stats.h"

#define REAP_INTERVAL	(HZ / 10)

/* The leases whose deadline falls in one REAP_INTERVAL. */
struct dfkv_lease_slot {
	struct list_head leases;
	unsigned long index;
};

struct dfkv_lease {
	struct list_head owned;		/* owner->leases, then a dead list */
	struct list_head in_slot;
	struct dfkv_lease_slot *slot;
	struct dfkv_lease_owner *owner;
	u32 id;
	u32 nr;
	struct dfkv_entry *e[];
};

static void unpin_all(struct dfkv_entry **e, u32 nr)
{
	u32 i;

	for (i = 0; i < nr; i++)
		dfkv_store_unpin(e[i]);
}

static void lease_free(struct dfkv_lease *ls)
{
	unpin_all(ls->e, ls->nr);
	kfree(ls);
}

/*
 * Take ls out of the table onto dead; called with l->lock held.  The last
 * lease of a slot frees it, unless the reaper took the slot already.
 */
static void lease_unlink(struct dfkv_leases *l, struct dfkv_lease *ls,
			 struct list_head *dead)
{
	struct dfkv_lease_slot *s = ls->slot;

	xa_erase(&l->ids, ls->id);
	if (s) {
		list_del(&ls->in_slot);
		if (list_empty(&s->leases)) {
			xa_erase(&l->expiry, s->index);
			kfree(s);
		}
	}
	list_move_tail(&ls->owned, dead);
	ls->owner->nr--;
	WRITE_ONCE(l->nr, l->nr - 1);
	WRITE_ONCE(l->scans, l->scans + 1);
}

static void leases_free_list(struct list_head *dead)
{
	struct dfkv_lease *ls, *tmp;

	list_for_each_entry_safe(ls, tmp, dead, owned) {
		list_del(&ls->owned);
		lease_free(ls);
	}
}

static void lease_reap(struct work_struct *work)
{
	struct dfkv_leases *l = container_of(to_delayed_work(work),
					     struct dfkv_leases, reaper);
	struct dfkv_lease_slot *s;
	unsigned long index;
	u64 expired = 0;
	LIST_HEAD(dead);
	bool again;

	mutex_lock(&l->lock);
	xa_for_each_range(&l->expiry, index, s, 0, jiffies / REAP_INTERVAL) {
		struct dfkv_lease *ls, *tmp;

		xa_erase(&l->expiry, index);
		list_for_each_entry_safe(ls, tmp, &s->leases, in_slot) {
			ls->slot = NULL;
			lease_unlink(l, ls, &dead);
			expired++;
		}
		kfree(s);
	}
	again = l->nr && !l->dead;
	mutex_unlock(&l->lock);
	if (expired)
		this_cpu_add(l->stats->pcpu->lease_expiries, expired);
	leases_free_list(&dead);
	if (again)
		schedule_delayed_work(&l->reaper, REAP_INTERVAL);
}

void dfkv_leases_init(struct dfkv_leases *l, struct dfkv_store *st,
		      struct dfkv_stats *stats)
{
	mutex_init(&l->lock);
	xa_init_flags(&l->ids, XA_FLAGS_ALLOC1);
	xa_init(&l->expiry);
	INIT_DELAYED_WORK(&l->reaper, lease_reap);
	l->store = st;
	l->stats = stats;
}

void dfkv_leases_shutdown(struct dfkv_leases *l)
{
	struct dfkv_lease *ls;
	unsigned long id;
	LIST_HEAD(dead);

	mutex_lock(&l->lock);
	l->dead = true;
	mutex_unlock(&l->lock);
	cancel_delayed_work_sync(&l->reaper);
	mutex_lock(&l->lock);
	xa_for_each(&l->ids, id, ls)
		lease_unlink(l, ls, &dead);
	mutex_unlock(&l->lock);
	leases_free_list(&dead);
	xa_destroy(&l->ids);
	xa_destroy(&l->expiry);
}

static int entry_ptr_cmp(const void *a, const void *b)
{
	const struct dfkv_entry *x = *(struct dfkv_entry * const *)a;
	const struct dfkv_entry *y = *(struct dfkv_entry * const *)b;

	return x < y ? -1 : x > y;
}

/* Two of the pinned keys are one entry: a key named twice. */
static bool has_duplicates(struct dfkv_entry **sorted, u32 nr)
{
	u32 i;

	sort(sorted, nr, sizeof(*sorted), entry_ptr_cmp, NULL);
	for (i = 1; i < nr; i++)
		if (sorted[i] == sorted[i - 1])
			return true;
	return false;
}

/* The slot of deadline expires, created if needed; l->lock held. */
static struct dfkv_lease_slot *slot_get(struct dfkv_leases *l,
					unsigned long expires)
{
	unsigned long index = DIV_ROUND_UP(expires, REAP_INTERVAL);
	struct dfkv_lease_slot *s = xa_load(&l->expiry, index);

	if (s)
		return s;
	s = kmalloc(sizeof(*s), GFP_KERNEL_ACCOUNT);
	if (!s)
		return NULL;
	INIT_LIST_HEAD(&s->leases);
	s->index = index;
	if (xa_err(xa_store(&l->expiry, index, s, GFP_KERNEL_ACCOUNT))) {
		kfree(s);
		return NULL;
	}
	return s;
}

/* Add ls to the table; l->lock held.  Returns a status. */
static int lease_link(struct dfkv_leases *l, struct dfkv_lease *ls,
		      unsigned long expires)
{
	struct dfkv_lease_owner *owner = ls->owner;
	struct dfkv_lease_slot *s;
	u32 id;

	if (l->dead || l->nr >= DFKV_LEASES_PER_NODE)
		return DFKV_STATUS_BUSY;
	if (owner->nr >= DFKV_LEASES_PER_OWNER)
		return DFKV_STATUS_QUOTA_EXCEEDED;
	s = slot_get(l, expires);
	if (!s)
		return DFKV_STATUS_CACHE_FULL;
	if (xa_alloc_cyclic(&l->ids, &id, ls, XA_LIMIT(1, U32_MAX),
			    &l->next_id, GFP_KERNEL_ACCOUNT) < 0) {
		if (list_empty(&s->leases)) {
			xa_erase(&l->expiry, s->index);
			kfree(s);
		}
		return DFKV_STATUS_CACHE_FULL;
	}
	ls->id = id;
	ls->slot = s;
	list_add_tail(&ls->in_slot, &s->leases);
	list_add_tail(&ls->owned, &owner->leases);
	owner->nr++;
	WRITE_ONCE(l->nr, l->nr + 1);
	return DFKV_STATUS_OK;
}

int dfkv_lease_grant(struct dfkv_leases *l, struct dfkv_lease_owner *owner,
		     const struct dfkv_key *keys, u32 n, u64 ttl_ms,
		     u64 *lens, u32 *nr_hits, u64 *id)
{
	struct dfkv_entry **pinned;
	struct dfkv_lease *ls;
	int status;
	bool arm;
	u32 hits = 0, i;

	*nr_hits = 0;
	*id = 0;
	if (!n || n > DFKV_KEYS_MAX || ttl_ms > DFKV_LEASE_TTL_MAX_MS)
		return DFKV_STATUS_INVALID;
	if (!ttl_ms)
		ttl_ms = DFKV_LEASE_TTL_DEFAULT_MS;

	/* Pin first, then size the lease by its hits. */
	pinned = kmalloc_array(n, sizeof(*pinned), GFP_KERNEL);
	if (!pinned)
		return DFKV_STATUS_CACHE_FULL;
	for (; hits < n; hits++) {
		pinned[hits] = dfkv_store_pin(l->store, &keys[hits]);
		if (!pinned[hits])
			break;
		lens[hits] = pinned[hits]->len;
	}
	if (!hits) {
		kfree(pinned);
		return DFKV_STATUS_OK;
	}
	ls = kmalloc(struct_size(ls, e, hits), GFP_KERNEL_ACCOUNT);
	if (!ls) {
		unpin_all(pinned, hits);
		kfree(pinned);
		return DFKV_STATUS_CACHE_FULL;
	}
	memcpy(ls->e, pinned, hits * sizeof(*pinned));
	ls->nr = hits;
	ls->owner = owner;
	status = has_duplicates(pinned, hits) ? DFKV_STATUS_INVALID :
		DFKV_STATUS_OK;
	kfree(pinned);
	if (status != DFKV_STATUS_OK) {
		lease_free(ls);
		return status;
	}
	/*
	 * Hits only on disk start their reads into RAM now (SPEC.md 6),
	 * while ls is still ours alone; each read holds its own pin.
	 */
	for (i = 0; i < hits; i++)
		dfkv_store_prefetch(l->store, ls->e[i]);

	mutex_lock(&l->lock);
	status = lease_link(l, ls, jiffies + msecs_to_jiffies(ttl_ms));
	arm = status == DFKV_STATUS_OK && l->nr == 1;
	if (status == DFKV_STATUS_OK)
		*id = ls->id;
	mutex_unlock(&l->lock);
	if (status != DFKV_STATUS_OK) {
		lease_free(ls);
		return status;
	}
	if (arm)
		schedule_delayed_work(&l->reaper, REAP_INTERVAL);
	this_cpu_add(l->stats->pcpu->lease_grants, 1);
	*nr_hits = hits;
	return DFKV_STATUS_OK;
}

int dfkv_lease_release(struct dfkv_leases *l, struct dfkv_lease_owner *owner,
		       u64 id)
{
	struct dfkv_lease *ls = NULL;
	LIST_HEAD(dead);

	mutex_lock(&l->lock);
	if (id && id <= U32_MAX)
		ls = xa_load(&l->ids, id);
	if (ls && ls->owner == owner)
		lease_unlink(l, ls, &dead);
	else
		ls = NULL;
	mutex_unlock(&l->lock);
	if (!ls)
		return DFKV_STATUS_LEASE_EXPIRED;
	leases_free_list(&dead);
	return DFKV_STATUS_OK;
}

void dfkv_lease_drop_owner(struct dfkv_leases *l,
			   struct dfkv_lease_owner *owner)
{
	struct dfkv_lease *ls, *tmp;
	LIST_HEAD(dead);

	mutex_lock(&l->lock);
	list_for_each_entry_safe(ls, tmp, &owner->leases, owned)
		lease_unlink(l, ls, &dead);
	mutex_unlock(&l->lock);
	leases_free_list(&dead);
}
