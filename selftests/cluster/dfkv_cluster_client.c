// SPDX-License-Identifier: GPL-2.0
/*
 * dfkv_cluster_client: the libdfkv side of selftests/dfkv_cluster.sh.
 *
 * Every block is named by one canonical namespace (tenant "cluster") and
 * the object key "block-NNNNN"; its value is SIZE bytes (between MIN and
 * MAX, derived from the index) of a pattern derived from the index, so
 * any later run can check a block without remembering it.
 *
 *   spread MEMBERS N MIN MAX
 *       Store blocks 0..N-1 with dfkv_put_batch, load every one back with
 *       dfkv_get_batch and compare byte for byte.  Prints one line
 *       "route NAME COUNT" per member: how many blocks the Ketama ring
 *       (dfkv_ring_build/route over the member names and weights, built
 *       here independently of the client) gives it; the client's own
 *       routing (dfkv_locate) must agree for every block.
 *   midrun MEMBERS N MIN MAX VICTIM CMD
 *       Readers (threads, scalar dfkv_get and dfkv_get_batch) load the
 *       blocks in passes.  After the first pass, CMD runs (it deletes node
 *       VICTIM).  Every call must return (the script bounds the run; the
 *       slowest call is printed, never judged: a timing threshold
 *       would fail on a stalled host, not on a bug); reads of
 *       VICTIM's blocks may be hits (byte-exact) before CMD and must be
 *       misses after; every other block stays a byte-exact hit.  Then new
 *       blocks are stored: the others accept theirs, VICTIM's are dropped
 *       (DFKV_E_UNAVAILABLE, counted), nothing hangs.
 *   local MEMBERS N MIN MAX auto|tcp
 *       Store and load N blocks (keys "local-NNNNN") and print the
 *       client's request counters by transport: "requests tcp T local L".
 *
 * Exit status 0 when every check passed; failures are printed on stderr.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <dfkv.h>

#define CHUNK		256		/* blocks per batch call */
#define NREADERS	4

static unsigned int n_blocks;
static uint64_t min_size, max_size;
static const char *key_prefix = "block";
static atomic_int failures;

#define FAIL(...)							\
	do {								\
		if (atomic_fetch_add(&failures, 1) < 20)		\
			fprintf(stderr, "FAIL: " __VA_ARGS__);		\
	} while (0)

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static uint64_t mix(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdULL;
	x ^= x >> 33;
	x *= 0xc4ceb9fe1a85ec53ULL;
	x ^= x >> 33;
	return x;
}

static uint64_t block_size(unsigned int i)
{
	return min_size + mix(i + 1) % (max_size - min_size + 1);
}

static int block_key(unsigned int i, char *buf)
{
	return sprintf(buf, "%s-%05u", key_prefix, i);
}

static void block_fill(unsigned int i, uint8_t *buf, uint64_t len)
{
	uint64_t s = mix(0x5eed0000ULL + i);

	for (uint64_t o = 0; o < len; o += 8) {
		s = s * 6364136223846793005ULL + 1442695040888963407ULL;
		for (unsigned int b = 0; b < 8 && o + b < len; b++)
			buf[o + b] = (uint8_t)(s >> (8 * b));
	}
}

static bool block_check(unsigned int i, const uint8_t *buf, uint64_t len,
			uint8_t *scratch)
{
	if (len != block_size(i))
		return false;
	block_fill(i, scratch, len);
	return !memcmp(buf, scratch, len);
}

/* --------------------------------------------------------- identity */

static uint8_t ns[512];
static uint64_t ns_len;

static void make_ns(void)
{
	struct dfkv_span lf[] = { { "k:2x4x16x64", 11 }, { "v:2x4x16x64", 11 } };
	struct dfkv_ns_desc d = {
		.size = sizeof(d),
		.tenant = { "cluster", 7 },
		.model_id = { "dfkv/test-model", 15 },
		.model_revision = { "1", 1 },
		.layout_id = { "vllm-multiwr-v4", 15 },
		.dtype = { "bfloat16", 8 },
		.block_tokens = 16, .num_layers = 2,
		.group = { "full", 4 },
		.tp = 1, .pp = 1, .dp = 1, .pcp = 1, .dcp = 1,
	};

	if (dfkv_layout_fingerprint(lf, 2, &d.layout_fingerprint) ||
	    dfkv_ns_build(&d, ns, sizeof(ns), &ns_len)) {
		fprintf(stderr, "cannot build the namespace\n");
		exit(2);
	}
}

