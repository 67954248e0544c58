/* SPDX-License-Identifier: GPL-2.0 */
#ifndef __PERF_BUILD_ID_OFFSET_MMAP2_H
#define __PERF_BUILD_ID_OFFSET_MMAP2_H

/*
 * perf inject --buildid-offset-mmap2: the output of a file recorded with
 * PERF_SAMPLE_BUILD_ID_OFFSET, written so that a perf without it reads
 * the same (util/build-id-offset-mmap2.c).
 */

#include <linux/types.h>
#include <stddef.h>

struct machine;
struct perf_event_attr;
struct perf_sample;
struct perf_session;
union perf_event;

struct build_id_offset_mmap2;

typedef int (*build_id_offset_mmap2__write_t)(void *ctx, const void *buf, size_t size);

struct build_id_offset_mmap2 *build_id_offset_mmap2__new(struct perf_session *session,
							 build_id_offset_mmap2__write_t write,
							 void *ctx);
void build_id_offset_mmap2__delete(struct build_id_offset_mmap2 *bm);

int build_id_offset_mmap2__event(struct build_id_offset_mmap2 *bm, union perf_event *event);
int build_id_offset_mmap2__sample(struct build_id_offset_mmap2 *bm, union perf_event *event,
				  struct perf_sample *sample, struct machine *machine);
int build_id_offset_mmap2__record(struct build_id_offset_mmap2 *bm, union perf_event *event,
				  struct perf_sample *sample, struct machine *machine);
int build_id_offset_mmap2__round(struct build_id_offset_mmap2 *bm, u64 delivered);
int build_id_offset_mmap2__finish(struct build_id_offset_mmap2 *bm);

void build_id_offset_mmap2__strip_attr(struct perf_event_attr *attr);
void build_id_offset_mmap2__shrink_attr(struct perf_event_attr *attr);

#endif /* __PERF_BUILD_ID_OFFSET_MMAP2_H */
