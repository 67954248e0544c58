// SPDX-License-Identifier: GPL-2.0
/*
 * PERF_SAMPLE_BUILD_ID_OFFSET under races: tasks that exit, exec and fork
 * while they are sampled, events closed, unmapped, redirected and
 * disabled while deferred work is pending, an address space that changes
 * under the sampled thread, tasks that must never get work (kernel
 * threads, io_uring workers), two sessions on one task and sampling at
 * the highest rate.  Each case counts what it did and checks
 * what came out: every record well formed, every sample with a cookie
 * joined with its record or accounted for, no address resolved wrongly.
 * The debug kernel of the test guest watches for use-after-free, lock
 * cycles and hangs meanwhile.  Software cpu-clock events only.
 *
 * All events count on CLOCK_MONOTONIC (use_clockid), so that times the
 * test takes with clock_gettime() can be set against sample times.
 *
 * The loops are sized for an emulated machine with a debug kernel;
 * BIDO_RACES_SCALE=N in the environment makes them N times longer.
 */
#define _GNU_SOURCE
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <dirent.h>
#include <linux/io_uring.h>
#include <linux/perf_event.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include "../kselftest_harness.h"
#include "build_id_offset_common.h"

#define MAX_RATE "/proc/sys/kernel/perf_event_max_sample_rate"

/* Emulated machines with debug kernels are slow: more than the default */
#undef TEST_TIMEOUT_DEFAULT
#define TEST_TIMEOUT_DEFAULT 180

#define RING_PAGES	256

/* A sampling event that also receives the records, on CLOCK_MONOTONIC */
static void bido_attr(struct perf_event_attr *attr, uint64_t period_ns)
{
	sample_attr(attr, period_ns);
	attr->use_clockid = 1;
	attr->clockid = CLOCK_MONOTONIC;
	/* read() gives what the event lost, reported in the buffer or not */
	attr->read_format = PERF_FORMAT_LOST;
}

/* An event that only holds a ring buffer (a SET_OUTPUT target) */
static void holder_attr(struct perf_event_attr *attr)
{
	/* The same sample_type: the sample_id of its records is the same */
	bido_attr(attr, 0);
	attr->config = PERF_COUNT_SW_DUMMY;
	attr->defer_output = 0;
}

static void sleep_us(long us)
{
	struct timespec ts = { us / 1000000, us % 1000000 * 1000 };

	nanosleep(&ts, NULL);
}

static pid_t gettid_(void)
{
	return syscall(__NR_gettid);
}

/*
 * Is @s in the last entry of its tid that the trace shows: no later
 * sample of another entry, no later record?  Its record is written when
 * that entry ends, which may be after the event stopped (the DISABLE
 * ioctl, the close, an exec that drops the events).
 */
static bool last_entry(struct trace *t, const struct sample *s)
{
	int k;

	if (s->next != NO_TIME)
		return false;
	for (k = 0; k < t->nr_r; k++)
		if (t->r[k].tid == s->tid && t->r[k].time > s->time)
			return false;
	return true;
}

/* ---- The join: samples, records and the ground truth ---- */

/*
 * What a join counts.  A lost record costs all the samples of its entry
 * their join: compare lost with the entries (unjoined_entries) whose
 * record is missing, not with their samples.
 */
struct tally {
	uint64_t samples, zero_cookie, joined, at_stop, excused, unjoined;
	uint64_t unjoined_entries;
	uint64_t addrs, resolved, unresolved, not_code, anon, wrong;
	uint64_t mm_changed;	/* addresses in records flagged MM_CHANGED */
	char first_wrong[200];
	char unresolved_eg[160];
	char unjoined_eg[400];	/* the first sample without its record */
};

static void tally_wrong(struct tally *ty, uint64_t a, const struct bido_map *bm,
			const char *why)
{
	if (ty->wrong++)
		return;
	snprintf(ty->first_wrong, sizeof(ty->first_wrong),
		 "%#llx: %s (record %#llx-%#llx pgoff %#llx flags %#x bid size %u)",
		 (unsigned long long)a, why,
		 (unsigned long long)(bm ? bm->start : 0),
		 (unsigned long long)(bm ? bm->end : 0),
		 (unsigned long long)(bm ? bm->pgoff : 0),
		 bm ? bm->flags : 0, bm ? bm->build_id_size : 0);
}

static void tally_addr(struct tally *ty, enum bido_verdict v, uint64_t a,
		       const struct bido_map *bm, const char *why)
{
	ty->addrs++;
	switch (v) {
	case BIDO_RESOLVED:
		ty->resolved++;
		break;
	case BIDO_UNRESOLVED:
		if (!ty->unresolved++)
			snprintf(ty->unresolved_eg, sizeof(ty->unresolved_eg),
				 "%#llx in %s", (unsigned long long)a,
				 why ?: "?");
		break;
	case BIDO_NOT_CODE:
		ty->not_code++;
		break;
	case BIDO_ANON:
		ty->anon++;
		break;
	case BIDO_WRONG:
		tally_wrong(ty, a, bm, why);
		break;
	}
}

/*
 * Join every sample that @pick accepts (NULL: all) with its record and
 * check its addresses against @m.  A sample with a cookie and no record
 * is counted at_stop when it is in the last entry its task shows, excused
 * when @excuse says so, unjoined otherwise.
 */
/*
 * What a reader would want to know of a sample without its record: the
 * sample, and the records of its thread written just before and after
 */
static void unjoined_example(const struct trace *t, const struct sample *s,
			     char *buf, size_t len)
{
	const struct record *before = NULL, *after = NULL;
	int i, other = 0;

	for (i = 0; i < t->nr_r; i++) {
		const struct record *r = &t->r[i];

		other += r->cookie == s->cookie;
		if (r->tid != s->tid)
			continue;
		if (r->time <= s->time && (!before || r->time > before->time))
			before = r;
		if (r->time > s->time && (!after || r->time < after->time))
			after = r;
	}
	snprintf(buf, len,
		 "tid %u pid %u cpu %u cookie %#llx time %llu %s, entry's first sample %llu; its tid's records before: %#llx at %llu, after: %#llx at %llu; %d records of any tid with that cookie",
		 s->tid, s->pid, s->cpu, (unsigned long long)s->cookie,
		 (unsigned long long)s->time, s->kernel ? "kernel" : "user",
		 (unsigned long long)s->first,
		 before ? (unsigned long long)before->cookie : 0ULL,
		 before ? (unsigned long long)before->time : 0ULL,
		 after ? (unsigned long long)after->cookie : 0ULL,
		 after ? (unsigned long long)after->time : 0ULL, other);
}

static void join(struct trace *t, struct maps *m, struct tally *ty,
		 bool (*pick)(const struct sample *s, void *arg),
		 bool (*excuse)(const struct sample *s, void *arg), void *arg)
{
	const char *why;
	int i, k;

	memset(ty, 0, sizeof(*ty));
	for (i = 0; i < t->nr_s; i++) {
		struct sample *s = &t->s[i];
		struct record *r;

		if (pick && !pick(s, arg))
			continue;
		ty->samples++;
		if (!s->cookie) {
			ty->zero_cookie++;
			continue;
		}
		r = find_record(t, s->tid, s->cookie);
		if (!r) {
			if (excuse && excuse(s, arg)) {
				ty->excused++;
			} else if (last_entry(t, s)) {
				ty->at_stop++;
			} else {
				if (!ty->unjoined++)
					unjoined_example(t, s, ty->unjoined_eg,
							 sizeof(ty->unjoined_eg));
				ty->unjoined_entries += s->first == s->time;
			}
			continue;
		}
		ty->joined++;
		if (s->time < r->first)
			r->first = s->time;
		for (k = 0; k < s->nr; k++) {
			const struct bido_map *bm = rec_find(r, s->addrs[k]);

			if (r->flags & PERF_BUILD_ID_OFFSET_F_MM_CHANGED) {
				ty->addrs++;
				ty->mm_changed++;
				continue;
			}
			enum bido_verdict v = bido_check(m, s->addrs[k], bm,
							 true, &why);

			tally_addr(ty, v, s->addrs[k], bm, why);
		}
	}
}

static void tally_print(const char *what, struct tally *ty, struct trace *t)
{
	ksft_print_msg(
		"%s: %llu samples (%llu without cookie, %llu joined, %llu in a last entry, %llu excused, %llu in %llu entries without record), %d records (%d duplicate), %llu lost\n",
		what, (unsigned long long)ty->samples,
		(unsigned long long)ty->zero_cookie,
		(unsigned long long)ty->joined,
		(unsigned long long)ty->at_stop,
		(unsigned long long)ty->excused,
		(unsigned long long)ty->unjoined,
		(unsigned long long)ty->unjoined_entries, t->nr_r,
		t->dup_records, (unsigned long long)t->lost);
	/* Slow perf interrupts (an emulated machine) lower the rate */
	ksft_print_msg("%s: %llu times throttled; perf_event_max_sample_rate now %d\n",
		       what, (unsigned long long)t->throttled,
		       read_int(MAX_RATE));
	ksft_print_msg(
		"%s: %llu user addresses: %llu resolved, %llu unresolved, %llu no code, %llu anonymous, %llu mm-changed, %llu wrong\n",
		what, (unsigned long long)ty->addrs,
		(unsigned long long)ty->resolved,
		(unsigned long long)ty->unresolved,
		(unsigned long long)ty->not_code,
		(unsigned long long)ty->anon,
		(unsigned long long)ty->mm_changed,
		(unsigned long long)ty->wrong);
	if (ty->wrong)
		ksft_print_msg("%s: first wrong address: %s\n", what,
			       ty->first_wrong);
	if (ty->unresolved)
		ksft_print_msg("%s: first unresolved address: %s\n", what,
			       ty->unresolved_eg);
	if (t->bad_records)
		ksft_print_msg("%s: %d bad records, first: %s\n", what,
			       t->bad_records, t->why);
}

/* ---- Workloads ---- */

/* BIDO_RACES_SCALE, at least 1 */
static int scale(void)
{
	const char *s = getenv("BIDO_RACES_SCALE");
	int n = s ? atoi(s) : 1;

	return n > 0 ? n : 1;
}

/* User-mode work with a system call every 256 rounds */
static __attribute__((noipa)) unsigned long with_syscalls(unsigned long n)
{
	unsigned long i, x = 0;

	for (i = 0; i < n / 256; i++) {
		syscall(__NR_getppid);
		x += leaf(256);
	}
	return x;
}

/*
 * Long kernel entries: samples that wait for their record a while.
 * GRND_INSECURE: an emulated guest may not have seeded its CRNG yet, and
 * a sleeping task is not sampled.
 */
#ifndef GRND_INSECURE
#define GRND_INSECURE	0x0004
#endif

static __attribute__((noipa)) unsigned long long_syscall(void)
{
	static __thread char buf[1 << 16];

	return syscall(__NR_getrandom, buf, sizeof(buf), GRND_INSECURE) +
	       leaf(2000);
}

/* Burn @secs of this thread's CPU time, system calls included */
static void burn(double secs)
{
	double until = cpu_seconds() + secs;

	while (cpu_seconds() < until)
		bido_sink += with_syscalls(4000);
}

static int copy_file(const char *from, const char *to, mode_t mode)
{
	int in = open(from, O_RDONLY | O_CLOEXEC), out, ret = 0;
	char buf[65536];
	ssize_t n;

	if (in < 0)
		return -errno;
	out = open(to, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0700);
	if (out < 0) {
		ret = -errno;
		close(in);
		return ret;
	}
	while ((n = read(in, buf, sizeof(buf))) > 0)
		if (write(out, buf, n) != n)
			ret = -EIO;
	if (n < 0 || fchmod(out, mode))
		ret = -errno;
	close(in);
	close(out);
	return ret;
}

/* Skip on a kernel without the feature; true when the test must stop */
static bool bido_missing(struct __test_metadata *_metadata)
{
	struct perf_event_attr attr;

	bido_attr(&attr, 100000);
	return bido_skip_missing(_metadata, &attr);
}

static int count_tids(struct trace *t)
{
	int i, n = 0;

	/* Sorted by tid after trace_index() */
	for (i = 0; i < t->nr_s; i++)
		n += !i || t->s[i].tid != t->s[i - 1].tid;
	return n;
}

/* ---- Lifecycle: threads and processes that exit under inherit ---- */

/* What the sampled workloads did, shared with the test process */
struct work_count {
	uint64_t rounds, threads, groups, forks, failures;
};

static struct work_count *shared_count(void)
{
	struct work_count *c = mmap(NULL, sizeof(*c), PROT_READ | PROT_WRITE,
				    MAP_SHARED | MAP_ANONYMOUS, -1, 0);

	if (c == MAP_FAILED)
		return NULL;
	memset(c, 0, sizeof(*c));
	return c;
}

static void *exiting_thread(void *arg)
{
	burn(0.002);
	/* The last entry is this system call: its record comes from do_exit() */
	pthread_exit(NULL);
}

static void *spinning_thread(void *arg)
{
	for (;;)
		bido_sink += with_syscalls(2000);
	return NULL;
}

/*
 * Threads that pthread_exit() and processes that exit_group() while
 * other threads of theirs run, which then die of the group exit.
 */
static int thread_exit_work(struct work_count *c)
{
	int round, k, status;

	for (round = 0; round < 15 * scale(); round++) {
		pthread_t th[3];
		pid_t pid;

		for (k = 0; k < 3; k++)
			if (pthread_create(&th[k], NULL, exiting_thread, NULL))
				return 1;
		for (k = 0; k < 3; k++)
			pthread_join(th[k], NULL);
		c->threads += 3;

		pid = fork();
		if (pid < 0)
			return 1;
		if (!pid) {
			for (k = 0; k < 2; k++)
				if (pthread_create(&th[k], NULL, spinning_thread,
						   NULL))
					_exit(1);
			burn(0.003);
			syscall(__NR_exit_group, 0);
		}
		if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) ||
		    WEXITSTATUS(status))
			c->failures++;
		c->groups++;
		c->rounds++;
	}
	return 0;
}

