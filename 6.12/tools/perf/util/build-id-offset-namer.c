// SPDX-License-Identifier: GPL-2.0
/*
 * Names for the files of build-ID offset records.  A record names a file
 * by its build-ID only; MMAP2 records with build-IDs name the files
 * mapped while perf runs, but nothing names those that tasks mapped
 * before it started.
 *
 * While 'perf record' writes the ring buffers out (and as 'perf top'
 * reads them), the namer (struct bido_namer) reads the first bytes of each
 * record on its way: the first build-ID offset record of a process makes
 * it open that process's executable mappings through /proc/PID/map_files,
 * read their build-IDs and give each build-ID a DSO with the file's path.
 * With --synth=no it also reads the comm of each task at its first
 * sample; with --switch-output it keeps each task's last record, to carry
 * into the next file.
 *
 * At the end of 'perf record', machine__name_bido_dsos() names the
 * build-IDs still without a name (their tasks were gone) by the build-ID
 * cache, a /usr/lib/debug/.build-id link or debuginfod.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
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
#include "build-id-offset-internal.h"
#include "build-id-offset-namer.h"
#include "build-id.h"
#include "debug.h"
#include "dso.h"
#include "dsos.h"
#include "event.h"
#include "evlist.h"
#include "hashmap.h"
#include "machine.h"
#include "mutex.h"
#include "symbol.h"
#include "time-utils.h"

static bool build_id_offset__path_has_build_id(const char *path, const struct build_id *bid)
{
	struct build_id file_bid;

	return filename__read_build_id(path, &file_bid) > 0 &&
	       build_id_offset__build_id_equal(&file_bid, bid);
}

static int build_id_offset__set_name(struct dso *dso, const char *path)
{
	char *name = strdup(path);

	if (!name)
		return -ENOMEM;
	pr_debug("build-ID offset: %s is %s\n", dso__long_name(dso), name);
	dso__set_short_name(dso, strrchr(name, '/') ? strrchr(name, '/') + 1 : name, false);
	dso__set_long_name(dso, name, true);
	mutex_lock(dso__lock(dso));
	/*
	 * A sample resolved before the name came (perf top) had its symbols
	 * looked for by build-ID alone, and none found: look again by path
	 */
	if (dso__loaded(dso) && RB_EMPTY_ROOT(&dso__symbols(dso)->rb_root)) {
		RC_CHK_ACCESS(dso)->loaded = false;
		dso__set_symtab_type(dso, DSO_BINARY_TYPE__NOT_FOUND);
		dso__reset_find_symbol_cache(dso);
	}
	mutex_unlock(dso__lock(dso));
	return 0;
}

/*
 * Give the build-ID a DSO named @path: rename its placeholder, or add one.
 * Returns 1 if it got a name so, 0 if it had one, or a negative error.
 */
static int build_id_offset__name_build_id(struct machine *machine, struct build_id *bid,
					  const char *path)
{
	struct dso *dso = build_id_offset__find_dso(machine, bid);
	int err = 1;

	if (dso && !build_id_offset__dso_is_unnamed(dso)) {
		dso__put(dso);
		return 0;
	}
	if (dso) {
		err = build_id_offset__set_name(dso, path) ?: 1;
		dso__put(dso);
		return err;
	}

	dso = dso__new(path);
	if (!dso)
		return -ENOMEM;
	dso__set_short_name(dso, strrchr(dso__long_name(dso), '/') + 1, false);
	dso__set_build_id(dso, bid);
	if (build_id_offset__add_dso(machine, bid, dso))
		err = -ENOMEM;
	dso__put(dso);
	return err;
}

/*
 * Of a record, the bytes the namer reads: up to a sample's time (header,
 * identifier, IP, pid/tid, time), or up to an EXIT's tid
 */
#define BIDO_SCAN_PREFIX		40

/* Where the namer is in the stream of records of one ring buffer */
struct bido_scan {
	u64			skip;		/* bytes of a record yet to come */
	u32			len;		/* of prefix */
	bool			broken;		/* a header made no sense */
	u8			prefix[BIDO_SCAN_PREFIX];
	/* A build-ID offset record being copied whole (to carry), and its size */
	u8			*whole;
	u32			whole_len;
};

/*
 * Records flagged SAME_MAPS of a task, read before the record they name
 * (written earlier on another CPU, read later): cookie names same_as,
 * through the records in between if several were joined.  time is that
 * of the one with the cookie, 0 if not known.
 */
struct bido_link {
	u64			cookie;
	u64			same_as;
	u64			time;
};

/* Links of a task kept at most: more are gaps of records lost */
#define BIDO_LINKS_MAX		4

/* A file of a process, as /proc/PID/maps shows it */
struct bido_file {
	u64			dev;
	u64			ino;
};

/*
 * A task seen in samples, whose COMM the kernel may not give.  Its comm is
 * read from /proc the first time a sample of it is scanned, while it is
 * most likely to live, and written out at the end of the pass.
 */
struct bido_task {
	u32			pid;
	u64			time;		/* of its earliest sample seen */
	u8			tries;		/* reads of its comm that failed */
	bool			has_comm;	/* comm[] was read */
	bool			written;	/* its COMM is out */
	bool			kernel;		/* the kernel gave a COMM */
	u8			exited;		/* passes since its EXIT (0: none) */
	char			comm[16];
	/*
	 * Its last build-ID offset record, to carry into a new file, and the
	 * time of the record whose cookie it has (0: not known)
	 */
	union perf_event	*last;
	u64			last_time;
	/* Its records flagged SAME_MAPS whose record named is still to come */
	u8			nr_links;
	struct bido_link	links[BIDO_LINKS_MAX];
};

static void bido_task__delete(struct bido_task *task)
{
	free(task->last);
	free(task);
}

/* Reads of a task's comm before it counts as gone */
#define BIDO_COMM_TRIES		3

/* Files seen (opened once) that the namer remembers, at most */
#define BIDO_FILES_MAX		65536

