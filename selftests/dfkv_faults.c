// SPDX-License-Identifier: GPL-2.0
/*
 * The module under failing allocations (the debug kernel's fault
 * injection; elsewhere every case is skipped).  Each failure must come
 * back as a status (CACHE_FULL, BUSY, IO_ERROR) or an errno, never as a
 * crash, wrong bytes or a stuck node; once the faults stop the node
 * serves, deletes and the module's memory is given back (kmemleak runs
 * after the suite, tools/vm/kmemleak-check).
 *
 * - ioctl: failslab and fail_page_alloc (orders 1 and up: the arena's
 *   high-order runs, whose order-0 fallback is then taken) fail this
 *   thread's allocations only (task-filter, make-it-fail), the
 *   /dev/dfkv fast path running in it: PUTs and GETs, then leases and
 *   batches (nothing stays pinned or leased after);
 * - netlink: NODE_NEW and DISK_ADD under failslab, in this thread too;
 * - TCP: requests run in the module's workers, so the fault is
 *   fail_function on the module's extent binding (dfkv_arena_bind,
 *   marked ALLOW_ERROR_INJECTION), in any task;
 * - AUTH: AUTH2 handshakes over TCP with the proof's HMAC transform
 *   allocation failing (fail_function on dfkv_tenant_prove) and the
 *   binds too: a refused AUTH leaves the session unauthenticated (its
 *   tenant's keys FORBIDDEN), a wrong proof is never granted, a granted
 *   one carries the node's proof and its PUTs and GETs are exact;
 * - RDMA: libdfkv's connects over Soft-RoCE (rdma_rxe on a veth) with
 *   the connection's buffers failing (fail_function on conn_alloc_bufs:
 *   the connect is rejected BUSY after its QP was made) and the binds:
 *   each connection works with exact bytes or fails cleanly;
 * - disk: fail_make_request on the node's disk (a loop device), the node
 *   writing around RAM with PUTs acked on the disk, so every PUT writes
 *   and every GET reads the device.  After the faults the disk attaches
 *   again and serves only exact values or misses.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/wait.h>

#include <dfkv.h>

#include "kselftest_harness.h"
#include "testlib.h"
#include "dfkv_proof.h"

#define DBG		"/sys/kernel/debug"
#define NODE		"t-flt"
#define PORT		7491
#define KEYS		64
#define VAL_MAX		(1 << 20)

/* Write a string to a debugfs or procfs file; 0 or -errno. */
static int put_str(const char *path, const char *val)
{
	int fd = open(path, O_WRONLY), err = 0;

	if (fd < 0)
		return -errno;
	if (write(fd, val, strlen(val)) < 0)
		err = -errno;
	close(fd);
	return err;
}

/* One fault attribute of a capability (failslab, fail_page_alloc...). */
static int attr(const char *cap, const char *name, const char *val)
{
	char path[128];

	snprintf(path, sizeof(path), DBG "/%s/%s", cap, name);
	return put_str(path, val);
}

/* Arm (percent > 0) or disarm a capability: every call may fail. */
static int arm(const char *cap, int percent, int task_filter)
{
	char p[16];

	snprintf(p, sizeof(p), "%d", percent);
	return attr(cap, "probability", p) ?:
	       attr(cap, "interval", "1") ?:
	       attr(cap, "times", percent ? "-1" : "0") ?:
	       attr(cap, "space", "0") ?:
	       attr(cap, "verbose", "0") ?:
	       attr(cap, "task-filter", task_filter ? "Y" : "N");
}

/*
 * This thread's allocations may fail (failslab, fail_page_alloc).  The
 * file is opened once, before any fault: opening it allocates, and
 * turning the faults off must not be one of the calls that fail.
 */
static int mif_fd = -1;

static int make_it_fail(int on)
{
	if (mif_fd < 0)
		mif_fd = open("/proc/thread-self/make-it-fail", O_WRONLY);
	if (mif_fd < 0)
		return -errno;
	return write(mif_fd, on ? "1" : "0", 1) == 1 ? 0 : -errno;
}

/* Add function fn to fail_function's targets, returning retval. */
static int inject(const char *fn, const char *retval)
{
	char path[128];

	snprintf(path, sizeof(path), DBG "/fail_function/%s/retval", fn);
	return put_str(DBG "/fail_function/inject", fn) ?:
	       put_str(path, retval);
}

/* -ENOMEM as the u64 a function returning an errno gives back */
#define ENOMEM_RET	"0xfffffffffffffff4"

static int arm_allocations(int percent)
{
	return arm("failslab", percent, 1) ?:
	       attr("failslab", "ignore-gfp-wait", "N") ?:
	       arm("fail_page_alloc", percent, 1) ?:
	       attr("fail_page_alloc", "ignore-gfp-wait", "N") ?:
	       attr("fail_page_alloc", "ignore-gfp-highmem", "N") ?:
	       attr("fail_page_alloc", "min-order", "1");
}