/* ------------------------------------------------------------ members */

struct member {
	char name[DFKV_NODE_NAME_MAX];
	uint32_t weight;
	unsigned int count;
};

static struct member members[16];
static size_t n_members;
static struct dfkv_ring *ring;

/* "name=host:port[@w],..." -> names and weights, and the ring over them. */
static void parse_members(const char *list)
{
	struct dfkv_ring_member rm[16];
	char *copy = strdup(list), *save = NULL, *tok;

	for (tok = strtok_r(copy, ",", &save); tok;
	     tok = strtok_r(NULL, ",", &save)) {
		char *eq = strchr(tok, '='), *at = strrchr(tok, '@');
		struct member *m = &members[n_members];

		if (!eq || n_members == 16 ||
		    (size_t)(eq - tok) >= sizeof(m->name)) {
			fprintf(stderr, "bad member '%s'\n", tok);
			exit(2);
		}
		memcpy(m->name, tok, (size_t)(eq - tok));
		m->name[eq - tok] = '\0';
		m->weight = at ? (uint32_t)atoi(at + 1) : 1;
		rm[n_members] = (struct dfkv_ring_member){ m->name, m->weight };
		n_members++;
	}
	free(copy);
	if (dfkv_ring_build(rm, n_members, &ring)) {
		fprintf(stderr, "dfkv_ring_build failed\n");
		exit(2);
	}
}

/* Index of the member block i belongs to, by the ring API. */
static size_t ring_owner(unsigned int i)
{
	char key[64];
	uint8_t id[DFKV_OBJECT_ID_LEN];
	size_t m = SIZE_MAX;
	int n = block_key(i, key);

	if (dfkv_object_id(ns, ns_len, key, (uint64_t)n, id) ||
	    dfkv_ring_route(ring, id, DFKV_PROBE_NODE, &m)) {
		fprintf(stderr, "routing block %u failed\n", i);
		exit(2);
	}
	return m;
}

static struct dfkv_client *open_client(const char *list, uint32_t transport)
{
	struct dfkv_client_options_v2 o = {
		.size = sizeof(o),
		.transport = transport,
		.members = list,
		.ns = ns, .ns_len = ns_len,
		/* One pooled connection per reader thread; timeouts with room
		 * for software emulation, short enough to see a hang. */
		.conns_per_peer = NREADERS,
		.connect_timeout_ms = 3000,
		.io_timeout_ms = 5000,
		.cooldown_ms = 500,
	};
	struct dfkv_client *c;
	int st = dfkv_open_v2(&o, &c);

	if (st) {
		fprintf(stderr, "dfkv_open_v2: %s\n", dfkv_strerror(st));
		exit(2);
	}
	return c;
}

static void print_transport_counters(struct dfkv_client *c)
{
	static char text[1 << 16];
	uint64_t len = 0, tcp = 0, local = 0;
	char *p;

	if (dfkv_stats_snapshot(c, text, sizeof(text) - 1, &len)) {
		FAIL("dfkv_stats_snapshot\n");
		return;
	}
	text[len] = '\0';
	p = strstr(text, "dfkv_client_requests_total{transport=\"tcp\"} ");
	if (p)
		tcp = strtoull(strchr(p, ' ') + 1, NULL, 10);
	p = strstr(text, "dfkv_client_requests_total{transport=\"local\"} ");
	if (p)
		local = strtoull(strchr(p, ' ') + 1, NULL, 10);
	printf("requests tcp %" PRIu64 " local %" PRIu64 "\n", tcp, local);
	for (p = strtok(text, "\n"); p; p = strtok(NULL, "\n"))
		if (*p != '#' && (strstr(p, "connects_total") ||
				  strstr(p, "connection_failures") ||
				  strstr(p, "peer_skips") ||
				  strstr(p, "dropped_writes") ||
				  strstr(p, "degraded_reads") ||
				  strstr(p, "result=\"unavailable") ||
				  strstr(p, "result=\"timeout")))
			printf("client %s\n", p);
}

