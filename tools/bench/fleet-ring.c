// SPDX-License-Identifier: GPL-2.0
/*
 * fleet-ring: libdfkv's Ketama ring (lib/ketama.c, through the public
 * dfkv_ring_* API of libdfkv.a) at fleet size, for tools/bench/fleet-sim.
 * Prints one JSON object: the time and heap a ring of N members takes to
 * build (the rebuild a client does when its member list changes), the
 * balance over K keys (max/mean and min/mean keys per member), and the keys
 * moved by one member joining and one leaving, against the ideal K/N, with
 * the keys that moved anywhere but to the joiner or off the leaver (0 for a
 * consistent hash).
 *
 *   fleet-ring [NODES [KEYS [ROUNDS]]]     defaults 1000 10000000 3
 */
#include <malloc.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "dfkv.h"

#define NAME_FMT	"cache-%05zu"

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static uint64_t splitmix(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static void die(const char *what, int err)
{
	fprintf(stderr, "fleet-ring: %s: %s\n", what, dfkv_strerror(err));
	exit(1);
}

/* Members named NAME_FMT of the indices in idx[0..n). */
static struct dfkv_ring *build(const size_t *idx, size_t n, char (*names)[32])
{
	struct dfkv_ring_member *m = calloc(n, sizeof(*m));
	struct dfkv_ring *r;
	int err;

	if (!m)
		die("calloc", DFKV_E_NOMEM);
	for (size_t i = 0; i < n; i++) {
		snprintf(names[i], sizeof(names[i]), NAME_FMT, idx[i]);
		m[i] = (struct dfkv_ring_member){ names[i], 1 };
	}
	err = dfkv_ring_build(m, n, &r);
	if (err)
		die("dfkv_ring_build", err);
	free(m);
	return r;
}

/* Route keys 0..k (ids from a fixed seed); owner[i] = idx[member]. */
static void route_all(const struct dfkv_ring *r, const size_t *idx,
		      uint32_t *owner, size_t k)
{
	uint8_t id[DFKV_OBJECT_ID_LEN] = { 0 };
	uint64_t seed = 42;

	for (size_t i = 0; i < k; i++) {
		uint64_t v = splitmix(&seed);
		size_t m;
		int err;

		memcpy(id, &v, sizeof(v));
		err = dfkv_ring_route(r, id, DFKV_PROBE_NODE, &m);
		if (err)
			die("dfkv_ring_route", err);
		owner[i] = (uint32_t)idx[m];
	}
}

int main(int argc, char **argv)
{
	size_t n = argc > 1 ? strtoul(argv[1], NULL, 0) : 1000;
	size_t k = argc > 2 ? strtoul(argv[2], NULL, 0) : 10000000;
	int rounds = argc > 3 ? atoi(argv[3]) : 3;
	size_t *idx = calloc(n + 1, sizeof(*idx));
	char (*names)[32] = calloc(n + 1, sizeof(*names));
	uint32_t *base = calloc(k, sizeof(*base));
	uint32_t *other = calloc(k, sizeof(*other));
	size_t *count = calloc(n + 1, sizeof(*count));
	double t, best = 1e9, sum = 0, maxc = 0, minc = 1e18;
	struct dfkv_ring *r;
	size_t heap0, heap;

	if (n < 2 || !k || rounds < 1 || !idx || !names || !base || !other ||
	    !count) {
		fprintf(stderr, "usage: fleet-ring [NODES>=2 [KEYS [ROUNDS]]]\n");
		return 2;
	}
	for (size_t i = 0; i <= n; i++)
		idx[i] = i;

	/* build: best of 5, and the heap the ring holds */
	for (int i = 0; i < 5; i++) {
		heap0 = mallinfo2().uordblks;
		t = now_s();
		r = build(idx, n, names);
		t = now_s() - t;
		heap = mallinfo2().uordblks - heap0;
		best = t < best ? t : best;
		if (i < 4)
			dfkv_ring_free(r);
	}

	route_all(r, idx, base, k);
	for (size_t i = 0; i < k; i++)
		count[base[i]]++;
	for (size_t i = 0; i < n; i++) {
		sum += (double)count[i];
		maxc = (double)count[i] > maxc ? (double)count[i] : maxc;
		minc = (double)count[i] < minc ? (double)count[i] : minc;
	}
	dfkv_ring_free(r);
	printf("{\"nodes\": %zu, \"keys\": %zu, \"build_ms\": %.3f, "
	       "\"ring_bytes\": %zu, \"max_over_mean\": %.4f, "
	       "\"min_over_mean\": %.4f, \"changes\": [",
	       n, k, best * 1e3, heap, maxc / (sum / (double)n),
	       minc / (sum / (double)n));

	/* joins: member n added; leaves: member j removed */
	for (int round = 0; round < rounds; round++) {
		size_t leaver = (size_t)round * (n / (size_t)rounds);
		size_t moved = 0, stray = 0;

		idx[n] = n + (size_t)round;
		r = build(idx, n + 1, names);
		route_all(r, idx, other, k);
		dfkv_ring_free(r);
		for (size_t i = 0; i < k; i++) {
			moved += other[i] != base[i];
			stray += other[i] != base[i] && other[i] != idx[n];
		}
		printf("%s{\"op\": \"join\", \"moved\": %zu, \"ideal\": %.1f, "
		       "\"moved_over_ideal\": %.4f, \"stray\": %zu}",
		       round ? ", " : "", moved, (double)k / (double)(n + 1),
		       (double)moved / ((double)k / (double)(n + 1)), stray);

		memmove(idx + leaver, idx + leaver + 1,
			(n - leaver - 1) * sizeof(*idx));
		r = build(idx, n - 1, names);
		route_all(r, idx, other, k);
		dfkv_ring_free(r);
		moved = stray = 0;
		for (size_t i = 0; i < k; i++) {
			moved += other[i] != base[i];
			stray += other[i] != base[i] && base[i] != leaver;
		}
		printf(", {\"op\": \"leave\", \"moved\": %zu, \"ideal\": %.1f, "
		       "\"moved_over_ideal\": %.4f, \"stray\": %zu}",
		       moved, (double)k / (double)n,
		       (double)moved / ((double)k / (double)n), stray);
		for (size_t i = 0; i <= n; i++)
			idx[i] = i;
	}
	printf("]}\n");
	free(idx);
	free(names);
	free(base);
	free(other);
	free(count);
	return 0;
}
