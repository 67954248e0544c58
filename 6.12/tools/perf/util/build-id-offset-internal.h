/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What the files of the build-ID offset join share, not for the tools:
 * the join's state (util/build-id-offset.c), its order of events
 * (util/build-id-offset-order.c) and its index of DSOs by build-ID
 * (util/build-id-offset-dso.c), which the namer
 * (util/build-id-offset-namer.c) names.
 */
#ifndef __PERF_BUILD_ID_OFFSET_INTERNAL_H
#define __PERF_BUILD_ID_OFFSET_INTERNAL_H

#include <linux/compiler.h>
#include <linux/list.h>
#include <linux/types.h>
#include <stdbool.h>
#include <stddef.h>

#include "build-id.h"

struct bido_join_ops;
struct bido_slot;
struct dso;
struct events_stats;
struct evsel;
struct hashmap;
struct machine;
struct perf_sample;
union perf_event;

/* DSOs known by build-ID only, until a name is found: "[build-id:HEX]" */
#define BIDO_DSO_PREFIX		"[build-id:"

struct bido_join {
	struct hashmap		*threads;	/* tid -> struct bido_thread */
	struct list_head	 held;		/* every held sample, oldest first */
	size_t			 held_bytes;
	/* The order of events (util/build-id-offset-order.c) */
	struct list_head	 order;		/* struct bido_slot, in time order */
	/* The slots of held samples, whichever join holds them */
	struct list_head	 waiting;
	size_t			 order_bytes;
	bool			 ordering;	/* delivering from order */
	/* The index of DSOs by build-ID (util/build-id-offset-dso.c) */
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

/* Where the events the join delivers go */
struct bido_join_args {
	struct machine			*machine;
	struct events_stats		*stats;
	const struct bido_join_ops	*ops;
	void				*data;
};

/* Tables keyed by a tid, a pid or a pointer */
static inline size_t bido_tid_hash(long key, void *ctx __maybe_unused)
{
	return key;
}

static inline bool bido_tid_equal(long key1, long key2, void *ctx __maybe_unused)
{
	return key1 == key2;
}

/* util/build-id-offset.c */
struct bido_join *machine__bido_join(struct machine *machine);
int bido_sample__deliver(struct evsel *evsel, union perf_event *event,
			 struct perf_sample *sample, struct machine *machine,
			 bool unresolved, struct bido_join_args *args);

/* util/build-id-offset-order.c */
bool bido_order__waiting(struct machine *machine, const struct bido_join_args *args);
struct bido_slot *bido_order__reserve(struct machine *machine, u32 tid);
int bido_order__sample(struct bido_join_args *args, struct bido_slot *slot,
		       struct evsel *evsel, union perf_event *event,
		       struct perf_sample *sample, bool unresolved);
int bido_order__event(struct bido_join_args *args, union perf_event *event);
int bido_order__record(struct bido_join_args *args, union perf_event *event,
		       struct perf_sample *sample);
int bido_order__flush(struct machine *machine, struct bido_join_args *args);
void bido_order__exit(struct bido_join *join);

/* util/build-id-offset-dso.c */
int bido_dsos__init(struct bido_join *join);
void bido_dsos__exit(struct bido_join *join);
struct dso *build_id_offset__scan_dsos(struct machine *machine, const struct build_id *bid);
struct dso *build_id_offset__find_dso(struct machine *machine, const struct build_id *bid);
int build_id_offset__add_dso(struct machine *machine, const struct build_id *bid,
			     struct dso *dso);

#endif /* __PERF_BUILD_ID_OFFSET_INTERNAL_H */
