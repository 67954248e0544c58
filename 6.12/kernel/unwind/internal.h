/* SPDX-License-Identifier: GPL-2.0 */
#ifndef _KERNEL_UNWIND_INTERNAL_H
#define _KERNEL_UNWIND_INTERNAL_H

#include <linux/sizes.h>
#include <linux/unwind_deferred.h>

struct pt_regs;

/**
 * struct unwind_cache - one kernel entry's user stack trace
 * @nr_entries:	valid entries
 * @entries:	the trace, innermost first
 *
 * Valid while @nr_entries is not 0: a walk stores at least the user IP,
 * and the reset on the way out to user space sets it back to 0.
 */
struct unwind_cache {
	unsigned int	nr_entries;
	unsigned long	entries[];
};

/*
 * The cache is one 4 KiB allocation, which bounds a deferred trace at 511
 * entries on 64-bit: four times perf's default maximum (127), and enough
 * for deep but sane stacks.
 */
#define UNWIND_CACHE_SIZE	SZ_4K
#define UNWIND_MAX_ENTRIES \
	((UNWIND_CACHE_SIZE - sizeof(struct unwind_cache)) / sizeof(unsigned long))

/* Internals the KUnit suite calls directly (VISIBLE_IF_KUNIT) */
#if IS_ENABLED(CONFIG_KUNIT)
int unwind_user_start_regs(struct unwind_user_state *state,
			   struct pt_regs *regs);
int unwind_user_regs(struct unwind_stacktrace *trace,
		     unsigned int max_entries, struct pt_regs *regs);
u64 unwind_get_cookie(struct unwind_task_info *info);
#endif

#endif /* _KERNEL_UNWIND_INTERNAL_H */
