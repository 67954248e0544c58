// SPDX-License-Identifier: GPL-2.0
/*
 * The build-ID offset namer of perf record (util/build-id-offset-namer.c),
 * fed made-up ring buffer data: what --switch-output carries into a new
 * file.
 */
#include <linux/kernel.h>
#include <linux/perf_event.h>
#include <linux/zalloc.h>
#include <stddef.h>
#include <string.h>

#include "build-id-offset-namer.h"
#include "debug.h"
#include "event.h"
#include "evlist.h"
#include "evsel.h"
#include "machine.h"
#include "tests.h"

/* Tids that no task has: the namer finds no /proc entry to read */
#define LIVE_TID	0x7ffffff0
#define DEAD_TID	0x7ffffff1
#define LATE_TID	0x7ffffff2
#define CHAIN_TID	0x7ffffff3
#define MISS_TID	0x7ffffff4
#define LATE_BASE_TID	0x7ffffff5
#define OLD_BASE_TID	0x7ffffff6
/* The cookie of a tid's record @n: scan_record()'s is COOKIE(1, tid) */
#define COOKIE(n, tid)	((n) * 0x1000ULL + (tid))

static void scan_exit(struct bido_namer *namer, u32 tid)
{
	struct perf_record_fork ev = {
		.header = { .type = PERF_RECORD_EXIT, .size = sizeof(ev) },
		.pid = tid, .ppid = 1, .tid = tid, .ptid = 1,
	};

	bido_namer__scan(namer, namer, &ev, sizeof(ev));
}

/* A record with one map, and a sample_id of pid/tid and @time */
static void scan_record_at(struct bido_namer *namer, u32 tid, u64 cookie, u64 time)
{
	u64 buf[(sizeof(struct perf_record_build_id_offset) +
		 sizeof(struct perf_record_build_id_offset_map)) / sizeof(u64) + 2] = {};
	struct perf_record_build_id_offset *rec = (void *)buf;
	struct perf_record_build_id_offset_map *map = rec->maps;

	rec->header.type = PERF_RECORD_BUILD_ID_OFFSET;
	rec->header.size = sizeof(buf);
	rec->pid = tid;
	rec->tid = tid;
	rec->cookie = cookie;
	rec->nr = 1;
	map->start = 0x400000;
	map->end = 0x401000;
	map->build_id_size = 20;
	memset(map->build_id, 0xab, sizeof(map->build_id));
	buf[ARRAY_SIZE(buf) - 1] = time;
	bido_namer__scan(namer, namer, buf, sizeof(buf));
}

static void scan_record(struct bido_namer *namer, u32 tid)
{
	scan_record_at(namer, tid, COOKIE(1, tid), 0);
}

/* A record flagged SAME_MAPS naming @same_as, and a sample_id */
static void scan_same(struct bido_namer *namer, u32 tid, u64 cookie, u64 same_as, u64 time)
{
	u64 buf[sizeof(struct perf_record_build_id_offset) / sizeof(u64) + 1 + 2] = {};
	struct perf_record_build_id_offset *rec = (void *)buf;

	rec->header.type = PERF_RECORD_BUILD_ID_OFFSET;
	rec->header.size = sizeof(buf);
	rec->pid = tid;
	rec->tid = tid;
	rec->cookie = cookie;
	rec->flags = PERF_BUILD_ID_OFFSET_F_SAME_MAPS;
	memcpy(rec->maps, &same_as, sizeof(same_as));
	buf[ARRAY_SIZE(buf) - 1] = time;
	bido_namer__scan(namer, namer, buf, sizeof(buf));
}

struct carried {
	int	nr;
	struct {
		u32	tid, nr, flags;
		u64	cookie;
	} rec[8];
};

static int carry_write(union perf_event *event, void *data)
{
	struct carried *c = data;

	if (event->header.type == PERF_RECORD_BUILD_ID_OFFSET && c->nr < 8) {
		c->rec[c->nr].tid = event->build_id_offset.tid;
		c->rec[c->nr].nr = event->build_id_offset.nr;
		c->rec[c->nr].flags = event->build_id_offset.flags;
		c->rec[c->nr++].cookie = event->build_id_offset.cookie;
	}
	return 0;
}

/* Whether a record of @tid with this cookie, nr and flags was carried */
static bool carried(const struct carried *c, u32 tid, u64 cookie, u32 nr, u32 flags)
{
	int i;

	for (i = 0; i < c->nr; i++) {
		if (c->rec[i].tid == tid)
			return c->rec[i].cookie == cookie && c->rec[i].nr == nr &&
			       c->rec[i].flags == flags;
	}
	return false;
}