/* The size of key i's value: 1 KiB to 1 MiB, spread over the classes. */
static uint64_t val_len(int i)
{
	return 1024ULL << (i % 11);
}

static int no_fault_injection(void)
{
	return access(DBG "/failslab", F_OK) ||
	       access(DBG "/fail_function", F_OK);
}

#define NEEDS_FAULTS()							\
	do {								\
		if (no_fault_injection())				\
			SKIP(return, "no fault injection in this kernel "	\
			     "(the debug kernel has it)");		\
	} while (0)

FIXTURE(faults) {
	struct dfkv_genl g;
	uint8_t *val, *out;
	int rxe;		/* the RDMA case set up Soft-RoCE */
};

static void rxe_down(void);

FIXTURE_SETUP(faults)
{
	if (no_fault_injection())
		return;		/* each case skips */
	ASSERT_EQ(0, dfkv_test_load());
	ASSERT_EQ(0, dfkv_genl_open(&self->g));
	ASSERT_EQ(0, make_it_fail(0));
	dfkv_test_node_del(&self->g, NODE);
	ASSERT_EQ(0, dfkv_test_node_add(&self->g, NODE, 64 << 20, 0, 1))
		TH_LOG("%s", self->g.errmsg);
	/* Touched now: the faults must not reach this process's pages. */
	self->val = malloc(VAL_MAX);
	self->out = malloc(VAL_MAX);
	ASSERT_TRUE(self->val && self->out);
	memset(self->val, 0, VAL_MAX);
	memset(self->out, 0, VAL_MAX);
	/*
	 * And so must this process's text: a page of it read in while the
	 * faults are on may fail its 9p read (the VM's root), a SIGBUS.
	 */
	ASSERT_EQ(0, mlockall(MCL_CURRENT));
}

FIXTURE_TEARDOWN(faults)
{
	if (!self->val)
		return;		/* skipped, or the set-up failed early */
	make_it_fail(0);
	arm_allocations(0);
	arm("fail_make_request", 0, 0);
	put_str(DBG "/fail_function/inject", "");
	EXPECT_EQ(0, dfkv_test_node_del(&self->g, NODE));
	if (self->rxe)
		rxe_down();
	dfkv_genl_close(&self->g);
	free(self->val);
	free(self->out);
}

/* A GET's outcome: a miss, or the whole value, exact. */
static int got_right(const struct dfkv_ioc_op *o, const uint8_t *out,
		     const struct dfkv_key *k, uint64_t len)
{
	if (o->status == DFKV_STATUS_NOT_FOUND)
		return 1;
	return o->status == DFKV_STATUS_OK && o->data_len == len &&
	       o->stored_len == len && dfkv_test_verify(out, len, k, 7);
}

/* After the faults: every key a miss or exact, and a new PUT served. */
static void node_serves(struct __test_metadata *_metadata,
			FIXTURE_DATA(faults) *self, int fd)
{
	struct dfkv_key k;
	struct dfkv_ioc_op o;
	int i;

	for (i = 0; i < KEYS; i++) {
		k = dfkv_test_key(77, i);
		ASSERT_EQ(0, dfkv_test_get(fd, &k, self->out, VAL_MAX, 0, 0, &o));
		EXPECT_TRUE(got_right(&o, self->out, &k, val_len(i)))
			TH_LOG("key %d: status %u, %llu bytes", i, o.status,
			       (unsigned long long)o.data_len);
	}
	k = dfkv_test_key(78, 1);
	dfkv_test_fill(self->val, 4096, &k, 7);
	ASSERT_EQ(0, dfkv_test_put(fd, &k, self->val, 4096, &o));
	EXPECT_EQ(DFKV_STATUS_OK, o.status);
	ASSERT_EQ(0, dfkv_test_get(fd, &k, self->out, VAL_MAX, 0, 0, &o));
	EXPECT_TRUE(o.status == DFKV_STATUS_OK &&
		    dfkv_test_verify(self->out, 4096, &k, 7));
}

