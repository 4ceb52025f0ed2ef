/* SPDX-License-Identifier: (GPL-2.0 WITH Linux-syscall-note) OR MIT */
/*
 * libdfkv transport interface: the ops table each transport (tcp.c,
 * rdma.c, local.c) exports and a peer points at, the connection base
 * every network transport's connection starts with, and the one mapping
 * of a routed request to its wire prefix and of a reply back into the
 * request that TCP and RDMA share (conn.c).  Each transport keeps its
 * state for the client and for each peer behind the table; peer.c sets
 * the transports up and chooses one per peer, exec.c calls through it.
 */
#ifndef DFKV_LIB_TRANSPORT_H
#define DFKV_LIB_TRANSPORT_H

#include <stddef.h>

#include "client.h"
#include "health.h"
#include "wire.h"

struct dfkv_net_ops;

#define dfkv_container_of(ptr, type, member) \
	((type *)(void *)((char *)(ptr) - offsetof(type, member)))

/* What conn.c sees of a request on a connection: each network
 * transport's item (its wire state for the request) starts with it. */
struct dfkv_item {
	struct dfkv_req *r;
};

/*
 * What the client and conn.c see of a connection: the transport that
 * owns it (its conn_put takes it back), the peer it reaches and the work
 * of the current exec (conn.c): the items queued on it in order, of
 * which the first sent went out and the first recvd were answered.  A
 * lease granted over it keeps it (struct dfkv_req.conn) until RELEASE.
 */
struct dfkv_conn {
	const struct dfkv_transport_ops *t;
	struct dfkv_peer *peer;
	struct dfkv_item **q;
	size_t nq, qcap, sent, recvd;
	bool active;			/* carrying the current exec's work */
};

struct dfkv_transport_ops {
	const char *name;
	enum dfkv_transport_id id;	/* its slot in c->tstate */
	/*
	 * Set up and let go of the client's state for this transport
	 * (c->tstate[id]) at open and close; NULL when it keeps none.
	 * client_init fails with DFKV_E_NODEV when the transport cannot
	 * run here; client_fini runs even then, and only once.
	 */
	int (*client_init)(struct dfkv_client *c);
	void (*client_fini)(struct dfkv_client *c);
	/* The size of the state it keeps per peer (p->tp, zeroed). */
	size_t peer_size;
	/*
	 * Set up the peer's state for this transport; on failure fini
	 * runs at once (the peer then has no transport).  local:
	 * DFKV_E_NODEV when the node is not in this network namespace.
	 */
	int (*init)(struct dfkv_client *c, struct dfkv_peer *p);
	void (*fini)(struct dfkv_client *c, struct dfkv_peer *p);
	/*
	 * Run reqs (all routed to peers of this transport) until each has
	 * a status or deadline_ms passes; a request that could not be
	 * delivered gets DFKV_E_UNAVAILABLE, DFKV_E_TIMEOUT or
	 * DFKV_E_PROTO and its peer is reported with dfkv_peer_failed().
	 */
	void (*exec)(struct dfkv_client *c, struct dfkv_req **reqs, size_t n,
		     uint64_t deadline_ms);
	/* A network transport's part in that exec, which is then
	 * dfkv_conn_exec (conn.h); NULL for local. */
	const struct dfkv_net_ops *net;
	/* Take back a connection a lease held (pool it or close it). */
	void (*conn_put)(struct dfkv_client *c, struct dfkv_conn *conn,
			 bool healthy);
};

extern const struct dfkv_transport_ops dfkv_tcp_transport;
extern const struct dfkv_transport_ops dfkv_rdma_transport;
extern const struct dfkv_transport_ops dfkv_local_transport;

/*
 * The RDMA transport's rail counters (rdma.c, rail.h) as Prometheus
 * text into buf (cap bytes, NUL-terminated when it fits): its length,
 * 0 when RDMA is off.
 */
size_t dfkv_rdma_stats(struct dfkv_client *c, char *buf, size_t cap);

/*
 * The wire prefix of r in epoch (conn.c): op, block key (zero for the
 * keyed ops and RELEASE), GET range (never wider than the capacity),
 * TOUCH walk, LEASE ttl, RELEASE id, and the payload length (value, key
 * list, HELLO/AUTH payload).
 */
void dfkv_req_wire(const struct dfkv_req *r, uint8_t epoch,
		   struct dfkv_wire_req *w);
/*
 * A checked reply resp to r, data its inline data (PROBE, LEASE): the
 * status and lengths into r, a GET range wider than the capacity as
 * DFKV_STATUS_TOO_LARGE, PROBE results and the LEASE id and hits.
 */
void dfkv_req_answer(struct dfkv_req *r, const struct dfkv_wire_resp *resp,
		     const uint8_t *data);

#endif /* DFKV_LIB_TRANSPORT_H */
