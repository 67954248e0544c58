// SPDX-License-Identifier: GPL-2.0
/*
 * What PERF_SAMPLE_BUILD_ID_OFFSET costs in kernel memory per sampled
 * thread (issue 23 item 6), side by side in one run: N threads are made,
 * each runs a little in user space and in system calls, then they all
 * wait.  Three times: without any event, sampled by an inherited
 * cpu-clock event ("plain": what perf's own per-thread copies of the
 * event cost), and the same with PERF_SAMPLE_BUILD_ID_OFFSET and
 * defer_output ("bido").  The slab counters (/proc/meminfo Slab, and the
 * kmalloc caches the per-task state, the stash and the unwinder's cache
 * come from) are read with the threads waiting; "bido" less "plain" is
 * what the feature costs them.  Then the event is closed and every thread
 * returns to user space once, which is when it frees its state: read
 * again.
 *
 * Prints a Markdown table; run as root (reads /proc/slabinfo).
 *
 * SPIN_US is CPU time, so that each thread gets about SPIN_US / 100
 * samples however many wait for a CPU.
 *
 * usage: build_id_offset_memory [-t THREADS] [-s SPIN_US]
 */
#define _GNU_SOURCE
#include <ctype.h>
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <linux/perf_event.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/syscall.h>

#ifndef PERF_SAMPLE_BUILD_ID_OFFSET
#define PERF_SAMPLE_BUILD_ID_OFFSET	(1ULL << 25)
#endif

#define RING_PAGES	64

/*
 * The kmalloc sizes read: the per-task state; the table of the last
 * record and the stash; the unwind cache.  Each counts every cache of that
 * size (kmalloc-192, kmalloc-cg-192, the kmalloc-rnd-NN-192 of
 * CONFIG_RANDOM_KMALLOC_CACHES, ...).
 */
static const char *const caches[] = {
	"128", "192", "256", "512", "1k", "2k", "4k",
	/* by name: the mainline series' stash, and task_struct */
	"perf_build_id_stash", "task_struct",
};
#define NR_CACHES	(sizeof(caches) / sizeof(caches[0]))

/* The kmalloc buckets the tracepoints' "bytes" may name */
static const unsigned int bucket[] = { 64, 96, 128, 192, 256, 512, 1024, 2048 };
#define NR_BUCKETS	(sizeof(bucket) / sizeof(bucket[0]))

struct slab {
	long long slab_kb;			/* /proc/meminfo Slab */
	long long objs[NR_CACHES];		/* active objects */
	int have_objs;				/* /proc/slabinfo was read */
	/*
	 * perf_bido_state_alloc less perf_bido_state_free so far in the run,
	 * by kind (per-task states [0], tables and stashes [1]) and bucket;
	 * -1 if not countable
	 */
	long long held[2][NR_BUCKETS];
};

/*
 * Counting events on the perf_build_id_offset tracepoints, one per CPU:
 * [stash][bucket][0] the allocations, [1] the frees, of per-task states
 * (stash 0) or of tables and stashes (stash 1) of that kmalloc bucket
 */
static int *tp_fd[2][NR_BUCKETS][2];

static int nr_threads = 10000, spin_us = 2000;
static int go_pipe[2], again_pipe[2];
/* Threads done with their work; threads told to go on that did */
static int spun, woke;
static volatile unsigned long sink;

