/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Do not edit directly, auto-generated from: uapi/dfkv.yaml
 * by tools/ynl-gen/dfkv-nlgen.py (YNL-GEN kernel header).
 * To add an attribute: append it to its attribute set in uapi/dfkv.yaml
 * (and to the enum in uapi/linux/dfkv.h), list it in the request of the
 * operations that take it, give it its checks, then run `make nlgen`
 * and commit the regenerated files (Documentation/netlink.md).
 */
#ifndef _DFKV_NL_GEN_H
#define _DFKV_NL_GEN_H

#include <net/netlink.h>
#include <net/genetlink.h>

#include <linux/dfkv.h>

/* Ops table for dfkv */
extern const struct genl_ops dfkv_nl_ops[13];

int dfkv_nl_version_get_doit(struct sk_buff *skb, struct genl_info *info);
int dfkv_nl_node_new_doit(struct sk_buff *skb, struct genl_info *info);
int dfkv_nl_node_del_doit(struct sk_buff *skb, struct genl_info *info);
int dfkv_nl_node_set_doit(struct sk_buff *skb, struct genl_info *info);
int dfkv_nl_node_get_doit(struct sk_buff *skb, struct genl_info *info);
int dfkv_nl_node_get_dumpit(struct sk_buff *skb, struct netlink_callback *cb);
int dfkv_nl_tenant_get_doit(struct sk_buff *skb, struct genl_info *info);
int dfkv_nl_tenant_get_start(struct netlink_callback *cb);
int dfkv_nl_tenant_get_dumpit(struct sk_buff *skb, struct netlink_callback *cb);
int dfkv_nl_tenant_get_done(struct netlink_callback *cb);
int dfkv_nl_listener_add_doit(struct sk_buff *skb, struct genl_info *info);
int dfkv_nl_listener_del_doit(struct sk_buff *skb, struct genl_info *info);
int dfkv_nl_disk_add_doit(struct sk_buff *skb, struct genl_info *info);
int dfkv_nl_disk_del_doit(struct sk_buff *skb, struct genl_info *info);
int dfkv_nl_disk_get_doit(struct sk_buff *skb, struct genl_info *info);
int dfkv_nl_disk_get_dumpit(struct sk_buff *skb, struct netlink_callback *cb);
int dfkv_nl_tenant_set_doit(struct sk_buff *skb, struct genl_info *info);
int dfkv_nl_tenant_del_doit(struct sk_buff *skb, struct genl_info *info);

enum {
	DFKV_NLGRP_EVENTS,
};

extern const struct genl_multicast_group dfkv_nl_mcgrps[1];

#endif /* _DFKV_NL_GEN_H */
