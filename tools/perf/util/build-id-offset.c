// SPDX-License-Identifier: GPL-2.0
/*
 * PERF_SAMPLE_BUILD_ID_OFFSET: join samples with their
 * PERF_RECORD_BUILD_ID_OFFSET and turn the records into maps.
 *
 * A record lists, for the samples of one kernel entry of a task (they share
 * a cookie), the VMAs that cover their user addresses, each with its file
 * offset and build-ID.  It is written when the task returns to user space,
 * so it comes after those samples in time, maybe from another CPU's
 * buffer.  Such a record is lazy mmap information: its maps go into the
 * thread's maps, and the samples are held until it arrives, so that
 * everything that resolves addresses through thread__find_map() (report,
 * script, annotate, callchains) works unchanged without MMAP records.
 *
 * Holding relies on time order (ordered events): per tid entries do not
 * overlap, so once a record or a sample with another cookie shows up for a
 * tid, the held samples of the older cookie will get no record and go out
 * unresolved by it (counted).  The same at the thread's exit and at the
 * end; and when more than BIDO_HELD_MAX_BYTES are held, the oldest go.
 * Those are delivered with none of their user addresses resolved: the
 * thread's maps are those of other records, which need not be what the
 * sample saw.  So are the samples of a record flagged MM_CHANGED, and the
 * samples still held when the thread execs.  A sample with no user
 * address (kernel mode, no user frames, branches or stack) waits for
 * nothing.
 *
 * The tool still sees the events in time order: while a sample is held,
 * every event after it waits behind it in a queue (a copy of each, in the
 * order they came), and goes to the tool once the samples before it went,
 * each with its own time.  A record goes just before the first sample it
 * is for, so that its maps are in when that sample resolves.  When nothing
 * is held, events go straight on.  Past BIDO_ORDER_MAX_BYTES of waiting
 * events the oldest held sample lets them by: it goes out of order later,
 * counted.  The samples of fp,defer wait for their CALLCHAIN_DEFERRED in
 * the same queue (see util/callchain-deferred.c).
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <linux/err.h>
#include <linux/kernel.h>
#include <linux/string.h>
#include <linux/zalloc.h>
#include <api/fs/fs.h>
#include <internal/lib.h>
#include <perf/event.h>
#ifdef HAVE_LIBELF_SUPPORT
#include <gelf.h>
#endif
#ifdef HAVE_DEBUGINFOD_SUPPORT
#include <elfutils/debuginfod.h>
#endif

#include "branch.h"
#include "build-id-offset.h"
#include "build-id.h"
#include "callchain.h"
#include "callchain-deferred.h"
#include "debug.h"
#include "dso.h"
#include "dsos.h"
#include "event.h"
#include "events_stats.h"
#include "evsel.h"
#include "hashmap.h"
#include "machine.h"
#include "map.h"
#include "maps.h"
#include "mutex.h"
#include "sample.h"
#include "symbol.h"
#include "thread.h"
#include "time-utils.h"
#include "vdso.h"

/* Held sample bytes above which the oldest are delivered unresolved */
#define BIDO_HELD_MAX_BYTES	(64UL << 20)

/* Bytes of events waiting behind held samples above which one lets them by */
#define BIDO_ORDER_MAX_BYTES	(64UL << 20)

/* DSOs known by build-ID only, until a name is found: "[build-id:HEX]" */
#define BIDO_DSO_PREFIX		"[build-id:"

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
	/* It has no cookie: no record will come, no user address resolves */
	bool			 no_cookie;
	union perf_event	*event;
	/* Its place in the order of events (see struct bido_slot) */
	struct bido_slot	*slot;
};

/*
 * An event on its way to the tool while a sample before it is held: its
 * place in bido_join::order.  A held sample's slot has no event until the
 * sample goes on; its holder points to it (owner).
 */
struct bido_slot {
	struct list_head	 node;		/* bido_join::order */
	/* bido_join::waiting while a held sample's, without its event */
	struct list_head	 wait;
	u32			 tid;		/* of that sample */
	struct bido_slot	**owner;	/* the held sample's pointer to it */
	struct machine		*machine;
	struct evsel		*evsel;		/* of a sample; NULL: another event */
	union perf_event	*event;		/* a copy, NULL while held */
	/* A sample none of whose user addresses may resolve */
	bool			 unresolved;
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
	struct list_head	 held;
};

struct bido_join {
	struct hashmap		*threads;	/* tid -> struct bido_thread */
	struct list_head	 held;		/* every held sample, oldest first */
	size_t			 held_bytes;
	struct list_head	 order;		/* struct bido_slot, in time order */
	/* The slots of held samples, whichever join holds them */
	struct list_head	 waiting;
	size_t			 order_bytes;
	bool			 ordering;	/* delivering from order */
	struct hashmap		*dsos;		/* build-ID -> struct bido_dso */
	/*
	 * machine->dsos.cnt and dso__build_id_generation when dsos last had
	 * every DSO of machine->dsos that has a build-ID
	 */
	unsigned int		 dsos_cnt, dsos_gen;
	u64			 nr_dso_scans;
};

/*
 * The index of build_id_offset__find_dso(): every DSO of machine->dsos that
 * has a build-ID, by build-ID; one with a name beats a placeholder.
 */
struct bido_dso {
	struct build_id		 bid;
	struct dso		*dso;
	bool			 used;		/* a record's map has it */
};

static size_t bido_tid_hash(long key, void *ctx __maybe_unused)
{
	return key;
}

static bool bido_tid_equal(long key1, long key2, void *ctx __maybe_unused)
{
	return key1 == key2;
}

/* Build-IDs are hashes: their first bytes are as good a hash as any */
static size_t bido_bid_hash(long key, void *ctx __maybe_unused)
{
	const struct build_id *bid = (const struct build_id *)key;
	size_t hash = 0;

	memcpy(&hash, bid->data, min(bid->size, sizeof(hash)));
	return hash;
}

bool build_id_offset__build_id_equal(const struct build_id *a, const struct build_id *b)
{
	return a->size == b->size && !memcmp(a->data, b->data, a->size);
}

static bool bido_bid_equal(long key1, long key2, void *ctx __maybe_unused)
{
	return build_id_offset__build_id_equal((const struct build_id *)key1,
				   (const struct build_id *)key2);
}

