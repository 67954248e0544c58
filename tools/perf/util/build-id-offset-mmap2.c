// SPDX-License-Identifier: GPL-2.0
/*
 * perf inject --buildid-offset-mmap2 writes a file recorded with
 * PERF_SAMPLE_BUILD_ID_OFFSET so that a perf without it resolves every
 * user address as this perf does: to the same file, or to nothing.
 *
 * The maps of each PERF_RECORD_BUILD_ID_OFFSET become PERF_RECORD_MMAP2
 * records with the file's build-ID, timed at the first sample of the
 * entry they are for.  A reader inserts maps in time order, so everything
 * goes out in time order, through an ordered_events queue of its own:
 * samples wait for their record in the session, and nothing later than
 * the oldest of them is written until it comes.  A machine fed with what
 * has been written knows the maps a reader has at each point: an MMAP2
 * that it already has is not written again, and a user address that this
 * perf could not map but a reader would is cleared (to 0) in the sample.
 * Samples lose their cookie, and the records go.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <linux/kernel.h>
#include <linux/string.h>
#include <linux/zalloc.h>

#include "build-id-offset-mmap2.h"
#include "addr_location.h"
#include "branch.h"
#include "build-id.h"
#include "debug.h"
#include "dso.h"
#include "event.h"
#include "evlist.h"
#include "evsel.h"
#include "machine.h"
#include "map.h"
#include "maps.h"
#include "ordered-events.h"
#include "sample.h"
#include "session.h"
#include "synthetic-events.h"
#include "thread.h"
#include "tool.h"

struct build_id_offset_mmap2 {
	/* Handle for perf_event__synthesize_mmap2_build_id()'s callback */
	struct perf_tool		 tool;
	struct perf_session		*session;
	/* What goes out, in time order */
	struct ordered_events		 queue;
	/* The threads and maps of a reader of what went out */
	struct machine			 reader;
	build_id_offset_mmap2__write_t	 write;
	void				*ctx;
	u64				 nr_written;
	size_t				 nr_cleared;
};

/*
 * After each queued event: whether it is an MMAP2 of a record's map, and
 * the user addresses of a sample that this perf found no map for.
 */
struct queued_tail {
	u32	candidate;
	u32	nr;
	u64	addrs[];
};

static struct queued_tail *queued_tail(union perf_event *event)
{
	return (void *)event + event->header.size;
}

static int build_id_offset_mmap2__deliver(struct ordered_events *queue,
					  struct ordered_event *oev);

static int build_id_offset_mmap2__queue(struct build_id_offset_mmap2 *bm,
					union perf_event *event, u64 time,
					bool candidate, const u64 *addrs, u32 nr)
{
	size_t size = event->header.size;
	union perf_event *copy;
	struct queued_tail *tail;
	int err;

	copy = malloc(size + sizeof(*tail) + nr * sizeof(u64));
	if (!copy)
		return -ENOMEM;
	memcpy(copy, event, size);
	tail = queued_tail(copy);
	tail->candidate = candidate;
	tail->nr = nr;
	if (nr)
		memcpy(tail->addrs, addrs, nr * sizeof(u64));
	err = ordered_events__queue(&bm->queue, copy, time, /*file_offset=*/0,
				    /*file_path=*/NULL);
	if (err == -ETIME) {
		/* No time to order it by: it goes out now */
		struct ordered_event now = { .event = copy, .timestamp = time };

		return build_id_offset_mmap2__deliver(&bm->queue, &now);
	}
	if (err)
		free(copy);
	return err;
}

static int build_id_offset_mmap2__write(struct build_id_offset_mmap2 *bm, const void *buf,
					size_t size)
{
	bm->nr_written++;
	return bm->write(bm->ctx, buf, size);
}

/* Events without a time (the header's, in a pipe) go out as they come */
int build_id_offset_mmap2__event(struct build_id_offset_mmap2 *bm, union perf_event *event)
{
	u64 time;

	if (event->header.type >= PERF_RECORD_USER_TYPE_START ||
	    evlist__parse_sample_timestamp(bm->session->evlist, event, &time) || !time)
		return bm->write(bm->ctx, event, event->header.size);
	return build_id_offset_mmap2__queue(bm, event, time, /*candidate=*/false, NULL, 0);
}