/* Hundreds of short children, some with a child of their own */
static int storm_work(struct work_count *c)
{
	int i, status, running = 0;

	for (i = 0; i < 160 * scale(); i++) {
		pid_t pid;

		for (; running >= 6; running--) {
			if (wait(&status) < 0)
				return 1;
			c->failures += !WIFEXITED(status) || WEXITSTATUS(status);
		}
		pid = fork();
		if (pid < 0)
			return 1;
		if (!pid) {
			burn(0.001);
			if (i % 4 == 0) {
				pid = fork();
				if (!pid) {
					burn(0.0005);
					_exit(0);
				}
				if (pid < 0 || waitpid(pid, &status, 0) != pid ||
				    !WIFEXITED(status) || WEXITSTATUS(status))
					_exit(1);
			}
			_exit(0);
		}
		running++;
		c->forks += 1 + (i % 4 == 0);
		c->rounds++;
	}
	for (; running; running--) {
		if (wait(&status) < 0)
			return 1;
		c->failures += !WIFEXITED(status) || WEXITSTATUS(status);
	}
	return 0;
}

/*
 * Run @work in a child sampled by per-CPU events with inherit=1, each
 * also receiving the records (as perf record does), and check: every
 * record well formed and never twice, every sample with a cookie joined
 * with its record (the work of an exiting task runs in do_exit() while
 * its events still exist) or accounted lost, every address right.
 */
static void *just_exit(void *arg)
{
	pthread_exit(NULL);
}

/*
 * The first pthread_exit() of a process loads libgcc_s for the unwinding:
 * make it happen here, so that the truth read from our maps has it too.
 */
static int load_unwinder(void)
{
	pthread_t th;

	if (pthread_create(&th, NULL, just_exit, NULL))
		return -1;
	return pthread_join(th, NULL);
}

static void run_inherited(struct __test_metadata *_metadata, const char *what,
			  int (*work)(struct work_count *c))
{
	int nr_cpus = sysconf(_SC_NPROCESSORS_ONLN), go, status, i;
	struct perf_event_attr attr;
	struct work_count *c = shared_count();
	struct trace t = { .check_ids = true };
	struct tally ty;
	struct ring *rb;
	struct maps m;
	pid_t child;

	ASSERT_NE(NULL, c);
	ASSERT_EQ(0, load_unwinder());
	child = fork_held(&go);
	ASSERT_LE(0, child);
	if (!child)
		_exit(work(c));

	bido_attr(&attr, 1000000);
	attr.inherit = 1;
	rb = calloc(nr_cpus, sizeof(*rb));
	for (i = 0; i < nr_cpus; i++)
		ASSERT_EQ(0, ring_open(&rb[i], &attr, child, i, RING_PAGES));
	status = trace_child(rb, nr_cpus, &t, go, child, 10000);
	ASSERT_TRUE(WIFEXITED(status));
	EXPECT_EQ(0, WEXITSTATUS(status));
	trace_index(&t);

	/* Forked without exec: our file mappings are theirs */
	maps_read(&m, "/proc/self/maps");
	join(&t, &m, &ty, NULL, NULL, NULL);
	ksft_print_msg(
		"%s: %llu rounds, %llu threads exited, %llu groups exited, %llu processes forked, %llu failed; %d tasks sampled\n",
		what, (unsigned long long)c->rounds,
		(unsigned long long)c->threads,
		(unsigned long long)c->groups,
		(unsigned long long)c->forks,
		(unsigned long long)c->failures, count_tids(&t));
	tally_print(what, &ty, &t);

	EXPECT_EQ(0, c->failures);
	EXPECT_EQ(0, t.bad_records);
	EXPECT_EQ(0, t.dup_records);
	EXPECT_EQ(0, ty.wrong);
	/* Nothing of the workload runs after the DISABLE: no last entry */
	EXPECT_EQ(0, ty.at_stop);
	EXPECT_LE(ty.unjoined_entries, t.lost) TH_LOG("%s", ty.unjoined_eg);
	EXPECT_LT(100, ty.joined);
	EXPECT_LT(20, count_tids(&t));

	free(m.v);
	trace_free(&t);
	for (i = 0; i < nr_cpus; i++)
		ring_close(&rb[i]);
	free(rb);
	munmap(c, sizeof(*c));
}

TEST(thread_exit)
{
	if (bido_missing(_metadata))
		return;
	run_inherited(_metadata, "thread_exit", thread_exit_work);
}

TEST(inherit_storm)
{
	if (bido_missing(_metadata))
		return;
	run_inherited(_metadata, "inherit_storm", storm_work);
}

/* ---- Two consumers of one task; the highest sampling rate ---- */

static void *burning_thread(void *arg)
{
	burn(*(double *)arg);
	return NULL;
}

/* Eight threads burning CPU in user code and system calls at once */
static int many_threads_work(struct work_count *c)
{
	double secs = 0.25 * scale();
	pthread_t th[8];
	int k;

	for (k = 0; k < 8; k++)
		if (pthread_create(&th[k], NULL, burning_thread, &secs))
			return 1;
	burn(secs);
	for (k = 0; k < 8; k++)
		pthread_join(th[k], NULL);
	c->threads += 8;
	c->rounds++;
	return 0;
}

/* Cookies that two records of @t give to different threads */
static int cookies_shared_by_tids(struct trace *t, int nr_sess, int *common)
{
	struct { uint64_t cookie; uint32_t tid, sess; } *v;
	int n = 0, i, s, bad = 0;

	for (s = 0; s < nr_sess; s++)
		n += t[s].nr_r;
	v = calloc(n + 1, sizeof(*v));
	n = 0;
	for (s = 0; s < nr_sess; s++)
		for (i = 0; i < t[s].nr_r; i++) {
			v[n].cookie = t[s].r[i].cookie;
			v[n].tid = t[s].r[i].tid;
			v[n++].sess = s;
		}
	/* Few enough for an insertion sort by cookie */
	for (i = 1; i < n; i++) {
		int j = i;

		while (j && v[j - 1].cookie > v[j].cookie) {
			typeof(*v) x = v[j];

			v[j] = v[j - 1];
			v[--j] = x;
		}
	}
	*common = 0;
	for (i = 1; i < n; i++) {
		if (v[i].cookie != v[i - 1].cookie)
			continue;
		bad += v[i].tid != v[i - 1].tid;
		*common += v[i].sess != v[i - 1].sess;
	}
	free(v);
	return bad;
}

/*
 * Scenario 17, two consumers of one task: two sessions sample the same
 * eight threads at once.  A cookie names one kernel entry of one thread,
 * whichever session sampled it; each session's buffers get every record
 * their samples name, none twice, and every address is right.
 *
 * Scenario 18, the highest rate: task-clock or cpu-clock with a period of
 * 1 (hrtimer events run at their 10 us floor) on the same threads.  An
 * emulated CPU does not reach the default limit of 100,000 samples a
 * second, so the test sets kernel.perf_event_max_sample_rate to @max_rate
 * (1000, then 100 if that throttled nothing) for its run: the kernel must
 * throttle the events every tick and let them go at the next.  The work
 * finishes (no livelock, no RCU stall: a kernel log with a stall fails
 * the run), and the records are as exact as at any rate.  The limit is
 * put back afterwards, also when the kernel lowered it under load.
 *
 * Each session is its own per-CPU events with inherit=1 on the child,
 * reading its own buffers, as independent perf record sessions would.
 */
static void run_sessions(struct __test_metadata *_metadata, const char *what,
			 const struct perf_event_attr *base, int nr_sess,
			 int max_rate, uint64_t *throttled)
{
	int nr_cpus = sysconf(_SC_NPROCESSORS_ONLN), go, status, i, s;
	int rate = read_int(MAX_RATE);
	struct work_count *c = shared_count();
	struct trace t[2] = {};
	struct tally ty[2];
	struct ring *rb;
	struct maps m;
	int common = 0;
	pid_t child;

	ASSERT_NE(NULL, c);
	ASSERT_GE(2, nr_sess);
	ASSERT_NE(INT_MIN, rate);
	if (max_rate)
		ASSERT_EQ(0, write_int(MAX_RATE, max_rate));
	child = fork_held(&go);
	ASSERT_LE(0, child);
	if (!child)
		_exit(many_threads_work(c));

	rb = calloc(nr_cpus * nr_sess, sizeof(*rb));
	for (s = 0; s < nr_sess; s++) {
		struct perf_event_attr attr = *base;

		attr.inherit = 1;
		t[s].check_ids = true;
		for (i = 0; i < nr_cpus; i++)
			ASSERT_EQ(0, ring_open(&rb[s * nr_cpus + i], &attr,
					       child, i, RING_PAGES));
	}
	status = trace_sessions(rb, nr_cpus * nr_sess, t, nr_sess, go, child,
				10000);
	ASSERT_TRUE(WIFEXITED(status));
	EXPECT_EQ(0, WEXITSTATUS(status));

	maps_read(&m, "/proc/self/maps");
	for (s = 0; s < nr_sess; s++) {
		char name[64];

		trace_index(&t[s]);
		join(&t[s], &m, &ty[s], NULL, NULL, NULL);
		snprintf(name, sizeof(name), "%s, session %d", what, s + 1);
		ksft_print_msg("%s: %d tasks sampled\n", name,
			       count_tids(&t[s]));
		tally_print(name, &ty[s], &t[s]);
		EXPECT_EQ(0, t[s].bad_records) TH_LOG("%s", t[s].why);
		EXPECT_EQ(0, t[s].dup_records);
		EXPECT_EQ(0, ty[s].wrong) TH_LOG("%s", ty[s].first_wrong);
		EXPECT_EQ(0, ty[s].at_stop);
		EXPECT_LE(ty[s].unjoined_entries, t[s].lost)
			TH_LOG("%s", ty[s].unjoined_eg);
		EXPECT_LT(100, ty[s].joined);
		EXPECT_LE(9, count_tids(&t[s]));
		*throttled += t[s].throttled;
	}
	EXPECT_EQ(0, cookies_shared_by_tids(t, nr_sess, &common));
	if (nr_sess > 1)
		ksft_print_msg("%s: %d cookies in the records of both sessions\n",
			       what, common);
	EXPECT_EQ(0, c->failures);

	i = read_int(MAX_RATE);
	if (i != rate || max_rate) {
		ksft_print_msg("%s: perf_event_max_sample_rate %d, put back to %d\n",
			       what, i, rate);
		EXPECT_EQ(0, write_int(MAX_RATE, rate));
	}

	free(m.v);
	for (s = 0; s < nr_sess; s++)
		trace_free(&t[s]);
	for (i = 0; i < nr_cpus * nr_sess; i++)
		ring_close(&rb[i]);
	free(rb);
	munmap(c, sizeof(*c));
}

TEST(two_consumers)
{
	struct perf_event_attr attr;
	uint64_t throttled = 0;

	if (bido_missing(_metadata))
		return;
	bido_attr(&attr, 1000000);
	run_sessions(_metadata, "two_consumers", &attr, 2, 0, &throttled);
}

/*
 * Scenario 19, two sessions of two processes on one task: a per-CPU
 * session (a daemon's, opened by another process) and a per-task session
 * (perf record -p) sample the same threads at once.  Records go to the
 * session whose samples name them: each session resolves all of its
 * samples from its own buffers, and holds no record that none of its own
 * samples names, but for records whose samples were lost.  Variants: with
 * the user callchain in the sample (records are reused, which must stay
 * within the session that got them) and with deferred callchains (both
 * record types are routed; a record may be SAME_MAPS, naming the last
 * record of its task that reached the same sessions: the parser checks
 * that it names the previous record of its tid in this session's buffers).
 *
 * Variant three: a second per-CPU session (another daemon) samples the
 * same threads as well.  The kernel names two sessions per entry; the
 * records of an entry that all three sampled go to every receiver, so
 * each session still resolves all of its samples, and since all three
 * sampled that entry, none holds a record that none of its samples names.
 */
struct named {
	uint32_t tid;
	uint64_t cookie;
};

static int cmp_named(const void *a, const void *b)
{
	const struct named *x = a, *y = b;

	if (x->tid != y->tid)
		return x->tid < y->tid ? -1 : 1;
	return x->cookie < y->cookie ? -1 : x->cookie > y->cookie;
}

/* The cookies @t's samples name, sorted; @n gets how many */
static struct named *named_cookies(const struct trace *t, int *n)
{
	struct named *v = calloc(t->nr_s + 1, sizeof(*v));
	int i;

	*n = 0;
	for (i = 0; i < t->nr_s; i++) {
		uint64_t c = t->s[i].cookie ?: t->s[i].defer_cookie;

		if (c)
			v[(*n)++] = (struct named){ t->s[i].tid, c };
	}
	qsort(v, *n, sizeof(*v), cmp_named);
	return v;
}

/* Records (both types) of @t that none of its samples names */
static int unnamed_records(const struct trace *t)
{
	int n, i, bad = 0;
	struct named *v = named_cookies(t, &n), key;

	for (i = 0; i < t->nr_r; i++) {
		key = (struct named){ t->r[i].tid, t->r[i].cookie };
		bad += !bsearch(&key, v, n, sizeof(*v), cmp_named);
	}
	for (i = 0; i < t->nr_d; i++) {
		key = (struct named){ t->d[i].tid, t->d[i].cookie };
		bad += !bsearch(&key, v, n, sizeof(*v), cmp_named);
	}
	free(v);
	return bad;
}

/* Samples of the sampled process and its threads only */
static bool of_pid(const struct sample *s, void *arg)
{
	return s->pid == *(pid_t *)arg;
}

FIXTURE(two_sessions) {
};

FIXTURE_VARIANT(two_sessions) {
	bool deferred;
	int nr_sess;
};

FIXTURE_VARIANT_ADD(two_sessions, reuse) {
	.deferred = false,
	.nr_sess = 2,
};

FIXTURE_VARIANT_ADD(two_sessions, deferred) {
	.deferred = true,
	.nr_sess = 2,
};

FIXTURE_VARIANT_ADD(two_sessions, three) {
	.deferred = true,
	.nr_sess = 3,
};

FIXTURE_SETUP(two_sessions)
{
}

FIXTURE_TEARDOWN(two_sessions)
{
}

