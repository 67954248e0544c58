// SPDX-License-Identifier: GPL-2.0
/*
 * PERF_SAMPLE_BUILD_ID_OFFSET: user addresses as (build-ID, file offset).
 *
 * To symbolise a user address, a profiler needs the file it is in and the
 * offset in that file.  Without help from the kernel it reconstructs the
 * address space of every task from /proc and mmap records, which is slow
 * and racy on large hosts.  With this sample bit the kernel says it
 * directly, in two steps:
 *
 * - In the sampling context (NMI, IRQ or task) the sample gets a cookie
 *   from the deferred unwind framework, which queues work for the sampled
 *   task.  If the event samples the branch stack, the user from/to
 *   addresses are kept in a small per-task stash.  Nothing else: no VMA,
 *   no file, no allocation, no lock.
 *
 * - Before the task returns to user space (or while it exits), in its own
 *   context where faults and sleeping are fine, the framework calls
 *   perf_bido_unwind_callback() once for the kernel entry.  It takes the
 *   user IP and callchain from the framework's cached unwind of the entry
 *   plus the stashed branch addresses, looks up the VMAs that cover them
 *   under mmap_lock, takes a reference on their files, drops the lock and
 *   only then reads the build-IDs (which may fault and do I/O).  The
 *   result goes out as one PERF_RECORD_BUILD_ID_OFFSET, which user space
 *   joins to the samples by cookie and tid.
 *
 * Routing: a record goes to the sessions whose events sampled the task
 * in that kernel entry, and to no other.  A session is the process that
 * opened the events (perf_bido_session()); each sample notes its own in
 * the task's state (perf_bido_note_entry()), and the callback writes to
 * the defer_output events of those sessions among the events of the
 * task's context and the side-band events of the CPU it runs on.  A
 * per-CPU daemon and a per-task perf record on the same task each get
 * the records their own samples name.  Deferred callchains
 * (callchain_deferred.c) go the same way.
 *
 * Lifetimes: no event is referenced between the sample and the record.
 * The work is per task and belongs to one unwind_work registered for good
 * at boot; the callback finds its receivers afresh, under RCU, with
 * perf_iterate_sb().  An event closed or unmapped in between is simply
 * not found, so there is nothing to pin, to cancel or to wait for.  The
 * per-task state (task_struct::perf_bido) is touched only by the task
 * and by interrupts on its own CPU while it runs.
 *
 * Build-IDs come from the page cache only (perf_bido_build_id()): the
 * task never waits for a file system on its way back to user space.  A
 * record made while the task's mappings are as they were for its last
 * record takes the build-IDs of the mappings both have from that record,
 * instead of parsing the files again.  There is no cache shared between
 * tasks, so no lock that CPUs share and nothing that must learn of
 * unmounts.
 *
 * Most samples need no record of their own: a task keeps the two maps of
 * its last record that hold the most of its addresses, and a later
 * sample whose user addresses they all cover names that record instead
 * of asking for deferred work, while the task's address space has not
 * changed and only for sessions that got the record (perf_bido_reuse()).
 * Nothing system-wide and no clock is involved.  That keeps the steady
 * state close to the cost of the sample alone.
 */

#include <linux/atomic.h>
#include <linux/buildid.h>
#include <linux/dcache.h>
#include <linux/file.h>
#include <linux/fs.h>
#include <linux/minmax.h>
#include <linux/mm.h>
#include <linux/mmap_lock.h>
#include <linux/percpu.h>
#include <linux/perf_event.h>
#include <linux/ptrace.h>
#include <linux/sched.h>
#include <linux/sched/signal.h>
#include <linux/sched/task_stack.h>
#include <linux/secretmem.h>
#include <linux/slab.h>
#include <linux/sort.h>
#include <linux/spinlock.h>
#include <linux/task_work.h>
#include <linux/unwind_deferred.h>
#include <linux/unwind_user.h>
#include <linux/workqueue.h>
#include <kunit/visibility.h>

#include "internal.h"
#include "build_id_offset.h"

#define CREATE_TRACE_POINTS
#include <trace/events/perf_build_id_offset.h>

static_assert(sizeof(struct perf_bido_map) == 48);
static_assert(sizeof(struct perf_bido_table_map) == 40);
static_assert(sizeof(struct perf_bido_record) == 32);
static_assert(PERF_BIDO_MAX_MAPS * sizeof(struct perf_bido_map) +
	      sizeof(struct perf_bido_record) + 64 < U16_MAX);

/* The one user of deferred unwinding for all perf events */
static struct unwind_work perf_bido_unwind_work;

/*
 * mm->mm_lock_seq moves whenever mmap_lock is taken for writing, which
 * every change to a VMA needs.  Without per-VMA locks there is no such
 * count, and no reuse.
 */
static bool perf_bido_mm_seq(struct mm_struct *mm, unsigned int *seq)
{
#ifdef CONFIG_PER_VMA_LOCK
	*seq = raw_read_seqcount(&mm->mm_lock_seq);
	return true;
#else
	return false;
#endif
}

/*
 * Per-task state (struct perf_bido_task) exists only for the tasks that
 * are sampled while a receiving event exists.  The first sample of a task
 * may come in NMI, where nothing can be allocated: each CPU keeps a few
 * spares, one of which that sample takes (xchg()) and hangs off the task.
 * Spares are made when a receiving event is created and whenever a
 * deferred callback runs on a CPU that lacks some; a sample that finds
 * none gets cookie 0, as one of an exiting task does.  More than one, as
 * a CPU can run several new tasks (a fork storm) before the callback of
 * the first refills it.  Freed at exit, and by every task once the last
 * receiving event is gone (perf_bido_trim()).
 */
#define PERF_BIDO_SPARES	4

struct perf_bido_spares {
	struct perf_bido_task	*bt[PERF_BIDO_SPARES];
};

static DEFINE_PER_CPU(struct perf_bido_spares, perf_bido_spare);

/* The kmalloc bucket an object of @size takes, for the state tracepoints */
#define perf_bido_bytes(size)	((unsigned int)kmalloc_size_roundup(size))

static unsigned int perf_bido_table_bytes(const struct perf_bido_table *tab)
{
	return perf_bido_bytes(struct_size(tab, maps, tab->room));
}

static struct perf_bido_task *perf_bido_task_alloc(void)
{
	struct perf_bido_task *bt = kzalloc(sizeof(*bt), GFP_KERNEL);

	if (bt)
		trace_perf_bido_state_alloc(bt, false,
					    perf_bido_bytes(sizeof(*bt)));
	return bt;
}

static void perf_bido_task_free(struct perf_bido_task *bt)
{
	trace_perf_bido_state_free(bt, false,
				   perf_bido_bytes(sizeof(*bt)));
	/* The sweep may be looking at it, under RCU */
	kfree_rcu(bt, rcu);
}

/*
 * @trim_state of a per-task state: IDLE, or QUEUED while the sweep queues
 * or has queued its trim on the task, or DEAD once the task let go of it.
 * Whoever finds the other's mark frees it: the task when it drops an IDLE
 * state, the trim when it runs on a DEAD one, the sweep when it could not
 * queue the trim of one that died meanwhile.  So @trim is never on a
 * task_work list once the state is freed, and @rcu can share its room.
 */
#define PERF_BIDO_TRIM_IDLE	0
#define PERF_BIDO_TRIM_QUEUED	1
#define PERF_BIDO_TRIM_DEAD	2

/*
 * What a sampled task costs beside its unwind cache: a 128-byte state
 * and a table of at most 128 bytes (see the ABI page)
 */
static_assert(!IS_ENABLED(CONFIG_64BIT) ||
	      sizeof(struct perf_bido_task) <= 128);
static_assert(sizeof(struct perf_bido_table) + PERF_BIDO_TABLE_MAPS *
	      sizeof(struct perf_bido_table_map) <= PERF_BIDO_TABLE_BYTES);

/* Free @bt, which current has just taken off itself */
static void perf_bido_task_drop(struct perf_bido_task *bt)
{
	if (xchg(&bt->trim_state, PERF_BIDO_TRIM_DEAD) == PERF_BIDO_TRIM_IDLE)
		perf_bido_task_free(bt);
}

