// SPDX-License-Identifier: GPL-2.0
/* The build_id_offset selftests' ring buffer reader and lookups */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/syscall.h>

#include <linux/compiler.h>

#include "build_id_offset.h"

/* The attr: fields the tests vary come as arguments */
void sample_attr(struct perf_event_attr *attr, uint64_t extra, bool defer_callchain)
{
	memset(attr, 0, sizeof(*attr));
	attr->size = sizeof(*attr);
	attr->type = PERF_TYPE_SOFTWARE;
	attr->config = PERF_COUNT_SW_CPU_CLOCK;
	attr->sample_period = 1000000;		/* 1 ms of CPU */
	attr->sample_type = PERF_SAMPLE_IP | PERF_SAMPLE_TID | extra;
	attr->exclude_kernel = 1;		/* no kernel IPs to skip */
	attr->exclude_hv = 1;
	attr->sample_id_all = 1;
	attr->disabled = 1;
	attr->enable_on_exec = 0;
	attr->defer_callchain = defer_callchain;
	attr->defer_output = 1;
	attr->sample_max_stack = 64;
}

int ring_open(struct ring *r, struct perf_event_attr *attr, pid_t pid)
{
	r->fd = syscall(__NR_perf_event_open, attr, pid, -1, -1, 0);
	if (r->fd < 0)
		return -errno;
	r->base = mmap(NULL, (RING_PAGES + 1) * getpagesize(), PROT_READ | PROT_WRITE,
		       MAP_SHARED, r->fd, 0);
	if (r->base == MAP_FAILED) {
		close(r->fd);
		return -ENOMEM;
	}
	return 0;
}

void ring_close(struct ring *r)
{
	munmap(r->base, (RING_PAGES + 1) * getpagesize());
	close(r->fd);
}

static void *copy_out(const void *p, size_t n)
{
	void *q = malloc(n);

	if (q)
		memcpy(q, p, n);
	return q;
}

static void parse_sample(struct trace *t, const struct perf_event_header *h, uint64_t type)
{
	const uint64_t *p = (const uint64_t *)(h + 1);
	const uint64_t *end = (const uint64_t *)((const char *)h + h->size);
	struct sample *s;

	t->samples = realloc(t->samples, (t->nr_samples + 1) * sizeof(*s));
	s = &t->samples[t->nr_samples++];
	memset(s, 0, sizeof(*s));
	s->ip = *p++;
	s->tid = (uint32_t)(*p++ >> 32);
	if (type & PERF_SAMPLE_TIME)
		s->time = *p++;
	/* Where it is among the records: the ring is in time order */
	s->recs_before = t->nr_recs;
	if (type & PERF_SAMPLE_CALLCHAIN) {
		uint64_t i, nr = *p++;
		bool user = false;

		if (nr >= 2 && p[nr - 2] == PERF_CONTEXT_USER_DEFERRED)
			s->chain_cookie = p[nr - 1];
		/* The user frames walked in the interrupt */
		for (i = 0; i < nr && p[i] != PERF_CONTEXT_USER_DEFERRED; i++) {
			if (p[i] >= PERF_CONTEXT_MAX)
				user = p[i] == PERF_CONTEXT_USER;
			else if (user && s->nr_ips < MAX_IPS)
				s->ips[s->nr_ips++] = p[i];
		}
		p += nr;
	}
	if (type & PERF_SAMPLE_REGS_USER) {
		uint64_t abi = *p++;

		if (abi)
			p += __builtin_popcountll(REGS_MASK);
	}
	if (type & PERF_SAMPLE_STACK_USER) {
		uint64_t size = *p++;

		if (size) {
			uint64_t dyn = p[size / 8];

			s->nr_words = dyn / 8;
			memcpy(s->words, p, s->nr_words * 8);
			p += size / 8 + 1;
		}
	}
	/* The cookie is the last field, whatever comes before it */
	if (type & PERF_SAMPLE_BUILD_ID_OFFSET)
		s->cookie = p < end ? end[-1] : 0;
}

/* Check a record's shape; count it as bad if it is malformed */
static bool record_ok(const struct bido_rec *r, uint64_t id_size)
{
	unsigned int i, j;

	if (r->header.size % 8 || r->header.misc != PERF_RECORD_MISC_USER ||
	    r->header.size != sizeof(*r) + r->nr * sizeof(r->maps[0]) + id_size)
		return false;
	for (i = 0; i < r->nr; i++) {
		const struct bido_map *m = &r->maps[i];

		if (m->start >= m->end || m->reserved || m->build_id_size > 20 ||
		    (i && m->start < r->maps[i - 1].end))
			return false;
		for (j = m->build_id_size; j < 20; j++)
			if (m->build_id[j])
				return false;
	}
	return true;
}

