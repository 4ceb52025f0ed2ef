// SPDX-License-Identifier: GPL-2.0
/*
 * Unit tests of libdfkv discovery (SPEC.md 7 and 1.4) against a real
 * build/tools/mdsd (memory backend) started by each test on 127.0.0.1:
 * the client's ring follows the group's members within one long-poll and
 * equals the reference Ketama ring; a 4th member moves about a quarter of
 * the keys (all to it); a removal or an unhealthy state drops a member,
 * draining keeps it; mdsd down keeps the last ring and the next endpoint
 * is tried; a loss of more than half is held for the grace period, then
 * applied; client registration appears with dfkv_open_v2 and disappears
 * with dfkv_close; with an mdsd run with --token-file, mds_token_file
 * registers (and deregisters) the client, a wrong, missing or unusable
 * token fails the open with DFKV_E_AUTH, a token refused later is
 * counted; with a member and a client token, the client token registers
 * the client (not a member); two clients with one client token and one
 * client_id: the second cannot take, renew or delete the first's entry
 * (403, counted), the first still heartbeats, once the first's entry is
 * deleted (its close, the member token) the second takes it; a member list whose weights add up to more than the directory's
 * cap (8192) is refused: the ring in force stays, a new client's open
 * fails with DFKV_E_MEMBERS, a list under the cap is followed; against a
 * scripted fake mdsd, a 429 to the member poll and a 503 to the heartbeat
 * with Retry-After: the next request of each comes no earlier than the
 * advertised seconds (measured on the same monotonic clock), and the
 * heartbeats go on while the polls wait.  The nodes
 * themselves are not needed (routing only).
 * Skipped when build/tools/mdsd is missing (make tools).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <curl/curl.h>

/* kselftest_harness.h (6.1) is not -Wextra clean */
#pragma GCC diagnostic ignored "-Wunused-parameter"
#pragma GCC diagnostic ignored "-Wsign-compare"
#pragma GCC diagnostic ignored "-Wmisleading-indentation"
#include "kselftest_harness.h"
#include "dfkv.h"

#define NKEYS		10000
/* What a wait for an event may take before it fails: only a hang. */
#define HANG_MS		60000
#define FOLLOW_MS	3000	/* "within one poll": the long-poll answers
				 * at the change; this only bounds a failure */

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static void sleep_ms(unsigned int ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

/* build/tools/mdsd next to build/unit/<this test>, or $DFKV_MDSD. */
static const char *mdsd_path(void)
{
	static char path[PATH_MAX + 32];
	char self[PATH_MAX];
	ssize_t n;
	char *slash;

	if (getenv("DFKV_MDSD"))
		return getenv("DFKV_MDSD");
	n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n <= 0)
		return NULL;
	self[n] = 0;
	slash = strrchr(self, '/');
	if (!slash)
		return NULL;
	*slash = 0;
	snprintf(path, sizeof(path), "%s/../tools/mdsd", self);
	return access(path, X_OK) ? NULL : path;
}

/*
 * A loopback port nobody listens on, outside the ephemeral range (and
 * never the same one twice in a run).  A port from that range (what bind
 * to port 0 gives) can be taken before mdsd binds it by any connection's
 * local port, including a client's connect to it while nothing listens
 * there: such a connect may pick that very port as its own and connect
 * to itself (TCP simultaneous open).  -1 when none is free.
 */
static int free_port(void)
{
	static unsigned int next;
	unsigned int lo = 32768, hi = 60999, i;
	FILE *f = fopen("/proc/sys/net/ipv4/ip_local_port_range", "r");

	if (f) {
		if (fscanf(f, "%u %u", &lo, &hi) != 2)
			lo = 32768, hi = 60999;
		fclose(f);
	}
	if (!next)
		next = 1024 + (unsigned int)getpid() % 20000;
	for (i = 0; i < 65536 - 1024; i++) {
		struct sockaddr_in a = {
			.sin_family = AF_INET,
			.sin_addr.s_addr = htonl(INADDR_LOOPBACK),
		};
		unsigned int p = next++;
		int fd, ok;

		if (next > 65535)
			next = 1024;
		if (p >= lo && p <= hi)
			continue;
		fd = socket(AF_INET, SOCK_STREAM, 0);
		if (fd < 0)
			return -1;
		a.sin_port = htons((uint16_t)p);
		ok = !bind(fd, (struct sockaddr *)&a, sizeof(a));
		close(fd);
		if (ok)
			return (int)p;
	}
	return -1;
}

/* ------------------------------------------------------------ HTTP */

struct body {
	char p[1 << 16];
	size_t len;
};

static size_t on_data(char *ptr, size_t size, size_t nmemb, void *ud)
{
	struct body *b = ud;
	size_t n = size * nmemb;

	if (n >= sizeof(b->p) - b->len)
		return 0;
	memcpy(b->p + b->len, ptr, n);
	b->len += n;
	b->p[b->len] = 0;
	return n;
}

/* The HTTP status (0: transport error); body into b when not NULL; auth:
 * an "Authorization:" header or NULL. */
static long http(const char *method, const char *url, const char *data,
		 struct body *b, const char *auth)
{
	struct body tmp;
	struct curl_slist *h = NULL;
	long status = 0;
	CURL *c = curl_easy_init();

	if (!b)
		b = &tmp;
	b->len = 0;
	b->p[0] = 0;
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
	curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, 5000L);
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_data);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, b);
	if (auth)
		h = curl_slist_append(h, auth);
	if (data) {
		h = curl_slist_append(h, "Content-Type: application/json");
		curl_easy_setopt(c, CURLOPT_POSTFIELDS, data);
	}
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
	if (curl_easy_perform(c) == CURLE_OK)
		curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
	curl_easy_cleanup(c);
	curl_slist_free_all(h);
	return status;
}

/* ------------------------------------------------------------ mdsd */

struct mds {
	pid_t pid;
	int port;
	char url[64];
	char dir[64];
	const char *token;	/* run with --token-file of it; NULL: none */
	const char *client_token;	/* and --client-token-file of it */
	char auth[128];		/* "Authorization: Bearer <token>" or "" */
};

/* Files a test may leave in m->dir (mds_cleanup removes them). */
static const char *const files[] = { "snap.json", "token", "ctoken",
				     "wrong", "loose", "empty", "big" };

