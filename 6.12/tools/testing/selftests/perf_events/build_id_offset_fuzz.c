// SPDX-License-Identifier: GPL-2.0
/*
 * A bounded fuzzer around PERF_SAMPLE_BUILD_ID_OFFSET: random
 * perf_event_attr around the new bits and random operations on the events
 * from three threads and short-lived children; every perf_event_open()
 * error must be a documented one and every record read back well formed
 * (BIDO_FUZZ_SEED and BIDO_FUZZ_ITERS replay a run).
 */
#define _GNU_SOURCE
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
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

/* Emulated machines with debug kernels are slow */
#undef TEST_TIMEOUT_DEFAULT
#define TEST_TIMEOUT_DEFAULT 180

/* The data_src of a software event, which knows no memory source */
#define FZ_MEM_NA	(PERF_MEM_S(OP, NA) | PERF_MEM_S(LVL, NA) | \
			 PERF_MEM_S(SNOOP, NA) | PERF_MEM_S(LOCK, NA) | \
			 PERF_MEM_S(TLB, NA) | PERF_MEM_S(LVLNUM, NA))

/* ---- fuzz ---- */

/*
 * A bounded fuzzer.  Each iteration draws a sample layout (sample_type,
 * read_format, register masks, sample_id_all: the fields that decide how
 * records are parsed, shared by its events so that any of them may write
 * into any ring) and a list of events around the new bits, opens some,
 * maps rings of random sizes and then, for a random number of steps, does
 * random operations: ioctls (ENABLE, DISABLE, RESET, REFRESH, PERIOD,
 * SET_OUTPUT, PAUSE_OUTPUT, ID), mmap and munmap, close, more opens, and
 * fork()s whose children poke the inherited fds, burn CPU and exit, exit
 * from a second thread or exec /bin/true.  A worker thread is sampled all
 * along, and a third thread does operations of its own on dup()s of the
 * same events.  The main thread drains every ring after each step.
 *
 * Checked: perf_event_open() fails only with errors perf_event_open(2)
 * documents; every record read is well formed (sizes, the fields of
 * samples by the layout, the cookie last, zero pad bytes, known flags,
 * user addresses in build-ID offset records).
 *
 * Iterations are short (a few events, 2 to 11 steps, a child in about one
 * iteration of 25) so that many attribute sets meet many states:
 * 10,000 by default, about 100 a second in the debug guest under TCG.
 * BIDO_FUZZ_SEED and BIDO_FUZZ_ITERS choose the seed (else from the clock)
 * and the number of iterations.  The events of iteration i and the main
 * thread's steps are drawn from generators seeded with (seed, i) alone, so
 * a seed replays the same attributes and the same decisions; which of them
 * take effect, and what the kernel does with them, depends on timing (the
 * helper thread and the children run on their own time).  The errors
 * accepted are those of perf_event_open(2) but ENOSYS (no user stack dump
 * on the architecture: not x86-64) and EINTR, EFAULT (not provoked here).
 * BIDO_FUZZ_AVOID_KNOWN=1 changes the
 * user stack dumps that stack_user_empty_dump and stack_user_regs_intr
 * show to be laid out wrong on a kernel without their fixes, to look for
 * other problems there.
 */
#define FZ_ITERS	10000
#define FZ_SLOTS	8
#define FZ_ATTRS	8
#define FZ_CHILDREN	16
#define FZ_ERRNO	140

static uint64_t fz_next(uint64_t *s)
{
	uint64_t x = *s;

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	*s = x;
	return x * 0x2545f4914f6cdd1dULL;
}

static uint64_t fz_below(uint64_t *s, uint64_t n)
{
	return n ? fz_next(s) % n : 0;
}

static bool fz_one_in(uint64_t *s, uint64_t n)
{
	return !fz_below(s, n);
}

static uint64_t fz_seed(uint64_t seed, uint64_t i, uint64_t what)
{
	uint64_t s = seed ^ (i + 1) * 0x9e3779b97f4a7c15ULL ^
		     what * 0xbf58476d1ce4e5b9ULL;

	return s ? s : 1;
}

struct fz_layout {
	uint64_t sample_type, read_format, regs_user, regs_intr;
	bool id_all;
};

struct fz_slot {
	int fd;
	struct ring rb;		/* rb.pg: mapped, owned by the main thread */
};

struct fz {
	uint64_t seed;
	int iters, ncpu;
	int iter;		/* the one running */
	uint64_t iter_first_id;	/* the lowest event id it opened */
	bool avoid_known;	/* BIDO_FUZZ_AVOID_KNOWN */
	pid_t worker_tid;
	struct fz_layout layout;
	pthread_mutex_t lock;	/* slot[].fd */
	struct fz_slot slot[FZ_SLOTS];
	int stop;

	/* perf_event_open() */
	uint64_t opens, accepted, accepted_bido, accepted_defer;
	uint64_t by_errno[FZ_ERRNO];
	uint64_t unexpected;
	char first_unexpected[200];

	/* Records */
	uint64_t samples, cookies, bido_records, bido_maps, other, lost;
	uint64_t deferred, deferred_ips;	/* CALLCHAIN_DEFERRED */
	uint64_t lost_samples, bad;
	uint64_t known;		/* bad after an empty dump, when avoiding them */
	char first_bad[200];
	char bad_words[1000];	/* its first and last words, in hex */

	/* Operations (the helper's are atomic) */
	uint64_t ioctls, ioctl_ok, maps, map_fail, unmaps, closes;
	uint64_t children, execs, helper_ops;

	/* Wall-clock seconds the main thread spent on each */
	double t_open, t_fork, t_wait, t_drain, t_close;
};

static struct fz fz;

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static const int fz_documented[] = {
	E2BIG, EACCES, EBADF, EBUSY, EINVAL, EMFILE, ENODEV, ENOENT, ENOSPC,
	EOPNOTSUPP, EOVERFLOW, EPERM, ESRCH,
};

static bool fz_is_documented(int err)
{
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(fz_documented); i++)
		if (err == fz_documented[i])
			return true;
	return false;
}

