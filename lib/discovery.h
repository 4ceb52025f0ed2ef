/* SPDX-License-Identifier: (GPL-2.0 WITH Linux-syscall-note) OR MIT */
/*
 * libdfkv discovery through mdsd (SPEC.md 7), internal to the library:
 * client.c calls these when the options name mds_endpoints.  The peer
 * table (c->peers) then has a fixed capacity and only grows: a member is
 * a slot for the life of the client (requests and leases hold peer
 * pointers), and the ring that maps keys to slots is swapped under a
 * lock as membership changes.
 */
#ifndef DFKV_LIB_DISCOVERY_H
#define DFKV_LIB_DISCOVERY_H

#include "client.h"

/* Fetch the group's members, build the first ring, register the client
 * (client_id), start the follower thread.  c->opt carries the caller's
 * strings (copied here). */
int dfkv_disc_open(struct dfkv_client *c);

/* Stop the thread, delete the registration, free the ring; idempotent. */
void dfkv_disc_close(struct dfkv_client *c);

/* Route an object id on the current ring. */
int dfkv_disc_route(struct dfkv_client *c, const uint8_t id[DFKV_OBJECT_ID_LEN],
		    struct dfkv_peer **peer);

/* Prometheus lines about discovery (epoch, ring size, errors) into buf;
 * returns the length written (truncated at cap). */
size_t dfkv_disc_stats(struct dfkv_client *c, char *buf, size_t cap);

#endif /* DFKV_LIB_DISCOVERY_H */
