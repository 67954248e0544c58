// SPDX-License-Identifier: GPL-2.0
/*
 * PERF_SAMPLE_BUILD_ID_OFFSET: join samples with their
 * PERF_RECORD_BUILD_ID_OFFSET.
 *
 * A record lists, for the samples of one kernel entry of a task (they share
 * a cookie), the VMAs that cover their user addresses, each with its file
 * offset and build-ID.  It is written when the task returns to user space,
 * so it comes after those samples in time, maybe from another CPU's
 * buffer.  Such a record is lazy mmap information: its maps go into the
 * thread's maps (util/build-id-offset-dso.c), and the samples are held
 * until it arrives, so that everything that resolves addresses through
 * thread__find_map() (report, script, annotate, callchains) works
 * unchanged without MMAP records.
 *
 * Holding relies on time order (ordered events): per tid entries do not
 * overlap, so once a record or a sample with another cookie shows up for a
 * tid, the held samples of the older cookie will get no record and go out
 * unresolved by it (counted).  The same at the thread's exit and at the
 * end; and when more than BIDO_HELD_MAX_BYTES are held, the oldest go.
 * Those are delivered with none of their user addresses resolved: the
 * thread's maps are those of other records, which need not be what the
 * sample saw.  So are the samples of a record flagged MM_CHANGED, and the
 * samples still held when the thread execs.  A record flagged SAME_MAPS
 * has no maps: it names the thread's last record, whose maps cover its
 * samples; one that names another (the reader missed it) resolves none.
 * A sample with no user address (kernel mode, no user frames, branches or
 * stack) waits for nothing.
 *
 * The tool still sees the events in time order: every event after a held
 * sample waits behind it (util/build-id-offset-order.c).  The samples of
 * fp,defer wait for their CALLCHAIN_DEFERRED in the same queue (see
 * util/callchain-deferred.c).  bido_join__event() is the entry point of
 * both joins.
 */
#include <errno.h>
#include <stdlib.h>
#include <linux/err.h>
#include <linux/list.h>
#include <linux/string.h>
#include <linux/zalloc.h>
#include <perf/event.h>

#include "branch.h"
#include "build-id-offset.h"
#include "build-id-offset-internal.h"
#include "callchain-deferred.h"
#include "debug.h"
#include "event.h"
#include "events_stats.h"
#include "evsel.h"
#include "hashmap.h"
#include "machine.h"
#include "sample.h"
#include "thread.h"

/* Held sample bytes above which the oldest are delivered unresolved */
#define BIDO_HELD_MAX_BYTES	(64UL << 20)

/*
 * A sample recorded with PERF_SAMPLE_BUILD_ID_OFFSET whose
 * PERF_RECORD_BUILD_ID_OFFSET has not been seen yet: a copy of the event,
 * parsed again when it is delivered.
 */
struct bido_held {
	struct list_head	 node;		/* bido_thread::held */
	struct list_head	 age;		/* bido_join::held, oldest first */
	struct evsel		*evsel;
	u64			 cookie;
	u32			 tid;
	/* Its record came flagged MM_CHANGED: no user address resolves */
	bool			 mm_changed;
	/*
	 * Its record came flagged SAME_MAPS, naming a record not the thread's
	 * last (missed), one that resolves nothing, or none (malformed):
	 * no user address resolves
	 */
	bool			 same_unknown;
	/* It has no cookie: no record will come, no user address resolves */
	bool			 no_cookie;
	union perf_event	*event;
	/* Its place in the order of events (util/build-id-offset-order.c) */
	struct bido_slot	*slot;
};

/*
 * Delivers a held sample.  joined: its record arrived (and its maps are
 * in the thread, unless held->mm_changed), otherwise none came: then no
 * user address of the sample may be resolved.
 */
typedef int (*bido_deliver_fn)(struct bido_held *held, bool joined, void *data);

struct bido_thread {
	u64			 last_cookie;	/* of the last record, 0: none */
	bool			 last_mm_changed; /* that record said MM_CHANGED */
	/* that record said SAME_MAPS, and its maps are not known */
	bool			 last_same_unknown;
	struct list_head	 held;
};