static void fz_bad(const char *why, const struct perf_event_header *h)
{
	const uint64_t *w = (const void *)h;
	size_t len = 0;
	unsigned int i;

	if (fz.bad++)
		return;
	snprintf(fz.first_bad, sizeof(fz.first_bad),
		 "%s (iteration %d, its event ids from %llu, record type %u, misc %#x, size %u, sample_type %#llx, read_format %#llx, regs user %#llx intr %#llx)",
		 why, fz.iter, (unsigned long long)fz.iter_first_id,
		 h->type, h->misc, h->size,
		 (unsigned long long)fz.layout.sample_type,
		 (unsigned long long)fz.layout.read_format,
		 (unsigned long long)fz.layout.regs_user,
		 (unsigned long long)fz.layout.regs_intr);
	/* The first words, and the last ones of a long record */
	for (i = 0; i < h->size / 8 && len < sizeof(fz.bad_words) / 2; i++)
		len += snprintf(fz.bad_words + len, sizeof(fz.bad_words) - len,
				" %llx", (unsigned long long)w[i]);
	if (i < h->size / 8) {
		len += snprintf(fz.bad_words + len, sizeof(fz.bad_words) - len,
				" ...");
		for (i = i > h->size / 8 - 24 ? i : h->size / 8 - 24;
		     i < h->size / 8 && len < sizeof(fz.bad_words) - 20; i++)
			len += snprintf(fz.bad_words + len,
					sizeof(fz.bad_words) - len, " %llx",
					(unsigned long long)w[i]);
	}
}

static void fz_layout_draw(struct fz_layout *l, uint64_t *r)
{
	static const uint64_t common[] = {
		PERF_SAMPLE_IP, PERF_SAMPLE_TID, PERF_SAMPLE_TIME,
		PERF_SAMPLE_ADDR, PERF_SAMPLE_READ, PERF_SAMPLE_ID,
		PERF_SAMPLE_CPU, PERF_SAMPLE_PERIOD, PERF_SAMPLE_STREAM_ID,
		PERF_SAMPLE_RAW, PERF_SAMPLE_REGS_USER, PERF_SAMPLE_STACK_USER,
		PERF_SAMPLE_WEIGHT, PERF_SAMPLE_DATA_SRC,
		PERF_SAMPLE_IDENTIFIER, PERF_SAMPLE_TRANSACTION,
		PERF_SAMPLE_REGS_INTR, PERF_SAMPLE_PHYS_ADDR,
		PERF_SAMPLE_DATA_PAGE_SIZE, PERF_SAMPLE_CODE_PAGE_SIZE,
	};
	/* Rejected by software events or by this kernel's config, mostly */
	static const uint64_t rare[] = {
		PERF_SAMPLE_BRANCH_STACK, PERF_SAMPLE_CGROUP, PERF_SAMPLE_AUX,
		PERF_SAMPLE_WEIGHT_STRUCT,
	};
	/* x86-64 (the test runs nowhere else), asm/perf_regs.h numbering */
	static const uint64_t masks[] = {
		0x00ff0fff,	/* every general register */
		0x1c0,		/* BP, SP, IP */
		0x1,		/* AX */
		0x1000,		/* DS: not supported, EINVAL */
	};
	unsigned int i;

	memset(l, 0, sizeof(*l));
	for (i = 0; i < ARRAY_SIZE(common); i++)
		if (fz_one_in(r, 3))
			l->sample_type |= common[i];
	for (i = 0; i < ARRAY_SIZE(rare); i++)
		if (fz_one_in(r, 16))
			l->sample_type |= rare[i];
	if (fz_below(r, 4))
		l->sample_type |= PERF_SAMPLE_BUILD_ID_OFFSET;
	if (fz_below(r, 2))
		l->sample_type |= PERF_SAMPLE_CALLCHAIN;
	if (fz_one_in(r, 40))
		l->sample_type |= 1ULL << (26 + fz_below(r, 38));
	l->read_format = fz_below(r, PERF_FORMAT_MAX);
	if (fz_one_in(r, 40))
		l->read_format |= 1ULL << (5 + fz_below(r, 59));
	/* Mostly valid masks: a bad one is EINVAL and nothing more */
	l->regs_user = fz_one_in(r, 32) ? fz_next(r) : fz_one_in(r, 16) ?
		       masks[3] : masks[fz_below(r, 3)];
	l->regs_intr = fz_one_in(r, 16) ? masks[3] : masks[fz_below(r, 3)];
	l->id_all = fz_below(r, 4);
}

/* Which fields of @a the kernel reads, for the sizes a tool may pass */
static const uint32_t fz_sizes[] = {
	PERF_ATTR_SIZE_VER0, PERF_ATTR_SIZE_VER1, PERF_ATTR_SIZE_VER2,
	PERF_ATTR_SIZE_VER3, PERF_ATTR_SIZE_VER4, PERF_ATTR_SIZE_VER5,
	PERF_ATTR_SIZE_VER6, PERF_ATTR_SIZE_VER7,
};

/* Where a field of perf_event_attr starts and ends */
#define FZ_AT(f)	offsetof(struct perf_event_attr, f)
#define FZ_END(f)	(FZ_AT(f) + sizeof(((struct perf_event_attr *)0)->f))

struct fz_attr {
	/* Room for a size beyond the kernel's struct */
	union {
		struct perf_event_attr attr;
		uint8_t bytes[sizeof(struct perf_event_attr) + 64];
	};
	int target;		/* 0 self, 1 worker, 2 CPU-wide, 3 bogus pid */
	int cpu_pick;		/* -1, or a CPU (may be out of range) */
	int group_pick;		/* -1, or a slot */
	unsigned long flags;
};

