/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The store of a node: the index of block keys to entries, the entry state
 * machine and pins, over a RAM arena carved by the slab allocator.
 * Transports never touch entries directly: they call the begin/copy/end
 * pairs below, which hand back one of enum dfkv_status.  Recency and RAM
 * eviction are in evict.c; a node's disks (flush, cold reads, rebuild)
 * are below the store in tier.c, which the store reaches only through
 * the dfkv_store_lower_ops it registered: the store never names a disk.
 */
#ifndef _DFKV_STORE_H
#define _DFKV_STORE_H

#include <linux/rhashtable-types.h>
#include <linux/kref.h>
#include <linux/spinlock.h>
#include <linux/wait.h>
#include <linux/uio.h>
#include <linux/bvec.h>
#include <linux/workqueue.h>
#include <linux/sched/mm.h>
#include <linux/dfkv.h>

#include "slab.h"
#include "arena.h"
#include "stats.h"
#include "tenant.h"
#include "stage.h"
#include "evict.h"
#include "ghost.h"

/*
 * The one state machine of an entry (Documentation/store.md), under
 * entry->lock:
 *
 *   RESERVED -> DIRTY -> DURABLE -> DEAD      (a node with disks)
 *   RESERVED -> COMMITTED -> DEAD             (RAM only)
 *   DIRTY -> COMMITTED      a flush given up: in RAM only from then on
 *   DURABLE -> COMMITTED    its disk failed while the value was in RAM
 *   RESERVED -> DEAD        a failed PUT, or REMOVE while it was filled
 *
 * DIRTY is the design's "COMMITTED, dirty": visible, in RAM, a flush queued
 * or running, counted in the store's dirty bytes, never evicted.
 * COMMITTED is visible and in RAM with no disk copy (a node without disks
 * treats it as durable).  DURABLE has its records on its disk and is on
 * that disk's recency list; its bytes may also be in RAM (entry->where).
 */
enum dfkv_entry_state {
	DFKV_E_RESERVED,	/* a PUT leader is filling the slots */
	DFKV_E_DIRTY,		/* committed, in RAM, its flush pending */
	DFKV_E_COMMITTED,	/* committed, in RAM only, nothing pending */
	DFKV_E_DURABLE,		/* committed, on its disk (maybe in RAM) */
	DFKV_E_DEAD,		/* unlinked; slots freed with the last ref */
};

static inline bool dfkv_entry_visible(u8 state)
{
	return state == DFKV_E_DIRTY || state == DFKV_E_COMMITTED ||
		state == DFKV_E_DURABLE;
}

/*
 * Where a committed value's bytes are (entry->where, under entry->lock):
 * orthogonal to the state only for DURABLE, whose value may be on disk
 * alone; DIRTY and COMMITTED are always DFKV_W_RAM.
 */
enum dfkv_entry_where {
	DFKV_W_NONE,		/* not in RAM: a cold read brings it */
	DFKV_W_LOADING,		/* a cold read is filling RAM slots */
	DFKV_W_RAM,		/* its RAM slots (or stage) hold the value */
};

/*
 * Flags about the disk copy, orthogonal to the state (entry->flags, under
 * entry->lock).
 */
#define DFKV_EF_RECS	BIT(0)	/* records were written: clear when freed */
#define DFKV_EF_KEEP	BIT(1)	/* freed by a graceful stop: keep them */
#define DFKV_EF_NOSPC	BIT(2)	/* the flush was given up: disk full */
#define DFKV_EF_SYNC	BIT(3)	/* its PUT waits for the flush to end */

struct dfkv_store;
struct dfkv_disk;

