// SPDX-License-Identifier: GPL-2.0
/*
 * dfkv-bench: throughput and latency of the /dev/dfkv fast path (ioctl PUT
 * and GET) next to a plain memcpy and to an inline "rep movsb" (the copy
 * the x86-64 kernel's user copies run, copy.h) of the same sizes, in the
 * same process, with the same buffers and thread counts.
 *
 * For every value size and thread count the bench creates a node (RAM
 * budget --ram, no eviction), gives each thread its own fd and its own
 * keys (a per-thread share of --wset bytes), and measures six phases:
 *
 *   dfkv PUT    ioctl PUT of fresh keys from one user buffer; a round
 *               stores the thread's whole key set, then (untimed) removes
 *               it, so every timed PUT really copies (values are immutable:
 *               a PUT of a present key would not copy).
 *   dfkv GET    ioctl GET of the whole value into one user buffer, over
 *               the same key set, stored beforehand (untimed).
 *   memcpy PUT  memcpy from the same-sized user buffer into a pool of the
 *               same number of same-sized buffers, cycling like the keys.
 *   memcpy GET  memcpy from that pool into the user buffer.
 *   movsb PUT, movsb GET
 *               the same with "rep movsb" instead of memcpy.
 *
 * The target (1-thread 1 MiB GET >= 50% of the copy) is judged against
 * the copy the kernel uses: rep movsb when /proc/cpuinfo lists "erms"
 * (then copy_to_user runs it, and under software emulation it is far
 * slower than glibc's vector memcpy), memcpy otherwise.  Both ratios are
 * printed.
 *
 * The working set is larger than any CPU cache on purpose, so both sides
 * move data from and to DRAM as a KV-cache load does.  Each phase runs
 * whole rounds over the key set until --duration seconds of timed work or
 * --max-ops operations per thread, whichever comes first.  Throughput is
 * bytes over the wall time of the timed rounds (all threads together);
 * latency percentiles are over every single operation of every thread.
 *
 * Every operation is checked: an ioctl error, a status other than OK, a
 * GET returning another length or other bytes (each PUT stamps its key
 * into the head and tail of the value; GET checks both, untimed) is a
 * failure.  Failures are printed beside every figure, and a run with any
 * failure exits 1 without writing the JSON: its figures are not reported.
 *
 * With --disk, every node gets that block device (formatted) behind its
 * RAM budget, with the RAM tier settings given (--policy, --ack, --dirty,
 * --evict); the dfkv phases then also record what they caused in the RAM
 * tier and on the disk (hits, misses, flushes, bios, bytes), a disk I/O
 * error or a dropped flush counts as a failure, and the dirty bytes are
 * left to reach the disk before each timed phase.  With --reattach the
 * node is restarted between storing the keys and the GET phase, which
 * then runs one round, all of it cold reads from the disk; without, a
 * working set larger than the RAM budget makes GETs cold (a round reads
 * the keys in the order they were stored, so the least recently used is
 * the next one).  The counters show how many were.
 *
 * usage: dfkv-bench [options] JSON_PATH
 *        dfkv-bench --cleanup          delete the bench's node if present
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/ioctl.h>
#include <sys/utsname.h>

#include "genl.h"
#include "harness.h"
#include "node.h"
#include "ioc.h"
#include "copy.h"

#define NODE_NAME	"dfkv-bench"
#define TENANT		0xbe4c000000000001ULL
#define STAMP_MAGIC	0x6466b76265e4c001ULL
#include "bench.h"
#define MIB		((uint64_t)1024 * 1024)

enum { P_DFKV_PUT, P_DFKV_GET, P_MEM_PUT, P_MEM_GET, P_MOVSB_PUT,
       P_MOVSB_GET, NR_PHASES };

static const char *const phase_name[NR_PHASES] = {
	"dfkv PUT", "dfkv GET", "memcpy PUT", "memcpy GET", "movsb PUT",
	"movsb GET",
};

struct config {
	uint64_t size;
	int threads;
	uint64_t keys;		/* per thread */
	struct bench_result r[NR_PHASES];
};

