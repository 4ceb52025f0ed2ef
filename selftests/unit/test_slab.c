// SPDX-License-Identifier: GPL-2.0
/*
 * Native unit test of the media-agnostic slab allocator (kmod/slab.c),
 * built unchanged against the userspace kernel shim in kshim/: the
 * size-class lattice and its waste bound, slot allocation, offsets,
 * exhaustion, extent return and rebinding, victim choice and draining,
 * rebuild claims, the bind/unbind callback pairing (never under a lock),
 * stats, and a multi-threaded stress that checks no byte of the medium is
 * ever handed out twice.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The harness's macros compare mixed types and ignore parameters. */
#pragma GCC diagnostic ignored "-Wsign-compare"
#pragma GCC diagnostic ignored "-Wunused-parameter"
#include "kselftest_harness.h"

#include <linux/jiffies.h>
#include <linux/bug.h>
#include "slab.h"

#define KIB	1024ULL
#define MAX_EXT	64

/* Medium callbacks that record what the allocator asked for. */
struct medium {
	pthread_mutex_t lock;
	int bound[MAX_EXT];	/* class bound to, -1 when unbound */
	unsigned int binds, unbinds, bind_failures;
	int fail_next;		/* error for the next bind */
	int pairing_errors;
};

static int medium_bind(void *ctx, u32 extent, int cls)
{
	struct medium *m = ctx;
	int err = 0;

	might_sleep();	/* traps when called under an allocator lock */
	pthread_mutex_lock(&m->lock);
	if (m->fail_next) {
		err = m->fail_next;
		m->fail_next = 0;
		m->bind_failures++;
	} else {
		if (extent >= MAX_EXT || m->bound[extent] != -1)
			m->pairing_errors++;
		else
			m->bound[extent] = cls;
		m->binds++;
	}
	pthread_mutex_unlock(&m->lock);
	return err;
}

static void medium_unbind(void *ctx, u32 extent)
{
	struct medium *m = ctx;

	might_sleep();
	pthread_mutex_lock(&m->lock);
	if (extent >= MAX_EXT || m->bound[extent] == -1)
		m->pairing_errors++;
	else
		m->bound[extent] = -1;
	m->unbinds++;
	pthread_mutex_unlock(&m->lock);
}

static const struct dfkv_slab_ops medium_ops = {
	.bind = medium_bind,
	.unbind = medium_unbind,
};

static void medium_init(struct medium *m)
{
	memset(m, 0, sizeof(*m));
	pthread_mutex_init(&m->lock, NULL);
	for (int i = 0; i < MAX_EXT; i++)
		m->bound[i] = -1;
}

static u64 round4k(u64 x)
{
	return (x + 4095) & ~4095ULL;
}

/* Small geometry used by most tests: 64 KiB extents, 7 classes. */
#define E64	(64 * KIB)
enum { C4K, C8K, C12K, C16K, C20K, C32K, C64K };

TEST(lattice_properties)
{
	static const u64 sizes[] = { 64 * KIB, 128 * KIB, 1024 * KIB,
				     4096 * KIB, 64 * 1024 * KIB,
				     1024 * 1024 * KIB };

	for (unsigned int k = 0; k < ARRAY_SIZE(sizes); k++) {
		u64 e = sizes[k], prev = 0, len;
		struct dfkv_slab s;
		int n;

		ASSERT_EQ(0, dfkv_slab_init(&s, e, 1, NULL, NULL));
		n = s.nr_classes;
		ASSERT_LE(n, DFKV_SLAB_MAX_CLASSES);
		ASSERT_EQ(4096, dfkv_slab_class_size(&s, 0));
		ASSERT_EQ(e, dfkv_slab_class_size(&s, n - 1));
		ASSERT_EQ(1, dfkv_slab_slots_per_extent(&s, n - 1));
		ASSERT_EQ(0, dfkv_slab_class_size(&s, n));
		ASSERT_EQ(0, dfkv_slab_class_size(&s, -1));
		for (int i = 0; i < n; i++) {
			u64 size = dfkv_slab_class_size(&s, i);
			u32 spe = dfkv_slab_slots_per_extent(&s, i);

			ASSERT_EQ(0, size % 4096);
			ASSERT_LT(prev, size);
			ASSERT_EQ(e / size, spe);
			/* widened: no larger 4 KiB multiple has as many slots */
			ASSERT_LT(e / (size + 4096), spe);
			/* geometric: at most 1.25x the previous class, widened */
			if (i)
				ASSERT_LT(size * spe,
					  round4k(prev + prev / 4) * (spe + 1));
			prev = size;
		}

		/*
		 * Waste bound: a value of len bytes never occupies more of an
		 * extent than a slot of round_up(len * 1.25, 4 KiB) would.
		 */
		for (u64 i = 1; i <= (e <= 1024 * KIB ? e : 3 * e / 4096); i++) {
			u64 bound;
			int cls;

			/* every length, or both sides of each 4 KiB step */
			len = e <= 1024 * KIB ? i : (i / 3) * 4096 + i % 3 - 1;
			if (!len || len > e)
				continue;
			bound = round4k(len + len / 4);
			if (bound > e)
				bound = e;
			cls = dfkv_slab_class(&s, len);
			ASSERT_LE(0, cls);
			ASSERT_LE(len, dfkv_slab_class_size(&s, cls));
			if (cls)
				ASSERT_LT(dfkv_slab_class_size(&s, cls - 1), len);
			ASSERT_LE(e / bound, dfkv_slab_slots_per_extent(&s, cls));
		}
		TH_LOG("extent %llu KiB: %d classes",
		       (unsigned long long)(e / KIB), n);
		dfkv_slab_destroy(&s);
	}
}

