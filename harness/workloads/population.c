// SPDX-License-Identifier: GPL-2.0
/*
 * Start-up benchmark population: N idle tasks with about 30 file-backed
 * mappings each.  The program dlopen()s the 30 objects in pop/ next to
 * it (5 mappings each: 150 with libc's), forks N - 1 children that
 * pause(), prints "ready N" and pauses too.  SIGTERM ends it and every
 * child (they share its process group).
 *
 * usage: population N
 */
#include <dlfcn.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/wait.h>

#define NR_LIBS 30

static void on_term(int sig)
{
	signal(SIGTERM, SIG_IGN);
	kill(0, SIGTERM);
	_exit(0);
}

int main(int argc, char **argv)
{
	char dir[PATH_MAX], path[PATH_MAX + 32];
	int n = argc > 1 ? atoi(argv[1]) : 0, i, sum = 0;
	ssize_t len;

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
		sum += fn ? fn(i) : 0;
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
			for (;;)
				pause();
		}
	}
	printf("ready %d %d\n", n, sum & 1);
	fflush(stdout);
	for (;;)
		pause();
}