struct opts {
	uint64_t ram;
	uint64_t wset;
	double duration;
	uint64_t max_ops;
	const char *accel;
	const char *json;
	struct bench_node node;
	int no_memcpy;
	int movsb;		/* measure rep movsb (x86 only) */
	int kernel_movsb;	/* the kernel copies with it: the reference */
};

static struct opts o = {
	.ram = 512 * MIB,
	.wset = 256 * MIB,
	.duration = 2.0,
	.max_ops = 200000,
	.accel = "unknown",
	.node = { .name = NODE_NAME, .dirty_pct = -1 },
};

static struct dfkv_key make_key(int tid, uint64_t idx)
{
	return bench_key(TENANT, tid, idx);
}

static void *xalloc(uint64_t size)
{
	void *p;

	if (posix_memalign(&p, 4096, size)) {
		fprintf(stderr, "dfkv-bench: out of memory (%" PRIu64 " bytes)\n",
			size);
		exit(2);
	}
	memset(p, 0x5a, size);	/* fault every page in before timing */
	return p;
}

/* ------------------------------------------------------------ phases */

struct worker {
	struct bench_thread t;
	int fd;
	void *ubuf;		/* the caller's buffer: PUT source, GET target */
	void *pool;		/* memcpy phases: keys * size bytes */
};

static struct worker *worker_of(struct bench_thread *t)
{
	return bench_container_of(t, struct worker, t);
}

/* One timed operation on key i of the thread: its failures (0 or 1). */
static uint64_t timed_op(struct bench_thread *t, uint64_t i, uint64_t *ns)
{
	struct worker *w = worker_of(t);
	struct config *c = t->ph->arg;
	struct dfkv_key k = make_key(t->tid, i);
	struct dfkv_ioc_op op;
	uint64_t t0, t1, bad = 1;
	int rc;

	switch (t->ph->phase) {
	case P_DFKV_PUT:
		stamp_put(w->ubuf, c->size, stamp_of(t->tid, i));
		ioc_op_init(&op, &k);
		op.buf = (uintptr_t)w->ubuf;
		op.length = c->size;
		t0 = now_ns();
		rc = ioctl(w->fd, DFKV_IOC_PUT, &op);
		t1 = now_ns();
		if (rc)
			bench_why(t, "PUT ioctl: %s", strerror(errno));
		else if (op.status != DFKV_STATUS_OK)
			bench_why(t, "PUT status %u", op.status);
		else
			bad = 0;
		break;
	case P_DFKV_GET:
		ioc_op_init(&op, &k);
		op.buf = (uintptr_t)w->ubuf;
		op.cap = c->size;
		t0 = now_ns();
		rc = ioctl(w->fd, DFKV_IOC_GET, &op);
		t1 = now_ns();
		if (rc)
			bench_why(t, "GET ioctl: %s", strerror(errno));
		else if (op.status != DFKV_STATUS_OK)
			bench_why(t, "GET status %u", op.status);
		else if (op.data_len != c->size || op.stored_len != c->size)
			bench_why(t, "GET returned %llu of %llu bytes (asked %"
				  PRIu64 ")", (unsigned long long)op.data_len,
				  (unsigned long long)op.stored_len, c->size);
		else if (!stamp_ok(w->ubuf, c->size, stamp_of(t->tid, i)))
			bench_why(t, "GET returned other bytes than PUT stored");
		else
			bad = 0;
		break;
	default: {
		/* The references: memcpy or rep movsb, as a PUT or a GET. */
		int ph = t->ph->phase;
		char *slot = (char *)w->pool + i * c->size;
		void *dst = ph == P_MEM_PUT || ph == P_MOVSB_PUT ? slot : w->ubuf;
		const void *src = dst == slot ? w->ubuf : slot;

		t0 = now_ns();
		if (ph == P_MOVSB_PUT || ph == P_MOVSB_GET)
			copy_movsb(dst, src, c->size);
		else
			memcpy(dst, src, c->size);
		t1 = now_ns();
		bad = 0;
		break;
	}
	}
	*ns = t1 - t0;
	return bad;
}

