/* SPDX-License-Identifier: (GPL-2.0 WITH Linux-syscall-note) OR MIT */
/*
 * libdfkv RDMA rails (rail.c): the choice of a local RDMA device for each
 * request the RDMA transport admits, and the health of each device,
 * apart from verbs so that it can be tested natively.
 *
 * A rail is one local device (rdma.c keeps its verbs).  Every admission
 * takes one credit (a request in flight) on one rail and gives it back
 * when the request is over.  Candidates: the rails on the calling
 * thread's NUMA node, or every rail when the node is unknown or has
 * none.  Among the admissible candidates (not quarantined, not down,
 * under their credit cap) the one with the fewest credits taken wins,
 * ties going round-robin.  When the NUMA-local rails exist but none is
 * admissible, the admission retries once across every rail and counts a
 * NUMA fallback: locality is a preference, never an availability gate.
 *
 * Health is host-local evidence only: a failure of the device, a QP
 * transition, a post or a completion raises the rail's failure streak
 * and quarantines it for quarantine_min_ms << (streak - 1), capped at
 * quarantine_max_ms; a request the rail carried to the end resets the
 * streak.  A port that is not active keeps its rail inadmissible until
 * it is active again.  An unreachable or malformed peer is health.c's.
 */
#ifndef DFKV_LIB_RAIL_H
#define DFKV_LIB_RAIL_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define DFKV_RAIL_MAX	16

struct dfkv_rail {
	int numa;			/* its NUMA node, -1: unknown */
	_Atomic uint32_t credits;	/* requests in flight on it */
	_Atomic uint32_t streak;	/* failures since its last success */
	_Atomic uint64_t until_ms;	/* quarantined until then */
	_Atomic bool down;		/* its port is not active */
	_Atomic uint64_t failures, quarantines, admitted;	/* counters */
};

struct dfkv_rails {
	struct dfkv_rail r[DFKV_RAIL_MAX];
	size_t n;
	uint32_t cap;			/* credits per rail */
	uint64_t quarantine_min_ms, quarantine_max_ms;
	_Atomic uint32_t cursor;	/* where ties start */
	_Atomic uint64_t numa_fallbacks;
};

/*
 * n rails (numa[i] each rail's node), cap credits each, quarantines
 * from min_ms doubling up to max_ms.
 */
void dfkv_rails_init(struct dfkv_rails *rs, size_t n, const int *numa,
		     uint32_t cap, uint64_t min_ms, uint64_t max_ms);
/*
 * Admit one request of a thread on NUMA node node (-1: unknown) at
 * now, never on a rail of skip (bit i: rail i): the rail it takes a
 * credit on, or -1 when no rail is admissible.
 */
int dfkv_rail_admit(struct dfkv_rails *rs, int node, uint32_t skip,
		    uint64_t now);
/* Rail i is neither quarantined at now nor down (credits aside). */
bool dfkv_rail_admissible(struct dfkv_rails *rs, int i, uint64_t now);
/* Give back rail i's credit; carried: the request was carried to the end
 * (its reply came), which ends the rail's failure streak. */
void dfkv_rail_done(struct dfkv_rails *rs, int i, bool carried);
/* Host-local evidence against rail i at now: count it, and quarantine
 * the rail unless it already is. */
void dfkv_rail_failed(struct dfkv_rails *rs, int i, uint64_t now);
/* Rail i's port went down (a failure) or came back up. */
void dfkv_rail_port(struct dfkv_rails *rs, int i, bool up, uint64_t now);

#endif /* DFKV_LIB_RAIL_H */