/* CPU time of the calling thread: each gets its share, however many wait */
static double thread_cpu(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static int nr_cpus;

static int tp_id(const char *name)
{
	char path[256];
	FILE *f;
	int id = -1;

	snprintf(path, sizeof(path),
		 "/sys/kernel/tracing/events/perf_build_id_offset/%s/id", name);
	f = fopen(path, "r");
	/* Where the guest has not mounted tracefs yet */
	if (!f && !mount("tracefs", "/sys/kernel/tracing", "tracefs", 0, NULL))
		f = fopen(path, "r");
	if (!f)
		return -1;
	if (fscanf(f, "%d", &id) != 1)
		id = -1;
	fclose(f);
	return id;
}

/* Count the tracepoints from now on; leaves tp_fd NULL where it cannot */
static void tp_open(void)
{
	static const char *const names[] = {
		"perf_bido_state_alloc", "perf_bido_state_free",
	};
	struct perf_event_attr attr = {
		.size = sizeof(attr),
		.type = PERF_TYPE_TRACEPOINT,
	};
	char filter[64];
	unsigned int b;
	int st, k, c;

	for (st = 0; st < 2; st++) {
		for (b = 0; b < NR_BUCKETS; b++) {
			snprintf(filter, sizeof(filter), "stash == %d && bytes == %u",
				 st, bucket[b]);
			for (k = 0; k < 2; k++) {
				int **fds = &tp_fd[st][b][k];

				attr.config = tp_id(names[k]);
				*fds = calloc(nr_cpus, sizeof(int));
				for (c = 0; *fds && c < nr_cpus; c++) {
					int fd = syscall(__NR_perf_event_open, &attr,
							 -1, c, -1, 0);

					if ((int)attr.config < 0 || fd < 0 ||
					    ioctl(fd, PERF_EVENT_IOC_SET_FILTER, filter)) {
						if (fd >= 0)
							close(fd);
						while (c--)
							close((*fds)[c]);
						free(*fds);
						*fds = NULL;
						break;
					}
					(*fds)[c] = fd;
				}
			}
		}
	}
}

static long long tp_sum(int *fd)
{
	long long sum = 0;
	uint64_t v;
	int c;

	for (c = 0; fd && c < nr_cpus; c++) {
		if (read(fd[c], &v, sizeof(v)) != sizeof(v))
			return -1;
		sum += v;
	}
	return fd ? sum : -1;
}

static void tp_close(void)
{
	unsigned int b;
	int st, k, c;

	for (st = 0; st < 2; st++) {
		for (b = 0; b < NR_BUCKETS; b++) {
			for (k = 0; k < 2; k++) {
				int **fds = &tp_fd[st][b][k];

				for (c = 0; *fds && c < nr_cpus; c++)
					close((*fds)[c]);
				free(*fds);
				*fds = NULL;
			}
		}
	}
}

static void slab_read(struct slab *s)
{
	char line[512], name[64];
	long long active;
	unsigned int i;
	FILE *f;
	int st;

	memset(s, 0, sizeof(*s));
	for (st = 0; st < 2; st++) {
		for (i = 0; i < NR_BUCKETS; i++) {
			long long a = tp_sum(tp_fd[st][i][0]);
			long long b = tp_sum(tp_fd[st][i][1]);

			s->held[st][i] = a < 0 || b < 0 ? -1 : a - b;
		}
	}
	f = fopen("/proc/meminfo", "r");
	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "Slab: %lld kB", &s->slab_kb) == 1)
			break;
	if (f)
		fclose(f);
	/* Only with CONFIG_SLUB_DEBUG */
	f = fopen("/proc/slabinfo", "r");
	s->have_objs = !!f;
	while (f && fgets(line, sizeof(line), f)) {
		const char *size;

		if (sscanf(line, "%63s %lld", name, &active) != 2)
			continue;
		size = strncmp(name, "kmalloc-", 8) ? NULL : strrchr(name, '-') + 1;
		for (i = 0; i < NR_CACHES; i++)
			if (!strcmp(name, caches[i]) || (size && !strcmp(size, caches[i])))
				s->objs[i] += active;
	}
	if (f)
		fclose(f);
}

/* User work and system calls for spin_us of CPU time, then wait */
static void *thread_fn(void *arg)
{
	double end = thread_cpu() + spin_us / 1e6;
	char c;

	while (thread_cpu() < end) {
		for (int i = 0; i < 50000; i++)
			sink += i;
		syscall(__NR_getppid);
	}
	__atomic_add_fetch(&spun, 1, __ATOMIC_RELAXED);
	/* Told once to return to user space, then to exit */
	if (read(go_pipe[0], &c, 1) != 1)
		return NULL;
	__atomic_add_fetch(&woke, 1, __ATOMIC_RELAXED);
	if (read(again_pipe[0], &c, 1) != 1)
		return NULL;
	return arg;
}

/*
 * On this process and its threads to come, on @cpu: an inherited per-task
 * event can be mapped only per CPU
 */
static int open_event(int bido, int cpu)
{
	struct perf_event_attr attr = {
		.size = sizeof(attr),
		.type = PERF_TYPE_SOFTWARE,
		.config = PERF_COUNT_SW_CPU_CLOCK,
		.sample_period = 100000,
		.sample_type = PERF_SAMPLE_IP | PERF_SAMPLE_TID,
		.inherit = 1,
		.sample_id_all = 1,
	};

	if (bido) {
		attr.sample_type |= PERF_SAMPLE_BUILD_ID_OFFSET;
		attr.defer_output = 1;
	}
	return syscall(__NR_perf_event_open, &attr, 0, cpu, -1, 0);
}

