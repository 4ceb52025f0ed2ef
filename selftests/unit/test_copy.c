// SPDX-License-Identifier: GPL-2.0
/*
 * Unit tests of dfkv-bench's copy reference (tools/bench/copy.c): the
 * inline "rep movsb" copies exactly the bytes asked, at any alignment and
 * size, and touches nothing around them; whether the kernel copies with
 * it ("erms" in /proc/cpuinfo) agrees with the CPU's own CPUID bit.
 */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>
#include <cpuid.h>	/* x86, as the copy under test */

/* kselftest_harness.h (6.1) is not -Wextra clean */
#pragma GCC diagnostic ignored "-Wunused-parameter"
#pragma GCC diagnostic ignored "-Wsign-compare"
#pragma GCC diagnostic ignored "-Wmisleading-indentation"
#include "kselftest_harness.h"
#include "copy.h"

#define GUARD	64

TEST(movsb_copies_exactly)
{
	static const size_t sizes[] = { 0, 1, 7, 63, 4096, 65537,
					(1 << 20) + 13 };
	static const size_t offs[] = { 0, 1, 3, 8, 61 };
	size_t max = (1 << 20) + 13 + 2 * GUARD + 64;
	unsigned char *src = malloc(max), *dst = malloc(max);
	size_t i, j, k;

	ASSERT_TRUE(copy_movsb_ok());
	ASSERT_NE(NULL, src);
	ASSERT_NE(NULL, dst);
	for (k = 0; k < max; k++)
		src[k] = (unsigned char)(k * 131 + 7);
	for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++)
		for (j = 0; j < sizeof(offs) / sizeof(offs[0]); j++) {
			size_t n = sizes[i], so = offs[j], doff = GUARD + offs[(j + 1) % 5];

			memset(dst, 0xee, max);
			copy_movsb(dst + doff, src + so, n);
			ASSERT_EQ(0, memcmp(dst + doff, src + so, n));
			for (k = 0; k < doff; k++)
				ASSERT_EQ(0xee, dst[k]);
			for (k = doff + n; k < doff + n + GUARD; k++)
				ASSERT_EQ(0xee, dst[k]);
		}
	free(src);
	free(dst);
}

TEST(kernel_copy_matches_cpuid)
{
	unsigned int a = 0, b = 0, c = 0, d = 0;

	ASSERT_TRUE(__get_cpuid_count(7, 0, &a, &b, &c, &d));
	/* CPUID.(EAX=7,ECX=0):EBX bit 9: enhanced rep movsb/stosb */
	EXPECT_EQ(!!(b & (1U << 9)), copy_kernel_uses_movsb());
}

TEST_HARNESS_MAIN