/* Fill the empty spare slots of @cpu.  Context: task context. */
static void perf_bido_refill_cpu(int cpu)
{
	struct perf_bido_spares *spares = per_cpu_ptr(&perf_bido_spare, cpu);
	struct perf_bido_task *bt;
	unsigned int i;

	for (i = 0; i < PERF_BIDO_SPARES; i++) {
		if (READ_ONCE(spares->bt[i]))
			continue;
		bt = perf_bido_task_alloc();
		if (!bt)
			return;
		if (cmpxchg(&spares->bt[i], NULL, bt))
			perf_bido_task_free(bt);
	}
}

/* While there are receivers: after the last one, the sweep frees spares */
static void perf_bido_refill(void)
{
	if (atomic_read(&nr_defer_output_events))
		perf_bido_refill_cpu(raw_smp_processor_id());
}

/* Samples of this CPU in perf_bido_task_get(), nested ones included */
static DEFINE_PER_CPU(unsigned int, perf_bido_taking);

/*
 * The per-task state of current, made from one of this CPU's spares if it
 * has none yet; NULL if the spares are gone too.  Only current and its
 * own interrupts install it.  A sample that interrupts another one here
 * takes none: the interrupted one would then overwrite and lose it.
 *
 * Context: any, NMI included; not preemptible.
 */
static struct perf_bido_task *perf_bido_task_get(void)
{
	struct perf_bido_task *bt = READ_ONCE(current->perf_bido);
	struct perf_bido_spares *spares;
	unsigned int i;

	if (likely(bt))
		return bt;
	if (this_cpu_inc_return(perf_bido_taking) == 1) {
		spares = this_cpu_ptr(&perf_bido_spare);
		for (i = 0; !bt && i < PERF_BIDO_SPARES; i++)
			bt = xchg(&spares->bt[i], NULL);
		if (bt)
			WRITE_ONCE(current->perf_bido, bt);
	}
	this_cpu_dec(perf_bido_taking);
	return bt;
}

/**
 * perf_bido_session - the session an event belongs to
 * @event: a sampling or receiving event
 *
 * The process that opened it, or its parent for an inherited copy:
 * perf_event_open() sets the owner, which stays until the event is
 * released or the owner exits.  Events opened by the kernel have a
 * tombstone for owner, which stands for them all.  Compared, never
 * dereferenced by the callers.
 *
 * Context: any, NMI included.  The owner is freed only after an RCU grace
 * period once it has left the events (perf_event_exit_task()), which
 * cannot pass while the caller runs with interrupts off or under RCU.
 */
static const void *perf_bido_session(struct perf_event *event)
{
	struct task_struct *owner = READ_ONCE((event->parent ?: event)->owner);

	if (IS_ERR_OR_NULL(owner))
		return owner;
	return READ_ONCE(owner->signal);
}

/* Is @id one of the sessions of @ids? */
static bool perf_bido_has_session(const void *const *ids, const void *id)
{
	unsigned int i;

	for (i = 0; i < PERF_BIDO_SESSIONS; i++)
		if (READ_ONCE(ids[i]) == id)
			return true;
	return false;
}

/**
 * perf_bido_note_entry - note a sample that asked for the records of an entry
 * @event: the sampling event
 * @cookie: the cookie of the current kernel entry
 *
 * The first sample of an entry notes which program ran, so that the
 * deferred work can tell whether an exec came in between, how far the
 * address space's changes had got (odd while one is under way), and
 * where the entry left user space.  Every sample adds its session to
 * those the entry's records go to.  A nested sample of the same entry
 * writes the same values, or a later count, which can only hide a change
 * the first sample saw begin.
 *
 * Context: any, NMI included; current is the sampled task.
 *
 * Return: false when the sample must not carry @cookie: current has no
 * per-task state and none could be had here, or the entry's records are
 * out already and either did not go to this session or were built from
 * other user registers (a signal frame was set up since).
 */
bool perf_bido_note_entry(struct perf_event *event, u64 cookie)
{
	struct perf_bido_task *bt = perf_bido_task_get();
	const void *id = perf_bido_session(event);
	unsigned int i;

	/* Nowhere to note it: no record will be written for this sample */
	if (!bt)
		return false;

	if (READ_ONCE(bt->cookie) != cookie) {
		unsigned int seq = 0;

		perf_bido_mm_seq(current->mm, &seq);
		for (i = 0; i < PERF_BIDO_SESSIONS; i++)
			WRITE_ONCE(bt->sessions[i], NULL);
		WRITE_ONCE(bt->sessions_over, 0);
		WRITE_ONCE(bt->exec_id, READ_ONCE(current->self_exec_id));
		WRITE_ONCE(bt->entry_ip,
			   instruction_pointer(task_pt_regs(current)));
		WRITE_ONCE(bt->entry_seq, seq);
		WRITE_ONCE(bt->stack_bytes, 0);
		barrier();
		WRITE_ONCE(bt->cookie, cookie);
	}

	/*
	 * Between the switch to the new mm and start_thread(), the user
	 * registers are the old program's and the mm the new one's: nothing
	 * of this entry can be looked up.
	 */
	if (current->in_execve)
		WRITE_ONCE(bt->exec_id, U64_MAX);

	if (READ_ONCE(bt->closed) == cookie)
		return READ_ONCE(bt->closed_ip) ==
		       instruction_pointer(task_pt_regs(current)) &&
		       (READ_ONCE(bt->sessions_over) ||
			perf_bido_has_session(bt->sessions, id));

	/*
	 * An event whose opener has exited (its file passed to another
	 * process) has no session left: every receiver gets the records.
	 */
	if (!id) {
		WRITE_ONCE(bt->sessions_over, 1);
		return true;
	}
	for (i = 0; i < PERF_BIDO_SESSIONS; i++) {
		const void *old = READ_ONCE(bt->sessions[i]);

		/* Nested samples of current only: a local cmpxchg will do */
		if (!old)
			old = cmpxchg_local(&bt->sessions[i], NULL, id);
		if (!old || old == id)
			return true;
	}
	WRITE_ONCE(bt->sessions_over, 1);
	return true;
}

/**
 * perf_bido_close_entry - the sessions the records of an entry go to
 * @cookie: the entry
 * @to: receives the sessions
 *
 * From the first deferred callback of the entry on, no other session is
 * added (perf_bido_note_entry() refuses them), so every callback of the
 * entry writes to the same sessions.  An entry that was not noted (no
 * per-task state to note it in) has no session: its samples carry no
 * cookie.  Also gives this CPU a spare per-task state if it has none.
 *
 * Context: current, in task context, in a deferred unwind callback.
 *
 * Return: true when the task exec()ed since the entry's first sample (or
 * one of its samples came in the middle of an exec): the user addresses
 * the samples saw mean nothing in the task's mm now.
 */
bool perf_bido_close_entry(u64 cookie, struct perf_bido_sessions *to)
{
	struct perf_bido_task *bt = READ_ONCE(current->perf_bido);
	unsigned int i;

	memset(to, 0, sizeof(*to));
	perf_bido_refill();
	/*
	 * No state yet (the entry's samples found no spare): make one all
	 * the same, so that the entry can be closed.  A sample that comes
	 * later in this entry would otherwise note it afresh and carry its
	 * cookie, with no callback left to write its record.
	 */
	if (!bt && atomic_read(&nr_defer_output_events)) {
		bt = perf_bido_task_alloc();
		/* An interrupt of ours may have installed one meanwhile */
		if (bt && cmpxchg(&current->perf_bido, NULL, bt)) {
			perf_bido_task_free(bt);
			bt = READ_ONCE(current->perf_bido);
		}
	}
	/*
	 * Nobody to write to: and no sample gets a cookie either, so there
	 * is no entry to close (a task trimmed after the last receiver went
	 * must not get its state back here)
	 */
	if (!bt)
		return false;
	if (READ_ONCE(bt->closed) != cookie) {
		WRITE_ONCE(bt->closed_ip,
			   instruction_pointer(task_pt_regs(current)));
		barrier();
		WRITE_ONCE(bt->closed, cookie);
		/* Pairs with the READ_ONCE()s of perf_bido_note_entry(), on this CPU */
		barrier();
	}
	/* Not noted: no sample carries the cookie, nobody to write to */
	if (READ_ONCE(bt->cookie) != cookie)
		return false;
	for (i = 0; i < PERF_BIDO_SESSIONS; i++)
		to->id[i] = READ_ONCE(bt->sessions[i]);
	to->all = READ_ONCE(bt->sessions_over);
	return READ_ONCE(bt->exec_id) != current->self_exec_id;
}

