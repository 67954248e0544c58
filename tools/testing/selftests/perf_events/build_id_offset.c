// SPDX-License-Identifier: GPL-2.0
/*
 * PERF_SAMPLE_BUILD_ID_OFFSET against ground truth: a child of the test
 * spins in a function of this program under a cpu-clock sampling event; every
 * sample names a PERF_RECORD_BUILD_ID_OFFSET (its entry's, written after it,
 * or its task's latest, written before it) whose map of the sampled address
 * has this program's build-ID (read from its ELF file here) and the file
 * offset /proc/self/maps gives.
 */
#define _GNU_SOURCE
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <linux/hw_breakpoint.h>
#include <linux/perf_event.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include <linux/compiler.h>

#include "../kselftest_harness.h"
#include "build_id_offset.h"

struct proc_map {
	uint64_t lo, hi, pgoff;
	bool exec;
};

static struct proc_map *proc_maps;
static int nr_proc_maps;

/* Ground truth: /proc/self/maps, read once (the child's is the same) */
static void read_proc_maps(void)
{
	unsigned long lo, hi, pgoff;
	char perms[8], line[512];
	FILE *f = fopen("/proc/self/maps", "r");

	free(proc_maps);
	proc_maps = NULL;
	nr_proc_maps = 0;
	while (f && fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%lx-%lx %7s %lx", &lo, &hi, perms, &pgoff) != 4)
			continue;
		proc_maps = realloc(proc_maps, (nr_proc_maps + 1) * sizeof(*proc_maps));
		proc_maps[nr_proc_maps++] = (struct proc_map){ lo, hi, pgoff, perms[2] == 'x' };
	}
	if (f)
		fclose(f);
}

/* The mapping of @a in /proc/self/maps, or NULL */
static const struct proc_map *proc_map(uint64_t a)
{
	int i;

	for (i = 0; i < nr_proc_maps; i++)
		if (a >= proc_maps[i].lo && a < proc_maps[i].hi)
			return &proc_maps[i];
	return NULL;
}

/* This program's build-ID, from the GNU build-ID note of its ELF file */
static int self_build_id(uint8_t *id)
{
	Elf64_Ehdr eh;
	Elf64_Phdr ph;
	int fd = open("/proc/self/exe", O_RDONLY), i, n = -1;

	if (fd < 0 || pread(fd, &eh, sizeof(eh), 0) != sizeof(eh))
		goto out;
	for (i = 0; i < eh.e_phnum && n < 0; i++) {
		char note[1024];
		size_t pos = 0;

		if (pread(fd, &ph, sizeof(ph), eh.e_phoff + i * sizeof(ph)) != sizeof(ph) ||
		    ph.p_type != PT_NOTE || ph.p_filesz > sizeof(note) ||
		    pread(fd, note, ph.p_filesz, ph.p_offset) != (ssize_t)ph.p_filesz)
			continue;
		while (pos + sizeof(Elf64_Nhdr) <= ph.p_filesz) {
			Elf64_Nhdr *nh = (void *)(note + pos);
			size_t desc = pos + sizeof(*nh) + ((nh->n_namesz + 3) & ~3);

			if (nh->n_type == NT_GNU_BUILD_ID && nh->n_namesz == 4 &&
			    !memcmp(note + pos + sizeof(*nh), "GNU", 4) && nh->n_descsz <= 20) {
				memcpy(id, note + desc, nh->n_descsz);
				n = nh->n_descsz;
				break;
			}
			pos = desc + ((nh->n_descsz + 3) & ~3);
		}
	}
out:
	if (fd >= 0)
		close(fd);
	return n;
}

/* Until the parent has the samples it needs and says stop */
static noinline void spin(int *stop)
{
	while (!READ_ONCE(*stop))
		spin_leaf();
}

/*
 * A child that waits for the go on @go[0], spins until *@stop, and exits:
 * every one of its samples is taken in user mode, so every entry of them
 * returns to user space and gets its record before the exit.
 */
