// SPDX-License-Identifier: GPL-2.0
/* Node counters: per-CPU, summed on demand. */
#include <linux/slab.h>
#include <linux/string.h>

#include "stats.h"

int dfkv_stats_init(struct dfkv_stats *st)
{
	st->pcpu = alloc_percpu(struct dfkv_counters);
	return st->pcpu ? 0 : -ENOMEM;
}

void dfkv_stats_destroy(struct dfkv_stats *st)
{
	free_percpu(st->pcpu);
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
	}
}
