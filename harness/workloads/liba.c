// SPDX-License-Identifier: GPL-2.0
/* Demo workload, first library: a hash loop called through libb. */
#include <stdint.h>

uint64_t liba_mix(uint64_t x, unsigned int rounds)
{
	unsigned int i;

	for (i = 0; i < rounds; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
	}
	return x;
}
