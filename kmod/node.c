// SPDX-License-Identifier: GPL-2.0
/*
 * Nodes and their network namespaces.  Each netns keeps its nodes on an
 * RCU list changed under a mutex; a node is found by name with a kref.  A
 * node lives from NODE_NEW until NODE_DEL, the death of its netns, or
 * module unload.  Deletion (node_retire()) unlinks it, closes its
 * listeners and connections and stops new operations; the rest,
 * node_teardown() on dfkv_node_wq, waits on a percpu_ref for the
 * operations in flight, lets the tier finish its flushes and cold reads,
 * drops the leases, the store and the disks, and gives the RAM budget
 * back.  NODE_DEL waits for it, so that its disks are closed and its RAM
 * free when it returns, but killably: a hung device holds only the
 * deleted node (module unload waits for it), never the deleter, other
 * nodes, or a dying netns, which does not wait.  The name is free at
 * once, and a new node that wants the RAM budget or a device a deleted
 * node still holds waits, killably, for it to let go
 * (dfkv_nodes_wait_retired()).  A node's events go to a notifier
 * chain the netlink family listens on; a deleted node sends none.
 * Disk deletions run on dfkv_node_wq too (dfkv_tier_disk_del()).
 * Open files bound to a deleted node keep only the struct (their later
 * operations fail with -ENODEV).  Deletion leaves the node's state alone:
 * an operation that entered before it runs to completion on a whole node
 * (its status is the one it would get any other time, never BUSY for the
 * deletion), and one that did not fails with -ENODEV.
 */
#include <linux/slab.h>
#include <linux/mm.h>
#include <linux/rculist.h>
#include <linux/timekeeping.h>
#include <linux/string.h>
#include <net/net_namespace.h>
#include <net/netns/generic.h>
#include <linux/netlink.h>
#include <linux/wait.h>

#include "node.h"

static unsigned int dfkv_net_id __read_mostly;

/* Deleted nodes being torn down, and who waits for them. */
static struct workqueue_struct *dfkv_node_wq;
static atomic_t dfkv_nodes_retiring = ATOMIC_INIT(0);
static DECLARE_WAIT_QUEUE_HEAD(dfkv_nodes_retired);

/*
 * True when deleted nodes were still being torn down and now none is, so
 * that what they held (RAM budget, devices) may be free: the caller may
 * retry.  False when none was, or the caller was killed while waiting, or
 * self (the node the caller acts in, or NULL) is being deleted too: its
 * teardown waits for the caller.
 */
bool dfkv_nodes_wait_retired(struct dfkv_node *self)
{
	if (!atomic_read(&dfkv_nodes_retiring))
		return false;
	return !wait_event_killable(dfkv_nodes_retired,
				    !atomic_read(&dfkv_nodes_retiring) ||
				    (self && percpu_ref_is_dying(&self->active))) &&
	       !atomic_read(&dfkv_nodes_retiring);
}

/*
 * RAM budgets promised to the nodes of every namespace.  Their sum stays
 * within 7/8 of the host's RAM (the rest is the kernel's and everyone
 * else's), so a budget is refused at creation rather than failing pages
 * later, when the node is full of other tenants' blocks.
 */
static atomic64_t dfkv_ram_promised = ATOMIC64_INIT(0);

static bool node_try_promise(u64 bytes)
{
	u64 host = (u64)totalram_pages() << PAGE_SHIFT;

	if (atomic64_add_return(bytes, &dfkv_ram_promised) <= host - host / 8)
		return true;
	atomic64_sub(bytes, &dfkv_ram_promised);
	return false;
}

static int node_promise_ram(u64 bytes, struct netlink_ext_ack *extack)
{
	if (node_try_promise(bytes) ||
	    (dfkv_nodes_wait_retired(NULL) && node_try_promise(bytes)))
		return 0;
	NL_SET_ERR_MSG(extack, "the host cannot back this RAM budget (nodes get 7/8 of RAM)");
	return -ENOMEM;
}

