// SPDX-License-Identifier: GPL-2.0
/*
 * PERF_SAMPLE_BUILD_ID_OFFSET end to end: samples carry a cookie, and
 * PERF_RECORD_BUILD_ID_OFFSET records with the same cookie must map every
 * sampled user address (the IP and the user call chain) to the mapping,
 * file offset and build-ID that /proc/PID/maps and the ELF notes of the
 * mapped files say.  Software cpu-clock events only: no PMU is needed.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stddef.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <linux/perf_event.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include "../kselftest_harness.h"
#include "build_id_offset_common.h"

/* Emulated machines with debug kernels are slow: more than the default */
#undef TEST_TIMEOUT_DEFAULT
#define TEST_TIMEOUT_DEFAULT 180

#define RING_PAGES	512
#define PERIOD_NS	500000

static void bido_attr(struct perf_event_attr *attr)
{
	sample_attr(attr, PERIOD_NS);
}

/*
 * Fill the whole data area of @rb, a per-task event on this task, with
 * 0xff before the test writes its records there: a pad byte the kernel
 * leaves unwritten then reads back as 0xff, not as the zero of a fresh
 * page.  User space cannot write the data pages, so the kernel does it:
 * the PERF_RECORD_MMAP2 records of a file whose path is mostly 0xff bytes
 * (directory names of 0xff), redirected into @rb and thrown away.
 */
static int ring_prefill(struct ring *rb)
{
	char path[3900] = "/tmp/bido_ff_XXXXXX", name[201];
	struct perf_event_attr attr = {
		.size = sizeof(attr),
		.type = PERF_TYPE_SOFTWARE,
		.config = PERF_COUNT_SW_DUMMY,
		.mmap = 1,
		.mmap_data = 1,
		.mmap2 = 1,
	};
	int fd, ret = -1, depth = 0;
	uint64_t start;
	size_t len;

	if (!mkdtemp(path))
		return -1;
	memset(name, 0xff, sizeof(name) - 1);
	name[sizeof(name) - 1] = 0;
	len = strlen(path);
	while (len + sizeof(name) + 16 < sizeof(path)) {
		snprintf(path + len, sizeof(path) - len, "/%s", name);
		if (mkdir(path, 0700))
			goto out;
		len = strlen(path);
		depth++;
	}
	snprintf(path + len, sizeof(path) - len, "/%s", "f");
	fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (fd < 0 || ftruncate(fd, 4096))
		goto out_file;

	ret = -1;
	attr.disabled = 0;
	{
		int filler = perf_open(&attr, 0, -1);

		if (filler < 0)
			goto out_file;
		if (ioctl(filler, PERF_EVENT_IOC_SET_OUTPUT, rb->fd)) {
			close(filler);
			goto out_file;
		}
		start = rb->pg->data_head;
		/* Twice round, throwing each record away as it comes */
		while (__atomic_load_n(&rb->pg->data_head, __ATOMIC_ACQUIRE) -
		       start < 2 * rb->size) {
			void *p = mmap(NULL, 4096, PROT_READ, MAP_SHARED, fd, 0);

			if (p == MAP_FAILED)
				break;
			munmap(p, 4096);
			__atomic_store_n(&rb->pg->data_tail,
					 __atomic_load_n(&rb->pg->data_head,
							 __ATOMIC_ACQUIRE),
					 __ATOMIC_RELEASE);
		}
		close(filler);
		ret = rb->pg->data_head - start >= 2 * rb->size ? 0 : -1;
	}
out_file:
	if (fd >= 0)
		close(fd);
	unlink(path);
out:
	while (depth-- >= 0) {
		char *slash = strrchr(path, '/');

		if (!slash)
			break;
		*slash = 0;
		rmdir(path);
	}
	return ret;
}

/* ---- The join ---- */

struct tally {
	uint64_t addrs;		/* user addresses of samples with a cookie */
	uint64_t resolved;	/* to the right mapping, offset and build-ID */
	uint64_t wrong;		/* to something else: must stay 0 */
	uint64_t unresolved;	/* in no map of the record */
	uint64_t not_code;	/* of those, in no executable mapping at all */
	uint64_t past_stop;	/* of those, after such a value in the chain */
	uint64_t mm_changed;	/* in a record flagged MM_CHANGED */
	uint64_t no_record;	/* samples with a cookie and no record */
	uint64_t at_stop;	/* of those, in the task's last entry */
	uint64_t zero_cookie;	/* samples without a cookie */
	uint64_t samples;
	char first_wrong[256];
	char unresolved_eg[3][160];	/* the first few, for the log */
};

static bool is_code(struct maps *m, struct maps *m2, uint64_t a)
{
	struct vma *v = maps_find(m, a), *v2 = m2 ? maps_find(m2, a) : NULL;

	return (v && v->exec) || (v2 && v2->exec);
}

static void count_addr(struct tally *ty, struct maps *m, struct maps *m2,
		       const struct sample *s, int k, const struct bido_map *bm)
{
	int j;

	uint64_t a = s->addrs[k];
	const char *why, *why2;
	struct vma *v;

	switch (bido_check(m, a, bm, false, &why)) {
	case BIDO_RESOLVED:
		ty->resolved++;
		return;
	case BIDO_UNRESOLVED:
	case BIDO_NOT_CODE:
		/*
		 * perf's own frame-pointer walk records whatever a frame
		 * without a frame pointer leaves where the return address
		 * would be (0, 1, a pointer to data); the deferred walk
		 * stops earlier.  Such a value is no code address: there is
		 * nothing to resolve.
		 */
		if (!is_code(m, m2, a)) {
			ty->not_code++;
			return;
		}
		/*
		 * Nor what perf's walk finds past such a value (a 0 where a
		 * return address would be stops the deferred walk; perf's
		 * goes on to the next frame pointer), or past the vDSO: in a
		 * system call of a 32-bit task, __kernel_vsyscall has put a
		 * system call argument in %ebp (SYSCALL32), which perf's walk
		 * follows as a frame pointer and the deferred walk's checks
		 * (aligned, above the stack pointer) mostly refuse.
		 */
		for (j = 0; j < k; j++) {
			struct vma *vj = maps_find(m, s->addrs[j]);

			if ((j && !is_code(m, m2, s->addrs[j])) ||
			    (vj && vj->kind == VMA_VDSO)) {
				ty->past_stop++;
				return;
			}
		}
		v = maps_find(m, a);
		if (ty->unresolved < 3) {
			snprintf(ty->unresolved_eg[ty->unresolved],
				 sizeof(ty->unresolved_eg[0]),
				 "%#llx, entry %d of %d%s, in %.80s",
				 (unsigned long long)a, k, s->nr,
				 s->kernel ? " (kernel-mode sample)" : "",
				 v ? (v->path[0] ? v->path : "anon") :
				     "no mapping");
		}
		ty->unresolved++;
		return;
	case BIDO_ANON:		/* not with strict anonymous memory */
	case BIDO_WRONG:
		/* Right in the other truth (the same task after exec)? */
		if (m2 && bido_check(m2, a, bm, false, &why2) == BIDO_RESOLVED) {
			ty->resolved++;
			return;
		}
		break;
	}
	if (!ty->wrong++) {
		v = maps_find(m, a);
		snprintf(ty->first_wrong, sizeof(ty->first_wrong),
			 "%#llx: %s (truth %#llx-%#llx off %#llx %.64s; record %#llx-%#llx off %#llx flags %#x)",
			 (unsigned long long)a, why,
			 (unsigned long long)(v ? v->start : 0),
			 (unsigned long long)(v ? v->end : 0),
			 (unsigned long long)(v ? v->pgoff : 0),
			 v ? v->path : "none",
			 (unsigned long long)bm->start,
			 (unsigned long long)bm->end,
			 (unsigned long long)bm->pgoff, bm->flags);
	}
}

/*
 * Join the samples of @t for which @pick says yes with their records and
 * check every user address against the truth @m, or @m2 where @m says
 * wrong (a task that exec()ed has two).
 */
/* Is sample @i of its task's last entry in @t? */
static bool last_of_tid(const struct trace *t, int i)
{
	const struct sample *s = &t->s[i];
	int k;

	for (k = 0; k < t->nr_s; k++)
		if (t->s[k].tid == s->tid && t->s[k].cookie != s->cookie &&
		    t->s[k].time > s->time)
			return false;
	for (k = 0; k < t->nr_r; k++)
		if (t->r[k].tid == s->tid && t->r[k].time > s->time)
			return false;
	return true;
}

static void join(struct trace *t, struct maps *m, struct maps *m2,
		 struct tally *ty,
		 bool (*pick)(const struct sample *s, void *arg), void *arg)
{
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
		/*
		 * The entry in which the test stopped sampling (the DISABLE
		 * ioctl, the close): its record is written when that entry
		 * returns to user space, after the event is gone.  Nothing
		 * of the task comes after it.
		 */
		if (!r && last_of_tid(t, i)) {
			ty->at_stop++;
			continue;
		}
		if (!r) {
			ty->no_record++;
			ty->addrs += s->nr;
			ty->unresolved += s->nr;
			continue;
		}
		for (k = 0; k < s->nr; k++) {
			ty->addrs++;
			if (r->flags & PERF_BUILD_ID_OFFSET_F_MM_CHANGED) {
				ty->mm_changed++;
				continue;
			}
			count_addr(ty, m, m2, s, k, rec_find(r, s->addrs[k]));
		}
	}
}

/*
 * The user addresses a record should resolve: code addresses before any
 * walk past the stack's end, and not in a record flagged MM_CHANGED
 * (those resolve nothing, by design: the task exec()ed after the sample)
 */
static uint64_t code_addrs(const struct tally *ty)
{
	return ty->addrs - ty->not_code - ty->past_stop - ty->mm_changed;
}

static void tally_print(const char *what, struct tally *ty, struct trace *t)
{
	uint64_t base = code_addrs(ty);

	ksft_print_msg(
		"%s: %llu samples (%llu without cookie, %llu in the entry sampling stopped in, %llu without record), %d records, %llu lost; %llu user addresses, %llu of them no code address, %llu unresolved past one, %llu in MM_CHANGED records: %llu resolved (%.3f%% of the code addresses before any, MM_CHANGED aside), %llu unresolved, %llu wrong\n",
		what, (unsigned long long)ty->samples,
		(unsigned long long)ty->zero_cookie,
		(unsigned long long)ty->at_stop,
		(unsigned long long)ty->no_record, t->nr_r,
		(unsigned long long)t->lost,
		(unsigned long long)ty->addrs,
		(unsigned long long)ty->not_code,
		(unsigned long long)ty->past_stop,
		(unsigned long long)ty->mm_changed,
		(unsigned long long)ty->resolved,
		base ? 100.0 * ty->resolved / base : 0.0,
		(unsigned long long)ty->unresolved,
		(unsigned long long)ty->wrong);
	if (ty->wrong)
		ksft_print_msg("first wrong address: %s\n", ty->first_wrong);
	for (int i = 0; i < 3 && ty->unresolved_eg[i][0]; i++)
		ksft_print_msg("unresolved: %s\n", ty->unresolved_eg[i]);
	if (t->bad_records)
		ksft_print_msg("%d bad records, first: %s\n", t->bad_records,
			       t->why);
}

/*
 * What every end-to-end case requires: well-formed records, none lost,
 * every sample with a cookie joined, no address resolved wrongly, at least
 * @permille / 1000 of the code addresses resolved (those of an exec()ed-over
 * program excepted when @exec), and more than @min samples.
 */
static void expect_exact(struct __test_metadata *_metadata, struct trace *t,
			 struct tally *ty, uint64_t min, bool exec,
			 uint64_t permille)
{
	EXPECT_EQ(0, t->bad_records);
	EXPECT_EQ(0, t->lost);
	EXPECT_EQ(0, ty->wrong);
	EXPECT_EQ(0, ty->no_record);
	if (!exec)
		EXPECT_EQ(0, ty->mm_changed);
	EXPECT_LT(min, ty->samples);
	EXPECT_GE(ty->resolved * 1000, code_addrs(ty) * permille);
}

/* ---- Workloads ---- */

static unsigned long (*lib_work)(unsigned long n,
				 unsigned long (*cb)(unsigned long n));

static __attribute__((noipa)) unsigned long with_syscalls(unsigned long n)
{
	struct timespec ts;
	unsigned long i;

	/* Samples inside system calls and in the vDSO */
	for (i = 0; i < n / 256; i++) {
		syscall(__NR_getppid);
		clock_gettime(CLOCK_MONOTONIC, &ts);
	}
	return leaf(n / 2) + ts.tv_nsec;
}

static __attribute__((noipa)) unsigned long depth3(unsigned long n)
{
	return with_syscalls(n) + (lib_work ? lib_work(n, leaf) : leaf(n));
}

static __attribute__((noipa)) unsigned long depth2(unsigned long n)
{
	return depth3(n) + 1;
}

