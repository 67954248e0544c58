/* SPDX-License-Identifier: GPL-2.0 */
#ifndef _KERNEL_EVENTS_BUILD_ID_OFFSET_H
#define _KERNEL_EVENTS_BUILD_ID_OFFSET_H

/*
 * PERF_SAMPLE_BUILD_ID_OFFSET: the hooks core.c calls, what the files of
 * the feature share, and the internals the KUnit suite reaches.  See
 * build_id_offset.c (per-task state, sampling side, hooks),
 * build_id_offset_record.c (the record builder) and
 * build_id_offset_file.c (build-IDs from the page cache).
 */

#include <linux/buildid.h>
#include <linux/mm_types.h>
#include <linux/perf_event.h>
#include <linux/sched.h>
#include <linux/slab.h>
#include <linux/types.h>
#include <linux/perf_build_id_offset_types.h>
#include <asm/local.h>

struct file;
struct mm_struct;
struct perf_bido_task;
struct pt_regs;
struct task_struct;
struct unwind_stacktrace;
struct unwind_work;

/* Events with attr.defer_output, counted by account_event() */
extern atomic_t nr_defer_output_events;

/**
 * struct perf_bido_sessions - where the records of one kernel entry go
 * @id:		the sessions whose events asked for them (NULL: unused)
 * @all:	and every other receiver too: more sessions asked than
 *		@id holds, or the entry was not noted
 */
struct perf_bido_sessions {
	const void	*id[PERF_BIDO_SESSIONS];
	bool		all;
};

#ifdef CONFIG_PERF_BUILD_ID_OFFSET

void perf_bido_init(void);
void perf_bido_init_task(struct task_struct *child);
void perf_bido_exit_task(struct task_struct *task);
int perf_bido_check_attr(const struct perf_event_attr *attr);
void perf_bido_prepare_sample(struct perf_sample_data *data,
			      struct perf_event *event, struct pt_regs *regs);
void perf_bido_receiver_added(void);
void perf_bido_receivers_gone(void);
bool perf_bido_note_entry(struct perf_event *event, u64 cookie);
bool perf_bido_close_entry(u64 cookie, struct perf_bido_sessions *to);
int perf_bido_receiver(const struct perf_bido_sessions *to,
		       struct perf_event *event);

#else /* !CONFIG_PERF_BUILD_ID_OFFSET */

static inline void perf_bido_init(void) { }
static inline void perf_bido_init_task(struct task_struct *child) { }
static inline void perf_bido_exit_task(struct task_struct *task) { }

/*
 * Without the feature its sample bit is invalid, and without deferred
 * callchains (no user unwinder) so are the deferred bits
 */
static inline int perf_bido_check_attr(const struct perf_event_attr *attr)
{
	if (attr->sample_type & PERF_SAMPLE_BUILD_ID_OFFSET)
		return -EINVAL;
	if (!IS_ENABLED(CONFIG_PERF_DEFERRED_CALLCHAIN) &&
	    (attr->defer_callchain || attr->defer_output))
		return -EINVAL;
	if (attr->defer_output && attr->exclude_user)
		return -EINVAL;
	return 0;
}

static inline void perf_bido_prepare_sample(struct perf_sample_data *data,
					    struct perf_event *event,
					    struct pt_regs *regs)
{
	data->defer_cookie = 0;
}

static inline void perf_bido_receiver_added(void) { }
static inline void perf_bido_receivers_gone(void) { }

/* Without the per-task notes, records go where upstream sends them */
static inline bool perf_bido_note_entry(struct perf_event *event, u64 cookie)
{
	return true;
}

static inline bool perf_bido_close_entry(u64 cookie,
					 struct perf_bido_sessions *to)
{
	to->all = true;
	return false;
}

static inline int perf_bido_receiver(const struct perf_bido_sessions *to,
				     struct perf_event *event)
{
	return event->attr.defer_output ? PERF_BIDO_SESSIONS : -1;
}

#endif /* CONFIG_PERF_BUILD_ID_OFFSET */

