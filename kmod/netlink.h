/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The generic netlink family "dfkv": administration, stats and events.
 */
#ifndef _DFKV_NETLINK_H
#define _DFKV_NETLINK_H

struct dfkv_node;

int dfkv_nl_init(void);
void dfkv_nl_exit(void);
/* Announce a node event on the "events" group of the node's netns. */
void dfkv_nl_notify_node(struct dfkv_node *node, u32 event);

#endif /* _DFKV_NETLINK_H */