/* m->dir/name with data and mode; its path in path. */
static int write_file(struct mds *m, const char *name, const char *data,
		      size_t len, mode_t mode, char *path, size_t cap)
{
	int fd;
	bool ok;

	snprintf(path, cap, "%s/%s", m->dir, name);
	unlink(path);
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL, mode);
	if (fd < 0)
		return -1;
	ok = write(fd, data, len) == (ssize_t)len && !fchmod(fd, mode);
	close(fd);
	return ok ? 0 : -1;
}

/* m->dir/name holding token and a newline; its path in path. */
static int write_token(struct mds *m, const char *name, const char *token,
		       char *path, size_t cap)
{
	char line[96];
	int n = snprintf(line, sizeof(line), "%s\n", token);

	return write_file(m, name, line, (size_t)n, 0600, path, cap);
}

static int mds_start(struct mds *m, bool fresh)
{
	const char *bin = mdsd_path(), *argv[16];
	char snap[128], port[32], tok[128], ctok[128];
	uint64_t end;
	int argc = 0;

	if (!bin)
		return -1;
	if (fresh) {
		snprintf(m->dir, sizeof(m->dir), "/tmp/dfkv-disc-XXXXXX");
		if (!mkdtemp(m->dir))
			return -1;
		m->port = free_port();
	}
	snprintf(m->url, sizeof(m->url), "http://127.0.0.1:%d", m->port);
	snprintf(snap, sizeof(snap), "%s/snap.json", m->dir);
	snprintf(port, sizeof(port), "127.0.0.1:%d", m->port);
	argv[argc++] = bin;
	argv[argc++] = "--listen";
	argv[argc++] = port;
	argv[argc++] = "--snapshot";
	argv[argc++] = snap;
	argv[argc++] = "--long-poll-ms";
	argv[argc++] = "5000";
	if (m->token) {
		if (write_token(m, "token", m->token, tok, sizeof(tok)))
			return -1;
		snprintf(m->auth, sizeof(m->auth), "Authorization: Bearer %s",
			 m->token);
		argv[argc++] = "--token-file";
		argv[argc++] = tok;
	}
	if (m->client_token) {
		if (write_token(m, "ctoken", m->client_token, ctok,
				sizeof(ctok)))
			return -1;
		argv[argc++] = "--client-token-file";
		argv[argc++] = ctok;
	}
	argv[argc] = NULL;
	m->pid = fork();
	if (m->pid < 0)
		return -1;
	if (!m->pid) {
		int null = open("/dev/null", O_WRONLY);

		dup2(null, 1);
		dup2(null, 2);
		execv(bin, (char *const *)argv);
		_exit(127);
	}
	end = now_ms() + HANG_MS;
	while (now_ms() < end) {
		char u[128];

		snprintf(u, sizeof(u), "%s/healthz", m->url);
		if (http("GET", u, NULL, NULL, NULL) == 200)
			return 0;
		sleep_ms(20);
	}
	return -1;
}

static void mds_stop(struct mds *m)
{
	if (m->pid > 0) {
		kill(m->pid, SIGTERM);
		waitpid(m->pid, NULL, 0);
		m->pid = 0;
	}
}

static void mds_cleanup(struct mds *m)
{
	char p[128];

	mds_stop(m);
	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		snprintf(p, sizeof(p), "%s/%s", m->dir, files[i]);
		unlink(p);
	}
	rmdir(m->dir);
}

static long put_member(struct mds *m, const char *group, const char *id,
		       int port, int weight, const char *state)
{
	char url[256], body[256];

	snprintf(url, sizeof(url), "%s/v1/groups/%s/members/%s", m->url, group,
		 id);
	snprintf(body, sizeof(body),
		 "{\"tcp\":\"127.0.0.1:%d\",\"weight\":%d,\"state\":\"%s\","
		 "\"ttl_ms\":600000}", port, weight, state);
	return http("PUT", url, body, NULL, m->auth[0] ? m->auth : NULL);
}

static long del_member(struct mds *m, const char *group, const char *id)
{
	char url[256];

	snprintf(url, sizeof(url), "%s/v1/groups/%s/members/%s", m->url, group,
		 id);
	return http("DELETE", url, NULL, NULL, m->auth[0] ? m->auth : NULL);
}

/* ------------------------------------------------------------ client */

static const uint8_t ns[] = "test-namespace";

static int open_disc(const char *endpoints, const char *group,
		     const char *client_id, uint32_t grace_ms,
		     struct dfkv_client **c)
{
	struct dfkv_client_options_v2 o = {
		.size = sizeof(o), .transport = DFKV_TRANSPORT_TCP,
		.ns = ns, .ns_len = sizeof(ns) - 1,
		.mds_endpoints = endpoints, .group = group,
		.client_id = client_id, .mds_grace_ms = grace_ms,
		.connect_timeout_ms = 300, .io_timeout_ms = 2000,
		.client_ttl_ms = 3000,
	};

	return dfkv_open_v2(&o, c);
}

static void key_of(unsigned int i, char *k, size_t cap)
{
	snprintf(k, cap, "key-%u", i);
}

/* owner[i] = the member key i routes to ("" on error) */
struct owners {
	char name[NKEYS][DFKV_NODE_NAME_MAX];
	struct dfkv_key bk[NKEYS];
};

static int snapshot(struct dfkv_client *c, struct owners *o)
{
	char k[32];

	for (unsigned int i = 0; i < NKEYS; i++) {
		const char *m;
		int err;

		key_of(i, k, sizeof(k));
		err = dfkv_locate(c, k, strlen(k), &m, &o->bk[i]);
		if (err)
			return err;
		snprintf(o->name[i], sizeof(o->name[i]), "%s", m);
	}
	return 0;
}

/* Distinct owners over the keys. */
static size_t n_owners(const struct owners *o)
{
	size_t n = 0;

	for (unsigned int i = 0; i < NKEYS; i++) {
		bool seen = false;

		for (unsigned int j = 0; j < i && !seen; j++)
			seen = !strcmp(o->name[i], o->name[j]);
		n += !seen;
		if (n > 64)
			break;
	}
	return n;
}

static bool owns_some(const struct owners *o, const char *name)
{
	for (unsigned int i = 0; i < NKEYS; i++)
		if (!strcmp(o->name[i], name))
			return true;
	return false;
}

/* A snapshot taken while no ring swap happened (two equal in a row). */
static int stable_snapshot(struct dfkv_client *c, struct owners *o)
{
	static struct owners again;
	int err;

	for (int tries = 0; tries < 50; tries++) {
		err = snapshot(c, o);
		if (!err)
			err = snapshot(c, &again);
		if (err)
			return err;
		if (!memcmp(o->name, again.name, sizeof(o->name)))
			return 0;
	}
	return -1;
}