TEST_F_TIMEOUT(faults, ioctl_ops_under_failing_allocations, 600)
{
	int fd, i, ok = 0, refused = 0, failed = 0;
	struct dfkv_ioc_op o;
	struct dfkv_key k;

	NEEDS_FAULTS();
	fd = dfkv_test_open(NODE);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, arm_allocations(10));
	ASSERT_EQ(0, make_it_fail(1));
	for (i = 0; i < 20 * KEYS; i++) {
		int n = i % KEYS, rc;
		uint64_t len = val_len(n);

		k = dfkv_test_key(77, n);
		if (i / KEYS % 2 == 0) {
			dfkv_test_fill(self->val, len, &k, 7);
			rc = dfkv_test_put(fd, &k, self->val, len, &o);
		} else {
			rc = dfkv_test_get(fd, &k, self->out, VAL_MAX, 0, 0, &o);
		}
		if (rc) {
			/* the syscall itself may fail: an errno, no more */
			EXPECT_TRUE(errno == ENOMEM || errno == EFAULT ||
				    errno == EINTR) TH_LOG("errno %d", errno);
			failed++;
			continue;
		}
		if (i / KEYS % 2 == 0) {
			EXPECT_TRUE(o.status == DFKV_STATUS_OK ||
				    o.status == DFKV_STATUS_CACHE_FULL ||
				    o.status == DFKV_STATUS_BUSY)
				TH_LOG("PUT status %u", o.status);
		} else {
			EXPECT_TRUE(got_right(&o, self->out, &k, len) ||
				    o.status == DFKV_STATUS_BUSY)
				TH_LOG("GET key %d: status %u, %llu bytes", n,
				       o.status, (unsigned long long)o.data_len);
		}
		if (o.status == DFKV_STATUS_OK)
			ok++;
		else
			refused++;
	}
	ASSERT_EQ(0, make_it_fail(0));
	ASSERT_EQ(0, arm_allocations(0));
	TH_LOG("%d served, %d refused, %d failed calls", ok, refused, failed);
	/* the faults were real, and not everything failed */
	EXPECT_LT(0, ok);
	EXPECT_LT(0, refused + failed);
	node_serves(_metadata, self, fd);
	close(fd);
}

#define SMALL	8	/* keys of 4 KiB for the leases and batches */

/*
 * Leases (which pin their hits) and batches of GETs under failing
 * allocations: statuses only, and once the faults stop nothing stays
 * pinned or leased.
 */
TEST_F_TIMEOUT(faults, leases_and_batches_under_failing_allocations, 600)
{
	struct dfkv_ioc_op ops[SMALL], o;
	struct dfkv_key keys[SMALL];
	int fd, i, j, leased = 0, refused = 0, failed = 0;
	struct dfkv_ioc_batch b;
	struct dfkv_ioc_keys r;
	uint64_t lens[SMALL];

	NEEDS_FAULTS();
	fd = dfkv_test_open(NODE);
	ASSERT_LE(0, fd);
	for (j = 0; j < SMALL; j++) {
		keys[j] = dfkv_test_key(80, j);
		dfkv_test_fill(self->val, 4096, &keys[j], 7);
		ASSERT_EQ(0, dfkv_test_put(fd, &keys[j], self->val, 4096, &o));
		ASSERT_EQ(DFKV_STATUS_OK, o.status);
	}
	ASSERT_EQ(0, arm_allocations(10));
	ASSERT_EQ(0, make_it_fail(1));
	for (i = 0; i < 100; i++) {
		/* a lease whose RELEASE failed expires in 2 s */
		if (dfkv_test_keys(fd, DFKV_IOC_LEASE, keys, SMALL, lens, 2000,
				   &r)) {
			EXPECT_TRUE(errno == ENOMEM || errno == EFAULT ||
				    errno == EINTR) TH_LOG("errno %d", errno);
			failed++;
		} else if (r.status == DFKV_STATUS_OK) {
			leased++;
			EXPECT_EQ(SMALL, r.nr_hits);
			/* a failed RELEASE leaves the lease to its TTL */
			r.keys = 0;	/* RELEASE by the lease's id */
			r.count = 0;
			r.results = 0;
			if (!ioctl(fd, DFKV_IOC_RELEASE, &r))
				EXPECT_EQ(DFKV_STATUS_OK, r.status);
		} else {
			EXPECT_TRUE(r.status == DFKV_STATUS_CACHE_FULL ||
				    r.status == DFKV_STATUS_BUSY)
				TH_LOG("LEASE status %u", r.status);
			refused++;
		}

		memset(ops, 0, sizeof(ops));
		for (j = 0; j < SMALL; j++) {
			ops[j].size = sizeof(ops[j]);
			ops[j].op = DFKV_OP_GET;
			ops[j].key = keys[j];
			ops[j].buf = (uintptr_t)(self->out + j * 4096);
			ops[j].cap = 4096;
		}
		memset(&b, 0, sizeof(b));
		b.size = sizeof(b);
		b.ops = (uintptr_t)ops;
		b.count = SMALL;
		b.op_size = sizeof(ops[0]);
		if (ioctl(fd, DFKV_IOC_BATCH, &b)) {
			EXPECT_TRUE(errno == ENOMEM || errno == EFAULT ||
				    errno == EINTR) TH_LOG("errno %d", errno);
			failed++;
		}
		/* the entries done: each a status, the bytes exact */
		for (j = 0; j < (int)b.nr_done && j < SMALL; j++)
			EXPECT_TRUE(got_right(&ops[j], self->out + j * 4096,
					      &keys[j], 4096) ||
				    ops[j].status == DFKV_STATUS_BUSY)
				TH_LOG("batch entry %d: status %u", j,
				       ops[j].status);
	}
	ASSERT_EQ(0, make_it_fail(0));
	ASSERT_EQ(0, arm_allocations(0));
	TH_LOG("%d leases, %d refused, %d failed calls", leased, refused,
	       failed);
	EXPECT_LT(0, leased);
	EXPECT_LT(0, refused + failed);
	/* nothing held once the leases' TTL passed */
	EXPECT_TRUE(dfkv_test_wait_stat(&self->g, NODE, DFKV_STAT_LEASES, 0, 0));
	EXPECT_TRUE(dfkv_test_wait_stat(&self->g, NODE, DFKV_STAT_PINS, 0, 0));
	node_serves(_metadata, self, fd);
	close(fd);
}

