/* SPDX-License-Identifier: GPL-2.0 */
#ifndef __PERF_BUILD_ID_OFFSET_H
#define __PERF_BUILD_ID_OFFSET_H

#include <linux/list.h>
#include <linux/types.h>
#include <stdbool.h>

struct dso;
struct evsel;
struct machine;
struct perf_sample;
union perf_event;

/*
 * A sample recorded with PERF_SAMPLE_BUILD_ID_OFFSET whose
 * PERF_RECORD_BUILD_ID_OFFSET has not been seen yet: a copy of the event,
 * parsed again when it is delivered.
 */
struct bio_held {
	struct list_head	 node;		/* bio_thread::held */
	struct list_head	 age;		/* bio_join::held, oldest first */
	struct evsel		*evsel;
	u64			 cookie;
	u32			 tid;
	/* Its record came flagged MM_CHANGED: no user address resolves */
	bool			 mm_changed;
	union perf_event	*event;
};

/*
 * Delivers a held sample.  joined: its record arrived (and its maps are
 * in the thread, unless held->mm_changed), otherwise none came: then no
 * user address of the sample may be resolved.
 */
typedef int (*bio_deliver_fn)(struct bio_held *held, bool joined, void *data);

int bio_join__hold(struct machine *machine, struct evsel *evsel,
		   union perf_event *event, struct perf_sample *sample,
		   bio_deliver_fn deliver, void *data);
int bio_join__record_begin(struct machine *machine, u32 tid, u64 cookie,
			   bio_deliver_fn deliver, void *data);
int bio_join__record_end(struct machine *machine, u32 tid, u64 cookie,
			 u32 flags, bio_deliver_fn deliver, void *data);
int bio_join__end_thread(struct machine *machine, u32 tid, bool exec,
			 bio_deliver_fn deliver, void *data);
int bio_join__flush(struct machine *machine, bio_deliver_fn deliver, void *data);
void bio_join__delete(struct machine *machine);

int bio__insert_maps(struct machine *machine, union perf_event *event);
bool bio__dso_is_unnamed(const struct dso *dso);
int machine__name_bio_dsos(struct machine *machine);

#endif /* __PERF_BUILD_ID_OFFSET_H */