/* Wait until pred(owners) holds; the snapshot is left in o. */
static bool wait_for(struct dfkv_client *c, struct owners *o,
		     bool (*pred)(const struct owners *, const void *),
		     const void *arg, unsigned int ms)
{
	uint64_t end = now_ms() + ms;

	do {
		if (!stable_snapshot(c, o) && pred(o, arg))
			return true;
		sleep_ms(20);
	} while (now_ms() < end);
	return false;
}

static bool has(const struct owners *o, const void *name)
{
	return owns_some(o, name);
}

static bool lacks(const struct owners *o, const void *name)
{
	return !owns_some(o, name);
}

static bool count_is(const struct owners *o, const void *n)
{
	return n_owners(o) == *(const size_t *)n;
}

/* The client's routing equals the reference ring over members. */
static bool matches_ring(const struct owners *o,
			 const struct dfkv_ring_member *rm, size_t n)
{
	struct dfkv_ring *r;
	bool ok = true;

	if (dfkv_ring_build(rm, n, &r))
		return false;
	for (unsigned int i = 0; i < NKEYS && ok; i++) {
		size_t m;

		ok = !dfkv_ring_route(r, o->bk[i].id, DFKV_PROBE_NODE, &m) &&
		     !strcmp(dfkv_ring_member_name(r, m), o->name[i]);
	}
	dfkv_ring_free(r);
	return ok;
}

static bool client_listed(struct mds *m, const char *group, const char *id)
{
	char url[256], needle[96];
	struct body *b = malloc(sizeof(*b));
	bool found;

	snprintf(url, sizeof(url), "%s/v1/groups/%s/clients", m->url, group);
	snprintf(needle, sizeof(needle), "\"id\":\"%s\"", id);
	found = http("GET", url, NULL, b, NULL) == 200 && strstr(b->p, needle);
	free(b);
	return found;
}

/* ------------------------------------------------------------ tests */

FIXTURE(disc) {
	struct mds m;
	struct owners *a, *b;
	struct dfkv_client *c;
};

/* mdsd (run with --token-file of token unless NULL), members kv0-2 in g1. */
static void start_three(struct __test_metadata *_metadata, struct mds *m,
			const char *token)
{
	memset(m, 0, sizeof(*m));
	m->token = token;
	ASSERT_NE(NULL, mdsd_path()) TH_LOG("build/tools/mdsd missing: make tools");
	ASSERT_EQ(0, mds_start(m, true));
	ASSERT_EQ(200, put_member(m, "g1", "kv0", 17400, 1, "up"));
	ASSERT_EQ(200, put_member(m, "g1", "kv1", 17401, 1, "up"));
	ASSERT_EQ(200, put_member(m, "g1", "kv2", 17402, 1, "up"));
}

FIXTURE_SETUP(disc)
{
	self->c = NULL;
	self->a = calloc(1, sizeof(*self->a));
	self->b = calloc(1, sizeof(*self->b));
	ASSERT_TRUE(self->a && self->b);
	start_three(_metadata, &self->m, NULL);
}

FIXTURE_TEARDOWN(disc)
{
	dfkv_close(self->c);
	mds_cleanup(&self->m);
	free(self->a);
	free(self->b);
}

static const struct dfkv_ring_member three[] = {
	{ "kv0", 1 }, { "kv1", 1 }, { "kv2", 1 },
};
static const struct dfkv_ring_member four[] = {
	{ "kv0", 1 }, { "kv1", 1 }, { "kv2", 1 }, { "kv3", 1 },
};

TEST_F(disc, ring_follows_membership)
{
	size_t moved = 0, wrong = 0;
	uint64_t t0;

	ASSERT_EQ(0, open_disc(self->m.url, "g1", NULL, 0, &self->c));
	ASSERT_EQ(0, stable_snapshot(self->c, self->a));
	ASSERT_TRUE(matches_ring(self->a, three, 3));

	/* a 4th member: the long-poll answers at the change */
	ASSERT_EQ(200, put_member(&self->m, "g1", "kv3", 17403, 1, "up"));
	t0 = now_ms();
	ASSERT_TRUE(wait_for(self->c, self->b, has, "kv3", FOLLOW_MS));
	TH_LOG("ring followed the 4th member in %llu ms",
	       (unsigned long long)(now_ms() - t0));
	ASSERT_TRUE(matches_ring(self->b, four, 4));
	for (unsigned int i = 0; i < NKEYS; i++) {
		if (strcmp(self->a->name[i], self->b->name[i])) {
			moved++;
			wrong += !!strcmp(self->b->name[i], "kv3");
		}
	}
	TH_LOG("%zu of %d keys moved (%.1f%%)", moved, NKEYS,
	       100.0 * moved / NKEYS);
	EXPECT_EQ(0, wrong);			/* only to the new member */
	EXPECT_GT(moved, NKEYS * 15 / 100);	/* about a quarter */
	EXPECT_LT(moved, NKEYS * 35 / 100);

	/* removal (a quarter): applied at once, keys go back */
	ASSERT_EQ(200, del_member(&self->m, "g1", "kv3"));
	ASSERT_TRUE(wait_for(self->c, self->b, lacks, "kv3", FOLLOW_MS));
	for (unsigned int i = 0; i < NKEYS; i++)
		ASSERT_STREQ(self->a->name[i], self->b->name[i]);
}

TEST_F(disc, unhealthy_leaves_draining_stays)
{
	size_t two = 2, three_n = 3;

	ASSERT_EQ(0, open_disc(self->m.url, "g1", NULL, 0, &self->c));
	ASSERT_EQ(200, put_member(&self->m, "g1", "kv1", 17401, 1, "draining"));
	sleep_ms(300);
	ASSERT_EQ(0, stable_snapshot(self->c, self->a));
	EXPECT_TRUE(matches_ring(self->a, three, 3));
	ASSERT_EQ(200, put_member(&self->m, "g1", "kv1", 17401, 1, "unhealthy"));
	ASSERT_TRUE(wait_for(self->c, self->a, lacks, "kv1", FOLLOW_MS));
	EXPECT_TRUE(count_is(self->a, &two));
	ASSERT_EQ(200, put_member(&self->m, "g1", "kv1", 17401, 1, "up"));
	ASSERT_TRUE(wait_for(self->c, self->a, count_is, &three_n, FOLLOW_MS));
	EXPECT_TRUE(matches_ring(self->a, three, 3));
}

