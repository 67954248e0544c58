// SPDX-License-Identifier: GPL-2.0
/*
 * PERF_SAMPLE_BUILD_ID_OFFSET: user addresses as (ELF build-ID, file offset)
 *
 * A sample with this bit asks the deferred unwinder for a callback before the
 * task returns to user space, and carries the cookie of that kernel entry.
 * The callback runs in the task, where it may fault and sleep, and writes one
 * PERF_RECORD_BUILD_ID_OFFSET per entry: the VMAs that cover the frames of the
 * entry's user stack walk (the same walk, and the same cookie, as perf's
 * deferred callchains), plus the user addresses that only the samples saw:
 * precise IPs, branch stacks and the code addresses in dumped user stacks.
 * The sampling side keeps those in a small per-task stash, allocated by the
 * first callback of the task.
 *
 * The sampling side (NMI) touches no VMA and no file, allocates nothing and
 * takes no lock.  The callback reads build-IDs from the page cache only, after
 * dropping mmap_lock, so the task never waits on a file system for them.
 */

#include <linux/buildid.h>
#include <linux/fs.h>
#include <linux/mm.h>
#include <linux/mmap_lock.h>
#include <linux/perf_event.h>
#include <linux/sched/task_stack.h>
#include <linux/secretmem.h>
#include <linux/slab.h>
#include <linux/sort.h>
#include <linux/uaccess.h>
#include <linux/unwind_deferred.h>
#include <linux/unaligned.h>
#include <linux/unwind_user.h>
#include <kunit/visibility.h>

#include "build_id_offset.h"

/* At most this many maps per record (12 KiB of maps[]) */
#define PERF_BIDO_MAX_MAPS	256

/* Set in a page-aligned address: it came from a dumped user stack */
#define PERF_BIDO_STACK_WORD	1UL

static_assert(sizeof(struct perf_build_id_stash) <= 512);
static_assert(sizeof(struct perf_build_id_offset_map) == 48);

static struct unwind_work perf_bido_work;

/*
 * Moves when a receiver appears: a new reader has none of the records
 * written before, so no sample may name them any more.
 */
static atomic_t perf_bido_generation;

/* One stash per sampled task: a cache of its own shows in /proc/slabinfo */
static struct kmem_cache *perf_bido_stash_cache __ro_after_init;

/*
 * Keep the page of @addr; false if the stash is full.  Only pages matter:
 * VMAs are made of whole pages.
 */
VISIBLE_IF_KUNIT bool perf_bido_stash_add(struct perf_build_id_stash *st,
					  unsigned long addr)
{
	unsigned long page = addr & PAGE_MASK;
	unsigned int i;

	if (!addr || addr >= TASK_SIZE)
		return true;
	for (i = 0; i < st->nr; i++) {
		if (st->addrs[i] == page)
			return true;
	}
	if (st->nr == ARRAY_SIZE(st->addrs))
		return false;
	st->addrs[st->nr++] = page;
	return true;
}
EXPORT_SYMBOL_IF_KUNIT(perf_bido_stash_add);

/*
 * Keep the addresses of @data that the walk of the user stack may miss.
 * Return false if they cannot be kept: no stash yet, a nested sample, or the
 * entry's record is already written.
 */
static bool perf_bido_stash_sample(struct perf_sample_data *data, u64 cookie)
{
	struct perf_build_id_stash *st = READ_ONCE(current->perf_build_id_stash);
	struct perf_branch_stack *br = NULL;
	unsigned long user_ip;
	u64 stack = 0, i;
	bool ok = true, precise;

	/* The walk starts at the user IP the task returns to */
	user_ip = instruction_pointer(task_pt_regs(current));
	precise = (data->sample_flags & PERF_SAMPLE_IP) && data->ip != user_ip &&
		  data->ip < TASK_SIZE;
	if (data->sample_flags & PERF_SAMPLE_BRANCH_STACK)
		br = data->br_stack;
	if (data->sample_flags & PERF_SAMPLE_STACK_USER)
		stack = data->stack_user_size;
	if (!precise && !(br && br->nr) && !stack)
		return true;

	if (!st || cmpxchg(&st->busy, 0, 1))
		return false;
	if (st->done == cookie) {
		ok = false;
		goto out;
	}
	if (st->cookie != cookie) {
		st->cookie = cookie;
		st->nr = 0;
		st->stack_bytes = 0;
		st->dropped = false;
	}
	if (precise && !perf_bido_stash_add(st, data->ip))
		st->dropped = true;
	for (i = 0; br && i < br->nr; i++) {
		if (!perf_bido_stash_add(st, br->entries[i].from) ||
		    !perf_bido_stash_add(st, br->entries[i].to))
			st->dropped = true;
	}
	st->stack_bytes = max_t(u64, st->stack_bytes, stack);
out:
	/* Pairs with the cmpxchg() of the next sample, or of the callback */
	smp_store_release(&st->busy, 0);
	return ok;
}

