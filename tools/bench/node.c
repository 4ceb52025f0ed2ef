// SPDX-License-Identifier: GPL-2.0
/*
 * The benches' nodes over netlink: see node.h.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "node.h"

int bench_node_add(struct dfkv_genl *g, const struct bench_node *n)
{
	char buf[MNL_SOCKET_BUFFER_SIZE];
	struct nlmsghdr *nlh = dfkv_genl_msg(g, buf, DFKV_CMD_NODE_NEW, 0);
	int err;

	mnl_attr_put_strz(nlh, DFKV_A_NODE_NAME, n->name);
	mnl_attr_put_u64(nlh, DFKV_A_NODE_RAM_BYTES, n->ram);
	mnl_attr_put_u32(nlh, DFKV_A_NODE_FLAGS, n->flags);
	if (n->policy)
		mnl_attr_put_u32(nlh, DFKV_A_NODE_TIER_POLICY, n->policy);
	if (n->ack)
		mnl_attr_put_u32(nlh, DFKV_A_NODE_TIER_ACK, n->ack);
	if (n->dirty_pct >= 0)
		mnl_attr_put_u32(nlh, DFKV_A_NODE_DIRTY_PCT, n->dirty_pct);
	if (n->flush_workers)
		mnl_attr_put_u32(nlh, DFKV_A_NODE_FLUSH_WORKERS, n->flush_workers);
	err = dfkv_genl_talk(g, nlh, NULL, NULL);
	if (err || !n->listen)
		goto disk;
	nlh = dfkv_genl_msg(g, buf, DFKV_CMD_LISTENER_ADD, 0);
	mnl_attr_put_strz(nlh, DFKV_A_NODE_NAME, n->name);
	mnl_attr_put_strz(nlh, DFKV_A_LISTEN_ADDR, n->listen);
	mnl_attr_put_u16(nlh, DFKV_A_LISTEN_PORT, n->port);
	if (n->transport)
		mnl_attr_put_u32(nlh, DFKV_A_LISTEN_TRANSPORT, n->transport);
	err = dfkv_genl_talk(g, nlh, NULL, NULL);
disk:
	if (err || !n->disk)
		return err;
	nlh = dfkv_genl_msg(g, buf, DFKV_CMD_DISK_ADD, 0);
	mnl_attr_put_strz(nlh, DFKV_A_NODE_NAME, n->name);
	mnl_attr_put_strz(nlh, DFKV_A_DISK_PATH, n->disk);
	if (n->format)
		mnl_attr_put(nlh, DFKV_A_DISK_FORMAT, 0, NULL);
	return dfkv_genl_talk(g, nlh, NULL, NULL);
}

int bench_node_del(struct dfkv_genl *g, const char *name)
{
	char buf[MNL_SOCKET_BUFFER_SIZE];
	struct nlmsghdr *nlh = dfkv_genl_msg(g, buf, DFKV_CMD_NODE_DEL, 0);

	mnl_attr_put_strz(nlh, DFKV_A_NODE_NAME, name);
	return dfkv_genl_talk(g, nlh, NULL, NULL);
}

int bench_node_reattach(struct dfkv_genl *g, const struct bench_node *n)
{
	struct bench_node again = *n;
	int err = bench_node_del(g, n->name);

	if (err)
		return err;
	again.format = 0;
	return bench_node_add(g, &again);
}

const char *bench_node_desc(const struct bench_node *n, char *buf,
			    size_t len)
{
	char dirty[32] = "";

	if (n->dirty_pct >= 0)
		snprintf(dirty, sizeof(dirty), ", dirty %d%%", n->dirty_pct);
	if (!n->disk)
		snprintf(buf, len, "RAM %" PRIu64 " MiB, no disk", n->ram >> 20);
	else if (n->flags & DFKV_NODE_F_DISK_ONLY)
		snprintf(buf, len, "disk-only, disk %s, %" PRIu64
			 " MiB in flight at most", n->disk, n->ram >> 20);
	else
		snprintf(buf, len, "RAM %" PRIu64 " MiB, disk %s, %s, ack %s%s%s",
			 n->ram >> 20, n->disk,
			 n->policy == DFKV_TIER_WRITEAROUND ? "writearound" :
			 "writeback", n->ack == DFKV_ACK_DISK ? "disk" : "ram",
			 dirty, n->flags & DFKV_NODE_F_EVICT ? ", evict" : "");
	return buf;
}

int bench_node_opt(struct bench_node *n, int opt, const char *arg)
{
	switch (opt) {
	case 'D': n->disk = arg; break;
	case 'P':
		if (!strcmp(arg, "writeback"))
			n->policy = DFKV_TIER_WRITEBACK;
		else if (!strcmp(arg, "writearound"))
			n->policy = DFKV_TIER_WRITEAROUND;
		else
			return -1;
		break;
	case 'A':
		if (!strcmp(arg, "ram"))
			n->ack = DFKV_ACK_RAM;
		else if (!strcmp(arg, "disk"))
			n->ack = DFKV_ACK_DISK;
		else
			return -1;
		break;
	case 'y': n->dirty_pct = atoi(arg); break;
	case 'e': n->flags |= DFKV_NODE_F_EVICT; break;
	case 'O': n->flags |= DFKV_NODE_F_DISK_ONLY; break;
	case 'R': n->reattach = 1; break;
	case 'K': n->max_keys = strtoull(arg, NULL, 10); break;
	default: return -1;
	}
	return 0;
}

/* ------------------------------------------------------------ counters */