TEST_F(disc, weight_and_address_changes)
{
	static const struct dfkv_ring_member w[] = {
		{ "kv0", 1 }, { "kv1", 3 }, { "kv2", 1 },
	};

	ASSERT_EQ(0, open_disc(self->m.url, "g1", NULL, 0, &self->c));
	ASSERT_EQ(0, stable_snapshot(self->c, self->a));
	/* same names, new address: no key moves */
	ASSERT_EQ(200, put_member(&self->m, "g1", "kv2", 17999, 1, "up"));
	sleep_ms(300);
	ASSERT_EQ(0, stable_snapshot(self->c, self->b));
	for (unsigned int i = 0; i < NKEYS; i++)
		ASSERT_STREQ(self->a->name[i], self->b->name[i]);
	ASSERT_EQ(200, put_member(&self->m, "g1", "kv1", 17401, 3, "up"));
	{
		uint64_t end = now_ms() + FOLLOW_MS;
		bool ok = false;

		while (!ok && now_ms() < end) {
			ASSERT_EQ(0, stable_snapshot(self->c, self->b));
			ok = matches_ring(self->b, w, 3);
			if (!ok)
				sleep_ms(20);
		}
		EXPECT_TRUE(ok);
	}
}

TEST_F(disc, mdsd_down_keeps_ring_then_next_endpoint)
{
	char eps[160], st[8192];
	uint64_t len;
	int dead = free_port();

	/* a dead endpoint first: open goes on to the next */
	snprintf(eps, sizeof(eps), "http://127.0.0.1:%d,%s", dead, self->m.url);
	ASSERT_EQ(0, open_disc(eps, "g1", NULL, 0, &self->c));
	ASSERT_EQ(0, stable_snapshot(self->c, self->a));
	ASSERT_TRUE(matches_ring(self->a, three, 3));

	mds_stop(&self->m);
	sleep_ms(1500);
	ASSERT_EQ(0, stable_snapshot(self->c, self->b));
	EXPECT_TRUE(matches_ring(self->b, three, 3));
	ASSERT_EQ(0, dfkv_stats_snapshot(self->c, st, sizeof(st), &len));
	EXPECT_TRUE(strstr(st, "dfkv_client_ring_members 3") != NULL);
	EXPECT_TRUE(strstr(st, "dfkv_client_mds_errors_total 0") == NULL);

	/* back (same directory from the snapshot); a change is followed */
	ASSERT_EQ(0, mds_start(&self->m, false));
	ASSERT_EQ(200, put_member(&self->m, "g1", "kv3", 17403, 1, "up"));
	ASSERT_TRUE(wait_for(self->c, self->b, has, "kv3", HANG_MS));
	EXPECT_TRUE(matches_ring(self->b, four, 4));
}

TEST_F(disc, mass_loss_is_held_for_the_grace_period)
{
	size_t one = 1;
	uint64_t t0;

	ASSERT_EQ(200, put_member(&self->m, "g1", "kv3", 17403, 1, "up"));
	/* a grace period far above the checks' own latency on a busy host */
	ASSERT_EQ(0, open_disc(self->m.url, "g1", NULL, 8000, &self->c));
	ASSERT_EQ(0, stable_snapshot(self->c, self->a));
	ASSERT_TRUE(matches_ring(self->a, four, 4));

	/* 3 of 4 gone at once: held */
	ASSERT_EQ(200, del_member(&self->m, "g1", "kv1"));
	ASSERT_EQ(200, del_member(&self->m, "g1", "kv2"));
	ASSERT_EQ(200, del_member(&self->m, "g1", "kv3"));
	t0 = now_ms();
	sleep_ms(600);
	ASSERT_EQ(0, stable_snapshot(self->c, self->b));
	EXPECT_TRUE(matches_ring(self->b, four, 4));
	/* then applied once the grace period is over */
	ASSERT_TRUE(wait_for(self->c, self->b, count_is, &one, HANG_MS));
	TH_LOG("loss applied after %llu ms (grace 8000)",
	       (unsigned long long)(now_ms() - t0));
	EXPECT_GE(now_ms() - t0, 7900);
	EXPECT_TRUE(owns_some(self->b, "kv0"));
}

TEST_F(disc, mass_loss_that_comes_back_is_never_applied)
{
	ASSERT_EQ(0, open_disc(self->m.url, "g1", NULL, 2000, &self->c));
	ASSERT_EQ(200, del_member(&self->m, "g1", "kv1"));
	ASSERT_EQ(200, del_member(&self->m, "g1", "kv2"));
	sleep_ms(300);
	ASSERT_EQ(200, put_member(&self->m, "g1", "kv1", 17401, 1, "up"));
	ASSERT_EQ(200, put_member(&self->m, "g1", "kv2", 17402, 1, "up"));
	for (int i = 0; i < 6; i++) {
		sleep_ms(500);
		ASSERT_EQ(0, stable_snapshot(self->c, self->b));
		ASSERT_TRUE(matches_ring(self->b, three, 3));
	}
}

TEST_F(disc, client_registration)
{
	uint64_t t0 = now_ms();

	ASSERT_EQ(0, open_disc(self->m.url, "g1", "engine-7", 0, &self->c));
	EXPECT_TRUE(client_listed(&self->m, "g1", "engine-7"));
	/* heartbeats keep it past its 3 s TTL */
	sleep_ms(3500);
	EXPECT_TRUE(client_listed(&self->m, "g1", "engine-7"));
	/* never in the ring */
	ASSERT_EQ(0, stable_snapshot(self->c, self->a));
	EXPECT_TRUE(matches_ring(self->a, three, 3));
	t0 = now_ms();
	dfkv_close(self->c);
	self->c = NULL;
	EXPECT_LT(now_ms() - t0, 1500);		/* the long-poll is woken */
	EXPECT_FALSE(client_listed(&self->m, "g1", "engine-7"));
}

TEST_F(disc, empty_group_then_first_member)
{
	const char *m;
	size_t one = 1;

	ASSERT_EQ(0, open_disc(self->m.url, "empty", NULL, 0, &self->c));
	EXPECT_EQ(DFKV_E_MEMBERS, dfkv_locate(self->c, "k", 1, &m, NULL));
	EXPECT_EQ(DFKV_E_MEMBERS, dfkv_put(self->c, "k", 1, "v", 1));
	ASSERT_EQ(200, put_member(&self->m, "empty", "solo", 17400, 1, "up"));
	ASSERT_TRUE(wait_for(self->c, self->a, count_is, &one, FOLLOW_MS));
	EXPECT_TRUE(owns_some(self->a, "solo"));
	/* a node that does not listen: a dropped write, a miss */
	EXPECT_EQ(DFKV_E_UNAVAILABLE, dfkv_put(self->c, "k", 1, "v", 1));
}

