// SPDX-License-Identifier: GPL-2.0
/*
 * PERF_EVENT_IOC_PERIOD on an event that remove_on_exec took out.  A
 * child's only event samples it with remove_on_exec; the child execs
 * this program again, which then burns CPU time on another CPU.  The exec
 * takes the event out of the child's context, which, now empty, is
 * inactive while the child runs on.  The descriptor stays: poll() says
 * POLLHUP, and PERIOD, DISABLE and ENABLE on it must succeed without
 * chasing the running child (a period of 0 is still EINVAL).  A kernel
 * that sends the child an IPI for the new period trips both assertions of
 * event_function(): two WARNINGs, which this test sees in the kernel's
 * taint flags.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <linux/perf_event.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include "../kselftest_harness.h"

/* Some user-mode work for cpu-clock to sample */
static void spin(void)
{
	for (unsigned long k = 0; k < 10000; k++)
		asm volatile("" : : "r" (k));
}

/* Set for the exec'ed child: burn this many seconds of CPU, then exit */
#define SPIN_ENV	"REMOVE_ON_EXEC_PERIOD_SPIN"
#define TAINT_WARN	(1UL << 9)

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* The exec'ed child, before the harness sees its arguments */
static void __attribute__((constructor)) spin_if_asked(void)
{
	const char *secs = getenv(SPIN_ENV);
	double until;

	if (!secs)
		return;
	until = now() + atof(secs);
	while (now() < until)
		spin();
	_exit(0);
}

static unsigned long taint_flags(void)
{
	char buf[32] = "";
	int fd = open("/proc/sys/kernel/tainted", O_RDONLY);

	if (fd >= 0) {
		if (read(fd, buf, sizeof(buf) - 1) < 0)
			buf[0] = 0;
		close(fd);
	}
	return strtoul(buf, NULL, 10);
}

static void pin(int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	sched_setaffinity(0, sizeof(set), &set);
}

TEST(remove_on_exec_period)
{
	struct perf_event_attr attr = {
		.size = sizeof(attr),
		.type = PERF_TYPE_SOFTWARE,
		.config = PERF_COUNT_SW_CPU_CLOCK,
		.sample_period = 100000,
		.sample_type = PERF_SAMPLE_IP | PERF_SAMPLE_TID,
		.remove_on_exec = 1,
		.disabled = 1,
	};
	int go[2], fd, status, n = 0, bad = 0, bad_errno = 0, other_bad = 0;
	long page = sysconf(_SC_PAGESIZE);
	unsigned long taint_before;
	bool hup = false;
	cpu_set_t cpus;
	uint64_t zero = 0;
	double until;
	pid_t child;
	void *rb;

	ASSERT_EQ(0, sched_getaffinity(0, sizeof(cpus), &cpus));
	if (CPU_COUNT(&cpus) < 2 || !CPU_ISSET(0, &cpus) || !CPU_ISSET(1, &cpus))
		SKIP(return, "needs CPUs 0 and 1, one for the child");
	taint_before = taint_flags();
	ASSERT_EQ(0, pipe(go));
	child = fork();
	ASSERT_LE(0, child);
	if (!child) {
		char exe[4096];
		ssize_t len = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
		char c;

		close(go[1]);
		pin(1);
		if (len <= 0 || read(go[0], &c, 1) != 1)
			_exit(126);
		exe[len] = 0;
		/* Sampled before the exec, then the exec takes it out */
		setenv(SPIN_ENV, "3", 1);
		execl(exe, exe, (char *)NULL);
		_exit(127);
	}
	close(go[0]);
	pin(0);

	fd = syscall(__NR_perf_event_open, &attr, child, -1, -1,
		     PERF_FLAG_FD_CLOEXEC);
	if (fd < 0 && (errno == ENOENT || errno == EOPNOTSUPP)) {
		kill(child, SIGKILL);
		waitpid(child, NULL, 0);
		SKIP(return, "no cpu-clock sampling: %s", strerror(errno));
	}
	ASSERT_LE(0, fd) TH_LOG("perf_event_open: %s", strerror(errno));
	rb = mmap(NULL, 9 * page, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	ASSERT_NE(MAP_FAILED, rb);
	ASSERT_EQ(0, ioctl(fd, PERF_EVENT_IOC_ENABLE, 0));
	ASSERT_EQ(1, write(go[1], "g", 1));
	close(go[1]);

	/* The exec: POLLHUP once the event is out of the context */
	until = now() + 60;
	while (!hup && now() < until) {
		struct pollfd pfd = { .fd = fd, .events = POLLIN };

		hup = poll(&pfd, 1, 10) > 0 && (pfd.revents & POLLHUP);
	}
	ASSERT_TRUE(hup) TH_LOG("no POLLHUP: the event stayed");

	/* New periods, while the child keeps running on the other CPU */
	until = now() + 0.5;
	while (now() < until && waitpid(child, &status, WNOHANG) == 0) {
		for (int i = 0; i < 64; i++, n++) {
			uint64_t period = (1 + n % 3) * 100000;

			if (ioctl(fd, PERF_EVENT_IOC_PERIOD, &period) && !bad++)
				bad_errno = errno;
		}
		other_bad += !!ioctl(fd, PERF_EVENT_IOC_DISABLE, 0);
		other_bad += !!ioctl(fd, PERF_EVENT_IOC_ENABLE, 0);
	}
	EXPECT_EQ(-1, ioctl(fd, PERF_EVENT_IOC_PERIOD, &zero));
	EXPECT_EQ(EINVAL, errno);
	ASSERT_EQ(child, waitpid(child, &status, 0));
	ksft_print_msg("%d PERIOD ioctls while the child ran on, %d failed (%s)\n",
		       n, bad, bad ? strerror(bad_errno) : "-");

	ASSERT_TRUE(WIFEXITED(status)) TH_LOG("child status %#x", status);
	EXPECT_EQ(0, WEXITSTATUS(status));
	/* The case this is about happened: the child ran on, we asked */
	EXPECT_LT(0, n);
	EXPECT_EQ(0, bad);
	EXPECT_EQ(0, other_bad);
	if (taint_before & TAINT_WARN)
		ksft_print_msg("tainted by a warning before: a new one will not show\n");
	EXPECT_EQ(0, taint_flags() & TAINT_WARN & ~taint_before)
		TH_LOG("the kernel warned while this ran: see its log");
	munmap(rb, 9 * page);
	close(fd);
}

TEST_HARNESS_MAIN
