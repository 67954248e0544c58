// SPDX-License-Identifier: GPL-2.0
/*
 * Deferred user callchains (perf record --call-graph fp,defer): a sample
 * of an event with attr.defer_callchain carries its kernel frames, then
 * PERF_CONTEXT_USER_DEFERRED and a cookie; the user frames come once per
 * kernel entry of the task, in a PERF_RECORD_CALLCHAIN_DEFERRED with the
 * same cookie, written before the task returned to user space: after the
 * sample, maybe in another CPU's buffer.
 *
 * When events are delivered in time order, each such sample is held until
 * the record of its (tid, cookie) comes, then goes on as a sample of its
 * own: its callchain is the kernel part, PERF_CONTEXT_USER and the
 * record's frames, as if the user stack had been walked in the interrupt,
 * so report, script, annotate and the build-ID offset join need nothing
 * else.  A sample taken after its entry's record was written (the work
 * ran, the task had not yet left the kernel) merges with the thread's last
 * record at once.
 *
 * Held samples whose record will not come go on with their kernel frames
 * only: those of an older cookie when a record or sample of another one
 * arrives (the task went back to user space since), those of a thread
 * that exits or execs, and those still held at the end.  Past 64 MiB of
 * held samples the oldest go the same way.
 *
 * A held sample keeps its place in the order of events (struct
 * bido_slot, see util/build-id-offset-order.c), which it hands on with
 * itself.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <linux/err.h>
#include <linux/list.h>
#include <linux/string.h>
#include <linux/zalloc.h>
#include <perf/event.h>

#include "build-id-offset.h"
#include "callchain-deferred.h"
#include "debug.h"
#include "event.h"
#include "evsel.h"
#include "hashmap.h"
#include "machine.h"
#include "sample.h"
#include "synthetic-events.h"

#define DEFERRED_HELD_MAX_BYTES	(64UL << 20)

struct deferred_held {
	struct list_head	 node;		/* deferred_thread::held */
	struct list_head	 age;		/* deferred_join::held, oldest first */
	struct evsel		*evsel;
	union perf_event	*event;
	u64			 cookie;
	struct bido_slot	*slot;
};

struct deferred_thread {
	u64			 last_cookie;	/* of the last record, 0: none */
	u64			 last_nr;
	u64			*last_ips;
	struct list_head	 held;
};

struct deferred_join {
	struct hashmap		*threads;	/* tid -> struct deferred_thread */
	struct list_head	 held;
	size_t			 held_bytes;
};

static size_t deferred_tid_hash(long key, void *ctx __maybe_unused)
{
	return key;
}

static bool deferred_tid_equal(long key1, long key2, void *ctx __maybe_unused)
{
	return key1 == key2;
}

static struct deferred_join *machine__deferred_join(struct machine *machine)
{
	struct deferred_join *join = machine->deferred_join;

	if (join)
		return join;
	join = zalloc(sizeof(*join));
	if (!join)
		return NULL;
	join->threads = hashmap__new(deferred_tid_hash, deferred_tid_equal, NULL);
	if (IS_ERR(join->threads)) {
		free(join);
		return NULL;
	}
	INIT_LIST_HEAD(&join->held);
	machine->deferred_join = join;
	return join;
}

static struct deferred_thread *deferred_join__thread(struct deferred_join *join, u32 tid,
						     bool create)
{
	struct deferred_thread *dt;

	if (hashmap__find(join->threads, tid, &dt))
		return dt;
	if (!create)
		return NULL;
	dt = zalloc(sizeof(*dt));
	if (!dt)
		return NULL;
	INIT_LIST_HEAD(&dt->held);
	if (hashmap__add(join->threads, tid, dt)) {
		free(dt);
		return NULL;
	}
	return dt;
}

/*
 * The sample of @event with its callchain's tail (PERF_CONTEXT_USER_DEFERRED
 * and the cookie) replaced by PERF_CONTEXT_USER and @ips, or, without
 * @ips, by nothing.  A new event the caller frees.
 */