/*
 * Restart m on a snapshot whose group g1 holds n members hv0.. of weight
 * w: mdsd lists what its snapshot holds whatever its cap, as it would a
 * directory another mdsd wrote, so the client must check the list itself.
 */
static int restart_heavy(struct mds *m, unsigned int n, unsigned int w)
{
	char path[128], *doc = malloc(1 << 16);
	struct timespec ts;
	uint64_t wall;
	size_t len = 0;
	int ret;

	if (!doc)
		return -1;
	mds_stop(m);			/* it writes its own snapshot at exit */
	clock_gettime(CLOCK_REALTIME, &ts);
	wall = (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
	len += (size_t)snprintf(doc + len, (1 << 16) - len,
				"{\"version\":1,\"revision\":%llu,\"groups\":"
				"[{\"name\":\"g1\",\"members_epoch\":%llu,"
				"\"clients_epoch\":0,\"clients\":[],"
				"\"members\":[", (unsigned long long)wall * 2,
				(unsigned long long)wall * 2);
	for (unsigned int i = 0; i < n; i++)
		len += (size_t)snprintf(doc + len, (1 << 16) - len,
					"%s{\"id\":\"hv%u\",\"tcp\":\"127.0.0.1:%u\","
					"\"weight\":%u,\"ttl_ms\":600000,"
					"\"expires_at_ms\":%llu}", i ? "," : "", i,
					17500 + i, w,
					(unsigned long long)wall + 600000);
	len += (size_t)snprintf(doc + len, (1 << 16) - len, "]}]}");
	ret = write_file(m, "snap.json", doc, len, 0600, path, sizeof(path));
	free(doc);
	return ret ? ret : mds_start(m, false);
}

static long long client_stat(struct dfkv_client *c, const char *name);

TEST_F(disc, a_list_over_the_weight_cap_is_refused)
{
	struct dfkv_client *c2 = (struct dfkv_client *)1;
	uint64_t end;
	size_t eight = 8;

	/* grace 1 ms: the whole ring may go at once (no mass-loss hold) */
	ASSERT_EQ(0, open_disc(self->m.url, "g1", NULL, 1, &self->c));
	ASSERT_EQ(0, stable_snapshot(self->c, self->a));
	ASSERT_TRUE(matches_ring(self->a, three, 3));
	/* 9 x 1000 > 8192: refused, counted, the ring in force kept */
	ASSERT_EQ(0, restart_heavy(&self->m, 9, 1000));
	end = now_ms() + HANG_MS;
	while (client_stat(self->c, "dfkv_client_mds_overweight_lists_total") < 1 &&
	       now_ms() < end)
		sleep_ms(20);
	EXPECT_LT(0, client_stat(self->c,
				 "dfkv_client_mds_overweight_lists_total"));
	ASSERT_EQ(0, stable_snapshot(self->c, self->a));
	EXPECT_TRUE(matches_ring(self->a, three, 3));
	/* a client opening now has no ring to keep: a clear error */
	EXPECT_EQ(DFKV_E_MEMBERS, open_disc(self->m.url, "g1", NULL, 0, &c2));
	EXPECT_EQ(NULL, c2);
	if (c2 && c2 != (struct dfkv_client *)1)
		dfkv_close(c2);
	/* 8 x 1000, under the cap: followed */
	ASSERT_EQ(0, restart_heavy(&self->m, 8, 1000));
	EXPECT_TRUE(wait_for(self->c, self->a, count_is, &eight, HANG_MS));
	EXPECT_TRUE(owns_some(self->a, "hv7"));
	EXPECT_FALSE(owns_some(self->a, "kv0"));
}

/* ------------------------------------------------- mds_token_file */

#define TOKEN	"t0ken-of-the-group"

FIXTURE(disc_token) {
	struct mds m;
	struct owners *a;
	struct dfkv_client *c;
	char right[128];		/* mdsd's token file */
};

FIXTURE_SETUP(disc_token)
{
	self->c = NULL;
	self->a = calloc(1, sizeof(*self->a));
	ASSERT_TRUE(self->a != NULL);
	start_three(_metadata, &self->m, TOKEN);
	snprintf(self->right, sizeof(self->right), "%s/token", self->m.dir);
	/* mdsd refuses writes without the token */
	self->m.auth[0] = 0;
	EXPECT_EQ(401, put_member(&self->m, "g1", "rogue", 17409, 1, "up"));
	snprintf(self->m.auth, sizeof(self->m.auth),
		 "Authorization: Bearer %s", TOKEN);
}

FIXTURE_TEARDOWN(disc_token)
{
	dfkv_close(self->c);
	mds_cleanup(&self->m);
	free(self->a);
}

static int open_token(const char *url, const char *client_id,
		      const char *token_file, struct dfkv_client **c)
{
	struct dfkv_client_options_v2 o = {
		.size = sizeof(o), .transport = DFKV_TRANSPORT_TCP,
		.ns = ns, .ns_len = sizeof(ns) - 1,
		.mds_endpoints = url, .group = "g1", .client_id = client_id,
		.connect_timeout_ms = 300, .io_timeout_ms = 2000,
		.client_ttl_ms = 900, .mds_token_file = token_file,
	};

	return dfkv_open_v2(&o, c);
}

/* A counter of dfkv_stats_snapshot (-1: absent). */
static long long client_stat(struct dfkv_client *c, const char *name)
{
	char st[8192], needle[128], *p;
	uint64_t len;

	if (dfkv_stats_snapshot(c, st, sizeof(st), &len))
		return -1;
	snprintf(needle, sizeof(needle), "\n%s ", name);
	p = strstr(st, needle);
	return p ? atoll(p + strlen(needle)) : -1;
}

TEST_F(disc_token, registers_with_the_token)
{
	ASSERT_EQ(0, open_token(self->m.url, "engine-t", self->right,
				&self->c));
	EXPECT_TRUE(client_listed(&self->m, "g1", "engine-t"));
	/* the ring is the members' (the rogue was refused) */
	ASSERT_EQ(0, stable_snapshot(self->c, self->a));
	EXPECT_TRUE(matches_ring(self->a, three, 3));
	/* heartbeats (every 300 ms) keep it past its 900 ms TTL */
	sleep_ms(1500);
	EXPECT_TRUE(client_listed(&self->m, "g1", "engine-t"));
	EXPECT_EQ(0, client_stat(self->c, "dfkv_client_mds_auth_errors_total"));
	EXPECT_EQ(0, client_stat(self->c,
				 "dfkv_client_mds_heartbeat_errors_total"));
	/* the DELETE at close carries the token too */
	dfkv_close(self->c);
	self->c = NULL;
	EXPECT_FALSE(client_listed(&self->m, "g1", "engine-t"));
}

TEST_F(disc_token, wrong_or_missing_token_fails_the_open)
{
	char wrong[128], prefix[128];

	ASSERT_EQ(0, write_file(&self->m, "wrong", "t0ken-of-the-grouq\n", 19,
				0600, wrong, sizeof(wrong)));
	ASSERT_EQ(0, write_file(&self->m, "loose", TOKEN, sizeof(TOKEN) - 2,
				0600, prefix, sizeof(prefix)));
	errno = 0;
	EXPECT_EQ(DFKV_E_AUTH, open_token(self->m.url, "engine-w", wrong,
					  &self->c));
	EXPECT_EQ(EKEYREJECTED, errno);
	EXPECT_EQ(NULL, self->c);
	errno = 0;
	EXPECT_EQ(DFKV_E_AUTH, open_token(self->m.url, "engine-w", prefix,
					  &self->c));
	EXPECT_EQ(EKEYREJECTED, errno);
	/* no token at all: mdsd wants one for the registration */
	EXPECT_EQ(DFKV_E_AUTH, open_token(self->m.url, "engine-w", NULL,
					  &self->c));
	EXPECT_EQ(NULL, self->c);
	EXPECT_FALSE(client_listed(&self->m, "g1", "engine-w"));
	EXPECT_STRNE("unknown status", dfkv_strerror(DFKV_E_AUTH));
	/* reads are open: without client_id a client follows the ring */
	ASSERT_EQ(0, open_token(self->m.url, NULL, NULL, &self->c));
	ASSERT_EQ(0, stable_snapshot(self->c, self->a));
	EXPECT_TRUE(matches_ring(self->a, three, 3));
}

TEST_F(disc_token, unusable_token_files_fail_the_open)
{
	static const struct {
		const char *name, *data;
		size_t len;
		mode_t mode;
		int err;
	} bad[] = {
		{ "loose", TOKEN "\n", sizeof(TOKEN), 0644, EPERM },
		{ "empty", "\n", 1, 0600, EINVAL },
		{ "wrong", "two words\n", 10, 0600, EINVAL },
	};
	char path[128], *big = malloc(4097);

	ASSERT_TRUE(big != NULL);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		ASSERT_EQ(0, write_file(&self->m, bad[i].name, bad[i].data,
					bad[i].len, bad[i].mode, path,
					sizeof(path)));
		errno = 0;
		EXPECT_EQ(DFKV_E_AUTH, open_token(self->m.url, "engine-u", path,
						  &self->c)) TH_LOG("%s", bad[i].name);
		EXPECT_EQ(bad[i].err, errno) TH_LOG("%s", bad[i].name);
	}
	memset(big, 'x', 4097);
	ASSERT_EQ(0, write_file(&self->m, "big", big, 4097, 0600, path,
				sizeof(path)));
	free(big);
	errno = 0;
	EXPECT_EQ(DFKV_E_AUTH, open_token(self->m.url, NULL, path, &self->c));
	EXPECT_EQ(EFBIG, errno);
	snprintf(path, sizeof(path), "%s/none", self->m.dir);
	errno = 0;
	EXPECT_EQ(DFKV_E_AUTH, open_token(self->m.url, NULL, path, &self->c));
	EXPECT_EQ(ENOENT, errno);
	EXPECT_EQ(NULL, self->c);
	EXPECT_FALSE(client_listed(&self->m, "g1", "engine-u"));
}

