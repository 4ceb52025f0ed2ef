/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Counters and latency histograms of a node.  They are per-CPU so the data
 * path never shares a cache line or takes a lock; gauges that must be
 * exact (objects, bytes) live in the store and the tenants (tenant.h) as
 * atomics.  A histogram has log2 buckets of nanoseconds (the uapi's
 * DFKV_HIST_*), summed over the CPUs for netlink.
 */
#ifndef _DFKV_STATS_H
#define _DFKV_STATS_H

#include <linux/percpu.h>
#include <linux/atomic.h>
#include <linux/bitops.h>
#include <linux/dfkv.h>

#include "ghost.h"

/* A node's counters: per CPU on the data path, summed for a snapshot. */
struct dfkv_counters {
	u64 ops[__DFKV_OP_MAX][__DFKV_STATUS_MAX];
	u64 bytes_in;
	u64 bytes_out;
	u64 hits;
	u64 misses;
	u64 evictions;
	u64 lease_grants;
	u64 lease_expiries;
	/* RAM tier in front of disks */
	u64 ram_hits;
	u64 ram_misses;
	u64 ram_puts;
	u64 ram_bypasses;
	u64 ram_evictions;
	u64 flushed;
	u64 flush_retries;
	u64 flush_drops;
	u64 promoted;
	u64 coalesced;
	u64 lease_reads;
	/* tenants */
	u64 auth_ok;
	u64 auth_failures;
	u64 forbidden;
	u64 quota_rejections;
	u64 disk_hits;		/* GETs served after a cold read */
	u64 stage_busy;		/* BUSY: the peer held its stage share */
	u64 miss_causes[DFKV_MISS_NR];	/* GET misses by enum dfkv_miss_cause */
};

/* What a histogram times: GET and PUT by transport, cold reads, flushes. */
enum dfkv_lat {
	DFKV_LAT_GET_DEV,
	DFKV_LAT_GET_TCP,
	DFKV_LAT_GET_RDMA,
	DFKV_LAT_PUT_DEV,
	DFKV_LAT_PUT_TCP,
	DFKV_LAT_PUT_RDMA,
	DFKV_LAT_COLD_READ,
	DFKV_LAT_FLUSH,
	DFKV_LAT_NR
};

struct dfkv_hist {
	u64 buckets[DFKV_HIST_BUCKETS];
	u64 sum_ns;
};

struct dfkv_hists {
	struct dfkv_hist h[DFKV_LAT_NR];
};

struct dfkv_stats {
	struct dfkv_counters __percpu *pcpu;
	struct dfkv_hists __percpu *lat;
};

int dfkv_stats_init(struct dfkv_stats *st);
void dfkv_stats_destroy(struct dfkv_stats *st);
void dfkv_stats_snapshot(struct dfkv_stats *st, struct dfkv_counters *snap);
/* One histogram summed over the CPUs; returns its sample count. */
u64 dfkv_stats_hist(struct dfkv_stats *st, enum dfkv_lat kind,
		    struct dfkv_hist *snap);
/* The uapi's op and transport of a histogram. */
void dfkv_stats_hist_id(enum dfkv_lat kind, u32 *op, u32 *transport);
/* The GET or PUT histogram of a transport (enum dfkv_hist_transport). */
enum dfkv_lat dfkv_stats_lat_of(u8 op, u8 transport);

/* Count one finished operation. */
static inline void dfkv_stats_op(struct dfkv_stats *st, unsigned int op,
				 unsigned int status)
{
	if (op < __DFKV_OP_MAX && status < __DFKV_STATUS_MAX)
		this_cpu_inc(st->pcpu->ops[op][status]);
}

/* Time one sample of kind: its log2 bucket and the sum, on this CPU. */
static inline void dfkv_stats_lat(struct dfkv_stats *st, enum dfkv_lat kind,
				  u64 ns)
{
	unsigned int b = fls64(ns >> DFKV_HIST_MIN_SHIFT);

	if (b >= DFKV_HIST_BUCKETS)
		b = DFKV_HIST_BUCKETS - 1;
	this_cpu_inc(st->lat->h[kind].buckets[b]);
	this_cpu_add(st->lat->h[kind].sum_ns, ns);
}

#endif /* _DFKV_STATS_H */
