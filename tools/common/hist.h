/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A node's latency histograms (DFKV_STAT_LATENCY, uapi/linux/dfkv.h) as
 * userspace reads them: the decoder of the netlink nest, the names of
 * what each histogram times and its buckets' bounds.  Shared by dfkvctl
 * (stats --latency) and mdsd (/metrics).
 */
#ifndef DFKV_HIST_H
#define DFKV_HIST_H

#include <stdint.h>
#include <libmnl/libmnl.h>
#include <linux/dfkv.h>

/* GET and PUT of each transport, cold reads, flushes. */
#define DFKV_HIST_MAX	16

struct dfkv_hist_info {
	uint32_t op;			/* enum dfkv_hist_op */
	uint32_t transport;		/* enum dfkv_hist_transport */
	uint64_t count, sum_ns;
	uint64_t buckets[DFKV_HIST_BUCKETS];	/* the missing ones are 0 */
};

struct dfkv_latency {
	struct dfkv_hist_info h[DFKV_HIST_MAX];
	size_t n;
};

/* Decode a DFKV_STAT_LATENCY nest into *lat (zeroed first). */
void dfkv_latency_parse(const struct nlattr *nest, struct dfkv_latency *lat);
/* The histogram of op (and transport, for GET and PUT), or NULL. */
const struct dfkv_hist_info *dfkv_latency_find(const struct dfkv_latency *lat,
					       uint32_t op, uint32_t transport);
/* "get", "put", "cold_read", "flush"; NULL for an unknown op. */
const char *dfkv_hist_op_name(uint32_t op);
/* "dev", "tcp", "rdma"; NULL for an unknown one. */
const char *dfkv_hist_transport_name(uint32_t transport);
/* Whether op's histograms are per transport (GET and PUT). */
int dfkv_hist_has_transport(uint32_t op);
/* Upper bound of bucket i (exclusive) in ns; the last bucket has none. */
uint64_t dfkv_hist_bound_ns(unsigned int i);

#endif /* DFKV_HIST_H */
