// SPDX-License-Identifier: GPL-2.0
/*
 * PERF_SAMPLE_BUILD_ID_OFFSET: join samples with their
 * PERF_RECORD_BUILD_ID_OFFSET and turn the records into maps.
 *
 * A record lists, for the samples of one kernel entry of a task (they share
 * a cookie), the VMAs that cover their user addresses, each with its file
 * offset and build-ID.  It is written when the task returns to user space,
 * so it comes after those samples in time, maybe from another CPU's
 * buffer.  Such a record is lazy mmap information: its maps go into the
 * thread's maps, and the samples are held until it arrives, so that
 * everything that resolves addresses through thread__find_map() (report,
 * script, annotate, callchains) works unchanged without MMAP records.
 *
 * Holding relies on time order (ordered events): per tid entries do not
 * overlap, so once a record or a sample with another cookie shows up for a
 * tid, the held samples of the older cookie will get no record and go out
 * unresolved by it (counted).  The same at the thread's exit and at the
 * end; and when more than BIO_HELD_MAX_BYTES are held, the oldest go.
 * Those are delivered with none of their user addresses resolved: the
 * thread's maps are those of other records, which need not be what the
 * sample saw.  So are the samples of a record flagged MM_CHANGED, and the
 * samples still held when the thread execs.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <linux/err.h>
#include <linux/kernel.h>
#include <linux/string.h>
#include <linux/zalloc.h>
#include <api/fs/fs.h>
#include <perf/event.h>
#ifdef HAVE_DEBUGINFOD_SUPPORT
#include <elfutils/debuginfod.h>
#endif

#include "build-id-offset.h"
#include "build-id.h"
#include "debug.h"
#include "dso.h"
#include "dsos.h"
#include "event.h"
#include "hashmap.h"
#include "machine.h"
#include "map.h"
#include "maps.h"
#include "sample.h"
#include "symbol.h"
#include "thread.h"
#include "vdso.h"

/* Held sample bytes above which the oldest are delivered unresolved */
#define BIO_HELD_MAX_BYTES	(64UL << 20)

/* DSOs known by build-ID only, until a name is found: "[build-id:HEX]" */
#define BIO_DSO_PREFIX		"[build-id:"

struct bio_thread {
	u64			 last_cookie;	/* of the last record, 0: none */
	bool			 last_mm_changed; /* that record said MM_CHANGED */
	struct list_head	 held;
};

struct bio_join {
	struct hashmap		*threads;	/* tid -> struct bio_thread */
	struct list_head	 held;		/* every held sample, oldest first */
	size_t			 held_bytes;
};

static size_t bio_tid_hash(long key, void *ctx __maybe_unused)
{
	return key;
}

static bool bio_tid_equal(long key1, long key2, void *ctx __maybe_unused)
{
	return key1 == key2;
}

static struct bio_join *machine__bio_join(struct machine *machine)
{
	struct bio_join *join = machine->bio_join;

	if (join)
		return join;

	join = zalloc(sizeof(*join));
	if (!join)
		return NULL;
	join->threads = hashmap__new(bio_tid_hash, bio_tid_equal, NULL);
	if (IS_ERR(join->threads)) {
		free(join);
		return NULL;
	}
	INIT_LIST_HEAD(&join->held);
	machine->bio_join = join;
	return join;
}

static struct bio_thread *bio_join__thread(struct bio_join *join, u32 tid, bool create)
{
	struct bio_thread *bt;

	if (hashmap__find(join->threads, tid, &bt))
		return bt;
	if (!create)
		return NULL;

	bt = zalloc(sizeof(*bt));
	if (!bt)
		return NULL;
	INIT_LIST_HEAD(&bt->held);
	if (hashmap__add(join->threads, tid, bt)) {
		free(bt);
		return NULL;
	}
	return bt;
}

static void bio_held__delete(struct bio_join *join, struct bio_held *held)
{
	list_del(&held->node);
	list_del(&held->age);
	join->held_bytes -= held->event->header.size;
	free(held->event);
	free(held);
}

