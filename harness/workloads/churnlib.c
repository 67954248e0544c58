// SPDX-License-Identifier: GPL-2.0
/*
 * One of the small shared objects that the churn workload dlopen()s and
 * spins in.  CHURN_ID makes each build, and its build-ID, distinct; the
 * padding in front of churn_spin() gives each build's function another
 * file offset, so that a sample attributed to the wrong object would
 * rarely get the right offset by chance.
 */
#ifndef CHURN_ID
#define CHURN_ID 0
#endif

/* Code before churn_spin() in .text: CHURN_ID * 64 bytes of it */
__attribute__((used, noinline)) void churn_pad(void)
{
	__asm__ volatile(".fill %c0, 1, 0x90" : : "i" (CHURN_ID * 64));
}

/*
 * Spin until *stop is set (by a signal handler or another thread); the
 * loop is all in this function, so that samples land in it.
 */
unsigned long churn_spin(const volatile int *stop)
{
	unsigned long x = CHURN_ID + 1;

	while (!*stop)
		x = x * 6364136223846793005UL + 1442695040888963407UL;
	return x;
}
