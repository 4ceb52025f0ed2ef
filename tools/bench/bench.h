/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Helpers shared by dfkv's benchmarks: clocks, and value stamps that let
 * every GET be checked byte for byte.  A program that stamps values
 * defines its own STAMP_MAGIC before including this header, so values of
 * one bench never pass as another's.
 */
#ifndef DFKV_BENCH_H
#define DFKV_BENCH_H

#include <stdint.h>
#include <string.h>
#include <time.h>

static inline double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static inline uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

#ifdef STAMP_MAGIC
static inline uint64_t stamp_of(int tid, uint64_t idx)
{
	return STAMP_MAGIC ^ ((uint64_t)tid << 48) ^ (idx * 0x9e3779b97f4a7c15ULL);
}

static inline void stamp_put(void *buf, uint64_t size, uint64_t s)
{
	memcpy(buf, &s, sizeof(s));
	memcpy((char *)buf + size - sizeof(s), &s, sizeof(s));
}

static inline int stamp_ok(const void *buf, uint64_t size, uint64_t s)
{
	uint64_t a, b;

	memcpy(&a, buf, sizeof(a));
	memcpy(&b, (const char *)buf + size - sizeof(b), sizeof(b));
	return a == s && b == s;
}

#endif /* STAMP_MAGIC */

#endif /* DFKV_BENCH_H */
