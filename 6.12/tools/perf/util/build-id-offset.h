/* SPDX-License-Identifier: GPL-2.0 */
#ifndef __PERF_BUILD_ID_OFFSET_H
#define __PERF_BUILD_ID_OFFSET_H

/*
 * PERF_SAMPLE_BUILD_ID_OFFSET: the join of samples with their
 * PERF_RECORD_BUILD_ID_OFFSET (util/build-id-offset.c), the order of the
 * events it holds back (util/build-id-offset-order.c), and the maps a
 * record puts in its thread (util/build-id-offset-dso.c).  The namer is
 * in build-id-offset-namer.h, perf top's join in build-id-offset-live.h.
 */

#include <linux/types.h>
#include <stdbool.h>

/* What perf says when the kernel lacks the feature */
#define BIDO_ENOTSUP_MSG \
	"--buildid-offset: this kernel does not support PERF_SAMPLE_BUILD_ID_OFFSET\n"

struct build_id;
struct dso;
struct events_stats;
struct evsel;
struct machine;
struct perf_sample;
union perf_event;

/* Hands on a sample, once its record's maps are in (or none will come) */
typedef int (*bido_sample_fn)(struct evsel *evsel, union perf_event *event,
			     struct perf_sample *sample, struct machine *machine, void *data);

/* What the join hands the events it takes to; see bido_join__event() */
struct bido_join_ops {
	bido_sample_fn	sample;
	/* The tool's processing of a record: its maps go in */
	int		(*record)(union perf_event *event, struct perf_sample *sample,
				  struct machine *machine, void *data);
	/*
	 * The tool's processing of any other event, or of a record, that
	 * waited behind held samples; NULL: no waiting, no time order
	 */
	int		(*event)(union perf_event *event, struct machine *machine, void *data);
	/* Samples wait for their build-ID offset record, deferred callchain */
	bool		bido;
	bool		deferred;
};

int bido_join__event(struct machine *machine, struct evsel *evsel, union perf_event *event,
		     struct perf_sample *sample, struct events_stats *stats,
		     const struct bido_join_ops *ops, void *data);
int bido_join__flush(struct machine *machine, struct events_stats *stats,
		     const struct bido_join_ops *ops, void *data);
void bido_join__delete(struct machine *machine);

/*
 * A sample's place in the order of events, for the deferred callchain
 * join (util/build-id-offset-order.c)
 */
struct bido_slot;

void bido_slot__hold(struct bido_slot *slot, struct bido_slot **owner);
void bido_slot__cancel(struct bido_slot *slot);

/* util/build-id-offset-dso.c */
int build_id_offset__insert_maps(struct machine *machine, union perf_event *event);
bool build_id_offset__dso_is_unnamed(const struct dso *dso);
bool build_id_offset__build_id_equal(const struct build_id *a, const struct build_id *b);

#endif /* __PERF_BUILD_ID_OFFSET_H */
