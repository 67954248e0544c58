// SPDX-License-Identifier: GPL-2.0
/*
 * perf record --buildid-offset --switch-output: each output file resolves
 * on its own.
 *
 * While a task's address space does not change, the kernel writes one
 * PERF_RECORD_BUILD_ID_OFFSET for it and names that record in the samples
 * it covers; an UNCHANGED record (no maps) says that the task's record
 * before it covers its entry.  After a switch, the samples in the new file
 * would name records that went into an earlier file.  So perf record keeps,
 * per tid, its latest record with maps and the latest UNCHANGED record
 * after it, and writes them again at the start of each new file as they
 * were: their cookies, and their times (sample_id), which sort them before
 * the samples of the new file.  A reader then finds of each task what it
 * would have found last in one long file.  A record that is in both files
 * (read late) inserts the same maps twice, which does no harm.
 *
 * The main thread feeds the table with the chunks of ring buffer it writes
 * to the file (record__pushfn()): it holds what went into the old file,
 * nothing later, nothing the file lost.  Not the namer's thread: its copy
 * of the records comes through ring buffers of its own, which it reads
 * when it can (behind the main thread, with losses of their own), and it
 * runs only when build-IDs are collected, which --switch-output turns off
 * by default.  A chunk ends at the end of its ring buffer: an event split
 * there is completed from the next chunk of the same buffer.
 *
 * The records of a task may be read out of time order (it writes them on
 * the CPU it runs on, and the CPUs' buffers are read one after the other):
 * their times decide which one is latest.  A new task with the tid (FORK),
 * an exec (COMM with COMM_EXEC), or a record without maps (MM_CHANGED, or
 * nr 0: the kernel then reuses no record until the next one with maps)
 * makes the task's earlier records stale.
 *
 * A task's entry goes at the first switch after the task is gone (kill()
 * says ESRCH), once written to the new file for the samples still in the
 * buffers.  Not at PERF_RECORD_EXIT: the record of an exiting task's last
 * entry is written after its EXIT, it would make an entry that nothing
 * drops.  So the table holds what the live tasks need, plus at most one
 * period's exited tasks.
 */
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <linux/err.h>
#include <linux/kernel.h>
#include <linux/perf_event.h>
#include <linux/string.h>
#include <linux/zalloc.h>
#include <perf/event.h>

#include "build-id-offset-latest.h"
#include "event.h"
#include "evlist.h"
#include "hashmap.h"

/* A copy of a record, and its time */
struct latest_rec {
	union perf_event	*event;
	u64			time;
};

struct latest_task {
	struct latest_rec	maps;		/* the latest record with maps */
	struct latest_rec	unchanged;	/* the latest UNCHANGED one */
	u64			stale;		/* records before this time no longer count */
};

struct build_id_offset_latest {
	struct evlist		*evlist;	/* whose sample_id gives the times */
	struct hashmap		*tasks;		/* tid -> struct latest_task * */
	/* An event split at the end of a ring buffer, until its rest comes */
	union perf_event	*part;		/* PERF_SAMPLE_MAX_SIZE bytes */
	size_t			part_size;
	const void		*part_stream;
};

static size_t latest__hash(long key, void *ctx __maybe_unused)
{
	return key;
}

static bool latest__equal(long key1, long key2, void *ctx __maybe_unused)
{
	return key1 == key2;
}

static void latest_rec__set(struct latest_rec *rec, const union perf_event *event, u64 time)
{
	void *copy = memdup(event, event->header.size);

	/* Without memory the older record stays: samples it covers still resolve */
	if (!copy)
		return;
	free(rec->event);
	rec->event = copy;
	rec->time = time;
}

static void latest_rec__clear(struct latest_rec *rec)
{
	zfree(&rec->event);
	rec->time = 0;
}

static void latest_task__delete(struct latest_task *task)
{
	latest_rec__clear(&task->maps);
	latest_rec__clear(&task->unchanged);
	free(task);
}

/* The time in @event's sample_id, 0 if it has none */
static u64 latest__time(struct build_id_offset_latest *latest, union perf_event *event)
{
	u64 time = 0;

	if (evlist__parse_sample_timestamp(latest->evlist, event, &time) || time == -1ULL)
		return 0;
	return time;
}

static struct latest_task *latest__findnew(struct build_id_offset_latest *latest, u32 tid)
{
	struct latest_task *task;

	if (hashmap__find(latest->tasks, tid, &task))
		return task;
	task = zalloc(sizeof(*task));
	if (task && hashmap__add(latest->tasks, tid, task)) {
		free(task);
		task = NULL;
	}
	return task;
}

/* The records of @task until @time no longer count */
static void latest_task__stale(struct latest_task *task, u64 time)
{
	if (task->maps.time <= time)
		latest_rec__clear(&task->maps);
	if (task->unchanged.time <= time)
		latest_rec__clear(&task->unchanged);
	if (task->stale < time)
		task->stale = time;
}

static void latest__stale(struct build_id_offset_latest *latest, u32 tid, u64 time)
{
	struct latest_task *task;

	if (hashmap__find(latest->tasks, tid, &task))
		latest_task__stale(task, time);
}

