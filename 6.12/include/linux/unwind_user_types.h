/* SPDX-License-Identifier: GPL-2.0 */
#ifndef _LINUX_UNWIND_USER_TYPES_H
#define _LINUX_UNWIND_USER_TYPES_H

#include <linux/types.h>

/**
 * struct unwind_stacktrace - a user-space stack trace
 * @nr:		number of valid entries
 * @entries:	return addresses, innermost first; entries[0] is the user
 *		instruction pointer the task entered the kernel with
 */
struct unwind_stacktrace {
	unsigned int	nr;
	unsigned long	*entries;
};

/**
 * struct unwind_user_frame - where a frame keeps its caller's registers
 * @cfa_off:	offset from the frame pointer to the canonical frame address
 *		(CFA), the caller's stack pointer just before its call
 * @ra_off:	offset from the CFA to the saved return address
 * @fp_off:	offset from the CFA to the caller's saved frame pointer
 */
struct unwind_user_frame {
	s32	cfa_off;
	s32	ra_off;
	s32	fp_off;
};

/**
 * struct unwind_user_state - where a user-space unwind has got to
 * @ip:		instruction pointer of the current frame
 * @sp:		stack pointer of the current frame
 * @fp:		frame pointer of the current frame
 * @ws:		size of a user stack word: 8, or 4 for a 32-bit task
 * @done:	the walk has ended; the fields above are the last frame
 */
struct unwind_user_state {
	unsigned long	ip;
	unsigned long	sp;
	unsigned long	fp;
	unsigned int	ws;
	bool		done;
};

#endif /* _LINUX_UNWIND_USER_TYPES_H */