static void fz_attr_draw(struct fz_attr *fa, const struct fz_layout *l,
			 uint64_t *r)
{
	struct perf_event_attr *a = &fa->attr;
	uint64_t kind = fz_below(r, 100);
	uint64_t size = fz_below(r, 100);

	memset(fa, 0, sizeof(*fa));
	a->type = PERF_TYPE_SOFTWARE;
	if (kind < 60) {
		a->config = PERF_COUNT_SW_CPU_CLOCK;
	} else if (kind < 72) {
		a->config = PERF_COUNT_SW_TASK_CLOCK;
	} else if (kind < 86) {
		a->config = PERF_COUNT_SW_DUMMY;
	} else if (kind < 92) {
		a->config = PERF_COUNT_SW_PAGE_FAULTS;
	} else if (kind < 95) {
		a->config = PERF_COUNT_SW_CONTEXT_SWITCHES;
	} else if (kind < 98) {
		a->type = PERF_TYPE_HARDWARE;
		a->config = PERF_COUNT_HW_CPU_CYCLES;
	} else {
		a->type = 1000 + fz_below(r, 1000);
	}
	if (a->type != PERF_TYPE_SOFTWARE ||
	    a->config == PERF_COUNT_SW_CPU_CLOCK ||
	    a->config == PERF_COUNT_SW_TASK_CLOCK)
		a->sample_period = 100000 + fz_below(r, 2000000);
	else
		a->sample_period = 1 + fz_below(r, 100);
	if (fz_one_in(r, 8)) {
		a->freq = 1;
		a->sample_freq = 100 + fz_below(r, 4000);
	}
	if (fz_one_in(r, 20))
		a->sample_period = 0;	/* counting only */

	a->sample_type = l->sample_type;
	a->read_format = l->read_format;
	a->sample_regs_user = l->regs_user;
	a->sample_regs_intr = l->regs_intr;
	a->sample_id_all = l->id_all;
	a->sample_stack_user = fz_one_in(r, 16) ? 0 : fz_one_in(r, 8) ?
			       fz_below(r, 70000) : 8 << fz_below(r, 12);
	a->branch_sample_type = fz_below(r, 1 << 10);
	a->sample_max_stack = fz_one_in(r, 4) ? fz_below(r, 200) : 0;
	a->wakeup_events = fz_below(r, 4);

	a->disabled = fz_below(r, 2);
	a->inherit = fz_one_in(r, 3);
	a->pinned = fz_one_in(r, 16);
	a->exclusive = fz_one_in(r, 32);
	a->exclude_user = fz_one_in(r, 12);
	a->exclude_kernel = fz_one_in(r, 3);
	a->exclude_hv = fz_below(r, 2);
	a->exclude_idle = fz_one_in(r, 8);
	a->mmap = fz_one_in(r, 8);
	a->comm = fz_one_in(r, 8);
	a->inherit_stat = fz_one_in(r, 16);
	a->enable_on_exec = fz_one_in(r, 16);
	a->task = fz_one_in(r, 8);
	a->watermark = fz_one_in(r, 8);
	if (a->watermark)
		a->wakeup_watermark = fz_below(r, 8192);
	a->precise_ip = fz_one_in(r, 8) ? fz_below(r, 4) : 0;
	a->mmap_data = fz_one_in(r, 16);
	a->exclude_host = fz_one_in(r, 32);
	a->exclude_guest = fz_one_in(r, 8);
	a->exclude_callchain_kernel = fz_one_in(r, 3);
	a->exclude_callchain_user = fz_one_in(r, 8);
	a->mmap2 = fz_one_in(r, 8);
	a->comm_exec = fz_one_in(r, 16);
	a->use_clockid = fz_one_in(r, 16);
	if (a->use_clockid)
		a->clockid = fz_one_in(r, 4) ? (int)fz_below(r, 16) :
			     CLOCK_MONOTONIC;
	a->context_switch = fz_one_in(r, 16);
	a->namespaces = fz_one_in(r, 32);
	a->ksymbol = fz_one_in(r, 32);
	a->bpf_event = fz_one_in(r, 32);
	a->aux_output = fz_one_in(r, 64);
	a->cgroup = fz_one_in(r, 64);
	a->text_poke = fz_one_in(r, 64);
	a->build_id = fz_one_in(r, 32);
	a->inherit_thread = a->inherit && fz_one_in(r, 8);
	a->remove_on_exec = fz_one_in(r, 16);
	/* Never sigtrap: a SIGTRAP per overflow would kill the test */
	a->defer_callchain = fz_one_in(r, 24);
	a->defer_output = fz_below(r, 2);
	if (fz_one_in(r, 64))
		a->__reserved_1 = 1U << fz_below(r, 24);
	if (fz_one_in(r, 64))
		a->__reserved_2 = 1U << fz_below(r, 16);
	if (fz_one_in(r, 64))
		a->__reserved_3 = 1U << fz_below(r, 29);
	if (fz_one_in(r, 64))
		a->aux_sample_size = fz_below(r, 1 << 16);
	if (fz_one_in(r, 64))
		a->config1 = fz_next(r);
	if (size < 80)
		a->size = sizeof(*a);
	else if (size < 88)
		a->size = fz_sizes[fz_below(r, 8)];
	else if (size < 92)
		a->size = sizeof(*a) + 8;	/* zero tail: accepted */
	else if (size < 95) {
		a->size = sizeof(*a) + 8;	/* non-zero tail: E2BIG */
		fa->bytes[sizeof(*a) + fz_below(r, 8)] = 1;
	} else if (size < 98) {
		a->size = fz_below(r, sizeof(fa->bytes));
		/*
		 * A size that ends inside a register mask gives the event the
		 * mask's low bytes (105: sample_regs_intr & 0xff), not its
		 * iteration's layout, by which its samples are parsed: keep
		 * such sizes off the masks.
		 */
		if (a->size > FZ_AT(sample_regs_user) &&
		    a->size < FZ_END(sample_regs_user))
			a->size = FZ_END(sample_regs_user);
		if (a->size > FZ_AT(sample_regs_intr) &&
		    a->size < FZ_END(sample_regs_intr))
			a->size = FZ_END(sample_regs_intr);
	} else {
		a->size = 0;			/* means VER0 */
	}

	fa->target = fz_below(r, 100);
	fa->target = fa->target < 35 ? 0 : fa->target < 75 ? 1 :
		     fa->target < 95 ? 2 : 3;
	fa->cpu_pick = fz_below(r, 4) ? -1 : (int)fz_below(r, 64);
	fa->group_pick = fz_one_in(r, 10) ? (int)fz_below(r, FZ_SLOTS) : -1;
	fa->flags = PERF_FLAG_FD_CLOEXEC;
	if (fz_one_in(r, 16))
		fa->flags |= PERF_FLAG_FD_NO_GROUP;
	if (fz_one_in(r, 16))
		fa->flags |= PERF_FLAG_FD_OUTPUT;
	if (fz_one_in(r, 64))
		fa->flags |= PERF_FLAG_PID_CGROUP;
	if (fz_one_in(r, 64))
		fa->flags |= 1UL << (4 + fz_below(r, 60));

	/*
	 * Away from the user stack dumps that stack_user_empty_dump and
	 * stack_user_regs_intr show to be laid out wrong, when asked to look
	 * for other problems; the draws stay the same.  (A task without an
	 * mm, late in exit, still gets empty dumps: fz_check_sample() counts
	 * those apart.)
	 */
	if (fz.avoid_known && (a->sample_type & PERF_SAMPLE_STACK_USER)) {
		if (!a->sample_stack_user)
			a->sample_stack_user = 8;
		if (a->sample_type & PERF_SAMPLE_REGS_INTR)
			a->sample_stack_user %= 32768;
		/* A size that ends before sample_stack_user means 0 */
		if (a->size < PERF_ATTR_SIZE_VER3)
			a->size = sizeof(*a);
	}
}