static const uint16_t ts_stat[NR_TS] = {
	[TS_RAM_HITS] = DFKV_STAT_RAM_HITS,
	[TS_RAM_MISSES] = DFKV_STAT_RAM_MISSES,
	[TS_RAM_PUTS] = DFKV_STAT_RAM_PUTS,
	[TS_RAM_BYPASSES] = DFKV_STAT_RAM_BYPASSES,
	[TS_RAM_EVICTIONS] = DFKV_STAT_RAM_EVICTIONS,
	[TS_FLUSHED] = DFKV_STAT_FLUSHED,
	[TS_FLUSH_DROPS] = DFKV_STAT_FLUSH_DROPS,
	[TS_PROMOTED] = DFKV_STAT_PROMOTED,
	[TS_COALESCED] = DFKV_STAT_COALESCED,
	[TS_DISK_READS] = DFKV_STAT_DISK_READS,
	[TS_DISK_WRITES] = DFKV_STAT_DISK_WRITES,
	[TS_DISK_READ_BYTES] = DFKV_STAT_DISK_READ_BYTES,
	[TS_DISK_WRITE_BYTES] = DFKV_STAT_DISK_WRITE_BYTES,
	[TS_DISK_RECORD_WRITES] = DFKV_STAT_DISK_RECORD_WRITES,
	[TS_DISK_IO_ERRORS] = DFKV_STAT_DISK_IO_ERRORS,
	[TS_TCP_ZC_REPLIES] = DFKV_STAT_TCP_ZC_REPLIES,
	[TS_TCP_ZC_COPIED] = DFKV_STAT_TCP_ZC_COPIED,
	[TS_TCP_ZC_CAPPED] = DFKV_STAT_TCP_ZC_CAPPED,
	[TS_DIRTY_BYTES] = DFKV_STAT_DIRTY_BYTES,
	[TS_OBJECTS] = DFKV_STAT_OBJECTS,
	[TS_REBUILD_RECORDS] = DFKV_STAT_REBUILD_RECORDS,
	[TS_REBUILD_REJECTED] = DFKV_STAT_REBUILD_REJECTED,
	[TS_REBUILD_MS] = DFKV_STAT_REBUILD_MS,
};

static const char *const ts_name[NR_TS] = {
	"ram_hits", "ram_misses", "ram_puts", "ram_bypasses", "ram_evictions",
	"flushed", "flush_drops", "promoted", "coalesced", "disk_reads",
	"disk_writes", "disk_read_bytes", "disk_write_bytes",
	"disk_record_writes", "disk_io_errors", "tcp_zc_replies",
	"tcp_zc_copied", "tcp_zc_capped", "dirty_bytes", "objects",
	"rebuild_records", "rebuild_rejected", "rebuild_ms",
};

/* Gauges and per-attach figures: reported as they are, not as growth. */
static int ts_gauge(int i)
{
	return i >= TS_DIRTY_BYTES;
}

