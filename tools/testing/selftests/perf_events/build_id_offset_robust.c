// SPDX-License-Identifier: GPL-2.0
/*
 * Robustness of PERF_SAMPLE_BUILD_ID_OFFSET; build_id_offset.c has the
 * end-to-end checks against /proc/PID/maps.
 *
 * malformed_elf: files that the test writes to /tmp, each malformed in one
 *   way (truncated, more program headers than the kernel's parser reads,
 *   wrapping or negative offsets, oversized notes, empty, truncated after
 *   mmap()) or valid (ELF64, ELF32), are mapped executable and put into
 *   the user call chain of cpu-clock samples with made-up frames.  The
 *   record must give every mapping exactly, with the file's build-ID where
 *   the kernel can read one and none, with the flag that says why, where
 *   it cannot.  On a noexec /tmp they are mapped for reading only, and no
 *   record may describe them.
 * pageout: the page with the build-ID note of a library is evicted before
 *   the kernel first reads the note.
 * shared_writer, shared_writer_settled: another thread rewrites the note
 *   through a shared mapping and pwrite() while it is being read, and
 *   after it is done.
 * slow_fs, blocking_fs: the library is on a FUSE filesystem that holds
 *   the read of its note: the task goes on meanwhile (a worker reads),
 *   gets the build-ID once the read is answered, and ends on SIGKILL
 *   when it never is.
 * remount_fs: two FUSE mounts in turn serve files that differ only in
 *   their build-ID: each record must have its own mount's.
 * fuzz: random perf_event_attr around the new bits and random operations
 *   on the events from three threads and short-lived children; every
 *   perf_event_open() error must be a documented one and every record
 *   read back well formed.
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
#include <linux/fuse.h>
#include <linux/perf_event.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/uio.h>
#include <sys/wait.h>

#include "../kselftest_harness.h"
#include "build_id_offset_common.h"

/* Emulated machines with debug kernels are slow */
#undef TEST_TIMEOUT_DEFAULT
#define TEST_TIMEOUT_DEFAULT 180

#define PG		4096UL
#define PERIOD_NS	200000

#define BIDO_MAP_NONE	(PERF_BUILD_ID_OFFSET_MAP_NO_BUILD_ID | PERF_BUILD_ID_OFFSET_MAP_UNREADABLE)

/* The data_src of a software event, which knows no memory source */
#define FZ_MEM_NA	(PERF_MEM_S(OP, NA) | PERF_MEM_S(LVL, NA) | \
			 PERF_MEM_S(SNOOP, NA) | PERF_MEM_S(LOCK, NA) | \
			 PERF_MEM_S(TLB, NA) | PERF_MEM_S(LVLNUM, NA))

/*
 * What is wrong with a PERF_RECORD_BUILD_ID_OFFSET that carries @id_size
 * bytes of sample_id, by the UAPI; NULL if nothing.
 */
static const char *bido_record_problem(const struct bido_rec_head *h,
				       size_t id_size)
{
	const struct bido_map *maps = (const void *)(h + 1);
	uint32_t i, j;

	if (h->header.size != sizeof(*h) + (uint64_t)h->nr * sizeof(*maps) +
			      id_size)
		return "record size does not match nr";
	if (h->header.misc != PERF_RECORD_MISC_USER)
		return "header.misc is not PERF_RECORD_MISC_USER";
	if (!h->cookie)
		return "record with cookie 0";
	if (h->flags & ~BIDO_F_KNOWN)
		return "unknown record flags";
	if ((h->flags & PERF_BUILD_ID_OFFSET_F_MM_CHANGED) && h->nr)
		return "MM_CHANGED record with maps";
	for (i = 0; i < h->nr; i++) {
		const struct bido_map *m = &maps[i];

		if (m->reserved)
			return "map __reserved not zero";
		if (m->flags & ~BIDO_MAP_KNOWN)
			return "unknown map flags";
		if (m->build_id_size > MAX_BUILD_ID)
			return "build_id_size above 20";
		for (j = m->build_id_size; j < MAX_BUILD_ID; j++)
			if (m->build_id[j])
				return "build-ID padding not zero";
		if (m->start >= m->end || m->end > USER_TOP)
			return "map is not a user range";
		if (m->start % PG || m->end % PG || m->pgoff % PG)
			return "map bounds or offset not page aligned";
		if (i && maps[i - 1].end > m->start)
			return "maps not sorted or overlapping";
		if ((m->flags & (PERF_BUILD_ID_OFFSET_MAP_ANON | PERF_BUILD_ID_OFFSET_MAP_VDSO)) &&
		    (m->pgoff || m->build_id_size))
			return "anonymous map with offset or build-ID";
		if (m->build_id_size && (m->flags & BIDO_MAP_NONE))
			return "build-ID with a flag that says there is none";
	}
	return NULL;
}

/* ---- Samples and records of the cases with a made-up call chain ---- */

/*
 * Samples carry IP, TID, CALLCHAIN and the cookie; records their TID as
 * sample_id.
 */
static const uint64_t sample_type = PERF_SAMPLE_IP | PERF_SAMPLE_TID |
	PERF_SAMPLE_CALLCHAIN | PERF_SAMPLE_BUILD_ID_OFFSET;

static void trace_record(struct trace *t, const struct bido_rec_head *h)
{
	const char *why = bido_record_problem(h, sizeof(uint64_t));

	if (why)
		trace_bad(t, why);
	else
		trace_add_record(t, h);
}

static void trace_sample(struct trace *t, const struct perf_event_header *h)
{
	const uint64_t *p = (const void *)(h + 1);
	const uint64_t *end = (const void *)((const char *)h + h->size);
	uint64_t ip, nr, i;
	struct sample *s;
	bool user = false;

	if (h->size < sizeof(*h) + 4 * sizeof(*p)) {
		trace_bad(t, "sample too short");
		return;
	}
	ip = *p++;
	if (t->nr_s == t->max_s)
		t->s = grow(t->s, &t->max_s, sizeof(*t->s));
	s = &t->s[t->nr_s];
	s->tid = *p++ >> 32;
	nr = *p++;
	if (p + nr + 1 != end) {
		trace_bad(t, "sample size does not match its fields");
		return;
	}
	s->addrs = malloc((nr + 1) * sizeof(*s->addrs));
	s->nr = 0;
	if ((h->misc & PERF_RECORD_MISC_CPUMODE_MASK) == PERF_RECORD_MISC_USER)
		s->addrs[s->nr++] = ip;
	for (i = 0; i < nr; i++) {
		if (p[i] >= PERF_CONTEXT_MAX)
			user = p[i] == PERF_CONTEXT_USER;
		else if (user)
			s->addrs[s->nr++] = p[i];
	}
	s->cookie = p[nr];
	t->nr_s++;
}

static void trace_one(void *arg, const struct perf_event_header *h)
{
	struct trace *t = arg;

	switch (h->type) {
	case PERF_RECORD_SAMPLE:
		trace_sample(t, h);
		break;
	case PERF_RECORD_BUILD_ID_OFFSET:
		trace_record(t, (const void *)h);
		break;
	case PERF_RECORD_LOST:
		t->lost += ((const uint64_t *)(h + 1))[1];
		break;
	}
}

static void trace_drain(struct ring *rb, struct trace *t)
{
	if (!ring_walk(rb, trace_one, t))
		trace_bad(t, "record size not sane");
}

static bool sample_has(const struct sample *s, uint64_t a)
{
	int k;

	for (k = 0; k < s->nr; k++)
		if (s->addrs[k] == a)
			return true;
	return false;
}

/*
 * The record of sample @i if the sample holds @addr and no earlier sample
 * returned the same record (@checked: a flag per record), else NULL: the
 * records are checked once each, however many samples share them.
 */
static const struct record *record_once(const struct trace *t, int i,
					uint64_t addr, bool *checked)
{
	const struct record *r;

	if (!sample_has(&t->s[i], addr))
		return NULL;
	r = find_record(t, t->s[i].tid, t->s[i].cookie);
	if (!r || checked[r - t->r])
		return NULL;
	checked[r - t->r] = true;
	return r;
}

/*
 * What the records of the samples that hold @addr (each record once) say
 * of the file mapped whole, from offset 0, at [@start, @end) with the
 * build-ID @bid: that build-ID, none with UNREADABLE, or something wrong
 * (the first one described in @why).
 */
struct file_tally {
	int nrec, ok, unreadable, wrong;
	char why[128];
};

static void file_tally(const struct trace *t, uint64_t addr,
		       uintptr_t start, uintptr_t end, const uint8_t *bid,
		       struct file_tally *ft)
{
	bool *checked = calloc(t->nr_r + 1, sizeof(*checked));
	int i;

	memset(ft, 0, sizeof(*ft));
	for (i = 0; i < t->nr_s; i++) {
		const struct record *r = record_once(t, i, addr, checked);
		const struct bido_map *m;

		if (!r)
			continue;
		ft->nrec++;
		m = rec_find(r, addr);
		if (m && m->start == start && !m->pgoff && m->end == end &&
		    !m->flags && m->build_id_size == MAX_BUILD_ID &&
		    !memcmp(m->build_id, bid, MAX_BUILD_ID))
			ft->ok++;
		else if (m && m->start == start && !m->pgoff &&
			 !m->build_id_size &&
			 m->flags == PERF_BUILD_ID_OFFSET_MAP_UNREADABLE)
			ft->unreadable++;
		else if (!ft->wrong++)
			snprintf(ft->why, sizeof(ft->why),
				 "%#llx: map %s, flags %#x, pgoff %#llx, build-ID size %d",
				 (unsigned long long)addr,
				 m ? "found" : "missing", m ? m->flags : 0,
				 m ? (unsigned long long)m->pgoff : 0ULL,
				 m ? m->build_id_size : -1);
	}
	free(checked);
}