struct dfkv_net *dfkv_net(struct net *net)
{
	return net_generic(net, dfkv_net_id);
}

static void node_free_rcu(struct rcu_head *head)
{
	struct dfkv_node *node = container_of(head, struct dfkv_node, rcu);

	percpu_ref_exit(&node->active);
	kfree(node);
}

/*
 * The counters, the tenant table and the transports' sides (their emptied
 * listener sets) outlive the store: a dump in progress keeps an iterator
 * on the table and a reference on the node.
 */
static void node_release(struct kref *ref)
{
	struct dfkv_node *node = container_of(ref, struct dfkv_node, ref);

	dfkv_transports_node_free(node);
	dfkv_tenants_destroy(&node->tenants);
	dfkv_stats_destroy(&node->stats);
	call_rcu(&node->rcu, node_free_rcu);
}

void dfkv_node_put(struct dfkv_node *node)
{
	kref_put(&node->ref, node_release);
}

static void node_active_release(struct percpu_ref *ref)
{
	struct dfkv_node *node = container_of(ref, struct dfkv_node, active);

	complete(&node->drained);
}

static struct dfkv_node *node_find_locked(struct dfkv_net *dn,
					  const char *name)
{
	struct dfkv_node *node;

	list_for_each_entry_rcu(node, &dn->nodes, list,
				lockdep_is_held(&dn->lock))
		if (!strcmp(node->name, name))
			return node;
	return NULL;
}

struct dfkv_node *dfkv_node_get(struct net *net, const char *name)
{
	struct dfkv_net *dn = dfkv_net(net);
	struct dfkv_node *node;

	rcu_read_lock();
	node = node_find_locked(dn, name);
	if (node && !kref_get_unless_zero(&node->ref))
		node = NULL;
	rcu_read_unlock();
	return node;
}

static BLOCKING_NOTIFIER_HEAD(dfkv_node_notifier);

int dfkv_node_notifier_register(struct notifier_block *nb)
{
	return blocking_notifier_chain_register(&dfkv_node_notifier, nb);
}

void dfkv_node_notifier_unregister(struct notifier_block *nb)
{
	blocking_notifier_chain_unregister(&dfkv_node_notifier, nb);
}

static void node_event(struct dfkv_node *node, struct dfkv_disk *d,
		       u32 event)
{
	struct dfkv_node_event ev = { .node = node, .disk = d };

	blocking_notifier_call_chain(&dfkv_node_notifier, event, &ev);
}

static void node_disk_event(void *ctx, struct dfkv_disk *d, u32 event)
{
	node_event(ctx, d, event);
}

/* Flushes were given up: the node is not a safe place for new blocks. */
static void node_unhealthy(void *ctx)
{
	dfkv_node_set_state(ctx, DFKV_NODE_STATE_UNHEALTHY);
}

static const struct dfkv_tier_ops node_tier_ops = {
	.disk_event = node_disk_event,
	.unhealthy = node_unhealthy,
};

int dfkv_node_create(struct net *net, const struct dfkv_node_cfg *cfg,
		     struct netlink_ext_ack *extack)
{
	struct dfkv_net *dn = dfkv_net(net);
	struct dfkv_node *node;
	int err;

	err = node_promise_ram(cfg->ram_bytes, extack);
	if (err)
		return err;
	node = kzalloc(sizeof(*node), GFP_KERNEL_ACCOUNT);
	if (!node) {
		atomic64_sub(cfg->ram_bytes, &dfkv_ram_promised);
		return -ENOMEM;
	}
	node->ram_promised = cfg->ram_bytes;
	kref_init(&node->ref);
	init_completion(&node->drained);
	init_completion(&node->retired);
	node->net = net;
	strscpy(node->name, cfg->name, sizeof(node->name));
	node->ctime_ns = ktime_get_real_ns();
	node->max_value = cfg->max_value;
	node->flags = cfg->flags;
	node->state = DFKV_NODE_STATE_UP;
	node->held = cfg->rebuilding;
	atomic_set(&node->attaching, cfg->rebuilding);

