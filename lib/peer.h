/* SPDX-License-Identifier: (GPL-2.0 WITH Linux-syscall-note) OR MIT */
/*
 * libdfkv transports and peers (peer.c): the transports' state for the
 * client, set up at open and let go of at close (client.c), and each
 * member's slot with the transport that reaches it (/dev/dfkv, TCP or
 * RDMA) and that transport's state for it, for the static members at
 * open (client.c) and for each member discovery adds (discovery.c).
 */
#ifndef DFKV_LIB_PEER_H
#define DFKV_LIB_PEER_H

#include "client.h"

/*
 * The transports' state for the client: /dev/dfkv's always, RDMA's when
 * the options ask for it (AUTO goes on without it when no device is up).
 * dfkv_transports_close() undoes it, also after a failure.
 */
int dfkv_transports_open(struct dfkv_client *c);
void dfkv_transports_close(struct dfkv_client *c);

/* Set up c->peers[0..npeers): 0 or the first peer's failure (the peers
 * set up by then are let go of by dfkv_peers_fini). */
int dfkv_peers_init(struct dfkv_client *c);
/* A new peer slot ready for use (health, transport); a member that cannot
 * be reached by the chosen transport stays unusable. */
int dfkv_peer_setup(struct dfkv_client *c, struct dfkv_peer *p);
/* Let go of every peer's transport state (dfkv_close). */
void dfkv_peers_fini(struct dfkv_client *c);

#endif /* DFKV_LIB_PEER_H */
