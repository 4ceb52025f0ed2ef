// SPDX-License-Identifier: GPL-2.0
/*
 * What the command files of the "dfkv" family (nl_node.c, nl_disk.c,
 * nl_tenant.c) share: a message's header, the node a request names and
 * sending an event to a node's network namespace.  Below the handlers, it names no family: the
 * handlers pass the one their request came to (nl_common.h).
 */
#include <linux/ctype.h>
#include <net/genetlink.h>

#include "nl_common.h"
#include "node.h"

void *dfkv_nl_put_hdr(struct sk_buff *skb, const struct dfkv_nl_to *to,
		      u8 cmd)
{
	void *hdr;

	hdr = genlmsg_put(skb, to->portid, to->seq, to->family,
			  to->cb ? NLM_F_MULTI : 0, cmd);
	if (hdr && to->cb)
		genl_dump_check_consistent(to->cb, hdr);
	return hdr;
}

static bool name_valid(const char *name)
{
	const char *p;

	if (!*name)
		return false;
	for (p = name; *p; p++)
		if (!isalnum(*p) && *p != '-' && *p != '_' && *p != '.')
			return false;
	return true;
}

const char *dfkv_nl_req_name(struct genl_info *info)
{
	const char *name;

	if (GENL_REQ_ATTR_CHECK(info, DFKV_A_NODE_NAME))
		return NULL;
	name = nla_data(info->attrs[DFKV_A_NODE_NAME]);
	if (!name_valid(name)) {
		NL_SET_ERR_MSG_ATTR(info->extack,
				    info->attrs[DFKV_A_NODE_NAME],
				    "node names are 1-31 characters of [A-Za-z0-9._-]");
		return NULL;
	}
	return name;
}

struct dfkv_node *dfkv_nl_req_node(struct genl_info *info)
{
	const char *name = dfkv_nl_req_name(info);
	struct dfkv_node *node;

	if (!name)
		return NULL;
	node = dfkv_node_get(genl_info_net(info), name);
	if (!node)
		NL_SET_ERR_MSG(info->extack, "no node of that name in this network namespace");
	return node;
}

/*
 * Send an event to the node's namespace.  A deleted node sends none: its
 * teardown may outlive the namespace, and node_retire() waits for an RCU
 * grace period after setting ->unlinked, so no send is under way past it.
 */
void dfkv_nl_multicast(const struct genl_family *family, struct dfkv_node *node,
		       struct sk_buff *skb)
{
	rcu_read_lock();
	if (READ_ONCE(node->unlinked))
		nlmsg_free(skb);
	else
		genlmsg_multicast_netns(family, node->net, skb, 0,
					DFKV_NLGRP_EVENTS, GFP_ATOMIC);
	rcu_read_unlock();
}
