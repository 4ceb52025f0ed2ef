// SPDX-License-Identifier: (GPL-2.0 WITH Linux-syscall-note) OR MIT
/*
 * libdfkv peer set-up (see peer.h): the choice of transport per member
 * (/dev/dfkv when asked for, or with AUTO when the node is in this
 * network namespace; else RDMA when it is on, else TCP) and the peer's
 * locks and health counters before any transport sets it up.
 */
#include "peer.h"
#include "transport.h"

void dfkv_peers_fini(struct dfkv_client *c)
{
	for (size_t i = 0; i < c->npeers; i++) {
		struct dfkv_peer *p = &c->peers[i];

		if (p->t)
			p->t->fini(c, p);
		pthread_mutex_destroy(&p->pool_lock);
		pthread_rwlock_destroy(&p->local_lock);
	}
}

/* Whether remote members go over RDMA: asked for, and a device is up. */
static bool use_rdma(struct dfkv_client *c)
{
	return c->rdma && (c->opt.transport == DFKV_TRANSPORT_RDMA ||
			   (c->opt.transport == DFKV_TRANSPORT_AUTO &&
			    c->opt.rdma_port));
}

/* A peer slot's locks and state, before any transport sets it up. */
static void peer_slot_init(struct dfkv_peer *p)
{
	p->local_fd = -1;
	pthread_mutex_init(&p->pool_lock, NULL);
	pthread_rwlock_init(&p->local_lock, NULL);
	atomic_init(&p->down_until_ms, 0);
	atomic_init(&p->max_value, 0);
	atomic_init(&p->auth_failures, 0);
}

/* Set up p over transport t (its fini runs at close even on failure). */
static int peer_use(struct dfkv_client *c, struct dfkv_peer *p,
		    const struct dfkv_transport_ops *t)
{
	p->t = t;
	return t->init(c, p);
}

/*
 * The transport of one peer: /dev/dfkv when asked for, or with AUTO
 * when the node is in this network namespace; else RDMA when it is on,
 * else TCP.
 */
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
