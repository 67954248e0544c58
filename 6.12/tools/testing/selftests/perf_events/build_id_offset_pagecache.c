// SPDX-License-Identifier: GPL-2.0
/*
 * PERF_SAMPLE_BUILD_ID_OFFSET and the page cache of the mapped file.
 *
 * pageout: the page with the build-ID note of a library is evicted before
 *   the kernel first reads the note.
 * shared_writer, shared_writer_settled: another thread rewrites the note
 *   through a shared mapping and pwrite() while it is being read, and
 *   after it is done.
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

#define IMG_SIZE	(5 * PG)

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

	if (bido_skip_missing(_metadata, NULL))
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
	ksft_print_msg(
		"note page resident: %d before, %d after MADV_PAGEOUT (%s), %d after MADV_DONTNEED + POSIX_FADV_DONTNEED\n",
		before, after, paged ? strerror(-paged) : "ok",
		page_resident(base + PG));
	if (page_resident(base + PG))
		SKIP(goto out,
		     "the filesystem of %.200s keeps its pages (mincore): cannot evict the note",
		     path);

	addr = (uintptr_t)base + len - PG + 0x40;
	ASSERT_EQ(0, bido_open(&rb));
	hits = sample_fake(&rb, &t, &addr, 1, 5, 10.0);
	file_tally(&t, addr, (uintptr_t)base, (uintptr_t)base + len, bid, &ft);
	ksft_print_msg(
		"pageout: %d samples, %d records, %d samples in the made-up frame with their record, %d records for it: %d with the build-ID, %d unreadable, %d wrong; %llu lost; note page resident after: %d\n",
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

	if (bido_skip_missing(_metadata, NULL))
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
	ksft_print_msg(
		"shared_writer: %lu writes through the mapping, %lu by pwrite(); %d samples, %d records, %d samples in the made-up frame with their record; of the records for it: %d A, %d B, %d mixed, %d unreadable, %d wrong; %d changes between A and B seen; %llu lost\n",
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

	if (bido_skip_missing(_metadata, NULL))
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
		ksft_print_msg(
			"settled, %s: %d samples, %d records, %d samples in the made-up frame with their record; of the records for it: %d with the file's build-ID, %d with the one before, %d unreadable, %d wrong%s%s\n",
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

TEST_HARNESS_MAIN