/* A cpu-clock event on this thread that receives its own records */
static int bido_open(struct ring *rb)
{
	struct perf_event_attr attr = {
		.size = sizeof(attr),
		.type = PERF_TYPE_SOFTWARE,
		.config = PERF_COUNT_SW_CPU_CLOCK,
		.sample_period = PERIOD_NS,
		.sample_type = sample_type,
		.sample_id_all = 1,
		.exclude_callchain_kernel = 1,
		.defer_output = 1,
		.disabled = 1,
	};

	memset(rb, 0, sizeof(*rb));
	rb->fd = perf_open(&attr, 0, -1);
	if (rb->fd < 0)
		return -errno;
	if (ring_map(rb, 256)) {
		close(rb->fd);
		return -ENOMEM;
	}
	return 0;
}

/*
 * Skip on a kernel without the feature, unless BIDO_REQUIRED is set in the
 * environment (the test guest of the series sets it: there, a kernel that
 * refuses the bit is a failure).  Returns true when the test must stop.
 */
static bool bido_missing(struct __test_metadata *_metadata)
{
	struct ring rb;
	int err = bido_open(&rb);

	if (!err) {
		ring_close(&rb);
		if (sysconf(_SC_PAGESIZE) != PG)
			SKIP(return true, "the generated files assume 4 KiB pages");
#ifndef __x86_64__
		SKIP(return true, "the made-up frames are x86-64 code");
#endif
		return false;
	}
	ASSERT_EQ(NULL, getenv("BIDO_REQUIRED"))
		TH_LOG("perf_event_open: %s", strerror(-err));
	SKIP(return true, "kernel lacks PERF_SAMPLE_BUILD_ID_OFFSET: %s",
	     strerror(-err));
}

#define MAX_FAKE	32

/*
 * Sample this thread with @rets[0..n) as made-up return addresses until
 * @want records cover @rets[0], or @secs of CPU time have gone by.  A
 * record comes once per kernel entry with samples: the samples taken in
 * the kernel while it is being made (the user call chain of such a sample
 * holds the made-up frames too) share it.
 * Returns how many samples hold @rets[0] and have their record.
 */
static int sample_fake(struct ring *rb, struct trace *t, const uintptr_t *rets,
		       int n, int want, double secs)
{
	uintptr_t frames[2 * MAX_FAKE];
	double until = cpu_seconds() + secs;
	int i, hits = 0, seen = 0, covering = 0;

	for (i = 0; i < n; i++) {
		frames[2 * i] = i + 1 < n ? (uintptr_t)&frames[2 * i + 2] : 0;
		frames[2 * i + 1] = rets[i];
	}
	ioctl(rb->fd, PERF_EVENT_IOC_ENABLE, 0);
	while (covering < want && cpu_seconds() < until) {
		fake_frame_spin(50000, frames);
		trace_drain(rb, t);
		for (; seen < t->nr_r; seen++)
			covering += !!rec_find(&t->r[seen], rets[0]);
	}
	ioctl(rb->fd, PERF_EVENT_IOC_DISABLE, 0);
	trace_drain(rb, t);
	for (i = 0; i < t->nr_s; i++)
		hits += sample_has(&t->s[i], rets[0]) &&
			find_record(t, t->s[i].tid, t->s[i].cookie);
	return hits;
}

/* ---- ELF files made up by the test ---- */

/* Where the made-up files keep their note, and its build-ID */
#define NOTE_OFF	0x200
#define DESC_OFF	(NOTE_OFF + sizeof(Elf64_Nhdr) + 4)

static void put_note(uint8_t *at, uint32_t namesz, uint32_t descsz,
		     const uint8_t *bid)
{
	Elf64_Nhdr nh = {
		.n_namesz = namesz,
		.n_descsz = descsz,
		.n_type = NT_GNU_BUILD_ID,
	};

	memcpy(at, &nh, sizeof(nh));
	memcpy(at + sizeof(nh), "GNU", 4);
	memcpy(at + sizeof(nh) + 4, bid, MAX_BUILD_ID);
}

/*
 * A minimal valid ELF64 shared object in @img (zeroed, at least 3 pages):
 * the header, a PT_LOAD of the whole file and a PT_NOTE at NOTE_OFF with
 * the build-ID @bid.
 */
static void elf64_image(uint8_t *img, size_t size, const uint8_t *bid)
{
	Elf64_Ehdr *eh = (void *)img;
	Elf64_Phdr *ph = (void *)(img + sizeof(*eh));

	memcpy(eh->e_ident, ELFMAG, SELFMAG);
	eh->e_ident[EI_CLASS] = ELFCLASS64;
	eh->e_ident[EI_DATA] = ELFDATA2LSB;
	eh->e_ident[EI_VERSION] = EV_CURRENT;
	eh->e_type = ET_DYN;
	eh->e_machine = EM_X86_64;
	eh->e_version = EV_CURRENT;
	eh->e_phoff = sizeof(*eh);
	eh->e_ehsize = sizeof(*eh);
	eh->e_phentsize = sizeof(*ph);
	eh->e_phnum = 2;
	ph[0] = (Elf64_Phdr){
		.p_type = PT_LOAD, .p_flags = PF_R | PF_X,
		.p_filesz = size, .p_memsz = size, .p_align = PG,
	};
	ph[1] = (Elf64_Phdr){
		.p_type = PT_NOTE, .p_flags = PF_R, .p_offset = NOTE_OFF,
		.p_vaddr = NOTE_OFF, .p_filesz = sizeof(Elf64_Nhdr) + 4 +
		MAX_BUILD_ID, .p_align = 4,
	};
	ph[1].p_memsz = ph[1].p_filesz;
	put_note(img + NOTE_OFF, 4, MAX_BUILD_ID, bid);
}

/* The same as a 32-bit (i386) shared object */
static void elf32_image(uint8_t *img, size_t size, const uint8_t *bid)
{
	Elf32_Ehdr *eh = (void *)img;
	Elf32_Phdr *ph = (void *)(img + sizeof(*eh));

	memcpy(eh->e_ident, ELFMAG, SELFMAG);
	eh->e_ident[EI_CLASS] = ELFCLASS32;
	eh->e_ident[EI_DATA] = ELFDATA2LSB;
	eh->e_ident[EI_VERSION] = EV_CURRENT;
	eh->e_type = ET_DYN;
	eh->e_machine = EM_386;
	eh->e_version = EV_CURRENT;
	eh->e_phoff = sizeof(*eh);
	eh->e_ehsize = sizeof(*eh);
	eh->e_phentsize = sizeof(*ph);
	eh->e_phnum = 2;
	ph[0] = (Elf32_Phdr){
		.p_type = PT_LOAD, .p_flags = PF_R | PF_X,
		.p_filesz = size, .p_memsz = size, .p_align = PG,
	};
	ph[1] = (Elf32_Phdr){
		.p_type = PT_NOTE, .p_flags = PF_R, .p_offset = NOTE_OFF,
		.p_vaddr = NOTE_OFF, .p_filesz = sizeof(Elf32_Nhdr) + 4 +
		MAX_BUILD_ID, .p_align = 4,
	};
	ph[1].p_memsz = ph[1].p_filesz;
	put_note(img + NOTE_OFF, 4, MAX_BUILD_ID, bid);
}

static int write_file(const char *path, const void *buf, size_t len)
{
	int fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);

	if (fd < 0)
		return -1;
	if (len && pwrite(fd, buf, len, 0) != (ssize_t)len) {
		close(fd);
		return -1;
	}
	return fd;
}

/* Build-IDs that no other file in this boot has */
static void fresh_build_id(uint8_t *bid, int salt)
{
	static uint64_t x;
	int i;

	if (!x)
		x = (uint64_t)time(NULL) * 0x9e3779b97f4a7c15ULL ^ getpid();
	for (i = 0; i < MAX_BUILD_ID; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		bid[i] = x ^ salt;
	}
}

/* ---- malformed_elf ---- */

enum corrupt {
	C_VALID64, C_VALID32, C_TRUNC_EHDR, C_TRUNC_PHDR, C_TRUNC_NOTE,
	C_PHNUM_OVER, C_PHNUM_XNUM, C_PHOFF_WRAP, C_PHOFF_NEG, C_PHOFF_EOF,
	C_DESCSZ_WRAP, C_DESCSZ_BIG, C_NAMESZ_WRAP, C_NOTE_EOF,
	C_NOTE_FILESZ_WRAP, C_EMPTY, C_NOT_ELF, C_ET_REL, C_TRUNC_MAPPED,
	C_TRUNC_MAPPED_TAIL,
};

/*
 * want_bid: the record carries the file's build-ID; else none, with
 * NO_BUILD_ID or UNREADABLE.  @how says what the kernel's parser
 * (lib/buildid.c, build_id_parse_file()) makes of the file.  Which of the
 * two flags is the kernel's choice: the parser turns a read that ends
 * early (the file is shorter than a header or offset says) into -EIO,
 * which the kernel reports as UNREADABLE, like an I/O error, and does not
 * cache; the test prints which flag each file got.
 */