/*
 * NODE_NEW, then DISK_ADD, with this thread's allocations failing, each
 * on a netlink socket of its own (opened before the faults: a failed
 * ack leaves an error pending on the socket it was for).  Returns the
 * errno of the command, 0 when it was done; 1 on a set-up error.
 */
static int faulted_add(const char *dev)
{
	struct dfkv_genl f;
	int rc;

	if (dfkv_genl_open(&f))
		return 1;
	if (make_it_fail(1)) {
		dfkv_genl_close(&f);
		return 1;
	}
	rc = dev ? dfkv_test_disk_add(&f, "t-flt-n", dev, "d0", 1) :
		   dfkv_test_node_add(&f, "t-flt-n", 4 << 20, 0, 1);
	if (make_it_fail(0))
		rc = 1;
	dfkv_genl_close(&f);
	return rc;
}

TEST_F_TIMEOUT(faults, netlink_objects_under_failing_allocations, 600)
{
	const char *img = "/tmp/dfkv-flt.img";
	int i, made = 0, refused = 0, attached = 0;
	char dev[64], cmd[160];

	NEEDS_FAULTS();
	ASSERT_EQ(0, dfkv_test_new_loop(img, dev, sizeof(dev)));
	/* a NODE_NEW makes dozens of allocations: 2% refuses about half */
	ASSERT_EQ(0, arm_allocations(2));
	for (i = 0; i < 60; i++) {
		int rc = faulted_add(NULL);

		ASSERT_NE(1, rc);
		if (rc) {
			refused++;
			/* the reply may be what failed: no node left over */
			dfkv_test_node_del(&self->g, "t-flt-n");
			continue;
		}
		made++;
		rc = faulted_add(dev);
		ASSERT_NE(1, rc);
		attached += !rc;
		/* whatever the attach did, the node goes, the disk with it */
		EXPECT_EQ(0, dfkv_test_node_del(&self->g, "t-flt-n"))
			TH_LOG("%s", self->g.errmsg);
	}
	ASSERT_EQ(0, arm_allocations(0));
	TH_LOG("%d nodes made (%d with the disk), %d refused", made,
	       attached, refused);
	EXPECT_LT(0, made);
	EXPECT_LT(0, refused);
	/* the device was let go every time: it attaches now */
	ASSERT_EQ(0, dfkv_test_node_add(&self->g, "t-flt-n", 4 << 20, 0, 1));
	EXPECT_EQ(0, dfkv_test_disk_add(&self->g, "t-flt-n", dev, "d0", 1))
		TH_LOG("%s", self->g.errmsg);
	EXPECT_EQ(0, dfkv_test_node_del(&self->g, "t-flt-n"));
	snprintf(cmd, sizeof(cmd), "losetup -d %s; rm -f %s", dev, img);
	EXPECT_EQ(0, system(cmd));
}

TEST_F_TIMEOUT(faults, tcp_puts_under_failing_extent_binds, 600)
{
	int fd, dev, i, ok = 0, full = 0;
	struct dfkv_test_resp r;
	struct dfkv_key k;

	NEEDS_FAULTS();
	ASSERT_EQ(0, dfkv_test_listen(&self->g, NODE, "127.0.0.1", PORT, 1));
	ASSERT_EQ(0, inject("dfkv_arena_bind", ENOMEM_RET))
		TH_LOG("dfkv_arena_bind is not open to error injection");
	/* most binds fail: every class's first PUT is likely refused */
	ASSERT_EQ(0, arm("fail_function", 80, 0));
	fd = dfkv_test_tcp_connect(PORT);
	ASSERT_LE(0, fd);
	for (i = 0; i < KEYS; i++) {
		int st;

		k = dfkv_test_key(77, i);
		dfkv_test_fill(self->val, val_len(i), &k, 7);
		st = dfkv_test_tcp_call(fd, DFKV_OP_PUT, &k, 0, 0, self->val,
					val_len(i), &r, NULL, 0);
		ASSERT_LE(0, st) TH_LOG("the connection went at key %d", i);
		EXPECT_TRUE(st == DFKV_STATUS_OK ||
			    st == DFKV_STATUS_CACHE_FULL)
			TH_LOG("PUT status %d", st);
		ok += st == DFKV_STATUS_OK;
		full += st == DFKV_STATUS_CACHE_FULL;
		st = dfkv_test_tcp_call(fd, DFKV_OP_GET, &k, 0, 0, NULL, 0,
					&r, self->out, VAL_MAX);
		ASSERT_LE(0, st);
		if (st == DFKV_STATUS_OK) {
			EXPECT_TRUE(r.data_len == val_len(i) &&
				    dfkv_test_verify(self->out, val_len(i), &k,
						     7));
		} else {
			EXPECT_EQ(DFKV_STATUS_NOT_FOUND, st);
		}
	}
	ASSERT_EQ(0, arm("fail_function", 0, 0));
	ASSERT_EQ(0, put_str(DBG "/fail_function/inject", ""));
	TH_LOG("%d stored, %d CACHE_FULL", ok, full);
	EXPECT_LT(0, full);
	close(fd);
	dev = dfkv_test_open(NODE);
	ASSERT_LE(0, dev);
	node_serves(_metadata, self, dev);
	close(dev);
}

