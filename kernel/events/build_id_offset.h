/* SPDX-License-Identifier: GPL-2.0 */
#ifndef _KERNEL_EVENTS_BUILD_ID_OFFSET_H
#define _KERNEL_EVENTS_BUILD_ID_OFFSET_H

#include <linux/buildid.h>
#include <linux/perf_event.h>

/* PERF_RECORD_BUILD_ID_OFFSET::maps[] */
struct perf_build_id_offset_map {
	u64	start;
	u64	end;
	u64	pgoff;
	u8	build_id_size;
	u8	flags;
	u16	__reserved;
	u8	build_id[BUILD_ID_SIZE_MAX];
};

/*
 * The addresses a task's samples saw that the user stack walk may not cover,
 * and the VMAs of the task's last record.  Only the task itself uses it: its
 * samples (from IRQ or NMI, on the CPU it runs on) and its deferred callback.
 * @busy keeps a nested sample out while another one, or the callback, is in.
 *
 * While the task's address space is as it was when the record was written
 * (the same mm, and mm_lock_seq as it was then), no receiver came since and
 * the task runs on the CPU it was written on (its per-CPU receivers got it),
 * a sample whose user addresses are all in @vmas is covered by that record:
 * it takes @rec_cookie, and its entry needs no record of its own.
 */
struct perf_build_id_stash {
	u64		cookie;		/* the entry that @addrs belongs to */
	u64		done;		/* the entry whose record is written */
	u64		exec;		/* the entry in which the task exec()ed */
	u32		busy;
	u16		nr;
	u16		stack_bytes;	/* largest user stack dump of the entry */
	bool		dropped;	/* @addrs was full */
	u8		rec_nr;		/* of @vmas; 0: no record to name */
	u16		rec_hit;	/* the @vmas samples used since */
	unsigned int	rec_seq;	/* mm_lock_seq when it was written */
	unsigned int	rec_gen;	/* perf_bido_generation then */
	unsigned int	rec_cpu;	/* where it was written */
	u64		rec_cookie;	/* the last record */
	struct mm_struct *rec_mm;
	unsigned long	addrs[23];	/* pages, no duplicates */
	struct {
		unsigned long start, end;
	}		vmas[16];	/* sorted by start; see rec_hit */
};

/* A record as built in task context, written by core.c to each receiver */
struct perf_build_id_offset_record {
	struct {
		struct perf_event_header	header;
		u32				pid;
		u32				tid;
		u64				cookie;
		u32				nr;
		u32				flags;
	} head;
	struct perf_build_id_offset_map		*maps;
	bool					lost;	/* by a receiver */
};

#ifdef CONFIG_PERF_BUILD_ID_OFFSET
static inline void perf_build_id_offset_init_task(struct task_struct *task)
{
	task->perf_build_id_stash = NULL;
}

u64 perf_build_id_offset_sample(struct perf_event *event,
				struct perf_sample_data *data);
void perf_build_id_offset_exec(void);
void perf_build_id_offset_receiver(struct perf_event *event);
void perf_build_id_offset_free_task(struct task_struct *task);
/* in core.c */
void perf_build_id_offset_output(struct perf_build_id_offset_record *rec);
#else
static inline void perf_build_id_offset_init_task(struct task_struct *task) { }

static inline u64 perf_build_id_offset_sample(struct perf_event *event,
					      struct perf_sample_data *data)
{
	return 0;
}

static inline void perf_build_id_offset_exec(void) { }
static inline void perf_build_id_offset_receiver(struct perf_event *event) { }
static inline void perf_build_id_offset_free_task(struct task_struct *task) { }
#endif

#if IS_ENABLED(CONFIG_KUNIT)
bool perf_bido_stash_add(struct perf_build_id_stash *st, unsigned long addr);
unsigned int perf_bido_unique_pages(unsigned long *addrs, unsigned int nr);
bool perf_bido_rec_covers_callchain(const struct perf_build_id_stash *st,
				    const struct perf_callchain_entry *cc, u16 *hit);
#endif

#endif /* _KERNEL_EVENTS_BUILD_ID_OFFSET_H */