static const struct corpus_case {
	const char *name;
	enum corrupt kind;
	bool want_bid;
	uint64_t map_off;	/* file offset of the mapping */
	const char *how;
} corpus[] = {
	{ "valid64", C_VALID64, true, 0, "the control" },
	{ "valid32", C_VALID32, true, PG, "ELFCLASS32: read as such" },
	{ "truncated_ehdr", C_TRUNC_EHDR, false, 0,
	  "40 bytes: the magic and e_type pass, Elf64_Ehdr is a short read" },
	{ "truncated_phdr", C_TRUNC_PHDR, false, PG,
	  "ends inside the PT_NOTE program header" },
	{ "truncated_note", C_TRUNC_NOTE, false, 0,
	  "ends inside the build-ID descriptor" },
	{ "phnum_over_limit", C_PHNUM_OVER, false, PG,
	  "e_phnum 300, the note in the last one: the parser reads 256" },
	{ "phnum_xnum_note_first", C_PHNUM_XNUM, true, 0,
	  "e_phnum 0xffff (PN_XNUM), the note first: found before the limit" },
	{ "phoff_wrap", C_PHOFF_WRAP, false, 0,
	  "e_phoff U64_MAX - 8: phoff + phnum * size wraps" },
	{ "phoff_negative", C_PHOFF_NEG, false, PG,
	  "e_phoff 1 << 63: a negative file position" },
	{ "phoff_past_eof", C_PHOFF_EOF, false, 0, "e_phoff 1 GiB" },
	{ "descsz_wrap", C_DESCSZ_WRAP, false, PG,
	  "n_descsz 0xfffffff0: the note end wraps" },
	{ "descsz_oversized", C_DESCSZ_BIG, false, 0,
	  "n_descsz 64, inside p_filesz: above the 20-byte maximum" },
	{ "namesz_wrap", C_NAMESZ_WRAP, false, 0,
	  "n_namesz and n_descsz 0xfffffffe: align to 0 in 32 bits" },
	{ "note_past_eof", C_NOTE_EOF, false, PG, "p_offset 1 MiB" },
	{ "note_filesz_wrap", C_NOTE_FILESZ_WRAP, false, 0,
	  "p_filesz 0xffffffff: the note end wraps" },
	{ "empty", C_EMPTY, false, PG, "0 bytes" },
	{ "not_elf", C_NOT_ELF, false, 0, "random bytes" },
	{ "et_rel", C_ET_REL, false, PG,
	  "ET_REL: only executables and shared objects are read" },
	{ "truncated_after_mmap", C_TRUNC_MAPPED, false, PG,
	  "ftruncate(0) after mmap(): the mapping outlives the bytes" },
	{ "truncated_after_mmap_tail", C_TRUNC_MAPPED_TAIL, true, PG,
	  "ftruncate(4096) after mmap(): the note page stays" },
};

#define CORPUS_N	(ARRAY_SIZE(corpus))
#define IMG_SIZE	(5 * PG)

/* Write case @c to @path; returns the fd, and the file's build-ID */
static int corpus_write(const struct corpus_case *c, const char *path,
			uint8_t *img, uint8_t *bid, size_t *len)
{
	Elf64_Ehdr *eh = (void *)img;
	Elf64_Phdr *ph = (void *)(img + sizeof(*eh));
	Elf64_Nhdr *nh = (void *)(img + NOTE_OFF);
	int i;

	memset(img, 0, IMG_SIZE);
	*len = 3 * PG;
	elf64_image(img, *len, bid);

	switch (c->kind) {
	case C_VALID64:
	case C_TRUNC_MAPPED:
	case C_TRUNC_MAPPED_TAIL:
		break;
	case C_VALID32:
		memset(img, 0, IMG_SIZE);
		elf32_image(img, *len, bid);
		break;
	case C_TRUNC_EHDR:
		*len = 40;
		break;
	case C_TRUNC_PHDR:
		*len = sizeof(*eh) + sizeof(*ph) + 20;
		break;
	case C_TRUNC_NOTE:
		*len = DESC_OFF + 10;
		break;
	case C_PHNUM_OVER:
		/* 299 PT_NULL headers, then the note's: 16.8 KiB of them */
		eh->e_phnum = 300;
		ph[299] = ph[1];
		ph[299].p_offset = 4 * PG + NOTE_OFF;
		put_note(img + 4 * PG + NOTE_OFF, 4, MAX_BUILD_ID, bid);
		/* The table runs over the old note: zero, like the rest */
		memset(ph, 0, 2 * sizeof(*ph));
		memset(img + NOTE_OFF, 0, 64);
		*len = IMG_SIZE;
		break;
	case C_PHNUM_XNUM: {
		Elf64_Phdr load = ph[0];

		eh->e_phnum = PN_XNUM;
		ph[0] = ph[1];
		ph[1] = load;
		break;
	}
	case C_PHOFF_WRAP:
		eh->e_phoff = UINT64_MAX - 8;
		break;
	case C_PHOFF_NEG:
		eh->e_phoff = 1ULL << 63;
		break;
	case C_PHOFF_EOF:
		eh->e_phoff = 1ULL << 30;
		break;
	case C_DESCSZ_WRAP:
		nh->n_descsz = 0xfffffff0;
		break;
	case C_DESCSZ_BIG:
		nh->n_descsz = 64;
		ph[1].p_filesz = sizeof(*nh) + 4 + 64;
		break;
	case C_NAMESZ_WRAP:
		nh->n_namesz = 0xfffffffe;
		nh->n_descsz = 0xfffffffe;
		ph[1].p_filesz = 1024;
		break;
	case C_NOTE_EOF:
		ph[1].p_offset = 1ULL << 20;
		break;
	case C_NOTE_FILESZ_WRAP:
		ph[1].p_filesz = 0xffffffff;
		break;
	case C_EMPTY:
		*len = 0;
		break;
	case C_NOT_ELF:
		for (i = 0; i < (int)*len; i++)
			img[i] = rand();
		img[0] = 0x7e;
		break;
	case C_ET_REL:
		eh->e_type = ET_REL;
		break;
	}
	return write_file(path, img, *len);
}

struct corpus_file {
	int fd;
	char path[64];
	uint8_t bid[MAX_BUILD_ID];
	void *base;
	uint64_t addr;		/* the made-up return address in it */
	bool code;		/* PROT_EXEC; else no map may cover it */
	/* What the records said */
	int hits, ok, no_bid, unreadable;
	char first_wrong[160];
};

TEST(malformed_elf)
{
	struct corpus_file *cf = calloc(CORPUS_N, sizeof(*cf));
	char dir[] = "/tmp/bido_corpus_XXXXXX";
	uint8_t *img = malloc(IMG_SIZE), bid[MAX_BUILD_ID];
	uintptr_t rets[CORPUS_N];
	struct trace t = {};
	struct ring rb;
	unsigned int i, wrong = 0, missing = 0;
	bool *checked;
	int hits, s;

	if (bido_missing(_metadata))
		return;
	ASSERT_NE(NULL, mkdtemp(dir));
	srand(getpid());

	for (i = 0; i < CORPUS_N; i++) {
		const struct corpus_case *c = &corpus[i];
		struct corpus_file *f = &cf[i];
		size_t len;
		int prot = PROT_READ | PROT_EXEC;

		fresh_build_id(f->bid, i);
		snprintf(f->path, sizeof(f->path), "%s/%s", dir, c->name);
		f->fd = corpus_write(c, f->path, img, f->bid, &len);
		ASSERT_LE(0, f->fd) TH_LOG("%s: %s", f->path, strerror(errno));
		/* Our own reader agrees where the kernel must find it */
		if (c->want_bid) {
			ASSERT_EQ(MAX_BUILD_ID, elf_build_id(f->fd, bid, NULL));
			ASSERT_EQ(0, memcmp(bid, f->bid, MAX_BUILD_ID));
		}
		f->base = mmap(NULL, 2 * PG, prot, MAP_PRIVATE, f->fd,
			       c->map_off);
		f->code = f->base != MAP_FAILED;
		if (!f->code && errno == EPERM)	/* noexec */
			f->base = mmap(NULL, 2 * PG, PROT_READ, MAP_PRIVATE,
				       f->fd, c->map_off);
		ASSERT_NE(MAP_FAILED, f->base) TH_LOG("mmap %s: %s", f->path,
						      strerror(errno));
		/* In the second page: the one truncation takes away */
		f->addr = (uintptr_t)f->base + PG + 0x100 + 8 * i;
		rets[i] = f->addr;
		if (c->kind == C_TRUNC_MAPPED)
			ASSERT_EQ(0, ftruncate(f->fd, 0));
		if (c->kind == C_TRUNC_MAPPED_TAIL)
			ASSERT_EQ(0, ftruncate(f->fd, PG));
	}

	if (!cf[0].code)
		ksft_print_msg("%s is noexec: the files are no code, and must stay unresolved\n",
			       dir);
	ASSERT_EQ(0, bido_open(&rb));
	/* No record covers rets[0] where it is no code: sample 3 s only */
	hits = sample_fake(&rb, &t, rets, CORPUS_N, 20,
			   cf[0].code ? 30.0 : 3.0);

	checked = calloc(t.nr_r + 1, sizeof(*checked));
	for (s = 0; s < t.nr_s; s++) {
		const struct sample *smp = &t.s[s];
		const struct record *r = record_once(&t, s, rets[0], checked);

		if (!r)
			continue;
		for (i = 0; i < CORPUS_N; i++) {
			const struct corpus_case *c = &corpus[i];
			struct corpus_file *f = &cf[i];
			const struct bido_map *m = rec_find(r, f->addr);
			const char *why = NULL;

			f->hits++;
			if (!sample_has(smp, f->addr))
				why = "address not in the sample's call chain";
			else if (!f->code)
				why = m ? "a map of a mapping that is no code" :
					  NULL;
			else if (!m)
				why = "no map covers the address";
			else if (m->start != (uintptr_t)f->base ||
				 m->end != (uintptr_t)f->base + 2 * PG)
				why = "map bounds differ from the mapping";
			else if (m->pgoff != c->map_off)
				why = "pgoff differs from the mapping's offset";
			else if (m->flags & ~BIDO_MAP_NONE)
				why = "flags other than NO_BUILD_ID/UNREADABLE";
			else if (c->want_bid &&
				 (m->build_id_size != MAX_BUILD_ID ||
				  memcmp(m->build_id, f->bid, MAX_BUILD_ID)))
				why = "not the file's build-ID";
			else if (!c->want_bid &&
				 (m->build_id_size || !(m->flags & BIDO_MAP_NONE)))
				why = "a build-ID, or no flag saying why not";
			if (why) {
				if (!f->first_wrong[0])
					snprintf(f->first_wrong,
						 sizeof(f->first_wrong),
						 "%s (size %d, flags %#x, pgoff %#llx)",
						 why, m ? m->build_id_size : -1,
						 m ? m->flags : 0,
						 m ? (unsigned long long)m->pgoff
						   : 0ULL);
				if (!m)
					missing++;
				else
					wrong++;
				continue;
			}
			f->ok++;
			if (!m)
				continue;
			f->no_bid += !!(m->flags & PERF_BUILD_ID_OFFSET_MAP_NO_BUILD_ID);
			f->unreadable += !!(m->flags & PERF_BUILD_ID_OFFSET_MAP_UNREADABLE);
		}
	}

	for (i = 0; i < CORPUS_N; i++) {
		struct corpus_file *f = &cf[i];

		ksft_print_msg("%-26s %3d records, %3d as expected (%s; NO_BUILD_ID %d, UNREADABLE %d): %s\n",
			       corpus[i].name, f->hits, f->ok,
			       !f->code ? "no map" :
			       corpus[i].want_bid ? "build-ID" : "none",
			       f->no_bid, f->unreadable, corpus[i].how);
		if (f->first_wrong[0])
			ksft_print_msg("%-26s first wrong: %s\n",
				       corpus[i].name, f->first_wrong);
		EXPECT_EQ(f->hits, f->ok) TH_LOG("%s", corpus[i].name);
	}
	ksft_print_msg("malformed_elf: %d files, %d samples, %d records, %d samples in the made-up frames with their record, %llu lost, %u wrong, %u unresolved, %d bad records%s%s\n",
		       (int)CORPUS_N, t.nr_s, t.nr_r, hits,
		       (unsigned long long)t.lost, wrong, missing, t.bad_records,
		       t.bad_records ? ", first: " : "", t.why);
	EXPECT_EQ(0, t.bad_records);
	EXPECT_LT(0, hits);
	EXPECT_EQ(0, wrong);
	EXPECT_EQ(0, missing);

	ring_close(&rb);
	trace_free(&t);
	free(checked);
	for (i = 0; i < CORPUS_N; i++) {
		munmap(cf[i].base, 2 * PG);
		close(cf[i].fd);
		unlink(cf[i].path);
	}
	rmdir(dir);
	free(img);
	free(cf);
}