static int fz_open(struct fz_attr *fa)
{
	pid_t pid;
	/* One pick in ncpu + 1 is a CPU that does not exist */
	int cpu = fa->cpu_pick < 0 ? -1 : fa->cpu_pick % (fz.ncpu + 1);
	int group = -1, fd, err;
	double t;

	switch (fa->target) {
	case 0:
		pid = 0;
		break;
	case 1:
		pid = fz.worker_tid;
		break;
	case 2:
		pid = -1;
		if (cpu < 0)
			cpu = 0;
		break;
	default:
		pid = 0x3ffffff0;
		break;
	}
	if (fa->group_pick >= 0)
		group = fz.slot[fa->group_pick].fd;

	t = now();
	fd = sys_perf_event_open(&fa->attr, pid, cpu, group, fa->flags);
	err = fd < 0 ? errno : 0;
	fz.t_open += now() - t;
	fz.opens++;
	if (fd >= 0) {
		uint64_t id;

		/* For the log of a bad record: whose ids are this iteration's */
		if (!ioctl(fd, PERF_EVENT_IOC_ID, &id) &&
		    (!fz.iter_first_id || id < fz.iter_first_id))
			fz.iter_first_id = id;
		fz.accepted++;
		fz.accepted_bido += !!(fa->attr.sample_type &
				      PERF_SAMPLE_BUILD_ID_OFFSET);
		fz.accepted_defer += fa->attr.defer_output;
		return fd;
	}
	fz.by_errno[err < FZ_ERRNO ? err : 0]++;
	if (!fz_is_documented(err) && !fz.unexpected++)
		snprintf(fz.first_unexpected, sizeof(fz.first_unexpected),
			 "errno %d (%s) for type %u config %llu size %u sample_type %#llx pid %d cpu %d group %d flags %#lx",
			 err, strerror(err), fa->attr.type,
			 (unsigned long long)fa->attr.config, fa->attr.size,
			 (unsigned long long)fa->attr.sample_type, pid, cpu,
			 group, fa->flags);
	return -1;
}

/* The sample_id of a non-sample record: 8 bytes per field */
static size_t fz_id_size(void)
{
	const uint64_t id_bits = PERF_SAMPLE_TID | PERF_SAMPLE_TIME |
		PERF_SAMPLE_ID | PERF_SAMPLE_STREAM_ID | PERF_SAMPLE_CPU |
		PERF_SAMPLE_IDENTIFIER;

	if (!fz.layout.id_all)
		return 0;
	return 8 * __builtin_popcountll(fz.layout.sample_type & id_bits);
}

/* The CPU field of a sample or sample_id: the CPU, then a zero u32 */
static const char *fz_cpu_problem(uint64_t v)
{
	if (v >> 32)
		return "CPU field padding not zero";
	if ((int)(uint32_t)v >= fz.ncpu)
		return "CPU field beyond the CPUs";
	return NULL;
}

static void fz_check_id(const struct perf_event_header *h)
{
	size_t id = fz_id_size();
	const uint64_t *p;
	const char *why;

	if (!id)
		return;
	if (h->size < sizeof(*h) + id) {
		fz_bad("record shorter than its sample_id", h);
		return;
	}
	p = (const void *)((const char *)h + h->size - id);
	p += !!(fz.layout.sample_type & PERF_SAMPLE_TID);
	p += !!(fz.layout.sample_type & PERF_SAMPLE_TIME);
	p += !!(fz.layout.sample_type & PERF_SAMPLE_ID);
	p += !!(fz.layout.sample_type & PERF_SAMPLE_STREAM_ID);
	if (fz.layout.sample_type & PERF_SAMPLE_CPU) {
		why = fz_cpu_problem(*p);
		if (why)
			fz_bad(why, h);
	}
}

/* One u64 each, in this order, between IP and READ */
static const uint64_t fz_fixed[] = {
	PERF_SAMPLE_TID, PERF_SAMPLE_TIME, PERF_SAMPLE_ADDR, PERF_SAMPLE_ID,
	PERF_SAMPLE_STREAM_ID, PERF_SAMPLE_CPU, PERF_SAMPLE_PERIOD,
};

/* One u64 each, in this order, between REGS_INTR and AUX */
static const uint64_t fz_fixed2[] = {
	PERF_SAMPLE_PHYS_ADDR, PERF_SAMPLE_CGROUP, PERF_SAMPLE_DATA_PAGE_SIZE,
	PERF_SAMPLE_CODE_PAGE_SIZE,
};

/* A walk over the u64s of a sample; past its end, every take gives 0 */
struct fz_cursor {
	const uint64_t *p, *end;
	bool overrun;
};

static uint64_t fz_skip(struct fz_cursor *c, uint64_t n)
{
	if (c->overrun || (uint64_t)(c->end - c->p) < n) {
		c->overrun = true;
		return 0;
	}
	c->p += n;
	return n ? c->p[-1] : 0;
}

static uint64_t fz_take(struct fz_cursor *c)
{
	return fz_skip(c, 1);
}

/* abi, then the registers of @mask unless abi is NONE */
static const char *fz_regs(struct fz_cursor *c, uint64_t mask)
{
	uint64_t abi = fz_take(c);

	if (abi > PERF_SAMPLE_REGS_ABI_64)
		return "unknown register ABI";
	if (abi)
		fz_skip(c, __builtin_popcountll(mask));
	return NULL;
}

