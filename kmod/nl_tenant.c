// SPDX-License-Identifier: GPL-2.0
/*
 * The tenant commands of the "dfkv" family: register or change a tenant
 * (TENANT_SET), unregister it (TENANT_DEL), get one or dump a node's
 * tenants (TENANT_GET).  A secret only ever comes in (to set, add or
 * drop one): no reply carries it, and the request's copies are wiped once
 * the tenant took them.
 */
#include <linux/rhashtable.h>
#include <linux/string.h>
#include <net/genetlink.h>
#include <net/sock.h>

#include "nl_common.h"
#include "node.h"

/* The request's tenant hash and node (referenced), or NULL and *err. */
static struct dfkv_node *tenant_req(struct genl_info *info, u64 *hash,
				    int *err)
{
	*err = -EINVAL;
	if (GENL_REQ_ATTR_CHECK(info, DFKV_A_TENANT_HASH))
		return NULL;
	*hash = nla_get_u64(info->attrs[DFKV_A_TENANT_HASH]);
	*err = -ENOENT;
	return dfkv_nl_req_node(info);
}

static const u8 *secret_attr(struct genl_info *info, int type)
{
	return info->attrs[type] ? nla_data(info->attrs[type]) : NULL;
}

static void secret_attr_wipe(struct genl_info *info, int type)
{
	struct nlattr *a = info->attrs[type];

	if (a)
		memzero_explicit(nla_data(a), nla_len(a));
}

int dfkv_nl_tenant_set_doit(struct sk_buff *skb, struct genl_info *info)
{
	struct dfkv_tenant_cfg cfg = {};
	struct dfkv_node *node;
	u64 quota;
	int err;

	node = tenant_req(info, &cfg.hash, &err);
	if (!node)
		goto wipe;
	cfg.secret = secret_attr(info, DFKV_A_TENANT_SECRET);
	cfg.add_secret = secret_attr(info, DFKV_A_TENANT_SECRET_ADD);
	cfg.drop_secret = secret_attr(info, DFKV_A_TENANT_SECRET_DROP);
	if (info->attrs[DFKV_A_TENANT_QUOTA]) {
		quota = nla_get_u64(info->attrs[DFKV_A_TENANT_QUOTA]);
		cfg.quota = &quota;
	}
	err = dfkv_tenant_register(&node->tenants, &cfg, info->extack);
	dfkv_node_put(node);
wipe:
	secret_attr_wipe(info, DFKV_A_TENANT_SECRET);
	secret_attr_wipe(info, DFKV_A_TENANT_SECRET_ADD);
	secret_attr_wipe(info, DFKV_A_TENANT_SECRET_DROP);
	return err;
}

int dfkv_nl_tenant_del_doit(struct sk_buff *skb, struct genl_info *info)
{
	struct dfkv_node *node;
	u64 hash;
	int err;

	node = tenant_req(info, &hash, &err);
	if (!node)
		return err;
	err = dfkv_tenant_unregister(&node->tenants, hash);
	if (err)
		NL_SET_ERR_MSG(info->extack, "no tenant of that hash is registered on this node");
	dfkv_node_put(node);
	return err;
}

static int fill_tenant(struct sk_buff *skb, struct dfkv_node *node,
		       struct dfkv_tenant *t, const struct dfkv_nl_to *to)
{
	struct dfkv_tenants *ts = &node->tenants;
	struct nlattr *nest;
	u32 flags = 0, secrets = dfkv_tenant_secrets(t);
	void *hdr;

	hdr = dfkv_nl_put_hdr(skb, to, DFKV_CMD_TENANT_GET);
	if (!hdr)
		return -EMSGSIZE;
	if (READ_ONCE(t->registered))
		flags |= DFKV_TENANT_F_REGISTERED;
	if (secrets)
		flags |= DFKV_TENANT_F_SECRET;
	if (READ_ONCE(t->has_quota))
		flags |= DFKV_TENANT_F_QUOTA;
	if (nla_put_string(skb, DFKV_A_NODE_NAME, node->name) ||
	    nla_put_u64_64bit(skb, DFKV_A_TENANT_HASH, t->hash, DFKV_A_PAD) ||
	    nla_put_u32(skb, DFKV_A_TENANT_FLAGS, flags) ||
	    nla_put_u32(skb, DFKV_A_TENANT_SECRETS, secrets) ||
	    nla_put_u64_64bit(skb, DFKV_A_TENANT_QUOTA,
			      dfkv_tenant_quota(ts, t), DFKV_A_PAD))
		goto cancel;
	nest = nla_nest_start(skb, DFKV_A_TENANT_STATS);
	if (!nest ||
	    dfkv_nl_put_stat(skb, DFKV_STAT_OBJECTS, atomic64_read(&t->objects)) ||
	    dfkv_nl_put_stat(skb, DFKV_STAT_USED_BYTES, atomic64_read(&t->used_bytes)) ||
	    dfkv_nl_put_stat(skb, DFKV_STAT_CHARGED_BYTES, atomic64_read(&t->charged)) ||
	    dfkv_nl_put_stat(skb, DFKV_STAT_BYTES_IN, atomic64_read(&t->bytes_in)) ||
	    dfkv_nl_put_stat(skb, DFKV_STAT_BYTES_OUT, atomic64_read(&t->bytes_out)) ||
	    dfkv_nl_put_stat(skb, DFKV_STAT_HITS, atomic64_read(&t->hits)) ||
	    dfkv_nl_put_stat(skb, DFKV_STAT_MISSES, atomic64_read(&t->misses)) ||
	    dfkv_nl_put_stat(skb, DFKV_STAT_AUTH_OK, atomic64_read(&t->auth_ok)) ||
	    dfkv_nl_put_stat(skb, DFKV_STAT_AUTH_FAILURES,
			     atomic64_read(&t->auth_failures)) ||
	    dfkv_nl_put_stat(skb, DFKV_STAT_FORBIDDEN, atomic64_read(&t->forbidden)) ||
	    dfkv_nl_put_stat(skb, DFKV_STAT_QUOTA_REJECTIONS,
			     atomic64_read(&t->quota_rejections)))
		goto cancel;
	nla_nest_end(skb, nest);
	genlmsg_end(skb, hdr);
	return 0;
cancel:
	genlmsg_cancel(skb, hdr);
	return -EMSGSIZE;
}

