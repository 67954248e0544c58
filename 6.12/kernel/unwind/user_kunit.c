// SPDX-License-Identifier: GPL-2.0
/*
 * KUnit tests for the frame-pointer user unwinder (user.c), on frame
 * chains in user memory (kunit_stack.h):
 *
 *   ut_walk_chain*	64-bit and 32-bit chains, every frame in order
 *   ut_walk_stops	broken chains: each ends the walk cleanly, keeping
 *			the frames before the break
 *   ut_walk_code_ignored	whatever the code at the IP, the walk follows
 *			the frame pointer and reads no code
 *   ut_walk_max_depth	a chain longer than the bound stops at the bound
 *   ut_walk_refused	non-user registers, no room, a kernel thread
 */

#include <kunit/test.h>
#include <linux/unwind_user.h>

#include "internal.h"
#include "kunit_stack.h"

/* Walk ctx->stack from the registers it describes */
static unsigned int ut_walk(struct kunit *test, unsigned int max_entries)
{
	struct ut_ctx *ctx = test->priv;
	struct unwind_stacktrace trace = { .entries = ctx->entries };
	struct pt_regs regs;

	KUNIT_ASSERT_EQ(test, ut_publish(&ctx->stack), 0);
	ut_set_regs(&regs, &ctx->stack);
	KUNIT_EXPECT_EQ(test, unwind_user_regs(&trace, max_entries, &regs), 0);
	return trace.nr;
}

/* ---- The unwinder, on chains in user memory ---- */

static void ut_walk_chain64(struct kunit *test)
{
	struct ut_ctx *ctx = test->priv;

	ut_build(&ctx->stack, sizeof(u64), UT_FRAMES, 48);
	ut_expect_chain(test, ctx->entries, ut_walk(test, UT_TRACE_MAX),
			UT_FRAMES);
}

static void ut_walk_chain32(struct kunit *test)
{
	struct ut_ctx *ctx = test->priv;

	ut_build(&ctx->stack, sizeof(u32), UT_FRAMES, 24);
	ut_expect_chain(test, ctx->entries, ut_walk(test, UT_TRACE_MAX),
			UT_FRAMES);
}

/**
 * struct ut_bad_case - a broken chain and where the walk must stop
 * @name:	what is broken
 * @ws:		word size of the chain
 * @mutate:	breaks the chain built by ut_build()
 * @frames:	return addresses the walk still reports
 */
struct ut_bad_case {
	const char	*name;
	unsigned int	ws;
	void		(*mutate)(struct ut_stack *s);
	unsigned int	frames;
};

static void ut_bad_misaligned(struct ut_stack *s)
{
	ut_set_fp(s, 2, ut_frame_addr(s, 3) + 1);
}

static void ut_bad_backwards(struct ut_stack *s)
{
	ut_set_fp(s, 1, ut_frame_addr(s, 0));
}

static void ut_bad_self_loop(struct ut_stack *s)
{
	ut_set_fp(s, 1, ut_frame_addr(s, 1));
}

static void ut_bad_unmapped(struct ut_stack *s)
{
	ut_set_fp(s, 1, UT_BASE + UT_SIZE + PAGE_SIZE);
}

static void ut_bad_kernel(struct ut_stack *s)
{
	ut_set_fp(s, 1, (unsigned long)s->img);
}

static void ut_bad_zero_ra(struct ut_stack *s)
{
	ut_set_ra(s, 2, 0);
}

static void ut_bad_no_frame(struct ut_stack *s)
{
	s->fp = 0;
}

static void ut_bad_fp_below_sp(struct ut_stack *s)
{
	s->fp = s->sp - 2 * s->ws;
}

static void ut_bad_above_4g(struct ut_stack *s)
{
	ut_set_fp(s, 1, 0xfffffff8UL);
}

static const struct ut_bad_case ut_bad_cases[] = {
	{ "misaligned-64", 8, ut_bad_misaligned, 3 },
	{ "misaligned-32", 4, ut_bad_misaligned, 3 },
	{ "backwards-64", 8, ut_bad_backwards, 2 },
	{ "backwards-32", 4, ut_bad_backwards, 2 },
	{ "self-loop-64", 8, ut_bad_self_loop, 2 },
	{ "unmapped-64", 8, ut_bad_unmapped, 2 },
	{ "unmapped-32", 4, ut_bad_unmapped, 2 },
	{ "kernel-address-64", 8, ut_bad_kernel, 2 },
	{ "zero-return-address-64", 8, ut_bad_zero_ra, 2 },
	{ "no-frame-pointer-64", 8, ut_bad_no_frame, 0 },
	{ "fp-below-sp-64", 8, ut_bad_fp_below_sp, 0 },
	{ "above-4g-32", 4, ut_bad_above_4g, 2 },
};

static void ut_bad_case_desc(const struct ut_bad_case *c, char *desc)
{
	strscpy(desc, c->name, KUNIT_PARAM_DESC_SIZE);
}

KUNIT_ARRAY_PARAM(ut_bad, ut_bad_cases, ut_bad_case_desc);

/* A broken chain ends the walk cleanly, keeping the frames before it */
static void ut_walk_stops(struct kunit *test)
{
	const struct ut_bad_case *c = test->param_value;
	struct ut_ctx *ctx = test->priv;

	ut_build(&ctx->stack, c->ws, UT_FRAMES, 8 * c->ws);
	c->mutate(&ctx->stack);
	ut_expect_chain(test, ctx->entries, ut_walk(test, UT_TRACE_MAX),
			c->frames);
}