/* Untimed, after a PUT round: make room for the next round's PUTs. */
static uint64_t remove_round(struct bench_thread *t)
{
	struct worker *w = worker_of(t);
	struct config *c = t->ph->arg;
	uint64_t i, bad = 0;

	for (i = 0; i < c->keys; i++) {
		struct dfkv_key k = make_key(t->tid, i);

		if (!ioc_remove(w->fd, &k)) {
			bench_why(t, "REMOVE failed: %s", strerror(errno));
			bad++;
		}
	}
	return bad;
}

/* A phase; a dfkv phase on a node with a disk takes the tier's counters. */
static void run_phase(struct dfkv_genl *g, struct config *c, struct worker *w,
		      int phase)
{
	char label[96];
	struct bench_phase ph = {
		.phase = phase,
		.arg = c,
		.calls = c->keys,
		.ops_per_call = 1,
		.op_bytes = c->size,
		.duration = o.duration,
		.max_calls = o.max_ops,
		/* After a restart, only the first round is cold. */
		.one_round = o.node.reattach && phase == P_DFKV_GET,
		.call = timed_op,
		.after_round = phase == P_DFKV_PUT ? remove_round : NULL,
		.g = g,
		.tier = o.node.disk && phase <= P_DFKV_GET ? NODE_NAME : NULL,
		.label = label,
	};

	snprintf(label, sizeof(label), "dfkv-bench: %s %" PRIu64 " B x%d",
		 phase_name[phase], c->size, c->threads);
	BENCH_RUN(&ph, w, c->threads, &c->r[phase]);
}

/* Untimed: store (or remove) every key of every thread; failures count. */
static uint64_t fill_keys(struct config *c, struct worker *w, int remove)
{
	uint64_t i, fails = 0;
	int t;

	for (t = 0; t < c->threads; t++)
		for (i = 0; i < c->keys; i++) {
			struct dfkv_key k = make_key(t, i);
			int ok;

			if (remove) {
				ok = ioc_remove(w[t].fd, &k);
			} else {
				stamp_put(w[t].ubuf, c->size, stamp_of(t, i));
				ok = ioc_put(w[t].fd, &k, w[t].ubuf, c->size);
			}
			if (!ok) {
				if (!fails)
					fprintf(stderr, "dfkv-bench: untimed %s of %"
						PRIu64 "-byte key %d/%" PRIu64
						" failed\n", remove ? "REMOVE" : "PUT",
						c->size, t, i);
				fails++;
			}
		}
	return fails;
}

/* Restart the node: every key is then on disk only; 0 or 1 failure. */
static uint64_t reattach(struct dfkv_genl *g, struct config *c,
			 struct worker *w)
{
	int t, err;

	for (t = 0; t < c->threads; t++)
		close(w[t].fd);
	err = bench_node_reattach(g, &o.node);
	if (err)
		fprintf(stderr, "dfkv-bench: restarting node %s: %s%s%s\n",
			NODE_NAME, strerror(-err), g->errmsg[0] ? ": " : "",
			g->errmsg);
	for (t = 0; t < c->threads; t++) {
		w[t].fd = ioc_open(NODE_NAME);
		if (w[t].fd < 0) {
			fprintf(stderr, "dfkv-bench: open /dev/dfkv: %s\n",
				strerror(-w[t].fd));
			exit(2);
		}
	}
	return err ? 1 : 0;
}