/* The join of @machine, made at its first use; NULL if out of memory */
struct bido_join *machine__bido_join(struct machine *machine)
{
	struct bido_join *join = machine->bido_join;

	if (join)
		return join;

	join = zalloc(sizeof(*join));
	if (!join)
		return NULL;
	join->threads = hashmap__new(bido_tid_hash, bido_tid_equal, NULL);
	if (IS_ERR(join->threads)) {
		free(join);
		return NULL;
	}
	if (bido_dsos__init(join)) {
		hashmap__free(join->threads);
		free(join);
		return NULL;
	}
	INIT_LIST_HEAD(&join->held);
	INIT_LIST_HEAD(&join->order);
	INIT_LIST_HEAD(&join->waiting);
	machine->bido_join = join;
	return join;
}

static struct bido_thread *bido_join__thread(struct bido_join *join, u32 tid, bool create)
{
	struct bido_thread *bt;

	if (hashmap__find(join->threads, tid, &bt))
		return bt;
	if (!create)
		return NULL;

	bt = zalloc(sizeof(*bt));
	if (!bt)
		return NULL;
	INIT_LIST_HEAD(&bt->held);
	if (hashmap__add(join->threads, tid, bt)) {
		free(bt);
		return NULL;
	}
	return bt;
}

static void bido_held__delete(struct bido_join *join, struct bido_held *held)
{
	list_del(&held->node);
	list_del(&held->age);
	join->held_bytes -= held->event->header.size;
	bido_slot__cancel(held->slot);
	free(held->event);
	free(held);
}

/* Deliver, then free, one held sample; joined: its record was seen */
static int bido_join__release(struct bido_join *join, struct bido_held *held, bool joined,
			      bido_deliver_fn deliver, void *data)
{
	int err = deliver(held, joined, data);

	bido_held__delete(join, held);
	return err;
}

/*
 * Deliver the held samples of a thread whose cookie is (joined) or is not
 * (!joined) the given one.
 */
static int bido_thread__release(struct bido_join *join, struct bido_thread *bt, u64 cookie,
				bool joined, bido_deliver_fn deliver, void *data)
{
	struct bido_held *held, *n;
	int err = 0;

	/*
	 * The samples a thread holds are of one entry (one cookie): the
	 * others went when it was held.  A look at the first will do, or
	 * each sample of an entry would walk those before it.
	 */
	if (list_empty(&bt->held) ||
	    (list_first_entry(&bt->held, struct bido_held, node)->cookie == cookie) != joined)
		return 0;
	list_for_each_entry_safe(held, n, &bt->held, node) {
		if ((held->cookie == cookie) != joined)
			continue;
		err = bido_join__release(join, held, joined, deliver, data);
		if (err)
			break;
	}
	return err;
}

/* Deliver a sample now, none of its user addresses resolved */
static int bido_join__unresolved(struct evsel *evsel, union perf_event *event,
				 struct perf_sample *sample, bool no_cookie,
				 struct bido_slot *slot, bido_deliver_fn deliver, void *data)
{
	struct bido_held now = {
		.evsel = evsel, .cookie = sample->bido_cookie, .tid = sample->tid,
		.no_cookie = no_cookie, .event = event,
	};
	int err;

	bido_slot__hold(slot, &now.slot);
	err = deliver(&now, /*joined=*/false, data);
	bido_slot__cancel(now.slot);
	return err ? err : 1;
}

/*
 * Whether a sample has a user address that a record would resolve: the
 * IP outside the kernel, user frames (or deferred ones), a branch or a
 * data address in user space, a user stack to unwind.
 */
static bool bido_sample__has_user(struct machine *machine, struct evsel *evsel,
				  struct perf_sample *sample)
{
	u64 i;

