// SPDX-License-Identifier: GPL-2.0
/*
 * dfkv-batchrate: the libdfkv-in-C column of the connector bench
 * (tools/bench/connectors): rounds of one PUT batch and one GET batch of
 * --count values of --size bytes, through dfkv_put_batch and
 * dfkv_get_batch, against running nodes named by --members (dfkv.ko nodes
 * in the test VM, reached over ports forwarded from the host).  It creates
 * no node: it is a plain libdfkv client, as an engine's connector is.
 *
 * Every round uses fresh keys, so every timed PUT stores new objects and
 * every timed GET reads what that round stored.  Each value is stamped
 * (bench.h) before its PUT and the GET buffers are cleared before the
 * GET; afterwards (untimed) every status, length and stamp is checked.
 * Prints one JSON line, the seconds of each timed round (the first
 * --warmup rounds are run and checked, not reported):
 *
 *   {"store_s": [...], "load_s": [...], "failures": N, "first_failure": S}
 *
 * Exit status: 0, 1 (some operation failed) or 2 (bad usage, no client).
 *
 * usage: dfkv-batchrate --members M --size BYTES --count N
 *                       [--rounds R] [--warmup W]
 */
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dfkv.h"

#define STAMP_MAGIC	0x6466b76261746368ULL
#include "bench.h"

#define NS		"dfkv-batchrate"
#define ROUNDS_MAX	64

struct run {
	struct dfkv_client *c;
	uint64_t size, n;
	char *vals;			/* n values of size bytes */
	char (*names)[64];
	const void **keys;
	uint64_t *klen, *caps, *lens;
	const void **vp;
	void **bp;
	int *st;
	uint64_t fails;
	char why[160];
};

static void failed(struct run *r, const char *what, uint64_t i, int st)
{
	if (!r->fails++)
		snprintf(r->why, sizeof(r->why), "%s of value %" PRIu64 ": %s",
			 what, i, st ? dfkv_strerror(st) : "wrong bytes");
}

/* One round: PUT then GET of fresh keys; *put_s and *get_s its times. */
static void round_trip(struct run *r, int round, double *put_s, double *get_s)
{
	uint64_t i;
	double t;

	for (i = 0; i < r->n; i++) {
		snprintf(r->names[i], sizeof(r->names[i]), "br:%d:%d:%" PRIu64,
			 (int)getpid(), round, i);
		r->klen[i] = strlen(r->names[i]);
		stamp_put(r->vals + i * r->size, r->size, stamp_of(round, i));
	}
	t = now();
	dfkv_put_batch(r->c, r->n, r->keys, r->klen, r->vp, r->caps, r->st);
	*put_s = now() - t;
	for (i = 0; i < r->n; i++)
		if (r->st[i])
			failed(r, "PUT", i, r->st[i]);
	memset(r->vals, 0, r->n * r->size);
	t = now();
	dfkv_get_batch(r->c, r->n, r->keys, r->klen, r->bp, r->caps, r->lens,
		       r->st);
	*get_s = now() - t;
	for (i = 0; i < r->n; i++)
		if (r->st[i] || r->lens[i] != r->size ||
		    !stamp_ok(r->vals + i * r->size, r->size, stamp_of(round, i)))
			failed(r, "GET", i, r->st[i]);
}

static void print_list(const char *name, const double *v, int n)
{
	printf("\"%s\": [", name);
	for (int i = 0; i < n; i++)
		printf("%s%.9f", i ? ", " : "", v[i]);
	printf("]");
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "members", required_argument, NULL, 'm' },
		{ "size", required_argument, NULL, 's' },
		{ "count", required_argument, NULL, 'n' },
		{ "rounds", required_argument, NULL, 'r' },
		{ "warmup", required_argument, NULL, 'w' },
		{ 0 }
	};
	double put_s[ROUNDS_MAX], get_s[ROUNDS_MAX], p, g;
	int rounds = 5, warmup = 1, opt, i, st;
	struct dfkv_client_options_v2 co = {
		.size = sizeof(co),
		.transport = DFKV_TRANSPORT_TCP,
		.ns = NS,
		.ns_len = sizeof(NS) - 1,
		.io_timeout_ms = 60000,
	};
	struct run r = { 0 };
	uint64_t j;

	while ((opt = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		switch (opt) {
		case 'm': co.members = optarg; break;
		case 's': r.size = strtoull(optarg, NULL, 10); break;
		case 'n': r.n = strtoull(optarg, NULL, 10); break;
		case 'r': rounds = atoi(optarg); break;
		case 'w': warmup = atoi(optarg); break;
		default: goto usage;
		}
	}
	if (optind != argc || !co.members || r.size < 2 * sizeof(uint64_t) ||
	    !r.n || r.n > DFKV_CLIENT_BATCH_MAX || rounds < 1 ||
	    rounds > ROUNDS_MAX || warmup < 0)
		goto usage;
	r.vals = aligned_alloc(4096, (r.n * r.size + 4095) / 4096 * 4096);
	r.names = calloc(r.n, sizeof(*r.names));
	r.keys = calloc(r.n, sizeof(*r.keys));
	r.vp = calloc(r.n, sizeof(*r.vp));
	r.bp = calloc(r.n, sizeof(*r.bp));
	r.klen = calloc(r.n, sizeof(*r.klen));
	r.caps = calloc(r.n, sizeof(*r.caps));
	r.lens = calloc(r.n, sizeof(*r.lens));
	r.st = calloc(r.n, sizeof(*r.st));
	if (!r.vals || !r.names || !r.keys || !r.vp || !r.bp || !r.klen ||
	    !r.caps || !r.lens || !r.st) {
		fprintf(stderr, "dfkv-batchrate: out of memory\n");
		return 2;
	}
	for (j = 0; j < r.n; j++) {
		r.keys[j] = r.names[j];
		r.vp[j] = r.bp[j] = r.vals + j * r.size;
		r.caps[j] = r.size;
	}
	st = dfkv_open_v2(&co, &r.c);
	if (st) {
		fprintf(stderr, "dfkv-batchrate: dfkv_open_v2 %s: %s\n",
			co.members, dfkv_strerror(st));
		return 2;
	}
	for (i = 0; i < warmup + rounds; i++) {
		round_trip(&r, i, &p, &g);
		if (i >= warmup) {
			put_s[i - warmup] = p;
			get_s[i - warmup] = g;
		}
	}
	dfkv_close(r.c);
	printf("{");
	print_list("store_s", put_s, rounds);
	printf(", ");
	print_list("load_s", get_s, rounds);
	printf(", \"failures\": %" PRIu64 ", \"first_failure\": \"%s\"}\n",
	       r.fails, r.why);
	return r.fails ? 1 : 0;
usage:
	fprintf(stderr, "usage: dfkv-batchrate --members M --size BYTES "
		"--count N [--rounds R (1..%d)] [--warmup W]\n", ROUNDS_MAX);
	return 2;
}
