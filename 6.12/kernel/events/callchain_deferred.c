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
 * Records go to events with attr.defer_output among the events of the
 * task's context and the side-band events of the CPU the work runs on
 * (perf_iterate_sb()), as upstream sends them; of those, only to the
 * receivers of the sessions whose events sampled the task in that entry
 * (perf_bido_note_entry()), so that two sessions on one task each get
 * their own.  Nothing references the sampling event between sample and
 * record, so an event closed in between leaves nothing to cancel or wait
 * for.
 *
 * A record is only as good as the user stack it walks: if the task
 * exec()ed in the entry, the stack is the new program's, and the record
 * has no frames (nr 0), rather than frames the samples never saw.
 *
 * PERF_SAMPLE_BUILD_ID_OFFSET asks the same framework in the same kernel
 * entry and gets the same cached walk, so its record of a cookie covers
 * every frame of the CALLCHAIN_DEFERRED record of that cookie.
 *
 * When no defer_output event exists anywhere, or the framework refuses
 * (a kernel thread, an exiting task, no user registers), or the entry's
 * records are out already and do not describe this sample, the sample
 * walks the user stack in the interrupt as without defer_callchain.
 */

#include <linux/perf_event.h>
#include <linux/printk.h>
#include <linux/sched.h>
#include <linux/unwind_deferred.h>

#include "internal.h"
#include "build_id_offset.h"
#include "callchain_deferred.h"

/* The values of Linux 6.19, which user space already knows */
static_assert(PERF_RECORD_CALLCHAIN_DEFERRED == 22);
static_assert(PERF_CONTEXT_USER_DEFERRED == (u64)-640);

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
	const struct perf_bido_sessions		*to;
};

static void perf_callchain_deferred_output(struct perf_event *event,
					   void *data)
{
	struct perf_callchain_deferred_output *out = data;
	struct perf_callchain_deferred_head head = out->head;
	struct perf_output_handle handle;
	struct perf_sample_data sample;
	unsigned int i;

	if (perf_bido_receiver(out->to, event) < 0)
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
	struct perf_bido_sessions to;

	if (perf_bido_close_entry(cookie, &to))
		out.head.nr = 0;
	out.to = &to;

	perf_iterate_sb(perf_callchain_deferred_output, &out, NULL);
}

/**
 * perf_callchain_defer - ask for the user callchain of this kernel entry
 * @event: the sampling event
 *
 * Context: a sample of current, any context (NMI included).
 *
 * Return: the cookie the record will carry, or 0 when no record will
 * come for this sample: the caller then walks the user stack itself.
 */
u64 perf_callchain_defer(struct perf_event *event)
{
	u64 cookie;

	if (!atomic_read(&nr_defer_output_events))
		return 0;
	if (unwind_deferred_request(&perf_callchain_unwind_work, &cookie) < 0)
		return 0;
	if (!perf_bido_note_entry(event, cookie))
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