/*
 * A task's last record is carried into each new file while the task
 * lives.  One that exited is not, even when its record, written before
 * its EXIT on another CPU, is read in a later pass than the EXIT; nor one
 * whose EXIT comes in the same pass as its record.  A chain of records
 * flagged SAME_MAPS carries the maps of the record it starts from, under
 * the cookie of its last (the one the task's next samples name); one that
 * names a record not seen is carried as it is.  The buffers of the CPUs
 * are read in turn: a chain read before the record it starts from still
 * carries that record's maps under its last cookie, and a record older
 * than the task's last (by the time of its sample_id) is not carried.
 */
static int test__bido_namer_carry(struct test_suite *test __maybe_unused,
				  int subtest __maybe_unused)
{
	struct perf_event_attr attr = {
		.type = PERF_TYPE_SOFTWARE,
		.config = PERF_COUNT_SW_DUMMY,
		.sample_type = PERF_SAMPLE_TID | PERF_SAMPLE_TIME,
		.sample_id_all = 1,
	};
	struct machine *machine = machine__new_host();
	struct evlist *evlist = evlist__new();
	struct bido_namer *namer = NULL;
	struct carried c = {};
	struct evsel *evsel;
	int err = TEST_FAIL;

	if (!machine || !evlist)
		goto out;
	evsel = evsel__new(&attr);
	if (!evsel)
		goto out;
	evlist__add(evlist, evsel);
	namer = bido_namer__new(machine, NULL, NULL);
	if (!namer)
		goto out;
	bido_namer__set_carry(namer, evlist);

	/* Pass 1: LIVE_TID's record; DEAD_TID's EXIT, its record still unread */
	scan_record(namer, LIVE_TID);
	scan_exit(namer, DEAD_TID);
	if (bido_namer__run(namer) < 0)
		goto out;
	/* Pass 2: DEAD_TID's record; LATE_TID's record and EXIT */
	scan_record(namer, DEAD_TID);
	scan_record(namer, LATE_TID);
	scan_exit(namer, LATE_TID);
	/* CHAIN_TID: a record, then two naming it in turn; MISS_TID: one naming none */
	scan_record(namer, CHAIN_TID);
	scan_same(namer, CHAIN_TID, COOKIE(2, CHAIN_TID), COOKIE(1, CHAIN_TID), 0);
	scan_same(namer, CHAIN_TID, COOKIE(3, CHAIN_TID), COOKIE(2, CHAIN_TID), 0);
	scan_same(namer, MISS_TID, COOKIE(2, MISS_TID), COOKIE(1, MISS_TID), 0);
	/* LATE_BASE_TID: the second of a chain read first, then its record, then the third */
	scan_same(namer, LATE_BASE_TID, COOKIE(2, LATE_BASE_TID), COOKIE(1, LATE_BASE_TID), 20);
	scan_record_at(namer, LATE_BASE_TID, COOKIE(1, LATE_BASE_TID), 10);
	scan_same(namer, LATE_BASE_TID, COOKIE(3, LATE_BASE_TID), COOKIE(2, LATE_BASE_TID), 30);
	/* OLD_BASE_TID: a record, then an earlier chain, its record read last */
	scan_record_at(namer, OLD_BASE_TID, COOKIE(3, OLD_BASE_TID), 30);
	scan_same(namer, OLD_BASE_TID, COOKIE(2, OLD_BASE_TID), COOKIE(1, OLD_BASE_TID), 20);
	scan_record_at(namer, OLD_BASE_TID, COOKIE(1, OLD_BASE_TID), 10);
	if (bido_namer__run(namer) < 0)
		goto out;

	if (bido_namer__carry(namer, carry_write, &c))
		goto out;
	pr_debug("carried %d records\n", c.nr);
	if (c.nr == 5 && carried(&c, LIVE_TID, COOKIE(1, LIVE_TID), 1, 0) &&
	    carried(&c, CHAIN_TID, COOKIE(3, CHAIN_TID), 1, 0) &&
	    carried(&c, MISS_TID, COOKIE(2, MISS_TID), 0, PERF_BUILD_ID_OFFSET_F_SAME_MAPS) &&
	    carried(&c, LATE_BASE_TID, COOKIE(3, LATE_BASE_TID), 1, 0) &&
	    carried(&c, OLD_BASE_TID, COOKIE(3, OLD_BASE_TID), 1, 0))
		err = TEST_OK;
out:
	bido_namer__delete(namer);
	evlist__delete(evlist);
	machine__delete(machine);
	return err;
}

DEFINE_SUITE("build-ID offset records carried across --switch-output", bido_namer_carry);
