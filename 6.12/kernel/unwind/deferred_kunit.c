// SPDX-License-Identifier: GPL-2.0
/*
 * KUnit tests for deferred user-space unwinding (deferred.c).
 *
 * The tests make their own user tasks, over the user memory of
 * kunit_stack.h: user_mode_thread() makes a child without PF_KTHREAD
 * that shares the test thread's mm.  The child points its saved user
 * registers (task_pt_regs()) at a frame chain, and from then on the
 * framework sees a user task in a syscall.  The child never returns to
 * user space: where the entry code would run the exit work and then
 * exit_to_user_mode(), it calls ut_return_to_user(), which makes the same
 * two calls in the same order.  It ends in do_exit(), which runs the real
 * exit hook.
 *
 * The child records what it saw; the test thread checks it after the child
 * has exited, so no KUnit assertion ever runs outside the test thread.
 *
 * Cases:
 *   ut_cookie_*	never 0, stable in an entry, new after it, different
 *			across tasks and across CPUs
 *   ut_init_bounded	the bound on users, -EBUSY past it
 *   ut_request_repeat	0 then 1, one cookie and one callback per entry,
 *			a second user joining, a new cookie after return
 *   ut_request_rejects	kernel threads, io workers, non-user registers,
 *			unregistered works
 *   ut_faultable_cache	one walk per entry, shared, redone after return
 *   ut_exit_pending	callback from do_exit(), with the mm, exactly once
 *   ut_cancel_*	no callback after cancel, no state left in the task,
 *			a reused bit served correctly within the same entry
 *   ut_request_hrtimer	requests from a hard hrtimer interrupt that hits the
 *			running task
 *   ut_request_compat	a 32-bit task end to end
 *
 * Not covered: requests from NMI (a test has no NMI source; the NMI path
 * differs only in using TWA_NMI_CURRENT), the entry code's own calls to
 * unwind_reset_info() (every syscall makes them once user space runs; the
 * end-to-end selftest covers that path), and a real 32-bit process (the
 * compat walk is driven by a 32-bit code selector in the saved registers,
 * which is all the unwinder looks at).
 */

#include <kunit/test.h>
#include <linux/completion.h>
#include <linux/cpu.h>
#include <linux/hrtimer.h>
#include <linux/ktime.h>
#include <linux/mman.h>
#include <linux/resume_user_mode.h>
#include <linux/sched/task.h>
#include <linux/sched/task_stack.h>
#include <linux/slab.h>
#include <linux/smp.h>
#include <linux/uaccess.h>
#include <linux/unwind_deferred.h>

#include "internal.h"
#include "kunit_stack.h"

/* How long a child waits for the test thread, and the test for a timer */
#define UT_TIMEOUT	(10 * HZ)
#define UT_IRQ_PERIOD_NS	(100 * NSEC_PER_USEC)
#define UT_IRQ_TIMEOUT_MS	5000
#define UT_IRQ_HITS	8

/* ---- Cookies ---- */

#define UT_COOKIES	64
#define UT_COOKIE_CPU(c)	((c) & 0xffff)

/* Stable within an entry, new after it, unique and never 0 on one CPU */
static void ut_cookie_one_cpu(struct kunit *test)
{
	struct unwind_task_info *info;
	u64 *cookie, again, next;
	unsigned long flags;
	int cpu, i;

	info = kunit_kcalloc(test, UT_COOKIES, sizeof(*info), GFP_KERNEL);
	cookie = kunit_kcalloc(test, UT_COOKIES, sizeof(*cookie), GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, info);
	KUNIT_ASSERT_NOT_NULL(test, cookie);

	local_irq_save(flags);
	cpu = smp_processor_id();
	for (i = 0; i < UT_COOKIES; i++)
		cookie[i] = unwind_get_cookie(&info[i]);
	again = unwind_get_cookie(&info[0]);
	/* What __unwind_reset_info() does on the way out to user space */
	WRITE_ONCE(info[0].id.id, 0);
	next = unwind_get_cookie(&info[0]);
	local_irq_restore(flags);

	KUNIT_EXPECT_EQ(test, again, cookie[0]);
	for (i = 0; i < UT_COOKIES; i++) {
		KUNIT_EXPECT_NE(test, cookie[i], 0);
		KUNIT_EXPECT_EQ(test, UT_COOKIE_CPU(cookie[i]), cpu + 1);
		if (i)
			KUNIT_EXPECT_GT(test, cookie[i], cookie[i - 1]);
	}
	KUNIT_EXPECT_GT(test, next, cookie[UT_COOKIES - 1]);
}