#define TA	0x0a0a0a0a00000001ULL	/* the tenant that authenticates */
#define TB	0x0b0b0b0b00000002ULL	/* one it never proves */
#define AUTH_CONNS	16
#define AUTH_VAL	4096

/*
 * One session under the faults: HELLO; a wrong proof refused; AUTH as
 * TA until it is granted, each refusal BUSY and leaving the session
 * without TA; then a PUT and a GET of TA's, exact, and TB's FORBIDDEN.
 * The number of refusals.
 */
static int auth_session(struct __test_metadata *_metadata,
			FIXTURE_DATA(faults) *self, int i)
{
	uint8_t hs[DFKV_HS_LEN], s[DFKV_TENANT_SECRET_LEN];
	struct dfkv_key k = dfkv_test_key(TA, i), kb = dfkv_test_key(TB, i);
	struct dfkv_key kx = dfkv_test_key(TA, 1000 + i);
	struct dfkv_test_resp r;
	int fd, st, busy = 0;

	fd = dfkv_test_tcp_connect(PORT);
	if (fd < 0)
		return -1;
	EXPECT_EQ(DFKV_STATUS_OK, dfkv_test_hello(fd, NODE, hs, NULL));
	dfkv_test_secret(TB, s);	/* not TA's */
	st = dfkv_test_auth(fd, NODE, TA, s, hs);
	EXPECT_TRUE(st == DFKV_STATUS_FORBIDDEN || st == DFKV_STATUS_BUSY)
		TH_LOG("a wrong proof: status %d", st);
	dfkv_test_secret(TA, s);
	dfkv_test_fill(self->val, AUTH_VAL, &kx, 7);
	while ((st = dfkv_test_auth(fd, NODE, TA, s, hs)) != DFKV_STATUS_OK) {
		EXPECT_EQ(DFKV_STATUS_BUSY, st);
		if (st != DFKV_STATUS_BUSY || ++busy > 100)
			break;
		/* the refusal granted nothing */
		EXPECT_EQ(DFKV_STATUS_FORBIDDEN,
			  dfkv_test_tcp_call(fd, DFKV_OP_PUT, &kx, 0, 0,
					     self->val, AUTH_VAL, &r, NULL, 0));
	}
	dfkv_test_fill(self->val, AUTH_VAL, &k, 7);
	st = dfkv_test_tcp_call(fd, DFKV_OP_PUT, &k, 0, 0, self->val,
				AUTH_VAL, &r, NULL, 0);
	EXPECT_TRUE(st == DFKV_STATUS_OK || st == DFKV_STATUS_CACHE_FULL)
		TH_LOG("PUT status %d", st);
	st = dfkv_test_tcp_call(fd, DFKV_OP_GET, &k, 0, 0, NULL, 0, &r,
				self->out, VAL_MAX);
	EXPECT_TRUE(st == DFKV_STATUS_NOT_FOUND ||
		    (st == DFKV_STATUS_OK && r.data_len == AUTH_VAL &&
		     dfkv_test_verify(self->out, AUTH_VAL, &k, 7)))
		TH_LOG("GET status %d, %llu bytes", st,
		       (unsigned long long)r.data_len);
	dfkv_test_fill(self->val, AUTH_VAL, &kb, 7);
	EXPECT_EQ(DFKV_STATUS_FORBIDDEN,
		  dfkv_test_tcp_call(fd, DFKV_OP_PUT, &kb, 0, 0, self->val,
				     AUTH_VAL, &r, NULL, 0));
	close(fd);
	return busy;
}

/*
 * A proof of zeros, its reply waited for without a limit: the node's
 * first proof since boot instantiates the kernel's hmac(sha256) and runs
 * its self-tests, seconds on the debug kernel under emulation (more than
 * the raw client's 5 s).  Its status.
 */
