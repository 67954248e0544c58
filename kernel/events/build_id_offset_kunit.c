// SPDX-License-Identifier: GPL-2.0
/*
 * KUnit tests of PERF_SAMPLE_BUILD_ID_OFFSET's parts that need no task: the
 * sample-side stash, the ordering of addresses and which samples the task's
 * last record covers.  The records themselves
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

/*
 * A sample's user frames are covered by the VMAs of the task's last record
 * only if each one is in one of them; its kernel frames do not count, and
 * a deferred callchain (frames still to come) never is.
 */
static void bido_rec_covers_callchain(struct kunit *test)
{
	struct perf_build_id_stash *st;
	struct perf_callchain_entry *cc;
	u16 hit = 0;

	st = kunit_kzalloc(test, sizeof(*st), GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, st);
	cc = kunit_kzalloc(test, struct_size(cc, ip, 8), GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, cc);

	st->vmas[0].start = 0x400000;
	st->vmas[0].end = 0x402000;
	st->vmas[1].start = 0x7f0000000000;
	st->vmas[1].end = 0x7f0000010000;
	st->rec_nr = 2;

	cc->ip[0] = PERF_CONTEXT_KERNEL;
	cc->ip[1] = (u64)-4096;		/* a kernel address: not looked at */
	cc->ip[2] = PERF_CONTEXT_USER;
	cc->ip[3] = 0x400010;
	cc->ip[4] = 0x401ff8;
	cc->ip[5] = 0x7f0000000100;
	cc->nr = 6;
	KUNIT_EXPECT_TRUE(test, perf_bido_rec_covers_callchain(st, cc, &hit));
	/* Both VMAs were used */
	KUNIT_EXPECT_EQ(test, hit, 3);
	hit = 0;

	/* The end of a VMA is outside it, as is a hole between two */
	cc->ip[4] = 0x402000;
	KUNIT_EXPECT_FALSE(test, perf_bido_rec_covers_callchain(st, cc, &hit));
	cc->ip[4] = 0x500000;
	KUNIT_EXPECT_FALSE(test, perf_bido_rec_covers_callchain(st, cc, &hit));
	cc->ip[4] = 0x7f0000010000;
	KUNIT_EXPECT_FALSE(test, perf_bido_rec_covers_callchain(st, cc, &hit));
	cc->ip[4] = 0x3ff000;
	KUNIT_EXPECT_FALSE(test, perf_bido_rec_covers_callchain(st, cc, &hit));

	/* No record to name */
	cc->ip[4] = 0x400020;
	st->rec_nr = 0;
	KUNIT_EXPECT_FALSE(test, perf_bido_rec_covers_callchain(st, cc, &hit));
	st->rec_nr = 2;

	/* Kernel frames only: nothing of user space to cover, no VMA used */
	cc->nr = 2;
	hit = 0;
	KUNIT_EXPECT_TRUE(test, perf_bido_rec_covers_callchain(st, cc, &hit));
	KUNIT_EXPECT_EQ(test, hit, 0);

	/* Deferred user frames are not known at sample time */
	cc->ip[2] = PERF_CONTEXT_USER_DEFERRED;
	cc->ip[3] = 0x1234;		/* the cookie */
	cc->nr = 4;
	KUNIT_EXPECT_FALSE(test, perf_bido_rec_covers_callchain(st, cc, &hit));
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
	KUNIT_CASE(bido_rec_covers_callchain),
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
