/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The benches' nodes over netlink (node.c): create one (RAM budget, flags,
 * RAM tier settings, an optional TCP or RDMA listener and an optional
 * disk), delete it, wait for its dirty bytes to reach the disk, and
 * snapshot the RAM tier and disk counters so that a phase can report what
 * it caused.
 */
#ifndef DFKV_BENCH_NODE_H
#define DFKV_BENCH_NODE_H

#include <stdint.h>
#include <stdio.h>

#include "genl.h"

struct bench_node {
	const char *name;
	uint64_t ram;		/* RAM budget, bytes */
	uint32_t flags;		/* enum dfkv_node_flags */
	const char *listen;	/* listener address, NULL: none */
	int port;
	uint32_t transport;	/* the listener's enum dfkv_listener_kind */
	const char *disk;	/* block device, NULL: no disk */
	int format;		/* format the disk (else rebuild from it) */
	uint32_t policy;	/* enum dfkv_tier_policy, 0: node default */
	uint32_t ack;		/* enum dfkv_tier_ack, 0: node default */
	int dirty_pct;		/* -1: node default */
	uint32_t flush_workers;	/* 0: node default */
	/* How a bench uses the node (not sent to the kernel): */
	int reattach;		/* restart it before a cold GET phase */
	uint64_t max_keys;	/* keys per thread at most, 0: no limit */
};

/* The options of dfkv-bench and dfkv-tcpbench that set up their node. */
#define BENCH_NODE_LONGOPTS \
	{ "disk", required_argument, NULL, 'D' }, \
	{ "policy", required_argument, NULL, 'P' }, \
	{ "ack", required_argument, NULL, 'A' }, \
	{ "dirty", required_argument, NULL, 'y' }, \
	{ "evict", no_argument, NULL, 'e' }, \
	{ "disk-only", no_argument, NULL, 'O' }, \
	{ "reattach", no_argument, NULL, 'R' }, \
	{ "max-keys", required_argument, NULL, 'K' }

#define BENCH_NODE_USAGE \
"  --max-keys N     at most N keys per thread (default: no limit)\n" \
"  --evict          evict by recency when RAM is full (default: off)\n" \
"  --disk-only      a node without a RAM tier (with --disk: every PUT\n" \
"                   answered once durable, every GET from the disk)\n" \
"  --disk PATH      give the node this block device, formatted (its\n" \
"                   content is lost), behind the RAM budget\n" \
"  --policy P       with --disk: writeback (default) or writearound\n" \
"  --ack A          with --disk: ram (default) or disk\n" \
"  --dirty PCT      with --disk: dirty watermark (node default 80)\n" \
"  --reattach       with --disk: restart the node (node del, node add,\n" \
"                   disk add) between storing the keys and the GET\n" \
"                   phase, so GET reads cold blocks; GET runs one round\n"

/* Apply option opt of BENCH_NODE_LONGOPTS to n: 0, or -1 (not one, bad). */
int bench_node_opt(struct bench_node *n, int opt, const char *arg);

/*
 * RAM tier and disk counters of a node (its disks summed), and its TCP
 * listener's zero-copy GET replies: lent to the socket, of those copied
 * by the stack, and sent by copy because a lend bound was reached.
 */
enum {
	TS_RAM_HITS, TS_RAM_MISSES, TS_RAM_PUTS, TS_RAM_BYPASSES,
	TS_RAM_EVICTIONS, TS_FLUSHED, TS_FLUSH_DROPS, TS_PROMOTED,
	TS_COALESCED, TS_DISK_READS, TS_DISK_WRITES, TS_DISK_READ_BYTES,
	TS_DISK_WRITE_BYTES, TS_DISK_RECORD_WRITES, TS_DISK_IO_ERRORS,
	TS_TCP_ZC_REPLIES, TS_TCP_ZC_COPIED, TS_TCP_ZC_CAPPED,
	TS_DIRTY_BYTES, TS_OBJECTS, TS_REBUILD_RECORDS, TS_REBUILD_REJECTED,
	TS_REBUILD_MS, NR_TS
};

struct tier_snap {
	uint64_t v[NR_TS];
};

/* 0 or -errno; g->errmsg has the kernel's text.  Undoes nothing. */
int bench_node_add(struct dfkv_genl *g, const struct bench_node *n);
int bench_node_del(struct dfkv_genl *g, const char *name);
/*
 * Restart node n gracefully (node del, then node add and disk add without
 * format): its disk's blocks are rebuilt from the records and all of them
 * are cold (on disk only).  Files bound to the node must be reopened.
 */
int bench_node_reattach(struct dfkv_genl *g, const struct bench_node *n);
/* Settings of n in words, e.g. "RAM 64 MiB, writeback, ack disk". */
const char *bench_node_desc(const struct bench_node *n, char *buf,
			    size_t len);

int tier_snap(struct dfkv_genl *g, const char *name, struct tier_snap *s);
/* Wait (up to secs) until the node holds no dirty byte; 0 or -ETIMEDOUT. */
int tier_wait_clean(struct dfkv_genl *g, const char *name, double secs);
/*
 * Around a timed phase on a node with a disk: begin waits (up to secs, so
 * the phase does not pay for earlier PUTs) until no dirty byte is left,
 * then takes the counters; end takes them again.  Both return how many
 * failures they saw: a counter that cannot be read, dirty bytes left, and
 * (end) disk I/O errors or dropped flushes during the phase.
 */
uint64_t tier_phase_begin(struct dfkv_genl *g, const char *name, double secs,
			  struct tier_snap *t0);
uint64_t tier_phase_end(struct dfkv_genl *g, const char *name,
			const struct tier_snap *t0, struct tier_snap *t1);
/* Print the counters' growth from a to b as a JSON object. */
void tier_json(FILE *f, const struct tier_snap *a, const struct tier_snap *b);

#endif /* DFKV_BENCH_NODE_H */
