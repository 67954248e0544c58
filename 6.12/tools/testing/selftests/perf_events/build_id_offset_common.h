/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What the build_id_offset* selftests share: the layout of
 * PERF_RECORD_BUILD_ID_OFFSET and its one checker, an event and its ring
 * buffer, the one parser of the samples and records read from it, the
 * ground truth of /proc/PID/maps and of the ELF notes of the mapped files
 * and its one checker, made-up call chains and ELF files, and a few
 * helpers around them.
 */
#ifndef BUILD_ID_OFFSET_COMMON_H
#define BUILD_ID_OFFSET_COMMON_H

#include <elf.h>
#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <linux/perf_event.h>

#define MAX_BUILD_ID	20
#define USER_TOP	(1ULL << 47)
#define NO_TIME		UINT64_MAX

/* PERF_RECORD_BUILD_ID_OFFSET as include/uapi/linux/perf_event.h has it */
struct bido_map {
	uint64_t start, end, pgoff;
	uint8_t build_id_size, flags;
	uint16_t reserved;
	uint8_t build_id[MAX_BUILD_ID];
};

struct bido_rec_head {
	struct perf_event_header header;
	uint32_t pid, tid;
	uint64_t cookie;
	uint32_t nr, flags;
};

#define BIDO_F_KNOWN	(PERF_BUILD_ID_OFFSET_F_TRUNCATED | \
			 PERF_BUILD_ID_OFFSET_F_MM_CHANGED | \
			 PERF_BUILD_ID_OFFSET_F_ADDRS_DROPPED | \
			 PERF_BUILD_ID_OFFSET_F_MAPS_CHANGED | \
			 PERF_BUILD_ID_OFFSET_F_SAME_MAPS)
/* Flags a record that names the task's previous one cannot have */
#define BIDO_F_NOT_SAME	(PERF_BUILD_ID_OFFSET_F_TRUNCATED | PERF_BUILD_ID_OFFSET_F_MM_CHANGED | \
			 PERF_BUILD_ID_OFFSET_F_MAPS_CHANGED)
#define BIDO_MAP_KNOWN	(PERF_BUILD_ID_OFFSET_MAP_ANON | PERF_BUILD_ID_OFFSET_MAP_VDSO | \
			 PERF_BUILD_ID_OFFSET_MAP_NO_BUILD_ID | PERF_BUILD_ID_OFFSET_MAP_DELETED | \
			 PERF_BUILD_ID_OFFSET_MAP_UNREADABLE | PERF_BUILD_ID_OFFSET_MAP_ANON_FILE)

#define BIDO_MAP_NONE	(PERF_BUILD_ID_OFFSET_MAP_NO_BUILD_ID | PERF_BUILD_ID_OFFSET_MAP_UNREADABLE)

/*
 * What is wrong with a PERF_RECORD_BUILD_ID_OFFSET that carries @id_size
 * bytes of sample_id, by the UAPI; NULL if nothing
 */
const char *bido_record_problem(const struct bido_rec_head *h,
				size_t id_size);
/*
 * The same_as of a record with PERF_BUILD_ID_OFFSET_F_SAME_MAPS (after
 * its maps[], of which it has none), 0 for any other record
 */
uint64_t bido_same_as(const struct bido_rec_head *h);

/* sample_id_all trailer of a non-sample record: TID, TIME, CPU */
struct sample_id {
	uint32_t pid, tid;
	uint64_t time;
	uint32_t cpu, res;
};

/* Where results go, so that the work is not optimised away */
extern unsigned long bido_sink;

/* ---- Events and their ring buffers ---- */

/* One event and its ring buffer */
struct ring {
	int fd;
	struct perf_event_mmap_page *pg;
	char *data;
	uint64_t size;
};

int sys_perf_event_open(struct perf_event_attr *attr, pid_t pid, int cpu,
			int group, unsigned long flags);