static int first_proof(void)
{
	uint8_t hs[DFKV_HS_LEN], proof[DFKV_AUTH_PROOF_LEN] = { 0 };
	struct dfkv_key k = { .tenant = TA };
	int st = -1, fd = dfkv_test_tcp_connect(PORT);
	struct pollfd p = { .fd = fd, .events = POLLIN };
	struct dfkv_test_resp r;

	if (fd < 0)
		return -1;
	if (dfkv_test_hello(fd, NODE, hs, NULL) == DFKV_STATUS_OK &&
	    !dfkv_test_tcp_send(fd, DFKV_OP_AUTH, &k, 0, 0, proof,
				sizeof(proof)) &&
	    poll(&p, 1, -1) == 1 && !dfkv_test_tcp_recv(fd, &r, NULL, 0))
		st = r.status;
	close(fd);
	return st;
}

TEST_F_TIMEOUT(faults, auth_under_failing_allocations, 600)
{
	uint8_t s[DFKV_TENANT_SECRET_LEN];
	int i, busy = 0, dev;
	struct dfkv_ioc_op o;
	struct dfkv_key k;

	NEEDS_FAULTS();
	ASSERT_EQ(0, dfkv_test_node_set_u32(&self->g, NODE, DFKV_A_NODE_AUTH,
					    DFKV_AUTH_REQUIRED));
	dfkv_test_secret(TA, s);
	ASSERT_EQ(0, dfkv_test_tenant_set(&self->g, NODE, TA, s, sizeof(s),
					  NULL)) TH_LOG("%s", self->g.errmsg);
	ASSERT_EQ(0, dfkv_test_listen(&self->g, NODE, "127.0.0.1", PORT, 1));
	ASSERT_EQ(DFKV_STATUS_FORBIDDEN, first_proof());
	ASSERT_EQ(0, inject("dfkv_tenant_prove", ENOMEM_RET))
		TH_LOG("dfkv_tenant_prove is not open to error injection");
	ASSERT_EQ(0, inject("dfkv_arena_bind", ENOMEM_RET));
	ASSERT_EQ(0, arm("fail_function", 50, 0));
	for (i = 0; i < AUTH_CONNS; i++) {
		int n = auth_session(_metadata, self, i);

		ASSERT_LE(0, n) TH_LOG("no connection");
		busy += n;
	}
	ASSERT_EQ(0, arm("fail_function", 0, 0));
	ASSERT_EQ(0, put_str(DBG "/fail_function/inject", ""));
	TH_LOG("%d sessions, %d AUTHs refused BUSY", AUTH_CONNS, busy);
	EXPECT_LT(0, busy);
	/* afterwards: granted at once, served exact */
	EXPECT_EQ(0, auth_session(_metadata, self, AUTH_CONNS));
	EXPECT_TRUE(dfkv_test_wait_stat(&self->g, NODE, DFKV_STAT_CONNS, 0, 0));
	/* nothing of the refused sessions' nor of TB's was stored */
	dev = dfkv_test_open(NODE);
	ASSERT_LE(0, dev);
	for (i = 0; i <= AUTH_CONNS; i++) {
		k = dfkv_test_key(TA, 1000 + i);
		ASSERT_EQ(0, dfkv_test_simple(dev, DFKV_IOC_EXIST, &k, &o));
		EXPECT_EQ(DFKV_STATUS_NOT_FOUND, o.status);
		k = dfkv_test_key(TB, i);
		ASSERT_EQ(0, dfkv_test_simple(dev, DFKV_IOC_EXIST, &k, &o));
		EXPECT_EQ(DFKV_STATUS_NOT_FOUND, o.status);
	}
	close(dev);
}

#define RDMA_ADDR	"198.51.100.81"
#define RDMA_PORT	7492
#define RDMA_CONNS	24
#define RDMA_VAL	(64 << 10)

/* Soft-RoCE on a veth end of this namespace (the client's and node's). */
static int rxe_up(void)
{
	return system("modprobe -a rdma_rxe rdma_ucm ib_uverbs veth && "
		      "ip link add rvflt0 type veth peer name rvflt1 && "
		      "ip addr add " RDMA_ADDR "/24 dev rvflt0 && "
		      "ip link set rvflt0 up && ip link set rvflt1 up && "
		      "rdma link add rxe_flt type rxe netdev rvflt0");
}

static void rxe_down(void)
{
	if (system("rdma link del rxe_flt; ip link del rvflt0"))
		fprintf(stderr, "# the Soft-RoCE device stays\n");
}