/* Keep the buffers drained, so that records are written, not lost */
static void drain(struct perf_event_mmap_page **pg)
{
	int c;

	for (c = 0; pg && c < nr_cpus; c++)
		__atomic_store_n(&pg[c]->data_tail,
				 __atomic_load_n(&pg[c]->data_head, __ATOMIC_ACQUIRE),
				 __ATOMIC_RELEASE);
}

/* Until *@count reaches @n, or two minutes went by; drains meanwhile */
static void wait_for(int *count, int n, struct perf_event_mmap_page **pg)
{
	int i;

	for (i = 0; i < 2400 && __atomic_load_n(count, __ATOMIC_RELAXED) < n; i++) {
		usleep(50000);
		drain(pg);
	}
}

/*
 * One run: @mode 0 no event, 1 plain, 2 bido.  @s[0]: before the threads, [1]: all of them
 * waiting, [2]: after the event was closed and each thread returned to
 * user space once.
 */
static int one_run(int mode, struct slab s[3])
{
	long page = sysconf(_SC_PAGESIZE);
	struct perf_event_mmap_page **pg = NULL;
	pthread_t *th = calloc(nr_threads, sizeof(*th));
	int *fd = calloc(nr_cpus, sizeof(*fd));
	pthread_attr_t pa;
	char *bytes;
	int i, c, made = 0;

	if (!th || pipe(go_pipe) || pipe(again_pipe))
		return -1;
	spun = woke = 0;
	pthread_attr_init(&pa);
	pthread_attr_setstacksize(&pa, 64 << 10);
	if (mode == 2)
		tp_open();
	slab_read(&s[0]);
	if (mode)
		pg = calloc(nr_cpus, sizeof(*pg));
	for (c = 0; pg && c < nr_cpus; c++) {
		fd[c] = open_event(mode == 2, c);
		if (fd[c] < 0) {
			fprintf(stderr, "build_id_offset_memory: perf_event_open: %s\n",
				strerror(errno));
			return -1;
		}
		pg[c] = mmap(NULL, (RING_PAGES + 1) * page, PROT_READ | PROT_WRITE,
			     MAP_SHARED, fd[c], 0);
		if (pg[c] == MAP_FAILED) {
			fprintf(stderr, "build_id_offset_memory: mmap: %s\n",
				strerror(errno));
			return -1;
		}
	}
	for (i = 0; i < nr_threads; i++) {
		int err = pthread_create(&th[i], &pa, thread_fn, NULL);

		if (err) {
			fprintf(stderr, "build_id_offset_memory: thread %d: %s\n",
				i, strerror(err));
			break;
		}
		made++;
		if (!(i % 64))
			drain(pg);
	}
	wait_for(&spun, made, pg);
	/* The last records written */
	usleep(200000);
	drain(pg);
	slab_read(&s[1]);
	for (c = 0; pg && c < nr_cpus; c++) {
		munmap(pg[c], (RING_PAGES + 1) * page);
		close(fd[c]);
	}
	free(pg);
	free(fd);
	/* The last receiver's sweep queues each thread's trim ... */
	sleep(1);
	bytes = calloc(made, 1);
	if (!bytes || write(go_pipe[1], bytes, made) != made)
		return -1;
	/*
	 * ... which runs as it returns to user space; then RCU frees the
	 * states, in batches of up to 5 s
	 */
	wait_for(&woke, made, NULL);
	sleep(7);
	slab_read(&s[2]);
	tp_close();
	if (write(again_pipe[1], bytes, made) != made)
		return -1;
	for (i = 0; i < made; i++)
		pthread_join(th[i], NULL);
	free(bytes);
	free(th);
	close(go_pipe[0]);
	close(go_pipe[1]);
	close(again_pipe[0]);
	close(again_pipe[1]);
	return made == nr_threads ? 0 : -1;
}

/* Per thread, in @unit, of @b's growth over @a's, waiting - before */
static double per_thread(long long a0, long long a1, long long b0, long long b1,
			 double unit)
{
	return unit * ((b1 - b0) - (a1 - a0)) / nr_threads;
}