TEST(class_lookup_edges)
{
	struct dfkv_slab s;
	int last;

	ASSERT_EQ(0, dfkv_slab_init(&s, 4096 * KIB, 8, NULL, NULL));
	last = s.nr_classes - 1;
	EXPECT_EQ(-EINVAL, dfkv_slab_class(&s, 0));
	EXPECT_EQ(0, dfkv_slab_class(&s, 1));
	EXPECT_EQ(0, dfkv_slab_class(&s, 4096));
	EXPECT_EQ(1, dfkv_slab_class(&s, 4097));
	EXPECT_EQ(last, dfkv_slab_class(&s, 4096 * KIB));
	EXPECT_EQ(last - 1, dfkv_slab_class(&s, 2048 * KIB));
	EXPECT_EQ(last, dfkv_slab_class(&s, 2048 * KIB + 1));
	EXPECT_EQ(-E2BIG, dfkv_slab_class(&s, 4096 * KIB + 1));
	EXPECT_EQ(-E2BIG, dfkv_slab_class(&s, ~0ULL));
	for (int i = 0; i <= last; i++)
		EXPECT_EQ(i, dfkv_slab_class(&s, dfkv_slab_class_size(&s, i)));
	dfkv_slab_destroy(&s);
}

TEST(init_rejects_bad_geometry)
{
	struct dfkv_slab s;

	EXPECT_EQ(-EINVAL, dfkv_slab_init(&s, 32 * KIB, 4, NULL, NULL));
	EXPECT_EQ(-EINVAL, dfkv_slab_init(&s, 96 * KIB, 4, NULL, NULL));
	EXPECT_EQ(-EINVAL, dfkv_slab_init(&s, 2048 * 1024 * KIB, 4,
					  NULL, NULL));
	EXPECT_EQ(-EINVAL, dfkv_slab_init(&s, 0, 4, NULL, NULL));
	EXPECT_EQ(-EINVAL, dfkv_slab_init(&s, E64, 0, NULL, NULL));
	ASSERT_EQ(0, dfkv_slab_init(&s, E64, 1, NULL, NULL));
	EXPECT_EQ(7, s.nr_classes);
	dfkv_slab_destroy(&s);
	dfkv_slab_destroy(&s);	/* idempotent */
}

TEST(alloc_free_roundtrip)
{
	struct dfkv_slab_stats st;
	struct dfkv_slot a, b;
	struct dfkv_slab s;
	int x, y;

	ASSERT_EQ(0, dfkv_slab_init(&s, E64, 4, NULL, NULL));
	ASSERT_EQ(0, dfkv_slab_alloc(&s, 100, &x, &a));
	ASSERT_EQ(0, dfkv_slab_alloc(&s, 4096, &y, &b));
	EXPECT_EQ(0, a.extent);
	EXPECT_EQ(0, a.index);
	EXPECT_EQ(0, b.extent);
	EXPECT_EQ(1, b.index);
	EXPECT_EQ(0, dfkv_slot_offset(&s, a));
	EXPECT_EQ(4096, dfkv_slot_offset(&s, b));
	EXPECT_EQ(C4K, dfkv_slot_class(&s, a));
	EXPECT_EQ(&x, dfkv_slab_owner(&s, a));
	EXPECT_EQ(&y, dfkv_slab_owner(&s, b));

	dfkv_slab_free(&s, a);
	EXPECT_EQ(NULL, dfkv_slab_owner(&s, a));
	/* the lowest free slot is reused first */
	ASSERT_EQ(0, dfkv_slab_alloc(&s, 4000, &x, &a));
	EXPECT_EQ(0, a.index);
	dfkv_slab_free(&s, a);
	dfkv_slab_free(&s, b);

	dfkv_slab_stats(&s, &st);
	EXPECT_EQ(0, st.extents_bound);
	EXPECT_EQ(4, st.extents_free);
	EXPECT_EQ(0, st.slot_bytes_used);
	EXPECT_EQ(0, kshim_warnings);
	dfkv_slab_destroy(&s);
}

