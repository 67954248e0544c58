// SPDX-License-Identifier: GPL-2.0
/*
 * Resolution-under-churn workload: processes that keep starting, mapping,
 * unmapping and exiting, spinning in shared objects in between, and a log
 * of where they spun for a profile to be checked against.
 *
 * usage: churn [-p] [-t SECONDS] [-w WORKERS] [-s SLOTS] [-r MS] [-m MS]
 *              LIBDIR LOG
 *
 * LIBDIR holds libchurn00.so, libchurn01.so, ... (churnlib.c, each with
 * its own build-ID).  The parent makes SLOTS more paths (default 4),
 * LIBDIR/slotN.so, copies of those objects, and every MS milliseconds
 * (default 200) replaces one of them with a copy of another object (copy,
 * then rename over, as package managers do): the same path then names
 * several build-IDs in one run.
 *
 * WORKERS processes (default 4) each dlopen() a resident object, then run
 * for SECONDS (default 10); with -p they wait for SIGUSR1 first, after
 * "churn: ready" on stdout, so that a profiler can start while they are
 * there.  Each loops: mostly it forks a child that execs this program
 * again (-c), sometimes it spins in its resident object or in a round of
 * its own (below).  An exec'd child does one of:
 *   n  two to six rounds; a round maps up to three object files (mmap,
 *      some PROT_EXEC), dlopen()s an object, spins in its churn_spin()
 *      (one round in four with a second thread spinning too), dlclose()s
 *      it and unmaps the files;
 *   s  dlopen()s an object, spins briefly and exits at once, still mapped;
 *   f  a round in which a fork()ed child (no exec) spins in the inherited
 *      mapping too and exits at once.
 * A spin lasts -m MS (default 4) milliseconds on average: MS / 2 to
 * 3 * MS / 2, and MS / 4 in the children that exit at once.  Successive
 * dlopen()s of different objects tend to reuse the same addresses, and
 * PIDs are reused as they wrap.
 *
 * Each spin appends one line to LOG (a single write to an O_APPEND file):
 *   PID TID START END PATH BUILD_ID FN_START FN_END FN_OFFSET
 * START and END are CLOCK_MONOTONIC in ns around the call; FN_START and
 * FN_END the runtime range of churn_spin() (hex); FN_OFFSET the file
 * offset of its first byte (hex), from the PT_LOAD that maps it; BUILD_ID
 * from the object's PT_NOTE in memory.  A sample of the task in
 * [START, END] with its IP in [FN_START, FN_END) is at file offset
 * FN_OFFSET + IP - FN_START of the object with BUILD_ID.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <link.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/wait.h>

#define MAX_EXTRA	3

/* A round's variants */
#define ROUND_THREAD	0x1	/* a second thread spins too */
#define ROUND_FORK	0x2	/* a fork()ed child spins too, then exits */

typedef unsigned long (*spin_fn)(const volatile int *stop);

struct spin {
	spin_fn		fn;
	char		path[PATH_MAX];
	char		build_id[41];
	uintptr_t	start, end;
	uint64_t	offset;
};

static char libdir[PATH_MAX / 2], self_path[PATH_MAX];
static const char *log_path;
static int log_fd = -1, nr_libs, nr_slots;
static unsigned int spin_ms = 4;
static uint64_t rnd_state;
static volatile int stop;

static void die(const char *what)
{
	fprintf(stderr, "churn[%d]: %s: %s\n", getpid(), what,
		errno ? strerror(errno) : "failed");
	_exit(1);
}

static uint64_t rnd(void)
{
	/* xorshift64* */
	rnd_state ^= rnd_state >> 12;
	rnd_state ^= rnd_state << 25;
	rnd_state ^= rnd_state >> 27;
	return rnd_state * 2685821657736338717ULL;
}