/* No group, close-on-exec */
int perf_open(struct perf_event_attr *attr, pid_t pid, int cpu);
void sample_attr(struct perf_event_attr *attr, uint64_t period_ns);
/* Does the kernel take @attr?  errno says why not */
bool bido_supported(struct perf_event_attr *attr);

int ring_map(struct ring *rb, int pages);

/*
 * A process of its own that opens events for the caller: another session
 * in the kernel's eyes (records go to the receivers of the session whose
 * events asked for them).  It must outlive the use of its events.
 */
struct opener {
	pid_t pid;
	int sock;
};

int opener_start(struct opener *o);
/* An event opened by @o, as perf_open() would: fd, or -errno */
int opener_open(struct opener *o, struct perf_event_attr *attr, pid_t pid,
		int cpu);
/* ring_open() through @o */
int opener_ring(struct opener *o, struct ring *rb,
		struct perf_event_attr *attr, pid_t pid, int cpu, int pages);
void opener_stop(struct opener *o);
void ring_unmap(struct ring *rb);
int ring_open(struct ring *rb, struct perf_event_attr *attr, pid_t pid,
	      int cpu, int pages);
void ring_close(struct ring *rb);
/*
 * The records and samples the event @fd could not write, whether its
 * buffer has reported them or not (read_format PERF_FORMAT_LOST), or -1
 */
int64_t event_lost(int fd);
bool ring_walk(struct ring *rb,
	       void (*fn)(void *arg, const struct perf_event_header *h),
	       void *arg);

/* ---- Samples and records read back ---- */

/*
 * What the tests keep of the samples and records they read.  ring_drain()
 * parses samples of IP, TID, TIME, CPU, CALLCHAIN and the cookie (or the
 * layouts struct trace names) and records with that sample_id.
 */
struct sample {
	uint32_t pid, tid, cpu;
	uint64_t time, cookie;
	bool kernel;		/* taken in kernel mode */
	int nr;			/* user addresses */
	uint64_t *addrs;	/* user call chain, IP first */
	/* PERF_CONTEXT_USER_DEFERRED's cookie: the frames come in a record */
	uint64_t defer_cookie;
	bool inline_user;	/* PERF_CONTEXT_USER frames in the sample */
	bool merged;		/* the deferred frames were appended */
	/* Set by trace_index() */
	uint64_t first;		/* time of the first sample of its entry */
	uint64_t prev;		/* of the tid's last sample before the entry */
	uint64_t next;		/* time of the tid's next entry's sample */
};

struct record {
	uint32_t pid, tid, cpu, flags, nr;
	uint64_t time, cookie;
	uint64_t first;		/* time of the first sample joined to it */
	/*
	 * With PERF_BUILD_ID_OFFSET_F_SAME_MAPS: the cookie of the record
	 * it names, whose maps (followed down the chain to a record with
	 * maps of its own) are copied into maps and nr; else 0
	 */
	uint64_t same_as;
	bool chain_checked;	/* same_as judged by trace_chain() */
	struct bido_map *maps;
};

/* PERF_RECORD_CALLCHAIN_DEFERRED */
struct deferred {
	uint32_t tid, cpu;
	uint64_t time, cookie, nr;
	uint64_t *ips;
};

/* PERF_RECORD_COMM of an exec */
struct exec_mark {
	uint32_t pid, tid;
	uint64_t time;
};

struct trace {
	struct sample *s;
	int nr_s, max_s;
	struct record *r;
	int nr_r, max_r;
	struct exec_mark *x;
	int nr_x, max_x;
	struct deferred *d;
	int nr_d, max_d;
	uint64_t lost, throttled;
	bool check_ids;		/* a record's pid/tid must be its sample_id's */
	/*
	 * Samples are IP, TID, TIME, CPU, REGS_USER (one register),
	 * STACK_USER and the cookie; their addrs are the IP (user mode) and every word
	 * of the stack dump
	 */
	bool stack_dump;
	/* Samples have no CALLCHAIN field: their addrs are the IP only */
	bool no_callchain;
	int bad_records;	/* layout, padding or pointer problems */
	char why[128];		/* the first of them */
	/*
	 * The ring read first, and whether others were read into the same
	 * trace: then the records of a tid are in the order of their time,
	 * else in the order read
	 */
	const struct ring *ring;
	bool many_rings;
	int same_maps;		/* records with PERF_BUILD_ID_OFFSET_F_SAME_MAPS */
	/* Set by trace_index() */
	struct record **by_cookie;
	int dup_records;	/* records of a (tid, cookie) seen before */
};