/* -------------------------------------------------------- store/load */

struct chunk {
	const void *keys[CHUNK];
	uint64_t key_lens[CHUNK];
	char key_buf[CHUNK][64];
	void *bufs[CHUNK];
	uint64_t caps[CHUNK], lens[CHUNK];
	int st[CHUNK];
};

static struct chunk *chunk_new(void)
{
	struct chunk *ch = calloc(1, sizeof(*ch));

	for (unsigned int j = 0; j < CHUNK; j++) {
		ch->bufs[j] = malloc(max_size);
		ch->caps[j] = max_size;
		ch->keys[j] = ch->key_buf[j];
	}
	return ch;
}

static void chunk_free(struct chunk *ch)
{
	for (unsigned int j = 0; j < CHUNK; j++)
		free(ch->bufs[j]);
	free(ch);
}

/* Keys of blocks first..first+n-1 into ch. */
static void chunk_keys(struct chunk *ch, unsigned int first, unsigned int n)
{
	for (unsigned int j = 0; j < n; j++)
		ch->key_lens[j] = (uint64_t)block_key(first + j,
						      ch->key_buf[j]);
}

/* Store blocks [0, n); returns the number stored OK. */
static unsigned int store_all(struct dfkv_client *c, unsigned int n,
			      int *statuses)
{
	struct chunk *ch = chunk_new();
	unsigned int ok = 0;

	for (unsigned int i = 0; i < n; i += CHUNK) {
		unsigned int m = n - i < CHUNK ? n - i : CHUNK;
		int rc;

		chunk_keys(ch, i, m);
		for (unsigned int j = 0; j < m; j++) {
			ch->lens[j] = block_size(i + j);
			block_fill(i + j, ch->bufs[j], ch->lens[j]);
		}
		rc = dfkv_put_batch(c, m, ch->keys, ch->key_lens,
				    (const void *const *)ch->bufs, ch->lens,
				    ch->st);
		if (rc < 0)
			FAIL("put_batch at %u: %s\n", i, dfkv_strerror(rc));
		for (unsigned int j = 0; j < m; j++) {
			statuses[i + j] = ch->st[j];
			ok += ch->st[j] == DFKV_STATUS_OK;
		}
	}
	chunk_free(ch);
	return ok;
}

/*
 * Load blocks [0, n) with dfkv_get_batch; statuses[i] gets each result,
 * and a hit with wrong bytes fails the run.
 */
static void load_all(struct dfkv_client *c, unsigned int n, int *statuses)
{
	struct chunk *ch = chunk_new();
	uint8_t *scratch = malloc(max_size);

	for (unsigned int i = 0; i < n; i += CHUNK) {
		unsigned int m = n - i < CHUNK ? n - i : CHUNK;
		int rc;

		chunk_keys(ch, i, m);
		for (unsigned int j = 0; j < m; j++)
			memset(ch->bufs[j], 0xa5, 64);
		rc = dfkv_get_batch(c, m, ch->keys, ch->key_lens, ch->bufs,
				    ch->caps, ch->lens, ch->st);
		if (rc < 0)
			FAIL("get_batch at %u: %s\n", i, dfkv_strerror(rc));
		for (unsigned int j = 0; j < m; j++) {
			statuses[i + j] = ch->st[j];
			if (ch->st[j] == DFKV_STATUS_OK &&
			    !block_check(i + j, ch->bufs[j], ch->lens[j],
					 scratch))
				FAIL("block %u: wrong bytes (%" PRIu64 " of %" PRIu64 ")\n",
				     i + j, ch->lens[j], block_size(i + j));
		}
	}
	free(scratch);
	chunk_free(ch);
}

/* ------------------------------------------------------------- spread */

