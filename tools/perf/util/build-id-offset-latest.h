/* SPDX-License-Identifier: GPL-2.0 */
#ifndef __PERF_BUILD_ID_OFFSET_LATEST_H
#define __PERF_BUILD_ID_OFFSET_LATEST_H

#include <stddef.h>

/*
 * perf record --buildid-offset --switch-output: the latest
 * PERF_RECORD_BUILD_ID_OFFSET records of each task, written again at the
 * start of each new output file (util/build-id-offset-latest.c).
 */

struct evlist;
union perf_event;
struct build_id_offset_latest;

typedef int (*build_id_offset_latest__write_t)(void *ctx, void *buf, size_t size);

struct build_id_offset_latest *build_id_offset_latest__new(struct evlist *evlist);
void build_id_offset_latest__delete(struct build_id_offset_latest *latest);
void build_id_offset_latest__push(struct build_id_offset_latest *latest, const void *stream,
				  const void *buf, size_t size);
void build_id_offset_latest__event(struct build_id_offset_latest *latest,
				   union perf_event *event);
int build_id_offset_latest__write(struct build_id_offset_latest *latest,
				  build_id_offset_latest__write_t write, void *ctx);

#endif /* __PERF_BUILD_ID_OFFSET_LATEST_H */
