// SPDX-License-Identifier: GPL-2.0
/*
 * dfkv-tcpbench: PUT/GET over TCP loopback against the in-kernel dfkv node
 * (through libdfkv), and, with the same harness, against memcached (text
 * protocol) and Redis (RESP), so that all three are measured the same way:
 * same value sizes, threads, batch sizes, working set, timing and checks.
 *
 * Per value size, thread count and batch size, each thread owns one
 * client (one TCP connection) and its own keys (its share of --wset, at
 * least one batch, a whole number of batches).  Two phases:
 *
 *   PUT   stores the thread's keys, a batch per call, from the thread's
 *         batch buffers; a round stores every key, then (untimed) removes
 *         them, so every timed PUT stores a fresh value.
 *   GET   loads every key (stored beforehand, untimed) into the same
 *         buffers, a batch per call.
 *
 * A batch is one libdfkv batch call (dfkv_{put,get}_batch: pipelined on
 * the connection), 16 pipelined SETs or one multi-key "get" for
 * memcached, 16 pipelined SET or GET commands for Redis.  Batch 1 uses
 * the scalar calls.  Latency percentiles are per call (per batch).
 *
 * Every operation is checked: an error, a status other than OK, a miss,
 * a GET of another length or other bytes (each PUT stamps its key into
 * the value's head and tail; GET checks both, untimed) is a failure.
 * Failures are written beside every figure; the exit status is 1 if any.
 *
 * With --transport rdma (dfkv only) the client is libdfkv's RDMA transport
 * (wire epoch 7) to an RDMA listener of the node on --addr, which must be
 * an address of an RDMA device (Soft-RoCE in the test VM), and each
 * thread registers its buffers once (dfkv_register_memory), as an engine
 * registers its KV pool: PUT values are RDMA-READ by the node, GET values
 * RDMA-WRITTEN, with no registration per request.  --rdma-expose sets
 * libdfkv's rdma_expose: request (default) and request-mr send a key per
 * request covering its range only (a memory window bound on the QP, or a
 * registration of the range), pool the pools' own keys, so the rows show
 * what that protection costs.
 *
 * Each phase of the dfkv backend records the node's counters around it
 * (node.h: RAM tier, disk, zero-copy GET replies).  With --disk (dfkv
 * only), the node gets that block device (formatted) behind its RAM
 * budget, with the RAM tier settings given, and --reattach restarts the
 * node before the GET phase so that it reads cold blocks, as dfkv-bench
 * --disk does.
 *
 * usage: dfkv-tcpbench [options] JSON_PATH
 *        dfkv-tcpbench --backend redis --port P --fill SIZE,N
 *               store N values of SIZE bytes under redis-benchmark's keys
 *               "key:%012d" (for its GET test), exit 1 on any failure
 *        dfkv-tcpbench --cleanup    delete the bench's node if present
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include "dfkv.h"
#include "genl.h"
#include "harness.h"
#include "node.h"

#define NODE_NAME	"dfkv-tcpbench"
#define STAMP_MAGIC	0x6466b76265e4c002ULL
#include "bench.h"
#define MIB		((uint64_t)1024 * 1024)
#define BATCH_MAX	64

enum backend { B_DFKV, B_MEMCACHED, B_REDIS };
static const char *const backend_name[] = { "dfkv", "memcached", "redis" };

enum { PH_PUT, PH_GET, NR_PHASES };
static const char *const phase_name[] = { "PUT", "GET" };

struct config {
	uint64_t size;
	int threads, batch;
	uint64_t keys;		/* per thread */
	struct bench_result r[NR_PHASES];
};

static struct {
	enum backend be;
	const char *addr;	/* the server's address (dfkv: the listener's) */
	int rdma;		/* dfkv over RDMA, else TCP */
	uint32_t expose;	/* enum dfkv_rdma_expose; 0 until given */
	int port;
	uint64_t ram, wset, max_calls;
	double duration;
	const char *json;
	struct bench_node node;
	struct dfkv_genl g;	/* dfkv: the node's netlink socket */
} o = {
	.be = B_DFKV,
	.addr = "127.0.0.1",
	.port = 0,
	.ram = 512 * MIB,
	.wset = 64 * MIB,
	.max_calls = 100000,
	.duration = 1.0,
	.node = { .name = NODE_NAME, .dirty_pct = -1, .format = 1 },
};

/* ------------------------------------------------ plain socket client */

struct sock {
	int fd;
	char rbuf[16384];
	size_t rpos, rlen;
};