/* ---- pageout ---- */

static int page_resident(void *addr)
{
	unsigned char vec = 0;

	if (mincore(addr, PG, &vec))
		return -errno;
	return vec & 1;
}

/*
 * libbido_notepage.so is linked with its build-ID note on a page of its
 * own (page 1).  It lives where the tests were built (the 9p root in the
 * test guest: a filesystem whose pages can be dropped, unlike tmpfs
 * without swap), and nothing else maps it, so the kernel's build-ID cache
 * has not seen it in this boot: the first record must read the note from
 * the file.  The note page is evicted with MADV_PAGEOUT (it is first
 * touched through the mapping, so that it is ours to page out) and
 * POSIX_FADV_DONTNEED; the made-up return address is in the last page,
 * which is never touched.
 */
TEST(pageout)
{
	char path[PATH_MAX];
	uint8_t bid[MAX_BUILD_ID];
	uint64_t note_off, addr;
	int fd, n, before, paged, after, hits;
	struct file_tally ft;
	struct trace t = {};
	struct stat st;
	struct ring rb;
	size_t len;
	char *base;

	if (bido_missing(_metadata))
		return;
	snprintf(path, sizeof(path), "%s/libbido_notepage.so", self_dir());
	fd = open(path, O_RDONLY | O_CLOEXEC);
	ASSERT_LE(0, fd) TH_LOG("%s: %s", path, strerror(errno));
	n = elf_build_id(fd, bid, &note_off);
	ASSERT_EQ(MAX_BUILD_ID, n);
	ASSERT_EQ(1, note_off / PG) TH_LOG("the note is not on page 1");
	ASSERT_EQ(0, fstat(fd, &st));
	len = (st.st_size + PG - 1) & ~(PG - 1);
	ASSERT_LE(3 * PG, len);

	base = mmap(NULL, len, PROT_READ | PROT_EXEC, MAP_PRIVATE, fd, 0);
	ASSERT_NE(MAP_FAILED, base);
	bido_sink += __atomic_load_n(base + note_off, __ATOMIC_RELAXED);
	before = page_resident(base + PG);
	paged = madvise(base + PG, PG, MADV_PAGEOUT) ? -errno : 0;
	after = page_resident(base + PG);
	/* Where that did not drop it: unmap it from us, drop it from the cache */
	if (after) {
		madvise(base + PG, PG, MADV_DONTNEED);
		posix_fadvise(fd, PG, PG, POSIX_FADV_DONTNEED);
	}
	ksft_print_msg("note page resident: %d before, %d after MADV_PAGEOUT (%s), %d after MADV_DONTNEED + POSIX_FADV_DONTNEED\n",
		       before, after, paged ? strerror(-paged) : "ok",
		       page_resident(base + PG));
	if (page_resident(base + PG))
		SKIP(goto out, "the filesystem of %.200s keeps its pages (mincore): cannot evict the note",
		     path);

	addr = (uintptr_t)base + len - PG + 0x40;
	ASSERT_EQ(0, bido_open(&rb));
	hits = sample_fake(&rb, &t, &addr, 1, 5, 10.0);
	file_tally(&t, addr, (uintptr_t)base, (uintptr_t)base + len, bid, &ft);
	ksft_print_msg("pageout: %d samples, %d records, %d samples in the made-up frame with their record, %d records for it: %d with the build-ID, %d unreadable, %d wrong; %llu lost; note page resident after: %d\n",
		       t.nr_s, t.nr_r, hits, ft.nrec, ft.ok, ft.unreadable,
		       ft.wrong, (unsigned long long)t.lost,
		       page_resident(base + PG));
	EXPECT_EQ(0, t.bad_records) TH_LOG("%s", t.why);
	EXPECT_LT(0, ft.nrec);
	EXPECT_EQ(0, ft.wrong) TH_LOG("%s", ft.why);
	EXPECT_EQ(ft.nrec, ft.ok + ft.unreadable);
	ring_close(&rb);
	trace_free(&t);
out:
	munmap(base, len);
	close(fd);
}

/* ---- shared_writer ---- */

/*
 * The writer alternates the 20 bytes of the build-ID between A and B,
 * through a MAP_SHARED mapping (memcpy) and through pwrite(), while this
 * thread samples a private mapping of the same file.
 *
 * How strictly a record can be checked: the kernel reads the descriptor
 * with one __kernel_read() (a copy out of the page cache) and the writer
 * stores it with one memcpy() or pwrite() (a copy into the page cache);
 * neither is atomic against the other, and a read(2) racing a write(2)
 * may see part of each as well.  A record may therefore carry a mix of A
 * and B, byte by byte, which is what the file held at no single time.  So
 * the check is per byte: byte i must be A[i] or B[i] (A and B differ in
 * every byte and every byte differs from every other position's), the
 * size must be 20 and the note, which the writer never touches outside the
 * descriptor, must be found.  Anything else (another value, another
 * offset, NO_BUILD_ID) is wrong.  Mixed values are counted and printed.
 * UNREADABLE, which the UAPI allows for a read that failed, is counted.
 * While the writer runs, A and B are both values the file had a moment
 * ago, so nothing here says how current a record is: that is for
 * shared_writer_settled.
 */
struct writer {
	int fd;
	uint8_t *shared;	/* MAP_SHARED, writable, the whole file */
	const uint8_t *a, *b;
	int stop;
	unsigned long by_mmap, by_pwrite;
};

static void *writer_main(void *arg)
{
	struct writer *w = arg;
	unsigned long k;

	for (k = 0; !__atomic_load_n(&w->stop, __ATOMIC_RELAXED); k++) {
		const uint8_t *v = k & 1 ? w->b : w->a;

		if (k & 2) {
			if (pwrite(w->fd, v, MAX_BUILD_ID, DESC_OFF) ==
			    MAX_BUILD_ID)
				w->by_pwrite++;
		} else {
			memcpy(w->shared + DESC_OFF, v, MAX_BUILD_ID);
			w->by_mmap++;
		}
		if (!(k % 16))
			sched_yield();
	}
	return NULL;
}

enum bid_verdict { V_A, V_B, V_MIXED, V_UNREADABLE, V_WRONG };

static enum bid_verdict bid_verdict(const struct bido_map *m,
				    const uint8_t *a, const uint8_t *b)
{
	int i;

	if (!m->build_id_size && m->flags == PERF_BUILD_ID_OFFSET_MAP_UNREADABLE)
		return V_UNREADABLE;
	if (m->build_id_size != MAX_BUILD_ID || m->flags)
		return V_WRONG;
	if (!memcmp(m->build_id, a, MAX_BUILD_ID))
		return V_A;
	if (!memcmp(m->build_id, b, MAX_BUILD_ID))
		return V_B;
	for (i = 0; i < MAX_BUILD_ID; i++)
		if (m->build_id[i] != a[i] && m->build_id[i] != b[i])
			return V_WRONG;
	return V_MIXED;
}

/* A made-up ELF64 file in /tmp with build-ID @a, mapped twice */
struct rw_file {
	char path[64];
	int fd;
	uint8_t *shared;	/* MAP_SHARED, PROT_WRITE */
	uint8_t *priv;		/* MAP_PRIVATE code, the sampled one */
	uint64_t addr;		/* the made-up return address in priv */
};

/* 0; -EPERM where /tmp is noexec, else -1 */
static int rw_file_make(struct rw_file *f, const uint8_t *a)
{
	uint8_t *img = calloc(1, IMG_SIZE);
	int fd;

	snprintf(f->path, sizeof(f->path), "/tmp/bido_rw_XXXXXX");
	fd = mkstemp(f->path);
	if (fd < 0 || !img)
		return -1;
	close(fd);
	elf64_image(img, 3 * PG, a);
	f->fd = write_file(f->path, img, 3 * PG);
	free(img);
	if (f->fd < 0)
		return -1;
	/* Code: records describe executable mappings only */
	f->priv = mmap(NULL, 3 * PG, PROT_READ | PROT_EXEC, MAP_PRIVATE,
		       f->fd, 0);
	if (f->priv == MAP_FAILED)
		return -errno;
	f->shared = mmap(NULL, 3 * PG, PROT_READ | PROT_WRITE, MAP_SHARED,
			 f->fd, 0);
	if (f->shared == MAP_FAILED)
		return -1;
	f->addr = (uintptr_t)f->priv + 2 * PG + 0x80;
	return 0;
}

