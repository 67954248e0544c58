// SPDX-License-Identifier: GPL-2.0
/*
 * PERF_SAMPLE_BUILD_ID_OFFSET: the record builder.
 *
 * perf_bido_unwind_callback() runs once per kernel entry of a sampled
 * task, in that task before it returns to user space (or while it
 * exits), where faults and sleeping are fine.  It collects the entry's
 * user addresses (the deferred unwinder's walk, the stash the samples
 * filled, the words of the user stacks they dumped), looks up the VMAs
 * that hold them under mmap_lock, reads the build-IDs of their files
 * once the lock is dropped (build_id_offset_file.c), and writes one
 * PERF_RECORD_BUILD_ID_OFFSET to the receivers of the sessions whose
 * samples named the entry.  Then it keeps the ranges of the maps of that
 * record that hold the most of its addresses in the task's table, for
 * the reuse that the sampling side (build_id_offset.c) checks.  An entry
 * whose addresses that table covers, in an address space that has not
 * changed since, gets a short record that names the last one instead
 * (PERF_BUILD_ID_OFFSET_F_SAME_MAPS): no VMA lookup, no file read.
 */

#include <linux/atomic.h>
#include <linux/dcache.h>
#include <linux/file.h>
#include <linux/fs.h>
#include <linux/minmax.h>
#include <linux/mm.h>
#include <linux/mmap_lock.h>
#include <linux/perf_event.h>
#include <linux/ptrace.h>
#include <linux/sched.h>
#include <linux/sched/task_stack.h>
#include <linux/secretmem.h>
#include <linux/slab.h>
#include <linux/sort.h>
#include <linux/uaccess.h>
#include <linux/unwind_deferred.h>
#include <linux/unwind_user.h>
#include <kunit/visibility.h>

#include "internal.h"
#include "build_id_offset.h"

#include <trace/events/perf_build_id_offset.h>

/* ---- The entry's addresses and their VMAs ---- */

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
	 * Pairs with the READ_ONCE(bt->done) at the start of
	 * perf_bido_stash_sample(), which has no barrier of its own: the only
	 * other party is an interrupt of current on this CPU, which runs
	 * whole between two of our instructions, so keeping the compiler from
	 * sinking the store below the reads of the stash is enough.
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
void perf_bido_free_stash(struct task_struct *task)
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
			/*
			 * Samples on this CPU see NULL or a zeroed stash:
			 * pairs with the READ_ONCE(bt->stash) of
			 * perf_bido_stash_sample(), whose stores through the
			 * pointer depend on it
			 */
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

/* ---- Output ---- */

/*
 * @tail: what follows the fixed part, @tail_size bytes of it: maps[], or
 * same_as; @to: the sessions to write to; @written and @lost: bit i for a
 * receiver of session @to->id[i] that got the record, or had no room for
 * it; @nr_written and @nr_lost: receivers so, of any session.
 */
struct perf_bido_output {
	struct perf_bido_record		rec;
	const void			*tail;
	u16				tail_size;
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
				sizeof(rec) + out->tail_size, event);
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
	__output_copy(&handle, out->tail, out->tail_size);
	perf_event__output_id_sample(event, &handle, &sample);

	perf_output_end(&handle);
}

/*
 * Write @out to the receivers of the sessions in out->to that see current
 * now.  Returns a mask of the sessions of out->to->id whose receivers got
 * it, none of them lacking room: their later samples may name it.
 */
static unsigned long perf_bido_write(struct perf_bido_output *out)
{
	perf_iterate_sb(perf_bido_output_event, out, NULL);
	return out->written & ~out->lost & (BIT(PERF_BIDO_SESSIONS) - 1);
}

/*
 * Write a record with @nr @maps; @parsed: build-IDs read for it, for the
 * tracepoint.  Returns what perf_bido_write() does.
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
		.tail = maps,
		.tail_size = nr * sizeof(*maps),
		.to = to,
	};
	unsigned long delivered = perf_bido_write(&out);

	if (trace_perf_bido_record_enabled()) {
		unsigned int i, unreadable = 0;

		for (i = 0; i < nr; i++)
			unreadable += !!(maps[i].flags &
					 PERF_BUILD_ID_OFFSET_MAP_UNREADABLE);
		trace_perf_bido_record(cookie, nr, flags, parsed, unreadable,
				       out.nr_written, out.nr_lost);
	}
	return delivered;
}

/*
 * Write a record that names the task's last record, @same_as, instead of
 * maps: PERF_BUILD_ID_OFFSET_F_SAME_MAPS.  Returns what perf_bido_write()
 * does.
 */