struct dfkv_entry {
	struct rhash_head hnode;
	struct dfkv_key key;
	struct kref ref;	/* the index holds one while linked */
	spinlock_t lock;	/* state, where, pins, done, lru membership */
	u8 state;		/* enum dfkv_entry_state */
	u8 where;		/* enum dfkv_entry_where */
	u8 flags;		/* DFKV_EF_* */
	u8 result;		/* leader's status, for followers */
	u8 flushed;		/* a DFKV_EF_SYNC PUT's, once its flush ended */
	bool done;		/* leader finished */
	s8 load_err;		/* the last cold read's, for GETs waiting on it */
	bool charged;		/* len is charged to the tenant's quota */
	struct list_head parked; /* dfkv_waiters: PUTs, cold GETs */
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
	/* the disk copy: tier.c's alone, the store never reads it */
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

/*
 * What the store needs from the tier below it (tier.c registers these
 * with dfkv_store_set_lower()).  Unless named _locked they run without
 * the entry's lock and may sleep.
 */
struct dfkv_store_lower_ops {
	/* A new value of len bytes would take the dirty bytes too high. */
	bool (*over_watermark)(void *ctx, u64 len);
	/*
	 * e was just committed DIRTY and holds a reference for its flush:
	 * queue the flush.  DFKV_STATUS_OK when the PUT need not wait for
	 * the disk; -EINPROGRESS when it must: the tier set DFKV_EF_SYNC
	 * and gives the PUT's status with dfkv_entry_flushed() once the
	 * flush ended.
	 */
	int (*commit)(void *ctx, struct dfkv_entry *e, bool staged);
	/*
	 * Start reading DURABLE e (where LOADING) from its disk into RAM,
	 * without waiting for it: e is pinned and referenced for the read,
	 * which ends (at once when it cannot start) with dfkv_entry_loaded()
	 * and then unpins it (dfkv_store_unpin()).  leased: a LEASE
	 * started it.
	 */
	void (*load)(void *ctx, struct dfkv_entry *e, bool leased);
	/* Under e->lock: e's disk can serve a cold read now. */
	bool (*readable_locked)(struct dfkv_entry *e);
	/* Under e->lock: DURABLE e was used, or leaves DURABLE. */
	void (*touch_locked)(struct dfkv_entry *e);
	void (*unlist_locked)(struct dfkv_entry *e);
	/* The last reference to e, which has a disk copy, is gone. */
	void (*release)(struct dfkv_entry *e);
};

struct dfkv_store {
	struct rhashtable index;
	struct dfkv_slab slab;
	struct dfkv_arena arena;
	struct dfkv_stats *stats;
	struct dfkv_tenants *tenants;
	struct dfkv_lru lru;		/* RAM recency (evict.c) */
	struct dfkv_evictor ram;	/* RAM slots, evicting by recency */
	struct dfkv_ghosts ghosts;	/* keys dropped lately: miss causes */
	bool evict;			/* READ_ONCE: evict when full */
	bool tiered;			/* READ_ONCE: the lower tier has disks */
	/*
	 * No RAM tier (DFKV_NODE_F_DISK_ONLY): every value goes to and
	 * comes from the disks through a stage, bounded by the capacity.
	 */
	bool disk_only;
	u64 capacity;
	atomic64_t objects;
	atomic64_t used_bytes;
	atomic64_t pins;
	atomic64_t staged_bytes;	/* in stages, dfkv_store_stage_bound() */
	atomic64_t dirty_bytes;		/* of DIRTY entries */
	const struct dfkv_store_lower_ops *lower;
	void *lower_ctx;
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

/*
 * A request that waits for an entry without a sleeping task (a
 * connection): parked on the entry, its wake() runs under the entry's
 * lock once what it waits for happened (a PUT's leader finished, a
 * leader's flush or a cold read ended); it may only queue the work that
 * resumes the request.
 */
struct dfkv_waiter {
	struct list_head node;	/* on entry->parked; empty once woken */
	void (*wake)(struct dfkv_waiter *w);
};

/*
 * Take a waiter being torn down off e: when this returns, w->wake is not
 * running and will not be called.
 */
void dfkv_store_unpark(struct dfkv_entry *e, struct dfkv_waiter *w);

/* A PUT in progress. */
struct dfkv_put {
	struct dfkv_entry *e;
	bool leader;
	bool flushing;		/* leader: parked until its flush ended */
	u64 stored_len;
	u64 reserved;		/* leader: the value's first bytes with RAM */
	/*
	 * leader: parked when its commit waits for the disk (then
	 * dfkv_store_put_flushed()); NULL: the caller's task sleeps for it,
	 * killably (-EINTR).
	 */
	struct dfkv_waiter *w;
};

/*
 * Start a PUT of len bytes, with RAM for the value's first ahead bytes
 * (rounded up to whole parts of an extent; U64_MAX: all of it) and the
 * rest to come with dfkv_store_put_reserve() as the payload arrives.
 * Returns DFKV_STATUS_OK with put->e == NULL
 * when the key is already committed (values are immutable; stored_len
 * tells its length), DFKV_STATUS_OK with put->leader set when the caller
 * now owns a reserved entry and must fill it (dfkv_store_put_copy) and
 * finish it (dfkv_store_put_end), DFKV_STATUS_OK with put->e set and
 * !put->leader when another PUT of the key is in progress
 * (dfkv_store_put_wait gives its result), or an error status.
 */
int dfkv_store_put_begin(struct dfkv_store *st, const struct dfkv_key *key,
			 u64 len, u64 ahead, struct dfkv_put *put);
/*
 * A leader's RAM for the value's first upto bytes (put->reserved grows,
 * in whole parts); CACHE_FULL when the arena has no room for them.
 */
int dfkv_store_put_reserve(struct dfkv_put *put, u64 upto);
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
/*
 * Commit (ok) or abort (!ok with status) a leader's PUT.  A commit that
 * waits for the disk parks put->w and returns -EINPROGRESS (put->e held,
 * put->flushing; torn down: dfkv_store_unpark(), dfkv_store_put_drop()).
 */
int dfkv_store_put_end(struct dfkv_put *put, bool ok, int status);
/* A parked leader's status once its flush ended; else -EINPROGRESS. */
int dfkv_store_put_flushed(struct dfkv_put *put);
/* Stop following a PUT without waiting for its leader. */
void dfkv_store_put_drop(struct dfkv_put *put);
/* Wait for the leader of a followed PUT; -EINTR if killed. */
int dfkv_store_put_wait(struct dfkv_put *put);

/*
 * A follower that waits without a sleeping task: park it on the leader's
 * entry until the leader finished, then dfkv_store_put_result() gives the
 * leader's status (torn down: dfkv_store_unpark(), dfkv_store_put_drop()).
 * False when the leader already finished (take the result now).
 */
bool dfkv_store_put_park(struct dfkv_put *put, struct dfkv_waiter *w);
/* The finished leader's status for a follower; drops its reference. */
int dfkv_store_put_result(struct dfkv_put *put);

/* A pinned committed entry being read. */
struct dfkv_read {
	struct dfkv_entry *e;
};

/*
 * Start a GET: DFKV_STATUS_OK with rd->e pinned, or NOT_FOUND, BUSY,
 * IO_ERROR.  A value being read from disk is waited for: with w, w is
 * parked on the entry and -EINPROGRESS returned (rd->e pinned; torn
 * down: dfkv_store_unpark(), dfkv_store_get_end()), and once w->wake()
 * ran dfkv_store_get_resume() gives the status.  Without w the caller's
 * task sleeps, killably: -EINTR, with nothing held.
 */
int dfkv_store_get_begin(struct dfkv_store *st, const struct dfkv_key *key,
			 struct dfkv_read *rd, struct dfkv_waiter *w);
/* -EINPROGRESS while w was not woken (a wakeup of the caller's own). */
int dfkv_store_get_resume(struct dfkv_read *rd, struct dfkv_waiter *w);
size_t dfkv_store_read(struct dfkv_read *rd, u64 off, size_t len,
		       struct iov_iter *to);
/*
 * Count n bytes of a pinned entry sent by other means than
 * dfkv_store_read() (a socket or RDMA WRITEs from its mapped pages).
 */
void dfkv_store_sent(struct dfkv_read *rd, u64 n);
void dfkv_store_get_end(struct dfkv_read *rd);
/* Another pin and reference on rd's entry, as @more (dfkv_store_get_end()). */
void dfkv_store_pin_more(const struct dfkv_read *rd, struct dfkv_read *more);

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
 * A leased entry held only on disk: start reading it into RAM now, so the
 * GET that follows is served from RAM (SPEC.md 6, "Leases"); counted in
 * lease_reads.  A read that fails removes the block: that GET is a miss.
 */
void dfkv_store_prefetch(struct dfkv_store *st, struct dfkv_entry *e);

/* Pin / unpin a committed entry for a lease (pin takes a reference). */
struct dfkv_entry *dfkv_store_pin(struct dfkv_store *st,
				  const struct dfkv_key *key);
void dfkv_store_unpin(struct dfkv_entry *e);

/* Set the tier below the store, before any traffic. */
void dfkv_store_set_lower(struct dfkv_store *st,
			  const struct dfkv_store_lower_ops *ops, void *ctx);

/*
 * For the store's own layers (evict.c, tier.c): the primitives of the
 * state machine.  Functions named _locked take e->lock held; the others
 * run without it.
 */
extern const struct rhashtable_params dfkv_store_index_params;

/* A new, unlinked RESERVED entry with one reference; NULL without memory. */
struct dfkv_entry *dfkv_entry_new(struct dfkv_store *st,
				  const struct dfkv_key *key, u64 len);
void dfkv_entry_put(struct dfkv_entry *e);
/* Move e to DEAD; false if it was already (someone else unlinks it). */
bool dfkv_entry_kill_locked(struct dfkv_store *st, struct dfkv_entry *e);
/* Unlink a killed entry from the index and drop the index's reference. */
void dfkv_entry_unlink(struct dfkv_store *st, struct dfkv_entry *e);
/* DIRTY -> DURABLE; false when e is no longer DIRTY (it was killed). */
bool dfkv_entry_durable_locked(struct dfkv_store *st, struct dfkv_entry *e);
/* DIRTY -> COMMITTED: the flush was given up (nospc: the disk was full). */
void dfkv_entry_flush_failed_locked(struct dfkv_store *st,
				    struct dfkv_entry *e, bool nospc);
/*
 * DURABLE e lost its disk copy: COMMITTED when in RAM, else killed
 * (true: the caller unlinks it).
 */
bool dfkv_entry_disk_lost_locked(struct dfkv_store *st, struct dfkv_entry *e);
/*
 * Free e's RAM (a durable one stays on its disk) or kill it (no disk
 * copy); dirty, loading and pinned entries stay.  True when RAM was freed.
 */
bool dfkv_entry_evict_ram(struct dfkv_store *st, struct dfkv_entry *e);
/* Give e a stage outside the arena for its value; 0 or -ENOSPC. */
int dfkv_entry_stage(struct dfkv_store *st, struct dfkv_entry *e);
/*
 * The bytes the node's stages may hold: an eighth of its RAM budget,
 * all of it on a disk-only node.
 */
u64 dfkv_store_stage_bound(const struct dfkv_store *st);
/* The bytes of e's stage, which a pin or a PUT leader holds; 0: none. */
u64 dfkv_entry_staged(struct dfkv_entry *e);
/*
 * A cold read of e into RAM ended (err 0: the value is in e->slots or its
 * stage): publish the outcome and wake the GETs waiting for it.  A
 * payload not matching its record (-EBADMSG) removes the block first, so
 * the GETs are misses; so does any failure to give the value back (an
 * I/O error too) when leased, a LEASE having started the read.
 */
void dfkv_entry_loaded(struct dfkv_store *st, struct dfkv_entry *e, int err,
		       struct dfkv_slot *slots, u32 nr, bool staged,
		       bool leased);
/*
 * The flush e's PUT waits for (DFKV_EF_SYNC) ended with status (enum
 * dfkv_status): wake the PUT.
 */
void dfkv_entry_flushed(struct dfkv_store *st, struct dfkv_entry *e,
			int status);
/*
 * Link a rebuilt entry (done, result OK) into the index, still RESERVED;
 * -EEXIST when the key is stored already.  Then, under e->lock,
 * dfkv_entry_publish_durable_locked() makes it visible.
 */
int dfkv_store_insert(struct dfkv_store *st, struct dfkv_entry *e);
void dfkv_entry_publish_durable_locked(struct dfkv_store *st,
				       struct dfkv_entry *e);
/*
 * Walk every entry: act() runs on each (referenced, outside the walk, so
 * it may sleep), says whether it changed something and sets *unlink when
 * the entry must leave the index.  Returns whether any act() changed
 * something; unlinking can make a walk skip entries, so callers walk again
 * until a pass changes nothing.
 */
bool dfkv_store_walk(struct dfkv_store *st,
		     bool (*act)(struct dfkv_store *st, struct dfkv_entry *e,
				 void *arg, bool *unlink),
		     void *arg);

#endif /* _DFKV_STORE_H */