void *grow(void *p, int *max, size_t elem);
void trace_bad(struct trace *t, const char *why);
/* Append record @h and a copy of its maps; time and CPU are the caller's */
struct record *trace_add_record(struct trace *t, const struct bido_rec_head *h);
void ring_drain(struct ring *rb, struct trace *t);
int trace_child(struct ring *rb, int nr_rb, struct trace *t, int go_fd,
		pid_t child, unsigned int poll_us);
/*
 * The same for @nr_t sessions, each reading its own @nr_rb / @nr_t of
 * the rings (in order) into its own trace of @t
 */
int trace_sessions(struct ring *rb, int nr_rb, struct trace *t, int nr_t,
		   int go_fd, pid_t child, unsigned int poll_us);
/*
 * fork() a child that first waits for the parent's go: a byte on a pipe
 * whose write end the parent gets in @go (trace_child() writes it).
 * Returns what fork() does, -1 with errno if the pipe or fork fails; a
 * child whose parent closes @go without the byte exits with 126.
 */
pid_t fork_held(int *go);
void trace_index(struct trace *t);
/*
 * Once everything is read (trace_index(), trace_sessions() and
 * trace_merge_deferred() call it): every record with
 * PERF_BUILD_ID_OFFSET_F_SAME_MAPS must name the previous record of its
 * tid in @t, a bad record otherwise, and gets the maps of that one, so
 * that find_record() and rec_find() resolve its samples.  Each record is
 * judged once: where @t reads several rings, only when all are drained.
 */
void trace_chain(struct trace *t);
struct record *find_record(const struct trace *t, uint32_t tid,
			   uint64_t cookie);
const struct bido_map *rec_find(const struct record *r, uint64_t a);
void trace_free(struct trace *t);
/*
 * Append to each sample with a deferred callchain the frames of the
 * CALLCHAIN_DEFERRED record of its (tid, cookie); returns how many
 * entries (runs of samples of one tid and cookie, in @t's order) found
 * none.  @dup counts records of a (tid, cookie) seen before.
 */
int trace_merge_deferred(struct trace *t, int *dup);

/* ---- Ground truth: /proc/PID/maps and the ELF notes of the files ---- */

enum vma_kind { VMA_ANON, VMA_FILE, VMA_VDSO, VMA_OTHER };

struct vma {
	uint64_t start, end, pgoff;
	enum vma_kind kind;
	bool deleted, exec;
	char path[PATH_MAX];
	/* Filled lazily from the file, or set by the test */
	int bid_size;		/* -1: not known yet */
	uint8_t bid[MAX_BUILD_ID];
	uint8_t want_flags;	/* must be set in the record's map */
};

struct maps {
	struct vma *v;
	int nr;
};

void maps_read(struct maps *m, const char *file);
struct vma *maps_find(struct maps *m, uint64_t a);

enum bido_verdict {
	BIDO_RESOLVED,		/* the right map, offset and build-ID */
	BIDO_UNRESOLVED,	/* a code address without its map */
	BIDO_NOT_CODE,		/* without a map, and in no code either */
	BIDO_ANON,		/* a map of anonymous memory (@loose_anon) */
	BIDO_WRONG,		/* anything else: must never happen */
};

enum bido_verdict bido_check(struct maps *m, uint64_t a,
			     const struct bido_map *bm, bool loose_anon,
			     const char **why);
