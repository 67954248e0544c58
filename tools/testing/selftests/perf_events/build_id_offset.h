/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What the build_id_offset selftests share: the layout of the records,
 * a ring buffer reader that parses samples, build-ID offset records and
 * deferred callchains into a struct trace, and the lookups the tests
 * check them with.
 */
#ifndef BUILD_ID_OFFSET_H
#define BUILD_ID_OFFSET_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <linux/perf_event.h>

/* Before the UAPI header had it: the task's previous record still covers */
#ifndef PERF_BUILD_ID_OFFSET_F_UNCHANGED
#define PERF_BUILD_ID_OFFSET_F_UNCHANGED	(1U << 3)
#endif

#define RING_PAGES	512
/*
 * The user registers a dwarf sample needs: IP and SP (x86-64's
 * PERF_REG_X86_IP and PERF_REG_X86_SP); any two do for the test's parser
 */
#define REGS_MASK	((1ULL << 8) | (1ULL << 7))
/* Samples a test waits for, and for how long at most */
#define WANT		200
#define WAIT_S		120
#define MAX_STACK	4096
/* The user frames of an in-interrupt callchain that a sample keeps */
#define MAX_IPS		64

struct bido_map {
	uint64_t start, end, pgoff;
	uint8_t build_id_size, flags;
	uint16_t reserved;
	uint8_t build_id[20];
};

struct bido_rec {
	struct perf_event_header header;
	uint32_t pid, tid;
	uint64_t cookie;
	uint32_t nr, flags;
	struct bido_map maps[];
};

struct sample {
	uint32_t tid;
	uint64_t ip;
	uint64_t time;			/* with PERF_SAMPLE_TIME */
	uint64_t cookie;
	uint64_t chain_cookie;		/* after PERF_CONTEXT_USER_DEFERRED */
	uint64_t ips[MAX_IPS];		/* the callchain's user addresses */
	unsigned int nr_ips;
	int recs_before;		/* records of the ring before it */
	uint64_t words[MAX_STACK / 8];	/* the dumped user stack */
	unsigned int nr_words;
};

struct trace {
	struct sample *samples;
	int nr_samples;
	struct bido_rec **recs;
	uint64_t *rec_times;		/* with PERF_SAMPLE_TIME, else 0 */
	int nr_recs;
	struct perf_record_deferred { uint64_t cookie, nr, ips[]; } **chains;
	int nr_chains;
	int bad;			/* malformed records */
	int other;			/* records of neither type asked for */
	int nr_23, nr_22;
};

struct ring {
	int fd;
	void *base;
};

void sample_attr(struct perf_event_attr *attr, uint64_t extra, bool defer_callchain);
int ring_open(struct ring *r, struct perf_event_attr *attr, pid_t pid);
void ring_close(struct ring *r);
void ring_drain(struct ring *r, struct trace *t, uint64_t type);
void trace_free(struct trace *t);
const struct bido_rec *sample_record(const struct trace *t, const struct sample *s,
				     bool *earlier);
const struct bido_rec *rec_maps(const struct trace *t, const struct bido_rec *r);
const struct bido_map *rec_find(const struct bido_rec *r, uint64_t a);
void spin_leaf(void);

#endif /* BUILD_ID_OFFSET_H */