/* Fills the medium with every size and checks the slots never overlap. */
TEST(offsets_disjoint_within_medium)
{
	enum { NR = 8, PAGES = NR * E64 / 4096 };
	static const u64 lens[] = { 1, 5000, 9000, 12288, 17000, 20480,
				    30000, 65536 };
	struct dfkv_slot slots[PAGES];
	unsigned char used[PAGES] = { 0 };
	struct dfkv_slab s;
	unsigned int n = 0, full = 0, k;

	ASSERT_EQ(0, dfkv_slab_init(&s, E64, NR, NULL, NULL));
	for (k = 0; full < ARRAY_SIZE(lens); k++) {
		u64 len = lens[k % ARRAY_SIZE(lens)], off, size;
		int err;

		err = dfkv_slab_alloc(&s, len, &slots[n], &slots[n]);
		if (err) {
			ASSERT_EQ(-ENOSPC, err);
			full++;
			continue;
		}
		full = 0;
		off = dfkv_slot_offset(&s, slots[n]);
		size = dfkv_slab_class_size(&s, dfkv_slab_class(&s, len));
		ASSERT_EQ(0, off % 4096);
		ASSERT_LE(off + size, NR * E64);
		/* a slot never crosses its extent */
		ASSERT_EQ(off / E64, (off + size - 1) / E64);
		ASSERT_EQ(slots[n].extent, off / E64);
		for (u64 p = off / 4096; p < (off + size) / 4096; p++) {
			ASSERT_EQ(0, used[p]);
			used[p] = 1;
		}
		ASSERT_EQ(&slots[n], dfkv_slab_owner(&s, slots[n]));
		n++;
		ASSERT_LT(n, PAGES + 1);
	}
	while (n)
		dfkv_slab_free(&s, slots[--n]);
	EXPECT_EQ(0, kshim_warnings);
	dfkv_slab_destroy(&s);
}

TEST(exhaustion_enospc)
{
	struct dfkv_slot big[2], small[32], x;
	struct dfkv_slab_stats st;
	struct dfkv_slab s;
	int i;

	ASSERT_EQ(0, dfkv_slab_init(&s, E64, 2, NULL, NULL));
	ASSERT_EQ(0, dfkv_slab_alloc(&s, E64, &s, &big[0]));
	ASSERT_EQ(0, dfkv_slab_alloc(&s, E64 - 1, &s, &big[1]));
	EXPECT_EQ(-ENOSPC, dfkv_slab_alloc(&s, E64, &s, &x));
	EXPECT_EQ(-ENOSPC, dfkv_slab_alloc(&s, 1, &s, &x));
	EXPECT_EQ(-E2BIG, dfkv_slab_alloc(&s, E64 + 1, &s, &x));
	EXPECT_EQ(-EINVAL, dfkv_slab_alloc(&s, 0, &s, &x));
	dfkv_slab_stats(&s, &st);
	EXPECT_EQ(2, st.extents_bound);
	EXPECT_EQ(0, st.extents_free);

	/* one extent of 4 KiB slots: exactly 16 fit */
	dfkv_slab_free(&s, big[1]);
	for (i = 0; i < 16; i++)
		ASSERT_EQ(0, dfkv_slab_alloc(&s, 4096, &s, &small[i]));
	EXPECT_EQ(-ENOSPC, dfkv_slab_alloc(&s, 4096, &s, &x));
	EXPECT_EQ(-ENOSPC, dfkv_slab_alloc(&s, 8192, &s, &x));
	dfkv_slab_free(&s, small[7]);
	ASSERT_EQ(0, dfkv_slab_alloc(&s, 4096, &s, &small[7]));
	EXPECT_EQ(7, small[7].index);
	for (i = 0; i < 16; i++)
		dfkv_slab_free(&s, small[i]);
	dfkv_slab_free(&s, big[0]);
	dfkv_slab_stats(&s, &st);
	EXPECT_EQ(2, st.extents_free);
	dfkv_slab_destroy(&s);
}

TEST(extent_returns_to_pool_and_rebinds)
{
	struct dfkv_slot a[16], b;
	struct dfkv_slab_stats st;
	struct medium m;
	struct dfkv_slab s;
	int i;

	medium_init(&m);
	ASSERT_EQ(0, dfkv_slab_init(&s, E64, 1, &medium_ops, &m));
	EXPECT_EQ(0, m.binds);
	for (i = 0; i < 16; i++)
		ASSERT_EQ(0, dfkv_slab_alloc(&s, 4096, &a[i], &a[i]));
	EXPECT_EQ(1, m.binds);
	EXPECT_EQ(C4K, m.bound[0]);
	EXPECT_EQ(-ENOSPC, dfkv_slab_alloc(&s, 32 * KIB, &b, &b));
	for (i = 0; i < 15; i++)
		dfkv_slab_free(&s, a[i]);
	EXPECT_EQ(0, m.unbinds);
	EXPECT_EQ(-ENOSPC, dfkv_slab_alloc(&s, 32 * KIB, &b, &b));
	dfkv_slab_free(&s, a[15]);	/* last slot: back to the pool */
	EXPECT_EQ(1, m.unbinds);
	EXPECT_EQ(-1, m.bound[0]);
	dfkv_slab_stats(&s, &st);
	EXPECT_EQ(1, st.extents_free);

	ASSERT_EQ(0, dfkv_slab_alloc(&s, 32 * KIB, &b, &b));
	EXPECT_EQ(C32K, m.bound[0]);
	EXPECT_EQ(C32K, dfkv_slot_class(&s, b));
	EXPECT_EQ(0, b.extent);
	ASSERT_EQ(0, dfkv_slab_alloc(&s, 30000, &a[1], &a[1]));
	EXPECT_EQ(32 * KIB, dfkv_slot_offset(&s, a[1]));
	dfkv_slab_free(&s, b);
	dfkv_slab_free(&s, a[1]);
	EXPECT_EQ(2, m.binds);
	EXPECT_EQ(2, m.unbinds);
	EXPECT_EQ(0, m.pairing_errors);
	dfkv_slab_destroy(&s);
}

