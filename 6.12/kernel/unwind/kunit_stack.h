/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What the KUnit suites of kernel/unwind/ share: a few pages of user
 * memory in the test thread's own mm, at a fixed address below 4 GiB, and
 * frame chains written there with copy_to_user(), so that the unwinder
 * reads them with the same get_user() it uses on a real stack.  KUnit runs
 * at boot in kernel threads, before there is any user space:
 * kunit_vm_mmap() gives each test thread an mm of its own.
 */
#ifndef _KERNEL_UNWIND_KUNIT_STACK_H
#define _KERNEL_UNWIND_KUNIT_STACK_H

#include <kunit/test.h>
#include <linux/mman.h>
#include <linux/string.h>
#include <linux/uaccess.h>
#include <asm/ptrace.h>
#include <asm/segment.h>

/* The user mapping, and the frame chains built in it */
#define UT_BASE		0x40000000UL
#define UT_SIZE		(4 * PAGE_SIZE)
#define UT_FRAME0	0x200		/* offset of the innermost frame record */
#define UT_IP		0x08048100UL
#define UT_RA(k)	(0x08049000UL + 0x10 * (k))
#define UT_CODE		(UT_BASE + 3 * PAGE_SIZE)	/* instructions at the IP */
#define UT_CALLER_RA	0x0804a000UL	/* return address on top of the stack */
#define UT_FRAMES	5		/* a short chain: UT_IP plus 5 returns */
#define UT_LONG_FRAMES	600		/* more than UNWIND_MAX_ENTRIES */
#define UT_TRACE_MAX	1024

/**
 * struct ut_stack - a frame chain in the user mapping
 * @ws:		word size of the chain: 8, or 4 for a compat task
 * @frames:	frame records in the chain
 * @gap:	bytes from one record to the next
 * @img:	kernel copy of the whole mapping
 * @ip:		user IP to start from
 * @sp:		user SP to start from
 * @fp:		user frame pointer to start from
 */
struct ut_stack {
	unsigned int	ws;
	unsigned int	frames;
	unsigned int	gap;
	u8		*img;
	unsigned long	ip;
	unsigned long	sp;
	unsigned long	fp;
};

struct ut_ctx {
	struct ut_stack	stack;
	unsigned long	*entries;
};

static inline unsigned long ut_frame_addr(const struct ut_stack *s, unsigned int k)
{
	return UT_BASE + UT_FRAME0 + k * s->gap;
}

static inline void ut_put_word(struct ut_stack *s, unsigned long addr,
			       unsigned long val)
{
	void *p = s->img + (addr - UT_BASE);

	if (s->ws == sizeof(u64))
		*(u64 *)p = val;
	else
		*(u32 *)p = val;
}

/* Frame k saves the address of record k + 1 (0 for the last) and UT_RA(k) */
static inline void ut_build(struct ut_stack *s, unsigned int ws, unsigned int frames,
			    unsigned int gap)
{
	unsigned int k;

	s->ws = ws;
	s->frames = frames;
	s->gap = gap;
	memset(s->img, 0, UT_SIZE);
	for (k = 0; k < frames; k++) {
		unsigned long fp = ut_frame_addr(s, k);

		ut_put_word(s, fp, k + 1 < frames ? ut_frame_addr(s, k + 1) : 0);
		ut_put_word(s, fp + ws, UT_RA(k));
	}
	s->ip = UT_IP;
	s->fp = ut_frame_addr(s, 0);
	s->sp = s->fp - 4 * ws;
}

static inline void ut_set_fp(struct ut_stack *s, unsigned int k, unsigned long val)
{
	ut_put_word(s, ut_frame_addr(s, k), val);
}

static inline void ut_set_ra(struct ut_stack *s, unsigned int k, unsigned long val)
{
	ut_put_word(s, ut_frame_addr(s, k) + s->ws, val);
}

static inline int ut_publish(const struct ut_stack *s)
{
	return copy_to_user((void __user *)UT_BASE, s->img, UT_SIZE) ? -EFAULT : 0;
}

/* Saved user registers of a task stopped at s->ip inside the chain */
static inline void ut_set_regs(struct pt_regs *regs, const struct ut_stack *s)
{
	memset(regs, 0, sizeof(*regs));
	regs->ip = s->ip;
	regs->sp = s->sp;
	regs->bp = s->fp;
	regs->cs = s->ws == sizeof(u32) ? __USER32_CS : __USER_CS;
	regs->ss = __USER_DS;
	regs->flags = X86_EFLAGS_IF | X86_EFLAGS_FIXED;
}

/* @entries holds UT_IP and the return addresses of frames 0..@frames-1 */
static inline void ut_expect_chain(struct kunit *test, const unsigned long *entries,
				   unsigned int nr, unsigned int frames)
{
	unsigned int k;

	KUNIT_ASSERT_EQ(test, nr, frames + 1);
	KUNIT_EXPECT_EQ(test, entries[0], UT_IP);
	for (k = 0; k < frames; k++)
		KUNIT_EXPECT_EQ_MSG(test, entries[k + 1], UT_RA(k),
				    "frame %u", k);
}

static inline int ut_init(struct kunit *test)
{
	struct ut_ctx *ctx;
	unsigned long addr;

	ctx = kunit_kzalloc(test, sizeof(*ctx), GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, ctx);
	ctx->stack.img = kunit_kzalloc(test, UT_SIZE, GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, ctx->stack.img);
	ctx->entries = kunit_kcalloc(test, UT_TRACE_MAX, sizeof(long),
				     GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, ctx->entries);

	/* Each test runs in a new kthread, so the mm and the range are new */
	addr = kunit_vm_mmap(test, NULL, UT_BASE, UT_SIZE,
			     PROT_READ | PROT_WRITE,
			     MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE,
			     0);
	KUNIT_ASSERT_EQ_MSG(test, addr, UT_BASE, "cannot map the user stack");

	test->priv = ctx;
	return 0;
}

#endif /* _KERNEL_UNWIND_KUNIT_STACK_H */