static union perf_event *deferred__merge(struct evsel *evsel, union perf_event *event,
					 const u64 *ips, u64 nr)
{
	u64 type = evsel->core.attr.sample_type;
	u64 read_format = evsel->core.attr.read_format;
	struct ip_callchain *chain;
	struct perf_sample sample;
	union perf_event *merged;
	size_t size;
	u64 keep;

	if (evsel__parse_sample(evsel, event, &sample) || !sample.deferred_callchain)
		return NULL;
	keep = sample.callchain->nr - 2;
	chain = malloc(sizeof(*chain) + (keep + 1 + nr) * sizeof(u64));
	if (!chain)
		return NULL;
	memcpy(chain->ips, sample.callchain->ips, keep * sizeof(u64));
	chain->nr = keep;
	if (nr) {
		chain->ips[chain->nr++] = PERF_CONTEXT_USER;
		memcpy(chain->ips + chain->nr, ips, nr * sizeof(u64));
		chain->nr += nr;
	}
	sample.callchain = chain;

	size = perf_event__sample_event_size(&sample, type, read_format);
	merged = size <= UINT16_MAX ? zalloc(size) : NULL;
	if (merged) {
		merged->header = event->header;
		merged->header.size = size;
		if (perf_event__synthesize_sample(merged, type, read_format, &sample))
			zfree(&merged);
	}
	free(chain);
	return merged;
}

/* Hand one sample on, merged with @ips or stripped of its cookie */
static int deferred__deliver(struct evsel *evsel, union perf_event *event, const u64 *ips,
			     u64 nr, bool merged, struct bido_slot *slot,
			     deferred_deliver_fn deliver, void *data)
{
	union perf_event *out = deferred__merge(evsel, event, ips, nr);
	struct perf_sample sample;
	int ret;

	/* No memory, or a layout perf cannot write: as it came */
	if (!out)
		out = event;
	ret = evsel__parse_sample(evsel, out, &sample);
	if (!ret)
		ret = deliver(evsel, out, &sample, merged && out != event, slot, data);
	else
		pr_err("Can't parse sample, err = %d\n", ret);
	if (out != event)
		free(out);
	return ret;
}

static void deferred_held__delete(struct deferred_join *join, struct deferred_held *held)
{
	list_del(&held->node);
	list_del(&held->age);
	join->held_bytes -= held->event->header.size;
	bido_slot__cancel(held->slot);
	free(held->event);
	free(held);
}

/* Deliver the held samples of @dt: of @cookie merged with @ips, the rest not */
static int deferred_thread__release(struct deferred_join *join, struct deferred_thread *dt,
				    u64 cookie, const u64 *ips, u64 nr, bool all,
				    deferred_deliver_fn deliver, void *data)
{
	struct deferred_held *held, *n;
	int err = 0;

	/*
	 * The samples a thread holds are of one entry: the others went when
	 * it was held.  A look at the first will do, or each sample of an
	 * entry would walk those before it.
	 */
	if (!all && !list_empty(&dt->held) &&
	    list_first_entry(&dt->held, struct deferred_held, node)->cookie == cookie)
		return 0;
	list_for_each_entry_safe(held, n, &dt->held, node) {
		bool match = ips && held->cookie == cookie;

		if (!match && !all && held->cookie == cookie)
			continue;
		err = deferred__deliver(held->evsel, held->event, match ? ips : NULL,
					match ? nr : 0, match, held->slot, deliver, data);
		deferred_held__delete(join, held);
		if (err)
			break;
	}
	return err;
}

/* Deliver the oldest held samples, without their frames, down to @keep bytes */
static int deferred_join__release_oldest(struct deferred_join *join, size_t keep,
					 deferred_deliver_fn deliver, void *data)
{
	while (!list_empty(&join->held) && join->held_bytes > keep) {
		struct deferred_held *held = list_first_entry(&join->held,
							      struct deferred_held, age);
		int err = deferred__deliver(held->evsel, held->event, NULL, 0,
					    /*merged=*/false, held->slot, deliver, data);

		deferred_held__delete(join, held);
		if (err)
			return err;
	}
	return 0;
}

/**
 * deferred_join__hold - keep a sample until its user frames arrive
 *
 * Returns 1 if the sample was taken (delivered now with the thread's last
 * record, or later through @deliver), 0 if the caller delivers it as it
 * is (no memory to keep it), a negative error from @deliver.  @slot, the
 * sample's place in the order of events (or NULL), goes with it to
 * @deliver.  Only for sessions that deliver in time order.
 */