struct bido_namer {
	struct machine		*machine;
	struct mutex		 lock;		/* 'perf record --threads' */
	struct hashmap		*scans;		/* struct mmap * -> struct bido_scan */
	struct hashmap		*pids;		/* pid -> BIDO_PID() */
	struct hashmap		*files;		/* struct bido_file * -> itself */
	struct hashmap		*tasks;		/* tid -> struct bido_task */
	bido_named_fn		 named;
	bido_comm_fn		 comm;
	void			*data;
	/* Where a sample has its pid/tid and time, 0: not read */
	u32			 tid_pos, time_pos;
	/* Of the samples scanned: the latest time, and that at the last run */
	u64			 max_time, run_time;
	/* bido_namer__run_every(): no pass before this rdclock() time */
	u64			 next_run;
	/* Keep each task's last record: the output is split (--switch-output) */
	bool			 carry;
	/* To read the time of a record to carry, NULL: not known */
	struct evlist		*evlist;
	u64			 nr_pids, nr_gone, nr_files, nr_named, nr_comms;
	u64			 nr_comm_failed, nr_budget, nr_open_failed;
	u64			 nr_files_forgotten;
	/* The perf record summary: records and their flags, events lost */
	u64			 nr_records, nr_truncated, nr_addrs_dropped;
	u64			 nr_mm_changed, nr_same_maps, nr_lost;
	/* Counts the processes added to @pids, see BIDO_PID() */
	long			 pid_gen;
};

#define BIDO_PID_PENDING	1
#define BIDO_PID_DONE		2
/* A pass ran out of time in its files: the next ones name new pids first */
#define BIDO_PID_PARTIAL	3
/*
 * What @pids holds for a process: its state, and which process of that
 * pid it is, so that a pass naming files unlocked does not mark done a
 * process that took the pid of the one it named meanwhile
 */
#define BIDO_PID(gen, state)	(((gen) << 2) | (state))
#define BIDO_PID_STATE(v)	((v) & 3)

static size_t bido_file_hash(long key, void *ctx __maybe_unused)
{
	const struct bido_file *f = (const struct bido_file *)key;

	return f->ino * 31 + f->dev;
}

static bool bido_file_equal(long key1, long key2, void *ctx __maybe_unused)
{
	const struct bido_file *a = (const struct bido_file *)key1;
	const struct bido_file *b = (const struct bido_file *)key2;

	return a->dev == b->dev && a->ino == b->ino;
}

/**
 * bido_namer__new - name, while recording, the files records are about
 *
 * The files that tasks mapped before perf started have no MMAP2 to name
 * them.  While 'perf record' writes the ring buffers out, the namer sees
 * each process that a PERF_RECORD_BUILD_ID_OFFSET is for and, the first
 * time, opens the executable mappings of that process through
 * /proc/PID/map_files (so the file read is the one mapped), reads their
 * build-IDs and gives each build-ID a DSO with the file's path.  @named
 * is told of each build-ID so named: 'perf record' writes a
 * PERF_RECORD_HEADER_BUILD_ID for it, which names it in pipe mode too.
 */
struct bido_namer *bido_namer__new(struct machine *machine, bido_named_fn named, void *data)
{
	struct bido_namer *namer = zalloc(sizeof(*namer));

	if (!namer)
		return NULL;
	namer->machine = machine;
	namer->named = named;
	namer->data = data;
	mutex_init(&namer->lock);
	namer->scans = hashmap__new(bido_tid_hash, bido_tid_equal, NULL);
	namer->pids = hashmap__new(bido_tid_hash, bido_tid_equal, NULL);
	namer->files = hashmap__new(bido_file_hash, bido_file_equal, NULL);
	namer->tasks = hashmap__new(bido_tid_hash, bido_tid_equal, NULL);
	if (IS_ERR(namer->scans) || IS_ERR(namer->pids) || IS_ERR(namer->files) ||
	    IS_ERR(namer->tasks)) {
		namer->scans = IS_ERR(namer->scans) ? NULL : namer->scans;
		namer->pids = IS_ERR(namer->pids) ? NULL : namer->pids;
		namer->files = IS_ERR(namer->files) ? NULL : namer->files;
		namer->tasks = IS_ERR(namer->tasks) ? NULL : namer->tasks;
		bido_namer__delete(namer);
		return NULL;
	}
	return namer;
}

/**
 * bido_namer__fprintf_summary - what the records perf record wrote say
 *
 * For the end of 'perf record': the build-ID offset records written,
 * those that miss mappings (TRUNCATED), addresses (ADDRS_DROPPED), came
 * after an exec (MM_CHANGED) or name the task's previous record for their
 * maps (SAME_MAPS), and the records of any kind the kernel
 * could not write (PERF_RECORD_LOST): a sample whose record was lost
 * resolves nothing in user space.
 */
size_t bido_namer__fprintf_summary(struct bido_namer *namer, FILE *fp)
{
	size_t ret;

	mutex_lock(&namer->lock);
	ret = fprintf(fp, "[ perf record: %" PRIu64 " build-ID offset records (%" PRIu64
		      " truncated, %" PRIu64 " with addresses dropped, %" PRIu64
		      " after an exec, %" PRIu64 " with the maps of the previous),"
		      " %" PRIu64 " records lost ]\n",
		      namer->nr_records, namer->nr_truncated, namer->nr_addrs_dropped,
		      namer->nr_mm_changed, namer->nr_same_maps, namer->nr_lost);
	mutex_unlock(&namer->lock);
	return ret;
}

