// SPDX-License-Identifier: GPL-2.0
/*
 * perf record and perf top --buildid-offset: the names of the files that
 * the PERF_RECORD_BUILD_ID_OFFSET records know by build-ID only.
 *
 * With --synth=no perf reads no task's maps, so nothing names the files
 * the samples are in: perf report would show them by build-ID unless they
 * are in the build-ID cache.  The namer finds each build-ID's file while
 * its task still maps it and hands the names to the thread that processes
 * the records, which adds them as DSOs: perf record before the header is
 * written (the build-ID table then names them and the build-ID cache gets
 * them, as for files of MMAP records), perf top before each batch of
 * records it joins with their samples.
 *
 * The namer has a dummy event of its own, on the CPUs and threads perf
 * record samples: the kernel writes every record to each defer_output
 * event that has PERF_SAMPLE_BUILD_ID_OFFSET.  A thread of its own reads
 * that ring buffer and names each new build-ID: the line of
 * /proc/PID/maps with the record's extent gives the path, and the file
 * opened through /proc/PID/root must be a regular file with that build-ID.
 * Whatever may wait for a file system runs on that thread, so a mount that
 * does not answer stops the naming, never the recording; at the end perf
 * record waits for the namer only while it makes progress.
 */

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <linux/err.h>
#include <linux/list.h>
#include <linux/perf_event.h>
#include <linux/zalloc.h>
#include <perf/cpumap.h>
#include <perf/mmap.h>
#include <perf/threadmap.h>

#include "build-id-offset-namer.h"
#include "build-id-offset.h"
#include "build-id.h"
#include "debug.h"
#include "dso.h"
#include "event.h"
#include "evlist.h"
#include "evsel.h"
#include "hashmap.h"
#include "machine.h"
#include "mmap.h"
#include "namespaces.h"
#include "symbol.h"

/* How long the thread sleeps on an idle ring buffer */
#define NAMER_POLL_MS		50
/* Ring buffer pages per CPU or thread; the kernel wakes the thread at half */
#define NAMER_MMAP_PAGES	32
/* Tries per build-ID whose task was gone or had remapped the extent */
#define NAMER_TRIES		3
/* At the end, how long perf record waits for a namer that names nothing */
#define NAMER_STALL_SEC		5

enum namer_state {
	NAMER_QUEUED,
	NAMER_BUSY,
	NAMER_NAMED,
	NAMER_FAILED,
};

struct namer_file {
	struct build_id		bid;
	struct list_head	node;		/* in the queue while QUEUED, named while NAMED */
	pid_t			pid;		/* where to look for it */
	u64			start, end, pgoff;
	char			*name;		/* NAMED: the path in its task */
	struct nsinfo		*nsi;
	int			tries;
	enum namer_state	state;
};

struct build_id_offset_namer {
	struct evlist		*evlist;
	pthread_t		thread;
	pthread_mutex_t		lock;		/* all below */
	pthread_cond_t		cond;		/* progress or the end */
	struct hashmap		*files;		/* struct build_id * -> struct namer_file * */
	struct list_head	queue;
	struct list_head	named;		/* NAMED, not yet added to a machine */
	u64			progress;	/* files tried so far */
	u64			lost;		/* records the kernel could not write */
	bool			stop;
	bool			finished;
};