/**
 * perf_bido_receiver - is @event a receiver of the records in @to?
 * @to: where the records of an entry go
 * @event: an event of perf_iterate_sb()
 *
 * Return: -1 if not; else the index of its session in @to->id, or
 * PERF_BIDO_SESSIONS for a receiver that gets the records through
 * @to->all only.
 */
int perf_bido_receiver(const struct perf_bido_sessions *to,
		       struct perf_event *event)
{
	const void *id;
	unsigned int i;

	if (!event->attr.defer_output)
		return -1;
	id = perf_bido_session(event);
	for (i = 0; id && i < PERF_BIDO_SESSIONS; i++)
		if (to->id[i] == id)
			return i;
	return to->all ? PERF_BIDO_SESSIONS : -1;
}

/* ---- Sampling side: any context, NMI included ---- */

static void perf_bido_stash_addr(struct perf_bido_stash *stash, u64 cookie,
				 unsigned long addr)
{
	long idx;

	/* Kernel addresses and empty slots are not ours to resolve */
	if (!addr || addr >= TASK_SIZE)
		return;

	/*
	 * Writers are the samples of current, on its CPU, nesting (IRQ, then
	 * NMI) but never running side by side: local_t is enough to hand
	 * each address its own slot.
	 */
	idx = local_inc_return(&stash->nr) - 1;
	if (!idx)
		WRITE_ONCE(stash->cookie, cookie);
	if (idx < PERF_BIDO_STASH_ENTRIES)
		WRITE_ONCE(stash->addrs[idx], addr);
}

/*
 * Keep the user addresses of a sample that the deferred work cannot find
 * on its own for the record of entry @cookie: @ip (0 for none) and the
 * from/to addresses of @bs (NULL for none).
 */
VISIBLE_IF_KUNIT void perf_bido_stash_sample(struct perf_bido_task *bt,
					     u64 cookie, unsigned long ip,
					     const struct perf_branch_stack *bs)
{
	struct perf_bido_stash *stash = READ_ONCE(bt->stash);
	u64 i;

	/* The record of this entry is built already: too late */
	if (READ_ONCE(bt->done) == cookie)
		return;

	/* No allocation here: ask the deferred work for a stash */
	if (!stash) {
		WRITE_ONCE(bt->missed, cookie);
		return;
	}

	perf_bido_stash_addr(stash, cookie, ip);
	for (i = 0; bs && i < bs->nr; i++) {
		perf_bido_stash_addr(stash, cookie, bs->entries[i].from);
		perf_bido_stash_addr(stash, cookie, bs->entries[i].to);
	}
}

/* The bytes a kept map spans */
static u64 perf_bido_table_len(const struct perf_bido_table_map *kept)
{
	return (u64)kept->pages << PAGE_SHIFT;
}

/* Is @addr in one of the maps of @tab? */
VISIBLE_IF_KUNIT bool perf_bido_table_covers(const struct perf_bido_table *tab,
					     unsigned long addr)
{
	unsigned int i;

	for (i = 0; i < tab->nr; i++) {
		const struct perf_bido_table_map *kept = &tab->maps[i];

		if (addr >= kept->start &&
		    addr - kept->start < perf_bido_table_len(kept))
			return true;
	}
	return false;
}

/* The user entries of a sample's callchain, after PERF_CONTEXT_USER */
static bool perf_bido_covers_callchain(const struct perf_bido_table *tab,
				       const struct perf_callchain_entry *cc)
{
	bool user = false;
	u64 i;

	for (i = 0; i < cc->nr; i++) {
		u64 ip = cc->ip[i];

		if (ip >= PERF_CONTEXT_MAX) {
			user = ip == PERF_CONTEXT_USER;
			continue;
		}
		/* What the deferred work would drop, it need not cover */
		if (user && ip && ip < TASK_SIZE &&
		    !perf_bido_table_covers(tab, ip))
			return false;
	}
	return true;
}

static bool perf_bido_covers_branches(const struct perf_bido_table *tab,
				      const struct perf_branch_stack *bs)
{
	u64 i;

	for (i = 0; i < bs->nr; i++) {
		u64 from = bs->entries[i].from, to = bs->entries[i].to;

		if (from && from < TASK_SIZE && !perf_bido_table_covers(tab, from))
			return false;
		if (to && to < TASK_SIZE && !perf_bido_table_covers(tab, to))
			return false;
	}
	return true;
}

/*
 * Does @tab still describe current's address space as the table was
 * made: same mm, same program, no exec under way?  Not checked here:
 * mm_lock_seq, which the caller compares.
 */
static bool perf_bido_table_fresh(const struct perf_bido_table *tab)
{
	return tab->mm == current->mm && !current->in_execve &&
	       tab->exec_id == READ_ONCE(current->self_exec_id);
}

/*
 * The cookie of the task's last record if that record can stand for
 * this sample, else 0.  It can when
 * - the sample's session got it: every receiver of the session that the
 *   record met had room for it;
 * - nothing it says may have changed: same mm and program, no exec under
 *   way, no VMA changed since its maps were looked up (mm_lock_seq);
 * - the maps of it that the task kept (perf_bido_table_pick()) cover
 *   every user address of the sample: where the task entered the
 *   kernel, the sampled IP, the user callchain and the user branch
 *   addresses.  Each is one of the record's maps, whole, so the record
 *   resolves them all.
 * Reads only current's own state and the event: NMI-safe.
 */
static u64 perf_bido_reuse(struct perf_bido_task *bt,
			   struct perf_sample_data *data,
			   struct perf_event *event, struct pt_regs *regs)
{
	const struct perf_bido_table *tab = bt ? READ_ONCE(bt->table) : NULL;
	struct mm_struct *mm = current->mm;
	unsigned int seq;
	u64 cookie;

	if (!tab)
		return 0;

	/*
	 * The deferred work clears the cookie before it rewrites the table
	 * and sets it last; this sample interrupted that work or not at
	 * all, so the table does not change under it.
	 */
	cookie = READ_ONCE(tab->cookie);
	if (!cookie)
		return 0;
	barrier();

	if (!perf_bido_table_fresh(tab) || !perf_bido_mm_seq(mm, &seq) ||
	    seq != tab->mm_seq)
		return 0;
	if (!perf_bido_has_session(tab->sessions, perf_bido_session(event)))
		return 0;

	if (!perf_bido_table_covers(tab, instruction_pointer(task_pt_regs(current))))
		return 0;
	if (user_mode(regs) &&
	    !perf_bido_table_covers(tab, instruction_pointer(regs)))
		return 0;
	if ((data->sample_flags & PERF_SAMPLE_CALLCHAIN) && data->callchain &&
	    !perf_bido_covers_callchain(tab, data->callchain))
		return 0;
	if (has_branch_stack(event) && data->br_stack &&
	    !perf_bido_covers_branches(tab, data->br_stack))
		return 0;
	return cookie;
}

/**
 * perf_bido_prepare_sample - the sampling side of PERF_SAMPLE_BUILD_ID_OFFSET
 * @data: the sample; gets the cookie in @data->defer_cookie
 * @event: the event that samples
 * @regs: the registers of the sample
 *
 * Names the task's last record when it covers the sample (see
 * perf_bido_reuse()).  Otherwise asks for the deferred work of the current
 * kernel entry and keeps the user addresses of the sample that the
 * deferred work will not see in the task's own registers and stack: a
 * precise IP and the branch stack.  The user IP at which the entry left
 * user space is noted too, in case the registers change before the work
 * runs (see perf_bido_unwind_callback()).  The cookie is 0 when no record
 * will cover the sample: for another task than current (as for user
 * callchains), kernel threads, io workers, exiting tasks, tasks without
 * user registers.
 *
 * Context: any, NMI included; current is the sampled task.
 */
void perf_bido_prepare_sample(struct perf_sample_data *data,
			      struct perf_event *event, struct pt_regs *regs)
{
	struct task_struct *task = event->ctx->task;
	struct perf_bido_task *bt = READ_ONCE(current->perf_bido);
	const struct perf_branch_stack *bs = NULL;
	unsigned long ip = 0;
	u64 cookie;

	data->defer_cookie = 0;

	if ((task && task != current) || !current->mm)
		return;
	/* Nobody to write a record to: no cookie, no work */
	if (!atomic_read(&nr_defer_output_events))
		return;