void bido_namer__delete(struct bido_namer *namer)
{
	struct hashmap_entry *cur;
	size_t bkt;

	if (!namer)
		return;
	pr_debug("build-ID offset: named %" PRIu64 " build-IDs from %" PRIu64
		 " files of %" PRIu64 " processes (%" PRIu64 " gone, %" PRIu64
		 " passes out of time, %" PRIu64 " mappings not opened, the seen files forgotten %"
		 PRIu64 " times), %" PRIu64 " COMMs (%" PRIu64 " tasks gone first)\n",
		 namer->nr_named, namer->nr_files, namer->nr_pids, namer->nr_gone,
		 namer->nr_budget, namer->nr_open_failed, namer->nr_files_forgotten,
		 namer->nr_comms, namer->nr_comm_failed);
	if (namer->scans) {
		hashmap__for_each_entry(namer->scans, cur, bkt) {
			struct bido_scan *scan = cur->pvalue;

			free(scan->whole);
			free(scan);
		}
	}
	if (namer->files) {
		hashmap__for_each_entry(namer->files, cur, bkt)
			free(cur->pvalue);
	}
	if (namer->tasks) {
		hashmap__for_each_entry(namer->tasks, cur, bkt)
			bido_task__delete(cur->pvalue);
	}
	hashmap__free(namer->tasks);
	hashmap__free(namer->scans);
	hashmap__free(namer->pids);
	hashmap__free(namer->files);
	mutex_destroy(&namer->lock);
	free(namer);
}

/**
 * bido_namer__set_comm - also give the COMM of each task seen in samples
 *
 * 'perf record --synth=no' reads no COMM of the tasks that exist when it
 * starts.  With @comm set, the namer reads the comm of each task the
 * first time a sample of it comes out of the buffers, unless a COMM
 * record of the kernel came first, and at the end of the pass hands it to
 * @comm with a time before every sample of the task still to come (see
 * bido_namer__comm_time()).  @sample_type is that of every event (perf
 * record gives all of them IP, TID and TIME, and IDENTIFIER to all or
 * none).
 */
void bido_namer__set_comm(struct bido_namer *namer, u64 sample_type, bido_comm_fn comm)
{
	u32 pos = sizeof(struct perf_event_header);

	if (!(sample_type & PERF_SAMPLE_TID) || !(sample_type & PERF_SAMPLE_TIME))
		return;
	if (sample_type & PERF_SAMPLE_IDENTIFIER)
		pos += sizeof(u64);
	if (sample_type & PERF_SAMPLE_IP)
		pos += sizeof(u64);
	namer->tid_pos = pos;
	namer->time_pos = pos + sizeof(u64);
	namer->comm = comm;
}

/* The entry of task @tid; @added says whether it was new */
static struct bido_task *bido_namer__findnew_task(struct bido_namer *namer, u32 tid, bool *added)
{
	struct bido_task *task;

	*added = false;
	if (hashmap__find(namer->tasks, tid, &task))
		return task;
	task = zalloc(sizeof(*task));
	if (!task)
		return NULL;
	if (hashmap__add(namer->tasks, tid, task)) {
		free(task);
		return NULL;
	}
	*added = true;
	return task;
}

/* Read the comm of @task now, while it lives; a few tries at most */
static void bido_namer__read_comm(struct bido_namer *namer, struct bido_task *task, u32 tid)
{
	char comm[32];

	if (task->has_comm || task->kernel || task->exited || task->tries >= BIDO_COMM_TRIES)
		return;
	if (build_id_offset__read_comm(task->pid, tid, comm, sizeof(comm))) {
		if (++task->tries == BIDO_COMM_TRIES)
			namer->nr_comm_failed++;
		return;
	}
	/* A comm is at most TASK_COMM_LEN - 1 bytes */
	comm[sizeof(task->comm) - 1] = '\0';
	memcpy(task->comm, comm, sizeof(task->comm));
	task->has_comm = true;
}

/* A task that needs its comm from @time on, unless the kernel gave it */
static void bido_namer__task(struct bido_namer *namer, u32 pid, u32 tid, u64 time)
{
	struct bido_task *task;
	bool added;

	/* The idle task has its name; -1: no task */
	if (!tid || tid == (u32)-1 || pid == (u32)-1)
		return;

	task = bido_namer__findnew_task(namer, tid, &added);
	if (!task)
		return;
	if (added) {
		task->pid = pid;
		task->time = time;
	} else if (!task->written && (!task->time || time < task->time)) {
		/* 0: the entry came with the task's record (bido_namer__keep()) */
		task->time = time;
	}
	bido_namer__read_comm(namer, task, tid);
}

static void bido_namer__sample(struct bido_namer *namer, const u8 *prefix, u32 len)
{
	u32 pid, tid;
	u64 time;

	if (!namer->comm || len < namer->time_pos + sizeof(time))
		return;
	memcpy(&pid, prefix + namer->tid_pos, sizeof(pid));
	memcpy(&tid, prefix + namer->tid_pos + sizeof(pid), sizeof(tid));
	memcpy(&time, prefix + namer->time_pos, sizeof(time));
	if (time > namer->max_time)
		namer->max_time = time;
	bido_namer__task(namer, pid, tid, time);
}

/*
 * The kernel named the task (exec, or it was made while recording): the
 * name as far as the prefix holds it, for a new file (bido_namer__carry())
 */
static void bido_namer__comm_record(struct bido_namer *namer, u32 pid, u32 tid,
				    const u8 *comm, u32 len)
{
	bool added;
	struct bido_task *task = bido_namer__findnew_task(namer, tid, &added);

	if (!task)
		return;
	task->pid = pid;
	task->kernel = true;
	len = min_t(u32, len, sizeof(task->comm) - 1);
	memcpy(task->comm, comm, len);
	task->comm[len] = '\0';
	task->has_comm = true;
}

/*
 * A new task: with the tid of one that exited, it is not that one.  It
 * takes its parent's comm, so the parent needs one.
 */
