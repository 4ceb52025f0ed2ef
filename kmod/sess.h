/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A session: what one peer of a node (a TCP connection, an RDMA
 * connection, an open /dev/dfkv file) holds across its requests, the
 * nvmet_sq model.  The transport embeds it and hands it to each request
 * (dfkv_req_init()); the core sets it up and tears it down: the tenants
 * its AUTH granted, the leases its LEASEs took (dropped with it), and the
 * memory cgroup the node charges what it allocates for the peer to.
 * The node reference is the transport's (its connection bookkeeping, or
 * the file's BIND): a session only points at the node.
 */
#ifndef _DFKV_SESS_H
#define _DFKV_SESS_H

#include <linux/memcontrol.h>

#include "auth.h"
#include "lease.h"

struct dfkv_node;

struct dfkv_sess {
	struct dfkv_node *node;		/* NULL until bound (a file) */
	struct dfkv_auth auth;
	struct dfkv_lease_owner owner;
};

/* all: acts for every tenant (an administrator's file, SPEC.md 9). */
void dfkv_sess_init(struct dfkv_sess *s, struct dfkv_node *node, bool all);
/*
 * Bind a file's session to its node, once: published to requests that
 * race the bind (dfkv_sess_node()).
 */
void dfkv_sess_bind(struct dfkv_sess *s, struct dfkv_node *node);
/* The node a session is bound to, or NULL. */
static inline struct dfkv_node *dfkv_sess_node(struct dfkv_sess *s)
{
	/* Pairs with the release in dfkv_sess_bind(). */
	return smp_load_acquire(&s->node);
}

/*
 * Charge what is allocated for the session's peer from here on to the
 * node's memory cgroup; undo with set_active_memcg(the value returned).
 */
struct mem_cgroup *dfkv_sess_charge(struct dfkv_node *node);

/*
 * DFKV_IOC_AUTH: grant the tenant to a bound session that shows its
 * secret; -ENOTCONN unbound, -ENODEV when the node is going away, else
 * as dfkv_auth_secret().
 */
int dfkv_sess_auth_secret(struct dfkv_sess *s, u64 tenant, const u8 *secret);
/* A lease the peer never learned of (its reply was lost): end it. */
void dfkv_sess_lease_undo(struct dfkv_sess *s, u64 id);

/*
 * The peer is gone and none of its requests runs any more: drop its
 * leases and grants.
 */
void dfkv_sess_destroy(struct dfkv_sess *s);

#endif /* _DFKV_SESS_H */