TEST_F(two_sessions, run)
{
	static const char *const name[3] = {
		"per-CPU session", "per-task session", "second per-CPU session"
	};
	int nr_cpus = sysconf(_SC_NPROCESSORS_ONLN), go, status, i, s, dup;
	int nr_sess = variant->nr_sess;
	struct work_count *c = shared_count();
	struct perf_event_attr attr;
	struct opener other[2];
	struct trace t[3] = {};
	struct tally ty[3];
	uint64_t child_recs[3] = {};
	struct ring *rb;
	struct maps m;
	pid_t child;

	if (bido_missing(_metadata))
		return;
	ASSERT_NE(NULL, c);
	bido_attr(&attr, 1000000);
	attr.defer_callchain = variant->deferred;
	ASSERT_EQ(0, opener_start(&other[0]));
	if (nr_sess > 2)
		ASSERT_EQ(0, opener_start(&other[1]));
	child = fork_held(&go);
	ASSERT_LE(0, child);
	if (!child)
		_exit(many_threads_work(c));

	rb = calloc(nr_sess * nr_cpus, sizeof(*rb));
	for (i = 0; i < nr_cpus; i++) {
		struct perf_event_attr a = attr;

		ASSERT_EQ(0, opener_ring(&other[0], &rb[i], &a, -1, i,
					 RING_PAGES));
		if (nr_sess > 2)
			ASSERT_EQ(0, opener_ring(&other[1], &rb[2 * nr_cpus + i],
						 &a, -1, i, RING_PAGES));
		a.inherit = 1;
		ASSERT_EQ(0, ring_open(&rb[nr_cpus + i], &a, child, i,
				       RING_PAGES));
	}
	for (s = 0; s < nr_sess; s++)
		t[s].check_ids = true;
	status = trace_sessions(rb, nr_sess * nr_cpus, t, nr_sess, go, child,
				10000);
	ASSERT_TRUE(WIFEXITED(status));
	EXPECT_EQ(0, WEXITSTATUS(status));

	maps_read(&m, "/proc/self/maps");
	for (s = 0; s < nr_sess; s++) {
		int unnamed;

		trace_index(&t[s]);
		if (variant->deferred)
			trace_merge_deferred(&t[s], &dup);
		join(&t[s], &m, &ty[s], of_pid, NULL, &child);
		for (i = 0; i < t[s].nr_r; i++)
			child_recs[s] += t[s].r[i].pid == (uint32_t)child;
		unnamed = unnamed_records(&t[s]);
		tally_print(name[s], &ty[s], &t[s]);
		ksft_print_msg(
			"%s: %llu records of the sampled process, %d of them SAME_MAPS (each naming this session's previous record of its tid), %d deferred callchains, %d records named by none of its samples\n",
			name[s], (unsigned long long)child_recs[s],
			t[s].same_maps, t[s].nr_d, unnamed);
		EXPECT_EQ(0, t[s].bad_records) TH_LOG("%s", t[s].why);
		EXPECT_EQ(0, t[s].dup_records);
		EXPECT_EQ(0, ty[s].wrong) TH_LOG("%s", ty[s].first_wrong);
		EXPECT_LE(ty[s].unjoined_entries, t[s].lost)
			TH_LOG("%s", ty[s].unjoined_eg);
		EXPECT_LE((uint64_t)unnamed, t[s].lost);
		EXPECT_LT(100, ty[s].joined);
		EXPECT_LT(0, child_recs[s]);
	}
	EXPECT_EQ(0, c->failures);

	free(m.v);
	for (s = 0; s < nr_sess; s++)
		trace_free(&t[s]);
	for (i = 0; i < nr_sess * nr_cpus; i++)
		ring_close(&rb[i]);
	free(rb);
	/* The second opener holds a copy of the first one's socket */
	if (nr_sess > 2)
		opener_stop(&other[1]);
	opener_stop(&other[0]);
	munmap(c, sizeof(*c));
}

FIXTURE(max_rate) {
};

FIXTURE_VARIANT(max_rate) {
	uint64_t config;
};

FIXTURE_VARIANT_ADD(max_rate, cpu_clock) {
	.config = PERF_COUNT_SW_CPU_CLOCK,
};

FIXTURE_VARIANT_ADD(max_rate, task_clock) {
	.config = PERF_COUNT_SW_TASK_CLOCK,
};

FIXTURE_SETUP(max_rate)
{
}

FIXTURE_TEARDOWN(max_rate)
{
}

/*
 * The limit is per tick: an event is throttled at its
 * DIV_ROUND_UP(limit, HZ)-th sample of one tick, 4 at 1000 a second and
 * HZ=250.  An emulated CPU on a busy host may not take that many
 * samples in a tick; the run is then repeated at 100 a second, at most
 * one sample a tick at any HZ, where each event's first sample of a tick
 * throttles it.
 */
TEST_F(max_rate, run)
{
	static const int limits[] = { 1000, 100 };
	struct perf_event_attr attr;
	uint64_t throttled = 0;
	unsigned int i;

	if (bido_missing(_metadata))
		return;
	bido_attr(&attr, 1);
	attr.config = variant->config;
	for (i = 0; i < ARRAY_SIZE(limits) && !throttled; i++) {
		char what[64];

		snprintf(what, sizeof(what), "max_rate %s, %d samples/s",
			 variant->config == PERF_COUNT_SW_CPU_CLOCK ?
			 "cpu-clock" : "task-clock", limits[i]);
		run_sessions(_metadata, what, &attr, 1, limits[i], &throttled);
	}
	EXPECT_LT(0, throttled)
		TH_LOG("no PERF_RECORD_THROTTLE at a 10 us period and 100 samples/s");
}

/* ---- Lifecycle: a signal delivered on the way out of an entry ---- */

/*
 * Signal delivery rewrites the user registers inside a kernel entry: the
 * user IP becomes the handler's.  get_signal() runs pending task work,
 * the entry's deferred work included, before setup_rt_frame() does that,
 * and a sample taken after it on the way out still gets the entry's
 * cookie.  The record of a cookie must cover the user addresses of every
 * sample that carries it, these too.  The handler lives in a mapping of
 * its own (a library mapped by hand) that the interrupted code never
 * touches: an address there resolves only if the record describes the
 * registers the sample saw.  A thread loops in long system calls while
 * the main thread sends it signals.
 */
struct signalled {
	pid_t tid;
	int done;
	uint64_t calls;
};

static void *signalled_thread(void *arg)
{
	struct signalled *sg = arg;
	double until;

	__atomic_store_n(&sg->tid, gettid_(), __ATOMIC_RELEASE);
	while (!__atomic_load_n(&sg->done, __ATOMIC_ACQUIRE))
		sched_yield();
	for (until = cpu_seconds() + 1.0; cpu_seconds() < until; sg->calls++)
		bido_sink += long_syscall();
	__atomic_store_n(&sg->done, 2, __ATOMIC_RELEASE);
	return NULL;
}

TEST(signal_entry)
{
	uint64_t in_handler = 0, handler_unresolved = 0, signals = 0;
	long page = sysconf(_SC_PAGESIZE);
	struct sigaction sa = {}, old;
	struct perf_event_attr attr;
	struct signalled sg = {};
	char path[PATH_MAX], eg[160] = "";
	uint64_t off, pgoff;
	struct trace t = { .check_ids = true };
	struct tally ty;
	struct ring rb;
	struct maps m;
	pthread_t th;
	char *base;
	int fd, i, k;

	if (bido_missing(_metadata))
		return;
	/* bido_spin(unsigned long) as the handler: it runs sig rounds */
	snprintf(path, sizeof(path), "%s/libbido_dl.so", self_dir());
	fd = open(path, O_RDONLY | O_CLOEXEC);
	ASSERT_LE(0, fd) TH_LOG("%s: %s", path, strerror(errno));
	off = elf_sym_offset(fd, "bido_spin");
	ASSERT_NE(0, off);
	pgoff = off & ~(uint64_t)(page - 1);
	base = mmap(NULL, 2 * page, PROT_READ | PROT_EXEC, MAP_PRIVATE, fd,
		    pgoff);
	close(fd);
	ASSERT_NE(MAP_FAILED, base);
	sa.sa_handler = (void (*)(int))(base + (off - pgoff));
	sa.sa_flags = SA_RESTART;
	ASSERT_EQ(0, sigaction(SIGUSR1, &sa, &old));

	ASSERT_EQ(0, pthread_create(&th, NULL, signalled_thread, &sg));
	while (!__atomic_load_n(&sg.tid, __ATOMIC_ACQUIRE))
		sched_yield();
	bido_attr(&attr, 100000);
	ASSERT_EQ(0, ring_open(&rb, &attr, sg.tid, -1, RING_PAGES));
	ASSERT_EQ(0, ioctl(rb.fd, PERF_EVENT_IOC_ENABLE, 0));
	__atomic_store_n(&sg.done, 1, __ATOMIC_RELEASE);
	while (__atomic_load_n(&sg.done, __ATOMIC_ACQUIRE) != 2) {
		signals += !syscall(__NR_tgkill, getpid(), sg.tid, SIGUSR1);
		ring_drain(&rb, &t);
		sleep_us(1000);
	}
	pthread_join(th, NULL);
	ioctl(rb.fd, PERF_EVENT_IOC_DISABLE, 0);
	ring_drain(&rb, &t);
	sigaction(SIGUSR1, &old, NULL);
	trace_index(&t);

	maps_read(&m, "/proc/self/maps");
	join(&t, &m, &ty, NULL, NULL, NULL);
	for (i = 0; i < t.nr_s; i++) {
		struct sample *s = &t.s[i];
		struct record *r = s->cookie ? find_record(&t, s->tid,
							   s->cookie) : NULL;

		for (k = 0; r && k < s->nr; k++) {
			uint64_t a = s->addrs[k];

			if (a < (uintptr_t)base || a >= (uintptr_t)base + 2 * page)
				continue;
			in_handler++;
			if (rec_find(r, a) || handler_unresolved++)
				continue;
			snprintf(eg, sizeof(eg),
				 "%#llx (handler %+lld), entry %d of %d of a %s-mode sample; its record has %u maps",
				 (unsigned long long)a,
				 (long long)(a - (uintptr_t)sa.sa_handler), k,
				 s->nr, s->kernel ? "kernel" : "user", r->nr);
		}
	}
	tally_print("signal_entry", &ty, &t);
	ksft_print_msg(
		"signal_entry: %llu system calls, %llu signals sent; %llu addresses in the handler, %llu of them not in the record of their cookie%s%s\n",
		(unsigned long long)sg.calls,
		(unsigned long long)signals,
		(unsigned long long)in_handler,
		(unsigned long long)handler_unresolved,
		eg[0] ? ", first: " : "", eg);

	EXPECT_EQ(0, t.bad_records);
	EXPECT_EQ(0, t.dup_records);
	EXPECT_EQ(0, ty.wrong);
	EXPECT_LE(ty.unjoined_entries, t.lost) TH_LOG("%s", ty.unjoined_eg);
	EXPECT_LT(0, in_handler);
	/*
	 * Every address of a sample is in the record of its cookie: the
	 * handler's, and the IP the entry left user space at where a signal
	 * frame or rt_sigreturn() rewrote the registers before the record
	 * (before the record kept that IP, 0.2% to 0.8% of the addresses of
	 * a run were not)
	 */
	EXPECT_EQ(0, handler_unresolved);
	EXPECT_EQ(0, ty.unresolved) TH_LOG("first: %s", ty.unresolved_eg);

	free(m.v);
	trace_free(&t);
	ring_close(&rb);
	munmap(base, 2 * page);
}

/* ---- Lifecycle: exec, of a plain, a set-uid and an unreadable program ---- */

/*
 * A child of an unprivileged reader (uid 65534) execs build_id_offset_exec_helper
 * while the reader samples it with a per-task event that also receives
 * the records and the exec's PERF_RECORD_COMM.
 *
 * Plain exec (a readable program, same credentials): the events stay.
 * Addresses taken before the exec must never be looked up in the new
 * mm: a record whose entry saw the exec (a sample of it comes before the
 * exec's COMM, the record after) must say MM_CHANGED and carry no maps;
 * a record that says MM_CHANGED must have an exec in its entry.  The
 * helper execs itself several times so that samples land inside execve().
 *
 * Set-uid exec, and exec of an execute-only (mode 0111) program: what
 * perf does today decides what the reader may see.  begin_new_exec()
 * makes the new mm non-dumpable (creds changed, or BINPRM_FLAGS_
 * ENFORCE_NONDUMP from would_dump() for a file the task cannot read) and
 * then calls perf_event_exit_task(), which detaches the task's context
 * with every per-task event in it, inherited ones included; perf_event_
 * open() on the task afterwards fails the ptrace_may_access() check
 * (EACCES).  PERF_RECORD_BUILD_ID_OFFSET goes only to the defer_output
 * events of the task's own context and to per-CPU side-band events, and
 * a per-CPU event already needs CPU-wide permission (perf_event_paranoid
 * <= 0 or CAP_PERFMON), under which MMAP2 records expose the same
 * build-IDs.  So the right result, and what this checks, is: no sample
 * and no record of the new program reaches the reader (no address in
 * the helper's range, no map with its build-ID; the kernel reads the
 * build-ID of an execute-only file, so a leak would show it), and
 * re-opening an event on the task fails with EACCES.  The record of the
 * execve() entry itself has no receiver left (its samples are in the
 * task's last entry); if one reached the reader it would have to be
 * MM_CHANGED without maps, which parse_record() checks for every record.
 */
enum exec_kind { EXEC_PLAIN, EXEC_SETUID, EXEC_XONLY };

struct exec_result {
	char err[128];		/* set-up failure in the reader */
	int status;		/* the child's wait status */
	int reopen_errno;	/* -1: not tried */
	int execs;		/* exec COMM records of the child */
	int bad_records, dup_records;
	uint64_t lost, records, mm_changed, missed_mm_changed;
	uint64_t spurious_mm_changed, helper_samples, helper_maps;
	uint64_t helper_resolved, helper_wrong, pre_exec_samples;
	struct tally ty;	/* samples taken before the first exec */
	char why[128], helper_why[160];
};

FIXTURE(exec) {
	char dir[64], prog[96];
	uint8_t bid[MAX_BUILD_ID];
	int bid_size;
	/* The helper's PT_LOAD segments: [vaddr, vaddr + memsz) at offset */
	struct { uint64_t vaddr, memsz, offset; } seg[8];
	int nr_seg;
};

FIXTURE_VARIANT(exec) {
	enum exec_kind kind;
	const char *name;
	mode_t mode;
};

FIXTURE_VARIANT_ADD(exec, plain) {
	.kind = EXEC_PLAIN, .name = "bido_plain", .mode = 0755,
};

FIXTURE_VARIANT_ADD(exec, setuid) {
	.kind = EXEC_SETUID, .name = "bido_suid", .mode = 04755,
};