	if (sample->cpumode != PERF_RECORD_MISC_KERNEL &&
	    sample->cpumode != PERF_RECORD_MISC_GUEST_KERNEL)
		return true;
	for (i = 0; sample->callchain && i < sample->callchain->nr; i++) {
		if (sample->callchain->ips[i] == PERF_CONTEXT_USER ||
		    sample->callchain->ips[i] == PERF_CONTEXT_USER_DEFERRED)
			return true;
	}
	for (i = 0; sample->branch_stack && i < sample->branch_stack->nr; i++) {
		struct branch_entry *br = &perf_sample__branch_entries(sample)[i];

		if (!machine__kernel_ip(machine, br->from) || !machine__kernel_ip(machine, br->to))
			return true;
	}
	if (sample->user_stack.size)
		return true;
	return (evsel->core.attr.sample_type & PERF_SAMPLE_ADDR) && sample->addr &&
	       !machine__kernel_ip(machine, sample->addr);
}


/**
 * bido_join__hold - keep a sample until its record arrives
 *
 * Returns 1 if the sample was kept (it is delivered later through
 * @deliver) or delivered already, 0 if the caller delivers it now: its
 * event has no PERF_SAMPLE_BUILD_ID_OFFSET, it has no user address, or
 * its record was seen already.  A sample of such an event without a
 * cookie (the kernel promised no record: the task was exiting, or the
 * sample came after its entry's record was written) goes out at once
 * with no user address resolved, counted in @stats, as does one there
 * is no memory to keep (counted as without its record).  Counts too the
 * samples that name a record seen already (the task's last).  @slot: the
 * sample's place in the order of events if it has one already (it was
 * held for its deferred callchain), else it gets one if kept and
 * @order.  Only for sessions that deliver in time order.
 */
static int bido_join__hold(struct machine *machine, struct evsel *evsel,
			   union perf_event *event, struct perf_sample *sample,
			   struct events_stats *stats, struct bido_slot *slot, bool order,
			   bido_deliver_fn deliver, void *data)
{
	struct bido_join *join;
	struct bido_thread *bt;
	struct bido_held *held;
	int err;

	if (!(evsel->core.attr.sample_type & PERF_SAMPLE_BUILD_ID_OFFSET))
		return 0;
	if (!sample->bido_cookie) {
		stats->nr_bido_no_cookie++;
		return bido_join__unresolved(evsel, event, sample, /*no_cookie=*/true, slot,
					     deliver, data);
	}
	if (!bido_sample__has_user(machine, evsel, sample))
		return 0;

	join = machine__bido_join(machine);
	bt = join ? bido_join__thread(join, sample->tid, /*create=*/true) : NULL;
	if (!bt)
		return bido_join__unresolved(evsel, event, sample, /*no_cookie=*/false, slot,
					     deliver, data);

	/*
	 * A sample taken while the record of its entry was being written, or
	 * one that names the thread's last record: its maps are in.  Unless
	 * that record said MM_CHANGED, or SAME_MAPS with maps not known: then
	 * it resolves nothing, at once.
	 */
	if (bt->last_cookie == sample->bido_cookie) {
		struct bido_held now = {
			.evsel = evsel, .cookie = sample->bido_cookie, .tid = sample->tid,
			.mm_changed = bt->last_mm_changed,
			.same_unknown = bt->last_same_unknown, .event = event,
		};

		if (!bt->last_mm_changed && !bt->last_same_unknown) {
			stats->nr_bido_reused++;
			return 0;
		}
		bido_slot__hold(slot, &now.slot);
		err = deliver(&now, /*joined=*/true, data);
		bido_slot__cancel(now.slot);
		return err ? err : 1;
	}

	/*
	 * The task returned to user space since the samples held for it were
	 * taken, and their record, written before that, did not come.
	 */
	err = bido_thread__release(join, bt, sample->bido_cookie, /*joined=*/false,
				   deliver, data);
	if (err)
		return err;

	held = zalloc(sizeof(*held));
	if (held)
		held->event = memdup(event, event->header.size);
	if (!held || !held->event) {
		free(held);
		return bido_join__unresolved(evsel, event, sample, /*no_cookie=*/false, slot,
					     deliver, data);
	}
	held->evsel = evsel;
	held->cookie = sample->bido_cookie;
	held->tid = sample->tid;
	if (!slot && order) {
		slot = bido_order__reserve(machine, sample->tid);
		if (!slot)
			stats->nr_bido_unordered++;
	}
	bido_slot__hold(slot, &held->slot);
	list_add_tail(&held->node, &bt->held);
	list_add_tail(&held->age, &join->held);
	join->held_bytes += event->header.size;

	while (join->held_bytes > BIDO_HELD_MAX_BYTES) {
		held = list_first_entry(&join->held, struct bido_held, age);
		err = bido_join__release(join, held, /*joined=*/false, deliver, data);
		if (err)
			return err;
	}
	return 1;
}

