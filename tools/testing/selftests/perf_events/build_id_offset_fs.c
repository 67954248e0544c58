// SPDX-License-Identifier: GPL-2.0
/*
 * PERF_SAMPLE_BUILD_ID_OFFSET and file systems: build-IDs are read from
 * the page cache only, so a sampled task never waits for a file system.
 */
#define _GNU_SOURCE
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <linux/fuse.h>
#include <linux/perf_event.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/wait.h>

#include <linux/compiler.h>

#include "../kselftest_harness.h"
#include "build_id_offset.h"

FIXTURE(bido_fs) {};
FIXTURE_SETUP(bido_fs) {}
FIXTURE_TEARDOWN(bido_fs) {}

/*
 * uncached_file_never_waits: a file on a FUSE file system served by this
 * test, which holds every read of it unanswered.  Build-IDs are read from
 * the page cache only: while the file's first page (its ELF header and
 * build-ID note) is not cached, the sampled task gets records that call
 * the file UNREADABLE, and no read reaches the file system (a read would
 * stop the task in the kernel until the server answers).  Once the test
 * has read the page itself, the records carry the file's build-ID.
 */
#define FS_FILE		"lib.so"
#define FS_INO		2
#define FS_PG		4096
#define FS_SIZE		(2 * FS_PG)

struct fs_server {
	int fd;				/* /dev/fuse */
	pthread_t thread;
	uint8_t img[FS_SIZE];
	int serve;			/* __atomic: answer reads, else hold them */
	int stop;			/* __atomic */
	int held;			/* __atomic: reads held unanswered */
	uint64_t held_unique, held_off;	/* the last one */
	uint32_t held_size;
};

/* An ELF64 shared object whose only program header is a build-ID note */
static void fs_image(uint8_t *img, const uint8_t *id)
{
	Elf64_Ehdr *eh = (void *)img;
	Elf64_Phdr *ph = (void *)(img + sizeof(*eh));
	Elf64_Nhdr *nh = (void *)(img + 0x100);

	memset(img, 0, FS_SIZE);
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
	eh->e_phnum = 1;
	ph->p_type = PT_NOTE;
	ph->p_offset = 0x100;
	ph->p_filesz = sizeof(*nh) + 4 + 20;
	ph->p_align = 4;
	nh->n_namesz = 4;
	nh->n_descsz = 20;
	nh->n_type = NT_GNU_BUILD_ID;
	memcpy(nh + 1, "GNU", 4);
	memcpy((char *)(nh + 1) + 4, id, 20);
}

static void fs_reply(struct fs_server *s, uint64_t unique, int err,
		     const void *data, size_t len)
{
	struct fuse_out_header oh = {
		.len = sizeof(oh) + (err ? 0 : len),
		.error = err,
		.unique = unique,
	};
	struct iovec iov[2] = { { &oh, sizeof(oh) }, { (void *)data, err ? 0 : len } };

	/* ENOENT: the request was interrupted; ENODEV: unmounted */
	if (writev(s->fd, iov, 2) < 0 && errno != ENOENT && errno != ENODEV)
		perror("fuse reply");
}

static void fs_attr(struct fuse_attr *a, uint64_t ino)
{
	memset(a, 0, sizeof(*a));
	a->ino = ino;
	a->nlink = ino == FUSE_ROOT_ID ? 2 : 1;
	a->mode = ino == FUSE_ROOT_ID ? S_IFDIR | 0755 : S_IFREG | 0755;
	a->size = ino == FUSE_ROOT_ID ? 0 : FS_SIZE;
	a->blksize = FS_PG;
}

static void fs_read(struct fs_server *s, uint64_t unique, uint64_t off, uint32_t size)
{
	if (!__atomic_load_n(&s->serve, __ATOMIC_ACQUIRE)) {
		s->held_unique = unique;
		s->held_off = off;
		s->held_size = size;
		__atomic_add_fetch(&s->held, 1, __ATOMIC_RELEASE);
		return;
	}
	if (off >= FS_SIZE)
		size = 0;
	else if (size > FS_SIZE - off)
		size = FS_SIZE - off;
	fs_reply(s, unique, 0, s->img + (off < FS_SIZE ? off : 0), size);
}

