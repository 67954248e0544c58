// SPDX-License-Identifier: GPL-2.0
/*
 * Frame-pointer walk of the current task's user stack.
 *
 * The walk runs in task context (the deferred unwind task_work, or a
 * syscall), where user memory may be read with faults allowed: a stack
 * page that was swapped out is simply paged back in.  It is not for NMI or
 * IRQ context; those ask for a deferred unwind instead (deferred.c).
 *
 * Each step checks that the next frame lies strictly above the current one
 * on the stack, so a corrupt or cyclic chain ends the walk instead of
 * looping; every read goes through get_user(), so a frame pointer into the
 * kernel ends it too.
 */

#include <linux/kernel.h>
#include <linux/overflow.h>
#include <linux/ptrace.h>
#include <linux/sched.h>
#include <linux/sched/task_stack.h>
#include <linux/string.h>
#include <linux/unwind_user.h>
#include <kunit/visibility.h>

#include "internal.h"

VISIBLE_IF_KUNIT int unwind_user_start_regs(struct unwind_user_state *state,
					    struct pt_regs *regs)
{
	memset(state, 0, sizeof(*state));
	state->done = true;

	/* A kernel thread's regs, or user mode we cannot walk */
	if (!regs || !user_mode(regs))
		return -EINVAL;
	state->ws = unwind_user_word_size(regs);
	if (!state->ws)
		return -EINVAL;

	state->ip = instruction_pointer(regs);
	state->sp = user_stack_pointer(regs);
	state->fp = frame_pointer(regs);
	/* A 32-bit task cannot see the upper halves of its registers */
	if (state->ws == sizeof(u32)) {
		state->ip = lower_32_bits(state->ip);
		state->sp = lower_32_bits(state->sp);
		state->fp = lower_32_bits(state->fp);
	}
	state->done = false;
	return 0;
}

/**
 * unwind_user_start - start a walk of the current task's user stack
 * @state: the walk; the first frame is the user IP
 *
 * Context: task context.  Reads only the saved user registers.
 * Return: 0, or -EINVAL (with @state->done set) for a kernel thread or a
 * task whose saved registers are not user mode.
 */
int unwind_user_start(struct unwind_user_state *state)
{
	if (current->flags & (PF_KTHREAD | PF_USER_WORKER)) {
		memset(state, 0, sizeof(*state));
		state->done = true;
		return -EINVAL;
	}
	return unwind_user_start_regs(state, task_pt_regs(current));
}

/**
 * unwind_user_next - step to the caller's frame
 * @state: the walk, started by unwind_user_start()
 *
 * Follows the frame-pointer chain one frame up, from every frame alike: the
 * code at the IP is never read, so a function stopped in its prologue,
 * before it has set up its frame, loses its caller (the chain goes on
 * from the caller's caller) rather than getting a guessed one.  The walk
 * ends, setting
 * @state->done, at a frame pointer that is misaligned or below the stack
 * pointer (a leaf, a function built without frame pointers, or garbage), a
 * frame that would not be above the current one, an unreadable word, or a
 * zero return address (the outermost frame).
 *
 * Context: task context; may fault and sleep.  The mm must not be locked.
 * Return: 0 with @state at the caller's frame, or -EINVAL when the walk
 * has ended.
 */
int unwind_user_next(struct unwind_user_state *state)
{
	struct unwind_user_frame frame;
	unsigned int ws = state->ws;
	unsigned long cfa, ra, fp;

	if (state->done)
		return -EINVAL;

	arch_unwind_user_fp_frame(&frame, ws);

	/* Frame records are stored word-aligned */
	if (!IS_ALIGNED(state->fp, ws))
		goto end;
	/*
	 * The record must be on the live stack, at or above SP.  Since the
	 * CFA is above the record, each step strictly raises SP: the walk
	 * cannot loop, whatever the chain holds.
	 */
	if (state->fp < state->sp)
		goto end;
	if (check_add_overflow(state->fp, (unsigned long)frame.cfa_off, &cfa))
		goto end;
	/* A 32-bit task's frames live below 4 GiB */
	if (ws == sizeof(u32) && upper_32_bits(cfa))
		goto end;

	if (arch_unwind_user_get_word(&ra, cfa + frame.ra_off, ws))
		goto end;
	if (arch_unwind_user_get_word(&fp, cfa + frame.fp_off, ws))
		goto end;
	/* Some runtimes end the chain with a zero return address */
	if (!ra)
		goto end;

	state->ip = ra;
	state->sp = cfa;
	state->fp = fp;
	return 0;

end:
	state->done = true;
	return -EINVAL;
}

VISIBLE_IF_KUNIT int unwind_user_regs(struct unwind_stacktrace *trace,
				      unsigned int max_entries,
				      struct pt_regs *regs)
{
	struct unwind_user_state state;

	trace->nr = 0;
	if (!max_entries)
		return -EINVAL;
	if (unwind_user_start_regs(&state, regs))
		return -EINVAL;

	do {
		trace->entries[trace->nr++] = state.ip;
	} while (trace->nr < max_entries && !unwind_user_next(&state));

	return 0;
}

/**
 * unwind_user - walk the current task's user stack
 * @trace: receives the trace; @trace->entries must hold @max_entries
 * @max_entries: the most entries to store, at least 1
 *
 * Stores the user IP, then the return address of each frame found by
 * unwind_user_next(), innermost first.
 *
 * Context: task context; may fault and sleep.  The mm must not be locked.
 * Return: 0 with at least one entry, or -EINVAL (with @trace->nr == 0)
 * for a kernel thread, a task without user registers or @max_entries 0.
 */
int unwind_user(struct unwind_stacktrace *trace, unsigned int max_entries)
{
	might_fault();

	if (!current->mm || (current->flags & (PF_KTHREAD | PF_USER_WORKER))) {
		trace->nr = 0;
		return -EINVAL;
	}
	return unwind_user_regs(trace, max_entries, task_pt_regs(current));
}
