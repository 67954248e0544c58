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
