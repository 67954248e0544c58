// SPDX-License-Identifier: GPL-2.0
/*
 * What PERF_SAMPLE_BUILD_ID_OFFSET costs a sampled program, side by side
 * in one run: a child does a fixed amount of work (frames in its program
 * and in shared objects), once per mode, while this process drains the
 * ring buffer as a profiler would:
 *
 *   none      no event
 *   ip        cpu-clock, IP + TID + TIME (perf record without -g)
 *   ip+bido+rx and PERF_SAMPLE_BUILD_ID_OFFSET with a receiving
 *             (defer_output) event: perf record --buildid-offset
 *   g         IP + TID + TIME + CALLCHAIN, frame pointers read in the
 *             interrupt (perf record -g)
 *   g+bido    and the sample bit, no receiving event: the sampling side
 *             and the deferred unwind, no record built
 *   g+bido+rx and defer_output: records built and written (perf record
 *             -g --buildid-offset)
 *   defer     fp,defer (upstream's deferred callchains): the user frames
 *             in PERF_RECORD_CALLCHAIN_DEFERRED, no sample bit
 *   defer+bido+rx fp,defer with the sample bit (perf record
 *             --call-graph fp,defer --buildid-offset): both records per
 *             kernel entry, from one walk
 *   dwarf     user registers and 8 KB of user stack (--call-graph dwarf)
 *   dwarf+bido+rx and the sample bit with a receiving event
 *
 * Two workloads: "warm" calls into one shared object, so the task's
 * records can name its last one; "cold" calls into NLIBS copies of it in
 * turn, so nearly every record is of other maps and reads another file's
 * build-ID.
 *
 * Reports the child's CPU time (median of the repetitions, and the
 * spread), the overhead against "none", and samples, records and lost
 * records per run.
 *
 * The stacks are 16 user frames deep, the depth of issue 23's bytes
 * goal (D_FRAMES of the program on top of the usual start-up frames and
 * the shared object's; 8 gave 12.9 until 2026-12-04).  A second table gives
 * the bytes per sample that reached the ring buffer: samples and records
 * as they are, and the same samples with their user frames in the inline
 * form of BPF build-ID stacks (32 bytes each instead of 8), for the
 * stack part and for the whole.
 *
 * -d prints, instead of the tables, one line for the overhead plot:
 * "DATA overhead FREQ_HZ G% BIDO% DEFER_BIDO%", warm workload only.
 *
 * -i says that the guest counts instructions (harness/qemu.py's icount
 * guest: one guest nanosecond per retired instruction), so CPU times are
 * printed as instructions, and with them the figures the goals are set
 * in: instructions per sample over "none", the sampling side against -g
 * and the whole feature against -g.
 *
 * usage: build_id_offset_cost [-d] [-i] [-r REPS] [-n WORK] [-p PERIOD_NS] [-k NLIBS] LIB.so
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdbool.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <linux/perf_event.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#define RING_PAGES	512
#define MAX_REPS	15

#ifndef PERF_CONTEXT_USER_DEFERRED
#define PERF_CONTEXT_USER_DEFERRED	((__u64)-640)
#endif
#ifndef PERF_RECORD_CALLCHAIN_DEFERRED
#define PERF_RECORD_CALLCHAIN_DEFERRED	22
#endif

enum mode {
	M_NONE, M_IP, M_IP_RX, M_G, M_BIDO, M_RX, M_DEFER, M_DEFER_RX,
	M_DWARF, M_DWARF_RX, NR_MODES
};

/* What each mode asks of the event */
static const struct {
	const char *name;
	bool callchain;		/* PERF_SAMPLE_CALLCHAIN, user only */
	bool defer;		/* ... deferred (attr.defer_callchain) */
	bool dwarf;		/* user registers and stack */
	bool bit;		/* PERF_SAMPLE_BUILD_ID_OFFSET */
	bool rx;		/* attr.defer_output: records written */
} modes[NR_MODES] = {
	[M_NONE]	= { "none" },
	[M_IP]		= { "IP only" },
	[M_IP_RX]	= { "IP + sample bit + defer_output", .bit = true, .rx = true },
	[M_G]		= { "-g", .callchain = true },
	[M_BIDO]	= { "-g + sample bit, no receiver", .callchain = true, .bit = true },
	[M_RX]		= { "-g + sample bit + defer_output", .callchain = true,
			    .bit = true, .rx = true },
	[M_DEFER]	= { "fp,defer (deferred callchains only)", .callchain = true,
			    .defer = true, .rx = true },
	[M_DEFER_RX]	= { "fp,defer + sample bit + defer_output", .callchain = true,
			    .defer = true, .bit = true, .rx = true },
	[M_DWARF]	= { "dwarf", .dwarf = true },
	[M_DWARF_RX]	= { "dwarf + sample bit + defer_output", .dwarf = true,
			    .bit = true, .rx = true },
};

