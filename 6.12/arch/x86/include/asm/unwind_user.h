/* SPDX-License-Identifier: GPL-2.0 */
#ifndef _ASM_X86_UNWIND_USER_H
#define _ASM_X86_UNWIND_USER_H

/*
 * The x86 half of the user-space frame-pointer unwinder: how wide a user
 * stack word is, where a frame keeps its caller's registers, and how to
 * read one word.  The walk itself is generic, in kernel/unwind/user.c.
 *
 * Code built with frame pointers starts each function with
 * "push %rbp; mov %rsp, %rbp" (ebp for 32-bit code), after the call has
 * pushed the return address.  With ws the word size, a frame looks like:
 *
 *	fp + 2 * ws	caller's stack pointer before the call: the CFA
 *	fp + ws		return address into the caller
 *	fp		caller's frame pointer
 *
 * 64-bit kernels only (see HAVE_UNWIND_USER_FP in arch/x86/Kconfig): a
 * task in 64-bit mode has 8-byte words, a task in a 32-bit code segment
 * (compat ia32) has 4-byte ones.  Segment bases are assumed flat, as for
 * every user space that uses frame pointers.
 */

#include <linux/types.h>
#include <linux/uaccess.h>
#include <linux/unwind_user_types.h>
#include <asm/ptrace.h>

/*
 * Size of a user stack word for the mode @regs returns to, or 0 if the
 * stack cannot be walked flat: vm86 stacks are segmented.
 */
static inline int unwind_user_word_size(struct pt_regs *regs)
{
	if (v8086_mode(regs))
		return 0;
	if (user_64bit_mode(regs))
		return sizeof(u64);
	return sizeof(u32);
}

/* The frame layout above, for a word size of @ws bytes */
static inline void arch_unwind_user_fp_frame(struct unwind_user_frame *frame,
					     unsigned int ws)
{
	frame->cfa_off = 2 * ws;
	frame->ra_off = -(s32)ws;
	frame->fp_off = -2 * (s32)ws;
}

/*
 * Read the @ws-byte word at user address @addr into @word, zero-extending a
 * 4-byte one.  May fault and sleep; get_user() refuses kernel addresses.
 */
static inline int arch_unwind_user_get_word(unsigned long *word,
					    unsigned long addr, unsigned int ws)
{
	u32 word32;

	if (ws == sizeof(u64))
		return get_user(*word, (const unsigned long __user *)addr);
	if (get_user(word32, (const u32 __user *)addr))
		return -EFAULT;
	*word = word32;
	return 0;
}

#endif /* _ASM_X86_UNWIND_USER_H */