static struct bido_join *machine__bido_join(struct machine *machine)
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
	join->dsos = hashmap__new(bido_bid_hash, bido_bid_equal, NULL);
	if (IS_ERR(join->dsos)) {
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

/*
 * The held sample whose pointer is @owner keeps its place @slot, taken
 * from its holder before (the deferred join); NULL: nobody holds it now.
 */
void bido_slot__hold(struct bido_slot *slot, struct bido_slot **owner)
{
	if (owner)
		*owner = slot;
	if (!slot)
		return;
	if (slot->owner && slot->owner != owner)
		*slot->owner = NULL;
	slot->owner = owner;
}

/* A held sample dropped, not delivered: its place goes */
void bido_slot__cancel(struct bido_slot *slot)
{
	if (!slot)
		return;
	if (slot->owner)
		*slot->owner = NULL;
	list_del(&slot->node);
	list_del(&slot->wait);
	free(slot);
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

static struct bido_slot *bido_order__reserve(struct machine *machine, u32 tid);

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
	 * that record said MM_CHANGED: then it resolves nothing, at once.
	 */
	if (bt->last_cookie == sample->bido_cookie) {
		struct bido_held now = {
			.evsel = evsel, .cookie = sample->bido_cookie,
			.tid = sample->tid, .mm_changed = true, .event = event,
		};

		if (!bt->last_mm_changed) {
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
 * before an exec.
 */
static int bido_join__record_end(struct machine *machine, u32 tid, u64 cookie,
				 u32 flags, bido_deliver_fn deliver, void *data)
{
	struct bido_join *join = machine__bido_join(machine);
	bool mm_changed = flags & PERF_BUILD_ID_OFFSET_F_MM_CHANGED;
	struct bido_thread *bt;
	struct bido_held *held;

	if (!join)
		return 0;
	bt = bido_join__thread(join, tid, /*create=*/true);
	if (!bt)
		return 0;
	/* Later samples of the entry name it too */
	bt->last_cookie = cookie;
	bt->last_mm_changed = mm_changed;
	list_for_each_entry(held, &bt->held, node)
		if (held->cookie == cookie)
			held->mm_changed = mm_changed;
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

/* Where the events the join delivers go */
struct bido_join_args {
	struct machine			*machine;
	struct events_stats		*stats;
	const struct bido_join_ops	*ops;
	void				*data;
};

/* Hand a sample to the tool; @unresolved: with no user address resolved */
static int bido_sample__deliver(struct evsel *evsel, union perf_event *event,
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

/* ---- Time order: events wait behind held samples ---- */

/* The order of events of @machine's session; NULL: none (a live tool) */
static struct bido_join *bido_order__join(struct machine *machine,
					  const struct bido_join_args *args)
{
	return args->ops->event ? machine__bido_join(machine) : NULL;
}

static bool bido_order__waiting(struct machine *machine, const struct bido_join_args *args)
{
	return args->ops->event && machine->bido_join && !list_empty(&machine->bido_join->order);
}

/* A place at the end of the order for a sample of @tid about to be held */
static struct bido_slot *bido_order__reserve(struct machine *machine, u32 tid)
{
	struct bido_join *join = machine__bido_join(machine);
	struct bido_slot *slot = join ? zalloc(sizeof(*slot)) : NULL;

	if (!slot)
		return NULL;
	slot->machine = machine;
	slot->tid = tid;
	list_add_tail(&slot->node, &join->order);
	list_add_tail(&slot->wait, &join->waiting);
	return slot;
}

/* Hand the event of a slot that came to the head to the tool */
static int bido_slot__deliver(struct bido_slot *slot, struct bido_join_args *args)
{
	struct perf_sample sample;
	int ret;

	if (!slot->evsel)
		return args->ops->event(slot->event, slot->machine, args->data);
	ret = evsel__parse_sample(slot->evsel, slot->event, &sample);
	if (ret) {
		pr_err("Can't parse sample, err = %d\n", ret);
		return ret;
	}
	return bido_sample__deliver(slot->evsel, slot->event, &sample, slot->machine,
				    slot->unresolved, args);
}

/*
 * Deliver the events at the head of the order up to the first held
 * sample.  Past BIDO_ORDER_MAX_BYTES waiting, that sample lets them by:
 * it goes at its record's time, out of order (counted).
 */
static int bido_order__drain(struct bido_join *join, struct bido_join_args *args)
{
	int err = 0;

	if (join->ordering)
		return 0;
	join->ordering = true;
	while (!err && !list_empty(&join->order)) {
		struct bido_slot *slot = list_first_entry(&join->order, struct bido_slot, node);

		if (!slot->event) {
			if (join->order_bytes <= BIDO_ORDER_MAX_BYTES)
				break;
			args->stats->nr_bido_unordered++;
			bido_slot__cancel(slot);
			continue;
		}
		list_del(&slot->node);
		join->order_bytes -= slot->event->header.size;
		err = bido_slot__deliver(slot, args);
		free(slot->event);
		free(slot);
	}
	join->ordering = false;
	return err;
}

/*
 * A copy of @event in its place: @slot, the one its sample held, or (NULL)
 * at the end of the order, or @before another slot.  False if there is
 * no memory for it.
 */
static bool bido_order__put(struct bido_join *join, struct bido_slot *slot,
			    struct bido_slot *before, struct machine *machine,
			    struct evsel *evsel, union perf_event *event, bool unresolved)
{
	union perf_event *copy = memdup(event, event->header.size);

	if (!copy)
		return false;
	if (!slot) {
		slot = zalloc(sizeof(*slot));
		if (!slot) {
			free(copy);
			return false;
		}
		list_add_tail(&slot->node, before ? &before->node : &join->order);
	} else {
		list_del(&slot->wait);
	}
	INIT_LIST_HEAD(&slot->wait);
	bido_slot__hold(slot, NULL);
	slot->machine = machine;
	slot->evsel = evsel;
	slot->event = copy;
	slot->unresolved = unresolved;
	join->order_bytes += event->header.size;
	return true;
}

/*
 * A sample goes to the tool: into its place in the order (@slot), or at
 * the end if events wait, or at once.
 */
static int bido_order__sample(struct bido_join_args *args, struct bido_slot *slot,
			      struct evsel *evsel, union perf_event *event,
			      struct perf_sample *sample, bool unresolved)
{
	struct machine *machine = args->machine;
	struct bido_join *join;

	if (!slot && !bido_order__waiting(machine, args))
		return bido_sample__deliver(evsel, event, sample, machine, unresolved, args);
	join = machine->bido_join;
	if (!bido_order__put(join, slot, NULL, machine, evsel, event, unresolved)) {
		bido_slot__cancel(slot);
		args->stats->nr_bido_unordered++;
		return bido_sample__deliver(evsel, event, sample, machine, unresolved, args);
	}
	return bido_order__drain(join, args);
}

/*
 * Any other event: 1 if it waits behind a held sample (it goes to
 * @args->ops->event in its turn), 0 if the caller processes it now.
 */
static int bido_order__event(struct bido_join_args *args, union perf_event *event)
{
	struct machine *machine = args->machine;

	if (!bido_order__waiting(machine, args))
		return 0;
	if (!bido_order__put(machine->bido_join, NULL, NULL, machine, NULL, event, false)) {
		args->stats->nr_bido_unordered++;
		return 0;
	}
	return bido_order__drain(machine->bido_join, args) ?: 1;
}

/*
 * A record's turn: just before the first sample of its thread still held
 * in the order (all held samples of a thread are of its entry), so that
 * its maps are in when that sample resolves; or at the end of the order,
 * or at once.  Held by either join: with deferred callchains the record
 * comes while its samples still wait for their callchain.
 */
static int bido_order__record(struct bido_join_args *args, union perf_event *event,
			      struct perf_sample *sample)
{
	struct machine *machine = args->machine;
	struct bido_slot *before = NULL, *slot;

	if (!bido_order__waiting(machine, args))
		return args->ops->record(event, sample, machine, args->data);
	list_for_each_entry(slot, &machine->bido_join->waiting, wait) {
		if (slot->tid == event->build_id_offset.tid) {
			before = slot;
			break;
		}
	}
	if (bido_order__put(machine->bido_join, NULL, before, machine, NULL, event, false))
		return 0;
	args->stats->nr_bido_unordered++;
	return args->ops->record(event, sample, machine, args->data);
}

/* Deliver the waiting events, at the end: nothing is held any more */
static int bido_order__flush(struct machine *machine, struct bido_join_args *args)
{
	struct bido_join *join = bido_order__join(machine, args);
	struct bido_slot *slot, *n;
	int err;

	if (!join)
		return 0;
	err = bido_order__drain(join, args);
	if (err || list_empty(&join->order))
		return err;
	/* Held by no one: should not be */
	list_for_each_entry_safe(slot, n, &join->order, node) {
		if (!slot->event) {
			args->stats->nr_bido_unordered++;
			bido_slot__cancel(slot);
		}
	}
	return bido_order__drain(join, args);
}

/**
 * bido_held__deliver - parse a held sample again and hand it on
 *
 * Counts it in @stats if it goes out unresolved: without its record
 * (!joined), or of the program before an exec (held->mm_changed).  Then
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
	else if (!joined && !held->no_cookie)
		stats->nr_bido_unjoined++;

	ret = evsel__parse_sample(held->evsel, held->event, &sample);
	if (ret) {
		pr_err("Can't parse sample, err = %d\n", ret);
		return ret;
	}
	return bido_order__sample(args, held->slot, held->evsel, held->event, &sample,
				  !joined || held->mm_changed);
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
	u32 tid;
	int ret;

	switch (event->header.type) {
	case PERF_RECORD_SAMPLE:
		return bido_join__arrive(&args, evsel, event, sample);
	case PERF_RECORD_BUILD_ID_OFFSET:
		if (!ops->bido)
			break;
		ret = bido_join__record_begin(machine, bido->tid, bido->cookie, bido_join__deliver,
					      &args);
		if (!ret)
			ret = bido_order__record(&args, event, sample);
		if (!ret)
			ret = bido_join__record_end(machine, bido->tid, bido->cookie, bido->flags,
						    bido_join__deliver, &args);
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
	struct bido_slot *slot, *n;
	size_t bkt;

	if (!join)
		return;
	pr_debug("build-ID offset: %zu build-IDs indexed, %" PRIu64 " scans of the DSOs\n",
		 hashmap__size(join->dsos), join->nr_dso_scans);
	/* Their holders, here or in the deferred join, keep no pointer to them */
	list_for_each_entry_safe(slot, n, &join->order, node) {
		free(slot->event);
		bido_slot__cancel(slot);
	}
	while (!list_empty(&join->held))
		bido_held__delete(join, list_first_entry(&join->held, struct bido_held, age));
	hashmap__for_each_entry(join->threads, cur, bkt)
		free(cur->pvalue);
	hashmap__free(join->threads);
	hashmap__for_each_entry(join->dsos, cur, bkt) {
		struct bido_dso *bd = cur->pvalue;

		dso__put(bd->dso);
		free(bd);
	}
	hashmap__free(join->dsos);
	zfree(&machine->bido_join);
}

bool build_id_offset__dso_is_unnamed(const struct dso *dso)
{
	return !strncmp(dso__long_name(dso), BIDO_DSO_PREFIX, strlen(BIDO_DSO_PREFIX));
}

struct bido_find_dso {
	const struct build_id	*bid;
	struct dso		*dso;
};

static int bido_find_dso_cb(struct dso *dso, void *data)
{
	struct bido_find_dso *args = data;

	if (!dso__has_build_id(dso) || !build_id_offset__build_id_equal(dso__bid(dso), args->bid))
		return 0;
	/* A name (MMAP2, header build-ID table) beats a placeholder */
	if (args->dso && !build_id_offset__dso_is_unnamed(dso))
		dso__put(args->dso);
	else if (args->dso)
		return 0;
	args->dso = dso__get(dso);
	return build_id_offset__dso_is_unnamed(dso) ? 0 : 1;
}

/* The best DSO of a build-ID that machine->dsos has: one with a name */
static struct dso *build_id_offset__scan_dsos(struct machine *machine, const struct build_id *bid)
{
	struct bido_find_dso args = { .bid = bid, };

	dsos__for_each_dso(&machine->dsos, bido_find_dso_cb, &args);
	return args.dso;
}

/* An entry of the index whose DSO still has the build-ID it is filed under */
static bool bido_dso__current(const struct bido_dso *bd)
{
	return dso__has_build_id(bd->dso) &&
	       build_id_offset__build_id_equal(dso__bid(bd->dso), &bd->bid);
}

/* Remember @dso in the index, unless it has a named one of its build-ID */
static void build_id_offset__index_dso(struct bido_join *join, const struct build_id *bid,
				       struct dso *dso)
{
	struct bido_dso *bd;

	if (hashmap__find(join->dsos, bid, &bd) && bd->dso != dso && bido_dso__current(bd) &&
	    !build_id_offset__dso_is_unnamed(bd->dso) && build_id_offset__dso_is_unnamed(dso))
		return;
	if (!hashmap__find(join->dsos, bid, &bd)) {
		bd = zalloc(sizeof(*bd));
		if (!bd)
			return;
		bd->bid = *bid;
		if (hashmap__add(join->dsos, &bd->bid, bd)) {
			free(bd);
			return;
		}
	}
	dso__put(bd->dso);
	bd->dso = dso__get(dso);
}

static int bido_index_cb(struct dso *dso, void *data)
{
	if (dso__has_build_id(dso))
		build_id_offset__index_dso(data, dso__bid(dso), dso);
	return 0;
}

/*
 * Add a DSO of ours, its build-ID just set, to machine->dsos and to the
 * index.  The index stays whole if it was (nothing else changed but that
 * build-ID): no scan for the next build-ID.
 */
static int build_id_offset__add_dso(struct machine *machine, const struct build_id *bid,
				    struct dso *dso)
{
	struct bido_join *join = machine__bido_join(machine);
	bool whole = join && join->dsos_cnt == machine->dsos.cnt &&
		     join->dsos_gen + 1 == dso__build_id_generation;

	if (dsos__add(&machine->dsos, dso))
		return -ENOMEM;
	if (join) {
		build_id_offset__index_dso(join, bid, dso);
		if (whole) {
			join->dsos_cnt = machine->dsos.cnt;
			join->dsos_gen = dso__build_id_generation;
		}
	}
	return 0;
}

/* A record's map has the build-ID: its DSO goes into the build-ID table */
static void build_id_offset__index_used(struct machine *machine, const struct build_id *bid)
{
	struct bido_dso *bd;

	if (machine->bido_join && hashmap__find(machine->bido_join->dsos, bid, &bd))
		bd->used = true;
}

/*
 * The DSO that perf knows with this build-ID, or NULL.  Through the index:
 * a scan of every DSO for each new build-ID would make reading a file
 * quadratic in its files.  A named DSO found is the answer.  Otherwise, if
 * DSOs were added (MMAP2 records) or given a build-ID (the header's
 * build-ID table, a lazy read) since the index was last whole, they go in
 * first, in one scan.
 */
static struct dso *build_id_offset__find_dso(struct machine *machine, const struct build_id *bid)
{
	struct bido_join *join = machine__bido_join(machine);
	struct bido_dso *bd;

	if (!join)
		return build_id_offset__scan_dsos(machine, bid);
	if (hashmap__find(join->dsos, bid, &bd) && bido_dso__current(bd) &&
	    !build_id_offset__dso_is_unnamed(bd->dso))
		return dso__get(bd->dso);
	if (join->dsos_cnt != machine->dsos.cnt || join->dsos_gen != dso__build_id_generation) {
		join->dsos_cnt = machine->dsos.cnt;
		join->dsos_gen = dso__build_id_generation;
		dsos__for_each_dso(&machine->dsos, bido_index_cb, join);
		join->nr_dso_scans++;
	}
	return hashmap__find(join->dsos, bid, &bd) && bido_dso__current(bd) ?
	       dso__get(bd->dso) : NULL;
}

/*
 * The DSO of a build-ID: one that perf knows with this build-ID (from an
 * MMAP2 with a build-ID, the header's build-ID table, or named while
 * recording), else a new one named after the build-ID cache's entry, else
 * a placeholder that 'perf record' names at the end
 * (machine__name_bido_dsos()).
 */
static struct dso *build_id_offset__findnew_dso(struct machine *machine, struct build_id *bid)
{
	char sbuild_id[SBUILD_ID_SIZE];
	char *name = NULL;
	struct dso *dso = build_id_offset__find_dso(machine, bid);

	if (dso) {
		build_id_offset__index_used(machine, bid);
		return dso;
	}

	build_id__sprintf(bid, sbuild_id);
	name = build_id_cache__origname(sbuild_id);
	if (!name && asprintf(&name, BIDO_DSO_PREFIX "%s]", sbuild_id) < 0)
		return NULL;

	dso = dso__new(name);
	free(name);
	if (!dso)
		return NULL;
	/* A path from the cache: shown by its file name, as for an MMAP2 */
	if (!build_id_offset__dso_is_unnamed(dso) && strrchr(dso__long_name(dso), '/'))
		dso__set_short_name(dso, strrchr(dso__long_name(dso), '/') + 1, false);
	dso__set_build_id(dso, bid);
	if (build_id_offset__add_dso(machine, bid, dso)) {
		dso__put(dso);
		return NULL;
	}
	build_id_offset__index_used(machine, bid);
	return dso;
}

/*
 * Whether the thread already has a map for m: one that covers m's start
 * with the same file offset, at least up to m's end, with a DSO of the
 * same build-ID, or of none (an MMAP2 without a build-ID names the same
 * VMA: trust the name).
 */
static bool build_id_offset__map_known(struct maps *maps,
				       const struct perf_record_build_id_offset_map *m,
				       const struct build_id *bid)
{
	struct map *map = maps__find(maps, m->start);
	bool known = false;
	struct dso *dso;

	if (!map)
		return false;
	dso = map__dso(map);
	if (map__end(map) >= m->end &&
	    m->start - map__start(map) + map__pgoff(map) == m->pgoff &&
	    (!dso__has_build_id(dso) || build_id_offset__build_id_equal(dso__bid(dso), bid)))
		known = true;
	map__put(map);
	return known;
}

struct bido_range {
	u64	start, end;
};

/* A map of perf inject --jit (a jitted-PID-N.so) in the range? */
static int build_id_offset__jitted_cb(struct map *map, void *data)
{
	const struct bido_range *r = data;
	const char *name;

	if (map__end(map) <= r->start || map__start(map) >= r->end)
		return 0;
	name = strrchr(dso__long_name(map__dso(map)), '/');
	return name && !strncmp(name + 1, "jitted-", 7);
}

/*
 * Anonymous executable memory is JIT code: as for an MMAP2 of "//anon",
 * a map of the addresses themselves onto /tmp/perf-PID.map, where a JIT
 * may list its symbols.  Unless perf inject --jit put the JIT's own maps
 * of its code there, from its jitdump: those name the functions, and stay.
 */
static int build_id_offset__insert_anon_map(struct machine *machine, struct thread *thread,
					    const struct perf_record_build_id_offset_map *m)
{
	struct map *map = maps__find(thread__maps(thread), m->start);
	struct bido_range range = { .start = m->start, .end = m->end };
	char anon[] = "//anon";
	int err;

	if (map) {
		bool known = map__end(map) >= m->end &&
			     map__mapping_type(map) == MAPPING_TYPE__IDENTITY &&
			     !strncmp(dso__long_name(map__dso(map)), "/tmp/perf-", 10);

		map__put(map);
		if (known)
			return 0;
	}
	if (maps__for_each_map(thread__maps(thread), build_id_offset__jitted_cb, &range))
		return 0;
	map = map__new(machine, m->start, m->end - m->start, m->pgoff, /*id=*/NULL,
		       PROT_EXEC, MAP_PRIVATE, /*bid=*/NULL, anon, thread);
	if (!map)
		return -ENOMEM;
	err = thread__insert_map(thread, map);
	map__put(map);
	return err;
}

/* Does a map of @maps cover the first or the last byte of [@start, @end)? */
static bool build_id_offset__maps_overlap(struct maps *maps, u64 start, u64 end)
{
	struct map *map = maps__find(maps, start);

	if (!map)
		map = maps__find(maps, end - 1);
	map__put(map);
	return map != NULL;
}

/*
 * The other read-only loadable segments of the file whose code @map maps:
 * records list executable mappings only, as MMAP2 does without mmap_data,
 * but perf's DWARF unwinder reads a file's .eh_frame_hdr, in a read-only
 * segment, through the thread's maps (perf record --call-graph dwarf
 * synthesizes every mapping for that).  Placed where the program headers
 * put them relative to the code; not where a map of the thread covers
 * either end of one (a segment is a few pages next to the code).
 */
static void build_id_offset__insert_segments(struct machine *machine, struct thread *thread,
					     struct map *map)
{
#ifdef HAVE_LIBELF_SUPPORT
	struct dso *dso = map__dso(map);
	u64 mask = ~((u64)page_size - 1), bias = 0;
	Elf *elf = NULL;
	bool found = false;
	size_t i, nr;
	GElf_Phdr ph;
	int fd;

	if (dso__is_vdso(dso) || build_id_offset__dso_is_unnamed(dso))
		return;
	fd = dso__data_get_fd(dso, machine);
	if (fd < 0)
		return;
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (!elf || elf_getphdrnum(elf, &nr))
		goto out;
	/* The executable segment the map is of tells where the file was loaded */
	for (i = 0; i < nr && !found; i++) {
		if (!gelf_getphdr(elf, i, &ph) || ph.p_type != PT_LOAD || !(ph.p_flags & PF_X) ||
		    map__pgoff(map) < (ph.p_offset & mask) ||
		    map__pgoff(map) >= ph.p_offset + ph.p_filesz)
			continue;
		bias = map__start(map) - (map__pgoff(map) - (ph.p_offset & mask)) -
		       (ph.p_vaddr & mask);
		found = true;
	}
	for (i = 0; found && i < nr; i++) {
		struct map *seg;
		u64 start, end;

		if (!gelf_getphdr(elf, i, &ph) || ph.p_type != PT_LOAD ||
		    (ph.p_flags & (PF_X | PF_W)) || !ph.p_filesz)
			continue;
		start = bias + (ph.p_vaddr & mask);
		end = bias + ((ph.p_vaddr + ph.p_filesz + page_size - 1) & mask);
		if (build_id_offset__maps_overlap(thread__maps(thread), start, end))
			continue;
		seg = map__new2(start, dso);
		if (!seg)
			break;
		map__set_end(seg, end);
		map__set_pgoff(seg, ph.p_offset & mask);
		thread__insert_map(thread, seg);
		map__put(seg);
	}
out:
	if (elf)
		elf_end(elf);
	dso__data_put_fd(dso);
#else
	(void)machine;
	(void)thread;
	(void)map;
#endif
}

static int build_id_offset__insert_map(struct machine *machine, struct thread *thread,
				       const struct perf_record_build_id_offset_map *m)
{
	struct build_id bid;
	struct dso *dso;
	struct map *map;
	u64 pgoff = m->pgoff;
	int err;

	if (m->end <= m->start)
		return 0;
	if (m->flags & PERF_BUILD_ID_OFFSET_MAP_ANON)
		return build_id_offset__insert_anon_map(machine, thread, m);

	if (m->flags & PERF_BUILD_ID_OFFSET_MAP_VDSO) {
		map = maps__find(thread__maps(thread), m->start);
		if (map) {
			bool known = dso__is_vdso(map__dso(map)) &&
				     map__start(map) == m->start;

			map__put(map);
			if (known)
				return 0;
		}
		dso = machine__findnew_vdso(machine, thread);
		pgoff = 0;
	} else {
		/*
		 * Unreadable, no build-ID: nothing to name it by; one longer
		 * than a build-ID can be: a malformed record's
		 */
		if (!m->build_id_size || m->build_id_size > BUILD_ID_SIZE)
			return 0;
		build_id__init(&bid, m->build_id, m->build_id_size);
		if (build_id_offset__map_known(thread__maps(thread), m, &bid))
			return 0;
		dso = build_id_offset__findnew_dso(machine, &bid);
	}
	if (!dso)
		return -ENOMEM;

	map = map__new2(m->start, dso);
	dso__put(dso);
	if (!map)
		return -ENOMEM;
	map__set_end(map, m->end);
	map__set_pgoff(map, pgoff);

	/* The task's mm at the time of the record: replace what overlaps */
	err = thread__insert_map(thread, map);
	/* Only the DWARF unwinder reads them (as unwind__prepare_access() asks) */
	if (!err && dwarf_callchain_users && !(m->flags & PERF_BUILD_ID_OFFSET_MAP_VDSO))
		build_id_offset__insert_segments(machine, thread, map);
	map__put(map);
	return err;
}

/*
 * Put the maps of a PERF_RECORD_BUILD_ID_OFFSET into its thread's maps, so
 * that the samples it is for resolve through thread__find_map().
 */
int build_id_offset__insert_maps(struct machine *machine, union perf_event *event)
{
	struct perf_record_build_id_offset *bido = &event->build_id_offset;
	u32 i, nr = perf_event__build_id_offset_nr(event);
	struct thread *thread;
	int err = 0;

	/* The addresses were of the program before an exec: no maps */
	if (!nr || (bido->flags & PERF_BUILD_ID_OFFSET_F_MM_CHANGED))
		return 0;

	thread = machine__findnew_thread(machine, bido->pid, bido->tid);
	if (!thread)
		return -ENOMEM;
	for (i = 0; i < nr && !err; i++)
		err = build_id_offset__insert_map(machine, thread, &bido->maps[i]);
	thread__put(thread);
	return err;
}

static bool build_id_offset__path_has_build_id(const char *path, const struct build_id *bid)
{
	struct build_id file_bid;

	return filename__read_build_id(path, &file_bid) > 0 &&
	       build_id_offset__build_id_equal(&file_bid, bid);
}

static int build_id_offset__set_name(struct dso *dso, const char *path)
{
	char *name = strdup(path);

	if (!name)
		return -ENOMEM;
	pr_debug("build-ID offset: %s is %s\n", dso__long_name(dso), name);
	dso__set_short_name(dso, strrchr(name, '/') ? strrchr(name, '/') + 1 : name, false);
	dso__set_long_name(dso, name, true);
	mutex_lock(dso__lock(dso));
	/*
	 * A sample resolved before the name came (perf top) had its symbols
	 * looked for by build-ID alone, and none found: look again by path
	 */
	if (dso__loaded(dso) && RB_EMPTY_ROOT(&dso__symbols(dso)->rb_root)) {
		RC_CHK_ACCESS(dso)->loaded = false;
		dso__set_symtab_type(dso, DSO_BINARY_TYPE__NOT_FOUND);
		dso__reset_find_symbol_cache(dso);
	}
	mutex_unlock(dso__lock(dso));
	return 0;
}

/*
 * Give the build-ID a DSO named @path: rename its placeholder, or add one.
 * Returns 1 if it got a name so, 0 if it had one, or a negative error.
 */
static int build_id_offset__name_build_id(struct machine *machine, struct build_id *bid,
					  const char *path)
{
	struct dso *dso = build_id_offset__find_dso(machine, bid);
	int err = 1;

	if (dso && !build_id_offset__dso_is_unnamed(dso)) {
		dso__put(dso);
		return 0;
	}
	if (dso) {
		err = build_id_offset__set_name(dso, path) ?: 1;
		dso__put(dso);
		return err;
	}

	dso = dso__new(path);
	if (!dso)
		return -ENOMEM;
	dso__set_short_name(dso, strrchr(dso__long_name(dso), '/') + 1, false);
	dso__set_build_id(dso, bid);
	if (build_id_offset__add_dso(machine, bid, dso))
		err = -ENOMEM;
	dso__put(dso);
	return err;
}

/* ---- Naming while recording ---- */

/*
 * Of a record, the bytes the namer reads: up to a sample's time (header,
 * identifier, IP, pid/tid, time), or up to an EXIT's tid
 */
#define BIDO_SCAN_PREFIX		40

/* Where the namer is in the stream of records of one ring buffer */
struct bido_scan {
	u64			skip;		/* bytes of a record yet to come */
	u32			len;		/* of prefix */
	bool			broken;		/* a header made no sense */
	u8			prefix[BIDO_SCAN_PREFIX];
	/* A build-ID offset record being copied whole (to carry), and its size */
	u8			*whole;
	u32			whole_len;
};

/* A file of a process, as /proc/PID/maps shows it */
struct bido_file {
	u64			dev;
	u64			ino;
};

/*
 * A task seen in samples, whose COMM the kernel may not give.  Its comm is
 * read from /proc the first time a sample of it is scanned, while it is
 * most likely to live, and written out at the end of the pass.
 */
struct bido_task {
	u32			pid;
	u64			time;		/* of its earliest sample seen */
	u8			tries;		/* reads of its comm that failed */
	bool			has_comm;	/* comm[] was read */
	bool			written;	/* its COMM is out */
	bool			kernel;		/* the kernel gave a COMM */
	u8			exited;		/* passes since its EXIT (0: none) */
	char			comm[16];
	/* Its last build-ID offset record, to carry into a new file */
	union perf_event	*last;
};

static void bido_task__delete(struct bido_task *task)
{
	free(task->last);
	free(task);
}

/* Reads of a task's comm before it counts as gone */
#define BIDO_COMM_TRIES		3

/*
 * Time a pass of bido_namer__run() may spend naming files: a process's
 * files, over a slow file system, take a second to read, and the passes
 * must go on scanning the tasks that exit meanwhile.
 */
#define BIDO_NAME_BUDGET_NS	(40ULL * 1000 * 1000)

/*
 * perf top joins and names on the thread that empties its queue: a pass
 * of naming once in this time at most, so that at most a fifth of that
 * thread's time goes to naming while files are left, and a long session
 * that has seen many processes does not look at each of them per event.
 */
#define BIDO_LIVE_PERIOD_NS	(5 * BIDO_NAME_BUDGET_NS)

/* Files seen (opened once) that the namer remembers, at most */
#define BIDO_FILES_MAX		65536

struct bido_namer {
	struct machine		*machine;
	struct mutex		 lock;		/* 'perf record --threads' */
	struct hashmap		*scans;		/* struct mmap * -> struct bido_scan */
	struct hashmap		*pids;		/* pid -> BIDO_PID() */
	struct hashmap		*files;		/* struct bido_file * -> itself */
	struct hashmap		*tasks;		/* tid -> struct bido_task */
	bido_named_fn		 named;
	bido_comm_fn		 comm;
	void			*data;
	/* Where a sample has its pid/tid and time, 0: not read */
	u32			 tid_pos, time_pos;
	/* Of the samples scanned: the latest time, and that at the last run */
	u64			 max_time, run_time;
	/* bido_live__event(): no naming before this rdclock() time */
	u64			 live_next;
	/* Keep each task's last record: the output is split (--switch-output) */
	bool			 carry;
	u64			 nr_pids, nr_gone, nr_files, nr_named, nr_comms;
	u64			 nr_comm_failed, nr_budget, nr_open_failed;
	u64			 nr_files_forgotten;
	/* The perf record summary: records and their flags, events lost */
	u64			 nr_records, nr_truncated, nr_addrs_dropped;
	u64			 nr_mm_changed, nr_lost;
	/* Counts the processes added to @pids, see BIDO_PID() */
	long			 pid_gen;
};

#define BIDO_PID_PENDING	1
#define BIDO_PID_DONE		2
/* A pass ran out of time in its files: the next ones name new pids first */
#define BIDO_PID_PARTIAL	3
/*
 * What @pids holds for a process: its state, and which process of that
 * pid it is, so that a pass naming files unlocked does not mark done a
 * process that took the pid of the one it named meanwhile
 */
#define BIDO_PID(gen, state)	(((gen) << 2) | (state))
#define BIDO_PID_STATE(v)	((v) & 3)

static size_t bido_file_hash(long key, void *ctx __maybe_unused)
{
	const struct bido_file *f = (const struct bido_file *)key;

	return f->ino * 31 + f->dev;
}

static bool bido_file_equal(long key1, long key2, void *ctx __maybe_unused)
{
	const struct bido_file *a = (const struct bido_file *)key1;
	const struct bido_file *b = (const struct bido_file *)key2;

	return a->dev == b->dev && a->ino == b->ino;
}

/**
 * bido_namer__new - name, while recording, the files records are about
 *
 * The files that tasks mapped before perf started have no MMAP2 to name
 * them.  While 'perf record' writes the ring buffers out, the namer sees
 * each process that a PERF_RECORD_BUILD_ID_OFFSET is for and, the first
 * time, opens the executable mappings of that process through
 * /proc/PID/map_files (so the file read is the one mapped), reads their
 * build-IDs and gives each build-ID a DSO with the file's path.  @named
 * is told of each build-ID so named: 'perf record' writes a
 * PERF_RECORD_HEADER_BUILD_ID for it, which names it in pipe mode too.
 */
struct bido_namer *bido_namer__new(struct machine *machine, bido_named_fn named, void *data)
{
	struct bido_namer *namer = zalloc(sizeof(*namer));

	if (!namer)
		return NULL;
	namer->machine = machine;
	namer->named = named;
	namer->data = data;
	mutex_init(&namer->lock);
	namer->scans = hashmap__new(bido_tid_hash, bido_tid_equal, NULL);
	namer->pids = hashmap__new(bido_tid_hash, bido_tid_equal, NULL);
	namer->files = hashmap__new(bido_file_hash, bido_file_equal, NULL);
	namer->tasks = hashmap__new(bido_tid_hash, bido_tid_equal, NULL);
	if (IS_ERR(namer->scans) || IS_ERR(namer->pids) || IS_ERR(namer->files) ||
	    IS_ERR(namer->tasks)) {
		namer->scans = IS_ERR(namer->scans) ? NULL : namer->scans;
		namer->pids = IS_ERR(namer->pids) ? NULL : namer->pids;
		namer->files = IS_ERR(namer->files) ? NULL : namer->files;
		namer->tasks = IS_ERR(namer->tasks) ? NULL : namer->tasks;
		bido_namer__delete(namer);
		return NULL;
	}
	return namer;
}

/**
 * bido_namer__fprintf_summary - what the records perf record wrote say
 *
 * For the end of 'perf record': the build-ID offset records written,
 * those that miss mappings (TRUNCATED), addresses (ADDRS_DROPPED) or came
 * after an exec (MM_CHANGED), and the records of any kind the kernel
 * could not write (PERF_RECORD_LOST): a sample whose record was lost
 * resolves nothing in user space.
 */
size_t bido_namer__fprintf_summary(struct bido_namer *namer, FILE *fp)
{
	size_t ret;

	mutex_lock(&namer->lock);
	ret = fprintf(fp, "[ perf record: %" PRIu64 " build-ID offset records (%" PRIu64
		      " truncated, %" PRIu64 " with addresses dropped, %" PRIu64
		      " after an exec), %" PRIu64 " records lost ]\n",
		      namer->nr_records, namer->nr_truncated, namer->nr_addrs_dropped,
		      namer->nr_mm_changed, namer->nr_lost);
	mutex_unlock(&namer->lock);
	return ret;
}

void bido_namer__delete(struct bido_namer *namer)
{
	struct hashmap_entry *cur;
	size_t bkt;

	if (!namer)
		return;
	pr_debug("build-ID offset: named %" PRIu64 " build-IDs from %" PRIu64
		 " files of %" PRIu64 " processes (%" PRIu64 " gone, %" PRIu64
		 " passes out of time, %" PRIu64 " mappings not opened, the seen files forgotten %"
		 PRIu64 " times), %" PRIu64 " COMMs (%" PRIu64 " tasks gone first)\n",
		 namer->nr_named, namer->nr_files, namer->nr_pids, namer->nr_gone,
		 namer->nr_budget, namer->nr_open_failed, namer->nr_files_forgotten,
		 namer->nr_comms, namer->nr_comm_failed);
	if (namer->scans) {
		hashmap__for_each_entry(namer->scans, cur, bkt) {
			struct bido_scan *scan = cur->pvalue;

			free(scan->whole);
			free(scan);
		}
	}
	if (namer->files) {
		hashmap__for_each_entry(namer->files, cur, bkt)
			free(cur->pvalue);
	}
	if (namer->tasks) {
		hashmap__for_each_entry(namer->tasks, cur, bkt)
			bido_task__delete(cur->pvalue);
	}
	hashmap__free(namer->tasks);
	hashmap__free(namer->scans);
	hashmap__free(namer->pids);
	hashmap__free(namer->files);
	mutex_destroy(&namer->lock);
	free(namer);
}

/**
 * bido_namer__set_comm - also give the COMM of each task seen in samples
 *
 * 'perf record --synth=no' reads no COMM of the tasks that exist when it
 * starts.  With @comm set, the namer reads the comm of each task the
 * first time a sample of it comes out of the buffers, unless a COMM
 * record of the kernel came first, and at the end of the pass hands it to
 * @comm with a time before every sample of the task still to come (see
 * bido_namer__comm_time()).  @sample_type is that of every event (perf
 * record gives all of them IP, TID and TIME, and IDENTIFIER to all or
 * none).
 */
void bido_namer__set_comm(struct bido_namer *namer, u64 sample_type, bido_comm_fn comm)
{
	u32 pos = sizeof(struct perf_event_header);

	if (!(sample_type & PERF_SAMPLE_TID) || !(sample_type & PERF_SAMPLE_TIME))
		return;
	if (sample_type & PERF_SAMPLE_IDENTIFIER)
		pos += sizeof(u64);
	if (sample_type & PERF_SAMPLE_IP)
		pos += sizeof(u64);
	namer->tid_pos = pos;
	namer->time_pos = pos + sizeof(u64);
	namer->comm = comm;
}

/* The entry of task @tid; @added says whether it was new */
static struct bido_task *bido_namer__findnew_task(struct bido_namer *namer, u32 tid, bool *added)
{
	struct bido_task *task;

	*added = false;
	if (hashmap__find(namer->tasks, tid, &task))
		return task;
	task = zalloc(sizeof(*task));
	if (!task)
		return NULL;
	if (hashmap__add(namer->tasks, tid, task)) {
		free(task);
		return NULL;
	}
	*added = true;
	return task;
}

/* Read the comm of @task now, while it lives; a few tries at most */
static void bido_namer__read_comm(struct bido_namer *namer, struct bido_task *task, u32 tid)
{
	char comm[32];

	if (task->has_comm || task->kernel || task->exited || task->tries >= BIDO_COMM_TRIES)
		return;
	if (build_id_offset__read_comm(task->pid, tid, comm, sizeof(comm))) {
		if (++task->tries == BIDO_COMM_TRIES)
			namer->nr_comm_failed++;
		return;
	}
	/* A comm is at most TASK_COMM_LEN - 1 bytes */
	comm[sizeof(task->comm) - 1] = '\0';
	memcpy(task->comm, comm, sizeof(task->comm));
	task->has_comm = true;
}

/* A task that needs its comm from @time on, unless the kernel gave it */
static void bido_namer__task(struct bido_namer *namer, u32 pid, u32 tid, u64 time)
{
	struct bido_task *task;
	bool added;

	/* The idle task has its name; -1: no task */
	if (!tid || tid == (u32)-1 || pid == (u32)-1)
		return;

	task = bido_namer__findnew_task(namer, tid, &added);
	if (!task)
		return;
	if (added) {
		task->pid = pid;
		task->time = time;
	} else if (!task->written && (!task->time || time < task->time)) {
		/* 0: the entry came with the task's record (bido_namer__keep()) */
		task->time = time;
	}
	bido_namer__read_comm(namer, task, tid);
}

static void bido_namer__sample(struct bido_namer *namer, const u8 *prefix, u32 len)
{
	u32 pid, tid;
	u64 time;

	if (!namer->comm || len < namer->time_pos + sizeof(time))
		return;
	memcpy(&pid, prefix + namer->tid_pos, sizeof(pid));
	memcpy(&tid, prefix + namer->tid_pos + sizeof(pid), sizeof(tid));
	memcpy(&time, prefix + namer->time_pos, sizeof(time));
	if (time > namer->max_time)
		namer->max_time = time;
	bido_namer__task(namer, pid, tid, time);
}

/*
 * The kernel named the task (exec, or it was made while recording): the
 * name as far as the prefix holds it, for a new file (bido_namer__carry())
 */
static void bido_namer__comm_record(struct bido_namer *namer, u32 pid, u32 tid,
				    const u8 *comm, u32 len)
{
	bool added;
	struct bido_task *task = bido_namer__findnew_task(namer, tid, &added);

	if (!task)
		return;
	task->pid = pid;
	task->kernel = true;
	len = min_t(u32, len, sizeof(task->comm) - 1);
	memcpy(task->comm, comm, len);
	task->comm[len] = '\0';
	task->has_comm = true;
}

/* One record's first bytes: note a process to name, or one that ended */
static void bido_namer__record(struct bido_namer *namer, const u8 *prefix, u32 len)
{
	const struct perf_event_header *hdr = (const void *)prefix;
	struct bido_task *task;
	u32 pid, tid;

	switch (hdr->type) {
	case PERF_RECORD_SAMPLE:
		bido_namer__sample(namer, prefix, len);
		break;
	case PERF_RECORD_COMM:
		if (!namer->comm || len < offsetof(struct perf_record_comm, comm))
			return;
		memcpy(&pid, prefix + offsetof(struct perf_record_comm, pid), sizeof(pid));
		memcpy(&tid, prefix + offsetof(struct perf_record_comm, tid), sizeof(tid));
		bido_namer__comm_record(namer, pid, tid,
					prefix + offsetof(struct perf_record_comm, comm),
					len - offsetof(struct perf_record_comm, comm));
		break;
	case PERF_RECORD_FORK: {
		u32 ppid, ptid;
		u64 time;

		if (len < sizeof(struct perf_record_fork))
			return;
		/* A new task with the tid of one that exited: not that one */
		memcpy(&tid, prefix + offsetof(struct perf_record_fork, tid), sizeof(tid));
		if (hashmap__find(namer->tasks, tid, &task) && task->exited) {
			hashmap__delete(namer->tasks, tid, NULL, NULL);
			bido_task__delete(task);
		}
		/* The child takes its parent's comm: the parent needs one */
		if (!namer->comm)
			return;
		memcpy(&ppid, prefix + offsetof(struct perf_record_fork, ppid), sizeof(ppid));
		memcpy(&ptid, prefix + offsetof(struct perf_record_fork, ptid), sizeof(ptid));
		memcpy(&time, prefix + offsetof(struct perf_record_fork, time), sizeof(time));
		bido_namer__task(namer, ppid, ptid, time);
		break;
	}
	case PERF_RECORD_BUILD_ID_OFFSET: {
		u32 flags;

		if (len < offsetof(struct perf_record_build_id_offset, maps))
			return;
		memcpy(&flags, prefix + offsetof(struct perf_record_build_id_offset, flags),
		       sizeof(flags));
		namer->nr_records++;
		namer->nr_truncated += !!(flags & PERF_BUILD_ID_OFFSET_F_TRUNCATED);
		namer->nr_addrs_dropped += !!(flags & PERF_BUILD_ID_OFFSET_F_ADDRS_DROPPED);
		namer->nr_mm_changed += !!(flags & PERF_BUILD_ID_OFFSET_F_MM_CHANGED);
		memcpy(&pid, prefix + offsetof(struct perf_record_build_id_offset, pid),
		       sizeof(pid));
		if (pid && pid != (u32)-1 && !hashmap__find(namer->pids, pid, NULL))
			hashmap__add(namer->pids, pid,
				     BIDO_PID(++namer->pid_gen, BIDO_PID_PENDING));
		break;
	}
	case PERF_RECORD_LOST: {
		u64 lost;

		if (len < sizeof(struct perf_record_lost))
			return;
		memcpy(&lost, prefix + offsetof(struct perf_record_lost, lost), sizeof(lost));
		namer->nr_lost += lost;
		break;
	}
	case PERF_RECORD_EXIT: {
		bool added = false;

		if (len < offsetof(struct perf_record_fork, ptid))
			return;
		memcpy(&pid, prefix + offsetof(struct perf_record_fork, pid), sizeof(pid));
		memcpy(&tid, prefix + offsetof(struct perf_record_fork, tid), sizeof(tid));
		/*
		 * The pid may be a new process's next time.  The task keeps
		 * its entry until the end of the next pass: its comm, read at
		 * its first sample, still goes out.
		 */
		if (pid == tid)
			hashmap__delete(namer->pids, pid, NULL, NULL);
		/*
		 * With carry, a task unknown so far gets an entry too: its last
		 * record may come in a later pass, from another CPU's buffer,
		 * and must not be carried then
		 */
		if (!hashmap__find(namer->tasks, tid, &task))
			task = namer->carry ? bido_namer__findnew_task(namer, tid, &added) : NULL;
		if (task) {
			/* Its comm was not read, and now never will be */
			if (namer->comm && !task->has_comm && !task->kernel && !task->exited &&
			    task->tries && task->tries < BIDO_COMM_TRIES)
				namer->nr_comm_failed++;
			if (added)
				task->pid = pid;
			if (!task->exited)
				task->exited = 1;
		}
		break;
	}
	default:
		break;
	}
}

/* A build-ID offset record copied whole: its task's last, to carry */
static void bido_namer__keep(struct bido_namer *namer, struct bido_scan *scan)
{
	union perf_event *event = (union perf_event *)scan->whole;
	struct bido_task *task;
	bool added;

	scan->whole = NULL;
	task = bido_namer__findnew_task(namer, event->build_id_offset.tid, &added);
	/* Written before its EXIT, read after: nothing to carry for it */
	if (!task || task->exited) {
		free(event);
		return;
	}
	if (added)
		task->pid = event->build_id_offset.pid;
	free(task->last);
	task->last = event;
}

/**
 * bido_namer__carry - what a new output file needs of the old ones
 *
 * perf record --switch-output: the tasks' next samples may name their
 * last build-ID offset records (the kernel reuses a task's last record
 * while it covers the task's addresses), which went into an earlier file;
 * and with --synth=no the COMMs of tasks went there too.  @write gets a
 * copy of each live task's last record, and the comm callback a COMM
 * (time 0: before every sample of the file) of each task whose comm is
 * known.  Call it when the new file is open, before its first data.
 */
int bido_namer__carry(struct bido_namer *namer, bido_write_fn write, void *data)
{
	struct hashmap_entry *cur;
	size_t bkt;
	int err = 0;

	mutex_lock(&namer->lock);
	hashmap__for_each_entry(namer->tasks, cur, bkt) {
		struct bido_task *task = cur->pvalue;

		if (task->exited)
			continue;
		if (namer->comm && task->has_comm) {
			err = namer->comm(task->pid, cur->key, 0, task->comm, namer->data);
			if (err)
				break;
		}
		if (task->last) {
			err = write(task->last, data);
			if (err)
				break;
		}
	}
	mutex_unlock(&namer->lock);
	return err;
}

/* Keep each task's last record, for bido_namer__carry() */
void bido_namer__set_carry(struct bido_namer *namer)
{
	namer->carry = true;
}

/**
 * bido_namer__scan - read the records in data on their way out
 *
 * @key names the ring buffer: its data comes in order, in pieces that may
 * split a record (at the buffer's wrap).  Only records' first bytes are
 * read; no file is opened here (bido_namer__run() does that).
 */
void bido_namer__scan(struct bido_namer *namer, const void *key, const void *buf, size_t size)
{
	const u8 *p = buf;
	struct bido_scan *scan;

	mutex_lock(&namer->lock);
	if (!hashmap__find(namer->scans, (long)key, &scan)) {
		scan = zalloc(sizeof(*scan));
		if (!scan || hashmap__add(namer->scans, (long)key, scan)) {
			free(scan);
			goto out;
		}
	}

	while (size && !scan->broken) {
		const struct perf_event_header *hdr = (const void *)scan->prefix;
		u32 want = sizeof(*hdr), n;

		if (scan->skip) {
			n = min_t(u64, scan->skip, size);
			if (scan->whole) {
				memcpy(scan->whole + scan->whole_len, p, n);
				scan->whole_len += n;
			}
			scan->skip -= n;
			p += n;
			size -= n;
			if (!scan->skip && scan->whole)
				bido_namer__keep(namer, scan);
			continue;
		}
		if (scan->len >= sizeof(*hdr))
			want = min_t(u32, hdr->size, BIDO_SCAN_PREFIX);
		n = min_t(size_t, want - scan->len, size);
		memcpy(scan->prefix + scan->len, p, n);
		scan->len += n;
		p += n;
		size -= n;
		if (scan->len < sizeof(*hdr))
			break;
		if (hdr->size < sizeof(*hdr)) {
			pr_debug("build-ID offset: bad record size %u, names no more files\n",
				 hdr->size);
			scan->broken = true;
			break;
		}
		if (scan->len < min_t(u32, hdr->size, BIDO_SCAN_PREFIX))
			continue;
		bido_namer__record(namer, scan->prefix, scan->len);
		scan->skip = hdr->size - scan->len;
		if (namer->carry && hdr->type == PERF_RECORD_BUILD_ID_OFFSET &&
		    hdr->size >= sizeof(struct perf_record_build_id_offset)) {
			scan->whole = malloc(hdr->size);
			if (scan->whole) {
				memcpy(scan->whole, scan->prefix, scan->len);
				scan->whole_len = scan->len;
				if (!scan->skip)
					bido_namer__keep(namer, scan);
			}
		}
		scan->len = 0;
	}
out:
	mutex_unlock(&namer->lock);
}

/*
 * A file was opened: no other mapping of it need be opened again.  The
 * table is emptied when full (a long perf top sees files come and go):
 * the files seen again are then read again, nothing worse.
 */
static int bido_namer__seen(struct bido_namer *namer, const struct bido_file *f)
{
	struct bido_file *seen;

	if (hashmap__size(namer->files) >= BIDO_FILES_MAX) {
		struct hashmap_entry *cur;
		size_t bkt;

		hashmap__for_each_entry(namer->files, cur, bkt)
			free(cur->pvalue);
		hashmap__clear(namer->files);
		namer->nr_files_forgotten++;
	}
	seen = memdup(f, sizeof(*f));
	if (!seen)
		return -ENOMEM;
	if (hashmap__add(namer->files, seen, seen)) {
		free(seen);
		return -ENOMEM;
	}
	return 0;
}

/*
 * Name the build-ID of one file mapping of @pid, through map_files: the
 * file the task maps even if renamed or deleted since.  Without the
 * capability map_files asks for, the path that maps shows, if it is still
 * the same inode.  The caller skips the files seen before.  A file that
 * cannot be opened here (the task is gone, its path names another file)
 * is not marked seen: another task that maps it may do better.
 */
static int bido_namer__name_file(struct bido_namer *namer, pid_t pid, u64 start, u64 end,
				 const struct bido_file *f, const char *path)
{
	char link[PATH_MAX], name[PATH_MAX];
	struct build_id bid;
	struct stat st;
	ssize_t len;
	int fd, ret;

	snprintf(link, sizeof(link), "%s/%d/map_files/%" PRIx64 "-%" PRIx64,
		 procfs__mountpoint(), pid, start, end);
	fd = open(link, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		int pfd;

		/*
		 * Not opened for reading before it is known to be the mapped
		 * file: whoever can write to its directory may have put a FIFO
		 * (whose open would wait for a writer) or a link there
		 */
		pfd = open(path, O_PATH | O_NOFOLLOW | O_CLOEXEC);
		if (pfd >= 0 && !fstat(pfd, &st) && S_ISREG(st.st_mode) && st.st_ino == f->ino &&
		    makedev(f->dev >> 32, f->dev & 0xffffffff) == st.st_dev) {
			snprintf(link, sizeof(link), "/proc/self/fd/%d", pfd);
			fd = open(link, O_RDONLY | O_CLOEXEC);
		}
		if (pfd >= 0)
			close(pfd);
		if (fd < 0) {
			pr_debug("build-ID offset: %d maps %s, which cannot be opened\n",
				 pid, path);
			namer->nr_open_failed++;
			return 0;
		}
	}
	ret = bido_namer__seen(namer, f);
	if (ret) {
		close(fd);
		return ret;
	}
	namer->nr_files++;

	/* The open file itself: the path may name another file by now */
	snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
	len = readlink(link, name, sizeof(name) - 1);
	ret = 0;
	if (len > 0 && filename__read_build_id(link, &bid) > 0) {
		char sbuild_id[SBUILD_ID_SIZE];

		name[len] = '\0';
		build_id__sprintf(&bid, sbuild_id);
		pr_debug("build-ID offset: %d maps %s (%s)\n", pid, name, sbuild_id);
		ret = build_id_offset__name_build_id(namer->machine, &bid, name);
		if (ret > 0) {
			namer->nr_named++;
			ret = namer->named ? namer->named(&bid, name, link, namer->data) : 0;
		}
	}
	close(fd);
	return ret;
}

/*
 * The executable file mappings of a process, each file once.  Returns 1
 * if @deadline passed first (the files named so far stay named, the rest
 * wait for the next pass), 0 when done, or a negative error.
 */
static int bido_namer__name_pid(struct bido_namer *namer, pid_t pid, u64 deadline)
{
	char path[PATH_MAX], perms[5], *line = NULL;
	size_t line_size = 0;
	int err = 0;
	FILE *fp;

	snprintf(path, sizeof(path), "%s/%d/maps", procfs__mountpoint(), pid);
	fp = fopen(path, "re");
	if (!fp) {
		namer->nr_pids++;
		namer->nr_gone++;
		return 0;
	}
	while (!err && getline(&line, &line_size, fp) > 0) {
		u64 start, end, pgoff, ino;
		unsigned int major, minor;
		struct bido_file f;
		char *name;
		int n = 0;

		if (sscanf(line, "%" SCNx64 "-%" SCNx64 " %4s %" SCNx64 " %x:%x %" SCNu64 " %n",
			   &start, &end, perms, &pgoff, &major, &minor, &ino, &n) < 7 || !n)
			continue;
		name = line + n;
		if (perms[2] != 'x' || !ino || name[0] != '/')
			continue;
		name[strcspn(name, "\n")] = '\0';
		f.dev = (u64)major << 32 | minor;
		f.ino = ino;
		if (hashmap__find(namer->files, &f, NULL))
			continue;
		if (rdclock() > deadline) {
			err = 1;
			break;
		}
		err = bido_namer__name_file(namer, pid, start, end, &f, name);
	}
	free(line);
	fclose(fp);
	if (!err)
		namer->nr_pids++;
	return err;
}

/**
 * build_id_offset__read_comm - a live task's comm, from /proc/PID/task/TID/comm
 *
 * Returns 0, or -1 if the task is gone.
 */
int build_id_offset__read_comm(u32 pid, u32 tid, char *comm, size_t size)
{
	char path[PATH_MAX];
	ssize_t len;
	int fd;

	snprintf(path, sizeof(path), "%s/%u/task/%u/comm", procfs__mountpoint(), pid, tid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	len = read(fd, comm, size - 1);
	close(fd);
	if (len <= 0)
		return -1;
	comm[len] = '\0';
	comm[strcspn(comm, "\n")] = '\0';
	return 0;
}

/*
 * The time of a COMM written at the end of a pass.  perf report orders
 * the records by rounds (one per pass): a record of this round may be
 * later than one of the next round, never than one of the round after.
 * The task's samples still to come are later than those of the last
 * round, so a COMM at the latest time the last round saw precedes them,
 * as it precedes this round's if earlier than the first of those.
 */
static u64 bido_namer__comm_time(const struct bido_namer *namer, const struct bido_task *task)
{
	return min(task->time ? task->time - 1 : 0, namer->run_time);
}

/*
 * Write the COMMs of the tasks seen in this pass's samples, and forget
 * the tasks that exited.  A task whose comm could not be read (gone
 * already) gets none; its samples show its tid.
 */
static int bido_namer__comms(struct bido_namer *namer)
{
	struct hashmap_entry *cur, *tmp;
	size_t bkt;
	int err = 0;

	hashmap__for_each_entry_safe(namer->tasks, cur, tmp, bkt) {
		struct bido_task *task = cur->pvalue;

		if (namer->comm && task->has_comm && !task->written && !task->kernel) {
			task->written = true;
			namer->nr_comms++;
			err = namer->comm(task->pid, cur->key, bido_namer__comm_time(namer, task),
					  task->comm, namer->data);
			if (err)
				break;
		}
		/*
		 * Kept one pass more: a record it wrote before its EXIT may be
		 * read after it, from another CPU's buffer
		 */
		if (task->exited && ++task->exited > 2) {
			hashmap__delete(namer->tasks, cur->key, NULL, NULL);
			bido_task__delete(task);
		}
	}
	namer->run_time = namer->max_time;
	return err;
}

/* A process whose files are still to name, and what @pids said of it */
struct bido_pending {
	pid_t	pid;
	long	seen;
};

/*
 * The processes seen whose files are still to name, in a new array of
 * *nr: those not looked at yet first (a short-lived one must not wait
 * behind one with many files), then those a pass ran out of time in,
 * perf's own last (it maps some forty files and lives to the end)
 */
static struct bido_pending *bido_namer__pending(struct bido_namer *namer, size_t *nr)
{
	size_t n = hashmap__size(namer->pids);
	static const long order[] = { BIDO_PID_PENDING, BIDO_PID_PARTIAL, };
	struct bido_pending *pids, self = { .pid = getpid(), };
	struct hashmap_entry *cur;
	size_t bkt, i;

	*nr = 0;
	pids = calloc(n ?: 1, sizeof(*pids));
	if (!pids)
		return NULL;
	for (i = 0; i < ARRAY_SIZE(order); i++) {
		hashmap__for_each_entry(namer->pids, cur, bkt) {
			if (BIDO_PID_STATE(cur->value) != order[i])
				continue;
			if (cur->key == self.pid)
				self.seen = cur->value;
			else
				pids[(*nr)++] = (struct bido_pending){ cur->key, cur->value };
		}
	}
	if (self.seen)
		pids[(*nr)++] = self;
	return pids;
}

/*
 * Name the files of the processes @pids, within the time left, without
 * the namer's lock: the threads of 'perf record --threads' scan their
 * buffers meanwhile (only the thread that runs the namer touches the
 * table of files and the counts of naming).  Returns 1 if out of time
 * with files of other processes than perf left, 0, or a negative error.
 */
static int bido_namer__files(struct bido_namer *namer, const struct bido_pending *pids,
			     size_t nr, u64 deadline)
{
	pid_t self = getpid();
	long now;
	size_t i;
	int ret;

	for (i = 0; i < nr; i++) {
		ret = bido_namer__name_pid(namer, pids[i].pid, deadline);
		if (ret < 0)
			return ret;
		mutex_lock(&namer->lock);
		/*
		 * Unless its EXIT was read meanwhile, and maybe a record of a
		 * new process with its pid after that: that one is still to
		 * name
		 */
		if (hashmap__find(namer->pids, pids[i].pid, &now) && now == pids[i].seen)
			hashmap__update(namer->pids, pids[i].pid,
					BIDO_PID(now >> 2, ret ? BIDO_PID_PARTIAL : BIDO_PID_DONE),
					NULL, NULL);
		mutex_unlock(&namer->lock);
		if (ret)
			return pids[i].pid == self ? 0 : ret;
	}
	return 0;
}

/**
 * bido_namer__run - name what bido_namer__scan() saw
 *
 * The COMMs of the tasks seen since the last run (with
 * bido_namer__set_comm()), their comms read when first seen; then the
 * files of each process seen, once in its life: the mappings it makes
 * from now on come with MMAP2 records, which name their files.  Naming
 * files stops after BIDO_NAME_BUDGET_NS and goes on at the next run.
 * One thread runs the namer; others may scan meanwhile.  Returns what
 * @named or @comm returned if it failed, else 1 if files of processes
 * other than perf are left to name, else 0.
 */
int bido_namer__run(struct bido_namer *namer)
{
	u64 deadline = rdclock() + BIDO_NAME_BUDGET_NS;
	struct bido_pending *pids = NULL;
	size_t nr = 0;
	int err;

	mutex_lock(&namer->lock);
	err = bido_namer__comms(namer);
	if (!err) {
		pids = bido_namer__pending(namer, &nr);
		if (!pids)
			err = -ENOMEM;
	}
	mutex_unlock(&namer->lock);
	if (!err)
		err = bido_namer__files(namer, pids, nr, deadline);
	free(pids);
	if (err > 0)
		namer->nr_budget++;
	return err;
}

/* ---- Tools that deliver live events themselves: perf top ---- */

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

/* A pass of naming if one is due (see BIDO_LIVE_PERIOD_NS) */
static int bido_live__name(struct bido_namer *namer)
{
	u64 now = rdclock();

	if (now < namer->live_next)
		return 0;
	/* Even with nothing left: a pass looks at every process seen */
	namer->live_next = now + BIDO_LIVE_PERIOD_NS;
	return bido_namer__run(namer);
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
		ret = bido_live__name(namer);
		if (ret < 0)
			return ret;
	}
	if (event->header.type == PERF_RECORD_SAMPLE)
		bido_live__comm(machine, sample);
	else if (event->header.type == PERF_RECORD_BUILD_ID_OFFSET)
		events_stats__inc(stats, event->header.type);
	return bido_join__event(machine, evsel, event, sample, stats, &ops, data);
}

/*
 * A file that only /usr/lib/debug knows: the link at .build-id/NN/REST
 * (without .debug) leads to the file itself where the distribution keeps
 * one (Fedora's layout).  REST.debug holds its debug information:
 * dso__load() reads symbols there, but it is not the file, and a DSO named
 * after it would go into the build-ID cache under that wrong name.
 */
static char *build_id_offset__find_by_build_id(const struct build_id *bid, const char *sbuild_id)
{
	char *path = NULL, *real;

	if (asprintf(&path, "/usr/lib/debug/.build-id/%.2s/%s", sbuild_id, sbuild_id + 2) < 0)
		return NULL;
	real = realpath(path, NULL);
	free(path);
	if (real && !strstr(real, "/usr/lib/debug/") &&
	    (strlen(real) < 6 || strcmp(real + strlen(real) - 6, ".debug")) &&
	    build_id_offset__path_has_build_id(real, bid))
		return real;
	free(real);

#ifdef HAVE_DEBUGINFOD_SUPPORT
	{
		debuginfod_client *c = debuginfod_begin();

		path = NULL;
		if (c) {
			int fd = debuginfod_find_executable(c, (const unsigned char *)sbuild_id,
							    0, &path);

			if (fd >= 0)
				close(fd);
			else
				path = NULL;
			debuginfod_end(c);
		}
		return path;
	}
#endif
	return NULL;
}

static int build_id_offset__name_dso(struct dso *dso)
{
	char sbuild_id[SBUILD_ID_SIZE];
	char *path;
	int err;

	build_id__sprintf(dso__bid(dso), sbuild_id);
	path = build_id_cache__origname(sbuild_id);
	if (!path)
		path = build_id_offset__find_by_build_id(dso__bid(dso), sbuild_id);
	if (!path) {
		pr_debug("build-ID offset: no name for %s\n", sbuild_id);
		return 0;
	}
	err = build_id_offset__set_name(dso, path);
	free(path);
	return err;
}

struct bido_unnamed {
	struct dso		**dsos;
	size_t			 nr;
	size_t			 alloc;
};

static int build_id_offset__collect_unnamed(struct dso *dso, void *data)
{
	struct bido_unnamed *un = data;

	if (!build_id_offset__dso_is_unnamed(dso))
		return 0;
	if (un->nr == un->alloc) {
		size_t alloc = un->alloc ? un->alloc * 2 : 16;
		struct dso **dsos = realloc(un->dsos, alloc * sizeof(*dsos));

		if (!dsos)
			return -ENOMEM;
		un->dsos = dsos;
		un->alloc = alloc;
	}
	un->dsos[un->nr++] = dso__get(dso);
	return 0;
}

/**
 * machine__name_bido_dsos - name the DSOs known by build-ID only
 *
 * For 'perf record', at the end: the build-IDs that no MMAP2 and no
 * bido_namer named (their tasks were gone when their records were read).
 * Named, in this order, by the build-ID cache's entry, the file a
 * /usr/lib/debug/.build-id link leads to, and debuginfod.  Then marks the
 * DSOs of the records' maps hit.
 */
int machine__name_bido_dsos(struct machine *machine)
{
	struct bido_unnamed un = { .nr = 0, };
	struct hashmap_entry *cur;
	size_t i, bkt;
	int err;

	/* Renaming takes dsos->lock for writing: not while walking it */
	err = dsos__for_each_dso(&machine->dsos, build_id_offset__collect_unnamed, &un);
	for (i = 0; i < un.nr; i++) {
		if (!err)
			err = build_id_offset__name_dso(un.dsos[i]);
		dso__put(un.dsos[i]);
	}
	free(un.dsos);
	if (err || !machine->bido_join)
		return err;

	/*
	 * The files of the records' maps go into the build-ID table and the
	 * build-ID cache, like those of the sampled IPs
	 */
	hashmap__for_each_entry(machine->bido_join->dsos, cur, bkt) {
		struct bido_dso *bd = cur->pvalue;
		struct dso *dso;

		if (!bd->used)
			continue;
		/* Not through the index: no change to it while walking it */
		dso = build_id_offset__dso_is_unnamed(bd->dso) ?
		      build_id_offset__scan_dsos(machine, &bd->bid) : dso__get(bd->dso);
		if (dso) {
			dso__set_hit(dso);
			dso__put(dso);
		}
	}
	return 0;
}