static void seed(uint64_t s)
{
	rnd_state = s * 0x9e3779b97f4a7c15ULL + 1;
	rnd();
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

/* Objects 0 .. nr_libs - 1, then the slots */
static void lib_path(int i, char *buf, size_t size)
{
	if (i < nr_libs)
		snprintf(buf, size, "%s/libchurn%02d.so", libdir, i);
	else
		snprintf(buf, size, "%s/slot%d.so", libdir, i - nr_libs);
}

static void random_lib(char *buf, size_t size)
{
	lib_path(rnd() % (nr_libs + nr_slots), buf, size);
}

static void on_alarm(int sig)
{
	stop = 1;
}

/* A spin's length: MS / 2 to 3 * MS / 2, MS / 4 for those that exit at once */
static unsigned int spin_len(void)
{
	return spin_ms / 2 + rnd() % (spin_ms + 1) ?: 1;
}

static unsigned int short_spin(void)
{
	return spin_ms / 4 ?: 1;
}

static void arm_timer(unsigned int ms)
{
	struct itimerval it = { .it_value = { .tv_usec = ms * 1000 } };

	if (setitimer(ITIMER_REAL, &it, NULL))
		die("setitimer");
}

/* The GNU build-ID in the notes of one segment */
static int note_build_id(const char *p, size_t len, char *out)
{
	const char *end = p + len;

	while (p + sizeof(Elf64_Nhdr) <= end) {
		const Elf64_Nhdr *n = (const Elf64_Nhdr *)p;
		const char *name = p + sizeof(*n);
		const unsigned char *desc = (const unsigned char *)name +
					    ((n->n_namesz + 3) & ~3U);
		unsigned int i;

		if ((const char *)desc + n->n_descsz > end)
			break;
		if (n->n_type == NT_GNU_BUILD_ID && n->n_namesz == 4 &&
		    !memcmp(name, "GNU", 4) && n->n_descsz <= 20) {
			for (i = 0; i < n->n_descsz; i++)
				sprintf(out + 2 * i, "%02x", desc[i]);
			return 0;
		}
		p = (const char *)desc + ((n->n_descsz + 3) & ~3U);
	}
	return -1;
}

/* dl_iterate_phdr(): the object that maps s->start, its file offset there */
static int find_object(struct dl_phdr_info *pi, size_t size, void *data)
{
	struct spin *s = data;
	int i, found = 0;

	for (i = 0; i < pi->dlpi_phnum; i++) {
		const Elf64_Phdr *ph = &pi->dlpi_phdr[i];
		uintptr_t lo = pi->dlpi_addr + ph->p_vaddr;

		if (ph->p_type == PT_LOAD && s->start >= lo &&
		    s->start < lo + ph->p_memsz) {
			s->offset = s->start - lo + ph->p_offset;
			found = 1;
		}
	}
	if (!found)
		return 0;
	snprintf(s->path, sizeof(s->path), "%s", pi->dlpi_name);
	s->build_id[0] = 0;
	for (i = 0; i < pi->dlpi_phnum; i++) {
		const Elf64_Phdr *ph = &pi->dlpi_phdr[i];

		if (ph->p_type == PT_NOTE &&
		    !note_build_id((const char *)(pi->dlpi_addr + ph->p_vaddr),
				   ph->p_memsz, s->build_id))
			break;
	}
	return 1;
}

/* dlopen() an object and describe its churn_spin() */
static void *open_spin(const char *path, struct spin *s)
{
	const Elf64_Sym *sym = NULL;
	Dl_info dli;
	void *h;

	h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		fprintf(stderr, "churn: %s\n", dlerror());
		_exit(1);
	}
	s->fn = (spin_fn)dlsym(h, "churn_spin");
	if (!s->fn || !dladdr1((void *)s->fn, &dli, (void **)&sym, RTLD_DL_SYMENT) ||
	    !sym || !sym->st_size)
		die("churn_spin: no symbol");
	s->start = (uintptr_t)s->fn;
	s->end = s->start + sym->st_size;
	if (!dl_iterate_phdr(find_object, s) || !s->build_id[0])
		die("churn_spin: no object or build-ID");
	return h;
}

/*
 * Spin until stop is set, by a timer of ms armed here (0: by another
 * thread's); log the interval.
 */
static void spin_logged(const struct spin *s, unsigned int ms)
{
	char line[PATH_MAX + 256];
	uint64_t t0, t1;
	int len;

	t0 = now_ns();
	if (ms) {
		stop = 0;
		arm_timer(ms);
	}
	s->fn(&stop);
	t1 = now_ns();
	len = snprintf(line, sizeof(line),
		       "%d %d %llu %llu %s %s %lx %lx %llx\n",
		       getpid(), gettid(), (unsigned long long)t0,
		       (unsigned long long)t1, s->path, s->build_id,
		       (unsigned long)s->start, (unsigned long)s->end,
		       (unsigned long long)s->offset);
	if (write(log_fd, line, len) != len)
		die("write log");
}

static void *spin_thread(void *arg)
{
	spin_logged(arg, 0);
	return NULL;
}