FIXTURE_VARIANT_ADD(exec, unreadable) {
	.kind = EXEC_XONLY, .name = "bido_xonly", .mode = 0111,
};

FIXTURE_SETUP(exec)
{
	char src[PATH_MAX];
	Elf64_Ehdr eh;
	int fd, i;

	self->dir[0] = 0;
	if (geteuid())
		SKIP(return, "needs root to run a program as another user");
	snprintf(src, sizeof(src), "%s/build_id_offset_exec_helper", self_dir());
	fd = open(src, O_RDONLY | O_CLOEXEC);
	ASSERT_LE(0, fd) TH_LOG("%s: %s", src, strerror(errno));
	self->bid_size = elf_build_id(fd, self->bid, NULL);
	ASSERT_LT(0, self->bid_size);
	ASSERT_EQ(sizeof(eh), pread(fd, &eh, sizeof(eh), 0));
	/* Not position independent: its addresses are its program headers' */
	ASSERT_EQ(ET_EXEC, eh.e_type);
	for (i = 0; i < eh.e_phnum && self->nr_seg < 8; i++) {
		Elf64_Phdr ph;

		ASSERT_EQ(sizeof(ph), pread(fd, &ph, sizeof(ph),
					    eh.e_phoff + i * sizeof(ph)));
		if (ph.p_type != PT_LOAD)
			continue;
		self->seg[self->nr_seg].vaddr = ph.p_vaddr;
		self->seg[self->nr_seg].memsz = ph.p_memsz;
		self->seg[self->nr_seg].offset = ph.p_offset;
		self->nr_seg++;
	}
	close(fd);
	ASSERT_LT(0, self->nr_seg);

	snprintf(self->dir, sizeof(self->dir), "/tmp/bido_exec_XXXXXX");
	ASSERT_NE(NULL, mkdtemp(self->dir));
	ASSERT_EQ(0, chmod(self->dir, 0755));
	snprintf(self->prog, sizeof(self->prog), "%s/%s", self->dir,
		 variant->name);
	ASSERT_EQ(0, copy_file(src, self->prog, variant->mode));
}

FIXTURE_TEARDOWN(exec)
{
	if (!self->dir[0])
		return;
	unlink(self->prog);
	rmdir(self->dir);
}

/* The helper's segment that holds @a, or NULL */
static bool helper_offset(FIXTURE_DATA(exec) *self, uint64_t a, uint64_t *off)
{
	int i;

	for (i = 0; i < self->nr_seg; i++) {
		if (a >= self->seg[i].vaddr &&
		    a < self->seg[i].vaddr + self->seg[i].memsz) {
			*off = a - self->seg[i].vaddr + self->seg[i].offset;
			return true;
		}
	}
	return false;
}

static bool comm_is(pid_t pid, const char *name)
{
	char path[64], comm[32] = "";
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/comm", pid);
	f = fopen(path, "r");
	if (!f)
		return false;
	if (!fgets(comm, sizeof(comm), f))
		comm[0] = 0;
	fclose(f);
	comm[strcspn(comm, "\n")] = 0;
	return !strncmp(comm, name, 15);
}

/* Was there an exec of @tid in (@from, @to)? */
static bool exec_between(struct trace *t, uint32_t tid, uint64_t from,
			 uint64_t to)
{
	int i;

	for (i = 0; i < t->nr_x; i++)
		if (t->x[i].tid == tid && t->x[i].time > from &&
		    t->x[i].time < to)
			return true;
	return false;
}

static bool before_time(const struct sample *s, void *arg)
{
	return s->time < *(uint64_t *)arg;
}

/* Each record's first: the time of the first sample that names it */
static void records_first(struct trace *t)
{
	int i;

	for (i = 0; i < t->nr_s; i++) {
		struct sample *s = &t->s[i];
		struct record *r = s->cookie ? find_record(t, s->tid,
							   s->cookie) : NULL;

		if (r && s->time < r->first)
			r->first = s->time;
	}
}

/* The reader, as uid 65534: sample the child through its exec, check */
static void exec_reader(FIXTURE_DATA(exec) *self,
			const FIXTURE_VARIANT(exec) *variant,
			struct exec_result *res)
{
	bool plain = variant->kind == EXEC_PLAIN, tried = false;
	uint64_t first_exec = NO_TIME;
	struct perf_event_attr attr;
	struct trace t = { .check_ids = true };
	struct ring rb;
	struct maps m;
	int go, i, k;
	pid_t child;

	res->reopen_errno = -1;
	/*
	 * A user's own process: dumpable again after the change of uid
	 * (which clears it), or the child, which inherits it, could not be
	 * watched at all.
	 */
	if (setresgid(65534, 65534, 65534) || setresuid(65534, 65534, 65534) ||
	    prctl(PR_SET_DUMPABLE, 1)) {
		snprintf(res->err, sizeof(res->err), "setresuid: %s",
			 strerror(errno));
		return;
	}
	child = fork_held(&go);
	if (child < 0) {
		snprintf(res->err, sizeof(res->err), "fork: %s", strerror(errno));
		return;
	}
	if (!child) {
		/* Samples of this program first, then of the helper */
		burn(0.3);
		if (plain)
			execl(self->prog, self->prog, "0.03", "8", (char *)NULL);
		else
			execl(self->prog, self->prog, "0.3", (char *)NULL);
		_exit(127);
	}

	/* Kernel-mode samples too (paranoid 1): those inside execve() */
	bido_attr(&attr, 100000);
	attr.comm = 1;
	attr.comm_exec = 1;
	if (ring_open(&rb, &attr, child, -1, RING_PAGES)) {
		snprintf(res->err, sizeof(res->err), "perf_event_open: %s",
			 strerror(errno));
		kill(child, SIGKILL);
		waitpid(child, NULL, 0);
		return;
	}
	ioctl(rb.fd, PERF_EVENT_IOC_ENABLE, 0);
	if (write(go, "g", 1) != 1)
		kill(child, SIGKILL);
	while (waitpid(child, &res->status, WNOHANG) == 0) {
		ring_drain(&rb, &t);
		/* Once it runs the helper: may we watch it again? */
		if (!plain && !tried && comm_is(child, variant->name)) {
			int fd = perf_open(&attr, child, -1);

			res->reopen_errno = fd < 0 ? errno : 0;
			if (fd >= 0)
				close(fd);
			tried = true;
		}
		sleep_us(2000);
	}
	ioctl(rb.fd, PERF_EVENT_IOC_DISABLE, 0);
	ring_drain(&rb, &t);
	trace_index(&t);

	for (i = 0; i < t.nr_x; i++) {
		res->execs += t.x[i].tid == (uint32_t)child;
		if (t.x[i].tid == (uint32_t)child && t.x[i].time < first_exec)
			first_exec = t.x[i].time;
	}

	/* Before the first exec the child ran this program: our truth */
	maps_read(&m, "/proc/self/maps");
	join(&t, &m, &res->ty, before_time, NULL, &first_exec);
	res->pre_exec_samples = res->ty.samples;

	/* Every sample, and its record: anything of the helper? */
	for (i = 0; i < t.nr_s; i++) {
		struct sample *s = &t.s[i];
		struct record *r = s->cookie ? find_record(&t, s->tid,
							   s->cookie) : NULL;
		bool in_helper = false;

		for (k = 0; k < s->nr; k++) {
			const struct bido_map *bm;
			uint64_t off;

			if (!helper_offset(self, s->addrs[k], &off))
				continue;
			in_helper = true;
			if (!r || (r->flags & PERF_BUILD_ID_OFFSET_F_MM_CHANGED))
				continue;
			bm = rec_find(r, s->addrs[k]);
			if (!bm)
				continue;
			if (bm->build_id_size == self->bid_size &&
			    !memcmp(bm->build_id, self->bid, self->bid_size) &&
			    s->addrs[k] - bm->start + bm->pgoff == off) {
				res->helper_resolved++;
			} else if (!res->helper_wrong++) {
				snprintf(res->helper_why, sizeof(res->helper_why),
					 "%#llx: map %#llx-%#llx pgoff %#llx, bid size %u, offset %#llx wanted",
					 (unsigned long long)s->addrs[k],
					 (unsigned long long)bm->start,
					 (unsigned long long)bm->end,
					 (unsigned long long)bm->pgoff,
					 bm->build_id_size,
					 (unsigned long long)off);
			}
		}
		res->helper_samples += in_helper;
	}

	records_first(&t);
	/* MM_CHANGED exactly when the record's entry saw an exec */
	for (i = 0; i < t.nr_r; i++) {
		struct record *r = &t.r[i];
		uint64_t prev = 0;

		res->records++;
		for (k = 0; k < (int)r->nr; k++)
			res->helper_maps +=
				r->maps[k].build_id_size == self->bid_size &&
				!memcmp(r->maps[k].build_id, self->bid,
					self->bid_size);
		if (r->flags & PERF_BUILD_ID_OFFSET_F_MM_CHANGED) {
			res->mm_changed++;
			/* This entry began after the task's previous record */
			for (k = 0; k < t.nr_r; k++)
				if (t.r[k].tid == r->tid && t.r[k].time < r->time &&
				    t.r[k].time > prev)
					prev = t.r[k].time;
			res->spurious_mm_changed +=
				!exec_between(&t, r->tid, prev, r->time);
		} else if (r->first != NO_TIME &&
			   exec_between(&t, r->tid, r->first, r->time)) {
			res->missed_mm_changed++;
		}
	}
	res->lost = t.lost;
	res->bad_records = t.bad_records;
	res->dup_records = t.dup_records;
	snprintf(res->why, sizeof(res->why), "%s", t.why);
	free(m.v);
	trace_free(&t);
	ring_close(&rb);
}

TEST_F(exec, run)
{
	enum exec_kind kind = variant->kind;
	int paranoid = read_int("/proc/sys/kernel/perf_event_paranoid");
	int status, code;
	struct exec_result *res;
	pid_t reader;

	if (bido_missing(_metadata))
		return;
	ASSERT_NE(INT_MIN, paranoid);
	ASSERT_EQ(0, write_paranoid(1));
	res = mmap(NULL, sizeof(*res), PROT_READ | PROT_WRITE,
		   MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, res);
	memset(res, 0, sizeof(*res));
	reader = fork();
	ASSERT_LE(0, reader);
	if (!reader) {
		exec_reader(self, variant, res);
		_exit(0);
	}
	ASSERT_EQ(reader, waitpid(reader, &status, 0));
	ASSERT_EQ(0, write_paranoid(paranoid));
	ASSERT_TRUE(WIFEXITED(status));
	ASSERT_EQ(0, res->err[0]) TH_LOG("reader: %s", res->err);

	tally_print(variant->name, &res->ty, &(struct trace){
		.nr_r = res->records, .lost = res->lost,
		.dup_records = res->dup_records,
		.bad_records = res->bad_records });
	if (res->bad_records)
		ksft_print_msg("%s: first bad record: %s\n", variant->name,
			       res->why);
	ksft_print_msg(
		"%s: %d execs seen; %llu samples before the first; %llu samples in the helper, %llu of its addresses resolved, %llu wrong; %llu records with its build-ID; %llu MM_CHANGED records, %llu missing, %llu spurious; re-open after exec: %s\n",
		variant->name, res->execs,
		(unsigned long long)res->pre_exec_samples,
		(unsigned long long)res->helper_samples,
		(unsigned long long)res->helper_resolved,
		(unsigned long long)res->helper_wrong,
		(unsigned long long)res->helper_maps,
		(unsigned long long)res->mm_changed,
		(unsigned long long)res->missed_mm_changed,
		(unsigned long long)res->spurious_mm_changed,
		res->reopen_errno < 0 ? "not tried" :
		strerror(res->reopen_errno));
	if (res->helper_wrong)
		ksft_print_msg("%s: first wrong helper address: %s\n",
			       variant->name, res->helper_why);

	ASSERT_TRUE(WIFEXITED(res->status))
		TH_LOG("child status %#x", res->status);
	code = WEXITSTATUS(res->status);
	if (kind == EXEC_SETUID && code == 254)
		SKIP(goto out, "the set-uid bit was not honoured (nosuid /tmp?)");
	/* The helper exits with its euid's low byte; 127: exec failed */
	EXPECT_EQ(kind == EXEC_SETUID ? 0 : 254, code);

	EXPECT_EQ(0, res->bad_records);
	EXPECT_EQ(0, res->dup_records);
	EXPECT_EQ(0, res->lost);
	EXPECT_EQ(0, res->ty.wrong);
	EXPECT_EQ(0, res->ty.unjoined);
	EXPECT_EQ(0, res->missed_mm_changed);
	EXPECT_EQ(0, res->spurious_mm_changed);
	EXPECT_EQ(0, res->helper_wrong);
	EXPECT_LT(20, res->pre_exec_samples);
	if (kind == EXEC_PLAIN) {
		EXPECT_EQ(9, res->execs);
		EXPECT_LT(20, res->helper_samples);
		EXPECT_LT(0, res->helper_resolved);
		/* Samples inside execve() give records of a changed mm */
		EXPECT_LT(0, res->mm_changed);
	} else {
		EXPECT_EQ(0, res->helper_samples);
		EXPECT_EQ(0, res->helper_maps);
		EXPECT_EQ(EACCES, res->reopen_errno);
	}
out:
	munmap(res, sizeof(*res));
}

/* ---- Lifecycle: the last close() while deferred work is pending ---- */

/*
 * Events go away while the sampled task is inside a kernel entry whose
 * samples asked for a record: the last reference dropped by close() or
 * munmap() in the sampled thread itself (the final fput() runs as task
 * work on the same way out to user space as the deferred work), by the
 * exit of a task that holds the only file descriptor, and by two tasks
 * that each watch the other and go away at the same moment.  Nothing may
 * hang (the harness timeout, the guest's hung task detector), be used
 * after free or report a lock cycle (KASAN, lockdep), and what was read
 * before must be well formed.
 */
struct race_count {
	uint64_t iterations, events, samples, records, lost, bad, failures;
	int barrier[2];
	char why[128], bad_why[128];
};

enum race_kind { RACE_SELF_CLOSE, RACE_EXIT_HOLDING, RACE_MUTUAL };

FIXTURE(close_races) {
	struct race_count *c;
};

FIXTURE_VARIANT(close_races) {
	enum race_kind kind;
};

FIXTURE_VARIANT_ADD(close_races, self_close) {
	.kind = RACE_SELF_CLOSE,
};