/* Read everything in the ring into @t */
void ring_drain(struct ring *r, struct trace *t, uint64_t type)
{
	struct perf_event_mmap_page *pg = r->base;
	char *data = (char *)r->base + getpagesize();
	uint64_t size = RING_PAGES * getpagesize();
	uint64_t head = __atomic_load_n(&pg->data_head, __ATOMIC_ACQUIRE);
	uint64_t tail = pg->data_tail;
	/* sample_id_all with TID, and TIME if asked: one or two u64s */
	uint64_t id_size = type & PERF_SAMPLE_TIME ? 16 : 8;
	char buf[65536];

	while (tail < head) {
		struct perf_event_header *h = (void *)(data + tail % size);
		uint64_t i, n = h->size;

		for (i = 0; i < n; i++)
			buf[i] = data[(tail + i) % size];
		h = (void *)buf;
		tail += n;
		switch (h->type) {
		case PERF_RECORD_SAMPLE:
			parse_sample(t, h, type);
			break;
		case PERF_RECORD_BUILD_ID_OFFSET:
			t->nr_23++;
			if (!record_ok((void *)h, id_size)) {
				t->bad++;
				break;
			}
			t->recs = realloc(t->recs, (t->nr_recs + 1) * sizeof(*t->recs));
			t->rec_times = realloc(t->rec_times,
					       (t->nr_recs + 1) * sizeof(*t->rec_times));
			/* sample_id: pid and tid, then the time */
			t->rec_times[t->nr_recs] = type & PERF_SAMPLE_TIME ?
				*(uint64_t *)(buf + h->size - id_size + 8) : 0;
			t->recs[t->nr_recs++] = copy_out(h, h->size);
			break;
		case PERF_RECORD_CALLCHAIN_DEFERRED:
			t->nr_22++;
			t->chains = realloc(t->chains, (t->nr_chains + 1) * sizeof(*t->chains));
			t->chains[t->nr_chains++] = copy_out(h + 1, h->size - sizeof(*h));
			break;
		default:
			t->other++;
		}
	}
	__atomic_store_n(&pg->data_tail, tail, __ATOMIC_RELEASE);
}

void trace_free(struct trace *t)
{
	int i;

	for (i = 0; i < t->nr_recs; i++)
		free(t->recs[i]);
	for (i = 0; i < t->nr_chains; i++)
		free(t->chains[i]);
	free(t->recs);
	free(t->rec_times);
	free(t->chains);
	free(t->samples);
	memset(t, 0, sizeof(*t));
}

/*
 * The record that the cookie of @s names: the latest record of its tid
 * before it (the kernel found at sample time that this record covers the
 * sample, and wrote none for the sample's entry; *@earlier is then true),
 * else a record of its tid after it (its entry's, written on the way back
 * to user space).  NULL if neither: no cookie, an older record's cookie,
 * or one that no record has.
 */
const struct bido_rec *sample_record(const struct trace *t, const struct sample *s,
				     bool *earlier)
{
	int i;

	if (earlier)
		*earlier = false;
	if (!s->cookie)
		return NULL;
	for (i = s->recs_before - 1; i >= 0; i--) {
		if (t->recs[i]->tid != s->tid)
			continue;
		if (t->recs[i]->cookie != s->cookie)
			break;
		if (earlier)
			*earlier = true;
		return t->recs[i];
	}
	for (i = s->recs_before; i < t->nr_recs; i++)
		if (t->recs[i]->tid == s->tid && t->recs[i]->cookie == s->cookie)
			return t->recs[i];
	return NULL;
}

/*
 * The record whose maps[] cover what @r covers: @r, or for an UNCHANGED
 * record (nr 0: the task's previous record still covers its entry) the
 * latest record of its tid before it that is not UNCHANGED.  NULL if
 * there is none.
 */
const struct bido_rec *rec_maps(const struct trace *t, const struct bido_rec *r)
{
	int i;

	if (!r || !(r->flags & PERF_BUILD_ID_OFFSET_F_UNCHANGED))
		return r;
	for (i = 0; i < t->nr_recs && t->recs[i] != r; i++)
		;
	while (--i >= 0)
		if (t->recs[i]->tid == r->tid &&
		    !(t->recs[i]->flags & PERF_BUILD_ID_OFFSET_F_UNCHANGED))
			return t->recs[i];
	return NULL;
}

const struct bido_map *rec_find(const struct bido_rec *r, uint64_t a)
{
	unsigned int i;

	for (i = 0; i < r->nr; i++)
		if (a >= r->maps[i].start && a < r->maps[i].end)
			return &r->maps[i];
	return NULL;
}

/* Where the child spends its time: frames of this program's own text */
noinline void spin_leaf(void)
{
	uint64_t x = 1;
	int i;

	for (i = 0; i < 1000; i++) {
		x = x * 6364136223846793005ULL + i;
		asm volatile("" : "+r" (x));
	}
}
