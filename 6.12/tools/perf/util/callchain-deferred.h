/* SPDX-License-Identifier: GPL-2.0 */
#ifndef __PERF_CALLCHAIN_DEFERRED_H
#define __PERF_CALLCHAIN_DEFERRED_H

#include <stdbool.h>
#include <linux/types.h>

struct bido_slot;
struct evsel;
struct machine;
struct perf_sample;
union perf_event;

/*
 * Hands a sample on, its deferred user frames merged into its callchain
 * (merged) or not (the record never came: lost, or perf stopped first).
 */
typedef int (*deferred_deliver_fn)(struct evsel *evsel, union perf_event *event,
				   struct perf_sample *sample, bool merged,
				   struct bido_slot *slot, void *data);

int deferred_join__hold(struct machine *machine, struct evsel *evsel,
			union perf_event *event, struct perf_sample *sample,
			struct bido_slot *slot, deferred_deliver_fn deliver, void *data);
int deferred_join__record(struct machine *machine, union perf_event *event,
			  struct perf_sample *sample, deferred_deliver_fn deliver, void *data);
int deferred_join__end_thread(struct machine *machine, u32 tid,
			      deferred_deliver_fn deliver, void *data);
int deferred_join__flush(struct machine *machine, deferred_deliver_fn deliver, void *data);
void deferred_join__delete(struct machine *machine);

#endif /* __PERF_CALLCHAIN_DEFERRED_H */
