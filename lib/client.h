/* SPDX-License-Identifier: (GPL-2.0 WITH Linux-syscall-note) OR MIT */
/*
 * libdfkv client internals: the client (options, namespace, counters),
 * its peers (one member each, reached over the transport chosen for it:
 * /dev/dfkv in local.c, TCP in tcp.c or RDMA in rdma.c, through the ops
 * table of transport.h) and the routed request (struct dfkv_req) every
 * operation becomes.  Shared by client.c (API, stats), async.c
 * (asynchronous batches), the engine both use (route.c, exec.c, sg.c,
 * keyed.c, lease.c), peer.c (peer set-up, choice of transport),
 * members.c, discovery.c, auth.c (the tenant handshake), health.c and
 * the transports, which execute arrays of routed requests and fill in
 * their results.
 */
#ifndef DFKV_LIB_CLIENT_H
#define DFKV_LIB_CLIENT_H

#include <pthread.h>
#include <stdatomic.h>
#include <sys/uio.h>

#include "util.h"
#include "health.h"

#define DFKV_HOST_MAX	256

/* The transports (transport.h), each with its slot in a client. */
enum dfkv_transport_id {
	DFKV_T_LOCAL,
	DFKV_T_TCP,
	DFKV_T_RDMA,
	DFKV_TRANSPORTS_MAX
};

struct dfkv_conn;
struct dfkv_transport_ops;

/* Why a read found nothing (dfkv_client_misses_total{cause}). */
enum dfkv_miss_cause {
	DFKV_MISS_UNAVAILABLE,	/* its member unreachable, cooling down, or
				 * without a transport */
	DFKV_MISS_AUTH,		/* its member failed the handshake */
	DFKV_MISS_ABSENT,	/* the node answered: not there */
	DFKV_MISS_NR
};

struct dfkv_peer {
	char name[DFKV_NODE_NAME_MAX];
	char host[DFKV_HOST_MAX];	/* empty: no TCP address */
	uint16_t port;
	uint32_t weight;
	uint32_t index;
	const struct dfkv_transport_ops *t;	/* how it is reached, or NULL */
	void *tp;			/* t's state for it (t->peer_size) */

	_Atomic uint64_t down_until_ms;	/* peer health: skip until then */
	_Atomic int down_status;	/* why: DFKV_E_UNAVAILABLE, or
					 * DFKV_E_AUTH (failed handshake) */
	_Atomic uint64_t max_value;	/* the node's max_value_bytes from
					 * HELLO (0: not known): a longer PUT
					 * is TOO_LARGE without being sent */
	_Atomic uint64_t auth_failures;	/* handshakes the node failed */
};

/* One routed operation. */
struct dfkv_req {
	/* in */
	uint8_t op;				/* enum dfkv_op */
	struct dfkv_peer *peer;
	struct dfkv_key key;
	uint64_t offset, length;		/* GET range; LEASE: length = ttl;
						 * TOUCH: offset = walk (0
						 * forward, 1 reverse) */
	const void *val;			/* PUT; HELLO, AUTH payload */
	uint64_t val_len;
	void *buf;				/* GET destination; HELLO reply */
	uint64_t cap;
	struct iovec *iov;			/* scatter-gather PUT/GET: the
						 * caller's non-empty buffers
						 * (owned by the caller of
						 * execute; val and buf unused,
						 * val_len/cap their total) */
	uint32_t iovcnt;
	const struct dfkv_key *keys;		/* TOUCH, PROBE, LEASE */
	uint32_t nkeys;
	uint64_t *results;			/* PROBE, LEASE: nkeys entries */
	uint64_t lease_id;			/* LEASE out, RELEASE in */
	struct dfkv_conn *conn;			/* TCP and RDMA lease: the
						 * connection holding it (out
						 * of LEASE, into RELEASE) */
	uint32_t rail_skip;			/* RDMA: the rails that
						 * failed it, bit i rail i
						 * (rdma.c) */
	/* out */
	int status;
	uint32_t nr_hits;
	uint64_t stored_len, data_len;
};

struct dfkv_client {
	struct dfkv_client_options_v2 opt;	/* defaults applied */
	uint8_t *ns;
	uint64_t ns_len;
	uint64_t tenant;
	uint8_t secret[DFKV_TENANT_SECRET_LEN];	/* the tenant's, if has_secret */
	bool has_secret;
	struct dfkv_peer *peers;
	_Atomic size_t npeers;		/* grows under discovery (slots are
					 * set up before it counts them) */
	struct dfkv_ring *ring;		/* static members; NULL with disc */
	struct dfkv_disc *disc;		/* discovery through mdsd, or NULL */
	void *tstate[DFKV_TRANSPORTS_MAX];	/* each transport's state for
						 * the client, or NULL */
	struct dfkv_async *async;	/* asynchronous batches (async.c) */
	struct dfkv_leases *leases;	/* live lease handles (lease.c) */

	/* stats (client.c) */
	_Atomic uint64_t ops[__DFKV_OP_MAX][__DFKV_STATUS_MAX - __DFKV_E_MIN];
	_Atomic uint64_t bytes_out, bytes_in;
	_Atomic uint64_t tcp_reqs, local_reqs, rdma_reqs, connects, conn_failures;
	_Atomic uint64_t rdma_windows, rdma_req_mrs;	/* RDMA keys made for
						 * one request */
	_Atomic uint64_t peer_skips, dropped_writes, degraded_reads;
	_Atomic uint64_t misses[DFKV_MISS_NR];	/* keys read, not found */
};

/*
 * The AUTH2 handshake of a network connection (auth.c, SPEC.md 9): the
 * HELLO request, then, when dfkv_handshake_hello() says so, the AUTH
 * request.  A transport sends each one alone on the fresh connection,
 * ahead of any other request, and sends the rest only once the handshake
 * is DONE; FAILED fails the connection as unreachable (the node's reads
 * are misses, its writes dropped, for the cooldown).
 */
struct dfkv_handshake {
	struct dfkv_req hello, auth;
	uint8_t hello_payload[DFKV_HELLO_REQ_LEN];	/* caps, client nonce */
	uint8_t reply[DFKV_HELLO_REPLY_MAX];
	uint8_t proof[DFKV_AUTH_PROOF_LEN];		/* ours */
	uint8_t server_proof[DFKV_AUTH_PROOF_LEN];	/* the node's, expected */
	uint8_t auth_reply[DFKV_AUTH_PROOF_LEN];	/* the node's, received */
};

enum dfkv_hs_next {
	DFKV_HS_DONE,		/* the connection may carry requests */
	DFKV_HS_AUTH,		/* send h->auth, then dfkv_handshake_auth() */
	DFKV_HS_FAILED,		/* close it: the node is not who it must be */
};

/* Set up the HELLO request for a connection to p; false: no nonce. */
bool dfkv_handshake_start(struct dfkv_handshake *h, struct dfkv_peer *p);
/* HELLO was answered: check the node's name, remember max_value_bytes. */
enum dfkv_hs_next dfkv_handshake_hello(struct dfkv_client *c,
				       struct dfkv_handshake *h);
/* AUTH was answered: check the node's server proof. */
enum dfkv_hs_next dfkv_handshake_auth(struct dfkv_handshake *h);

/* members.c: parse opts->members into c->peers (names, hosts, weights). */
int dfkv_members_parse(const char *spec, struct dfkv_peer **peers,
		       size_t *n);

#endif /* DFKV_LIB_CLIENT_H */