	/*
	 * With deferred callchains the user frames are not in the sample:
	 * only this entry's own record, from the same walk as its
	 * CALLCHAIN_DEFERRED, is known to cover them.  Nor can the last
	 * record be known here to cover the code addresses of a user stack
	 * dump, which is copied after this.
	 */
	cookie = event->attr.defer_callchain ||
		 (event->attr.sample_type & PERF_SAMPLE_STACK_USER) ? 0 :
		 perf_bido_reuse(bt, data, event, regs);
	if (cookie) {
		data->defer_cookie = cookie;
		return;
	}

	if (unwind_deferred_request(&perf_bido_unwind_work, &cookie) < 0)
		return;

	/*
	 * The records of this entry are out already: their work ran early
	 * (from get_signal(), say) with the user registers as they were then.
	 * If they have changed since (a signal frame was set up), or the
	 * records did not go to this sample's session, none describes this
	 * sample: no cookie, rather than one whose record does not cover it.
	 */
	if (!perf_bido_note_entry(event, cookie))
		return;
	bt = READ_ONCE(current->perf_bido);

	/*
	 * The record covers the code addresses in the user stack this sample
	 * dumps: the deferred work reads as much of the same stack, which
	 * the task cannot change before it returns to user space.  Not once
	 * that work has begun: it may have read the stack size already.
	 */
	if (event->attr.sample_type & PERF_SAMPLE_STACK_USER) {
		if (READ_ONCE(bt->closed) == cookie)
			return;
		if (READ_ONCE(bt->stack_bytes) < event->attr.sample_stack_user)
			WRITE_ONCE(bt->stack_bytes, event->attr.sample_stack_user);
	}

	/*
	 * A precise IP (PEBS) is not where the task was interrupted, which
	 * is what the deferred work looks up; a plain user-mode sample's
	 * registers are the task's own.
	 */
	if (user_mode(regs) &&
	    instruction_pointer(regs) != instruction_pointer(task_pt_regs(current)))
		ip = instruction_pointer(regs);
	/* Set, possibly to NULL, by perf_prepare_sample() for such events */
	if (has_branch_stack(event))
		bs = data->br_stack;
	if (ip || bs)
		perf_bido_stash_sample(bt, cookie, ip, bs);
	/* Its later samples may name this entry's record: worth a wider one */
	if (!event->attr.defer_callchain)
		WRITE_ONCE(bt->reusable, cookie);

	data->defer_cookie = cookie;
}

/* ---- Deferred side: task context, may sleep ---- */

/*
 * Move the stashed addresses of entry @cookie to @addrs (room for
 * PERF_BIDO_STASH_ENTRIES; NULL to throw them away) and empty the stash.
 * Samples that come later in the same entry add nothing: bt->done is set
 * first.  Returns how many were moved.
 */
VISIBLE_IF_KUNIT unsigned int perf_bido_take_stash(struct perf_bido_task *bt,
						   u64 cookie,
						   unsigned long *addrs,
						   u32 *flags)
{
	struct perf_bido_stash *stash = bt->stash;
	unsigned int n = 0;
	long nr;

	WRITE_ONCE(bt->done, cookie);
	/*
	 * Pairs with the READ_ONCE() of bt->done in perf_bido_stash_sample():
	 * the only other party is an interrupt of current on this CPU, so
	 * keeping the compiler from sinking the store below the reads of the
	 * stash is enough.
	 */
	barrier();

	if (READ_ONCE(bt->missed) == cookie)
		*flags |= PERF_BUILD_ID_OFFSET_F_ADDRS_DROPPED;
	if (!stash)
		return 0;

	nr = local_read(&stash->nr);
	if (!nr)
		return 0;

	/*
	 * Leftovers of an entry whose work never ran are mixed with ours:
	 * keep none.  The work of every entry that stashes runs, so this is
	 * only a guard.
	 */
	if (READ_ONCE(stash->cookie) != cookie) {
		*flags |= PERF_BUILD_ID_OFFSET_F_ADDRS_DROPPED;
	} else if (addrs) {
		if (nr > PERF_BIDO_STASH_ENTRIES)
			*flags |= PERF_BUILD_ID_OFFSET_F_ADDRS_DROPPED;
		n = min_t(long, nr, PERF_BIDO_STASH_ENTRIES);
		memcpy(addrs, stash->addrs, n * sizeof(*addrs));
	}
	local_set(&stash->nr, 0);
	return n;
}

/*
 * Free @task's stash and table: @task is current, or exits.  A sample
 * that comes in later sees none; one that interrupted us before the
 * xchg() is done with them before we go on, on this CPU.
 */
static void perf_bido_free_stash(struct task_struct *task)
{
	struct perf_bido_task *bt = READ_ONCE(task->perf_bido);
	struct perf_bido_stash *stash;
	struct perf_bido_table *tab;

	if (!bt)
		return;
	stash = xchg(&bt->stash, NULL);
	if (stash) {
		trace_perf_bido_state_free(stash, true,
					   perf_bido_bytes(sizeof(*stash)));
		kfree(stash);
	}
	tab = xchg(&bt->table, NULL);
	if (tab) {
		trace_perf_bido_state_free(tab, true, perf_bido_table_bytes(tab));
		kfree(tab);
	}
}

/*
 * Make the task's stash once a sample found none for addresses to keep
 * (that sample lost them): most tasks never have one, as only branch
 * stacks and precise IPs need it.
 */
static void perf_bido_alloc_stash(struct perf_bido_task *bt)
{
	struct perf_bido_stash *stash;

	if (current->flags & PF_EXITING)
		return;

	if (!bt->stash && READ_ONCE(bt->missed)) {
		stash = kzalloc(sizeof(*stash), GFP_KERNEL);
		if (stash) {
			trace_perf_bido_state_alloc(stash, true,
						    perf_bido_bytes(sizeof(*stash)));
			/* Samples on this CPU see NULL or a zeroed stash */
			smp_store_release(&bt->stash, stash);
			/*
			 * The samples of this entry stash nothing (bt->done is
			 * set), and later ones find the stash
			 */
			WRITE_ONCE(bt->missed, 0);
		}
	}

	/*
	 * The last receiver may have gone since the caller looked, and the
	 * sweep that followed passed this task when it had none yet
	 */
	if (!atomic_read(&nr_defer_output_events))
		perf_bido_free_stash(current);
}

/*
 * The words of current's user stack from its stack pointer up, @bytes of
 * them, as the PERF_SAMPLE_STACK_USER dumps of the entry's samples hold
 * them, into @addrs (room for @bytes / 4 entries).  A DWARF unwinder finds
 * its return addresses among them.  The task has not run in user space
 * since the samples; only another thread of it could have written there.
 * Returns how many were read: fewer where the stack ends.
 *
 * Context: task context, may fault.
 */
static unsigned int perf_bido_stack_words(unsigned long *addrs, u32 bytes)
{
	struct unwind_user_state state;
	unsigned long left;
	unsigned int n, i;
	u32 *words = (u32 *)addrs;

	if (!bytes || unwind_user_start(&state))
		return 0;
	if (state.sp >= TASK_SIZE)
		return 0;
	bytes = min_t(unsigned long, bytes, TASK_SIZE - state.sp);
	bytes = round_down(bytes, state.ws);
	left = copy_from_user(addrs, (const void __user *)state.sp, bytes);
	n = (bytes - left) / state.ws;
	if (state.ws == sizeof(u32)) {
		/* Widen in place, from the last: each entry's source is read first */
		for (i = n; i-- > 0;)
			addrs[i] = words[i];
	}
	return n;
}

static int perf_bido_cmp_addr(const void *a, const void *b)
{
	unsigned long x = *(const unsigned long *)a;
	unsigned long y = *(const unsigned long *)b;

	return x < y ? -1 : x > y;
}

/*
 * Sort @addrs and drop duplicates and whatever is not a user address.
 * Returns how many are left.
 */
VISIBLE_IF_KUNIT unsigned int perf_bido_sort_addrs(unsigned long *addrs,
						   unsigned int nr)
{
	unsigned int i, n = 0;

	sort(addrs, nr, sizeof(*addrs), perf_bido_cmp_addr, NULL);

	for (i = 0; i < nr; i++) {
		if (!addrs[i] || addrs[i] >= TASK_SIZE)
			continue;
		if (n && addrs[n - 1] == addrs[i])
			continue;
		addrs[n++] = addrs[i];
	}
	return n;
}

/*
 * PERF_BUILD_ID_OFFSET_MAP_* of a file-backed mapping, and whether the file may be
 * read.  Runs under mmap_lock: it looks, it does not read.
 */
