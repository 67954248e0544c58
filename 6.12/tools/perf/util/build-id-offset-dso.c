// SPDX-License-Identifier: GPL-2.0
/*
 * The maps of a PERF_RECORD_BUILD_ID_OFFSET go into its thread's maps, so
 * that the samples it is for resolve through thread__find_map() as with
 * MMAP records: a map [start, end) at pgoff on the DSO of the record's
 * build-ID.  That DSO is the one perf knows with this build-ID (an MMAP2
 * with a build-ID, the header's build-ID table, or named while recording,
 * see util/build-id-offset-namer.c), else one named after the build-ID
 * cache's entry, else a placeholder "[build-id:HEX]".  DSOs are found
 * through an index by build-ID, kept in the join (struct bido_join):
 * records name the same few files again and again.
 *
 * Anonymous executable memory (JIT code) maps onto /tmp/perf-PID.map, as
 * an MMAP2 of "//anon" does, and for perf's DWARF unwinder the read-only
 * segments of each file go in beside its code.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <linux/err.h>
#include <linux/kernel.h>
#include <linux/string.h>
#include <linux/zalloc.h>
#include <internal/lib.h>
#include <perf/event.h>
#ifdef HAVE_LIBELF_SUPPORT
#include <gelf.h>
#endif

#include "build-id-offset.h"
#include "build-id-offset-internal.h"
#include "build-id.h"
#include "callchain.h"
#include "debug.h"
#include "dso.h"
#include "dsos.h"
#include "event.h"
#include "hashmap.h"
#include "machine.h"
#include "map.h"
#include "maps.h"
#include "thread.h"
#include "vdso.h"

/* Build-IDs are hashes: their first bytes are as good a hash as any */
static size_t bido_bid_hash(long key, void *ctx __maybe_unused)
{
	const struct build_id *bid = (const struct build_id *)key;
	size_t hash = 0;

	memcpy(&hash, bid->data, min(bid->size, sizeof(hash)));
	return hash;
}

bool build_id_offset__build_id_equal(const struct build_id *a, const struct build_id *b)
{
	return a->size == b->size && !memcmp(a->data, b->data, a->size);
}

static bool bido_bid_equal(long key1, long key2, void *ctx __maybe_unused)
{
	return build_id_offset__build_id_equal((const struct build_id *)key1,
					       (const struct build_id *)key2);
}

/* The index, empty, for a new join */
int bido_dsos__init(struct bido_join *join)
{
	join->dsos = hashmap__new(bido_bid_hash, bido_bid_equal, NULL);
	if (IS_ERR(join->dsos)) {
		join->dsos = NULL;
		return -ENOMEM;
	}
	return 0;
}

void bido_dsos__exit(struct bido_join *join)
{
	struct hashmap_entry *cur;
	size_t bkt;

	pr_debug("build-ID offset: %zu build-IDs indexed, %" PRIu64 " scans of the DSOs\n",
		 hashmap__size(join->dsos), join->nr_dso_scans);
	hashmap__for_each_entry(join->dsos, cur, bkt) {
		struct bido_dso *bd = cur->pvalue;

		dso__put(bd->dso);
		free(bd);
	}
	hashmap__free(join->dsos);
}

bool build_id_offset__dso_is_unnamed(const struct dso *dso)
{
	return !strncmp(dso__long_name(dso), BIDO_DSO_PREFIX, strlen(BIDO_DSO_PREFIX));
}

struct bido_find_dso {
	const struct build_id	*bid;
	struct dso		*dso;
};

static int bido_find_dso_cb(struct dso *dso, void *data)
{
	struct bido_find_dso *args = data;

	if (!dso__has_build_id(dso) || !build_id_offset__build_id_equal(dso__bid(dso), args->bid))
		return 0;
	/* A name (MMAP2, header build-ID table) beats a placeholder */
	if (args->dso && !build_id_offset__dso_is_unnamed(dso))
		dso__put(args->dso);
	else if (args->dso)
		return 0;
	args->dso = dso__get(dso);
	return build_id_offset__dso_is_unnamed(dso) ? 0 : 1;
}

/* The best DSO of a build-ID that machine->dsos has: one with a name */
struct dso *build_id_offset__scan_dsos(struct machine *machine, const struct build_id *bid)
{
	struct bido_find_dso args = { .bid = bid, };

	dsos__for_each_dso(&machine->dsos, bido_find_dso_cb, &args);
	return args.dso;
}

/* An entry of the index whose DSO still has the build-ID it is filed under */
static bool bido_dso__current(const struct bido_dso *bd)
{
	return dso__has_build_id(bd->dso) &&
	       build_id_offset__build_id_equal(dso__bid(bd->dso), &bd->bid);
}

