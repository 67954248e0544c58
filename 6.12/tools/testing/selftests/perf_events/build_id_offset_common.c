// SPDX-License-Identifier: GPL-2.0
/*
 * Helpers of the PERF_SAMPLE_BUILD_ID_OFFSET selftests (build_id_offset,
 * build_id_offset_races, build_id_offset_elf, build_id_offset_pagecache,
 * build_id_offset_fs, build_id_offset_fuzz); build_id_offset_common.h says
 * what they share.  Built with frame pointers like the programs, as its code is
 * on the sampled call chains too.
 */
#define _GNU_SOURCE
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <linux/magic.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include "../kselftest.h"
#include "build_id_offset_common.h"

unsigned long bido_sink;

/* ---- Events and their ring buffers ---- */

int sys_perf_event_open(struct perf_event_attr *attr, pid_t pid, int cpu,
			int group, unsigned long flags)
{
	return syscall(__NR_perf_event_open, attr, pid, cpu, group, flags);
}

int perf_open(struct perf_event_attr *attr, pid_t pid, int cpu)
{
	return sys_perf_event_open(attr, pid, cpu, -1, PERF_FLAG_FD_CLOEXEC);
}

/*
 * A cpu-clock event sampling this layout (the one ring_drain() parses)
 * every @period_ns, which also receives the records; disabled
 */
void sample_attr(struct perf_event_attr *attr, uint64_t period_ns)
{
	memset(attr, 0, sizeof(*attr));
	attr->size = sizeof(*attr);
	attr->type = PERF_TYPE_SOFTWARE;
	attr->config = PERF_COUNT_SW_CPU_CLOCK;
	attr->sample_period = period_ns;
	attr->sample_type = PERF_SAMPLE_IP | PERF_SAMPLE_TID |
		PERF_SAMPLE_TIME | PERF_SAMPLE_CPU | PERF_SAMPLE_CALLCHAIN |
		PERF_SAMPLE_BUILD_ID_OFFSET;
	attr->sample_id_all = 1;
	attr->exclude_callchain_kernel = 1;
	attr->defer_output = 1;
	attr->disabled = 1;
}

bool bido_supported(struct perf_event_attr *attr)
{
	int fd = perf_open(attr, 0, -1);

	if (fd >= 0)
		close(fd);
	return fd >= 0;
}

/*
 * The opener: a process of its own that opens events for the caller and
 * hands their file descriptors back over a unix socket (SCM_RIGHTS).  Its
 * events are another session's than the caller's: the kernel routes
 * records by the process that opened the sampling event.
 */
struct opener_req {
	struct perf_event_attr attr;
	pid_t pid;
	int cpu;
};

static void opener_serve(int sock)
{
	struct opener_req req;
	char cbuf[CMSG_SPACE(sizeof(int))];

	while (recv(sock, &req, sizeof(req), 0) == sizeof(req)) {
		int fd = perf_open(&req.attr, req.pid, req.cpu);
		int err = fd < 0 ? errno : 0;
		struct iovec iov = { .iov_base = &err, .iov_len = sizeof(err) };
		struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1 };

		if (fd >= 0) {
			struct cmsghdr *c;

			memset(cbuf, 0, sizeof(cbuf));
			msg.msg_control = cbuf;
			msg.msg_controllen = sizeof(cbuf);
			c = CMSG_FIRSTHDR(&msg);
			c->cmsg_level = SOL_SOCKET;
			c->cmsg_type = SCM_RIGHTS;
			c->cmsg_len = CMSG_LEN(sizeof(int));
			memcpy(CMSG_DATA(c), &fd, sizeof(int));
		}
		if (sendmsg(sock, &msg, 0) < 0)
			break;
		if (fd >= 0)
			close(fd);
	}
}

int opener_start(struct opener *o)
{
	int sv[2];

	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv))
		return -errno;
	o->pid = fork();
	if (o->pid < 0) {
		close(sv[0]);
		close(sv[1]);
		return -errno;
	}
	if (!o->pid) {
		close(sv[0]);
		opener_serve(sv[1]);
		_exit(0);
	}
	close(sv[1]);
	o->sock = sv[0];
	return 0;
}

int opener_open(struct opener *o, struct perf_event_attr *attr, pid_t pid,
		int cpu)
{
	struct opener_req req = { .attr = *attr, .pid = pid, .cpu = cpu };
	char cbuf[CMSG_SPACE(sizeof(int))];
	int err = 0, fd = -1;
	struct iovec iov = { .iov_base = &err, .iov_len = sizeof(err) };
	struct msghdr msg = {
		.msg_iov = &iov, .msg_iovlen = 1,
		.msg_control = cbuf, .msg_controllen = sizeof(cbuf),
	};
	struct cmsghdr *c;

	if (send(o->sock, &req, sizeof(req), 0) != sizeof(req) ||
	    recvmsg(o->sock, &msg, MSG_CMSG_CLOEXEC) != sizeof(err))
		return -EIO;
	if (err)
		return -err;
	c = CMSG_FIRSTHDR(&msg);
	if (!c || c->cmsg_type != SCM_RIGHTS)
		return -EIO;
	memcpy(&fd, CMSG_DATA(c), sizeof(int));
	return fd;
}

int opener_ring(struct opener *o, struct ring *rb,
		struct perf_event_attr *attr, pid_t pid, int cpu, int pages)
{
	int err;

	memset(rb, 0, sizeof(*rb));
	rb->fd = opener_open(o, attr, pid, cpu);
	if (rb->fd < 0)
		return rb->fd;
	err = ring_map(rb, pages);
	if (err)
		close(rb->fd);
	return err;
}

/*
 * After the caller closed the events: once the opener is gone, its events
 * belong to no session, and their records go to every receiver
 */
void opener_stop(struct opener *o)
{
	int status;

	close(o->sock);
	waitpid(o->pid, &status, 0);
}

/* Map the ring buffer of @rb->fd; the data pages are read-only */
int ring_map(struct ring *rb, int pages)
{
	long page = sysconf(_SC_PAGESIZE);
	void *p;

	p = mmap(NULL, (pages + 1) * page, PROT_READ | PROT_WRITE, MAP_SHARED,
		 rb->fd, 0);
	if (p == MAP_FAILED)
		return -errno;
	rb->pg = p;
	rb->data = (char *)p + page;
	rb->size = (uint64_t)pages * page;
	return 0;
}

void ring_unmap(struct ring *rb)
{
	if (rb->pg)
		munmap(rb->pg, rb->size + sysconf(_SC_PAGESIZE));
	rb->pg = NULL;
}

/* Open an event and map its ring buffer of @pages data pages */
int ring_open(struct ring *rb, struct perf_event_attr *attr, pid_t pid,
	      int cpu, int pages)
{
	int err;

	memset(rb, 0, sizeof(*rb));
	rb->fd = perf_open(attr, pid, cpu);
	if (rb->fd < 0)
		return -errno;
	err = ring_map(rb, pages);
	if (err)
		close(rb->fd);
	return err;
}

