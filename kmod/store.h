/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The store of a node: the index of block keys to entries, the entry state
 * machine (RESERVED -> COMMITTED -> DEAD), pins, recency and eviction, over
 * a RAM arena carved by the slab allocator, and, when the node has disks,
 * where each committed value lives (the tier flags: in RAM, dirty, durable
 * on a disk, being loaded).  Transports never touch entries directly: they
 * call the begin/copy/end pairs below, which hand back one of enum
 * dfkv_status.
 */
#ifndef _DFKV_STORE_H
#define _DFKV_STORE_H

#include <linux/rhashtable-types.h>
#include <linux/kref.h>
#include <linux/spinlock.h>
#include <linux/wait.h>
#include <linux/uio.h>
#include <linux/bvec.h>
#include <linux/sched/mm.h>
#include <linux/dfkv.h>

#include "slab.h"
#include "arena.h"
#include "stats.h"
#include "tenant.h"
#include "tier.h"
#include "stage.h"

enum dfkv_entry_state {
	DFKV_E_RESERVED,	/* a PUT leader is filling the slots */
	DFKV_E_COMMITTED,	/* visible, evictable when unpinned */
	DFKV_E_DEAD,		/* unlinked; slots freed with the last ref */
};

/* Where a committed value lives (entry->tier, under entry->lock). */
#define DFKV_T_RAM	BIT(0)	/* the RAM slots hold the value */
#define DFKV_T_DIRTY	BIT(1)	/* not durable yet: a flush is queued */
#define DFKV_T_DURABLE	BIT(2)	/* its records on ->disk name ->dslots */
#define DFKV_T_LOADING	BIT(3)	/* a cold read is filling RAM slots */
#define DFKV_T_RECS	BIT(4)	/* records were written: clear when freed */
#define DFKV_T_KEEP	BIT(5)	/* freed by a graceful stop: keep them */
#define DFKV_T_NOSPC	BIT(6)	/* the flush was given up: disk full */

struct dfkv_store;
struct dfkv_disk;

struct dfkv_entry {
	struct rhash_head hnode;
	struct dfkv_key key;
	struct kref ref;	/* the index holds one while linked */
	spinlock_t lock;	/* state, pins, done, lru membership */
	u8 state;
	u8 result;		/* leader's status, for followers */
	bool done;		/* leader finished */
	s8 load_err;		/* the last cold read's, for GETs waiting on it */
	bool charged;		/* len is charged to the tenant's quota */
	struct list_head parked; /* followers' dfkv_put_waiters, until done */
	u32 pins;		/* readers and leases */
	u64 len;
	u64 stamp;		/* last use (ns), updated without locks */
	u64 queued;		/* stamp when queued at its shard's tail */
	struct list_head lru;
	struct dfkv_tenant *tenant;
	struct dfkv_store *store;
	u32 nr_slots;		/* RAM slots, 0 while not in RAM */
	struct dfkv_slot *slots;
	struct dfkv_slot slot0;
	struct dfkv_stage *stage; /* instead of RAM slots: arena was full */
	/* the disk copy, with a tiered store (tier.c) */
	u8 tier;		/* DFKV_T_* */
	u8 flush_tries;
	u32 nr_dslots;
	struct dfkv_disk *disk;	/* holds a reference while set */
	struct dfkv_slot *dslots;	/* with the parts' CRCs behind them */
	u32 *dcrcs;			/* payload CRC32C of each disk part */
	struct dfkv_slot dslot0;
	u32 dcrc0;
	u64 dqueued;		/* stamp when queued on the disk's lru */
	struct list_head dlru;
	struct work_struct flush_work;
	struct rcu_head rcu;
};

/* One recency list; entries are sharded by key so no lock is global. */
struct dfkv_lru_shard {
	spinlock_t lock;	/* list and its entries' queued stamps */
	struct list_head list;
	u64 nr, bytes;		/* entries on list and their bytes (WRITE_ONCE) */
} ____cacheline_aligned_in_smp;

struct dfkv_store {
	struct rhashtable index;
	struct dfkv_slab slab;
	struct dfkv_arena arena;
	struct dfkv_stats *stats;
	struct dfkv_tenants *tenants;
	wait_queue_head_t waitq;	/* PUT followers */
	struct dfkv_lru_shard *shards;
	u32 nr_shards;
	u32 evict_cursor;
	bool evict;			/* READ_ONCE: evict when full */
	u64 capacity;
	atomic64_t objects;
	atomic64_t used_bytes;
	atomic64_t pins;
	atomic64_t staged_bytes;	/* in stages, at most capacity / 8 */
	struct dfkv_tier tier;		/* disks behind the RAM arena */
};

/*
 * What a node allocates for its clients (entries, slots, stages, leases,
 * connections) is charged to the memory cgroup of the node's creator, as
 * its arena pages are: bracket such allocations (GFP_KERNEL_ACCOUNT) with
 * dfkv_store_charge() and set_active_memcg(the value it returned).
 */
static inline struct mem_cgroup *dfkv_store_charge(struct dfkv_store *st)
{
	return set_active_memcg(st->arena.memcg);
}

int dfkv_store_cache_init(void);
void dfkv_store_cache_exit(void);

int dfkv_store_init(struct dfkv_store *st, struct dfkv_stats *stats,
		    struct dfkv_tenants *tenants, u64 capacity, bool evict,
		    u32 numa);
