/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The in-test dfkv node of the client unit tests (fake_node.c): a small
 * epoch-6 server on loopback (thread per connection, bounded) that
 * stores values, answers every operation of SPEC.md 2 and the tenant
 * handshake of SPEC.md 9, and misbehaves on request (srv.mode: a wrong
 * epoch, longer data than asked, a stall, a close).  Linked by
 * test_client_tcp and test_client_sg; fake_cluster.h puts three of them
 * behind a client.
 */
#ifndef DFKV_FAKE_NODE_H
#define DFKV_FAKE_NODE_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "dfkv.h"

enum srv_mode { SRV_OK, SRV_BAD_EPOCH, SRV_LONG_DATA, SRV_STALL, SRV_CLOSE };

#define SRV_OBJS	4096
#define SRV_CONNS	32
#define SRV_MAX_VALUE	(1u << 20)

struct obj {
	uint64_t tenant;
	uint8_t id[16];
	uint8_t *data;
	uint64_t len;
};

struct srv {
	int lfd;
	uint16_t port;
	pthread_t thread;
	pthread_mutex_t lock;
	struct obj objs[SRV_OBJS];
	size_t nobjs;
	volatile int mode;
	volatile bool stop;
	int conns[SRV_CONNS];
	pthread_t cthreads[SRV_CONNS];
	size_t nconns;
	uint64_t requests, puts, lease_seq, max_inflight_seen;
	uint64_t stalls;		/* requests held in SRV_STALL */
	uint64_t touch_walks[3];	/* TOUCH by offset: 0, 1, other */
	/* SPEC 9: its name, the one registered tenant and its secret */
	char name[DFKV_NODE_NAME_MAX];
	bool auth_required;
	uint64_t tenant;
	uint8_t secret[DFKV_TENANT_SECRET_LEN];
	uint64_t hellos, auth_ok, auth_failures, forbidden;
};

/* Start a node on 127.0.0.1:port (0 = any); the bound port in s->port. */
int srv_start(struct srv *s, uint16_t port);
/* Stop accepting, close every connection and join its thread. */
void srv_stop(struct srv *s);
/* Free the stored values (after srv_stop). */
void srv_free(struct srv *s);

#endif /* DFKV_FAKE_NODE_H */
