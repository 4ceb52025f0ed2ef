/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The generic netlink family "dfkv": administration, stats and events.
 * netlink.c owns the family and the node commands; nl_disk.c the disk
 * commands, nl_tenant.c the tenant commands.  The per-operation policies,
 * the ops table, the multicast groups and the handlers' prototypes are
 * generated from uapi/dfkv.yaml into nl_gen.[ch] (`make nlgen`).
 */
#ifndef _DFKV_NETLINK_H
#define _DFKV_NETLINK_H

#include <net/genetlink.h>
#include <linux/dfkv.h>

#include "nl_gen.h"

struct dfkv_node;
struct dfkv_disk;

int dfkv_nl_init(void);
void dfkv_nl_exit(void);
/* Announce a node event on the "events" group of the node's netns. */
void dfkv_nl_notify_node(struct dfkv_node *node, u32 event);
/* Announce a disk event (enum dfkv_event DISK_*) of a node. */
void dfkv_nl_notify_disk(struct dfkv_node *node, struct dfkv_disk *d,
			 u32 event);
/* Send a built event skb to the node's netns, unless it was deleted. */
void dfkv_nl_multicast(struct dfkv_node *node, struct sk_buff *skb);

/* Shared by the command files of the family. */
extern struct genl_family dfkv_nl_family;
static inline int dfkv_nl_put_stat(struct sk_buff *skb, int type, u64 val)
{
	return nla_put_u64_64bit(skb, type, val, DFKV_STAT_PAD);
}

/* The node named by the request, with a reference; NULL with extack set. */
struct dfkv_node *dfkv_nl_req_node(struct genl_info *info);

#endif /* _DFKV_NETLINK_H */
