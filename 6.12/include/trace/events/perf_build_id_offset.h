/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Tracepoints of PERF_SAMPLE_BUILD_ID_OFFSET (kernel/events/build_id_offset.c):
 * what the records cost and where they went, and the per-task memory.
 */
#undef TRACE_SYSTEM
#define TRACE_SYSTEM perf_build_id_offset

#if !defined(_TRACE_PERF_BUILD_ID_OFFSET_H) || defined(TRACE_HEADER_MULTI_READ)
#define _TRACE_PERF_BUILD_ID_OFFSET_H

#include <linux/tracepoint.h>

/**
 * perf_bido_record - the record of a kernel entry was built and written
 * @cookie:	the entry's cookie
 * @nr_maps:	entries of the record's maps[]
 * @flags:	the record's PERF_BUILD_ID_OFFSET_F_* flags
 * @parsed:	build-IDs read from the page cache for it (the others came
 *		from the task's last record)
 * @unreadable:	maps with PERF_BUILD_ID_OFFSET_MAP_UNREADABLE
 * @written:	receiving events that got a copy
 * @no_room:	receiving events whose buffer had no room for one (each
 *		counts it in its PERF_RECORD_LOST)
 *
 * In the task, in task context, as it returns to user space or exits.
 */
TRACE_EVENT(perf_bido_record,

	TP_PROTO(u64 cookie, unsigned int nr_maps, u32 flags,
		 unsigned int parsed, unsigned int unreadable,
		 unsigned int written, unsigned int no_room),

	TP_ARGS(cookie, nr_maps, flags, parsed, unreadable, written, no_room),

	TP_STRUCT__entry(
		__field(u64,		cookie)
		__field(unsigned int,	nr_maps)
		__field(u32,		flags)
		__field(unsigned int,	parsed)
		__field(unsigned int,	unreadable)
		__field(unsigned int,	written)
		__field(unsigned int,	no_room)
	),

	TP_fast_assign(
		__entry->cookie		= cookie;
		__entry->nr_maps	= nr_maps;
		__entry->flags		= flags;
		__entry->parsed		= parsed;
		__entry->unreadable	= unreadable;
		__entry->written	= written;
		__entry->no_room	= no_room;
	),

	TP_printk("cookie=%#llx maps=%u flags=%#x parsed=%u unreadable=%u written=%u no_room=%u",
		  __entry->cookie, __entry->nr_maps, __entry->flags,
		  __entry->parsed, __entry->unreadable, __entry->written,
		  __entry->no_room)
);

DECLARE_EVENT_CLASS(perf_bido_state,

	TP_PROTO(const void *state, bool stash, unsigned int bytes),

	TP_ARGS(state, stash, bytes),

	TP_STRUCT__entry(
		__field(const void *,	state)
		__field(bool,		stash)
		__field(unsigned int,	bytes)
	),

	TP_fast_assign(
		__entry->state		= state;
		__entry->stash		= stash;
		__entry->bytes		= bytes;
	),

	TP_printk("%s %p bytes=%u", __entry->stash ? "stash" : "task",
		  __entry->state, __entry->bytes)
);

/**
 * perf_bido_state_alloc - per-task state or a stash was allocated
 * @state:	the object
 * @stash:	a task's table of its last record's maps or its stash of
 *		an entry's addresses (allocated apart) rather than the
 *		per-task state (the per-CPU spares are such states too)
 * @bytes:	the size of the kmalloc bucket the object takes
 *
 * In task context.
 */
DEFINE_EVENT(perf_bido_state, perf_bido_state_alloc,
	TP_PROTO(const void *state, bool stash, unsigned int bytes),
	TP_ARGS(state, stash, bytes)
);

/**
 * perf_bido_state_free - per-task state or a stash was given back
 * @state:	the object
 * @stash:	as for perf_bido_state_alloc
 * @bytes:	as for perf_bido_state_alloc
 *
 * In task context, or from the work that frees the spares.
 */
DEFINE_EVENT(perf_bido_state, perf_bido_state_free,
	TP_PROTO(const void *state, bool stash, unsigned int bytes),
	TP_ARGS(state, stash, bytes)
);

#endif /* _TRACE_PERF_BUILD_ID_OFFSET_H */

/* This part must be outside protection */
#include <trace/define_trace.h>
