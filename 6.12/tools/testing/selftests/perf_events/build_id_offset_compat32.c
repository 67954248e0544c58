// SPDX-License-Identifier: GPL-2.0
/*
 * A 32-bit program for build_id_offset.c's compat test: burns CPU in a
 * chain of frames for about argv[2] seconds of CPU time, then copies its
 * /proc/self/maps to argv[1] (the test's ground truth) and exits.  Built
 * -m32 -static with frame pointers.
 */
#include <fcntl.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

/* Where results go, so that the work is not optimised away */
unsigned long bido_sink;

static __attribute__((noipa)) unsigned long c32_leaf(unsigned long n)
{
	unsigned long x = n;

	while (n--) {
		x = x * 1103515245 + 12345;
		__asm__ volatile("" : "+r" (x));
	}
	return x;
}

static __attribute__((noipa)) unsigned long c32_mid(unsigned long n)
{
	return c32_leaf(n) + 1;
}

static __attribute__((noipa)) unsigned long c32_top(unsigned long n)
{
	return c32_mid(n) * 3;
}

static double cpu_seconds(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	double until = cpu_seconds() + (argc > 2 ? atof(argv[2]) : 0.5);
	char buf[4096];
	int in, out;
	ssize_t n;

	while (cpu_seconds() < until) {
		bido_sink += c32_top(20000);
		getppid();
	}
	if (argc < 2)
		return 0;
	in = open("/proc/self/maps", O_RDONLY);
	out = open(argv[1], O_WRONLY | O_TRUNC);
	if (in < 0 || out < 0)
		return 1;
	while ((n = read(in, buf, sizeof(buf))) > 0)
		if (write(out, buf, n) != n)
			return 1;
	return 0;
}
