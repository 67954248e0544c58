// SPDX-License-Identifier: GPL-2.0
/*
 * PERF_SAMPLE_BUILD_ID_OFFSET: build-IDs of mapped files, from the page
 * cache only, never waiting for a file system.
 *
 * The record builder (build_id_offset_record.c) calls
 * perf_bido_read_build_ids() with a reference on each file whose
 * build-ID a record needs, after it has dropped mmap_lock.  A build-ID
 * whose pages are not in the page cache is unreadable for this record; a
 * worker reads them in, so that a later record of the mapping has it.
 * Every record reads the build-IDs of its maps here: the task's table
 * keeps address ranges only, no build-IDs to take them from.
 */

#include <linux/atomic.h>
#include <linux/buildid.h>
#include <linux/file.h>
#include <linux/fs.h>
#include <linux/pagemap.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <linux/workqueue.h>
#include <kunit/visibility.h>

#include "build_id_offset.h"

/*
 * A note that is not in the page cache is read into it by a worker, so
 * that a later record finds it there; the task that asked goes on at
 * once.  At most PERF_BIDO_MAX_FETCHES such reads are under way at any
 * time: a file system that stalls holds up that many workers, no task.
 */
#define PERF_BIDO_MAX_FETCHES	4

static atomic_t perf_bido_nr_fetches = ATOMIC_INIT(0);

struct perf_bido_fetch {
	struct work_struct	work;
	struct file		*file;
};

static void perf_bido_fetch_fn(struct work_struct *work)
{
	struct perf_bido_fetch *f = container_of(work, struct perf_bido_fetch,
						 work);
	unsigned char build_id[BUILD_ID_SIZE_MAX];
	__u32 size;

	/* The result is the next record's, from the page cache */
	build_id_parse_file(f->file, build_id, &size);
	fput(f->file);
	kfree(f);
	atomic_dec(&perf_bido_nr_fetches);
}

/* Have a worker read what the build-ID of @file needs into the page cache */
static void perf_bido_fetch(struct file *file)
{
	struct perf_bido_fetch *f;

	if (atomic_inc_return(&perf_bido_nr_fetches) > PERF_BIDO_MAX_FETCHES)
		goto busy;
	f = kmalloc(sizeof(*f), GFP_KERNEL);
	if (!f)
		goto busy;
	INIT_WORK(&f->work, perf_bido_fetch_fn);
	f->file = get_file(file);
	queue_work(system_unbound_wq, &f->work);
	return;
busy:
	atomic_dec(&perf_bido_nr_fetches);
}

/**
 * perf_bido_build_id - the build-ID of a mapped file, from the page cache
 * @file: the file
 * @map: its map in the record being built
 *
 * Only what is in the page cache and up to date is read: the task never
 * waits for a file system here, whatever the file system does.  The pages
 * of mapped code usually are there.  If a page the build-ID needs is not,
 * the map says PERF_BUILD_ID_OFFSET_MAP_UNREADABLE, a worker reads the
 * file (perf_bido_fetch()), and a later record of the mapping gets the
 * build-ID.  Only the contents in the page cache decide
 * PERF_BUILD_ID_OFFSET_MAP_NO_BUILD_ID.
 *
 * Return: false when the result may change while the mapping does not: an
 * unreadable build-ID, or a file with a shared writable mapping (its
 * stores may rewrite the note).
 */
VISIBLE_IF_KUNIT bool perf_bido_build_id(struct file *file,
					 struct perf_bido_map *map)
{
	__u32 size = 0;
	int err;

	err = build_id_parse_file_nofault(file, map->build_id, &size);
	switch (err) {
	case 0:
		map->build_id_size = size;
		break;
	case -EINVAL:		/* no ELF, no note, or a malformed one */
	case -ERANGE:
	case -EOVERFLOW:
		memset(map->build_id, 0, sizeof(map->build_id));
		map->flags |= PERF_BUILD_ID_OFFSET_MAP_NO_BUILD_ID;
		break;
	case -EFAULT:		/* not in the page cache: next time */
		perf_bido_fetch(file);
		fallthrough;
	default:
		memset(map->build_id, 0, sizeof(map->build_id));
		map->flags |= PERF_BUILD_ID_OFFSET_MAP_UNREADABLE;
		return false;
	}
	return !mapping_writably_mapped(file->f_mapping);
}

/*
 * Read the build-IDs of the files perf_bido_find_vmas() kept, from the
 * page cache, and drop their references.  The task's table keeps no
 * build-IDs: every record reads those of its maps.
 *
 * Context: task context, no locks held.
 */
void perf_bido_read_build_ids(struct perf_bido_resolve *res)
{
	unsigned int i;

	for (i = 0; i < res->nr_maps; i++) {
		struct file *file = res->files[i];

		if (!file)
			continue;
		res->parsed++;
		if (!perf_bido_build_id(file, &res->maps[i]))
			res->unstable = true;
		res->files[i] = NULL;
		fput(file);
	}
}