static void rw_file_free(struct rw_file *f)
{
	munmap(f->shared, 3 * PG);
	munmap(f->priv, 3 * PG);
	close(f->fd);
	unlink(f->path);
}

static void ab_values(uint8_t *a, uint8_t *b)
{
	int i;

	for (i = 0; i < MAX_BUILD_ID; i++) {
		a[i] = 0xa0 + i;
		b[i] = 0x40 + i;
	}
}

/* Tally the records of @t for @addr in @f: counts[] by verdict */
static void rw_tally(const struct trace *t, const struct rw_file *f,
		     const uint8_t *a, const uint8_t *b, int *counts,
		     int *transitions, char *first_wrong, size_t len)
{
	bool *checked = calloc(t->nr_r + 1, sizeof(*checked));
	enum bid_verdict last = V_WRONG;
	int i;

	for (i = 0; i < t->nr_s; i++) {
		const struct record *r = record_once(t, i, f->addr, checked);
		const struct bido_map *m;
		enum bid_verdict v;

		if (!r)
			continue;
		m = rec_find(r, f->addr);
		if (!m || m->start != (uintptr_t)f->priv || m->pgoff ||
		    m->end != (uintptr_t)f->priv + 3 * PG)
			v = V_WRONG;
		else
			v = bid_verdict(m, a, b);
		counts[v]++;
		if ((v == V_A || v == V_B) && last != v) {
			if (last != V_WRONG && transitions)
				(*transitions)++;
			last = v;
		}
		if (v == V_WRONG && !first_wrong[0])
			snprintf(first_wrong, len,
				 "map %s, size %d, flags %#x, bytes %02x%02x%02x%02x...",
				 m ? "found" : "missing",
				 m ? m->build_id_size : -1, m ? m->flags : 0,
				 m ? m->build_id[0] : 0, m ? m->build_id[1] : 0,
				 m ? m->build_id[2] : 0, m ? m->build_id[3] : 0);
	}
	free(checked);
}

TEST(shared_writer)
{
	uint8_t a[MAX_BUILD_ID], b[MAX_BUILD_ID];
	struct writer w = {};
	struct rw_file f;
	struct trace t = {};
	struct ring rb;
	pthread_t th;
	int counts[V_WRONG + 1] = {}, transitions = 0, hits, err;
	char first_wrong[128] = "";

	if (bido_missing(_metadata))
		return;
	ab_values(a, b);
	err = rw_file_make(&f, a);
	if (err == -EPERM)
		SKIP(return, "/tmp is noexec: the file cannot be code");
	ASSERT_EQ(0, err);
	w.fd = f.fd;
	w.shared = f.shared;
	w.a = a;
	w.b = b;

	ASSERT_EQ(0, bido_open(&rb));
	ASSERT_EQ(0, pthread_create(&th, NULL, writer_main, &w));
	hits = sample_fake(&rb, &t, &f.addr, 1, 150, 8.0);
	__atomic_store_n(&w.stop, 1, __ATOMIC_RELAXED);
	pthread_join(th, NULL);

	rw_tally(&t, &f, a, b, counts, &transitions, first_wrong,
		 sizeof(first_wrong));
	ksft_print_msg("shared_writer: %lu writes through the mapping, %lu by pwrite(); %d samples, %d records, %d samples in the made-up frame with their record; of the records for it: %d A, %d B, %d mixed, %d unreadable, %d wrong; %d changes between A and B seen; %llu lost\n",
		       w.by_mmap, w.by_pwrite, t.nr_s, t.nr_r, hits,
		       counts[V_A], counts[V_B], counts[V_MIXED],
		       counts[V_UNREADABLE], counts[V_WRONG], transitions,
		       (unsigned long long)t.lost);
	if (first_wrong[0])
		ksft_print_msg("first wrong: %s\n", first_wrong);
	EXPECT_EQ(0, t.bad_records) TH_LOG("%s", t.why);
	EXPECT_LT(0, hits);
	EXPECT_LT(0, w.by_mmap);
	EXPECT_LT(0, w.by_pwrite);
	EXPECT_EQ(0, counts[V_WRONG]);

	ring_close(&rb);
	trace_free(&t);
	rw_file_free(&f);
}

/*
 * Once the writer is done, the file holds one value for good, and every
 * record taken from then on must carry it.  The kernel caches build-IDs
 * by file identity and version (size, mtime, ctime, i_version), so this
 * checks that each kind of change reaches later records: pwrite(); a
 * store through a shared mapping that faults the page writable (the fault
 * updates mtime); a second store through the same mapping, which does not
 * fault and changes no timestamp; msync(); pwrite() again.  Each step
 * samples until a few records have come.
 */
TEST(shared_writer_settled)
{
	static const struct {
		const char *what;
		int how;	/* 0 pwrite, 1 store, 2 msync */
		uint8_t value;	/* of byte i: value + i */
	} step[] = {
		{ "written by pwrite() before the mapping", 0, 0xa0 },
		{ "stored through the shared mapping, first write", 1, 0x40 },
		{ "stored through the shared mapping, page already writable",
		  1, 0x10 },
		{ "the same after msync(MS_SYNC)", 2, 0x10 },
		{ "written by pwrite() again", 0, 0x70 },
	};
	uint8_t want[MAX_BUILD_ID], old[MAX_BUILD_ID];
	struct rw_file f;
	unsigned int i;
	int j, err;

	if (bido_missing(_metadata))
		return;
	for (j = 0; j < MAX_BUILD_ID; j++)
		want[j] = step[0].value + j;
	err = rw_file_make(&f, want);
	if (err == -EPERM)
		SKIP(return, "/tmp is noexec: the file cannot be code");
	ASSERT_EQ(0, err);

	for (i = 0; i < ARRAY_SIZE(step); i++) {
		int counts[V_WRONG + 1] = {}, hits;
		char first_wrong[128] = "";
		struct trace t = {};
		struct ring rb;

		memcpy(old, want, sizeof(old));
		for (j = 0; j < MAX_BUILD_ID; j++)
			want[j] = step[i].value + j;
		if (i && step[i].how == 0)
			ASSERT_EQ(MAX_BUILD_ID, pwrite(f.fd, want, MAX_BUILD_ID,
						       DESC_OFF));
		if (step[i].how == 1)
			memcpy(f.shared + DESC_OFF, want, MAX_BUILD_ID);
		if (step[i].how == 2)
			ASSERT_EQ(0, msync(f.shared, 3 * PG, MS_SYNC));

		ASSERT_EQ(0, bido_open(&rb));
		hits = sample_fake(&rb, &t, &f.addr, 1, 3, 5.0);
		/* Counted as "A": the file's; as "B": the one before */
		rw_tally(&t, &f, want, old, counts, NULL, first_wrong,
			 sizeof(first_wrong));
		ksft_print_msg("settled, %s: %d samples, %d records, %d samples in the made-up frame with their record; of the records for it: %d with the file's build-ID, %d with the one before, %d unreadable, %d wrong%s%s\n",
			       step[i].what, t.nr_s, t.nr_r, hits, counts[V_A],
			       want[0] == old[0] ? 0 : counts[V_B],
			       counts[V_UNREADABLE],
			       counts[V_WRONG] + counts[V_MIXED],
			       first_wrong[0] ? ": " : "", first_wrong);
		EXPECT_EQ(0, t.bad_records) TH_LOG("%s", t.why);
		EXPECT_LT(0, hits);
		EXPECT_EQ(0, counts[V_B] + counts[V_MIXED] + counts[V_WRONG])
			TH_LOG("%s: a build-ID the file no longer has",
			       step[i].what);
		ring_close(&rb);
		trace_free(&t);
	}
	rw_file_free(&f);
}

/* ---- stack_user_empty_dump ---- */

struct ustack_check {
	int samples, records, bad_size, bad_src, joined;
	uint64_t cookies[4096];
	int nr_cookies;
	uint64_t rec_cookies[4096];
	int nr_rec;
};

static void ustack_one(void *arg, const struct perf_event_header *h)
{
	struct ustack_check *u = arg;
	const uint64_t *p = (const void *)(h + 1);

	if (h->type == PERF_RECORD_BUILD_ID_OFFSET) {
		if (u->nr_rec < 4096)
			u->rec_cookies[u->nr_rec++] =
				((const struct bido_rec_head *)h)->cookie;
		u->records++;
		return;
	}
	if (h->type != PERF_RECORD_SAMPLE)
		return;
	u->samples++;
	/* ip, stack size 0, data_src, cookie */
	if (h->size != sizeof(*h) + 4 * sizeof(*p) || p[1]) {
		u->bad_size++;
		return;
	}
	u->bad_src += p[2] != FZ_MEM_NA;
	if (p[3] && u->nr_cookies < 4096)
		u->cookies[u->nr_cookies++] = p[3];
}

/*
 * attr.sample_stack_user 0 with PERF_SAMPLE_STACK_USER is accepted and
 * gives dumps of size 0.  perf_prepare_sample() then counts the size word
 * alone; every field after it must still be in its place, the cookie last,
 * and the cookie must be the one of a record.
 */
