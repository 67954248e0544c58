// SPDX-License-Identifier: GPL-2.0
/*
 * Start-up benchmark population: N tasks with about 30 file-backed
 * mappings each.  The program dlopen()s the 30 objects in pop/ next to
 * it (5 mappings each: 150 with libc's), forks N - 1 children, prints
 * "ready N" and, like every child, either pauses (idle population) or,
 * with -w SPIN, wakes once a second, each task at a phase of its own
 * spread over the second, and runs SPIN rounds of pop_work() in one of
 * the 30 objects (task i in object i % 30): a population that sampling
 * sees, whose comms and files a profiler must name.  POP_PROG builds
 * distinct programs (and build-IDs) from this file.  SIGTERM ends it and
 * every child (they share its process group).
 *
 * usage: population [-w SPIN] N
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/wait.h>

#ifndef POP_PROG
#define POP_PROG 0
#endif

#define NR_LIBS 30
#define STR_(x) #x
#define STR(x) STR_(x)

typedef unsigned long (*work_fn)(unsigned long rounds);

static const char prog_name[] = "population program " STR(POP_PROG);
static work_fn work[NR_LIBS];

static void on_term(int sig)
{
	signal(SIGTERM, SIG_IGN);
	kill(0, SIGTERM);
	_exit(0);
}

/* Task @i of @n: idle, or SPIN rounds once a second at phase i/n */
static void __attribute__((noreturn)) live(int i, int n, unsigned long spin)
{
	struct timespec next;
	unsigned long sink = 0;

	if (!spin)
		for (;;)
			pause();
	clock_gettime(CLOCK_MONOTONIC, &next);
	next.tv_nsec += (long)(1000000000LL * i / n);
	for (;;) {
		next.tv_sec += next.tv_nsec / 1000000000;
		next.tv_nsec %= 1000000000;
		clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &next, NULL);
		sink += work[i % NR_LIBS](spin);
		__asm__ volatile("" : : "r" (sink));
		next.tv_sec++;
	}
}

int main(int argc, char **argv)
{
	char dir[PATH_MAX], path[PATH_MAX + 32];
	unsigned long spin = 0;
	int n, i, opt, sum = 0;
	ssize_t len;

	while ((opt = getopt(argc, argv, "w:")) != -1) {
		if (opt != 'w')
			goto usage;
		spin = strtoul(optarg, NULL, 0);
	}
	if (optind != argc - 1)
		goto usage;
	n = atoi(argv[optind]);
	len = readlink("/proc/self/exe", dir, sizeof(dir) - 1);
	if (len < 0)
		return 1;
	dir[len] = 0;
	*strrchr(dir, '/') = 0;
	for (i = 0; i < NR_LIBS; i++) {
		int (*fn)(int);
		void *dl;

		snprintf(path, sizeof(path), "%s/pop/libpop%02d.so", dir, i);
		dl = dlopen(path, RTLD_NOW | RTLD_LOCAL);
		if (!dl) {
			fprintf(stderr, "population: %s\n", dlerror());
			return 1;
		}
		fn = (int (*)(int))dlsym(dl, "pop_value");
		work[i] = (work_fn)dlsym(dl, "pop_work");
		if (!fn || !work[i]) {
			fprintf(stderr, "population: %s: no pop_value or pop_work\n",
				path);
			return 1;
		}
		sum += fn(i);
	}
	setpgid(0, 0);
	signal(SIGTERM, on_term);
	for (i = 1; i < n; i++) {
		pid_t pid = fork();

		if (pid < 0) {
			perror("population: fork");
			kill(0, SIGTERM);
			return 1;
		}
		if (!pid) {
			signal(SIGTERM, SIG_DFL);
			live(i, n, spin);
		}
	}
	printf("ready %d %d (%s)\n", n, sum & 1, prog_name);
	fflush(stdout);
	live(0, n > 0 ? n : 1, spin);
usage:
	fprintf(stderr, "usage: population [-w SPIN] N\n");
	return 2;
}