static void spin_round(const char *path, unsigned int ms, int how)
{
	void *maps[MAX_EXTRA];
	size_t lens[MAX_EXTRA];
	int i, nr_maps = rnd() % (MAX_EXTRA + 1);
	pthread_t thread;
	struct spin s;
	pid_t child = 0;
	void *h;

	/* Other object files, mapped and unmapped around the spin */
	for (i = 0; i < nr_maps; i++) {
		char extra[PATH_MAX];
		struct stat st;
		int fd;

		random_lib(extra, sizeof(extra));
		fd = open(extra, O_RDONLY);
		if (fd < 0 || fstat(fd, &st))
			die(extra);
		lens[i] = st.st_size;
		maps[i] = mmap(NULL, lens[i], PROT_READ | (rnd() & 1 ? PROT_EXEC : 0),
			       MAP_PRIVATE, fd, 0);
		if (maps[i] == MAP_FAILED)
			die("mmap");
		close(fd);
	}

	h = open_spin(path, &s);
	stop = 0;
	if ((how & ROUND_THREAD) && pthread_create(&thread, NULL, spin_thread, &s))
		die("pthread_create");
	if (how & ROUND_FORK) {
		child = fork();
		if (child < 0)
			die("fork");
		if (!child) {
			/* Gone within a few ms, with the object still mapped */
			spin_logged(&s, short_spin());
			_exit(0);
		}
	}
	spin_logged(&s, ms);
	if (how & ROUND_THREAD)
		pthread_join(thread, NULL);
	if (child)
		waitpid(child, NULL, 0);
	dlclose(h);
	for (i = 0; i < nr_maps; i++)
		munmap(maps[i], lens[i]);
}

/* An exec'd child: churn -s SLOTS -m MS -c MODE SEED LIBDIR LOG */
static int child_main(char mode, uint64_t s)
{
	char path[PATH_MAX];
	int i, rounds;

	seed(s);
	switch (mode) {
	case 's': {
		struct spin sp;

		random_lib(path, sizeof(path));
		open_spin(path, &sp);
		spin_logged(&sp, short_spin());
		_exit(0);
	}
	case 'f':
		random_lib(path, sizeof(path));
		spin_round(path, spin_len(), ROUND_FORK);
		return 0;
	default:
		rounds = 2 + rnd() % 5;
		for (i = 0; i < rounds; i++) {
			random_lib(path, sizeof(path));
			spin_round(path, spin_len(), rnd() % 4 ? 0 : ROUND_THREAD);
		}
		return 0;
	}
}

/*
 * A worker opens its resident object, then waits for the deadline on the
 * pipe: so with -p it is there, with the object mapped, when the profiler
 * starts.
 */
static void worker(int id, int go)
{
	unsigned long children = 0, rounds = 0;
	char path[PATH_MAX];
	struct spin resident;
	uint64_t deadline;

	seed(getpid() ^ now_ns());
	random_lib(path, sizeof(path));
	open_spin(path, &resident);
	if (read(go, &deadline, sizeof(deadline)) != sizeof(deadline))
		die("read deadline");
	while (now_ns() < deadline) {
		unsigned int r = rnd() % 100;
		char arg[32], slots[16], ms[16];
		pid_t pid;

		if (r < 8) {
			spin_logged(&resident, spin_len());
			rounds++;
			continue;
		}
		if (r < 15) {
			random_lib(path, sizeof(path));
			spin_round(path, spin_len(), 0);
			rounds++;
			continue;
		}
		snprintf(arg, sizeof(arg), "%llu", (unsigned long long)rnd());
		snprintf(slots, sizeof(slots), "%d", nr_slots);
		snprintf(ms, sizeof(ms), "%u", spin_ms);
		pid = fork();
		if (pid < 0)
			die("fork");
		if (!pid) {
			const char *mode = r < 30 ? "s" : r < 40 ? "f" : "n";

			execl(self_path, "churn", "-s", slots, "-m", ms, "-c", mode, arg,
			      libdir, log_path, (char *)NULL);
			die("exec");
		}
		if (waitpid(pid, NULL, 0) < 0)
			die("waitpid");
		children++;
	}
	fprintf(stderr, "churn: worker %d: %lu exec'd children, %lu rounds in place\n",
		id, children, rounds);
	_exit(0);
}

