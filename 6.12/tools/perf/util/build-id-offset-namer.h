/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Names for the files of build-ID offset records, found while recording
 * and at the end (util/build-id-offset-namer.c)
 */
#ifndef __PERF_BUILD_ID_OFFSET_NAMER_H
#define __PERF_BUILD_ID_OFFSET_NAMER_H

#include <linux/types.h>
#include <stddef.h>
#include <stdio.h>

struct bido_namer;
struct build_id;
struct evlist;
struct machine;
union perf_event;

/*
 * Time a pass of bido_namer__run() may spend naming files: a process's
 * files, over a slow file system, take a second to read, and the passes
 * must go on scanning the tasks that exit meanwhile.
 */
#define BIDO_NAME_BUDGET_NS	(40ULL * 1000 * 1000)

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
void bido_namer__set_carry(struct bido_namer *namer, struct evlist *evlist);
int bido_namer__carry(struct bido_namer *namer, bido_write_fn write, void *data);
void bido_namer__scan(struct bido_namer *namer, const void *key, const void *buf, size_t size);
int bido_namer__run(struct bido_namer *namer);
int bido_namer__run_every(struct bido_namer *namer, u64 period);

int build_id_offset__read_comm(u32 pid, u32 tid, char *comm, size_t size);
int machine__name_bido_dsos(struct machine *machine);

#endif /* __PERF_BUILD_ID_OFFSET_NAMER_H */