/**
 * struct ut_code_case - what a task may be stopped at
 * @name:	what the instructions at the IP are
 * @ws:		word size
 * @code:	the instructions
 */
struct ut_code_case {
	const char	*name;
	unsigned int	ws;
	u8		code[4];
};

static const struct ut_code_case ut_code_cases[] = {
	{ "push-64", 8, { 0x55, 0x48, 0x89, 0xe5 } },
	{ "endbr64", 8, { 0xf3, 0x0f, 0x1e, 0xfa } },
	{ "mov-89-64", 8, { 0x48, 0x89, 0xe5, 0x90 } },
	{ "mov-8b-64", 8, { 0x48, 0x8b, 0xec, 0x90 } },
	{ "push-32", 4, { 0x55, 0x89, 0xe5, 0x90 } },
	{ "endbr32", 4, { 0xf3, 0x0f, 0x1e, 0xfb } },
	{ "body-64", 8, { 0x48, 0x01, 0xc0, 0x90 } },
};

static void ut_code_case_desc(const struct ut_code_case *c, char *desc)
{
	strscpy(desc, c->name, KUNIT_PARAM_DESC_SIZE);
}

KUNIT_ARRAY_PARAM(ut_code, ut_code_cases, ut_code_case_desc);

/*
 * The walk never reads code: whatever the instructions at the IP (a
 * prologue's push of %rbp or an ENDBR included), the second entry is the
 * frame pointer's return address, not a word guessed from the top of the
 * stack.  A word there that looks like a return address must not show up:
 * in code built without frame pointers it is anything.
 */
static void ut_walk_code_ignored(struct kunit *test)
{
	const struct ut_code_case *c = test->param_value;
	struct ut_ctx *ctx = test->priv;
	struct ut_stack *s = &ctx->stack;
	unsigned int nr, k;

	ut_build(s, c->ws, UT_FRAMES, 8 * c->ws);
	memcpy(s->img + (UT_CODE - UT_BASE), c->code, sizeof(c->code));
	s->ip = UT_CODE;
	s->sp = s->fp - 8 * c->ws;
	ut_put_word(s, s->sp, UT_CALLER_RA);
	ut_put_word(s, s->sp + c->ws, UT_CALLER_RA);

	nr = ut_walk(test, UT_TRACE_MAX);
	KUNIT_ASSERT_EQ(test, nr, UT_FRAMES + 1);
	KUNIT_EXPECT_EQ(test, ctx->entries[0], UT_CODE);
	for (k = 0; k < UT_FRAMES; k++)
		KUNIT_EXPECT_EQ_MSG(test, ctx->entries[1 + k], UT_RA(k),
				    "frame %u", k);
}

static_assert(UT_LONG_FRAMES + 1 <= UT_TRACE_MAX);
static_assert(UNWIND_MAX_ENTRIES >= 127 && UNWIND_MAX_ENTRIES < UT_LONG_FRAMES);

/* A chain longer than the bound stops at the bound, and only there */
static void ut_walk_max_depth(struct kunit *test)
{
	struct ut_ctx *ctx = test->priv;

	ut_build(&ctx->stack, sizeof(u64), UT_LONG_FRAMES, 2 * sizeof(u64));
	ut_expect_chain(test, ctx->entries, ut_walk(test, UT_TRACE_MAX),
			UT_LONG_FRAMES);
	ut_expect_chain(test, ctx->entries, ut_walk(test, UNWIND_MAX_ENTRIES),
			UNWIND_MAX_ENTRIES - 1);
	ut_expect_chain(test, ctx->entries, ut_walk(test, 127), 126);
}

/* Registers that are not user mode, or no room, give no trace */
static void ut_walk_refused(struct kunit *test)
{
	struct ut_ctx *ctx = test->priv;
	struct unwind_stacktrace trace = { .entries = ctx->entries };
	struct pt_regs regs;

	ut_build(&ctx->stack, sizeof(u64), UT_FRAMES, 32);
	ut_set_regs(&regs, &ctx->stack);
	regs.cs = __KERNEL_CS;
	KUNIT_EXPECT_EQ(test, unwind_user_regs(&trace, UT_TRACE_MAX, &regs),
			-EINVAL);
	KUNIT_EXPECT_EQ(test, trace.nr, 0);

	ut_set_regs(&regs, &ctx->stack);
	KUNIT_EXPECT_EQ(test, unwind_user_regs(&trace, 0, &regs), -EINVAL);
	KUNIT_EXPECT_EQ(test, trace.nr, 0);

	/* The test thread is a kernel thread, even with an mm */
	KUNIT_EXPECT_EQ(test, unwind_user(&trace, UT_TRACE_MAX), -EINVAL);
	KUNIT_EXPECT_EQ(test, unwind_user_faultable(&trace), -EINVAL);
	KUNIT_EXPECT_EQ(test, trace.nr, 0);
}

static struct kunit_case unwind_user_test_cases[] = {
	KUNIT_CASE(ut_walk_chain64),
	KUNIT_CASE(ut_walk_chain32),
	KUNIT_CASE_PARAM(ut_walk_stops, ut_bad_gen_params),
	KUNIT_CASE_PARAM(ut_walk_code_ignored, ut_code_gen_params),
	KUNIT_CASE(ut_walk_max_depth),
	KUNIT_CASE(ut_walk_refused),
	{}
};

static struct kunit_suite unwind_user_test_suite = {
	.name = "unwind_user",
	.init = ut_init,
	.test_cases = unwind_user_test_cases,
};

kunit_test_suite(unwind_user_test_suite);
