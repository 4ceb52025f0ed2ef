// SPDX-License-Identifier: GPL-2.0
/* Node counters and latency histograms: per-CPU, summed on demand. */
#include <linux/slab.h>
#include <linux/string.h>

#include "stats.h"

int dfkv_stats_init(struct dfkv_stats *st)
{
	st->pcpu = alloc_percpu(struct dfkv_counters);
	if (!st->pcpu)
		return -ENOMEM;
	st->lat = alloc_percpu(struct dfkv_hists);
	if (!st->lat) {
		free_percpu(st->pcpu);
		st->pcpu = NULL;
		return -ENOMEM;
	}
	return 0;
}

void dfkv_stats_destroy(struct dfkv_stats *st)
{
	free_percpu(st->lat);
	free_percpu(st->pcpu);
}

u64 dfkv_stats_hist(struct dfkv_stats *st, enum dfkv_lat kind,
		    struct dfkv_hist *snap)
{
	u64 count = 0;
	int cpu, i;

	memset(snap, 0, sizeof(*snap));
	for_each_possible_cpu(cpu) {
		const struct dfkv_hist *h = &per_cpu_ptr(st->lat, cpu)->h[kind];

		for (i = 0; i < DFKV_HIST_BUCKETS; i++)
			snap->buckets[i] += READ_ONCE(h->buckets[i]);
		snap->sum_ns += READ_ONCE(h->sum_ns);
	}
	for (i = 0; i < DFKV_HIST_BUCKETS; i++)
		count += snap->buckets[i];
	return count;
}

static const struct {
	u8 op, transport;
} lat_ids[DFKV_LAT_NR] = {
	[DFKV_LAT_GET_DEV] = { DFKV_HIST_GET, DFKV_HIST_DEV },
	[DFKV_LAT_GET_TCP] = { DFKV_HIST_GET, DFKV_HIST_TCP },
	[DFKV_LAT_GET_RDMA] = { DFKV_HIST_GET, DFKV_HIST_RDMA },
	[DFKV_LAT_PUT_DEV] = { DFKV_HIST_PUT, DFKV_HIST_DEV },
	[DFKV_LAT_PUT_TCP] = { DFKV_HIST_PUT, DFKV_HIST_TCP },
	[DFKV_LAT_PUT_RDMA] = { DFKV_HIST_PUT, DFKV_HIST_RDMA },
	[DFKV_LAT_COLD_READ] = { DFKV_HIST_COLD_READ, DFKV_HIST_DEV },
	[DFKV_LAT_FLUSH] = { DFKV_HIST_FLUSH, DFKV_HIST_DEV },
};

void dfkv_stats_hist_id(enum dfkv_lat kind, u32 *op, u32 *transport)
{
	*op = lat_ids[kind].op;
	*transport = lat_ids[kind].transport;
}

enum dfkv_lat dfkv_stats_lat_of(u8 op, u8 transport)
{
	enum dfkv_lat base = op == DFKV_OP_GET ? DFKV_LAT_GET_DEV :
					       DFKV_LAT_PUT_DEV;

	return transport < __DFKV_HIST_TRANSPORT_MAX ? base + transport : base;
}

void dfkv_stats_snapshot(struct dfkv_stats *st, struct dfkv_counters *snap)
{
	int cpu, i, j;

	memset(snap, 0, sizeof(*snap));
	for_each_possible_cpu(cpu) {
		const struct dfkv_counters *p = per_cpu_ptr(st->pcpu, cpu);

		for (i = 0; i < __DFKV_OP_MAX; i++)
			for (j = 0; j < __DFKV_STATUS_MAX; j++)
				snap->ops[i][j] += READ_ONCE(p->ops[i][j]);
		snap->bytes_in += READ_ONCE(p->bytes_in);
		snap->bytes_out += READ_ONCE(p->bytes_out);
		snap->hits += READ_ONCE(p->hits);
		snap->misses += READ_ONCE(p->misses);
		snap->evictions += READ_ONCE(p->evictions);
		snap->lease_grants += READ_ONCE(p->lease_grants);
		snap->lease_expiries += READ_ONCE(p->lease_expiries);
		snap->ram_hits += READ_ONCE(p->ram_hits);
		snap->ram_misses += READ_ONCE(p->ram_misses);
		snap->ram_puts += READ_ONCE(p->ram_puts);
		snap->ram_bypasses += READ_ONCE(p->ram_bypasses);
		snap->ram_evictions += READ_ONCE(p->ram_evictions);
		snap->flushed += READ_ONCE(p->flushed);
		snap->flush_retries += READ_ONCE(p->flush_retries);
		snap->flush_drops += READ_ONCE(p->flush_drops);
		snap->promoted += READ_ONCE(p->promoted);
		snap->coalesced += READ_ONCE(p->coalesced);
		snap->lease_reads += READ_ONCE(p->lease_reads);
		snap->auth_ok += READ_ONCE(p->auth_ok);
		snap->auth_failures += READ_ONCE(p->auth_failures);
		snap->forbidden += READ_ONCE(p->forbidden);
		snap->quota_rejections += READ_ONCE(p->quota_rejections);
		snap->disk_hits += READ_ONCE(p->disk_hits);
		snap->stage_busy += READ_ONCE(p->stage_busy);
		for (i = 0; i < DFKV_MISS_NR; i++)
			snap->miss_causes[i] += READ_ONCE(p->miss_causes[i]);
	}
}