/* Is @addr in a VMA of the task's last record?  Set that VMA's bit in @hit */
static bool perf_bido_rec_covers(const struct perf_build_id_stash *st,
				 unsigned long addr, u16 *hit)
{
	unsigned int i;

	for (i = 0; i < st->rec_nr; i++) {
		if (addr < st->vmas[i].start)
			break;
		if (addr < st->vmas[i].end) {
			*hit |= BIT(i);
			return true;
		}
	}
	return false;
}

/*
 * Whether the task's last record still describes its VMAs and reached the
 * receivers that see this CPU.  Context: any, NMI included; it reads the
 * mm's sequence count, it takes no lock.
 */
static bool perf_bido_rec_valid(const struct perf_build_id_stash *st,
				unsigned int cpu)
{
	struct mm_struct *mm = current->mm;
	unsigned int seq;

	return st->rec_nr && st->rec_mm == mm && st->rec_cpu == cpu &&
	       st->rec_gen == (unsigned int)atomic_read(&perf_bido_generation) &&
	       mmap_lock_speculate_try_begin(mm, &seq) && seq == st->rec_seq;
}

/* Are the user frames of @cc in the last record?  No if they are deferred */
VISIBLE_IF_KUNIT bool
perf_bido_rec_covers_callchain(const struct perf_build_id_stash *st,
			       const struct perf_callchain_entry *cc, u16 *hit)
{
	bool user = false;
	u64 i;

	for (i = 0; i < cc->nr; i++) {
		u64 ip = cc->ip[i];

		if (ip >= PERF_CONTEXT_MAX) {
			if (ip == PERF_CONTEXT_USER_DEFERRED)
				return false;
			user = ip == PERF_CONTEXT_USER;
		} else if (user && !perf_bido_rec_covers(st, ip, hit)) {
			return false;
		}
	}
	return true;
}
EXPORT_SYMBOL_IF_KUNIT(perf_bido_rec_covers_callchain);

/*
 * The cookie of the task's last record if that record covers every user
 * address of the sample, else 0.  Only a sample that carries all of them
 * can tell: an in-interrupt callchain or none, no user stack dump.
 */
static u64 perf_bido_reuse(struct perf_sample_data *data)
{
	struct perf_build_id_stash *st = READ_ONCE(current->perf_build_id_stash);
	struct perf_branch_stack *br = NULL;
	u64 cookie = 0, i;
	u16 hit = 0;
	bool ok;

	if (!st || !READ_ONCE(st->rec_nr))
		return 0;
	if ((data->sample_flags & PERF_SAMPLE_STACK_USER) && data->stack_user_size)
		return 0;
	if (data->sample_flags & PERF_SAMPLE_BRANCH_STACK)
		br = data->br_stack;
	if (cmpxchg(&st->busy, 0, 1))
		return 0;

	/* The IP the task returns to: where the deferred walk would start */
	ok = perf_bido_rec_valid(st, smp_processor_id()) &&
	     perf_bido_rec_covers(st, instruction_pointer(task_pt_regs(current)), &hit);
	if (ok && (data->sample_flags & PERF_SAMPLE_IP) && data->ip < TASK_SIZE)
		ok = perf_bido_rec_covers(st, data->ip, &hit);
	if (ok && (data->sample_flags & PERF_SAMPLE_CALLCHAIN) && data->callchain)
		ok = perf_bido_rec_covers_callchain(st, data->callchain, &hit);
	for (i = 0; ok && br && i < br->nr; i++) {
		if ((br->entries[i].from < TASK_SIZE &&
		     !perf_bido_rec_covers(st, br->entries[i].from, &hit)) ||
		    (br->entries[i].to < TASK_SIZE &&
		     !perf_bido_rec_covers(st, br->entries[i].to, &hit)))
			ok = false;
	}
	if (ok) {
		cookie = st->rec_cookie;
		st->rec_hit |= hit;
	}
	/* Pairs with the cmpxchg() of the next sample, or of the callback */
	smp_store_release(&st->busy, 0);
	return cookie;
}

