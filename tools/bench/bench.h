/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Helpers shared by dfkv's benchmarks (dfkv-bench, dfkv-tcpbench): clocks,
 * value stamps that let every GET be checked byte for byte, and the
 * latency sort.  Each program defines its own STAMP_MAGIC before including
 * this header, so values of one bench never pass as another's.
 */
#ifndef DFKV_BENCH_H
#define DFKV_BENCH_H

#include <stdint.h>
#include <string.h>
#include <time.h>

#ifndef STAMP_MAGIC
#error "define STAMP_MAGIC before including bench.h"
#endif

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

static inline int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

#endif /* DFKV_BENCH_H */
