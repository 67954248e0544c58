/* SPDX-License-Identifier: GPL-2.0 */
#ifndef __PERF_BUILD_ID_OFFSET_NAMER_H
#define __PERF_BUILD_ID_OFFSET_NAMER_H

/*
 * perf record --buildid-offset: the file names of the build-IDs in the
 * PERF_RECORD_BUILD_ID_OFFSET records, found while their tasks run, for
 * the header's build-ID table and the build-ID cache
 * (util/build-id-offset-namer.c).
 */

struct evlist;
struct machine;
struct build_id_offset_namer;

struct build_id_offset_namer *build_id_offset_namer__start(struct evlist *evlist, bool inherit);
void build_id_offset_namer__stop(struct build_id_offset_namer *namer);
int build_id_offset_namer__add_dsos(struct build_id_offset_namer *namer, struct machine *machine);
void build_id_offset_namer__delete(struct build_id_offset_namer *namer);

#endif /* __PERF_BUILD_ID_OFFSET_NAMER_H */
