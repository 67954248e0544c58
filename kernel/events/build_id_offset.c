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
 * Lifetimes: no event is referenced between the sample and the record.
 * The work is per task and belongs to one unwind_work registered for good
 * at boot; the callback finds its receivers afresh, under RCU, with
 * perf_iterate_sb(): the defer_output events of the task's context and
 * the side-band events of the CPU it runs on.  An event closed or unmapped
 * in between is simply not found, so there is nothing to pin, to cancel
 * or to wait for.  The per-task state (task_struct::perf_bido) is touched
 * only by the task and by interrupts on its own CPU while it runs.
 *
 * Build-IDs are cached by file identity and version so that the steady
 * state costs a lookup, not an ELF parse; see perf_bido_key_init() for when
 * an entry stops matching.
 *
 * Most samples need no record of their own: a task keeps the maps of its
 * last record, and a later sample whose user addresses they all cover
 * while the address space has not changed names that record instead of
 * asking for deferred work (perf_bido_reuse()).  That keeps the steady
 * state close to the cost of the sample alone.
 */

#include <linux/atomic.h>
#include <linux/buildid.h>
#include <linux/dcache.h>
#include <linux/debugfs.h>
#include <linux/file.h>
#include <linux/fs.h>
#include <linux/hash.h>
#include <linux/iversion.h>
#include <linux/log2.h>
#include <linux/minmax.h>
#include <linux/mm.h>
#include <linux/mmap_lock.h>
#include <linux/percpu.h>
#include <linux/perf_build_id_offset.h>
#include <linux/perf_event.h>
#include <linux/ptrace.h>
#include <linux/sched.h>
#include <linux/sched/signal.h>
#include <linux/sched/task_stack.h>
#include <linux/sched/clock.h>
#include <linux/secretmem.h>
#include <linux/seq_file.h>
#include <linux/slab.h>
#include <linux/sort.h>
#include <linux/spinlock.h>
#include <linux/static_key.h>
#include <linux/task_work.h>
#include <linux/timekeeping.h>
#include <linux/unwind_deferred.h>
#include <linux/workqueue.h>
#include <kunit/visibility.h>

#include "internal.h"
#include "build_id_offset.h"

/*
 * Counters, per CPU, summed in debugfs perf_build_id_offset/stats for
 * profilers and benchmarks.  The sampling side adds from NMI: this_cpu
 * operations are single instructions on the architectures that have the
 * feature (x86).  Timing costs two local_clock() calls on each side and
 * is off until perf_build_id_offset/timing is set to 1.
 */
struct perf_bido_stats {
	u64	samples;	/* samples given a cookie */
	u64	sample_ns;	/* in perf_bido_prepare_sample(), when timed */
	u64	records;	/* records built, each written to every receiver */
	u64	record_ns;	/* in the unwind callback, when timed */
	u64	maps;		/* maps[] entries of those records */
	u64	cache_hits;	/* build-IDs found in the cache */
	u64	parses;		/* build-IDs read from the file */
	u64	truncated;	/* records with PERF_BUILD_ID_OFFSET_F_TRUNCATED */
	u64	mm_changed;	/* records with PERF_BUILD_ID_OFFSET_F_MM_CHANGED */
	u64	maps_changed;	/* records with PERF_BUILD_ID_OFFSET_F_MAPS_CHANGED */
	u64	reused;		/* samples that named an earlier record */
	u64	written;	/* copies of records written to a ring buffer */
	u64	no_room;	/* copies that did not fit (counted lost there) */
	u64	late;		/* samples after a record of other registers */
};

static DEFINE_PER_CPU(struct perf_bido_stats, perf_bido_stats);

/* Stashes allocated and not yet freed, for debugfs */
static atomic_long_t perf_bido_nr_stashes;
static DEFINE_STATIC_KEY_FALSE(perf_bido_timed);

#define perf_bido_count(field, n)	this_cpu_add(perf_bido_stats.field, (n))

static u64 perf_bido_clock(void)
{
	return static_branch_unlikely(&perf_bido_timed) ? local_clock() : 0;
}

#define perf_bido_count_time(field, start) do {				\
	u64 __start = (start);						\
									\
	if (__start)							\
		this_cpu_add(perf_bido_stats.field, local_clock() - __start); \
} while (0)

static_assert(sizeof(struct perf_bido_map) == 48);
static_assert(sizeof(struct perf_bido_record) == 32);
static_assert(PERF_BIDO_MAX_MAPS * sizeof(struct perf_bido_map) +
	      sizeof(struct perf_bido_record) + 64 < U16_MAX);