static int run_config(struct dfkv_genl *g, struct config *c)
{
	struct worker *w = calloc(c->threads, sizeof(*w));
	uint64_t extra = 0;
	int t, err;

	if (!w)
		return -ENOMEM;
	o.node.ram = o.ram;
	o.node.format = 1;
	err = bench_node_add(g, &o.node);
	if (err) {
		fprintf(stderr, "dfkv-bench: cannot create node %s: %s%s%s\n",
			NODE_NAME, strerror(-err), g->errmsg[0] ? ": " : "",
			g->errmsg);
		free(w);
		return err;
	}
	for (t = 0; t < c->threads; t++) {
		w[t].t.tid = t;
		w[t].fd = ioc_open(NODE_NAME);
		if (w[t].fd < 0) {
			fprintf(stderr, "dfkv-bench: open /dev/dfkv: %s\n",
				strerror(-w[t].fd));
			return w[t].fd;
		}
		w[t].ubuf = xalloc(c->size);
		w[t].pool = xalloc(c->keys * c->size);
	}

	/*
	 * Warm-up: bind the extents once so PUT measures steady state.  Not
	 * with --reattach: every PUT then waits for the disk, which binding
	 * an extent does not change.
	 */
	if (!o.node.reattach) {
		extra += fill_keys(c, w, 0);
		extra += fill_keys(c, w, 1);
	}
	run_phase(g, c, w, P_DFKV_PUT);
	extra += fill_keys(c, w, 0);
	if (o.node.reattach)
		extra += reattach(g, c, w);
	run_phase(g, c, w, P_DFKV_GET);
	if (!o.no_memcpy) {
		run_phase(g, c, w, P_MEM_PUT);
		run_phase(g, c, w, P_MEM_GET);
		if (o.movsb) {
			run_phase(g, c, w, P_MOVSB_PUT);
			run_phase(g, c, w, P_MOVSB_GET);
		}
	}
	/* Untimed failures are charged to the dfkv phase they prepared. */
	c->r[P_DFKV_PUT].fails += extra;

	for (t = 0; t < c->threads; t++) {
		close(w[t].fd);
		free(w[t].ubuf);
		free(w[t].pool);
	}
	err = bench_node_del(g, NODE_NAME);
	if (err) {
		fprintf(stderr, "dfkv-bench: cannot delete node %s: %s\n",
			NODE_NAME, g->errmsg[0] ? g->errmsg : strerror(-err));
		c->r[P_DFKV_GET].fails++;
	}
	free(w);
	return 0;
}

/* ----------------------------------------------------------- reports */

struct machine {
	char kernel[128];
	char cpu[128];
	long cpus;
	uint64_t mem_bytes;
	char module[64];
	char date[64];
};

static void read_line(const char *path, char *buf, size_t len)
{
	FILE *f = fopen(path, "r");

	snprintf(buf, len, "unknown");
	if (!f)
		return;
	if (fgets(buf, (int)len, f))
		buf[strcspn(buf, "\n")] = 0;
	fclose(f);
}

static void machine_info(struct machine *m)
{
	struct utsname u;
	char line[256];
	FILE *f;
	time_t t = time(NULL);

	uname(&u);
	snprintf(m->kernel, sizeof(m->kernel), "%s", u.release);
	m->cpus = sysconf(_SC_NPROCESSORS_ONLN);
	snprintf(m->cpu, sizeof(m->cpu), "unknown");
	m->mem_bytes = 0;
	f = fopen("/proc/cpuinfo", "r");
	while (f && fgets(line, sizeof(line), f))
		if (!strncmp(line, "model name", 10) && strchr(line, ':')) {
			char *v = strchr(line, ':') + 1;

			v += strspn(v, " \t");
			v[strcspn(v, "\n")] = 0;
			snprintf(m->cpu, sizeof(m->cpu), "%s", v);
			break;
		}
	if (f)
		fclose(f);
	f = fopen("/proc/meminfo", "r");
	while (f && fgets(line, sizeof(line), f)) {
		unsigned long long kb;

		if (sscanf(line, "MemTotal: %llu kB", &kb) == 1) {
			m->mem_bytes = kb * 1024;
			break;
		}
	}
	if (f)
		fclose(f);
	read_line("/sys/module/dfkv/version", m->module, sizeof(m->module));
	strftime(m->date, sizeof(m->date), "%Y-%m-%dT%H:%M:%SZ", gmtime(&t));
}