	err = percpu_ref_init(&node->active, node_active_release, 0,
			      GFP_KERNEL);
	if (err)
		goto err_free;
	err = dfkv_stats_init(&node->stats);
	if (err)
		goto err_ref;
	err = dfkv_tenants_init(&node->tenants);
	if (err) {
		NL_SET_ERR_MSG(extack, "cannot set up the node's tenants (hmac(sha256))");
		goto err_stats;
	}
	node->tenants.auth_required = cfg->auth_required;
	node->tenants.default_quota = cfg->tenant_quota;
	err = dfkv_store_init(&node->store, &node->stats, &node->tenants,
			      cfg->ram_bytes, cfg->flags & DFKV_NODE_F_EVICT,
			      cfg->numa);
	if (err) {
		if (err == -EINVAL && cfg->numa != DFKV_NUMA_INTERLEAVE)
			NL_SET_ERR_MSG(extack, "no NUMA node of that number has memory");
		else
			NL_SET_ERR_MSG(extack, "cannot set up the node's RAM store");
		goto err_tenants;
	}
	node->store.disk_only = cfg->flags & DFKV_NODE_F_DISK_ONLY;
	err = dfkv_tier_init(&node->tier, &node->store, node->name,
			     &node_tier_ops, node, dfkv_node_wq);
	if (err)
		goto err_tier;
	dfkv_leases_init(&node->leases, &node->store, &node->stats);
	node->limits.first_request_ms = cfg->first_request_ms;
	node->limits.idle_ms = cfg->idle_ms;
	node->limits.max_conns = cfg->max_conns;
	node->limits.frame_ms = cfg->frame_ms;
	node->limits.min_rate = cfg->min_rate;
	err = dfkv_transports_node_init(node);
	if (err)
		goto err_store;

	mutex_lock(&dn->lock);
	if (node_find_locked(dn, cfg->name)) {
		mutex_unlock(&dn->lock);
		NL_SET_ERR_MSG(extack, "a node with this name exists in this network namespace");
		err = -EEXIST;
		goto err_transports;
	}
	list_add_tail_rcu(&node->list, &dn->nodes);
	dn->gen++;
	node_event(node, NULL, DFKV_EVENT_NODE_NEW);
	mutex_unlock(&dn->lock);
	return 0;

err_transports:
	dfkv_transports_node_free(node);
err_store:
	dfkv_leases_shutdown(&node->leases);
	dfkv_tier_destroy(&node->tier);	/* no disk yet */
err_tier:
	dfkv_store_destroy(&node->store);
err_tenants:
	dfkv_tenants_destroy(&node->tenants);
err_stats:
	dfkv_stats_destroy(&node->stats);
err_ref:
	percpu_ref_exit(&node->active);
err_free:
	atomic64_sub(node->ram_promised, &dfkv_ram_promised);
	kfree(node);
	return err;
}

/* The rest of a deleted node's teardown, on dfkv_node_wq. */
static void node_teardown(struct work_struct *work)
{
	struct dfkv_node *node = container_of(work, struct dfkv_node,
					      teardown);

	wait_for_completion(&node->drained);
	dfkv_tier_stop(&node->tier);
	dfkv_leases_shutdown(&node->leases);
	synchronize_rcu();
	/* Entries first (their records stay), then the disks close clean. */
	dfkv_store_destroy(&node->store);
	dfkv_tier_destroy(&node->tier);
	atomic64_sub(node->ram_promised, &dfkv_ram_promised);
	if (atomic_dec_and_test(&dfkv_nodes_retiring))
		wake_up_all(&dfkv_nodes_retired);
	complete(&node->retired);
	dfkv_node_put(node);
}