struct ut_cookie_slot {
	struct unwind_task_info	info;
	u64			cookie;
	u64			again;
};

static void ut_cookie_ipi(void *arg)
{
	struct ut_cookie_slot *slot = arg;

	slot->cookie = unwind_get_cookie(&slot->info);
	slot->again = unwind_get_cookie(&slot->info);
}

/* Cookies handed out on different CPUs differ, whatever the sequences */
static void ut_cookie_cpus(struct kunit *test)
{
	struct ut_cookie_slot *slot;
	int cpu, other, n = 0;

	slot = kunit_kcalloc(test, nr_cpu_ids, sizeof(*slot), GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, slot);

	cpus_read_lock();
	for_each_online_cpu(cpu) {
		smp_call_function_single(cpu, ut_cookie_ipi, &slot[cpu], 1);
		n++;
	}
	for_each_online_cpu(cpu) {
		KUNIT_EXPECT_NE(test, slot[cpu].cookie, 0);
		KUNIT_EXPECT_EQ(test, slot[cpu].again, slot[cpu].cookie);
		KUNIT_EXPECT_EQ(test, UT_COOKIE_CPU(slot[cpu].cookie), cpu + 1);
		for_each_online_cpu(other)
			if (other != cpu)
				KUNIT_EXPECT_NE(test, slot[cpu].cookie,
						slot[other].cookie);
	}
	cpus_read_unlock();

	if (n < 2)
		kunit_skip(test, "one CPU online: nothing to compare");
}

/* ---- Registration ---- */

static void ut_noop_callback(struct unwind_work *work,
			     struct unwind_stacktrace *trace, u64 cookie)
{
}

/* A bounded number of users; past it -EBUSY; cancel gives bits back */
static void ut_init_bounded(struct kunit *test)
{
	struct unwind_work *works, spare;
	int n, i, ret = 0;

	works = kunit_kcalloc(test, BITS_PER_LONG, sizeof(*works), GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, works);

	for (n = 0; n < BITS_PER_LONG; n++) {
		ret = unwind_deferred_init(&works[n], ut_noop_callback);
		if (ret)
			break;
	}
	KUNIT_EXPECT_EQ(test, ret, -EBUSY);
	KUNIT_EXPECT_GT(test, n, 0);
	KUNIT_EXPECT_LE(test, n, BITS_PER_LONG - UNWIND_RESERVED_BITS);
	if (n < BITS_PER_LONG)
		KUNIT_EXPECT_EQ(test, works[n].bit, -1);

	for (i = 0; i < n; i++) {
		KUNIT_EXPECT_GE(test, works[i].bit, UNWIND_RESERVED_BITS);
		unwind_deferred_cancel(&works[i]);
		KUNIT_EXPECT_EQ(test, works[i].bit, -1);
	}
	/* Cancelling twice, or a work that never got a bit, is harmless */
	unwind_deferred_cancel(&works[0]);
	if (n < BITS_PER_LONG)
		unwind_deferred_cancel(&works[n]);

	KUNIT_EXPECT_EQ(test, unwind_deferred_init(&spare, ut_noop_callback), 0);
	unwind_deferred_cancel(&spare);
}

/* ---- Requests, from a user task made for the test ---- */

/**
 * struct ut_work - an unwind_work that records its calls
 * @work:	the registered work
 * @calls:	callbacks so far
 * @cookie:	cookie of the last callback
 * @nr:		entries of the last callback's trace
 * @entries:	the last callback's trace
 * @task:	current during the last callback
 * @exiting:	PF_EXITING was set during the last callback
 * @had_mm:	current had an mm during the last callback
 * @nested_ret:	what a request from inside the last callback returned
 */
struct ut_work {
	struct unwind_work	work;
	atomic_t		calls;
	u64			cookie;
	unsigned int		nr;
	unsigned long		*entries;
	struct task_struct	*task;
	bool			exiting;
	bool			had_mm;
	int			nested_ret;
};

