// SPDX-License-Identifier: (GPL-2.0 WITH Linux-syscall-note) OR MIT
/*
 * libdfkv keyed operations (see keyed.h): keys routed first (under
 * discovery the peer table may grow meanwhile), then laid out in one
 * slice per peer, and the per-key view of the per-peer results.
 */
#include "keyed.h"
#include "route.h"

void dfkv_keyed_free(struct dfkv_keyed *k)
{
	free(k->gkeys);
	free(k->gres);
	free(k->pos);
	free(k->peer_of);
	free(k->reqs);
	free(k->rp);
	memset(k, 0, sizeof(*k));
}

int dfkv_keyed_prepare(struct dfkv_client *c, uint8_t op,
		       const void *const *keys, const uint64_t *key_lens,
		       size_t n, struct dfkv_keyed *k)
{
	struct dfkv_key *bk;
	size_t *count = NULL, off = 0, np = 0;
	int err = 0;

	memset(k, 0, sizeof(*k));
	if (!c || !keys || !key_lens || !n || n > DFKV_KEYS_MAX)
		return DFKV_E_INVAL;
	k->n = n;
	bk = calloc(n, sizeof(*bk));
	k->gkeys = calloc(n, sizeof(*k->gkeys));
	k->gres = calloc(n, sizeof(*k->gres));
	k->pos = calloc(n, sizeof(*k->pos));
	k->peer_of = calloc(n, sizeof(*k->peer_of));
	if (!bk || !k->gkeys || !k->gres || !k->pos || !k->peer_of) {
		err = DFKV_E_NOMEM;
		goto out;
	}
	/* route first: under discovery the peer table may grow meanwhile */
	for (size_t i = 0; i < n && !err; i++) {
		err = dfkv_route(c, keys[i], key_lens[i], &bk[i], &k->peer_of[i]);
		if (!err && k->peer_of[i]->index >= np)
			np = k->peer_of[i]->index + 1;
	}
	if (err)
		goto out;
	count = calloc(np + 1, sizeof(*count));
	k->reqs = calloc(np, sizeof(*k->reqs));
	k->rp = calloc(np, sizeof(*k->rp));
	if (!count || !k->reqs || !k->rp) {
		err = DFKV_E_NOMEM;
		goto out;
	}
	for (size_t i = 0; i < n; i++)
		count[k->peer_of[i]->index]++;
	/* slices: peer p starts at start[p]; count[] becomes a cursor */
	for (size_t p = 0; p < np; p++) {
		size_t cnt = count[p];

		if (cnt) {
			struct dfkv_req *r = &k->reqs[k->nreq];

			r->op = op;
			r->peer = &c->peers[p];
			r->keys = k->gkeys + off;
			r->results = k->gres + off;
			r->nkeys = (uint32_t)cnt;
			k->rp[k->nreq++] = r;
		}
		count[p] = off;
		off += cnt;
	}
	for (size_t i = 0; i < n; i++) {
		size_t p = k->peer_of[i]->index;

		k->pos[i] = count[p]++;
		k->gkeys[k->pos[i]] = bk[i];
	}
out:
	free(bk);
	free(count);
	if (err)
		dfkv_keyed_free(k);
	return err;
}

int dfkv_keyed_status(const struct dfkv_keyed *k)
{
	for (size_t i = 0; i < k->nreq; i++)
		if (k->reqs[i].status != DFKV_STATUS_OK &&
		    k->reqs[i].status != DFKV_STATUS_NOT_FOUND)
			return k->reqs[i].status;
	return DFKV_STATUS_OK;
}

const struct dfkv_req *dfkv_keyed_req(const struct dfkv_keyed *k, size_t i)
{
	const struct dfkv_req *r = &k->reqs[0];

	for (size_t j = 0; j < k->nreq; j++)
		if (k->reqs[j].peer == k->peer_of[i])
			r = &k->reqs[j];
	return r;
}

void dfkv_probe_results(const struct dfkv_keyed *k, uint64_t *stored_lens)
{
	for (size_t i = 0; i < k->n; i++)
		stored_lens[i] = dfkv_keyed_req(k, i)->status == DFKV_STATUS_OK ?
			k->gres[k->pos[i]] : 0;
}
