/* SPDX-License-Identifier: GPL-2.0 */
#ifndef _LINUX_PERF_BUILD_ID_OFFSET_TYPES_H
#define _LINUX_PERF_BUILD_ID_OFFSET_TYPES_H

#include <linux/types.h>

struct perf_bido_stash;

/**
 * struct perf_bido_task - per-task state of PERF_SAMPLE_BUILD_ID_OFFSET
 * @cookie:	deferred unwind cookie of the last sample that asked for a
 *		record; written in sampling context (NMI included) on
 *		current only
 * @exec_id:	self_exec_id of the task at the first such sample of the
 *		kernel entry named by @cookie
 * @entry_ip:	user IP of the task at that sample, where the entry left
 *		user space
 * @entry_seq:	mm->mm_lock_seq of the task at that sample
 * @done:	cookie whose record has been built: later samples of that
 *		entry add nothing to @stash
 * @missed:	cookie of an entry in which a sample had addresses to keep
 *		but no @stash to keep them in
 * @stash:	user addresses of the current kernel entry that only the
 *		samples saw (branch stacks, precise IPs), and the task's last
 *		record for reuse; allocated in task context when first
 *		needed, freed when the task exits, execs a set-uid program,
 *		or runs @trim once no receiving event is left
 * @trim:	task_work that frees @stash and the unwind cache
 * @trim_queued: @trim is on the task's task_work list
 *
 * Only the task itself and the interrupts and NMIs that sample it, on its
 * own CPU, touch this, so nothing here needs a lock; the one exception is
 * @trim_queued, which the sweep sets with cmpxchg() from a workqueue.
 */
struct perf_bido_task {
	u64			cookie;
	u64			exec_id;
	unsigned long		entry_ip;
	unsigned int		entry_seq;
	u64			done;
	u64			missed;
	struct perf_bido_stash	*stash;
	struct callback_head	trim;
	unsigned long		trim_queued;
};

#endif /* _LINUX_PERF_BUILD_ID_OFFSET_TYPES_H */