/* Deliver, then free, one held sample; joined: its record was seen */
static int bio_join__release(struct bio_join *join, struct bio_held *held, bool joined,
			     bio_deliver_fn deliver, void *data)
{
	int err = deliver(held, joined, data);

	bio_held__delete(join, held);
	return err;
}

/*
 * Deliver the held samples of a thread whose cookie is (joined) or is not
 * (!joined) the given one.
 */
static int bio_thread__release(struct bio_join *join, struct bio_thread *bt, u64 cookie,
			       bool joined, bio_deliver_fn deliver, void *data)
{
	struct bio_held *held, *n;
	int err = 0;

	list_for_each_entry_safe(held, n, &bt->held, node) {
		if ((held->cookie == cookie) != joined)
			continue;
		err = bio_join__release(join, held, joined, deliver, data);
		if (err)
			break;
	}
	return err;
}

/**
 * bio_join__hold - keep a sample until its record arrives
 *
 * Returns 1 if the sample was kept (it is delivered later through
 * @deliver), 0 if the caller delivers it now: it has no cookie, its record
 * was seen already, or there is no memory to keep it.  Only for sessions
 * that deliver in time order.
 */
int bio_join__hold(struct machine *machine, struct evsel *evsel,
		   union perf_event *event, struct perf_sample *sample,
		   bio_deliver_fn deliver, void *data)
{
	struct bio_join *join;
	struct bio_thread *bt;
	struct bio_held *held;
	int err;

	if (!sample->bio_cookie)
		return 0;

	join = machine__bio_join(machine);
	if (!join)
		return 0;
	bt = bio_join__thread(join, sample->tid, /*create=*/true);
	if (!bt)
		return 0;

	/*
	 * A sample taken while the record of its entry was being written, or
	 * one that names the thread's last record: its maps are in.  Unless
	 * that record said MM_CHANGED: then it resolves nothing, at once.
	 */
	if (bt->last_cookie == sample->bio_cookie) {
		struct bio_held now = {
			.evsel = evsel, .cookie = sample->bio_cookie,
			.tid = sample->tid, .mm_changed = true, .event = event,
		};

		if (!bt->last_mm_changed)
			return 0;
		err = deliver(&now, /*joined=*/true, data);
		return err ? err : 1;
	}

	/*
	 * The task returned to user space since the samples held for it were
	 * taken, and their record, written before that, did not come.
	 */
	err = bio_thread__release(join, bt, sample->bio_cookie, /*joined=*/false,
				  deliver, data);
	if (err)
		return err;

	held = zalloc(sizeof(*held));
	if (!held)
		return 0;
	held->event = memdup(event, event->header.size);
	if (!held->event) {
		free(held);
		return 0;
	}
	held->evsel = evsel;
	held->cookie = sample->bio_cookie;
	held->tid = sample->tid;
	list_add_tail(&held->node, &bt->held);
	list_add_tail(&held->age, &join->held);
	join->held_bytes += event->header.size;

	while (join->held_bytes > BIO_HELD_MAX_BYTES) {
		held = list_first_entry(&join->held, struct bio_held, age);
		err = bio_join__release(join, held, /*joined=*/false, deliver, data);
		if (err)
			return err;
	}
	return 1;
}

/*
 * Before the record's maps go in: the samples held for older entries of
 * the thread will get no record.  Delivered now, they resolve against what
 * the thread had before.
 */
int bio_join__record_begin(struct machine *machine, u32 tid, u64 cookie,
			   bio_deliver_fn deliver, void *data)
{
	struct bio_join *join = machine->bio_join;
	struct bio_thread *bt;

	if (!join)
		return 0;
	bt = bio_join__thread(join, tid, /*create=*/false);
	if (!bt)
		return 0;
	return bio_thread__release(join, bt, cookie, /*joined=*/false, deliver, data);
}

/*
 * After the record's maps went in: deliver the samples it is for.  A
 * record flagged MM_CHANGED has no maps: its samples are of the program
 * before an exec.
 */
