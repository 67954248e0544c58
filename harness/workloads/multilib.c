// SPDX-License-Identifier: GPL-2.0
/*
 * Demo workload: a CPU-bound loop whose time splits between the main
 * program and two shared libraries, with frame pointers everywhere so that
 * `perf record -g` gets full user call chains.
 *
 * usage: multilib [SECONDS]
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

uint64_t libb_sum(uint64_t seed, unsigned int n);
uint64_t libb_scan(const uint64_t *v, unsigned int n);

static uint64_t table[4096];

static __attribute__((noinline)) uint64_t main_fill(uint64_t seed)
{
	unsigned int i;

	for (i = 0; i < 4096; i++)
		table[i] = seed = seed * 6364136223846793005ULL + 1;
	return seed;
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	double secs = argc > 1 ? atof(argv[1]) : 1.0;
	double end = now() + secs;
	uint64_t x = 1, loops = 0;

	while (now() < end) {
		x = main_fill(x);
		x += libb_sum(x, 256);
		x += libb_scan(table, 4096 / 8);
		loops++;
	}
	printf("multilib: %llu loops, result %llx\n",
	       (unsigned long long)loops, (unsigned long long)x);
	return 0;
}