static void ut_callback(struct unwind_work *work,
			struct unwind_stacktrace *trace, u64 cookie)
{
	struct ut_work *w = container_of(work, struct ut_work, work);
	u64 nested_cookie;

	w->task = current;
	w->cookie = cookie;
	w->nr = min(trace->nr, UT_TRACE_MAX);
	if (w->nr)
		memcpy(w->entries, trace->entries, w->nr * sizeof(long));
	w->exiting = current->flags & PF_EXITING;
	w->had_mm = !!current->mm;
	w->nested_ret = unwind_deferred_request(work, &nested_cookie);
	atomic_inc(&w->calls);
}

KUNIT_DEFINE_ACTION_WRAPPER(ut_cancel_action, unwind_deferred_cancel,
			    struct unwind_work *);

static struct ut_work *ut_work_new(struct kunit *test)
{
	struct ut_work *w;

	w = kunit_kzalloc(test, sizeof(*w), GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, w);
	w->entries = kunit_kcalloc(test, UT_TRACE_MAX, sizeof(long),
				   GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, w->entries);
	KUNIT_ASSERT_EQ(test, unwind_deferred_init(&w->work, ut_callback), 0);
	KUNIT_ASSERT_EQ(test, kunit_add_action_or_reset(test, ut_cancel_action,
							&w->work), 0);
	return w;
}

/**
 * struct ut_child - a user task made for a test
 * @ctx:	the test's context; its stack is what the task's registers
 *		point at
 * @body:	what the task does, between setting its registers and exiting
 * @task:	the task, once running (compared, never dereferenced later)
 * @pid:	its pid
 * @keep_regs:	leave the saved registers as copied from the test thread,
 *		instead of pointing them at @ctx->stack
 */
struct ut_child {
	struct ut_ctx		*ctx;
	void			(*body)(struct ut_child *child);
	struct task_struct	*task;
	pid_t			pid;
	bool			keep_regs;
};

static int ut_child_fn(void *arg)
{
	struct ut_child *child = arg;

	WRITE_ONCE(child->task, current);
	if (!child->keep_regs)
		ut_set_regs(task_pt_regs(current), &child->ctx->stack);
	child->body(child);
	/* Never back to user space: the registers are made up */
	do_exit(0);
}

static void ut_child_start(struct kunit *test, struct ut_child *child,
			   void (*body)(struct ut_child *child))
{
	child->ctx = test->priv;
	child->body = body;
	KUNIT_ASSERT_EQ(test, ut_publish(&child->ctx->stack), 0);
	child->pid = user_mode_thread(ut_child_fn, child, SIGCHLD);
	KUNIT_ASSERT_GT(test, child->pid, 0);
}

/*
 * Returns once the child is gone, whether this wait reaped it or it was
 * reaped automatically (kernel threads ignore SIGCHLD): by then it has
 * been through do_exit() and exit_task_work().
 */
static void ut_child_wait(struct ut_child *child)
{
	int status;

	kernel_wait(child->pid, &status);
}

static void ut_child_run(struct kunit *test, struct ut_child *child,
			 void (*body)(struct ut_child *child))
{
	ut_child_start(test, child, body);
	ut_child_wait(child);
}

/* The exit work of exit_to_user_mode_loop(): runs the task_works */
static void ut_run_exit_work(void)
{
	resume_user_mode_work(task_pt_regs(current));
}

/* The calls the entry code makes on the way out, in the same order */
static void ut_return_to_user(void)
{
	ut_run_exit_work();
	local_irq_disable();
	unwind_reset_info();
	local_irq_enable();
}

/* Repeated requests: 0 then 1, one cookie per entry, one call per entry */
struct ut_repeat {
	struct ut_child	child;
	struct ut_work	*a, *b;
	int		ret[5];
	u64		cookie[5];
	int		calls_mid;
	int		calls_late;
};