/* Remember @dso in the index, unless it has a named one of its build-ID */
static void build_id_offset__index_dso(struct bido_join *join, const struct build_id *bid,
				       struct dso *dso)
{
	struct bido_dso *bd;

	if (hashmap__find(join->dsos, bid, &bd) && bd->dso != dso && bido_dso__current(bd) &&
	    !build_id_offset__dso_is_unnamed(bd->dso) && build_id_offset__dso_is_unnamed(dso))
		return;
	if (!hashmap__find(join->dsos, bid, &bd)) {
		bd = zalloc(sizeof(*bd));
		if (!bd)
			return;
		bd->bid = *bid;
		if (hashmap__add(join->dsos, &bd->bid, bd)) {
			free(bd);
			return;
		}
	}
	dso__put(bd->dso);
	bd->dso = dso__get(dso);
}

static int bido_index_cb(struct dso *dso, void *data)
{
	if (dso__has_build_id(dso))
		build_id_offset__index_dso(data, dso__bid(dso), dso);
	return 0;
}

/*
 * Add a DSO of ours, its build-ID just set, to machine->dsos and to the
 * index.  The index stays whole if it was (nothing else changed but that
 * build-ID): no scan for the next build-ID.
 */
int build_id_offset__add_dso(struct machine *machine, const struct build_id *bid,
			     struct dso *dso)
{
	struct bido_join *join = machine__bido_join(machine);
	bool whole = join && join->dsos_cnt == machine->dsos.cnt &&
		     join->dsos_gen + 1 == dso__build_id_generation;

	if (dsos__add(&machine->dsos, dso))
		return -ENOMEM;
	if (join) {
		build_id_offset__index_dso(join, bid, dso);
		if (whole) {
			join->dsos_cnt = machine->dsos.cnt;
			join->dsos_gen = dso__build_id_generation;
		}
	}
	return 0;
}

/* A record's map has the build-ID: its DSO goes into the build-ID table */
static void build_id_offset__index_used(struct machine *machine, const struct build_id *bid)
{
	struct bido_dso *bd;

	if (machine->bido_join && hashmap__find(machine->bido_join->dsos, bid, &bd))
		bd->used = true;
}

/*
 * The DSO that perf knows with this build-ID, or NULL.  Through the index:
 * a scan of every DSO for each new build-ID would make reading a file
 * quadratic in its files.  A named DSO found is the answer.  Otherwise, if
 * DSOs were added (MMAP2 records) or given a build-ID (the header's
 * build-ID table, a lazy read) since the index was last whole, they go in
 * first, in one scan.
 */
struct dso *build_id_offset__find_dso(struct machine *machine, const struct build_id *bid)
{
	struct bido_join *join = machine__bido_join(machine);
	struct bido_dso *bd;

	if (!join)
		return build_id_offset__scan_dsos(machine, bid);
	if (hashmap__find(join->dsos, bid, &bd) && bido_dso__current(bd) &&
	    !build_id_offset__dso_is_unnamed(bd->dso))
		return dso__get(bd->dso);
	if (join->dsos_cnt != machine->dsos.cnt || join->dsos_gen != dso__build_id_generation) {
		join->dsos_cnt = machine->dsos.cnt;
		join->dsos_gen = dso__build_id_generation;
		dsos__for_each_dso(&machine->dsos, bido_index_cb, join);
		join->nr_dso_scans++;
	}
	return hashmap__find(join->dsos, bid, &bd) && bido_dso__current(bd) ?
	       dso__get(bd->dso) : NULL;
}

/*
 * The DSO of a build-ID: one that perf knows with this build-ID (from an
 * MMAP2 with a build-ID, the header's build-ID table, or named while
 * recording), else a new one named after the build-ID cache's entry, else
 * a placeholder that 'perf record' names at the end
 * (machine__name_bido_dsos()).
 */
static struct dso *build_id_offset__findnew_dso(struct machine *machine, struct build_id *bid)
{
	char sbuild_id[SBUILD_ID_SIZE];
	char *name = NULL;
	struct dso *dso = build_id_offset__find_dso(machine, bid);

	if (dso) {
		build_id_offset__index_used(machine, bid);
		return dso;
	}

	build_id__sprintf(bid, sbuild_id);
	name = build_id_cache__origname(sbuild_id);
	if (!name && asprintf(&name, BIDO_DSO_PREFIX "%s]", sbuild_id) < 0)
		return NULL;