static __attribute__((noipa)) unsigned long depth1(unsigned long n)
{
	return depth2(n) * 3;
}

/* Burn @secs of CPU in the chain above, draining @rb now and then */
static void burn(double secs, struct ring *rb, int nr_rb, struct trace *t,
		 unsigned long (*jit)(unsigned long n))
{
	double until = cpu_seconds() + secs;
	int i;

	while (cpu_seconds() < until) {
		bido_sink += depth1(20000);
		if (jit)
			bido_sink += jit(60000);
		for (i = 0; i < nr_rb && t; i++)
			ring_drain(&rb[i], t);
	}
}

static int lib_path(char *buf, size_t len, const char *name)
{
	return snprintf(buf, len, "%s/%s", self_dir(), name);
}

/* Skip on a kernel without the feature; true when the test must stop */
static bool bido_missing(struct __test_metadata *_metadata)
{
	struct perf_event_attr attr;

	bido_attr(&attr);
	return bido_skip_missing(_metadata, &attr);
}

/* ---- Tests ---- */

/*
 * The main case: a task samples itself in its program, a dlopen()ed
 * library (mapped at a non-zero file offset), libc, the vDSO, system
 * calls and a JIT page; every user address must resolve exactly.
 */
TEST(resolve_self)
{
	unsigned long (*jit)(unsigned long n);
	static const uint8_t code[] = {
		0x48, 0x89, 0xf8,	/* mov %rdi,%rax */
		0x48, 0xff, 0xc8,	/* 1: dec %rax */
		0x75, 0xfb,		/* jnz 1b */
		0xc3,			/* ret */
	};
	struct perf_event_attr attr;
	struct trace t = {};
	struct tally ty;
	struct maps m;
	struct ring rb;
	char path[PATH_MAX];
	uint64_t in_lib = 0, in_jit = 0, in_vdso = 0, kernel_mode = 0;
	void *dl, *page;
	int i, k;

	if (bido_missing(_metadata))
		return;
	lib_path(path, sizeof(path), "libbido_dl.so");
	dl = dlopen(path, RTLD_NOW);
	ASSERT_NE(NULL, dl) TH_LOG("dlopen %s: %s", path, dlerror());
	lib_work = dlsym(dl, "bido_lib_work");
	ASSERT_NE(NULL, lib_work);

	page = mmap(NULL, 4096, PROT_READ | PROT_WRITE,
		    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, page);
	memcpy(page, code, sizeof(code));
	ASSERT_EQ(0, mprotect(page, 4096, PROT_READ | PROT_EXEC));
	jit = page;

	bido_attr(&attr);
	ASSERT_EQ(0, ring_open(&rb, &attr, 0, -1, RING_PAGES));
	/* Every pad byte must then come back zero (parse_record checks) */
	ASSERT_EQ(0, ring_prefill(&rb));
	ASSERT_EQ(0, ioctl(rb.fd, PERF_EVENT_IOC_ENABLE, 0));
	burn(1.5, &rb, 1, &t, jit);
	ASSERT_EQ(0, ioctl(rb.fd, PERF_EVENT_IOC_DISABLE, 0));
	ring_drain(&rb, &t);

	maps_read(&m, "/proc/self/maps");
	join(&t, &m, NULL, &ty, NULL, NULL);
	tally_print("resolve_self", &ty, &t);

	/* What the workload must have reached */
	for (i = 0; i < t.nr_s; i++) {
		struct record *r = find_record(&t, t.s[i].tid, t.s[i].cookie);

		for (k = 0; r && k < t.s[i].nr; k++) {
			const struct bido_map *bm = rec_find(r, t.s[i].addrs[k]);
			struct vma *v = maps_find(&m, t.s[i].addrs[k]);

			if (!bm || !v)
				continue;
			if (strstr(v->path, "libbido_dl.so") && bm->pgoff)
				in_lib++;
			if (v->start == (uintptr_t)page &&
			    (bm->flags & PERF_BUILD_ID_OFFSET_MAP_ANON))
				in_jit++;
			if (bm->flags & PERF_BUILD_ID_OFFSET_MAP_VDSO)
				in_vdso++;
		}
		kernel_mode += t.s[i].kernel && r;
	}
	ksft_print_msg(
		"addresses in the dlopen()ed library (pgoff != 0): %llu, JIT page: %llu, vDSO: %llu; samples in the kernel with a record: %llu\n",
		(unsigned long long)in_lib,
		(unsigned long long)in_jit,
		(unsigned long long)in_vdso,
		(unsigned long long)kernel_mode);

	expect_exact(_metadata, &t, &ty, 100, false, 999);
	/*
	 * Every sample gets a cookie, but for one taken after its entry's
	 * record was written from user registers that changed since (a system
	 * call restarted after a signal): at most 1 in 1000.
	 */
	EXPECT_LE(ty.zero_cookie * 1000, ty.samples);
	EXPECT_LT(0, in_lib);
	EXPECT_LT(0, in_jit);
	EXPECT_LT(0, kernel_mode);

	free(m.v);
	trace_free(&t);
	ring_close(&rb);
	lib_work = NULL;
	dlclose(dl);
}

/*
 * Code mapped by hand, without the loader reading the file first, from
 * files the loader would not see: each case gives the mapping flags and
 * the build-ID the record must carry.
 */
enum special {
	SP_COLD, SP_MEMFD, SP_DELETED, SP_NO_BUILD_ID, SP_SECRET, SP_DATA
};

struct special_map {
	void *base;
	size_t len;
	uint64_t pgoff;
	unsigned long (*spin)(unsigned long n);
	uintptr_t fake_ret;	/* instead: a frame that "returns" here */
	int bid_size;
	uint8_t bid[MAX_BUILD_ID];
	uint8_t want_flags, deny_flags;
	/* Unreadable until the note is in the page cache: allowed, then */
	bool pending;
	bool want_none;		/* no map may cover it: not code */
};

static int copy_fd(int from, int to)
{
	char buf[65536];
	ssize_t n;

	lseek(from, 0, SEEK_SET);
	while ((n = read(from, buf, sizeof(buf))) > 0)
		if (write(to, buf, n) != n)
			return -1;
	return n;
}

/* memfd_secret() memory has no write(): copy through a mapping */
static int fill_secret(int fd, int src)
{
	struct stat st;
	void *p;
	int ret = 0;

	if (fstat(src, &st) || ftruncate(fd, st.st_size))
		return -errno;
	p = mmap(NULL, st.st_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED)
		return -errno;
	if (pread(src, p, st.st_size, 0) != st.st_size)
		ret = -EIO;
	munmap(p, st.st_size);
	return ret;
}

/*
 * Map the page(s) of the file @fd that hold bido_spin(), executable, at
 * their file offset; the page with the ELF headers and notes stays
 * unmapped.
 */
static int map_spin(struct special_map *sm, int fd, int src)
{
	uint64_t off = elf_sym_offset(src, "bido_spin");
	long page = sysconf(_SC_PAGESIZE);

	if (!off)
		return -ENOENT;
	sm->pgoff = off & ~(uint64_t)(page - 1);
	if (!sm->pgoff)
		return -ERANGE;		/* the test needs the note elsewhere */
	sm->len = page * 2;
	sm->base = mmap(NULL, sm->len, PROT_READ | PROT_EXEC, MAP_SHARED, fd,
			sm->pgoff);
	if (sm->base == MAP_FAILED)
		return -errno;
	sm->spin = (void *)((char *)sm->base + (off - sm->pgoff));
	return 0;
}

/*
 * Map the first page of @fd for reading only, @flags MAP_SHARED or
 * MAP_PRIVATE, as no code: a made-up frame returns into it, and no record
 * may describe it (nor read its file).
 */
static int map_not_code(struct special_map *sm, int fd, int flags)
{
	sm->len = sysconf(_SC_PAGESIZE);
	sm->base = mmap(NULL, sm->len, PROT_READ, flags, fd, 0);
	if (sm->base == MAP_FAILED)
		return -errno;
	sm->fake_ret = (uintptr_t)sm->base + 0x100;
	sm->want_none = true;
	return 0;
}

/* Is the first page of @fd in the page cache? */
static int first_page_cached(int fd)
{
	unsigned char vec = 0;
	void *p = mmap(NULL, 4096, PROT_READ, MAP_SHARED, fd, 0);

	if (p == MAP_FAILED)
		return -1;
	mincore(p, 4096, &vec);
	munmap(p, 4096);
	return vec & 1;
}

/* The first user address of @s in the special mapping, or 0 */
static uint64_t special_addr(const struct sample *s,
			     const struct special_map *sm)
{
	int k;

	for (k = 0; k < s->nr; k++)
		if (s->addrs[k] >= (uintptr_t)sm->base &&
		    s->addrs[k] < (uintptr_t)sm->base + sm->len)
			return s->addrs[k];
	return 0;
}

/* Has a record described the mapping with its build-ID (if it must)? */
static bool read_yet(const struct trace *t, const struct special_map *sm)
{
	int i, k;

	if (!sm->pending)
		return true;
	for (i = 0; i < t->nr_r; i++)
		for (k = 0; k < (int)t->r[i].nr; k++)
			if (t->r[i].maps[k].start == (uintptr_t)sm->base &&
			    t->r[i].maps[k].build_id_size)
				return true;
	return false;
}

static void run_special(struct __test_metadata *_metadata,
			struct special_map *sm, const char *what)
{
	struct perf_event_attr attr;
	struct trace t = {};
	uint64_t hits = 0, ok = 0, bad_map = 0, pending = 0;
	uintptr_t frame[2] = { 0, sm->fake_ret };
	struct ring rb;
	int i, k;

	bido_attr(&attr);
	ASSERT_EQ(0, ring_open(&rb, &attr, 0, -1, RING_PAGES));
	ASSERT_EQ(0, ioctl(rb.fd, PERF_EVENT_IOC_ENABLE, 0));
	for (i = 0; i < 200 && (hits < 20 || !read_yet(&t, sm)); i++) {
		double until = cpu_seconds() + 0.01;

		while (cpu_seconds() < until) {
			if (sm->fake_ret)
				fake_frame_spin(100000, frame);
			else
				bido_sink += sm->spin(100000);
		}
		ring_drain(&rb, &t);
		hits = 0;
		for (k = 0; k < t.nr_s; k++)
			hits += !!special_addr(&t.s[k], sm);
	}
	ASSERT_EQ(0, ioctl(rb.fd, PERF_EVENT_IOC_DISABLE, 0));
	ring_drain(&rb, &t);

	for (i = 0; i < t.nr_s; i++) {
		struct sample *s = &t.s[i];
		uint64_t a = special_addr(s, sm);
		const struct bido_map *bm;
		struct record *r;

		if (!a)
			continue;
		r = find_record(&t, s->tid, s->cookie);
		bm = r ? rec_find(r, a) : NULL;
		/* Its record, which describes no map there */
		if (sm->want_none && r && !bm) {
			ok++;
		} else if (!sm->want_none && bm &&
		    bm->start == (uintptr_t)sm->base &&
		    bm->end == (uintptr_t)sm->base + sm->len &&
		    bm->pgoff == sm->pgoff &&
		    (bm->flags & sm->want_flags) == sm->want_flags &&
		    !(bm->flags & sm->deny_flags) &&
		    bm->build_id_size == sm->bid_size &&
		    !memcmp(bm->build_id, sm->bid, sm->bid_size)) {
			ok++;
		} else if (sm->pending && bm &&
			   bm->start == (uintptr_t)sm->base &&
			   bm->pgoff == sm->pgoff && !bm->build_id_size &&
			   bm->flags == PERF_BUILD_ID_OFFSET_MAP_UNREADABLE) {
			pending++;
		} else if (bad_map++ == 0) {
			TH_LOG("%s: %#lx: map %s, flags %#x, pgoff %#llx, build-ID size %d",
			       what, (unsigned long)a,
			       bm ? "found" : "missing", bm ? bm->flags : 0,
			       bm ? (unsigned long long)bm->pgoff : 0ULL,
			       bm ? bm->build_id_size : -1);
		}
	}
	ksft_print_msg(
		"%s: %llu samples in the mapping, %llu as expected, %llu unreadable until the note was read\n",
		what, (unsigned long long)hits,
		(unsigned long long)ok, (unsigned long long)pending);
	EXPECT_EQ(0, t.bad_records);
	EXPECT_LT(0, hits);
	EXPECT_LT(0, ok);
	EXPECT_EQ(hits, ok + pending);
	trace_free(&t);
	ring_close(&rb);
}

FIXTURE(special) {
	int src;		/* the library, read-only */
	struct special_map sm;
};

FIXTURE_VARIANT(special) {
	enum special kind;
	const char *lib;
};

FIXTURE_VARIANT_ADD(special, cold_note) {
	.kind = SP_COLD, .lib = "libbido_cold.so",
};