/* A libdfkv client of the node over RDMA; 0 or its status. */
static int rdma_open(struct dfkv_client **c)
{
	static const char ns[] = "faults";
	char members[64];
	struct dfkv_client_options_v2 o = {
		.size = sizeof(o),
		.transport = DFKV_TRANSPORT_RDMA,
		.members = members,
		.ns = ns, .ns_len = sizeof(ns) - 1,
		.conns_per_peer = 1,
		.connect_timeout_ms = 10000,
		.io_timeout_ms = 60000,
		.cooldown_ms = 1,
		.rdma_port = RDMA_PORT,
	};

	snprintf(members, sizeof(members), NODE "=" RDMA_ADDR ":%u",
		 DFKV_PORT_TCP);
	return dfkv_open_v2(&o, c);
}

/*
 * A client connects, PUTs value i and GETs it back, and goes: 1 when
 * both were served (the bytes exact), 0 when one failed with a status,
 * -1 for wrong bytes, a miss of what was stored or a malformed reply.
 */
static int rdma_round(FIXTURE_DATA(faults) *self, int i)
{
	struct dfkv_key k = dfkv_test_key(81, i);
	struct dfkv_client *c = NULL;
	uint64_t len = 0;
	int st, wrong = 0;
	char key[32];

	snprintf(key, sizeof(key), "flt-%d", i);
	dfkv_test_fill(self->val, RDMA_VAL, &k, 7);
	st = rdma_open(&c);
	if (!st)
		st = dfkv_put(c, key, strlen(key), self->val, RDMA_VAL);
	if (!st) {
		memset(self->out, 0, RDMA_VAL);
		st = dfkv_get(c, key, strlen(key), self->out, VAL_MAX, &len);
		wrong = st == DFKV_STATUS_NOT_FOUND ||
			(!st && (len != RDMA_VAL ||
				 !dfkv_test_verify(self->out, RDMA_VAL, &k, 7)));
	}
	wrong |= st == DFKV_E_PROTO;
	if (st || wrong)
		fprintf(stderr, "# round %d: %s%s\n", i, dfkv_strerror(st),
			wrong ? " WRONG" : "");
	dfkv_close(c);
	return wrong ? -1 : !st;
}

/*
 * Rounds first..last-1 in a client process of their own (librdmacm holds
 * the device open until its process exits, and the Soft-RoCE device goes
 * only once nothing holds it): how many were served, -1 when one was
 * wrong.
 */
static int rdma_rounds(FIXTURE_DATA(faults) *self, int first, int last)
{
	int i, n, served = 0, status;
	pid_t pid = fork();

	if (pid < 0)
		return -1;
	if (!pid) {
		for (i = first; i < last; i++) {
			n = rdma_round(self, i);
			if (n < 0)
				_exit(255);
			served += n;
		}
		_exit(served);
	}
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) ||
	    WEXITSTATUS(status) == 255)
		return -1;
	return WEXITSTATUS(status);
}

TEST_F_TIMEOUT(faults, rdma_connects_under_failing_allocations, 900)
{
	int ok;

	NEEDS_FAULTS();
	ASSERT_EQ(0, rxe_up());
	self->rxe = 1;
	ASSERT_EQ(0, dfkv_test_listener(&self->g, NODE, RDMA_ADDR, RDMA_PORT,
					DFKV_LISTENER_RDMA, 1))
		TH_LOG("%s", self->g.errmsg);
	ASSERT_EQ(0, inject("conn_alloc_bufs", ENOMEM_RET))
		TH_LOG("conn_alloc_bufs is not open to error injection");
	ASSERT_EQ(0, inject("dfkv_arena_bind", ENOMEM_RET));
	ASSERT_EQ(0, arm("fail_function", 40, 0));
	ok = rdma_rounds(self, 0, RDMA_CONNS);
	ASSERT_EQ(0, arm("fail_function", 0, 0));
	ASSERT_EQ(0, put_str(DBG "/fail_function/inject", ""));
	TH_LOG("%d of %d connections served", ok, RDMA_CONNS);
	/* none wrong, the faults real, and not everything failed */
	EXPECT_LT(0, ok);
	EXPECT_GT(RDMA_CONNS, ok);
	/* afterwards the node serves RDMA clients */
	EXPECT_EQ(2, rdma_rounds(self, RDMA_CONNS, RDMA_CONNS + 2));
	/* and every connection, refused or served, gave its slot back */
	EXPECT_TRUE(dfkv_test_wait_stat(&self->g, NODE, DFKV_STAT_RDMA_CONNS,
					0, 0));
}

/* Make every request to block device dev (/dev/loopN) subject to faults. */
static int disk_make_it_fail(const char *dev, int on)
{
	char path[96];

	snprintf(path, sizeof(path), "/sys/block/%s/make-it-fail",
		 strrchr(dev, '/') + 1);
	return put_str(path, on ? "1" : "0");
}

/* A disk-backed op's outcome: served right, or one of the failures. */
static int disk_op_ok(int put, const struct dfkv_ioc_op *o, const uint8_t *out,
		      const struct dfkv_key *k, uint64_t len)
{
	if (o->status == DFKV_STATUS_IO_ERROR || o->status == DFKV_STATUS_BUSY)
		return 1;
	if (put)
		return o->status == DFKV_STATUS_OK ||
		       o->status == DFKV_STATUS_CACHE_FULL;
	return got_right(o, out, k, len);
}