static void bido_namer__fork(struct bido_namer *namer, const u8 *prefix, u32 len)
{
	struct bido_task *task;
	u32 tid, ppid, ptid;
	u64 time;

	if (len < sizeof(struct perf_record_fork))
		return;
	memcpy(&tid, prefix + offsetof(struct perf_record_fork, tid), sizeof(tid));
	if (hashmap__find(namer->tasks, tid, &task) && task->exited) {
		hashmap__delete(namer->tasks, tid, NULL, NULL);
		bido_task__delete(task);
	}
	if (!namer->comm)
		return;
	memcpy(&ppid, prefix + offsetof(struct perf_record_fork, ppid), sizeof(ppid));
	memcpy(&ptid, prefix + offsetof(struct perf_record_fork, ptid), sizeof(ptid));
	memcpy(&time, prefix + offsetof(struct perf_record_fork, time), sizeof(time));
	bido_namer__task(namer, ppid, ptid, time);
}

/* A build-ID offset record: counted for the summary; its process is to name */
static void bido_namer__bido_record(struct bido_namer *namer, const u8 *prefix, u32 len)
{
	u32 flags, pid;

	if (len < offsetof(struct perf_record_build_id_offset, maps))
		return;
	memcpy(&flags, prefix + offsetof(struct perf_record_build_id_offset, flags),
	       sizeof(flags));
	namer->nr_records++;
	namer->nr_truncated += !!(flags & PERF_BUILD_ID_OFFSET_F_TRUNCATED);
	namer->nr_addrs_dropped += !!(flags & PERF_BUILD_ID_OFFSET_F_ADDRS_DROPPED);
	namer->nr_mm_changed += !!(flags & PERF_BUILD_ID_OFFSET_F_MM_CHANGED);
	namer->nr_same_maps += !!(flags & PERF_BUILD_ID_OFFSET_F_SAME_MAPS);
	memcpy(&pid, prefix + offsetof(struct perf_record_build_id_offset, pid), sizeof(pid));
	if (pid && pid != (u32)-1 && !hashmap__find(namer->pids, pid, NULL))
		hashmap__add(namer->pids, pid, BIDO_PID(++namer->pid_gen, BIDO_PID_PENDING));
}

/* A task ended */
static void bido_namer__exit(struct bido_namer *namer, const u8 *prefix, u32 len)
{
	struct bido_task *task;
	bool added = false;
	u32 pid, tid;

	if (len < offsetof(struct perf_record_fork, ptid))
		return;
	memcpy(&pid, prefix + offsetof(struct perf_record_fork, pid), sizeof(pid));
	memcpy(&tid, prefix + offsetof(struct perf_record_fork, tid), sizeof(tid));
	/*
	 * The pid may be a new process's next time.  The task keeps its entry
	 * until the end of the next pass: its comm, read at its first sample,
	 * still goes out.
	 */
	if (pid == tid)
		hashmap__delete(namer->pids, pid, NULL, NULL);
	/*
	 * With carry, a task unknown so far gets an entry too: its last record
	 * may come in a later pass, from another CPU's buffer, and must not be
	 * carried then
	 */
	if (!hashmap__find(namer->tasks, tid, &task))
		task = namer->carry ? bido_namer__findnew_task(namer, tid, &added) : NULL;
	if (!task)
		return;
	/* Its comm was not read, and now never will be */
	if (namer->comm && !task->has_comm && !task->kernel && !task->exited &&
	    task->tries && task->tries < BIDO_COMM_TRIES)
		namer->nr_comm_failed++;
	if (added)
		task->pid = pid;
	if (!task->exited)
		task->exited = 1;
}

/* One record's first bytes: note a process to name, or one that ended */
static void bido_namer__record(struct bido_namer *namer, const u8 *prefix, u32 len)
{
	const struct perf_event_header *hdr = (const void *)prefix;
	u32 pid, tid;
	u64 lost;

	switch (hdr->type) {
	case PERF_RECORD_SAMPLE:
		bido_namer__sample(namer, prefix, len);
		break;
	case PERF_RECORD_COMM:
		if (!namer->comm || len < offsetof(struct perf_record_comm, comm))
			return;
		memcpy(&pid, prefix + offsetof(struct perf_record_comm, pid), sizeof(pid));
		memcpy(&tid, prefix + offsetof(struct perf_record_comm, tid), sizeof(tid));
		bido_namer__comm_record(namer, pid, tid,
					prefix + offsetof(struct perf_record_comm, comm),
					len - offsetof(struct perf_record_comm, comm));
		break;
	case PERF_RECORD_FORK:
		bido_namer__fork(namer, prefix, len);
		break;
	case PERF_RECORD_BUILD_ID_OFFSET:
		bido_namer__bido_record(namer, prefix, len);
		break;
	case PERF_RECORD_LOST:
		if (len < sizeof(struct perf_record_lost))
			return;
		memcpy(&lost, prefix + offsetof(struct perf_record_lost, lost), sizeof(lost));
		namer->nr_lost += lost;
		break;
	case PERF_RECORD_EXIT:
		bido_namer__exit(namer, prefix, len);
		break;
	default:
		break;
	}
}

/* Whether @event has maps that a record flagged SAME_MAPS may name */
static bool bido_namer__has_maps(const union perf_event *event)
{
	return !(event->build_id_offset.flags &
		 (PERF_BUILD_ID_OFFSET_F_SAME_MAPS | PERF_BUILD_ID_OFFSET_F_MM_CHANGED));
}

/*
 * The task's last record with maps takes the cookies of the links that
 * name it, in turn: the records of its chain read before it
 */
static void bido_task__follow(struct bido_task *task)
{
	u8 i = 0;

	if (!task->last || !bido_namer__has_maps(task->last))
		return;
	while (i < task->nr_links) {
		struct bido_link *link = &task->links[i];

		if (link->same_as != task->last->build_id_offset.cookie) {
			i++;
			continue;
		}
		task->last->build_id_offset.cookie = link->cookie;
		task->last_time = link->time;
		*link = task->links[--task->nr_links];
		i = 0;
	}
}

/*
 * A record flagged SAME_MAPS that names no record seen yet: a link, joined
 * with those it names or that name it.  With no room left, the first kept
 * goes.
 */