VISIBLE_IF_KUNIT u8 perf_bido_file_flags(struct file *file)
{
	struct inode *inode = file_inode(file);
	fmode_t can_read = FMODE_READ | FMODE_CAN_READ;
	u8 flags = 0;

	/* memfd_create(), SysV SHM, memfd_secret(): on a kernel mount */
	if (inode->i_sb->s_flags & SB_KERNMOUNT)
		flags |= PERF_BUILD_ID_OFFSET_MAP_ANON_FILE;
	else if (d_unlinked(file->f_path.dentry))
		flags |= PERF_BUILD_ID_OFFSET_MAP_DELETED;

	/*
	 * Read nothing that a plain read(2) of a regular file would not:
	 * no device (a read may have side effects), nothing secret.
	 */
	if (!S_ISREG(inode->i_mode) || secretmem_mapping(file->f_mapping) ||
	    (file->f_mode & can_read) != can_read)
		flags |= PERF_BUILD_ID_OFFSET_MAP_UNREADABLE;

	return flags;
}

static bool perf_bido_vma_is_vdso(struct vm_area_struct *vma)
{
	const char *name;

	if (!vma->vm_ops || !vma->vm_ops->name)
		return false;
	name = vma->vm_ops->name(vma);
	return name && !strcmp(name, "[vdso]");
}

/* Append @vma to the table.  Under mmap_lock. */
static void perf_bido_add_vma(struct perf_bido_resolve *res,
			      struct vm_area_struct *vma)
{
	struct perf_bido_map *map = &res->maps[res->nr_maps];
	struct file *file = vma->vm_file;

	/* Every byte is written: the struct has no hole */
	*map = (struct perf_bido_map){
		.start	= vma->vm_start,
		.end	= vma->vm_end,
	};
	res->files[res->nr_maps++] = NULL;

	if (!file) {
		map->flags = perf_bido_vma_is_vdso(vma) ? PERF_BUILD_ID_OFFSET_MAP_VDSO :
							 PERF_BUILD_ID_OFFSET_MAP_ANON;
		return;
	}

	map->pgoff = (u64)vma->vm_pgoff << PAGE_SHIFT;
	map->flags = perf_bido_file_flags(file);
	if (!(map->flags & PERF_BUILD_ID_OFFSET_MAP_UNREADABLE))
		res->files[res->nr_maps - 1] = get_file(file);
}

/*
 * Fill the table with the VMAs of @mm that cover res->addrs (sorted and
 * unique), taking a reference on each file whose build-ID is to be read.
 * Addresses in no VMA are left out.
 *
 * Context: task context, may sleep; takes mmap_lock for reading.
 */
VISIBLE_IF_KUNIT void perf_bido_find_vmas(struct mm_struct *mm,
					  struct perf_bido_resolve *res)
{
	struct vm_area_struct *vma = NULL;
	unsigned int i;

	if (mmap_read_lock_killable(mm)) {
		res->flags |= PERF_BUILD_ID_OFFSET_F_TRUNCATED;
		return;
	}
	/* No writer while we hold the lock: the count stands for what we see */
	res->looked_up = perf_bido_mm_seq(mm, &res->mm_seq);

	for (i = 0; i < res->nr_addrs; i++) {
		unsigned long addr = res->addrs[i];
		struct perf_bido_map *last;

		/* Sorted: until it ends, the last VMA found covers addr */
		if (!vma || addr >= vma->vm_end) {
			vma = find_vma(mm, addr);
			if (!vma)
				break;
		}
		/*
		 * In a hole below vma, or in memory that is not code (a
		 * stale return address, a branch into data): unresolved.
		 * Only executable mappings are described, as MMAP2 records
		 * do without attr.mmap_data, and no data file is read.
		 */
		if (addr < vma->vm_start || !(vma->vm_flags & VM_EXEC))
			continue;

		last = res->nr_maps ? &res->maps[res->nr_maps - 1] : NULL;
		if (last && last->start == vma->vm_start)
			continue;

		if (res->nr_maps == res->max_maps) {
			res->flags |= PERF_BUILD_ID_OFFSET_F_TRUNCATED;
			break;
		}
		perf_bido_add_vma(res, vma);
	}

	mmap_read_unlock(mm);
}

/* ---- Build-IDs: from the page cache, never waiting for a file system ---- */

/*
 * A note that is not in the page cache is read into it by a worker, so
 * that a later record finds it there; the task that asked goes on at
 * once.  At most PERF_BIDO_MAX_FETCHES such reads are under way at any
 * time: a file system that stalls holds up that many workers, no task.
 */
#define PERF_BIDO_MAX_FETCHES	4

static atomic_t perf_bido_nr_fetches = ATOMIC_INIT(0);

struct perf_bido_fetch {
	struct work_struct	work;
	struct file		*file;
};

static void perf_bido_fetch_fn(struct work_struct *work)
{
	struct perf_bido_fetch *f = container_of(work, struct perf_bido_fetch,
						 work);
	unsigned char build_id[BUILD_ID_SIZE_MAX];
	__u32 size;

	/* The result is the next record's, from the page cache */
	build_id_parse_file(f->file, build_id, &size);
	fput(f->file);
	kfree(f);
	atomic_dec(&perf_bido_nr_fetches);
}

/* Have a worker read what the build-ID of @file needs into the page cache */
static void perf_bido_fetch(struct file *file)
{
	struct perf_bido_fetch *f;

	if (atomic_inc_return(&perf_bido_nr_fetches) > PERF_BIDO_MAX_FETCHES)
		goto busy;
	f = kmalloc(sizeof(*f), GFP_KERNEL);
	if (!f)
		goto busy;
	INIT_WORK(&f->work, perf_bido_fetch_fn);
	f->file = get_file(file);
	queue_work(system_unbound_wq, &f->work);
	return;
busy:
	atomic_dec(&perf_bido_nr_fetches);
}

/**
 * perf_bido_build_id - the build-ID of a mapped file, from the page cache
 * @file: the file
 * @map: its map in the record being built
 *
 * Only what is in the page cache and up to date is read: the task never
 * waits for a file system here, whatever the file system does.  The pages
 * of mapped code usually are there.  If a page the build-ID needs is not,
 * the map says PERF_BUILD_ID_OFFSET_MAP_UNREADABLE, a worker reads the
 * file (perf_bido_fetch()), and a later record of the mapping gets the
 * build-ID.  Only the contents in the page cache decide
 * PERF_BUILD_ID_OFFSET_MAP_NO_BUILD_ID.
 *
 * Return: false when the result may change while the mapping does not: an
 * unreadable build-ID, or a file with a shared writable mapping (its
 * stores may rewrite the note).
 */
VISIBLE_IF_KUNIT bool perf_bido_build_id(struct file *file,
					 struct perf_bido_map *map)
{
	__u32 size = 0;
	int err;

	err = build_id_parse_file_nofault(file, map->build_id, &size);
	switch (err) {
	case 0:
		map->build_id_size = size;
		break;
	case -EINVAL:		/* no ELF, no note, or a malformed one */
	case -ERANGE:
	case -EOVERFLOW:
		memset(map->build_id, 0, sizeof(map->build_id));
		map->flags |= PERF_BUILD_ID_OFFSET_MAP_NO_BUILD_ID;
		break;
	case -EFAULT:		/* not in the page cache: next time */
		perf_bido_fetch(file);
		fallthrough;
	default:
		memset(map->build_id, 0, sizeof(map->build_id));
		map->flags |= PERF_BUILD_ID_OFFSET_MAP_UNREADABLE;
		return false;
	}
	return !mapping_writably_mapped(file->f_mapping);
}

/*
 * The build-ID of @map from @tab, the task's last record, if @tab has the
 * same mapping and was made at the same mm_lock_seq: no VMA has changed
 * since, so the mapping still holds the same file, which cannot have been
 * replaced by another at its inode.  Not for a file with a shared writable
 * mapping, whose stores may rewrite the note.
 */
static bool perf_bido_build_id_from(const struct perf_bido_table *tab,
				    struct file *file, struct perf_bido_map *map)
{
	unsigned int i;

	if (mapping_writably_mapped(file->f_mapping))
		return false;
	for (i = 0; i < tab->nr; i++) {
		const struct perf_bido_table_map *old = &tab->maps[i];

		if (old->start != map->start ||
		    perf_bido_table_len(old) != map->end - map->start ||
		    (u64)old->pgoff << PAGE_SHIFT != map->pgoff)
			continue;
		map->build_id_size = old->build_id_size;
		map->flags |= old->flags & PERF_BUILD_ID_OFFSET_MAP_NO_BUILD_ID;
		memcpy(map->build_id, old->build_id, sizeof(map->build_id));
		return true;
	}
	return false;
}

