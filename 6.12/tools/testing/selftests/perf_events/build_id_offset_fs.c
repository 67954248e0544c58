// SPDX-License-Identifier: GPL-2.0
/*
 * PERF_SAMPLE_BUILD_ID_OFFSET on a FUSE file system served by the test
 * itself (raw /dev/fuse).
 *
 * slow_fs, blocking_fs: the library is on a FUSE filesystem that holds
 *   the read of its note: the task goes on meanwhile (a worker reads),
 *   gets the build-ID once the read is answered, and ends on SIGKILL
 *   when it never is.
 * remount_fs: two FUSE mounts in turn serve files that differ only in
 *   their build-ID: each record must have its own mount's.
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
	ksft_print_msg(
		"%s: %d samples, %d records, %d samples in the made-up frame with their record, %d records for it: %d with the build-ID, %d unreadable, %d wrong; %llu lost\n",
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

	if (bido_skip_missing(_metadata, NULL))
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
	ksft_print_msg(
		"while the note's read was held for %d s: %d sampling rounds and %d more unreadable records of the task, %d mmap()/munmap() pairs by another of its threads, %d of %d looks at its kernel stack in FUSE\n",
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
	ksft_print_msg(
		"server: %d reads, %d interrupts, %d reads failed with EINTR, %d replies refused\n",
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

TEST_HARNESS_MAIN