/**
 * perf_build_id_offset_sample - the cookie of a PERF_SAMPLE_BUILD_ID_OFFSET sample
 * @event: the sampling event
 * @data: the sample, with its IP, branch stack and user stack size
 *
 * Context: any, NMI included.
 * Return: the cookie of the record that covers the sample's user addresses:
 * the task's last record, or the one its entry will write; 0 if none will.
 */
u64 perf_build_id_offset_sample(struct perf_event *event,
				struct perf_sample_data *data)
{
	u64 cookie;

	if (!is_user_task(current) || !current->mm)
		return 0;
	/* A software event may count for another task than current */
	if (event->ctx->task && event->ctx->task != current)
		return 0;
	cookie = perf_bido_reuse(data);
	if (cookie)
		return cookie;
	if (unwind_deferred_request(&perf_bido_work, &cookie) < 0)
		return 0;
	return perf_bido_stash_sample(data, cookie) ? cookie : 0;
}

/**
 * perf_build_id_offset_exec - note that the task exec()ed in this entry
 *
 * A record of this entry would look the old image's addresses up in the new
 * address space: it says MM_CHANGED instead.
 *
 * Context: task context, from perf_event_exec().
 */
void perf_build_id_offset_exec(void)
{
	struct perf_build_id_stash *st = current->perf_build_id_stash;
	u64 cookie = current->unwind_info.id.id;

	/* The new image's samples may not name the old image's record */
	if (st)
		WRITE_ONCE(st->rec_nr, 0);
	/* No deferred unwind was asked for in this entry */
	if (!cookie)
		return;
	if (!st) {
		/* Small, and nothing else can stop a wrong record */
		st = kmem_cache_zalloc(perf_bido_stash_cache,
				       GFP_KERNEL | __GFP_NOFAIL);
		WRITE_ONCE(current->perf_build_id_stash, st);
	}
	st->exec = cookie;
}

/**
 * perf_build_id_offset_receiver - a receiver of the records appears
 * @event: an event being created or enabled
 *
 * It has none of the records written so far: from now on, no sample names
 * one of them.
 */
void perf_build_id_offset_receiver(struct perf_event *event)
{
	if (event->attr.defer_output &&
	    (event->attr.sample_type & PERF_SAMPLE_BUILD_ID_OFFSET))
		atomic_inc(&perf_bido_generation);
}

/* Context: the task is dead, nothing samples it any more. */
void perf_build_id_offset_free_task(struct task_struct *task)
{
	if (task->perf_build_id_stash)
		kmem_cache_free(perf_bido_stash_cache, task->perf_build_id_stash);
	task->perf_build_id_stash = NULL;
}

static int perf_bido_cmp(const void *a, const void *b)
{
	unsigned long x = *(const unsigned long *)a;
	unsigned long y = *(const unsigned long *)b;

	return x < y ? -1 : x > y;
}

/*
 * Sort @addrs (pages, some with PERF_BIDO_STACK_WORD) and keep each page
 * once; a page keeps PERF_BIDO_STACK_WORD only if every address in it was a
 * stack word.  Return the new count.
 */