FIXTURE_VARIANT_ADD(close_races, exit_holding) {
	.kind = RACE_EXIT_HOLDING,
};

FIXTURE_VARIANT_ADD(close_races, mutual) {
	.kind = RACE_MUTUAL,
};

FIXTURE_SETUP(close_races)
{
	self->c = mmap(NULL, sizeof(*self->c), PROT_READ | PROT_WRITE,
		       MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, self->c);
	memset(self->c, 0, sizeof(*self->c));
}

FIXTURE_TEARDOWN(close_races)
{
	munmap(self->c, sizeof(*self->c));
}

#define RACE_PERIOD	200000	/* several samples per system call */
#define RACE_ROUNDS	24	/* per variant, times BIDO_RACES_SCALE */

static void race_add(uint64_t *p, uint64_t n)
{
	__atomic_add_fetch(p, n, __ATOMIC_RELAXED);
}

static void race_fail(struct race_count *c, const char *why)
{
	if (!__atomic_fetch_add(&c->failures, 1, __ATOMIC_RELAXED))
		snprintf(c->why, sizeof(c->why), "%s: %s", why,
			 strerror(errno));
}

/* Drain @rb and count what it held */
static void race_drain(struct race_count *c, struct ring *rb)
{
	struct trace t = { .check_ids = true };

	ring_drain(rb, &t);
	race_add(&c->samples, t.nr_s);
	race_add(&c->records, t.nr_r);
	race_add(&c->lost, t.lost);
	if (t.bad_records &&
	    !__atomic_fetch_add(&c->bad, t.bad_records, __ATOMIC_RELAXED))
		snprintf(c->bad_why, sizeof(c->bad_why), "%s", t.why);
	trace_free(&t);
}

/*
 * Two parties meet: each adds itself to the counter and waits for the
 * other, a bounded while (a party that died must not hang the other).
 */
static bool race_meet(int *barrier, int parties)
{
	uint64_t until = now_ns() + 20000000000ULL;

	__atomic_add_fetch(barrier, 1, __ATOMIC_ACQ_REL);
	while (__atomic_load_n(barrier, __ATOMIC_ACQUIRE) < parties) {
		if (now_ns() > until)
			return false;
		sched_yield();
	}
	return true;
}

/*
 * A thread opens a sampling event and a receiver on itself, works in
 * system calls, and drops them in one of four orders from inside the
 * work: munmap then close, close then munmap (the munmap drops the last
 * reference), the sampler first with the receiver still taking records,
 * and close without reading anything.
 */
static void *self_close_thread(void *arg)
{
	struct race_count *c = arg;
	struct perf_event_attr attr, hold;
	int i;

	bido_attr(&attr, RACE_PERIOD);
	holder_attr(&hold);
	hold.defer_output = 1;
	for (i = 0; i < 2 * RACE_ROUNDS * scale(); i++) {
		struct ring s, r;

		if (ring_open(&s, &attr, 0, -1, 8)) {
			race_fail(c, "open sampler");
			break;
		}
		if (ring_open(&r, &hold, 0, -1, 8)) {
			race_fail(c, "open receiver");
			ring_close(&s);
			break;
		}
		ioctl(r.fd, PERF_EVENT_IOC_ENABLE, 0);
		ioctl(s.fd, PERF_EVENT_IOC_ENABLE, 0);
		bido_sink += long_syscall();
		bido_sink += with_syscalls(3000);
		if (i % 4 != 3) {
			race_drain(c, &s);
			race_drain(c, &r);
		}
		switch (i % 4) {
		case 0:
			ring_unmap(&s);
			close(s.fd);
			ring_unmap(&r);
			close(r.fd);
			break;
		case 1:
			close(s.fd);
			ring_unmap(&s);
			close(r.fd);
			ring_unmap(&r);
			break;
		case 2:
			ring_close(&s);
			bido_sink += long_syscall();
			race_drain(c, &r);
			ring_close(&r);
			break;
		case 3:
			close(r.fd);
			close(s.fd);
			ring_unmap(&s);
			ring_unmap(&r);
			break;
		}
		race_add(&c->events, 2);
		race_add(&c->iterations, 1);
	}
	return NULL;
}

/*
 * A thread that samples itself in system calls and, after @rounds of
 * them, ends its thread group (0: never), holding its descriptor and
 * mapping.
 */
static void hold_and_work(struct race_count *c, int rounds)
{
	struct perf_event_attr attr;
	struct ring rb;
	int i;

	bido_attr(&attr, RACE_PERIOD);
	if (ring_open(&rb, &attr, 0, -1, 8)) {
		race_fail(c, "open");
		syscall(__NR_exit_group, 1);
	}
	ioctl(rb.fd, PERF_EVENT_IOC_ENABLE, 0);
	race_add(&c->events, 1);
	for (i = 0; !rounds || i < rounds; i++) {
		bido_sink += long_syscall();
		if (i == 1)
			race_drain(c, &rb);
	}
	syscall(__NR_exit_group, 0);
}

struct hold_arg {
	struct race_count *c;
	int rounds;
};

static void *hold_thread(void *arg)
{
	struct hold_arg *h = arg;

	hold_and_work(h->c, h->rounds);
	return NULL;
}

/*
 * A process whose two threads each sample themselves exits while both
 * are in system calls, holding the only file descriptors and mappings:
 * the main thread calls exit_group() in even rounds, the other thread
 * in odd ones.
 */
static void exit_holding_child(struct race_count *c, int round)
{
	struct hold_arg h = { c, round & 1 ? 4 : 0 };
	pthread_t th;

	if (pthread_create(&th, NULL, hold_thread, &h))
		_exit(1);
	hold_and_work(c, round & 1 ? 0 : 4);
}

/*
 * One of two tasks that watch each other: an event on @peer, sampling
 * with defer_output, so that each holds the only descriptor of an event
 * in the other's context.  After meeting, both end at once, by @how:
 * 0 both exit holding everything, 1 both close (munmap first) and exit,
 * 2 the one with @first closes while the other exits, 3 both close the
 * descriptor but keep the mapping until exit.
 */
static void mutual_child(struct race_count *c, int *barrier, pid_t peer,
			 int how, bool first)
{
	struct perf_event_attr attr;
	struct ring rb;
	int i;

	bido_attr(&attr, RACE_PERIOD);
	if (ring_open(&rb, &attr, peer, -1, 8)) {
		race_fail(c, "open on peer");
		race_meet(barrier, 2);
		_exit(1);
	}
	ioctl(rb.fd, PERF_EVENT_IOC_ENABLE, 0);
	race_add(&c->events, 1);
	if (!race_meet(barrier, 2)) {
		race_fail(c, "peer never came");
		_exit(1);
	}
	for (i = 0; i < 2; i++) {
		bido_sink += long_syscall();
		race_drain(c, &rb);
	}
	if (!race_meet(barrier + 1, 2))
		_exit(1);
	switch (how) {
	case 0:
		break;
	case 1:
		ring_close(&rb);
		break;
	case 2:
		if (first)
			ring_close(&rb);
		break;
	case 3:
		close(rb.fd);
		break;
	}
	bido_sink += long_syscall();
	syscall(__NR_exit_group, 0);
}

static void wait_ok(struct race_count *c, pid_t pid)
{
	int status;

	if (waitpid(pid, &status, 0) != pid)
		race_fail(c, "waitpid");
	else if (!WIFEXITED(status) || WEXITSTATUS(status))
		race_fail(c, WIFSIGNALED(status) ? "child killed" :
			  "child failed");
}

TEST_F(close_races, run)
{
	struct race_count *c = self->c;
	static const char * const names[] = {
		"self_close", "exit_holding", "mutual",
	};
	const char *name = names[variant->kind];
	pthread_t th[2];
	int i, k, pipes[2][2];
	pid_t a, b;

	if (bido_missing(_metadata))
		return;
	switch (variant->kind) {
	case RACE_SELF_CLOSE:
		for (k = 0; k < 2; k++)
			ASSERT_EQ(0, pthread_create(&th[k], NULL,
						    self_close_thread, c));
		for (k = 0; k < 2; k++)
			pthread_join(th[k], NULL);
		break;
	case RACE_EXIT_HOLDING:
		for (i = 0; i < RACE_ROUNDS * scale(); i++) {
			a = fork();
			ASSERT_LE(0, a);
			if (!a)
				exit_holding_child(c, i);
			wait_ok(c, a);
			race_add(&c->iterations, 1);
		}
		break;
	case RACE_MUTUAL:
		for (i = 0; i < RACE_ROUNDS * scale(); i++) {
			pid_t peer;

			c->barrier[0] = c->barrier[1] = 0;
			ASSERT_EQ(0, pipe(pipes[0]));
			ASSERT_EQ(0, pipe(pipes[1]));
			a = fork();
			ASSERT_LE(0, a);
			if (!a) {
				if (read(pipes[0][0], &peer, sizeof(peer)) !=
				    sizeof(peer))
					_exit(1);
				mutual_child(c, c->barrier, peer, i % 4, true);
			}
			b = fork();
			ASSERT_LE(0, b);
			if (!b) {
				if (read(pipes[1][0], &peer, sizeof(peer)) !=
				    sizeof(peer))
					_exit(1);
				mutual_child(c, c->barrier, peer, i % 4, false);
			}
			ASSERT_EQ(sizeof(b), write(pipes[0][1], &b, sizeof(b)));
			ASSERT_EQ(sizeof(a), write(pipes[1][1], &a, sizeof(a)));
			wait_ok(c, a);
			wait_ok(c, b);
			for (k = 0; k < 2; k++) {
				close(pipes[k][0]);
				close(pipes[k][1]);
			}
			race_add(&c->iterations, 1);
		}
		break;
	}
	ksft_print_msg(
		"%s: %llu iterations, %llu events dropped with work pending; read before: %llu samples, %llu records, %llu lost, %llu bad; %llu failures%s%s\n",
		name, (unsigned long long)c->iterations,
		(unsigned long long)c->events,
		(unsigned long long)c->samples,
		(unsigned long long)c->records,
		(unsigned long long)c->lost,
		(unsigned long long)c->bad,
		(unsigned long long)c->failures,
		c->failures ? ", first: " : "", c->why);
	if (c->bad)
		ksft_print_msg("%s: first bad record: %s\n", name, c->bad_why);
	EXPECT_EQ(0, c->failures);
	EXPECT_EQ(0, c->bad);
	/* Two threads of 2 * RACE_ROUNDS each, or RACE_ROUNDS processes */
	EXPECT_EQ((variant->kind == RACE_SELF_CLOSE ? 4 : 1) * RACE_ROUNDS *
		  scale(), c->iterations);
	EXPECT_LT(0, c->samples);
	EXPECT_LT(0, c->records);
}

/* ---- Lifecycle: ring buffer operations while work is pending ---- */

/*
 * A thread spends its time in long system calls, so that at almost any
 * moment it has samples whose record waits for the end of the call.
 * Meanwhile the main thread, on the thread's receiving event: unmaps and
 * maps again its ring buffer (munmap), moves its output between two other
 * events' buffers and to none and back (set_output), disables and enables
 * it (disable), or leaves a one-page buffer unread for long stretches
 * (full).  Records must be well formed and never written twice; a sample
 * whose record is missing must have had it dropped while the event had
 * no buffer or was off (its entry, from the previous entry's last sample
 * to the next entry's first, overlaps one of the main thread's windows)
 * or counted lost.
 * The buffers are large: a buffer reports its losses only with its next
 * record, and one that the event has left may never get one (the event's
 * own count, PERF_FORMAT_LOST, has them).
 */
enum pending_kind { PEND_MUNMAP, PEND_SET_OUTPUT, PEND_DISABLE, PEND_FULL };

FIXTURE(pending_ops) {
};

FIXTURE_VARIANT(pending_ops) {
	enum pending_kind kind;
	const char *name;
};

FIXTURE_VARIANT_ADD(pending_ops, munmap) {
	.kind = PEND_MUNMAP, .name = "munmap",
};

FIXTURE_VARIANT_ADD(pending_ops, set_output) {
	.kind = PEND_SET_OUTPUT, .name = "set_output",
};

FIXTURE_VARIANT_ADD(pending_ops, disable) {
	.kind = PEND_DISABLE, .name = "disable",
};

FIXTURE_VARIANT_ADD(pending_ops, full) {
	.kind = PEND_FULL, .name = "full",
};

FIXTURE_SETUP(pending_ops)
{
}

FIXTURE_TEARDOWN(pending_ops)
{
}

struct syscaller {
	pid_t tid;
	int stop;
	uint64_t calls;
};

static void *syscall_thread(void *arg)
{
	struct syscaller *sc = arg;

	__atomic_store_n(&sc->tid, gettid_(), __ATOMIC_RELEASE);
	while (!__atomic_load_n(&sc->stop, __ATOMIC_ACQUIRE)) {
		bido_sink += long_syscall();
		sc->calls++;
	}
	return NULL;
}

/* Times in which records could not reach a buffer */
struct windows {
	uint64_t t0[512], t1[512];
	int nr;
};

static bool in_window(const struct sample *s, void *arg)
{
	const struct windows *w = arg;
	int i;

	for (i = 0; i < w->nr; i++)
		if (s->prev <= w->t1[i] && s->next >= w->t0[i])
			return true;
	return false;
}

