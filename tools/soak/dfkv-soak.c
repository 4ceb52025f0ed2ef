// SPDX-License-Identifier: GPL-2.0
/*
 * dfkv-soak: the load of `make soak`.  Threads, each with its own libdfkv
 * client over one transport (local /dev/dfkv, TCP or RDMA), PUT, GET,
 * EXIST and REMOVE random keys of random tenants (namespaces) with random
 * sizes, for a given time, while tools/soak/run restarts disks and the
 * node and flips the disk's device-mapper table under them.  A value is a
 * function of its namespace and key, so every GET that returns data is
 * checked byte for byte whichever PUT stored it.  A client whose node
 * went away is reopened.  Prints ops, statuses by kind and wrong bytes;
 * exits 1 when any byte was wrong.
 *
 * usage: dfkv-soak SECONDS MEMBERS [local|tcp|rdma]... (one thread each)
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "dfkv.h"

#define TENANTS		8
#define KEYS		4096
#define MAX_LEN		(2 << 20)
#define NSTAT		32	/* statuses counted, shifted by STAT_BIAS */
#define STAT_BIAS	16

struct worker {
	pthread_t t;
	int id;
	uint32_t transport;
	const char *members;
	time_t until;
	long ops, reopens;
	long status[NSTAT];
	long wrong;		/* GETs whose bytes differ from the PUT's */
};

static uint64_t rnd(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

/* The value of (tenant, key): its length and bytes. */
static uint64_t value_len(int tenant, uint32_t key)
{
	uint64_t s = 0x9e3779b97f4a7c15ULL ^ ((uint64_t)tenant << 32 | key);

	rnd(&s);
	/* mostly KV-block sizes, some small and some odd */
	switch (rnd(&s) % 4) {
	case 0: return 1 + rnd(&s) % 4096;
	case 1: return 1 + rnd(&s) % MAX_LEN;
	default: return (uint64_t)(16 << 10) << (rnd(&s) % 7);
	}
}

static void value_fill(uint8_t *buf, uint64_t len, int tenant, uint32_t key)
{
	uint64_t s = ((uint64_t)tenant << 40) ^ key ^ 0xd1b54a32d192ed03ULL;
	uint64_t i;

	for (i = 0; i + 8 <= len; i += 8) {
		uint64_t v = rnd(&s);

		memcpy(buf + i, &v, 8);
	}
	for (; i < len; i++)
		buf[i] = (uint8_t)rnd(&s);
}

static int client_open(struct worker *w, int tenant, struct dfkv_client **c)
{
	struct dfkv_client_options_v2 o = {
		.size = sizeof(o),
		.transport = w->transport,
		.members = w->members,
		.io_timeout_ms = 20000,
		.cooldown_ms = 200,
	};
	char ns[32];

	snprintf(ns, sizeof(ns), "soak-tenant-%d", tenant);
	o.ns = ns;
	o.ns_len = strlen(ns);
	if (w->transport == DFKV_TRANSPORT_RDMA)
		o.rdma_port = 7401;
	return dfkv_open_v2(&o, c);
}

static void count(struct worker *w, int status)
{
	int i = status + STAT_BIAS;

	w->status[i < 0 ? 0 : i >= NSTAT ? NSTAT - 1 : i]++;
}

static void *work(void *arg)
{
	struct worker *w = arg;
	struct dfkv_client *c[TENANTS] = { 0 };
	uint8_t *want = malloc(MAX_LEN), *got = malloc(MAX_LEN);
	uint64_t seed = 0x2545f4914f6cdd1dULL * (w->id + 1);
	char key[16];

	while (time(NULL) < w->until) {
		int t = rnd(&seed) % TENANTS, status;
		uint32_t k = rnd(&seed) % KEYS;
		uint64_t len = value_len(t, k), n = 0;
		int op = rnd(&seed) % 10;

		if (!c[t] && client_open(w, t, &c[t])) {
			count(w, DFKV_E_UNAVAILABLE);
			continue;
		}
		snprintf(key, sizeof(key), "k%u", k);
		if (op < 4) {
			value_fill(want, len, t, k);
			status = dfkv_put(c[t], key, strlen(key), want, len);
		} else if (op < 8) {
			status = dfkv_get(c[t], key, strlen(key), got, MAX_LEN,
					  &n);
			if (status == DFKV_STATUS_OK) {
				value_fill(want, len, t, k);
				if (n != len || memcmp(want, got, len))
					w->wrong++;
			}
		} else if (op < 9) {
			status = dfkv_exist(c[t], key, strlen(key), &n);
		} else {
			status = dfkv_remove(c[t], key, strlen(key));
		}
		count(w, status);
		w->ops++;
		/* The node or its device went away: start over with it. */
		if (status == DFKV_E_NODEV || status == DFKV_E_UNAVAILABLE ||
		    status == DFKV_E_SYS) {
			dfkv_close(c[t]);
			c[t] = NULL;
			w->reopens++;
		}
	}
	for (int t = 0; t < TENANTS; t++)
		dfkv_close(c[t]);
	free(want);
	free(got);
	return NULL;
}

static uint32_t transport_of(const char *s)
{
	if (!strcmp(s, "local"))
		return DFKV_TRANSPORT_LOCAL;
	if (!strcmp(s, "tcp"))
		return DFKV_TRANSPORT_TCP;
	if (!strcmp(s, "rdma"))
		return DFKV_TRANSPORT_RDMA;
	return __DFKV_TRANSPORT_MAX;
}

int main(int argc, char **argv)
{
	long ops = 0, wrong = 0, reopens = 0, status[NSTAT] = { 0 };
	struct worker *w;
	int n = argc - 3, i, j;

	if (argc < 4) {
		fprintf(stderr, "usage: dfkv-soak SECONDS MEMBERS local|tcp|rdma...\n");
		return 2;
	}
	w = calloc(n, sizeof(*w));
	for (i = 0; i < n; i++) {
		w[i].id = i;
		w[i].members = argv[2];
		w[i].until = time(NULL) + atoi(argv[1]);
		w[i].transport = transport_of(argv[3 + i]);
		if (w[i].transport == __DFKV_TRANSPORT_MAX) {
			fprintf(stderr, "dfkv-soak: no transport %s\n", argv[3 + i]);
			return 2;
		}
		pthread_create(&w[i].t, NULL, work, &w[i]);
	}
	for (i = 0; i < n; i++) {
		pthread_join(w[i].t, NULL);
		ops += w[i].ops;
		wrong += w[i].wrong;
		reopens += w[i].reopens;
		for (j = 0; j < NSTAT; j++)
			status[j] += w[i].status[j];
	}
	printf("soak: %ld ops, %ld client reopens, %ld wrong values\n", ops,
	       reopens, wrong);
	for (j = 0; j < NSTAT; j++)
		if (status[j])
			printf("soak:   %-24s %ld\n",
			       dfkv_strerror(j - STAT_BIAS), status[j]);
	free(w);
	return wrong ? 1 : 0;
}
