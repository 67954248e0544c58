// SPDX-License-Identifier: GPL-2.0
/*
 * A CPU-wide session that resolves user addresses by build-ID and file
 * offset, with no /proc walk: a sampling event with
 * PERF_SAMPLE_BUILD_ID_OFFSET and a receiver (attr.defer_output and the
 * same bit, a side-band event) on each CPU, a workload (argv) run
 * meanwhile, and each of its samples joined with the
 * PERF_RECORD_BUILD_ID_OFFSET of the same tid and cookie:
 *
 *   workload PID
 *   sample PID TID IP BUILD-ID+OFFSET
 *   sample PID TID IP - WHY
 *   summary: ...
 *
 * A record comes after the samples it is for (when the task returns to
 * user space), from any CPU's buffer: samples wait for it.  Or it came
 * before them: the kernel saw at sample time that the task's latest record
 * covers the sample, and gave its cookie.  A record with
 * PERF_BUILD_ID_OFFSET_F_UNCHANGED lists no map: the task's record before
 * it still covers its entry.
 */
#include <linux/perf_event.h>
#include <perf/evlist.h>
#include <perf/evsel.h>
#include <perf/cpumap.h>
#include <perf/threadmap.h>
#include <perf/mmap.h>
#include <perf/core.h>
#include <perf/event.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef PERF_BUILD_ID_OFFSET_F_UNCHANGED
#define PERF_BUILD_ID_OFFSET_F_UNCHANGED	(1U << 3)
#endif

struct sample {
	__u32	pid, tid;
	__u64	ip, time, cookie;
};

static struct sample *samples;
static size_t nr_samples;
static struct perf_record_build_id_offset **records;
static size_t nr_records;

static int libperf_print(enum libperf_print_level level,
			 const char *fmt, va_list ap)
{
	return level == LIBPERF_ERR ? vfprintf(stderr, fmt, ap) : 0;
}

/* IP, TID, TIME, then the cookie, the last u64 of the sample */
static void keep_sample(const union perf_event *event, pid_t pid)
{
	const __u64 *array = event->sample.array;
	struct sample s, *more;

	s.ip = array[0];
	s.pid = array[1];
	s.tid = array[1] >> 32;
	s.time = array[2];
	s.cookie = array[3];
	if ((pid_t)s.pid != pid || (event->header.misc & PERF_RECORD_MISC_CPUMODE_MASK) !=
	    PERF_RECORD_MISC_USER)
		return;
	more = realloc(samples, (nr_samples + 1) * sizeof(*samples));
	if (!more)
		exit(1);
	samples = more;
	samples[nr_samples++] = s;
}

static void keep_record(const union perf_event *event, pid_t pid)
{
	const struct perf_record_build_id_offset *rec = &event->build_id_offset;
	struct perf_record_build_id_offset *copy, **more;

	if (event->header.size < sizeof(*rec) || (pid_t)rec->pid != pid)
		return;
	copy = malloc(event->header.size);
	more = realloc(records, (nr_records + 1) * sizeof(*records));
	if (!copy || !more)
		exit(1);
	records = more;
	memcpy(copy, event, event->header.size);
	records[nr_records++] = copy;
}

static void read_all(struct perf_evlist *evlist, pid_t pid)
{
	union perf_event *event;
	struct perf_mmap *map;

	perf_evlist__for_each_mmap(evlist, map, false) {
		if (perf_mmap__read_init(map) < 0)
			continue;
		while ((event = perf_mmap__read_event(map)) != NULL) {
			if (event->header.type == PERF_RECORD_SAMPLE)
				keep_sample(event, pid);
			else if (event->header.type == PERF_RECORD_BUILD_ID_OFFSET)
				keep_record(event, pid);
			perf_mmap__consume(map);
		}
		perf_mmap__read_done(map);
	}
}

static const struct perf_record_build_id_offset *find_record(__u32 tid, __u64 cookie)
{
	size_t i;

	for (i = 0; cookie && i < nr_records; i++) {
		if (records[i]->tid == tid && records[i]->cookie == cookie)
			return records[i];
	}
	return NULL;
}

/* The receiver's sample_id ends with the time */
static __u64 record_time(const struct perf_record_build_id_offset *rec)
{
	return *(const __u64 *)((const char *)rec + rec->header.size - sizeof(__u64));
}

/*
 * The record whose maps cover @rec's entry: @rec, or for an UNCHANGED one
 * the latest record of its tid before it that lists its maps
 */
static const struct perf_record_build_id_offset *
covering_record(const struct perf_record_build_id_offset *rec)
{
	const struct perf_record_build_id_offset *best = NULL;
	size_t i;

	if (!rec || !(rec->flags & PERF_BUILD_ID_OFFSET_F_UNCHANGED))
		return rec;
	for (i = 0; i < nr_records; i++) {
		const struct perf_record_build_id_offset *r = records[i];

		if (r->tid == rec->tid && !(r->flags & PERF_BUILD_ID_OFFSET_F_UNCHANGED) &&
		    record_time(r) < record_time(rec) &&
		    (!best || record_time(r) > record_time(best)))
			best = r;
	}
	return best;
}