/*
 * Walk the fields of a sample in the order perf_output_sample() writes
 * them; the cookie must be the last 8 bytes.  A user stack dump of size
 * 0 has no dyn_size (as the kernel counts the sample's size and perf
 * parses it).  Fields with a known value are checked too, so that a field
 * written at the wrong place shows: data_src of a software event is "not
 * available", page sizes are 0 or powers of two.
 */
static void fz_check_sample(const struct perf_event_header *h)
{
	struct fz_cursor c = {
		.p = (const void *)(h + 1),
		.end = (const void *)((const char *)h + h->size),
	};
	uint64_t st = fz.layout.sample_type, rf = fz.layout.read_format;
	bool user = (h->misc & PERF_RECORD_MISC_CPUMODE_MASK) ==
		    PERF_RECORD_MISC_USER;
	bool empty_dump = false;
	const char *why = NULL;
	uint64_t v, size;
	unsigned int i;

	fz.samples++;
	if (st & PERF_SAMPLE_IDENTIFIER)
		fz_take(&c);
	if ((st & PERF_SAMPLE_IP) && fz_take(&c) >= USER_TOP && user)
		why = "user-mode sample with a kernel IP";
	for (i = 0; i < ARRAY_SIZE(fz_fixed); i++) {
		if (!(st & fz_fixed[i]))
			continue;
		v = fz_take(&c);
		if (fz_fixed[i] == PERF_SAMPLE_CPU && !why)
			why = fz_cpu_problem(v);
	}
	if (st & PERF_SAMPLE_READ) {
		uint64_t per = 1 + !!(rf & PERF_FORMAT_ID) +
			       !!(rf & PERF_FORMAT_LOST);
		uint64_t times = !!(rf & PERF_FORMAT_TOTAL_TIME_ENABLED) +
				 !!(rf & PERF_FORMAT_TOTAL_TIME_RUNNING);
		uint64_t nr = 1;

		if (rf & PERF_FORMAT_GROUP)
			nr = fz_take(&c);
		if (!nr || nr > 64)
			why = "group read with an odd member count";
		else
			fz_skip(&c, times + nr * per);
	}
	/*
	 * perf's own call chain holds whatever the user stack does where a
	 * frame has no frame pointer: its values are not checked.
	 */
	if (st & PERF_SAMPLE_CALLCHAIN)
		fz_skip(&c, fz_take(&c));
	if (st & PERF_SAMPLE_RAW) {
		size = 0;
		if (c.p < c.end)
			memcpy(&size, c.p, sizeof(uint32_t));
		size = 4 + (uint32_t)size;
		if (size % 8)
			why = "raw data not padded to 8 bytes";
		fz_skip(&c, size / 8);
	}
	if (st & PERF_SAMPLE_BRANCH_STACK)
		fz_skip(&c, 3 * fz_take(&c));
	if ((st & PERF_SAMPLE_REGS_USER) && !why)
		why = fz_regs(&c, fz.layout.regs_user);
	if (st & PERF_SAMPLE_STACK_USER) {
		size = fz_take(&c);
		empty_dump = !size && !c.overrun;
		if (size % 8) {
			why = "user stack size not a multiple of 8";
		} else if (size) {
			fz_skip(&c, size / 8);
			if (fz_take(&c) > size)
				why = "user stack dyn_size above its size";
		}
	}
	if (st & (PERF_SAMPLE_WEIGHT | PERF_SAMPLE_WEIGHT_STRUCT))
		fz_take(&c);
	if ((st & PERF_SAMPLE_DATA_SRC) && fz_take(&c) != FZ_MEM_NA &&
	    !c.overrun && !why)
		why = empty_dump ?
		      "data_src of a software event is not PERF_MEM_NA, after an empty user stack dump (stack_user_empty_dump)"
		      : "data_src of a software event is not PERF_MEM_NA";
	if (st & PERF_SAMPLE_TRANSACTION)
		fz_take(&c);
	if ((st & PERF_SAMPLE_REGS_INTR) && !why)
		why = fz_regs(&c, fz.layout.regs_intr);
	for (i = 0; i < ARRAY_SIZE(fz_fixed2); i++) {
		if (!(st & fz_fixed2[i]))
			continue;
		v = fz_take(&c);
		if (fz_fixed2[i] != PERF_SAMPLE_PHYS_ADDR &&
		    fz_fixed2[i] != PERF_SAMPLE_CGROUP && (v & (v - 1)) && !why)
			why = "a page size that is no power of two";
	}
	if (st & PERF_SAMPLE_AUX) {
		size = fz_take(&c);
		if (size % 8 && !why)
			why = "aux size not a multiple of 8";
		fz_skip(&c, size / 8);
	}
	if (st & PERF_SAMPLE_BUILD_ID_OFFSET)
		fz.cookies += !!fz_take(&c);
	if (empty_dump && fz.avoid_known && (why || c.overrun || c.p != c.end))
		fz.known++;
	else if (why)
		fz_bad(why, h);
	else if (c.overrun)
		fz_bad("sample fields run past its size", h);
	else if (c.p != c.end)
		fz_bad("sample fields do not fill the sample", h);
}