int bio_join__record_end(struct machine *machine, u32 tid, u64 cookie,
			 u32 flags, bio_deliver_fn deliver, void *data)
{
	struct bio_join *join = machine__bio_join(machine);
	bool mm_changed = flags & PERF_BIO_F_MM_CHANGED;
	struct bio_thread *bt;
	struct bio_held *held;

	if (!join)
		return 0;
	bt = bio_join__thread(join, tid, /*create=*/true);
	if (!bt)
		return 0;
	/* Later samples of the entry name it too */
	bt->last_cookie = cookie;
	bt->last_mm_changed = mm_changed;
	list_for_each_entry(held, &bt->held, node)
		if (held->cookie == cookie)
			held->mm_changed = mm_changed;
	return bio_thread__release(join, bt, cookie, /*joined=*/true, deliver, data);
}

/*
 * The task exited: its record, if any, came before its EXIT.  Or, @exec,
 * it exec()ed: its held samples are of the old program, and any record
 * of them that comes now says MM_CHANGED; they go out as such.  Either
 * way the thread starts over.
 */
int bio_join__end_thread(struct machine *machine, u32 tid, bool exec,
			 bio_deliver_fn deliver, void *data)
{
	struct bio_join *join = machine->bio_join;
	struct bio_thread *bt;
	struct bio_held *held;
	int err;

	if (!join)
		return 0;
	bt = bio_join__thread(join, tid, /*create=*/false);
	if (!bt)
		return 0;
	list_for_each_entry(held, &bt->held, node)
		held->mm_changed = exec;
	err = bio_thread__release(join, bt, 0, /*joined=*/false, deliver, data);
	if (!err && list_empty(&bt->held)) {
		hashmap__delete(join->threads, tid, NULL, NULL);
		free(bt);
	}
	return err;
}

/* The end of the session: nothing more will come */
int bio_join__flush(struct machine *machine, bio_deliver_fn deliver, void *data)
{
	struct bio_join *join = machine->bio_join;
	struct bio_held *held;
	int err;

	if (!join)
		return 0;
	while (!list_empty(&join->held)) {
		held = list_first_entry(&join->held, struct bio_held, age);
		err = bio_join__release(join, held, /*joined=*/false, deliver, data);
		if (err)
			return err;
	}
	return 0;
}

void bio_join__delete(struct machine *machine)
{
	struct bio_join *join = machine->bio_join;
	struct hashmap_entry *cur;
	size_t bkt;

	if (!join)
		return;
	while (!list_empty(&join->held))
		bio_held__delete(join, list_first_entry(&join->held, struct bio_held, age));
	hashmap__for_each_entry(join->threads, cur, bkt)
		free(cur->pvalue);
	hashmap__free(join->threads);
	zfree(&machine->bio_join);
}

static bool bio__build_id_equal(const struct build_id *a, const struct build_id *b)
{
	return a->size == b->size && !memcmp(a->data, b->data, a->size);
}

bool bio__dso_is_unnamed(const struct dso *dso)
{
	return !strncmp(dso__long_name(dso), BIO_DSO_PREFIX, strlen(BIO_DSO_PREFIX));
}

struct bio_find_dso {
	const struct build_id	*bid;
	struct dso		*dso;
};

static int bio_find_dso_cb(struct dso *dso, void *data)
{
	struct bio_find_dso *args = data;

	if (!dso__has_build_id(dso) || !bio__build_id_equal(dso__bid(dso), args->bid))
		return 0;
	/* A name (MMAP2, header build-ID table) beats a placeholder */
	if (args->dso && !bio__dso_is_unnamed(dso))
		dso__put(args->dso);
	else if (args->dso)
		return 0;
	args->dso = dso__get(dso);
	return bio__dso_is_unnamed(dso) ? 0 : 1;
}

/*
 * The DSO of a build-ID: one that perf knows with this build-ID (from an
 * MMAP2 with a build-ID or the header's build-ID table), else a new one
 * named after the build-ID cache's entry, else a placeholder that
 * 'perf record' names at the end (machine__name_bio_dsos()).
 */