static const char *size_str(uint64_t s, char *buf, size_t len)
{
	if (s >= MIB && !(s % MIB))
		snprintf(buf, len, "%" PRIu64 " MiB", s / MIB);
	else
		snprintf(buf, len, "%" PRIu64 " KiB", s / 1024);
	return buf;
}

static double ratio(const struct config *c, int dfkv, int mem)
{
	return c->r[mem].gbps > 0 ? c->r[dfkv].gbps / c->r[mem].gbps : 0;
}

/* The GET phase of the copy the kernel uses: the target's reference. */
static int ref_get(void)
{
	return o.movsb && o.kernel_movsb ? P_MOVSB_GET : P_MEM_GET;
}

static const char *ref_name(void)
{
	return ref_get() == P_MOVSB_GET ? "rep movsb" : "memcpy";
}

/* One reference's columns of a row (or dashes when not measured). */
static void print_ref(const struct bench_result *r, bool on)
{
	if (on)
		printf(" | %8.3f %8.1f %8.1f", r->gbps, r->p50_us, r->p99_us);
	else
		printf(" | %8s %8s %8s", "-", "-", "-");
}

static void print_pct(const struct config *c, int dfkv, int ref, bool on)
{
	if (on)
		printf(" %5.0f%%", 100 * ratio(c, dfkv, ref));
	else
		printf(" %6s", "-");
}

static void print_table(const struct machine *m, const struct config *cs,
			int n)
{
	bool mem = !o.no_memcpy, mov = mem && o.movsb;
	char sz[32], desc[160];
	int i, op;

	printf("\ndfkv-bench %s  kernel %s  %ld CPUs  %.2f GiB  accel %s\n",
	       m->date, m->kernel, m->cpus, m->mem_bytes / (double)(1024 * MIB),
	       o.accel);
	if (o.node.disk)
		printf("node: %s\n", bench_node_desc(&o.node, desc, sizeof(desc)));
	printf("node %" PRIu64 " MiB, working set %" PRIu64 " MiB (split over "
	       "threads", o.ram / MIB, o.wset / MIB);
	if (o.node.max_keys)
		printf(", at most %" PRIu64 " keys each", o.node.max_keys);
	printf("), %.1f s per phase; GB/s = 1e9 bytes/s\n", o.duration);
	if (mem)
		printf("the kernel copies user memory with %s%s\n", ref_name(),
		       ref_get() == P_MOVSB_GET ? " (erms): the reference" :
		       ": the reference");
	printf("\n%-7s %3s %-4s | %-43s | %-26s | %-26s | %6s %6s\n", "", "",
	       "", "dfkv ioctl", "memcpy, same buffers", "rep movsb, same buffers",
	       "dfkv/", "dfkv/");
	printf("%-7s %3s %-4s | %8s %9s %8s %8s %5s | %8s %8s %8s | %8s %8s %8s | %6s %6s\n",
	       "size", "thr", "op", "GB/s", "ops/s", "p50 us", "p99 us",
	       "fail", "GB/s", "p50 us", "p99 us", "GB/s", "p50 us", "p99 us",
	       "memcpy", "movsb");
	printf("%.*s\n", 143,
	       "------------------------------------------------------------"
	       "------------------------------------------------------------"
	       "------------------------------------------------------------");
	for (i = 0; i < n; i++)
		for (op = 0; op < 2; op++) {
			const struct config *c = &cs[i];
			int dp = op ? P_DFKV_GET : P_DFKV_PUT;
			int mp = op ? P_MEM_GET : P_MEM_PUT;
			int vp = op ? P_MOVSB_GET : P_MOVSB_PUT;
			const struct bench_result *d = &c->r[dp];

			printf("%-7s %3d %-4s | %8.3f %9.0f %8.1f %8.1f %5" PRIu64,
			       size_str(c->size, sz, sizeof(sz)), c->threads,
			       op ? "GET" : "PUT", d->gbps, d->opsps, d->p50_us,
			       d->p99_us, d->fails);
			print_ref(&c->r[mp], mem);
			print_ref(&c->r[vp], mov);
			printf(" |");
			print_pct(c, dp, mp, mem);
			print_pct(c, dp, vp, mov);
			putchar('\n');
		}
}