static bool build_id_offset_mmap2__mapped(struct thread *thread, u64 addr)
{
	struct addr_location al;
	bool mapped;

	addr_location__init(&al);
	mapped = thread__find_map(thread, PERF_RECORD_MISC_USER, addr, &al);
	addr_location__exit(&al);
	return mapped;
}

typedef int (*user_addr_fn)(u64 *addr, void *data);

/*
 * Call @fn on each user address of @sample: the IP of a sample in user
 * space, the user entries of its callchain and its branch stack's.
 */
static int sample__visit_user_addrs(struct perf_sample *sample, struct machine *machine,
				    user_addr_fn fn, void *data)
{
	int err;

	if (sample->cpumode == PERF_RECORD_MISC_USER) {
		err = fn(&sample->ip, data);
		if (err)
			return err;
	}
	if (sample->callchain) {
		u64 context = PERF_CONTEXT_USER, i;

		for (i = 0; i < sample->callchain->nr; i++) {
			u64 *ip = &sample->callchain->ips[i];

			if (*ip >= PERF_CONTEXT_MAX) {
				context = *ip;
				/* A cookie follows, unless the entries were merged in */
				if (context == PERF_CONTEXT_USER_DEFERRED &&
				    i + 1 < sample->callchain->nr &&
				    sample->callchain->ips[i + 1] < PERF_CONTEXT_MAX)
					i++;
				continue;
			}
			if (context == PERF_CONTEXT_USER) {
				err = fn(ip, data);
				if (err)
					return err;
			}
		}
	}
	if (sample->branch_stack) {
		struct branch_entry *entries = perf_sample__branch_entries(sample);
		u64 i;

		for (i = 0; i < sample->branch_stack->nr; i++) {
			if (!machine__kernel_ip(machine, entries[i].from)) {
				err = fn(&entries[i].from, data);
				if (err)
					return err;
			}
			if (!machine__kernel_ip(machine, entries[i].to)) {
				err = fn(&entries[i].to, data);
				if (err)
					return err;
			}
		}
	}
	return 0;
}

struct unmapped {
	struct thread	*thread;
	u64		*addrs;
	u32		 nr, max;
};

static int unmapped__add(u64 *addr, void *data)
{
	struct unmapped *u = data;

	if (!*addr || build_id_offset_mmap2__mapped(u->thread, *addr))
		return 0;
	if (u->nr == u->max) {
		u32 max = u->max ? 2 * u->max : 16;
		u64 *addrs = realloc(u->addrs, max * sizeof(u64));

		if (!addrs)
			return -ENOMEM;
		u->addrs = addrs;
		u->max = max;
	}
	u->addrs[u->nr++] = *addr;
	return 0;
}

/*
 * @event with the callchain of @sample, which has the user entries of its
 * deferred callchain merged in, in place of its own, which ends with
 * PERF_CONTEXT_USER_DEFERRED and the cookie: a reader resolves them with
 * the sample, at its time, as this perf did.
 */
static union perf_event *build_id_offset_mmap2__merged(struct build_id_offset_mmap2 *bm,
						       union perf_event *event,
						       struct perf_sample *sample)
{
	struct ip_callchain *merged = sample->callchain;
	size_t head, old_len, new_len, size;
	struct perf_sample raw;
	union perf_event *out = NULL;
	u64 nr = 0, i;

	perf_sample__init(&raw, /*all=*/false);
	if (evlist__parse_sample(bm->session->evlist, event, &raw) || !raw.callchain)
		goto unmerged;
	head = (void *)raw.callchain - (void *)event;
	old_len = (raw.callchain->nr + 1) * sizeof(u64);
	new_len = (merged->nr + 1) * sizeof(u64);
	size = event->header.size - old_len + new_len;
	if (size > UINT16_MAX)
		goto unmerged;
	out = malloc(size);
	if (!out)
		goto out;
	memcpy(out, event, head);
	for (i = 0; i < merged->nr; i++) {
		u64 ip = merged->ips[i];

		/* The user entries' own context marker, not the deferred one */
		if (ip == PERF_CONTEXT_USER_DEFERRED) {
			if (i + 1 < merged->nr && merged->ips[i + 1] == PERF_CONTEXT_USER)
				continue;
			ip = PERF_CONTEXT_USER;
		}
		((u64 *)((void *)out + head))[1 + nr++] = ip;
	}
	*(u64 *)((void *)out + head) = nr;
	size -= (merged->nr - nr) * sizeof(u64);
	memcpy((void *)out + head + (nr + 1) * sizeof(u64), (void *)event + head + old_len,
	       event->header.size - head - old_len);
	out->header.size = size;
out:
	perf_sample__exit(&raw);
	return out;
unmerged:
	/* Too large for a record: the user entries are left out */
	out = memdup(event, event->header.size);
	goto out;
}

