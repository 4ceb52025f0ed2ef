/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The timed phases of dfkv-bench and dfkv-tcpbench (harness.c): threads
 * that run whole rounds of calls in step (a barrier around every round)
 * until a duration, a call budget or a single round; the latency of each
 * call; the figures of a phase (GB/s, ops/s, p50/p99, failures) and their
 * JSON; on a dfkv node, its counters (RAM tier, disk, zero-copy replies)
 * around the phase.  Also the benches' list options ("64,1024,4096").
 */
#ifndef DFKV_BENCH_HARNESS_H
#define DFKV_BENCH_HARNESS_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "node.h"

/* The figures of one phase, all threads together. */
struct bench_result {
	uint64_t ops, calls, bytes, fails;
	double secs;		/* wall time of the timed rounds */
	double gbps;		/* 1e9 bytes per second */
	double opsps;
	double p50_us, p99_us;	/* per call */
	int rounds;
	struct tier_snap t0, t1;	/* tier: counters around the phase */
};

struct bench_thread;

/* What the threads of a phase do, and when they stop. */
struct bench_phase {
	int phase;		/* the bench's own phase number */
	void *arg;		/* the bench's own (its configuration) */
	uint64_t calls;		/* timed calls per thread and round */
	uint64_t ops_per_call;
	uint64_t op_bytes;	/* value bytes per operation */
	double duration;	/* s of timed rounds (at least one round) */
	uint64_t max_calls;	/* per thread and phase */
	int one_round;		/* stop after the first round */
	/* Timed call i of a round: its failures; *ns is the time it took. */
	uint64_t (*call)(struct bench_thread *t, uint64_t i, uint64_t *ns);
	/* Untimed, after every round (NULL: nothing): its failures. */
	uint64_t (*after_round)(struct bench_thread *t);
	/*
	 * A node with a disk: its dirty bytes are left to reach the disk
	 * before the phase and its counters taken around it; an I/O error,
	 * a dropped flush or a counter that cannot be read is a failure.
	 */
	struct dfkv_genl *g;
	const char *tier;	/* node name, NULL: no counters */
	const char *label;	/* prefix of the failure messages */
	/* The harness's own, while the phase runs: */
	pthread_barrier_t bar;
	int stop, rounds;
	double t0, wall;
};

/* One thread of a bench: the first member of the bench's worker. */
struct bench_thread {
	pthread_t th;
	int tid;
	struct bench_phase *ph;
	uint64_t *lat, nlat;	/* ns per timed call */
	uint64_t ops, calls, fails;
	char why[200];		/* the first failure */
};

#define bench_container_of(ptr, type, member) \
	((type *)((char *)(ptr) - offsetof(type, member)))

/* Record the first failure's message of t (counting is the caller's). */
void bench_why(struct bench_thread *t, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/*
 * Start fn on the n threads at t, t + stride, ... (the bench_thread
 * members of an array of workers) and wait for them; fn gets the thread.
 */
void bench_spawn(struct bench_thread *t, size_t stride, int n,
		 void *(*fn)(void *));
#define BENCH_SPAWN(w, n, fn) bench_spawn(&(w)[0].t, sizeof((w)[0]), n, fn)

/* Run phase ph on those threads; r gets its figures. */
void bench_run(struct bench_phase *ph, struct bench_thread *t, size_t stride,
	       int n, struct bench_result *r);
#define BENCH_RUN(ph, w, n, r) bench_run(ph, &(w)[0].t, sizeof((w)[0]), n, r)

/* r as a JSON member "name": {...}, indented; tier: with the counters. */
void bench_json_result(FILE *f, int indent, const char *name,
		       const struct bench_result *r, int tier, int last);

/* "64,1024": up to max numbers > 0 into v; their count, or -1. */
int bench_parse_list(const char *s, uint64_t *v, int max);

#endif /* DFKV_BENCH_HARNESS_H */