TEST(victim_extent_choice)
{
	struct dfkv_slot a[20], b[3], d, c, x;
	struct dfkv_slab s;
	void *owners[3];
	u32 ext, pos;
	int i;

	ASSERT_EQ(0, dfkv_slab_init(&s, E64, 4, NULL, NULL));
	EXPECT_EQ(-ENOENT, dfkv_slab_victim_extent(&s, -1, &ext));
	EXPECT_EQ(-EINVAL, dfkv_slab_victim_extent(&s, 7, &ext));

	jiffies = 100;		/* 4 KiB: two extents, 16 + 4 used */
	for (i = 0; i < 20; i++)
		ASSERT_EQ(0, dfkv_slab_alloc(&s, 4096, &a[i], &a[i]));
	jiffies = 200;		/* 8 KiB: one extent, 3 used */
	for (i = 0; i < 3; i++)
		ASSERT_EQ(0, dfkv_slab_alloc(&s, 8192, &b[i], &b[i]));
	jiffies = 300;		/* 64 KiB: the last extent */
	ASSERT_EQ(0, dfkv_slab_alloc(&s, E64, &d, &d));
	ASSERT_EQ(-ENOSPC, dfkv_slab_alloc(&s, 16 * KIB, &c, &c));

	/* coldest other class is 4 KiB; its emptiest extent is a[16]'s */
	ASSERT_EQ(0, dfkv_slab_victim_extent(&s, C16K, &ext));
	EXPECT_EQ(a[16].extent, ext);
	EXPECT_NE(a[0].extent, ext);

	/* a draining extent takes no new slot, though it has free ones */
	jiffies = 400;
	EXPECT_EQ(-ENOSPC, dfkv_slab_alloc(&s, 4096, &x, &x));

	/* its owners, in slot order, resumable */
	pos = 0;
	ASSERT_EQ(3, dfkv_slab_extent_owners(&s, ext, &pos, owners, 3));
	EXPECT_EQ(&a[16], owners[0]);
	EXPECT_EQ(&a[18], owners[2]);
	ASSERT_EQ(1, dfkv_slab_extent_owners(&s, ext, &pos, owners, 3));
	EXPECT_EQ(&a[19], owners[0]);
	EXPECT_EQ(0, dfkv_slab_extent_owners(&s, ext, &pos, owners, 3));

	/* the next victim skips the draining extent */
	ASSERT_EQ(0, dfkv_slab_victim_extent(&s, C16K, &x.extent));
	EXPECT_EQ(a[0].extent, x.extent);
	dfkv_slab_undrain(&s, x.extent);
	EXPECT_EQ(-ENOSPC, dfkv_slab_alloc(&s, 4096, &x, &x));
	/* excluding 4 KiB, 8 KiB is the coldest; undrained, it serves again */
	ASSERT_EQ(0, dfkv_slab_victim_extent(&s, C4K, &x.extent));
	EXPECT_EQ(b[0].extent, x.extent);
	EXPECT_EQ(-ENOSPC, dfkv_slab_alloc(&s, 8192, &x, &x));
	dfkv_slab_undrain(&s, b[0].extent);
	dfkv_slab_undrain(&s, b[0].extent);	/* no-op */
	ASSERT_EQ(0, dfkv_slab_alloc(&s, 8192, &x, &x));
	EXPECT_EQ(b[0].extent, x.extent);
	EXPECT_EQ(3, x.index);
	dfkv_slab_free(&s, x);

	/* evicting the victim's owners frees the extent for any class */
	for (i = 16; i < 20; i++)
		dfkv_slab_free(&s, a[i]);
	ASSERT_EQ(0, dfkv_slab_alloc(&s, 16 * KIB, &c, &c));
	EXPECT_EQ(ext, c.extent);

	/* only the needing class holds extents: nothing to give */
	for (i = 0; i < 16; i++)
		dfkv_slab_free(&s, a[i]);
	for (i = 0; i < 3; i++)
		dfkv_slab_free(&s, b[i]);
	dfkv_slab_free(&s, d);
	EXPECT_EQ(-ENOENT, dfkv_slab_victim_extent(&s, C16K, &ext));
	ASSERT_EQ(0, dfkv_slab_victim_extent(&s, -1, &ext));
	EXPECT_EQ(c.extent, ext);
	dfkv_slab_free(&s, c);	/* a draining extent empties normally */
	EXPECT_EQ(-ENOENT, dfkv_slab_victim_extent(&s, -1, &ext));
	EXPECT_EQ(0, kshim_warnings);
	dfkv_slab_destroy(&s);
}

