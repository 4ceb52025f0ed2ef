// SPDX-License-Identifier: GPL-2.0
/*
 * The table of transports, one per listener kind (see transport.h), and
 * what a node and netlink do with every transport's side of a node.  The
 * table only changes at module init and exit, when no node exists, so it
 * is read without a lock.  Loops go by kind (TCP, then RDMA); a node's
 * sides are shut down in that order too, each one's listeners, then its
 * connections; a listener's removal is the same for every kind.  The
 * deadlines a connection is held to under the node's limits
 * (dfkv_conn_deadline(), which listener.c's deadline work runs for every
 * connection) are here too.
 */
#include <linux/bug.h>
#include <linux/errno.h>
#include <linux/jiffies.h>
#include <linux/math64.h>
#include <linux/minmax.h>
#include <linux/slab.h>
#include <net/genetlink.h>

#include "transport.h"
#include "listener.h"
#include "node.h"

static const struct dfkv_transport_ops *transports[__DFKV_LISTENER_MAX];

int dfkv_transport_register(const struct dfkv_transport_ops *ops)
{
	if (WARN_ON(!ops->kind || ops->kind >= __DFKV_LISTENER_MAX ||
		    transports[ops->kind]))
		return -EINVAL;
	transports[ops->kind] = ops;
	return 0;
}

void dfkv_transport_unregister(const struct dfkv_transport_ops *ops)
{
	transports[ops->kind] = NULL;
}

const struct dfkv_transport_ops *dfkv_transport_get(u32 kind)
{
	return kind < __DFKV_LISTENER_MAX ? transports[kind] : NULL;
}

int dfkv_transport_listener_del(struct dfkv_node *node, u32 kind,
				const char *addr, u16 port,
				struct netlink_ext_ack *extack)
{
	int err = dfkv_listeners_del(node->transports[kind], node, addr, port,
				     extack);

	if (err == -ENOENT)
		NL_SET_ERR_MSG(extack, "the node has no listener there (of that transport)");
	return err;
}

int dfkv_transports_node_init(struct dfkv_node *node)
{
	const struct dfkv_transport_ops *t;
	struct dfkv_listeners *ls;
	u32 kind;

	for (kind = 0; kind < __DFKV_LISTENER_MAX; kind++) {
		t = transports[kind];
		if (!t)
			continue;
		ls = kzalloc(t->node_size, GFP_KERNEL_ACCOUNT);
		if (!ls) {
			dfkv_transports_node_free(node);
			return -ENOMEM;
		}
		dfkv_listeners_init(ls, t);
		node->transports[kind] = ls;
	}
	return 0;
}

void dfkv_transports_node_shutdown(struct dfkv_node *node)
{
	u32 kind;

	for (kind = 0; kind < __DFKV_LISTENER_MAX; kind++)
		if (node->transports[kind])
			dfkv_listeners_shutdown(node->transports[kind]);
}

void dfkv_transports_node_free(struct dfkv_node *node)
{
	u32 kind;

	for (kind = 0; kind < __DFKV_LISTENER_MAX; kind++) {
		kfree(node->transports[kind]);
		node->transports[kind] = NULL;
	}
}

int dfkv_transports_fill_listeners(struct sk_buff *skb,
				   struct dfkv_node *node)
{
	struct nlattr *nest;
	u32 kind;
	int err;

	nest = nla_nest_start(skb, DFKV_A_LISTENERS);
	if (!nest)
		return -EMSGSIZE;
	for (kind = 0; kind < __DFKV_LISTENER_MAX; kind++) {
		if (!node->transports[kind])
			continue;
		err = dfkv_listeners_fill(skb, node->transports[kind]);
		if (err)
			return err;
	}
	nla_nest_end(skb, nest);
	return 0;
}

int dfkv_transports_fill_stats(struct sk_buff *skb, struct dfkv_node *node)
{
	u32 kind;
	int err;

	for (kind = 0; kind < __DFKV_LISTENER_MAX; kind++) {
		if (!node->transports[kind])
			continue;
		err = node->transports[kind]->ops->fill_stats(skb, node);
		if (err)
			return err;
	}
	return 0;
}

/* Bring *due forward to t if t comes first. */
static void due_by(unsigned long *due, unsigned long t)
{
	if (time_before(t, *due))
		*due = t;
}

/*
 * A frame being received or a reply being sent must move min_rate bytes a
 * second over each grace period (from the first check that saw one in
 * progress); one that ends meanwhile leaves the window running, counting
 * the next one's bytes.
 */
static bool rate_too_low(const struct dfkv_conn_limits *lim,
			 struct dfkv_conn_clock *ck, unsigned long now)
{
	u64 rate = READ_ONCE(lim->min_rate), got = READ_ONCE(ck->bytes);

	if (!rate) {
		ck->win_open = false;
		return false;
	}
	if (ck->win_open && time_before(now, ck->win_start +
					msecs_to_jiffies(DFKV_MIN_RATE_GRACE_MS)))
		return false;
	if (ck->win_open &&
	    got - ck->win_bytes < div_u64(rate * DFKV_MIN_RATE_GRACE_MS, 1000))
		return true;
	ck->win_open = true;
	ck->win_start = now;
	ck->win_bytes = got;
	return false;
}

bool dfkv_conn_deadline(const struct dfkv_conn_limits *lim,
			struct dfkv_conn_clock *ck, enum dfkv_conn_phase phase,
			unsigned long *delay)
{
	unsigned long first = msecs_to_jiffies(READ_ONCE(lim->first_request_ms));
	unsigned long idle = msecs_to_jiffies(READ_ONCE(lim->idle_ms));
	unsigned long frame = msecs_to_jiffies(max_t(u32, DFKV_FRAME_MS_MIN,
						     READ_ONCE(lim->frame_ms)));
	unsigned long last = READ_ONCE(ck->last_active);
	unsigned long now = jiffies, due = now + HZ;

	if (first && !READ_ONCE(ck->got_request))
		due_by(&due, ck->accepted + first);
	if (idle)
		due_by(&due, last + idle);
	if (phase == DFKV_CONN_RX)
		due_by(&due, READ_ONCE(ck->frame_start) + frame);
	else if (phase == DFKV_CONN_TX)
		due_by(&due, last + frame);
	if (time_after_eq(now, due))
		return true;
	if (phase == DFKV_CONN_WAIT)
		ck->win_open = false;
	else if (rate_too_low(lim, ck, now))
		return true;
	*delay = max(due - now, 1UL);
	return false;
}