static int write_json(const struct machine *m, const struct config *cs,
		      int n, const struct config *target)
{
	char tmp[4096], desc[160];
	int i, tier = o.node.disk != NULL, mem = !o.no_memcpy;
	FILE *f;

	snprintf(tmp, sizeof(tmp), "%s.tmp", o.json);
	f = fopen(tmp, "w");
	if (!f) {
		fprintf(stderr, "dfkv-bench: %s: %s\n", tmp, strerror(errno));
		return -1;
	}
	fprintf(f, "{\n  \"bench\": \"dfkv-bench\",\n  \"date\": \"%s\",\n",
		m->date);
	fprintf(f, "  \"machine\": {\"kernel\": \"%s\", \"cpu\": \"%s\", "
		"\"cpus\": %ld, \"mem_bytes\": %" PRIu64 ", \"accel\": \"%s\", "
		"\"dfkv_module\": \"%s\"},\n", m->kernel, m->cpu, m->cpus,
		m->mem_bytes, o.accel, m->module);
	fprintf(f, "  \"params\": {\"node_ram_bytes\": %" PRIu64
		", \"working_set_bytes\": %" PRIu64 ", \"duration_s\": %.2f"
		", \"max_ops_per_thread\": %" PRIu64 ", \"node\": \"%s\""
		", \"disk\": \"%s\", \"memcpy\": %s, \"movsb\": %s"
		", \"kernel_copy\": \"%s\", \"max_keys_per_thread\": %"
		PRIu64 ", \"reattach\": %s},\n", o.ram, o.wset, o.duration,
		o.max_ops, bench_node_desc(&o.node, desc, sizeof(desc)),
		tier ? o.node.disk : "", mem ? "true" : "false",
		mem && o.movsb ? "true" : "false",
		o.kernel_movsb ? "movsb" : "memcpy", o.node.max_keys,
		o.node.reattach ? "true" : "false");
	fprintf(f, "  \"results\": [\n");
	for (i = 0; i < n; i++) {
		const struct config *c = &cs[i];

		fprintf(f, "    {\"value_bytes\": %" PRIu64 ", \"threads\": %d, "
			"\"keys_per_thread\": %" PRIu64 ",\n", c->size,
			c->threads, c->keys);
		bench_json_result(f, 8, "dfkv_put", &c->r[P_DFKV_PUT], tier, 0);
		bench_json_result(f, 8, "dfkv_get", &c->r[P_DFKV_GET], tier, !mem);
		if (mem) {
			bench_json_result(f, 8, "memcpy_put", &c->r[P_MEM_PUT], 0, 0);
			bench_json_result(f, 8, "memcpy_get", &c->r[P_MEM_GET], 0, 0);
		}
		if (mem && o.movsb) {
			bench_json_result(f, 8, "movsb_put", &c->r[P_MOVSB_PUT], 0, 0);
			bench_json_result(f, 8, "movsb_get", &c->r[P_MOVSB_GET], 0, 0);
			fprintf(f, "        \"movsb_put_ratio\": %.4f, "
				"\"movsb_get_ratio\": %.4f,\n",
				ratio(c, P_DFKV_PUT, P_MOVSB_PUT),
				ratio(c, P_DFKV_GET, P_MOVSB_GET));
		}
		if (mem)
			fprintf(f, "        \"put_ratio\": %.4f, \"get_ratio\": "
				"%.4f", ratio(c, P_DFKV_PUT, P_MEM_PUT),
				ratio(c, P_DFKV_GET, P_MEM_GET));
		fprintf(f, "}%s\n", i + 1 < n ? "," : "");
	}
	fprintf(f, "  ],\n");
	if (tier || !mem) {	/* the target is about a RAM-only node */
		fprintf(f, "  \"target\": null\n}\n");
	} else {
		double r = target ? ratio(target, P_DFKV_GET, ref_get()) : 0;

		fprintf(f, "  \"target\": {\"what\": \"1-thread 1 MiB GET >= 50%% of "
			"the bandwidth of the copy the kernel uses (%s)\", "
			"\"reference\": \"%s\", \"ratio\": %.4f, "
			"\"memcpy_ratio\": %.4f, \"movsb_ratio\": ",
			ref_name(), ref_get() == P_MOVSB_GET ? "movsb" : "memcpy",
			r, target ? ratio(target, P_DFKV_GET, P_MEM_GET) : 0);
		if (target && o.movsb)
			fprintf(f, "%.4f", ratio(target, P_DFKV_GET, P_MOVSB_GET));
		else
			fprintf(f, "null");
		fprintf(f, ", \"met\": %s}\n}\n",
			target && r >= 0.5 ? "true" : "false");
	}
	if (fclose(f) || rename(tmp, o.json)) {
		fprintf(stderr, "dfkv-bench: %s: %s\n", o.json, strerror(errno));
		return -1;
	}
	return 0;
}