/*
 * Retire a node just unlinked: no connection, operation or event reaches
 * it after this returns; its teardown goes on in the background.
 */
static void node_retire(struct dfkv_node *node)
{
	WRITE_ONCE(node->unlinked, true);
	dfkv_transports_node_shutdown(node);
	percpu_ref_kill(&node->active);
	synchronize_rcu();	/* every event send saw ->unlinked */
	atomic_inc(&dfkv_nodes_retiring);
	wake_up_all(&dfkv_nodes_retired);	/* a waiter acting in node */
	INIT_WORK(&node->teardown, node_teardown);
	queue_work(dfkv_node_wq, &node->teardown);
}

int dfkv_node_delete(struct net *net, const char *name)
{
	struct dfkv_net *dn = dfkv_net(net);
	struct dfkv_node *node;

	mutex_lock(&dn->lock);
	node = node_find_locked(dn, name);
	if (!node) {
		mutex_unlock(&dn->lock);
		return -ENOENT;
	}
	list_del_rcu(&node->list);
	dn->gen++;
	node_event(node, NULL, DFKV_EVENT_NODE_DEL);
	kref_get(&node->ref);
	mutex_unlock(&dn->lock);
	node_retire(node);
	/* A deleter killed meanwhile leaves the teardown to go on alone. */
	if (wait_for_completion_killable(&node->retired))
		pr_info("dfkv: node %s deleted; its teardown waits for its disks\n",
			node->name);
	dfkv_node_put(node);
	return 0;
}

int dfkv_node_set_state(struct dfkv_node *node, u32 state)
{
	if (xchg(&node->state, state) != state)
		node_event(node, NULL, DFKV_EVENT_NODE_STATE);
	return 0;
}

void dfkv_node_attach_begin(struct dfkv_node *node)
{
	if (atomic_inc_return(&node->attaching) == 1)
		node_event(node, NULL, DFKV_EVENT_NODE_PHASE);
}

void dfkv_node_attach_end(struct dfkv_node *node)
{
	if (atomic_dec_and_test(&node->attaching))
		node_event(node, NULL, DFKV_EVENT_NODE_PHASE);
}

void dfkv_node_release(struct dfkv_node *node)
{
	if (xchg(&node->held, false))
		dfkv_node_attach_end(node);
}

static int __net_init dfkv_net_init(struct net *net)
{
	struct dfkv_net *dn = dfkv_net(net);

	mutex_init(&dn->lock);
	INIT_LIST_HEAD(&dn->nodes);
	return 0;
}

static void __net_exit dfkv_net_exit(struct net *net)
{
	struct dfkv_net *dn = dfkv_net(net);
	struct dfkv_node *node;

	for (;;) {
		mutex_lock(&dn->lock);
		node = list_first_entry_or_null(&dn->nodes, struct dfkv_node,
						list);
		if (node) {
			list_del_rcu(&node->list);
			dn->gen++;
		}
		mutex_unlock(&dn->lock);
		if (!node)
			break;
		node_retire(node);
	}
}

static struct pernet_operations dfkv_net_ops = {
	.init = dfkv_net_init,
	.exit = dfkv_net_exit,
	.id = &dfkv_net_id,
	.size = sizeof(struct dfkv_net),
};

int dfkv_node_pernet_init(void)
{
	int err;

	dfkv_node_wq = alloc_workqueue("dfkv_node_del", WQ_UNBOUND, 0);
	if (!dfkv_node_wq)
		return -ENOMEM;
	err = register_pernet_subsys(&dfkv_net_ops);
	if (err)
		destroy_workqueue(dfkv_node_wq);
	return err;
}

/* Every node is retired here; wait for their teardowns. */
void dfkv_node_pernet_exit(void)
{
	unregister_pernet_subsys(&dfkv_net_ops);
	destroy_workqueue(dfkv_node_wq);
}