void ring_close(struct ring *rb)
{
	ring_unmap(rb);
	close(rb->fd);
}

int64_t event_lost(int fd)
{
	uint64_t v[2];

	return read(fd, v, sizeof(v)) == sizeof(v) ? (int64_t)v[1] : -1;
}

/*
 * The record of @len bytes at @off in the data area of @rb, copied out
 * into @buf where it wraps
 */
static struct perf_event_header *ring_record(struct ring *rb, uint64_t off,
					     uint64_t len, char *buf)
{
	if (off + len <= rb->size)
		return (void *)(rb->data + off);
	memcpy(buf, rb->data + off, rb->size - off);
	memcpy(buf + rb->size - off, rb->data, len - (rb->size - off));
	return (void *)buf;
}

/*
 * Hand each record between data_tail and data_head to @fn, copied out
 * where it wraps, and free the space.  A record whose size cannot be
 * right stops the walk: returns false.
 */
bool ring_walk(struct ring *rb,
	       void (*fn)(void *arg, const struct perf_event_header *h),
	       void *arg)
{
	/* One per thread: records are up to 64 KiB */
	static __thread char *buf;
	uint64_t head = __atomic_load_n(&rb->pg->data_head, __ATOMIC_ACQUIRE);
	uint64_t tail = rb->pg->data_tail;
	bool ok = true;

	if (!buf)
		buf = malloc(1 << 16);
	if (head - tail > rb->size)
		ok = false;
	while (ok && tail < head) {
		uint64_t off = tail % rb->size;
		struct perf_event_header *h = (void *)(rb->data + off);
		uint64_t len = h->size;

		if (len < sizeof(*h) || len % 8 || len > head - tail) {
			ok = false;
			break;
		}
		fn(arg, ring_record(rb, off, len, buf));
		tail += len;
	}
	__atomic_store_n(&rb->pg->data_tail, ok ? tail : head,
			 __ATOMIC_RELEASE);
	return ok;
}

/* ---- Samples and records read back ---- */

void *grow(void *p, int *max, size_t elem)
{
	*max = *max ? *max * 2 : 1024;
	p = realloc(p, *max * elem);
	if (!p) {
		perror("realloc");
		exit(KSFT_FAIL);
	}
	return p;
}

void trace_bad(struct trace *t, const char *why)
{
	if (!t->bad_records++)
		snprintf(t->why, sizeof(t->why), "%s", why);
}

/* Make @r's maps a copy of @from's (none if NULL) */
static void record_copy_maps(struct record *r, const struct record *from)
{
	size_t len = from ? from->nr * sizeof(struct bido_map) : 0;

	free(r->maps);
	r->maps = malloc(len + 1);
	if (len)
		memcpy(r->maps, from->maps, len);
	r->nr = from ? from->nr : 0;
}

struct record *trace_add_record(struct trace *t, const struct bido_rec_head *h)
{
	size_t len = h->nr * sizeof(struct bido_map);
	struct record *r;
	int i;

	if (t->nr_r == t->max_r)
		t->r = grow(t->r, &t->max_r, sizeof(*t->r));
	r = &t->r[t->nr_r++];
	memset(r, 0, sizeof(*r));
	r->pid = h->pid;
	r->tid = h->tid;
	r->cookie = h->cookie;
	r->flags = h->flags;
	r->nr = h->nr;
	r->first = NO_TIME;
	r->maps = malloc(len + 1);
	memcpy(r->maps, h + 1, len);
	r->same_as = bido_same_as(h);
	if (!r->same_as)
		return r;
	t->same_maps++;
	/*
	 * The maps of the record it names, if read already, for the readers
	 * that look before trace_chain() judges the chain
	 */
	for (i = t->nr_r - 2; i >= 0; i--)
		if (t->r[i].tid == r->tid && t->r[i].cookie == r->same_as) {
			record_copy_maps(r, &t->r[i]);
			break;
		}
	return r;
}

static const struct sample_id *trailer(const struct perf_event_header *h)
{
	return (const void *)((const char *)h + h->size -
			      sizeof(struct sample_id));
}

uint64_t bido_same_as(const struct bido_rec_head *h)
{
	const struct bido_map *maps = (const void *)(h + 1);
	uint64_t v;

	if (!(h->flags & PERF_BUILD_ID_OFFSET_F_SAME_MAPS) ||
	    h->header.size < sizeof(*h) + (uint64_t)h->nr * sizeof(*maps) +
			     sizeof(v))
		return 0;
	memcpy(&v, &maps[h->nr], sizeof(v));
	return v;
}

/*
 * What is wrong with a PERF_RECORD_BUILD_ID_OFFSET that carries @id_size
 * bytes of sample_id, by the UAPI; NULL if nothing.
 */
const char *bido_record_problem(const struct bido_rec_head *h,
				size_t id_size)
{
	const struct bido_map *maps = (const void *)(h + 1);
	bool same = h->flags & PERF_BUILD_ID_OFFSET_F_SAME_MAPS;
	uint32_t i, j;

	if (h->header.size != sizeof(*h) + (uint64_t)h->nr * sizeof(*maps) +
			      (same ? sizeof(uint64_t) : 0) + id_size)
		return same ? "SAME_MAPS record size does not match nr and same_as" :
			      "record size does not match nr";
	if (h->header.misc != PERF_RECORD_MISC_USER)
		return "header.misc is not PERF_RECORD_MISC_USER";
	if (!h->cookie)
		return "record with cookie 0";
	if (h->flags & ~BIDO_F_KNOWN)
		return "unknown record flags";
	if ((h->flags & PERF_BUILD_ID_OFFSET_F_MM_CHANGED) && h->nr)
		return "MM_CHANGED record with maps";
	if (same && h->nr)
		return "SAME_MAPS record with maps";
	if (same && (h->flags & BIDO_F_NOT_SAME))
		return "SAME_MAPS with TRUNCATED, MM_CHANGED or MAPS_CHANGED";
	if (same && !bido_same_as(h))
		return "SAME_MAPS naming cookie 0";
	if (same && bido_same_as(h) == h->cookie)
		return "SAME_MAPS naming its own cookie";
	for (i = 0; i < h->nr; i++) {
		const struct bido_map *m = &maps[i];

		if (m->reserved)
			return "map __reserved not zero";
		if (m->flags & ~BIDO_MAP_KNOWN)
			return "unknown map flags";
		if (m->build_id_size > MAX_BUILD_ID)
			return "build_id_size above 20";
		for (j = m->build_id_size; j < MAX_BUILD_ID; j++)
			if (m->build_id[j])
				return "build-ID padding not zero";
		if (m->start >= m->end || m->end > USER_TOP)
			return "map is not a user range";
		if (m->start % PG || m->end % PG || m->pgoff % PG)
			return "map bounds or offset not page aligned";
		if (i && maps[i - 1].end > m->start)
			return "maps not sorted or overlapping";
		if ((m->flags & (PERF_BUILD_ID_OFFSET_MAP_ANON | PERF_BUILD_ID_OFFSET_MAP_VDSO)) &&
		    (m->pgoff || m->build_id_size))
			return "anonymous map with offset or build-ID";
		if (m->build_id_size && (m->flags & BIDO_MAP_NONE))
			return "build-ID with a flag that says there is none";
	}
	return NULL;
}