/*
 * Before the record's maps go in: the samples held for older entries of
 * the thread will get no record.  Delivered now, they resolve against what
 * the thread had before.
 */
static int bido_join__record_begin(struct machine *machine, u32 tid, u64 cookie,
				   bido_deliver_fn deliver, void *data)
{
	struct bido_join *join = machine->bido_join;
	struct bido_thread *bt;

	if (!join)
		return 0;
	bt = bido_join__thread(join, tid, /*create=*/false);
	if (!bt)
		return 0;
	return bido_thread__release(join, bt, cookie, /*joined=*/false, deliver, data);
}

/*
 * After the record's maps went in: deliver the samples it is for.  A
 * record flagged MM_CHANGED has no maps: its samples are of the program
 * before an exec.  One flagged SAME_MAPS has none either: those of the
 * record it names (@same_as, 0 if malformed), in the thread if that is
 * the thread's last record, cover its samples.  If it names another (the
 * reader missed that record), one whose maps are not in, or none, its
 * samples resolve nothing: the thread's maps need not be what they saw.
 */
static int bido_join__record_end(struct machine *machine, u32 tid, u64 cookie,
				 u32 flags, u64 same_as, bido_deliver_fn deliver, void *data)
{
	struct bido_join *join = machine__bido_join(machine);
	bool mm_changed = flags & PERF_BUILD_ID_OFFSET_F_MM_CHANGED;
	bool same_unknown = false;
	struct bido_thread *bt;
	struct bido_held *held;

	if (!join)
		return 0;
	bt = bido_join__thread(join, tid, /*create=*/true);
	if (!bt)
		return 0;
	if ((flags & PERF_BUILD_ID_OFFSET_F_SAME_MAPS) && !mm_changed)
		same_unknown = !same_as || same_as != bt->last_cookie ||
			       bt->last_mm_changed || bt->last_same_unknown;
	/* Later samples of the entry name it too, and later records maybe */
	bt->last_cookie = cookie;
	bt->last_mm_changed = mm_changed;
	bt->last_same_unknown = same_unknown;
	list_for_each_entry(held, &bt->held, node) {
		if (held->cookie == cookie) {
			held->mm_changed = mm_changed;
			held->same_unknown = same_unknown;
		}
	}
	return bido_thread__release(join, bt, cookie, /*joined=*/true, deliver, data);
}

/*
 * The task exited: its record, if any, came before its EXIT.  Or, @exec,
 * it exec()ed: its held samples are of the old program, and any record
 * of them that comes now says MM_CHANGED; they go out as such.  Either
 * way the thread starts over.
 */
static int bido_join__end_thread(struct machine *machine, u32 tid, bool exec,
				 bido_deliver_fn deliver, void *data)
{
	struct bido_join *join = machine->bido_join;
	struct bido_thread *bt;
	struct bido_held *held;
	int err;

	if (!join)
		return 0;
	bt = bido_join__thread(join, tid, /*create=*/false);
	if (!bt)
		return 0;
	list_for_each_entry(held, &bt->held, node)
		held->mm_changed = exec;
	err = bido_thread__release(join, bt, 0, /*joined=*/false, deliver, data);
	if (!err && list_empty(&bt->held)) {
		hashmap__delete(join->threads, tid, NULL, NULL);
		free(bt);
	}
	return err;
}

/* Hand a sample to the tool; @unresolved: with no user address resolved */
int bido_sample__deliver(struct evsel *evsel, union perf_event *event,
			 struct perf_sample *sample, struct machine *machine,
			 bool unresolved, struct bido_join_args *args)
{
	struct thread *thread = NULL;
	int ret;

	if (unresolved) {
		thread = machine__findnew_thread(machine, sample->pid, sample->tid);
		if (thread)
			thread__set_bido_unresolved(thread, true);
	}
	ret = args->ops->sample(evsel, event, sample, machine, args->data);
	if (thread) {
		thread__set_bido_unresolved(thread, false);
		thread__put(thread);
	}
	return ret;
}