static void bido_task__link(struct bido_task *task, u64 cookie, u64 same_as, u64 time)
{
	struct bido_link *to = NULL, *from = NULL;
	u8 i;

	for (i = 0; i < task->nr_links; i++) {
		if (task->links[i].cookie == same_as)
			to = &task->links[i];
		else if (task->links[i].same_as == cookie)
			from = &task->links[i];
	}
	if (to && from) {
		to->cookie = from->cookie;
		to->time = from->time;
		*from = task->links[--task->nr_links];
	} else if (to) {
		to->cookie = cookie;
		to->time = time;
	} else if (from) {
		from->same_as = same_as;
	} else {
		if (task->nr_links == BIDO_LINKS_MAX) {
			task->nr_links--;
			memmove(task->links, task->links + 1,
				task->nr_links * sizeof(*task->links));
		}
		task->links[task->nr_links++] = (struct bido_link){ cookie, same_as, time };
	}
}

/*
 * Whether the task's last record stays when one of @time (0: not known)
 * is read, flagged SAME_MAPS if @same_as: a link stays one, as the record
 * with maps it names may still come, and a later record stays
 */
static bool bido_task__keeps_last(const struct bido_task *task, u64 same_as, u64 time)
{
	bool older = time && time < task->last_time;

	if (!task->last)
		return false;
	if (bido_namer__has_maps(task->last))
		return same_as || older;
	/* A record with maps may be the one that a chain of links names */
	if (task->last->build_id_offset.flags & PERF_BUILD_ID_OFFSET_F_SAME_MAPS)
		return same_as && older;
	return older;
}

/*
 * A build-ID offset record copied whole: its task's last, to carry.  One
 * flagged SAME_MAPS has no maps of its own: the last with maps, if it is
 * the record named, keeps its maps and takes its cookie, the one the next
 * samples and records of the task name, so that a chain of them goes on
 * in the new file.  The buffers of the CPUs are read in turn, so the
 * record named may come later: until it does, the record is kept as a
 * link, and one with maps takes the cookies of the links it starts.  One
 * that names no record seen is carried as it is while the task has no
 * record with maps: in the new file it resolves nothing, as in this one.
 * Where the times of the records are known, one with maps older than the
 * last with maps is of an earlier chain, and not kept.
 */
static void bido_namer__keep(struct bido_namer *namer, struct bido_scan *scan)
{
	union perf_event *event = (union perf_event *)scan->whole;
	struct perf_record_build_id_offset *bido = &event->build_id_offset;
	struct bido_task *task;
	u64 same_as, time = 0;
	bool added;

	scan->whole = NULL;
	task = bido_namer__findnew_task(namer, bido->tid, &added);
	/* Written before its EXIT, read after: nothing to carry for it */
	if (!task || task->exited) {
		free(event);
		return;
	}
	if (added)
		task->pid = bido->pid;
	if (namer->evlist && evlist__parse_sample_timestamp(namer->evlist, event, &time))
		time = 0;
	same_as = perf_event__build_id_offset_same_as(event, namer->machine->id_hdr_size);
	if (same_as)
		bido_task__link(task, bido->cookie, same_as, time);
	if (bido_task__keeps_last(task, same_as, time)) {
		free(event);
	} else {
		free(task->last);
		task->last = event;
		task->last_time = time;
	}
	bido_task__follow(task);
}

/**
 * bido_namer__carry - what a new output file needs of the old ones
 *
 * perf record --switch-output: the tasks' next samples may name their
 * last build-ID offset records (the kernel reuses a task's last record
 * while it covers the task's addresses), which went into an earlier file;
 * and with --synth=no the COMMs of tasks went there too.  @write gets a
 * copy of each live task's last record, and the comm callback a COMM
 * (time 0: before every sample of the file) of each task whose comm is
 * known.  Call it when the new file is open, before its first data.
 */
int bido_namer__carry(struct bido_namer *namer, bido_write_fn write, void *data)
{
	struct hashmap_entry *cur;
	size_t bkt;
	int err = 0;

	mutex_lock(&namer->lock);
	hashmap__for_each_entry(namer->tasks, cur, bkt) {
		struct bido_task *task = cur->pvalue;

		if (task->exited)
			continue;
		if (namer->comm && task->has_comm) {
			err = namer->comm(task->pid, cur->key, 0, task->comm, namer->data);
			if (err)
				break;
		}
		if (task->last) {
			err = write(task->last, data);
			if (err)
				break;
		}
	}
	mutex_unlock(&namer->lock);
	return err;
}

/*
 * Keep each task's last record, for bido_namer__carry(); @evlist, if not
 * NULL, gives their times
 */
void bido_namer__set_carry(struct bido_namer *namer, struct evlist *evlist)
{
	namer->carry = true;
	namer->evlist = evlist;
}

/**
 * bido_namer__scan - read the records in data on their way out
 *
 * @key names the ring buffer: its data comes in order, in pieces that may
 * split a record (at the buffer's wrap).  Only records' first bytes are
 * read; no file is opened here (bido_namer__run() does that).
 */
