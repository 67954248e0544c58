// SPDX-License-Identifier: GPL-2.0
/*
 * The build-ID offset join for a tool that reads the ring buffers itself
 * and delivers their events in time order, without a session: perf top
 * with --buildid-offset.  Its samples wait for their records as in a
 * session (util/build-id-offset.c, without the order of events: perf top
 * needs none), the namer (util/build-id-offset-namer.c) names the files
 * of the processes that existed before perf top as it goes, and the comm
 * of a task without one is read from /proc at its first sample.
 */
#include "build-id-offset.h"
#include "build-id-offset-live.h"
#include "build-id-offset-namer.h"
#include "event.h"
#include "events_stats.h"
#include "machine.h"
#include "sample.h"
#include "thread.h"

/*
 * perf top joins and names on the thread that empties its queue: a pass
 * of naming once in this time at most, so that at most a fifth of that
 * thread's time goes to naming while files are left, and a long session
 * that has seen many processes does not look at each of them per event.
 */
#define BIDO_LIVE_PERIOD_NS	(5 * BIDO_NAME_BUDGET_NS)

/* A record's maps go in, as perf_event__process_build_id_offset() does */
static int bido_live__record(union perf_event *event, struct perf_sample *sample,
			     struct machine *machine, void *data __maybe_unused)
{
	return machine__process_build_id_offset(machine, event, sample);
}

/* A task that existed before the tool started: its comm, once */
static void bido_live__comm(struct machine *machine, struct perf_sample *sample)
{
	struct thread *thread;
	char comm[32];

	if (!sample->tid || sample->pid == (u32)-1)
		return;
	thread = machine__findnew_thread(machine, sample->pid, sample->tid);
	if (!thread)
		return;
	if (!thread__comm_set(thread) &&
	    !build_id_offset__read_comm(sample->pid, sample->tid, comm, sizeof(comm)))
		thread__set_comm(thread, comm, sample->time);
	thread__put(thread);
}

/**
 * bido_live__event - join live events, in time order, without a session
 *
 * For a tool that reads the buffers itself and delivers their events in
 * time order (perf top's ordered queue), on one thread.  The tool calls
 * this for each event of @machine before its own handling; @namer names
 * the files of processes that existed before the tool started (one pass
 * of bido_namer__run() per BIDO_LIVE_PERIOD_NS at most, at a sample or a
 * record), and the comm of a task without one is read from /proc at its
 * first sample.
 *
 * Returns 1 if the event was taken: a sample held for its record (it goes
 * to @fn later, or unresolved), or a record whose maps went in (and whose
 * samples went to @fn).  0: the tool handles the event itself.  Or a
 * negative error.
 */
int bido_live__event(struct machine *machine, struct bido_namer *namer, struct evsel *evsel,
		     union perf_event *event, struct perf_sample *sample,
		     struct events_stats *stats, bido_sample_fn fn, void *data)
{
	const struct bido_join_ops ops = {
		.sample = fn, .record = bido_live__record, .bido = true,
	};
	int ret;

	/*
	 * At samples too: a task that no longer needs new records still has
	 * files to name.  At an EXIT: the pid may be another process's next.
	 */
	if (namer && (event->header.type == PERF_RECORD_BUILD_ID_OFFSET ||
		      event->header.type == PERF_RECORD_EXIT))
		bido_namer__scan(namer, namer, event, event->header.size);
	if (namer && (event->header.type == PERF_RECORD_SAMPLE ||
		      event->header.type == PERF_RECORD_BUILD_ID_OFFSET)) {
		ret = bido_namer__run_every(namer, BIDO_LIVE_PERIOD_NS);
		if (ret < 0)
			return ret;
	}
	if (event->header.type == PERF_RECORD_SAMPLE)
		bido_live__comm(machine, sample);
	else if (event->header.type == PERF_RECORD_BUILD_ID_OFFSET)
		events_stats__inc(stats, event->header.type);
	return bido_join__event(machine, evsel, event, sample, stats, &ops, data);
}
