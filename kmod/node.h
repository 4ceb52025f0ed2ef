/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A dfkv node: one cache instance, owned by the network namespace that
 * created it, holding its store, tenants, leases, limits and counters,
 * and each registered transport's side of it.
 */
#ifndef _DFKV_NODE_H
#define _DFKV_NODE_H

#include <linux/kref.h>
#include <linux/list.h>
#include <linux/mutex.h>
#include <linux/percpu-refcount.h>
#include <linux/completion.h>
#include <linux/sizes.h>
#include <linux/bits.h>
#include <linux/workqueue.h>
#include <linux/notifier.h>
#include <linux/dfkv.h>

#include "store.h"
#include "tier.h"
#include "stats.h"
#include "tenant.h"
#include "auth.h"
#include "lease.h"
#include "transport.h"

struct net;
struct netlink_ext_ack;
struct dfkv_listeners;
struct dfkv_disk;

/* Per network namespace: its nodes. */
struct dfkv_net {
	struct mutex lock;	/* serializes admin changes of the list */
	struct list_head nodes;	/* RCU readers: BIND, lookups */
	u32 gen;		/* bumped on every change, for dumps */
};

struct dfkv_node {
	struct list_head list;
	struct kref ref;
	struct percpu_ref active;	/* operations in flight */
	struct completion drained;
	struct net *net;		/* not counted: the node dies first */
	bool unlinked;			/* RCU: no more events to net */
	struct work_struct teardown;	/* after NODE_DEL: node_teardown() */
	struct completion retired;	/* node_teardown() is done */
	char name[DFKV_NODE_NAME_MAX];
	u64 ctime_ns;
	u64 ram_promised;		/* counted in the host-wide sum */
	u64 max_value;			/* READ_ONCE */
	u32 flags;			/* READ_ONCE, enum dfkv_node_flags */
	u32 state;			/* READ_ONCE, enum dfkv_node_state */
	atomic_t attaching;		/* disk attaches in progress + held */
	bool held;			/* xchg: NODE_NEW's REBUILDING, one count */
	atomic64_t recv_reserved;	/* by PUTs whose payload is arriving */
	atomic64_t recv_refused;	/* PUTs answered BUSY for it */
	struct dfkv_stats stats;
	struct dfkv_tenants tenants;
	struct dfkv_store store;
	struct dfkv_tier tier;		/* its disks, below the store */
	struct dfkv_leases leases;
	struct dfkv_conn_limits limits;
	/* each registered transport's side: dfkv_transport_ops.node_size */
	struct dfkv_listeners *transports[__DFKV_LISTENER_MAX];
	struct rcu_head rcu;
};

struct dfkv_node_cfg {
	const char *name;
	u64 ram_bytes;
	u64 max_value;
	u32 flags;
	u32 first_request_ms;
	u32 idle_ms;
	u32 max_conns;
	u32 frame_ms;
	u32 min_rate;
	u32 numa;		/* NUMA node or DFKV_NUMA_INTERLEAVE */
	bool auth_required;
	u64 tenant_quota;	/* default quota, 0 = unlimited */
	bool rebuilding;	/* REBUILDING until dfkv_node_release() */
};

#define DFKV_MAX_VALUE_DEFAULT	((u64)SZ_64M)
#define DFKV_MAX_VALUE_LIMIT	((u64)SZ_1G)	/* below MAX_RW_COUNT */
#define DFKV_RAM_MIN		((u64)SZ_1M)
#define DFKV_RAM_MAX		BIT_ULL(46)

struct dfkv_net *dfkv_net(struct net *net);
int dfkv_node_pernet_init(void);
void dfkv_node_pernet_exit(void);

int dfkv_node_create(struct net *net, const struct dfkv_node_cfg *cfg,
		     struct netlink_ext_ack *extack);
int dfkv_node_delete(struct net *net, const char *name);
bool dfkv_nodes_wait_retired(struct dfkv_node *self);
/* Look up a live node by name and take a reference, or NULL. */
struct dfkv_node *dfkv_node_get(struct net *net, const char *name);
void dfkv_node_put(struct dfkv_node *node);
int dfkv_node_set_state(struct dfkv_node *node, u32 state);
/*
 * Bracket a disk attach (its open, index rebuild and any wait for the
 * device): the node's phase is REBUILDING while one is in progress (or
 * while it is held from its creation), and the count's first begin and
 * last end raise DFKV_EVENT_NODE_PHASE.
 */
void dfkv_node_attach_begin(struct dfkv_node *node);
void dfkv_node_attach_end(struct dfkv_node *node);
/*
 * End the REBUILDING a node was created in (its creator attached its
 * disks); nothing for a node not created so or already released.
 */
void dfkv_node_release(struct dfkv_node *node);
/* enum dfkv_node_phase, without a lock: NODE_GET never waits for an attach. */
static inline u32 dfkv_node_phase(struct dfkv_node *node)
{
	return atomic_read(&node->attaching) ? DFKV_NODE_PHASE_REBUILDING :
		DFKV_NODE_PHASE_UP;
}

/*
 * Node and disk events (enum dfkv_event, DFKV_EVENT_NODE_* and
 * DFKV_EVENT_DISK_*) go, in process context, to the notifier blocks
 * registered here, with the event as the action and a struct
 * dfkv_node_event as the data: the netlink family announces them, so
 * nodes never call up into it.  A deleted node raises none.
 */
struct dfkv_node_event {
	struct dfkv_node *node;
	struct dfkv_disk *disk;		/* a disk event's */
};

int dfkv_node_notifier_register(struct notifier_block *nb);
void dfkv_node_notifier_unregister(struct notifier_block *nb);

/* Bracket an operation: false when the node is being torn down. */
static inline bool dfkv_node_enter(struct dfkv_node *node)
{
	return percpu_ref_tryget_live(&node->active);
}

static inline void dfkv_node_exit(struct dfkv_node *node)
{
	percpu_ref_put(&node->active);
}

#endif /* _DFKV_NODE_H */
