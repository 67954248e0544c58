/* SPDX-License-Identifier: GPL-2.0 */
#ifndef _LINUX_PERF_BUILD_ID_OFFSET_TYPES_H
#define _LINUX_PERF_BUILD_ID_OFFSET_TYPES_H

#include <linux/types.h>

struct perf_bido_stash;
struct perf_bido_table;

/*
 * How many sessions one kernel entry's records go to by name: a profiling
 * daemon and one perf record.  The records of an entry that more sessions
 * sample go to every receiver that sees the task.
 */
#define PERF_BIDO_SESSIONS	2

/**
 * struct perf_bido_task - per-task state of PERF_SAMPLE_BUILD_ID_OFFSET
 * @cookie:	deferred unwind cookie of the last sample that asked for a
 *		record (build-ID offset or deferred callchain); written in
 *		sampling context (NMI included) on current only
 * @exec_id:	self_exec_id of the task at the first such sample of the
 *		kernel entry named by @cookie; U64_MAX once a sample of
 *		that entry came in the middle of an exec
 * @entry_ip:	user IP of the task at that sample, where the entry left
 *		user space
 * @entry_seq:	mm->mm_lock_seq of the task at that sample
 * @stack_bytes: the most user stack a sample of that entry dumped
 *		(PERF_SAMPLE_STACK_USER): the record covers the code
 *		addresses stored there, where a DWARF unwinder finds frames
 * @sessions:	the sessions (see perf_bido_session()) whose events asked
 *		for records in the entry named by @cookie: its records go
 *		to their receivers only
 * @sessions_over: more sessions asked than @sessions holds: the records
 *		go to every receiver; written on current only, as @sessions
 * @closed:	cookie whose records are being or have been written: a
 *		session that asks now gets no cookie
 * @closed_ip:	user IP of the task when @closed was set
 * @done:	cookie whose record has been built: later samples of that
 *		entry add nothing to @stash
 * @missed:	cookie of an entry in which a sample had addresses to keep
 *		but no @stash to keep them in
 * @stash:	user addresses of the current kernel entry that only the
 *		samples saw (branch stacks, precise IPs); allocated in task
 *		context after a sample found none (@missed)
 * @table:	the ranges of at most five maps of the task's last record,
 *		for reuse (128 bytes at most); allocated in task context
 *		at its first record.  Both are freed when the task exits,
 *		execs a set-uid program, or runs @trim once no receiving
 *		event is left
 * @trim_state: PERF_BIDO_TRIM_* (see perf_bido_trim())
 * @trim:	task_work that frees this state and the unwind cache
 * @rcu:	frees this state after a grace period (the sweep reads it
 *		under RCU); used only once @trim cannot be queued again
 *
 * Only the task itself and the interrupts and NMIs that sample it, on its
 * own CPU, touch this, so nothing here needs a lock; the one exception is
 * @trim_state, which the sweep changes with cmpxchg() from a workqueue.
 * 120 bytes on 64-bit, in the 128-byte kmalloc bucket.
 */
struct perf_bido_task {
	u64			cookie;
	u64			exec_id;
	unsigned long		entry_ip;
	unsigned int		entry_seq;
	u32			stack_bytes;
	const void		*sessions[PERF_BIDO_SESSIONS];
	u32			sessions_over;
	u32			trim_state;
	u64			closed;
	unsigned long		closed_ip;
	u64			done;
	u64			missed;
	struct perf_bido_stash	*stash;
	struct perf_bido_table	*table;
	union {
		struct callback_head	trim;
		struct rcu_head		rcu;
	};
};

#endif /* _LINUX_PERF_BUILD_ID_OFFSET_TYPES_H */
