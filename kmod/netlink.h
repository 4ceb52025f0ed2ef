/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The generic netlink family "dfkv": administration, stats and events.
 * netlink.c owns the family, its registration and its events; the
 * commands are in nl_node.c, nl_disk.c and nl_tenant.c, which share
 * nl_common.[ch].  The per-operation policies, the ops table, the
 * multicast groups and the handlers' prototypes are generated from
 * uapi/dfkv.yaml into nl_gen.[ch] (`make nlgen`).
 */
#ifndef _DFKV_NETLINK_H
#define _DFKV_NETLINK_H

int dfkv_nl_init(void);
void dfkv_nl_exit(void);

#endif /* _DFKV_NETLINK_H */
