/* SPDX-License-Identifier: GPL-2.0 */
#ifndef _LINUX_UNWIND_DEFERRED_H
#define _LINUX_UNWIND_DEFERRED_H

#include <linux/bits.h>
#include <linux/errno.h>
#include <linux/list.h>
#include <linux/sched.h>
#include <linux/unwind_deferred_types.h>
#include <linux/unwind_user.h>

struct unwind_work;

/**
 * typedef unwind_callback_t - receives a deferred user stack trace
 * @work:	the unwind_work that asked for it
 * @trace:	the user stack of the current task; empty (nr == 0) when it
 *		could not be read.  Valid only during the call.
 * @cookie:	the value unwind_deferred_request() returned in its @cookie
 *
 * Runs in the context of the task whose stack it is, before the task
 * returns to user space or while it exits, with no locks held: it may
 * sleep and fault.  It must not call unwind_deferred_init() or
 * unwind_deferred_cancel().
 */
typedef void (*unwind_callback_t)(struct unwind_work *work,
				  struct unwind_stacktrace *trace, u64 cookie);

/**
 * struct unwind_work - one user of deferred unwinding
 * @list:	entry in the list of registered users
 * @func:	called with the trace of each entry this user asked for
 * @bit:	this user's bit in unwind_task_info::unwind_mask, or -1 when
 *		not registered
 *
 * Set up with unwind_deferred_init(); the fields are private.
 */
struct unwind_work {
	struct list_head	list;
	unwind_callback_t	func;
	int			bit;
};

/*
 * The low bits of unwind_task_info::unwind_mask are the framework's own;
 * each registered unwind_work owns one of the rest.
 *
 * UNWIND_PENDING: the task_work is queued and has not started.
 * UNWIND_USED:    this entry has a cookie or a cached trace to clear; it
 *                 keeps the mask non-zero, and so the reset on the way out
 *                 to user space from being skipped, even once cancel has
 *                 cleared the only work bit.
 * UNWIND_RESET:   the state is being cleared on the way out to user space.
 */
enum {
	UNWIND_PENDING_BIT = 0,
	UNWIND_USED_BIT,
	UNWIND_RESET_BIT,
	UNWIND_RESERVED_BITS
};

#define UNWIND_PENDING		BIT(UNWIND_PENDING_BIT)
#define UNWIND_USED		BIT(UNWIND_USED_BIT)
#define UNWIND_RESET		BIT(UNWIND_RESET_BIT)
#define UNWIND_RESERVED_MASK	(BIT(UNWIND_RESERVED_BITS) - 1)

#ifdef CONFIG_UNWIND_USER

void unwind_task_init(struct task_struct *task);
void unwind_task_free(struct task_struct *task);
void unwind_deferred_task_exit(struct task_struct *task);

int unwind_user_faultable(struct unwind_stacktrace *trace);

int unwind_deferred_init(struct unwind_work *work, unwind_callback_t func);
int unwind_deferred_request(struct unwind_work *work, u64 *cookie);
void unwind_deferred_cancel(struct unwind_work *work);

void __unwind_reset_info(void);

/**
 * unwind_reset_info - end the current entry's deferred unwind state
 *
 * Called by exit_to_user_mode() with interrupts disabled, after the exit
 * work (and so the unwind task_work) has run: the next request gets a new
 * cookie and a new trace.  Tasks that did not ask in this entry pay one
 * load.
 */
static __always_inline void unwind_reset_info(void)
{
	if (likely(!atomic_long_read(&current->unwind_info.unwind_mask)))
		return;
	__unwind_reset_info();
}

#else /* !CONFIG_UNWIND_USER */

static inline void unwind_task_init(struct task_struct *task) { }
static inline void unwind_task_free(struct task_struct *task) { }
static inline void unwind_deferred_task_exit(struct task_struct *task) { }

static inline int unwind_user_faultable(struct unwind_stacktrace *trace)
{
	trace->nr = 0;
	return -EOPNOTSUPP;
}

static inline int unwind_deferred_init(struct unwind_work *work,
				       unwind_callback_t func)
{
	work->bit = -1;
	return -EOPNOTSUPP;
}

static inline int unwind_deferred_request(struct unwind_work *work,
					  u64 *cookie)
{
	*cookie = 0;
	return -EOPNOTSUPP;
}

static inline void unwind_deferred_cancel(struct unwind_work *work) { }

static __always_inline void unwind_reset_info(void) { }

#endif /* CONFIG_UNWIND_USER */

#endif /* _LINUX_UNWIND_DEFERRED_H */
