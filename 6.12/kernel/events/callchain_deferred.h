/* SPDX-License-Identifier: GPL-2.0 */
#ifndef _KERNEL_EVENTS_CALLCHAIN_DEFERRED_H
#define _KERNEL_EVENTS_CALLCHAIN_DEFERRED_H

/*
 * Deferred user callchains (attr.defer_callchain): the hooks core.c
 * calls.  See callchain_deferred.c.
 */

#include <linux/types.h>

struct perf_event;

#ifdef CONFIG_PERF_DEFERRED_CALLCHAIN

void perf_callchain_deferred_init(void);
u64 perf_callchain_defer(struct perf_event *event);

#else /* !CONFIG_PERF_DEFERRED_CALLCHAIN */

static inline void perf_callchain_deferred_init(void) { }

/* No cookie: the sample walks the user stack itself */
static inline u64 perf_callchain_defer(struct perf_event *event)
{
	return 0;
}

#endif /* CONFIG_PERF_DEFERRED_CALLCHAIN */

#endif /* _KERNEL_EVENTS_CALLCHAIN_DEFERRED_H */