/* One entry of PERF_RECORD_BUILD_ID_OFFSET::maps[] */
struct perf_bido_map {
	u64	start;
	u64	end;
	u64	pgoff;
	u8	build_id_size;
	u8	flags;
	u16	__reserved;
	u8	build_id[BUILD_ID_SIZE_MAX];
};

/* The fixed part of PERF_RECORD_BUILD_ID_OFFSET, before maps[] */
struct perf_bido_record {
	struct perf_event_header	header;
	u32				pid;
	u32				tid;
	u64				cookie;
	u32				nr;
	u32				flags;
};

/*
 * User addresses of one kernel entry of a task that only the samples
 * see (branch stacks, precise IPs), kept until the deferred work.  1 KiB:
 * room for two 32-deep LBR stacks (from and to of each branch) minus the
 * header.
 */
#define PERF_BIDO_STASH_ENTRIES	126

/*
 * Maps the table of a task's last record keeps: what fits in 128 bytes
 * beside its header, so that a sampled task costs at most 128 bytes of
 * state and 128 of table beside the unwinder's cache
 */
#define PERF_BIDO_TABLE_MAPS	5
#define PERF_BIDO_TABLE_BYTES	128

/**
 * struct perf_bido_table_map - the range of one map of a task's last record
 * @start:	the map's start, as in struct perf_bido_map
 * @end:	its end, as in struct perf_bido_map
 *
 * Only what the reuse checks: whether an address lies in the map.  No
 * build-ID, so 16 bytes instead of 48, and five maps in 128 bytes.
 */
struct perf_bido_table_map {
	u64	start;
	u64	end;
};

/**
 * struct perf_bido_table - some maps of a task's last record, for reuse
 * @cookie:	the record's cookie; 0 while there is nothing to reuse, and
 *		while the deferred work rewrites the table
 * @mm:		the address space the maps describe (compared, never
 *		dereferenced)
 * @exec_id:	current->self_exec_id when the maps were looked up
 * @mm_seq:	mm->mm_lock_seq then, read under mmap_lock: while it has not
 *		moved, no VMA of @mm has changed
 * @sessions:	the sessions whose receivers all got the record, with
 *		room: only their samples may name it
 * @nr:		entries in @maps
 * @room:	entries @maps has room for, at most PERF_BIDO_TABLE_MAPS:
 *		a record of fewer maps needs no more
 * @used:	bit i: an address of a later sample or entry of the task
 *		fell in @maps[i] (perf_bido_table_covers()); such maps go
 *		into the task's next full record (perf_bido_table_carried())
 * @maps:	sorted by start; each the exact range of one of the record's
 *		maps, those that hold the most of its addresses when the
 *		record has more (perf_bido_table_pick())
 *
 * See perf_bido_reuse().  Written only by the task's deferred work, read
 * only by samples of the task on its own CPU, which set bits of @used
 * only.
 */
struct perf_bido_table {
	u64				cookie;
	const struct mm_struct		*mm;
	u64				exec_id;
	unsigned int			mm_seq;
	u8				nr;
	u8				room;
	u8				used;
	const void			*sessions[PERF_BIDO_SESSIONS];
	struct perf_bido_table_map	maps[] __counted_by(room);
};

/**
 * struct perf_bido_stash - addresses the sampling side may not allocate for
 * @cookie:	entry the addresses belong to; set by the sample that takes
 *		slot 0
 * @nr:		slots taken; more than PERF_BIDO_STASH_ENTRIES means that
 *		some addresses were dropped
 * @addrs:	the addresses, in no order
 */
struct perf_bido_stash {
	u64			cookie;
	local_t			nr;
	unsigned long		addrs[PERF_BIDO_STASH_ENTRIES];
};

/* Bound on maps[]: a 12 KiB record, well below the 64 KiB of header.size */
#define PERF_BIDO_MAX_MAPS	256

