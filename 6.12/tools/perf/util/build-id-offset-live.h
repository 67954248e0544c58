/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The build-ID offset join for a tool that reads the ring buffers itself:
 * perf top (util/build-id-offset-live.c)
 */
#ifndef __PERF_BUILD_ID_OFFSET_LIVE_H
#define __PERF_BUILD_ID_OFFSET_LIVE_H

#include "build-id-offset.h"

struct bido_namer;
struct events_stats;
struct evsel;
struct machine;
struct perf_sample;
union perf_event;

int bido_live__event(struct machine *machine, struct bido_namer *namer, struct evsel *evsel,
		     union perf_event *event, struct perf_sample *sample,
		     struct events_stats *stats, bido_sample_fn fn, void *data);

#endif /* __PERF_BUILD_ID_OFFSET_LIVE_H */
