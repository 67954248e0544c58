// SPDX-License-Identifier: GPL-2.0
/*
 * The maps of a PERF_RECORD_BUILD_ID_OFFSET go into its thread's maps, so
 * that the samples with its cookie resolve through thread__find_map() as
 * with MMAP2 records: a map [start, end) at pgoff of the DSO with the
 * record's build-ID.  That DSO is the one perf knows with this build-ID
 * (from an MMAP2 with a build-ID, or the header's build-ID table), else one
 * named after the build-ID cache's entry, else a placeholder
 * "[build-id:HEX]" that resolves once the file is in the build-ID cache.
 *
 * Records name the same few files again and again: the DSOs are found
 * through an index by build-ID, rebuilt in one scan of the machine's DSOs
 * when DSOs were added since it was last whole.
 *
 * Anonymous executable memory (JIT code) maps onto /tmp/perf-PID.map, as
 * an MMAP2 of "//anon" does, and for the DWARF unwinder the read-only
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
#include "sample.h"
#include "thread.h"
#include "util.h"
#include "vdso.h"

/* The index of a machine's DSOs by build-ID */
struct build_id_offset_dsos {
	struct hashmap	*map;		/* struct build_id * -> struct build_id_offset_dso * */
	unsigned int	dsos_cnt;	/* machine->dsos.cnt when last whole */
};

struct build_id_offset_dso {
	struct build_id	bid;
	struct dso	*dso;
};

/* Build-IDs are hashes: their first bytes are as good a hash as any */
size_t build_id_offset__hash(long key, void *ctx __maybe_unused)
{
	const struct build_id *bid = (const struct build_id *)key;
	size_t hash = 0;

	memcpy(&hash, bid->data, min_t(size_t, bid->size, sizeof(hash)));
	return hash;
}

static bool build_id__equal(const struct build_id *a, const struct build_id *b)
{
	return a->size == b->size && !memcmp(a->data, b->data, a->size);
}

bool build_id_offset__equal(long key1, long key2, void *ctx __maybe_unused)
{
	return build_id__equal((const struct build_id *)key1, (const struct build_id *)key2);
}

bool build_id_offset__dso_is_unnamed(const struct dso *dso)
{
	return strstarts(dso__long_name(dso), BUILD_ID_OFFSET_DSO_PREFIX);
}

static struct build_id_offset_dsos *machine__build_id_offset_dsos(struct machine *machine)
{
	struct build_id_offset_dsos *index = machine->build_id_offset_dsos;

	if (index)
		return index;
	index = zalloc(sizeof(*index));
	if (!index)
		return NULL;
	index->map = hashmap__new(build_id_offset__hash, build_id_offset__equal, NULL);
	if (IS_ERR(index->map)) {
		free(index);
		return NULL;
	}
	machine->build_id_offset_dsos = index;
	return index;
}

void build_id_offset__exit(struct machine *machine)
{
	struct build_id_offset_dsos *index = machine->build_id_offset_dsos;
	struct hashmap_entry *cur;
	size_t bkt;

	if (!index)
		return;
	hashmap__for_each_entry(index->map, cur, bkt) {
		struct build_id_offset_dso *bd = cur->pvalue;

		dso__put(bd->dso);
		free(bd);
	}
	hashmap__free(index->map);
	zfree(&machine->build_id_offset_dsos);
}

/* A named DSO beats a placeholder; otherwise the first one stays */
static void build_id_offset__index_dso(struct build_id_offset_dsos *index,
				       const struct build_id *bid, struct dso *dso)
{
	struct build_id_offset_dso *bd;

	if (hashmap__find(index->map, bid, &bd)) {
		if (bd->dso == dso || build_id_offset__dso_is_unnamed(dso) ||
		    !build_id_offset__dso_is_unnamed(bd->dso))
			return;
		dso__put(bd->dso);
		bd->dso = dso__get(dso);
		return;
	}
	bd = zalloc(sizeof(*bd));
	if (!bd)
		return;
	bd->bid = *bid;
	bd->dso = dso__get(dso);
	if (hashmap__add(index->map, &bd->bid, bd)) {
		dso__put(bd->dso);
		free(bd);
	}
}

static int build_id_offset__index_cb(struct dso *dso, void *data)
{
	if (dso__has_build_id(dso))
		build_id_offset__index_dso(data, dso__bid(dso), dso);
	return 0;
}

/*
 * The DSO that perf knows with this build-ID, or NULL.  A named one found
 * is the answer; otherwise DSOs added since the index was last whole (MMAP2
 * records) go in first, in one scan.
 */
static struct dso *build_id_offset__find_dso(struct machine *machine,
					     struct build_id_offset_dsos *index,
					     const struct build_id *bid)
{
	struct build_id_offset_dso *bd;

	if (hashmap__find(index->map, bid, &bd) && !build_id_offset__dso_is_unnamed(bd->dso))
		return dso__get(bd->dso);
	if (index->dsos_cnt != machine->dsos.cnt) {
		dsos__for_each_dso(&machine->dsos, build_id_offset__index_cb, index);
		index->dsos_cnt = machine->dsos.cnt;
	}
	return hashmap__find(index->map, bid, &bd) ? dso__get(bd->dso) : NULL;
}

/*
 * The DSO of a build-ID: one that perf knows, else a new one named after
 * the build-ID cache's entry, else a placeholder.
 */
