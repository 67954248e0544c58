/* SPDX-License-Identifier: GPL-2.0 */
#ifndef __PERF_BUILD_ID_OFFSET_H
#define __PERF_BUILD_ID_OFFSET_H

#include <linux/types.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

/* What perf says when the kernel lacks the feature */
#define BIDO_ENOTSUP_MSG \
	"--buildid-offset: this kernel does not support PERF_SAMPLE_BUILD_ID_OFFSET\n"

struct bido_namer;
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

/* A sample's place in the order of events (see bido_join__event()) */
struct bido_slot;

void bido_slot__hold(struct bido_slot *slot, struct bido_slot **owner);
void bido_slot__cancel(struct bido_slot *slot);

int bido_join__event(struct machine *machine, struct evsel *evsel, union perf_event *event,
		     struct perf_sample *sample, struct events_stats *stats,
		     const struct bido_join_ops *ops, void *data);
int bido_join__flush(struct machine *machine, struct events_stats *stats,
		     const struct bido_join_ops *ops, void *data);
void bido_join__delete(struct machine *machine);

/*
 * A build-ID got the name @name while recording; @file opens the very file
 * the task maps (a /proc/self/fd link), during the call
 */
typedef int (*bido_named_fn)(const struct build_id *bid, const char *name, const char *file,
			     void *data);

/* A task's comm, read while recording, for its samples from @time on */
typedef int (*bido_comm_fn)(u32 pid, u32 tid, u64 time, const char *comm, void *data);
/* Writes @event to the output */
typedef int (*bido_write_fn)(union perf_event *event, void *data);

struct bido_namer *bido_namer__new(struct machine *machine, bido_named_fn named, void *data);
void bido_namer__set_comm(struct bido_namer *namer, u64 sample_type, bido_comm_fn comm);
void bido_namer__delete(struct bido_namer *namer);
size_t bido_namer__fprintf_summary(struct bido_namer *namer, FILE *fp);
void bido_namer__set_carry(struct bido_namer *namer);
int bido_namer__carry(struct bido_namer *namer, bido_write_fn write, void *data);
void bido_namer__scan(struct bido_namer *namer, const void *key, const void *buf, size_t size);
int bido_namer__run(struct bido_namer *namer);

int bido_live__event(struct machine *machine, struct bido_namer *namer, struct evsel *evsel,
		     union perf_event *event, struct perf_sample *sample,
		     struct events_stats *stats, bido_sample_fn fn, void *data);

int build_id_offset__insert_maps(struct machine *machine, union perf_event *event);
int build_id_offset__read_comm(u32 pid, u32 tid, char *comm, size_t size);
bool build_id_offset__dso_is_unnamed(const struct dso *dso);
bool build_id_offset__build_id_equal(const struct build_id *a, const struct build_id *b);
int machine__name_bido_dsos(struct machine *machine);

#endif /* __PERF_BUILD_ID_OFFSET_H */