static void ut_repeat_body(struct ut_child *child)
{
	struct ut_repeat *r = container_of(child, struct ut_repeat, child);

	r->ret[0] = unwind_deferred_request(&r->a->work, &r->cookie[0]);
	r->ret[1] = unwind_deferred_request(&r->a->work, &r->cookie[1]);
	/* A second user joins the pending work */
	r->ret[2] = unwind_deferred_request(&r->b->work, &r->cookie[2]);
	ut_run_exit_work();
	r->calls_mid = atomic_read(&r->a->calls);
	/* Same entry, after the callback ran: still 1, and no second call */
	r->ret[3] = unwind_deferred_request(&r->a->work, &r->cookie[3]);
	ut_run_exit_work();
	r->calls_late = atomic_read(&r->a->calls);
	ut_return_to_user();
	/* A new entry */
	r->ret[4] = unwind_deferred_request(&r->a->work, &r->cookie[4]);
	ut_return_to_user();
}

static void ut_request_repeat(struct kunit *test)
{
	struct ut_ctx *ctx = test->priv;
	struct ut_repeat *r;

	r = kunit_kzalloc(test, sizeof(*r), GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, r);
	r->a = ut_work_new(test);
	r->b = ut_work_new(test);
	ut_build(&ctx->stack, sizeof(u64), UT_FRAMES, 32);

	ut_child_run(test, &r->child, ut_repeat_body);

	KUNIT_EXPECT_EQ(test, r->ret[0], 0);
	KUNIT_EXPECT_EQ(test, r->ret[1], 1);
	KUNIT_EXPECT_EQ(test, r->ret[2], 0);
	KUNIT_EXPECT_EQ(test, r->ret[3], 1);
	KUNIT_EXPECT_EQ(test, r->ret[4], 0);
	KUNIT_EXPECT_NE(test, r->cookie[0], 0);
	KUNIT_EXPECT_EQ(test, r->cookie[1], r->cookie[0]);
	KUNIT_EXPECT_EQ(test, r->cookie[2], r->cookie[0]);
	KUNIT_EXPECT_EQ(test, r->cookie[3], r->cookie[0]);
	KUNIT_EXPECT_NE(test, r->cookie[4], 0);
	KUNIT_EXPECT_NE(test, r->cookie[4], r->cookie[0]);

	KUNIT_EXPECT_EQ(test, r->calls_mid, 1);
	KUNIT_EXPECT_EQ(test, r->calls_late, 1);
	KUNIT_EXPECT_EQ(test, atomic_read(&r->a->calls), 2);
	KUNIT_EXPECT_EQ(test, atomic_read(&r->b->calls), 1);
	KUNIT_EXPECT_EQ(test, r->b->cookie, r->cookie[0]);
	KUNIT_EXPECT_EQ(test, r->a->cookie, r->cookie[4]);
	KUNIT_EXPECT_PTR_EQ(test, r->a->task, r->child.task);
	KUNIT_EXPECT_FALSE(test, r->a->exiting);
	/* From its own callback, a work is told it was served */
	KUNIT_EXPECT_EQ(test, r->a->nested_ret, 1);
	ut_expect_chain(test, r->a->entries, r->a->nr, UT_FRAMES);
	ut_expect_chain(test, r->b->entries, r->b->nr, UT_FRAMES);
}

/* Who may not ask: kernel threads, io workers, non-user regs, bad works */
struct ut_reject {
	struct ut_child	child;
	struct ut_work	*a;
	struct unwind_work unregistered;
	int		ret[4];
	u64		cookie[4];
};

static void ut_reject_body(struct ut_child *child)
{
	struct ut_reject *r = container_of(child, struct ut_reject, child);

	/* Saved registers copied from the kernel-thread parent */
	r->ret[0] = unwind_deferred_request(&r->a->work, &r->cookie[0]);

	ut_set_regs(task_pt_regs(current), &child->ctx->stack);
	/* Only current changes its flags; undone right away */
	current->flags |= PF_USER_WORKER;
	r->ret[1] = unwind_deferred_request(&r->a->work, &r->cookie[1]);
	current->flags &= ~PF_USER_WORKER;

	r->ret[2] = unwind_deferred_request(&r->unregistered, &r->cookie[2]);
	r->ret[3] = unwind_deferred_request(&r->a->work, &r->cookie[3]);
	ut_return_to_user();
}

