/* SPDX-License-Identifier: (GPL-2.0 WITH Linux-syscall-note) OR MIT */
/*
 * libdfkv peer set-up (peer.c): each member's slot gets its locks and
 * the transport that reaches it (/dev/dfkv, TCP or RDMA), for the static
 * members at open (client.c) and for each member discovery adds
 * (discovery.c); the transports' peer state goes with the client.
 */
#ifndef DFKV_LIB_PEER_H
#define DFKV_LIB_PEER_H

#include "client.h"

/* Set up c->peers[0..npeers): 0 or the first peer's failure (the
 * transports' fini runs at dfkv_peers_fini even then). */
int dfkv_peers_init(struct dfkv_client *c);
/* A new peer slot ready for use (locks, transport); a member that cannot
 * be reached by the chosen transport stays unusable. */
int dfkv_peer_setup(struct dfkv_client *c, struct dfkv_peer *p);
/* Let go of every peer's transport state and locks (dfkv_close). */
void dfkv_peers_fini(struct dfkv_client *c);

#endif /* DFKV_LIB_PEER_H */