/*
 * Read the build-IDs of the files perf_bido_find_vmas() kept, and drop
 * their references.  @tab: the task's last record, made at the same
 * mm_lock_seq, whose build-IDs stand; NULL for none.
 *
 * Context: task context, no locks held.
 */
VISIBLE_IF_KUNIT void perf_bido_read_build_ids(struct perf_bido_resolve *res,
					       const struct perf_bido_table *tab)
{
	unsigned int i;

	for (i = 0; i < res->nr_maps; i++) {
		struct file *file = res->files[i];

		if (!file)
			continue;
		if (!tab || !perf_bido_build_id_from(tab, file, &res->maps[i])) {
			res->parsed++;
			if (!perf_bido_build_id(file, &res->maps[i]))
				res->unstable = true;
		}
		res->files[i] = NULL;
		fput(file);
	}
}

/* ---- Output ---- */

/*
 * @to: the sessions to write to; @written and @lost: bit i for a receiver
 * of session @to->id[i] that got the record, or had no room for it;
 * @nr_written and @nr_lost: receivers so, of any session.
 */
struct perf_bido_output {
	struct perf_bido_record		rec;
	const struct perf_bido_map	*maps;
	const struct perf_bido_sessions	*to;
	unsigned long			written;
	unsigned long			lost;
	unsigned int			nr_written;
	unsigned int			nr_lost;
};

static void perf_bido_output_event(struct perf_event *event, void *data)
{
	struct perf_bido_output *out = data;
	struct perf_bido_record rec = out->rec;
	struct perf_output_handle handle;
	struct perf_sample_data sample;
	u16 maps_size = rec.nr * sizeof(*out->maps);
	int idx = perf_bido_receiver(out->to, event);

	if (idx < 0)
		return;
	/*
	 * No buffer (inherited copies write to their parent's): nobody to
	 * read the record there, so nobody it could be lost to
	 */
	if (!rcu_access_pointer((event->parent ?: event)->rb))
		return;

	perf_event_header__init(&rec.header, &sample,
				PERF_RECORD_BUILD_ID_OFFSET,
				PERF_RECORD_MISC_USER,
				sizeof(rec) + maps_size, event);
	/* No room: the ring buffer counts it lost */
	if (perf_output_begin(&handle, &sample, event, rec.header.size)) {
		out->nr_lost++;
		__set_bit(idx, &out->lost);
		return;
	}
	out->nr_written++;
	__set_bit(idx, &out->written);

	rec.pid = perf_event_pid(event, current);
	rec.tid = perf_event_tid(event, current);

	perf_output_put(&handle, rec);
	__output_copy(&handle, out->maps, maps_size);
	perf_event__output_id_sample(event, &handle, &sample);

	perf_output_end(&handle);
}

/*
 * Write the record to the receivers of the sessions in @to that see
 * current now; @parsed: build-IDs read for it, for the tracepoint.
 * Returns a mask of the sessions of @to->id whose receivers got it, none
 * of them lacking room: their later samples may name it.
 */
static unsigned long perf_bido_emit(u64 cookie, u32 flags,
				    const struct perf_bido_map *maps,
				    unsigned int nr, unsigned int parsed,
				    const struct perf_bido_sessions *to)
{
	struct perf_bido_output out = {
		.rec = {
			.cookie	= cookie,
			.nr	= nr,
			.flags	= flags,
		},
		.maps = maps,
		.to = to,
	};

	perf_iterate_sb(perf_bido_output_event, &out, NULL);

	if (trace_perf_bido_record_enabled()) {
		unsigned int i, unreadable = 0;

		for (i = 0; i < nr; i++)
			unreadable += !!(maps[i].flags &
					 PERF_BUILD_ID_OFFSET_MAP_UNREADABLE);
		trace_perf_bido_record(cookie, nr, flags, parsed, unreadable,
				       out.nr_written, out.nr_lost);
	}
	return out.written & ~out.lost & (BIT(PERF_BIDO_SESSIONS) - 1);
}

/*
 * One buffer for the table and the addresses: maps[max_maps], then
 * files[max_maps], then addrs[nr_addrs].  Room for at least the maps of a
 * reused table.  Usually a few hundred bytes; kvmalloc() for the rare
 * deep stack.
 */
static int perf_bido_alloc(struct perf_bido_resolve *res, unsigned int nr_addrs)
{
	unsigned int max_maps = clamp(nr_addrs, PERF_BIDO_REUSE_MAPS,
				      PERF_BIDO_MAX_MAPS);
	size_t size = max_maps * (sizeof(*res->maps) + sizeof(*res->files)) +
		      nr_addrs * sizeof(*res->addrs);
	void *buf;

	buf = kvmalloc(size, GFP_KERNEL);
	if (!buf)
		return -ENOMEM;

	res->maps = buf;
	res->files = buf + max_maps * sizeof(*res->maps);
	res->addrs = (void *)(res->files + max_maps);
	res->max_maps = max_maps;
	return 0;
}

static int perf_bido_cmp_map(const void *a, const void *b)
{
	const struct perf_bido_map *x = a, *y = b;

	return x->start < y->start ? -1 : x->start > y->start;
}

/*
 * A kept map as the record had it: every byte of @map is written, the
 * same as perf_bido_add_vma() wrote it (see perf_bido_table_fits())
 */
static void perf_bido_map_from_table(struct perf_bido_map *map,
				     const struct perf_bido_table_map *kept)
{
	*map = (struct perf_bido_map){
		.start		= kept->start,
		.end		= kept->start + perf_bido_table_len(kept),
		.pgoff		= (u64)kept->pgoff << PAGE_SHIFT,
		.build_id_size	= kept->build_id_size,
		.flags		= kept->flags,
	};
	memcpy(map->build_id, kept->build_id, sizeof(map->build_id));
}

/*
 * Add to the table being built the maps of @tab that it lacks, as room
 * under PERF_BIDO_REUSE_MAPS allows, so that a record covers more of the
 * task's working set and later samples that run elsewhere in it can
 * still name it.  Only for a table looked up at the same mm_lock_seq
 * (same VMAs) and whose build-IDs are read (no file reference left): a
 * kept map is an exact copy of one of the last record's, and its VMA is
 * unchanged.  Returns how many were added.
 */
VISIBLE_IF_KUNIT unsigned int perf_bido_table_merge(struct perf_bido_resolve *res,
						    const struct perf_bido_table *tab)
{
	unsigned int i, j, nr = res->nr_maps, added = 0;

	for (i = 0; i < tab->nr; i++) {
		const struct perf_bido_table_map *old = &tab->maps[i];
		bool have = false;

		if (res->nr_maps >= PERF_BIDO_REUSE_MAPS ||
		    res->nr_maps >= res->max_maps)
			break;
		for (j = 0; j < nr && !have; j++)
			have = res->maps[j].start == old->start;
		if (have)
			continue;
		perf_bido_map_from_table(&res->maps[res->nr_maps], old);
		res->files[res->nr_maps++] = NULL;
		added++;
	}
	if (added)
		sort(res->maps, res->nr_maps, sizeof(*res->maps),
		     perf_bido_cmp_map, NULL);
	return added;
}

/* May later samples name this record?  Not if any part of it may change */
static bool perf_bido_table_ok(const struct perf_bido_resolve *res)
{
	unsigned int i;

	if (!res->looked_up || res->flags || res->unstable)
		return false;
	/* Unreadable may be for now only (I/O error, signal) */
	for (i = 0; i < res->nr_maps; i++)
		if (res->maps[i].flags & PERF_BUILD_ID_OFFSET_MAP_UNREADABLE)
			return false;
	return true;
}

/*
 * Take the task's table out of use before the next record is built: a
 * sample must never name a record older than the task's last one.  Was it
 * good for current's samples until now (but for mm_lock_seq, which the
 * caller compares once it has looked up the VMAs)?  Then its maps may
 * join the next record.
 */
static bool perf_bido_table_retire(struct perf_bido_table *tab)
{
	bool live = READ_ONCE(tab->cookie) && perf_bido_table_fresh(tab);

	WRITE_ONCE(tab->cookie, 0);
	barrier();
	return live;
}