static void ut_request_rejects(struct kunit *test)
{
	struct ut_ctx *ctx = test->priv;
	struct ut_reject *r;
	u64 cookie = 1;

	r = kunit_kzalloc(test, sizeof(*r), GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, r);
	r->a = ut_work_new(test);
	r->unregistered.bit = -1;
	ut_build(&ctx->stack, sizeof(u64), UT_FRAMES, 32);

	/* The test thread itself is a kernel thread */
	KUNIT_EXPECT_EQ(test, unwind_deferred_request(&r->a->work, &cookie),
			-EINVAL);
	KUNIT_EXPECT_EQ(test, cookie, 0);

	r->child.keep_regs = true;
	ut_child_run(test, &r->child, ut_reject_body);

	KUNIT_EXPECT_EQ(test, r->ret[0], -EINVAL);
	KUNIT_EXPECT_EQ(test, r->ret[1], -EINVAL);
	KUNIT_EXPECT_EQ(test, r->ret[2], -EINVAL);
	KUNIT_EXPECT_EQ(test, r->cookie[0], 0);
	KUNIT_EXPECT_EQ(test, r->cookie[1], 0);
	KUNIT_EXPECT_EQ(test, r->cookie[2], 0);
	/* And the task can still ask once it qualifies */
	KUNIT_EXPECT_EQ(test, r->ret[3], 0);
	KUNIT_EXPECT_EQ(test, atomic_read(&r->a->calls), 1);
}

/* The cache: one walk per entry, shared, redone after the entry */
struct ut_cache {
	struct ut_child		child;
	int			ret[3];
	unsigned int		nr[3];
	unsigned long		*entries[3];
	unsigned long		ra0[3];
};

static void ut_cache_body(struct ut_child *child)
{
	struct ut_cache *c = container_of(child, struct ut_cache, child);
	struct ut_stack *s = &child->ctx->stack;
	unsigned long addr = ut_frame_addr(s, 0) + s->ws;
	struct unwind_stacktrace trace;
	int i;

	for (i = 0; i < 3; i++) {
		c->ret[i] = unwind_user_faultable(&trace);
		c->nr[i] = trace.nr;
		c->entries[i] = trace.entries;
		c->ra0[i] = trace.nr > 1 ? trace.entries[1] : 0;
		if (i == 0) {
			/* The stack changes under the cache: it must not see it */
			if (put_user(UT_RA(100), (unsigned long __user *)addr))
				c->ret[i] = -EFAULT;
		}
		if (i == 1)
			ut_return_to_user();
	}
}

static void ut_faultable_cache(struct kunit *test)
{
	struct ut_ctx *ctx = test->priv;
	struct ut_cache *c;

	c = kunit_kzalloc(test, sizeof(*c), GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, c);
	ut_build(&ctx->stack, sizeof(u64), UT_FRAMES, 32);

	ut_child_run(test, &c->child, ut_cache_body);

	KUNIT_EXPECT_EQ(test, c->ret[0], 0);
	KUNIT_EXPECT_EQ(test, c->ret[1], 0);
	KUNIT_EXPECT_EQ(test, c->ret[2], 0);
	KUNIT_EXPECT_EQ(test, c->nr[0], UT_FRAMES + 1);
	KUNIT_EXPECT_EQ(test, c->nr[1], UT_FRAMES + 1);
	KUNIT_EXPECT_EQ(test, c->nr[2], UT_FRAMES + 1);
	KUNIT_EXPECT_PTR_EQ(test, c->entries[1], c->entries[0]);
	KUNIT_EXPECT_EQ(test, c->ra0[0], UT_RA(0));
	KUNIT_EXPECT_EQ(test, c->ra0[1], UT_RA(0));
	KUNIT_EXPECT_EQ(test, c->ra0[2], UT_RA(100));
}

/* A task that exits with a request pending gets its callback, once */
struct ut_exit {
	struct ut_child	child;
	struct ut_work	*a;
	int		ret;
	u64		cookie;
};

static void ut_exit_body(struct ut_child *child)
{
	struct ut_exit *e = container_of(child, struct ut_exit, child);

	e->ret = unwind_deferred_request(&e->a->work, &e->cookie);
	/* ut_child_fn() goes straight to do_exit() */
}