int dfkv_nl_tenant_get_doit(struct sk_buff *skb, struct genl_info *info)
{
	struct dfkv_node *node;
	struct dfkv_tenant *t;
	struct sk_buff *msg;
	u64 hash;
	int err;

	node = tenant_req(info, &hash, &err);
	if (!node)
		return err;
	err = -ENOMEM;
	msg = nlmsg_new(NLMSG_GOODSIZE, GFP_KERNEL);
	if (msg) {
		struct dfkv_nl_to to = dfkv_nl_to_reply(info);

		rcu_read_lock();
		t = dfkv_tenant_find(&node->tenants, hash);
		err = t ? fill_tenant(msg, node, t, &to) : -ENOENT;
		rcu_read_unlock();
		if (!err) {
			err = genlmsg_reply(msg, info);
			msg = NULL;
		} else if (err == -ENOENT) {
			NL_SET_ERR_MSG(info->extack, "the node has no tenant of that hash");
		}
	}
	nlmsg_free(msg);
	dfkv_node_put(node);
	return err;
}

/*
 * Tenant dump of one node, resumable in O(n): cb->args[0] holds a node
 * reference (which keeps the tenant table), args[1] an rhashtable iterator
 * kept across calls, args[2] whether the tenant it points at still has to
 * be sent, args[3] how often the walk restarted.  Each call runs inside an
 * operation bracket, so deleting the node ends the dump.  Tenants coming or
 * going (or a table resize restarting the walk) during the dump set
 * NLM_F_DUMP_INTR on the next message: the reader retries.
 */
int dfkv_nl_tenant_get_start(struct netlink_callback *cb)
{
	const struct genl_dumpit_info *info = genl_dumpit_info(cb);
	struct nlattr *na = info->attrs[DFKV_A_NODE_NAME];
	struct rhashtable_iter *iter;
	struct dfkv_node *node;

	if (!na) {
		NL_SET_ERR_MSG(cb->extack, "the tenant dump needs a node name");
		return -EINVAL;
	}
	node = dfkv_node_get(sock_net(cb->skb->sk), nla_data(na));
	if (!node) {
		NL_SET_ERR_MSG(cb->extack, "no node of that name in this network namespace");
		return -ENOENT;
	}
	iter = kmalloc(sizeof(*iter), GFP_KERNEL);
	if (!iter) {
		dfkv_node_put(node);
		return -ENOMEM;
	}
	rhashtable_walk_enter(&node->tenants.table, iter);
	cb->args[0] = (long)node;
	cb->args[1] = (long)iter;
	cb->args[2] = 0;
	cb->args[3] = 0;
	return 0;
}

int dfkv_nl_tenant_get_dumpit(struct sk_buff *skb, struct netlink_callback *cb)
{
	struct dfkv_node *node = (struct dfkv_node *)cb->args[0];
	struct rhashtable_iter *iter = (struct rhashtable_iter *)cb->args[1];
	struct dfkv_nl_to to = dfkv_nl_to_dump(cb);
	struct dfkv_tenant *t;

	if (!dfkv_node_enter(node))
		return 0;
	cb->seq = READ_ONCE(node->tenants.gen) + cb->args[3];
	rhashtable_walk_start(iter);
	/* The tenant that did not fit last time, or the next one. */
	t = cb->args[2] ? rhashtable_walk_peek(iter) : rhashtable_walk_next(iter);
	cb->args[2] = 0;
	for (; t; t = rhashtable_walk_next(iter)) {
		if (IS_ERR(t)) {
			if (PTR_ERR(t) != -EAGAIN)
				break;
			cb->seq++;	/* restarted: some may come twice */
			cb->args[3]++;
			continue;
		}
		if (fill_tenant(skb, node, t, &to)) {
			cb->args[2] = 1;
			break;
		}
	}
	rhashtable_walk_stop(iter);
	dfkv_node_exit(node);
	return skb->len;
}

int dfkv_nl_tenant_get_done(struct netlink_callback *cb)
{
	struct dfkv_node *node = (struct dfkv_node *)cb->args[0];
	struct rhashtable_iter *iter = (struct rhashtable_iter *)cb->args[1];

	if (iter) {
		rhashtable_walk_exit(iter);
		kfree(iter);
	}
	if (node)
		dfkv_node_put(node);
	return 0;
}