TEST_F(pending_ops, run)
{
	struct perf_event_attr attr, hold;
	struct syscaller sc = {};
	struct ring rb, ra, rx;		/* the event's own; two holders */
	uint64_t in_ra = 0, in_rx = 0;
	struct windows *w;
	int64_t elost, lost = 0, full_lost = 0;
	struct trace t = { .check_ids = true };
	struct tally ty;
	struct maps m;
	pthread_t th;
	int i, pages = variant->kind == PEND_FULL ? 1 : 128, fd, unread = 0;
	long target;

	if (bido_missing(_metadata))
		return;
	w = calloc(1, sizeof(*w));
	ASSERT_NE(NULL, w);
	ASSERT_EQ(0, pthread_create(&th, NULL, syscall_thread, &sc));
	while (!__atomic_load_n(&sc.tid, __ATOMIC_ACQUIRE))
		sched_yield();

	bido_attr(&attr, variant->kind == PEND_FULL ? 500000 : 100000);
	memset(&rb, 0, sizeof(rb));
	memset(&ra, 0, sizeof(ra));
	memset(&rx, 0, sizeof(rx));
	if (variant->kind == PEND_SET_OUTPUT) {
		/* The event has no buffer of its own: it writes into others' */
		holder_attr(&hold);
		ASSERT_EQ(0, ring_open(&ra, &hold, sc.tid, -1, pages));
		ASSERT_EQ(0, ring_open(&rx, &hold, sc.tid, -1, pages));
		fd = perf_open(&attr, sc.tid, -1);
		ASSERT_LE(0, fd);
		ASSERT_EQ(0, ioctl(fd, PERF_EVENT_IOC_SET_OUTPUT, ra.fd));
		rb.fd = fd;
	} else {
		ASSERT_EQ(0, ring_open(&rb, &attr, sc.tid, -1, pages));
	}
	ASSERT_EQ(0, ioctl(rb.fd, PERF_EVENT_IOC_ENABLE, 0));

	/*
	 * 120 rounds; the full buffer's go on until it has reported a loss
	 * (a PERF_RECORD_LOST read), however slowly its samples come: 3000
	 * rounds at most.
	 */
	for (i = 0; i < 120 ||
	     (variant->kind == PEND_FULL && !t.lost && i < 3000); i++) {
		uint64_t t0, before;

		/*
		 * A while of sampling.  The full buffer is read rarely: after
		 * 40 rounds at least, and once it has overflowed since it was
		 * last read (the event counts what it lost).  What did not
		 * fit is counted in a PERF_RECORD_LOST written once there is
		 * room again.
		 */
		if (variant->kind == PEND_FULL) {
			lost = event_lost(rb.fd);
			unread++;
		}
		if (variant->kind != PEND_FULL ||
		    (unread >= 40 && lost > full_lost)) {
			full_lost = lost;
			unread = 0;
			ring_drain(&rb, &t);
			before = t.nr_s;
			ring_drain(&ra, &t);
			in_ra += t.nr_s - before;
			before = t.nr_s;
			ring_drain(&rx, &t);
			in_rx += t.nr_s - before;
		}
		sleep_us(3000);

		t0 = now_ns();
		switch (variant->kind) {
		case PEND_MUNMAP:
			ring_drain(&rb, &t);
			t0 = now_ns();
			ring_unmap(&rb);
			sleep_us(500);
			ASSERT_EQ(0, ring_map(&rb, pages));
			break;
		case PEND_SET_OUTPUT:
			/* To the other buffer, back, and to none for a while */
			target = i % 3 == 0 ? rx.fd : i % 3 == 1 ? ra.fd : -1;
			ASSERT_EQ(0, ioctl(rb.fd, PERF_EVENT_IOC_SET_OUTPUT,
					   target));
			if (target != -1)
				continue;
			sleep_us(500);
			ASSERT_EQ(0, ioctl(rb.fd, PERF_EVENT_IOC_SET_OUTPUT,
					   ra.fd));
			break;
		case PEND_DISABLE:
			ASSERT_EQ(0, ioctl(rb.fd, PERF_EVENT_IOC_DISABLE, 0));
			sleep_us(500);
			ASSERT_EQ(0, ioctl(rb.fd, PERF_EVENT_IOC_ENABLE, 0));
			break;
		case PEND_FULL:
			continue;
		}
		w->t0[w->nr] = t0;
		w->t1[w->nr++] = now_ns();
	}

	__atomic_store_n(&sc.stop, 1, __ATOMIC_RELEASE);
	pthread_join(th, NULL);
	ioctl(rb.fd, PERF_EVENT_IOC_DISABLE, 0);
	elost = event_lost(rb.fd);
	ring_drain(&rb, &t);
	ring_drain(&ra, &t);
	ring_drain(&rx, &t);
	trace_index(&t);

	maps_read(&m, "/proc/self/maps");
	join(&t, &m, &ty, NULL, in_window, w);
	tally_print(variant->name, &ty, &t);
	ksft_print_msg(
		"%s: %llu system calls sampled, %d windows without a receiving buffer; samples read through the two holders: %llu, %llu; the event counts %lld lost\n",
		variant->name, (unsigned long long)sc.calls, w->nr,
		(unsigned long long)in_ra, (unsigned long long)in_rx,
		(long long)elost);

	EXPECT_EQ(0, t.bad_records);
	EXPECT_EQ(0, t.dup_records);
	EXPECT_EQ(0, ty.wrong);
	/*
	 * Missing records: dropped with no buffer, or counted lost, in the
	 * buffer or by the event (a buffer reports its losses only with its
	 * next record)
	 */
	EXPECT_LE(0, elost);
	EXPECT_LE(ty.unjoined_entries, t.lost > (uint64_t)elost ? t.lost : elost);
	EXPECT_LT(50, ty.samples);
	/* A full buffer may have had room for no record at all */
	if (variant->kind == PEND_FULL)
		EXPECT_LT(0, t.lost);
	if (variant->kind != PEND_FULL)
		EXPECT_LT(50, ty.joined);
	EXPECT_EQ(variant->kind == PEND_FULL ? 0 :
		  variant->kind == PEND_SET_OUTPUT ? 40 : 120, w->nr);
	if (variant->kind == PEND_SET_OUTPUT) {
		EXPECT_LT(0, in_ra);
		EXPECT_LT(0, in_rx);
	}

	free(m.v);
	trace_free(&t);
	free(w);
	if (variant->kind == PEND_SET_OUTPUT) {
		close(rb.fd);
		ring_close(&ra);
		ring_close(&rx);
	} else {
		ring_close(&rb);
	}
}

/* ---- Address-space churn ---- */

/*
 * A sampled thread runs code in copies of a library mapped into slots of
 * a reserved region, and spins with made-up frames whose return address
 * points into them, while another thread keeps changing the slots: a
 * copy replaced by another one (MAP_FIXED; the code bytes are the same,
 * so the sampled thread runs on across the change), unmapped, replaced
 * by anonymous memory (executable or not), moved to another slot
 * (mremap) or its first page made non-executable and executable again
 * (mprotect, which splits the VMA).  Where it runs into a slot that is
 * gone, not executable or anonymous (zeros) it takes SIGSEGV and carries
 * on elsewhere.  Every copy is its own file with its own build-ID, and
 * the churning thread logs, for each change, the time before and after
 * the system call, the slot and what it holds now, down to which part of
 * it is executable.
 *
 * The kernel looks the address up somewhen between the entry's first
 * sample and the record, and describes only executable mappings.  So a
 * slot address must resolve to a state the slot had during that time in
 * which the address was executable: the right copy's build-ID at the
 * right file offset, anonymous memory, or (while the slot is a hole,
 * which another mapping may take) anything but one of our copies.  Where
 * the slot held only memory that is not executable there, the address
 * must stay unresolved.  A slot whose executable copy stayed all that
 * time must resolve exactly: never unresolved.  Outside the slots (this
 * program, libc, a copy no one touches) every address must resolve
 * exactly against /proc/self/maps.
 */
#define CH_SLOTS	8
#define CH_COPIES	6		/* churned files; one more stays put */
#define CH_SLACK	200000		/* ns: our clock against perf's */
#define CH_MAX_OPS	(1 << 16)
#define CH_MAX_CAND	64

enum ch_kind { CH_FILE, CH_ANON, CH_HOLE };
enum ch_op_kind { OP_REPLACE, OP_UNMAP, OP_ANON, OP_MREMAP, OP_MPROTECT,
		  OP_KINDS };

struct ch_state {
	enum ch_kind kind;
	int copy;
	size_t exec_from;	/* where in the slot code starts (len: none) */
};

struct ch_op {
	uint64_t t0, t1;
	int slot;
	struct ch_state st;
};

struct churn {
	char *region;
	long page;
	size_t stride, len;	/* slot spacing; length mapped in a slot */
	uint64_t pgoff;		/* file offset mapped at a slot's start */
	uint64_t spin_off;	/* bido_spin() from a slot's start */
	int fd[CH_COPIES + 1];
	char path[CH_COPIES + 1][64];
	uint8_t bid[CH_COPIES + 1][MAX_BUILD_ID];
	int bid_size;
	struct ch_state cur[CH_SLOTS];
	bool taken[CH_SLOTS];	/* a hole someone else mapped into */
	bool split[CH_SLOTS];	/* mprotect()ed in part: two VMAs */
	struct ch_op *ops;
	int nr_ops;
	uint64_t nr_kind[OP_KINDS], failed;
	char fail_why[96];
	int go, stop, done;	/* start; stop the churn; the sampled one ended */
	pid_t sampled;
	uint64_t runs, faults, fakes;
	unsigned long (*stable)(unsigned long n);
};

static char *ch_slot(struct churn *ch, int j)
{
	return ch->region + j * ch->stride;
}

static void ch_failed(struct churn *ch, const char *what)
{
	if (!ch->failed++)
		snprintf(ch->fail_why, sizeof(ch->fail_why), "%s: %s", what,
			 strerror(errno));
}

static void ch_log(struct churn *ch, uint64_t t0, uint64_t t1, int slot,
		   enum ch_kind kind, int copy, size_t exec_from)
{
	struct ch_op *op = &ch->ops[ch->nr_ops++];

	op->t0 = t0;
	op->t1 = t1;
	op->slot = slot;
	op->st.kind = kind;
	op->st.copy = copy;
	op->st.exec_from = exec_from;
	ch->cur[slot] = op->st;
	ch->split[slot] = false;
}

/* Put copy @k into slot @j; into a hole only if no one took it */
static int ch_map_file(struct churn *ch, int j, int k)
{
	int flags = MAP_PRIVATE | (ch->cur[j].kind == CH_HOLE ?
				   MAP_FIXED_NOREPLACE : MAP_FIXED);
	uint64_t t0 = now_ns();
	void *p;

	p = mmap(ch_slot(ch, j), ch->len, PROT_READ | PROT_EXEC, flags,
		 ch->fd[k], ch->pgoff);
	if (p == MAP_FAILED && errno == EEXIST) {
		ch->taken[j] = true;
		return 0;
	}
	if (p != ch_slot(ch, j))
		return -1;
	ch_log(ch, t0, now_ns(), j, CH_FILE, k, 0);
	return 0;
}

static void *ch_churner(void *arg)
{
	struct churn *ch = arg;
	unsigned int seed = 2;

	while (!__atomic_load_n(&ch->stop, __ATOMIC_ACQUIRE) &&
	       ch->nr_ops + 2 < CH_MAX_OPS) {
		int j = rand_r(&seed) % CH_SLOTS, op = rand_r(&seed) % 10, m;
		char *base = ch_slot(ch, j);
		uint64_t t0 = now_ns();
		size_t from;
		int prot;

		if (ch->taken[j])
			continue;
		if (op < 4) {
			if (ch_map_file(ch, j, rand_r(&seed) % CH_COPIES))
				ch_failed(ch, "mmap of a copy");
			ch->nr_kind[OP_REPLACE]++;
		} else if (op < 5 && ch->cur[j].kind != CH_HOLE) {
			if (munmap(base, ch->len))
				ch_failed(ch, "munmap");
			else
				ch_log(ch, t0, now_ns(), j, CH_HOLE, -1,
				       ch->len);
			ch->nr_kind[OP_UNMAP]++;
		} else if (op < 6 && ch->cur[j].kind != CH_HOLE) {
			/* Code, as a JIT's (zeros here), or data */
			prot = rand_r(&seed) & 1 ? PROT_READ :
						   PROT_READ | PROT_EXEC;
			if (mmap(base, ch->len, prot, MAP_PRIVATE |
				 MAP_ANONYMOUS | MAP_FIXED, -1, 0) != base)
				ch_failed(ch, "anonymous mmap");
			else
				ch_log(ch, t0, now_ns(), j, CH_ANON, -1,
				       prot & PROT_EXEC ? 0 : ch->len);
			ch->nr_kind[OP_ANON]++;
		} else if (op < 8 && ch->cur[j].kind != CH_HOLE &&
			   !ch->split[j]) {
			/*
			 * Onto a slot of ours only: MREMAP_FIXED unmaps it.
			 * Not from a split slot: mremap() fails on more than
			 * one VMA, and has unmapped the target by then.
			 */
			m = (j + 1 + rand_r(&seed) % (CH_SLOTS - 1)) % CH_SLOTS;
			if (ch->cur[m].kind == CH_HOLE || ch->taken[m])
				continue;
			if (mremap(base, ch->len, ch->len, MREMAP_MAYMOVE |
				   MREMAP_FIXED, ch_slot(ch, m)) == MAP_FAILED) {
				ch_failed(ch, "mremap");
				continue;
			}
			ch_log(ch, t0, now_ns(), m, ch->cur[j].kind,
			       ch->cur[j].copy, ch->cur[j].exec_from);
			ch_log(ch, t0, ch->ops[ch->nr_ops - 1].t1, j, CH_HOLE,
			       -1, ch->len);
			ch->nr_kind[OP_MREMAP]++;
		} else if (op >= 8 && ch->cur[j].kind == CH_FILE) {
			/* The same file at the same offsets, code or not */
			prot = rand_r(&seed) & 1 ? PROT_READ :
						   PROT_READ | PROT_EXEC;
			from = prot & PROT_EXEC ? 0 : ch->page;
			if (mprotect(base, ch->page, prot))
				ch_failed(ch, "mprotect");
			else if (from != ch->cur[j].exec_from)
				ch_log(ch, t0, now_ns(), j, CH_FILE,
				       ch->cur[j].copy, from);
			/* Merged again or not: take it as split */
			ch->split[j] = true;
			ch->nr_kind[OP_MPROTECT]++;
		} else {
			continue;
		}
		/* Under emulation each change holds mmap_lock a long while */
		sleep_us(1000);
	}
	return NULL;
}

#ifdef __x86_64__
/*
 * System calls under a made-up frame: %rbp points at @frame, {0, return
 * address}, so that the user call chain of every sample in them (perf's
 * and the deferred unwinder's) holds that return address.  @frame must
 * be in the caller's frame, above the stack pointer.
 */