static unsigned long perf_bido_emit_same(u64 cookie, u64 same_as,
					 const struct perf_bido_sessions *to)
{
	struct perf_bido_output out = {
		.rec = {
			.cookie	= cookie,
			.flags	= PERF_BUILD_ID_OFFSET_F_SAME_MAPS,
		},
		.tail = &same_as,
		.tail_size = sizeof(same_as),
		.to = to,
	};
	unsigned long delivered = perf_bido_write(&out);

	trace_perf_bido_record(cookie, 0, out.rec.flags, 0, 0, out.nr_written,
			       out.nr_lost);
	return delivered;
}

/*
 * Room for the addresses of an entry, @nr, and for those of the kept maps
 * perf_bido_table_carried() may add.  A few hundred bytes at most but for
 * the rare deep stack: kvmalloc().
 */
static int perf_bido_alloc_addrs(struct perf_bido_resolve *res,
				 unsigned int nr)
{
	res->addrs = kvmalloc_array(nr + PERF_BIDO_TABLE_MAPS,
				    sizeof(*res->addrs), GFP_KERNEL);
	return res->addrs ? 0 : -ENOMEM;
}

/*
 * Room for the maps of a record that lists them, in one buffer:
 * maps[max_maps], then files[max_maps].  Each address is in one map at
 * most.  A record that names the last one needs none of it.
 */
static int perf_bido_alloc_maps(struct perf_bido_resolve *res)
{
	unsigned int max_maps = min_t(unsigned int, res->nr_addrs,
				       PERF_BIDO_MAX_MAPS);
	void *buf;

	buf = kvmalloc_array(max_maps, sizeof(*res->maps) + sizeof(*res->files),
			     GFP_KERNEL);
	if (!buf)
		return -ENOMEM;

	res->maps = buf;
	res->files = buf + max_maps * sizeof(*res->maps);
	res->max_maps = max_maps;
	return 0;
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
 * sample must never name a record older than the task's last one
 */
static void perf_bido_table_retire(struct perf_bido_table *tab)
{
	WRITE_ONCE(tab->cookie, 0);
	/*
	 * No cookie before the table is rewritten: pairs with the barrier()
	 * after the READ_ONCE(tab->cookie) in perf_bido_reuse()
	 */
	barrier();
}

/*
 * The task's table with room for @nr maps, at most PERF_BIDO_TABLE_MAPS:
 * the one it has if that is large enough, else one sized to the kmalloc
 * bucket @nr needs (64 bytes for one map, 96 for two or three, 128 for
 * four or five), which replaces it.  Whatever table a sample that interrupts us finds has cookie 0
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
	 * one that read the old pointer is done with it before we go on:
	 * the xchg() pairs with the READ_ONCE(bt->table) of perf_bido_reuse()
	 */
	old = xchg(&bt->table, tab);
	if (old) {
		trace_perf_bido_state_free(old, true, perf_bido_table_bytes(old));
		kfree(old);
	}
	return tab;
}

/*
 * Which maps of the record just built the table keeps: at most
 * PERF_BIDO_TABLE_MAPS, those that hold the most of res->addrs (sorted,
 * unique), the first of equals.  Their indexes in res->maps go to @pick,
 * in the order of res->maps (so by start); returns how many.  Each is
 * kept whole, its range exactly, so a sample whose addresses all fall in
 * kept maps names a record that resolves them.
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
	/* Back in the order of start */
	for (i = 1; i < n; i++)
		for (k = i; k > 0 && pick[k - 1] > pick[k]; k--)
			swap(pick[k - 1], pick[k]);
	return n;
}

/* Copy the ranges of the maps @pick of the record into @tab */
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
		kept->end = map->end;
	}
	tab->nr = nr;
	tab->used = 0;
}

/*
 * The kept maps of the task's last record that an address of a later
 * sample or entry fell in (see perf_bido_table_covers()) go into the
 * record being built too: one address of each goes to @addrs (room for
 * PERF_BIDO_TABLE_MAPS); returns how many.  A task whose entries
 * alternate between code paths (a loop in a library, a system call from
 * elsewhere) so gets a table that covers both, and its later entries name
 * it.  A kept map nothing used since it was kept stays out: a task that
 * keeps moving to other files gets no larger records.  Only while the
 * table describes the address space, so each address is still in the map
 * whose range the table holds.
 */