	dso = dso__new(name);
	free(name);
	if (!dso)
		return NULL;
	/* A path from the cache: shown by its file name, as for an MMAP2 */
	if (!build_id_offset__dso_is_unnamed(dso) && strrchr(dso__long_name(dso), '/'))
		dso__set_short_name(dso, strrchr(dso__long_name(dso), '/') + 1, false);
	dso__set_build_id(dso, bid);
	if (build_id_offset__add_dso(machine, bid, dso)) {
		dso__put(dso);
		return NULL;
	}
	build_id_offset__index_used(machine, bid);
	return dso;
}

/*
 * Whether the thread already has a map for m: one that covers m's start
 * with the same file offset, at least up to m's end, with a DSO of the
 * same build-ID, or of none (an MMAP2 without a build-ID names the same
 * VMA: trust the name).
 */
static bool build_id_offset__map_known(struct maps *maps,
				       const struct perf_record_build_id_offset_map *m,
				       const struct build_id *bid)
{
	struct map *map = maps__find(maps, m->start);
	bool known = false;
	struct dso *dso;

	if (!map)
		return false;
	dso = map__dso(map);
	if (map__end(map) >= m->end &&
	    m->start - map__start(map) + map__pgoff(map) == m->pgoff &&
	    (!dso__has_build_id(dso) || build_id_offset__build_id_equal(dso__bid(dso), bid)))
		known = true;
	map__put(map);
	return known;
}

struct bido_range {
	u64	start, end;
};

/* A map of perf inject --jit (a jitted-PID-N.so) in the range? */
static int build_id_offset__jitted_cb(struct map *map, void *data)
{
	const struct bido_range *r = data;
	const char *name;

	if (map__end(map) <= r->start || map__start(map) >= r->end)
		return 0;
	name = strrchr(dso__long_name(map__dso(map)), '/');
	return name && !strncmp(name + 1, "jitted-", 7);
}

/*
 * Anonymous executable memory is JIT code: as for an MMAP2 of "//anon",
 * a map of the addresses themselves onto /tmp/perf-PID.map, where a JIT
 * may list its symbols.  Unless perf inject --jit put the JIT's own maps
 * of its code there, from its jitdump: those name the functions, and stay.
 */
static int build_id_offset__insert_anon_map(struct machine *machine, struct thread *thread,
					    const struct perf_record_build_id_offset_map *m)
{
	struct map *map = maps__find(thread__maps(thread), m->start);
	struct bido_range range = { .start = m->start, .end = m->end };
	char anon[] = "//anon";
	int err;

	if (map) {
		bool known = map__end(map) >= m->end &&
			     map__mapping_type(map) == MAPPING_TYPE__IDENTITY &&
			     !strncmp(dso__long_name(map__dso(map)), "/tmp/perf-", 10);

		map__put(map);
		if (known)
			return 0;
	}
	if (maps__for_each_map(thread__maps(thread), build_id_offset__jitted_cb, &range))
		return 0;
	map = map__new(machine, m->start, m->end - m->start, m->pgoff, /*id=*/NULL,
		       PROT_EXEC, MAP_PRIVATE, /*bid=*/NULL, anon, thread);
	if (!map)
		return -ENOMEM;
	err = thread__insert_map(thread, map);
	map__put(map);
	return err;
}

/* Does a map of @maps cover the first or the last byte of [@start, @end)? */
static bool build_id_offset__maps_overlap(struct maps *maps, u64 start, u64 end)
{
	struct map *map = maps__find(maps, start);

	if (!map)
		map = maps__find(maps, end - 1);
	map__put(map);
	return map != NULL;
}

/*
 * The other read-only loadable segments of the file whose code @map maps:
 * records list executable mappings only, as MMAP2 does without mmap_data,
 * but perf's DWARF unwinder reads a file's .eh_frame_hdr, in a read-only
 * segment, through the thread's maps (perf record --call-graph dwarf
 * synthesizes every mapping for that).  Placed where the program headers
 * put them relative to the code; not where a map of the thread covers
 * either end of one (a segment is a few pages next to the code).
 */
static void build_id_offset__insert_segments(struct machine *machine, struct thread *thread,
					     struct map *map)
{
#ifdef HAVE_LIBELF_SUPPORT
	struct dso *dso = map__dso(map);
	u64 mask = ~((u64)page_size - 1), bias = 0;
	Elf *elf = NULL;
	bool found = false;
	size_t i, nr;
	GElf_Phdr ph;
	int fd;