/* Queue a record's build-IDs that have no name yet (under the lock) */
static void namer__record(struct build_id_offset_namer *namer, union perf_event *event)
{
	const struct perf_record_build_id_offset *bido = &event->build_id_offset;
	u32 i, nr = perf_event__build_id_offset_nr(event);

	for (i = 0; i < nr; i++) {
		const struct perf_record_build_id_offset_map *m = &bido->maps[i];
		struct namer_file *f;
		struct build_id bid;

		if (!m->build_id_size || m->build_id_size > BUILD_ID_SIZE ||
		    (m->flags & (PERF_BUILD_ID_OFFSET_MAP_ANON | PERF_BUILD_ID_OFFSET_MAP_VDSO |
				 PERF_BUILD_ID_OFFSET_MAP_DELETED)))
			continue;
		build_id__init(&bid, m->build_id, m->build_id_size);
		if (hashmap__find(namer->files, &bid, &f)) {
			if (f->state != NAMER_FAILED || f->tries >= NAMER_TRIES)
				continue;
		} else {
			f = zalloc(sizeof(*f));
			if (!f)
				continue;
			f->bid = bid;
			if (hashmap__add(namer->files, &f->bid, f)) {
				free(f);
				continue;
			}
		}
		f->pid = bido->pid;
		f->start = m->start;
		f->end = m->end;
		f->pgoff = m->pgoff;
		f->state = NAMER_QUEUED;
		list_add_tail(&f->node, &namer->queue);
	}
}

/* The path of the mapping [start, end) at pgoff in /proc/PID/maps */
static char *namer__maps_path(pid_t pid, u64 start, u64 end, u64 pgoff)
{
	char path[PATH_MAX], *line = NULL, *name = NULL;
	size_t size = 0;
	FILE *fp;

	snprintf(path, sizeof(path), "/proc/%d/maps", pid);
	fp = fopen(path, "re");
	if (!fp)
		return NULL;
	while (getline(&line, &size, fp) > 0) {
		u64 s, e, off;
		int pos = 0;

		if (sscanf(line, "%" SCNx64 "-%" SCNx64 " %*s %" SCNx64 " %*s %*u %n",
			   &s, &e, &off, &pos) < 3 || !pos)
			continue;
		if (s != start || e != end || off != pgoff)
			continue;
		line[strcspn(line, "\n")] = '\0';
		/* A name of a file, not "[heap]" nor one unlinked since */
		if (line[pos] == '/' && !strstr(line + pos, " (deleted)"))
			name = strdup(line + pos);
		break;
	}
	free(line);
	fclose(fp);
	return name;
}

/*
 * Name one file: its task's path for the extent, if the file there is a
 * regular file with the build-ID.  May wait for the file system.
 */
static bool namer__name(struct namer_file *f)
{
	char root_path[PATH_MAX], fd_path[64];
	struct build_id bid;
	struct stat st;
	bool named = false;
	char *name;
	int fd;

	name = namer__maps_path(f->pid, f->start, f->end, f->pgoff);
	if (!name)
		return false;
	snprintf(root_path, sizeof(root_path), "/proc/%d/root%s", f->pid, name);
	/* Not a FIFO's open that waits for a writer, nor a tty taken */
	fd = open(root_path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	if (fd < 0)
		goto out;
	if (fstat(fd, &st) || !S_ISREG(st.st_mode))
		goto out_close;
	snprintf(fd_path, sizeof(fd_path), "/proc/self/fd/%d", fd);
	if (filename__read_build_id(fd_path, &bid) < 0 ||
	    bid.size < f->bid.size || memcmp(bid.data, f->bid.data, f->bid.size))
		goto out_close;
	f->nsi = nsinfo__new(f->pid);
	f->name = name;
	name = NULL;
	named = true;
out_close:
	close(fd);
out:
	free(name);
	return named;
}

static void namer__read(struct build_id_offset_namer *namer)
{
	struct evlist *evlist = namer->evlist;
	int i;

	for (i = 0; i < evlist__core(evlist)->nr_mmaps; i++) {
		struct mmap *map = &evlist__mmap(evlist)[i];
		union perf_event *event;

		if (perf_mmap__read_init(&map->core))
			continue;
		pthread_mutex_lock(&namer->lock);
		while ((event = perf_mmap__read_event(&map->core)) != NULL) {
			if (event->header.type == PERF_RECORD_BUILD_ID_OFFSET)
				namer__record(namer, event);
			else if (event->header.type == PERF_RECORD_LOST)
				namer->lost += event->lost.lost;
			perf_mmap__consume(&map->core);
		}
		pthread_mutex_unlock(&namer->lock);
		perf_mmap__read_done(&map->core);
	}
}

static void namer__name_queued(struct build_id_offset_namer *namer)
{
	pthread_mutex_lock(&namer->lock);
	while (!list_empty(&namer->queue)) {
		struct namer_file *f = list_first_entry(&namer->queue, struct namer_file, node);
		bool named;

		list_del_init(&f->node);
		f->state = NAMER_BUSY;
		pthread_mutex_unlock(&namer->lock);

		named = namer__name(f);

		pthread_mutex_lock(&namer->lock);
		f->tries++;
		f->state = named ? NAMER_NAMED : NAMER_FAILED;
		if (named)
			list_add_tail(&f->node, &namer->named);
		namer->progress++;
		pthread_cond_broadcast(&namer->cond);
	}
	pthread_mutex_unlock(&namer->lock);
}

static void *namer__thread(void *arg)
{
	struct build_id_offset_namer *namer = arg;
	sigset_t all;
	bool stop;

	/* perf record's signals are the main thread's */
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, NULL);

	do {
		pthread_mutex_lock(&namer->lock);
		stop = namer->stop;
		pthread_mutex_unlock(&namer->lock);
		/* Once stopped: what the buffers hold, then the end */
		if (!stop)
			evlist__poll(namer->evlist, NAMER_POLL_MS);
		namer__read(namer);
		namer__name_queued(namer);
	} while (!stop);

	pthread_mutex_lock(&namer->lock);
	namer->finished = true;
	pthread_cond_broadcast(&namer->cond);
	pthread_mutex_unlock(&namer->lock);
	return NULL;
}