/* The one user of deferred unwinding for all perf events */
static struct unwind_work perf_bido_unwind_work;

/*
 * Reuse of a task's last record by its later samples: on unless debugfs
 * perf_build_id_offset/reuse is set to 0 (to measure what it saves).
 */
static DEFINE_STATIC_KEY_TRUE(perf_bido_reuse_on);

/* Moves when a receiver starts: it has not seen the records before */
static atomic_long_t perf_bido_gen;

/*
 * How long a table is reused before its VMAs are looked up and its
 * build-IDs checked again, however quiet the address space: bounds how
 * long a file rewritten in place under a live mapping keeps its old
 * build-ID, and how long a receiver that attached its buffer late sees
 * samples naming a record it did not get.
 */
#define PERF_BIDO_REUSE_NS	(20 * NSEC_PER_MSEC)

/**
 * perf_bido_receivers_changed - a defer_output event was created or enabled
 *
 * Records written before did not reach it, so no sample may name them
 * from now on.
 *
 * Context: any.
 */
void perf_bido_receivers_changed(void)
{
	atomic_long_inc(&perf_bido_gen);
}

/*
 * The perf_event cgroup of current: receivers that filter by cgroup see a
 * record only while the task is in theirs.  Compared, never dereferenced.
 */
static const void *perf_bido_cgroup(void)
{
#ifdef CONFIG_CGROUP_PERF
	return task_css_check(current, perf_event_cgrp_id, true);
#else
	return NULL;
#endif
}

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