FIXTURE_VARIANT_ADD(special, memfd) {
	.kind = SP_MEMFD, .lib = "libbido_dl.so",
};

FIXTURE_VARIANT_ADD(special, deleted) {
	.kind = SP_DELETED, .lib = "libbido_dl.so",
};

FIXTURE_VARIANT_ADD(special, no_build_id) {
	.kind = SP_NO_BUILD_ID, .lib = "libbido_nobid.so",
};

FIXTURE_VARIANT_ADD(special, secretmem) {
	.kind = SP_SECRET, .lib = "libbido_dl.so",
};

FIXTURE_VARIANT_ADD(special, not_code) {
	.kind = SP_DATA, .lib = "libbido_dl.so",
};

FIXTURE_SETUP(special)
{
	char path[PATH_MAX];

	memset(&self->sm, 0, sizeof(self->sm));
	self->sm.base = MAP_FAILED;
	lib_path(path, sizeof(path), variant->lib);
	self->src = open(path, O_RDONLY | O_CLOEXEC);
	ASSERT_LE(0, self->src) TH_LOG("%s: %s", path, strerror(errno));
	self->sm.bid_size = elf_build_id(self->src, self->sm.bid, NULL);
}

FIXTURE_TEARDOWN(special)
{
	if (self->sm.base != MAP_FAILED)
		munmap(self->sm.base, self->sm.len);
	close(self->src);
}

TEST_F(special, run)
{
	struct special_map *sm = &self->sm;
	char tmp[] = "/tmp/bido_deleted_XXXXXX";
	int fd = -1, ret, cached;

	if (bido_missing(_metadata))
		return;
	switch (variant->kind) {
	case SP_COLD:
		/*
		 * The library lives on the filesystem the tests were built
		 * on (9p in the test guest), not tmpfs, so its pages can be
		 * dropped.  The first records find the note out of the page
		 * cache and say the file is unreadable; a worker reads it,
		 * and the later records carry the build-ID.
		 */
		fd = dup(self->src);
		ASSERT_EQ(0, map_spin(sm, fd, self->src));
		posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
		cached = first_page_cached(fd);
		if (cached)
			SKIP(return,
			     "the filesystem of %s keeps its page cache (mincore %d): cannot test a cold note",
			     variant->lib, cached);
		sm->want_flags = 0;
		sm->deny_flags = PERF_BUILD_ID_OFFSET_MAP_UNREADABLE;
		sm->pending = true;
		ASSERT_LT(0, sm->bid_size);
		break;
	case SP_MEMFD:
		fd = memfd_create("bido", MFD_CLOEXEC);
		ASSERT_LE(0, fd);
		ASSERT_EQ(0, copy_fd(self->src, fd));
		ASSERT_EQ(0, map_spin(sm, fd, self->src));
		sm->want_flags = PERF_BUILD_ID_OFFSET_MAP_ANON_FILE;
		break;
	case SP_DELETED:
		fd = mkstemp(tmp);
		ASSERT_LE(0, fd);
		ASSERT_EQ(0, copy_fd(self->src, fd));
		ASSERT_EQ(0, map_spin(sm, fd, self->src));
		ASSERT_EQ(0, unlink(tmp));
		sm->want_flags = PERF_BUILD_ID_OFFSET_MAP_DELETED;
		break;
	case SP_NO_BUILD_ID:
		fd = dup(self->src);
		ASSERT_EQ(0, map_spin(sm, fd, self->src));
		ASSERT_EQ(0, sm->bid_size);
		sm->want_flags = PERF_BUILD_ID_OFFSET_MAP_NO_BUILD_ID;
		break;
	case SP_SECRET:
#ifndef __x86_64__
		SKIP(return, "the made-up frame is x86-64 code");
#endif
		fd = syscall(__NR_memfd_secret, O_CLOEXEC);
		if (fd < 0)
			SKIP(return, "memfd_secret: %s", strerror(errno));
		ret = fill_secret(fd, self->src);
		ASSERT_EQ(0, ret) TH_LOG("fill memfd_secret: %s", strerror(-ret));
		/* Its mount is noexec: never code */
		ASSERT_EQ(0, map_not_code(sm, fd, MAP_SHARED));
		break;
	case SP_DATA:
#ifndef __x86_64__
		SKIP(return, "the made-up frame is x86-64 code");
#endif
		/* An ELF file mapped for reading only, as data */
		fd = dup(self->src);
		ASSERT_EQ(0, map_not_code(sm, fd, MAP_PRIVATE));
		break;
	}
	close(fd);
	run_special(_metadata, sm, variant->lib);
}

/* One thread is sampled while another maps and unmaps a library */
static int stop_churn;

static void *churn(void *arg)
{
	const char *path = arg;
	unsigned long n = 0;

	while (!__atomic_load_n(&stop_churn, __ATOMIC_RELAXED)) {
		void *dl = dlopen(path, RTLD_NOW | RTLD_LOCAL);
		int fd = open(path, O_RDONLY | O_CLOEXEC);
		void *p = MAP_FAILED;

		if (fd >= 0) {
			p = mmap(NULL, 8192, PROT_READ | PROT_EXEC,
				 MAP_PRIVATE, fd, 4096);
			close(fd);
		}
		if (p != MAP_FAILED)
			munmap(p, 8192);
		if (dl)
			dlclose(dl);
		n++;
	}
	return (void *)n;
}

/*
 * Sample this thread, into @rb, while it runs @work and another thread
 * churns; the churning one is not sampled.  Returns its rounds.
 */
static unsigned long beside_churn(struct __test_metadata *_metadata,
				  struct ring *rb, struct trace *t,
				  void (*work)(struct ring *rb, struct trace *t))
{
	struct perf_event_attr attr;
	char path[PATH_MAX];
	void *iters = NULL;
	pthread_t th;

	lib_path(path, sizeof(path), "libbido_nobid.so");
	__atomic_store_n(&stop_churn, 0, __ATOMIC_RELAXED);
	ASSERT_EQ(0, pthread_create(&th, NULL, churn, path));

	bido_attr(&attr);
	ASSERT_EQ(0, ring_open(rb, &attr, syscall(__NR_gettid), -1,
			       RING_PAGES));
	ASSERT_EQ(0, ioctl(rb->fd, PERF_EVENT_IOC_ENABLE, 0));
	work(rb, t);
	ASSERT_EQ(0, ioctl(rb->fd, PERF_EVENT_IOC_DISABLE, 0));
	__atomic_store_n(&stop_churn, 1, __ATOMIC_RELAXED);
	pthread_join(th, &iters);
	ring_drain(rb, t);
	return (unsigned long)iters;
}

static void burn_second(struct ring *rb, struct trace *t)
{
	burn(1.0, rb, 1, t, NULL);
}

TEST(munmap_race)
{
	unsigned long iters;
	struct trace t = {};
	struct tally ty;
	struct ring rb;
	struct maps m;

	if (bido_missing(_metadata))
		return;
	iters = beside_churn(_metadata, &rb, &t, burn_second);

	/* The sampled thread's own code was never unmapped: exact */
	maps_read(&m, "/proc/self/maps");
	join(&t, &m, NULL, &ty, NULL, NULL);
	tally_print("munmap_race", &ty, &t);
	ksft_print_msg("munmap_race: %lu map/unmap rounds beside the sampled thread\n",
		       iters);
	expect_exact(_metadata, &t, &ty, 50, false, 999);
	EXPECT_LT(0, iters);
	free(m.v);
	trace_free(&t);
	ring_close(&rb);
}

/*
 * Inheritance, fork, exec and exit: a child forks a grandchild that runs
 * a while, then execs this program, which burns CPU and writes its maps
 * for the check.  Every sample of every task must get its record, from
 * the inherited events into the one buffer.
 */
static int spin_main(const char *out)
{
	char buf[65536];
	int in, fd;
	ssize_t n;

	burn(0.5, NULL, 0, NULL, NULL);
	in = open("/proc/self/maps", O_RDONLY);
	fd = open(out, O_WRONLY | O_TRUNC);
	while ((n = read(in, buf, sizeof(buf))) > 0)
		if (write(fd, buf, n) != n)
			return 1;
	/* More samples, the last ones in exit_group() */
	burn(0.1, NULL, 0, NULL, NULL);
	syscall(__NR_exit_group, 0);
	return 0;
}

struct tid_set {
	pid_t tids[8];
	int nr;
};

static bool pick_tids(const struct sample *s, void *arg)
{
	struct tid_set *ts = arg;
	int i;

	for (i = 0; i < ts->nr; i++)
		if ((pid_t)s->tid == ts->tids[i])
			return true;
	return false;
}

static bool pick_not_tids(const struct sample *s, void *arg)
{
	return !pick_tids(s, arg);
}

TEST(fork_exec_exit)
{
	struct perf_event_attr attr;
	struct tally before, after;
	struct tid_set exec_tids = {};
	int nr_cpus = sysconf(_SC_NPROCESSORS_ONLN);
	int go, tids[2], status, fd, i;
	struct trace t = {};
	struct maps m, mx;
	char spin_maps[] = "/tmp/bido_spin_maps_XXXXXX";
	struct ring *rb;
	const char *self;
	pid_t child;

	if (bido_missing(_metadata))
		return;
	fd = mkstemp(spin_maps);
	ASSERT_LE(0, fd);
	close(fd);
	self = self_exe();
	ASSERT_NE(0, self[0]);
	ASSERT_EQ(0, pipe(tids));

	child = fork_held(&go);
	ASSERT_LE(0, child);
	if (!child) {
		pid_t gc;

		burn(0.3, NULL, 0, NULL, NULL);
		gc = fork();
		if (!gc) {
			burn(0.3, NULL, 0, NULL, NULL);
			execl(self, self, "--bido-spin", spin_maps, NULL);
			_exit(127);
		}
		if (write(tids[1], &gc, sizeof(gc)) != sizeof(gc))
			_exit(1);
		waitpid(gc, &status, 0);
		_exit(WIFEXITED(status) ? WEXITSTATUS(status) : 1);
	}

	/* Inherited events are mmap()ed per CPU (one per task is EINVAL) */
	bido_attr(&attr);
	attr.inherit = 1;
	rb = calloc(nr_cpus, sizeof(*rb));
	for (i = 0; i < nr_cpus; i++)
		ASSERT_EQ(0, ring_open(&rb[i], &attr, child, i, RING_PAGES));
	status = trace_child(rb, nr_cpus, &t, go, child, 20000);
	ASSERT_TRUE(WIFEXITED(status));
	ASSERT_EQ(0, WEXITSTATUS(status));
	ASSERT_EQ(sizeof(pid_t), read(tids[0], &exec_tids.tids[0],
				      sizeof(pid_t)));
	exec_tids.nr = 1;

	/*
	 * The child and the grandchild before exec share this program's
	 * layout (fork keeps it); after exec the grandchild's own maps are
	 * the truth.  Samples of the grandchild are split by time: records
	 * from before the exec resolve against ours.
	 */
	maps_read(&m, "/proc/self/maps");
	maps_read(&mx, spin_maps);
	ASSERT_LT(0, mx.nr) TH_LOG("the exec()ed program wrote no maps");
	join(&t, &m, NULL, &before, pick_not_tids, &exec_tids);
	tally_print("fork_exec_exit: child", &before, &t);
	join(&t, &m, &mx, &after, pick_tids, &exec_tids);
	tally_print("fork_exec_exit: grandchild, before and after exec",
		    &after, &t);

	expect_exact(_metadata, &t, &before, 20, false, 999);
	expect_exact(_metadata, &t, &after, 20, true, 999);
	unlink(spin_maps);
	free(m.v);
	free(mx.v);
	trace_free(&t);
	for (i = 0; i < nr_cpus; i++)
		ring_close(&rb[i]);
	free(rb);
}

/*
 * A sampling receiver on this process, inherited by its new children and
 * threads; without a buffer, which an inherited per-task event cannot have
 */
/*
 * Once the last receiving event is gone, every task gives back its
 * per-task state (the state, the table of its last record, the unwind
 * cache) when it next returns to user space.  Eight threads are sampled
 * into a buffer with room (a record none got leaves no table), get one
 * each, and must have given them back after the event is closed.
 */
static int stop_spin;

static void *spin_syscalls(void *arg)
{
	while (!__atomic_load_n(&stop_spin, __ATOMIC_RELAXED)) {
		bido_sink += leaf(20000);
		syscall(__NR_getppid);
	}
	return arg;
}

/* Per-task states (@stash 0) or stashes (1) allocated and not freed since @tp */
static long long held_since(struct bido_tp tp[4], int stash)
{
	long long alloc = bido_tp_read(&tp[2 * stash]);
	long long freed = bido_tp_read(&tp[2 * stash + 1]);

	return alloc < 0 || freed < 0 ? LLONG_MIN : alloc - freed;
}

