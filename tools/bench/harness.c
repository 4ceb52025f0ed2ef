// SPDX-License-Identifier: GPL-2.0
/*
 * The benches' timed phases: see harness.h.
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "harness.h"

/* Before a tier phase, at most this long for the dirty bytes to go. */
#define CLEAN_WAIT_S	300

void bench_why(struct bench_thread *t, const char *fmt, ...)
{
	va_list ap;

	if (t->why[0])
		return;
	va_start(ap, fmt);
	vsnprintf(t->why, sizeof(t->why), fmt, ap);
	va_end(ap);
}

static struct bench_thread *nth(struct bench_thread *t, size_t stride, int i)
{
	return (struct bench_thread *)((char *)t + (size_t)i * stride);
}

void bench_spawn(struct bench_thread *t, size_t stride, int n,
		 void *(*fn)(void *))
{
	int i;

	for (i = 0; i < n; i++)
		if (pthread_create(&nth(t, stride, i)->th, NULL, fn,
				   nth(t, stride, i))) {
			fprintf(stderr, "bench: pthread_create failed\n");
			exit(2);
		}
	for (i = 0; i < n; i++)
		pthread_join(nth(t, stride, i)->th, NULL);
}

static void *thread_main(void *arg)
{
	struct bench_thread *t = arg;
	struct bench_phase *ph = t->ph;
	uint64_t i, ns;

	for (;;) {
		pthread_barrier_wait(&ph->bar);
		if (t->tid == 0)
			ph->t0 = now();
		for (i = 0; i < ph->calls; i++) {
			t->fails += ph->call(t, i, &ns);
			if (t->nlat < ph->max_calls)
				t->lat[t->nlat++] = ns;
			t->ops += ph->ops_per_call;
			t->calls++;
		}
		pthread_barrier_wait(&ph->bar);
		if (t->tid == 0) {
			ph->wall += now() - ph->t0;
			ph->rounds++;
			ph->stop = ph->wall >= ph->duration || ph->one_round ||
				   t->calls + ph->calls > ph->max_calls;
		}
		if (ph->after_round)
			t->fails += ph->after_round(t);
		pthread_barrier_wait(&ph->bar);
		if (ph->stop)
			break;
	}
	return NULL;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static double pct_us(const uint64_t *v, uint64_t n, double p)
{
	if (!n)
		return 0;
	return v[(uint64_t)(p * (double)(n - 1) + 0.5)] / 1e3;
}

void bench_run(struct bench_phase *ph, struct bench_thread *t, size_t stride,
	       int n, struct bench_result *r)
{
	uint64_t *all, k = 0;
	int i;

	memset(r, 0, sizeof(*r));
	if (ph->tier)
		r->fails += tier_phase_begin(ph->g, ph->tier, CLEAN_WAIT_S,
					     &r->t0);
	ph->stop = 0;
	ph->wall = 0;
	ph->rounds = 0;
	pthread_barrier_init(&ph->bar, NULL, n);
	all = malloc(sizeof(*all) * ph->max_calls * n);
	if (!all)
		exit(2);
	for (i = 0; i < n; i++) {
		struct bench_thread *ti = nth(t, stride, i);

		ti->ph = ph;
		ti->ops = ti->calls = ti->fails = ti->nlat = 0;
		ti->why[0] = 0;
		ti->lat = all + (size_t)i * ph->max_calls;
	}
	bench_spawn(t, stride, n, thread_main);
	pthread_barrier_destroy(&ph->bar);

	for (i = 0; i < n; i++) {
		struct bench_thread *ti = nth(t, stride, i);

		r->ops += ti->ops;
		r->calls += ti->calls;
		r->fails += ti->fails;
		memmove(all + k, ti->lat, ti->nlat * sizeof(*all));
		k += ti->nlat;
		ti->lat = NULL;
		if (ti->why[0])
			fprintf(stderr, "%s thread %d: %" PRIu64 " failures, "
				"first: %s\n", ph->label, i, ti->fails, ti->why);
	}
	qsort(all, k, sizeof(*all), cmp_u64);
	r->bytes = r->ops * ph->op_bytes;
	r->secs = ph->wall;
	r->rounds = ph->rounds;
	r->gbps = r->secs > 0 ? r->bytes / r->secs / 1e9 : 0;
	r->opsps = r->secs > 0 ? r->ops / r->secs : 0;
	r->p50_us = pct_us(all, k, 0.50);
	r->p99_us = pct_us(all, k, 0.99);
	free(all);
	if (ph->tier)
		r->fails += tier_phase_end(ph->g, ph->tier, &r->t0, &r->t1);
}

void bench_json_result(FILE *f, int indent, const char *name,
		       const struct bench_result *r, int tier, int last)
{
	fprintf(f, "%*s\"%s\": {\"ops\": %" PRIu64 ", \"calls\": %" PRIu64
		", \"bytes\": %" PRIu64 ", \"failures\": %" PRIu64
		", \"seconds\": %.6f, \"rounds\": %d, \"gb_per_s\": %.4f"
		", \"ops_per_s\": %.1f, \"p50_us\": %.2f, \"p99_us\": %.2f",
		indent, "", name, r->ops, r->calls, r->bytes, r->fails, r->secs,
		r->rounds, r->gbps, r->opsps, r->p50_us, r->p99_us);
	if (tier) {
		fprintf(f, ",\n%*s\"tier\": ", indent + 2, "");
		tier_json(f, &r->t0, &r->t1);
	}
	fprintf(f, "}%s\n", last ? "" : ",");
}

int bench_parse_list(const char *s, uint64_t *v, int max)
{
	int n = 0;

	while (*s && n < max) {
		char *end;

		v[n] = strtoull(s, &end, 10);
		if (end == s || !v[n])
			return -1;
		n++;
		if (*end && *end != ',')
			return -1;
		s = *end == ',' ? end + 1 : end;
	}
	return *s ? -1 : n;
}