	if (dso__is_vdso(dso) || build_id_offset__dso_is_unnamed(dso))
		return;
	fd = dso__data_get_fd(dso, machine);
	if (fd < 0)
		return;
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (!elf || elf_getphdrnum(elf, &nr))
		goto out;
	/* The executable segment the map is of tells where the file was loaded */
	for (i = 0; i < nr && !found; i++) {
		if (!gelf_getphdr(elf, i, &ph) || ph.p_type != PT_LOAD || !(ph.p_flags & PF_X) ||
		    map__pgoff(map) < (ph.p_offset & mask) ||
		    map__pgoff(map) >= ph.p_offset + ph.p_filesz)
			continue;
		bias = map__start(map) - (map__pgoff(map) - (ph.p_offset & mask)) -
		       (ph.p_vaddr & mask);
		found = true;
	}
	for (i = 0; found && i < nr; i++) {
		struct map *seg;
		u64 start, end;

		if (!gelf_getphdr(elf, i, &ph) || ph.p_type != PT_LOAD ||
		    (ph.p_flags & (PF_X | PF_W)) || !ph.p_filesz)
			continue;
		start = bias + (ph.p_vaddr & mask);
		end = bias + ((ph.p_vaddr + ph.p_filesz + page_size - 1) & mask);
		if (build_id_offset__maps_overlap(thread__maps(thread), start, end))
			continue;
		seg = map__new2(start, dso);
		if (!seg)
			break;
		map__set_end(seg, end);
		map__set_pgoff(seg, ph.p_offset & mask);
		thread__insert_map(thread, seg);
		map__put(seg);
	}
out:
	if (elf)
		elf_end(elf);
	dso__data_put_fd(dso);
#else
	(void)machine;
	(void)thread;
	(void)map;
#endif
}

static int build_id_offset__insert_map(struct machine *machine, struct thread *thread,
				       const struct perf_record_build_id_offset_map *m)
{
	struct build_id bid;
	struct dso *dso;
	struct map *map;
	u64 pgoff = m->pgoff;
	int err;

	if (m->end <= m->start)
		return 0;
	if (m->flags & PERF_BUILD_ID_OFFSET_MAP_ANON)
		return build_id_offset__insert_anon_map(machine, thread, m);

	if (m->flags & PERF_BUILD_ID_OFFSET_MAP_VDSO) {
		map = maps__find(thread__maps(thread), m->start);
		if (map) {
			bool known = dso__is_vdso(map__dso(map)) &&
				     map__start(map) == m->start;

			map__put(map);
			if (known)
				return 0;
		}
		dso = machine__findnew_vdso(machine, thread);
		pgoff = 0;
	} else {
		/*
		 * Unreadable, no build-ID: nothing to name it by; one longer
		 * than a build-ID can be: a malformed record's
		 */
		if (!m->build_id_size || m->build_id_size > BUILD_ID_SIZE)
			return 0;
		build_id__init(&bid, m->build_id, m->build_id_size);
		if (build_id_offset__map_known(thread__maps(thread), m, &bid))
			return 0;
		dso = build_id_offset__findnew_dso(machine, &bid);
	}
	if (!dso)
		return -ENOMEM;

	map = map__new2(m->start, dso);
	dso__put(dso);
	if (!map)
		return -ENOMEM;
	map__set_end(map, m->end);
	map__set_pgoff(map, pgoff);

	/* The task's mm at the time of the record: replace what overlaps */
	err = thread__insert_map(thread, map);
	/* Only the DWARF unwinder reads them (as unwind__prepare_access() asks) */
	if (!err && dwarf_callchain_users && !(m->flags & PERF_BUILD_ID_OFFSET_MAP_VDSO))
		build_id_offset__insert_segments(machine, thread, map);
	map__put(map);
	return err;
}

/*
 * Put the maps of a PERF_RECORD_BUILD_ID_OFFSET into its thread's maps, so
 * that the samples it is for resolve through thread__find_map().
 */
int build_id_offset__insert_maps(struct machine *machine, union perf_event *event)
{
	struct perf_record_build_id_offset *bido = &event->build_id_offset;
	u32 i, nr = perf_event__build_id_offset_nr(event);
	struct thread *thread;
	int err = 0;

	/* The addresses were of the program before an exec: no maps */
	if (!nr || (bido->flags & PERF_BUILD_ID_OFFSET_F_MM_CHANGED))
		return 0;

	thread = machine__findnew_thread(machine, bido->pid, bido->tid);
	if (!thread)
		return -ENOMEM;
	for (i = 0; i < nr && !err; i++)
		err = build_id_offset__insert_map(machine, thread, &bido->maps[i]);
	thread__put(thread);
	return err;
}