TEST(victim_tie_prefers_richer_class)
{
	struct dfkv_slot a[17], b;
	struct dfkv_slab s;
	u32 ext;
	int i;

	ASSERT_EQ(0, dfkv_slab_init(&s, E64, 3, NULL, NULL));
	jiffies = 50;
	for (i = 0; i < 17; i++)
		ASSERT_EQ(0, dfkv_slab_alloc(&s, 4096, &a[i], &a[i]));
	ASSERT_EQ(0, dfkv_slab_alloc(&s, 8192, &b, &b));
	ASSERT_EQ(0, dfkv_slab_victim_extent(&s, C64K, &ext));
	EXPECT_EQ(a[16].extent, ext);	/* 4 KiB has two extents */
	for (i = 0; i < 17; i++)
		dfkv_slab_free(&s, a[i]);
	dfkv_slab_free(&s, b);
	dfkv_slab_destroy(&s);
}

TEST(claim_conflicts)
{
	struct dfkv_slot t, x;
	struct medium m;
	struct dfkv_slab s;
	int o1, o2;

	medium_init(&m);
	ASSERT_EQ(0, dfkv_slab_init(&s, E64, 4, &medium_ops, &m));
	t = (struct dfkv_slot){ .extent = 1, .index = 3 };
	ASSERT_EQ(0, dfkv_slab_claim(&s, t, C4K, &o1));
	EXPECT_EQ(1, m.binds);
	EXPECT_EQ(C4K, m.bound[1]);
	EXPECT_EQ(&o1, dfkv_slab_owner(&s, t));
	EXPECT_EQ(12 * KIB + E64, dfkv_slot_offset(&s, t));

	EXPECT_EQ(-EEXIST, dfkv_slab_claim(&s, t, C4K, &o2));
	EXPECT_EQ(&o1, dfkv_slab_owner(&s, t));
	t.index = 4;	/* bound to 4 KiB, so not an 8 KiB slot */
	EXPECT_EQ(-EEXIST, dfkv_slab_claim(&s, t, C8K, &o2));
	EXPECT_EQ(-EINVAL, dfkv_slab_claim(&s, t, C64K, &o2));
	EXPECT_EQ(-EINVAL, dfkv_slab_claim(&s, t, 7, &o2));
	EXPECT_EQ(-EINVAL, dfkv_slab_claim(&s, t, -1, &o2));
	t = (struct dfkv_slot){ .extent = 4, .index = 0 };
	EXPECT_EQ(-EINVAL, dfkv_slab_claim(&s, t, C4K, &o2));
	t = (struct dfkv_slot){ .extent = 1, .index = 16 };
	EXPECT_EQ(-EINVAL, dfkv_slab_claim(&s, t, C4K, &o2));
	t = (struct dfkv_slot){ .extent = 1, .index = 15 };
	ASSERT_EQ(0, dfkv_slab_claim(&s, t, C4K, &o2));
	EXPECT_EQ(1, m.binds);

	/* allocation fills the claimed extent's free slots, lowest first */
	ASSERT_EQ(0, dfkv_slab_alloc(&s, 4096, &x, &x));
	EXPECT_EQ(1, x.extent);
	EXPECT_EQ(0, x.index);

	/* a failed bind leaves the extent free and unclaimed */
	m.fail_next = -EIO;
	t = (struct dfkv_slot){ .extent = 2, .index = 0 };
	EXPECT_EQ(-EIO, dfkv_slab_claim(&s, t, C64K, &o2));
	EXPECT_EQ(-EINVAL, dfkv_slot_class(&s, t));
	ASSERT_EQ(0, dfkv_slab_claim(&s, t, C64K, &o2));
	/* a full one-slot extent: taken */
	EXPECT_EQ(-EEXIST, dfkv_slab_claim(&s, t, C64K, &o1));

	dfkv_slab_free(&s, x);
	dfkv_slab_free(&s, t);
	dfkv_slab_free(&s, (struct dfkv_slot){ .extent = 1, .index = 3 });
	dfkv_slab_free(&s, (struct dfkv_slot){ .extent = 1, .index = 15 });
	EXPECT_EQ(m.binds, m.unbinds);
	EXPECT_EQ(0, m.pairing_errors);
	EXPECT_EQ(0, kshim_warnings);
	dfkv_slab_destroy(&s);
}