static void print_sample(const struct sample *s)
{
	const struct perf_record_build_id_offset_map *m;
	const struct perf_record_build_id_offset *rec;
	int i;

	printf("sample %u %u %#llx ", s->pid, s->tid, (unsigned long long)s->ip);
	if (!s->cookie) {
		printf("- no-cookie\n");
		return;
	}
	rec = covering_record(find_record(s->tid, s->cookie));
	if (!rec) {
		printf("- no-record\n");
		return;
	}
	if (rec->flags & PERF_BUILD_ID_OFFSET_F_MM_CHANGED) {
		printf("- exec\n");
		return;
	}
	m = perf_record_build_id_offset__find(rec, s->ip);
	if (!m || !m->build_id_size) {
		printf("- %s\n", m ? "no-build-id" : "not-covered");
		return;
	}
	for (i = 0; i < m->build_id_size && i < (int)sizeof(m->build_id); i++)
		printf("%02x", m->build_id[i]);
	printf("+%#llx\n", (unsigned long long)(s->ip - m->start + m->pgoff));
}

int main(int argc, char **argv)
{
	struct perf_event_attr sampling = {
		.type		= PERF_TYPE_SOFTWARE,
		.config		= PERF_COUNT_SW_CPU_CLOCK,
		.disabled	= 1,
		.sample_period	= 1000000,
		.sample_type	= PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME |
				  PERF_SAMPLE_BUILD_ID_OFFSET,
		.sample_id_all	= 1,
	};
	struct perf_event_attr receiving = {
		.type		= PERF_TYPE_SOFTWARE,
		.config		= PERF_COUNT_SW_DUMMY,
		.disabled	= 1,
		.sample_type	= PERF_SAMPLE_TID | PERF_SAMPLE_TIME |
				  PERF_SAMPLE_BUILD_ID_OFFSET,
		.sample_id_all	= 1,
		.defer_output	= 1,
		/* A side-band event: the records of any task on its CPU */
		.comm		= 1,
	};
	struct perf_evsel *sampler, *receiver;
	struct perf_evlist *evlist;
	struct perf_cpu_map *cpus;
	int err = 1, status = 0, go[2];
	size_t i, joined = 0;
	pid_t pid;

	if (argc < 2) {
		fprintf(stderr, "usage: %s COMMAND...\n", argv[0]);
		return 2;
	}
	libperf_init(libperf_print);
	cpus = perf_cpu_map__new_online_cpus();
	evlist = perf_evlist__new();
	sampler = perf_evsel__new(&sampling);
	receiver = perf_evsel__new(&receiving);
	if (!cpus || !evlist || !sampler || !receiver)
		return 1;
	perf_evlist__add(evlist, sampler);
	perf_evlist__add(evlist, receiver);
	perf_evlist__set_maps(evlist, cpus, NULL);
	if (perf_evlist__open(evlist)) {
		fprintf(stderr, "cannot open the events: no PERF_SAMPLE_BUILD_ID_OFFSET?\n");
		goto out;
	}
	if (perf_evlist__mmap(evlist, 64)) {
		fprintf(stderr, "cannot mmap the events\n");
		goto out;
	}

	/* The workload execs once the events are on */
	if (pipe(go))
		goto out;
	pid = fork();
	if (pid < 0)
		goto out;
	if (!pid) {
		char c;

		close(go[1]);
		if (read(go[0], &c, 1) != 1)
			_exit(127);
		execvp(argv[1], argv + 1);
		_exit(127);
	}
	close(go[0]);
	printf("workload %d\n", pid);
	fflush(stdout);
	perf_evlist__enable(evlist);
	if (write(go[1], "g", 1) != 1)
		kill(pid, SIGKILL);
	close(go[1]);
	for (;;) {
		pid_t done = waitpid(pid, &status, WNOHANG);

		if (done < 0)
			goto out;
		if (done)
			break;
		perf_evlist__poll(evlist, 100);
		read_all(evlist, pid);
	}
	/* Its last records come as it exits */
	read_all(evlist, pid);
	perf_evlist__disable(evlist);
	read_all(evlist, pid);

	for (i = 0; i < nr_samples; i++) {
		print_sample(&samples[i]);
		joined += !!find_record(samples[i].tid, samples[i].cookie);
	}
	printf("summary: %zu user samples of %d, %zu joined with their record, %zu records\n",
	       nr_samples, pid, joined, nr_records);
	err = WIFEXITED(status) && !WEXITSTATUS(status) ? 0 : 1;
out:
	perf_evlist__delete(evlist);
	perf_cpu_map__put(cpus);
	return err;
}