/* perf record's x86-64 user registers for dwarf: all but the segment ones */
#define DWARF_REGS	0xff0fffULL
#define DWARF_STACK	8192

/* Program frames above the shared object's: 16 user frames in all */
#define D_FRAMES	11

struct run {
	double cpu;			/* child CPU seconds */
	uint64_t samples, records, lost;
	uint64_t sample_bytes, record_bytes, user_frames;
	uint64_t deferred, deferred_frames;	/* CALLCHAIN_DEFERRED records */
};

static unsigned long work = 400;	/* rounds of the workload */
static uint64_t period = 100000;	/* ns of cpu-clock */
static int nr_libs = 320, reps = 5;
static int icount;			/* CPU ns are instructions */
typedef unsigned long (*lib_fn)(unsigned long n,
				unsigned long (*cb)(unsigned long n));
static lib_fn *libs;

unsigned long bido_sink;

static __attribute__((noipa)) unsigned long cb(unsigned long n)
{
	return n * 7;
}

static __attribute__((noipa)) unsigned long frame(lib_fn f, unsigned long n)
{
	return f(n, cb) + 1;
}

static __attribute__((noipa)) unsigned long deep(int d, lib_fn f,
						 unsigned long n)
{
	unsigned long r;

	if (!d)
		return frame(f, n);
	r = deep(d - 1, f, n);
	/* Keeps the compiler from turning the recursion into a loop */
	__asm__ volatile("" : "+r" (r));
	return r + 1;
}

static double cpu_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* The child: fixed work over @n of the shared objects, in turn */
static void child_work(int go, int out, int n)
{
	unsigned long i;
	double t0;
	char c;

	if (read(go, &c, 1) != 1)
		_exit(1);
	t0 = cpu_now();
	for (i = 0; i < work * 64; i++)
		bido_sink += deep(D_FRAMES, libs[i % n], 2000);
	t0 = cpu_now() - t0;
	if (write(out, &t0, sizeof(t0)) != sizeof(t0))
		_exit(1);
	_exit(0);
}

/* u64 @i of the record at @off, which may wrap around the ring */
static uint64_t ring_u64(const char *data, uint64_t size, uint64_t off, int i)
{
	uint64_t v;

	memcpy(&v, data + (off + sizeof(struct perf_event_header) + 8 * i) % size,
	       sizeof(v));
	return v;
}

/* Sample: IP, TID, TIME, CALLCHAIN (user only), ...: its user frames */
static uint64_t user_frames(const char *data, uint64_t size, uint64_t off)
{
	uint64_t nr = ring_u64(data, size, off, 3), i, n = 0;

	for (i = 0; i < nr; i++) {
		uint64_t ip = ring_u64(data, size, off, 4 + i);

		/* The cookie that follows is no frame */
		if (ip == PERF_CONTEXT_USER_DEFERRED)
			i++;
		else
			n += ip < PERF_CONTEXT_MAX;
	}
	return n;
}

static void drain(struct perf_event_mmap_page *pg, uint64_t size,
		  struct run *r, bool callchain)
{
	uint64_t head = __atomic_load_n(&pg->data_head, __ATOMIC_ACQUIRE);
	uint64_t tail = pg->data_tail;
	char *data = (char *)pg + sysconf(_SC_PAGESIZE);

