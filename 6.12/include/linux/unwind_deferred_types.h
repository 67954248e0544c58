/* SPDX-License-Identifier: GPL-2.0 */
#ifndef _LINUX_UNWIND_DEFERRED_TYPES_H
#define _LINUX_UNWIND_DEFERRED_TYPES_H

#include <linux/atomic.h>
#include <linux/types.h>

struct unwind_cache;

/**
 * union unwind_task_id - the cookie of a task's current kernel entry
 * @id:	0 until the entry's first request; never 0 after it
 *
 * A union as in Linux 7.3, so that a user of the framework written for 7.3
 * reads the cookie as unwind_info.id.id here too.
 */
union unwind_task_id {
	u64	id;
};

/**
 * struct unwind_task_info - per-task state of deferred user unwinding
 * @unwind_mask:	UNWIND_PENDING, UNWIND_USED and UNWIND_RESET, plus
 *			the bit of every unwind_work that asked during the
 *			current kernel entry.  Changed only with atomics:
 *			requests come from NMI, and cancel runs on other CPUs.
 * @unwind_completed:	bits of the unwind_works whose callback has run in
 *			this entry (atomic bitops: cancel clears them remotely)
 * @id:			cookie of this entry
 * @cache:		this entry's user stack trace; allocated on first use,
 *			freed with the task
 * @work:		the task_work that runs the callbacks
 *
 * Everything but @cache is cleared on the way out to user space, see
 * unwind_reset_info().
 */
struct unwind_task_info {
	atomic_long_t		unwind_mask;
	unsigned long		unwind_completed;
	union unwind_task_id	id;
	struct unwind_cache	*cache;
	struct callback_head	work;
};

#endif /* _LINUX_UNWIND_DEFERRED_TYPES_H */