static void fs_request(struct fs_server *s, const struct fuse_in_header *in)
{
	const void *arg = in + 1;
	union {
		struct fuse_init_out init;
		struct fuse_entry_out entry;
		struct fuse_attr_out attr;
		struct fuse_open_out open;
	} out;

	memset(&out, 0, sizeof(out));
	switch (in->opcode) {
	case FUSE_INIT:
		out.init.major = FUSE_KERNEL_VERSION;
		out.init.minor = FUSE_KERNEL_MINOR_VERSION;
		out.init.max_readahead = 0;	/* only the pages asked for */
		out.init.max_write = FS_PG;
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
		out.open.fh = 1;
		out.open.open_flags = FOPEN_KEEP_CACHE;
		fs_reply(s, in->unique, 0, &out.open, sizeof(out.open));
		break;
	case FUSE_READ: {
		const struct fuse_read_in *ri = arg;

		fs_read(s, in->unique, ri->offset, ri->size);
		break;
	}
	case FUSE_FORGET:
	case FUSE_BATCH_FORGET:
	case FUSE_INTERRUPT:
		break;		/* no answer */
	case FUSE_FLUSH:
	case FUSE_RELEASE:
		fs_reply(s, in->unique, 0, NULL, 0);
		break;
	default:
		fs_reply(s, in->unique, -EOPNOTSUPP, NULL, 0);
	}
}

static void *fs_serve(void *arg)
{
	size_t len = FUSE_MIN_READ_BUFFER + 2 * FS_PG;
	struct fs_server *s = arg;
	struct pollfd p = { .fd = s->fd, .events = POLLIN };
	char *buf = malloc(len);

	while (buf && !__atomic_load_n(&s->stop, __ATOMIC_RELAXED)) {
		ssize_t n;

		if (poll(&p, 1, 100) <= 0)
			continue;
		n = read(s->fd, buf, len);
		if (n < 0 && (errno == EINTR || errno == EAGAIN || errno == ENOENT))
			continue;
		if (n < (ssize_t)sizeof(struct fuse_in_header))
			break;		/* unmounted */
		fs_request(s, (const void *)buf);
	}
	free(buf);
	return NULL;
}

/* Answer what is held and every read from now on */
static void fs_release(struct fs_server *s)
{
	__atomic_store_n(&s->serve, 1, __ATOMIC_RELEASE);
	if (__atomic_load_n(&s->held, __ATOMIC_ACQUIRE))
		fs_read(s, s->held_unique, s->held_off, s->held_size);
}

/* The last map of @t's records from the @from'th on that covers @addr */
static const struct bido_map *last_cover(const struct trace *t, int from, uint64_t addr)
{
	const struct bido_map *m = NULL;
	int i;

	for (i = from; i < t->nr_recs; i++)
		m = rec_find(t->recs[i], addr) ?: m;
	return m;
}

/* What the sampled child shares with the test */
struct fs_shared {
	int stop;			/* READ_ONCE */
	uint64_t addr;			/* where it mapped the file's second page */
};

/* The sampled child: spins with the mapping's address on its stack */
static noinline void fs_child(const char *path, struct fs_shared *sh, int go)
{
	void *p = MAP_FAILED;
	uint64_t word;
	int fd = open(path, O_RDONLY);
	char c;

	/* The second page: the header page is never mapped nor touched */
	if (fd >= 0)
		p = mmap(NULL, FS_PG, PROT_READ | PROT_EXEC, MAP_PRIVATE, fd, FS_PG);
	if (p == MAP_FAILED || read(go, &c, 1) != 1)
		_exit(1);
	word = (uint64_t)p + 0x10;
	WRITE_ONCE(sh->addr, word);
	while (!READ_ONCE(sh->stop)) {
		spin_leaf();
		/* in memory, on the stack, all along */
		asm volatile("" : : "m" (word));
	}
	_exit(0);
}

/* Mount the server's file system on a new directory @dir */
static int fs_start(struct fs_server *s, char *dir)
{
	char opts[128];
	int err;

	s->fd = open("/dev/fuse", O_RDWR | O_CLOEXEC);
	if (s->fd < 0)
		return -errno;
	if (!mkdtemp(dir))
		return -errno;
	snprintf(opts, sizeof(opts), "fd=%d,rootmode=40000,user_id=0,group_id=0", s->fd);
	if (mount("bido_fuse", dir, "fuse.bido_fuse", MS_NOSUID | MS_NODEV, opts)) {
		err = -errno;
		rmdir(dir);
		return err;
	}
	return -pthread_create(&s->thread, NULL, fs_serve, s);
}

static void fs_stop(struct fs_server *s, const char *dir)
{
	fs_release(s);
	umount2(dir, MNT_DETACH);
	__atomic_store_n(&s->stop, 1, __ATOMIC_RELAXED);
	pthread_join(s->thread, NULL);
	close(s->fd);
	rmdir(dir);
}