static void fz_check_record(void *arg, const struct perf_event_header *h)
{
	const char *why;

	switch (h->type) {
	case PERF_RECORD_SAMPLE:
		fz_check_sample(h);
		return;
	case PERF_RECORD_BUILD_ID_OFFSET:
		fz.bido_records++;
		why = bido_record_problem((const void *)h, fz_id_size());
		if (why)
			fz_bad(why, h);
		else
			fz.bido_maps += ((const struct bido_rec_head *)h)->nr;
		break;
	case PERF_RECORD_CALLCHAIN_DEFERRED: {
		const uint64_t *p = (const void *)(h + 1);
		uint64_t k;

		fz.deferred++;
		if (h->size < sizeof(*h) + 16 + fz_id_size() ||
		    (h->size - sizeof(*h) - 16 - fz_id_size()) / 8 != p[1] ||
		    (h->size - sizeof(*h) - 16 - fz_id_size()) % 8) {
			fz_bad("CALLCHAIN_DEFERRED size does not match nr", h);
			return;
		}
		if ((h->misc & PERF_RECORD_MISC_CPUMODE_MASK) != PERF_RECORD_MISC_USER)
			fz_bad("CALLCHAIN_DEFERRED not PERF_RECORD_MISC_USER", h);
		for (k = 0; k < p[1]; k++)
			if (p[2 + k] >= USER_TOP)
				fz_bad("CALLCHAIN_DEFERRED with a kernel address", h);
		fz.deferred_ips += p[1];
		break;
	}
	case PERF_RECORD_LOST:
		if (h->size < sizeof(*h) + 16 + fz_id_size())
			fz_bad("LOST record too short", h);
		else
			fz.lost += ((const uint64_t *)(h + 1))[1];
		break;
	case PERF_RECORD_LOST_SAMPLES:
		if (h->size < sizeof(*h) + 8 + fz_id_size())
			fz_bad("LOST_SAMPLES record too short", h);
		else
			fz.lost_samples += ((const uint64_t *)(h + 1))[0];
		break;
	default:
		if (h->type < PERF_RECORD_MMAP ||
		    h->type > PERF_RECORD_AUX_OUTPUT_HW_ID) {
			fz_bad("unknown record type", h);
			return;
		}
		fz.other++;
		break;
	}
	fz_check_id(h);
}

static void fz_drain(struct fz_slot *s)
{
	if (s->rb.pg && !ring_walk(&s->rb, fz_check_record, NULL)) {
		struct perf_event_header h = { .size = 0 };

		fz_bad("record size not sane or head beyond the ring", &h);
	}
}

static void fz_drain_all(void)
{
	int i;

	for (i = 0; i < FZ_SLOTS; i++)
		fz_drain(&fz.slot[i]);
}

static void fz_unmap(struct fz_slot *s)
{
	if (!s->rb.pg)
		return;
	fz_drain(s);
	ring_unmap(&s->rb);
	fz.unmaps++;
}

/* Pages of a ring from random bits: a power of two, now and then not */
static int fz_pages(uint64_t bits)
{
	return bits % 16 ? 1 << (bits / 16 % 5) : 3;
}

static void fz_map(struct fz_slot *s, int fd, int pages)
{
	s->rb.fd = fd;
	fz.maps++;
	if (ring_map(&s->rb, pages))
		fz.map_fail++;
}

/* One ioctl on @fd, @other for SET_OUTPUT; the same for all threads */
static int fz_ioctl(int fd, int other, uint64_t what, uint64_t arg)
{
	uint64_t period = (arg % 3 + 1) * 100000;

	switch (what % 8) {
	case 0:
		return ioctl(fd, PERF_EVENT_IOC_ENABLE, 0);
	case 1:
		return ioctl(fd, PERF_EVENT_IOC_DISABLE, 0);
	case 2:
		return ioctl(fd, PERF_EVENT_IOC_RESET, 0);
	case 3:
		return ioctl(fd, PERF_EVENT_IOC_REFRESH, 1 + arg % 3);
	case 4:
		return ioctl(fd, PERF_EVENT_IOC_PERIOD, &period);
	case 5:
		return ioctl(fd, PERF_EVENT_IOC_SET_OUTPUT, arg % 4 ? other : -1);
	case 6:
		return ioctl(fd, PERF_EVENT_IOC_PAUSE_OUTPUT, arg % 2);
	default:
		return ioctl(fd, PERF_EVENT_IOC_ID, &period);
	}
}

__attribute__((noipa)) static unsigned long fz_mid(unsigned long n)
{
	if (!(n % 4))
		syscall(__NR_getppid);
	return leaf(n) + 1;
}

__attribute__((noipa)) static unsigned long fz_top(unsigned long n)
{
	return fz_mid(n) * 3;
}

