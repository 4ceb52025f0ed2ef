/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Leases: a LEASE pins the leading present keys of a list so the GETs that
 * follow cannot miss.  A lease belongs to an owner (an open /dev/dfkv file,
 * a connection) and ends by RELEASE, by its TTL, when the owner goes away,
 * or when the node is torn down.
 */
#ifndef _DFKV_LEASE_H
#define _DFKV_LEASE_H

#include <linux/bits.h>
#include <linux/list.h>
#include <linux/mutex.h>
#include <linux/xarray.h>
#include <linux/workqueue.h>
#include <linux/dfkv.h>

struct dfkv_store;
struct dfkv_stats;
struct dfkv_entry;

/* Most live leases one owner, and one node, may hold. */
#define DFKV_LEASES_PER_OWNER	1024
#define DFKV_LEASES_PER_NODE	BIT(18)

struct dfkv_lease_owner {
	struct list_head leases;	/* under dfkv_leases.lock */
	u32 nr;
};

struct dfkv_leases {
	struct mutex lock;	/* everything below, owners' lists and nr */
	struct xarray ids;	/* lease id -> struct dfkv_lease */
	u32 next_id;		/* ids are allocated cyclically */
	struct xarray expiry;	/* reap slot -> struct dfkv_lease_slot */
	u32 nr;			/* READ_ONCE for stats */
	bool dead;
	u64 scans;		/* leases visited to end some: RELEASE, owner, TTL */
	struct delayed_work reaper;
	struct dfkv_store *store;
	struct dfkv_stats *stats;
};

static inline void dfkv_lease_owner_init(struct dfkv_lease_owner *owner)
{
	INIT_LIST_HEAD(&owner->leases);
	owner->nr = 0;
}

void dfkv_leases_init(struct dfkv_leases *l, struct dfkv_store *st,
		      struct dfkv_stats *stats);
/* Drop every lease; no new one can be granted afterwards. */
void dfkv_leases_shutdown(struct dfkv_leases *l);

/*
 * Pin the leading present keys for ttl_ms (0: default).  lens[i] gets the
 * stored length of each pinned key; returns the status, *nr_hits and *id
 * (0 when nothing was pinned).  A key named twice among them is INVALID.
 */
int dfkv_lease_grant(struct dfkv_leases *l, struct dfkv_lease_owner *owner,
		     const struct dfkv_key *keys, u32 n, u64 ttl_ms,
		     u64 *lens, u32 *nr_hits, u64 *id);
int dfkv_lease_release(struct dfkv_leases *l, struct dfkv_lease_owner *owner,
		       u64 id);
void dfkv_lease_drop_owner(struct dfkv_leases *l,
			   struct dfkv_lease_owner *owner);

static inline u32 dfkv_leases_live(struct dfkv_leases *l)
{
	return READ_ONCE(l->nr);
}

static inline u64 dfkv_leases_scans(struct dfkv_leases *l)
{
	return READ_ONCE(l->scans);
}

#endif /* _DFKV_LEASE_H */