/*
 * The task's table with room for @nr maps, at most PERF_BIDO_TABLE_MAPS:
 * the one it has if that is large enough, else one sized to the kmalloc
 * bucket @nr needs (96 bytes for one map, 128 for two), which replaces
 * it.  Whatever table a sample that interrupts us finds has cookie 0
 * until the caller saves the record in it.
 */
VISIBLE_IF_KUNIT struct perf_bido_table *
perf_bido_table_room(struct perf_bido_task *bt, unsigned int nr)
{
	struct perf_bido_table *tab = bt->table, *old;
	size_t size;

	if (nr > PERF_BIDO_TABLE_MAPS)
		return NULL;
	if (tab && tab->room >= nr)
		return tab;
	if (current->flags & PF_EXITING)
		return NULL;

	size = kmalloc_size_roundup(struct_size(tab, maps, nr));
	tab = kzalloc(size, GFP_KERNEL);
	if (!tab)
		return NULL;
	tab->room = min_t(size_t, (size - sizeof(*tab)) / sizeof(tab->maps[0]),
			  PERF_BIDO_TABLE_MAPS);
	trace_perf_bido_state_alloc(tab, true, size);
	/*
	 * A sample on this CPU sees the old table or the zeroed new one, and
	 * one that read the old pointer is done with it before we go on.
	 */
	old = xchg(&bt->table, tab);
	if (old) {
		trace_perf_bido_state_free(old, true, perf_bido_table_bytes(old));
		kfree(old);
	}
	return tab;
}

/*
 * Can @map be kept in a table entry exactly: page-aligned, its length and
 * file offset each under 2^32 pages?  Every VMA's map is, but for a VMA of
 * 16 TiB or more (4 KiB pages), or at a file offset that large.
 */
static bool perf_bido_table_fits(const struct perf_bido_map *map)
{
	u64 len = map->end - map->start;

	return map->end > map->start && PAGE_ALIGNED(map->start) &&
	       PAGE_ALIGNED(len) && PAGE_ALIGNED(map->pgoff) &&
	       len >> PAGE_SHIFT <= U32_MAX &&
	       map->pgoff >> PAGE_SHIFT <= U32_MAX;
}

/*
 * Which maps of the record just built the table keeps: at most
 * PERF_BIDO_TABLE_MAPS, those that hold the most of res->addrs (sorted,
 * unique), the first of equals; maps that perf_bido_table_fits() refuses
 * never.  Their indexes in res->maps go to @pick, in the order of
 * res->maps (so by start); returns how many.  Each is kept whole, so a
 * sample whose addresses all fall in kept maps names a record that
 * resolves them, and a build-ID taken from a kept map is the record's.
 */
VISIBLE_IF_KUNIT unsigned int perf_bido_table_pick(const struct perf_bido_resolve *res,
						   unsigned int *pick)
{
	unsigned int count[PERF_BIDO_TABLE_MAPS];
	unsigned int i, j = 0, k, n = 0;

	for (i = 0; i < res->nr_maps; i++) {
		const struct perf_bido_map *map = &res->maps[i];
		unsigned int c = 0;

		/* Both sorted, the maps apart: one pass over the addresses */
		while (j < res->nr_addrs && res->addrs[j] < map->start)
			j++;
		for (; j < res->nr_addrs && res->addrs[j] < map->end; j++)
			c++;
		if (!perf_bido_table_fits(map))
			continue;
		if (n == PERF_BIDO_TABLE_MAPS) {
			if (c <= count[n - 1])
				continue;
			n--;
		}
		for (k = n; k > 0 && count[k - 1] < c; k--) {
			count[k] = count[k - 1];
			pick[k] = pick[k - 1];
		}
		count[k] = c;
		pick[k] = i;
		n++;
	}
	/* Back in the order of start, which perf_bido_table_merge() keeps */
	for (i = 1; i < n; i++)
		for (k = i; k > 0 && pick[k - 1] > pick[k]; k--)
			swap(pick[k - 1], pick[k]);
	return n;
}

/* Copy the maps @pick of the record into @tab, which has room for them */
VISIBLE_IF_KUNIT void perf_bido_table_fill(struct perf_bido_table *tab,
					   const struct perf_bido_resolve *res,
					   const unsigned int *pick,
					   unsigned int nr)
{
	unsigned int i;

	nr = min_t(unsigned int, nr, tab->room);
	for (i = 0; i < nr; i++) {
		const struct perf_bido_map *map = &res->maps[pick[i]];
		struct perf_bido_table_map *kept = &tab->maps[i];

		kept->start = map->start;
		kept->pages = (map->end - map->start) >> PAGE_SHIFT;
		kept->pgoff = map->pgoff >> PAGE_SHIFT;
		kept->build_id_size = map->build_id_size;
		kept->flags = map->flags;
		memcpy(kept->build_id, map->build_id, sizeof(kept->build_id));
	}
	tab->nr = nr;
}

/*
 * Keep the maps of the record just built that hold the most of its
 * addresses, for the later samples of the sessions of @to in @delivered
 * (see perf_bido_emit()).  The cookie goes last: a sample that interrupts
 * us sees 0 until then.
 */
static void perf_bido_table_keep(struct perf_bido_task *bt,
				 const struct perf_bido_resolve *res, u64 cookie,
				 const struct perf_bido_sessions *to,
				 unsigned long delivered)
{
	unsigned int pick[PERF_BIDO_TABLE_MAPS], nr, i;
	struct perf_bido_table *tab;

	nr = perf_bido_table_pick(res, pick);
	tab = nr ? perf_bido_table_room(bt, nr) : NULL;
	if (!tab)
		return;

	perf_bido_table_fill(tab, res, pick, nr);
	tab->mm = current->mm;
	tab->exec_id = current->self_exec_id;
	tab->mm_seq = res->mm_seq;
	for (i = 0; i < PERF_BIDO_SESSIONS; i++)
		tab->sessions[i] = delivered & BIT(i) ? to->id[i] : NULL;
	barrier();
	WRITE_ONCE(tab->cookie, cookie);
}

/*
 * The unwind callback: build and emit the record of entry @cookie.
 *
 * Context: current, in task context before it returns to user space or
 * in do_exit() with its mm; no locks held.
 */
