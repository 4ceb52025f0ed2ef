/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The in-kernel TCP transport (wire epoch 6): per-node listeners and the
 * connections they accept, registered as the DFKV_LISTENER_TCP transport.
 */
#ifndef _DFKV_TCP_H
#define _DFKV_TCP_H

/* Module init and exit: the workqueue and the transport's registration. */
int dfkv_tcp_init(void);
void dfkv_tcp_exit(void);

#endif /* _DFKV_TCP_H */