static int cmd_spread(const char *list)
{
	struct dfkv_client *c = open_client(list, DFKV_TRANSPORT_AUTO);
	int *st = calloc(n_blocks, sizeof(int));
	unsigned int ok, hits = 0, i;
	uint64_t t0 = now_ms();

	ok = store_all(c, n_blocks, st);
	for (i = 0; i < n_blocks; i++)
		if (st[i] != DFKV_STATUS_OK)
			FAIL("put block %u: %s\n", i, dfkv_strerror(st[i]));
	printf("stored %u of %u blocks in %" PRIu64 " ms\n", ok, n_blocks,
	       now_ms() - t0);
	t0 = now_ms();
	load_all(c, n_blocks, st);
	for (i = 0; i < n_blocks; i++) {
		if (st[i] == DFKV_STATUS_OK)
			hits++;
		else
			FAIL("get block %u: %s\n", i, dfkv_strerror(st[i]));
	}
	printf("loaded %u of %u blocks byte-exact in %" PRIu64 " ms\n", hits,
	       n_blocks, now_ms() - t0);

	/* The ring's routing, and the client's agreement with it. */
	for (i = 0; i < n_blocks; i++) {
		size_t m = ring_owner(i);
		const char *who = NULL;
		char key[64];
		int n = block_key(i, key);

		members[m].count++;
		if (dfkv_locate(c, key, (uint64_t)n, &who, NULL) || !who ||
		    strcmp(who, members[m].name))
			FAIL("block %u: client routes to %s, ring to %s\n", i,
			     who ? who : "?", members[m].name);
	}
	for (size_t m = 0; m < n_members; m++)
		printf("route %s %u\n", members[m].name, members[m].count);
	print_transport_counters(c);
	dfkv_close(c);
	free(st);
	return atomic_load(&failures) ? 1 : 0;
}

/* ------------------------------------------------------------- midrun */

static size_t victim;			/* member index */
static atomic_int phase;		/* 0 before CMD, 1 running, 2 after */
static atomic_uint passes_before, passes_after;
static struct dfkv_client *shared;
static atomic_ullong worst_ms, calls, hits_victim_after, misses_other;
static uint64_t t_delete;		/* when CMD started */
static atomic_uint other_miss_by[16];
static atomic_llong other_miss_first = -1, other_miss_last = -1;

struct reader {
	pthread_t t;
	unsigned int id;
	bool batch;
};

static void account(unsigned int i, int st, bool after, uint64_t ms)
{
	bool on_victim = ring_owner(i) == victim;

	atomic_fetch_add(&calls, 1);
	if (ms > atomic_load(&worst_ms))
		atomic_store(&worst_ms, ms);
	if (st != DFKV_STATUS_OK && st != DFKV_STATUS_NOT_FOUND) {
		FAIL("block %u (%s): %s (%d)\n", i,
		     on_victim ? "victim" : "other", dfkv_strerror(st), st);
		return;
	}
	if (!on_victim && st != DFKV_STATUS_OK) {
		int64_t rel = t_delete ? (int64_t)(now_ms() - t_delete) : -1;
		long long none = -1;

		atomic_fetch_add(&misses_other, 1);
		atomic_fetch_add(&other_miss_by[ring_owner(i)], 1);
		atomic_compare_exchange_strong(&other_miss_first, &none, rel);
		atomic_store(&other_miss_last, rel);
		FAIL("block %u on surviving %s missed, %lld ms after the deletion started\n",
		     i, members[ring_owner(i)].name, (long long)rel);
	}
	if (on_victim && after && st == DFKV_STATUS_OK) {
		atomic_fetch_add(&hits_victim_after, 1);
		FAIL("block %u of the deleted node still hit\n", i);
	}
}