TEST_F(disc_token, a_token_refused_later_is_counted)
{
	ASSERT_EQ(0, open_token(self->m.url, "engine-r", self->right,
				&self->c));
	/* mdsd restarts with another token: the heartbeats get 401 */
	mds_stop(&self->m);
	self->m.token = "another-token";
	ASSERT_EQ(0, mds_start(&self->m, false));
	sleep_ms(1500);
	EXPECT_LT(0, client_stat(self->c, "dfkv_client_mds_auth_errors_total"));
	EXPECT_LT(0, client_stat(self->c,
				 "dfkv_client_mds_heartbeat_errors_total"));
	/* its lease ran out: the client is not listed again */
	EXPECT_FALSE(client_listed(&self->m, "g1", "engine-r"));
}

#define CLIENT_TOKEN	"the-clients-t0ken"

/*
 * A fresh mdsd with the member token and the client token, member kv0 in
 * g1; ctok gets the path of the client token's file.  0 or -1.
 */
static int mds_start_tokens(struct mds *m, char *ctok, size_t len)
{
	memset(m, 0, sizeof(*m));
	m->token = TOKEN;
	m->client_token = CLIENT_TOKEN;
	if (mds_start(m, true) ||
	    put_member(m, "g1", "kv0", 17400, 1, "up") != 200)
		return -1;
	snprintf(ctok, len, "%s/ctoken", m->dir);
	return 0;
}

/* mdsd with a member and a client token: mds_token_file is the client's */
TEST(disc_client_token)
{
	struct owners *o = calloc(1, sizeof(*o));
	struct dfkv_client *c = NULL;
	char ctok[128], url[256];
	struct mds m;

	ASSERT_TRUE(o != NULL);
	ASSERT_NE(NULL, mdsd_path()) TH_LOG("build/tools/mdsd missing: make tools");
	ASSERT_EQ(0, mds_start_tokens(&m, ctok, sizeof(ctok)));
	/* the client token registers no member */
	snprintf(url, sizeof(url), "%s/v1/groups/g1/members/rogue", m.url);
	EXPECT_EQ(403, http("PUT", url, "{}", NULL,
			    "Authorization: Bearer " CLIENT_TOKEN));
	/* it registers the client, its heartbeats pass, its DELETE */
	EXPECT_EQ(0, open_token(m.url, "engine-c", ctok, &c));
	EXPECT_TRUE(client_listed(&m, "g1", "engine-c"));
	EXPECT_EQ(0, stable_snapshot(c, o));
	EXPECT_TRUE(matches_ring(o, three, 1));
	sleep_ms(1500);
	EXPECT_TRUE(client_listed(&m, "g1", "engine-c"));
	EXPECT_EQ(0, client_stat(c, "dfkv_client_mds_heartbeat_errors_total"));
	dfkv_close(c);
	EXPECT_FALSE(client_listed(&m, "g1", "engine-c"));
	mds_cleanup(&m);
	free(o);
}

