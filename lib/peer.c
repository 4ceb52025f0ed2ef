// SPDX-License-Identifier: (GPL-2.0 WITH Linux-syscall-note) OR MIT
/*
 * libdfkv transports and peers (see peer.h): the transports' state for
 * the client (/dev/dfkv always, RDMA when asked for), the choice of
 * transport per member (/dev/dfkv when asked for, or with AUTO when the
 * node is in this network namespace; else RDMA when it is on, else TCP),
 * each peer's transport state (allocated here, set up by the transport)
 * and its health counters.
 */
#include "peer.h"
#include "transport.h"

/* Whether the options ask for RDMA (AUTO: an RDMA port is named). */
static bool rdma_wanted(const struct dfkv_client *c)
{
	return c->opt.transport == DFKV_TRANSPORT_RDMA ||
	       (c->opt.transport == DFKV_TRANSPORT_AUTO && c->opt.rdma_port);
}

int dfkv_transports_open(struct dfkv_client *c)
{
	int err = dfkv_local_transport.client_init(c);

	if (err || !rdma_wanted(c))
		return err;
	err = dfkv_rdma_transport.client_init(c);
	/* auto goes on over TCP without a device */
	if (err && (c->opt.transport == DFKV_TRANSPORT_RDMA ||
		    err != DFKV_E_NODEV))
		return err;
	if (err)
		dfkv_rdma_transport.client_fini(c);
	return 0;
}

void dfkv_transports_close(struct dfkv_client *c)
{
	dfkv_rdma_transport.client_fini(c);
	dfkv_local_transport.client_fini(c);
}

/* Whether remote members go over RDMA: asked for, and a device is up. */
static bool use_rdma(struct dfkv_client *c)
{
	return c->tstate[DFKV_T_RDMA] && rdma_wanted(c);
}

/* A peer slot's health, before any transport sets it up. */
static void peer_slot_init(struct dfkv_peer *p)
{
	atomic_init(&p->down_until_ms, 0);
	atomic_init(&p->down_status, DFKV_E_UNAVAILABLE);
	atomic_init(&p->max_value, 0);
	atomic_init(&p->auth_failures, 0);
}

/* Let go of p's transport state; p has no transport afterwards. */
static void peer_drop(struct dfkv_client *c, struct dfkv_peer *p)
{
	if (!p->t)
		return;
	p->t->fini(c, p);
	free(p->tp);
	p->tp = NULL;
	p->t = NULL;
}

/* Set up p over transport t; on failure p has no transport. */
static int peer_use(struct dfkv_client *c, struct dfkv_peer *p,
		    const struct dfkv_transport_ops *t)
{
	int err;

	p->tp = calloc(1, t->peer_size);
	if (!p->tp)
		return DFKV_E_NOMEM;
	p->t = t;
	err = t->init(c, p);
	if (err)
		peer_drop(c, p);
	return err;
}

/* The transport of one peer (see above). */
static int peer_choose(struct dfkv_client *c, struct dfkv_peer *p)
{
	if (c->opt.transport == DFKV_TRANSPORT_LOCAL)
		return peer_use(c, p, &dfkv_local_transport);
	if (c->opt.transport == DFKV_TRANSPORT_AUTO &&
	    !peer_use(c, p, &dfkv_local_transport))
		return 0;
	return peer_use(c, p, use_rdma(c) ? &dfkv_rdma_transport :
			&dfkv_tcp_transport);
}

int dfkv_peers_init(struct dfkv_client *c)
{
	size_t i;
	int err = 0;

	for (i = 0; i < c->npeers; i++)
		peer_slot_init(&c->peers[i]);
	for (i = 0; i < c->npeers && !err; i++)
		err = peer_choose(c, &c->peers[i]);
	return err;
}

/* One peer slot added by discovery: the per-peer part of dfkv_peers_init.  A
 * member that cannot be reached by the chosen transport stays unusable. */
int dfkv_peer_setup(struct dfkv_client *c, struct dfkv_peer *p)
{
	int err;

	peer_slot_init(p);
	err = peer_choose(c, p);
	if (err)
		dfkv_peer_disable(p);
	return err;
}

void dfkv_peers_fini(struct dfkv_client *c)
{
	for (size_t i = 0; i < c->npeers; i++)
		peer_drop(c, &c->peers[i]);
}