static void parse_record(struct trace *t, const struct bido_rec_head *h)
{
	const struct sample_id *id = trailer(&h->header);
	const char *why = bido_record_problem(h, sizeof(*id));
	struct record *r;

	if (why) {
		trace_bad(t, why);
		/* Where its size is wrong, nothing of it can be read */
		if (h->header.size != sizeof(*h) + sizeof(*id) +
				      h->nr * sizeof(struct bido_map) +
				      (h->flags & PERF_BUILD_ID_OFFSET_F_SAME_MAPS ?
				       sizeof(uint64_t) : 0))
			return;
	}
	if (id->res)
		trace_bad(t, "sample_id padding not zero");
	if (t->check_ids && (id->pid != h->pid || id->tid != h->tid))
		trace_bad(t, "record pid/tid differ from its sample_id");

	r = trace_add_record(t, h);
	r->cpu = id->cpu;
	r->time = id->time;
}

static void parse_sample(struct trace *t, const struct perf_event_header *h)
{
	const uint64_t *p = (const void *)(h + 1);
	const uint64_t *end = (const void *)((const char *)h + h->size);
	uint64_t ip, nr, i;
	struct sample *s;
	bool user = false;

	if (t->nr_s == t->max_s)
		t->s = grow(t->s, &t->max_s, sizeof(*t->s));
	s = &t->s[t->nr_s];
	ip = *p++;
	s->pid = *p & 0xffffffff;
	s->tid = *p++ >> 32;
	s->time = *p++;
	s->cpu = *p++ & 0xffffffff;
	nr = t->no_callchain ? 0 : *p++;
	if (p + nr + 1 != end) {
		trace_bad(t, "sample size does not match its fields");
		return;
	}
	s->addrs = malloc((nr + 1) * sizeof(uint64_t));
	s->nr = 0;
	s->next = NO_TIME;
	s->kernel = (h->misc & PERF_RECORD_MISC_CPUMODE_MASK) ==
		    PERF_RECORD_MISC_KERNEL;
	if ((h->misc & PERF_RECORD_MISC_CPUMODE_MASK) == PERF_RECORD_MISC_USER)
		s->addrs[s->nr++] = ip;
	for (i = 0; i < nr; i++) {
		/* The marker, then the cookie, and nothing after them */
		if (p[i] == PERF_CONTEXT_USER_DEFERRED && i + 2 == nr) {
			s->defer_cookie = p[i + 1];
			break;
		}
		if (p[i] >= PERF_CONTEXT_MAX) {
			user = p[i] == PERF_CONTEXT_USER;
			s->inline_user |= user;
			continue;
		}
		/* The sample's own user IP comes first: keep it once */
		if (user && !(s->nr == 1 && i && p[i] == ip &&
			      p[i - 1] == PERF_CONTEXT_USER))
			s->addrs[s->nr++] = p[i];
	}
	s->cookie = p[nr];
	t->nr_s++;
}

/* A sample of struct trace's stack_dump layout */
static void parse_stack_sample(struct trace *t, const struct perf_event_header *h)
{
	const uint64_t *p = (const void *)(h + 1);
	const uint64_t *end = (const void *)((const char *)h + h->size);
	uint64_t ip, size, dyn, i;
	struct sample *s;

	if (t->nr_s == t->max_s)
		t->s = grow(t->s, &t->max_s, sizeof(*t->s));
	s = &t->s[t->nr_s];
	memset(s, 0, sizeof(*s));
	ip = *p++;
	s->pid = *p & 0xffffffff;
	s->tid = *p++ >> 32;
	s->time = *p++;
	s->cpu = *p++ & 0xffffffff;
	/* The ABI, then the one register if there is one */
	if (*p++)
		p++;
	size = *p++;
	if (p + size / 8 + (size ? 1 : 0) + 1 != end) {
		trace_bad(t, "stack sample size does not match its fields");
		return;
	}
	dyn = size ? p[size / 8] : 0;
	if (dyn > size) {
		trace_bad(t, "stack dump larger than its room");
		return;
	}
	s->addrs = malloc((dyn / 8 + 1) * sizeof(uint64_t));
	s->next = NO_TIME;
	s->kernel = (h->misc & PERF_RECORD_MISC_CPUMODE_MASK) ==
		    PERF_RECORD_MISC_KERNEL;
	if ((h->misc & PERF_RECORD_MISC_CPUMODE_MASK) == PERF_RECORD_MISC_USER)
		s->addrs[s->nr++] = ip;
	for (i = 0; i < dyn / 8; i++)
		s->addrs[s->nr++] = p[i];
	s->cookie = end[-1];
	t->nr_s++;
}

static void parse_deferred(struct trace *t, const struct perf_event_header *h)
{
	const uint64_t *p = (const void *)(h + 1);
	const struct sample_id *id = trailer(h);
	struct deferred *d;

	if (h->size < sizeof(*h) + 16 + sizeof(*id) ||
	    h->size != sizeof(*h) + 16 + p[1] * 8 + sizeof(*id)) {
		trace_bad(t, "CALLCHAIN_DEFERRED size does not match nr");
		return;
	}
	if ((h->misc & PERF_RECORD_MISC_CPUMODE_MASK) != PERF_RECORD_MISC_USER)
		trace_bad(t, "CALLCHAIN_DEFERRED misc is not PERF_RECORD_MISC_USER");
	if (t->nr_d == t->max_d)
		t->d = grow(t->d, &t->max_d, sizeof(*t->d));
	d = &t->d[t->nr_d++];
	d->cookie = p[0];
	d->nr = p[1];
	d->ips = malloc((d->nr + 1) * sizeof(*d->ips));
	memcpy(d->ips, p + 2, d->nr * sizeof(*d->ips));
	d->tid = id->tid;
	d->cpu = id->cpu;
	d->time = id->time;
}

static void parse_comm(struct trace *t, const struct perf_event_header *h)
{
	const uint32_t *ids = (const void *)(h + 1);
	struct exec_mark *x;

	if (!(h->misc & PERF_RECORD_MISC_COMM_EXEC))
		return;
	if (t->nr_x == t->max_x)
		t->x = grow(t->x, &t->max_x, sizeof(*t->x));
	x = &t->x[t->nr_x++];
	x->pid = ids[0];
	x->tid = ids[1];
	x->time = trailer(h)->time;
}

