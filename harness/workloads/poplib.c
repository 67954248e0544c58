// SPDX-License-Identifier: GPL-2.0
/*
 * One of the 30 small shared objects that every task of the population
 * workload maps (POP_ID makes each build, and its build-ID, distinct).
 */
#ifndef POP_ID
#define POP_ID 0
#endif

int pop_value(int x)
{
	return x * (POP_ID + 3) + POP_ID;
}

/* The periodic work of a task of the sampled population */
unsigned long pop_work(unsigned long rounds)
{
	unsigned long i, v = POP_ID;

	for (i = 0; i < rounds; i++) {
		v = v * 2862933555777941757UL + 3037000493UL;
		/* Keeps the loop a loop */
		__asm__ volatile("" : "+r" (v));
	}
	return v;
}