/*
 * The per-task state and the stash of each sampled thread are given back
 * once the last receiving event is gone, while the threads live on.
 * Counted with the tracepoints perf_build_id_offset:perf_bido_state_*.
 */
TEST(stashes_freed)
{
	long long during, after = LLONG_MIN, t_during, t_after = LLONG_MIN;
	static const char *const filter[] = { "stash == 0", "stash == 1" };
	struct perf_event_attr attr;
	struct bido_tp tp[4];
	struct ring *rb;
	pthread_t th[8];
	int i, nr_cpus;

	if (bido_missing(_metadata))
		return;
	for (i = 0; i < 4; i++) {
		if (bido_tp_open(&tp[i], i % 2 ? "perf_bido_state_free" :
				 "perf_bido_state_alloc", filter[i / 2])) {
			while (i--)
				bido_tp_close(&tp[i]);
			SKIP(return, "cannot count the perf_build_id_offset tracepoints: %s",
			     strerror(errno));
		}
	}
	/* After the counters: the spares the receiver makes count too */
	bido_attr(&attr);
	attr.inherit = 1;
	/* An inherited event is mapped per CPU */
	nr_cpus = sysconf(_SC_NPROCESSORS_ONLN);
	rb = calloc(nr_cpus, sizeof(*rb));
	ASSERT_NE(NULL, rb);
	for (i = 0; i < nr_cpus; i++) {
		ASSERT_EQ(0, ring_open(&rb[i], &attr, 0, i, RING_PAGES / 4));
		ASSERT_EQ(0, ioctl(rb[i].fd, PERF_EVENT_IOC_ENABLE, 0));
	}
	__atomic_store_n(&stop_spin, 0, __ATOMIC_RELAXED);
	for (i = 0; i < 8; i++)
		ASSERT_EQ(0, pthread_create(&th[i], NULL, spin_syscalls, NULL));
	burn(0.3, NULL, 0, NULL, NULL);
	during = held_since(tp, 1);
	t_during = held_since(tp, 0);

	/* The threads go on entering the kernel and returning */
	for (i = 0; i < nr_cpus; i++)
		ring_close(&rb[i]);
	free(rb);
	for (i = 0; i < 100; i++) {
		usleep(50000);
		after = held_since(tp, 1);
		t_after = held_since(tp, 0);
		if (after <= during - 8 && t_after <= t_during - 8)
			break;
	}
	__atomic_store_n(&stop_spin, 1, __ATOMIC_RELAXED);
	for (i = 0; i < 8; i++)
		pthread_join(th[i], NULL);
	for (i = 0; i < 4; i++)
		bido_tp_close(&tp[i]);

	ksft_print_msg(
		"stashes_freed: %lld tables and stashes made with 8 threads sampled, %lld once the event was closed; per-task states %lld and %lld (spares included)\n",
		during, after, t_during, t_after);
	ASSERT_NE(LLONG_MIN, during);
	EXPECT_LE(8, during);
	EXPECT_LE(after, during - 8);
	/* Each sampled thread has one, and gives it back */
	EXPECT_LE(8, t_during);
	EXPECT_LE(t_after, t_during - 8);
}

/* Invalid combinations and reserved bits: EINVAL */
TEST(invalid_attrs)
{
	struct perf_event_attr attr;
	uint64_t *flags;
	int fd;

	if (bido_missing(_metadata))
		return;

	bido_attr(&attr);
	attr.exclude_user = 1;
	EXPECT_EQ(-1, perf_open(&attr, 0, -1));
	EXPECT_EQ(EINVAL, errno) TH_LOG("sample bit with exclude_user");

	bido_attr(&attr);
	attr.sample_type = PERF_SAMPLE_IP;
	attr.exclude_user = 1;
	EXPECT_EQ(-1, perf_open(&attr, 0, -1));
	EXPECT_EQ(EINVAL, errno) TH_LOG("defer_output with exclude_user");

	/* Deferred callchains, with and without the sample bit */
	bido_attr(&attr);
	attr.defer_callchain = 1;
	fd = perf_open(&attr, 0, -1);
	EXPECT_LE(0, fd) TH_LOG("defer_callchain: %s", strerror(errno));
	close(fd);
	attr.sample_type &= ~PERF_SAMPLE_BUILD_ID_OFFSET;
	fd = perf_open(&attr, 0, -1);
	EXPECT_LE(0, fd) TH_LOG("defer_callchain alone: %s", strerror(errno));
	close(fd);

	/* The first reserved bit after defer_output, and the next sample bit */
	bido_attr(&attr);
	flags = (uint64_t *)((char *)&attr +
			     offsetof(struct perf_event_attr, read_format) + 8);
	*flags |= 1ULL << 40;
	EXPECT_EQ(-1, perf_open(&attr, 0, -1));
	EXPECT_EQ(EINVAL, errno) TH_LOG("reserved attr bit 40");

	bido_attr(&attr);
	attr.sample_type |= PERF_SAMPLE_BUILD_ID_OFFSET << 1;
	EXPECT_EQ(-1, perf_open(&attr, 0, -1));
	EXPECT_EQ(EINVAL, errno) TH_LOG("sample bit above the new one");

	/* Valid: each bit alone, and a receiving event that does not sample */
	bido_attr(&attr);
	attr.defer_output = 0;
	fd = perf_open(&attr, 0, -1);
	EXPECT_LE(0, fd) TH_LOG("sample bit alone: %s", strerror(errno));
	close(fd);

	bido_attr(&attr);
	attr.type = PERF_TYPE_SOFTWARE;
	attr.config = PERF_COUNT_SW_DUMMY;
	attr.sample_type = PERF_SAMPLE_TID | PERF_SAMPLE_TIME;
	fd = perf_open(&attr, 0, -1);
	EXPECT_LE(0, fd) TH_LOG("defer_output on a dummy: %s", strerror(errno));
	close(fd);
}

/*
 * The permission rules of perf_event_open() are the gate, and the new bits
 * add none of their own.  As an unprivileged user at each level of
 * perf_event_paranoid: 3 (Debian's: no unprivileged use at all) refuses
 * everything; 2 lets a user sample its own task in user mode (and get its
 * records) but not in kernel mode, not another user's task and no CPU;
 * 1 adds kernel mode for its own task, still no CPU; 0 allows a CPU.
 * Refusals are EACCES, anything else is a failure of its own.
 */
enum {
	PERM_OWN	= 1,	/* own task, user mode: opened */
	PERM_OWN_RECORD	= 2,	/* ... and its samples joined their records */
	PERM_KERNEL	= 4,	/* own task with kernel mode: opened */
	PERM_FOREIGN	= 8,	/* another user's task: opened */
	PERM_CPU	= 16,	/* a CPU: opened */
	PERM_CPU_SB	= 32,	/* a receiving dummy event on a CPU: opened */
	PERM_OTHER_ERR	= 64,	/* refused with something other than EACCES */
};

/* Open @attr as asked and close it; @bit if it opened, else note errno */
static int perm_try(struct perf_event_attr *attr, pid_t pid, int cpu,
		    int bit, const char *what)
{
	int fd = perf_open(attr, pid, cpu);

	if (fd >= 0) {
		close(fd);
		return bit;
	}
	if (errno == EACCES)
		return 0;
	ksft_print_msg("%s: %s, not EACCES\n", what, strerror(errno));
	return PERM_OTHER_ERR;
}

static int unprivileged(pid_t foreign)
{
	struct perf_event_attr attr;
	struct trace t = {};
	struct tally ty;
	struct maps m;
	struct ring rb;
	int ok = 0;

	if (setresgid(65534, 65534, 65534) || setresuid(65534, 65534, 65534))
		return PERM_OTHER_ERR;

	bido_attr(&attr);
	attr.exclude_kernel = 1;
	attr.exclude_hv = 1;
	if (!ring_open(&rb, &attr, 0, -1, RING_PAGES)) {
		ok |= PERM_OWN;
		ioctl(rb.fd, PERF_EVENT_IOC_ENABLE, 0);
		burn(0.3, &rb, 1, &t, NULL);
		ioctl(rb.fd, PERF_EVENT_IOC_DISABLE, 0);
		ring_drain(&rb, &t);
		maps_read(&m, "/proc/self/maps");
		join(&t, &m, NULL, &ty, NULL, NULL);
		tally_print("own task as nobody", &ty, &t);
		if (ty.samples && !ty.wrong && !t.bad_records &&
		    ty.resolved * 1000 >=
		    (ty.addrs - ty.not_code - ty.past_stop) * 999)
			ok |= PERM_OWN_RECORD;
	} else if (errno != EACCES) {
		ksft_print_msg("own task: %s, not EACCES\n", strerror(errno));
		ok |= PERM_OTHER_ERR;
	}
	ok |= perm_try(&attr, foreign, -1, PERM_FOREIGN, "foreign task");
	ok |= perm_try(&attr, -1, 0, PERM_CPU, "CPU-wide");

	attr.exclude_kernel = 0;
	ok |= perm_try(&attr, 0, -1, PERM_KERNEL, "own task, kernel mode");

	/* A receiving side-band event alone is CPU-wide too */
	attr.type = PERF_TYPE_SOFTWARE;
	attr.config = PERF_COUNT_SW_DUMMY;
	attr.sample_type = PERF_SAMPLE_TID | PERF_SAMPLE_TIME;
	attr.exclude_kernel = 1;
	ok |= perm_try(&attr, -1, 0, PERM_CPU_SB, "CPU-wide receiver");
	return ok;
}

FIXTURE(permissions) {
	int saved;
};

FIXTURE_VARIANT(permissions) {
	int paranoid;
	int allowed;	/* PERM_* bits expected; every other one must be clear */
};

FIXTURE_VARIANT_ADD(permissions, paranoid_3) {
	.paranoid = 3,
	.allowed = 0,
};

FIXTURE_VARIANT_ADD(permissions, paranoid_2) {
	.paranoid = 2,
	.allowed = PERM_OWN | PERM_OWN_RECORD,
};

FIXTURE_VARIANT_ADD(permissions, paranoid_1) {
	.paranoid = 1,
	.allowed = PERM_OWN | PERM_OWN_RECORD | PERM_KERNEL,
};

FIXTURE_VARIANT_ADD(permissions, paranoid_0) {
	.paranoid = 0,
	.allowed = PERM_OWN | PERM_OWN_RECORD | PERM_KERNEL | PERM_CPU |
		   PERM_CPU_SB,
};

FIXTURE_SETUP(permissions)
{
	self->saved = read_int("/proc/sys/kernel/perf_event_paranoid");
}

FIXTURE_TEARDOWN(permissions)
{
	if (self->saved != INT_MIN)
		write_paranoid(self->saved);
}

TEST_F(permissions, run)
{
	static const char * const names[] = {
		"own task", "own task's records", "own task in kernel mode",
		"foreign task", "CPU-wide", "CPU-wide receiver",
		"a refusal other than EACCES",
	};
	int status, got, i;
	pid_t pid, foreign;

	if (bido_missing(_metadata))
		return;
	if (geteuid())
		SKIP(return, "needs root to become another user");
	ASSERT_NE(INT_MIN, self->saved);
	ASSERT_EQ(0, write_paranoid(variant->paranoid));

	/* A task of root's that the unprivileged child may not watch */
	foreign = fork();
	ASSERT_LE(0, foreign);
	if (!foreign) {
		pause();
		_exit(0);
	}
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid)
		_exit(unprivileged(foreign));
	waitpid(pid, &status, 0);
	kill(foreign, SIGKILL);
	waitpid(foreign, NULL, 0);

	ASSERT_TRUE(WIFEXITED(status));
	got = WEXITSTATUS(status);
	ksft_print_msg("paranoid %d as nobody: allowed %#x, expected %#x\n",
		       variant->paranoid, got, variant->allowed);
	for (i = 0; i < (int)ARRAY_SIZE(names); i++)
		EXPECT_EQ(variant->allowed & 1 << i, got & 1 << i)
			TH_LOG("paranoid %d: %s %s", variant->paranoid, names[i],
			       got & 1 << i ? "allowed" : "refused");
}

/*
 * Deferred callchains (attr.defer_callchain) with the sample bit.  First
 * a spin under made-up frames whose return addresses are known (in this
 * program and in libc, never executed): every sample carries no user
 * frame of its own but PERF_CONTEXT_USER_DEFERRED and a cookie, the same
 * as its build-ID offset cookie (one request per kernel entry, one walk);
 * one CALLCHAIN_DEFERRED per (tid, cookie) holds exactly the made-up
 * frames after the IP (samples in the few instructions before and after
 * the spin sets %rbp have the real callers, and there nothing made-up
 * at all); and the build-ID offset record of the cookie
 * covers every one of them.  Then the usual workload (program, libc,
 * vDSO, system calls): with the deferred frames merged into the samples,
 * every user address resolves right against /proc/self/maps and the
 * files' notes, as in resolve_self.
 */
