/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The "cluster" fixture of the client unit tests: three fake nodes
 * (fake_node.h) on loopback, node-c of weight 2, and a TCP client of
 * them (self->c, over self->members); fill() makes test values.  For
 * kselftest_harness.h programs (include it after the harness), once per
 * program: test_client_tcp.c and test_client_sg.c.
 */
#ifndef DFKV_FAKE_CLUSTER_H
#define DFKV_FAKE_CLUSTER_H

#include <stdio.h>
#include <stdlib.h>

#include "dfkv.h"
#include "fake_node.h"

#define NSRV 3
static const char *const NAMES[NSRV] = { "node-a", "node-b", "node-c" };
static const uint8_t NS[] = "DFKVNS\0\2\4\0\0\0acme-rest-is-not-inspected";

FIXTURE(cluster) {
	struct srv *srv;
	struct dfkv_client *c;
	char members[256];
};

static int open_client(FIXTURE_DATA(cluster) *self, uint32_t io_timeout_ms,
		       uint32_t cooldown_ms)
{
	struct dfkv_client_options_v2 o = {
		.size = sizeof(o), .transport = DFKV_TRANSPORT_TCP,
		.members = self->members, .ns = NS, .ns_len = sizeof(NS) - 1,
		.batch_concurrency = 4, .conns_per_peer = 2,
		.io_timeout_ms = io_timeout_ms, .cooldown_ms = cooldown_ms,
	};

	return dfkv_open_v2(&o, &self->c);
}

FIXTURE_SETUP(cluster)
{
	int n = 0;

	self->srv = calloc(NSRV, sizeof(*self->srv));
	ASSERT_NE(NULL, self->srv);
	for (int i = 0; i < NSRV; i++) {
		ASSERT_EQ(0, srv_start(&self->srv[i], 0));
		snprintf(self->srv[i].name, sizeof(self->srv[i].name), "%s",
			 NAMES[i]);
		n += snprintf(self->members + n, sizeof(self->members) - (size_t)n,
			      "%s%s=127.0.0.1:%u%s", i ? "," : "", NAMES[i],
			      self->srv[i].port, i == 2 ? "@2" : "");
	}
	ASSERT_EQ(0, open_client(self, 2000, 300));
}

FIXTURE_TEARDOWN(cluster)
{
	dfkv_close(self->c);
	for (int i = 0; i < NSRV; i++) {
		if (!self->srv[i].stop)
			srv_stop(&self->srv[i]);
		srv_free(&self->srv[i]);
	}
	free(self->srv);
}

static void fill(uint8_t *p, size_t n, unsigned int seed)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (uint8_t)(seed * 31 + i * 7 + (i >> 8));
}

#endif /* DFKV_FAKE_CLUSTER_H */