/* Two engines with the same client token and client_id: one owner. */
TEST(disc_client_owner)
{
	struct dfkv_client *c1 = NULL, *c2 = NULL;
	char ctok[128], url[256];
	uint64_t end;
	struct mds m;

	ASSERT_NE(NULL, mdsd_path()) TH_LOG("build/tools/mdsd missing: make tools");
	ASSERT_EQ(0, mds_start_tokens(&m, ctok, sizeof(ctok)));
	snprintf(url, sizeof(url), "%s/v1/groups/g1/clients/engine-s", m.url);
	ASSERT_EQ(0, open_token(m.url, "engine-s", ctok, &c1));
	EXPECT_TRUE(client_listed(&m, "g1", "engine-s"));
	/* the second opens, but its registration is refused (403) */
	ASSERT_EQ(0, open_token(m.url, "engine-s", ctok, &c2));
	EXPECT_LT(0, client_stat(c2, "dfkv_client_mds_forbidden_total"));
	/* the client token without a key is refused: no engine's entry */
	EXPECT_EQ(400, http("DELETE", url, NULL, NULL,
			    "Authorization: Bearer " CLIENT_TOKEN));
	/* the first still renews its entry, the second keeps failing */
	end = now_ms() + HANG_MS;
	while (client_stat(c2, "dfkv_client_mds_forbidden_total") < 4 &&
	       now_ms() < end)
		sleep_ms(50);
	EXPECT_LE(4, client_stat(c2, "dfkv_client_mds_forbidden_total"));
	EXPECT_EQ(0, client_stat(c1, "dfkv_client_mds_heartbeat_errors_total"));
	EXPECT_TRUE(client_listed(&m, "g1", "engine-s"));
	/* the first's close deletes its own entry: the second takes the id */
	dfkv_close(c1);
	end = now_ms() + HANG_MS;
	while (!client_listed(&m, "g1", "engine-s") && now_ms() < end)
		sleep_ms(50);
	EXPECT_TRUE(client_listed(&m, "g1", "engine-s"));
	/* the member token deletes anyone's entry; its owner takes it back */
	EXPECT_EQ(200, http("DELETE", url, NULL, NULL, m.auth));
	end = now_ms() + HANG_MS;
	while (!client_listed(&m, "g1", "engine-s") && now_ms() < end)
		sleep_ms(50);
	EXPECT_TRUE(client_listed(&m, "g1", "engine-s"));
	dfkv_close(c2);
	EXPECT_FALSE(client_listed(&m, "g1", "engine-s"));
	mds_cleanup(&m);
}

/* ------------------------------------------------------- a fake mdsd */

#define FAKE_MAX	256

/*
 * A scripted mdsd on a thread, one request per connection: the first GET
 * of the members answers an empty group, every later one get_status;
 * every PUT put_status (both with "Retry-After: retry_s" when not 200);
 * a DELETE 200.  Each request's arrival (its header read) and its reply
 * (before it is sent) are recorded on CLOCK_MONOTONIC in ms, libdfkv's
 * clock.
 */
struct fake {
	int fd, port;
	pthread_t th;
	atomic_bool stop;
	pthread_mutex_t lock;
	int get_status, put_status, retry_s;
	size_t n;
	struct {
		char method;	/* 'G', 'P', 'D' */
		int status;
		uint64_t at, replied;
	} req[FAKE_MAX];
};

/* One request from fd: its method's first letter, or 0. */
static char fake_read(int fd)
{
	char buf[8192], *end, *cl;
	size_t len = 0, need;
	ssize_t r;

	while (len < sizeof(buf) - 1) {
		r = read(fd, buf + len, sizeof(buf) - 1 - len);
		if (r <= 0)
			return 0;
		len += (size_t)r;
		buf[len] = 0;
		end = strstr(buf, "\r\n\r\n");
		if (!end)
			continue;
		cl = strcasestr(buf, "\r\nContent-Length:");
		need = (size_t)(end + 4 - buf) +
		       (cl && cl < end ? (size_t)atol(cl + 17) : 0);
		if (len >= need || need >= sizeof(buf))
			return buf[0];
	}
	return 0;
}

static void *fake_main(void *arg)
{
	struct fake *f = arg;
	bool first_get = true;

	while (!atomic_load(&f->stop)) {
		struct pollfd p = { .fd = f->fd, .events = POLLIN };
		char reply[512], retry[48] = "", method;
		const char *body = "{}";
		int c, status = 200;
		ssize_t sent;

		if (poll(&p, 1, 100) <= 0)
			continue;
		c = accept(f->fd, NULL, NULL);
		if (c < 0)
			continue;
		method = fake_read(c);
		pthread_mutex_lock(&f->lock);
		if (method && f->n < FAKE_MAX) {
			f->req[f->n].method = method;
			f->req[f->n].at = now_ms();
		}
		if (method == 'G' && first_get) {
			body = "{\"epoch\":1,\"members\":[]}";
			first_get = false;
		} else if (method == 'G') {
			status = f->get_status;
		} else if (method == 'P') {
			status = f->put_status;
		}
		if (status != 200)
			snprintf(retry, sizeof(retry), "Retry-After: %d\r\n",
				 f->retry_s);
		snprintf(reply, sizeof(reply),
			 "HTTP/1.1 %d X\r\nContent-Type: application/json\r\n"
			 "Content-Length: %zu\r\nConnection: close\r\n%s\r\n%s",
			 status, strlen(body), retry, body);
		if (method && f->n < FAKE_MAX) {
			f->req[f->n].status = status;
			f->req[f->n++].replied = now_ms();
		}
		pthread_mutex_unlock(&f->lock);
		/* a client that went away misses its reply: no matter */
		sent = write(c, reply, strlen(reply));
		(void)sent;
		close(c);
	}
	return NULL;
}