VISIBLE_IF_KUNIT unsigned int perf_bido_unique_pages(unsigned long *addrs,
						     unsigned int nr)
{
	unsigned int i, n = 0;

	sort(addrs, nr, sizeof(*addrs), perf_bido_cmp, NULL);
	for (i = 0; i < nr; i++) {
		if (n && (addrs[n - 1] & PAGE_MASK) == (addrs[i] & PAGE_MASK))
			addrs[n - 1] &= addrs[i];
		else
			addrs[n++] = addrs[i];
	}
	return n;
}
EXPORT_SYMBOL_IF_KUNIT(perf_bido_unique_pages);

/* The pages of the code addresses in the first @bytes of the user stack */
static unsigned int perf_bido_stack_words(unsigned long *addrs, u16 bytes)
{
	struct pt_regs *regs = task_pt_regs(current);
	unsigned long sp = user_stack_pointer(regs), word;
	int ws = unwind_user_word_size(regs);
	unsigned int off, n = 0;
	u8 chunk[128];

	if (ws != 4 && ws != 8)
		return 0;
	for (off = 0; off < bytes; off += sizeof(chunk)) {
		unsigned int len = min_t(unsigned int, sizeof(chunk), bytes - off);
		unsigned int i;

		if (copy_from_user(chunk, (void __user *)(sp + off), len))
			break;
		for (i = 0; i + ws <= len; i += ws) {
			word = ws == 8 ? get_unaligned((u64 *)(chunk + i)) :
					 get_unaligned((u32 *)(chunk + i));
			if (word >= mmap_min_addr && word < TASK_SIZE)
				addrs[n++] = (word & PAGE_MASK) | PERF_BIDO_STACK_WORD;
		}
	}
	return n;
}

static bool perf_bido_vma_is_vdso(struct vm_area_struct *vma)
{
	const char *name;

	if (!vma->vm_ops || !vma->vm_ops->name)
		return false;
	name = vma->vm_ops->name(vma);
	return name && !strcmp(name, "[vdso]");
}

/*
 * Describe @vma in @map; return the file whose build-ID is to be read, with a
 * reference, or NULL.  Under mmap_lock: it looks, it reads nothing.
 */
static struct file *perf_bido_map_vma(struct perf_build_id_offset_map *map,
				      struct vm_area_struct *vma)
{
	struct file *file = vma->vm_file;
	struct inode *inode;

	*map = (struct perf_build_id_offset_map){
		.start	= vma->vm_start,
		.end	= vma->vm_end,
	};
	if (!file) {
		map->flags = perf_bido_vma_is_vdso(vma) ?
			     PERF_BUILD_ID_OFFSET_MAP_VDSO : PERF_BUILD_ID_OFFSET_MAP_ANON;
		return NULL;
	}

	map->pgoff = (u64)vma->vm_pgoff << PAGE_SHIFT;
	inode = file_inode(file);
	/* memfd_create(), SysV shared memory: on a kernel-internal mount */
	if (inode->i_sb->s_flags & SB_KERNMOUNT)
		map->flags |= PERF_BUILD_ID_OFFSET_MAP_ANON_FILE;
	else if (d_unlinked(file->f_path.dentry))
		map->flags |= PERF_BUILD_ID_OFFSET_MAP_DELETED;

	/* Read nothing a read(2) of a regular file would not: no device */
	if (!S_ISREG(inode->i_mode) || secretmem_mapping(file->f_mapping) ||
	    !(file->f_mode & FMODE_READ)) {
		map->flags |= PERF_BUILD_ID_OFFSET_MAP_UNREADABLE;
		return NULL;
	}
	return get_file(file);
}

/*
 * Fill @maps with the VMAs that cover @addrs (sorted pages), taking a
 * reference on each file in @files.  Return how many, and set TRUNCATED in
 * @flags when some did not fit or mmap_lock could not be taken.  @seq gets
 * the mm's sequence count of the VMAs found; false in @seq_ok if there is
 * none (no per-VMA locks).
 */