static void fake_frame_syscalls(unsigned long n, uintptr_t *frame, void *buf,
				unsigned long len)
{
	uintptr_t saved;

	asm volatile("mov %%rbp, %[saved]\n\t"
		     "mov %[frame], %%rbp\n"
		     "1:\tmov %[nr], %%eax\n\t"
		     "mov %[buf], %%rdi\n\t"
		     "mov %[len], %%rsi\n\t"
		     "mov %[flags], %%edx\n\t"
		     "syscall\n\t"
		     "dec %[n]\n\t"
		     "jnz 1b\n\t"
		     "mov %[saved], %%rbp"
		     : [saved] "=&r" (saved), [n] "+r" (n)
		     : [frame] "r" (frame), [buf] "r" (buf), [len] "r" (len),
		       [nr] "i" (__NR_getrandom), [flags] "i" (GRND_INSECURE)
		     : "rax", "rcx", "rdx", "rsi", "rdi", "r11", "memory", "cc");
}
#endif

static __thread sigjmp_buf *ch_env;

/* A fault of the sampled thread in a slot: carry on elsewhere */
static void ch_fault(int sig, siginfo_t *si, void *uc)
{
	if (ch_env)
		siglongjmp(*ch_env, 1);
	/* Not ours: die of it on the way back */
	signal(sig, SIG_DFL);
}

static void *ch_sampled(void *arg)
{
	struct churn *ch = arg;
	static char buf[16384];
	unsigned int seed = 1;
	double until;
	sigjmp_buf env;

	__atomic_store_n(&ch->sampled, gettid_(), __ATOMIC_RELEASE);
	/* Wait for the event, then work for a while of CPU time */
	while (!__atomic_load_n(&ch->go, __ATOMIC_ACQUIRE))
		sched_yield();
	until = cpu_seconds() + 1.5 * scale();
	while (cpu_seconds() < until) {
		int j = rand_r(&seed) % CH_SLOTS;
		char *spin = ch_slot(ch, j) + ch->spin_off;

		if (rand_r(&seed) & 1) {
			unsigned long (*fn)(unsigned long n) = (void *)spin;

			if (!sigsetjmp(env, 1)) {
				ch_env = &env;
				bido_sink += fn(20000);
				ch->runs++;
			} else {
				ch->faults++;
			}
			ch_env = NULL;
		} else {
#ifdef __x86_64__
			uintptr_t frame[2] = { 0, (uintptr_t)spin + 1 };

			fake_frame_syscalls(2, frame, buf, sizeof(buf));
#endif
			ch->fakes++;
		}
		bido_sink += ch->stable(5000);
	}
	__atomic_store_n(&ch->done, 1, __ATOMIC_RELEASE);
	return NULL;
}

/* The states slot @j had at some time in [@a, @b], at most CH_MAX_CAND */
static int ch_candidates(struct churn *ch, int j, uint64_t a, uint64_t b,
			 struct ch_state *out)
{
	int i, last = -1, n = 0;

	/* Each state holds from its op's start to the next op's end */
	for (i = 0; i < ch->nr_ops; i++) {
		if (ch->ops[i].slot != j)
			continue;
		if (last >= 0 && ch->ops[last].t0 <= b + CH_SLACK &&
		    ch->ops[i].t1 + CH_SLACK >= a && n < CH_MAX_CAND)
			out[n++] = ch->ops[last].st;
		last = i;
		if (ch->ops[i].t0 > b + CH_SLACK)
			return n;
	}
	if (last >= 0 && ch->ops[last].t0 <= b + CH_SLACK && n < CH_MAX_CAND)
		out[n++] = ch->ops[last].st;
	return n;
}

struct ch_tally {
	uint64_t addrs, exact, uncertain, stable_unresolved, unresolved;
	uint64_t not_code, anon, foreign, wrong;
	char first_wrong[200], first_stable_unresolved[200];
};

static void ch_wrong(struct ch_tally *ct, uint64_t a, const char *why,
		     const struct bido_map *bm)
{
	if (ct->wrong++)
		return;
	snprintf(ct->first_wrong, sizeof(ct->first_wrong),
		 "%#llx: %s (map %#llx-%#llx pgoff %#llx flags %#x)",
		 (unsigned long long)a, why,
		 (unsigned long long)(bm ? bm->start : 0),
		 (unsigned long long)(bm ? bm->end : 0),
		 (unsigned long long)(bm ? bm->pgoff : 0), bm ? bm->flags : 0);
}

/* Check the record's map @bm of slot address @a */
static void ch_check(struct churn *ch, struct ch_tally *ct,
		     const struct sample *s, int idx, const struct record *r,
		     const struct bido_map *bm)
{
	uint64_t a = s->addrs[idx];
	int j = (a - (uintptr_t)ch->region) / ch->stride, n, i, k = -1;
	uint64_t base = (uintptr_t)ch_slot(ch, j), off = a - base;
	struct ch_state cand[CH_MAX_CAND];
	bool file_k = false, held_k = false, anon = false, hole = false;
	bool code = false;

	ct->addrs++;
	if (off >= ch->len) {
		/* A guard page: PROT_NONE, never mapped by the churn */
		if (bm)
			ch_wrong(ct, a, "a map of a guard page", bm);
		return;
	}
	n = ch_candidates(ch, j, r->first, r->time, cand);
	if (bm) {
		for (i = 0; i <= CH_COPIES && k < 0; i++)
			if (bm->build_id_size == ch->bid_size &&
			    !memcmp(bm->build_id, ch->bid[i], ch->bid_size))
				k = i;
	}
	/* Only where a state had code at @a may a map describe it */
	for (i = 0; i < n; i++) {
		bool x = off >= cand[i].exec_from;

		held_k |= cand[i].kind == CH_FILE && cand[i].copy == k;
		file_k |= x && cand[i].kind == CH_FILE && cand[i].copy == k;
		anon |= x && cand[i].kind == CH_ANON;
		hole |= cand[i].kind == CH_HOLE;
		code |= x;
	}
	if (!bm) {
		if (n == 1 && code && cand[0].kind == CH_FILE &&
		    !(r->flags & PERF_BUILD_ID_OFFSET_F_TRUNCATED)) {
			if (!ct->stable_unresolved++)
				snprintf(ct->first_stable_unresolved,
					 sizeof(ct->first_stable_unresolved),
					 "%#llx, entry %d of %d of a %s-mode sample at %llu; record from %llu at %llu, %u maps, flags %#x; slot %d held copy %d",
					 (unsigned long long)a,
					 idx, s->nr,
					 s->kernel ? "kernel" : "user",
					 (unsigned long long)s->time,
					 (unsigned long long)r->first,
					 (unsigned long long)r->time, r->nr,
					 r->flags, j, cand[0].copy);
		} else if (!code && !hole) {
			ct->not_code++;
		} else {
			ct->unresolved++;
		}
		return;
	}
	if (bm->start < base || bm->end > base + ch->len)
		ch_wrong(ct, a, "map reaches out of the slot", bm);
	else if (k >= 0 && !file_k)
		ch_wrong(ct, a, held_k ? "a copy the slot held, not as code" :
			 "a copy the slot did not hold then", bm);
	else if (k >= 0 && a - bm->start + bm->pgoff != ch->pgoff + off)
		ch_wrong(ct, a, "file offset differs", bm);
	else if (k < 0 && (bm->flags & PERF_BUILD_ID_OFFSET_MAP_ANON) && !anon && !hole)
		ch_wrong(ct, a, "anonymous, but the slot held no such code",
			 bm);
	else if (k < 0 && !(bm->flags & PERF_BUILD_ID_OFFSET_MAP_ANON) && !hole)
		ch_wrong(ct, a, "a file that is none of ours", bm);
	else if (k >= 0)
		n == 1 ? ct->exact++ : ct->uncertain++;
	else if (bm->flags & PERF_BUILD_ID_OFFSET_MAP_ANON)
		ct->anon++;
	else
		ct->foreign++;
}