static void *reader_main(void *arg)
{
	struct reader *r = arg;
	uint8_t *buf = malloc(max_size), *scratch = malloc(max_size);
	struct chunk *ch = r->batch ? chunk_new() : NULL;
	unsigned int pass = 0;

	for (;;) {
		/* A pass counts as "after" only if it started after CMD. */
		bool after = atomic_load(&phase) == 2;
		unsigned int start = (r->id * n_blocks) / NREADERS;
		unsigned int end = ((r->id + 1) * n_blocks) / NREADERS;
		unsigned int span = end - start;

		for (unsigned int k = 0; k < span;) {
			unsigned int i = start + k;
			uint64_t t0 = now_ms(), len = 0;

			if (!ch) {
				char key[64];
				int n = block_key(i, key);
				int st = dfkv_get(shared, key, (uint64_t)n, buf,
						  max_size, &len);

				account(i, st, after, now_ms() - t0);
				if (st == DFKV_STATUS_OK &&
				    !block_check(i, buf, len, scratch))
					FAIL("block %u: wrong bytes\n", i);
				k++;
			} else {
				unsigned int m = CHUNK / 4;

				if (m > span - k)
					m = span - k;
				chunk_keys(ch, i, m);
				if (dfkv_get_batch(shared, m, ch->keys,
						   ch->key_lens, ch->bufs,
						   ch->caps, ch->lens,
						   ch->st) < 0)
					FAIL("get_batch failed\n");
				for (unsigned int j = 0; j < m; j++) {
					account(i + j, ch->st[j], after,
						now_ms() - t0);
					if (ch->st[j] == DFKV_STATUS_OK &&
					    !block_check(i + j, ch->bufs[j],
							 ch->lens[j], scratch))
						FAIL("block %u: wrong bytes\n",
						     i + j);
				}
				k += m;
			}
		}
		pass++;
		if (after) {
			atomic_fetch_add(&passes_after, 1);
			break;
		}
		if (pass == 1)
			atomic_fetch_add(&passes_before, 1);
	}
	free(buf);
	free(scratch);
	if (ch)
		chunk_free(ch);
	return NULL;
}

static int cmd_midrun(const char *list, const char *victim_name,
		      const char *cmd)
{
	struct reader rd[NREADERS];
	unsigned int per[16] = { 0 }, post[16] = { 0 }, i, n_post = 512;
	unsigned int dropped = 0, stored = 0;
	int *st;
	uint64_t t0;
	size_t m;

	victim = SIZE_MAX;
	for (m = 0; m < n_members; m++)
		if (!strcmp(members[m].name, victim_name))
			victim = m;
	if (victim == SIZE_MAX) {
		fprintf(stderr, "no member %s\n", victim_name);
		return 2;
	}
	shared = open_client(list, DFKV_TRANSPORT_AUTO);
	{
		uint64_t len = 1;
		uint8_t b;

		/* a null key fails closed, at once, and clears the length */
		if (dfkv_get(shared, NULL, 0, &b, 1, &len) != DFKV_E_INVAL ||
		    len)
			FAIL("null key not rejected\n");
	}
	for (i = 0; i < NREADERS; i++) {
		rd[i].id = i;
		rd[i].batch = i % 2;
		pthread_create(&rd[i].t, NULL, reader_main, &rd[i]);
	}
	while (atomic_load(&passes_before) < NREADERS && !atomic_load(&failures))
		nanosleep(&(struct timespec){ 0, 20000000 }, NULL);
	printf("readers: one full pass each before the deletion, %llu calls\n",
	       (unsigned long long)atomic_load(&calls));
	atomic_store(&phase, 1);
	t0 = t_delete = now_ms();
	if (system(cmd) != 0)
		FAIL("'%s' failed\n", cmd);
	printf("'%s' took %" PRIu64 " ms while readers ran\n", cmd,
	       now_ms() - t0);
	atomic_store(&phase, 2);
	for (i = 0; i < NREADERS; i++)
		pthread_join(rd[i].t, NULL);
	printf("readers: %llu calls, slowest %llu ms, %u passes after the deletion\n",
	       (unsigned long long)atomic_load(&calls),
	       (unsigned long long)atomic_load(&worst_ms),
	       atomic_load(&passes_after));
	if (atomic_load(&misses_other)) {
		printf("surviving nodes missed %llu reads, %lld..%lld ms after the deletion started:",
		       (unsigned long long)atomic_load(&misses_other),
		       (long long)atomic_load(&other_miss_first),
		       (long long)atomic_load(&other_miss_last));
		for (m = 0; m < n_members; m++)
			printf(" %s %u", members[m].name,
			       atomic_load(&other_miss_by[m]));
		printf("\n");
	}

	/* The last word: one more batch pass over everything. */
	st = calloc(n_blocks, sizeof(int));
	load_all(shared, n_blocks, st);
	for (i = 0; i < n_blocks; i++) {
		bool on_victim = ring_owner(i) == victim;

		if (on_victim ? st[i] != DFKV_STATUS_NOT_FOUND :
				st[i] != DFKV_STATUS_OK)
			FAIL("final pass: block %u (%s): %s\n", i,
			     on_victim ? "victim" : "other",
			     dfkv_strerror(st[i]));
		per[ring_owner(i)] += st[i] == DFKV_STATUS_OK;
	}
	for (m = 0; m < n_members; m++)
		printf("hits %s %u\n", members[m].name, per[m]);
	free(st);

	/* New writes: the survivors take theirs, the victim's are dropped. */
	key_prefix = "post";
	st = calloc(n_post, sizeof(int));
	t0 = now_ms();
	store_all(shared, n_post, st);
	for (i = 0; i < n_post; i++) {
		bool on_victim = ring_owner(i) == victim;

		if (on_victim && st[i] == DFKV_E_UNAVAILABLE)
			dropped++;
		else if (!on_victim && st[i] == DFKV_STATUS_OK)
			stored++, post[ring_owner(i)]++;
		else
			FAIL("post-deletion put %u (%s): %s\n", i,
			     on_victim ? "victim" : "other",
			     dfkv_strerror(st[i]));
	}
	printf("after the deletion: %u new blocks stored, %u dropped, %" PRIu64 " ms\n",
	       stored, dropped, now_ms() - t0);
	for (m = 0; m < n_members; m++)
		printf("post %s %u\n", members[m].name, post[m]);
	load_all(shared, n_post, st);
	for (i = 0; i < n_post; i++)
		if ((ring_owner(i) == victim) !=
		    (st[i] == DFKV_STATUS_NOT_FOUND))
			FAIL("post-deletion get %u: %s\n", i,
			     dfkv_strerror(st[i]));
	free(st);
	print_transport_counters(shared);
	dfkv_close(shared);
	return atomic_load(&failures) ? 1 : 0;
}

