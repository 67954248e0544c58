// SPDX-License-Identifier: GPL-2.0
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>
#include "../tests.h"

/*
 * perf test -w manymaps FILE [PAGES]: make FILE PAGES pages long (20000
 * by default) and map each page executable at an address of its own,
 * odd pages readable and even ones not, so that no two mappings merge;
 * then say "ready" and wait to be killed.  A task with that many
 * mappings makes perf record's synthesis of its mappings take long.
 */
static int manymaps(int argc, const char **argv)
{
	long page = sysconf(_SC_PAGESIZE), n = 20000, i;
	FILE *f;

	if (argc < 1) {
		fprintf(stderr, "Error: no file to map\n");
		return 1;
	}
	if (argc > 1)
		n = atol(argv[1]);
	f = fopen(argv[0], "w+");
	if (!f || n <= 0 || ftruncate(fileno(f), n * page)) {
		perror(argv[0]);
		return 1;
	}
	for (i = 0; i < n; i++) {
		if (mmap(NULL, page, PROT_EXEC | (i % 2 ? PROT_READ : 0), MAP_PRIVATE,
			 fileno(f), i * page) == MAP_FAILED) {
			perror("mmap");
			return 1;
		}
	}
	printf("ready\n");
	fflush(stdout);
	pause();
	return 0;
}

DEFINE_WORKLOAD(manymaps);