	while (tail < head) {
		struct perf_event_header *h = (void *)(data + tail % size);

		/* The header never wraps: records are 8-byte multiples */
		if (h->type == PERF_RECORD_SAMPLE) {
			r->samples++;
			r->sample_bytes += h->size;
			if (callchain)
				r->user_frames += user_frames(data, size, tail);
		} else if (h->type == PERF_RECORD_BUILD_ID_OFFSET) {
			/* pid and tid, cookie, then nr and flags */
			r->records++;
			r->record_bytes += h->size;
		} else if (h->type == PERF_RECORD_CALLCHAIN_DEFERRED) {
			/* header, cookie, nr, ips[nr], sample_id */
			r->deferred++;
			r->deferred_frames += ring_u64(data, size, tail, 1);
			r->record_bytes += h->size;
		}
		else if (h->type == PERF_RECORD_LOST)
			r->lost += ((uint64_t *)(h + 1))[1];
		tail += h->size;
	}
	__atomic_store_n(&pg->data_tail, tail, __ATOMIC_RELEASE);
}

static int one_run(enum mode mode, int n, struct run *r)
{
	long page = sysconf(_SC_PAGESIZE);
	uint64_t size = (uint64_t)RING_PAGES * page;
	struct perf_event_mmap_page *pg = NULL;
	struct perf_event_attr attr;
	int go[2], out[2], fd = -1, status;
	pid_t pid;

	memset(r, 0, sizeof(*r));
	if (pipe(go) || pipe(out))
		return -1;
	pid = fork();
	if (!pid)
		child_work(go[0], out[1], n);

	if (mode != M_NONE) {
		memset(&attr, 0, sizeof(attr));
		attr.size = sizeof(attr);
		attr.type = PERF_TYPE_SOFTWARE;
		attr.config = PERF_COUNT_SW_CPU_CLOCK;
		attr.sample_period = period;
		attr.sample_type = PERF_SAMPLE_IP | PERF_SAMPLE_TID |
				   PERF_SAMPLE_TIME;
		attr.sample_id_all = 1;
		if (modes[mode].callchain) {
			attr.sample_type |= PERF_SAMPLE_CALLCHAIN;
			attr.exclude_callchain_kernel = 1;
		}
		if (modes[mode].dwarf) {
			attr.sample_type |= PERF_SAMPLE_REGS_USER | PERF_SAMPLE_STACK_USER;
			attr.sample_regs_user = DWARF_REGS;
			attr.sample_stack_user = DWARF_STACK;
		}
		if (modes[mode].bit)
			attr.sample_type |= PERF_SAMPLE_BUILD_ID_OFFSET;
		attr.defer_output = modes[mode].rx;
		attr.defer_callchain = modes[mode].defer;
		fd = syscall(__NR_perf_event_open, &attr, pid, -1, -1,
			     PERF_FLAG_FD_CLOEXEC);
		if (fd < 0) {
			fprintf(stderr, "build_id_offset_cost: perf_event_open (%s): %s\n",
				modes[mode].name, strerror(errno));
			kill(pid, SIGKILL);
			waitpid(pid, NULL, 0);
			return -1;
		}
		pg = mmap(NULL, size + page, PROT_READ | PROT_WRITE,
			  MAP_SHARED, fd, 0);
		if (pg == MAP_FAILED)
			return -1;
	}
	if (write(go[1], "g", 1) != 1)
		return -1;
	while (waitpid(pid, &status, WNOHANG) == 0) {
		if (pg)
			drain(pg, size, r, modes[mode].callchain);
		usleep(10000);
	}
	if (pg) {
		drain(pg, size, r, modes[mode].callchain);
		munmap(pg, size + page);
		close(fd);
	}
	if (read(out[0], &r->cpu, sizeof(r->cpu)) != sizeof(r->cpu))
		r->cpu = 0;
	close(go[0]);
	close(go[1]);
	close(out[0]);
	close(out[1]);
	return WIFEXITED(status) && !WEXITSTATUS(status) && r->cpu ? 0 : -1;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* Every mode, or those of -d */
#define ALL_MODES	((1U << NR_MODES) - 1)
#define PLOT_MODES	(1U << M_NONE | 1U << M_G | 1U << M_RX | 1U << M_DEFER_RX)

/*
 * The modes of @mask @reps times each over @n objects, interleaved so that
 * drift hits every mode alike
 */
static int run_modes(int n, unsigned int mask, struct run runs[NR_MODES][MAX_REPS])
{
	int i, m;

	for (i = 0; i < reps; i++)
		for (m = 0; m < NR_MODES; m++)
			if ((mask & 1U << m) && one_run(m, n, &runs[m][i]))
				return -1;
	return 0;
}

/* The CPU times of @runs, sorted into @cpu; returns their median */
static double cpu_median(const struct run *runs, double *cpu)
{
	int i;

	for (i = 0; i < reps; i++)
		cpu[i] = runs[i].cpu;
	qsort(cpu, reps, sizeof(*cpu), cmp_double);
	return cpu[reps / 2];
}

/* The run whose CPU time is the median: its samples, records and bytes */
static const struct run *median_run(const struct run *runs, double med)
{
	int i;

	for (i = 0; i < reps; i++)
		if (runs[i].cpu == med)
			return &runs[i];
	return &runs[0];
}

/* A CPU time as printed: seconds, or millions of instructions (-i) */
static double shown(double cpu)
{
	return icount ? cpu * 1e3 : cpu;
}

/* Copies of @lib under a fresh directory: @n distinct files */
static int load_libs(const char *lib, int n)
{
	char dir[] = "/tmp/bido_cost_XXXXXX", path[256], cmd[512];
	int i;

	libs = calloc(n, sizeof(*libs));
	if (!libs || !mkdtemp(dir))
		return -1;
	for (i = 0; i < n; i++) {
		void *dl;

		snprintf(path, sizeof(path), "%s/lib%d.so", dir, i);
		snprintf(cmd, sizeof(cmd), "cp '%s' '%s'", lib, path);
		if (system(cmd))
			return -1;
		dl = dlopen(path, RTLD_NOW | RTLD_LOCAL);
		if (!dl) {
			fprintf(stderr, "build_id_offset_cost: %s\n", dlerror());
			return -1;
		}
		libs[i] = (lib_fn)dlsym(dl, "bido_lib_work");
		if (!libs[i])
			return -1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	static const struct { const char *name; int n; } loads[] = {
		{ "warm", 1 }, { "cold", 0 },
	};
	struct run runs[NR_MODES][MAX_REPS], bytes[2][NR_MODES];
	double cpu[MAX_REPS], med[NR_MODES];
	int opt, l, m, data_only = 0;

	while ((opt = getopt(argc, argv, "dir:n:p:k:")) != -1) {
		switch (opt) {
		case 'd':
			data_only = 1;
			break;
		case 'i':
			icount = 1;
			break;
		case 'r':
			reps = atoi(optarg);
			break;
		case 'n':
			work = strtoul(optarg, NULL, 0);
			break;
		case 'p':
			period = strtoull(optarg, NULL, 0);
			break;
		case 'k':
			nr_libs = atoi(optarg);
			break;
		default:
			goto usage;
		}
	}
	if (optind != argc - 1 || reps < 1 || reps > MAX_REPS || nr_libs < 1)
		goto usage;
	if (data_only)
		nr_libs = 1;
	if (load_libs(argv[optind], nr_libs))
		return 1;

	if (data_only) {
		if (run_modes(1, PLOT_MODES, runs))
			return 1;
		for (m = 0; m < NR_MODES; m++)
			if (PLOT_MODES & 1U << m)
				med[m] = cpu_median(runs[m], cpu);
		printf("DATA overhead %.0f %.1f %.1f %.1f\n", 1e9 / period,
		       100 * (med[M_G] / med[M_NONE] - 1),
		       100 * (med[M_RX] / med[M_NONE] - 1),
		       100 * (med[M_DEFER_RX] / med[M_NONE] - 1));
		return 0;
	}

	printf("| workload | mode | %s (median of %d) | spread | overhead | %s/sample over none | samples | records | lost |\n",
	       icount ? "M instructions" : "CPU s", reps,
	       icount ? "instructions" : "ns");
	printf("|---|---|---|---|---|---|---|---|---|\n");
	for (l = 0; l < 2; l++) {
		int n = loads[l].n ? loads[l].n : nr_libs;

		if (run_modes(n, ALL_MODES, runs))
			return 1;
		for (m = 0; m < NR_MODES; m++) {
			const struct run *r;

			med[m] = cpu_median(runs[m], cpu);
			r = median_run(runs[m], med[m]);
			bytes[l][m] = *r;
			printf("| %s | %s | %.3f | %.3f-%.3f | %+.1f%% |",
			       loads[l].name, modes[m].name, shown(med[m]),
			       shown(cpu[0]), shown(cpu[reps - 1]),
			       100 * (med[m] / med[M_NONE] - 1));
			if (m != M_NONE && r->samples)
				printf(" %.0f |", (med[m] - med[M_NONE]) * 1e9 /
				       r->samples);
			else
				printf(" - |");
			printf(" %llu | %llu | %llu |\n",
			       (unsigned long long)r->samples,
			       (unsigned long long)(r->records + r->deferred),
			       (unsigned long long)r->lost);
		}
		printf("| %s | whole feature against -g (goal at most 1.5) | %.2f | | | | | | |\n",
		       loads[l].name,
		       (med[M_RX] - med[M_NONE]) / (med[M_G] - med[M_NONE]));
		printf("| %s | sampling side against -g (goal at most +5%%) | %+.1f%% | | | | | | |\n",
		       loads[l].name,
		       100 * ((med[M_BIDO] - med[M_NONE]) /
			      (med[M_G] - med[M_NONE]) - 1));
		printf("| %s | fp,defer + sample bit against -g; against fp,defer alone | %.2f; %.2f | | | | | | |\n",
		       loads[l].name,
		       (med[M_DEFER_RX] - med[M_NONE]) / (med[M_G] - med[M_NONE]),
		       (med[M_DEFER_RX] - med[M_NONE]) /
		       (med[M_DEFER] - med[M_NONE]));
		printf("| %s | IP + sample bit against IP only; dwarf + sample bit against dwarf | %.2f; %.2f | | | | | | |\n",
		       loads[l].name,
		       (med[M_IP_RX] - med[M_NONE]) / (med[M_IP] - med[M_NONE]),
		       (med[M_DWARF_RX] - med[M_NONE]) /
		       (med[M_DWARF] - med[M_NONE]));
	}

	printf("\nBytes per sample in the ring buffer (the median run of each mode; inline: the same samples with each user frame as a 32-byte build-ID + offset entry, as BPF build-ID stacks have them, instead of an 8-byte address and a cookie):\n\n");
	printf("| workload | mode | samples | user frames/sample | sample B | record B/sample | total B/sample | stack B/sample | inline stack B/sample | ours/inline (stack) | ours/inline (total) |\n");
	printf("|---|---|---|---|---|---|---|---|---|---|---|\n");
	for (l = 0; l < 2; l++) {
		for (m = M_IP; m < NR_MODES; m++) {
			const struct run *r = &bytes[l][m];
			double ns = r->samples ? r->samples : 1;
			bool defer = modes[m].defer;
			/* Deferred: the frames of a sample are its entry's */
			double fr = defer ? (double)r->deferred_frames /
					    (r->deferred ? r->deferred : 1) :
				    r->user_frames / ns;
			/* The sample's user part: its frames, or marker + cookie */
			double own = defer ? 16 : 8 * fr;
			double cookie = modes[m].bit ? 8 : 0;
			double rec = r->record_bytes / ns;
			double tot = r->sample_bytes / ns + rec;
			double stack = own + cookie + rec;
			double inl = 32 * fr;
			double inl_tot = r->sample_bytes / ns - own - cookie + inl;

			if (m == M_BIDO)
				continue;
			if (!modes[m].callchain) {
				/* No frames: no stack columns */
				printf("| %s | %s | %llu | - | %.1f | %.1f | %.1f | - | - | - | - |\n",
				       loads[l].name, modes[m].name,
				       (unsigned long long)r->samples,
				       r->sample_bytes / ns, rec, tot);
				continue;
			}
			printf("| %s | %s | %llu | %.1f | %.1f | %.1f | %.1f | %.1f | %.1f | %.0f%% | %.0f%% |\n",
			       loads[l].name, modes[m].name,
			       (unsigned long long)r->samples, fr,
			       r->sample_bytes / ns, rec, tot, stack, inl,
			       100 * stack / inl, 100 * tot / inl_tot);
		}
	}
	return 0;
usage:
	fprintf(stderr, "usage: build_id_offset_cost [-d] [-r REPS] [-n WORK] [-p PERIOD_NS] [-k NLIBS] LIB.so\n");
	return 2;
}