/* Objects of kind @st held at @s, and their bytes; -1 if not countable */
static long long held_objs(const struct slab *s, int st, long long *bytes)
{
	long long objs = 0;
	unsigned int b;

	*bytes = 0;
	for (b = 0; b < NR_BUCKETS; b++) {
		if (s->held[st][b] < 0)
			return -1;
		objs += s->held[st][b];
		*bytes += s->held[st][b] * bucket[b];
	}
	return objs;
}

/*
 * What the tracepoints say is held with the threads waiting (@w) and after
 * close (@a): each sampled thread holds one per-task state (the spares of
 * each CPU are states too), so bytes per state is the feature's own cost
 * per sampled thread, beyond the unwinder's cache
 */
static void held_print(const struct slab *w, const struct slab *a)
{
	long long states, tables, sb, tb, as, at, asb, atb;
	unsigned int b;

	states = held_objs(w, 0, &sb);
	tables = held_objs(w, 1, &tb);
	as = held_objs(a, 0, &asb);
	at = held_objs(a, 1, &atb);
	if (states < 0 || tables < 0 || as < 0 || at < 0) {
		printf("\n(the perf_build_id_offset tracepoints could not be counted)\n");
		return;
	}
	printf("\nbido, from the kernel's tracepoints, with the threads waiting: %lld per-task states (%lld bytes), %lld tables and stashes (%lld bytes:",
	       states, sb, tables, tb);
	for (b = 0; b < NR_BUCKETS; b++)
		if (w->held[1][b])
			printf(" %lld of %u", w->held[1][b], bucket[b]);
	printf(" bytes); %.0f bytes per state, %.2f states per thread; after close: %lld and %lld (%lld bytes)\n",
	       states ? (double)(sb + tb) / states : 0.0,
	       (double)states / nr_threads, as, at, asb + atb);
}

int main(int argc, char **argv)
{
	static const char *const name[] = { "none", "plain", "bido" };
	struct slab r[3][3];
	unsigned int i;
	int opt, m;

	while ((opt = getopt(argc, argv, "t:s:")) != -1) {
		switch (opt) {
		case 't':
			nr_threads = atoi(optarg);
			break;
		case 's':
			spin_us = atoi(optarg);
			break;
		default:
			fprintf(stderr, "usage: build_id_offset_memory [-t THREADS] [-s SPIN_US]\n");
			return 2;
		}
	}
	nr_cpus = sysconf(_SC_NPROCESSORS_ONLN);
	for (m = 0; m < 3; m++) {
		if (one_run(m, r[m])) {
			fprintf(stderr, "build_id_offset_memory: run %s failed\n", name[m]);
			return 1;
		}
	}
	printf("%d threads, each %d us of CPU time in user work and system calls, then waiting; cpu-clock every 100 us, inherited\n\n",
	       nr_threads, spin_us);
	printf("| counter | none: waiting - before | plain | bido | bido over plain, per thread | bido: after close - before |\n");
	printf("|---|---|---|---|---|---|\n");
	printf("| Slab kB | %lld | %lld | %lld | %.0f B | %lld |\n",
	       r[0][1].slab_kb - r[0][0].slab_kb, r[1][1].slab_kb - r[1][0].slab_kb,
	       r[2][1].slab_kb - r[2][0].slab_kb,
	       per_thread(r[1][0].slab_kb, r[1][1].slab_kb, r[2][0].slab_kb,
			  r[2][1].slab_kb, 1024),
	       r[2][2].slab_kb - r[2][0].slab_kb);
	for (i = 0; r[2][1].have_objs && i < NR_CACHES; i++)
		printf("| %s%s objects | %lld | %lld | %lld | %.2f | %lld |\n",
		       isdigit((unsigned char)caches[i][0]) ? "kmalloc-" : "", caches[i],
		       r[0][1].objs[i] - r[0][0].objs[i],
		       r[1][1].objs[i] - r[1][0].objs[i],
		       r[2][1].objs[i] - r[2][0].objs[i],
		       per_thread(r[1][0].objs[i], r[1][1].objs[i], r[2][0].objs[i],
				  r[2][1].objs[i], 1),
		       r[2][2].objs[i] - r[2][0].objs[i]);
	if (!r[2][1].have_objs)
		printf("\n(no /proc/slabinfo in this kernel: the caches are not shown)\n");
	held_print(&r[2][1], &r[2][2]);
	return 0;
}