TEST(stack_user_empty_dump)
{
	struct perf_event_attr attr = {
		.size = sizeof(attr),
		.type = PERF_TYPE_SOFTWARE,
		.config = PERF_COUNT_SW_CPU_CLOCK,
		.sample_period = PERIOD_NS,
		.sample_type = PERF_SAMPLE_IP | PERF_SAMPLE_STACK_USER |
			       PERF_SAMPLE_DATA_SRC | PERF_SAMPLE_BUILD_ID_OFFSET,
		.sample_stack_user = 0,
		.defer_output = 1,
		.disabled = 1,
	};
	struct ustack_check *u = calloc(1, sizeof(*u));
	struct ring rb = {};
	double until;
	int i, k;

	if (bido_missing(_metadata))
		return;
	rb.fd = perf_open(&attr, 0, -1);
	ASSERT_LE(0, rb.fd) TH_LOG("perf_event_open: %s", strerror(errno));
	ASSERT_EQ(0, ring_map(&rb, 64));
	ASSERT_EQ(0, ioctl(rb.fd, PERF_EVENT_IOC_ENABLE, 0));
	until = cpu_seconds() + 0.5;
	while (cpu_seconds() < until) {
		for (k = 0; k < 100000; k++)
			bido_sink += k;
		ASSERT_TRUE(ring_walk(&rb, ustack_one, u));
	}
	ASSERT_EQ(0, ioctl(rb.fd, PERF_EVENT_IOC_DISABLE, 0));
	ASSERT_TRUE(ring_walk(&rb, ustack_one, u));
	for (i = 0; i < u->nr_cookies; i++)
		for (k = 0; k < u->nr_rec; k++)
			if (u->cookies[i] == u->rec_cookies[k]) {
				u->joined++;
				break;
			}
	ksft_print_msg("stack_user_empty_dump: %d samples (%d of the wrong size, %d with data_src not PERF_MEM_NA), %d non-zero cookies, %d of them in the %d records\n",
		       u->samples, u->bad_size, u->bad_src, u->nr_cookies,
		       u->joined, u->records);
	EXPECT_LT(0, u->samples);
	EXPECT_EQ(0, u->bad_size);
	EXPECT_EQ(0, u->bad_src)
		TH_LOG("the fields after an empty user stack dump are 8 bytes late: perf_output_sample_ustack() writes dyn_size, which the sample's size does not count");
	EXPECT_LT(0, u->joined);
	ring_unmap(&rb);
	close(rb.fd);
	free(u);
}

/*
 * A user stack dump is sized to fill the sample up to its 16-bit size
 * limit with the fields counted so far; REGS_INTR, counted after it, must
 * not push the sample past the limit: each sample's header.size must be
 * what its fields add up to (IP, the dump, the interrupt registers, the
 * cookie).
 */
TEST(stack_user_size_limit)
{
	struct perf_event_attr attr = {
		.size = sizeof(attr),
		.type = PERF_TYPE_SOFTWARE,
		.config = PERF_COUNT_SW_CPU_CLOCK,
		.sample_period = 5 * PERIOD_NS,
		.sample_type = PERF_SAMPLE_IP | PERF_SAMPLE_STACK_USER |
			       PERF_SAMPLE_REGS_INTR |
			       PERF_SAMPLE_BUILD_ID_OFFSET,
		.sample_stack_user = 65528,
		.sample_regs_intr = 0x00ff0fff,		/* 20 registers */
		.exclude_kernel = 1,
		.disabled = 1,
	};
	struct ring rb = {};
	uint64_t head, tail = 0, words;
	int samples = 0, wrong = 0, k;
	double until;

	if (bido_missing(_metadata))
		return;
	rb.fd = perf_open(&attr, 0, -1);
	ASSERT_LE(0, rb.fd) TH_LOG("perf_event_open: %s", strerror(errno));
	ASSERT_EQ(0, ring_map(&rb, 64));
	ASSERT_EQ(0, ioctl(rb.fd, PERF_EVENT_IOC_ENABLE, 0));
	/* Until the first sample: each copies 64 KiB, a few are enough */
	until = cpu_seconds() + 5.0;
	while (cpu_seconds() < until &&
	       !__atomic_load_n(&rb.pg->data_head, __ATOMIC_ACQUIRE))
		for (k = 0; k < 10000; k++)
			bido_sink += k;
	ASSERT_EQ(0, ioctl(rb.fd, PERF_EVENT_IOC_DISABLE, 0));

	/* The first sample only: one that overran makes the rest garbage */
	head = __atomic_load_n(&rb.pg->data_head, __ATOMIC_ACQUIRE);
	while (tail < head && !samples) {
		struct perf_event_header *h = (void *)(rb.data + tail);
		const uint64_t *w = (const void *)(h + 1);

		if (h->type == PERF_RECORD_SAMPLE) {
			samples++;
			/* ip, size, data, dyn_size, abi, regs, cookie */
			words = 1 + 1 + w[1] / 8 + !!w[1] + 1 + 20 + 1;
			if (h->size != sizeof(*h) + 8 * words) {
				wrong++;
				TH_LOG("sample of size %u, its fields (a user stack dump of %llu bytes, 20 registers) add up to %llu",
				       h->size, (unsigned long long)w[1],
				       (unsigned long long)(sizeof(*h) +
							    8 * words));
			}
		}
		if (!h->size)
			break;
		tail += h->size;
	}
	ksft_print_msg("stack_user_size_limit: first sample checked, %d wrong\n",
		       wrong);
	EXPECT_EQ(1, samples);
	EXPECT_EQ(0, wrong);
	ring_unmap(&rb);
	close(rb.fd);
}

/* ---- remount_fs, slow_fs, blocking_fs, blocking_fs_abort ---- */

/*
 * A library on a filesystem that stalls the read of its build-ID note:
 * a FUSE server in this process (the protocol of <linux/fuse.h> spoken on
 * /dev/fuse, no libfuse) serves one file, an ELF64 image whose note sits
 * alone on page FS_NOTE_PG, and holds any read of that page instead of
 * answering it.  A child process maps the file and samples itself with a
 * made-up return address in the mapping; nothing but the kernel's build-ID
 * reader ever reads the note page (the mapping is never touched, and the
 * server turns read-ahead off), so the first record's deferred work is
 * what stalls.  The record finds the note page missing from the page
 * cache, says the file is unreadable for now, and a worker reads the
 * file; the server holds that read for FS_HOLD_S seconds.  Meanwhile:
 *
 * - the read comes from the worker, not from the task;
 * - the task goes on sampling and gets records (unreadable ones), and its
 *   kernel stack is never found waiting for FUSE;
 * - another thread of the task gets through mmap()/munmap() pairs, and
 *   /proc/PID/maps reads (nothing holds mmap_lock).
 *
 * Then slow_fs answers the read: a later record carries the file's
 * build-ID, and no record a wrong one.  blocking_fs's server never
 * answers: SIGKILL must end the task all the same, and the worker ends
 * when the test aborts the connection (umount -f).
 *
 * The waits below have long limits so that a hang fails the test instead
 * of stopping it; they are not measurements.
 */
#define FS_PAGES	64
#define FS_NOTE_PG	48
#define FS_NOTE_OFF	(FS_NOTE_PG * PG + 0x40)
#define FS_FILE		"lib.so"
#define FS_INO		2
#define FS_MMAPS	100
#define FS_WAIT_S	60
#define FS_HOLD_S	10

enum fs_mode { FS_SERVE, FS_SLOW, FS_BLOCK, FS_BLOCK_DEAF };

struct fs_server {
	int fd;				/* /dev/fuse */
	enum fs_mode mode;
	const uint8_t *img;
	pthread_t thread;
	bool stop;			/* __atomic */
	pthread_mutex_t lock;
	pthread_cond_t cond;
	/* Under lock */
	bool holding, released;
	uint64_t held;			/* the unique of the held read */
	uint64_t held_off;
	uint32_t held_size;
	pid_t held_pid;
	int reads, interrupts, failed_eintr, errors;
};

/* What the child did, in memory it shares with the test */
struct fs_shared {
	int mmaps;			/* mmap()/munmap() pairs of the other thread */
	int stop;			/* both __atomic */
	int rounds, unreadable;		/* __atomic: sampling rounds, records so far */
	int nr_s, nr_r, hits, bad;
	struct file_tally ft;
	uint64_t lost;
	char why[128];			/* the first malformed record */
};

static void fs_reply(struct fs_server *s, uint64_t unique, int err,
		     const void *data, size_t len)
{
	struct fuse_out_header oh = {
		.len = sizeof(oh) + (err ? 0 : len),
		.error = err,
		.unique = unique,
	};
	struct iovec iov[2] = {
		{ &oh, sizeof(oh) },
		{ (void *)data, err ? 0 : len },
	};

	/*
	 * ENOENT: the kernel gave up on the request (interrupted); ENODEV:
	 * the connection is gone (aborted, unmounted)
	 */
	if (writev(s->fd, iov, 2) < 0 && errno != ENOENT && errno != ENODEV)
		__atomic_add_fetch(&s->errors, 1, __ATOMIC_RELAXED);
}

static void fs_attr(struct fuse_attr *a, uint64_t ino)
{
	memset(a, 0, sizeof(*a));
	a->ino = ino;
	a->nlink = 1;
	a->blksize = PG;
	if (ino == FUSE_ROOT_ID) {
		a->mode = S_IFDIR | 0755;
		a->nlink = 2;
	} else {
		a->mode = S_IFREG | 0755;
		a->size = FS_PAGES * PG;
		a->blocks = a->size / 512;
	}
}

/* Answer a read of [off, off + size) from the image */
static void fs_read_reply(struct fs_server *s, uint64_t unique, uint64_t off,
			  uint32_t size)
{
	uint64_t end = FS_PAGES * PG;

	if (off >= end)
		size = 0;
	else if (size > end - off)
		size = end - off;
	fs_reply(s, unique, 0, s->img + (off < end ? off : 0), size);
}