static struct dso *bio__findnew_dso(struct machine *machine, struct build_id *bid)
{
	struct bio_find_dso args = { .bid = bid, };
	char sbuild_id[SBUILD_ID_SIZE];
	char *name = NULL;
	struct dso *dso;

	dsos__for_each_dso(&machine->dsos, bio_find_dso_cb, &args);
	if (args.dso)
		return args.dso;

	build_id__sprintf(bid, sbuild_id);
	name = build_id_cache__origname(sbuild_id);
	if (!name && asprintf(&name, BIO_DSO_PREFIX "%s]", sbuild_id) < 0)
		return NULL;

	dso = dso__new(name);
	free(name);
	if (!dso)
		return NULL;
	dso__set_build_id(dso, bid);
	if (dsos__add(&machine->dsos, dso)) {
		dso__put(dso);
		return NULL;
	}
	return dso;
}

/*
 * Whether the thread already has a map for m: one that covers m's start
 * with the same file offset, at least up to m's end, with a DSO of the
 * same build-ID, or of none (an MMAP2 without a build-ID names the same
 * VMA: trust the name).
 */
static bool bio__map_known(struct maps *maps, const struct perf_record_build_id_offset_map *m,
			   const struct build_id *bid)
{
	struct map *map = maps__find(maps, m->start);
	bool known = false;
	struct dso *dso;

	if (!map)
		return false;
	dso = map__dso(map);
	if (map__end(map) >= m->end &&
	    m->start - map__start(map) + map__pgoff(map) == m->pgoff &&
	    (!dso__has_build_id(dso) || bio__build_id_equal(dso__bid(dso), bid)))
		known = true;
	map__put(map);
	return known;
}

static int bio__insert_map(struct machine *machine, struct thread *thread,
			   const struct perf_record_build_id_offset_map *m)
{
	struct build_id bid;
	struct dso *dso;
	struct map *map;
	u64 pgoff = m->pgoff;
	int err;

	if (m->end <= m->start)
		return 0;

	if (m->flags & PERF_BIO_MAP_VDSO) {
		map = maps__find(thread__maps(thread), m->start);
		if (map) {
			bool known = dso__is_vdso(map__dso(map)) &&
				     map__start(map) == m->start;

			map__put(map);
			if (known)
				return 0;
		}
		dso = machine__findnew_vdso(machine, thread);
		pgoff = 0;
	} else {
		/* Anonymous, unreadable, no build-ID: nothing to name it by */
		if (!m->build_id_size)
			return 0;
		build_id__init(&bid, m->build_id, min_t(u8, m->build_id_size, BUILD_ID_SIZE));
		if (bio__map_known(thread__maps(thread), m, &bid))
			return 0;
		dso = bio__findnew_dso(machine, &bid);
	}
	if (!dso)
		return -ENOMEM;

	map = map__new2(m->start, dso);
	dso__put(dso);
	if (!map)
		return -ENOMEM;
	map__set_end(map, m->end);
	map__set_pgoff(map, pgoff);

	/* The task's mm at the time of the record: replace what overlaps */
	err = thread__insert_map(thread, map);
	map__put(map);
	return err;
}

/*
 * Put the maps of a PERF_RECORD_BUILD_ID_OFFSET into its thread's maps, so
 * that the samples it is for resolve through thread__find_map().
 */
int bio__insert_maps(struct machine *machine, union perf_event *event)
{
	struct perf_record_build_id_offset *bio = &event->build_id_offset;
	u32 i, nr = perf_event__build_id_offset_nr(event);
	struct thread *thread;
	int err = 0;

	/* The addresses were of the program before an exec: no maps */
	if (!nr || (bio->flags & PERF_BIO_F_MM_CHANGED))
		return 0;

	thread = machine__findnew_thread(machine, bio->pid, bio->tid);
	if (!thread)
		return -ENOMEM;
	for (i = 0; i < nr && !err; i++)
		err = bio__insert_map(machine, thread, &bio->maps[i]);
	thread__put(thread);
	return err;
}