/* Copy out what the kernel wrote since the last call */
void ring_drain(struct ring *rb, struct trace *t)
{
	static __thread char buf[1 << 16];
	uint64_t head, tail;

	if (!rb->pg)
		return;
	if (!t->ring)
		t->ring = rb;
	t->many_rings |= t->ring != rb;
	head = __atomic_load_n(&rb->pg->data_head, __ATOMIC_ACQUIRE);
	tail = rb->pg->data_tail;
	while (tail < head) {
		uint64_t off = tail % rb->size, len;
		struct perf_event_header *h = (void *)(rb->data + off);

		len = h->size;
		if (!len) {
			trace_bad(t, "zero-sized record in the ring");
			tail = head;
			break;
		}
		h = ring_record(rb, off, len, buf);
		switch (h->type) {
		case PERF_RECORD_SAMPLE:
			if (t->stack_dump)
				parse_stack_sample(t, h);
			else
				parse_sample(t, h);
			break;
		case PERF_RECORD_BUILD_ID_OFFSET:
			parse_record(t, (void *)h);
			break;
		case PERF_RECORD_CALLCHAIN_DEFERRED:
			parse_deferred(t, h);
			break;
		case PERF_RECORD_COMM:
			parse_comm(t, h);
			break;
		case PERF_RECORD_LOST:
			t->lost += ((uint64_t *)(h + 1))[1];
			break;
		case PERF_RECORD_THROTTLE:
			t->throttled++;
			break;
		}
		tail += len;
	}
	__atomic_store_n(&rb->pg->data_tail, tail, __ATOMIC_RELEASE);
}

/*
 * Enable the events of @rb, let @child go (a byte on @go_fd) and drain
 * into @t every @poll_us until it has exited; disable them.  Returns its
 * wait status.
 */
int trace_sessions(struct ring *rb, int nr_rb, struct trace *t, int nr_t,
		   int go_fd, pid_t child, unsigned int poll_us)
{
	int per = nr_rb / nr_t, i, status = -1;

	for (i = 0; i < nr_rb; i++)
		ioctl(rb[i].fd, PERF_EVENT_IOC_ENABLE, 0);
	if (write(go_fd, "g", 1) != 1) {
		kill(child, SIGKILL);
		waitpid(child, &status, 0);
		return -1;
	}
	while (waitpid(child, &status, WNOHANG) == 0) {
		for (i = 0; i < nr_rb; i++)
			ring_drain(&rb[i], &t[i / per]);
		usleep(poll_us);
	}
	for (i = 0; i < nr_rb; i++) {
		ioctl(rb[i].fd, PERF_EVENT_IOC_DISABLE, 0);
		ring_drain(&rb[i], &t[i / per]);
	}
	for (i = 0; i < nr_t; i++)
		trace_chain(&t[i]);
	return status;
}

int trace_child(struct ring *rb, int nr_rb, struct trace *t, int go_fd,
		pid_t child, unsigned int poll_us)
{
	return trace_sessions(rb, nr_rb, t, 1, go_fd, child, poll_us);
}

pid_t fork_held(int *go)
{
	int p[2], err;
	pid_t pid;
	char c;

	if (pipe(p))
		return -1;
	pid = fork();
	if (!pid) {
		close(p[1]);
		if (read(p[0], &c, 1) != 1)
			_exit(126);
		close(p[0]);
		return 0;
	}
	err = errno;
	close(p[0]);
	if (pid < 0) {
		close(p[1]);
		errno = err;
		return -1;
	}
	*go = p[1];
	return pid;
}

static int cmp_record(const void *a, const void *b)
{
	const struct record *x = *(struct record * const *)a;
	const struct record *y = *(struct record * const *)b;

	if (x->tid != y->tid)
		return x->tid < y->tid ? -1 : 1;
	if (x->cookie != y->cookie)
		return x->cookie < y->cookie ? -1 : 1;
	return 0;
}

static int cmp_sample(const void *a, const void *b)
{
	const struct sample *x = a, *y = b;

	if (x->tid != y->tid)
		return x->tid < y->tid ? -1 : 1;
	if (x->time != y->time)
		return x->time < y->time ? -1 : 1;
	return 0;
}

/* The records of a tid in the order the kernel wrote them */
static const struct trace *chain_trace;

static int cmp_written(const void *a, const void *b)
{
	const struct record *x = &chain_trace->r[*(const int *)a];
	const struct record *y = &chain_trace->r[*(const int *)b];

	if (x->tid != y->tid)
		return x->tid < y->tid ? -1 : 1;
	/* One ring holds them in that order; several, by their time */
	if (chain_trace->many_rings && x->time != y->time)
		return x->time < y->time ? -1 : 1;
	return x < y ? -1 : x > y;
}

void trace_chain(struct trace *t)
{
	int *order = malloc((t->nr_r + 1) * sizeof(*order));
	int i, k;

	for (i = 0; i < t->nr_r; i++)
		order[i] = i;
	chain_trace = t;
	qsort(order, t->nr_r, sizeof(*order), cmp_written);
	for (i = 0; i < t->nr_r; i++) {
		struct record *r = &t->r[order[i]], *prev = NULL;

		if (!r->same_as)
			continue;
		/* Before it, of its tid; not a copy of itself (a duplicate) */
		for (k = i - 1; k >= 0; k--) {
			struct record *p = &t->r[order[k]];

			if (p->tid != r->tid)
				break;
			if (p->cookie != r->cookie) {
				prev = p;
				break;
			}
		}
		if (prev && prev->cookie == r->same_as) {
			/* Resolved in this order: its maps are the chain's */
			record_copy_maps(r, prev);
		} else if (!r->chain_checked) {
			trace_bad(t, find_record(t, r->tid, r->same_as) ?
				  "SAME_MAPS names a record that is not its tid's previous one" :
				  "SAME_MAPS names a record the reader does not have");
		}
		r->chain_checked = true;
	}
	free(order);
}

/*
 * Once everything is read: index the records by (tid, cookie), counting
 * duplicates, and sort the samples by tid and time, noting for each the
 * time of the first sample of its entry, of the last sample of its tid
 * in an earlier entry and of the next sample in a later one.  The entry
 * began after prev and ended before next; its record was written in
 * between.  Not always after first: the work may run before the last
 * samples of the entry (they then find it done), and the samples of the
 * entry before first may have been dropped.
 */
void trace_index(struct trace *t)
{
	int i;

	trace_chain(t);
	t->by_cookie = malloc((t->nr_r + 1) * sizeof(*t->by_cookie));
	for (i = 0; i < t->nr_r; i++)
		t->by_cookie[i] = &t->r[i];
	qsort(t->by_cookie, t->nr_r, sizeof(*t->by_cookie), cmp_record);
	for (i = 1; i < t->nr_r; i++)
		t->dup_records += !cmp_record(&t->by_cookie[i - 1],
					      &t->by_cookie[i]);

	/* The samples of one entry are next to each other in time */
	qsort(t->s, t->nr_s, sizeof(*t->s), cmp_sample);
	for (i = t->nr_s - 2; i >= 0; i--) {
		struct sample *s = &t->s[i], *n = &t->s[i + 1];

		if (n->tid == s->tid)
			s->next = n->cookie != s->cookie ? n->time : n->next;
	}
	for (i = 0; i < t->nr_s; i++) {
		struct sample *s = &t->s[i], *p = i ? s - 1 : NULL;
		bool same_tid = p && p->tid == s->tid;

		s->first = same_tid && p->cookie == s->cookie ? p->first : s->time;
		s->prev = !same_tid ? 0 : p->cookie != s->cookie ? p->time :
			  p->prev;
	}
}