/* -------------------------------------------------------------- local */

static int cmd_local(const char *list, const char *mode)
{
	uint32_t t = !strcmp(mode, "tcp") ? DFKV_TRANSPORT_TCP :
		     !strcmp(mode, "local") ? DFKV_TRANSPORT_LOCAL :
					      DFKV_TRANSPORT_AUTO;
	struct dfkv_client *c = open_client(list, t);
	int *st = calloc(n_blocks, sizeof(int));
	unsigned int i;

	key_prefix = t == DFKV_TRANSPORT_TCP ? "tcp" : "local";
	store_all(c, n_blocks, st);
	for (i = 0; i < n_blocks; i++)
		if (st[i] != DFKV_STATUS_OK)
			FAIL("put %u: %s\n", i, dfkv_strerror(st[i]));
	load_all(c, n_blocks, st);
	for (i = 0; i < n_blocks; i++)
		if (st[i] != DFKV_STATUS_OK)
			FAIL("get %u: %s\n", i, dfkv_strerror(st[i]));
	print_transport_counters(c);
	dfkv_close(c);
	free(st);
	return atomic_load(&failures) ? 1 : 0;
}

int main(int argc, char *argv[])
{
	if (argc < 6) {
		fprintf(stderr,
			"usage: %s spread MEMBERS N MIN MAX\n"
			"       %s midrun MEMBERS N MIN MAX VICTIM CMD\n"
			"       %s local MEMBERS N MIN MAX auto|tcp|local\n",
			argv[0], argv[0], argv[0]);
		return 2;
	}
	n_blocks = (unsigned int)strtoul(argv[3], NULL, 0);
	min_size = strtoull(argv[4], NULL, 0);
	max_size = strtoull(argv[5], NULL, 0);
	if (!n_blocks || !min_size || max_size < min_size) {
		fprintf(stderr, "bad N/MIN/MAX\n");
		return 2;
	}
	make_ns();
	parse_members(argv[2]);
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (!strcmp(argv[1], "spread"))
		return cmd_spread(argv[2]);
	if (!strcmp(argv[1], "midrun") && argc == 8)
		return cmd_midrun(argv[2], argv[6], argv[7]);
	if (!strcmp(argv[1], "local") && argc == 7)
		return cmd_local(argv[2], argv[6]);
	fprintf(stderr, "bad command\n");
	return 2;
}