static unsigned int perf_bido_find_vmas(unsigned long *addrs, unsigned int nr,
					struct perf_build_id_offset_map *maps,
					struct file **files, u32 *flags,
					unsigned int *seq, bool *seq_ok)
{
	struct mm_struct *mm = current->mm;
	struct vm_area_struct *vma, *last = NULL;
	unsigned int i, n = 0;

	if (mmap_read_lock_killable(mm)) {
		*flags |= PERF_BUILD_ID_OFFSET_F_TRUNCATED;
		return 0;
	}
	/* No writer while we read: it cannot fail but without per-VMA locks */
	*seq_ok = mmap_lock_speculate_try_begin(mm, seq);
	for (i = 0; i < nr; i++) {
		unsigned long addr = addrs[i] & PAGE_MASK;

		if (last && addr < last->vm_end)
			continue;
		vma = vma_lookup(mm, addr);
		if (!vma)
			continue;
		/* A stack word counts only if it points into code */
		if ((addrs[i] & PERF_BIDO_STACK_WORD) && !(vma->vm_flags & VM_EXEC))
			continue;
		if (n == PERF_BIDO_MAX_MAPS) {
			*flags |= PERF_BUILD_ID_OFFSET_F_TRUNCATED;
			break;
		}
		files[n] = perf_bido_map_vma(&maps[n], vma);
		last = vma;
		n++;
	}
	mmap_read_unlock(mm);
	return n;
}

/* Read the build-IDs from the page cache and drop the file references */
static void perf_bido_read_build_ids(struct perf_build_id_offset_map *maps,
				     struct file **files, unsigned int nr)
{
	unsigned int i;
	u32 size;
	int err;

	for (i = 0; i < nr; i++) {
		if (!files[i])
			continue;
		err = build_id_parse_file_nofault(files[i], maps[i].build_id,
						  &size);
		if (!err)
			maps[i].build_id_size = size;
		else if (err == -EINVAL || err == -ERANGE)
			/* read, and no ELF image with a build-ID note */
			maps[i].flags |= PERF_BUILD_ID_OFFSET_MAP_NO_BUILD_ID;
		else
			maps[i].flags |= PERF_BUILD_ID_OFFSET_MAP_UNREADABLE;
		if (err)
			memset(maps[i].build_id, 0, sizeof(maps[i].build_id));
		fput(files[i]);
	}
}

/*
 * Take the stash's addresses of entry @cookie into @addrs and mark the entry
 * done: a later sample of it can no longer be covered.  Return how many.
 */
static unsigned int perf_bido_take_stash(struct perf_build_id_stash *st,
					 u64 cookie, unsigned long *addrs,
					 u16 *stack_bytes, u32 *flags)
{
	unsigned int n = 0;

	/* Samples interrupt the task, never the other way round */
	if (WARN_ON_ONCE(cmpxchg(&st->busy, 0, 1)))
		return 0;
	if (st->cookie == cookie) {
		n = st->nr;
		memcpy(addrs, st->addrs, n * sizeof(*addrs));
		*stack_bytes = st->stack_bytes;
		if (st->dropped)
			*flags |= PERF_BUILD_ID_OFFSET_F_ADDRS_DROPPED;
	}
	st->done = cookie;
	/* Pairs with the cmpxchg() of the next sample of the task */
	smp_store_release(&st->busy, 0);
	return n;
}

/*
 * Are the frames of @trace and the @nr pages of @stash all in the VMAs of
 * the task's last record?
 */
static bool perf_bido_rec_covers_entry(const struct perf_build_id_stash *st,
				       const struct unwind_stacktrace *trace,
				       const unsigned long *stash, unsigned int nr,
				       u16 *hit)
{
	unsigned long ip = instruction_pointer(task_pt_regs(current));
	unsigned int i;

	/* The IP the task returns to, should the walk have found nothing */
	if (!trace->nr && !perf_bido_rec_covers(st, ip, hit))
		return false;
	for (i = 0; i < trace->nr; i++) {
		if (trace->entries[i] && trace->entries[i] < TASK_SIZE &&
		    !perf_bido_rec_covers(st, trace->entries[i], hit))
			return false;
	}
	for (i = 0; i < nr; i++) {
		if (!perf_bido_rec_covers(st, stash[i], hit))
			return false;
	}
	return true;
}