static int fake_start(struct fake *f)
{
	struct sockaddr_in a = { .sin_family = AF_INET,
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t l = sizeof(a);

	f->fd = socket(AF_INET, SOCK_STREAM, 0);
	if (f->fd < 0 || bind(f->fd, (struct sockaddr *)&a, sizeof(a)) ||
	    getsockname(f->fd, (struct sockaddr *)&a, &l) || listen(f->fd, 16))
		return -1;
	f->port = ntohs(a.sin_port);
	pthread_mutex_init(&f->lock, NULL);
	return pthread_create(&f->th, NULL, fake_main, f);
}

static void fake_stop(struct fake *f)
{
	atomic_store(&f->stop, true);
	pthread_join(f->th, NULL);
	close(f->fd);
	pthread_mutex_destroy(&f->lock);
}

/* Requests of method m recorded so far. */
static size_t fake_count(struct fake *f, char m)
{
	size_t n = 0;

	pthread_mutex_lock(&f->lock);
	for (size_t i = 0; i < f->n; i++)
		n += f->req[i].method == m;
	pthread_mutex_unlock(&f->lock);
	return n;
}

/*
 * The shortest time between a refused request of method m and the next
 * of the same method; UINT64_MAX when there is no such pair.
 */
static uint64_t fake_min_gap(struct fake *f, char m)
{
	uint64_t gap = UINT64_MAX, replied = 0;
	bool refused = false;

	pthread_mutex_lock(&f->lock);
	for (size_t i = 0; i < f->n; i++) {
		if (f->req[i].method != m)
			continue;
		if (refused && f->req[i].at - replied < gap)
			gap = f->req[i].at - replied;
		refused = f->req[i].status != 200;
		replied = f->req[i].replied;
	}
	pthread_mutex_unlock(&f->lock);
	return gap;
}

static void wait_count(struct fake *f, char m, size_t n)
{
	uint64_t end = now_ms() + HANG_MS;

	while (fake_count(f, m) < n && now_ms() < end)
		sleep_ms(20);
}

TEST(disc_retry_after)
{
	static struct fake f;
	struct dfkv_client_options_v2 o = {
		.size = sizeof(o), .transport = DFKV_TRANSPORT_TCP,
		.ns = ns, .ns_len = sizeof(ns) - 1, .group = "g1",
		.client_id = "engine-ra", .connect_timeout_ms = 300,
		.io_timeout_ms = 2000, .client_ttl_ms = 9000,
	};
	struct dfkv_client *c = NULL;
	char url[64];
	size_t puts;

	f.get_status = 429;	/* mdsd's long-poll caps */
	f.put_status = 200;
	f.retry_s = 2;
	ASSERT_EQ(0, fake_start(&f));
	snprintf(url, sizeof(url), "http://127.0.0.1:%d", f.port);
	o.mds_endpoints = url;
	ASSERT_EQ(0, dfkv_open_v2(&o, &c));
	/* the polls: refused, each next one at least 2 s later */
	wait_count(&f, 'G', 4);
	ASSERT_LE(4, fake_count(&f, 'G'));
	EXPECT_LE(2000, fake_min_gap(&f, 'G'));
	/* the heartbeats (every 3 s) went on meanwhile */
	EXPECT_LE(2, fake_count(&f, 'P'));
	/* the heartbeats refused with 503: the next at least 2 s later */
	pthread_mutex_lock(&f.lock);
	f.put_status = 503;
	pthread_mutex_unlock(&f.lock);
	puts = fake_count(&f, 'P');
	wait_count(&f, 'P', puts + 4);
	ASSERT_LE(puts + 4, fake_count(&f, 'P'));
	EXPECT_LE(2000, fake_min_gap(&f, 'P'));
	EXPECT_LE(3, client_stat(c, "dfkv_client_mds_heartbeat_errors_total"));
	dfkv_close(c);
	fake_stop(&f);
}

TEST(disc_options)
{
	struct dfkv_client_options_v2 o = {
		.size = sizeof(o), .ns = ns, .ns_len = sizeof(ns) - 1,
		.connect_timeout_ms = 200, .io_timeout_ms = 500,
	};
	struct dfkv_client *c = (struct dfkv_client *)1;
	char url[64];

	/* no endpoint answers */
	snprintf(url, sizeof(url), "http://127.0.0.1:%d", free_port());
	o.mds_endpoints = url;
	EXPECT_EQ(DFKV_E_UNAVAILABLE, dfkv_open_v2(&o, &c));
	EXPECT_EQ(NULL, c);
	/* both or neither of members / mds_endpoints */
	o.members = "a=127.0.0.1:1";
	EXPECT_EQ(DFKV_E_INVAL, dfkv_open_v2(&o, &c));
	o.members = NULL;
	o.mds_endpoints = NULL;
	EXPECT_EQ(DFKV_E_INVAL, dfkv_open_v2(&o, &c));
	/* group / client_id without endpoints; bad ids */
	o.members = "a=127.0.0.1:1";
	o.group = "g";
	EXPECT_EQ(DFKV_E_INVAL, dfkv_open_v2(&o, &c));
	o.members = NULL;
	o.mds_endpoints = url;
	o.group = "bad/group";
	EXPECT_EQ(DFKV_E_INVAL, dfkv_open_v2(&o, &c));
	o.group = NULL;
	o.client_id = "";
	EXPECT_EQ(DFKV_E_INVAL, dfkv_open_v2(&o, &c));
	o.client_id = NULL;
	o.mds_endpoints = ",";
	EXPECT_EQ(DFKV_E_INVAL, dfkv_open_v2(&o, &c));
	o.mds_endpoints = url;
	o.__reserved2 = 1;
	EXPECT_EQ(DFKV_E_INVAL, dfkv_open_v2(&o, &c));
	/* a token file belongs to discovery */
	o = (struct dfkv_client_options_v2){
		.size = sizeof(o), .ns = ns, .ns_len = sizeof(ns) - 1,
		.members = "a=127.0.0.1:1", .mds_token_file = "/dev/null",
	};
	EXPECT_EQ(DFKV_E_INVAL, dfkv_open_v2(&o, &c));
	/* the VER0 size still opens a static client */
	o = (struct dfkv_client_options_v2){
		.size = DFKV_CLIENT_OPTIONS_V2_SIZE_VER0, .ns = ns,
		.ns_len = sizeof(ns) - 1, .members = "a=127.0.0.1:1",
	};
	ASSERT_EQ(0, dfkv_open_v2(&o, &c));
	dfkv_close(c);
}

TEST_HARNESS_MAIN