VISIBLE_IF_KUNIT unsigned int
perf_bido_table_carried(const struct perf_bido_table *tab, unsigned long *addrs)
{
	u8 used = READ_ONCE(tab->used);
	unsigned int i, nr = 0;

	if (!used || !perf_bido_table_fresh(tab))
		return 0;
	for (i = 0; i < tab->nr; i++)
		if (used & BIT(i))
			addrs[nr++] = tab->maps[i].start;
	return nr;
}

/*
 * Make the table stand for the record of entry @cookie, for the sessions
 * of @to in @delivered (see perf_bido_emit()): a record just built from
 * its maps, or one that named the record it kept.  The cookie goes last:
 * a sample that interrupts us sees 0 until then.
 */
static void perf_bido_table_publish(struct perf_bido_table *tab, u64 cookie,
				   const struct perf_bido_sessions *to,
				   unsigned long delivered)
{
	unsigned int i;

	for (i = 0; i < PERF_BIDO_SESSIONS; i++)
		tab->sessions[i] = delivered & BIT(i) ? to->id[i] : NULL;
	/*
	 * The table, then its cookie: pairs with the barrier() after the
	 * READ_ONCE(tab->cookie) in perf_bido_reuse()
	 */
	barrier();
	WRITE_ONCE(tab->cookie, cookie);
}

/*
 * Keep the ranges of the maps of the record just built that hold the
 * most of its addresses, for the later samples of the sessions of @to in @delivered
 * (see perf_bido_emit()).  The cookie goes last: a sample that interrupts
 * us sees 0 until then.
 */
static void perf_bido_table_keep(struct perf_bido_task *bt,
				 const struct perf_bido_resolve *res, u64 cookie,
				 const struct perf_bido_sessions *to,
				 unsigned long delivered)
{
	unsigned int pick[PERF_BIDO_TABLE_MAPS], nr;
	struct perf_bido_table *tab;

	nr = perf_bido_table_pick(res, pick);
	tab = nr ? perf_bido_table_room(bt, nr) : NULL;
	if (!tab)
		return;

	perf_bido_table_fill(tab, res, pick, nr);
	tab->mm = current->mm;
	tab->exec_id = current->self_exec_id;
	tab->mm_seq = res->mm_seq;
	perf_bido_table_publish(tab, cookie, to, delivered);
}

/*
 * Can the record of entry @cookie name the task's last record instead of
 * listing maps?  When that record's table is still good (see
 * perf_bido_reuse(): same mm and program, no VMA changed since its maps
 * were looked up), every session the entry's record goes to got it, and
 * the ranges kept of it cover every address the entry collected.  Then
 * that record resolves them all, as it does a sample that names it.
 */
static bool perf_bido_same_maps(const struct perf_bido_task *bt, u64 cookie,
				const struct perf_bido_resolve *res,
				const struct perf_bido_sessions *to)
{
	struct perf_bido_table *tab = bt->table;
	unsigned int i;

	if (!tab || res->flags || to->all || READ_ONCE(bt->cookie) != cookie)
		return false;
	if (!perf_bido_table_fresh(tab))
		return false;
	for (i = 0; i < PERF_BIDO_SESSIONS; i++)
		if (to->id[i] && !perf_bido_has_session(tab->sessions, to->id[i]))
			return false;
	/* Not sorted yet: kernel addresses and zeroes are dropped unseen */
	for (i = 0; i < res->nr_addrs; i++) {
		unsigned long addr = res->addrs[i];

		if (addr && addr < TASK_SIZE && !perf_bido_table_covers(tab, addr))
			return false;
	}
	return true;
}

/*
 * Collect the user addresses of entry @cookie in res->addrs, which has
 * room for them (see perf_bido_unwind_callback()): where the task is,
 * where the entry's samples saw it, the deferred unwinder's walk of its
 * stack, its stash and the words of the user stack its samples dumped.
 */
