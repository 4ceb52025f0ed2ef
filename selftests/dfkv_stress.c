// SPDX-License-Identifier: GPL-2.0
/*
 * The store under pressure: threads mixing PUT/GET/REMOVE on shared and
 * private keys (every GET is a miss or exactly a value PUT for that key),
 * eviction by recency under a small RAM budget with leased entries kept,
 * a node deleted and the module unloaded while clients hammer it (every
 * operation racing the deletion either completes with the status it would
 * get any other time or fails with ENODEV, and ENODEV sticks), and RAM
 * eviction racing cold reads in front of a disk.
 */
#include <errno.h>
#include <stdio.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/ioctl.h>

#include "kselftest_harness.h"
#include "testlib.h"

#define NTHREADS	8
#define OPS		1500
#define SHARED_KEYS	16
#define MAXLEN		(96 << 10)

struct worker {
	const char *node;
	int id;
	int fd;
	long bad;	/* wrong bytes or unexpected statuses */
	long wrong;	/* of them: wrong bytes */
	int bad_op, bad_status;	/* the last unexpected status */
	long gets_ok;
	int saw_enodev;
	int until_enodev;
	int tiered;	/* a cold read may find no RAM to land in: BUSY */
};

static uint64_t rnd(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

/*
 * Deletion is atomic to a client: once one operation failed with ENODEV,
 * every later one does too, whatever its op (never a status, never BUSY).
 */
static int gone_for_good(int fd, char *buf, char *out)
{
	struct dfkv_key k = dfkv_test_key(1, 0);
	struct dfkv_ioc_op o;

	dfkv_test_fill(buf, 4096, &k, 0);
	return dfkv_test_put(fd, &k, buf, 4096, &o) && errno == ENODEV &&
		dfkv_test_get(fd, &k, out, MAXLEN, 0, 0, &o) &&
		errno == ENODEV &&
		dfkv_test_simple(fd, DFKV_IOC_EXIST, &k, &o) &&
		errno == ENODEV &&
		dfkv_test_simple(fd, DFKV_IOC_REMOVE, &k, &o) &&
		errno == ENODEV;
}

static void *work(void *arg)
{
	struct worker *w = arg;
	uint64_t seed = 0x9e3779b97f4a7c15ULL * (w->id + 1);
	char *buf = malloc(MAXLEN), *out = malloc(MAXLEN);
	long i;

	for (i = 0; w->until_enodev || i < OPS; i++) {
		uint64_t r = rnd(&seed);
		int shared = r & 1;
		uint64_t n = (r >> 8) % SHARED_KEYS;
		struct dfkv_key k = shared ? dfkv_test_key(1, n) :
			dfkv_test_key(100 + w->id, n);
		uint64_t len = 1 + (r >> 20) % MAXLEN;
		struct dfkv_ioc_op o;
		int rc;

		switch ((r >> 4) % 4) {
		case 0:
		case 1:
			rc = dfkv_test_get(w->fd, &k, out, MAXLEN, 0, 0, &o);
			if (!rc && o.status == DFKV_STATUS_OK) {
				if (o.data_len != o.stored_len ||
				    !dfkv_test_verify(out, o.data_len, &k, 0)) {
					w->bad++;
					w->wrong++;
				}
				w->gets_ok++;
			} else if (!rc && o.status != DFKV_STATUS_NOT_FOUND &&
				   !(w->tiered && o.status == DFKV_STATUS_BUSY)) {
				w->bad++;
				w->bad_op = DFKV_OP_GET;
				w->bad_status = o.status;
			}
			break;
		case 2:
			dfkv_test_fill(buf, len, &k, 0);
			rc = dfkv_test_put(w->fd, &k, buf, len, &o);
			if (!rc && o.status != DFKV_STATUS_OK &&
			    o.status != DFKV_STATUS_CACHE_FULL) {
				w->bad++;
				w->bad_op = DFKV_OP_PUT;
				w->bad_status = o.status;
			}
			break;
		default:
			rc = dfkv_test_simple(w->fd, DFKV_IOC_REMOVE, &k, &o);
			break;
		}
		if (rc && errno == ENODEV) {
			w->saw_enodev = 1;
			break;
		}
		if (rc)
			w->bad++;
	}
	if (w->saw_enodev && !gone_for_good(w->fd, buf, out))
		w->bad++;
	free(buf);
	free(out);
	return NULL;
}

static void run_workers(struct __test_metadata *_metadata, const char *node,
			int until_enodev, int tiered, struct dfkv_genl *g)
{
	struct worker w[NTHREADS];
	pthread_t t[NTHREADS];
	int i;

	for (i = 0; i < NTHREADS; i++) {
		w[i] = (struct worker){ .node = node, .id = i,
					.until_enodev = until_enodev,
					.tiered = tiered };
		w[i].fd = dfkv_test_open(node);
		ASSERT_LE(0, w[i].fd);
		ASSERT_EQ(0, pthread_create(&t[i], NULL, work, &w[i]));
	}
	if (until_enodev) {
		usleep(300 * 1000);
		ASSERT_EQ(0, dfkv_test_node_del(g, node));
	}
	for (i = 0; i < NTHREADS; i++) {
		pthread_join(t[i], NULL);
		close(w[i].fd);
		EXPECT_EQ(0, w[i].bad)
			TH_LOG("worker %d: %ld wrong bytes, last status %d of op %d",
			       i, w[i].wrong, w[i].bad_status, w[i].bad_op);
		if (until_enodev)
			EXPECT_TRUE(w[i].saw_enodev);
	}
}

FIXTURE(stress) {
	struct dfkv_genl g;
};

FIXTURE_SETUP(stress)
{
	ASSERT_EQ(0, dfkv_test_load());
	ASSERT_EQ(0, dfkv_genl_open(&self->g));
}

FIXTURE_TEARDOWN(stress)
{
	dfkv_genl_close(&self->g);
}

TEST_F(stress, mixed_ops_return_exact_bytes)
{
	dfkv_test_node_del(&self->g, "t-mix");
	ASSERT_EQ(0, dfkv_test_node_add(&self->g, "t-mix", 64 << 20, 0, 1));
	run_workers(_metadata, "t-mix", 0, 0, &self->g);
	EXPECT_LT(0, dfkv_test_stat(&self->g, "t-mix", DFKV_STAT_HITS));
	EXPECT_TRUE(dfkv_test_wait_stat(&self->g, "t-mix", DFKV_STAT_PINS, 0,
					0));
	ASSERT_EQ(0, dfkv_test_node_del(&self->g, "t-mix"));
}

TEST_F(stress, mixed_ops_under_eviction)
{
	dfkv_test_node_del(&self->g, "t-evict");
	ASSERT_EQ(0, dfkv_test_node_add(&self->g, "t-evict", 2 << 20, 0, 1));
	run_workers(_metadata, "t-evict", 0, 0, &self->g);
	EXPECT_LT(0, dfkv_test_stat(&self->g, "t-evict", DFKV_STAT_EVICTIONS));
	ASSERT_EQ(0, dfkv_test_node_del(&self->g, "t-evict"));
}

TEST_F(stress, delete_node_while_hammered)
{
	dfkv_test_node_del(&self->g, "t-del");
	ASSERT_EQ(0, dfkv_test_node_add(&self->g, "t-del", 16 << 20, 0, 1));
	run_workers(_metadata, "t-del", 1, 0, &self->g);
}

/*
 * RAM eviction racing cold reads: a 2 MiB RAM tier in front of a disk, so
 * GETs keep promoting blocks that PUTs keep evicting from RAM again, and
 * REMOVEs kill them meanwhile.  Every GET is a miss or exactly the bytes
 * PUT (an evictor that freed a slot a promotion had just taken would hand
 * it to the next PUT while disk data is read into it).  A cold read that
 * finds every RAM slot pinned and the stage bound reached is BUSY.
 */
TEST_F_TIMEOUT(stress, ram_eviction_races_cold_reads, 900)
{
	const char *img = "/tmp/dfkv-stress-evict.img";
	char dev[64], cmd[128];

	ASSERT_EQ(0, dfkv_test_new_loop(img, dev, sizeof(dev)));
	dfkv_test_node_del(&self->g, "t-evd");
	ASSERT_EQ(0, dfkv_test_node_add(&self->g, "t-evd", 2 << 20, 0, 1));
	ASSERT_EQ(0, dfkv_test_disk_add(&self->g, "t-evd", dev, NULL, 1)) TH_LOG("%s", self->g.errmsg);
	run_workers(_metadata, "t-evd", 0, 1, &self->g);
	EXPECT_LT(0, dfkv_test_stat(&self->g, "t-evd", DFKV_STAT_PROMOTED));
	EXPECT_LT(0, dfkv_test_stat(&self->g, "t-evd", DFKV_STAT_RAM_EVICTIONS));
	ASSERT_EQ(0, dfkv_test_node_del(&self->g, "t-evd"));
	snprintf(cmd, sizeof(cmd), "losetup -d %s; rm -f %s", dev, img);
	EXPECT_EQ(0, system(cmd));
}

static int put_n(int fd, uint64_t t, uint64_t n, size_t len)
{
	struct dfkv_key k = dfkv_test_key(t, n);
	struct dfkv_ioc_op o;
	char *buf = malloc(len);
	int status;

	dfkv_test_fill(buf, len, &k, 0);
	status = dfkv_test_put(fd, &k, buf, len, &o) ? -errno : (int)o.status;
	free(buf);
	return status;
}

static int exists(int fd, uint64_t t, uint64_t n)
{
	struct dfkv_key k = dfkv_test_key(t, n);
	struct dfkv_ioc_op o;

	return !dfkv_test_simple(fd, DFKV_IOC_EXIST, &k, &o) &&
		o.status == DFKV_STATUS_OK;
}

/* 1 MiB = 16 extents of 64 KiB; a 48 KiB value takes one extent. */
TEST_F(stress, eviction_follows_recency_and_spares_leases)
{
	struct dfkv_key keys[2] = { dfkv_test_key(3, 0), dfkv_test_key(3, 1) };
	struct dfkv_ioc_keys r;
	uint64_t lens[2];
	int fd, i;

	dfkv_test_node_del(&self->g, "t-lru");
	ASSERT_EQ(0, dfkv_test_node_add(&self->g, "t-lru", 1 << 20, 0, 1));
	fd = dfkv_test_open("t-lru");
	ASSERT_LE(0, fd);
	for (i = 0; i < 16; i++)
		ASSERT_EQ(DFKV_STATUS_OK, put_n(fd, 3, i, 48 << 10));
	/* Lease 0-1, touch 2-7: 8-11 are now the least recently used. */
	memset(&r, 0, sizeof(r));
	r.size = sizeof(r);
	r.keys = (uintptr_t)keys;
	r.count = 2;
	r.results = (uintptr_t)lens;
	ASSERT_EQ(0, ioctl(fd, DFKV_IOC_LEASE, &r));
	ASSERT_EQ(2, r.nr_hits);
	{
		struct dfkv_key t[6];

		for (i = 0; i < 6; i++)
			t[i] = dfkv_test_key(3, 2 + i);
		memset(&r, 0, sizeof(r));
		r.size = sizeof(r);
		r.keys = (uintptr_t)t;
		r.count = 6;
		ASSERT_EQ(0, ioctl(fd, DFKV_IOC_TOUCH, &r));
	}
	for (i = 16; i < 20; i++)
		ASSERT_EQ(DFKV_STATUS_OK, put_n(fd, 3, i, 48 << 10));
	for (i = 0; i < 8; i++)
		EXPECT_TRUE(exists(fd, 3, i)) TH_LOG("key %d", i);
	for (i = 8; i < 12; i++)
		EXPECT_FALSE(exists(fd, 3, i)) TH_LOG("key %d", i);
	for (i = 16; i < 20; i++)
		EXPECT_TRUE(exists(fd, 3, i)) TH_LOG("key %d", i);
	EXPECT_EQ(4, dfkv_test_stat(&self->g, "t-lru", DFKV_STAT_EVICTIONS));
	/* Leased keys survive a flood of other sizes too. */
	for (i = 100; i < 200; i++)
		ASSERT_EQ(DFKV_STATUS_OK, put_n(fd, 3, i, 4096 * (1 + i % 5)));
	EXPECT_TRUE(exists(fd, 3, 0));
	EXPECT_TRUE(exists(fd, 3, 1));
	close(fd);
	ASSERT_EQ(0, dfkv_test_node_del(&self->g, "t-lru"));
}

TEST_F(stress, full_without_eviction_is_cache_full)
{
	int fd, i, status = DFKV_STATUS_OK;

	dfkv_test_node_del(&self->g, "t-full");
	ASSERT_EQ(0, dfkv_test_node_add(&self->g, "t-full", 1 << 20, 0, 0));
	fd = dfkv_test_open("t-full");
	ASSERT_LE(0, fd);
	for (i = 0; i < 40 && status == DFKV_STATUS_OK; i++)
		status = put_n(fd, 4, i, 48 << 10);
	EXPECT_EQ(DFKV_STATUS_CACHE_FULL, status);
	EXPECT_EQ(17, i);	/* 16 fit, the 17th does not */
	for (i = 0; i < 16; i++)
		EXPECT_TRUE(exists(fd, 4, i));
	EXPECT_EQ(0, dfkv_test_stat(&self->g, "t-full", DFKV_STAT_EVICTIONS));
	close(fd);
	ASSERT_EQ(0, dfkv_test_node_del(&self->g, "t-full"));
}

/* Last: nodes full of data and a held lease go away with the module. */
TEST_F(stress, unload_with_nodes_holding_data)
{
	int fd, i;

	ASSERT_EQ(0, dfkv_test_node_add(&self->g, "t-unload-a", 8 << 20, 0, 1));
	ASSERT_EQ(0, dfkv_test_node_add(&self->g, "t-unload-b", 8 << 20, 0, 1));
	fd = dfkv_test_open("t-unload-a");
	ASSERT_LE(0, fd);
	for (i = 0; i < 50; i++)
		ASSERT_EQ(DFKV_STATUS_OK, put_n(fd, 5, i, 1000 + i * 997));
	close(fd);
	dfkv_genl_close(&self->g);
	EXPECT_EQ(0, system("rmmod dfkv"));
	ASSERT_EQ(0, dfkv_test_load());
	ASSERT_EQ(0, dfkv_genl_open(&self->g));
}

TEST_HARNESS_MAIN
