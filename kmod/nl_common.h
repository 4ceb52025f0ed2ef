/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What the command files of the "dfkv" family share (nl_common.c), and
 * the event messages they build for netlink.c (nl_node.c, nl_disk.c).
 * No handler names the family: a message goes to the family its request
 * came to (struct dfkv_nl_to), an event to the one netlink.c passes.
 */
#ifndef _DFKV_NL_COMMON_H
#define _DFKV_NL_COMMON_H

#include <net/genetlink.h>
#include <linux/dfkv.h>

#include "compat.h"
#include "nl_gen.h"

struct dfkv_node;
struct dfkv_disk;

/* The family of a doit's request (netlink.c's pre_doit put it there). */
static inline const struct genl_family *
dfkv_nl_family_of(const struct genl_info *info)
{
	return info->user_ptr[0];
}

/* Where a message goes: a reply, a dump's part or (no portid) an event. */
struct dfkv_nl_to {
	const struct genl_family *family;
	u32 portid;
	u32 seq;
	struct netlink_callback *cb;	/* a dump's, NULL otherwise */
};

static inline struct dfkv_nl_to dfkv_nl_to_reply(struct genl_info *info)
{
	return (struct dfkv_nl_to){
		.family = dfkv_nl_family_of(info),
		.portid = info->snd_portid,
		.seq = info->snd_seq,
	};
}

static inline struct dfkv_nl_to dfkv_nl_to_dump(struct netlink_callback *cb)
{
	return (struct dfkv_nl_to){
		.family = dfkv_genl_dump_family(cb),
		.portid = NETLINK_CB(cb->skb).portid,
		.seq = cb->nlh->nlmsg_seq,
		.cb = cb,
	};
}

/*
 * Start a message of command @cmd; a dump's is multi-part and checked
 * against the dump's generation (cb->seq).  NULL when it does not fit.
 */
void *dfkv_nl_put_hdr(struct sk_buff *skb, const struct dfkv_nl_to *to,
		      u8 cmd);

static inline int dfkv_nl_put_stat(struct sk_buff *skb, int type, u64 val)
{
	return nla_put_u64_64bit(skb, type, val, DFKV_STAT_PAD);
}

/* The request's valid NODE_NAME, or NULL with extack set. */
const char *dfkv_nl_req_name(struct genl_info *info);
/* The node named by the request, with a reference; NULL with extack set. */
struct dfkv_node *dfkv_nl_req_node(struct genl_info *info);
/* Send a built event skb to the node's netns, unless it was deleted. */
void dfkv_nl_multicast(const struct genl_family *family, struct dfkv_node *node,
		       struct sk_buff *skb);

/* Announce a node event on the "events" group of the node's netns. */
void dfkv_nl_notify_node(const struct genl_family *family,
			 struct dfkv_node *node, u32 event);
/* Announce a disk event (enum dfkv_event DISK_*) of a node. */
void dfkv_nl_notify_disk(const struct genl_family *family,
			 struct dfkv_node *node, struct dfkv_disk *d, u32 event);

#endif /* _DFKV_NL_COMMON_H */
