// SPDX-License-Identifier: GPL-2.0
/*
 * Deferred user-space stack unwinding.
 *
 * A tracer that samples in NMI or IRQ context cannot walk the user stack
 * there: the stack may be deep and its pages may not be present.  It calls
 * unwind_deferred_request() instead.  That hands back a cookie naming the
 * current kernel entry of the task and queues a task_work; before the task
 * returns to user space, the task_work walks the user stack once, in task
 * context where faults are fine, and passes the trace and the same cookie
 * to every tracer that asked during this entry.  Tracers join their samples
 * to the trace by cookie.  The user stack cannot change while the task is
 * in the kernel, so one trace serves all of them.
 *
 * Per-task state is task_struct::unwind_info.  Its mask has three bits of
 * our own (UNWIND_PENDING, UNWIND_USED, UNWIND_RESET, see
 * unwind_deferred.h) and one bit per registered unwind_work, set when that
 * work asks during the current entry.  Requests change the mask with
 * atomics only, so they are safe against the NMI that may interrupt them;
 * exit_to_user_mode() clears the state through unwind_reset_info().
 *
 * Lifetime of a request, on one task:
 *
 *   request (any context)       mask |= PENDING | USED | bit; queue the
 *                               task_work if PENDING was clear
 *   task_work (task context)    mask &= ~PENDING; unwind once; call every
 *                               work whose bit is set and not completed
 *   exit_to_user_mode()         mask = 0, cookie = 0, completed = 0,
 *                               cache emptied
 *   do_exit()                   run a still pending task_work right away
 */

#include <linux/bitops.h>
#include <linux/cleanup.h>
#include <linux/irqflags.h>
#include <linux/list.h>
#include <linux/lockdep.h>
#include <linux/mutex.h>
#include <linux/percpu.h>
#include <linux/ptrace.h>
#include <linux/rculist.h>
#include <linux/sched.h>
#include <linux/sched/signal.h>
#include <linux/sched/task_stack.h>
#include <linux/slab.h>
#include <linux/srcu.h>
#include <linux/task_work.h>
#include <linux/unwind_deferred.h>
#include <kunit/visibility.h>

#include "internal.h"

/*
 * The registered unwind_works, and the mask bits they own, both changed
 * under callback_mutex.  The callbacks list is walked under unwind_srcu so
 * that unwind_deferred_cancel() can wait for callbacks to finish.
 */
static DEFINE_MUTEX(callback_mutex);
static LIST_HEAD(callbacks);
static unsigned long unwind_mask = UNWIND_RESERVED_MASK;
DEFINE_STATIC_SRCU(unwind_srcu);

/*
 * Cookie layout: the CPU that handed it out, plus one, in the low bits and
 * a per-CPU sequence number above them.  The CPU part is never 0, so the
 * cookie is never 0; two cookies from different CPUs differ in the low bits
 * and two from the same CPU in the sequence.  The sequence has 48 bits:
 * at a million cookies a second it repeats after eight years.
 */
#define UNWIND_COOKIE_CPU_BITS	16
/* CPU numbers plus one must fit in the low bits */
static_assert(CONFIG_NR_CPUS <= U16_MAX);

static DEFINE_PER_CPU(u64, unwind_cookie_seq);

/*
 * Return the cookie of the current entry, handing out a new one on the
 * first request of the entry; the caller then sets UNWIND_USED so that the
 * reset clears it.
 *
 * Called with IRQs disabled on current's own state: only an NMI asking for
 * the same task can come in between.  Whichever of us installs a cookie
 * first wins, and the other returns it.  Where this_cpu_inc_return() is not
 * NMI-safe (it is on x86) the NMI can make us lose an increment; both of
 * us then compute the same cookie, for the same task, so none is shared.
 */
VISIBLE_IF_KUNIT u64 unwind_get_cookie(struct unwind_task_info *info)
{
	u64 cookie = READ_ONCE(info->id.id);
	u64 seq, new;

	if (cookie)
		return cookie;

	seq = this_cpu_inc_return(unwind_cookie_seq);
	new = seq << UNWIND_COOKIE_CPU_BITS | (smp_processor_id() + 1);
	if (try_cmpxchg64(&info->id.id, &cookie, new))
		return new;
	return cookie;
}