/* Are the VMAs in @maps (sorted) all VMAs of the task's last record? */
static bool perf_bido_rec_has_maps(const struct perf_build_id_stash *st,
				   const struct perf_build_id_offset_map *maps,
				   unsigned int nr)
{
	unsigned int i, j = 0;

	for (i = 0; i < nr; i++) {
		while (j < st->rec_nr && st->vmas[j].start < maps[i].start)
			j++;
		if (j == st->rec_nr || st->vmas[j].start != maps[i].start ||
		    st->vmas[j].end != maps[i].end)
			return false;
	}
	return true;
}

/*
 * Name @rec in the samples to come, or nothing if it cannot be named.
 * Before it is written: a sample taken meanwhile waits for it as for its own
 * entry's record, where one that named the previous record would come after
 * this one in time.
 */
static void perf_bido_remember(struct perf_build_id_stash *st,
			       const struct perf_build_id_offset_record *rec,
			       bool seq_ok, unsigned int seq, unsigned int gen,
			       unsigned int cpu)
{
	unsigned int i, nr = 0, max = 0;

	/* After an exec, its samples wait for a new one */
	if (seq_ok && !(rec->head.flags & PERF_BUILD_ID_OFFSET_F_MM_CHANGED))
		max = rec->head.nr;
	if (WARN_ON_ONCE(cmpxchg(&st->busy, 0, 1)))
		return;
	/* An unread build-ID may be in the page cache by the next record */
	for (i = 0; i < max && nr < ARRAY_SIZE(st->vmas); i++) {
		if (rec->maps[i].flags & PERF_BUILD_ID_OFFSET_MAP_UNREADABLE)
			continue;
		st->vmas[nr].start = rec->maps[i].start;
		st->vmas[nr].end = rec->maps[i].end;
		nr++;
	}
	st->rec_nr = nr;
	st->rec_hit = 0;
	st->rec_seq = seq;
	st->rec_gen = gen;
	st->rec_cpu = cpu;
	st->rec_cookie = rec->head.cookie;
	st->rec_mm = current->mm;
	/* Pairs with the cmpxchg() of the next sample of the task */
	smp_store_release(&st->busy, 0);
}

/*
 * The task's latest record is an UNCHANGED one, for an entry that used the
 * VMAs in @hit: name it from now on.
 */
static void perf_bido_remember_unchanged(struct perf_build_id_stash *st,
					 u64 cookie, u16 hit)
{
	if (WARN_ON_ONCE(cmpxchg(&st->busy, 0, 1)))
		return;
	st->rec_cookie = cookie;
	st->rec_hit |= hit;
	/* Pairs with the cmpxchg() of the next sample of the task */
	smp_store_release(&st->busy, 0);
}

/*
 * A receiver lost the task's latest record: samples that named it wait for
 * it in vain, the next ones must not.
 */
static void perf_bido_forget(struct perf_build_id_stash *st)
{
	if (WARN_ON_ONCE(cmpxchg(&st->busy, 0, 1)))
		return;
	st->rec_nr = 0;
	/* Pairs with the cmpxchg() of the next sample of the task */
	smp_store_release(&st->busy, 0);
}

static void perf_bido_deferred(struct unwind_work *work,
			       struct unwind_stacktrace *trace, u64 cookie)
{
	struct perf_build_id_stash *st = current->perf_build_id_stash;
	struct perf_build_id_offset_record rec = {
		.head.cookie = cookie,
	};
	unsigned long stash[ARRAY_SIZE(st->addrs)], *addrs = NULL;
	unsigned int nr = 0, nr_stash = 0, i, max, seq = 0, gen, cpu;
	struct file **files = NULL;
	bool seq_ok = false, valid;
	u16 stack_bytes = 0, hit = 0;

	might_sleep();

	gen = atomic_read(&perf_bido_generation);
	if (!st) {
		/* For the next entries: this one's samples kept nothing */
		st = kmem_cache_zalloc(perf_bido_stash_cache, GFP_KERNEL);
		WRITE_ONCE(current->perf_build_id_stash, st);
	} else if (st->exec == cookie) {
		rec.head.flags |= PERF_BUILD_ID_OFFSET_F_MM_CHANGED;
		goto out;
	} else {
		nr_stash = perf_bido_take_stash(st, cookie, stash, &stack_bytes,
						&rec.head.flags);
	}
	/*
	 * Only the task writes the record's part of the stash: no race.  A
	 * migration meanwhile makes the UNCHANGED record reach the per-CPU
	 * receivers of another CPU than the last record did: it only matters
	 * to a reader of some CPUs, which misses records anyway.
	 */
	valid = st && perf_bido_rec_valid(st, raw_smp_processor_id());