static struct dso *build_id_offset__findnew_dso(struct machine *machine,
						const struct build_id *bid)
{
	struct build_id_offset_dsos *index = machine__build_id_offset_dsos(machine);
	char sbuild_id[SBUILD_ID_SIZE];
	char *name;
	struct dso *dso;

	if (!index)
		return NULL;
	dso = build_id_offset__find_dso(machine, index, bid);
	if (dso)
		return dso;

	build_id__snprintf(bid, sbuild_id, sizeof(sbuild_id));
	name = build_id_cache__origname(sbuild_id);
	if (!name && asprintf(&name, BUILD_ID_OFFSET_DSO_PREFIX "%s]", sbuild_id) < 0)
		return NULL;
	dso = dso__new(name);
	free(name);
	if (!dso)
		return NULL;
	/* A path from the cache: shown by its file name, as for an MMAP2 */
	if (!build_id_offset__dso_is_unnamed(dso) && strrchr(dso__long_name(dso), '/'))
		dso__set_short_name(dso, strrchr(dso__long_name(dso), '/') + 1, false);
	dso__set_build_id(dso, bid);
	if (dsos__add(&machine->dsos, dso)) {
		dso__put(dso);
		return NULL;
	}
	build_id_offset__index_dso(index, bid, dso);
	index->dsos_cnt++;
	return dso;
}

/*
 * Whether the thread already has this map: one that covers its start at
 * the same file offset, up to its end at least, of a DSO with the same
 * build-ID or of none (an MMAP2 without a build-ID names the same file).
 * A map of a placeholder is replaced once a named DSO has the build-ID
 * (perf top: the namer named the file since).
 */
static bool build_id_offset__map_known(struct machine *machine, struct maps *maps,
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
	    (!dso__has_build_id(dso) || build_id__equal(dso__bid(dso), bid)))
		known = true;
	if (known && build_id_offset__dso_is_unnamed(dso)) {
		struct build_id_offset_dsos *index = machine->build_id_offset_dsos;
		struct dso *found = index ? build_id_offset__find_dso(machine, index, bid) : NULL;

		known = found == dso;
		dso__put(found);
	}
	map__put(map);
	return known;
}

/*
 * Anonymous executable memory is JIT code: as for an MMAP2 of "//anon",
 * a map of the addresses themselves onto /tmp/perf-PID.map, where a JIT
 * may list its symbols.
 */
static int build_id_offset__insert_anon_map(struct machine *machine, struct thread *thread,
					    const struct perf_record_build_id_offset_map *m)
{
	struct map *map = maps__find(thread__maps(thread), m->start);
	char anon[] = "//anon";
	int err;

	if (map) {
		bool known = map__end(map) >= m->end &&
			     map__mapping_type(map) == MAPPING_TYPE__IDENTITY;

		map__put(map);
		if (known)
			return 0;
	}
	map = map__new(machine, m->start, m->end - m->start, m->pgoff, &dso_id_empty,
		       PROT_EXEC, MAP_PRIVATE, anon, thread);
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
 * records list the mappings that hold user addresses, but the DWARF
 * unwinder reads a file's .eh_frame_hdr, in a read-only segment, through
 * the thread's maps.  Placed where the program headers put them relative
 * to the code, where no map of the thread is.
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
	if (!dso__data_get_fd(dso, machine, &fd))
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
		/* A corrupt file's segment may wrap */
		if (end <= start || build_id_offset__maps_overlap(thread__maps(thread), start, end))
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
			bool known = dso__is_vdso(map__dso(map)) && map__start(map) == m->start;

			map__put(map);
			if (known)
				return 0;
		}
		dso = machine__findnew_vdso(machine, thread);
		pgoff = 0;
	} else {
		/* No build-ID (unreadable file, or none): nothing to name it by */
		if (!m->build_id_size || m->build_id_size > BUILD_ID_SIZE)
			return 0;
		build_id__init(&bid, m->build_id, m->build_id_size);
		if (build_id_offset__map_known(machine, thread__maps(thread), m, &bid))
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

	/* The task's address space at the time of the record: replace what overlaps */
	err = thread__insert_map(thread, map);
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
	struct perf_record_build_id_offset *rec = &event->build_id_offset;
	u32 i, nr = perf_event__build_id_offset_nr(event);
	struct thread *thread;
	int err = 0;

	/* The addresses were of the program before an exec: nothing to map */
	if (!nr || (rec->flags & PERF_BUILD_ID_OFFSET_F_MM_CHANGED))
		return 0;

	thread = machine__findnew_thread(machine, rec->pid, rec->tid);
	if (!thread)
		return -ENOMEM;
	/* A map that cannot go in leaves its addresses unresolved, as for MMAP2 */
	for (i = 0; i < nr; i++) {
		if (build_id_offset__insert_map(machine, thread, &rec->maps[i]))
			err = -ENOMEM;
	}
	thread__put(thread);
	if (err)
		pr_debug("build-ID offset: not all maps of %u/%u went in\n", rec->pid, rec->tid);
	return 0;
}

/*
 * A record's cookie may be named again by the samples of its thread that
 * come after it, for as long as the kernel knows that the record still
 * covers them: remember the thread's latest.
 */
int build_id_offset__note_record(struct machine *machine, union perf_event *event)
{
	struct perf_record_build_id_offset *rec = &event->build_id_offset;
	struct thread *thread = machine__findnew_thread(machine, rec->pid, rec->tid);

	if (!thread)
		return -ENOMEM;
	thread__set_build_id_offset_cookie(thread, rec->cookie);
	thread__put(thread);
	return 0;
}

/* Does the sample name a record of its thread that came already? */
bool build_id_offset__sample_has_record(struct machine *machine, const struct perf_sample *sample)
{
	struct thread *thread = machine__find_thread(machine, sample->pid, sample->tid);
	bool found = false;

	if (thread) {
		found = thread__build_id_offset_cookie(thread) == sample->build_id_offset_cookie;
		thread__put(thread);
	}
	return found;
}