/**
 * unwind_user_faultable - the current task's user stack trace, cached
 * @trace: receives the trace
 *
 * Walks the user stack on the first call of a kernel entry and keeps the
 * result until the task returns to user space; later calls in the same
 * entry, from any user of the framework, get the same entries back.  The
 * entries belong to the task: use them before returning to user space and
 * do not free them.
 *
 * Context: task context, no locks held (not the mm's either); may fault
 * and sleep.
 * Return: 0 with at least one entry; -EINVAL (with @trace->nr == 0) for a
 * kernel thread, an io worker or a task without an mm; -ENOMEM if the
 * cache could not be allocated.
 */
int unwind_user_faultable(struct unwind_stacktrace *trace)
{
	struct unwind_task_info *info = &current->unwind_info;
	struct unwind_cache *cache = info->cache;
	struct unwind_stacktrace fresh;
	int ret;

	might_fault();

	trace->nr = 0;
	trace->entries = NULL;
	if (!current->mm || (current->flags & (PF_KTHREAD | PF_USER_WORKER)))
		return -EINVAL;

	if (!cache) {
		cache = kzalloc(UNWIND_CACHE_SIZE, GFP_KERNEL);
		if (!cache)
			return -ENOMEM;
		info->cache = cache;
	}

	/* The first caller of this entry walks the stack */
	if (!cache->nr_entries) {
		fresh.entries = cache->entries;
		ret = unwind_user(&fresh, UNWIND_MAX_ENTRIES);
		if (ret)
			return ret;
		atomic_long_or(UNWIND_USED, &info->unwind_mask);
		cache->nr_entries = fresh.nr;
	}

	trace->nr = cache->nr_entries;
	trace->entries = cache->entries;
	return 0;
}

/*
 * Call every work that asked during this entry and has not been called
 * yet.  Runs on current, from the task_work or from do_exit(), inside
 * unwind_srcu: entered before the mask is read, so that
 * unwind_deferred_cancel() cannot free a bit we are about to act on and
 * hand it to a new work in between.
 */
static void __process_unwind_deferred(struct unwind_task_info *info)
{
	struct unwind_stacktrace trace;
	struct unwind_work *work;
	unsigned long bits;
	u64 cookie;
	int bit;

	/* From here on a new request queues the task_work again */
	bits = atomic_long_fetch_andnot(UNWIND_PENDING, &info->unwind_mask);
	if (!(bits & UNWIND_PENDING))
		return;

	bits &= ~(READ_ONCE(info->unwind_completed) | UNWIND_RESERVED_MASK);
	if (!bits)
		return;

	/* Set by the request before it set UNWIND_PENDING */
	cookie = READ_ONCE(info->id.id);
	WARN_ON_ONCE(!cookie);

	/* A failed walk still reaches the callbacks, with an empty trace */
	unwind_user_faultable(&trace);

	list_for_each_entry_srcu(work, &callbacks, list,
				 srcu_read_lock_held(&unwind_srcu)) {
		bit = READ_ONCE(work->bit);
		/* Being cancelled, or did not ask */
		if (bit < 0 || !(bits & BIT(bit)))
			continue;
		/* Before the call, so a request from the callback returns 1 */
		set_bit(bit, &info->unwind_completed);
		work->func(work, &trace, cookie);
	}
}

static void process_unwind_deferred(void)
{
	int idx;

	idx = srcu_read_lock(&unwind_srcu);
	__process_unwind_deferred(&current->unwind_info);
	srcu_read_unlock(&unwind_srcu, idx);
}

static void unwind_deferred_task_work(struct callback_head *head)
{
	process_unwind_deferred();
}

/**
 * unwind_deferred_request - ask for the current task's user stack trace
 * @work: a work set up with unwind_deferred_init()
 * @cookie: receives the cookie that the callback will be passed
 *
 * Arranges for @work's callback to run once for the current kernel entry,
 * in task context, before the task returns to user space (or when it
 * exits), with the user stack trace and the cookie stored through @cookie.
 * The cookie is stored on a return of 0 or 1, and 0 is stored on error.
 * The cookie is the same for every request made during one kernel entry,
 * by any work, and different after the task has been back to user space;
 * it is never 0 and no other task or entry shares it.
 *
 * Lock-free and O(1): an atomic update of the task's mask and, on the
 * first request of the entry, one task_work_add() (TWA_NMI_CURRENT in NMI,
 * TWA_RESUME otherwise).
 *
 * Context: any: task, softirq, hardirq or NMI (NMI needs an architecture
 * with NMI-safe cmpxchg).  Acts on current only.
 * Return:
 * * 0 - queued; the callback will run with the cookie
 * * 1 - @work already asked in this entry: its callback is pending or has
 *   run with the cookie, and will not run again for this entry
 * * -EINVAL - no callback will come: current is a kernel thread, an io
 *   worker or exiting, has no user registers, or @work is not registered
 * * -EBUSY - no callback will come: an NMI hit the few instructions in
 *   which the previous entry's state is cleared on the way out to user
 *   space; fall back to something else for this sample
 */
