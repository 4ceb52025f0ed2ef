// SPDX-License-Identifier: GPL-2.0
/*
 * The table of transports, one per listener kind (see transport.h), and
 * what a node and netlink do with every transport's side of a node.  The
 * table only changes at module init and exit, when no node exists, so it
 * is read without a lock.  Loops go by kind (TCP, then RDMA); a node's
 * sides are shut down in that order too, each one's listeners, then its
 * connections; a listener's removal is the same for every kind.
 */
#include <linux/bug.h>
#include <linux/errno.h>
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