int deferred_join__hold(struct machine *machine, struct evsel *evsel,
			union perf_event *event, struct perf_sample *sample,
			struct bido_slot *slot, deferred_deliver_fn deliver, void *data)
{
	struct deferred_join *join = machine__deferred_join(machine);
	struct deferred_thread *dt;
	struct deferred_held *held;
	int err;

	if (!join)
		return 0;
	dt = deferred_join__thread(join, sample->tid, /*create=*/true);
	if (!dt)
		return 0;

	/* Taken after its entry's record was written */
	if (dt->last_cookie && dt->last_cookie == sample->deferred_cookie) {
		err = deferred__deliver(evsel, event, dt->last_ips, dt->last_nr,
					/*merged=*/true, slot, deliver, data);
		return err ? err : 1;
	}

	/* The task went back to user space since: those records did not come */
	err = deferred_thread__release(join, dt, sample->deferred_cookie, NULL, 0,
				       /*all=*/false, deliver, data);
	if (err)
		return err;

	held = zalloc(sizeof(*held));
	if (!held)
		return 0;
	held->event = memdup(event, event->header.size);
	if (!held->event) {
		free(held);
		return 0;
	}
	held->evsel = evsel;
	held->cookie = sample->deferred_cookie;
	bido_slot__hold(slot, &held->slot);
	list_add_tail(&held->node, &dt->held);
	list_add_tail(&held->age, &join->held);
	join->held_bytes += event->header.size;

	err = deferred_join__release_oldest(join, DEFERRED_HELD_MAX_BYTES, deliver, data);
	return err ? err : 1;
}

/*
 * A PERF_RECORD_CALLCHAIN_DEFERRED: its thread's held samples of its
 * cookie go on merged, those of older cookies without user frames.  The
 * thread is the record's sample_id tid: without sample_id_all nothing can
 * be joined.
 */
int deferred_join__record(struct machine *machine, union perf_event *event,
			  struct perf_sample *sample, deferred_deliver_fn deliver, void *data)
{
	struct perf_record_callchain_deferred *cd = &event->callchain_deferred;
	u64 nr = perf_event__callchain_deferred_nr(event);
	struct deferred_join *join;
	struct deferred_thread *dt;
	u64 *ips;

	if (sample->tid == (u32)-1)
		return 0;
	join = machine__deferred_join(machine);
	if (!join)
		return -ENOMEM;
	dt = deferred_join__thread(join, sample->tid, /*create=*/true);
	if (!dt)
		return -ENOMEM;

	ips = nr ? memdup(cd->ips, nr * sizeof(u64)) : zalloc(sizeof(u64));
	if (!ips)
		return -ENOMEM;
	free(dt->last_ips);
	dt->last_ips = ips;
	dt->last_nr = nr;
	dt->last_cookie = cd->cookie;
	return deferred_thread__release(join, dt, cd->cookie, ips, nr, /*all=*/true,
					deliver, data);
}

/* The thread exited or exec()ed: what it still waits for will not come */
int deferred_join__end_thread(struct machine *machine, u32 tid,
			      deferred_deliver_fn deliver, void *data)
{
	struct deferred_join *join = machine->deferred_join;
	struct deferred_thread *dt;
	int err;

	if (!join)
		return 0;
	dt = deferred_join__thread(join, tid, /*create=*/false);
	if (!dt)
		return 0;
	err = deferred_thread__release(join, dt, 0, NULL, 0, /*all=*/true, deliver, data);
	if (!err) {
		hashmap__delete(join->threads, tid, NULL, NULL);
		free(dt->last_ips);
		free(dt);
	}
	return err;
}

/* The end of the session: nothing more will come */
int deferred_join__flush(struct machine *machine, deferred_deliver_fn deliver, void *data)
{
	struct deferred_join *join = machine->deferred_join;

	return join ? deferred_join__release_oldest(join, 0, deliver, data) : 0;
}

void deferred_join__delete(struct machine *machine)
{
	struct deferred_join *join = machine->deferred_join;
	struct hashmap_entry *cur;
	size_t bkt;

	if (!join)
		return;
	while (!list_empty(&join->held))
		deferred_held__delete(join, list_first_entry(&join->held,
							     struct deferred_held, age));
	hashmap__for_each_entry(join->threads, cur, bkt) {
		struct deferred_thread *dt = cur->pvalue;

		free(dt->last_ips);
		free(dt);
	}
	hashmap__free(join->threads);
	zfree(&machine->deferred_join);
}