/**
 * bido_held__deliver - parse a held sample again and hand it on
 *
 * Counts it in @stats if it goes out unresolved: without its record
 * (!joined), of the program before an exec (held->mm_changed), or with
 * a SAME_MAPS record whose maps are not known (held->same_unknown).  Then
 * none of its user addresses resolve against the thread's maps, which are
 * those of other records, maybe of a later address space or program.
 */
static int bido_held__deliver(struct bido_held *held, bool joined, struct bido_join_args *args)
{
	struct events_stats *stats = args->stats;
	struct perf_sample sample;
	int ret;

	if (held->mm_changed)
		stats->nr_bido_mm_changed_samples++;
	else if (held->same_unknown)
		stats->nr_bido_same_unknown++;
	else if (!joined && !held->no_cookie)
		stats->nr_bido_unjoined++;

	ret = evsel__parse_sample(held->evsel, held->event, &sample);
	if (ret) {
		pr_err("Can't parse sample, err = %d\n", ret);
		return ret;
	}
	return bido_order__sample(args, held->slot, held->evsel, held->event, &sample,
				  !joined || held->mm_changed || held->same_unknown);
}

static int bido_join__deliver(struct bido_held *held, bool joined, void *data)
{
	return bido_held__deliver(held, joined, data);
}

/*
 * A sample goes on, from the session or from the deferred callchain join
 * (@slot: its place in the order, if it has one): to its build-ID offset
 * record, or to the tool.  1 if taken, 0 if the caller delivers it now.
 */
static int bido_join__sample(struct bido_join_args *args, struct bido_slot *slot,
			     struct evsel *evsel, union perf_event *event,
			     struct perf_sample *sample)
{
	const struct bido_join_ops *ops = args->ops;
	int ret;

	if (ops->bido) {
		ret = bido_join__hold(args->machine, evsel, event, sample, args->stats, slot,
				      !!ops->event, bido_join__deliver, args);
		if (ret)
			return ret;
	}
	if (!slot && !bido_order__waiting(args->machine, args))
		return 0;
	return bido_order__sample(args, slot, evsel, event, sample, /*unresolved=*/false) ?: 1;
}

/* A sample held for its deferred callchain goes on, merged or not */
static int bido_join__deferred(struct evsel *evsel, union perf_event *event,
			       struct perf_sample *sample, bool merged, struct bido_slot *slot,
			       void *data)
{
	struct bido_join_args *args = data;
	int ret;

	if (!merged)
		args->stats->nr_deferred_unmerged++;
	ret = bido_join__sample(args, slot, evsel, event, sample);
	if (ret)
		return ret < 0 ? ret : 0;
	return args->ops->sample(evsel, event, sample, args->machine, args->data);
}

/* A sample arrives: its deferred callchain first, then its record */
static int bido_join__arrive(struct bido_join_args *args, struct evsel *evsel,
			     union perf_event *event, struct perf_sample *sample)
{
	struct bido_slot *slot;
	int ret;

	if (args->ops->deferred && sample->deferred_callchain) {
		slot = args->ops->event ? bido_order__reserve(args->machine, sample->tid) : NULL;
		if (args->ops->event && !slot)
			args->stats->nr_bido_unordered++;
		ret = deferred_join__hold(args->machine, evsel, event, sample, slot,
					  bido_join__deferred, args);
		if (ret)
			return ret;
		/* Not kept: no memory */
		bido_slot__cancel(slot);
	}
	return bido_join__sample(args, NULL, evsel, event, sample);
}

/**
 * bido_join__event - the joins' part in an event of @machine
 *
 * For the tools that see events in time order (report, script, inject,
 * top), before their own processing of each event.  With @ops->deferred a
 * sample with a deferred callchain waits for its CALLCHAIN_DEFERRED (see
 * util/callchain-deferred.c), with @ops->bido a sample of an event with
 * PERF_SAMPLE_BUILD_ID_OFFSET for its record (see bido_join__hold());
 * then it goes to @ops->sample.  At a record, the thread's samples of
 * older entries go out unresolved, @ops->record puts its maps in, and its
 * own samples go out.  At an exec (COMM) or an EXIT, the samples the
 * thread still waits with go out.  Counted in @stats.
 *
 * With @ops->event, every event waits behind the held samples before it,
 * to go to the tool in time order: samples to @ops->sample, records to
 * @ops->record or, if they waited, with the other events to @ops->event.
 *
 * Returns 1 if the join took the event (the caller is done with it), 0 if
 * the caller processes it as usual, now, or a negative error.
 */
