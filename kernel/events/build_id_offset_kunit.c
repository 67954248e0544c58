// SPDX-License-Identifier: GPL-2.0
/*
 * KUnit tests of PERF_SAMPLE_BUILD_ID_OFFSET's parts that need no task: the
 * sample-side stash and the ordering of addresses.  The records themselves
 * are tested from user space (tools/testing/selftests/perf_events).
 */

#include <kunit/test.h>
#include <linux/mm.h>
#include <linux/perf_event.h>
#include <linux/slab.h>

#include "build_id_offset.h"

static void bido_stash_pages(struct kunit *test)
{
	struct perf_build_id_stash *st;
	unsigned long base = 0x400000;
	unsigned int i;

	st = kunit_kzalloc(test, sizeof(*st), GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, st);

	/* Two addresses of one page are kept once, as the page */
	KUNIT_EXPECT_TRUE(test, perf_bido_stash_add(st, base + 0x10));
	KUNIT_EXPECT_TRUE(test, perf_bido_stash_add(st, base + 0x800));
	KUNIT_EXPECT_EQ(test, st->nr, 1);
	KUNIT_EXPECT_EQ(test, st->addrs[0], base);

	/* No user address: nothing to keep, and not a failure */
	KUNIT_EXPECT_TRUE(test, perf_bido_stash_add(st, 0));
	KUNIT_EXPECT_TRUE(test, perf_bido_stash_add(st, TASK_SIZE));
	KUNIT_EXPECT_TRUE(test, perf_bido_stash_add(st, -1UL));
	KUNIT_EXPECT_EQ(test, st->nr, 1);

	/* Fill it: the first page that does not fit says so */
	for (i = 1; i < ARRAY_SIZE(st->addrs); i++)
		KUNIT_EXPECT_TRUE(test, perf_bido_stash_add(st, base + i * PAGE_SIZE));
	KUNIT_EXPECT_EQ(test, st->nr, ARRAY_SIZE(st->addrs));
	KUNIT_EXPECT_FALSE(test, perf_bido_stash_add(st, base + i * PAGE_SIZE));
	/* A page already kept still is */
	KUNIT_EXPECT_TRUE(test, perf_bido_stash_add(st, base + 5 * PAGE_SIZE + 1));
	KUNIT_EXPECT_EQ(test, st->nr, ARRAY_SIZE(st->addrs));
}

static void bido_unique_pages(struct kunit *test)
{
	unsigned long p = 0x7f0000000000UL;
	unsigned long a[] = {
		p + 3 * PAGE_SIZE,			/* a frame */
		(p + PAGE_SIZE) | 1,			/* a stack word only */
		(p + 3 * PAGE_SIZE) | 1,			/* a stack word, page has a frame */
		p,
		(p + PAGE_SIZE) | 1,
		p,
	};
	unsigned int n;

	n = perf_bido_unique_pages(a, ARRAY_SIZE(a));
	KUNIT_ASSERT_EQ(test, n, 3);
	KUNIT_EXPECT_EQ(test, a[0], p);
	/* Only stack words fell in this page: it stays marked */
	KUNIT_EXPECT_EQ(test, a[1], p + PAGE_SIZE + 1);
	/* A frame fell in this one too: it must be looked up like a frame */
	KUNIT_EXPECT_EQ(test, a[2], p + 3 * PAGE_SIZE);

	KUNIT_EXPECT_EQ(test, perf_bido_unique_pages(a, 0), 0);
}

static void bido_abi(struct kunit *test)
{
	/* The record's head and map layout are ABI */
	KUNIT_EXPECT_EQ(test, sizeof(((struct perf_build_id_offset_record *)0)->head), 32);
	KUNIT_EXPECT_EQ(test, sizeof(struct perf_build_id_offset_map), 48);
	KUNIT_EXPECT_EQ(test, PERF_SAMPLE_BUILD_ID_OFFSET, 1U << 25);
	KUNIT_EXPECT_EQ(test, PERF_RECORD_BUILD_ID_OFFSET, 23);
}

static struct kunit_case bido_cases[] = {
	KUNIT_CASE(bido_stash_pages),
	KUNIT_CASE(bido_unique_pages),
	KUNIT_CASE(bido_abi),
	{}
};

static struct kunit_suite bido_suite = {
	.name = "perf_build_id_offset",
	.test_cases = bido_cases,
};

kunit_test_suite(bido_suite);

MODULE_DESCRIPTION("KUnit tests of PERF_SAMPLE_BUILD_ID_OFFSET");
MODULE_LICENSE("GPL");
MODULE_IMPORT_NS("EXPORTED_FOR_KUNIT_TESTING");
