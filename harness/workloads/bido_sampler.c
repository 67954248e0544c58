// SPDX-License-Identifier: GPL-2.0
/*
 * A system-wide PERF_SAMPLE_BUILD_ID_OFFSET session, as a profiling daemon
 * opens it: per CPU, a cpu-clock sampling event that is also the side-band
 * receiver (comm, defer_output).  It runs until SIGTERM/SIGINT or for the
 * seconds given, then prints what it received:
 *
 *	samples N cookies N records N callchains N other N lost N
 *
 * (other: records of a type this program does not know)
 *
 * and exits 0.  A guest test runs it beside upstream perf to show that
 * each session gets only the record types it asked for.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <linux/perf_event.h>
#include <sys/mman.h>
#include <sys/syscall.h>

#define PAGES	128

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	stop = 1;
}

struct cpu_ring {
	int fd;
	struct perf_event_mmap_page *pg;
};

static uint64_t n_samples, n_cookies, n_records, n_chains, n_other, n_lost;

static void drain(struct cpu_ring *r)
{
	uint64_t size = PAGES * getpagesize();
	char *data = (char *)r->pg + getpagesize();
	uint64_t head = __atomic_load_n(&r->pg->data_head, __ATOMIC_ACQUIRE);
	uint64_t tail = r->pg->data_tail;

	while (tail < head) {
		struct perf_event_header h;
		uint64_t last = 0;
		unsigned int i;

		for (i = 0; i < sizeof(h); i++)
			((char *)&h)[i] = data[(tail + i) % size];
		switch (h.type) {
		case PERF_RECORD_SAMPLE:
			/* the cookie is the last u64 of the sample */
			for (i = 0; i < 8; i++)
				((char *)&last)[i] = data[(tail + h.size - 8 + i) % size];
			n_samples++;
			n_cookies += last != 0;
			break;
		case PERF_RECORD_BUILD_ID_OFFSET:
			n_records++;
			break;
		case PERF_RECORD_CALLCHAIN_DEFERRED:
			n_chains++;
			break;
		case PERF_RECORD_LOST:
			for (i = 0; i < 8; i++)
				((char *)&last)[i] = data[(tail + 16 + i) % size];
			n_lost += last;
			break;
		default:
			/* side-band it asked for (comm, fork, exit, throttle) */
			if (h.type < PERF_RECORD_BUILD_ID_OFFSET)
				break;
			fprintf(stderr, "bido_sampler: record type %u\n", h.type);
			n_other++;
		}
		tail += h.size;
	}
	__atomic_store_n(&r->pg->data_tail, tail, __ATOMIC_RELEASE);
}

int main(int argc, char **argv)
{
	int ncpu = sysconf(_SC_NPROCESSORS_ONLN), i, secs = argc > 1 ? atoi(argv[1]) : 3600;
	struct cpu_ring *rings = calloc(ncpu, sizeof(*rings));
	struct pollfd *pfd = calloc(ncpu, sizeof(*pfd));
	struct perf_event_attr attr = {
		.size = sizeof(attr),
		.type = PERF_TYPE_SOFTWARE,
		.config = PERF_COUNT_SW_CPU_CLOCK,
		.sample_period = 1000000,
		.sample_type = PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_BUILD_ID_OFFSET,
		.exclude_kernel = 1,
		.sample_id_all = 1,
		.comm = 1,		/* a side-band event: on every CPU's list */
		.defer_output = 1,
		.wakeup_events = 16,
	};
	time_t end = time(NULL) + secs;

	signal(SIGTERM, on_signal);
	signal(SIGINT, on_signal);
	for (i = 0; i < ncpu; i++) {
		rings[i].fd = syscall(__NR_perf_event_open, &attr, -1, i, -1, 0);
		if (rings[i].fd < 0) {
			fprintf(stderr, "bido_sampler: perf_event_open cpu %d: %s\n", i,
				strerror(errno));
			return errno == EINVAL ? 4 : 1;
		}
		rings[i].pg = mmap(NULL, (PAGES + 1) * getpagesize(), PROT_READ | PROT_WRITE,
				   MAP_SHARED, rings[i].fd, 0);
		if (rings[i].pg == MAP_FAILED) {
			perror("bido_sampler: mmap");
			return 1;
		}
		pfd[i].fd = rings[i].fd;
		pfd[i].events = POLLIN;
	}
	/* Tell a waiting test that sampling has begun */
	printf("ready\n");
	fflush(stdout);
	while (!stop && time(NULL) < end) {
		poll(pfd, ncpu, 100);
		for (i = 0; i < ncpu; i++)
			drain(&rings[i]);
	}
	for (i = 0; i < ncpu; i++)
		drain(&rings[i]);
	printf("samples %llu cookies %llu records %llu callchains %llu other %llu lost %llu\n",
	       (unsigned long long)n_samples, (unsigned long long)n_cookies,
	       (unsigned long long)n_records, (unsigned long long)n_chains,
	       (unsigned long long)n_other, (unsigned long long)n_lost);
	return 0;
}
