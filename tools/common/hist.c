// SPDX-License-Identifier: GPL-2.0
/* Latency histograms read over netlink (hist.h). */
#include <string.h>

#include "hist.h"

static void parse_one(const struct nlattr *nest, struct dfkv_hist_info *h)
{
	const struct nlattr *a;
	size_t len, i;

	memset(h, 0, sizeof(*h));
	mnl_attr_for_each_nested(a, nest) {
		len = mnl_attr_get_payload_len(a);
		switch (mnl_attr_get_type(a)) {
		case DFKV_STAT_HIST_OP:
			if (len == sizeof(uint32_t))
				h->op = mnl_attr_get_u32(a);
			break;
		case DFKV_STAT_HIST_TRANSPORT:
			if (len == sizeof(uint32_t))
				h->transport = mnl_attr_get_u32(a);
			break;
		case DFKV_STAT_HIST_COUNT:
			if (len == sizeof(uint64_t))
				h->count = mnl_attr_get_u64(a);
			break;
		case DFKV_STAT_HIST_SUM_NS:
			if (len == sizeof(uint64_t))
				h->sum_ns = mnl_attr_get_u64(a);
			break;
		case DFKV_STAT_HIST_BUCKETS:
			len /= sizeof(uint64_t);
			if (len > DFKV_HIST_BUCKETS)
				len = DFKV_HIST_BUCKETS;
			for (i = 0; i < len; i++)
				memcpy(&h->buckets[i],
				       (const char *)mnl_attr_get_payload(a) +
				       i * sizeof(uint64_t), sizeof(uint64_t));
			break;
		}
	}
}

void dfkv_latency_parse(const struct nlattr *nest, struct dfkv_latency *lat)
{
	const struct nlattr *one;

	memset(lat, 0, sizeof(*lat));
	mnl_attr_for_each_nested(one, nest) {
		if (mnl_attr_get_type(one) != DFKV_STAT_HIST ||
		    lat->n == DFKV_HIST_MAX)
			continue;
		parse_one(one, &lat->h[lat->n]);
		if (dfkv_hist_op_name(lat->h[lat->n].op))
			lat->n++;
	}
}

const struct dfkv_hist_info *dfkv_latency_find(const struct dfkv_latency *lat,
					       uint32_t op, uint32_t transport)
{
	size_t i;

	for (i = 0; i < lat->n; i++)
		if (lat->h[i].op == op &&
		    (!dfkv_hist_has_transport(op) ||
		     lat->h[i].transport == transport))
			return &lat->h[i];
	return NULL;
}

const char *dfkv_hist_op_name(uint32_t op)
{
	static const char *const names[__DFKV_HIST_OP_MAX] = {
		[DFKV_HIST_GET] = "get", [DFKV_HIST_PUT] = "put",
		[DFKV_HIST_COLD_READ] = "cold_read", [DFKV_HIST_FLUSH] = "flush",
	};

	return op < __DFKV_HIST_OP_MAX ? names[op] : NULL;
}

const char *dfkv_hist_transport_name(uint32_t transport)
{
	static const char *const names[__DFKV_HIST_TRANSPORT_MAX] = {
		[DFKV_HIST_DEV] = "dev", [DFKV_HIST_TCP] = "tcp",
		[DFKV_HIST_RDMA] = "rdma",
	};

	return transport < __DFKV_HIST_TRANSPORT_MAX ? names[transport] : NULL;
}

int dfkv_hist_has_transport(uint32_t op)
{
	return op == DFKV_HIST_GET || op == DFKV_HIST_PUT;
}

uint64_t dfkv_hist_bound_ns(unsigned int i)
{
	return 1ULL << (DFKV_HIST_MIN_SHIFT + i);
}