static int ch_setup(struct __test_metadata *_metadata, struct churn *ch)
{
	char src[PATH_MAX];
	uint64_t off, at;
	int fd, k, j;
	void *p;

	ch->page = sysconf(_SC_PAGESIZE);
	ch->len = 2 * ch->page;
	ch->stride = 4 * ch->page;
	snprintf(src, sizeof(src), "%s/libbido_dl.so", self_dir());
	fd = open(src, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	off = elf_sym_offset(fd, "bido_spin");
	ch->bid_size = elf_build_id(fd, ch->bid[0], &at);
	close(fd);
	ch->pgoff = off & ~(uint64_t)(ch->page - 1);
	ch->spin_off = off - ch->pgoff;
	/* The note must be apart from the code, which must fit a slot */
	if (!off || !ch->pgoff || !ch->bid_size || ch->spin_off + 64 > ch->len)
		return -ENOENT;

	/* Copies with their own build-ID each: a byte of the note changed */
	for (k = 0; k <= CH_COPIES; k++) {
		uint8_t bid[MAX_BUILD_ID];

		snprintf(ch->path[k], sizeof(ch->path[k]), "/tmp/bido_churn_%d_%d",
			 getpid(), k);
		if (copy_file(src, ch->path[k], 0600))
			return -EIO;
		ch->fd[k] = open(ch->path[k], O_RDWR | O_CLOEXEC);
		if (ch->fd[k] < 0)
			return -errno;
		memcpy(bid, ch->bid[0], ch->bid_size);
		bid[0] ^= 0xa5;
		bid[1] = k;
		if (pwrite(ch->fd[k], bid, ch->bid_size, at) != ch->bid_size ||
		    elf_build_id(ch->fd[k], ch->bid[k], NULL) != ch->bid_size ||
		    memcmp(ch->bid[k], bid, ch->bid_size))
			return -EIO;
	}

	ch->ops = calloc(CH_MAX_OPS, sizeof(*ch->ops));
	if (!ch->ops)
		return -ENOMEM;
	ch->region = mmap(NULL, CH_SLOTS * ch->stride, PROT_NONE, MAP_PRIVATE |
			  MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (ch->region == MAP_FAILED)
		return -errno;
	for (j = 0; j < CH_SLOTS; j++) {
		ch->cur[j].kind = CH_ANON;	/* the reservation */
		if (ch_map_file(ch, j, j % CH_COPIES))
			return -errno;
	}
	p = mmap(NULL, ch->len, PROT_READ | PROT_EXEC, MAP_PRIVATE,
		 ch->fd[CH_COPIES], ch->pgoff);
	if (p == MAP_FAILED)
		return -errno;
	ch->stable = (void *)((char *)p + ch->spin_off);
	return 0;
}

TEST(as_churn)
{
	struct sigaction sa = { .sa_sigaction = ch_fault,
				.sa_flags = SA_SIGINFO | SA_NODEFER };
	struct ch_tally ct = {};
	struct perf_event_attr attr;
	struct churn *ch;
	struct trace t = { .check_ids = true };
	struct tally ty = {};
	pthread_t sampled, churner;
	struct ring rb;
	struct maps m;
	uint64_t until, in_signal = 0;
	const char *why;
	int i, k, err;

#ifndef __x86_64__
	SKIP(return, "the made-up frames are x86-64 code");
#endif
	if (bido_missing(_metadata))
		return;
	ch = calloc(1, sizeof(*ch));
	ASSERT_NE(NULL, ch);
	err = ch_setup(_metadata, ch);
	ASSERT_EQ(0, err) TH_LOG("set-up: %s", strerror(-err));
	ASSERT_EQ(0, sigaction(SIGSEGV, &sa, NULL));
	ASSERT_EQ(0, sigaction(SIGBUS, &sa, NULL));

	ASSERT_EQ(0, pthread_create(&sampled, NULL, ch_sampled, ch));
	while (!__atomic_load_n(&ch->sampled, __ATOMIC_ACQUIRE))
		sched_yield();
	bido_attr(&attr, 200000);
	ASSERT_EQ(0, ring_open(&rb, &attr, ch->sampled, -1, RING_PAGES));
	ASSERT_EQ(0, ioctl(rb.fd, PERF_EVENT_IOC_ENABLE, 0));
	ASSERT_EQ(0, pthread_create(&churner, NULL, ch_churner, ch));
	__atomic_store_n(&ch->go, 1, __ATOMIC_RELEASE);

	/* Until the sampled thread has had its CPU time */
	for (until = now_ns() + 60000000000ULL; now_ns() < until &&
	     !__atomic_load_n(&ch->done, __ATOMIC_ACQUIRE);) {
		ring_drain(&rb, &t);
		sleep_us(10000);
	}
	pthread_join(sampled, NULL);
	__atomic_store_n(&ch->stop, 1, __ATOMIC_RELEASE);
	pthread_join(churner, NULL);
	ioctl(rb.fd, PERF_EVENT_IOC_DISABLE, 0);
	ring_drain(&rb, &t);
	signal(SIGSEGV, SIG_DFL);
	signal(SIGBUS, SIG_DFL);
	trace_index(&t);

	/* Outside the slots nothing changed: the maps now are the truth */
	maps_read(&m, "/proc/self/maps");
	records_first(&t);
	for (i = 0; i < t.nr_s; i++) {
		struct sample *s = &t.s[i];
		struct record *r;

		/*
		 * On the way out to the SIGSEGV handler: the record of the
		 * entry may not cover the handler (signal_entry checks that)
		 */
		if (s->nr && s->addrs[0] == (uintptr_t)ch_fault) {
			in_signal++;
			continue;
		}
		ty.samples++;
		if (!s->cookie) {
			ty.zero_cookie++;
			continue;
		}
		r = find_record(&t, s->tid, s->cookie);
		if (!r) {
			if (last_entry(&t, s))
				ty.at_stop++;
			else
				ty.unjoined++;
			continue;
		}
		ty.joined++;
		if (r->flags & PERF_BUILD_ID_OFFSET_F_MM_CHANGED)
			continue;
		for (k = 0; k < s->nr; k++) {
			uint64_t a = s->addrs[k];
			const struct bido_map *bm = rec_find(r, a);

			if (a >= (uintptr_t)ch->region &&
			    a < (uintptr_t)ch->region + CH_SLOTS * ch->stride) {
				ch_check(ch, &ct, s, k, r, bm);
				continue;
			}
			enum bido_verdict v = bido_check(&m, a, bm, true, &why);

			tally_addr(&ty, v, a, bm, why);
		}
	}
	tally_print("as_churn: outside the slots", &ty, &t);
	ksft_print_msg("as_churn: %llu samples taken in signal delivery, set aside\n",
		       (unsigned long long)in_signal);
	ksft_print_msg(
		"as_churn: %d changes logged (%llu replace, %llu unmap, %llu anon, %llu mremap, %llu mprotect, %llu failed); sampled thread: %llu runs in a slot, %llu faults, %llu made-up frames\n",
		ch->nr_ops, (unsigned long long)ch->nr_kind[OP_REPLACE],
		(unsigned long long)ch->nr_kind[OP_UNMAP],
		(unsigned long long)ch->nr_kind[OP_ANON],
		(unsigned long long)ch->nr_kind[OP_MREMAP],
		(unsigned long long)ch->nr_kind[OP_MPROTECT],
		(unsigned long long)ch->failed,
		(unsigned long long)ch->runs,
		(unsigned long long)ch->faults,
		(unsigned long long)ch->fakes);
	ksft_print_msg(
		"as_churn: %llu slot addresses: %llu exact while the copy stayed, %llu right across a change, %llu anonymous, %llu another mapping in a hole, %llu unresolved in memory that was no code, %llu unresolved across a change, %llu unresolved though the copy stayed, %llu wrong\n",
		(unsigned long long)ct.addrs,
		(unsigned long long)ct.exact,
		(unsigned long long)ct.uncertain,
		(unsigned long long)ct.anon,
		(unsigned long long)ct.foreign,
		(unsigned long long)ct.not_code,
		(unsigned long long)ct.unresolved,
		(unsigned long long)ct.stable_unresolved,
		(unsigned long long)ct.wrong);
	if (ct.wrong)
		ksft_print_msg("as_churn: first wrong slot address: %s\n",
			       ct.first_wrong);
	if (ct.stable_unresolved)
		ksft_print_msg("as_churn: first unresolved slot address whose copy stayed: %s\n",
			       ct.first_stable_unresolved);
	if (ch->failed)
		ksft_print_msg("as_churn: first failed change: %s\n",
			       ch->fail_why);

	EXPECT_EQ(0, t.bad_records);
	EXPECT_EQ(0, t.dup_records);
	EXPECT_EQ(0, t.lost);
	EXPECT_EQ(0, ty.unjoined);
	EXPECT_EQ(0, ty.wrong);
	EXPECT_EQ(0, ct.wrong);
	/* The records keep the IPs of rt_sigreturn() too (see signal_entry) */
	EXPECT_EQ(0, ct.stable_unresolved);
	EXPECT_EQ(0, ch->failed);
	EXPECT_LT(20, ct.exact);
	EXPECT_LT(0, ch->nr_kind[OP_REPLACE]);
	EXPECT_LT(0, ch->nr_kind[OP_UNMAP]);
	EXPECT_LT(0, ch->nr_kind[OP_MREMAP]);
	EXPECT_LT(0, ch->nr_kind[OP_MPROTECT]);
	/* What never moved resolves, as in build_id_offset */
	EXPECT_GE(ty.resolved * 1000, (ty.resolved + ty.unresolved) * 999);

	free(m.v);
	trace_free(&t);
	ring_close(&rb);
	for (k = 0; k <= CH_COPIES; k++) {
		close(ch->fd[k]);
		unlink(ch->path[k]);
	}
	munmap(ch->region, CH_SLOTS * ch->stride);
	free(ch->ops);
	free(ch);
}

/* ---- Tasks that never get work: kernel threads, io_uring workers ---- */

/*
 * System-wide sampling (an event per CPU, receiving the records of every
 * task that runs there) while an io_uring instance keeps its kernel-side
 * threads busy: an SQPOLL thread (iou-sqp-*) polling the submission
 * queue and io-wq workers (iou-wrk-*) doing reads forced to them with
 * IOSQE_ASYNC.  Those threads have the ring owner's mm but never return
 * to user space, and kernel threads have none: their samples must carry
 * cookie 0 and no record may name them.  Raw system calls, no liburing.
 */
struct uring {
	int fd;
	unsigned int *sq_head, *sq_tail, *sq_mask, *sq_array, *sq_flags;
	unsigned int *cq_head, *cq_tail, *cq_mask;
	struct io_uring_sqe *sqes;
	struct io_uring_cqe *cqes;
	void *sq_map, *cq_map;
	size_t sq_len, cq_len, sqe_len;
	unsigned int pending;
};

static int uring_setup(struct uring *u, unsigned int entries)
{
	struct io_uring_params p = {
		.flags = IORING_SETUP_SQPOLL,
		.sq_thread_idle = 1000,
	};

	memset(u, 0, sizeof(*u));
	u->fd = syscall(__NR_io_uring_setup, entries, &p);
	if (u->fd < 0)
		return -errno;
	u->sq_len = p.sq_off.array + p.sq_entries * sizeof(unsigned int);
	u->cq_len = p.cq_off.cqes + p.cq_entries * sizeof(struct io_uring_cqe);
	u->sqe_len = p.sq_entries * sizeof(struct io_uring_sqe);
	u->sq_map = mmap(NULL, u->sq_len, PROT_READ | PROT_WRITE,
			 MAP_SHARED | MAP_POPULATE, u->fd, IORING_OFF_SQ_RING);
	u->cq_map = mmap(NULL, u->cq_len, PROT_READ | PROT_WRITE,
			 MAP_SHARED | MAP_POPULATE, u->fd, IORING_OFF_CQ_RING);
	u->sqes = mmap(NULL, u->sqe_len, PROT_READ | PROT_WRITE,
		       MAP_SHARED | MAP_POPULATE, u->fd, IORING_OFF_SQES);
	if (u->sq_map == MAP_FAILED || u->cq_map == MAP_FAILED ||
	    u->sqes == MAP_FAILED)
		return -errno;
	u->sq_head = u->sq_map + p.sq_off.head;
	u->sq_tail = u->sq_map + p.sq_off.tail;
	u->sq_mask = u->sq_map + p.sq_off.ring_mask;
	u->sq_array = u->sq_map + p.sq_off.array;
	u->sq_flags = u->sq_map + p.sq_off.flags;
	u->cq_head = u->cq_map + p.cq_off.head;
	u->cq_tail = u->cq_map + p.cq_off.tail;
	u->cq_mask = u->cq_map + p.cq_off.ring_mask;
	u->cqes = u->cq_map + p.cq_off.cqes;
	return 0;
}

static void uring_close(struct uring *u)
{
	munmap(u->sqes, u->sqe_len);
	munmap(u->cq_map, u->cq_len);
	munmap(u->sq_map, u->sq_len);
	close(u->fd);
}

/* Queue a read of @len bytes at @off of @fd, handed to an io-wq worker */
static void uring_read(struct uring *u, int fd, void *buf, unsigned int len,
		       uint64_t off)
{
	unsigned int tail = *u->sq_tail, idx = tail & *u->sq_mask;
	struct io_uring_sqe *sqe = &u->sqes[idx];

	memset(sqe, 0, sizeof(*sqe));
	sqe->opcode = IORING_OP_READ;
	sqe->flags = IOSQE_ASYNC;
	sqe->fd = fd;
	sqe->addr = (uintptr_t)buf;
	sqe->len = len;
	sqe->off = off;
	u->sq_array[idx] = idx;
	__atomic_store_n(u->sq_tail, tail + 1, __ATOMIC_RELEASE);
	u->pending++;
}

/* Wake the SQPOLL thread if it sleeps, wait for everything queued */
static int uring_wait(struct uring *u, uint64_t *bytes)
{
	unsigned int flags = IORING_ENTER_GETEVENTS;
	int errors = 0;

	if (__atomic_load_n(u->sq_flags, __ATOMIC_ACQUIRE) &
	    IORING_SQ_NEED_WAKEUP)
		flags |= IORING_ENTER_SQ_WAKEUP;
	while (u->pending) {
		unsigned int head = *u->cq_head;

		if (head == __atomic_load_n(u->cq_tail, __ATOMIC_ACQUIRE)) {
			if (syscall(__NR_io_uring_enter, u->fd, 0, 1, flags,
				    NULL, 0) < 0 && errno != EINTR)
				return -errno;
			continue;
		}
		if (u->cqes[head & *u->cq_mask].res < 0)
			errors++;
		else
			*bytes += u->cqes[head & *u->cq_mask].res;
		__atomic_store_n(u->cq_head, head + 1, __ATOMIC_RELEASE);
		u->pending--;
	}
	return errors ? -EIO : 0;
}

/* Note the io_uring threads of this process (they come and go) */
static void note_io_threads(pid_t *tids, int *nr, int max)
{
	DIR *d = opendir("/proc/self/task");
	struct dirent *e;
	char path[96];
	int i;

	if (!d)
		return;
	while ((e = readdir(d))) {
		pid_t tid = atoi(e->d_name);
		bool known = false;

		if (tid <= 0)
			continue;
		snprintf(path, sizeof(path), "/proc/self/task/%d/stat", tid);
		if (!(stat_flags(path) & (PF_USER_WORKER_ | PF_IO_WORKER_)))
			continue;
		for (i = 0; i < *nr; i++)
			known |= tids[i] == tid;
		if (!known && *nr < max)
			tids[(*nr)++] = tid;
	}
	closedir(d);
}

static bool tid_in(pid_t tid, const pid_t *tids, int nr)
{
	int i;

	for (i = 0; i < nr; i++)
		if (tids[i] == tid)
			return true;
	return false;
}

TEST(kthreads_iouring)
{
	int nr_cpus = sysconf(_SC_NPROCESSORS_ONLN), i, fd, err, nr_io = 0;
	uint64_t io_samples = 0, io_cookies = 0, io_records = 0, bytes = 0;
	uint64_t k_samples = 0, k_cookies = 0, k_records = 0, batches = 0;
	uint64_t own = 0, own_unjoined = 0, until;
	char tmp[] = "/tmp/bido_uring_XXXXXX";
	struct perf_event_attr attr;
	struct trace t = { .check_ids = true };
	struct uring u;
	struct ring *rb;
	pid_t io_tids[256];
	char *buf;

	if (bido_missing(_metadata))
		return;
	if (nr_cpus > 8)
		nr_cpus = 8;
	fd = mkstemp(tmp);
	ASSERT_LE(0, fd);
	unlink(tmp);
	ASSERT_EQ(0, ftruncate(fd, 4 << 20));
	buf = malloc(8 << 17);
	ASSERT_NE(NULL, buf);
	memset(buf, 1, 8 << 17);
	ASSERT_EQ(8 << 17, pwrite(fd, buf, 8 << 17, 0));

	/* The sysctl is there when the kernel has io_uring */
	err = read_int("/proc/sys/kernel/io_uring_disabled");
	if (err == INT_MIN)
		SKIP(return, "this kernel has no io_uring");
	if (err)
		SKIP(return, "io_uring disabled (kernel.io_uring_disabled %d)",
		     err);
	err = uring_setup(&u, 16);
	ASSERT_EQ(0, err) TH_LOG("io_uring: %s", strerror(-err));

	rb = calloc(nr_cpus, sizeof(*rb));
	bido_attr(&attr, 200000);
	for (i = 0; i < nr_cpus; i++)
		ASSERT_EQ(0, ring_open(&rb[i], &attr, -1, i, RING_PAGES));
	for (i = 0; i < nr_cpus; i++)
		ASSERT_EQ(0, ioctl(rb[i].fd, PERF_EVENT_IOC_ENABLE, 0));

	for (until = now_ns() + 2000000000ULL; now_ns() < until; batches++) {
		for (i = 0; i < 8; i++)
			uring_read(&u, fd, buf + (i << 17), 1 << 17,
				   (uint64_t)((batches * 8 + i) % 32) << 17);
		ASSERT_EQ(0, uring_wait(&u, &bytes));
		note_io_threads(io_tids, &nr_io, 256);
		for (i = 0; i < nr_cpus; i++)
			ring_drain(&rb[i], &t);
	}
	note_io_threads(io_tids, &nr_io, 256);
	for (i = 0; i < nr_cpus; i++) {
		ioctl(rb[i].fd, PERF_EVENT_IOC_DISABLE, 0);
		ring_drain(&rb[i], &t);
	}
	trace_index(&t);

	for (i = 0; i < t.nr_s; i++) {
		struct sample *s = &t.s[i];

		if ((pid_t)s->pid == getpid() &&
		    tid_in(s->tid, io_tids, nr_io)) {
			io_samples++;
			io_cookies += !!s->cookie;
		} else if (is_kthread(s->pid)) {
			k_samples++;
			k_cookies += !!s->cookie;
		} else if ((pid_t)s->tid == gettid_() && s->cookie) {
			/* The records of user tasks go on arriving */
			own++;
			/* Counted once per entry (at its first sample) */
			own_unjoined += s->first == s->time &&
					!find_record(&t, s->tid, s->cookie) &&
					!last_entry(&t, s);
		}
	}
	for (i = 0; i < t.nr_r; i++) {
		io_records += (pid_t)t.r[i].pid == getpid() &&
			      tid_in(t.r[i].tid, io_tids, nr_io);
		k_records += is_kthread(t.r[i].pid);
	}
	ksft_print_msg(
		"kthreads_iouring: %llu batches of 8 reads (%llu MiB), %d io_uring threads seen; %d samples, %d records (%d duplicate), %llu lost, %d bad\n",
		(unsigned long long)batches,
		(unsigned long long)(bytes >> 20), nr_io, t.nr_s,
		t.nr_r, t.dup_records, (unsigned long long)t.lost,
		t.bad_records);
	ksft_print_msg(
		"kthreads_iouring: io_uring threads: %llu samples, %llu with a cookie, %llu records; kernel threads: %llu samples, %llu with a cookie, %llu records; this thread: %llu samples with a cookie, %llu entries without record\n",
		(unsigned long long)io_samples,
		(unsigned long long)io_cookies,
		(unsigned long long)io_records,
		(unsigned long long)k_samples,
		(unsigned long long)k_cookies,
		(unsigned long long)k_records,
		(unsigned long long)own,
		(unsigned long long)own_unjoined);

	EXPECT_EQ(0, t.bad_records);
	EXPECT_EQ(0, t.dup_records);
	EXPECT_EQ(0, io_cookies);
	EXPECT_EQ(0, io_records);
	EXPECT_EQ(0, k_cookies);
	EXPECT_EQ(0, k_records);
	EXPECT_LT(0, nr_io);
	EXPECT_LT(20, io_samples);
	EXPECT_LT(0, k_samples);
	EXPECT_LT(0, own);
	EXPECT_LE(own_unjoined, t.lost);

	for (i = 0; i < nr_cpus; i++)
		ring_close(&rb[i]);
	free(rb);
	uring_close(&u);
	free(buf);
	close(fd);
}

TEST_HARNESS_MAIN
