// SPDX-License-Identifier: (GPL-2.0 WITH Linux-syscall-note) OR MIT
/*
 * libdfkv routing (see route.h): the object id of a key in the client's
 * namespace and its member on the ring, static (ketama.c) or discovered
 * (discovery.c).
 */
#include "discovery.h"
#include "route.h"

int dfkv_route(struct dfkv_client *c, const void *key, uint64_t key_len,
	       struct dfkv_key *bk, struct dfkv_peer **peer)
{
	size_t m;
	int err = dfkv_object_id(c->ns, c->ns_len, key, key_len, bk->id);

	if (err)
		return err;
	bk->tenant = c->tenant;
	if (c->disc)
		return dfkv_disc_route(c, bk->id, peer);
	err = dfkv_ring_route(c->ring, bk->id, DFKV_PROBE_NODE, &m);
	if (err)
		return err;
	*peer = &c->peers[m];
	return 0;
}