/*
 * A sample, delivered with the maps of its record in @machine: noted with
 * the user addresses that it leaves unmapped here.
 */
int build_id_offset_mmap2__sample(struct build_id_offset_mmap2 *bm, union perf_event *event,
				  struct perf_sample *sample, struct machine *machine)
{
	struct unmapped u = { .thread = NULL };
	union perf_event *merged = NULL;
	int err;

	if (sample->merged_callchain) {
		merged = build_id_offset_mmap2__merged(bm, event, sample);
		if (!merged)
			return -ENOMEM;
		event = merged;
	}

	u.thread = machine__findnew_thread(machine, sample->pid, sample->tid);
	if (!u.thread)
		return -ENOMEM;
	err = sample__visit_user_addrs(sample, machine, unmapped__add, &u);
	thread__put(u.thread);
	if (!err)
		err = build_id_offset_mmap2__queue(bm, event, sample->time, /*candidate=*/false,
						   u.addrs, u.nr);
	free(u.addrs);
	free(merged);
	return err;
}

static int build_id_offset_mmap2__queue_candidate(const struct perf_tool *tool,
						  union perf_event *event,
						  struct perf_sample *sample,
						  struct machine *machine __maybe_unused)
{
	struct build_id_offset_mmap2 *bm = container_of(tool, struct build_id_offset_mmap2, tool);

	return build_id_offset_mmap2__queue(bm, event, sample->time, /*candidate=*/true, NULL, 0);
}

/*
 * A PERF_RECORD_BUILD_ID_OFFSET whose maps are in @machine now: an MMAP2
 * of each, as this perf has it, at the time of the first sample of its
 * entry still held (or of the record, if none is).
 */
int build_id_offset_mmap2__record(struct build_id_offset_mmap2 *bm, union perf_event *event,
				  struct perf_sample *sample, struct machine *machine)
{
	struct perf_record_build_id_offset *rec = &event->build_id_offset;
	u32 i, nr = perf_event__build_id_offset_nr(event);
	struct perf_sample at = *sample;
	struct thread *thread;
	int err = 0;

	if (!nr || (rec->flags & PERF_BUILD_ID_OFFSET_F_MM_CHANGED))
		return 0;
	thread = machine__find_thread(machine, rec->pid, rec->tid);
	if (!thread)
		return 0;
	perf_session__held_sample_time(bm->session, rec->tid, rec->cookie, &at.time);
	for (i = 0; i < nr && !err; i++) {
		struct map *map = maps__find(thread__maps(thread), rec->maps[i].start);
		const char *name;
		struct dso *dso;

		if (!map)
			continue;
		dso = map__dso(map);
		name = dso__long_name(dso);
		/* A reader maps "//anon" onto /tmp/perf-PID.map as this perf did */
		if (map__mapping_type(map) == MAPPING_TYPE__IDENTITY && is_perf_pid_map_name(name))
			name = "//anon";
		err = perf_event__synthesize_mmap2_build_id(&bm->tool, &at, machine,
							    build_id_offset_mmap2__queue_candidate,
							    PERF_RECORD_MISC_USER,
							    rec->pid, rec->tid, map__start(map),
							    map__size(map), map__pgoff(map),
							    dso__bid(dso), PROT_READ | PROT_EXEC,
							    MAP_PRIVATE, name);
		map__put(map);
	}
	thread__put(thread);
	return err;
}

/* Does the reader have the map of @event, an MMAP2 with a build-ID? */
static bool build_id_offset_mmap2__reader_has(struct build_id_offset_mmap2 *bm,
					      union perf_event *event)
{
	struct perf_record_mmap2 *mm = &event->mmap2;
	struct thread *thread = machine__find_thread(&bm->reader, mm->pid, mm->tid);
	const struct build_id *bid;
	struct map *map;
	bool has = false;