/*
 * Start naming the files of the records of @evlist's tasks: a dummy event
 * on its CPUs and threads, inherited as its events are.  NULL, with a
 * warning, if it cannot: perf report then shows files by build-ID until
 * they are in the build-ID cache.
 */
struct build_id_offset_namer *build_id_offset_namer__start(struct evlist *evlist, bool inherit)
{
	struct perf_event_attr attr = {
		.type		= PERF_TYPE_SOFTWARE,
		.config		= PERF_COUNT_SW_DUMMY,
		.size		= sizeof(attr),
		.sample_type	= PERF_SAMPLE_BUILD_ID_OFFSET,
		.defer_output	= 1,
		/* A side-band event on a CPU, as the tracking event is */
		.comm		= 1,
		.inherit	= inherit,
		.exclude_kernel	= 1,
		.exclude_hv	= 1,
		.watermark	= 1,
		.wakeup_watermark = NAMER_MMAP_PAGES * 4096 / 2,
	};
	struct build_id_offset_namer *namer = zalloc(sizeof(*namer));
	struct perf_evlist *core = evlist__core(evlist);
	char sbuf[STRERR_BUFSIZE];
	struct evsel *evsel;
	int err;

	if (!namer)
		return NULL;
	pthread_mutex_init(&namer->lock, NULL);
	pthread_cond_init(&namer->cond, NULL);
	INIT_LIST_HEAD(&namer->queue);
	INIT_LIST_HEAD(&namer->named);
	namer->files = hashmap__new(build_id_offset__hash, build_id_offset__equal, NULL);
	namer->evlist = evlist__new();
	if (IS_ERR_OR_NULL(namer->files) || !namer->evlist)
		goto out_err;
	evsel = evsel__new(&attr);
	if (!evsel)
		goto out_err;
	evlist__add(namer->evlist, evsel);
	perf_evlist__set_maps(evlist__core(namer->evlist), core->user_requested_cpus,
			      core->threads);
	err = evsel__open(evsel, core->user_requested_cpus, core->threads);
	if (!err && evlist__do_mmap(namer->evlist, NAMER_MMAP_PAGES) < 0)
		err = -errno;
	if (!err)
		err = evsel__enable(evsel);
	if (!err)
		err = -pthread_create(&namer->thread, NULL, namer__thread, namer);
	if (!err)
		return namer;

