// SPDX-License-Identifier: GPL-2.0
/*
 * PERF_SAMPLE_STACK_USER with an empty dump: attr.sample_stack_user 0 is
 * accepted and gives dumps of size 0, for which perf_prepare_sample()
 * counts the size word alone.  Every field after the dump must be where
 * the sample's size says: a cpu-clock sample of IP, STACK_USER and
 * DATA_SRC is four words, the size 0 and the data_src of a software
 * event (PERF_MEM_NA) last.  A kernel that also writes the dump's
 * dynamic size puts a 0 where data_src belongs, and data_src past the
 * end of the sample.
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

/* The data_src of a software event, which knows no memory source */
#define MEM_NA	(PERF_MEM_S(OP, NA) | PERF_MEM_S(LVL, NA) | \
		 PERF_MEM_S(SNOOP, NA) | PERF_MEM_S(LOCK, NA) | \
		 PERF_MEM_S(TLB, NA) | PERF_MEM_S(LVLNUM, NA))
#define DATA_PAGES	128

static double cpu_seconds(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

TEST(stack_user_empty_dump)
{
	struct perf_event_attr attr = {
		.size = sizeof(attr),
		.type = PERF_TYPE_SOFTWARE,
		.config = PERF_COUNT_SW_CPU_CLOCK,
		.sample_period = 200000,
		.sample_type = PERF_SAMPLE_IP | PERF_SAMPLE_STACK_USER |
			       PERF_SAMPLE_DATA_SRC,
		.sample_stack_user = 0,
		.disabled = 1,
	};
	long page = sysconf(_SC_PAGESIZE);
	struct perf_event_mmap_page *pg;
	int samples = 0, bad_size = 0, bad_src = 0, fd;
	uint64_t head, off = 0;
	double until;
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

	/* Half the buffer at most: no record wraps, none is lost */
	ASSERT_EQ(0, ioctl(fd, PERF_EVENT_IOC_ENABLE, 0));
	until = cpu_seconds() + 0.5;
	while (cpu_seconds() < until &&
	       __atomic_load_n(&pg->data_head, __ATOMIC_ACQUIRE) <
	       DATA_PAGES * page / 2)
		spin();
	ASSERT_EQ(0, ioctl(fd, PERF_EVENT_IOC_DISABLE, 0));

	head = __atomic_load_n(&pg->data_head, __ATOMIC_ACQUIRE);
	while (off < head) {
		struct perf_event_header *h = (void *)(data + off);
		const uint64_t *w = (const void *)(h + 1);

		ASSERT_LE(sizeof(*h), h->size);
		off += h->size;
		if (h->type != PERF_RECORD_SAMPLE)
			continue;
		samples++;
		/* ip, the dump's size (0), data_src */
		if (h->size != sizeof(*h) + 3 * sizeof(*w) || w[1]) {
			bad_size++;
			continue;
		}
		bad_src += w[2] != MEM_NA;
	}
	ksft_print_msg("%d samples, %d of the wrong size, %d with a wrong data_src\n",
		       samples, bad_size, bad_src);
	EXPECT_LT(0, samples);
	EXPECT_EQ(0, bad_size);
	EXPECT_EQ(0, bad_src)
		TH_LOG("data_src 8 bytes late: a dynamic size after the empty dump?");
	munmap(pg, (DATA_PAGES + 1) * page);
	close(fd);
}

TEST_HARNESS_MAIN