static void ut_exit_pending(struct kunit *test)
{
	struct ut_ctx *ctx = test->priv;
	struct ut_exit *e;

	e = kunit_kzalloc(test, sizeof(*e), GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, e);
	e->a = ut_work_new(test);
	ut_build(&ctx->stack, sizeof(u64), UT_FRAMES, 32);

	ut_child_run(test, &e->child, ut_exit_body);

	KUNIT_EXPECT_EQ(test, e->ret, 0);
	/* Once: run by do_exit(), and not again by exit_task_work() */
	KUNIT_EXPECT_EQ(test, atomic_read(&e->a->calls), 1);
	KUNIT_EXPECT_EQ(test, e->a->cookie, e->cookie);
	KUNIT_EXPECT_PTR_EQ(test, e->a->task, e->child.task);
	KUNIT_EXPECT_TRUE(test, e->a->exiting);
	/* Still with its mm, so the trace is complete */
	KUNIT_EXPECT_TRUE(test, e->a->had_mm);
	ut_expect_chain(test, e->a->entries, e->a->nr, UT_FRAMES);
	/* An exiting task cannot ask again */
	KUNIT_EXPECT_EQ(test, e->a->nested_ret, -EINVAL);
}

/* A cancelled work is never called, and leaves nothing in the task */
struct ut_cancel {
	struct ut_child		child;
	struct ut_work		*a;
	struct completion	asked;
	struct completion	cancelled;
	bool			timed_out;
	int			ret[2];
	u64			cookie[2];
	unsigned long		mask;
};

static void ut_cancel_body(struct ut_child *child)
{
	struct ut_cancel *c = container_of(child, struct ut_cancel, child);

	c->ret[0] = unwind_deferred_request(&c->a->work, &c->cookie[0]);
	complete(&c->asked);
	if (!wait_for_completion_timeout(&c->cancelled, UT_TIMEOUT))
		c->timed_out = true;
	c->mask = atomic_long_read(&current->unwind_info.unwind_mask);
	c->ret[1] = unwind_deferred_request(&c->a->work, &c->cookie[1]);
	ut_return_to_user();
}

static void ut_cancel_pending(struct kunit *test)
{
	struct ut_ctx *ctx = test->priv;
	struct ut_cancel *c;
	int bit;

	c = kunit_kzalloc(test, sizeof(*c), GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, c);
	c->a = ut_work_new(test);
	bit = c->a->work.bit;
	init_completion(&c->asked);
	init_completion(&c->cancelled);
	ut_build(&ctx->stack, sizeof(u64), UT_FRAMES, 32);

	ut_child_start(test, &c->child, ut_cancel_body);
	KUNIT_EXPECT_TRUE(test, wait_for_completion_timeout(&c->asked,
							    UT_TIMEOUT));
	unwind_deferred_cancel(&c->a->work);
	complete(&c->cancelled);
	ut_child_wait(&c->child);

	KUNIT_EXPECT_FALSE(test, c->timed_out);
	KUNIT_EXPECT_EQ(test, c->ret[0], 0);
	KUNIT_EXPECT_EQ(test, c->a->work.bit, -1);
	KUNIT_EXPECT_EQ(test, c->mask & BIT(bit), 0);
	KUNIT_EXPECT_EQ(test, c->ret[1], -EINVAL);
	KUNIT_EXPECT_EQ(test, atomic_read(&c->a->calls), 0);
}

/*
 * A work that gets the bit of one cancelled in the current entry, after
 * that one's callback ran, is served like any new work.
 */
struct ut_reuse {
	struct ut_child		child;
	struct ut_work		*b, *c;
	struct completion	served;
	struct completion	replaced;
	bool			timed_out;
	int			ret[2];
	u64			cookie[2];
};

static void ut_reuse_body(struct ut_child *child)
{
	struct ut_reuse *r = container_of(child, struct ut_reuse, child);

	r->ret[0] = unwind_deferred_request(&r->b->work, &r->cookie[0]);
	ut_run_exit_work();
	complete(&r->served);
	if (!wait_for_completion_timeout(&r->replaced, UT_TIMEOUT))
		r->timed_out = true;
	/* Still the same entry */
	if (r->c)
		r->ret[1] = unwind_deferred_request(&r->c->work,
						    &r->cookie[1]);
	ut_return_to_user();
}