static void perf_bido_unwind_callback(struct unwind_work *work,
				      struct unwind_stacktrace *trace,
				      u64 cookie)
{
	struct perf_bido_table *tab = NULL;
	struct perf_bido_resolve res = {};
	struct perf_bido_sessions to;
	unsigned long entry_ip, delivered;
	struct perf_bido_task *bt;
	bool live = false, exec;
	unsigned int nr;
	u32 stack_bytes;

	exec = perf_bido_close_entry(cookie, &to);
	/*
	 * Only now: the state may be new, made by perf_bido_close_entry(),
	 * and a sample that interrupted it before the entry was closed has
	 * noted the entry there and carries the cookie.
	 */
	bt = READ_ONCE(current->perf_bido);
	/* Not noted: no sample has the cookie */
	if (!bt || READ_ONCE(bt->cookie) != cookie)
		return;
	/* Nobody to tell: only empty the stash, and make none */
	if (!atomic_read(&nr_defer_output_events)) {
		perf_bido_take_stash(bt, cookie, NULL, &res.flags);
		return;
	}

	if (bt->table)
		live = perf_bido_table_retire(bt->table);

	/* Not before the entry was closed: no sample raises it after that */
	stack_bytes = READ_ONCE(bt->stack_bytes);
	if (READ_ONCE(bt->cookie) != cookie)
		stack_bytes = 0;
	nr = 2 + trace->nr + (bt->stash ? PERF_BIDO_STASH_ENTRIES : 0) +
	     stack_bytes / sizeof(u32);
	if (perf_bido_alloc(&res, nr)) {
		perf_bido_take_stash(bt, cookie, NULL, &res.flags);
		perf_bido_emit(cookie, res.flags | PERF_BUILD_ID_OFFSET_F_TRUNCATED,
			       NULL, 0, 0, &to);
		return;
	}

	/* The user IP even if the walk failed (it starts there otherwise) */
	res.addrs[res.nr_addrs++] = instruction_pointer(task_pt_regs(current));
	/*
	 * And the one the entry's samples saw, where something rewrote the
	 * registers since: a signal frame set up after the work was asked
	 * for (the work then runs after setup_rt_frame() and walks from the
	 * handler), rt_sigreturn() restoring the interrupted registers.
	 * Their callers are on both walks; that IP is only here.
	 */
	entry_ip = READ_ONCE(bt->entry_ip);
	if (READ_ONCE(bt->cookie) == cookie && entry_ip != res.addrs[0])
		res.addrs[res.nr_addrs++] = entry_ip;
	if (trace->nr)
		memcpy(res.addrs + res.nr_addrs, trace->entries,
		       trace->nr * sizeof(*res.addrs));
	res.nr_addrs += trace->nr;
	res.nr_addrs += perf_bido_take_stash(bt, cookie,
					    res.addrs + res.nr_addrs,
					    &res.flags);
	res.nr_addrs += perf_bido_stack_words(res.addrs + res.nr_addrs,
					      stack_bytes);
	perf_bido_alloc_stash(bt);
	tab = bt->table;

	/*
	 * The addresses are of the program that ran when the entry began;
	 * after an exec they mean nothing in the new mm.
	 */
	if (READ_ONCE(bt->cookie) != cookie || exec) {
		res.flags |= PERF_BUILD_ID_OFFSET_F_MM_CHANGED;
	} else if (current->mm) {
		res.nr_addrs = perf_bido_sort_addrs(res.addrs, res.nr_addrs);
		perf_bido_find_vmas(current->mm, &res);
		/*
		 * A mapping was made, changed or removed since the entry's
		 * first sample, by another thread or by the entry itself (a
		 * sampled mmap()): the maps are as they are now.
		 */
		if (res.looked_up && READ_ONCE(bt->entry_seq) != res.mm_seq)
			res.flags |= PERF_BUILD_ID_OFFSET_F_MAPS_CHANGED;
		/* Same VMAs as when the last table was made: keep its maps */
		live = tab && live && res.looked_up && tab->mm_seq == res.mm_seq;
		perf_bido_read_build_ids(&res, live ? tab : NULL);
		/*
		 * Only where a later sample may name this record: the samples
		 * of defer_callchain events never do, and a record as large as
		 * the task's working set would only cost them
		 */
		if (live && !res.flags && READ_ONCE(bt->reusable) == cookie)
			perf_bido_table_merge(&res, tab);
	}

	delivered = perf_bido_emit(cookie, res.flags, res.maps, res.nr_maps,
				   res.parsed, &to);

	/*
	 * Only a session every receiver of which had room for the record
	 * may name it in later samples
	 */
	if (delivered && res.nr_maps && perf_bido_table_ok(&res)) {
		perf_bido_table_keep(bt, &res, cookie, &to, delivered);
		/* As in perf_bido_alloc_stash(): the sweep may have passed */
		if (!atomic_read(&nr_defer_output_events))
			perf_bido_free_stash(current);
	}
	kvfree(res.maps);
}

/* ---- Hooks ---- */

/**
 * perf_bido_check_attr - reject what this kernel cannot do
 * @attr: the attributes of a new event
 *
 * Return: -EINVAL for
 * * PERF_SAMPLE_BUILD_ID_OFFSET with exclude_user: the record is about
 *   user addresses only;
 * * defer_output with exclude_user: the records describe user space, which
 *   such an event asked not to see.
 * 0 otherwise.  defer_callchain is valid on any event (callchain_deferred.c):
 * without PERF_SAMPLE_CALLCHAIN or with exclude_callchain_user it changes
 * nothing.  defer_output is valid on any other event: a per-task event
 * receives the records of its task (inherited copies write to their
 * parent's buffer, as for any record), a per-CPU event becomes a side-band
 * event and receives the records of the tasks that run on its CPU.
 */
int perf_bido_check_attr(const struct perf_event_attr *attr)
{
	if (((attr->sample_type & PERF_SAMPLE_BUILD_ID_OFFSET) ||
	     attr->defer_output) && attr->exclude_user)
		return -EINVAL;
	return 0;
}

/* From perf_event_init_task(): the child starts with the parent's pointer */
void perf_bido_init_task(struct task_struct *child)
{
	child->perf_bido = NULL;
}

/*
 * Free current's per-task state.  A sample that interrupted us before the
 * xchg() is done with it before we go on, on this CPU; one that comes
 * later makes a new one from the spare (freed in turn at exit).
 */
static void perf_bido_free_task(void)
{
	struct perf_bido_task *bt;

	perf_bido_free_stash(current);
	bt = xchg(&current->perf_bido, NULL);
	if (bt)
		perf_bido_task_drop(bt);
}

/*
 * From perf_event_exit_task(), on current, in do_exit() (PF_EXITING is
 * set: no deferred unwind can be asked for, so no sample makes a new
 * state after this) and when a set-uid exec drops the task's events.
 */
void perf_bido_exit_task(struct task_struct *task)
{
	if (WARN_ON_ONCE(task != current))
		return;
	perf_bido_free_task();
}

/*
 * Once the last receiving event is gone, the per-task states, their
 * tables (128 bytes at most) and stashes (1 KiB) and the unwind caches
 * serve nobody: on a host with 100k threads, a few hundred MiB.  Each
 * task frees its own, from a task_work, as only the task and its own
 * interrupts touch them; a task that never returns to user space again
 * keeps them until it exits.
 */
static void perf_bido_trim(struct callback_head *head)
{
	struct perf_bido_task *bt = container_of(head, struct perf_bido_task,
						trim);

	/*
	 * Off the list: the sweep may queue it again from here on.  Dropped
	 * while this was queued (the task exited or ran a set-uid program
	 * before coming here): no longer current's, and ours to free.
	 */
	if (cmpxchg(&bt->trim_state, PERF_BIDO_TRIM_QUEUED,
		    PERF_BIDO_TRIM_IDLE) == PERF_BIDO_TRIM_DEAD) {
		perf_bido_task_free(bt);
		return;
	}
	if (atomic_read(&nr_defer_output_events))
		return;
	perf_bido_free_task();
	unwind_user_trim();
}

static void perf_bido_sweep_fn(struct work_struct *work)
{
	struct task_struct *g, *t;

	int cpu;

	for_each_possible_cpu(cpu) {
		struct perf_bido_spares *spares = per_cpu_ptr(&perf_bido_spare, cpu);
		struct perf_bido_task *bt;
		unsigned int i;

		for (i = 0; i < PERF_BIDO_SPARES; i++) {
			if (atomic_read(&nr_defer_output_events))
				return;
			bt = xchg(&spares->bt[i], NULL);
			if (bt)
				perf_bido_task_free(bt);
		}
	}

	rcu_read_lock();
	for_each_process_thread(g, t) {
		/* Freed after a grace period: see perf_bido_task_free() */
		struct perf_bido_task *bt = READ_ONCE(t->perf_bido);

		/* A receiver came back: the tasks keep what they have */
		if (atomic_read(&nr_defer_output_events))
			break;
		if (!bt || cmpxchg(&bt->trim_state, PERF_BIDO_TRIM_IDLE,
				   PERF_BIDO_TRIM_QUEUED) != PERF_BIDO_TRIM_IDLE)
			continue;
		init_task_work(&bt->trim, perf_bido_trim);
		/*
		 * Too late: the task is past exit_task_work(), so also past
		 * perf_event_exit_task(), which let go of the state after
		 * we read it.  Ours to free then.
		 */
		if (task_work_add(t, &bt->trim, TWA_RESUME) &&
		    cmpxchg(&bt->trim_state, PERF_BIDO_TRIM_QUEUED,
			    PERF_BIDO_TRIM_IDLE) == PERF_BIDO_TRIM_DEAD)
			perf_bido_task_free(bt);
	}
	rcu_read_unlock();
}

static DECLARE_WORK(perf_bido_sweep, perf_bido_sweep_fn);

/**
 * perf_bido_receiver_added - a defer_output event was created
 *
 * Gives every CPU a spare per-task state, so that the first sample of
 * each task can have one.
 *
 * Context: task context, may sleep.
 */
void perf_bido_receiver_added(void)
{
	int cpu;

	for_each_possible_cpu(cpu)
		perf_bido_refill_cpu(cpu);
}

/**
 * perf_bido_receivers_gone - the last defer_output event went away
 *
 * Context: any.
 */
void perf_bido_receivers_gone(void)
{
	schedule_work(&perf_bido_sweep);
}

/* From perf_event_init(): one unwind_work for every perf event, for good */
void __init perf_bido_init(void)
{
	int ret;

	ret = unwind_deferred_init(&perf_bido_unwind_work,
				   perf_bido_unwind_callback);
	/* Then every request fails and samples carry cookie 0 */
	WARN(ret, "perf: no deferred unwind for build-ID offsets: %d\n", ret);
}