static pid_t spin_child(int go[2], int *stop)
{
	pid_t pid;
	char c;

	if (pipe(go))
		return -1;
	pid = fork();
	if (pid == 0) {
		close(go[1]);
		if (read(go[0], &c, 1) != 1)
			_exit(1);
		spin(stop);
		_exit(0);
	}
	close(go[0]);
	return pid;
}

/*
 * Run a spinning child under the events @attrs until the first has @want
 * samples (or WAIT_S seconds went by: a machine too slow to give them
 * fails the test's counts, never hangs it); drain the rings into @t.
 */
static int run_child(struct perf_event_attr *attrs, int nr, struct trace *t, int want)
{
	int *stop = mmap(NULL, sizeof(int), PROT_READ | PROT_WRITE,
			 MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	struct ring rings[4];
	int go[2], i, err, status, waited;
	pid_t pid;

	if (stop == MAP_FAILED)
		return -1;
	*stop = 0;
	pid = spin_child(go, stop);
	if (pid < 0)
		return -1;
	for (i = 0; i < nr; i++) {
		err = ring_open(&rings[i], &attrs[i], pid);
		if (err) {
			kill(pid, SIGKILL);
			waitpid(pid, NULL, 0);
			/* An older kernel: no sample bit, or no defer_output */
			return err == -EINVAL ? -EOPNOTSUPP : err;
		}
		ioctl(rings[i].fd, PERF_EVENT_IOC_ENABLE, 0);
	}
	if (write(go[1], "g", 1) != 1)
		return -1;
	close(go[1]);
	for (waited = 0; t[0].nr_samples < want && waited < WAIT_S * 100; waited++) {
		usleep(10000);
		for (i = 0; i < nr; i++)
			ring_drain(&rings[i], &t[i], attrs[i].sample_type);
	}
	WRITE_ONCE(*stop, 1);
	waitpid(pid, &status, 0);
	read_proc_maps();
	for (i = 0; i < nr; i++) {
		ring_drain(&rings[i], &t[i], attrs[i].sample_type);
		ring_close(&rings[i]);
	}
	munmap(stop, sizeof(int));
	return WIFEXITED(status) && !WEXITSTATUS(status) ? 0 : -1;
}

/*
 * The tests wait for the samples they need (run_child()), up to WAIT_S
 * seconds; the harness's own limit is above that.
 */
FIXTURE(bido) {};
FIXTURE_SETUP(bido) {}
FIXTURE_TEARDOWN(bido) {}

/*
 * Every sample names a record of its tid: a later one, or the latest one
 * before it.  Its IP is in a map of that record (of the one before it, for
 * an UNCHANGED record), whose build-ID and offset are what this program's
 * file and /proc say.
 */
TEST_F_TIMEOUT(bido, records_cover_samples, 180)
{
	int ret;
	struct perf_event_attr attr;
	struct trace t = {};
	uint8_t id[20];
	int i, id_size, in_spin = 0;

	id_size = self_build_id(id);
	ASSERT_GT(id_size, 0) TH_LOG("this program has no GNU build-ID note");
	sample_attr(&attr, PERF_SAMPLE_BUILD_ID_OFFSET, false);
	ret = run_child(&attr, 1, &t, WANT);
	if (ret == -EOPNOTSUPP)
		SKIP(return, "no PERF_SAMPLE_BUILD_ID_OFFSET in this kernel");
	ASSERT_EQ(0, ret);

	ASSERT_GE(t.nr_samples, WANT) TH_LOG("%d samples", t.nr_samples);
	EXPECT_EQ(0, t.bad);
	EXPECT_EQ(0, t.other);
	/* No deferred callchain was asked for: none comes */
	EXPECT_EQ(0, t.nr_22);
	for (i = 0; i < t.nr_samples; i++) {
		const struct sample *s = &t.samples[i];
		const struct bido_rec *r;
		const struct bido_map *m;
		const struct proc_map *pm;

		ASSERT_NE(0, s->cookie) TH_LOG("sample %d: cookie 0", i);
		r = sample_record(&t, s, NULL);
		ASSERT_NE(NULL, r)
			TH_LOG("sample %d: cookie %llx: no later record, not the latest",
			       i, (unsigned long long)s->cookie);
		ASSERT_EQ(0, r->flags & ~PERF_BUILD_ID_OFFSET_F_UNCHANGED);
		r = rec_maps(&t, r);
		ASSERT_NE(NULL, r) TH_LOG("sample %d: an UNCHANGED record is its tid's first", i);
		m = rec_find(r, s->ip);
		ASSERT_NE(NULL, m) TH_LOG("sample %d: ip %llx in no map", i,
					  (unsigned long long)s->ip);
		pm = proc_map(s->ip);
		ASSERT_NE(NULL, pm);
		EXPECT_EQ(pm->lo, m->start);
		EXPECT_EQ(pm->pgoff, m->pgoff);
		if ((s->ip >= (uint64_t)spin && s->ip < (uint64_t)spin + 256) ||
		    (s->ip >= (uint64_t)spin_leaf && s->ip < (uint64_t)spin_leaf + 256)) {
			in_spin++;
			ASSERT_EQ(id_size, m->build_id_size);
			ASSERT_EQ(0, memcmp(id, m->build_id, id_size));
			EXPECT_EQ(0, m->flags);
		}
	}
	/* The child spends its time in spin(): most samples are there */
	EXPECT_GE(in_spin, t.nr_samples / 2);
	trace_free(&t);
}

/* The sample's cookie is its last field: nothing but it follows the IP here */
TEST_F_TIMEOUT(bido, cookie_is_last_field, 180)
{
	int ret;
	struct perf_event_attr attr;
	struct trace t = {};

	sample_attr(&attr, PERF_SAMPLE_BUILD_ID_OFFSET | PERF_SAMPLE_PERIOD, false);
	ret = run_child(&attr, 1, &t, WANT);
	if (ret == -EOPNOTSUPP)
		SKIP(return, "no PERF_SAMPLE_BUILD_ID_OFFSET in this kernel");
	ASSERT_EQ(0, ret);
	ASSERT_GT(t.nr_samples, 0);
	/* parse_sample() took the last u64: a real cookie names a record */
	EXPECT_NE(NULL, sample_record(&t, &t.samples[0], NULL));
	trace_free(&t);
}

/*
 * With deferred callchains too, a sample's two cookies are the same, and the
 * record of that cookie (or for an UNCHANGED record, the one before it)
 * covers every frame of PERF_RECORD_CALLCHAIN_DEFERRED that /proc/self/maps
 * puts in a mapping: one walk serves both.
 */
TEST_F_TIMEOUT(bido, defer_callchain_one_walk, 180)
{
	int ret;
	struct perf_event_attr attr;
	struct trace t = {};
	int i, j, k, frames = 0;

	sample_attr(&attr, PERF_SAMPLE_BUILD_ID_OFFSET | PERF_SAMPLE_CALLCHAIN, true);
	ret = run_child(&attr, 1, &t, WANT);
	if (ret == -EOPNOTSUPP)
		SKIP(return, "no PERF_SAMPLE_BUILD_ID_OFFSET in this kernel");
	ASSERT_EQ(0, ret);
	ASSERT_GT(t.nr_samples, 0);
	ASSERT_GT(t.nr_22, 0);
	for (i = 0; i < t.nr_samples; i++) {
		const struct sample *s = &t.samples[i];
		const struct bido_rec *r = rec_maps(&t, sample_record(&t, s, NULL));

		ASSERT_NE(0, s->chain_cookie);
		ASSERT_EQ(s->chain_cookie, s->cookie);
		ASSERT_NE(NULL, r) TH_LOG("sample %d: no record covers cookie %llx", i,
					  (unsigned long long)s->cookie);
		for (j = 0; j < t.nr_chains; j++) {
			if (t.chains[j]->cookie != s->cookie)
				continue;
			for (k = 0; k < (int)t.chains[j]->nr; k++) {
				uint64_t ip = t.chains[j]->ips[k];

				if (!proc_map(ip))
					continue;
				frames++;
				EXPECT_NE(NULL, rec_find(r, ip))
					TH_LOG("frame %llx not covered", (unsigned long long)ip);
			}
		}
	}
	/* spin_leaf, spin, spin_child, the test, ... */
	EXPECT_GE(frames, 3 * t.nr_samples);
	trace_free(&t);
}

/* The time of record @r of @t (PERF_SAMPLE_TIME) */
static uint64_t rec_time(const struct trace *t, const struct bido_rec *r)
{
	int i;

	for (i = 0; i < t->nr_recs; i++)
		if (t->recs[i] == r)
			return t->rec_times[i];
	return 0;
}

/*
 * In-interrupt callchains (perf record -g) of a task in a steady loop: the
 * kernel sees at sample time that the task's latest record still covers
 * every user address of the sample, names that record, and writes none for
 * the entry.  So some samples name a record written before them, and there
 * are fewer records than samples; every cookie is still its tid's latest
 * record before the sample or a record after it, and the record covers the
 * sampled IP and the user frames that /proc/self/maps puts in code.
 */
TEST_F_TIMEOUT(bido, steady_loop_names_earlier_record, 180)
{
	int ret;
	struct perf_event_attr attr;
	struct trace t = {};
	int i, j, earlier = 0, later = 0, frames = 0;

	sample_attr(&attr, PERF_SAMPLE_TIME | PERF_SAMPLE_CALLCHAIN |
		    PERF_SAMPLE_BUILD_ID_OFFSET, false);
	ret = run_child(&attr, 1, &t, WANT);
	if (ret == -EOPNOTSUPP)
		SKIP(return, "no PERF_SAMPLE_BUILD_ID_OFFSET in this kernel");
	ASSERT_EQ(0, ret);
	ASSERT_GE(t.nr_samples, WANT) TH_LOG("%d samples", t.nr_samples);
	EXPECT_EQ(0, t.bad);
	EXPECT_EQ(0, t.other);
	/* In the interrupt: no deferred callchain */
	EXPECT_EQ(0, t.nr_22);
	for (i = 0; i < t.nr_samples; i++) {
		const struct sample *s = &t.samples[i];
		const struct bido_rec *r, *maps;
		bool before;

		ASSERT_NE(0, s->cookie) TH_LOG("sample %d: cookie 0", i);
		ASSERT_NE(0, s->nr_ips) TH_LOG("sample %d: no user frame", i);
		r = sample_record(&t, s, &before);
		ASSERT_NE(NULL, r)
			TH_LOG("sample %d at %llu: cookie %llx: no later record, not the latest",
			       i, (unsigned long long)s->time, (unsigned long long)s->cookie);
		if (before) {
			earlier++;
			/* The ring's order is the order in time */
			EXPECT_LE(rec_time(&t, r), s->time);
		} else {
			later++;
		}
		maps = rec_maps(&t, r);
		ASSERT_NE(NULL, maps)
			TH_LOG("sample %d: an UNCHANGED record is its tid's first", i);
		ASSERT_NE(NULL, rec_find(maps, s->ip))
			TH_LOG("sample %d: ip %llx in no map of the record %s it",
			       i, (unsigned long long)s->ip, before ? "before" : "after");
		for (j = 0; j < (int)s->nr_ips; j++) {
			const struct proc_map *pm = proc_map(s->ips[j]);

			if (!pm || !pm->exec)
				continue;
			frames++;
			EXPECT_NE(NULL, rec_find(maps, s->ips[j]))
				TH_LOG("sample %d: frame %llx in no map of the record %s it",
				       i, (unsigned long long)s->ips[j],
				       before ? "before" : "after");
		}
	}
	TH_LOG("%d samples, %d records: %d samples name one before them, %d one after; %d frames",
	       t.nr_samples, t.nr_recs, earlier, later, frames);
	/* spin_leaf, spin, spin_child, ... */
	EXPECT_GE(frames, 3 * t.nr_samples);
	ASSERT_GT(earlier, 0) TH_LOG("no sample names an earlier record");
	ASSERT_LT(t.nr_recs, t.nr_samples);
	trace_free(&t);
}

/*
 * Deferred callchains (perf record --call-graph fp,defer) of a task in a
 * steady loop: the kernel knows only on the way back to user space what the
 * walk found, and when it is nothing new it writes an UNCHANGED record: no
 * maps, the task's previous record still covers the entry.  Such a record
 * is never the task's first, its cookie is that of samples, and the record
 * before it covers those samples' IPs and their entry's deferred frames.
 */
TEST_F_TIMEOUT(bido, steady_loop_unchanged_records, 180)
{
	int ret;
	struct perf_event_attr attr;
	struct trace t = {};
	int i, j, k, unchanged = 0, covered = 0, frames = 0;

	sample_attr(&attr, PERF_SAMPLE_TIME | PERF_SAMPLE_CALLCHAIN |
		    PERF_SAMPLE_BUILD_ID_OFFSET, true);
	ret = run_child(&attr, 1, &t, WANT);
	if (ret == -EOPNOTSUPP)
		SKIP(return, "no PERF_SAMPLE_BUILD_ID_OFFSET in this kernel");
	ASSERT_EQ(0, ret);
	ASSERT_GE(t.nr_samples, WANT) TH_LOG("%d samples", t.nr_samples);
	ASSERT_GT(t.nr_recs, 0);
	EXPECT_EQ(0, t.bad);
	EXPECT_EQ(0, t.other);
	/* The task's first record lists its maps */
	EXPECT_EQ(0, t.recs[0]->flags & PERF_BUILD_ID_OFFSET_F_UNCHANGED);
	for (i = 0; i < t.nr_recs; i++) {
		const struct bido_rec *r = t.recs[i];
		int samples = 0;

		if (!(r->flags & PERF_BUILD_ID_OFFSET_F_UNCHANGED))
			continue;
		unchanged++;
		EXPECT_EQ(0, r->nr) TH_LOG("UNCHANGED record %d lists %u maps", i, r->nr);
		EXPECT_EQ(PERF_BUILD_ID_OFFSET_F_UNCHANGED, r->flags);
		EXPECT_NE(NULL, rec_maps(&t, r))
			TH_LOG("UNCHANGED record %d has no record before it", i);
		for (j = 0; j < t.nr_samples; j++)
			samples += sample_record(&t, &t.samples[j], NULL) == r;
		EXPECT_GT(samples, 0)
			TH_LOG("UNCHANGED record %d (cookie %llx) is no sample's", i,
			       (unsigned long long)r->cookie);
	}
	for (i = 0; i < t.nr_samples; i++) {
		const struct sample *s = &t.samples[i];
		const struct bido_rec *r = sample_record(&t, s, NULL), *maps;

		ASSERT_NE(NULL, r)
			TH_LOG("sample %d at %llu: cookie %llx: no later record, not the latest",
			       i, (unsigned long long)s->time, (unsigned long long)s->cookie);
		maps = rec_maps(&t, r);
		ASSERT_NE(NULL, maps);
		ASSERT_NE(NULL, rec_find(maps, s->ip))
			TH_LOG("sample %d: ip %llx in no map%s", i, (unsigned long long)s->ip,
			       maps != r ? " of the record before its UNCHANGED one" : "");
		if (maps == r)
			continue;
		covered++;
		/* The frames of an UNCHANGED entry: in the maps before it */
		for (j = 0; j < t.nr_chains; j++) {
			if (t.chains[j]->cookie != s->cookie)
				continue;
			for (k = 0; k < (int)t.chains[j]->nr; k++) {
				uint64_t ip = t.chains[j]->ips[k];
				const struct proc_map *pm = proc_map(ip);

				if (!pm || !pm->exec)
					continue;
				frames++;
				EXPECT_NE(NULL, rec_find(maps, ip))
					TH_LOG("frame %llx of UNCHANGED cookie %llx not covered",
					       (unsigned long long)ip,
					       (unsigned long long)s->cookie);
			}
		}
	}
	TH_LOG("%d samples, %d records, %d UNCHANGED; the record before one covers %d samples",
	       t.nr_samples, t.nr_recs, unchanged, covered);
	TH_LOG("and %d deferred frames", frames);
	ASSERT_GT(unchanged, 0) TH_LOG("no UNCHANGED record in a steady loop");
	EXPECT_GT(frames, 0);
	trace_free(&t);
}

/*
 * A session that asked for deferred callchains only (upstream perf's
 * --call-graph fp,defer) gets no PERF_RECORD_BUILD_ID_OFFSET, while another
 * session samples the same task with the build-ID bit.
 */
TEST_F_TIMEOUT(bido, callchain_session_gets_no_build_id_records, 180)
{
	int ret;
	struct perf_event_attr attrs[2];
	struct trace t[2] = {};

	sample_attr(&attrs[0], PERF_SAMPLE_CALLCHAIN, true);
	sample_attr(&attrs[1], PERF_SAMPLE_BUILD_ID_OFFSET, false);
	ret = run_child(attrs, 2, t, WANT);
	if (ret == -EOPNOTSUPP)
		SKIP(return, "no PERF_SAMPLE_BUILD_ID_OFFSET in this kernel");
	ASSERT_EQ(0, ret);
	ASSERT_GT(t[0].nr_22, 0);
	EXPECT_EQ(0, t[0].nr_23);
	EXPECT_EQ(0, t[0].other);
	ASSERT_GT(t[1].nr_23, 0);
	EXPECT_EQ(0, t[1].bad);
	trace_free(&t[0]);
	trace_free(&t[1]);
}

/*
 * With PERF_SAMPLE_STACK_USER (perf's --call-graph dwarf), the code
 * addresses in the dumped stack are covered too, from the task's second
 * sampled entry on (its first has no stash yet: cookie 0).
 */
TEST_F_TIMEOUT(bido, stack_dump_words_covered, 180)
{
	int ret;
	struct perf_event_attr attr;
	struct trace t = {};
	int i, j, with_cookie = 0, words = 0;

	sample_attr(&attr, PERF_SAMPLE_BUILD_ID_OFFSET | PERF_SAMPLE_REGS_USER |
		    PERF_SAMPLE_STACK_USER, false);
	attr.sample_regs_user = REGS_MASK;
	attr.sample_stack_user = MAX_STACK;
	/* 4 KiB a sample: fewer of them, for the debug kernels of CI */
	attr.sample_period = 4000000;
	ret = run_child(&attr, 1, &t, WANT / 4);
	if (ret == -EOPNOTSUPP)
		SKIP(return, "no PERF_SAMPLE_BUILD_ID_OFFSET in this kernel");
	ASSERT_EQ(0, ret);
	ASSERT_GT(t.nr_samples, 2);
	EXPECT_EQ(0, t.bad);
	for (i = 0; i < t.nr_samples; i++) {
		const struct sample *s = &t.samples[i];
		const struct bido_rec *r;

		if (!s->cookie)
			continue;
		with_cookie++;
		r = rec_maps(&t, sample_record(&t, s, NULL));
		ASSERT_NE(NULL, r) TH_LOG("sample %d: no record covers cookie %llx", i,
					  (unsigned long long)s->cookie);
		for (j = 0; j < (int)s->nr_words; j++) {
			const struct proc_map *pm = proc_map(s->words[j]);

			if (!pm || !pm->exec)
				continue;
			words++;
			EXPECT_NE(NULL, rec_find(r, s->words[j]))
				TH_LOG("stack word %llx not covered",
				       (unsigned long long)s->words[j]);
		}
	}
	/* Only the first sampled entry goes without */
	EXPECT_GE(with_cookie, t.nr_samples - 1);
	/* Return addresses at least */
	EXPECT_GT(words, with_cookie);
	trace_free(&t);
}

/* Without defer_output, an event gets no record, but its samples a cookie */
TEST_F_TIMEOUT(bido, no_defer_output_no_records, 180)
{
	int ret;
	struct perf_event_attr attr;
	struct trace t = {};

	sample_attr(&attr, PERF_SAMPLE_BUILD_ID_OFFSET, false);
	attr.defer_output = 0;
	ret = run_child(&attr, 1, &t, WANT);
	if (ret == -EOPNOTSUPP)
		SKIP(return, "no PERF_SAMPLE_BUILD_ID_OFFSET in this kernel");
	ASSERT_EQ(0, ret);
	ASSERT_GT(t.nr_samples, 0);
	EXPECT_EQ(0, t.nr_23);
	EXPECT_NE(0, t.samples[0].cookie);
	trace_free(&t);
}

static char exec_path[64] __aligned(8) = "/bin/true";

/*
 * A sample taken inside execve(), before the new image replaces the old
 * one, names a record that says MM_CHANGED and lists no map: the old
 * image's addresses are never looked up in the new address space.  The
 * sample comes from a data breakpoint on the path execve() reads.
 */
TEST_F_TIMEOUT(bido, exec_in_entry_mm_changed, 180)
{
	struct perf_event_attr attr;
	struct trace t = {};
	struct ring r;
	int go[2], status, i, err;
	const struct bido_rec *rec = NULL;
	pid_t pid;
	char c;

	ASSERT_EQ(0, pipe(go));
	pid = fork();
	ASSERT_GE(pid, 0);
	if (pid == 0) {
		close(go[1]);
		if (read(go[0], &c, 1) != 1)
			_exit(1);
		execl(exec_path, exec_path, NULL);
		_exit(2);
	}
	close(go[0]);

	memset(&attr, 0, sizeof(attr));
	attr.size = sizeof(attr);
	attr.type = PERF_TYPE_BREAKPOINT;
	attr.bp_type = HW_BREAKPOINT_RW;
	attr.bp_addr = (uint64_t)exec_path;
	attr.bp_len = HW_BREAKPOINT_LEN_8;
	attr.sample_period = 1;
	attr.sample_type = PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_BUILD_ID_OFFSET;
	attr.sample_id_all = 1;
	attr.defer_output = 1;
	err = ring_open(&r, &attr, pid);
	if (err) {
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
	}
	if (err == -EINVAL)
		SKIP(return, "no PERF_SAMPLE_BUILD_ID_OFFSET in this kernel");
	if (err == -ENODEV || err == -ENOENT || err == -EOPNOTSUPP)
		SKIP(return, "no data breakpoints here");
	ASSERT_EQ(0, err);

	ASSERT_EQ(1, write(go[1], "g", 1));
	close(go[1]);
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_TRUE(WIFEXITED(status) && !WEXITSTATUS(status));
	ring_drain(&r, &t, attr.sample_type);
	ring_close(&r);

	/* getname() read the path in the kernel: samples of the exec entry */
	ASSERT_GT(t.nr_samples, 0);
	EXPECT_EQ(0, t.bad);
	for (i = 0; i < t.nr_samples && !rec; i++)
		if (t.samples[i].cookie)
			rec = sample_record(&t, &t.samples[i], NULL);
	ASSERT_NE(NULL, rec) TH_LOG("%d samples, %d records", t.nr_samples, t.nr_recs);
	EXPECT_EQ(PERF_BUILD_ID_OFFSET_F_MM_CHANGED, rec->flags);
	EXPECT_EQ(0, rec->nr);
	trace_free(&t);
}

TEST_HARNESS_MAIN