static void ut_cancel_reuse_bit(struct kunit *test)
{
	struct ut_ctx *ctx = test->priv;
	struct ut_reuse *r;
	struct ut_work *c;
	int bit;

	r = kunit_kzalloc(test, sizeof(*r), GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, r);
	r->b = ut_work_new(test);
	c = kunit_kzalloc(test, sizeof(*c), GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, c);
	c->entries = kunit_kcalloc(test, UT_TRACE_MAX, sizeof(long),
				   GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, c->entries);
	bit = r->b->work.bit;
	init_completion(&r->served);
	init_completion(&r->replaced);
	ut_build(&ctx->stack, sizeof(u64), UT_FRAMES, 32);

	ut_child_start(test, &r->child, ut_reuse_body);
	KUNIT_EXPECT_TRUE(test, wait_for_completion_timeout(&r->served,
							    UT_TIMEOUT));
	unwind_deferred_cancel(&r->b->work);
	/* The lowest free bit: the one just released */
	if (!unwind_deferred_init(&c->work, ut_callback)) {
		kunit_add_action_or_reset(test, ut_cancel_action, &c->work);
		r->c = c;
	}
	complete(&r->replaced);
	ut_child_wait(&r->child);

	KUNIT_EXPECT_FALSE(test, r->timed_out);
	KUNIT_ASSERT_NOT_NULL(test, r->c);
	KUNIT_EXPECT_EQ(test, r->ret[0], 0);
	KUNIT_EXPECT_EQ(test, atomic_read(&r->b->calls), 1);
	if (c->work.bit != bit)
		kunit_skip(test, "the new work got bit %d, not %d",
			   c->work.bit, bit);
	KUNIT_EXPECT_EQ(test, r->ret[1], 0);
	KUNIT_EXPECT_EQ(test, r->cookie[1], r->cookie[0]);
	KUNIT_EXPECT_EQ(test, atomic_read(&c->calls), 1);
	KUNIT_EXPECT_EQ(test, c->cookie, r->cookie[0]);
}

/* Requests from a hard hrtimer interrupt that hits the running task */
struct ut_irq {
	struct ut_child	child;
	struct ut_work	*a;
	struct hrtimer	timer;
	unsigned int	round;
	bool		not_hardirq;
	int		hits[2];
	int		ret[2][UT_IRQ_HITS];
	u64		cookie[2][UT_IRQ_HITS];
	int		calls_before[2];
	int		calls_after[2];
	u64		cb_cookie[2];
};

static enum hrtimer_restart ut_irq_timer(struct hrtimer *timer)
{
	struct ut_irq *s = container_of(timer, struct ut_irq, timer);
	unsigned int r = s->round;
	int n = s->hits[r];

	if (current == READ_ONCE(s->child.task) && n < UT_IRQ_HITS) {
		if (!in_hardirq())
			s->not_hardirq = true;
		s->ret[r][n] = unwind_deferred_request(&s->a->work,
						       &s->cookie[r][n]);
		WRITE_ONCE(s->hits[r], ++n);
	}
	if (n >= UT_IRQ_HITS)
		return HRTIMER_NORESTART;
	hrtimer_forward_now(timer, ns_to_ktime(UT_IRQ_PERIOD_NS));
	return HRTIMER_RESTART;
}

static void ut_irq_body(struct ut_child *child)
{
	struct ut_irq *s = container_of(child, struct ut_irq, child);
	ktime_t deadline;
	unsigned int r;

	for (r = 0; r < 2; r++) {
		s->round = r;
		/* Stay on this CPU, so the pinned timer interrupts this task */
		preempt_disable();
		hrtimer_start(&s->timer, ns_to_ktime(UT_IRQ_PERIOD_NS),
			      HRTIMER_MODE_REL_PINNED_HARD);
		deadline = ktime_add_ms(ktime_get(), UT_IRQ_TIMEOUT_MS);
		while (READ_ONCE(s->hits[r]) < UT_IRQ_HITS &&
		       ktime_before(ktime_get(), deadline))
			cpu_relax();
		preempt_enable();
		hrtimer_cancel(&s->timer);

		s->calls_before[r] = atomic_read(&s->a->calls);
		ut_return_to_user();
		s->calls_after[r] = atomic_read(&s->a->calls);
		s->cb_cookie[r] = s->a->cookie;
	}
}

