// SPDX-License-Identifier: GPL-2.0
/*
 * The build-ID offset join (util/build-id-offset.c) and the deferred
 * callchain join (util/callchain-deferred.c) hold samples back; the tool
 * still sees the events in time order.  While a sample is held, every
 * event after it waits behind it in a queue (a copy of each, in the order
 * they came), and goes to the tool once the samples before it went, each
 * with its own time.  A record goes just before the first sample it is
 * for, so that its maps are in when that sample resolves.  When nothing
 * is held, events go straight on.  Past BIDO_ORDER_MAX_BYTES of waiting
 * events the oldest held sample lets them by: it goes out of order later,
 * counted.
 *
 * Only for tools that process events themselves in time order (struct
 * bido_join_ops::event); perf top, which needs no order, has no queue.
 */
#include <stdlib.h>
#include <linux/list.h>
#include <linux/string.h>
#include <linux/zalloc.h>

#include "build-id-offset.h"
#include "build-id-offset-internal.h"
#include "debug.h"
#include "event.h"
#include "events_stats.h"
#include "evsel.h"
#include "machine.h"
#include "sample.h"

/* Bytes of events waiting behind held samples above which one lets them by */
#define BIDO_ORDER_MAX_BYTES	(64UL << 20)

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

/* The order of events of @machine's session; NULL: none (a live tool) */
static struct bido_join *bido_order__join(struct machine *machine,
					  const struct bido_join_args *args)
{
	return args->ops->event ? machine__bido_join(machine) : NULL;
}

/* Whether events wait behind a held sample (a tool with ops->event only) */
bool bido_order__waiting(struct machine *machine, const struct bido_join_args *args)
{
	return args->ops->event && machine->bido_join && !list_empty(&machine->bido_join->order);
}

/* A place at the end of the order for a sample of @tid about to be held */
struct bido_slot *bido_order__reserve(struct machine *machine, u32 tid)
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
int bido_order__sample(struct bido_join_args *args, struct bido_slot *slot,
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
int bido_order__event(struct bido_join_args *args, union perf_event *event)
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
int bido_order__record(struct bido_join_args *args, union perf_event *event,
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
int bido_order__flush(struct machine *machine, struct bido_join_args *args)
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

/*
 * The join goes: the events still waiting go with it.  Their holders, in
 * the build-ID offset join or in the deferred one, keep no pointer to them.
 */
void bido_order__exit(struct bido_join *join)
{
	struct bido_slot *slot, *n;

	list_for_each_entry_safe(slot, n, &join->order, node) {
		free(slot->event);
		bido_slot__cancel(slot);
	}
}