/* Is @addr in one of the maps of @tab? */
VISIBLE_IF_KUNIT bool perf_bido_table_covers(const struct perf_bido_table *tab,
					     unsigned long addr)
{
	unsigned int lo = 0, hi = tab->nr;

	while (lo < hi) {
		unsigned int mid = lo + (hi - lo) / 2;

		if (addr < tab->maps[mid].start)
			hi = mid;
		else if (addr >= tab->maps[mid].end)
			lo = mid + 1;
		else
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
 * Does @tab still describe current as the table was made: same address
 * space and program, no receiver started since (@gen), not expired?  Not
 * checked here: mm_lock_seq, which the caller compares.
 */
static bool perf_bido_table_fresh(const struct perf_bido_table *tab,
				  unsigned long gen)
{
	return tab->mm == current->mm &&
	       tab->exec_id == READ_ONCE(current->self_exec_id) &&
	       tab->gen == gen && ktime_get_mono_fast_ns() <= tab->expires;
}

/*
 * The cookie of the task's last record if that record can stand for
 * this sample, else 0.  It can when nothing it says may have changed: same
 * program, no VMA changed since its maps were looked up (mm_lock_seq), no
 * receiver started since, not expired, written to every receiver on this
 * CPU in the task's cgroup; and when its maps cover every user
 * address of the sample: where the task entered the kernel, the sampled
 * IP, the user callchain and the user branch addresses.  Reads only
 * current's own state: NMI-safe.
 */
static u64 perf_bido_reuse(struct perf_bido_task *bt,
			   struct perf_sample_data *data,
			   struct perf_event *event, struct pt_regs *regs)
{
	struct perf_bido_stash *stash = READ_ONCE(bt->stash);
	struct mm_struct *mm = current->mm;
	const struct perf_bido_table *tab;
	unsigned int seq;
	u64 cookie;

	if (!static_branch_likely(&perf_bido_reuse_on) || !stash)
		return 0;
	tab = &stash->table;

	/*
	 * The deferred work clears the cookie before it rewrites the table
	 * and sets it last; this sample interrupted that work or not at
	 * all, so the table does not change under it.
	 */
	cookie = READ_ONCE(tab->cookie);
	if (!cookie)
		return 0;
	barrier();

	if (!perf_bido_table_fresh(tab, atomic_long_read(&perf_bido_gen)) ||
	    !perf_bido_mm_seq(mm, &seq) || seq != tab->mm_seq)
		return 0;

	/*
	 * The record reached the receivers of the CPU and cgroup it was
	 * written in, and only those: per-CPU events of another CPU (perf
	 * record -C) or of another cgroup may not have it.
	 */
	if (tab->cpu != smp_processor_id() || tab->cgrp != perf_bido_cgroup())
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
	struct perf_bido_task *bt = &current->perf_bido;
	const struct perf_branch_stack *bs = NULL;
	u64 start = perf_bido_clock();
	unsigned long ip = 0;
	u64 cookie;

	data->defer_cookie = 0;

	if ((task && task != current) || !current->mm)
		return;

	/*
	 * With deferred callchains the user frames are not in the sample:
	 * only this entry's own record, from the same walk as its
	 * CALLCHAIN_DEFERRED, is known to cover them.
	 */
	cookie = event->attr.defer_callchain ? 0 :
		 perf_bido_reuse(bt, data, event, regs);
	if (cookie) {
		data->defer_cookie = cookie;
		perf_bido_count(samples, 1);
		perf_bido_count(reused, 1);
		perf_bido_count_time(sample_ns, start);
		return;
	}

	if (unwind_deferred_request(&perf_bido_unwind_work, &cookie) < 0)
		return;

	/*
	 * The record of this entry is out already: its work ran early (from
	 * get_signal(), say) and used the user registers as they were then.
	 * If they have changed since (a signal frame was set up), that record
	 * does not describe this sample: no cookie, rather than one whose
	 * record does not cover it.
	 */
	if (READ_ONCE(bt->done) == cookie) {
		struct perf_bido_stash *stash = READ_ONCE(bt->stash);

		if (stash && READ_ONCE(stash->done_ip) !=
			     instruction_pointer(task_pt_regs(current))) {
			perf_bido_count(late, 1);
			return;
		}
	}

	/*
	 * The first sample of an entry notes which program ran, so that
	 * the deferred work can tell whether an exec came in between, how
	 * far the address space's changes had got (odd while one is under
	 * way), and where the entry left user space.  A nested sample of
	 * the same entry writes the same values, or a later count, which
	 * can only hide a change the first sample saw begin.
	 */
	if (READ_ONCE(bt->cookie) != cookie) {
		unsigned int seq = 0;

		perf_bido_mm_seq(current->mm, &seq);
		WRITE_ONCE(bt->exec_id, READ_ONCE(current->self_exec_id));
		WRITE_ONCE(bt->entry_ip,
			   instruction_pointer(task_pt_regs(current)));
		WRITE_ONCE(bt->entry_seq, seq);
		WRITE_ONCE(bt->cookie, cookie);
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
	perf_bido_count(samples, 1);
	perf_bido_count_time(sample_ns, start);
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
 * Free @task's stash: @task is current, or exits.  A sample that comes in
 * later sees none; one that interrupted us before the xchg() is done with
 * it before we go on, on this CPU.
 */
static void perf_bido_free_stash(struct task_struct *task)
{
	struct perf_bido_stash *stash = xchg(&task->perf_bido.stash, NULL);

	if (stash) {
		atomic_long_dec(&perf_bido_nr_stashes);
		kfree(stash);
	}
}

/*
 * Make the task's stash when a sample of this entry found none, or when
 * @table: the table of its last record is to be kept.
 */
static void perf_bido_alloc_stash(struct perf_bido_task *bt, u64 cookie,
				  bool table)
{
	struct perf_bido_stash *stash;

	if (bt->stash || (READ_ONCE(bt->missed) != cookie && !table) ||
	    (current->flags & PF_EXITING))
		return;

	stash = kzalloc(sizeof(*stash), GFP_KERNEL);
	if (!stash)
		return;
	atomic_long_inc(&perf_bido_nr_stashes);
	/* Samples on this CPU see NULL or a zeroed stash */
	smp_store_release(&bt->stash, stash);

	/*
	 * The last receiver may have gone since the caller looked, and the
	 * sweep that followed passed this task when it had no stash yet
	 */
	if (!atomic_read(&nr_defer_output_events))
		perf_bido_free_stash(current);
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

/* ---- The build-ID cache ---- */

/*
 * 64 sets of 4 entries, each set with its own lock, taken only here in
 * task context (never from an interrupt) and never nested.  Round-robin
 * replacement within a set.
 */
#define PERF_BIDO_CACHE_SETS	64
#define PERF_BIDO_CACHE_WAYS	4

struct perf_bido_cache_entry {
	struct perf_bido_key	key;
	bool			valid;
	u8			build_id_size;
	u8			flags;
	u8			build_id[BUILD_ID_SIZE_MAX];
};

struct perf_bido_cache_set {
	spinlock_t			lock;	/* protects next and entry[] */
	unsigned int			next;
	struct perf_bido_cache_entry	entry[PERF_BIDO_CACHE_WAYS];
};

static struct perf_bido_cache_set perf_bido_cache[PERF_BIDO_CACHE_SETS];

/**
 * perf_bido_key_init - the cache key of a file, as it is now
 * @key: receives the key
 * @file: the file
 *
 * Identity: superblock, inode number and generation.  Not the device
 * number: anonymous ones (FUSE, NFS, overlayfs) and loop devices come
 * back for the next mount at once, and two images can hold different
 * files with the same inode number, size and times (reproducible builds
 * set the times).  A superblock cannot be mistaken for a later one at the
 * same address: perf_bido_forget_sb() drops its entries before it is
 * freed.  Version: size, mtime,
 * ctime and, where the filesystem keeps one, i_version.  A cache entry is
 * used only while all of them still match, so any write, truncate or
 * attribute change through the VFS makes it miss: write() and truncate()
 * change size or mtime/ctime (and i_version).  Stores through a shared
 * writable mapping change them only when a page is first made writable,
 * not for the stores after: a file mapped that way is never taken from
 * the cache (see perf_bido_build_id()).  The key
 * is taken before the file is parsed, so that a change during the parse
 * also makes the entry miss next time.  Entries are not removed: a miss
 * re-parses the file and replaces the entry of the same identity.
 */
VISIBLE_IF_KUNIT void perf_bido_key_init(struct perf_bido_key *key,
					 struct file *file)
{
	struct inode *inode = file_inode(file);

	memset(key, 0, sizeof(*key));
	key->sb = inode->i_sb;
	key->ino = inode->i_ino;
	key->generation = inode->i_generation;
	/* Marks it queried, so that the next change increments it */
	if (IS_I_VERSION(inode))
		key->version = inode_query_iversion(inode);
	key->size = i_size_read(inode);
	key->mtime = inode_get_mtime(inode);
	key->ctime = inode_get_ctime(inode);
}

static bool perf_bido_same_file(const struct perf_bido_key *a,
				const struct perf_bido_key *b)
{
	return a->sb == b->sb && a->ino == b->ino &&
	       a->generation == b->generation;
}

static bool perf_bido_same_version(const struct perf_bido_key *a,
				   const struct perf_bido_key *b)
{
	return a->version == b->version && a->size == b->size &&
	       timespec64_equal(&a->mtime, &b->mtime) &&
	       timespec64_equal(&a->ctime, &b->ctime);
}

static struct perf_bido_cache_set *perf_bido_cache_set(const struct perf_bido_key *key)
{
	u64 h = key->ino ^ ((u64)key->generation << 32);

	h ^= (unsigned long)key->sb;
	return &perf_bido_cache[hash_64(h, ilog2(PERF_BIDO_CACHE_SETS))];
}

/* Copy the cached build-ID of @key into @map; false if there is none */
VISIBLE_IF_KUNIT bool perf_bido_cache_lookup(const struct perf_bido_key *key,
					     struct perf_bido_map *map)
{
	struct perf_bido_cache_set *set = perf_bido_cache_set(key);
	struct perf_bido_cache_entry *e;
	bool found = false;

	spin_lock(&set->lock);
	for (e = set->entry; e < set->entry + PERF_BIDO_CACHE_WAYS; e++) {
		if (!e->valid || !perf_bido_same_file(&e->key, key) ||
		    !perf_bido_same_version(&e->key, key))
			continue;
		map->build_id_size = e->build_id_size;
		map->flags |= e->flags;
		memcpy(map->build_id, e->build_id, sizeof(map->build_id));
		found = true;
		break;
	}
	spin_unlock(&set->lock);
	return found;
}

static void perf_bido_cache_store(const struct perf_bido_key *key,
				  const struct perf_bido_map *map)
{
	struct perf_bido_cache_set *set = perf_bido_cache_set(key);
	struct perf_bido_cache_entry *e, *victim = NULL;

	spin_lock(&set->lock);
	/* An older version of the same file goes first */
	for (e = set->entry; e < set->entry + PERF_BIDO_CACHE_WAYS; e++) {
		if (e->valid && perf_bido_same_file(&e->key, key)) {
			victim = e;
			break;
		}
	}
	if (!victim) {
		victim = &set->entry[set->next];
		set->next = (set->next + 1) % PERF_BIDO_CACHE_WAYS;
	}

	victim->key = *key;
	victim->build_id_size = map->build_id_size;
	victim->flags = map->flags & PERF_BUILD_ID_OFFSET_MAP_NO_BUILD_ID;
	memcpy(victim->build_id, map->build_id, sizeof(victim->build_id));
	victim->valid = true;
	spin_unlock(&set->lock);
}

/**
 * perf_bido_forget_sb - drop the cached build-IDs of a superblock
 * @sb: the superblock, being shut down
 *
 * From generic_shutdown_super(): no file of @sb is open any more, so no
 * record that could store an entry for it is being built.  Afterwards
 * nothing in the cache names @sb, and a superblock allocated later at the
 * same address starts with no entries.
 *
 * Context: task context, may take the cache's spinlocks.
 */
void perf_bido_forget_sb(struct super_block *sb)
{
	struct perf_bido_cache_entry *e;
	unsigned int i;

	for (i = 0; i < PERF_BIDO_CACHE_SETS; i++) {
		struct perf_bido_cache_set *set = &perf_bido_cache[i];

		spin_lock(&set->lock);
		for (e = set->entry; e < set->entry + PERF_BIDO_CACHE_WAYS; e++)
			if (e->key.sb == sb)
				e->valid = false;
		spin_unlock(&set->lock);
	}
}

/*
 * Parse the build-ID of @file: from the page cache where the pages are
 * there (the mapped ones usually are), else by reading the file.  A read
 * that fails says nothing about the contents, though it may fail with
 * -EINVAL too (O_DIRECT, a filesystem that cannot read as asked): the
 * contents decide only once they are in the page cache, where a read
 * that worked left them.  -EFAULT: they are not.
 */
static int perf_bido_parse(struct file *file, unsigned char *build_id,
			   __u32 *size)
{
	int err;

	err = build_id_parse_file_nofault(file, build_id, size);
	if (err != -EFAULT)
		return err;
	err = build_id_parse_file(file, build_id, size);
	if (err != -EINVAL && err != -ERANGE && err != -EOVERFLOW)
		return err;
	return build_id_parse_file_nofault(file, build_id, size);
}

/*
 * The build-ID of @file into @map, from the cache or from the file.
 * Returns false when it may change without the file's version showing it:
 * while the file has a shared writable mapping, whose stores after the
 * first leave size and times alone, it is read every time.
 */
VISIBLE_IF_KUNIT bool perf_bido_build_id(struct file *file,
					 struct perf_bido_map *map)
{
	bool stable = !mapping_writably_mapped(file->f_mapping);
	struct perf_bido_key key;
	__u32 size = 0;
	int err;

	perf_bido_key_init(&key, file);
	if (stable && perf_bido_cache_lookup(&key, map)) {
		perf_bido_count(cache_hits, 1);
		return true;
	}

	/* A dying task's record is not worth a read */
	if (fatal_signal_pending(current)) {
		map->flags |= PERF_BUILD_ID_OFFSET_MAP_UNREADABLE;
		return stable;
	}

	perf_bido_count(parses, 1);
	err = perf_bido_parse(file, map->build_id, &size);
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
	default:		/* I/O error, signal, not read: next time */
		memset(map->build_id, 0, sizeof(map->build_id));
		map->flags |= PERF_BUILD_ID_OFFSET_MAP_UNREADABLE;
		return stable;
	}
	if (stable)
		perf_bido_cache_store(&key, map);
	return stable;
}

/*
 * Read the build-IDs of the files perf_bido_find_vmas() kept, and drop
 * their references.
 *
 * Context: task context, no locks held: may fault, sleep and do I/O.
 */
VISIBLE_IF_KUNIT void perf_bido_read_build_ids(struct perf_bido_resolve *res)
{
	unsigned int i;

	might_fault();

	for (i = 0; i < res->nr_maps; i++) {
		struct file *file = res->files[i];

		if (!file)
			continue;
		if (!perf_bido_build_id(file, &res->maps[i]))
			res->unstable = true;
		res->files[i] = NULL;
		fput(file);
	}
}

/* ---- Output ---- */

/*
 * @written and @lost count the receivers that got the record and those
 * whose buffer had no room; @cpu and @cgrp say where it was written.
 */
struct perf_bido_output {
	struct perf_bido_record		rec;
	const struct perf_bido_map	*maps;
	unsigned int			written;
	unsigned int			lost;
	int				cpu;
	const void			*cgrp;
};

static void perf_bido_output_event(struct perf_event *event, void *data)
{
	struct perf_bido_output *out = data;
	struct perf_bido_record rec = out->rec;
	struct perf_output_handle handle;
	struct perf_sample_data sample;
	u16 maps_size = rec.nr * sizeof(*out->maps);

	if (!event->attr.defer_output)
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
		perf_bido_count(no_room, 1);
		out->lost++;
		return;
	}
	perf_bido_count(written, 1);
	out->written++;

	rec.pid = perf_event_pid(event, current);
	rec.tid = perf_event_tid(event, current);

	perf_output_put(&handle, rec);
	__output_copy(&handle, out->maps, maps_size);
	perf_event__output_id_sample(event, &handle, &sample);

	perf_output_end(&handle);
}

/*
 * Write the record to every receiver that sees current now.  Returns true
 * when at least one got it and none lacked room, and says in @cpu and
 * @cgrp where that was: later samples may name the record only there.
 */
static bool perf_bido_emit(u64 cookie, u32 flags,
			   const struct perf_bido_map *maps, unsigned int nr,
			   int *cpu, const void **cgrp)
{
	struct perf_bido_output out = {
		.rec = {
			.cookie	= cookie,
			.nr	= nr,
			.flags	= flags,
		},
		.maps = maps,
	};

	/* Preemption off: the CPU whose side-band receivers are iterated */
	preempt_disable();
	out.cpu = smp_processor_id();
	out.cgrp = perf_bido_cgroup();
	perf_iterate_sb(perf_bido_output_event, &out, NULL);
	preempt_enable();

	if (cpu)
		*cpu = out.cpu;
	if (cgrp)
		*cgrp = out.cgrp;
	return out.written && !out.lost;
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
 * Add to the table being built the maps of @tab that it lacks, as room
 * under PERF_BIDO_REUSE_MAPS allows, so that a record covers the task's
 * working set and later samples that run elsewhere in it can still name
 * it.  Only for a table looked up at the same mm_lock_seq (same VMAs) and
 * whose build-IDs are read (no file reference left).  Returns how many
 * were added.
 */
VISIBLE_IF_KUNIT unsigned int perf_bido_table_merge(struct perf_bido_resolve *res,
						    const struct perf_bido_table *tab)
{
	unsigned int i, j, nr = res->nr_maps, added = 0;

	for (i = 0; i < tab->nr; i++) {
		const struct perf_bido_map *old = &tab->maps[i];
		bool have = false;

		if (res->nr_maps >= PERF_BIDO_REUSE_MAPS ||
		    res->nr_maps >= res->max_maps)
			break;
		for (j = 0; j < nr && !have; j++)
			have = res->maps[j].start == old->start;
		if (have)
			continue;
		res->maps[res->nr_maps] = *old;
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

	if (!res->looked_up || res->flags || res->unstable ||
	    res->nr_maps > PERF_BIDO_REUSE_MAPS)
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
static bool perf_bido_table_retire(struct perf_bido_table *tab,
				   unsigned long gen)
{
	bool live = READ_ONCE(tab->cookie) && perf_bido_table_fresh(tab, gen);

	WRITE_ONCE(tab->cookie, 0);
	barrier();
	return live;
}

/*
 * Keep the maps of the record just built for the task's later samples.
 * The cookie goes last: a sample that interrupts us sees 0 until then.
 */
static void perf_bido_table_save(struct perf_bido_table *tab,
				 const struct perf_bido_resolve *res, u64 cookie,
				 u64 expires, unsigned long gen, int cpu,
				 const void *cgrp)
{
	tab->mm = current->mm;
	tab->cpu = cpu;
	tab->cgrp = cgrp;
	tab->exec_id = current->self_exec_id;
	tab->mm_seq = res->mm_seq;
	tab->gen = gen;
	tab->expires = expires;
	tab->nr = res->nr_maps;
	memcpy(tab->maps, res->maps, res->nr_maps * sizeof(*res->maps));
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
	struct perf_bido_task *bt = &current->perf_bido;
	bool reuse = static_branch_likely(&perf_bido_reuse_on);
	unsigned long gen = atomic_long_read(&perf_bido_gen);
	struct perf_bido_table *tab = NULL;
	struct perf_bido_resolve res = {};
	u64 start = perf_bido_clock();
	bool live = false, delivered;
	unsigned long entry_ip;
	const void *cgrp;
	unsigned int nr;
	int cpu;

	/* Nobody to tell: only empty the stash, and make none */
	if (!atomic_read(&nr_defer_output_events)) {
		perf_bido_take_stash(bt, cookie, NULL, &res.flags);
		return;
	}

	if (bt->stash)
		live = perf_bido_table_retire(&bt->stash->table, gen);

	/* Before bt->done says that this entry's record is out */
	if (bt->stash)
		WRITE_ONCE(bt->stash->done_ip,
			   instruction_pointer(task_pt_regs(current)));

	nr = 2 + trace->nr + (bt->stash ? PERF_BIDO_STASH_ENTRIES : 0);
	if (perf_bido_alloc(&res, nr)) {
		perf_bido_take_stash(bt, cookie, NULL, &res.flags);
		perf_bido_emit(cookie, res.flags | PERF_BUILD_ID_OFFSET_F_TRUNCATED, NULL, 0,
			       NULL, NULL);
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
	perf_bido_alloc_stash(bt, cookie, reuse);
	if (bt->stash)
		WRITE_ONCE(bt->stash->done_ip, res.addrs[0]);
	if (reuse && bt->stash)
		tab = &bt->stash->table;

	/*
	 * The addresses are of the program that ran when the entry began;
	 * after an exec they mean nothing in the new mm.
	 */
	if (READ_ONCE(bt->cookie) != cookie ||
	    READ_ONCE(bt->exec_id) != current->self_exec_id) {
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
		perf_bido_read_build_ids(&res);
		/* Same VMAs as when the last table was made: keep its maps */
		if (tab && live && res.looked_up && !res.flags &&
		    tab->mm_seq == res.mm_seq)
			perf_bido_table_merge(&res, tab);
		else
			live = false;
	}

	delivered = perf_bido_emit(cookie, res.flags, res.maps, res.nr_maps,
				   &cpu, &cgrp);

	/*
	 * Only a record that every receiver it met got may stand for later
	 * samples.  A merged table keeps the age of its oldest build-IDs.
	 */
	if (tab && delivered && perf_bido_table_ok(&res))
		perf_bido_table_save(tab, &res, cookie,
				     live ? tab->expires :
				     ktime_get_mono_fast_ns() + PERF_BIDO_REUSE_NS,
				     gen, cpu, cgrp);
	kvfree(res.maps);

	perf_bido_count(records, 1);
	perf_bido_count(maps, res.nr_maps);
	if (res.flags & PERF_BUILD_ID_OFFSET_F_TRUNCATED)
		perf_bido_count(truncated, 1);
	if (res.flags & PERF_BUILD_ID_OFFSET_F_MM_CHANGED)
		perf_bido_count(mm_changed, 1);
	if (res.flags & PERF_BUILD_ID_OFFSET_F_MAPS_CHANGED)
		perf_bido_count(maps_changed, 1);
	perf_bido_count_time(record_ns, start);
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

/* From perf_event_init_task(): the child starts with the parent's copy */
void perf_bido_init_task(struct task_struct *child)
{
	memset(&child->perf_bido, 0, sizeof(child->perf_bido));
}

/*
 * From perf_event_exit_task(), on current, in do_exit() and when a
 * set-uid exec drops the task's events.  Samples that come in later see
 * no stash.
 */
void perf_bido_exit_task(struct task_struct *task)
{
	perf_bido_free_stash(task);
}

/*
 * Once the last receiving event is gone, the stashes (2 KiB each) and the
 * unwind caches serve nobody: on a host with 100k threads, a few hundred
 * MiB.  Each task frees its own, from a task_work, as only the task and
 * its own interrupts touch them; a task that never returns to user space
 * again keeps them until it exits.
 */
static void perf_bido_trim(struct callback_head *head)
{
	struct perf_bido_task *bt = container_of(head, struct perf_bido_task,
						trim);

	/* Off the list: the sweep may queue it again from here on */
	WRITE_ONCE(bt->trim_queued, 0);
	if (atomic_read(&nr_defer_output_events))
		return;
	perf_bido_free_stash(current);
	unwind_user_trim();
}

static void perf_bido_sweep_fn(struct work_struct *work)
{
	struct task_struct *g, *t;

	rcu_read_lock();
	for_each_process_thread(g, t) {
		struct perf_bido_task *bt = &t->perf_bido;

		/* A receiver came back: the tasks keep what they have */
		if (atomic_read(&nr_defer_output_events))
			break;
		if (!READ_ONCE(bt->stash) || cmpxchg(&bt->trim_queued, 0, 1))
			continue;
		init_task_work(&bt->trim, perf_bido_trim);
		/* Exiting: do_exit() frees the stash */
		if (task_work_add(t, &bt->trim, TWA_RESUME))
			WRITE_ONCE(bt->trim_queued, 0);
	}
	rcu_read_unlock();
}

static DECLARE_WORK(perf_bido_sweep, perf_bido_sweep_fn);

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
	unsigned int i;
	int ret;

	for (i = 0; i < PERF_BIDO_CACHE_SETS; i++)
		spin_lock_init(&perf_bido_cache[i].lock);

	ret = unwind_deferred_init(&perf_bido_unwind_work,
				   perf_bido_unwind_callback);
	/* Then every request fails and samples carry cookie 0 */
	WARN(ret, "perf: no deferred unwind for build-ID offsets: %d\n", ret);
}

/* ---- debugfs: perf_build_id_offset/{stats,timing,reuse} ---- */

#ifdef CONFIG_DEBUG_FS
static int perf_bido_stats_show(struct seq_file *m, void *v)
{
	struct perf_bido_stats sum = {};
	int cpu;

	for_each_possible_cpu(cpu) {
		const struct perf_bido_stats *st = per_cpu_ptr(&perf_bido_stats, cpu);

		sum.samples += READ_ONCE(st->samples);
		sum.sample_ns += READ_ONCE(st->sample_ns);
		sum.records += READ_ONCE(st->records);
		sum.record_ns += READ_ONCE(st->record_ns);
		sum.maps += READ_ONCE(st->maps);
		sum.cache_hits += READ_ONCE(st->cache_hits);
		sum.parses += READ_ONCE(st->parses);
		sum.truncated += READ_ONCE(st->truncated);
		sum.mm_changed += READ_ONCE(st->mm_changed);
		sum.maps_changed += READ_ONCE(st->maps_changed);
		sum.reused += READ_ONCE(st->reused);
		sum.written += READ_ONCE(st->written);
		sum.no_room += READ_ONCE(st->no_room);
		sum.late += READ_ONCE(st->late);
	}
	seq_printf(m, "samples %llu\nsample_ns %llu\nrecords %llu\n",
		   sum.samples, sum.sample_ns, sum.records);
	seq_printf(m, "record_ns %llu\nmaps %llu\ncache_hits %llu\n",
		   sum.record_ns, sum.maps, sum.cache_hits);
	seq_printf(m, "parses %llu\ntruncated %llu\nmm_changed %llu\n",
		   sum.parses, sum.truncated, sum.mm_changed);
	seq_printf(m, "reused %llu\nwritten %llu\nno_room %llu\nlate %llu\n",
		   sum.reused, sum.written, sum.no_room, sum.late);
	seq_printf(m, "maps_changed %llu\ngeneration %lu\nstashes %lu\n",
		   sum.maps_changed, atomic_long_read(&perf_bido_gen),
		   atomic_long_read(&perf_bido_nr_stashes));
	return 0;
}

static int perf_bido_stats_open(struct inode *inode, struct file *file)
{
	return single_open(file, perf_bido_stats_show, NULL);
}

/* Any write zeroes the counters (racing updates may survive) */
static ssize_t perf_bido_stats_write(struct file *file, const char __user *buf,
				     size_t count, loff_t *ppos)
{
	int cpu;

	for_each_possible_cpu(cpu)
		memset(per_cpu_ptr(&perf_bido_stats, cpu), 0,
		       sizeof(struct perf_bido_stats));
	return count;
}

static const struct file_operations perf_bido_stats_fops = {
	.owner		= THIS_MODULE,
	.open		= perf_bido_stats_open,
	.read		= seq_read,
	.write		= perf_bido_stats_write,
	.llseek		= seq_lseek,
	.release	= single_release,
};

static int perf_bido_timing_get(void *data, u64 *val)
{
	*val = static_key_enabled(&perf_bido_timed);
	return 0;
}

static int perf_bido_timing_set(void *data, u64 val)
{
	if (val)
		static_branch_enable(&perf_bido_timed);
	else
		static_branch_disable(&perf_bido_timed);
	return 0;
}

DEFINE_DEBUGFS_ATTRIBUTE(perf_bido_timing_fops, perf_bido_timing_get,
			 perf_bido_timing_set, "%llu\n");

static int perf_bido_reuse_get(void *data, u64 *val)
{
	*val = static_key_enabled(&perf_bido_reuse_on);
	return 0;
}

/* Off: every sample asks for a record of its own entry */
static int perf_bido_reuse_set(void *data, u64 val)
{
	if (val) {
		static_branch_enable(&perf_bido_reuse_on);
	} else {
		static_branch_disable(&perf_bido_reuse_on);
		/* Tables made before must not come back when it is on again */
		perf_bido_receivers_changed();
	}
	return 0;
}

DEFINE_DEBUGFS_ATTRIBUTE(perf_bido_reuse_fops, perf_bido_reuse_get,
			 perf_bido_reuse_set, "%llu\n");

static int __init perf_bido_debugfs_init(void)
{
	struct dentry *dir = debugfs_create_dir("perf_build_id_offset", NULL);

	debugfs_create_file("stats", 0600, dir, NULL, &perf_bido_stats_fops);
	debugfs_create_file_unsafe("timing", 0600, dir, NULL,
				   &perf_bido_timing_fops);
	debugfs_create_file_unsafe("reuse", 0600, dir, NULL,
				   &perf_bido_reuse_fops);
	return 0;
}
late_initcall(perf_bido_debugfs_init);
#endif /* CONFIG_DEBUG_FS */