/* -------------------------------------------------------------- main */

static void usage(FILE *f)
{
	fprintf(f,
"usage: dfkv-bench [options] JSON_PATH\n"
"       dfkv-bench --cleanup\n"
"\n"
"Measure ioctl PUT/GET on /dev/dfkv next to memcpy and rep movsb; print a\n"
"table and\n"
"write JSON.  Needs dfkv.ko loaded and CAP_NET_ADMIN (creates and deletes\n"
"the node \"" NODE_NAME "\").  Exits 1 if any operation failed.\n"
"\n"
"  --ram MiB        node RAM budget (default 512)\n"
"  --wset MiB       working set, split over the threads (default 256)\n"
"  --duration SEC   timed work per phase (default 2)\n"
"  --max-ops N      at most N operations per thread and phase (200000)\n"
"  --sizes LIST     value sizes in KiB (default 64,1024,4096)\n"
"  --threads LIST   thread counts (default 1,4)\n"
"  --accel NAME     VM acceleration to record (kvm, tcg, none)\n"
"  --no-memcpy      skip the memcpy and rep movsb phases\n"
"  --no-movsb       skip the rep movsb phases (measured on x86 only)\n"
BENCH_NODE_USAGE
"  --cleanup        delete the bench node if it exists, then exit\n");
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "ram", required_argument, NULL, 'r' },
		{ "wset", required_argument, NULL, 'w' },
		{ "duration", required_argument, NULL, 'd' },
		{ "max-ops", required_argument, NULL, 'm' },
		{ "sizes", required_argument, NULL, 's' },
		{ "threads", required_argument, NULL, 't' },
		{ "accel", required_argument, NULL, 'a' },
		{ "cleanup", no_argument, NULL, 'c' },
		{ "no-memcpy", no_argument, NULL, 'M' },
		{ "no-movsb", no_argument, NULL, 'B' },
		BENCH_NODE_LONGOPTS,
		{ "help", no_argument, NULL, 'h' },
		{ 0 }
	};
	uint64_t sizes[8] = { 64, 1024, 4096 }, threads[8] = { 1, 4 };
	int nsizes = 3, nthreads = 2, cleanup = 0, n = 0, i, j, opt, err;
	struct config cs[64], *target = NULL;
	struct dfkv_genl g;
	struct machine m;
	uint64_t fails = 0;

	o.movsb = copy_movsb_ok();
	o.kernel_movsb = copy_kernel_uses_movsb();
	while ((opt = getopt_long(argc, argv, "h", lo, NULL)) != -1) {
		switch (opt) {
		case 'r': o.ram = strtoull(optarg, NULL, 10) * MIB; break;
		case 'w': o.wset = strtoull(optarg, NULL, 10) * MIB; break;
		case 'd': o.duration = strtod(optarg, NULL); break;
		case 'm': o.max_ops = strtoull(optarg, NULL, 10); break;
		case 's':
			nsizes = bench_parse_list(optarg, sizes, 8);
			if (nsizes < 1)
				goto bad;
			break;
		case 't':
			nthreads = bench_parse_list(optarg, threads, 8);
			if (nthreads < 1)
				goto bad;
			break;
		case 'a': o.accel = optarg; break;
		case 'c': cleanup = 1; break;
		case 'M': o.no_memcpy = 1; break;
		case 'B': o.movsb = 0; break;
		case 'h': usage(stdout); return 0;
		default:
			if (bench_node_opt(&o.node, opt, optarg))
				goto bad;
		}
	}
	if (!cleanup && optind + 1 != argc)
		goto bad;
	if (!cleanup)
		o.json = argv[optind];
	if (!o.ram || !o.wset || o.duration <= 0 || !o.max_ops ||
	    (o.node.reattach && !o.node.disk))
		goto bad;

	err = dfkv_genl_open(&g);
	if (err) {
		fprintf(stderr, "dfkv-bench: netlink family dfkv: %s%s\n",
			strerror(-err), err == -ENOENT ? " (module not loaded?)" : "");
		return 2;
	}
	if (cleanup) {
		err = bench_node_del(&g, NODE_NAME);
		dfkv_genl_close(&g);
		return err && err != -ENOENT && err != -ENODEV ? 1 : 0;
	}

	for (i = 0; i < nsizes; i++)
		for (j = 0; j < nthreads; j++) {
			struct config *c = &cs[n];

			memset(c, 0, sizeof(*c));
			c->size = sizes[i] * 1024;
			c->threads = (int)threads[j];
			c->keys = o.wset / c->threads / c->size;
			if (o.node.max_keys && c->keys > o.node.max_keys)
				c->keys = o.node.max_keys;
			if (c->keys < 1) {
				fprintf(stderr, "dfkv-bench: working set too small "
					"for %" PRIu64 " KiB x %d threads\n",
					sizes[i], c->threads);
				return 2;
			}
			fprintf(stderr, "dfkv-bench: %" PRIu64 " KiB x %d thread(s),"
				" %" PRIu64 " keys each\n", sizes[i], c->threads,
				c->keys);
			if (run_config(&g, c)) {
				bench_node_del(&g, NODE_NAME);
				dfkv_genl_close(&g);
				return 2;
			}
			if (c->size == MIB && c->threads == 1 &&
			    !o.node.disk && !o.no_memcpy)
				target = c;
			n++;
		}
	dfkv_genl_close(&g);

	machine_info(&m);
	print_table(&m, cs, n);
	for (i = 0; i < n; i++)
		for (j = 0; j < NR_PHASES; j++)
			fails += cs[i].r[j].fails;
	if (fails) {
		printf("\nREFUSED: %" PRIu64 " operation(s) failed (see the fail "
		       "column and the messages above); these figures are not a "
		       "result and %s was not written.\n", fails, o.json);
		unlink(o.json);
		return 1;
	}
	if (target) {
		double r = ratio(target, P_DFKV_GET, ref_get());

		printf("\ntarget: 1-thread 1 MiB GET >= 50%% of %s (the kernel's copy): %.0f%% -> %s",
		       ref_name(), 100 * r, r >= 0.5 ? "MET" : "NOT MET");
		if (ref_get() == P_MOVSB_GET)
			printf(" (of memcpy: %.0f%%)",
			       100 * ratio(target, P_DFKV_GET, P_MEM_GET));
		putchar('\n');
	}
	if (write_json(&m, cs, n, target))
		return 2;
	printf("JSON: %s\n", o.json);
	return 0;
bad:
	usage(stderr);
	return 2;
}