int elf_build_id(int fd, uint8_t *bid, uint64_t *note_off);
int path_build_id(const char *path, uint8_t *bid);
uint64_t elf_sym_offset(int fd, const char *sym);

/* ---- This program, this task, this system ---- */

double cpu_seconds(void);
/* CLOCK_MONOTONIC, which events with use_clockid can be set to count on */
uint64_t now_ns(void);
unsigned long leaf(unsigned long n);
void fake_frame_spin(unsigned long n, uintptr_t *frames);
const char *self_exe(void);
const char *self_dir(void);
int read_int(const char *path);
/*
 * Hits of the tracepoint perf_build_id_offset:NAME on every CPU, counted
 * by one counting perf event per CPU
 */
struct bido_tp {
	int	nr;
	int	*fd;
};

/*
 * Count the tracepoint perf_build_id_offset:@name, with the event filter
 * @filter (NULL: none), from now on: 0, or -1 if it cannot be (no tracefs,
 * where root can mount it; no permission).
 */
int bido_tp_open(struct bido_tp *tp, const char *name, const char *filter);
/* The hits so far; -1 if one CPU's count cannot be read */
long long bido_tp_read(const struct bido_tp *tp);
void bido_tp_close(struct bido_tp *tp);
/* Write @v to the sysctl or other file at @path */
int write_int(const char *path, int v);
int write_paranoid(int v);

/* Task flags from /proc/.../stat */
#define PF_IO_WORKER_	0x00000010
#define PF_USER_WORKER_	0x00004000
#define PF_KTHREAD_	0x00200000

unsigned long stat_flags(const char *path);
bool is_kthread(pid_t pid);

/* ---- Made-up call chains and made-up ELF files ---- */

/* The made-up files assume 4 KiB pages, the made-up frames x86-64 */
#define PG		4096UL
#define FAKE_PERIOD_NS	200000
#define MAX_FAKE	32
/* Where the made-up files keep their note, and its build-ID */
#define NOTE_OFF	0x200
#define DESC_OFF	(NOTE_OFF + sizeof(Elf64_Nhdr) + 4)

/*
 * NULL where the kernel takes @attr, else why not, for a skip; NULL @attr:
 * bido_open()'s, on a system the made-up files and frames fit
 */
const char *bido_unsupported(struct perf_event_attr *attr);
int bido_open(struct ring *rb);
bool sample_has(const struct sample *s, uint64_t a);
const struct record *record_once(const struct trace *t, int i,
				 uint64_t addr, bool *checked);

/*
 * What the records of the samples that hold an address (each record once)
 * say of the file mapped whole, from offset 0, with a given build-ID:
 * that build-ID, none with UNREADABLE, or something wrong (the first one
 * described in @why).
 */
struct file_tally {
	int nrec, ok, unreadable, wrong;
	char why[128];
};

void file_tally(const struct trace *t, uint64_t addr,
		uintptr_t start, uintptr_t end, const uint8_t *bid,
		struct file_tally *ft);
int sample_fake(struct ring *rb, struct trace *t, const uintptr_t *rets, int n,
		int want, double secs);
void put_note(uint8_t *at, uint32_t namesz, uint32_t descsz,
	      const uint8_t *bid);
void elf64_image(uint8_t *img, size_t size, const uint8_t *bid);
int write_file(const char *path, const void *buf, size_t len);
/* Build-IDs that no other file in this boot has */
void fresh_build_id(uint8_t *bid, int salt);

#ifdef __KSELFTEST_HARNESS_H
/*
 * In a test: skip it, saying why, where the kernel does not take @attr
 * (bido_unsupported()).  Returns true when the test must stop.
 */
static inline bool bido_skip_missing(struct __test_metadata *_metadata,
				     struct perf_event_attr *attr)
{
	const char *why = bido_unsupported(attr);

	if (why)
		SKIP(return true, "%s", why);
	return false;
}
#endif

#endif /* BUILD_ID_OFFSET_COMMON_H */