TEST(deferred_callchain)
{
	uintptr_t frames[6];
	uint64_t in_spin = 0, exact = 0, both = 0, same = 0, inline_user = 0;
	uint64_t user_no_defer = 0, deferred = 0, outside = 0;
	struct perf_event_attr attr;
	struct trace t = {};
	struct tally ty;
	struct maps m;
	struct ring rb;
	double until;
	int i, dup, missing;

	if (bido_missing(_metadata))
		return;
	frames[0] = (uintptr_t)&frames[2];
	frames[1] = (uintptr_t)depth1 + 1;
	frames[2] = (uintptr_t)&frames[4];
	frames[3] = (uintptr_t)depth2 + 2;
	frames[4] = 0;
	frames[5] = (uintptr_t)getppid + 3;

	bido_attr(&attr);
	attr.defer_callchain = 1;
	ASSERT_EQ(0, ring_open(&rb, &attr, 0, -1, RING_PAGES));
	ASSERT_EQ(0, ioctl(rb.fd, PERF_EVENT_IOC_ENABLE, 0));
	for (until = cpu_seconds() + 0.6; cpu_seconds() < until;) {
		fake_frame_spin(100000, frames);
		ring_drain(&rb, &t);
	}
	burn(0.6, &rb, 1, &t, NULL);
	ASSERT_EQ(0, ioctl(rb.fd, PERF_EVENT_IOC_DISABLE, 0));
	ring_drain(&rb, &t);

	missing = trace_merge_deferred(&t, &dup);
	for (i = 0; i < t.nr_s; i++) {
		const struct sample *s = &t.s[i];
		uint64_t ip = s->nr ? s->addrs[0] : 0;

		inline_user += s->inline_user;
		deferred += !!s->defer_cookie;
		user_no_defer += !s->kernel && !s->defer_cookie;
		if (s->defer_cookie && s->cookie) {
			both++;
			same += s->defer_cookie == s->cookie;
		}
		if (s->kernel || !s->merged || ip < (uintptr_t)fake_frame_spin ||
		    ip >= (uintptr_t)fake_frame_spin + 64)
			continue;
		in_spin++;
		if (s->nr == 4 && s->addrs[1] == frames[1] &&
		    s->addrs[2] == frames[3] && s->addrs[3] == frames[5])
			exact++;
		/* Before or after %rbp is set: the real callers */
		else if (s->nr < 2 || s->addrs[1] != frames[1])
			outside++;
		else if (in_spin - exact - outside == 1)
			TH_LOG("spin sample: %d frames: %#llx %#llx %#llx",
			       s->nr, (unsigned long long)s->addrs[1 % s->nr],
			       (unsigned long long)s->addrs[2 % s->nr],
			       (unsigned long long)s->addrs[3 % s->nr]);
	}
	ksft_print_msg(
		"deferred_callchain: %d samples, %llu with a deferred callchain (%llu in user mode without), %llu with user frames inline; %d CALLCHAIN_DEFERRED records (%d twice), %d samples without theirs; cookies equal in %llu of %llu; %llu samples in the spin, %llu with exactly the made-up frames, %llu where the frame pointer was not yet or no longer set\n",
		t.nr_s, (unsigned long long)deferred,
		(unsigned long long)user_no_defer,
		(unsigned long long)inline_user, t.nr_d, dup, missing,
		(unsigned long long)same, (unsigned long long)both,
		(unsigned long long)in_spin, (unsigned long long)exact,
		(unsigned long long)outside);

	maps_read(&m, "/proc/self/maps");
	join(&t, &m, NULL, &ty, NULL, NULL);
	tally_print("deferred_callchain", &ty, &t);
	expect_exact(_metadata, &t, &ty, 100, false, 999);

	EXPECT_EQ(0, inline_user);
	EXPECT_EQ(0, user_no_defer);
	EXPECT_EQ(0, dup);
	/* The entry of the DISABLE ioctl: its record finds the event off */
	EXPECT_GE(1, missing);
	EXPECT_EQ(both, same);
	EXPECT_LT(20, exact);
	/* A chain that starts with a made-up frame has them all, exactly */
	EXPECT_EQ(in_spin, exact + outside);
	EXPECT_GE(exact * 10, in_spin * 9);
	free(m.v);
	trace_free(&t);
	ring_close(&rb);
}

/*
 * PERF_BUILD_ID_OFFSET_F_SAME_MAPS.  With defer_callchain every sampled
 * kernel entry gets a record of its own (its samples never name an
 * earlier one); where the task's address space has not changed since its
 * last record and that record's maps cover every user address of the
 * entry, the record is SAME_MAPS: no maps, and the cookie of that last
 * record in same_as.  The common parser judges every such record (it must
 * name its tid's previous record in the reader's stream) and resolves it
 * through the chain; these cases check when the kernel writes one.
 *
 * The workload is a child of its own (nothing else in its address space
 * maps or unmaps: the reader's allocations are in another process) that
 * loops in libbido_dl.so under a dozen frames of this program.
 */
#define SAME_DEPTH	12
#define SAME_WORK	100000
#define MAX_CHANGES	64

enum same_change { CH_FLIP, CH_MMAP, CH_MPROTECT, CH_KINDS };

/* Shared with the child: what it changed, when (CLOCK_MONOTONIC) */
struct same_log {
	int nr;
	struct {
		uint64_t before, after;
		int kind;
		int copy;	/* the library's text is the copy's after it */
	} c[MAX_CHANGES];
	int failures;
};

static __attribute__((noipa)) unsigned long same_deep(int level, unsigned long n)
{
	if (level)
		return same_deep(level - 1, n) + 1;
	return lib_work(n, leaf);
}

/* Burn @secs of CPU in the library at the bottom of the deep stack */
static void same_burn(double secs)
{
	double until = cpu_seconds() + secs;

	while (cpu_seconds() < until)
		bido_sink += same_deep(SAME_DEPTH, SAME_WORK);
}

/* The library's text mapping, and files to map there */
struct same_text {
	uintptr_t start, end;
	uint64_t pgoff;
	int fd[2];		/* the library, a copy with another build-ID */
	char copy[64];
};

/*
 * Find the text of libbido_dl.so in @m and write a copy of the library
 * whose build-ID differs (same code: the loop goes on in it when it is
 * mapped over the text)
 */
static int same_text_setup(struct same_text *st, struct maps *m,
			   const char *path)
{
	uint8_t bid[MAX_BUILD_ID], *img;
	uint64_t note_off = 0;
	struct stat sb;
	int i, n;

	memset(st, 0, sizeof(*st));
	st->fd[0] = -1;
	st->fd[1] = -1;
	for (i = 0; i < m->nr; i++)
		if (m->v[i].exec && strstr(m->v[i].path, "libbido_dl.so")) {
			st->start = m->v[i].start;
			st->end = m->v[i].end;
			st->pgoff = m->v[i].pgoff;
		}
	st->fd[0] = open(path, O_RDONLY | O_CLOEXEC);
	if (!st->start || st->fd[0] < 0 || fstat(st->fd[0], &sb))
		return -1;
	n = elf_build_id(st->fd[0], bid, &note_off);
	img = malloc(sb.st_size);
	if (n != MAX_BUILD_ID || !img ||
	    pread(st->fd[0], img, sb.st_size, 0) != sb.st_size) {
		free(img);
		return -1;
	}
	fresh_build_id(img + note_off, 7);
	snprintf(st->copy, sizeof(st->copy), "/tmp/bido_same_XXXXXX");
	i = mkstemp(st->copy);
	if (i >= 0)
		close(i);
	st->fd[1] = i < 0 ? -1 : write_file(st->copy, img, sb.st_size);
	free(img);
	return st->fd[1] < 0 ? -1 : 0;
}

static void same_text_free(struct same_text *st)
{
	if (st->fd[0] >= 0)
		close(st->fd[0]);
	if (st->fd[1] >= 0)
		close(st->fd[1]);
	if (st->copy[0])
		unlink(st->copy);
}