	if (!thread)
		return false;
	map = maps__find(thread__maps(thread), mm->start);
	if (map && map__start(map) == mm->start && map__size(map) == mm->len &&
	    map__pgoff(map) == mm->pgoff) {
		bid = dso__bid(map__dso(map));
		if (mm->build_id_size)
			has = bid->size == mm->build_id_size &&
			      !memcmp(bid->data, mm->build_id, bid->size);
		else
			has = !bid->size && (!strcmp(mm->filename, "//anon") ?
					     map__mapping_type(map) == MAPPING_TYPE__IDENTITY :
					     !strcmp(dso__long_name(map__dso(map)), mm->filename));
	}
	map__put(map);
	thread__put(thread);
	return has;
}

struct clear_args {
	struct build_id_offset_mmap2	*bm;
	struct thread			*thread;
	struct queued_tail		*tail;
};

/* Clear an address this perf left unmapped and the reader would map */
static int clear_addr(u64 *addr, void *data)
{
	struct clear_args *args = data;
	u32 i;

	for (i = 0; i < args->tail->nr; i++) {
		if (*addr != args->tail->addrs[i])
			continue;
		if (build_id_offset_mmap2__mapped(args->thread, *addr)) {
			*addr = 0;
			args->bm->nr_cleared++;
		}
		break;
	}
	return 0;
}

/* Write a sample as the reader must see it: see clear_addr(), no cookie */
static int build_id_offset_mmap2__write_sample(struct build_id_offset_mmap2 *bm,
					       union perf_event *event)
{
	struct queued_tail *tail = queued_tail(event);
	size_t size = event->header.size;
	struct perf_sample sample;
	struct evsel *evsel;
	int err;

	perf_sample__init(&sample, /*all=*/false);
	err = evlist__parse_sample(bm->session->evlist, event, &sample);
	if (err)
		goto out;
	evsel = sample.evsel;
	if (tail->nr) {
		struct clear_args args = { .bm = bm, .tail = tail };
		u64 *array = (u64 *)event->sample.array;

		args.thread = machine__findnew_thread(&bm->reader, sample.pid, sample.tid);
		if (!args.thread) {
			err = -ENOMEM;
			goto out;
		}
		sample__visit_user_addrs(&sample, &bm->reader, clear_addr, &args);
		thread__put(args.thread);
		/* The IP, parsed into a copy, is in the event after the identifier */
		if (evsel->core.attr.sample_type & PERF_SAMPLE_IDENTIFIER)
			array++;
		if (evsel->core.attr.sample_type & PERF_SAMPLE_IP)
			*array = sample.ip;
	}
	/* The cookie is the last u64 of the sample */
	if (evsel->core.attr.sample_type & PERF_SAMPLE_BUILD_ID_OFFSET)
		size -= sizeof(u64);
	event->header.size = size;
	err = build_id_offset_mmap2__write(bm, event, size);
out:
	perf_sample__exit(&sample);
	return err;
}

/* What a reader does with an event that changes threads or maps */
static int build_id_offset_mmap2__read(struct build_id_offset_mmap2 *bm, union perf_event *event)
{
	struct perf_sample sample;
	int err;

	switch (event->header.type) {
	case PERF_RECORD_MMAP:
	case PERF_RECORD_MMAP2:
		if ((event->header.misc & PERF_RECORD_MISC_CPUMODE_MASK) != PERF_RECORD_MISC_USER)
			return 0;
		break;
	case PERF_RECORD_COMM:
	case PERF_RECORD_FORK:
	case PERF_RECORD_EXIT:
		break;
	default:
		return 0;
	}
	perf_sample__init(&sample, /*all=*/false);
	err = evlist__parse_sample(bm->session->evlist, event, &sample);
	if (!err)
		err = machine__process_event(&bm->reader, event, &sample);
	perf_sample__exit(&sample);
	return err;
}

static int build_id_offset_mmap2__deliver(struct ordered_events *queue,
					  struct ordered_event *oev)
{
	struct build_id_offset_mmap2 *bm = container_of(queue, struct build_id_offset_mmap2, queue);
	union perf_event *event = oev->event;
	int err = 0;