/* Drops every entry; no operation may be in flight. */
void dfkv_store_destroy(struct dfkv_store *st);
/* Committed entries in RAM (on the RAM recency lists) and their bytes. */
void dfkv_store_ram_usage(struct dfkv_store *st, u64 *objects, u64 *bytes);

/* A PUT in progress. */
struct dfkv_put {
	struct dfkv_entry *e;
	bool leader;
	u64 stored_len;
};

/*
 * Start a PUT of len bytes.  Returns DFKV_STATUS_OK with put->e == NULL
 * when the key is already committed (values are immutable; stored_len
 * tells its length), DFKV_STATUS_OK with put->leader set when the caller
 * now owns a reserved entry and must fill it (dfkv_store_put_copy) and
 * finish it (dfkv_store_put_end), DFKV_STATUS_OK with put->e set and
 * !put->leader when another PUT of the key is in progress
 * (dfkv_store_put_wait gives its result), or an error status.
 */
int dfkv_store_put_begin(struct dfkv_store *st, const struct dfkv_key *key,
			 u64 len, struct dfkv_put *put);
size_t dfkv_store_put_copy(struct dfkv_put *put, u64 off, size_t len,
			   struct iov_iter *from);
/*
 * Describe [off, off + len) of the value of a leader's reserved entry or a
 * pinned committed one as up to max bio_vecs over the arena's pages, for
 * socket I/O without an intermediate buffer.  *mapped gets the bytes
 * covered (less than len when max ran out).
 */
unsigned int dfkv_entry_map(struct dfkv_entry *e, u64 off, size_t len,
			    struct bio_vec *bv, unsigned int max,
			    size_t *mapped);
/*
 * The same for the disk side of a flush or a cold read: len may run into
 * the tail of the value's last page, which its RAM slot or stage holds.
 */
unsigned int dfkv_entry_ram_map(struct dfkv_entry *e, u64 off, size_t len,
				struct bio_vec *bv, unsigned int max,
				size_t *mapped);
/* Commit (ok) or abort (!ok with status) a leader's PUT. */
int dfkv_store_put_end(struct dfkv_put *put, bool ok, int status);
/* Stop following a PUT without waiting for its leader. */
void dfkv_store_put_drop(struct dfkv_put *put);
/* Wait for the leader of a followed PUT; -EINTR if killed. */
int dfkv_store_put_wait(struct dfkv_put *put);

/*
 * A follower that waits without a sleeping task (a connection): park it
 * on the leader's entry, and its wake() runs once the leader finished,
 * under the entry's lock (it may only queue work).  Then
 * dfkv_store_put_result() gives the leader's status.
 */
struct dfkv_put_waiter {
	struct list_head node;
	void (*wake)(struct dfkv_put_waiter *w);
};

/* Park; false when the leader already finished (take the result now). */
bool dfkv_store_put_park(struct dfkv_put *put, struct dfkv_put_waiter *w);
/*
 * Unpark a follower being torn down: when this returns, w->wake is not
 * running and will not be called.  Drops the follower's reference.
 */
void dfkv_store_put_unpark(struct dfkv_put *put, struct dfkv_put_waiter *w);
/* The finished leader's status for a follower; drops its reference. */
int dfkv_store_put_result(struct dfkv_put *put);

/* A pinned committed entry being read. */
struct dfkv_read {
	struct dfkv_entry *e;
};

int dfkv_store_get_begin(struct dfkv_store *st, const struct dfkv_key *key,
			 struct dfkv_read *rd);
size_t dfkv_store_read(struct dfkv_read *rd, u64 off, size_t len,
		       struct iov_iter *to);
/*
 * Count n bytes of a pinned entry sent by other means than
 * dfkv_store_read() (a socket or RDMA WRITEs from its mapped pages).
 */
void dfkv_store_sent(struct dfkv_read *rd, u64 n);
void dfkv_store_get_end(struct dfkv_read *rd);

static inline u64 dfkv_read_len(const struct dfkv_read *rd)
{
	return rd->e->len;
}

/* Stored length of a committed key, 0 when absent. */
u64 dfkv_store_exist(struct dfkv_store *st, const struct dfkv_key *key);
int dfkv_store_remove(struct dfkv_store *st, const struct dfkv_key *key);
/* Mark the key most recently used; returns whether it was present. */
bool dfkv_store_touch(struct dfkv_store *st, const struct dfkv_key *key);

/*
 * Disks (tier.c): rebuild the index from a newly attached disk's records,
 * drop every entry on a disk that is going away, forget the disk copies
 * on a disk that failed (entries not in RAM leave the index, those in RAM
 * stay there only), flush one dirty entry.
 */
int dfkv_store_rebuild(struct dfkv_store *st, struct dfkv_disk *d);
void dfkv_store_drop_disk(struct dfkv_store *st, struct dfkv_disk *d);
void dfkv_store_fail_disk(struct dfkv_store *st, struct dfkv_disk *d);
void dfkv_store_flush_work(struct work_struct *work);

/* Pin / unpin a committed entry for a lease (pin takes a reference). */
struct dfkv_entry *dfkv_store_pin(struct dfkv_store *st,
				  const struct dfkv_key *key);
void dfkv_store_unpin(struct dfkv_entry *e);

#endif /* _DFKV_STORE_H */