/* One change of the child's address space, logged */
static void same_change(struct same_log *log, struct same_text *st,
			char *data)
{
	int kind = log->nr % CH_KINDS, copy = log->nr ?
		   log->c[log->nr - 1].copy : 0;
	uint64_t before = now_ns();
	void *p;

	switch (kind) {
	case CH_FLIP:
		/* The other file's text where the library's is */
		copy = !copy;
		p = mmap((void *)st->start, st->end - st->start,
			 PROT_READ | PROT_EXEC, MAP_PRIVATE | MAP_FIXED,
			 st->fd[copy], st->pgoff);
		log->failures += p != (void *)st->start;
		break;
	case CH_MMAP:
		p = mmap(NULL, PG, PROT_READ | PROT_EXEC,
			 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		log->failures += p == MAP_FAILED || munmap(p, PG);
		break;
	case CH_MPROTECT:
		/* Read-only, then back: each time another protection */
		log->failures += !!mprotect(data + PG, PG,
					    log->nr / CH_KINDS & 1 ?
					    PROT_READ | PROT_WRITE : PROT_READ);
		break;
	}
	log->c[log->nr].before = before;
	log->c[log->nr].after = now_ns();
	log->c[log->nr].kind = kind;
	log->c[log->nr].copy = copy;
	__atomic_store_n(&log->nr, log->nr + 1, __ATOMIC_RELEASE);
}

/*
 * The sampling event of these cases: with @defer one walk per entry, one
 * record; else the in-NMI callchain, and samples name the last record
 */
static void same_attr(struct perf_event_attr *attr, bool defer)
{
	bido_attr(attr);
	attr->defer_callchain = defer;
	/* Times to compare with the child's log */
	attr->use_clockid = 1;
	attr->clockid = CLOCK_MONOTONIC;
}

/* Samples whose time is in no change and whose text is @arg's file */
struct same_pick {
	const struct same_log *log;
	int copy;
};

static bool same_picked(const struct sample *s, void *arg)
{
	const struct same_pick *sp = arg;
	int k, copy = 0;

	for (k = 0; k < sp->log->nr; k++) {
		if (s->time >= sp->log->c[k].before &&
		    s->time <= sp->log->c[k].after)
			return false;
		if (s->time > sp->log->c[k].after)
			copy = sp->log->c[k].copy;
	}
	return copy == sp->copy;
}

/*
 * Run the workload in a child, @changes mapping changes with @secs of CPU
 * before each and after the last, sampled by a per-task event (@defer:
 * deferred callchains); @t gets everything, @log what the child changed.
 * 0 or why not.
 */
static const char *same_run(struct __test_metadata *_metadata,
			    struct trace *t, struct same_log *log,
			    struct same_text *st, int changes, double secs,
			    bool defer)
{
	struct perf_event_attr attr;
	struct ring rb;
	int go, status;
	pid_t child;

	same_attr(&attr, defer);
	child = fork_held(&go);
	if (child < 0)
		return "fork";
	if (!child) {
		char *data = mmap(NULL, 3 * PG, PROT_READ | PROT_WRITE,
				  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		int i;

		log->failures += data == MAP_FAILED;
		for (i = 0; i < changes && i < MAX_CHANGES; i++) {
			same_burn(secs);
			same_change(log, st, data);
		}
		same_burn(secs);
		_exit(0);
	}
	if (ring_open(&rb, &attr, child, -1, RING_PAGES)) {
		kill(child, SIGKILL);
		close(go);
		waitpid(child, &status, 0);
		return "ring_open";
	}
	status = trace_child(&rb, 1, t, go, child, 20000);
	close(go);
	ring_close(&rb);
	if (!WIFEXITED(status) || WEXITSTATUS(status))
		return "the workload failed";
	return NULL;
}

/*
 * The library dlopen()ed (its path in @path, PATH_MAX) for the workload,
 * and the log the child shares
 */
static void same_open(struct __test_metadata *_metadata, char *path,
		      void **dl, struct same_log **log)
{
	lib_path(path, PATH_MAX, "libbido_dl.so");
	*dl = dlopen(path, RTLD_NOW);
	ASSERT_NE(NULL, *dl) TH_LOG("dlopen %s: %s", path, dlerror());
	lib_work = dlsym(*dl, "bido_lib_work");
	ASSERT_NE(NULL, lib_work);
	*log = mmap(NULL, sizeof(**log), PROT_READ | PROT_WRITE,
		    MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, *log);
}

static void same_close(struct trace *t, struct same_log *log, void *dl)
{
	trace_free(t);
	munmap(log, sizeof(*log));
	lib_work = NULL;
	dlclose(dl);
}

/* What the records of a SAME_MAPS case are */
struct same_count {
	int full, same, named_missing;
	uint64_t both, cookie_differs;
};

static void same_count(struct trace *t, struct same_count *sc)
{
	int i;

	memset(sc, 0, sizeof(*sc));
	for (i = 0; i < t->nr_r; i++) {
		if (!t->r[i].same_as)
			sc->full++;
		else if (!find_record(t, t->r[i].tid, t->r[i].same_as))
			sc->named_missing++;
		else
			sc->same++;
	}
	/* Never an earlier record: the cookie of the sample's own entry */
	for (i = 0; i < t->nr_s; i++) {
		if (!t->s[i].cookie || !t->s[i].defer_cookie)
			continue;
		sc->both++;
		sc->cookie_differs += t->s[i].cookie != t->s[i].defer_cookie;
	}
}

/*
 * Steady state: the loop changes no mapping, so after the first records
 * nearly all are SAME_MAPS, each naming the one before, and every sampled
 * IP and every deferred frame resolves through the chain to the right
 * build-ID and file offset.  The entries alternate between the loop in
 * the library and clock_gettime() in the vDSO (cpu_seconds()), whose
 * stacks share only the program and libc: a full record must carry the
 * kept maps of the one before that later entries used, or every switch
 * between the two needs a full record (279 of 997 records were full).
 * @defer: with deferred callchains (same_maps_steady), else in-NMI ones
 * (same_maps_nmi).
 */
static void same_steady(struct __test_metadata *_metadata, bool defer)
{
	const char *name = defer ? "same_maps_steady" : "same_maps_nmi";
	int dup = 0, missing = 0;
	struct same_log *log;
	struct same_count sc;
	struct trace t = {};
	struct same_text st;
	char path[PATH_MAX];
	const char *err;
	struct tally ty;
	struct maps m;
	void *dl;

	if (bido_missing(_metadata))
		return;
	same_open(_metadata, path, &dl, &log);
	memset(&st, 0, sizeof(st));

	err = same_run(_metadata, &t, log, &st, 0, 1.5, defer);
	ASSERT_EQ(NULL, err) TH_LOG("%s", err);
	if (defer)
		missing = trace_merge_deferred(&t, &dup);
	same_count(&t, &sc);

	/* The child forked from us after the dlopen(): our maps are its */
	maps_read(&m, "/proc/self/maps");
	join(&t, &m, NULL, &ty, NULL, NULL);
	tally_print(name, &ty, &t);
	ksft_print_msg(
		"%s: %d samples, %d records: %d full, %d SAME_MAPS naming their tid's previous record, %d naming one not read; %d CALLCHAIN_DEFERRED (%d twice), %d entries without theirs; %llu of %llu samples with another cookie than their deferred callchain's\n",
		name, t.nr_s, t.nr_r, sc.full, sc.same, sc.named_missing,
		t.nr_d, dup, missing, (unsigned long long)sc.cookie_differs,
		(unsigned long long)sc.both);
	/* Layout, and every SAME_MAPS names its tid's previous record */
	EXPECT_EQ(0, t.bad_records) TH_LOG("%s", t.why);
	expect_exact(_metadata, &t, &ty, 50, false, 999);
	EXPECT_EQ(t.same_maps, sc.same);
	if (defer) {
		EXPECT_LT(10, t.nr_r);
		/* A few full records settle it */
		EXPECT_GE(t.nr_r / 50 + 4, sc.full);
		EXPECT_EQ(0, sc.cookie_differs);
		EXPECT_LT(0, sc.both);
		EXPECT_EQ(0, dup);
		EXPECT_GE(1, missing);
	} else {
		EXPECT_LT(0, t.nr_r);
		/* A few records settle it */
		EXPECT_GE(t.nr_s / 50 + 4, t.nr_r);
	}

	free(m.v);
	same_close(&t, log, dl);
}

TEST(same_maps_steady)
{
	same_steady(_metadata, true);
}

/*
 * The same child under in-NMI callchains: its samples name the task's
 * last record while the kept maps cover them, and the record of one they
 * do not cover also lists the kept maps earlier samples used (marked by
 * the sampling side here).  So the switches between the loop and
 * clock_gettime() settle on one record; without that, each wrote one.
 */
TEST(same_maps_nmi)
{
	same_steady(_metadata, false);
}

/*
 * Mapping changes between entries: every so often the child maps an
 * executable page and unmaps it, mprotect()s a page of its data, or maps
 * a copy of the library with another build-ID over the library's text
 * (MAP_FIXED; the same code, so the loop goes on in it), and back.  No
 * SAME_MAPS record written after a change names a record written before
 * it, and every address resolves to the file mapped at its sample's time:
 * a kernel that ignored the change would name the library's old
 * build-ID.
 */
TEST(same_maps_changes)
{
	int i, k, violations = 0, fresh = 0, flips = 0, dup, missing;
	struct same_pick pick[2];
	struct same_log *log;
	struct same_count sc;
	struct trace t = {};
	struct same_text st;
	char path[PATH_MAX];
	struct tally ty[2];
	struct maps m[2];
	const char *err;
	void *dl;

	if (bido_missing(_metadata))
		return;
	same_open(_metadata, path, &dl, &log);
	maps_read(&m[0], "/proc/self/maps");
	ASSERT_EQ(0, same_text_setup(&st, &m[0], path));
	/* The truth while the copy is mapped: its path over the text */
	maps_read(&m[1], "/proc/self/maps");
	for (i = 0; i < m[1].nr; i++) {
		struct vma *v = &m[1].v[i];

		if (v->start != st.start)
			continue;
		snprintf(v->path, sizeof(v->path), "%s", st.copy);
		/* Read now: the copy is gone when the truth is asked */
		v->bid_size = path_build_id(st.copy, v->bid);
		ASSERT_EQ(MAX_BUILD_ID, v->bid_size);
	}

	err = same_run(_metadata, &t, log, &st, 15, 0.1, true);
	same_text_free(&st);
	ASSERT_EQ(NULL, err) TH_LOG("%s", err);
	EXPECT_EQ(0, log->failures);
	EXPECT_EQ(15, log->nr);
	missing = trace_merge_deferred(&t, &dup);
	same_count(&t, &sc);

	for (k = 0; k < log->nr; k++) {
		const struct record *first = NULL;

		flips += log->c[k].kind == CH_FLIP;
		for (i = 0; i < t.nr_r; i++) {
			const struct record *r = &t.r[i], *p;

			if (r->time <= log->c[k].after)
				continue;
			if (!first || r->time < first->time)
				first = r;
			p = r->same_as ? find_record(&t, r->tid, r->same_as) :
			    NULL;
			/* Written after the change, naming one from before */
			if (p && p->time < log->c[k].before) {
				if (!violations++)
					TH_LOG(
						"change %d (%d) at %llu-%llu: record %#llx at %llu names %#llx at %llu",
					       k, log->c[k].kind,
					       (unsigned long long)log->c[k].before,
					       (unsigned long long)log->c[k].after,
					       (unsigned long long)r->cookie,
					       (unsigned long long)r->time,
					       (unsigned long long)p->cookie,
					       (unsigned long long)p->time);
			}
		}
		fresh += first && !first->same_as;
	}

	for (i = 0; i < 2; i++) {
		pick[i].log = log;
		pick[i].copy = i;
		join(&t, &m[i], NULL, &ty[i], same_picked, &pick[i]);
		tally_print(i ? "same_maps_changes, the copy mapped" :
			    "same_maps_changes, the library mapped",
			    &ty[i], &t);
	}
	ksft_print_msg(
		"same_maps_changes: %d changes (%d of the library's text), %d followed by a full record; %d records: %d full, %d SAME_MAPS, %d naming one not read; %d SAME_MAPS after a change naming a record before it\n",
		log->nr, flips, fresh, t.nr_r, sc.full, sc.same,
		sc.named_missing, violations);
	EXPECT_EQ(0, t.bad_records) TH_LOG("%s", t.why);
	EXPECT_EQ(0, violations);
	/* Chains between the changes, else nothing was tested */
	EXPECT_LT(0, sc.same);
	EXPECT_LT(0, fresh);
	EXPECT_EQ(0, sc.cookie_differs);
	EXPECT_EQ(0, dup);
	EXPECT_GE(1, missing);
	for (i = 0; i < 2; i++)
		expect_exact(_metadata, &t, &ty[i], 10, false, 999);

	for (i = 0; i < 2; i++)
		free(m[i].v);
	same_close(&t, log, dl);
}

/*
 * Per-CPU events, a task that hops between CPUs: its record may be
 * written on another CPU than its sample, and the join across buffers
 * must still find it.  Samples of the idle task carry cookie 0.
 */
static bool pick_tid(const struct sample *s, void *arg)
{
	return (pid_t)s->tid == *(pid_t *)arg;
}

TEST(cpu_wide_migrate)
{
	int nr_cpus = sysconf(_SC_NPROCESSORS_ONLN), i, k, go, status;
	uint64_t moved = 0, kthread_samples = 0, kthread_cookies = 0;
	uint64_t user_moved = 0;
	struct perf_event_attr attr;
	struct trace t = {};
	struct ring *rb;
	struct tally ty;
	struct maps m;
	pid_t child;

	if (bido_missing(_metadata))
		return;
	if (nr_cpus < 2)
		SKIP(return, "needs two CPUs, has %d", nr_cpus);
	if (nr_cpus > 8)
		nr_cpus = 8;
	child = fork_held(&go);
	ASSERT_LE(0, child);
	if (!child) {
		cpu_set_t set;

		for (i = 0; i < 200; i++) {
			CPU_ZERO(&set);
			CPU_SET(i % 2, &set);
			sched_setaffinity(0, sizeof(set), &set);
			burn(0.005, NULL, 0, NULL, NULL);
		}
		_exit(0);
	}

	rb = calloc(nr_cpus, sizeof(*rb));
	bido_attr(&attr);
	for (i = 0; i < nr_cpus; i++)
		ASSERT_EQ(0, ring_open(&rb[i], &attr, -1, i, RING_PAGES));
	status = trace_child(rb, nr_cpus, &t, go, child, 20000);
	ASSERT_TRUE(WIFEXITED(status));

	/* The child forked from us without exec: our maps are its truth */
	maps_read(&m, "/proc/self/maps");
	join(&t, &m, NULL, &ty, pick_tid, &child);
	tally_print("cpu_wide_migrate: the hopping task", &ty, &t);
	for (i = 0; i < t.nr_s; i++) {
		struct sample *s = &t.s[i];
		struct record *r;

		if ((pid_t)s->tid == child) {
			r = find_record(&t, s->tid, s->cookie);
			moved += r && r->cpu != s->cpu;
			/*
			 * The child is pinned to one CPU at a time and moves
			 * only in its own system calls: a sample in user mode
			 * that names a record of another CPU names an earlier
			 * entry's, which this session got in that CPU's
			 * buffer.  Counted, and allowed: the join reads them
			 * all.
			 */
			user_moved += r && !s->kernel && r->cpu != s->cpu;
			continue;
		}
		if (is_kthread(s->pid)) {
			kthread_samples++;
			kthread_cookies += !!s->cookie;
		}
	}
	for (k = 0; k < t.nr_r; k++)
		kthread_cookies += is_kthread(t.r[k].pid);
	ksft_print_msg(
		"cpu_wide_migrate: %llu records written on another CPU than their sample, %llu of them of user-mode samples; %llu kernel-thread samples, %llu of them with a cookie or a record\n",
		(unsigned long long)moved,
		(unsigned long long)user_moved,
		(unsigned long long)kthread_samples,
		(unsigned long long)kthread_cookies);
	expect_exact(_metadata, &t, &ty, 50, false, 999);
	EXPECT_EQ(0, kthread_cookies);
	EXPECT_LT(0, kthread_samples);
	free(m.v);
	trace_free(&t);
	for (i = 0; i < nr_cpus; i++)
		ring_close(&rb[i]);
	free(rb);
}

/*
 * Cookies name kernel entries: the samples of one long system call share
 * one cookie and one record; samples in user mode each get their own.
 */
static __attribute__((noipa)) void long_syscalls(double secs)
{
	double until = cpu_seconds() + secs;
	static char buf[1 << 20];

	while (cpu_seconds() < until) {
		/* About a millisecond or more of kernel time per call */
		if (syscall(__NR_getrandom, buf, sizeof(buf), 0) < 0)
			break;
		bido_sink += leaf(20000);
	}
}

/*
 * What a cookie names.  A sample gets either the cookie of its own kernel
 * entry, whose record follows it, or, when the task's last record covers
 * all its user addresses and its address space has not changed since, the
 * cookie of that record, which came before.  So: one record per cookie;
 * samples of one long system call share one; two user-mode samples at
 * different IPs share one only through an earlier record; and a sample
 * that names an earlier record names the task's last one before it.
 */
TEST(cookie_per_entry)
{
	uint64_t shared = 0, dup_records = 0, user_shared = 0;
	uint64_t earlier = 0, not_last = 0, not_covered = 0;
	uint64_t maps_changed = 0;
	struct perf_event_attr attr;
	struct trace t = {};
	struct ring rb;
	int i, k;

	if (bido_missing(_metadata))
		return;
	bido_attr(&attr);
	ASSERT_EQ(0, ring_open(&rb, &attr, 0, -1, RING_PAGES));
	ASSERT_EQ(0, ioctl(rb.fd, PERF_EVENT_IOC_ENABLE, 0));
	long_syscalls(1.0);
	ASSERT_EQ(0, ioctl(rb.fd, PERF_EVENT_IOC_DISABLE, 0));
	ring_drain(&rb, &t);

	for (i = 0; i < t.nr_s; i++) {
		struct sample *s = &t.s[i];
		struct record *r;

		if (!s->cookie)
			continue;
		r = find_record(&t, s->tid, s->cookie);
		if (r && r->time < s->time) {
			earlier++;
			for (k = 0; k < t.nr_r; k++)
				not_last += t.r[k].tid == s->tid &&
					    t.r[k].time > r->time &&
					    t.r[k].time < s->time;
			for (k = 0; k < s->nr; k++)
				not_covered += s->addrs[k] &&
					       s->addrs[k] < USER_TOP &&
					       !rec_find(r, s->addrs[k]);
		}
		for (k = i + 1; k < t.nr_s; k++) {
			if (t.s[k].cookie != s->cookie)
				continue;
			shared++;
			/*
			 * Two samples at different user IPs are two entries;
			 * they share a cookie only if the second names the
			 * record of the first.
			 */
			if (!s->kernel && !t.s[k].kernel &&
			    s->addrs[0] != t.s[k].addrs[0] &&
			    !(r && r->time < t.s[k].time))
				user_shared++;
			break;
		}
	}
	for (i = 0; i < t.nr_r; i++) {
		for (k = i + 1; k < t.nr_r; k++)
			dup_records += t.r[k].cookie == t.r[i].cookie;
		maps_changed += !!(t.r[i].flags & PERF_BUILD_ID_OFFSET_F_MAPS_CHANGED);
	}
	ksft_print_msg(
		"cookie_per_entry: %d samples, %d records; %llu samples sharing a cookie with a later one, %llu pairs in user mode at different IPs without an earlier record, %llu samples naming an earlier record (%llu not the last one, %llu addresses it does not cover), %llu duplicate records, %llu with MAPS_CHANGED\n",
		t.nr_s, t.nr_r, (unsigned long long)shared,
		(unsigned long long)user_shared,
		(unsigned long long)earlier,
		(unsigned long long)not_last,
		(unsigned long long)not_covered,
		(unsigned long long)dup_records,
		(unsigned long long)maps_changed);
	EXPECT_EQ(0, t.bad_records);
	/* One thread, and its system calls map nothing */
	EXPECT_EQ(0, maps_changed);
	EXPECT_EQ(0, user_shared);
	EXPECT_EQ(0, dup_records);
	EXPECT_EQ(0, not_last);
	/* The kernel reuses a record only if it covers every user address */
	EXPECT_EQ(0, not_covered);
	EXPECT_LT(0, shared);
	/* The loop changes no mapping: most samples reuse */
	EXPECT_LT(t.nr_r, t.nr_s / 2);
	trace_free(&t);
	ring_close(&rb);
}

/*
 * Another thread maps and unmaps a library while this one is inside long
 * system calls, where its samples land: the record of an entry in which
 * the address space changed after the entry's first sample says so
 * (PERF_BUILD_ID_OFFSET_F_MAPS_CHANGED), and still resolves this thread's own code,
 * which never moved.  cookie_per_entry checks that no record says so
 * when nothing changes.
 */
static void syscalls_second(struct ring *rb, struct trace *t)
{
	long_syscalls(1.0);
}

TEST(maps_changed)
{
	uint64_t flagged = 0;
	unsigned long iters;
	struct trace t = {};
	struct tally ty;
	struct ring rb;
	struct maps m;
	int i;

	if (bido_missing(_metadata))
		return;
	iters = beside_churn(_metadata, &rb, &t, syscalls_second);

	for (i = 0; i < t.nr_r; i++)
		flagged += !!(t.r[i].flags & PERF_BUILD_ID_OFFSET_F_MAPS_CHANGED);
	maps_read(&m, "/proc/self/maps");
	join(&t, &m, NULL, &ty, NULL, NULL);
	tally_print("maps_changed", &ty, &t);
	ksft_print_msg(
		"maps_changed: %d records, %llu with MAPS_CHANGED; %lu map/unmap rounds beside\n",
		t.nr_r, (unsigned long long)flagged, iters);
	expect_exact(_metadata, &t, &ty, 20, false, 999);
	EXPECT_LT(0, flagged);
	free(m.v);
	trace_free(&t);
	ring_close(&rb);
}

/*
 * A 32-bit program (IA32 emulation): its addresses and its ELF32 build-ID
 * must resolve as a 64-bit program's do.
 */
TEST(compat32)
{
	char prog[PATH_MAX], maps_file[] = "/tmp/bido_c32_maps_XXXXXX";
	uint64_t in_prog = 0;
	struct perf_event_attr attr;
	struct trace t = {};
	int go, status, fd, i, k;
	struct maps m, mx;
	struct tally ty;
	struct ring rb;
	pid_t child;

	if (bido_missing(_metadata))
		return;
	lib_path(prog, sizeof(prog), "build_id_offset_compat32");
	ASSERT_EQ(0, access(prog, X_OK));
	fd = mkstemp(maps_file);
	ASSERT_LE(0, fd);
	close(fd);
	child = fork_held(&go);
	ASSERT_LE(0, child);
	if (!child) {
		execl(prog, prog, maps_file, "0.7", NULL);
		_exit(errno == ENOEXEC ? 99 : 127);
	}
	bido_attr(&attr);
	ASSERT_EQ(0, ring_open(&rb, &attr, child, -1, RING_PAGES));
	status = trace_child(&rb, 1, &t, go, child, 20000);
	ASSERT_TRUE(WIFEXITED(status));
	if (WEXITSTATUS(status) == 99)
		SKIP(goto out, "this kernel cannot run 32-bit programs");
	ASSERT_EQ(0, WEXITSTATUS(status));

	maps_read(&mx, maps_file);
	maps_read(&m, "/proc/self/maps");
	ASSERT_LT(0, mx.nr);
	join(&t, &mx, &m, &ty, NULL, NULL);
	tally_print("compat32", &ty, &t);
	for (i = 0; i < t.nr_s; i++) {
		struct record *r = find_record(&t, t.s[i].tid, t.s[i].cookie);

		for (k = 0; r && k < t.s[i].nr; k++) {
			struct vma *v = maps_find(&mx, t.s[i].addrs[k]);
			const struct bido_map *bm = rec_find(r, t.s[i].addrs[k]);

			in_prog += v && bm && strstr(v->path, "build_id_offset_compat32") &&
				   bm->build_id_size == 20;
		}
	}
	ksft_print_msg(
		"compat32: %llu addresses in the 32-bit program resolved with its build-ID\n",
		(unsigned long long)in_prog);
	/*
	 * 99%, not 99.9%: the 32-bit libc's assembly string functions keep
	 * no frame pointer, and perf's walk then takes stale code pointers
	 * left on the stack for return addresses (seen: the entry point of
	 * __strnlen_sse2), which the deferred walk rightly does not.  The
	 * addresses sampled before the exec (MM_CHANGED) are not counted as
	 * resolved: a guest run resolved 5,359 of 5,359 others, with 143
	 * such (debug kernel, TCG, 2026-12-03).
	 */
	expect_exact(_metadata, &t, &ty, 20, true, 990);
	EXPECT_LT(20, in_prog);
	free(m.v);
	free(mx.v);
out:
	unlink(maps_file);
	trace_free(&t);
	ring_close(&rb);
}

/*
 * A full ring buffer: what does not fit is counted in PERF_RECORD_LOST,
 * never dropped silently.  One data page, nobody reading while the task
 * samples itself.
 */
TEST(full_buffer)
{
	struct perf_event_attr attr;
	uint64_t unjoined = 0;
	struct trace t = {};
	struct ring rb;
	int i;

	if (bido_missing(_metadata))
		return;
	bido_attr(&attr);
	ASSERT_EQ(0, ring_open(&rb, &attr, 0, -1, 1));
	ASSERT_EQ(0, ioctl(rb.fd, PERF_EVENT_IOC_ENABLE, 0));
	burn(0.5, NULL, 0, NULL, NULL);
	ASSERT_EQ(0, ioctl(rb.fd, PERF_EVENT_IOC_DISABLE, 0));
	ring_drain(&rb, &t);
	/*
	 * The count of what was lost goes out ahead of the next record that
	 * fits, once the reader has made room: sample a little more.
	 */
	ASSERT_EQ(0, ioctl(rb.fd, PERF_EVENT_IOC_ENABLE, 0));
	burn(0.05, NULL, 0, NULL, NULL);
	ASSERT_EQ(0, ioctl(rb.fd, PERF_EVENT_IOC_DISABLE, 0));
	ring_drain(&rb, &t);

	for (i = 0; i < t.nr_s; i++)
		unjoined += t.s[i].cookie &&
			    !find_record(&t, t.s[i].tid, t.s[i].cookie) &&
			    !last_of_tid(&t, i);
	ksft_print_msg(
		"full_buffer: %d samples and %d records kept, %llu lost; %llu kept samples without their record\n",
		t.nr_s, t.nr_r, (unsigned long long)t.lost,
		(unsigned long long)unjoined);
	EXPECT_EQ(0, t.bad_records);
	EXPECT_LT(0, t.lost);
	/* Each kept sample without its record: that record was lost */
	EXPECT_LE(unjoined, t.lost);
	trace_free(&t);
	ring_close(&rb);
}

/*
 * Sample, nobody reading, until the event of @rb has lost one more record
 * or sample than before: its buffer is full.  At most 500 short burns
 * (a second of CPU).
 */
static void burn_until_lost(struct ring *rb)
{
	int64_t lost = event_lost(rb->fd);
	int i;

	for (i = 0; i < 500 && event_lost(rb->fd) == lost; i++)
		burn(0.002, NULL, 0, NULL, NULL);
}

/*
 * A record that did not fit is lost, and counted lost; no later sample
 * may name it, not even once the reader has made room again.  The event
 * stays enabled throughout (enabling it alone would retire the task's
 * last record).  User-mode samples at different IPs each have a kernel
 * entry of their own: two of them share a cookie only when the second
 * names the record of the first, so a missing record with two such
 * samples was reused after it was lost.  At the same IP they may share
 * an entry: under emulation one timer interrupt can run the sampling
 * hrtimer twice when handling it took longer than its period.
 */
TEST(no_room_reuse)
{
	uint64_t lost_cookies = 0, named_lost = 0, same_ip = 0;
	struct perf_event_attr attr;
	long long no_room = -1;
	struct trace t = {};
	struct bido_tp tp;
	int i, k, rounds;
	struct ring rb;

	if (bido_missing(_metadata))
		return;
	/* Records with a copy that found no room; -1 if not countable */
	if (bido_tp_open(&tp, "perf_bido_record", "no_room > 0"))
		tp.nr = -1;
	bido_attr(&attr);
	/* read() gives what the event lost: when its one page is full */
	attr.read_format = PERF_FORMAT_LOST;
	ASSERT_EQ(0, ring_open(&rb, &attr, 0, -1, 1));
	ASSERT_EQ(0, ioctl(rb.fd, PERF_EVENT_IOC_ENABLE, 0));
	/*
	 * Each round samples until the one page has overflowed, changes a
	 * mapping, so that the next sample needs a new record, samples
	 * until the full page has lost something again (that record among
	 * it, as a rule), then the reader empties it.  However slowly the
	 * samples come: until something was lost (seen in a
	 * PERF_RECORD_LOST) and a record has found no room (where the
	 * tracepoint counts them), 400 rounds at most.
	 */
	for (rounds = 0; rounds < 400; rounds++) {
		void *p;

		if (rounds >= 40 && t.lost && (tp.nr < 0 || bido_tp_read(&tp)))
			break;
		burn_until_lost(&rb);
		p = mmap(NULL, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		ASSERT_NE(MAP_FAILED, p);
		munmap(p, 4096);
		burn_until_lost(&rb);
		ring_drain(&rb, &t);
	}
	ASSERT_EQ(0, ioctl(rb.fd, PERF_EVENT_IOC_DISABLE, 0));
	ring_drain(&rb, &t);

	for (i = 0; i < t.nr_s; i++) {
		const struct sample *s = &t.s[i];
		const struct sample *first = NULL;

		if (s->kernel || !s->cookie ||
		    find_record(&t, s->tid, s->cookie))
			continue;
		for (k = 0; k < i && !first; k++)
			if (t.s[k].tid == s->tid && !t.s[k].kernel &&
			    t.s[k].cookie == s->cookie)
				first = &t.s[k];
		if (!first)
			lost_cookies++;
		else if (s->nr && first->nr && s->addrs[0] == first->addrs[0])
			same_ip++;
		else
			named_lost++;
	}
	if (tp.nr >= 0) {
		no_room = bido_tp_read(&tp);
		bido_tp_close(&tp);
	}
	ksft_print_msg(
		"no_room_reuse: %d rounds, %d samples and %d records kept, %llu lost, %lld records among them (tracepoint); %llu user-mode samples without their record, %llu more naming one of those at another IP, %llu at the same IP\n",
		rounds, t.nr_s, t.nr_r, (unsigned long long)t.lost, no_room,
		(unsigned long long)lost_cookies,
		(unsigned long long)named_lost, (unsigned long long)same_ip);
	EXPECT_EQ(0, t.bad_records);
	/*
	 * Else the test tested nothing: something was lost, and where the
	 * tracepoint counts them, records among it (their samples may be
	 * lost with them)
	 */
	ASSERT_LT(0, t.lost);
	if (no_room >= 0)
		ASSERT_LT(0, no_room);
	EXPECT_EQ(0, named_lost);
	trace_free(&t);
	ring_close(&rb);
}

/*
 * --call-graph dwarf: a DWARF unwinder finds the return addresses of its
 * frames in the user stack each sample dumps (PERF_SAMPLE_STACK_USER),
 * frame pointers or not, so the record of such a sample covers every
 * word of that dump that lies in an executable mapping.  The frame of
 * stack_dump_keep() holds a code address of a library that no frame is
 * in, as a caller built without frame pointers holds its return address:
 * only the dump leads there, not the frame-pointer walk.
 */
static __attribute__((noipa)) void stack_dump_keep(uintptr_t code, struct ring *rb,
						   struct trace *t)
{
	uintptr_t keep = code;

	/* In this frame's memory: its address escapes, across the burn */
	asm volatile("" : : "r"(&keep) : "memory");
	burn(0.5, rb, 1, t, NULL);
	asm volatile("" : : "r"(&keep) : "memory");
	bido_sink += keep;
}

TEST(stack_dump)
{
	uint64_t joined = 0, code = 0, in_lib = 0, uncovered = 0, example = 0;
	struct perf_event_attr attr;
	struct trace t = { .stack_dump = true };
	char path[PATH_MAX];
	struct ring rb;
	struct maps m;
	void *dl, *fn;
	int i, k;

	if (bido_missing(_metadata))
		return;
#ifndef __x86_64__
	SKIP(return, "the stack pointer's register number is x86-64's");
#endif
	lib_path(path, sizeof(path), "libbido_dl.so");
	dl = dlopen(path, RTLD_NOW);
	ASSERT_NE(NULL, dl) TH_LOG("dlopen %s: %s", path, dlerror());
	/* Its address only: nothing here calls it */
	fn = dlsym(dl, "bido_lib_work");
	ASSERT_NE(NULL, fn);

	sample_attr(&attr, 4 * PERIOD_NS);
	attr.sample_type = PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME |
			   PERF_SAMPLE_CPU | PERF_SAMPLE_REGS_USER |
			   PERF_SAMPLE_STACK_USER | PERF_SAMPLE_BUILD_ID_OFFSET;
	attr.sample_regs_user = 1ULL << 7;	/* PERF_REG_X86_SP */
	attr.sample_stack_user = 8192;
	ASSERT_EQ(0, ring_open(&rb, &attr, 0, -1, RING_PAGES));
	ASSERT_EQ(0, ioctl(rb.fd, PERF_EVENT_IOC_ENABLE, 0));
	stack_dump_keep((uintptr_t)fn + 1, &rb, &t);
	ASSERT_EQ(0, ioctl(rb.fd, PERF_EVENT_IOC_DISABLE, 0));
	ring_drain(&rb, &t);
	maps_read(&m, "/proc/self/maps");

	for (i = 0; i < t.nr_s; i++) {
		const struct sample *s = &t.s[i];
		struct record *r = s->cookie ? find_record(&t, s->tid, s->cookie) : NULL;

		if (!r)
			continue;
		joined++;
		for (k = 0; k < s->nr; k++) {
			struct vma *v = maps_find(&m, s->addrs[k]);

			if (!v || !v->exec)
				continue;
			code++;
			if (strstr(v->path, "libbido_dl.so"))
				in_lib++;
			if (!rec_find(r, s->addrs[k])) {
				uncovered++;
				example = s->addrs[k];
			}
		}
	}
	ksft_print_msg(
		"stack_dump: %d samples, %llu with their record, %d records, %llu lost; %llu code addresses in the dumps, %llu of the library, %llu not covered (e.g. %#llx)\n",
		t.nr_s, (unsigned long long)joined, t.nr_r,
		(unsigned long long)t.lost, (unsigned long long)code,
		(unsigned long long)in_lib, (unsigned long long)uncovered,
		(unsigned long long)example);
	EXPECT_EQ(0, t.bad_records) TH_LOG("%s", t.why);
	ASSERT_LT(0, joined);
	/* Else the dumps never reached the frame that holds the address */
	ASSERT_LT(0, in_lib);
	EXPECT_EQ(0, uncovered);
	trace_free(&t);
	ring_close(&rb);
	dlclose(dl);
}

/*
 * Code built without frame pointers: libbido_nofp.so, whose
 * bido_lib_work() calls bido_spin() and the test's leaf() and sets up no
 * frame pointer (it may keep a value of its own in %rbp), sampled in each
 * way a sample carries user addresses: the IP alone, perf's frame-pointer
 * walk in the interrupt, the deferred walk (defer_callchain) and a user
 * stack dump for a DWARF unwinder.  The walks miss the callers of such
 * code or follow whatever its %rbp holds: a frame may be missing or be
 * no code address, but every code address a sample carries must resolve
 * to the right file, offset and build-ID; with a stack dump, every code
 * address in the dumped bytes (where a DWARF unwinder finds the frames
 * the walks miss) must.
 */
enum { NOFP_IP, NOFP_FP, NOFP_DEFER, NOFP_DWARF, NOFP_MODES };

static void nofp_attr(struct perf_event_attr *attr, int mode)
{
	bido_attr(attr);
	switch (mode) {
	case NOFP_IP:
		attr->sample_type &= ~PERF_SAMPLE_CALLCHAIN;
		break;
	case NOFP_DEFER:
		attr->defer_callchain = 1;
		break;
	case NOFP_DWARF:
		/* Fewer samples: each takes 4 KiB of the buffer */
		attr->sample_period *= 4;
		attr->sample_type &= ~PERF_SAMPLE_CALLCHAIN;
		attr->sample_type |= PERF_SAMPLE_REGS_USER | PERF_SAMPLE_STACK_USER;
		attr->sample_regs_user = 1ULL << 7;	/* PERF_REG_X86_SP */
		attr->sample_stack_user = 4096;
		break;
	}
}

TEST(no_frame_pointers)
{
	static const char * const names[NOFP_MODES] = {
		"no_frame_pointers, IP only", "no_frame_pointers, fp",
		"no_frame_pointers, fp,defer", "no_frame_pointers, dwarf",
	};
	struct perf_event_attr attr;
	char path[PATH_MAX];
	void *dl;
	int mode;

	if (bido_missing(_metadata))
		return;
#ifndef __x86_64__
	SKIP(return, "the stack pointer's register number is x86-64's");
#endif
	lib_path(path, sizeof(path), "libbido_nofp.so");
	dl = dlopen(path, RTLD_NOW);
	ASSERT_NE(NULL, dl) TH_LOG("dlopen %s: %s", path, dlerror());
	lib_work = dlsym(dl, "bido_lib_work");
	ASSERT_NE(NULL, lib_work);

	for (mode = 0; mode < NOFP_MODES; mode++) {
		uint64_t in_lib = 0, lib_callers = 0, code = 0, uncovered = 0;
		uint64_t wrong = 0;
		struct trace t = {
			.stack_dump = mode == NOFP_DWARF,
			.no_callchain = mode == NOFP_IP,
		};
		struct tally ty;
		struct ring rb;
		struct maps m;
		int i, k, dup = 0, missing = 0;

		nofp_attr(&attr, mode);
		ASSERT_EQ(0, ring_open(&rb, &attr, 0, -1, RING_PAGES));
		ASSERT_EQ(0, ioctl(rb.fd, PERF_EVENT_IOC_ENABLE, 0));
		burn(0.8, &rb, 1, &t, NULL);
		ASSERT_EQ(0, ioctl(rb.fd, PERF_EVENT_IOC_DISABLE, 0));
		ring_drain(&rb, &t);
		if (mode == NOFP_DEFER)
			missing = trace_merge_deferred(&t, &dup);
		maps_read(&m, "/proc/self/maps");

		for (i = 0; i < t.nr_s; i++) {
			const struct sample *s = &t.s[i];
			struct record *r = s->cookie ?
				find_record(&t, s->tid, s->cookie) : NULL;

			for (k = 0; r && k < s->nr; k++) {
				struct vma *v = maps_find(&m, s->addrs[k]);
				const struct bido_map *bm;
				const char *why;

				if (!v || !v->exec)
					continue;
				bm = rec_find(r, s->addrs[k]);
				if (strstr(v->path, "libbido_nofp.so") && bm) {
					in_lib += !k;
					lib_callers += k > 0;
				}
				if (mode != NOFP_DWARF)
					continue;
				/* Every word of the dump in an executable mapping */
				code++;
				if (!bm)
					uncovered++;
				else if (bido_check(&m, s->addrs[k], bm, false, &why) !=
					 BIDO_RESOLVED)
					wrong++;
			}
		}

		if (mode == NOFP_DWARF) {
			ksft_print_msg(
				"%s: %d samples, %d records, %llu lost; %llu code addresses in the dumps: %llu not covered, %llu wrong; %llu IPs and %llu other words in the library\n",
				names[mode], t.nr_s, t.nr_r,
				(unsigned long long)t.lost,
				(unsigned long long)code,
				(unsigned long long)uncovered,
				(unsigned long long)wrong,
				(unsigned long long)in_lib,
				(unsigned long long)lib_callers);
			EXPECT_EQ(0, t.bad_records) TH_LOG("%s", t.why);
			EXPECT_EQ(0, t.lost);
			EXPECT_LT(50, t.nr_s);
			EXPECT_EQ(0, uncovered);
			EXPECT_EQ(0, wrong);
		} else {
			join(&t, &m, NULL, &ty, NULL, NULL);
			tally_print(names[mode], &ty, &t);
			ksft_print_msg(
				"%s: %llu IPs and %llu callers in the library; %d CALLCHAIN_DEFERRED records (%d twice), %d samples without theirs\n",
				names[mode], (unsigned long long)in_lib,
				(unsigned long long)lib_callers, t.nr_d,
				dup, missing);
			expect_exact(_metadata, &t, &ty, 50, false, 999);
		}
		/* The workload ran in the library */
		EXPECT_LT(0, in_lib);
		/*
		 * leaf(), built with frame pointers, returns into the library:
		 * a walk finds that frame, and the dump holds it
		 */
		if (mode != NOFP_IP)
			EXPECT_LT(0, lib_callers);
		if (mode == NOFP_DEFER) {
			EXPECT_EQ(0, dup);
			EXPECT_GE(1, missing);
		}
		free(m.v);
		trace_free(&t);
		ring_close(&rb);
	}
	lib_work = NULL;
	dlclose(dl);
}

/*
 * The event goes away while its task has work pending: closed, or its
 * buffer unmapped, from inside the entry whose samples asked for the
 * record.  The record then has nowhere to go; nothing may be used after
 * free or wait for it (the debug kernel's KASAN and lockdep watch).
 */
TEST(close_pending)
{
	struct perf_event_attr attr;
	long page = sysconf(_SC_PAGESIZE);
	int i, rounds = 0;

	if (bido_missing(_metadata))
		return;
	bido_attr(&attr);
	attr.sample_period = 20000;
	for (i = 0; i < 100; i++) {
		struct ring rb;

		ASSERT_EQ(0, ring_open(&rb, &attr, 0, -1, 8));
		ASSERT_EQ(0, ioctl(rb.fd, PERF_EVENT_IOC_ENABLE, 0));
		bido_sink += with_syscalls(20000);
		/* Half the rounds unmap first, half close the mapped event */
		if (i & 1)
			munmap(rb.pg, 9 * page);
		close(rb.fd);
		if (!(i & 1))
			munmap(rb.pg, 9 * page);
		rounds++;
	}
	ksft_print_msg(
		"close_pending: %d events closed or unmapped with samples of the entry pending\n",
		rounds);
	EXPECT_EQ(100, rounds);
}

int main(int argc, char **argv)
{
	if (argc == 3 && !strcmp(argv[1], "--bido-spin"))
		return spin_main(argv[2]);
	return test_harness_run(argc, argv);
}