/*
 * The record of (@tid, @cookie): by the index once trace_index() has made
 * one, else the last one read
 */
struct record *find_record(const struct trace *t, uint32_t tid,
			   uint64_t cookie)
{
	struct record key = { .tid = tid, .cookie = cookie }, *pk = &key;
	struct record **r;
	int i;

	if (t->by_cookie) {
		r = bsearch(&pk, t->by_cookie, t->nr_r, sizeof(*t->by_cookie),
			    cmp_record);
		return r ? *r : NULL;
	}
	for (i = t->nr_r - 1; i >= 0; i--)
		if (t->r[i].tid == tid && t->r[i].cookie == cookie)
			return &t->r[i];
	return NULL;
}

/* The map of @r that holds @a (its maps are sorted), or NULL */
const struct bido_map *rec_find(const struct record *r, uint64_t a)
{
	int lo = 0, hi = r ? r->nr : 0;

	while (lo < hi) {
		int mid = (lo + hi) / 2;

		if (a < r->maps[mid].start)
			hi = mid;
		else if (a >= r->maps[mid].end)
			lo = mid + 1;
		else
			return &r->maps[mid];
	}
	return NULL;
}

void trace_free(struct trace *t)
{
	int i;

	for (i = 0; i < t->nr_s; i++)
		free(t->s[i].addrs);
	for (i = 0; i < t->nr_r; i++)
		free(t->r[i].maps);
	for (i = 0; i < t->nr_d; i++)
		free(t->d[i].ips);
	free(t->s);
	free(t->r);
	free(t->x);
	free(t->d);
	free(t->by_cookie);
	memset(t, 0, sizeof(*t));
}

static int cmp_deferred(const void *a, const void *b)
{
	const struct deferred *x = a, *y = b;

	if (x->tid != y->tid)
		return x->tid < y->tid ? -1 : 1;
	if (x->cookie != y->cookie)
		return x->cookie < y->cookie ? -1 : 1;
	return 0;
}

int trace_merge_deferred(struct trace *t, int *dup)
{
	const struct sample *last = NULL;
	int i, missing = 0;

	trace_chain(t);
	qsort(t->d, t->nr_d, sizeof(*t->d), cmp_deferred);
	*dup = 0;
	for (i = 1; i < t->nr_d; i++)
		*dup += !cmp_deferred(&t->d[i - 1], &t->d[i]);
	for (i = 0; i < t->nr_s; i++) {
		struct sample *s = &t->s[i];
		struct deferred key = { .tid = s->tid, .cookie = s->defer_cookie };
		const struct deferred *d;
		uint64_t k;

		if (!s->defer_cookie || s->merged)
			continue;
		d = bsearch(&key, t->d, t->nr_d, sizeof(*t->d), cmp_deferred);
		if (!d) {
			/* Once per entry: its samples are next to each other */
			missing += !last || last->tid != s->tid ||
				   last->defer_cookie != s->defer_cookie;
			last = s;
			continue;
		}
		s->addrs = realloc(s->addrs, (s->nr + d->nr + 1) *
				   sizeof(*s->addrs));
		for (k = 0; k < d->nr; k++) {
			/* The sample's own user IP comes first: keep it once */
			if (!k && s->nr == 1 && d->ips[0] == s->addrs[0])
				continue;
			s->addrs[s->nr++] = d->ips[k];
		}
		s->merged = true;
	}
	return missing;
}

/* ---- Ground truth: /proc/PID/maps and the ELF notes of the files ---- */

/* Parse @file, /proc/PID/maps or a copy of it */
void maps_read(struct maps *m, const char *file)
{
	char line[PATH_MAX + 128];
	FILE *f = fopen(file, "r");

	m->v = NULL;
	m->nr = 0;
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		unsigned long long s, e, off;
		char perms[8] = "", *path;
		struct vma *v;
		int pos = 0;

		if (sscanf(line, "%llx-%llx %7s %llx %*s %*u %n", &s, &e,
			   perms, &off, &pos) < 4 || !pos)
			continue;
		m->v = realloc(m->v, (m->nr + 1) * sizeof(*m->v));
		v = &m->v[m->nr++];
		memset(v, 0, sizeof(*v));
		v->start = s;
		v->end = e;
		v->pgoff = off;
		v->bid_size = -1;
		v->exec = strchr(perms, 'x');
		path = line + pos;
		path[strcspn(path, "\n")] = 0;
		snprintf(v->path, sizeof(v->path), "%s", path);
		if (path[0] == '/') {
			size_t n = strlen(v->path);

			v->kind = VMA_FILE;
			if (n > 10 && !strcmp(v->path + n - 10, " (deleted)")) {
				v->deleted = true;
				v->path[n - 10] = 0;
			}
		} else if (!strcmp(path, "[vdso]")) {
			v->kind = VMA_VDSO;
			v->want_flags = PERF_BUILD_ID_OFFSET_MAP_VDSO;
		} else if (!path[0] || !strcmp(path, "[heap]") ||
			   !strncmp(path, "[stack", 6) ||
			   !strncmp(path, "[anon", 5)) {
			v->kind = VMA_ANON;
			v->want_flags = PERF_BUILD_ID_OFFSET_MAP_ANON;
		} else {
			v->kind = VMA_OTHER;
		}
	}
	fclose(f);
}

struct vma *maps_find(struct maps *m, uint64_t a)
{
	int i;

	for (i = 0; i < m->nr; i++)
		if (m->v[i].start <= a && a < m->v[i].end)
			return &m->v[i];
	return NULL;
}

/*
 * The one ground-truth check of the tests: what the record's map @bm (NULL:
 * the record has none) says of user address @a, against the truth @m.
 * File mappings, the vDSO and (unless @loose_anon) anonymous memory must
 * match exactly: bounds, offset, flags, and the file's build-ID or the
 * flag that says why there is none.  A file mapping that is not
 * executable must have no map.  With @loose_anon, anonymous memory may
 * differ between the truth and the sampled task (heap, thread stacks of a
 * child): a map there must only not claim a build-ID.  @why says what is
 * wrong, or where an unresolved code address is.
 */