void bido_namer__scan(struct bido_namer *namer, const void *key, const void *buf, size_t size)
{
	const u8 *p = buf;
	struct bido_scan *scan;

	mutex_lock(&namer->lock);
	if (!hashmap__find(namer->scans, (long)key, &scan)) {
		scan = zalloc(sizeof(*scan));
		if (!scan || hashmap__add(namer->scans, (long)key, scan)) {
			free(scan);
			goto out;
		}
	}

	while (size && !scan->broken) {
		const struct perf_event_header *hdr = (const void *)scan->prefix;
		u32 want = sizeof(*hdr), n;

		if (scan->skip) {
			n = min_t(u64, scan->skip, size);
			if (scan->whole) {
				memcpy(scan->whole + scan->whole_len, p, n);
				scan->whole_len += n;
			}
			scan->skip -= n;
			p += n;
			size -= n;
			if (!scan->skip && scan->whole)
				bido_namer__keep(namer, scan);
			continue;
		}
		if (scan->len >= sizeof(*hdr))
			want = min_t(u32, hdr->size, BIDO_SCAN_PREFIX);
		n = min_t(size_t, want - scan->len, size);
		memcpy(scan->prefix + scan->len, p, n);
		scan->len += n;
		p += n;
		size -= n;
		if (scan->len < sizeof(*hdr))
			break;
		if (hdr->size < sizeof(*hdr)) {
			pr_debug("build-ID offset: bad record size %u, names no more files\n",
				 hdr->size);
			scan->broken = true;
			break;
		}
		if (scan->len < min_t(u32, hdr->size, BIDO_SCAN_PREFIX))
			continue;
		bido_namer__record(namer, scan->prefix, scan->len);
		scan->skip = hdr->size - scan->len;
		if (namer->carry && hdr->type == PERF_RECORD_BUILD_ID_OFFSET &&
		    hdr->size >= sizeof(struct perf_record_build_id_offset)) {
			scan->whole = malloc(hdr->size);
			if (scan->whole) {
				memcpy(scan->whole, scan->prefix, scan->len);
				scan->whole_len = scan->len;
				if (!scan->skip)
					bido_namer__keep(namer, scan);
			}
		}
		scan->len = 0;
	}
out:
	mutex_unlock(&namer->lock);
}

/*
 * A file was opened: no other mapping of it need be opened again.  The
 * table is emptied when full (a long perf top sees files come and go):
 * the files seen again are then read again, nothing worse.
 */
static int bido_namer__seen(struct bido_namer *namer, const struct bido_file *f)
{
	struct bido_file *seen;

	if (hashmap__size(namer->files) >= BIDO_FILES_MAX) {
		struct hashmap_entry *cur;
		size_t bkt;

		hashmap__for_each_entry(namer->files, cur, bkt)
			free(cur->pvalue);
		hashmap__clear(namer->files);
		namer->nr_files_forgotten++;
	}
	seen = memdup(f, sizeof(*f));
	if (!seen)
		return -ENOMEM;
	if (hashmap__add(namer->files, seen, seen)) {
		free(seen);
		return -ENOMEM;
	}
	return 0;
}

/*
 * Name the build-ID of one file mapping of @pid, through map_files: the
 * file the task maps even if renamed or deleted since.  Without the
 * capability map_files asks for, the path that maps shows, if it is still
 * the same inode.  The caller skips the files seen before.  A file that
 * cannot be opened here (the task is gone, its path names another file)
 * is not marked seen: another task that maps it may do better.
 */
static int bido_namer__name_file(struct bido_namer *namer, pid_t pid, u64 start, u64 end,
				 const struct bido_file *f, const char *path)
{
	char link[PATH_MAX], name[PATH_MAX];
	struct build_id bid;
	struct stat st;
	ssize_t len;
	int fd, ret;

	snprintf(link, sizeof(link), "%s/%d/map_files/%" PRIx64 "-%" PRIx64,
		 procfs__mountpoint(), pid, start, end);
	fd = open(link, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		int pfd;

		/*
		 * Not opened for reading before it is known to be the mapped
		 * file: whoever can write to its directory may have put a FIFO
		 * (whose open would wait for a writer) or a link there
		 */
		pfd = open(path, O_PATH | O_NOFOLLOW | O_CLOEXEC);
		if (pfd >= 0 && !fstat(pfd, &st) && S_ISREG(st.st_mode) && st.st_ino == f->ino &&
		    makedev(f->dev >> 32, f->dev & 0xffffffff) == st.st_dev) {
			snprintf(link, sizeof(link), "/proc/self/fd/%d", pfd);
			fd = open(link, O_RDONLY | O_CLOEXEC);
		}
		if (pfd >= 0)
			close(pfd);
		if (fd < 0) {
			pr_debug("build-ID offset: %d maps %s, which cannot be opened\n",
				 pid, path);
			namer->nr_open_failed++;
			return 0;
		}
	}
	ret = bido_namer__seen(namer, f);
	if (ret) {
		close(fd);
		return ret;
	}
	namer->nr_files++;

	/* The open file itself: the path may name another file by now */
	snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
	len = readlink(link, name, sizeof(name) - 1);
	ret = 0;
	if (len > 0 && filename__read_build_id(link, &bid) > 0) {
		char sbuild_id[SBUILD_ID_SIZE];

		name[len] = '\0';
		build_id__sprintf(&bid, sbuild_id);
		pr_debug("build-ID offset: %d maps %s (%s)\n", pid, name, sbuild_id);
		ret = build_id_offset__name_build_id(namer->machine, &bid, name);
		if (ret > 0) {
			namer->nr_named++;
			ret = namer->named ? namer->named(&bid, name, link, namer->data) : 0;
		}
	}
	close(fd);
	return ret;
}

/*
 * The executable file mappings of a process, each file once.  Returns 1
 * if @deadline passed first (the files named so far stay named, the rest
 * wait for the next pass), 0 when done, or a negative error.
 */
static int bido_namer__name_pid(struct bido_namer *namer, pid_t pid, u64 deadline)
{
	char path[PATH_MAX], perms[5], *line = NULL;
	size_t line_size = 0;
	int err = 0;
	FILE *fp;

	snprintf(path, sizeof(path), "%s/%d/maps", procfs__mountpoint(), pid);
	fp = fopen(path, "re");
	if (!fp) {
		namer->nr_pids++;
		namer->nr_gone++;
		return 0;
	}
	while (!err && getline(&line, &line_size, fp) > 0) {
		u64 start, end, pgoff, ino;
		unsigned int major, minor;
		struct bido_file f;
		char *name;
		int n = 0;

		if (sscanf(line, "%" SCNx64 "-%" SCNx64 " %4s %" SCNx64 " %x:%x %" SCNu64 " %n",
			   &start, &end, perms, &pgoff, &major, &minor, &ino, &n) < 7 || !n)
			continue;
		name = line + n;
		if (perms[2] != 'x' || !ino || name[0] != '/')
			continue;
		name[strcspn(name, "\n")] = '\0';
		f.dev = (u64)major << 32 | minor;
		f.ino = ino;
		if (hashmap__find(namer->files, &f, NULL))
			continue;
		if (rdclock() > deadline) {
			err = 1;
			break;
		}
		err = bido_namer__name_file(namer, pid, start, end, &f, name);
	}
	free(line);
	fclose(fp);
	if (!err)
		namer->nr_pids++;
	return err;
}