	/* Nothing new since the last record: say so, and look nothing up */
	if (valid && !stack_bytes &&
	    perf_bido_rec_covers_entry(st, trace, stash, nr_stash, &hit)) {
		rec.head.flags |= PERF_BUILD_ID_OFFSET_F_UNCHANGED;
		goto out;
	}

	max = trace->nr + nr_stash + 1 + stack_bytes / sizeof(u32) +
	      ARRAY_SIZE(st->vmas);
	addrs = kvmalloc_array(max, sizeof(*addrs), GFP_KERNEL);
	if (!addrs) {
		rec.head.flags |= PERF_BUILD_ID_OFFSET_F_TRUNCATED;
		goto out;
	}
	for (i = 0; i < trace->nr; i++) {
		if (trace->entries[i] && trace->entries[i] < TASK_SIZE)
			addrs[nr++] = trace->entries[i] & PAGE_MASK;
	}
	/* The IP the task returns to, should the walk have found nothing */
	if (!trace->nr)
		addrs[nr++] = instruction_pointer(task_pt_regs(current)) & PAGE_MASK;
	memcpy(addrs + nr, stash, nr_stash * sizeof(*addrs));
	nr += nr_stash;
	if (stack_bytes)
		nr += perf_bido_stack_words(addrs + nr, stack_bytes);
	/*
	 * And the VMAs of the last record that samples used since: a task
	 * that goes back and forth between two libraries soon has a record
	 * of both, one that goes through many files in turn carries none of
	 * the old ones along.  Samples only set bits: a stale read is safe.
	 */
	for (i = 0; valid && i < st->rec_nr; i++) {
		if (READ_ONCE(st->rec_hit) & BIT(i))
			addrs[nr++] = st->vmas[i].start;
	}
	nr = perf_bido_unique_pages(addrs, nr);

	max = min(nr, PERF_BIDO_MAX_MAPS);
	rec.maps = kmalloc_array(max, sizeof(*rec.maps) + sizeof(*files), GFP_KERNEL);
	if (!rec.maps) {
		rec.head.flags |= PERF_BUILD_ID_OFFSET_F_TRUNCATED;
		goto out;
	}
	files = (struct file **)(rec.maps + max);
	if (nr)
		rec.head.nr = perf_bido_find_vmas(addrs, nr, rec.maps, files,
						  &rec.head.flags, &seq, &seq_ok);
	/* Stack words found no code mapping the last record lacks */
	if (valid && seq_ok && seq == st->rec_seq &&
	    perf_bido_rec_has_maps(st, rec.maps, rec.head.nr)) {
		for (i = 0; i < rec.head.nr; i++) {
			if (files[i])
				fput(files[i]);
		}
		rec.head.nr = 0;
		rec.head.flags |= PERF_BUILD_ID_OFFSET_F_UNCHANGED;
		goto out;
	}
	perf_bido_read_build_ids(rec.maps, files, rec.head.nr);
out:
	/* Where the per-CPU receivers get it; see perf_bido_rec_valid() */
	cpu = raw_smp_processor_id();
	if (st && !(rec.head.flags & PERF_BUILD_ID_OFFSET_F_UNCHANGED))
		perf_bido_remember(st, &rec, seq_ok, seq, gen, cpu);
	else if (st)
		perf_bido_remember_unchanged(st, cookie, hit);
	perf_build_id_offset_output(&rec);
	if (st && rec.lost)
		perf_bido_forget(st);
	kfree(rec.maps);
	kvfree(addrs);
}

static int __init perf_build_id_offset_init(void)
{
	perf_bido_stash_cache = KMEM_CACHE(perf_build_id_stash, SLAB_PANIC);
	return unwind_deferred_init(&perf_bido_work, perf_bido_deferred);
}
core_initcall(perf_build_id_offset_init);