TEST(bind_unbind_pairing)
{
	struct dfkv_slab_stats st;
	struct dfkv_slot a[6], x;
	struct medium m;
	struct dfkv_slab s;
	int i;

	medium_init(&m);
	ASSERT_EQ(0, dfkv_slab_init(&s, E64, 4, &medium_ops, &m));
	m.fail_next = -ENOMEM;
	EXPECT_EQ(-ENOMEM, dfkv_slab_alloc(&s, 4096, &x, &x));
	EXPECT_EQ(1, m.bind_failures);
	dfkv_slab_stats(&s, &st);
	EXPECT_EQ(4, st.extents_free);
	EXPECT_EQ(0, st.extents_bound);

	for (i = 0; i < 6; i++)
		ASSERT_EQ(0, dfkv_slab_alloc(&s, i % 2 ? 20000 : 4096,
					     &a[i], &a[i]));
	EXPECT_EQ(2, m.binds);	/* one 4 KiB and one 20 KiB extent */
	EXPECT_EQ(C4K, m.bound[a[0].extent]);
	EXPECT_EQ(C20K, m.bound[a[1].extent]);
	dfkv_slab_stats(&s, &st);
	EXPECT_EQ(st.extents_bound, m.binds - m.unbinds);
	for (i = 0; i < 6; i++)
		dfkv_slab_free(&s, a[i]);
	EXPECT_EQ(m.binds, m.unbinds);

	/* destroy with a slot still allocated warns and still unbinds */
	ASSERT_EQ(0, dfkv_slab_alloc(&s, 4096, &x, &x));
	dfkv_slab_destroy(&s);
	EXPECT_EQ(1, kshim_warnings);
	EXPECT_EQ(m.binds, m.unbinds);
	EXPECT_EQ(0, m.pairing_errors);
}

TEST(stats_consistency)
{
	static const u64 lens[] = { 1, 4096, 8192, 10000, 16384, 20000,
				    32768, 50000 };
	struct dfkv_slot slots[40];
	struct dfkv_slab_class_stats cs;
	struct dfkv_slab_stats st;
	u64 used = 0, tail = 0, total;
	struct dfkv_slab s;
	unsigned int i, n = 0;

	ASSERT_EQ(0, dfkv_slab_init(&s, E64, 16, NULL, NULL));
	for (i = 0; i < ARRAY_SIZE(slots); i++) {
		u64 len = lens[i % ARRAY_SIZE(lens)];

		if (dfkv_slab_alloc(&s, len, &slots[n], &slots[n]))
			continue;
		used += dfkv_slab_class_size(&s, dfkv_slab_class(&s, len));
		n++;
	}
	dfkv_slab_stats(&s, &st);
	EXPECT_EQ(E64, st.extent_bytes);
	EXPECT_EQ(16, st.nr_extents);
	EXPECT_EQ(7, st.nr_classes);
	EXPECT_EQ(used, st.slot_bytes_used);
	EXPECT_EQ(16, st.extents_bound + st.extents_free);
	EXPECT_EQ(st.extents_bound * E64, st.bound_bytes);
	EXPECT_EQ(st.bound_bytes - st.slot_bytes_used, st.waste_bytes);

	total = 0;
	for (i = 0; i < st.nr_classes; i++) {
		ASSERT_EQ(0, dfkv_slab_class_stats(&s, i, &cs));
		EXPECT_EQ(dfkv_slab_class_size(&s, i), cs.size);
		EXPECT_EQ(E64 % cs.size, cs.tail_bytes);
		EXPECT_EQ((u64)cs.extents * cs.slots_per_extent,
			  cs.slots_total);
		EXPECT_LE(cs.slots_used, cs.slots_total);
		tail += cs.extents * cs.tail_bytes;
		total += cs.extents;
	}
	EXPECT_EQ(st.extents_bound, total);
	EXPECT_EQ(tail, st.tail_bytes);
	EXPECT_LE(st.tail_bytes, st.waste_bytes);
	/* 12 KiB (5 slots) and 20 KiB (3 slots) leave 4 KiB tails */
	ASSERT_EQ(0, dfkv_slab_class_stats(&s, C12K, &cs));
	EXPECT_EQ(4096, cs.tail_bytes);
	EXPECT_EQ(-EINVAL, dfkv_slab_class_stats(&s, 7, &cs));

	while (n)
		dfkv_slab_free(&s, slots[--n]);
	dfkv_slab_stats(&s, &st);
	EXPECT_EQ(0, st.extents_bound);
	EXPECT_EQ(0, st.slot_bytes_used);
	EXPECT_EQ(0, st.waste_bytes);
	dfkv_slab_destroy(&s);
}

