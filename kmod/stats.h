/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Counters of a node.  They are per-CPU so the data path never shares a
 * cache line; gauges that must be exact (objects, bytes) live in the store
 * and the tenants (tenant.h) as atomics.
 */
#ifndef _DFKV_STATS_H
#define _DFKV_STATS_H

#include <linux/percpu.h>
#include <linux/atomic.h>
#include <linux/dfkv.h>

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
};

struct dfkv_stats {
	struct dfkv_counters __percpu *pcpu;
};

int dfkv_stats_init(struct dfkv_stats *st);
void dfkv_stats_destroy(struct dfkv_stats *st);
void dfkv_stats_snapshot(struct dfkv_stats *st, struct dfkv_counters *snap);

/* Count one finished operation. */
static inline void dfkv_stats_op(struct dfkv_stats *st, unsigned int op,
				 unsigned int status)
{
	if (op < __DFKV_OP_MAX && status < __DFKV_STATUS_MAX)
		this_cpu_inc(st->pcpu->ops[op][status]);
}

#endif /* _DFKV_STATS_H */