static void ut_request_hrtimer(struct kunit *test)
{
	struct ut_ctx *ctx = test->priv;
	struct ut_irq *s;
	unsigned int r;
	int i;

	s = kunit_kzalloc(test, sizeof(*s), GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, s);
	s->a = ut_work_new(test);
	hrtimer_init(&s->timer, CLOCK_MONOTONIC, HRTIMER_MODE_REL_PINNED_HARD);
	s->timer.function = ut_irq_timer;
	ut_build(&ctx->stack, sizeof(u64), UT_FRAMES, 32);

	ut_child_run(test, &s->child, ut_irq_body);

	KUNIT_EXPECT_FALSE(test, s->not_hardirq);
	for (r = 0; r < 2; r++) {
		KUNIT_ASSERT_EQ_MSG(test, s->hits[r], UT_IRQ_HITS,
				    "round %u: the timer missed the task", r);
		/* The first interrupt of the entry queues, the rest join */
		KUNIT_EXPECT_EQ(test, s->ret[r][0], 0);
		KUNIT_EXPECT_NE(test, s->cookie[r][0], 0);
		for (i = 1; i < UT_IRQ_HITS; i++) {
			KUNIT_EXPECT_EQ(test, s->ret[r][i], 1);
			KUNIT_EXPECT_EQ(test, s->cookie[r][i], s->cookie[r][0]);
		}
		/* Served on the way out, not in the interrupt */
		KUNIT_EXPECT_EQ(test, s->calls_before[r], r);
		KUNIT_EXPECT_EQ(test, s->calls_after[r], r + 1);
		KUNIT_EXPECT_EQ(test, s->cb_cookie[r], s->cookie[r][0]);
	}
	KUNIT_EXPECT_NE(test, s->cookie[1][0], s->cookie[0][0]);
	KUNIT_EXPECT_PTR_EQ(test, s->a->task, s->child.task);
	ut_expect_chain(test, s->a->entries, s->a->nr, UT_FRAMES);
}

/* A 32-bit task, end to end: request, callback, compat walk */
struct ut_compat {
	struct ut_child	child;
	struct ut_work	*a;
	int		ret;
	u64		cookie;
};

static void ut_compat_body(struct ut_child *child)
{
	struct ut_compat *c = container_of(child, struct ut_compat, child);

	c->ret = unwind_deferred_request(&c->a->work, &c->cookie);
	ut_return_to_user();
}

static void ut_request_compat(struct kunit *test)
{
	struct ut_ctx *ctx = test->priv;
	struct ut_compat *c;

	c = kunit_kzalloc(test, sizeof(*c), GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, c);
	c->a = ut_work_new(test);
	ut_build(&ctx->stack, sizeof(u32), UT_FRAMES, 16);

	ut_child_run(test, &c->child, ut_compat_body);

	KUNIT_EXPECT_EQ(test, c->ret, 0);
	KUNIT_EXPECT_EQ(test, atomic_read(&c->a->calls), 1);
	KUNIT_EXPECT_EQ(test, c->a->cookie, c->cookie);
	ut_expect_chain(test, c->a->entries, c->a->nr, UT_FRAMES);
}

static struct kunit_case unwind_deferred_test_cases[] = {
	KUNIT_CASE(ut_cookie_one_cpu),
	KUNIT_CASE(ut_cookie_cpus),
	KUNIT_CASE(ut_init_bounded),
	KUNIT_CASE(ut_request_repeat),
	KUNIT_CASE(ut_request_rejects),
	KUNIT_CASE(ut_faultable_cache),
	KUNIT_CASE(ut_exit_pending),
	KUNIT_CASE(ut_cancel_pending),
	KUNIT_CASE(ut_cancel_reuse_bit),
	KUNIT_CASE(ut_request_hrtimer),
	KUNIT_CASE(ut_request_compat),
	{}
};

static struct kunit_suite unwind_deferred_test_suite = {
	.name = "unwind_deferred",
	.init = ut_init,
	.test_cases = unwind_deferred_test_cases,
};

kunit_test_suite(unwind_deferred_test_suite);