static void perf_bido_collect(struct perf_bido_task *bt, u64 cookie,
			      const struct unwind_stacktrace *trace,
			      u32 stack_bytes, struct perf_bido_resolve *res)
{
	unsigned long entry_ip;

	/* The user IP even if the walk failed (it starts there otherwise) */
	res->addrs[res->nr_addrs++] = instruction_pointer(task_pt_regs(current));
	/*
	 * And the one the entry's samples saw, where something rewrote the
	 * registers since: a signal frame set up after the work was asked
	 * for (the work then runs after setup_rt_frame() and walks from the
	 * handler), rt_sigreturn() restoring the interrupted registers.
	 * Their callers are on both walks; that IP is only here.
	 */
	entry_ip = READ_ONCE(bt->entry_ip);
	if (READ_ONCE(bt->cookie) == cookie && entry_ip != res->addrs[0])
		res->addrs[res->nr_addrs++] = entry_ip;
	if (trace->nr)
		memcpy(res->addrs + res->nr_addrs, trace->entries,
		       trace->nr * sizeof(*res->addrs));
	res->nr_addrs += trace->nr;
	res->nr_addrs += perf_bido_take_stash(bt, cookie,
					     res->addrs + res->nr_addrs,
					     &res->flags);
	res->nr_addrs += perf_bido_stack_words(res->addrs + res->nr_addrs,
					       stack_bytes);
}

/*
 * Look up in current's mm the maps that hold the addresses of entry
 * @cookie, and their build-IDs.  @exec: the task exec()ed since the
 * entry's first sample.
 */
static void perf_bido_look_up(struct perf_bido_task *bt, u64 cookie,
			      bool exec, struct perf_bido_resolve *res)
{
	/*
	 * The addresses are of the program that ran when the entry began;
	 * after an exec they mean nothing in the new mm.
	 */
	if (READ_ONCE(bt->cookie) != cookie || exec) {
		res->flags |= PERF_BUILD_ID_OFFSET_F_MM_CHANGED;
		return;
	}
	if (!current->mm)
		return;

	res->nr_addrs = perf_bido_sort_addrs(res->addrs, res->nr_addrs);
	perf_bido_find_vmas(current->mm, res);
	/*
	 * A mapping was made, changed or removed since the entry's first
	 * sample, by another thread or by the entry itself (a sampled
	 * mmap()): the maps are as they are now.
	 */
	if (res->looked_up && READ_ONCE(bt->entry_seq) != res->mm_seq)
		res->flags |= PERF_BUILD_ID_OFFSET_F_MAPS_CHANGED;
	perf_bido_read_build_ids(res);
}

/**
 * perf_bido_unwind_callback - build and write the record of an entry
 * @work: perf_bido_unwind_work, the one unwind_work of perf
 * @trace: the deferred unwinder's walk of current's user stack
 * @cookie: the entry
 *
 * Context: current, in task context before it returns to user space or
 * in do_exit() with its mm; no locks held.
 */
void perf_bido_unwind_callback(struct unwind_work *work,
			       struct unwind_stacktrace *trace, u64 cookie)
{
	struct perf_bido_resolve res = {};
	struct perf_bido_sessions to;
	unsigned long delivered;
	struct perf_bido_task *bt;
	unsigned int nr;
	u64 last = 0;
	bool exec;
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

	if (bt->table) {
		last = READ_ONCE(bt->table->cookie);
		perf_bido_table_retire(bt->table);
	}

	/* Not before the entry was closed: no sample raises it after that */
	stack_bytes = READ_ONCE(bt->stack_bytes);
	if (READ_ONCE(bt->cookie) != cookie)
		stack_bytes = 0;
	nr = 2 + trace->nr + (bt->stash ? PERF_BIDO_STASH_ENTRIES : 0) +
	     stack_bytes / sizeof(u32);
	if (perf_bido_alloc_addrs(&res, nr)) {
		perf_bido_take_stash(bt, cookie, NULL, &res.flags);
		perf_bido_emit(cookie, res.flags | PERF_BUILD_ID_OFFSET_F_TRUNCATED,
			       NULL, 0, 0, &to);
		return;
	}

	perf_bido_collect(bt, cookie, trace, stack_bytes, &res);
	/* May free the table too: read bt->table only after it */
	perf_bido_alloc_stash(bt);

	/* The steady state: nothing changed, the last record says it all */
	if (last && !exec && perf_bido_same_maps(bt, cookie, &res, &to)) {
		delivered = perf_bido_emit_same(cookie, last, &to);
		if (delivered)
			perf_bido_table_publish(bt->table, cookie, &to,
						delivered);
		kvfree(res.addrs);
		return;
	}

	if (last && !exec && bt->table)
		res.nr_addrs += perf_bido_table_carried(bt->table,
							res.addrs + res.nr_addrs);
	if (perf_bido_alloc_maps(&res)) {
		kvfree(res.addrs);
		perf_bido_emit(cookie, res.flags | PERF_BUILD_ID_OFFSET_F_TRUNCATED,
			       NULL, 0, 0, &to);
		return;
	}
	perf_bido_look_up(bt, cookie, exec, &res);

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
	kvfree(res.addrs);
}