static void latest__record(struct build_id_offset_latest *latest, union perf_event *event)
{
	const struct perf_record_build_id_offset *bido = &event->build_id_offset;
	struct latest_task *task;
	u64 time;

	/* tid 0: a task outside perf's pid namespace, not one task */
	if (event->header.size < sizeof(*bido) || !bido->tid)
		return;
	time = latest__time(latest, event);
	task = latest__findnew(latest, bido->tid);
	if (!task || time < task->stale)
		return;

	/* Kept even before its record with maps, should that one be read later */
	if (bido->flags & PERF_BUILD_ID_OFFSET_F_UNCHANGED) {
		if (time >= task->maps.time && time >= task->unchanged.time)
			latest_rec__set(&task->unchanged, event, time);
		return;
	}
	/* One older than the latest, read late */
	if (time < task->maps.time)
		return;
	if (!perf_event__build_id_offset_nr(event) ||
	    (bido->flags & PERF_BUILD_ID_OFFSET_F_MM_CHANGED)) {
		latest_task__stale(task, time);
		return;
	}
	latest_rec__set(&task->maps, event, time);
	if (task->unchanged.time < time)
		latest_rec__clear(&task->unchanged);
}

/* One whole event of the ring buffers, as the kernel wrote it */
void build_id_offset_latest__event(struct build_id_offset_latest *latest,
				   union perf_event *event)
{
	switch (event->header.type) {
	case PERF_RECORD_BUILD_ID_OFFSET:
		latest__record(latest, event);
		break;
	case PERF_RECORD_FORK:
		if (event->header.size >= sizeof(event->fork))
			latest__stale(latest, event->fork.tid, event->fork.time);
		break;
	case PERF_RECORD_COMM:
		/* The comm itself may be shorter than comm[] */
		if ((event->header.misc & PERF_RECORD_MISC_COMM_EXEC) &&
		    event->header.size >= offsetof(struct perf_record_comm, comm))
			latest__stale(latest, event->comm.tid, latest__time(latest, event));
		break;
	default:
		break;
	}
}

/*
 * A chunk of the ring buffer @stream, starting at an event or where the
 * last chunk of @stream ended (perf_mmap__push() pushes the part up to the
 * end of the buffer, then the part from its start).
 */
void build_id_offset_latest__push(struct build_id_offset_latest *latest, const void *stream,
				  const void *buf, size_t size)
{
	const struct perf_event_header *header;
	const char *p = buf, *end = p + size;

	/* The rest of the event split at the end of another buffer never came */
	if (latest->part_size && latest->part_stream != stream)
		latest->part_size = 0;

	while (latest->part_size && p < end) {
		size_t want = sizeof(*header), left = end - p, n;

		if (latest->part_size >= want)
			want = latest->part->header.size;
		n = min(left, want - latest->part_size);
		memcpy((char *)latest->part + latest->part_size, p, n);
		latest->part_size += n;
		p += n;
		if (latest->part_size < sizeof(*header))
			break;
		if (latest->part->header.size < sizeof(*header)) {
			latest->part_size = 0;
			return;
		}
		if (latest->part_size == latest->part->header.size) {
			build_id_offset_latest__event(latest, latest->part);
			latest->part_size = 0;
		}
	}

	while (p < end) {
		size_t left = end - p;

		header = (const void *)p;
		if (left < sizeof(*header) || left < header->size) {
			memcpy(latest->part, p, left);
			latest->part_size = left;
			latest->part_stream = stream;
			return;
		}
		/* Not an event: nor is the rest of the chunk */
		if (header->size < sizeof(*header))
			return;
		build_id_offset_latest__event(latest, (union perf_event *)p);
		p += header->size;
	}
}

/*
 * At the start of a new output file: each task's latest records, in the
 * order it wrote them.  Then the tasks that are gone leave the table.
 */
int build_id_offset_latest__write(struct build_id_offset_latest *latest,
				  build_id_offset_latest__write_t write, void *ctx)
{
	struct hashmap_entry *cur, *tmp;
	size_t bkt;
	int err = 0;

	hashmap__for_each_entry_safe(latest->tasks, cur, tmp, bkt) {
		struct latest_task *task = cur->pvalue;
		long tid = cur->key;

		if (!err && task->maps.event) {
			err = write(ctx, task->maps.event, task->maps.event->header.size);
			if (!err && task->unchanged.event)
				err = write(ctx, task->unchanged.event,
					    task->unchanged.event->header.size);
		}
		if (kill(tid, 0) && errno == ESRCH) {
			hashmap__delete(latest->tasks, tid, NULL, NULL);
			latest_task__delete(task);
		}
	}
	return err;
}

struct build_id_offset_latest *build_id_offset_latest__new(struct evlist *evlist)
{
	struct build_id_offset_latest *latest = zalloc(sizeof(*latest));

	if (!latest)
		return NULL;
	latest->evlist = evlist;
	latest->part = malloc(PERF_SAMPLE_MAX_SIZE);
	latest->tasks = hashmap__new(latest__hash, latest__equal, NULL);
	if (!latest->part || IS_ERR(latest->tasks)) {
		if (!IS_ERR(latest->tasks))
			hashmap__free(latest->tasks);
		free(latest->part);
		free(latest);
		return NULL;
	}
	return latest;
}

void build_id_offset_latest__delete(struct build_id_offset_latest *latest)
{
	struct hashmap_entry *cur;
	size_t bkt;

	if (!latest)
		return;
	hashmap__for_each_entry(latest->tasks, cur, bkt)
		latest_task__delete(cur->pvalue);
	hashmap__free(latest->tasks);
	free(latest->part);
	free(latest);
}