enum bido_verdict bido_check(struct maps *m, uint64_t a,
			     const struct bido_map *bm, bool loose_anon,
			     const char **why)
{
	static __thread char where[PATH_MAX + 32];
	struct vma *v = maps_find(m, a);

	*why = NULL;
	if (!bm) {
		if (!v || !v->exec)
			return BIDO_NOT_CODE;
		snprintf(where, sizeof(where), "%s+%#llx",
			 v->path[0] ? v->path : "anon",
			 (unsigned long long)(a - v->start + v->pgoff));
		*why = where;
		return BIDO_UNRESOLVED;
	}
	if (loose_anon && (!v || v->kind == VMA_ANON || v->kind == VMA_OTHER)) {
		if (bm->build_id_size)
			*why = "a build-ID where the truth has no file";
		return *why ? BIDO_WRONG : BIDO_ANON;
	}
	if (!v)
		*why = "resolved, but in no mapping";
	else if (v->kind == VMA_FILE && !v->exec)
		*why = "a map of a file mapping that is not executable";
	else if (bm->start != v->start || bm->end != v->end)
		*why = "mapping bounds differ";
	else if ((bm->flags & v->want_flags) != v->want_flags)
		*why = "mapping flags missing";
	else if (v->kind == VMA_VDSO)
		*why = !(bm->flags & PERF_BUILD_ID_OFFSET_MAP_VDSO) || bm->pgoff ||
		       bm->build_id_size ? "vDSO map wrong" : NULL;
	else if (v->kind != VMA_FILE)
		*why = bm->pgoff || bm->build_id_size ?
		       "offset or build-ID on anonymous memory" : NULL;
	else if (bm->pgoff != v->pgoff)
		*why = "file offset differs";
	else if (v->deleted != !!(bm->flags & PERF_BUILD_ID_OFFSET_MAP_DELETED))
		*why = "DELETED flag differs";
	if (*why || !v || v->kind != VMA_FILE)
		return *why ? BIDO_WRONG : BIDO_RESOLVED;
	if (v->bid_size < 0)
		v->bid_size = path_build_id(v->path, v->bid);
	if (bm->build_id_size != v->bid_size ||
	    memcmp(bm->build_id, v->bid, v->bid_size))
		*why = "build-ID differs";
	else if (!v->bid_size && !(bm->flags & BIDO_MAP_NONE))
		*why = "no build-ID and no flag saying why";
	return *why ? BIDO_WRONG : BIDO_RESOLVED;
}

/*
 * The GNU build-ID note of an ELF file (64 or 32-bit), by a reader
 * without the kernel's limits (every program header, any number of
 * them): its size (0 when none), the ID in @bid and, if @note_off, the
 * file offset of the ID.
 */
int elf_build_id(int fd, uint8_t *bid, uint64_t *note_off)
{
	union { Elf64_Ehdr e64; Elf32_Ehdr e32; } eh;
	uint64_t phoff, off, filesz;
	int i, phnum, is64;
	uint32_t type;

	if (pread(fd, &eh, sizeof(eh), 0) < (ssize_t)sizeof(eh.e32) ||
	    memcmp(eh.e64.e_ident, ELFMAG, SELFMAG))
		return 0;
	is64 = eh.e64.e_ident[EI_CLASS] == ELFCLASS64;
	phoff = is64 ? eh.e64.e_phoff : eh.e32.e_phoff;
	phnum = is64 ? eh.e64.e_phnum : eh.e32.e_phnum;
	for (i = 0; i < phnum; i++) {
		union { Elf64_Phdr p64; Elf32_Phdr p32; } ph;
		size_t phsz = is64 ? sizeof(ph.p64) : sizeof(ph.p32);
		char note[1024];
		size_t pos = 0;
		ssize_t n;

		if (pread(fd, &ph, phsz, phoff + i * phsz) != (ssize_t)phsz)
			return 0;
		type = is64 ? ph.p64.p_type : ph.p32.p_type;
		off = is64 ? ph.p64.p_offset : ph.p32.p_offset;
		filesz = is64 ? ph.p64.p_filesz : ph.p32.p_filesz;
		if (type != PT_NOTE)
			continue;
		n = pread(fd, note, filesz < sizeof(note) ? filesz :
			  sizeof(note), off);
		/* Elf32_Nhdr and Elf64_Nhdr are the same three words */
		while (n > 0 && pos + sizeof(Elf64_Nhdr) <= (size_t)n) {
			Elf64_Nhdr *nh = (void *)(note + pos);
			size_t name = pos + sizeof(*nh);
			size_t desc = name + ((nh->n_namesz + 3) & ~3UL);

			if (desc + nh->n_descsz > (size_t)n)
				break;
			if (nh->n_type == NT_GNU_BUILD_ID &&
			    nh->n_namesz == 4 && !memcmp(note + name, "GNU", 4) &&
			    nh->n_descsz && nh->n_descsz <= MAX_BUILD_ID) {
				memcpy(bid, note + desc, nh->n_descsz);
				if (note_off)
					*note_off = off + desc;
				return nh->n_descsz;
			}
			pos = desc + ((nh->n_descsz + 3) & ~3UL);
		}
	}
	return 0;
}

int path_build_id(const char *path, uint8_t *bid)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	int n;

	if (fd < 0)
		return 0;
	n = elf_build_id(fd, bid, NULL);
	close(fd);
	return n;
}

/* File offset of the dynamic symbol @sym of ELF64 @fd, 0 if not found */
uint64_t elf_sym_offset(int fd, const char *sym)
{
	Elf64_Shdr sh, strsh;
	uint64_t vaddr = 0;
	Elf64_Ehdr eh;
	int i;

	if (pread(fd, &eh, sizeof(eh), 0) != sizeof(eh))
		return 0;
	for (i = 0; i < eh.e_shnum && !vaddr; i++) {
		Elf64_Sym st;
		uint64_t k;

		if (pread(fd, &sh, sizeof(sh), eh.e_shoff + i * sizeof(sh)) !=
		    sizeof(sh))
			return 0;
		if (sh.sh_type != SHT_DYNSYM)
			continue;
		if (pread(fd, &strsh, sizeof(strsh),
			  eh.e_shoff + sh.sh_link * sizeof(strsh)) !=
		    sizeof(strsh))
			return 0;
		for (k = 0; k < sh.sh_size / sizeof(st); k++) {
			char name[64] = "";

			if (pread(fd, &st, sizeof(st),
				  sh.sh_offset + k * sizeof(st)) != sizeof(st) ||
			    pread(fd, name, sizeof(name) - 1,
				  strsh.sh_offset + st.st_name) <= 0)
				break;
			if (!strcmp(name, sym)) {
				vaddr = st.st_value;
				break;
			}
		}
	}
	for (i = 0; i < eh.e_phnum && vaddr; i++) {
		Elf64_Phdr ph;

		if (pread(fd, &ph, sizeof(ph), eh.e_phoff + i * sizeof(ph)) !=
		    sizeof(ph))
			return 0;
		if (ph.p_type == PT_LOAD && ph.p_vaddr <= vaddr &&
		    vaddr < ph.p_vaddr + ph.p_filesz)
			return vaddr - ph.p_vaddr + ph.p_offset;
	}
	return 0;
}

/* ---- This program, this task, this system ---- */