/**
 * struct perf_bido_resolve - one record being built, in task context
 * @addrs:	user addresses to resolve; sorted and unique once collected
 * @nr_addrs:	entries in @addrs
 * @maps:	the table, sorted by start
 * @files:	for each of @maps, the file whose build-ID is still to be
 *		read, with a reference; NULL when there is none to read
 * @nr_maps:	entries in @maps
 * @max_maps:	room in @maps and @files
 * @flags:	PERF_BUILD_ID_OFFSET_F_*
 * @mm_seq:	mm->mm_lock_seq while the VMAs were looked up
 * @looked_up:	the VMAs were looked up (and @mm_seq read)
 * @unstable:	a build-ID may change without the file's version showing it
 * @parsed:	build-IDs read from the page cache
 */
struct perf_bido_resolve {
	unsigned long		*addrs;
	unsigned int		nr_addrs;
	struct perf_bido_map	*maps;
	struct file		**files;
	unsigned int		nr_maps;
	unsigned int		max_maps;
	u32			flags;
	unsigned int		mm_seq;
	bool			looked_up;
	bool			unstable;
	unsigned int		parsed;
};

#ifdef CONFIG_PERF_BUILD_ID_OFFSET

/* Shared by the files of the feature */

/* The kmalloc bucket an object of @size takes, for the state tracepoints */
#define perf_bido_bytes(size)	((unsigned int)kmalloc_size_roundup(size))

static inline unsigned int
perf_bido_table_bytes(const struct perf_bido_table *tab)
{
	return perf_bido_bytes(struct_size(tab, maps, tab->room));
}

/*
 * mm->mm_lock_seq moves whenever mmap_lock is taken for writing, which
 * every change to a VMA needs.  Without per-VMA locks there is no such
 * count, and no reuse.
 */
static inline bool perf_bido_mm_seq(struct mm_struct *mm, unsigned int *seq)
{
#ifdef CONFIG_PER_VMA_LOCK
	*seq = raw_read_seqcount(&mm->mm_lock_seq);
	return true;
#else
	return false;
#endif
}

/*
 * Does @tab still describe current's address space as the table was
 * made: same mm, same program, no exec under way, no VMA changed since
 * (mm_lock_seq)?
 */
static inline bool perf_bido_table_fresh(const struct perf_bido_table *tab)
{
	unsigned int seq;

	return tab->mm == current->mm && !current->in_execve &&
	       tab->exec_id == READ_ONCE(current->self_exec_id) &&
	       perf_bido_mm_seq(current->mm, &seq) && seq == tab->mm_seq;
}

bool perf_bido_has_session(const void *const *ids, const void *id);
void perf_bido_unwind_callback(struct unwind_work *work,
			       struct unwind_stacktrace *trace, u64 cookie);
void perf_bido_free_stash(struct task_struct *task);
void perf_bido_read_build_ids(struct perf_bido_resolve *res);

#endif /* CONFIG_PERF_BUILD_ID_OFFSET */

/* Internals the KUnit suite calls directly (VISIBLE_IF_KUNIT) */
#if IS_ENABLED(CONFIG_KUNIT) && defined(CONFIG_PERF_BUILD_ID_OFFSET)
void perf_bido_stash_sample(struct perf_bido_task *bt, u64 cookie,
			    unsigned long ip, const struct perf_branch_stack *bs);
unsigned int perf_bido_take_stash(struct perf_bido_task *bt, u64 cookie,
				  unsigned long *addrs, u32 *flags);
unsigned int perf_bido_sort_addrs(unsigned long *addrs, unsigned int nr);
void perf_bido_find_vmas(struct mm_struct *mm, struct perf_bido_resolve *res);
u8 perf_bido_file_flags(struct file *file);
bool perf_bido_build_id(struct file *file, struct perf_bido_map *map);
bool perf_bido_table_covers(struct perf_bido_table *tab, unsigned long addr);
struct perf_bido_table *perf_bido_table_room(struct perf_bido_task *bt,
					     unsigned int nr);
unsigned int perf_bido_table_pick(const struct perf_bido_resolve *res,
				  unsigned int *pick);
void perf_bido_table_fill(struct perf_bido_table *tab,
			  const struct perf_bido_resolve *res,
			  const unsigned int *pick, unsigned int nr);
unsigned int perf_bido_table_carried(const struct perf_bido_table *tab,
				     unsigned long *addrs);
#endif

#endif /* _KERNEL_EVENTS_BUILD_ID_OFFSET_H */