TEST(bad_free_warns)
{
	struct dfkv_slot a, b;
	struct dfkv_slab s;

	ASSERT_EQ(0, dfkv_slab_init(&s, E64, 2, NULL, NULL));
	ASSERT_EQ(0, dfkv_slab_alloc(&s, 1, &a, &a));
	ASSERT_EQ(0, dfkv_slab_alloc(&s, 1, &b, &b));
	dfkv_slab_free(&s, a);
	EXPECT_EQ(0, kshim_warnings);
	dfkv_slab_free(&s, a);			/* double free */
	EXPECT_EQ(1, kshim_warnings);
	dfkv_slab_free(&s, (struct dfkv_slot){ .extent = 1 });	/* unbound */
	dfkv_slab_free(&s, (struct dfkv_slot){ .extent = 9 });	/* range */
	dfkv_slab_free(&s, (struct dfkv_slot){ .index = 99 });
	EXPECT_EQ(4, kshim_warnings);
	EXPECT_EQ(&b, dfkv_slab_owner(&s, b));
	dfkv_slab_free(&s, b);
	EXPECT_EQ(4, kshim_warnings);
	dfkv_slab_destroy(&s);
	EXPECT_EQ(4, kshim_warnings);
}

/*
 * An allocator that finds no free extent while another task is binding one
 * to its class waits for that extent's slots instead of failing.
 */
struct slow_medium {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool entered, release;
	unsigned int binds;
};

static int slow_bind(void *ctx, u32 extent, int cls)
{
	struct slow_medium *m = ctx;

	might_sleep();
	pthread_mutex_lock(&m->lock);
	m->binds++;
	m->entered = true;
	pthread_cond_broadcast(&m->cond);
	while (!m->release)
		pthread_cond_wait(&m->cond, &m->lock);
	pthread_mutex_unlock(&m->lock);
	return 0;
}

static const struct dfkv_slab_ops slow_ops = { .bind = slow_bind };

struct slow_alloc {
	struct dfkv_slab *s;
	struct dfkv_slot slot;
	int err;
};

static void *slow_alloc_run(void *arg)
{
	struct slow_alloc *a = arg;

	a->err = dfkv_slab_alloc(a->s, 4096, a, &a->slot);
	return NULL;
}

TEST(alloc_waits_for_concurrent_bind)
{
	struct slow_medium m = { .lock = PTHREAD_MUTEX_INITIALIZER,
				 .cond = PTHREAD_COND_INITIALIZER };
	struct slow_alloc a, b;
	struct dfkv_slab_stats st;
	pthread_t ta, tb;
	struct dfkv_slab s;

	ASSERT_EQ(0, dfkv_slab_init(&s, E64, 1, &slow_ops, &m));
	a = (struct slow_alloc){ .s = &s, .err = 1 };
	b = a;
	ASSERT_EQ(0, pthread_create(&ta, NULL, slow_alloc_run, &a));
	pthread_mutex_lock(&m.lock);
	while (!m.entered)
		pthread_cond_wait(&m.cond, &m.lock);
	pthread_mutex_unlock(&m.lock);

	/* the only extent is being bound: b must wait, not fail */
	dfkv_slab_stats(&s, &st);
	EXPECT_EQ(0, st.extents_free);
	EXPECT_EQ(0, st.extents_bound);
	ASSERT_EQ(0, pthread_create(&tb, NULL, slow_alloc_run, &b));
	usleep(20000);
	pthread_mutex_lock(&m.lock);
	m.release = true;
	pthread_cond_broadcast(&m.cond);
	pthread_mutex_unlock(&m.lock);
	ASSERT_EQ(0, pthread_join(ta, NULL));
	ASSERT_EQ(0, pthread_join(tb, NULL));

	ASSERT_EQ(0, a.err);
	ASSERT_EQ(0, b.err);
	EXPECT_EQ(1, m.binds);
	EXPECT_EQ(a.slot.extent, b.slot.extent);
	EXPECT_NE(a.slot.index, b.slot.index);
	dfkv_slab_free(&s, a.slot);
	dfkv_slab_free(&s, b.slot);
	dfkv_slab_destroy(&s);
}

/*
 * Stress: threads allocate and free slots of random sizes on a small medium
 * (so extents are bound, unbound and rebound to other classes all the time)
 * while victims are drained and undrained.  Every live slot's pages are
 * marked in a shared map with compare-and-swap: a byte handed out twice
 * shows up as a collision.
 */
#define ST_THREADS	8
#define ST_ITERS	50000
#define ST_LIVE		12
#define ST_EXTENTS	24
#define ST_PAGES	(ST_EXTENTS * E64 / 4096)

struct stress {
	struct dfkv_slab s;
	int pages[ST_PAGES];
	pthread_barrier_t start;
	unsigned long collisions, bad_owner, errors, allocs, enospc;
};

struct stress_thread {
	struct stress *st;
	unsigned int id;
};

