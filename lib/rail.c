// SPDX-License-Identifier: (GPL-2.0 WITH Linux-syscall-note) OR MIT
/*
 * libdfkv RDMA rails (see rail.h): admission by NUMA locality and
 * credits, the failure streak and the quarantine of each rail.
 */
#include "rail.h"

void dfkv_rails_init(struct dfkv_rails *rs, size_t n, const int *numa,
		     uint32_t cap, uint64_t min_ms, uint64_t max_ms)
{
	rs->n = n < DFKV_RAIL_MAX ? n : DFKV_RAIL_MAX;
	for (size_t i = 0; i < rs->n; i++)
		rs->r[i].numa = numa[i];
	rs->cap = cap;
	rs->quarantine_min_ms = min_ms;
	rs->quarantine_max_ms = max_ms;
}

bool dfkv_rail_admissible(struct dfkv_rails *rs, int i, uint64_t now)
{
	return !atomic_load(&rs->r[i].down) &&
	       now >= atomic_load(&rs->r[i].until_ms);
}

/* Take a credit on the least loaded admissible rail of those local
 * (on node, or any when local is false); -1 when none took it. */
static int take(struct dfkv_rails *rs, bool local, int node, uint32_t skip,
		uint64_t now)
{
	uint32_t start = atomic_fetch_add(&rs->cursor, 1);

	for (;;) {
		int best = -1;
		uint32_t least = rs->cap;

		for (size_t k = 0; k < rs->n; k++) {
			int i = (int)((start + k) % rs->n);
			struct dfkv_rail *r = &rs->r[i];
			uint32_t cr = atomic_load(&r->credits);

			if ((skip >> i & 1) || (local && r->numa != node) ||
			    !dfkv_rail_admissible(rs, i, now) || cr >= least)
				continue;
			best = i;
			least = cr;
		}
		if (best < 0)
			return -1;
		/* another thread may have taken it meanwhile: look again */
		if (atomic_compare_exchange_strong(&rs->r[best].credits,
						   &least, least + 1)) {
			atomic_fetch_add(&rs->r[best].admitted, 1);
			return best;
		}
	}
}

int dfkv_rail_admit(struct dfkv_rails *rs, int node, uint32_t skip,
		    uint64_t now)
{
	bool any_local = false;
	int i;

	for (size_t k = 0; node >= 0 && k < rs->n; k++)
		any_local |= !(skip >> k & 1) && rs->r[k].numa == node;
	if (!any_local)
		return take(rs, false, node, skip, now);
	i = take(rs, true, node, skip, now);
	if (i >= 0)
		return i;
	i = take(rs, false, node, skip, now);
	if (i >= 0)
		atomic_fetch_add(&rs->numa_fallbacks, 1);
	return i;
}

void dfkv_rail_done(struct dfkv_rails *rs, int i, bool carried)
{
	atomic_fetch_sub(&rs->r[i].credits, 1);
	if (carried)
		atomic_store(&rs->r[i].streak, 0);
}

void dfkv_rail_failed(struct dfkv_rails *rs, int i, uint64_t now)
{
	struct dfkv_rail *r = &rs->r[i];
	uint64_t until = atomic_load(&r->until_ms), ms;
	uint32_t s;

	atomic_fetch_add(&r->failures, 1);
	/* one quarantine for the failures it already answers */
	if (now < until ||
	    !atomic_compare_exchange_strong(&r->until_ms, &until, now + 1))
		return;
	s = atomic_fetch_add(&r->streak, 1);
	ms = s < 32 ? rs->quarantine_min_ms << s : rs->quarantine_max_ms;
	if (ms > rs->quarantine_max_ms)
		ms = rs->quarantine_max_ms;
	atomic_store(&r->until_ms, now + ms);
	atomic_fetch_add(&r->quarantines, 1);
}

void dfkv_rail_port(struct dfkv_rails *rs, int i, bool up, uint64_t now)
{
	bool was_down = atomic_exchange(&rs->r[i].down, !up);

	if (!up && !was_down)
		dfkv_rail_failed(rs, i, now);
}