	if (event->header.type == PERF_RECORD_SAMPLE) {
		err = build_id_offset_mmap2__write_sample(bm, event);
	} else if (!queued_tail(event)->candidate ||
		   !build_id_offset_mmap2__reader_has(bm, event)) {
		err = build_id_offset_mmap2__read(bm, event);
		if (!err)
			err = build_id_offset_mmap2__write(bm, event, event->header.size);
	}
	free(event);
	oev->event = NULL;
	return err;
}

/*
 * The session delivered every event up to @delivered: write what no held
 * sample can precede any more, then a round mark, which tells a reader
 * that nothing older than the round before it follows.
 */
int build_id_offset_mmap2__round(struct build_id_offset_mmap2 *bm, u64 delivered)
{
	struct perf_event_header round = {
		.type = PERF_RECORD_FINISHED_ROUND,
		.size = sizeof(round),
	};
	u64 limit = delivered, held;
	int err;

	if (perf_session__held_sample_time(bm->session, 0, 0, &held) && held <= limit)
		limit = held - 1;
	bm->nr_written = 0;
	err = ordered_events__flush_time(&bm->queue, limit);
	if (err || !bm->nr_written)
		return err;
	return bm->write(bm->ctx, &round, sizeof(round));
}

int build_id_offset_mmap2__finish(struct build_id_offset_mmap2 *bm)
{
	int err = ordered_events__flush(&bm->queue, OE_FLUSH__FINAL);

	if (bm->nr_cleared)
		pr_warning("%zu user addresses this perf left unmapped were cleared\n",
			   bm->nr_cleared);
	return err;
}

/*
 * What a perf without PERF_SAMPLE_BUILD_ID_OFFSET reads: the samples have
 * their deferred user entries merged in, or will not have them (a reader
 * that waited for them would resolve the sample later than this perf did)
 */
void build_id_offset_mmap2__strip_attr(struct perf_event_attr *attr)
{
	attr->sample_type &= ~PERF_SAMPLE_BUILD_ID_OFFSET;
	attr->defer_callchain = 0;
}

/*
 * Give @attr the size of the oldest struct perf_event_attr that holds every
 * field it sets: a perf refuses an attribute larger than its own struct,
 * whatever the bytes beyond hold, and the output is for older perfs.
 */
void build_id_offset_mmap2__shrink_attr(struct perf_event_attr *attr)
{
	static const u32 sizes[] = {
		PERF_ATTR_SIZE_VER0, PERF_ATTR_SIZE_VER1, PERF_ATTR_SIZE_VER2,
		PERF_ATTR_SIZE_VER3, PERF_ATTR_SIZE_VER4, PERF_ATTR_SIZE_VER5,
		PERF_ATTR_SIZE_VER6, PERF_ATTR_SIZE_VER7, PERF_ATTR_SIZE_VER8,
	};
	const u8 *bytes = (const u8 *)attr;
	u32 used = sizeof(*attr);
	size_t i;

	while (used > PERF_ATTR_SIZE_VER0 && !bytes[used - 1])
		used--;
	attr->size = sizeof(*attr);
	for (i = 0; i < ARRAY_SIZE(sizes); i++) {
		if (used <= sizes[i]) {
			attr->size = sizes[i];
			break;
		}
	}
}

struct build_id_offset_mmap2 *build_id_offset_mmap2__new(struct perf_session *session,
							 build_id_offset_mmap2__write_t write,
							 void *ctx)
{
	struct build_id_offset_mmap2 *bm = zalloc(sizeof(*bm));

	if (!bm)
		return NULL;
	if (machine__init(&bm->reader, "", HOST_KERNEL_ID)) {
		free(bm);
		return NULL;
	}
	ordered_events__init(&bm->queue, build_id_offset_mmap2__deliver, NULL);
	bm->session = session;
	bm->write = write;
	bm->ctx = ctx;
	return bm;
}

void build_id_offset_mmap2__delete(struct build_id_offset_mmap2 *bm)
{
	struct ordered_event *oev;

	if (!bm)
		return;
	list_for_each_entry(oev, &bm->queue.events, list)
		zfree(&oev->event);
	ordered_events__free(&bm->queue);
	machine__exit(&bm->reader);
	free(bm);
}
