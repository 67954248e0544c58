// SPDX-License-Identifier: GPL-2.0
/*
 * PERF_SAMPLE_STACK_USER with PERF_SAMPLE_REGS_INTR: the user stack dump
 * is sized to fill what is left of the 64 KiB a sample may have, from the
 * fields counted before it.  The interrupt registers must be among them:
 * a sample of IP, a dump of up to 65528 bytes and 20 interrupt registers
 * must say in header.size what its fields add up to.  A kernel that
 * counts the registers after sizing the dump makes a sample larger than
 * 64 KiB, whose header.size has wrapped (a 65696-byte sample says 160),
 * and writes it past the space it reserved.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <linux/perf_event.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>

#include "../kselftest_harness.h"

/* Some user-mode work for cpu-clock to sample */
static void spin(void)
{
	for (unsigned long k = 0; k < 10000; k++)
		asm volatile("" : : "r" (k));
}

#define NR_REGS		20
#define DATA_PAGES	64

TEST(stack_user_regs_intr)
{
	struct perf_event_attr attr = {
		.size = sizeof(attr),
		.type = PERF_TYPE_SOFTWARE,
		.config = PERF_COUNT_SW_CPU_CLOCK,
		.sample_period = 1000000,
		.sample_type = PERF_SAMPLE_IP | PERF_SAMPLE_STACK_USER |
			       PERF_SAMPLE_REGS_INTR,
		.sample_stack_user = 65528,
		.sample_regs_intr = 0x00ff0fff,		/* NR_REGS registers */
		.exclude_kernel = 1,
		.disabled = 1,
	};
	long page = sysconf(_SC_PAGESIZE);
	struct perf_event_mmap_page *pg;
	uint64_t head, off = 0, words;
	struct timespec t0, t;
	int samples = 0, fd;
	char *data;

	fd = syscall(__NR_perf_event_open, &attr, 0, -1, -1,
		     PERF_FLAG_FD_CLOEXEC);
	if (fd < 0 && (errno == ENOENT || errno == EOPNOTSUPP))
		SKIP(return, "no cpu-clock sampling: %s", strerror(errno));
	ASSERT_LE(0, fd) TH_LOG("perf_event_open: %s", strerror(errno));
	pg = mmap(NULL, (DATA_PAGES + 1) * page, PROT_READ | PROT_WRITE,
		  MAP_SHARED, fd, 0);
	ASSERT_NE(MAP_FAILED, pg);
	data = (char *)pg + page;

	/* Until the first sample: each copies 64 KiB, one is enough */
	ASSERT_EQ(0, ioctl(fd, PERF_EVENT_IOC_ENABLE, 0));
	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {
		spin();
		clock_gettime(CLOCK_MONOTONIC, &t);
	} while (!__atomic_load_n(&pg->data_head, __ATOMIC_ACQUIRE) &&
		 t.tv_sec < t0.tv_sec + 30);
	ASSERT_EQ(0, ioctl(fd, PERF_EVENT_IOC_DISABLE, 0));

	/* The first sample only: one that overran makes the rest garbage */
	head = __atomic_load_n(&pg->data_head, __ATOMIC_ACQUIRE);
	while (off < head && !samples) {
		struct perf_event_header *h = (void *)(data + off);
		const uint64_t *w = (const void *)(h + 1);

		if (!h->size)
			break;
		off += h->size;
		if (h->type != PERF_RECORD_SAMPLE)
			continue;
		samples++;
		/* ip, size, the dump, dyn_size, abi, the registers */
		words = 1 + 1 + w[1] / 8 + !!w[1] + 1 + NR_REGS;
		EXPECT_EQ(sizeof(*h) + 8 * words, h->size)
			TH_LOG("a %llu-byte dump, %d registers: %llu bytes",
			       (unsigned long long)w[1], NR_REGS,
			       (unsigned long long)(sizeof(*h) + 8 * words));
	}
	EXPECT_EQ(1, samples);
	munmap(pg, (DATA_PAGES + 1) * page);
	close(fd);
}

TEST_HARNESS_MAIN