static bool bio__path_has_build_id(const char *path, const struct build_id *bid)
{
	struct build_id file_bid;

	return filename__read_build_id(path, &file_bid) > 0 &&
	       bio__build_id_equal(&file_bid, bid);
}

static int bio__set_name(struct dso *dso, const char *path)
{
	char *name = strdup(path);

	if (!name)
		return -ENOMEM;
	pr_debug("build-ID offset: %s is %s\n", dso__long_name(dso), name);
	dso__set_short_name(dso, strrchr(name, '/') ? strrchr(name, '/') + 1 : name, false);
	dso__set_long_name(dso, name, true);
	dso__set_hit(dso);
	return 0;
}

struct bio_name_args {
	struct thread	*thread;
};

/* A live task's /proc/PID/map_files/START-END links to the mapped file */
static int bio__name_by_map_file(struct map *map, void *data)
{
	struct bio_name_args *args = data;
	char link[PATH_MAX], path[PATH_MAX];
	struct dso *dso = map__dso(map);
	ssize_t len;

	if (!bio__dso_is_unnamed(dso))
		return 0;

	snprintf(link, sizeof(link), "%s/%d/map_files/%" PRIx64 "-%" PRIx64,
		 procfs__mountpoint(), thread__pid(args->thread),
		 map__start(map), map__end(map));
	len = readlink(link, path, sizeof(path) - 1);
	if (len <= 0)
		return 0;
	path[len] = '\0';

	/* The task may have mapped something else there since */
	if (!bio__path_has_build_id(path, dso__bid(dso)))
		return 0;
	return bio__set_name(dso, path);
}

static int bio__name_thread_dsos(struct thread *thread, void *data __maybe_unused)
{
	struct bio_name_args args = { .thread = thread, };

	return maps__for_each_map(thread__maps(thread), bio__name_by_map_file, &args);
}

/* Where else a file is found by its build-ID, for the tasks that are gone */
static char *bio__find_by_build_id(const char *sbuild_id)
{
	char *path = NULL;

	if (asprintf(&path, "/usr/lib/debug/.build-id/%.2s/%s.debug",
		     sbuild_id, sbuild_id + 2) < 0)
		return NULL;
	if (!access(path, R_OK))
		return path;
	zfree(&path);

#ifdef HAVE_DEBUGINFOD_SUPPORT
	{
		debuginfod_client *c = debuginfod_begin();

		if (c) {
			int fd = debuginfod_find_executable(c, (const unsigned char *)sbuild_id,
							    0, &path);

			if (fd >= 0)
				close(fd);
			else
				path = NULL;
			debuginfod_end(c);
		}
	}
#endif
	return path;
}

static int bio__name_dso(struct dso *dso, void *data __maybe_unused)
{
	char sbuild_id[SBUILD_ID_SIZE];
	char *path;
	int err;

	if (!bio__dso_is_unnamed(dso))
		return 0;

	build_id__sprintf(dso__bid(dso), sbuild_id);
	path = build_id_cache__origname(sbuild_id);
	if (!path)
		path = bio__find_by_build_id(sbuild_id);
	if (!path) {
		pr_debug("build-ID offset: no name for %s\n", sbuild_id);
		return 0;
	}
	err = bio__set_name(dso, path);
	free(path);
	return err;
}

/**
 * machine__name_bio_dsos - name the DSOs known by build-ID only
 *
 * For 'perf record': the files mapped before perf started have no MMAP2
 * with a build-ID and path.  Name them, in this order, by
 * /proc/PID/map_files of a task that still maps them (checking the
 * build-ID of the file found), the build-ID cache, /usr/lib/debug/.build-id
 * and debuginfod; and mark them hit, so that they go into the header's
 * build-ID table and the build-ID cache like the DSOs of the samples.
 */
int machine__name_bio_dsos(struct machine *machine)
{
	int err = machine__for_each_thread(machine, bio__name_thread_dsos, NULL);

	if (err)
		return err;
	return dsos__for_each_dso(&machine->dsos, bio__name_dso, NULL);
}