/* The sampled thread: user code, system calls, VMA churn */
static void *fz_worker(void *arg)
{
	unsigned long k;

	__atomic_store_n(&fz.worker_tid, syscall(__NR_gettid),
			 __ATOMIC_RELEASE);
	for (k = 0; !__atomic_load_n(&fz.stop, __ATOMIC_RELAXED); k++) {
		bido_sink += fz_top(2000 + k % 7);
		if (!(k % 32)) {
			void *p = mmap(NULL, PG, PROT_READ | PROT_WRITE,
				       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

			if (p != MAP_FAILED)
				munmap(p, PG);
		}
	}
	return NULL;
}

/*
 * The second operator: ioctls, read(), a second mmap() and munmap(), and
 * close(), on dup()s of the main thread's events (so that a close by
 * either thread never leaves the other with a stale number).
 */
static void *fz_helper(void *arg)
{
	uint64_t r = fz_seed(fz.seed, 0, 7);
	char buf[4096];

	while (!__atomic_load_n(&fz.stop, __ATOMIC_RELAXED)) {
		uint64_t op = fz_below(&r, 100), a = fz_next(&r);
		int i = fz_below(&r, FZ_SLOTS), j = fz_below(&r, FZ_SLOTS);
		int fd = -1, other = -1;

		pthread_mutex_lock(&fz.lock);
		if (fz.slot[i].fd >= 0) {
			if (op < 6) {
				close(fz.slot[i].fd);
				fz.slot[i].fd = -1;
				__atomic_add_fetch(&fz.closes, 1,
						   __ATOMIC_RELAXED);
			} else {
				fd = dup(fz.slot[i].fd);
				if (fz.slot[j].fd >= 0)
					other = dup(fz.slot[j].fd);
			}
		}
		pthread_mutex_unlock(&fz.lock);

		if (fd >= 0) {
			__atomic_add_fetch(&fz.helper_ops, 1, __ATOMIC_RELAXED);
			if (op < 70) {
				fz_ioctl(fd, other, a, a >> 8);
			} else if (op < 80) {
				if (read(fd, buf, a % 2 ? sizeof(buf) : 8) < 0)
					a = 0;
			} else {
				size_t len = ((1 << (a % 4)) + 1) * PG;
				void *p = mmap(NULL, len, PROT_READ | PROT_WRITE,
					       MAP_SHARED, fd, 0);

				if (p != MAP_FAILED)
					munmap(p, len);
			}
			close(fd);
		}
		if (other >= 0)
			close(other);
		usleep(fz_below(&r, 400));
	}
	return NULL;
}

static void *fz_child_thread(void *arg)
{
	for (;;)
		bido_sink += fz_top(1000);
	return NULL;
}

/*
 * A child with copies of the events (inherited ones sample it), and of
 * the fds in @fds: pokes them, burns CPU with system calls, then exits,
 * exits while a second thread runs, or execs /bin/true.
 */
static void fz_child(const int *fds, uint64_t r)
{
	int k, n = 1 + fz_below(&r, 4);
	pthread_t th;

	for (k = 0; k < n; k++) {
		int fd = fds[fz_below(&r, FZ_SLOTS)];

		if (fd >= 0)
			fz_ioctl(fd, -1, fz_below(&r, 3), 0);
	}
	for (k = 0; k < 1 + (int)fz_below(&r, 4); k++)
		bido_sink += fz_top(1000);
	switch (fz_below(&r, 3)) {
	case 0:
		_exit(0);
	case 1:
		execl("/bin/true", "true", NULL);
		_exit(0);
	default:
		if (!pthread_create(&th, NULL, fz_child_thread, NULL))
			bido_sink += fz_top(2000);
		_exit(0);
	}
}

static pid_t fz_kids[FZ_CHILDREN];

static void fz_reap(bool all)
{
	int i, status;

	for (i = 0; i < FZ_CHILDREN; i++) {
		pid_t p;

		if (fz_kids[i] <= 0)
			continue;
		p = waitpid(fz_kids[i], &status, all ? 0 : WNOHANG);
		if (p == fz_kids[i] || (p < 0 && errno != EINTR))
			fz_kids[i] = 0;
	}
}

static void fz_fork(uint64_t r)
{
	int fds[FZ_SLOTS], i, k;
	pid_t pid;

	for (k = 0; k < FZ_CHILDREN && fz_kids[k] > 0; k++)
		;
	if (k == FZ_CHILDREN)
		return;
	pthread_mutex_lock(&fz.lock);
	for (i = 0; i < FZ_SLOTS; i++)
		fds[i] = fz.slot[i].fd;
	pid = fork();
	if (!pid)
		fz_child(fds, r);	/* never returns */
	pthread_mutex_unlock(&fz.lock);
	if (pid > 0) {
		fz_kids[k] = pid;
		fz.children++;
	}
}

/* Open event @fa into a free slot; map a ring or send it to another */
static void fz_add(struct fz_attr *fa, uint64_t *r)
{
	uint64_t how = fz_below(r, 100);
	int pages = fz_pages(fz_next(r)), j = fz_below(r, FZ_SLOTS), i, fd;

	for (i = 0; i < FZ_SLOTS; i++)
		if (fz.slot[i].fd < 0 && !fz.slot[i].rb.pg)
			break;
	if (i == FZ_SLOTS)
		return;
	pthread_mutex_lock(&fz.lock);
	fd = fz_open(fa);
	fz.slot[i].fd = fd;
	pthread_mutex_unlock(&fz.lock);
	if (fd < 0)
		return;
	if (how < 75) {
		fz_map(&fz.slot[i], fd, pages);
	} else if (how < 90) {
		if (fz.slot[j].fd >= 0 && j != i) {
			fz.ioctls++;
			fz.ioctl_ok += !ioctl(fd, PERF_EVENT_IOC_SET_OUTPUT,
					      fz.slot[j].fd);
		}
	}
}

static void fz_iteration(int it)
{
	uint64_t ra = fz_seed(fz.seed, it, 1), ro = fz_seed(fz.seed, it, 2);
	struct fz_attr *fa = calloc(FZ_ATTRS, sizeof(*fa));
	int next = 0, steps, n, s, i;
	double t;

	fz_layout_draw(&fz.layout, &ra);
	for (i = 0; i < FZ_ATTRS; i++)
		fz_attr_draw(&fa[i], &fz.layout, &ra);

	n = 1 + fz_below(&ro, 3);
	while (next < n)
		fz_add(&fa[next++], &ro);

	steps = 2 + fz_below(&ro, 10);
	for (s = 0; s < steps; s++) {
		uint64_t op = fz_below(&ro, 100), a = fz_next(&ro);
		int si = fz_below(&ro, FZ_SLOTS);
		int sj = fz_below(&ro, FZ_SLOTS);
		struct fz_slot *sl = &fz.slot[si];

		if (op < 30) {
			bido_sink += fz_top(1000 + a % 20000);
		} else if (op < 50) {
			pthread_mutex_lock(&fz.lock);
			if (sl->fd >= 0) {
				fz.ioctls++;
				fz.ioctl_ok += !fz_ioctl(sl->fd,
							 fz.slot[sj].fd,
							 a, a >> 8);
			}
			pthread_mutex_unlock(&fz.lock);
		} else if (op < 62) {
			if (sl->rb.pg) {
				fz_unmap(sl);
			} else {
				pthread_mutex_lock(&fz.lock);
				if (sl->fd >= 0)
					fz_map(sl, sl->fd, fz_pages(a >> 32));
				pthread_mutex_unlock(&fz.lock);
			}
		} else if (op < 67) {
			pthread_mutex_lock(&fz.lock);
			if (sl->fd >= 0) {
				close(sl->fd);
				sl->fd = -1;
				fz.closes++;
			}
			pthread_mutex_unlock(&fz.lock);
		} else if (op < 72) {
			/* One in eight: a child costs more than the rest */
			if (!(a >> 61)) {
				t = now();
				fz_fork(a);
				fz.t_fork += now() - t;
			}
		} else if (op < 85) {
			if (next < FZ_ATTRS)
				fz_add(&fa[next++], &ro);
		} else {
			usleep(a % 200);
		}
		t = now();
		fz_drain_all();
		fz.t_drain += now() - t;
		fz_reap(false);
	}

	/* Children first: their inherited events write into our rings */
	t = now();
	fz_reap(true);
	fz.t_wait += now() - t;
	t = now();
	pthread_mutex_lock(&fz.lock);
	for (i = 0; i < FZ_SLOTS; i++) {
		if (fz.slot[i].fd >= 0)
			close(fz.slot[i].fd);
		fz.slot[i].fd = -1;
	}
	pthread_mutex_unlock(&fz.lock);
	for (i = 0; i < FZ_SLOTS; i++)
		fz_unmap(&fz.slot[i]);
	fz.t_close += now() - t;
	free(fa);
}

static uint64_t env_u64(const char *name, uint64_t def)
{
	const char *v = getenv(name);

	return v && *v ? strtoull(v, NULL, 0) : def;
}

/*
 * The harness's timeout is a backstop only: the guest's list gives its
 * own, and longer runs (BIDO_FUZZ_ITERS) must not hit this one.
 */
#undef TEST_TIMEOUT_DEFAULT
#define TEST_TIMEOUT_DEFAULT 3600

TEST(fuzz)
{
	pthread_t worker, helper;
	struct timespec t0, t1;
	char errs[1024] = "";
	size_t len = 0;
	int i, e;

	if (bido_skip_missing(_metadata, NULL))
		return;
	memset(&fz, 0, sizeof(fz));
	clock_gettime(CLOCK_REALTIME, &t0);
	fz.seed = env_u64("BIDO_FUZZ_SEED", (uint64_t)t0.tv_sec * 1000003 ^
			  t0.tv_nsec ^ getpid());
	fz.iters = env_u64("BIDO_FUZZ_ITERS", FZ_ITERS);
	fz.avoid_known = env_u64("BIDO_FUZZ_AVOID_KNOWN", 0);
	fz.ncpu = sysconf(_SC_NPROCESSORS_CONF);
	pthread_mutex_init(&fz.lock, NULL);
	for (i = 0; i < FZ_SLOTS; i++)
		fz.slot[i].fd = -1;
	ksft_print_msg(
		"fuzz: seed %llu, %d iterations%s (replay: BIDO_FUZZ_SEED=%llu BIDO_FUZZ_ITERS=%d%s)\n",
		(unsigned long long)fz.seed, fz.iters,
		fz.avoid_known ? ", avoiding the known bad stack dumps" : "",
		(unsigned long long)fz.seed, fz.iters,
		fz.avoid_known ? " BIDO_FUZZ_AVOID_KNOWN=1" : "");

	ASSERT_EQ(0, pthread_create(&worker, NULL, fz_worker, NULL));
	while (!__atomic_load_n(&fz.worker_tid, __ATOMIC_ACQUIRE))
		sched_yield();
	ASSERT_EQ(0, pthread_create(&helper, NULL, fz_helper, NULL));

	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (i = 0; i < fz.iters; i++) {
		fz.iter = i;
		fz.iter_first_id = 0;
		fz_iteration(i);
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	__atomic_store_n(&fz.stop, 1, __ATOMIC_RELAXED);
	pthread_join(helper, NULL);
	pthread_join(worker, NULL);

	for (e = 0; e < FZ_ERRNO; e++)
		if (fz.by_errno[e] && len < sizeof(errs) - 40)
			len += snprintf(errs + len, sizeof(errs) - len, " %s %llu",
					e ? strerrorname_np(e) : "other",
					(unsigned long long)fz.by_errno[e]);
	ksft_print_msg(
		"fuzz: seed %llu, %d iterations in %.1f s: %llu opens, %llu accepted (%llu with BUILD_ID_OFFSET, %llu with defer_output), rejected:%s\n",
		(unsigned long long)fz.seed, fz.iters,
		t1.tv_sec - t0.tv_sec + (t1.tv_nsec - t0.tv_nsec) / 1e9,
		(unsigned long long)fz.opens,
		(unsigned long long)fz.accepted,
		(unsigned long long)fz.accepted_bido,
		(unsigned long long)fz.accepted_defer, errs);
	ksft_print_msg(
		"fuzz: records: %llu samples (%llu with a cookie), %llu build-ID offset records with %llu maps, %llu deferred callchains with %llu frames, %llu others; lost %llu records, %llu samples; %llu bad, %llu more after an empty user stack dump\n",
		(unsigned long long)fz.samples,
		(unsigned long long)fz.cookies,
		(unsigned long long)fz.bido_records,
		(unsigned long long)fz.bido_maps,
		(unsigned long long)fz.deferred,
		(unsigned long long)fz.deferred_ips,
		(unsigned long long)fz.other,
		(unsigned long long)fz.lost,
		(unsigned long long)fz.lost_samples,
		(unsigned long long)fz.bad,
		(unsigned long long)fz.known);
	ksft_print_msg(
		"fuzz: operations: %llu ioctls (%llu succeeded), %llu mmaps (%llu failed), %llu munmaps, %llu closes, %llu children, %llu by the helper thread\n",
		(unsigned long long)fz.ioctls,
		(unsigned long long)fz.ioctl_ok,
		(unsigned long long)fz.maps,
		(unsigned long long)fz.map_fail,
		(unsigned long long)fz.unmaps,
		(unsigned long long)fz.closes,
		(unsigned long long)fz.children,
		(unsigned long long)fz.helper_ops);
	ksft_print_msg(
		"fuzz: seconds spent opening %.1f, forking %.1f, waiting for children %.1f, draining %.1f, closing %.1f\n",
		fz.t_open, fz.t_fork, fz.t_wait, fz.t_drain, fz.t_close);
	if (fz.unexpected)
		ksft_print_msg("fuzz: %llu undocumented errors, first: %s\n",
			       (unsigned long long)fz.unexpected,
			       fz.first_unexpected);
	if (fz.bad)
		ksft_print_msg("fuzz: first bad record: %s; words:%s\n",
			       fz.first_bad, fz.bad_words);
	if (fz.unexpected || fz.bad)
		ksft_print_msg("fuzz: replay with BIDO_FUZZ_SEED=%llu BIDO_FUZZ_ITERS=%d%s\n",
			       (unsigned long long)fz.seed, fz.iters,
			       fz.avoid_known ? " BIDO_FUZZ_AVOID_KNOWN=1" : "");
	EXPECT_EQ(0, fz.unexpected);
	EXPECT_EQ(0, fz.bad);
	EXPECT_LT(0, fz.accepted_bido);
	EXPECT_LT(0, fz.bido_records);
}

TEST_HARNESS_MAIN