static int sock_open(struct sock *s, const char *addr, int port)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(port) };
	struct timeval tv = { .tv_sec = 60 };
	int one = 1;

	memset(s, 0, sizeof(*s));
	s->fd = -1;
	if (inet_pton(AF_INET, addr, &a.sin_addr) != 1) {
		errno = EINVAL;
		return -1;
	}
	s->fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (s->fd < 0)
		return -1;
	setsockopt(s->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	setsockopt(s->fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(s->fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	if (connect(s->fd, (void *)&a, sizeof(a))) {
		close(s->fd);
		s->fd = -1;
		return -1;
	}
	return 0;
}

static int sock_writev(struct sock *s, struct iovec *iov, int n)
{
	while (n > 0) {
		struct msghdr m = { .msg_iov = iov, .msg_iovlen = n };
		ssize_t w = sendmsg(s->fd, &m, MSG_NOSIGNAL);

		if (w <= 0)
			return -1;
		while (n > 0 && (size_t)w >= iov->iov_len) {
			w -= iov->iov_len;
			iov++;
			n--;
		}
		if (n > 0) {
			iov->iov_base = (char *)iov->iov_base + w;
			iov->iov_len -= w;
		}
	}
	return 0;
}

static int sock_fill(struct sock *s)
{
	ssize_t r;

	if (s->rpos == s->rlen)
		s->rpos = s->rlen = 0;
	if (s->rlen == sizeof(s->rbuf))
		return -1;
	r = recv(s->fd, s->rbuf + s->rlen, sizeof(s->rbuf) - s->rlen, 0);
	if (r <= 0)
		return -1;
	s->rlen += r;
	return 0;
}

/* One "\r\n"-terminated line (without it) into out. */
static int sock_line(struct sock *s, char *out, size_t cap)
{
	for (;;) {
		char *p = memchr(s->rbuf + s->rpos, '\n', s->rlen - s->rpos);

		if (p) {
			size_t n = p - (s->rbuf + s->rpos);

			if (n == 0 || p[-1] != '\r' || n - 1 >= cap)
				return -1;
			memcpy(out, s->rbuf + s->rpos, n - 1);
			out[n - 1] = 0;
			s->rpos += n + 1;
			return 0;
		}
		if (s->rpos) {
			memmove(s->rbuf, s->rbuf + s->rpos, s->rlen - s->rpos);
			s->rlen -= s->rpos;
			s->rpos = 0;
		}
		if (sock_fill(s))
			return -1;
	}
}

/* Exactly n bytes into dst (NULL: discard), buffered bytes first. */
static int sock_read(struct sock *s, void *dst, size_t n)
{
	char *d = dst;
	size_t k = s->rlen - s->rpos;

	if (k > n)
		k = n;
	if (d)
		memcpy(d, s->rbuf + s->rpos, k);
	s->rpos += k;
	n -= k;
	if (d)
		d += k;
	while (n) {
		ssize_t r;

		if (!d) {
			if (sock_fill(s))
				return -1;
			k = s->rlen - s->rpos < n ? s->rlen - s->rpos : n;
			s->rpos += k;
			n -= k;
			continue;
		}
		r = recv(s->fd, d, n, MSG_WAITALL);
		if (r <= 0)
			return -1;
		d += r;
		n -= r;
	}
	return 0;
}

/* ----------------------------------------------------------- workers */

struct worker {
	struct bench_thread t;
	struct config *c;
	struct dfkv_client *dc;
	struct sock s;
	void *buf[BATCH_MAX];	/* a batch's values, c->size bytes each */
	int remove;		/* fill_all: remove the keys, else store them */
};

static struct worker *worker_of(struct bench_thread *t)
{
	return bench_container_of(t, struct worker, t);
}

/* Record the first failure's message of w (counting is the caller's). */
#define fail(w, ...) bench_why(&(w)->t, __VA_ARGS__)

static int key_name(char *out, size_t cap, int tid, uint64_t i)
{
	return snprintf(out, cap, "tb:%d:%" PRIu64, tid, i);
}

/* A client of the backend; over RDMA with w's buffers registered. */
static int client_open(struct worker *w)
{
	if (o.be == B_DFKV) {
		char members[128];
		struct dfkv_client_options_v2 co = {
			.size = sizeof(co),
			.transport = o.rdma ? DFKV_TRANSPORT_RDMA :
					      DFKV_TRANSPORT_TCP,
			.members = members,
			.ns = "dfkv-tcpbench",
			.ns_len = 13,
			.batch_concurrency = BATCH_MAX,
			.conns_per_peer = 1,
			.io_timeout_ms = 60000,
			.rdma_port = o.rdma ? (uint32_t)o.port : 0,
			.rdma_expose = o.expose,
		};
		int st, j;

		snprintf(members, sizeof(members), NODE_NAME "=%s:%d", o.addr,
			 o.port);
		st = dfkv_open_v2(&co, &w->dc);
		if (st) {
			fprintf(stderr, "dfkv-tcpbench: dfkv_open_v2 (%s): %s\n",
				o.rdma ? "RDMA" : "TCP", dfkv_strerror(st));
			return -1;
		}
		for (j = 0; o.rdma && j < w->c->batch; j++) {
			st = dfkv_register_memory(w->dc, w->buf[j], w->c->size);
			if (st) {
				fprintf(stderr, "dfkv-tcpbench: "
					"dfkv_register_memory: %s\n",
					dfkv_strerror(st));
				return -1;
			}
		}
		return 0;
	}
	if (sock_open(&w->s, o.addr, o.port)) {
		fprintf(stderr, "dfkv-tcpbench: connect %s:%d: %s\n", o.addr,
			o.port, strerror(errno));
		return -1;
	}
	return 0;
}

static void client_close(struct worker *w)
{
	if (w->dc)
		dfkv_close(w->dc);
	w->dc = NULL;
	if (w->s.fd > 0)
		close(w->s.fd);
	w->s.fd = -1;
}

/*
 * PUT n keys starting at index i from w->buf[0..n); names given by name().
 * Returns the number of failures.
 */
static uint64_t do_put(struct worker *w, char (*names)[64], int n,
		       uint64_t size)
{
	char hdr[BATCH_MAX][128], line[256];
	struct iovec iov[3 * BATCH_MAX];
	uint64_t f = 0;
	int j, k = 0;

	if (o.be == B_DFKV) {
		const void *keys[BATCH_MAX] = { 0 }, *vals[BATCH_MAX] = { 0 };
		uint64_t klen[BATCH_MAX] = { 0 }, vlen[BATCH_MAX] = { 0 };
		int st[BATCH_MAX], ok;

		if (n == 1) {
			ok = dfkv_put(w->dc, names[0], strlen(names[0]),
				      w->buf[0], size);
			if (ok)
				fail(w, "dfkv_put: %s", dfkv_strerror(ok));
			return ok != 0;
		}
		for (j = 0; j < n; j++) {
			keys[j] = names[j];
			klen[j] = strlen(names[j]);
			vals[j] = w->buf[j];
			vlen[j] = size;
		}
		ok = dfkv_put_batch(w->dc, n, keys, klen, vals, vlen, st);
		if (ok != n)
			for (j = 0; j < n; j++)
				if (st[j]) {
					fail(w, "dfkv_put_batch slot %d: %s", j,
					     dfkv_strerror(st[j]));
					f++;
				}
		return ok < 0 ? (uint64_t)n : f;
	}
	for (j = 0; j < n; j++) {
		int hl;

		if (o.be == B_MEMCACHED)
			hl = snprintf(hdr[j], sizeof(hdr[j]),
				      "set %s 0 0 %" PRIu64 "\r\n", names[j], size);
		else
			hl = snprintf(hdr[j], sizeof(hdr[j]),
				      "*3\r\n$3\r\nSET\r\n$%zu\r\n%s\r\n$%"
				      PRIu64 "\r\n", strlen(names[j]),
				      names[j], size);
		iov[k++] = (struct iovec){ hdr[j], hl };
		iov[k++] = (struct iovec){ w->buf[j], size };
		iov[k++] = (struct iovec){ "\r\n", 2 };
	}
	if (sock_writev(&w->s, iov, k)) {
		fail(w, "%s SET send: %s", backend_name[o.be], strerror(errno));
		return n;
	}
	for (j = 0; j < n; j++) {
		if (sock_line(&w->s, line, sizeof(line))) {
			fail(w, "%s SET reply: %s", backend_name[o.be],
			     strerror(errno));
			return n - j + f;
		}
		if (strcmp(line, o.be == B_MEMCACHED ? "STORED" : "+OK")) {
			fail(w, "%s SET answered \"%.60s\"", backend_name[o.be],
			     line);
			f++;
		}
	}
	return f;
}

/* GET n keys into w->buf[0..n); checks length and stamps (tid, idx0+j). */
static uint64_t do_get(struct worker *w, char (*names)[64], int n,
		       uint64_t size)
{
	char req[BATCH_MAX * 80], line[256];
	uint64_t f = 0, len[BATCH_MAX];
	int j, st[BATCH_MAX];
	size_t rl = 0;

	for (j = 0; j < n; j++) {
		st[j] = 0;
		len[j] = 0;
	}
	if (o.be == B_DFKV) {
		const void *keys[BATCH_MAX] = { 0 };
		uint64_t klen[BATCH_MAX] = { 0 }, caps[BATCH_MAX] = { 0 };
		int ok;

		if (n == 1) {
			st[0] = dfkv_get(w->dc, names[0], strlen(names[0]),
					 w->buf[0], size, &len[0]);
		} else {
			for (j = 0; j < n; j++) {
				keys[j] = names[j];
				klen[j] = strlen(names[j]);
				caps[j] = size;
			}
			ok = dfkv_get_batch(w->dc, n, keys, klen, w->buf, caps,
					    len, st);
			if (ok < 0) {
				fail(w, "dfkv_get_batch: %s", dfkv_strerror(ok));
				return n;
			}
		}
		for (j = 0; j < n; j++)
			if (st[j])
				fail(w, "dfkv GET: %s", dfkv_strerror(st[j]));
	} else if (o.be == B_MEMCACHED) {
		rl = snprintf(req, sizeof(req), "get");
		for (j = 0; j < n; j++)
			rl += snprintf(req + rl, sizeof(req) - rl, " %s", names[j]);
		rl += snprintf(req + rl, sizeof(req) - rl, "\r\n");
		if (send(w->s.fd, req, rl, MSG_NOSIGNAL) != (ssize_t)rl) {
			fail(w, "memcached get send: %s", strerror(errno));
			return n;
		}
		/* Hits come back in request order; a miss is just absent. */
		for (j = 0;; ) {
			char key[64];
			unsigned long long bytes;
			unsigned int flags;

			if (sock_line(&w->s, line, sizeof(line))) {
				fail(w, "memcached get reply: %s", strerror(errno));
				return n;
			}
			if (!strcmp(line, "END"))
				break;
			if (sscanf(line, "VALUE %63s %u %llu", key, &flags,
				   &bytes) != 3) {
				fail(w, "memcached get answered \"%.60s\"", line);
				return n;
			}
			while (j < n && strcmp(key, names[j])) {
				st[j++] = 1;	/* miss */
				fail(w, "memcached GET miss");
			}
			if (j == n || bytes > size) {
				fail(w, "memcached GET: unexpected value");
				return n;
			}
			len[j] = bytes;
			if (sock_read(&w->s, w->buf[j], bytes) ||
			    sock_read(&w->s, line, 2)) {
				fail(w, "memcached get data: %s", strerror(errno));
				return n;
			}
			j++;
		}
		for (; j < n; j++) {
			st[j] = 1;
			fail(w, "memcached GET miss");
		}
	} else {
		for (j = 0; j < n; j++)
			rl += snprintf(req + rl, sizeof(req) - rl,
				       "*2\r\n$3\r\nGET\r\n$%zu\r\n%s\r\n",
				       strlen(names[j]), names[j]);
		if (send(w->s.fd, req, rl, MSG_NOSIGNAL) != (ssize_t)rl) {
			fail(w, "redis GET send: %s", strerror(errno));
			return n;
		}
		for (j = 0; j < n; j++) {
			long long bytes;

			if (sock_line(&w->s, line, sizeof(line)) ||
			    line[0] != '$' || sscanf(line + 1, "%lld", &bytes) != 1) {
				fail(w, "redis GET answered \"%.60s\"", line);
				return n;
			}
			if (bytes < 0) {
				st[j] = 1;
				fail(w, "redis GET miss");
				continue;
			}
			if ((uint64_t)bytes > size) {
				fail(w, "redis GET: %lld bytes", bytes);
				return n;
			}
			len[j] = bytes;
			if (sock_read(&w->s, w->buf[j], bytes) ||
			    sock_read(&w->s, line, 2)) {
				fail(w, "redis GET data: %s", strerror(errno));
				return n;
			}
		}
	}
	for (j = 0; j < n; j++) {
		if (st[j]) {
			f++;
		} else if (len[j] != size) {
			fail(w, "GET returned %" PRIu64 " of %" PRIu64 " bytes",
			     len[j], size);
			f++;
		}
	}
	return f;
}

static uint64_t do_remove(struct worker *w, const char *name)
{
	char req[160], line[256];
	int rl, st;

	if (o.be == B_DFKV) {
		st = dfkv_remove(w->dc, name, strlen(name));
		if (st)
			fail(w, "dfkv_remove: %s", dfkv_strerror(st));
		return st != 0;
	}
	if (o.be == B_MEMCACHED)
		rl = snprintf(req, sizeof(req), "delete %s\r\n", name);
	else
		rl = snprintf(req, sizeof(req), "*2\r\n$3\r\nDEL\r\n$%zu\r\n%s\r\n",
			      strlen(name), name);
	if (send(w->s.fd, req, rl, MSG_NOSIGNAL) != rl ||
	    sock_line(&w->s, line, sizeof(line))) {
		fail(w, "%s delete: %s", backend_name[o.be], strerror(errno));
		return 1;
	}
	if (o.be == B_MEMCACHED ? strcmp(line, "DELETED") && strcmp(line, "NOT_FOUND")
				: line[0] != ':') {
		fail(w, "%s delete answered \"%.60s\"", backend_name[o.be], line);
		return 1;
	}
	return 0;
}

/* Batch of keys [i, i+n) of the thread: names and (for PUT) stamps. */
static void prep(struct worker *w, char (*names)[64], uint64_t i, int n,
		 int stamp)
{
	int j;

	for (j = 0; j < n; j++) {
		key_name(names[j], 64, w->t.tid, i + j);
		if (stamp)
			stamp_put(w->buf[j], w->c->size,
				  stamp_of(w->t.tid, i + j));
	}
}

/* Untimed: store or remove every key of this thread; failures. */
static uint64_t fill(struct worker *w, int remove)
{
	struct config *c = w->c;
	char names[BATCH_MAX][64];
	uint64_t i, f = 0;

	for (i = 0; i < c->keys; i += c->batch) {
		prep(w, names, i, c->batch, !remove);
		if (remove) {
			for (int j = 0; j < c->batch; j++)
				f += do_remove(w, names[j]);
		} else {
			f += do_put(w, names, c->batch, c->size);
		}
	}
	return f;
}

/* Timed call: batch number call of the thread's keys, PUT or GET. */
static uint64_t timed_call(struct bench_thread *t, uint64_t call,
			   uint64_t *ns)
{
	struct worker *w = worker_of(t);
	struct config *c = w->c;
	char names[BATCH_MAX][64];
	uint64_t i = call * c->batch, t0, f;

	prep(w, names, i, c->batch, t->ph->phase == PH_PUT);
	t0 = now_ns();
	if (t->ph->phase == PH_PUT) {
		f = do_put(w, names, c->batch, c->size);
		*ns = now_ns() - t0;
		return f;
	}
	f = do_get(w, names, c->batch, c->size);
	*ns = now_ns() - t0;
	/* untimed: the bytes are the ones PUT stored */
	for (int j = 0; !f && j < c->batch; j++)
		if (!stamp_ok(w->buf[j], c->size, stamp_of(t->tid, i + j))) {
			fail(w, "GET returned other bytes than PUT stored");
			f++;
		}
	return f;
}

/* Untimed, after a PUT round: remove the keys for the next round. */
static uint64_t remove_round(struct bench_thread *t)
{
	return fill(worker_of(t), 1);
}

static void *filler_main(void *arg)
{
	struct worker *w = worker_of(arg);

	w->t.fails += fill(w, w->remove);
	return NULL;
}

/* Untimed store (remove=0) or removal (1) by all threads; failures. */
static uint64_t fill_all(struct config *c, struct worker *w, int remove)
{
	uint64_t before = 0, after = 0;
	int t;

	for (t = 0; t < c->threads; t++) {
		before += w[t].t.fails;
		w[t].remove = remove;
	}
	BENCH_SPAWN(w, c->threads, filler_main);
	for (t = 0; t < c->threads; t++)
		after += w[t].t.fails;
	return after - before;
}

/*
 * A timed phase; on a dfkv node, its counters (tier, disk, zero-copy
 * replies) are taken around it.
 */
static void run_phase(struct config *c, struct worker *w, int phase)
{
	char label[96];
	struct bench_phase ph = {
		.phase = phase,
		.call = timed_call,
		.after_round = phase == PH_PUT ? remove_round : NULL,
		.calls = c->keys / c->batch,
		.ops_per_call = c->batch,
		.op_bytes = c->size,
		.label = label,
		.duration = o.duration,
		.max_calls = o.max_calls,
		/* After a restart, only the first round is cold. */
		.one_round = o.node.reattach && phase == PH_GET,
		.g = &o.g,
		.tier = o.be == B_DFKV ? NODE_NAME : NULL,
	};

	snprintf(label, sizeof(label), "dfkv-tcpbench: %s %s %" PRIu64
		 " B x%d b%d", backend_name[o.be], phase_name[phase], c->size,
		 c->threads, c->batch);
	BENCH_RUN(&ph, w, c->threads, &c->r[phase]);
}

/* Restart the node: every key is then on disk only; 0 or 1 failure. */
static uint64_t reattach(struct config *c, struct worker *w)
{
	int t, err;

	for (t = 0; t < c->threads; t++)
		client_close(&w[t]);
	err = bench_node_reattach(&o.g, &o.node);
	if (err)
		fprintf(stderr, "dfkv-tcpbench: restarting node %s: %s%s%s\n",
			NODE_NAME, strerror(-err), o.g.errmsg[0] ? ": " : "",
			o.g.errmsg);
	for (t = 0; t < c->threads; t++)
		if (client_open(&w[t]))
			exit(2);
	return err ? 1 : 0;
}

static int run_config(struct config *c)
{
	struct worker *w = calloc(c->threads, sizeof(*w));
	uint64_t extra = 0;
	int t, j;

	if (!w)
		return -1;
	for (t = 0; t < c->threads; t++) {
		w[t].t.tid = t;
		w[t].c = c;
		w[t].s.fd = -1;
		for (j = 0; j < c->batch; j++) {
			if (posix_memalign(&w[t].buf[j], 4096, c->size))
				exit(2);
			memset(w[t].buf[j], 0x5a, c->size);
		}
		if (client_open(&w[t]))
			return -1;
	}
	/*
	 * Warm-up: one store and removal round, then the timed phases (not
	 * with --reattach, where every PUT waits for the disk anyway).
	 */
	if (!o.node.reattach) {
		extra += fill_all(c, w, 0);
		extra += fill_all(c, w, 1);
	}
	run_phase(c, w, PH_PUT);
	extra += fill_all(c, w, 0);
	if (o.node.reattach)
		extra += reattach(c, w);
	run_phase(c, w, PH_GET);
	extra += fill_all(c, w, 1);
	c->r[PH_PUT].fails += extra;
	for (t = 0; t < c->threads; t++) {
		if (w[t].t.why[0] && extra)
			fprintf(stderr, "dfkv-tcpbench: %s untimed setup, thread %d: "
				"%s\n", backend_name[o.be], t, w[t].t.why);
		client_close(&w[t]);
		for (j = 0; j < c->batch; j++)
			free(w[t].buf[j]);
	}
	free(w);
	return 0;
}

/* --------------------------------------------------------------- JSON */

/* enum dfkv_rdma_expose by name (the Python binding's names) */
static const char *const expose_name[__DFKV_RDMA_EXPOSE_MAX] = {
	[DFKV_RDMA_EXPOSE_REQUEST] = "request",
	[DFKV_RDMA_EXPOSE_REQUEST_MR] = "request-mr",
	[DFKV_RDMA_EXPOSE_REQUEST_MW] = "request-mw",
	[DFKV_RDMA_EXPOSE_POOL] = "pool",
};

static int write_json(const struct config *cs, int n)
{
	FILE *f = fopen(o.json, "w");
	char desc[160];
	int i, tier = o.be == B_DFKV;

	if (!f) {
		fprintf(stderr, "dfkv-tcpbench: %s: %s\n", o.json, strerror(errno));
		return -1;
	}
	fprintf(f, "{\n  \"bench\": \"dfkv-tcpbench\",\n  \"backend\": \"%s\",\n"
		"  \"client\": \"%s\",\n  \"params\": {\"transport\": \"%s\", "
		"\"rdma_expose\": \"%s\", \"addr\": \"%s\", \"port\": %d, "
		"\"working_set_bytes\": %" PRIu64 ", \"duration_s\": %.2f, "
		"\"max_calls_per_thread\": %" PRIu64 ", \"node_ram_bytes\": %"
		PRIu64 ", \"node\": \"%s\"},\n  \"results\": [\n",
		backend_name[o.be],
		o.be == B_DFKV ? (o.rdma ? "libdfkv (RDMA transport, registered "
		"buffers, 1 connection per thread)" : "libdfkv (TCP transport, "
		"1 connection per thread)") :
		o.be == B_MEMCACHED ? "dfkv-tcpbench text protocol, 1 connection "
		"per thread, batch = pipelined set / multi-key get" :
		"dfkv-tcpbench RESP, 1 connection per thread, batch = pipelined "
		"SET/GET", o.rdma ? "rdma" : "tcp",
		expose_name[o.expose ? o.expose : DFKV_RDMA_EXPOSE_REQUEST],
		o.addr, o.port, o.wset,
		o.duration, o.max_calls, o.ram,
		o.be == B_DFKV ? bench_node_desc(&o.node, desc, sizeof(desc)) : "");
	for (i = 0; i < n; i++) {
		const struct config *c = &cs[i];

		fprintf(f, "    {\"value_bytes\": %" PRIu64 ", \"threads\": %d, "
			"\"batch\": %d, \"keys_per_thread\": %" PRIu64 ",\n",
			c->size, c->threads, c->batch, c->keys);
		bench_json_result(f, 6, "put", &c->r[PH_PUT], tier, 0);
		bench_json_result(f, 6, "get", &c->r[PH_GET], tier, 1);
		fprintf(f, "    }%s\n", i + 1 < n ? "," : "");
	}
	fprintf(f, "  ]\n}\n");
	return fclose(f);
}

/* --------------------------------------------------------------- main */

static void usage(FILE *f)
{
	fprintf(f,
"usage: dfkv-tcpbench [options] JSON_PATH\n"
"       dfkv-tcpbench --backend redis --port P --fill SIZE,N\n"
"       dfkv-tcpbench --cleanup\n"
"\n"
"PUT/GET over TCP (or RDMA): the in-kernel dfkv node through libdfkv\n"
"(creates node \"" NODE_NAME "\" with a listener; needs dfkv.ko and\n"
"CAP_NET_ADMIN), or a running memcached or redis-server.  Writes JSON;\n"
"exits 1 if any operation failed.\n"
"\n"
"  --backend NAME   dfkv (default), memcached, redis\n"
"  --addr A         the server's IPv4 address (dfkv: the listener's;\n"
"                   default 127.0.0.1)\n"
"  --port N         TCP port (dfkv: the listener to create; default 7450)\n"
"  --transport T    dfkv only: tcp (default) or rdma (an RDMA listener on\n"
"                   --addr, which must be an RDMA device's address, and\n"
"                   the libdfkv RDMA transport with registered buffers)\n"
"  --rdma-expose E  with rdma: libdfkv's rdma_expose, request (default),\n"
"                   request-mr, request-mw or pool\n"
"  --ram MiB        dfkv node RAM budget (default 512)\n"
"  --wset MiB       working set split over threads (default 64; at least\n"
"                   one batch of keys per thread)\n"
"  --duration SEC   timed work per phase (default 1)\n"
"  --max-calls N    per thread and phase (default 100000)\n"
"  --sizes LIST     value sizes in KiB (default 64,1024,4096)\n"
"  --threads LIST   client threads (default 1,4)\n"
"  --batches LIST   operations per call (default 1,16; at most %d)\n"
BENCH_NODE_USAGE
"  --fill SIZE,N    redis only: store N values of SIZE bytes under\n"
"                   redis-benchmark's key names, then exit\n"
"  --cleanup        delete the dfkv bench node if it exists, then exit\n",
		BATCH_MAX);
}

static int redis_fill(uint64_t size, uint64_t n)
{
	struct worker w = { 0 };
	char names[1][64];
	uint64_t i, f = 0;

	w.s.fd = -1;
	if (client_open(&w))
		return 2;
	if (posix_memalign(&w.buf[0], 4096, size))
		return 2;
	memset(w.buf[0], 'x', size);
	for (i = 0; i < n; i++) {
		snprintf(names[0], sizeof(names[0]), "key:%012" PRIu64, i);
		f += do_put(&w, names, 1, size);
	}
	if (f)
		fprintf(stderr, "dfkv-tcpbench: redis fill: %" PRIu64
			" failures, first: %s\n", f, w.t.why);
	client_close(&w);
	free(w.buf[0]);
	return f ? 1 : 0;
}

/* The index of name s in names[n], or -1. */
static int name_index(const char *const *names, int n, const char *s)
{
	for (int i = 0; i < n; i++)
		if (names[i] && !strcmp(s, names[i]))
			return i;
	return -1;
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "backend", required_argument, NULL, 'B' },
		{ "addr", required_argument, NULL, 'a' },
		{ "port", required_argument, NULL, 'p' },
		{ "transport", required_argument, NULL, 'T' },
		{ "rdma-expose", required_argument, NULL, 'E' },
		{ "ram", required_argument, NULL, 'r' },
		{ "wset", required_argument, NULL, 'w' },
		{ "duration", required_argument, NULL, 'd' },
		{ "max-calls", required_argument, NULL, 'm' },
		{ "sizes", required_argument, NULL, 's' },
		{ "threads", required_argument, NULL, 't' },
		{ "batches", required_argument, NULL, 'b' },
		{ "fill", required_argument, NULL, 'f' },
		{ "cleanup", no_argument, NULL, 'c' },
		BENCH_NODE_LONGOPTS,
		{ "help", no_argument, NULL, 'h' },
		{ 0 }
	};
	uint64_t sizes[8] = { 64, 1024, 4096 }, threads[8] = { 1, 4 };
	uint64_t batches[8] = { 1, 16 }, fillv[2] = { 0, 0 };
	int nsizes = 3, nthreads = 2, nbatches = 2, cleanup = 0, dofill = 0;
	int n = 0, i, j, k, opt, err, rc = 0;
	struct config cs[128];
	struct dfkv_genl *g = &o.g;
	uint64_t fails = 0;

	while ((opt = getopt_long(argc, argv, "h", lo, NULL)) != -1) {
		switch (opt) {
		case 'B':
			if ((i = name_index(backend_name, 3, optarg)) < 0)
				goto bad;
			o.be = i;
			break;
		case 'a': o.addr = optarg; break;
		case 'p': o.port = atoi(optarg); break;
		case 'T':
			if (strcmp(optarg, "tcp") && strcmp(optarg, "rdma"))
				goto bad;
			o.rdma = !strcmp(optarg, "rdma");
			break;
		case 'E':
			if ((i = name_index(expose_name, __DFKV_RDMA_EXPOSE_MAX,
					    optarg)) < 0)
				goto bad;
			o.expose = (uint32_t)i;
			break;
		case 'r': o.ram = strtoull(optarg, NULL, 10) * MIB; break;
		case 'w': o.wset = strtoull(optarg, NULL, 10) * MIB; break;
		case 'd': o.duration = strtod(optarg, NULL); break;
		case 'm': o.max_calls = strtoull(optarg, NULL, 10); break;
		case 's':
			if ((nsizes = bench_parse_list(optarg, sizes, 8)) < 1)
				goto bad;
			break;
		case 't':
			if ((nthreads = bench_parse_list(optarg, threads, 8)) < 1)
				goto bad;
			break;
		case 'b':
			if ((nbatches = bench_parse_list(optarg, batches, 8)) < 1)
				goto bad;
			break;
		case 'f':
			if (bench_parse_list(optarg, fillv, 2) != 2)
				goto bad;
			dofill = 1;
			break;
		case 'c': cleanup = 1; break;
		case 'h': usage(stdout); return 0;
		default:
			if (bench_node_opt(&o.node, opt, optarg))
				goto bad;
		}
	}
	if (!o.port)
		o.port = o.be == B_DFKV ? 7450 : o.be == B_MEMCACHED ? 11211 : 6379;
	for (k = 0; k < nbatches; k++)
		if (batches[k] > BATCH_MAX)
			goto bad;
	if (dofill)
		return o.be == B_REDIS ? redis_fill(fillv[0], fillv[1]) : 2;
	if (!cleanup && optind + 1 != argc)
		goto bad;
	if (!cleanup)
		o.json = argv[optind];
	if (!o.ram || !o.wset || o.duration <= 0 || !o.max_calls ||
	    (o.rdma && o.be != B_DFKV) || (o.expose && !o.rdma))
		goto bad;

	if (o.be == B_DFKV || cleanup) {
		err = dfkv_genl_open(g);
		if (err) {
			fprintf(stderr, "dfkv-tcpbench: netlink family dfkv: %s\n",
				strerror(-err));
			return 2;
		}
		if (cleanup) {
			err = bench_node_del(g, NODE_NAME);
			dfkv_genl_close(g);
			return err && err != -ENOENT && err != -ENODEV ? 1 : 0;
		}
		o.node.ram = o.ram;
		o.node.listen = o.addr;
		o.node.port = o.port;
		o.node.transport = o.rdma ? DFKV_LISTENER_RDMA : DFKV_LISTENER_TCP;
		err = bench_node_add(g, &o.node);
		if (err) {
			fprintf(stderr, "dfkv-tcpbench: cannot create node %s with "
				"a%s listener on %s:%d: %s%s%s\n", NODE_NAME,
				o.rdma ? "n RDMA" : " TCP", o.addr, o.port,
				strerror(-err), g->errmsg[0] ? ": " : "", g->errmsg);
			bench_node_del(g, NODE_NAME);
			dfkv_genl_close(g);
			return 2;
		}
	}

	for (i = 0; i < nsizes; i++)
		for (j = 0; j < nthreads; j++)
			for (k = 0; k < nbatches; k++) {
				struct config *c = &cs[n];

				memset(c, 0, sizeof(*c));
				c->size = sizes[i] * 1024;
				c->threads = (int)threads[j];
				c->batch = (int)batches[k];
				c->keys = o.wset / c->threads / c->size;
				if (o.node.max_keys && c->keys > o.node.max_keys)
					c->keys = o.node.max_keys;
				c->keys -= c->keys % c->batch;
				if (c->keys < (uint64_t)c->batch)
					c->keys = c->batch;
				fprintf(stderr, "dfkv-tcpbench: %s %" PRIu64
					" KiB x %d thread(s) batch %d, %" PRIu64
					" keys each\n", backend_name[o.be],
					sizes[i], c->threads, c->batch, c->keys);
				if (run_config(c)) {
					rc = 2;
					goto out;
				}
				fails += c->r[PH_PUT].fails + c->r[PH_GET].fails;
				n++;
			}
	if (write_json(cs, n))
		rc = 2;
	else if (fails)
		rc = 1;
out:
	if (o.be == B_DFKV) {
		err = bench_node_del(g, NODE_NAME);
		if (err) {
			fprintf(stderr, "dfkv-tcpbench: cannot delete node %s: %s\n",
				NODE_NAME, g->errmsg[0] ? g->errmsg : strerror(-err));
			rc = rc ? rc : 1;
		}
		dfkv_genl_close(g);
	}
	return rc;
bad:
	usage(stderr);
	return 2;
}
