// SPDX-License-Identifier: GPL-2.0
/*
 * Run by build_id_offset_races (the exec tests) from a copy in /tmp:
 * set-uid root, execute-only, or plain.  Static and not position
 * independent, so that its only file mapping is itself, at the addresses
 * its program headers give, and the test can tell its samples apart.
 *
 *   build_id_offset_exec_helper SECS [N]
 *
 * burns SECS seconds of CPU time in user mode, then execs itself N more
 * times; the last one exits with the low byte of its effective uid, so
 * that the test sees what the exec did to the credentials.
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static double cpu_seconds(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Where results go, so that the work is not optimised away */
unsigned long helper_sink;

static unsigned long spin(unsigned long n)
{
	unsigned long x = n;

	while (n--) {
		x = x * 6364136223846793005UL + 1442695040888963407UL;
		asm volatile("" : "+r" (x));
	}
	return x;
}

int main(int argc, char **argv)
{
	double secs = argc > 1 ? atof(argv[1]) : 0.1;
	int more = argc > 2 ? atoi(argv[2]) : 0;
	double until = cpu_seconds() + secs;
	char n[16];

	while (cpu_seconds() < until)
		helper_sink += spin(10000);
	if (more > 0) {
		snprintf(n, sizeof(n), "%d", more - 1);
		execl("/proc/self/exe", argv[0], argv[1], n, (char *)NULL);
		return 127;
	}
	return geteuid() & 0xff;
}