struct snap_ctx {
	struct tier_snap *s;
	int disk;		/* parsing DISK_GET replies */
};

static int snap_cb(const struct nlmsghdr *nlh, void *data)
{
	struct snap_ctx *c = data;
	const struct nlattr *tb[DFKV_A_MAX + 1] = { NULL };
	const struct nlattr *st[DFKV_STAT_MAX + 1] = { NULL };
	const struct nlattr *nest;
	int i;

	if (dfkv_genl_parse(nlh, tb) < 0)
		return MNL_CB_ERROR;
	nest = tb[c->disk ? DFKV_A_DISK_STATS : DFKV_A_NODE_STATS];
	if (!nest || dfkv_genl_parse_stats(nest, st) < 0)
		return MNL_CB_OK;
	for (i = 0; i < NR_TS; i++) {
		/* Node counters from the node, disk counters from its disks. */
		int disk_stat = i >= TS_DISK_READS && i <= TS_DISK_IO_ERRORS;

		disk_stat |= i >= TS_REBUILD_RECORDS;
		if (disk_stat == c->disk && st[ts_stat[i]])
			c->s->v[i] += mnl_attr_get_u64(st[ts_stat[i]]);
	}
	return MNL_CB_OK;
}

int tier_snap(struct dfkv_genl *g, const char *name, struct tier_snap *s)
{
	char buf[MNL_SOCKET_BUFFER_SIZE];
	struct snap_ctx c = { .s = s };
	struct nlmsghdr *nlh;
	int err;

	memset(s, 0, sizeof(*s));
	nlh = dfkv_genl_msg(g, buf, DFKV_CMD_NODE_GET, 0);
	mnl_attr_put_strz(nlh, DFKV_A_NODE_NAME, name);
	err = dfkv_genl_talk(g, nlh, snap_cb, &c);
	if (err)
		return err;
	c.disk = 1;
	nlh = dfkv_genl_msg(g, buf, DFKV_CMD_DISK_GET, NLM_F_DUMP);
	mnl_attr_put_strz(nlh, DFKV_A_NODE_NAME, name);
	return dfkv_genl_talk(g, nlh, snap_cb, &c);
}

int tier_wait_clean(struct dfkv_genl *g, const char *name, double secs)
{
	struct timespec ts = { .tv_nsec = 20 * 1000 * 1000 };
	struct tier_snap s;
	int i;

	for (i = 0; i <= (int)(secs * 50); i++) {
		if (tier_snap(g, name, &s))
			return -EIO;
		if (!s.v[TS_DIRTY_BYTES])
			return 0;
		nanosleep(&ts, NULL);
	}
	return -ETIMEDOUT;
}

uint64_t tier_phase_begin(struct dfkv_genl *g, const char *name, double secs,
			  struct tier_snap *t0)
{
	uint64_t bad = 0;

	if (tier_wait_clean(g, name, secs)) {
		fprintf(stderr, "bench: node %s: dirty bytes still in RAM after "
			"%.0f s\n", name, secs);
		bad++;
	}
	if (tier_snap(g, name, t0))
		bad++;
	return bad;
}

uint64_t tier_phase_end(struct dfkv_genl *g, const char *name,
			const struct tier_snap *t0, struct tier_snap *t1)
{
	uint64_t bad = 0;

	if (tier_snap(g, name, t1))
		return 1;
	bad += t1->v[TS_DISK_IO_ERRORS] - t0->v[TS_DISK_IO_ERRORS];
	bad += t1->v[TS_FLUSH_DROPS] - t0->v[TS_FLUSH_DROPS];
	if (bad)
		fprintf(stderr, "bench: node %s: %" PRIu64 " disk I/O error(s) "
			"or dropped flush(es)\n", name, bad);
	return bad;
}

void tier_json(FILE *f, const struct tier_snap *a, const struct tier_snap *b)
{
	int i;

	fprintf(f, "{");
	for (i = 0; i < NR_TS; i++)
		fprintf(f, "%s\"%s\": %" PRIu64, i ? ", " : "", ts_name[i],
			ts_gauge(i) ? b->v[i] : b->v[i] - a->v[i]);
	fprintf(f, "}");
}
