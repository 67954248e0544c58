/* SPDX-License-Identifier: GPL-2.0 */
#ifndef _LINUX_PERF_BUILD_ID_OFFSET_H
#define _LINUX_PERF_BUILD_ID_OFFSET_H

struct super_block;

#ifdef CONFIG_PERF_BUILD_ID_OFFSET
void perf_bido_forget_sb(struct super_block *sb);
#else
static inline void perf_bido_forget_sb(struct super_block *sb) { }
#endif

#endif /* _LINUX_PERF_BUILD_ID_OFFSET_H */