static void copy_file(const char *from, const char *to)
{
	char buf[65536];
	int in, out;
	ssize_t n;

	in = open(from, O_RDONLY);
	out = open(to, O_WRONLY | O_CREAT | O_TRUNC, 0755);
	if (in < 0 || out < 0)
		die(to);
	while ((n = read(in, buf, sizeof(buf))) > 0)
		if (write(out, buf, n) != n)
			die(to);
	if (n < 0)
		die(from);
	close(in);
	close(out);
}

/* Put a copy of a random object at slot i: copy, then rename over */
static void replace_slot(int i)
{
	char from[PATH_MAX], tmp[PATH_MAX + 16], to[PATH_MAX];

	lib_path(rnd() % nr_libs, from, sizeof(from));
	lib_path(nr_libs + i, to, sizeof(to));
	snprintf(tmp, sizeof(tmp), "%s.tmp", to);
	copy_file(from, tmp);
	if (rename(tmp, to))
		die("rename");
}

static void usage(void)
{
	fprintf(stderr, "usage: churn [-p] [-t SECONDS] [-w WORKERS] [-s SLOTS] [-r MS] [-m MS] LIBDIR LOG\n");
	exit(2);
}

int main(int argc, char **argv)
{
	unsigned int secs = 10, workers = 4, replace_ms = 200, replaced = 0;
	int go[2], wait_usr1 = 0;
	sigset_t usr1;
	struct sigaction sa = { .sa_handler = on_alarm };
	char child_mode = 0, path[PATH_MAX];
	uint64_t child_seed = 0, deadline;
	ssize_t len;
	int opt, i;

	nr_slots = 4;
	while ((opt = getopt(argc, argv, "pt:w:s:r:m:c:")) != -1) {
		switch (opt) {
		case 't':
			secs = atoi(optarg);
			break;
		case 'w':
			workers = atoi(optarg);
			break;
		case 's':
			nr_slots = atoi(optarg);
			break;
		case 'r':
			replace_ms = atoi(optarg);
			break;
		case 'c':
			child_mode = optarg[0];
			break;
		case 'p':
			wait_usr1 = 1;
			break;
		case 'm':
			spin_ms = atoi(optarg);
			break;
		default:
			usage();
		}
	}
	if (child_mode) {
		if (argc - optind != 3)
			usage();
		child_seed = strtoull(argv[optind++], NULL, 0);
	}
	if (argc - optind != 2 || !workers || !replace_ms || !spin_ms)
		usage();
	snprintf(libdir, sizeof(libdir), "%s", argv[optind]);
	log_path = argv[optind + 1];

	sigaction(SIGALRM, &sa, NULL);
	log_fd = open(log_path, O_WRONLY | O_APPEND | O_CREAT, 0644);
	if (log_fd < 0)
		die(log_path);
	for (nr_libs = 0; ; nr_libs++) {
		snprintf(path, sizeof(path), "%s/libchurn%02d.so", libdir, nr_libs);
		if (access(path, R_OK))
			break;
	}
	if (!nr_libs)
		die("no libchurnNN.so in LIBDIR");

	if (child_mode)
		return child_main(child_mode, child_seed);

	len = readlink("/proc/self/exe", self_path, sizeof(self_path) - 1);
	if (len < 0)
		die("/proc/self/exe");
	self_path[len] = 0;
	seed(getpid());
	for (i = 0; i < nr_slots; i++)
		replace_slot(i);

	if (pipe(go))
		die("pipe");
	sigemptyset(&usr1);
	sigaddset(&usr1, SIGUSR1);
	sigprocmask(SIG_BLOCK, &usr1, NULL);
	for (i = 0; i < (int)workers; i++) {
		pid_t pid = fork();

		if (pid < 0)
			die("fork");
		if (!pid) {
			sigprocmask(SIG_UNBLOCK, &usr1, NULL);
			close(go[1]);
			worker(i, go[0]);
		}
	}
	if (wait_usr1) {
		printf("churn: ready\n");
		fflush(stdout);
		while (sigwaitinfo(&usr1, NULL) < 0)
			;
	}
	deadline = now_ns() + secs * 1000000000ULL;
	for (i = 0; i < (int)workers; i++)
		if (write(go[1], &deadline, sizeof(deadline)) != sizeof(deadline))
			die("write deadline");
	while (nr_slots && now_ns() < deadline) {
		usleep(replace_ms * 1000);
		replace_slot(rnd() % nr_slots);
		replaced++;
	}
	while (wait(NULL) > 0)
		;
	fprintf(stderr, "churn: %u workers, %u s, %d objects, %d slots replaced %u times\n",
		workers, secs, nr_libs, nr_slots, replaced);
	return 0;
}