static int stress_mark(struct stress *st, struct dfkv_slot slot, int from,
		       int to)
{
	u64 off = dfkv_slot_offset(&st->s, slot);
	u64 size = dfkv_slab_class_size(&st->s, dfkv_slot_class(&st->s, slot));
	int bad = 0;

	for (u64 p = off / 4096; p < (off + size) / 4096; p++) {
		int want = from;

		if (p >= ST_PAGES ||
		    !__atomic_compare_exchange_n(&st->pages[p], &want, to,
						 false, __ATOMIC_SEQ_CST,
						 __ATOMIC_SEQ_CST))
			bad = 1;
	}
	return bad;
}

static void *stress_run(void *arg)
{
	struct stress_thread *t = arg;
	struct stress *st = t->st;
	struct dfkv_slot live[ST_LIVE];
	bool have[ST_LIVE] = { false };
	unsigned int seed = t->id * 7919 + 1;
	int me = t->id + 1;

	pthread_barrier_wait(&st->start);
	for (int it = 0; it < ST_ITERS; it++) {
		unsigned int k = rand_r(&seed) % ST_LIVE;

		if (have[k]) {
			if (dfkv_slab_owner(&st->s, live[k]) != &live[k])
				__atomic_add_fetch(&st->bad_owner, 1,
						   __ATOMIC_RELAXED);
			if (stress_mark(st, live[k], me, 0))
				__atomic_add_fetch(&st->collisions, 1,
						   __ATOMIC_RELAXED);
			dfkv_slab_free(&st->s, live[k]);
			have[k] = false;
		} else {
			unsigned int r = rand_r(&seed);
			/* mostly two hot classes, so threads contend */
			u64 len = (r & 3) == 3 ? 1 + (r >> 2) % E64 :
				  (r & 3) == 2 ? 1 + (r >> 2) % (20 * KIB) :
				  (r & 3) * 4096 + 1 + (r >> 2) % 4096;
			int err = dfkv_slab_alloc(&st->s, len, &live[k],
						  &live[k]);

			if (err == -ENOSPC) {
				__atomic_add_fetch(&st->enospc, 1,
						   __ATOMIC_RELAXED);
			} else if (err) {
				__atomic_add_fetch(&st->errors, 1,
						   __ATOMIC_RELAXED);
			} else {
				__atomic_add_fetch(&st->allocs, 1,
						   __ATOMIC_RELAXED);
				if (stress_mark(st, live[k], 0, me))
					__atomic_add_fetch(&st->collisions, 1,
							   __ATOMIC_RELAXED);
				have[k] = true;
			}
		}
		if (it % 512 == 0) {
			u32 ext;

			if (!dfkv_slab_victim_extent(&st->s, -1, &ext))
				dfkv_slab_undrain(&st->s, ext);
		}
	}
	for (int k = 0; k < ST_LIVE; k++) {
		if (!have[k])
			continue;
		if (stress_mark(st, live[k], me, 0))
			__atomic_add_fetch(&st->collisions, 1,
					   __ATOMIC_RELAXED);
		dfkv_slab_free(&st->s, live[k]);
	}
	return NULL;
}

TEST(stress_threads)
{
	struct stress_thread t[ST_THREADS];
	pthread_t tid[ST_THREADS];
	struct dfkv_slab_stats ss;
	struct stress *st;
	struct medium m;

	st = calloc(1, sizeof(*st));
	ASSERT_NE(NULL, st);
	medium_init(&m);
	ASSERT_EQ(0, dfkv_slab_init(&st->s, E64, ST_EXTENTS, &medium_ops,
				    &m));
	ASSERT_EQ(0, pthread_barrier_init(&st->start, NULL, ST_THREADS));
	for (int i = 0; i < ST_THREADS; i++) {
		t[i] = (struct stress_thread){ .st = st, .id = i };
		ASSERT_EQ(0, pthread_create(&tid[i], NULL, stress_run, &t[i]));
	}
	for (int i = 0; i < ST_THREADS; i++)
		ASSERT_EQ(0, pthread_join(tid[i], NULL));

	TH_LOG("%lu allocations, %lu ENOSPC, %u binds", st->allocs,
	       st->enospc, m.binds);
	EXPECT_EQ(0, st->collisions);
	EXPECT_EQ(0, st->bad_owner);
	EXPECT_EQ(0, st->errors);
	EXPECT_LT(ST_THREADS * ST_ITERS / 4, st->allocs);
	EXPECT_LT(ST_EXTENTS, m.binds);	/* extents were rebound */
	EXPECT_EQ(m.binds, m.unbinds);
	EXPECT_EQ(0, m.pairing_errors);
	EXPECT_EQ(0, kshim_warnings);
	dfkv_slab_stats(&st->s, &ss);
	EXPECT_EQ(ST_EXTENTS, ss.extents_free);
	EXPECT_EQ(0, ss.extents_bound);
	EXPECT_EQ(0, ss.slot_bytes_used);
	for (int p = 0; p < ST_PAGES; p++)
		ASSERT_EQ(0, st->pages[p]);
	dfkv_slab_destroy(&st->s);
	pthread_barrier_destroy(&st->start);
	free(st);
}

TEST_HARNESS_MAIN
