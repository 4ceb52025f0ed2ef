// SPDX-License-Identifier: (GPL-2.0 WITH Linux-syscall-note) OR MIT
/*
 * libdfkv lease handles (see lease.h): a handle holds, per node, the
 * lease id and, over TCP and RDMA, the connection that keeps the lease
 * (the transport takes it back with RELEASE or closes it); the live
 * handles are linked on the client's list under its lock.
 */
#include "exec.h"
#include "keyed.h"
#include "lease.h"
#include "transport.h"

struct lease_part {
	struct dfkv_peer *peer;
	uint64_t id;
	struct dfkv_conn *conn;		/* TCP: the connection holding it */
};

struct dfkv_lease {
	struct dfkv_lease *next, *prev;	/* the client's live leases */
	size_t n;
	struct lease_part part[];
};

/* Live leases, so dfkv_close can drop what the caller did not release. */
struct dfkv_leases {
	pthread_mutex_t lock;
	struct dfkv_lease head;
};

/* Close the connection a lease held (TCP or RDMA). */
static void lease_conn_put(struct dfkv_client *c, struct dfkv_conn *conn)
{
	if (conn)
		conn->t->conn_put(c, conn, false);
}

int dfkv_leases_open(struct dfkv_client *c)
{
	struct dfkv_leases *ll = calloc(1, sizeof(*ll));

	if (!ll)
		return DFKV_E_NOMEM;
	pthread_mutex_init(&ll->lock, NULL);
	ll->head.next = ll->head.prev = &ll->head;
	c->leases = ll;
	return 0;
}

void dfkv_leases_close(struct dfkv_client *c)
{
	struct dfkv_leases *ll = c->leases;

	if (!ll)
		return;
	while (ll->head.next != &ll->head) {
		struct dfkv_lease *l = ll->head.next;

		l->prev->next = l->next;
		l->next->prev = l->prev;
		for (size_t i = 0; i < l->n; i++)
			lease_conn_put(c, l->part[i].conn);
		free(l);
	}
	pthread_mutex_destroy(&ll->lock);
	free(ll);
	c->leases = NULL;
}

static void lease_link(struct dfkv_client *c, struct dfkv_lease *l)
{
	struct dfkv_leases *ll = c->leases;

	pthread_mutex_lock(&ll->lock);
	l->next = ll->head.next;
	l->prev = &ll->head;
	ll->head.next->prev = l;
	ll->head.next = l;
	pthread_mutex_unlock(&ll->lock);
}

static void lease_unlink(struct dfkv_client *c, struct dfkv_lease *l)
{
	struct dfkv_leases *ll = c->leases;

	pthread_mutex_lock(&ll->lock);
	l->prev->next = l->next;
	l->next->prev = l->prev;
	pthread_mutex_unlock(&ll->lock);
}

int dfkv_lease_results(struct dfkv_client *c, const struct dfkv_keyed *k,
		       uint64_t *stored_lens, size_t *nr_hits,
		       struct dfkv_lease **lease)
{
	struct dfkv_lease *l = calloc(1, sizeof(*l) +
				      k->nreq * sizeof(l->part[0]));
	size_t hits = 0;

	*lease = NULL;
	*nr_hits = 0;
	memset(stored_lens, 0, k->n * sizeof(*stored_lens));
	if (!l) {
		/* the nodes drop what they granted with the connections */
		for (size_t j = 0; j < k->nreq; j++)
			if (k->reqs[j].conn)
				lease_conn_put(c, k->reqs[j].conn);
		return DFKV_E_NOMEM;
	}
	/* the leading run of keys each within its node's leading hits */
	for (; hits < k->n; hits++) {
		const struct dfkv_req *r = dfkv_keyed_req(k, hits);
		size_t slot = k->pos[hits];

		if (r->status != DFKV_STATUS_OK ||
		    slot - (size_t)(r->keys - k->gkeys) >= r->nr_hits)
			break;
		stored_lens[hits] = k->gres[slot];
	}
	for (size_t j = 0; j < k->nreq; j++) {
		const struct dfkv_req *r = &k->reqs[j];

		if (r->status == DFKV_STATUS_OK && r->lease_id)
			l->part[l->n++] = (struct lease_part){ r->peer,
							       r->lease_id,
							       r->conn };
	}
	*nr_hits = hits;
	lease_link(c, l);
	*lease = l;
	return 0;
}

int dfkv_lease_release_prepare(struct dfkv_client *c, struct dfkv_lease *l,
			       struct dfkv_keyed *k)
{
	memset(k, 0, sizeof(*k));
	k->reqs = calloc(l->n + 1, sizeof(*k->reqs));
	k->rp = calloc(l->n + 1, sizeof(*k->rp));
	if (!k->reqs || !k->rp) {
		dfkv_keyed_free(k);
		return DFKV_E_NOMEM;
	}
	lease_unlink(c, l);
	for (size_t i = 0; i < l->n; i++) {
		k->reqs[i] = (struct dfkv_req){
			.op = DFKV_OP_RELEASE, .peer = l->part[i].peer,
			.lease_id = l->part[i].id, .conn = l->part[i].conn };
		k->rp[i] = &k->reqs[i];
	}
	k->nreq = l->n;
	return 0;
}

int dfkv_lease_release_finish(struct dfkv_client *c, struct dfkv_lease *l,
			      struct dfkv_keyed *k)
{
	int err = DFKV_STATUS_OK;

	for (size_t i = 0; i < k->nreq; i++) {
		/* a connection the transport did not take back */
		if (k->reqs[i].conn)
			lease_conn_put(c, k->reqs[i].conn);
		if (k->reqs[i].status != DFKV_STATUS_OK && !err)
			err = k->reqs[i].status;
	}
	dfkv_keyed_free(k);
	free(l);
	return err;
}

void dfkv_lease_drop(struct dfkv_client *c, struct dfkv_lease *l)
{
	lease_unlink(c, l);
	for (size_t i = 0; i < l->n; i++)
		lease_conn_put(c, l->part[i].conn);
	free(l);
}

int dfkv_lease_release(struct dfkv_client *c, struct dfkv_lease *l)
{
	struct dfkv_keyed k;
	int err = dfkv_lease_release_prepare(c, l, &k);

	if (err) {
		dfkv_lease_drop(c, l);
		return err;
	}
	if (k.nreq)
		dfkv_execute(c, k.rp, k.nreq);
	return dfkv_lease_release_finish(c, l, &k);
}