/* Read the file's header page through the file system, into the page cache */
static bool fs_cache_header(const char *path)
{
	char page[FS_PG];
	int fd = open(path, O_RDONLY);
	bool ok = fd >= 0 && pread(fd, page, FS_PG, 0) == FS_PG;

	if (fd >= 0)
		close(fd);
	return ok;
}

TEST_F_TIMEOUT(bido_fs, uncached_file_never_waits, 180)
{
	static struct fs_server s;
	char dir[] = "/tmp/bido_fuse.XXXXXX", path[64];
	struct perf_event_attr attr;
	const struct bido_map *m;
	int go[2], status, i, cached = -1;
	struct fs_shared *sh;
	struct trace t = {};
	uint8_t id[20];
	struct ring r;
	pid_t pid;

	memset(&s, 0, sizeof(s));
	for (i = 0; i < 20; i++)
		id[i] = 0xb0 + i;
	fs_image(s.img, id);
	i = fs_start(&s, dir);
	if (i)
		SKIP(return, "no FUSE mount here: %s", strerror(-i));
	snprintf(path, sizeof(path), "%s/%s", dir, FS_FILE);

	sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, sh);
	ASSERT_EQ(0, pipe(go));
	pid = fork();
	ASSERT_GE(pid, 0);
	if (pid == 0) {
		close(go[1]);
		fs_child(path, sh, go[0]);
	}
	close(go[0]);

	/* Stack dumps: the word that points into the mapping is covered */
	sample_attr(&attr, PERF_SAMPLE_BUILD_ID_OFFSET | PERF_SAMPLE_REGS_USER |
		    PERF_SAMPLE_STACK_USER, false);
	attr.sample_regs_user = REGS_MASK;
	attr.sample_stack_user = MAX_STACK;
	attr.sample_period = 4000000;
	ASSERT_EQ(0, ring_open(&r, &attr, pid));
	ioctl(r.fd, PERF_EVENT_IOC_ENABLE, 0);
	ASSERT_EQ(1, write(go[1], "g", 1));
	close(go[1]);

	/*
	 * Until four records cover the mapping while the file system holds
	 * every read (UNCHANGED ones, which list no map, count: the record
	 * before them covers it); then the test reads the header page
	 * itself, and waits for a record that has the build-ID: a map that
	 * was UNREADABLE is no reason for an UNCHANGED record once its file
	 * can be read.  A task stuck in a read would write no record at all:
	 * the loop ends at WAIT_S and the checks below fail.
	 */
	for (i = 0; i < WAIT_S * 100; i++) {
		usleep(10000);
		ring_drain(&r, &t, attr.sample_type);
		if (!READ_ONCE(sh->addr))
			continue;
		m = last_cover(&t, cached < 0 ? 0 : cached, sh->addr);
		if (cached < 0 && m && t.nr_recs >= 4) {
			cached = t.nr_recs;
			EXPECT_EQ(0, __atomic_load_n(&s.held, __ATOMIC_ACQUIRE));
			fs_release(&s);
			ASSERT_TRUE(fs_cache_header(path));
		} else if (cached >= 0 && m && m->build_id_size) {
			break;
		}
	}
	WRITE_ONCE(sh->stop, 1);
	/* A task stuck in a read needs it answered to exit */
	fs_release(&s);
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ring_drain(&r, &t, attr.sample_type);
	ring_close(&r);
	fs_stop(&s, dir);

	EXPECT_TRUE(WIFEXITED(status) && !WEXITSTATUS(status));
	EXPECT_EQ(0, t.bad);
	ASSERT_NE(0, sh->addr);
	ASSERT_LE(0, cached)
		TH_LOG("no record of the file: %d samples, %d records, %d reads held",
		       t.nr_samples, t.nr_recs, s.held);
	/* Before the header page was cached: unreadable, at the mapped offset */
	for (i = 0; i < cached; i++) {
		m = rec_find(t.recs[i], sh->addr);
		if (!m)
			continue;
		EXPECT_EQ(PERF_BUILD_ID_OFFSET_MAP_UNREADABLE, m->flags);
		EXPECT_EQ(0, m->build_id_size);
		EXPECT_EQ(FS_PG, m->pgoff);
	}
	/* After: the file's build-ID */
	m = last_cover(&t, cached, sh->addr);
	ASSERT_NE(NULL, m) TH_LOG("no record covered the file once its header page was cached");
	EXPECT_EQ(20, m->build_id_size);
	EXPECT_EQ(0, memcmp(m->build_id, id, 20));
	EXPECT_EQ(0, m->flags);
	munmap(sh, sizeof(*sh));
	trace_free(&t);
}

TEST_HARNESS_MAIN