static void fs_read(struct fs_server *s, const struct fuse_in_header *in,
		    const struct fuse_read_in *ri)
{
	bool note = ri->offset <= FS_NOTE_OFF &&
		    ri->offset + ri->size > FS_NOTE_OFF;
	int err = 0;

	pthread_mutex_lock(&s->lock);
	s->reads++;
	if (note && !s->released) {
		if (!s->holding) {
			s->holding = true;
			s->held = in->unique;
			s->held_pid = in->pid;
			s->held_off = ri->offset;
			s->held_size = ri->size;
			pthread_cond_broadcast(&s->cond);
			pthread_mutex_unlock(&s->lock);
			return;
		}
		err = -EIO;	/* one held read at a time */
	}
	pthread_mutex_unlock(&s->lock);
	if (err)
		fs_reply(s, in->unique, err, NULL, 0);
	else
		fs_read_reply(s, in->unique, ri->offset, ri->size);
}

static void fs_request(struct fs_server *s, const struct fuse_in_header *in)
{
	const void *arg = in + 1;
	union {
		struct fuse_init_out init;
		struct fuse_entry_out entry;
		struct fuse_attr_out attr;
		struct fuse_open_out open;
		struct fuse_statfs_out statfs;
	} out;

	memset(&out, 0, sizeof(out));
	switch (in->opcode) {
	case FUSE_INIT:
		out.init.major = FUSE_KERNEL_VERSION;
		out.init.minor = FUSE_KERNEL_MINOR_VERSION;
		out.init.max_readahead = 0;	/* only the pages asked for */
		out.init.max_background = 1;
		out.init.congestion_threshold = 1;
		out.init.max_write = PG;
		out.init.time_gran = 1;
		fs_reply(s, in->unique, 0, &out.init, sizeof(out.init));
		break;
	case FUSE_LOOKUP:
		if (in->nodeid != FUSE_ROOT_ID || strcmp(arg, FS_FILE)) {
			fs_reply(s, in->unique, -ENOENT, NULL, 0);
			break;
		}
		out.entry.nodeid = FS_INO;
		out.entry.generation = 1;
		out.entry.entry_valid = 3600;
		out.entry.attr_valid = 3600;
		fs_attr(&out.entry.attr, FS_INO);
		fs_reply(s, in->unique, 0, &out.entry, sizeof(out.entry));
		break;
	case FUSE_GETATTR:
		out.attr.attr_valid = 3600;
		fs_attr(&out.attr.attr, in->nodeid);
		fs_reply(s, in->unique, 0, &out.attr, sizeof(out.attr));
		break;
	case FUSE_OPEN:
	case FUSE_OPENDIR:
		out.open.fh = 1;
		out.open.open_flags = FOPEN_KEEP_CACHE;
		fs_reply(s, in->unique, 0, &out.open, sizeof(out.open));
		break;
	case FUSE_READ:
		fs_read(s, in, arg);
		break;
	case FUSE_INTERRUPT: {
		const struct fuse_interrupt_in *ii = arg;

		pthread_mutex_lock(&s->lock);
		s->interrupts++;
		if (s->mode != FS_BLOCK_DEAF && s->holding &&
		    s->held == ii->unique) {
			fs_reply(s, s->held, -EINTR, NULL, 0);
			s->holding = false;
			s->failed_eintr++;
			pthread_cond_broadcast(&s->cond);
		}
		pthread_mutex_unlock(&s->lock);
		break;	/* an interrupt gets no answer of its own */
	}
	case FUSE_STATFS:
		out.statfs.st.namelen = 255;
		out.statfs.st.bsize = PG;
		fs_reply(s, in->unique, 0, &out.statfs, sizeof(out.statfs));
		break;
	case FUSE_FORGET:
	case FUSE_BATCH_FORGET:
		break;
	case FUSE_FLUSH:
	case FUSE_RELEASE:
	case FUSE_RELEASEDIR:
		fs_reply(s, in->unique, 0, NULL, 0);
		break;
	default:	/* what the kernel makes of "not implemented" here */
		fs_reply(s, in->unique, -EOPNOTSUPP, NULL, 0);
	}
}

static void *fs_serve(void *arg)
{
	size_t len = FUSE_MIN_READ_BUFFER + 2 * PG;
	struct fs_server *s = arg;
	char *buf = malloc(len);
	struct pollfd p = { .fd = s->fd, .events = POLLIN };

	while (buf && !__atomic_load_n(&s->stop, __ATOMIC_RELAXED)) {
		ssize_t n;

		if (poll(&p, 1, 100) <= 0)
			continue;
		n = read(s->fd, buf, len);
		if (n < 0 && (errno == EINTR || errno == EAGAIN ||
			      errno == ENOENT))
			continue;
		if (n < (ssize_t)sizeof(struct fuse_in_header))
			break;		/* ENODEV: unmounted or aborted */
		fs_request(s, (const void *)buf);
	}
	free(buf);
	return NULL;
}

/* Answer the held read, and every read after it */
static void fs_release(struct fs_server *s)
{
	pthread_mutex_lock(&s->lock);
	s->released = true;
	if (s->holding)
		fs_read_reply(s, s->held, s->held_off, s->held_size);
	s->holding = false;
	pthread_mutex_unlock(&s->lock);
}

static int fs_mount(struct fs_server *s, char *dir)
{
	char opts[128];

	s->fd = open("/dev/fuse", O_RDWR | O_CLOEXEC);
	if (s->fd < 0)
		return -errno;
	if (!mkdtemp(dir)) {
		close(s->fd);
		return -errno;
	}
	snprintf(opts, sizeof(opts),
		 "fd=%d,rootmode=40000,user_id=0,group_id=0,allow_other",
		 s->fd);
	if (mount("bido_fuse", dir, "fuse.bido_fuse", MS_NOSUID | MS_NODEV,
		  opts)) {
		int err = -errno;

		close(s->fd);
		rmdir(dir);
		return err;
	}
	pthread_mutex_init(&s->lock, NULL);
	pthread_cond_init(&s->cond, NULL);
	pthread_create(&s->thread, NULL, fs_serve, s);
	return 0;
}

static void fs_unmount(struct fs_server *s, const char *dir)
{
	fs_release(s);
	umount2(dir, MNT_DETACH);
	__atomic_store_n(&s->stop, true, __ATOMIC_RELAXED);
	pthread_join(s->thread, NULL);
	close(s->fd);
	rmdir(dir);
}

