// SPDX-License-Identifier: GPL-2.0
/* Demo workload, second library: sums over liba's hash. */
#include <stdint.h>

uint64_t liba_mix(uint64_t x, unsigned int rounds);

uint64_t libb_sum(uint64_t seed, unsigned int n)
{
	uint64_t sum = 0;
	unsigned int i;

	for (i = 0; i < n; i++)
		sum += liba_mix(seed + i, 64);
	return sum;
}

uint64_t libb_scan(const uint64_t *v, unsigned int n)
{
	uint64_t acc = 0;
	unsigned int i, j;

	for (j = 0; j < 64; j++)
		for (i = 0; i < n; i++)
			acc = acc * 31 + (v[i] ^ j);
	return acc;
}
