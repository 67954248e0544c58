// SPDX-License-Identifier: GPL-2.0
/*
 * Deferred user callchains: attr.defer_callchain, with the ABI of Linux
 * 6.19 (PERF_CONTEXT_USER_DEFERRED, PERF_RECORD_CALLCHAIN_DEFERRED).
 *
 * A sample of such an event, taken while current has a user context,
 * does not walk the user stack in the interrupt.  It asks the deferred
 * unwind framework for the stack, and its callchain holds the kernel
 * frames, then PERF_CONTEXT_USER_DEFERRED and the cookie the framework
 * gave (get_perf_callchain()).  Before the task returns to user space, or
 * while it exits with its mm, the framework walks the user stack once for
 * every tracer that asked during that kernel entry, and the callback here
 * writes the frames as one PERF_RECORD_CALLCHAIN_DEFERRED with the same
 * cookie.  Every sample of one kernel entry carries the same cookie: a
 * task sampled many times in one long system call gets one record.
 *
 * Records go where upstream sends them: to every event with
 * attr.defer_output among the events of the task's context and the
 * side-band events of the CPU the work runs on (perf_iterate_sb()).
 * Nothing references the sampling event between sample and record, so an
 * event closed in between leaves nothing to cancel or wait for.
 *
 * PERF_SAMPLE_BUILD_ID_OFFSET asks the same framework in the same kernel
 * entry and gets the same cached walk, so its record of a cookie covers
 * every frame of the CALLCHAIN_DEFERRED record of that cookie.
 *
 * When the framework refuses (a kernel thread, an exiting task, no user
 * registers) the sample walks the user stack in the interrupt as without
 * defer_callchain.
 */

#include <linux/perf_event.h>
#include <linux/printk.h>
#include <linux/sched.h>
#include <linux/unwind_deferred.h>

#include "internal.h"
#include "callchain_deferred.h"

static struct unwind_work perf_callchain_unwind_work;

/* The fixed part of PERF_RECORD_CALLCHAIN_DEFERRED, before ips[] */
struct perf_callchain_deferred_head {
	struct perf_event_header	header;
	u64				cookie;
	u64				nr;
};

struct perf_callchain_deferred_output {
	struct perf_callchain_deferred_head	head;
	const struct unwind_stacktrace		*trace;
};

static void perf_callchain_deferred_output(struct perf_event *event,
					   void *data)
{
	struct perf_callchain_deferred_output *out = data;
	struct perf_callchain_deferred_head head = out->head;
	struct perf_output_handle handle;
	struct perf_sample_data sample;
	unsigned int i;

	if (!event->attr.defer_output)
		return;

	perf_event_header__init(&head.header, &sample,
				PERF_RECORD_CALLCHAIN_DEFERRED,
				PERF_RECORD_MISC_USER,
				sizeof(head) + head.nr * sizeof(u64), event);
	/* No room: the ring buffer counts it lost */
	if (perf_output_begin(&handle, &sample, event, head.header.size))
		return;

	perf_output_put(&handle, head);
	for (i = 0; i < head.nr; i++) {
		u64 ip = out->trace->entries[i];

		perf_output_put(&handle, ip);
	}
	perf_event__output_id_sample(event, &handle, &sample);

	perf_output_end(&handle);
}

/*
 * The framework's callback: the user stack of the kernel entry whose
 * samples got @cookie.  An empty @trace (the walk failed) still makes a
 * record, with nr 0, so that the samples waiting for it are not held for
 * good.
 *
 * Context: current, in task context before it returns to user space or
 * in do_exit() with its mm; no locks held.
 */
static void perf_callchain_deferred_callback(struct unwind_work *work,
					     struct unwind_stacktrace *trace,
					     u64 cookie)
{
	struct perf_callchain_deferred_output out = {
		.head = {
			.cookie	= cookie,
			/*
			 * The header's size is 16 bits: no more frames than
			 * fit beside sample_id (48 bytes at most)
			 */
			.nr	= min_t(u64, trace->nr,
					(U16_MAX - sizeof(out.head) - 64) /
					sizeof(u64)),
		},
		.trace = trace,
	};

	perf_iterate_sb(perf_callchain_deferred_output, &out, NULL);
}

/**
 * perf_callchain_defer - ask for the user callchain of this kernel entry
 *
 * Context: a sample of current, any context (NMI included).
 *
 * Return: the cookie the record will carry, or 0 when the framework
 * refused: the caller then walks the user stack itself.
 */
u64 perf_callchain_defer(void)
{
	u64 cookie;

	if (unwind_deferred_request(&perf_callchain_unwind_work, &cookie) < 0)
		return 0;
	return cookie;
}

/* From perf_event_init(): one unwind_work for every perf event, for good */
void __init perf_callchain_deferred_init(void)
{
	int ret = unwind_deferred_init(&perf_callchain_unwind_work,
				       perf_callchain_deferred_callback);

	/* Then every request fails and samples walk the stack themselves */
	WARN(ret, "perf: no deferred user callchains: %d\n", ret);
}