	pr_warning("--buildid-offset: cannot name the files of the samples (%s): perf report shows them by build-ID until they are in the build-ID cache\n",
		   str_error_r(-err, sbuf, sizeof(sbuf)));
out_err:
	if (!IS_ERR_OR_NULL(namer->files))
		hashmap__free(namer->files);
	evlist__put(namer->evlist);
	free(namer);
	return NULL;
}

/*
 * Name what the buffers still hold, waiting while the namer makes
 * progress.  A namer stuck in a file system for NAMER_STALL_SEC is left
 * behind: its names so far stay, the rest are counted in a warning.
 */
void build_id_offset_namer__stop(struct build_id_offset_namer *namer)
{
	struct hashmap_entry *cur;
	unsigned int unnamed = 0;
	size_t bkt;

	if (!namer)
		return;
	pthread_mutex_lock(&namer->lock);
	if (namer->stop) {
		pthread_mutex_unlock(&namer->lock);
		return;
	}
	namer->stop = true;
	while (!namer->finished) {
		u64 progress = namer->progress;
		struct timespec until;

		clock_gettime(CLOCK_REALTIME, &until);
		until.tv_sec += NAMER_STALL_SEC;
		while (!namer->finished && namer->progress == progress &&
		       pthread_cond_timedwait(&namer->cond, &namer->lock, &until) != ETIMEDOUT)
			;
		if (!namer->finished && namer->progress == progress)
			break;
	}
	if (namer->finished) {
		pthread_mutex_unlock(&namer->lock);
		pthread_join(namer->thread, NULL);
		pthread_mutex_lock(&namer->lock);
	} else {
		pthread_detach(namer->thread);
	}
	hashmap__for_each_entry(namer->files, cur, bkt) {
		struct namer_file *f = cur->pvalue;

		unnamed += f->state == NAMER_QUEUED || f->state == NAMER_BUSY;
	}
	if (!namer->finished)
		pr_warning("--buildid-offset: naming files made no progress for %d s (a file system that does not answer?): %u files left unnamed\n",
			   NAMER_STALL_SEC, unnamed);
	if (namer->lost)
		pr_debug("--buildid-offset: the namer lost %" PRIu64 " records\n", namer->lost);
	pthread_mutex_unlock(&namer->lock);
}

/*
 * Add the files named since the last call to @machine's DSOs (a file perf
 * knows by that name gets the build-ID if it has none), on the thread that
 * processes the records.
 */
int build_id_offset_namer__add_dsos(struct build_id_offset_namer *namer, struct machine *machine)
{
	int added = 0;

	if (!namer)
		return 0;
	pthread_mutex_lock(&namer->lock);
	while (!list_empty(&namer->named)) {
		struct namer_file *f = list_first_entry(&namer->named, struct namer_file, node);
		struct dso_id id = { .build_id = f->bid };
		struct dso *dso;

		list_del_init(&f->node);
		dso = machine__findnew_dso_id(machine, f->name, &id);
		if (!dso)
			continue;
		if (!dso__has_build_id(dso))
			dso__set_build_id(dso, &f->bid);
		if (!dso__nsinfo(dso))
			dso__set_nsinfo(dso, nsinfo__get(f->nsi));
		dso__put(dso);
		added++;
	}
	pthread_mutex_unlock(&namer->lock);
	if (added)
		pr_debug("--buildid-offset: %d files named\n", added);
	return added;
}

void build_id_offset_namer__delete(struct build_id_offset_namer *namer)
{
	struct hashmap_entry *cur;
	size_t bkt;

	if (!namer)
		return;
	build_id_offset_namer__stop(namer);
	/* A thread left behind in a file system keeps what it uses */
	if (!namer->finished)
		return;
	hashmap__for_each_entry(namer->files, cur, bkt) {
		struct namer_file *f = cur->pvalue;

		free(f->name);
		nsinfo__put(f->nsi);
		free(f);
	}
	hashmap__free(namer->files);
	evlist__put(namer->evlist);
	pthread_mutex_destroy(&namer->lock);
	pthread_cond_destroy(&namer->cond);
	free(namer);
}