static void *fs_mapper(void *arg)
{
	struct fs_shared *sh = arg;

	while (!__atomic_load_n(&sh->stop, __ATOMIC_RELAXED)) {
		void *p = mmap(NULL, PG, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

		if (p == MAP_FAILED)
			break;
		mprotect(p, PG, PROT_READ);
		munmap(p, PG);
		__atomic_add_fetch(&sh->mmaps, 1, __ATOMIC_RELAXED);
	}
	return NULL;
}

static int fs_mmaps(struct fs_shared *sh)
{
	return __atomic_load_n(&sh->mmaps, __ATOMIC_RELAXED);
}

/* The child: map the file, sample a made-up frame in it, tally */
static void fs_child(struct fs_shared *sh, const char *path,
		     const uint8_t *bid)
{
	struct trace t = {};
	pthread_t mapper;
	struct ring rb;
	uint64_t addr;
	double until;
	char *base;
	int fd;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		_exit(10);
	base = mmap(NULL, FS_PAGES * PG, PROT_READ | PROT_EXEC, MAP_PRIVATE,
		    fd, 0);
	if (base == MAP_FAILED)
		_exit(11);
	if (bido_open(&rb))
		_exit(12);
	if (pthread_create(&mapper, NULL, fs_mapper, sh))
		_exit(13);
	addr = (uintptr_t)base + 2 * PG + 0x80;
	/*
	 * Until a record carries the build-ID: while the read of the note is
	 * held, the records say the file is unreadable, and the task goes on
	 */
	until = cpu_seconds() + 60.0;
	do {
		sh->hits = sample_fake(&rb, &t, &addr, 1, 3, 10.0);
		file_tally(&t, addr, (uintptr_t)base,
			   (uintptr_t)base + FS_PAGES * PG, bid, &sh->ft);
		__atomic_store_n(&sh->unreadable, sh->ft.unreadable,
				 __ATOMIC_RELAXED);
		__atomic_add_fetch(&sh->rounds, 1, __ATOMIC_RELAXED);
	} while (!sh->ft.ok && !sh->ft.wrong && cpu_seconds() < until);
	__atomic_store_n(&sh->stop, 1, __ATOMIC_RELAXED);
	pthread_join(mapper, NULL);

	sh->nr_s = t.nr_s;
	sh->nr_r = t.nr_r;
	sh->bad = t.bad_records;
	sh->lost = t.lost;
	if (t.bad_records)
		snprintf(sh->why, sizeof(sh->why), "%s", t.why);
	_exit(0);
}

/*
 * Wait up to @secs for @pid to end; its status in @status.  Returns false
 * when it has not.
 */
static bool fs_wait_exit(pid_t pid, int *status, int secs)
{
	int i;

	for (i = 0; i < secs * 100; i++) {
		if (waitpid(pid, status, WNOHANG) == pid)
			return true;
		usleep(10000);
	}
	return false;
}

/* Whether @file of /proc/@pid holds @what (false when it cannot be read) */
static bool fs_proc_has(pid_t pid, const char *file, const char *what,
			char *first, size_t len)
{
	char path[64], buf[8192];
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/%s", pid, file);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	buf[n < 0 ? 0 : n] = 0;
	if (first) {
		n = strnlen(buf, len - 1);
		memcpy(first, buf, n);
		first[n] = 0;
	}
	return strstr(buf, what);
}

/* Wait for the child to finish sampling and check what it found */
static bool fs_child_done(struct __test_metadata *_metadata, pid_t pid,
			  const struct fs_shared *sh, const char *name)
{
	bool ended;
	int status = 0;

	ended = fs_wait_exit(pid, &status, FS_WAIT_S * 2);
	EXPECT_TRUE(ended) TH_LOG("the child did not finish");
	if (!ended)
		return false;
	EXPECT_TRUE(WIFEXITED(status) && !WEXITSTATUS(status))
		TH_LOG("child status %#x", status);
	ksft_print_msg("%s: %d samples, %d records, %d samples in the made-up frame with their record, %d records for it: %d with the build-ID, %d unreadable, %d wrong; %llu lost\n",
		       name, sh->nr_s, sh->nr_r, sh->hits, sh->ft.nrec, sh->ft.ok,
		       sh->ft.unreadable, sh->ft.wrong,
		       (unsigned long long)sh->lost);
	EXPECT_EQ(0, sh->bad) TH_LOG("%s", sh->why);
	EXPECT_EQ(0, sh->ft.wrong) TH_LOG("%s", sh->ft.why);
	/*
	 * Records made before the note was in the page cache say unreadable;
	 * once the worker's read was answered, they carry this mount's
	 * build-ID.  Nothing else.
	 */
	EXPECT_LT(0, sh->ft.ok);
	EXPECT_EQ(sh->ft.nrec, sh->ft.ok + sh->ft.unreadable);
	return true;
}

static void fs_case(struct __test_metadata *_metadata, enum fs_mode mode)
{
	char dir[] = "/tmp/bido_fuse.XXXXXX", path[64], stack[2048] = "";
	struct fs_server s = { .mode = mode };
	uint8_t bid[MAX_BUILD_ID];
	struct fs_shared *sh;
	Elf64_Phdr *note_ph;
	struct timespec ts;
	int err, status = 0, mmaps, i, rounds, unreadable, in_work = 0;
	bool held, ended = false;
	uint8_t *img;
	pid_t pid;

	if (bido_missing(_metadata))
		return;
	if (geteuid())
		SKIP(return, "mounting a FUSE filesystem takes root");
	if (access("/dev/fuse", R_OK | W_OK))
		SKIP(return, "no /dev/fuse (CONFIG_FUSE_FS): %s",
		     strerror(errno));

	/* The valid image of malformed_elf, with its note moved far away */
	img = calloc(FS_PAGES, PG);
	ASSERT_NE(NULL, img);
	fresh_build_id(bid, 0x5a + mode);
	elf64_image(img, FS_PAGES * PG, bid);
	memset(img + NOTE_OFF, 0, sizeof(Elf64_Nhdr) + 4 + MAX_BUILD_ID);
	note_ph = (Elf64_Phdr *)(img + sizeof(Elf64_Ehdr)) + 1;
	note_ph->p_offset = FS_NOTE_OFF;
	note_ph->p_vaddr = FS_NOTE_OFF;
	put_note(img + FS_NOTE_OFF, 4, MAX_BUILD_ID, bid);
	s.img = img;
	s.released = mode == FS_SERVE;

	err = fs_mount(&s, dir);
	if (err == -ENODEV)
		SKIP(goto out_img, "the kernel has no FUSE");
	ASSERT_EQ(0, err) TH_LOG("mounting FUSE: %s", strerror(-err));
	snprintf(path, sizeof(path), "%s/%s", dir, FS_FILE);

	sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE,
		  MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, sh);
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		close(s.fd);
		fs_child(sh, path, bid);
	}
	if (mode == FS_SERVE) {
		struct stat st;

		if (!stat(path, &st))
			ksft_print_msg("%s is on device %u:%u\n", path,
				       major(st.st_dev), minor(st.st_dev));
		ended = fs_child_done(_metadata, pid, sh, "remount_fs");
		goto out;
	}

	/* Until the note's read is held, or the child is gone */
	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += FS_WAIT_S;
	pthread_mutex_lock(&s.lock);
	while (!s.holding &&
	       pthread_cond_timedwait(&s.cond, &s.lock, &ts) != ETIMEDOUT)
		;
	held = s.holding;
	pthread_mutex_unlock(&s.lock);
	EXPECT_TRUE(held) TH_LOG("no read of the note page came in %d s",
				 FS_WAIT_S);
	if (!held) {
		kill(pid, SIGKILL);
		goto out;
	}
	/* A worker reads the note, not the task */
	EXPECT_NE(pid, s.held_pid) TH_LOG("the task itself reads the note");

	/*
	 * For FS_HOLD_S the read stays held.  The task must go on meanwhile:
	 * sampling rounds done, records written (which say the file is
	 * unreadable for now), never found waiting in the deferred work, and
	 * another of its threads changing its mappings.
	 */
	rounds = __atomic_load_n(&sh->rounds, __ATOMIC_RELAXED);
	unreadable = __atomic_load_n(&sh->unreadable, __ATOMIC_RELAXED);
	mmaps = fs_mmaps(sh);
	for (i = 0; i < FS_HOLD_S * 10; i++) {
		if (fs_proc_has(pid, "stack", "fuse_", stack, sizeof(stack)))
			in_work++;
		usleep(100000);
	}
	rounds = __atomic_load_n(&sh->rounds, __ATOMIC_RELAXED) - rounds;
	unreadable = __atomic_load_n(&sh->unreadable, __ATOMIC_RELAXED) -
		     unreadable;
	ksft_print_msg("while the note's read was held for %d s: %d sampling rounds and %d more unreadable records of the task, %d mmap()/munmap() pairs by another of its threads, %d of %d looks at its kernel stack in FUSE\n",
		       FS_HOLD_S, rounds, unreadable, fs_mmaps(sh) - mmaps,
		       in_work, FS_HOLD_S * 10);
	EXPECT_LT(0, rounds) TH_LOG("the task made no progress while the read was held");
	EXPECT_LT(0, unreadable) TH_LOG("no record came while the read was held");
	EXPECT_EQ(0, in_work) TH_LOG("the task waits for FUSE: %s", stack);
	EXPECT_LT(mmaps, fs_mmaps(sh));
	EXPECT_TRUE(fs_proc_has(pid, "maps", FS_FILE, NULL, 0))
		TH_LOG("/proc/%d/maps does not read while the read stalls", pid);

	switch (mode) {
	case FS_SERVE:
	case FS_BLOCK:
		break;
	case FS_SLOW:
		/* Answered: a later record of the task has the build-ID */
		fs_release(&s);
		ended = fs_child_done(_metadata, pid, sh, "slow_fs");
		break;
	case FS_BLOCK_DEAF:
		/*
		 * The server never answers: SIGKILL ends the task all the
		 * same, as nothing of it waits; the worker waits until the
		 * connection is aborted (umount -f)
		 */
		kill(pid, SIGKILL);
		ended = fs_wait_exit(pid, &status, FS_WAIT_S);
		EXPECT_TRUE(ended) TH_LOG("SIGKILL did not end the task with the read unanswered");
		EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL)
			TH_LOG("child status %#x", status);
		umount2(dir, MNT_FORCE);	/* aborts the connection */
		break;
	}
	ksft_print_msg("server: %d reads, %d interrupts, %d reads failed with EINTR, %d replies refused\n",
		       s.reads, s.interrupts, s.failed_eintr, s.errors);
	EXPECT_EQ(0, s.errors);
out:
	if (!ended) {
		kill(pid, SIGKILL);
		umount2(dir, MNT_FORCE);
		waitpid(pid, &status, 0);
	}
	fs_unmount(&s, dir);
	munmap(sh, sizeof(*sh));
out_img:
	free(img);
}

/*
 * Two mounts one after the other serve files that differ in their
 * build-ID alone: same inode number, generation, size and times, and the
 * second mount gets the device number the first one had.  Each record
 * must carry its own mount's build-ID, not one cached from the other.
 */
TEST(remount_fs)
{
	int i;

	for (i = 0; i < 2; i++)
		fs_case(_metadata, FS_SERVE);
}

TEST(slow_fs)
{
	fs_case(_metadata, FS_SLOW);
}

TEST(blocking_fs)
{
	fs_case(_metadata, FS_BLOCK_DEAF);
}

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
 * user stack dumps that the two stack_user tests show to be laid out
 * wrong, to look for other problems while those stand.
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
	 * stack_user_size_limit show to be laid out wrong, when asked to look
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
		      "data_src of a software event is not PERF_MEM_NA, after an empty user stack dump (stack_user_empty_dump)" :
		      "data_src of a software event is not PERF_MEM_NA";
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

	if (bido_missing(_metadata))
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
	ksft_print_msg("fuzz: seed %llu, %d iterations%s (replay: BIDO_FUZZ_SEED=%llu BIDO_FUZZ_ITERS=%d%s)\n",
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
	ksft_print_msg("fuzz: seed %llu, %d iterations in %.1f s: %llu opens, %llu accepted (%llu with BUILD_ID_OFFSET, %llu with defer_output), rejected:%s\n",
		       (unsigned long long)fz.seed, fz.iters,
		       t1.tv_sec - t0.tv_sec + (t1.tv_nsec - t0.tv_nsec) / 1e9,
		       (unsigned long long)fz.opens,
		       (unsigned long long)fz.accepted,
		       (unsigned long long)fz.accepted_bido,
		       (unsigned long long)fz.accepted_defer, errs);
	ksft_print_msg("fuzz: records: %llu samples (%llu with a cookie), %llu build-ID offset records with %llu maps, %llu deferred callchains with %llu frames, %llu others; lost %llu records, %llu samples; %llu bad, %llu more after an empty user stack dump\n",
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
	ksft_print_msg("fuzz: operations: %llu ioctls (%llu succeeded), %llu mmaps (%llu failed), %llu munmaps, %llu closes, %llu children, %llu by the helper thread\n",
		       (unsigned long long)fz.ioctls,
		       (unsigned long long)fz.ioctl_ok,
		       (unsigned long long)fz.maps,
		       (unsigned long long)fz.map_fail,
		       (unsigned long long)fz.unmaps,
		       (unsigned long long)fz.closes,
		       (unsigned long long)fz.children,
		       (unsigned long long)fz.helper_ops);
	ksft_print_msg("fuzz: seconds spent opening %.1f, forking %.1f, waiting for children %.1f, draining %.1f, closing %.1f\n",
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