int bido_join__event(struct machine *machine, struct evsel *evsel, union perf_event *event,
		     struct perf_sample *sample, struct events_stats *stats,
		     const struct bido_join_ops *ops, void *data)
{
	struct perf_record_build_id_offset *bido = &event->build_id_offset;
	struct bido_join_args args = {
		.machine = machine, .stats = stats, .ops = ops, .data = data,
	};
	u64 same_as;
	u32 tid;
	int ret;

	switch (event->header.type) {
	case PERF_RECORD_SAMPLE:
		return bido_join__arrive(&args, evsel, event, sample);
	case PERF_RECORD_BUILD_ID_OFFSET:
		if (!ops->bido)
			break;
		same_as = perf_event__build_id_offset_same_as(event, machine->id_hdr_size);
		ret = bido_join__record_begin(machine, bido->tid, bido->cookie, bido_join__deliver,
					      &args);
		if (!ret)
			ret = bido_order__record(&args, event, sample);
		if (!ret)
			ret = bido_join__record_end(machine, bido->tid, bido->cookie, bido->flags,
						    same_as, bido_join__deliver, &args);
		return ret ?: 1;
	case PERF_RECORD_CALLCHAIN_DEFERRED:
		if (!ops->deferred)
			break;
		ret = deferred_join__record(machine, event, sample, bido_join__deferred, &args);
		if (ret)
			return ret;
		break;
	case PERF_RECORD_COMM:
	case PERF_RECORD_EXIT:
		if (event->header.type == PERF_RECORD_COMM &&
		    !(event->header.misc & PERF_RECORD_MISC_COMM_EXEC))
			break;
		/*
		 * Samples of the old program still held go out now, before
		 * the exec replaces the thread's maps: none will come that
		 * covers them in the new program.
		 */
		tid = event->header.type == PERF_RECORD_COMM ? event->comm.tid : event->fork.tid;
		ret = ops->deferred ? deferred_join__end_thread(machine, tid, bido_join__deferred,
								&args) : 0;
		if (!ret && ops->bido)
			ret = bido_join__end_thread(machine, tid,
						    event->header.type == PERF_RECORD_COMM,
						    bido_join__deliver, &args);
		if (ret)
			return ret;
		break;
	default:
		break;
	}
	return bido_order__event(&args, event);
}

/* The end of the session: nothing more will come */
int bido_join__flush(struct machine *machine, struct events_stats *stats,
		     const struct bido_join_ops *ops, void *data)
{
	struct bido_join_args args = {
		.machine = machine, .stats = stats, .ops = ops, .data = data,
	};
	struct bido_join *join;
	struct bido_held *held;
	int err = 0;

	/* First the deferred callchains: their samples may go on to be held */
	if (ops->deferred)
		err = deferred_join__flush(machine, bido_join__deferred, &args);
	join = machine->bido_join;
	while (!err && join && !list_empty(&join->held)) {
		held = list_first_entry(&join->held, struct bido_held, age);
		err = bido_join__release(join, held, /*joined=*/false, bido_join__deliver, &args);
	}
	return err ?: bido_order__flush(machine, &args);
}

void bido_join__delete(struct machine *machine)
{
	struct bido_join *join = machine->bido_join;
	struct hashmap_entry *cur;
	size_t bkt;

	if (!join)
		return;
	bido_order__exit(join);
	while (!list_empty(&join->held))
		bido_held__delete(join, list_first_entry(&join->held, struct bido_held, age));
	hashmap__for_each_entry(join->threads, cur, bkt)
		free(cur->pvalue);
	hashmap__free(join->threads);
	bido_dsos__exit(join);
	zfree(&machine->bido_join);
}
