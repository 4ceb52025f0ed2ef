// SPDX-License-Identifier: GPL-2.0
/*
 * dfkv-rebuild: how long a node takes to come back with its disk's blocks.
 *
 * Creates node "dfkv-rebuild" with the block device --disk (formatted; its
 * content is lost) behind --ram of RAM, stores --blocks values of --size
 * KiB through /dev/dfkv (--threads writers; the node acknowledges each PUT
 * after its disk commit, so the fill ends with every block durable), then
 * restarts the node gracefully:
 *
 *   node del               flushes and marks the disk clean (timed)
 *   node add + disk add    the disk add rebuilds the index from the
 *                          records in one pass (timed)
 *
 * and reads the disk's rebuild counters (records accepted and rejected,
 * REBUILD_MS as the kernel measured it) and the node's object count.
 * Every --verify'th block is then read back and checked byte for byte
 * (stamps in head and tail, as in dfkv-bench).  Failures: a PUT or GET
 * that fails, other bytes, fewer restored records or objects than blocks
 * stored, a rejected record.  The JSON is written in any case; the exit
 * status is 1 if anything failed, 2 on a setup error.
 *
 * usage: dfkv-rebuild --disk PATH [options] JSON_PATH
 *        dfkv-rebuild --cleanup
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "genl.h"
#include "node.h"
#include "ioc.h"

#define NODE_NAME	"dfkv-rebuild"
#define TENANT		0xbe4c000000000002ULL
#define STAMP_MAGIC	0x6466b76265e4c003ULL
#include "bench.h"
#define MIB		((uint64_t)1024 * 1024)

static struct {
	uint64_t blocks, size, verify;
	int threads;
	const char *json;
	struct bench_node node;
} o = {
	.blocks = 100000,
	.size = 4096,
	.verify = 100,
	.threads = 4,
	.node = { .name = NODE_NAME, .ram = 256 * MIB, .dirty_pct = -1,
		  .flags = DFKV_NODE_F_EVICT, .ack = DFKV_ACK_DISK, .format = 1 },
};

struct filler {
	pthread_t th;
	int tid;
	uint64_t fails;
};

static void *fill_main(void *arg)
{
	struct filler *f = arg;
	void *buf = malloc(o.size);
	int fd = ioc_open(NODE_NAME);
	uint64_t i;

	if (!buf || fd < 0) {
		f->fails = o.blocks;
		free(buf);
		return NULL;
	}
	memset(buf, 0x5a, o.size);
	for (i = f->tid; i < o.blocks; i += o.threads) {
		struct dfkv_key k = bench_key(TENANT, 0, i);

		stamp_put(buf, o.size, stamp_of(0, i));
		if (!ioc_put(fd, &k, buf, o.size) && !f->fails++)
			fprintf(stderr, "dfkv-rebuild: PUT of block %" PRIu64
				" failed\n", i);
	}
	close(fd);
	free(buf);
	return NULL;
}

static uint64_t fill(void)
{
	struct filler *f = calloc(o.threads, sizeof(*f));
	uint64_t fails = 0;
	int t;

	if (!f)
		exit(2);
	for (t = 0; t < o.threads; t++) {
		f[t].tid = t;
		if (pthread_create(&f[t].th, NULL, fill_main, &f[t]))
			exit(2);
	}
	for (t = 0; t < o.threads; t++) {
		pthread_join(f[t].th, NULL);
		fails += f[t].fails;
	}
	free(f);
	return fails;
}

/* Read every o.verify'th block back; returns (checked, failures). */
static uint64_t verify(uint64_t *checked)
{
	void *buf = malloc(o.size);
	int fd = ioc_open(NODE_NAME);
	uint64_t i, fails = 0;

	*checked = 0;
	if (!buf || fd < 0) {
		free(buf);
		return 1;
	}
	for (i = 0; i < o.blocks; i += o.verify) {
		struct dfkv_key k = bench_key(TENANT, 0, i);

		(*checked)++;
		if (!ioc_get(fd, &k, buf, o.size) ||
		    !stamp_ok(buf, o.size, stamp_of(0, i))) {
			if (!fails++)
				fprintf(stderr, "dfkv-rebuild: block %" PRIu64
					" did not read back as stored\n", i);
		}
	}
	close(fd);
	free(buf);
	return fails;
}

