// SPDX-License-Identifier: GPL-2.0
/*
 * Shared objects for build_id_offset.c, built several times: with a
 * build-ID (dlopen()ed, and mapped by hand from a file whose note the
 * test evicts from the page cache, from a memfd, from a deleted file),
 * without one, and without frame pointers; and for
 * build_id_offset_pagecache.c, linked with its note on a page of its own.
 * BIDO_VARIANT makes each build's bytes, so its build-ID, its own.
 *
 * bido_spin() is mapped and called without the dynamic loader, at an
 * address the test computes from the ELF symbol table: it must stay
 * position-independent and self-contained (no globals, no calls).
 */

#ifndef BIDO_VARIANT
#define BIDO_VARIANT 0
#endif

unsigned long bido_spin(unsigned long n)
{
	unsigned long x = BIDO_VARIANT + 1;

	while (n--) {
		x = x * 6364136223846793005UL + 1442695040888963407UL;
		asm volatile("" : "+r" (x));
	}
	return x;
}

/* Called through the dynamic loader: a frame of its own in call chains */
unsigned long bido_lib_work(unsigned long n, unsigned long (*cb)(unsigned long))
{
	unsigned long x = bido_spin(n);

	return cb ? x + cb(n / 4) : x;
}
