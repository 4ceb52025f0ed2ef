/* SPDX-License-Identifier: (GPL-2.0 WITH Linux-syscall-note) OR MIT */
/*
 * libdfkv routing (route.c): a caller's key becomes the block key of the
 * client's namespace and the peer whose node holds it, on the static
 * Ketama ring or, under discovery, on the ring mdsd's members make.
 */
#ifndef DFKV_LIB_ROUTE_H
#define DFKV_LIB_ROUTE_H

#include "client.h"

/* The block key of key and the peer it routes to. */
int dfkv_route(struct dfkv_client *c, const void *key, uint64_t key_len,
	       struct dfkv_key *bk, struct dfkv_peer **peer);

#endif /* DFKV_LIB_ROUTE_H */
