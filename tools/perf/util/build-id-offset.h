/* SPDX-License-Identifier: GPL-2.0 */
#ifndef __PERF_BUILD_ID_OFFSET_H
#define __PERF_BUILD_ID_OFFSET_H

/*
 * The maps of a PERF_RECORD_BUILD_ID_OFFSET go into its thread, so that
 * the samples with its cookie resolve through the thread's maps, as with
 * MMAP2 records (util/build-id-offset.c).
 */

#include <stdbool.h>
#include <stddef.h>

struct dso;
struct machine;
struct perf_sample;
union perf_event;

/* Placeholder name of a file known by its build-ID only */
#define BUILD_ID_OFFSET_DSO_PREFIX	"[build-id:"

int build_id_offset__insert_maps(struct machine *machine, union perf_event *event);
int build_id_offset__note_record(struct machine *machine, union perf_event *event);
bool build_id_offset__sample_has_record(struct machine *machine, const struct perf_sample *sample);
bool build_id_offset__dso_is_unnamed(const struct dso *dso);
/* A hashmap keyed by struct build_id pointers */
size_t build_id_offset__hash(long key, void *ctx);
bool build_id_offset__equal(long key1, long key2, void *ctx);
void build_id_offset__exit(struct machine *machine);

#endif /* __PERF_BUILD_ID_OFFSET_H */
