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
 * task never waits for a file system on its way back to user space.
 * There is no cache shared between tasks, so no lock that CPUs share and
 * nothing that must learn of unmounts.
 *
 * Most samples need no record of their own: a task keeps the ranges of
 * the five maps of its last record that hold the most of its addresses,
 * and a later sample whose user addresses they all cover names that
 * record instead of asking for deferred work, while the task's address
 * space has not changed and only for sessions that got the record
 * (perf_bido_reuse()).  Samples of deferred callchains, whose frames
 * are not known here, get their entry's record; when the same ranges
 * cover the entry's addresses, that record only names the last one
 * (PERF_BUILD_ID_OFFSET_F_SAME_MAPS, perf_bido_same_maps()).  Nothing
 * system-wide and no clock is involved.  That keeps the steady state
 * close to the cost of the sample alone.
 *
 * Files: this one holds the per-task state, the routing of records to
 * sessions, the sampling side and the hooks core.c calls;
 * build_id_offset_record.c the deferred callback that builds and writes
 * the records; build_id_offset_file.c the build-ID reader.
 */

#include <linux/atomic.h>
#include <linux/percpu.h>
#include <linux/perf_event.h>
#include <linux/ptrace.h>
#include <linux/sched.h>
#include <linux/sched/signal.h>
#include <linux/sched/task_stack.h>
#include <linux/slab.h>
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
static_assert(sizeof(struct perf_bido_table_map) == 16);
static_assert(sizeof(struct perf_bido_record) == 32);
static_assert(PERF_BIDO_MAX_MAPS * sizeof(struct perf_bido_map) +
	      sizeof(struct perf_bido_record) + 64 < U16_MAX);

/*
 * The one user of deferred unwinding for all perf events; its callback,
 * perf_bido_unwind_callback(), builds the records
 * (build_id_offset_record.c)
 */
static struct unwind_work perf_bido_unwind_work;

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
/* Five ranges fill the 128 bytes exactly beside the 48-byte header */
static_assert(!IS_ENABLED(CONFIG_64BIT) ||
	      sizeof(struct perf_bido_table) == 48);
/* One bit of perf_bido_table::used per kept map */
static_assert(BITS_PER_TYPE(u8) >= PERF_BIDO_TABLE_MAPS);

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
bool perf_bido_has_session(const void *const *ids, const void *id)
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
		/*
		 * The notes, then the cookie that makes them the entry's.
		 * Pairs with the READ_ONCE(bt->cookie) above in a sample
		 * that interrupts this one (it sees the old cookie and notes
		 * afresh, or all of the notes), and with the barrier() after
		 * the store of bt->closed in perf_bido_close_entry(), which
		 * reads the cookie and then the notes.  All on this CPU.
		 */
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
		/*
		 * The IP, then the cookie it goes with: pairs with the
		 * READ_ONCE(bt->closed) before the READ_ONCE(bt->closed_ip)
		 * in perf_bido_note_entry() of a sample that interrupts us
		 */
		barrier();
		WRITE_ONCE(bt->closed, cookie);
		/*
		 * Closed before the cookie and the notes are read below:
		 * pairs with the barrier() before the store of bt->cookie in
		 * perf_bido_note_entry().  A sample that interrupts us before
		 * this store has noted all it will; one after it sees the
		 * entry closed and adds no session.  All on this CPU.
		 */
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

/*
 * Is @addr in one of the map ranges of @tab?  The range that holds it is
 * marked used (see perf_bido_table_carried()): a plain store, as the
 * deferred work and the samples that may interrupt it only ever set bits
 * of it until the table is filled again, and a bit lost to that race
 * only leaves one map out of a later record.
 */
VISIBLE_IF_KUNIT bool perf_bido_table_covers(struct perf_bido_table *tab,
					     unsigned long addr)
{
	unsigned int i;

	for (i = 0; i < tab->nr; i++) {
		const struct perf_bido_table_map *kept = &tab->maps[i];
		u8 used;

		if (addr < kept->start || addr >= kept->end)
			continue;
		used = READ_ONCE(tab->used);
		if (!(used & BIT(i)))
			WRITE_ONCE(tab->used, used | BIT(i));
		return true;
	}
	return false;
}

/* The user entries of a sample's callchain, after PERF_CONTEXT_USER */
static bool perf_bido_covers_callchain(struct perf_bido_table *tab,
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

static bool perf_bido_covers_branches(struct perf_bido_table *tab,
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
 * The cookie of the task's last record if that record can stand for
 * this sample, else 0.  It can when
 * - the sample's session got it: every receiver of the session that the
 *   record met had room for it;
 * - nothing it says may have changed: same mm and program, no exec under
 *   way, no VMA changed since its maps were looked up (mm_lock_seq);
 * - the ranges of its maps that the task kept (perf_bido_table_pick())
 *   cover every user address of the sample: where the task entered the
 *   kernel, the sampled IP, the user callchain and the user branch
 *   addresses.  Each is the exact range of one of the record's maps, so
 *   the record resolves them all.
 * Reads only current's own state and the event, and marks the kept maps
 * the sample used in that state: NMI-safe.
 */
static u64 perf_bido_reuse(struct perf_bido_task *bt,
			   struct perf_sample_data *data,
			   struct perf_event *event, struct pt_regs *regs)
{
	struct perf_bido_table *tab = bt ? READ_ONCE(bt->table) : NULL;
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
	/*
	 * The cookie, then the table: pairs with the barrier() before the
	 * store of the cookie in perf_bido_table_keep() and the one after
	 * its clearing in perf_bido_table_retire()
	 */
	barrier();

	if (!perf_bido_table_fresh(tab))
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

	data->defer_cookie = cookie;
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