/* The disk d0 leaves and comes back: its blocks are on the disk only. */
static int disk_cycle(struct dfkv_genl *g, const char *dev)
{
	return dfkv_test_disk_del(g, NODE, "d0") ?:
	       dfkv_test_disk_add(g, NODE, dev, NULL, 0);
}

/*
 * Under the faults: GETs of blocks only on the disk (cold reads), twice,
 * then PUTs of new keys (payload and record writes, acked on the disk).
 */
static void disk_ops(struct __test_metadata *_metadata,
		     FIXTURE_DATA(faults) *self, int fd, int *ok, int *failed)
{
	struct dfkv_ioc_op o;
	struct dfkv_key k;
	int round, i;

	for (round = 0; round < 3; round++) {
		for (i = 0; i < KEYS; i++) {
			int put = round == 2;
			uint64_t len = val_len(i);

			k = dfkv_test_key(put ? 79 : 77, i);
			if (put) {
				dfkv_test_fill(self->val, len, &k, 7);
				ASSERT_EQ(0, dfkv_test_put(fd, &k, self->val,
							   len, &o));
			} else {
				ASSERT_EQ(0, dfkv_test_get(fd, &k, self->out,
							   VAL_MAX, 0, 0, &o));
			}
			EXPECT_TRUE(disk_op_ok(put, &o, self->out, &k, len))
				TH_LOG("%s key %d: status %u, %llu bytes",
				       put ? "PUT" : "GET", i, o.status,
				       (unsigned long long)o.data_len);
			*ok += o.status == DFKV_STATUS_OK;
			*failed += o.status != DFKV_STATUS_OK;
		}
	}
}

TEST_F_TIMEOUT(faults, disk_io_under_failing_requests, 600)
{
	const char *img = "/tmp/dfkv-flt-disk.img";
	int fd, i, ok = 0, failed = 0;
	char dev[64], cmd[160];
	struct dfkv_ioc_op o;
	struct dfkv_key k;

	NEEDS_FAULTS();
	ASSERT_EQ(0, dfkv_test_new_loop(img, dev, sizeof(dev)));
	ASSERT_EQ(0, dfkv_test_node_set_u32(&self->g, NODE,
					    DFKV_A_NODE_TIER_POLICY,
					    DFKV_TIER_WRITEAROUND));
	ASSERT_EQ(0, dfkv_test_node_set_u32(&self->g, NODE,
					    DFKV_A_NODE_TIER_ACK,
					    DFKV_ACK_DISK));
	ASSERT_EQ(0, dfkv_test_disk_add(&self->g, NODE, dev, "d0", 1))
		TH_LOG("%s", self->g.errmsg);
	fd = dfkv_test_open(NODE);
	ASSERT_LE(0, fd);
	for (i = 0; i < KEYS; i++) {
		k = dfkv_test_key(77, i);
		dfkv_test_fill(self->val, val_len(i), &k, 7);
		ASSERT_EQ(0, dfkv_test_put(fd, &k, self->val, val_len(i), &o));
		ASSERT_EQ(DFKV_STATUS_OK, o.status);
	}
	ASSERT_EQ(0, disk_cycle(&self->g, dev)) TH_LOG("%s", self->g.errmsg);

	ASSERT_EQ(0, disk_make_it_fail(dev, 1));
	ASSERT_EQ(0, arm("fail_make_request", 5, 0));
	disk_ops(_metadata, self, fd, &ok, &failed);
	ASSERT_EQ(0, arm("fail_make_request", 0, 0));
	ASSERT_EQ(0, disk_make_it_fail(dev, 0));
	TH_LOG("%d served, %d failed or missed", ok, failed);
	/* the faults were real, and not everything failed */
	EXPECT_LT(0, ok);
	EXPECT_LT(0, failed);

	/* Failed or not, the disk goes and attaches again unformatted. */
	EXPECT_EQ(0, disk_cycle(&self->g, dev)) TH_LOG("%s", self->g.errmsg);
	for (i = 0; i < KEYS; i++) {
		k = dfkv_test_key(79, i);
		ASSERT_EQ(0, dfkv_test_get(fd, &k, self->out, VAL_MAX, 0, 0, &o));
		EXPECT_TRUE(got_right(&o, self->out, &k, val_len(i)))
			TH_LOG("key %d: status %u", i, o.status);
	}
	node_serves(_metadata, self, fd);
	close(fd);
	EXPECT_EQ(0, dfkv_test_disk_del(&self->g, NODE, "d0"));
	snprintf(cmd, sizeof(cmd), "losetup -d %s; rm -f %s", dev, img);
	EXPECT_EQ(0, system(cmd));
}

TEST_HARNESS_MAIN