/**
 * build_id_offset__read_comm - a live task's comm, from /proc/PID/task/TID/comm
 *
 * Returns 0, or -1 if the task is gone.
 */
int build_id_offset__read_comm(u32 pid, u32 tid, char *comm, size_t size)
{
	char path[PATH_MAX];
	ssize_t len;
	int fd;

	snprintf(path, sizeof(path), "%s/%u/task/%u/comm", procfs__mountpoint(), pid, tid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	len = read(fd, comm, size - 1);
	close(fd);
	if (len <= 0)
		return -1;
	comm[len] = '\0';
	comm[strcspn(comm, "\n")] = '\0';
	return 0;
}

/*
 * The time of a COMM written at the end of a pass.  perf report orders
 * the records by rounds (one per pass): a record of this round may be
 * later than one of the next round, never than one of the round after.
 * The task's samples still to come are later than those of the last
 * round, so a COMM at the latest time the last round saw precedes them,
 * as it precedes this round's if earlier than the first of those.
 */
static u64 bido_namer__comm_time(const struct bido_namer *namer, const struct bido_task *task)
{
	return min(task->time ? task->time - 1 : 0, namer->run_time);
}

/*
 * Write the COMMs of the tasks seen in this pass's samples, and forget
 * the tasks that exited.  A task whose comm could not be read (gone
 * already) gets none; its samples show its tid.
 */
static int bido_namer__comms(struct bido_namer *namer)
{
	struct hashmap_entry *cur, *tmp;
	size_t bkt;
	int err = 0;

	hashmap__for_each_entry_safe(namer->tasks, cur, tmp, bkt) {
		struct bido_task *task = cur->pvalue;

		if (namer->comm && task->has_comm && !task->written && !task->kernel) {
			task->written = true;
			namer->nr_comms++;
			err = namer->comm(task->pid, cur->key, bido_namer__comm_time(namer, task),
					  task->comm, namer->data);
			if (err)
				break;
		}
		/*
		 * Kept one pass more: a record it wrote before its EXIT may be
		 * read after it, from another CPU's buffer
		 */
		if (task->exited && ++task->exited > 2) {
			hashmap__delete(namer->tasks, cur->key, NULL, NULL);
			bido_task__delete(task);
		}
	}
	namer->run_time = namer->max_time;
	return err;
}

/* A process whose files are still to name, and what @pids said of it */
struct bido_pending {
	pid_t	pid;
	long	seen;
};

/*
 * The processes seen whose files are still to name, in a new array of
 * *nr: those not looked at yet first (a short-lived one must not wait
 * behind one with many files), then those a pass ran out of time in,
 * perf's own last (it maps some forty files and lives to the end)
 */
static struct bido_pending *bido_namer__pending(struct bido_namer *namer, size_t *nr)
{
	size_t n = hashmap__size(namer->pids);
	static const long order[] = { BIDO_PID_PENDING, BIDO_PID_PARTIAL, };
	struct bido_pending *pids, self = { .pid = getpid(), };
	struct hashmap_entry *cur;
	size_t bkt, i;

	*nr = 0;
	pids = calloc(n ?: 1, sizeof(*pids));
	if (!pids)
		return NULL;
	for (i = 0; i < ARRAY_SIZE(order); i++) {
		hashmap__for_each_entry(namer->pids, cur, bkt) {
			if (BIDO_PID_STATE(cur->value) != order[i])
				continue;
			if (cur->key == self.pid)
				self.seen = cur->value;
			else
				pids[(*nr)++] = (struct bido_pending){ cur->key, cur->value };
		}
	}
	if (self.seen)
		pids[(*nr)++] = self;
	return pids;
}

/*
 * Name the files of the processes @pids, within the time left, without
 * the namer's lock: the threads of 'perf record --threads' scan their
 * buffers meanwhile (only the thread that runs the namer touches the
 * table of files and the counts of naming).  Returns 1 if out of time
 * with files of other processes than perf left, 0, or a negative error.
 */
static int bido_namer__files(struct bido_namer *namer, const struct bido_pending *pids,
			     size_t nr, u64 deadline)
{
	pid_t self = getpid();
	long now;
	size_t i;
	int ret;

	for (i = 0; i < nr; i++) {
		ret = bido_namer__name_pid(namer, pids[i].pid, deadline);
		if (ret < 0)
			return ret;
		mutex_lock(&namer->lock);
		/*
		 * Unless its EXIT was read meanwhile, and maybe a record of a
		 * new process with its pid after that: that one is still to
		 * name
		 */
		if (hashmap__find(namer->pids, pids[i].pid, &now) && now == pids[i].seen)
			hashmap__update(namer->pids, pids[i].pid,
					BIDO_PID(now >> 2, ret ? BIDO_PID_PARTIAL : BIDO_PID_DONE),
					NULL, NULL);
		mutex_unlock(&namer->lock);
		if (ret)
			return pids[i].pid == self ? 0 : ret;
	}
	return 0;
}

/**
 * bido_namer__run - name what bido_namer__scan() saw
 *
 * The COMMs of the tasks seen since the last run (with
 * bido_namer__set_comm()), their comms read when first seen; then the
 * files of each process seen, once in its life: the mappings it makes
 * from now on come with MMAP2 records, which name their files.  Naming
 * files stops after BIDO_NAME_BUDGET_NS and goes on at the next run.
 * One thread runs the namer; others may scan meanwhile.  Returns what
 * @named or @comm returned if it failed, else 1 if files of processes
 * other than perf are left to name, else 0.
 */
int bido_namer__run(struct bido_namer *namer)
{
	u64 deadline = rdclock() + BIDO_NAME_BUDGET_NS;
	struct bido_pending *pids = NULL;
	size_t nr = 0;
	int err;

	mutex_lock(&namer->lock);
	err = bido_namer__comms(namer);
	if (!err) {
		pids = bido_namer__pending(namer, &nr);
		if (!pids)
			err = -ENOMEM;
	}
	mutex_unlock(&namer->lock);
	if (!err)
		err = bido_namer__files(namer, pids, nr, deadline);
	free(pids);
	if (err > 0)
		namer->nr_budget++;
	return err;
}

/**
 * bido_namer__run_every - bido_namer__run(), once per @period at most
 *
 * For a tool that names as it goes, on the thread that handles its events
 * (perf top): a pass runs if none did in the last @period nanoseconds
 * (rdclock()), even with nothing left, as a pass looks at every process
 * seen.  Returns 0 if no pass was due, else what bido_namer__run() did.
 */
int bido_namer__run_every(struct bido_namer *namer, u64 period)
{
	u64 now = rdclock();

	if (now < namer->next_run)
		return 0;
	namer->next_run = now + period;
	return bido_namer__run(namer);
}

/*
 * A file that only /usr/lib/debug knows: the link at .build-id/NN/REST
 * (without .debug) leads to the file itself where the distribution keeps
 * one (Fedora's layout).  REST.debug holds its debug information:
 * dso__load() reads symbols there, but it is not the file, and a DSO named
 * after it would go into the build-ID cache under that wrong name.
 */
static char *build_id_offset__find_by_build_id(const struct build_id *bid, const char *sbuild_id)
{
	char *path = NULL, *real;

	if (asprintf(&path, "/usr/lib/debug/.build-id/%.2s/%s", sbuild_id, sbuild_id + 2) < 0)
		return NULL;
	real = realpath(path, NULL);
	free(path);
	if (real && !strstr(real, "/usr/lib/debug/") &&
	    (strlen(real) < 6 || strcmp(real + strlen(real) - 6, ".debug")) &&
	    build_id_offset__path_has_build_id(real, bid))
		return real;
	free(real);

#ifdef HAVE_DEBUGINFOD_SUPPORT
	{
		debuginfod_client *c = debuginfod_begin();

		path = NULL;
		if (c) {
			int fd = debuginfod_find_executable(c, (const unsigned char *)sbuild_id,
							    0, &path);

			if (fd >= 0)
				close(fd);
			else
				path = NULL;
			debuginfod_end(c);
		}
		return path;
	}
#endif
	return NULL;
}

static int build_id_offset__name_dso(struct dso *dso)
{
	char sbuild_id[SBUILD_ID_SIZE];
	char *path;
	int err;

	build_id__sprintf(dso__bid(dso), sbuild_id);
	path = build_id_cache__origname(sbuild_id);
	if (!path)
		path = build_id_offset__find_by_build_id(dso__bid(dso), sbuild_id);
	if (!path) {
		pr_debug("build-ID offset: no name for %s\n", sbuild_id);
		return 0;
	}
	err = build_id_offset__set_name(dso, path);
	free(path);
	return err;
}

struct bido_unnamed {
	struct dso		**dsos;
	size_t			 nr;
	size_t			 alloc;
};

static int build_id_offset__collect_unnamed(struct dso *dso, void *data)
{
	struct bido_unnamed *un = data;

	if (!build_id_offset__dso_is_unnamed(dso))
		return 0;
	if (un->nr == un->alloc) {
		size_t alloc = un->alloc ? un->alloc * 2 : 16;
		struct dso **dsos = realloc(un->dsos, alloc * sizeof(*dsos));

		if (!dsos)
			return -ENOMEM;
		un->dsos = dsos;
		un->alloc = alloc;
	}
	un->dsos[un->nr++] = dso__get(dso);
	return 0;
}

/**
 * machine__name_bido_dsos - name the DSOs known by build-ID only
 *
 * For 'perf record', at the end: the build-IDs that no MMAP2 and no
 * bido_namer named (their tasks were gone when their records were read).
 * Named, in this order, by the build-ID cache's entry, the file a
 * /usr/lib/debug/.build-id link leads to, and debuginfod.  Then marks the
 * DSOs of the records' maps hit.
 */
int machine__name_bido_dsos(struct machine *machine)
{
	struct bido_unnamed un = { .nr = 0, };
	struct hashmap_entry *cur;
	size_t i, bkt;
	int err;

	/* Renaming takes dsos->lock for writing: not while walking it */
	err = dsos__for_each_dso(&machine->dsos, build_id_offset__collect_unnamed, &un);
	for (i = 0; i < un.nr; i++) {
		if (!err)
			err = build_id_offset__name_dso(un.dsos[i]);
		dso__put(un.dsos[i]);
	}
	free(un.dsos);
	if (err || !machine->bido_join)
		return err;

	/*
	 * The files of the records' maps go into the build-ID table and the
	 * build-ID cache, like those of the sampled IPs
	 */
	hashmap__for_each_entry(machine->bido_join->dsos, cur, bkt) {
		struct bido_dso *bd = cur->pvalue;
		struct dso *dso;

		if (!bd->used)
			continue;
		/* Not through the index: no change to it while walking it */
		dso = build_id_offset__dso_is_unnamed(bd->dso) ?
		      build_id_offset__scan_dsos(machine, &bd->bid) : dso__get(bd->dso);
		if (dso) {
			dso__set_hit(dso);
			dso__put(dso);
		}
	}
	return 0;
}
