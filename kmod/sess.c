// SPDX-License-Identifier: GPL-2.0
/*
 * Sessions (see sess.h): set up and torn down here for every transport,
 * so a connection's or a file's end drops its leases and grants the same
 * way whichever carried it.
 */
#include "sess.h"
#include "node.h"

void dfkv_sess_init(struct dfkv_sess *s, struct dfkv_node *node, bool all)
{
	s->node = node;
	dfkv_auth_init(&s->auth, all);
	dfkv_lease_owner_init(&s->owner);
}

void dfkv_sess_bind(struct dfkv_sess *s, struct dfkv_node *node)
{
	/* Pairs with the acquire in dfkv_sess_node(). */
	smp_store_release(&s->node, node);
}

struct mem_cgroup *dfkv_sess_charge(struct dfkv_node *node)
{
	return dfkv_store_charge(&node->store);
}

int dfkv_sess_auth_secret(struct dfkv_sess *s, u64 tenant, const u8 *secret)
{
	struct dfkv_node *node = dfkv_sess_node(s);
	int err;

	if (!node)
		return -ENOTCONN;
	if (!dfkv_node_enter(node))
		return -ENODEV;
	err = dfkv_auth_secret(node, &s->auth, tenant, secret);
	dfkv_node_exit(node);
	return err;
}

void dfkv_sess_lease_undo(struct dfkv_sess *s, u64 id)
{
	dfkv_lease_release(&s->node->leases, &s->owner, id);
}

void dfkv_sess_destroy(struct dfkv_sess *s)
{
	if (s->node)
		dfkv_lease_drop_owner(&s->node->leases, &s->owner);
	dfkv_auth_destroy(&s->auth);
}