int unwind_deferred_request(struct unwind_work *work, u64 *cookie)
{
	struct unwind_task_info *info = &current->unwind_info;
	enum task_work_notify_mode mode = TWA_RESUME | TWAF_NO_ALLOC;
	unsigned long want, old;
	int bit, ret;

	*cookie = 0;

	/* The callback needs a task that returns to user space */
	if (current->flags & (PF_KTHREAD | PF_USER_WORKER | PF_EXITING))
		return -EINVAL;
	if (!user_mode(task_pt_regs(current)))
		return -EINVAL;

	/*
	 * An NMI must neither take a lock nor rely on a cmpxchg emulated
	 * with one.  Its task_work needs TWA_NMI_CURRENT, which sets the TIF
	 * flag on current and raises a self-IPI to make the return path see
	 * it.  The 6.12 tree carries "task_work: Fix NMI race condition",
	 * which moved the flag setting out of the irq_work into
	 * task_work_add(), so an NMI that hits __schedule() flags the right
	 * task.
	 *
	 * Outside NMI, TWAF_NO_ALLOC keeps KASAN from allocating a stack
	 * depot page in task_work_add(): in 6.12 that allocation is the
	 * default, and a request may come from a tracepoint under a raw lock
	 * or under the page allocator's own zone lock.
	 */
	if (in_nmi()) {
		if (WARN_ON_ONCE(!IS_ENABLED(CONFIG_ARCH_HAVE_NMI_SAFE_CMPXCHG)))
			return -EINVAL;
		mode = TWA_NMI_CURRENT;
	}

	/*
	 * From here to the end, IRQs are off: unwind_deferred_cancel()
	 * relies on synchronize_rcu() to wait for a request that read the
	 * bit it is taking away, and the cookie is tied to this CPU.
	 */
	guard(irqsave)();

	bit = READ_ONCE(work->bit);
	if (bit < 0)
		return -EINVAL;
	want = BIT(bit);

	old = atomic_long_read(&info->unwind_mask);
	/* Only an NMI can get here while the reset runs: it interrupted it */
	if (old & UNWIND_RESET)
		return -EBUSY;

	*cookie = unwind_get_cookie(info);

	if (old & want)
		return 1;

	old = atomic_long_fetch_or(UNWIND_PENDING | UNWIND_USED | want,
				   &info->unwind_mask);
	/* The task_work is queued and has not started: it will see our bit */
	if (old & UNWIND_PENDING)
		return !!(old & want);

	ret = task_work_add(current, &info->work, mode);
	/* PF_EXITING was checked and TWA_NMI_CURRENT has IRQ_WORK */
	if (WARN_ON_ONCE(ret)) {
		/* UNWIND_USED stays: the cookie is taken and must be reset */
		atomic_long_andnot(UNWIND_PENDING | want, &info->unwind_mask);
		*cookie = 0;
		return ret;
	}
	return 0;
}

/**
 * unwind_deferred_cancel - unregister a user of deferred unwinding
 * @work: a work set up with unwind_deferred_init(), or one whose setup
 *	failed or that was already cancelled (then this does nothing)
 *
 * After this returns, @work's callback is not running and will not run
 * again, requests with @work fail with -EINVAL, and no task holds state
 * for it; @work may be freed.  Walks every thread once, under RCU.
 *
 * Context: task context, may sleep (waits for an RCU and an SRCU grace
 * period).  Not from an unwind callback.
 */
void unwind_deferred_cancel(struct unwind_work *work)
{
	struct task_struct *g, *t;
	int bit;

	if (!work)
		return;

	guard(mutex)(&callback_mutex);

	bit = work->bit;
	if (bit < 0)
		return;

	/* New requests fail, and new task_works no longer find the work */
	WRITE_ONCE(work->bit, -1);
	list_del_rcu(&work->list);

	/* Requests run with IRQs off: wait for those that read the bit */
	synchronize_rcu();
	/* Task_works run callbacks under unwind_srcu: wait for them */
	synchronize_srcu(&unwind_srcu);

	/*
	 * Nothing sets the bit any more.  Clear it everywhere, so that the
	 * next work to own it does not find it set in a task that is still
	 * in the entry in which @work asked, and get 1 for a request whose
	 * callback never runs.
	 */
	rcu_read_lock();
	for_each_process_thread(g, t) {
		atomic_long_andnot(BIT(bit), &t->unwind_info.unwind_mask);
		clear_bit(bit, &t->unwind_info.unwind_completed);
	}
	rcu_read_unlock();

	__clear_bit(bit, &unwind_mask);
}

