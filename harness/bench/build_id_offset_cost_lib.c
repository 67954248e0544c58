// SPDX-License-Identifier: GPL-2.0
/*
 * The shared object build_id_offset_cost calls into (copied NLIBS times
 * for its cold workload): a frame of its own in every call chain, with a
 * build-ID (the Makefile links it with --build-id).
 */

unsigned long bido_lib_work(unsigned long n, unsigned long (*cb)(unsigned long));

static unsigned long bido_spin(unsigned long n)
{
	unsigned long x = 1;

	while (n--) {
		x = x * 6364136223846793005UL + 1442695040888963407UL;
		__asm__ volatile("" : "+r" (x));
	}
	return x;
}

unsigned long bido_lib_work(unsigned long n, unsigned long (*cb)(unsigned long))
{
	unsigned long x = bido_spin(n);

	return cb ? x + cb(n / 4) : x;
}
