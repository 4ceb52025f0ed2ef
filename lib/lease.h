/* SPDX-License-Identifier: (GPL-2.0 WITH Linux-syscall-note) OR MIT */
/*
 * libdfkv lease handles (lease.c): what a LEASE granted, node by node,
 * as one handle the caller releases; the client's live handles, so that
 * dfkv_close drops what the caller did not release.
 */
#ifndef DFKV_LIB_LEASE_H
#define DFKV_LIB_LEASE_H

#include "client.h"

struct dfkv_keyed;

/* The client's list of live leases (dfkv_open_v2); 0 or DFKV_E_NOMEM. */
int dfkv_leases_open(struct dfkv_client *c);
/* Drop every live lease with its connections and free the list
 * (dfkv_close, once no batch runs). */
void dfkv_leases_close(struct dfkv_client *c);

/*
 * LEASE ran: the leading hits' stored lengths into stored_lens, their
 * count into *nr_hits, and the lease handle (linked to the client's live
 * leases) into *lease; DFKV_E_NOMEM leaves *lease NULL after letting go
 * of what the nodes granted.
 */
int dfkv_lease_results(struct dfkv_client *c, const struct dfkv_keyed *k,
		       uint64_t *stored_lens, size_t *nr_hits,
		       struct dfkv_lease **lease);
/* RELEASE a live lease on its nodes and free the handle (dfkv_release). */
int dfkv_lease_release(struct dfkv_client *c, struct dfkv_lease *l);
/*
 * The two halves of dfkv_lease_release, for the asynchronous RELEASE:
 * prepare unlinks l from the live leases and builds one RELEASE request
 * per node in k (k->rp[0..k->nreq)); DFKV_E_NOMEM leaves l as it was.
 * Once the requests ran, or were never sent, finish closes the
 * connections the transport did not take back (the nodes drop those
 * leases with them), frees k and l and returns the first failure.
 */
int dfkv_lease_release_prepare(struct dfkv_client *c, struct dfkv_lease *l,
			       struct dfkv_keyed *k);
int dfkv_lease_release_finish(struct dfkv_client *c, struct dfkv_lease *l,
			      struct dfkv_keyed *k);
/* Let go of a live lease without a RELEASE: its connections closed (the
 * nodes drop it with them), the handle freed. */
void dfkv_lease_drop(struct dfkv_client *c, struct dfkv_lease *l);

#endif /* DFKV_LIB_LEASE_H */