/**
 * unwind_deferred_init - register a user of deferred unwinding
 * @work: the work to set up; must not be registered already
 * @func: its callback
 *
 * Gives @work a bit in every task's mask.  There are BITS_PER_LONG minus
 * UNWIND_RESERVED_BITS such bits (61 on 64-bit), one per registered work,
 * so a subsystem should register one work and share it, not one per event.
 *
 * Context: task context, may sleep.
 * Return: 0, or -EBUSY when all bits are taken (then @work is left
 * unregistered, and unwind_deferred_request() on it fails).
 */
int unwind_deferred_init(struct unwind_work *work, unwind_callback_t func)
{
	int bit;

	memset(work, 0, sizeof(*work));
	work->bit = -1;

	guard(mutex)(&callback_mutex);

	if (unwind_mask == ~0UL)
		return -EBUSY;

	bit = ffz(unwind_mask);
	__set_bit(bit, &unwind_mask);

	work->func = func;
	WRITE_ONCE(work->bit, bit);
	list_add_rcu(&work->list, &callbacks);
	return 0;
}

/*
 * Slow path of unwind_reset_info(), from exit_to_user_mode() with IRQs
 * disabled: only an NMI can come in while it runs.
 */
void __unwind_reset_info(void)
{
	struct unwind_task_info *info = &current->unwind_info;
	unsigned long bits = atomic_long_read(&info->unwind_mask);

	lockdep_assert_irqs_disabled();

	do {
		/*
		 * An NMI asked after the exit work ran.  Its self-IPI brings
		 * the task straight back in to run the task_work, still in
		 * the same user context: keep this entry's cookie for it.
		 */
		if (bits & UNWIND_PENDING)
			return;
	} while (!atomic_long_try_cmpxchg(&info->unwind_mask, &bits,
					  UNWIND_RESET));

	/*
	 * With UNWIND_RESET set an NMI's request fails before it reads the
	 * cookie, so it can never hand out the cookie we are clearing, nor
	 * leave a new one behind for the next entry.
	 */
	WRITE_ONCE(info->id.id, 0);
	WRITE_ONCE(info->unwind_completed, 0);
	if (info->cache)
		info->cache->nr_entries = 0;

	/*
	 * Only an NMI on this CPU can look: the release keeps the compiler
	 * from sinking the stores above below the one that lets it in.
	 */
	atomic_long_set_release(&info->unwind_mask, 0);
}

/**
 * unwind_deferred_task_exit - run a pending deferred unwind of an exiting task
 * @task: current, in do_exit()
 *
 * Runs the callbacks of a request that the task_work has not served yet,
 * while the task still has its mm (so the trace can be read) and its perf
 * events (so a per-task consumer can still record it).  PF_EXITING is set,
 * so no request can come after this.
 *
 * Context: task context, from do_exit(); may sleep.
 */
void unwind_deferred_task_exit(struct task_struct *task)
{
	struct unwind_task_info *info = &task->unwind_info;

	if (WARN_ON_ONCE(task != current))
		return;
	if (!(atomic_long_read(&info->unwind_mask) & UNWIND_PENDING))
		return;

	/* Off the queue, so exit_task_work() does not run it a second time */
	task_work_cancel(task, &info->work);
	process_unwind_deferred();
}

/**
 * unwind_task_init - give a new task a clean deferred unwind state
 * @task: the child, in copy_process()
 *
 * The child starts as a copy of its parent, cache pointer included.
 */
void unwind_task_init(struct task_struct *task)
{
	struct unwind_task_info *info = &task->unwind_info;

	memset(info, 0, sizeof(*info));
	init_task_work(&info->work, unwind_deferred_task_work);
}

/**
 * unwind_task_free - release a task's deferred unwind state
 * @task: the task, in __put_task_struct()
 *
 * By now do_exit() has run or cancelled the task_work and exit_task_work()
 * has closed the task's queue, so the cancel finds nothing; it is kept so
 * that a task freed without going through do_exit() cannot leave our
 * callback_head on a list.
 *
 * Context: any context in which __put_task_struct() runs.
 */
void unwind_task_free(struct task_struct *task)
{
	struct unwind_task_info *info = &task->unwind_info;

	task_work_cancel(task, &info->work);
	kfree(info->cache);
	info->cache = NULL;
}