static void usage(FILE *f)
{
	fprintf(f,
"usage: dfkv-rebuild --disk PATH [options] JSON_PATH\n"
"       dfkv-rebuild --cleanup\n"
"\n"
"Fill a node's disk with blocks, restart the node (node del, node add,\n"
"disk add) and report the rebuild: time, records, objects; read a sample\n"
"back.  The device is formatted: everything on it is lost.\n"
"\n"
"  --disk PATH      block device (required)\n"
"  --blocks N       blocks to store (default 100000)\n"
"  --size KiB       value size (default 4, the smallest disk slot)\n"
"  --threads N      writers (default 4)\n"
"  --ram MiB        node RAM budget (default 256)\n"
"  --verify N       read back every N-th block (default 100)\n"
"  --flush-workers N  the node's flush workers (default: the node's)\n"
"  --cleanup        delete the node if it exists, then exit\n");
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "disk", required_argument, NULL, 'D' },
		{ "blocks", required_argument, NULL, 'n' },
		{ "size", required_argument, NULL, 's' },
		{ "threads", required_argument, NULL, 't' },
		{ "ram", required_argument, NULL, 'r' },
		{ "verify", required_argument, NULL, 'v' },
		{ "flush-workers", required_argument, NULL, 'w' },
		{ "cleanup", no_argument, NULL, 'c' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 }
	};
	struct tier_snap s;
	struct dfkv_genl g;
	uint64_t fails = 0, put_fails, get_fails, checked = 0, objects;
	double t0, fill_s, del_ms, add_ms;
	int opt, err, cleanup = 0;
	FILE *f;

	while ((opt = getopt_long(argc, argv, "h", lo, NULL)) != -1) {
		switch (opt) {
		case 'D': o.node.disk = optarg; break;
		case 'n': o.blocks = strtoull(optarg, NULL, 10); break;
		case 's': o.size = strtoull(optarg, NULL, 10) * 1024; break;
		case 't': o.threads = atoi(optarg); break;
		case 'r': o.node.ram = strtoull(optarg, NULL, 10) * MIB; break;
		case 'v': o.verify = strtoull(optarg, NULL, 10); break;
		case 'w': o.node.flush_workers = atoi(optarg); break;
		case 'c': cleanup = 1; break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (!cleanup && (optind + 1 != argc || !o.node.disk || !o.blocks ||
			 o.size < 16 || o.threads < 1 || !o.verify)) {
		usage(stderr);
		return 2;
	}
	err = dfkv_genl_open(&g);
	if (err) {
		fprintf(stderr, "dfkv-rebuild: netlink family dfkv: %s\n",
			strerror(-err));
		return 2;
	}
	if (cleanup) {
		err = bench_node_del(&g, NODE_NAME);
		dfkv_genl_close(&g);
		return err && err != -ENOENT && err != -ENODEV ? 1 : 0;
	}
	o.json = argv[optind];

	err = bench_node_add(&g, &o.node);
	if (err)
		goto setup;
	fprintf(stderr, "dfkv-rebuild: storing %" PRIu64 " blocks of %" PRIu64
		" bytes with %d writers\n", o.blocks, o.size, o.threads);
	t0 = now();
	put_fails = fill();
	fill_s = now() - t0;

	t0 = now();
	err = bench_node_del(&g, NODE_NAME);
	del_ms = (now() - t0) * 1e3;
	if (err)
		goto setup;
	o.node.format = 0;
	t0 = now();
	err = bench_node_add(&g, &o.node);
	add_ms = (now() - t0) * 1e3;
	if (!err)
		err = tier_snap(&g, NODE_NAME, &s);
	if (err)
		goto setup;
	objects = s.v[TS_OBJECTS];
	get_fails = verify(&checked);

	fails = put_fails + get_fails + s.v[TS_REBUILD_REJECTED];
	if (s.v[TS_REBUILD_RECORDS] < o.blocks)
		fails += o.blocks - s.v[TS_REBUILD_RECORDS];
	if (objects != o.blocks)
		fails++;
	printf("rebuild: %" PRIu64 " blocks of %" PRIu64 " bytes (filled in "
	       "%.1f s, %.0f blocks/s); node del %.0f ms; node add + disk add "
	       "%.0f ms; REBUILD_MS %" PRIu64 ", %" PRIu64 " records, %" PRIu64
	       " rejected, %" PRIu64 " objects; %" PRIu64 " read back, %" PRIu64
	       " failure(s)\n", o.blocks, o.size, fill_s, o.blocks / fill_s,
	       del_ms, add_ms, s.v[TS_REBUILD_MS], s.v[TS_REBUILD_RECORDS],
	       s.v[TS_REBUILD_REJECTED], objects, checked, fails);
	err = bench_node_del(&g, NODE_NAME);
	if (err)
		goto setup;
	dfkv_genl_close(&g);

	f = fopen(o.json, "w");
	if (!f) {
		fprintf(stderr, "dfkv-rebuild: %s: %s\n", o.json, strerror(errno));
		return 2;
	}
	fprintf(f, "{\"bench\": \"dfkv-rebuild\", \"disk\": \"%s\", \"blocks\": %"
		PRIu64 ", \"value_bytes\": %" PRIu64 ", \"writers\": %d"
		", \"node_ram_bytes\": %" PRIu64 ", \"fill_s\": %.3f"
		", \"fill_blocks_per_s\": %.1f, \"node_del_ms\": %.1f"
		", \"node_add_disk_add_ms\": %.1f, \"rebuild_ms\": %" PRIu64
		", \"rebuild_records\": %" PRIu64 ", \"rebuild_rejected\": %" PRIu64
		", \"objects\": %" PRIu64 ", \"put_failures\": %" PRIu64
		", \"verified\": %" PRIu64 ", \"verify_failures\": %" PRIu64
		", \"failures\": %" PRIu64 "}\n", o.node.disk, o.blocks, o.size,
		o.threads, o.node.ram, fill_s, o.blocks / fill_s, del_ms, add_ms,
		s.v[TS_REBUILD_MS], s.v[TS_REBUILD_RECORDS],
		s.v[TS_REBUILD_REJECTED], objects, put_fails, checked, get_fails,
		fails);
	if (fclose(f))
		return 2;
	return fails ? 1 : 0;
setup:
	fprintf(stderr, "dfkv-rebuild: node %s: %s%s%s\n", NODE_NAME,
		strerror(-err), g.errmsg[0] ? ": " : "", g.errmsg);
	bench_node_del(&g, NODE_NAME);
	dfkv_genl_close(&g);
	return 2;
}