double cpu_seconds(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

__attribute__((noipa)) unsigned long leaf(unsigned long n)
{
	unsigned long x = n;

	while (n--) {
		x ^= x << 7;
		x ^= x >> 9;
		asm volatile("" : "+r" (x));
	}
	return x;
}

/*
 * Spin with made-up frames: %rbp points at @frames, a chain of {next
 * frame, return address} pairs going up the stack ({0, return address}
 * for one), so that the user call chain of a sample here (perf's and the
 * deferred unwinder's, both frame-pointer walks) holds those return
 * addresses, which nothing ever executes.  @frames must be in the
 * caller's frame, above the stack pointer: the deferred unwinder takes
 * nothing below it (a leaf's red zone).
 */
void fake_frame_spin(unsigned long n, uintptr_t *frames)
{
#ifdef __x86_64__
	uintptr_t saved;

	asm volatile("mov %%rbp, %[saved]\n\t"
		     "mov %[frame], %%rbp\n"
		     "1:\tdec %[n]\n\t"
		     "jnz 1b\n\t"
		     "mov %[saved], %%rbp"
		     : [saved] "=&r" (saved), [n] "+r" (n)
		     : [frame] "r" (frames)
		     : "memory", "cc");
#endif
}

/* This program's path, read once ("" if unreadable) */
const char *self_exe(void)
{
	static char exe[PATH_MAX - 64];
	ssize_t n;

	if (!exe[0]) {
		n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
		exe[n < 0 ? 0 : n] = 0;
	}
	return exe;
}

/* This program's directory ("" if unknown) */
const char *self_dir(void)
{
	static char dir[PATH_MAX - 64];

	if (!dir[0]) {
		snprintf(dir, sizeof(dir), "%s", self_exe());
		*(strrchr(dir, '/') ?: dir) = 0;
	}
	return dir;
}

/* The id of tracepoint perf_build_id_offset:@name, or -1 */
static int bido_tp_id(const char *name)
{
	static const char *const dirs[] = {
		"/sys/kernel/tracing", "/sys/kernel/debug/tracing",
	};
	char path[PATH_MAX];
	struct statfs sfs;
	unsigned int i;
	int id;

	/* Mounted where it is not yet, as root can: as the ftrace tests do */
	if (statfs(dirs[0], &sfs) || sfs.f_type != TRACEFS_MAGIC)
		mount("tracefs", dirs[0], "tracefs", 0, NULL);
	for (i = 0; i < ARRAY_SIZE(dirs); i++) {
		snprintf(path, sizeof(path),
			 "%s/events/perf_build_id_offset/%s/id", dirs[i], name);
		id = read_int(path);
		if (id != INT_MIN)
			return id;
	}
	return -1;
}

int bido_tp_open(struct bido_tp *tp, const char *name, const char *filter)
{
	struct perf_event_attr attr = {
		.size = sizeof(attr),
		.type = PERF_TYPE_TRACEPOINT,
	};
	int id = bido_tp_id(name), cpu, fd;

	tp->nr = 0;
	tp->fd = NULL;
	if (id < 0)
		return -1;
	attr.config = id;
	tp->fd = calloc(sysconf(_SC_NPROCESSORS_CONF), sizeof(*tp->fd));
	if (!tp->fd)
		return -1;
	for (cpu = 0; cpu < sysconf(_SC_NPROCESSORS_CONF); cpu++) {
		fd = sys_perf_event_open(&attr, -1, cpu, -1, PERF_FLAG_FD_CLOEXEC);
		if (fd < 0 && errno == ENODEV)
			continue;	/* offline */
		if (fd < 0 || (filter && ioctl(fd, PERF_EVENT_IOC_SET_FILTER, filter))) {
			if (fd >= 0)
				close(fd);
			bido_tp_close(tp);
			return -1;
		}
		tp->fd[tp->nr++] = fd;
	}
	return 0;
}

long long bido_tp_read(const struct bido_tp *tp)
{
	long long sum = 0;
	uint64_t v;
	int i;

	for (i = 0; i < tp->nr; i++) {
		if (read(tp->fd[i], &v, sizeof(v)) != sizeof(v))
			return -1;
		sum += v;
	}
	return sum;
}

void bido_tp_close(struct bido_tp *tp)
{
	while (tp->nr > 0)
		close(tp->fd[--tp->nr]);
	free(tp->fd);
	tp->fd = NULL;
}

uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

/* An integer from a /proc or debugfs file; INT_MIN if unreadable */
int read_int(const char *path)
{
	FILE *f = fopen(path, "r");
	int v = INT_MIN;

	if (f) {
		if (fscanf(f, "%d", &v) != 1)
			v = INT_MIN;
		fclose(f);
	}
	return v;
}

int write_int(const char *path, int v)
{
	FILE *f = fopen(path, "w");
	int ret;

	if (!f)
		return -1;
	ret = fprintf(f, "%d\n", v) < 0;
	return fclose(f) || ret ? -1 : 0;
}

int write_paranoid(int v)
{
	return write_int("/proc/sys/kernel/perf_event_paranoid", v);
}

/* Task flags from /proc/.../stat (the ninth field), 0 if unreadable */
unsigned long stat_flags(const char *path)
{
	char buf[1024], *p;
	unsigned long flags = 0;
	FILE *f = fopen(path, "r");
	int i;

	if (!f)
		return 0;
	p = fgets(buf, sizeof(buf), f);
	fclose(f);
	p = p ? strrchr(buf, ')') : NULL;
	/* After "(comm)": state ppid pgrp session tty tpgid flags */
	for (i = 0; p && i < 7; i++)
		p = strchr(p + 1, ' ');
	if (p)
		flags = strtoul(p + 1, NULL, 10);
	return flags;
}

/* Is @pid a kernel thread?  Remembered: system-wide traces ask often */
bool is_kthread(pid_t pid)
{
	static struct { pid_t pid; bool kthread; } seen[1024];
	static int nr_seen;
	char path[64];
	bool k;
	int i;

	if (!pid)
		return true;	/* the idle task */
	for (i = 0; i < nr_seen; i++)
		if (seen[i].pid == pid)
			return seen[i].kthread;
	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	k = stat_flags(path) & PF_KTHREAD_;
	if (nr_seen < 1024) {
		seen[nr_seen].pid = pid;
		seen[nr_seen++].kthread = k;
	}
	return k;
}

/* ---- Made-up call chains and made-up ELF files ---- */

bool sample_has(const struct sample *s, uint64_t a)
{
	int k;

	for (k = 0; k < s->nr; k++)
		if (s->addrs[k] == a)
			return true;
	return false;
}

/*
 * The record of sample @i if the sample holds @addr and no earlier sample
 * returned the same record (@checked: a flag per record), else NULL: the
 * records are checked once each, however many samples share them.
 */
const struct record *record_once(const struct trace *t, int i,
				 uint64_t addr, bool *checked)
{
	const struct record *r;

	if (!sample_has(&t->s[i], addr))
		return NULL;
	r = find_record(t, t->s[i].tid, t->s[i].cookie);
	if (!r || checked[r - t->r])
		return NULL;
	checked[r - t->r] = true;
	return r;
}

/*
 * What the records of the samples that hold @addr (each record once) say
 * of the file mapped whole, from offset 0, at [@start, @end) with the
 * build-ID @bid: that build-ID, none with UNREADABLE, or something wrong
 * (the first one described in @why).
 */

void file_tally(const struct trace *t, uint64_t addr,
		uintptr_t start, uintptr_t end, const uint8_t *bid,
		struct file_tally *ft)
{
	bool *checked = calloc(t->nr_r + 1, sizeof(*checked));
	int i;

	memset(ft, 0, sizeof(*ft));
	for (i = 0; i < t->nr_s; i++) {
		const struct record *r = record_once(t, i, addr, checked);
		const struct bido_map *m;

		if (!r)
			continue;
		ft->nrec++;
		m = rec_find(r, addr);
		if (m && m->start == start && !m->pgoff && m->end == end &&
		    !m->flags && m->build_id_size == MAX_BUILD_ID &&
		    !memcmp(m->build_id, bid, MAX_BUILD_ID))
			ft->ok++;
		else if (m && m->start == start && !m->pgoff &&
			 !m->build_id_size &&
			 m->flags == PERF_BUILD_ID_OFFSET_MAP_UNREADABLE)
			ft->unreadable++;
		else if (!ft->wrong++)
			snprintf(ft->why, sizeof(ft->why),
				 "%#llx: map %s, flags %#x, pgoff %#llx, build-ID size %d",
				 (unsigned long long)addr,
				 m ? "found" : "missing", m ? m->flags : 0,
				 m ? (unsigned long long)m->pgoff : 0ULL,
				 m ? m->build_id_size : -1);
	}
	free(checked);
}

/*
 * A cpu-clock event on this thread that receives its own records: samples
 * of IP, TID, TIME, CPU, CALLCHAIN and the cookie, ring_drain()'s layout
 */
int bido_open(struct ring *rb)
{
	struct perf_event_attr attr = {
		.size = sizeof(attr),
		.type = PERF_TYPE_SOFTWARE,
		.config = PERF_COUNT_SW_CPU_CLOCK,
		.sample_period = FAKE_PERIOD_NS,
		.sample_type = PERF_SAMPLE_IP | PERF_SAMPLE_TID |
			       PERF_SAMPLE_TIME | PERF_SAMPLE_CPU |
			       PERF_SAMPLE_CALLCHAIN | PERF_SAMPLE_BUILD_ID_OFFSET,
		.sample_id_all = 1,
		.exclude_callchain_kernel = 1,
		.defer_output = 1,
		.disabled = 1,
	};

	return ring_open(rb, &attr, 0, -1, 256);
}

const char *bido_unsupported(struct perf_event_attr *attr)
{
	static char why[128];
	struct ring rb;
	int err;

	if (attr) {
		if (bido_supported(attr))
			return NULL;
		err = errno;
	} else {
		err = -bido_open(&rb);
		if (!err) {
			ring_close(&rb);
			if (sysconf(_SC_PAGESIZE) != PG)
				return "the made-up files assume 4 KiB pages";
#ifndef __x86_64__
			return "the made-up frames are x86-64 code";
#endif
			return NULL;
		}
	}
	snprintf(why, sizeof(why), "kernel lacks PERF_SAMPLE_BUILD_ID_OFFSET: %s",
		 strerror(err));
	return why;
}

/*
 * Sample this thread with @rets[0..n) as made-up return addresses until
 * @want records cover @rets[0], or @secs of CPU time have gone by.  A
 * record comes once per kernel entry with samples: the samples taken in
 * the kernel while it is being made (the user call chain of such a sample
 * holds the made-up frames too) share it.
 * Returns how many samples hold @rets[0] and have their record.
 */
int sample_fake(struct ring *rb, struct trace *t, const uintptr_t *rets, int n,
		int want, double secs)
{
	uintptr_t frames[2 * MAX_FAKE];
	double until = cpu_seconds() + secs;
	int i, hits = 0, seen = 0, covering = 0;

	for (i = 0; i < n; i++) {
		frames[2 * i] = i + 1 < n ? (uintptr_t)&frames[2 * i + 2] : 0;
		frames[2 * i + 1] = rets[i];
	}
	ioctl(rb->fd, PERF_EVENT_IOC_ENABLE, 0);
	while (covering < want && cpu_seconds() < until) {
		fake_frame_spin(50000, frames);
		ring_drain(rb, t);
		for (; seen < t->nr_r; seen++)
			covering += !!rec_find(&t->r[seen], rets[0]);
	}
	ioctl(rb->fd, PERF_EVENT_IOC_DISABLE, 0);
	ring_drain(rb, t);
	for (i = 0; i < t->nr_s; i++)
		hits += sample_has(&t->s[i], rets[0]) &&
			find_record(t, t->s[i].tid, t->s[i].cookie);
	return hits;
}

void put_note(uint8_t *at, uint32_t namesz, uint32_t descsz,
	      const uint8_t *bid)
{
	Elf64_Nhdr nh = {
		.n_namesz = namesz,
		.n_descsz = descsz,
		.n_type = NT_GNU_BUILD_ID,
	};

	memcpy(at, &nh, sizeof(nh));
	memcpy(at + sizeof(nh), "GNU", 4);
	memcpy(at + sizeof(nh) + 4, bid, MAX_BUILD_ID);
}

/*
 * A minimal valid ELF64 shared object in @img (zeroed, at least 3 pages):
 * the header, a PT_LOAD of the whole file and a PT_NOTE at NOTE_OFF with
 * the build-ID @bid.
 */
void elf64_image(uint8_t *img, size_t size, const uint8_t *bid)
{
	Elf64_Ehdr *eh = (void *)img;
	Elf64_Phdr *ph = (void *)(img + sizeof(*eh));

	memcpy(eh->e_ident, ELFMAG, SELFMAG);
	eh->e_ident[EI_CLASS] = ELFCLASS64;
	eh->e_ident[EI_DATA] = ELFDATA2LSB;
	eh->e_ident[EI_VERSION] = EV_CURRENT;
	eh->e_type = ET_DYN;
	eh->e_machine = EM_X86_64;
	eh->e_version = EV_CURRENT;
	eh->e_phoff = sizeof(*eh);
	eh->e_ehsize = sizeof(*eh);
	eh->e_phentsize = sizeof(*ph);
	eh->e_phnum = 2;
	ph[0] = (Elf64_Phdr){
		.p_type = PT_LOAD, .p_flags = PF_R | PF_X,
		.p_filesz = size, .p_memsz = size, .p_align = PG,
	};
	ph[1] = (Elf64_Phdr){
		.p_type = PT_NOTE, .p_flags = PF_R, .p_offset = NOTE_OFF,
		.p_vaddr = NOTE_OFF, .p_filesz = sizeof(Elf64_Nhdr) + 4 +
		MAX_BUILD_ID, .p_align = 4,
	};
	ph[1].p_memsz = ph[1].p_filesz;
	put_note(img + NOTE_OFF, 4, MAX_BUILD_ID, bid);
}

int write_file(const char *path, const void *buf, size_t len)
{
	int fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);

	if (fd < 0)
		return -1;
	if (len && pwrite(fd, buf, len, 0) != (ssize_t)len) {
		close(fd);
		return -1;
	}
	return fd;
}

void fresh_build_id(uint8_t *bid, int salt)
{
	static uint64_t x;
	int i;

	if (!x)
		x = (uint64_t)time(NULL) * 0x9e3779b97f4a7c15ULL ^ getpid();
	for (i = 0; i < MAX_BUILD_ID; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		bid[i] = x ^ salt;
	}
}
