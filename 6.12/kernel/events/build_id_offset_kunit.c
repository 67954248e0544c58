// SPDX-License-Identifier: GPL-2.0
/*
 * KUnit tests for PERF_SAMPLE_BUILD_ID_OFFSET (build_id_offset.c): the
 * parts that user space cannot reach or cannot observe.
 *
 * There is no PMU under emulation, so no branch stack either: the tests
 * hand made-up branch stacks to the stash directly.  The resolver runs on
 * the test thread's own mm, which kunit_vm_mmap() creates; the test maps
 * anonymous memory, a shmem file holding a small ELF image with a GNU
 * build-ID note (at two file offsets), and a special mapping named like
 * the vDSO, and resolves addresses in and around them.
 *
 * Cases:
 *   bido_layout		UAPI sizes and offsets, the attr bit positions
 *   bido_check_attr	which attribute combinations are refused
 *   bido_sort_addrs	sorting, duplicates, zero and kernel addresses
 *   bido_stash_*	the stash of precise IPs and branch addresses: kept,
 *			after the record, without a stash, overflow, a stale
 *			entry
 *   bido_table		the VMA table from IP, callchain and branch
 *			addresses: order, ranges, pgoff, flags, build-IDs,
 *			every reserved and padding byte zero, executable
 *			mappings only
 *   bido_table_truncated the bound on maps[]
 *   bido_build_id_now	the build-ID as the file is now, also after it is
 *			rewritten in place
 *   bido_no_build_id	a file that is no ELF: flagged as such
 *   bido_page_cache_only only the page cache is read: a file whose pages
 *			are not there is unreadable for now, not "no
 *			build-ID", whatever read() would do
 *   bido_table_pick	which maps of a record the table keeps: the five
 *			that hold the most of its addresses, the first of
 *			equals, in the order of start
 *   bido_reuse_table	what a later sample may reuse: coverage of the
 *			kept ranges only, each exactly a map of the
 *			record's (of a real record of four maps, and of a
 *			made-up one of seven), mm_lock_seq moving on a
 *			change; the kept maps later addresses fell in,
 *			carried into the next record while nothing changed
 *   bido_table_room	the table is sized to the maps it keeps: one in 64
 *			bytes, two or three in 96, four or five in 128,
 *			never more
 *
 * Not covered here: the sampling hook itself, which needs a perf event in
 * an interrupt, and the emission of the record into ring buffers, which
 * the user-space selftest checks end to end.
 */

#include <kunit/test.h>
#include <linux/elf.h>
#include <linux/file.h>
#include <linux/fs.h>
#include <linux/mm.h>
#include <linux/mman.h>
#include <linux/overflow.h>
#include <linux/perf_event.h>
#include <linux/sched/mm.h>
#include <linux/shmem_fs.h>
#include <linux/slab.h>

#include "build_id_offset.h"

/* Address layout of the test mm, in pages from BIDO_BASE */
#define BIDO_BASE	0x50000000UL
#define BIDO_P		PAGE_SIZE
#define BIDO_ANON	(BIDO_BASE)		/* 2 pages, anonymous */
#define BIDO_FILE0	(BIDO_BASE + 4 * BIDO_P)	/* 1 page, file offset 0 */
#define BIDO_FILE2	(BIDO_BASE + 5 * BIDO_P)	/* 2 pages, file offset 2 pages */
#define BIDO_VDSO	(BIDO_BASE + 8 * BIDO_P)	/* 1 page, "[vdso]" */
#define BIDO_DATA	(BIDO_BASE + 10 * BIDO_P)	/* 1 page, file, not executable */
#define BIDO_FILE_SIZE	(4 * BIDO_P)

#define BIDO_KERNEL_ADDR	0xffffffff81000000UL

/* Note type of a GNU build-ID; the kernel headers do not name it */
#define BIDO_NT_GNU_BUILD_ID	3

/* The smallest ELF file with a GNU build-ID note that lib/buildid reads */
struct bido_elf {
	struct elf64_hdr	ehdr;
	struct elf64_phdr	phdr;
	struct elf64_note	nhdr;
	char			name[4];
	u8			desc[BUILD_ID_SIZE_MAX];
};

static const struct vm_special_mapping bido_vdso_mapping = {
	.name = "[vdso]",
};

KUNIT_DEFINE_ACTION_WRAPPER(bido_fput, fput, struct file *);

static void bido_fill_id(u8 *id, u8 seed)
{
	int i;

	for (i = 0; i < BUILD_ID_SIZE_MAX; i++)
		id[i] = seed + i;
}

static void bido_elf_init(struct bido_elf *elf, u8 seed)
{
	memset(elf, 0, sizeof(*elf));
	memcpy(elf->ehdr.e_ident, ELFMAG, SELFMAG);
	elf->ehdr.e_ident[EI_CLASS] = ELFCLASS64;
	elf->ehdr.e_ident[EI_DATA] = ELFDATA2LSB;
	elf->ehdr.e_ident[EI_VERSION] = EV_CURRENT;
	elf->ehdr.e_type = ET_DYN;
	elf->ehdr.e_machine = EM_X86_64;
	elf->ehdr.e_version = EV_CURRENT;
	elf->ehdr.e_phoff = offsetof(struct bido_elf, phdr);
	elf->ehdr.e_ehsize = sizeof(elf->ehdr);
	elf->ehdr.e_phentsize = sizeof(elf->phdr);
	elf->ehdr.e_phnum = 1;

	elf->phdr.p_type = PT_NOTE;
	elf->phdr.p_offset = offsetof(struct bido_elf, nhdr);
	elf->phdr.p_filesz = sizeof(elf->nhdr) + sizeof(elf->name) +
			     sizeof(elf->desc);
	elf->phdr.p_align = 4;

	elf->nhdr.n_namesz = sizeof(elf->name);
	elf->nhdr.n_descsz = sizeof(elf->desc);
	elf->nhdr.n_type = BIDO_NT_GNU_BUILD_ID;
	memcpy(elf->name, "GNU", sizeof(elf->name));
	bido_fill_id(elf->desc, seed);
}

/* A shmem file of BIDO_FILE_SIZE bytes that starts with @len bytes of @buf */
static struct file *bido_file(struct kunit *test, const void *buf, size_t len)
{
	struct file *file;
	loff_t pos = 0;

	file = shmem_file_setup("perf_bido_kunit", BIDO_FILE_SIZE, VM_NORESERVE);
	KUNIT_ASSERT_FALSE(test, IS_ERR(file));
	KUNIT_ASSERT_EQ(test, 0, kunit_add_action_or_reset(test, bido_fput, file));
	if (len)
		KUNIT_ASSERT_EQ(test, (ssize_t)len,
				kernel_write(file, buf, len, &pos));
	return file;
}

static struct file *bido_elf_file(struct kunit *test, u8 seed)
{
	struct bido_elf elf;

	bido_elf_init(&elf, seed);
	return bido_file(test, &elf, sizeof(elf));
}

static bool bido_all_zero(const void *p, size_t len)
{
	return !memchr_inv(p, 0, len);
}

static void bido_layout(struct kunit *test)
{
	struct perf_event_attr attr = {};
	u64 word;

	KUNIT_EXPECT_EQ(test, sizeof(struct perf_bido_map), 48);
	KUNIT_EXPECT_EQ(test, offsetof(struct perf_bido_map, pgoff), 16);
	KUNIT_EXPECT_EQ(test, offsetof(struct perf_bido_map, build_id_size), 24);
	KUNIT_EXPECT_EQ(test, offsetof(struct perf_bido_map, flags), 25);
	KUNIT_EXPECT_EQ(test, offsetof(struct perf_bido_map, __reserved), 26);
	KUNIT_EXPECT_EQ(test, offsetof(struct perf_bido_map, build_id), 28);

	/* The table: a 48-byte header and five 16-byte ranges, 128 bytes */
	KUNIT_EXPECT_EQ(test, sizeof(struct perf_bido_table_map), 16);
	KUNIT_EXPECT_EQ(test, sizeof(struct perf_bido_table), 48);
	KUNIT_EXPECT_EQ(test, PERF_BIDO_TABLE_MAPS, 5);
	KUNIT_EXPECT_EQ(test, PERF_BIDO_TABLE_BYTES, 128);
	KUNIT_EXPECT_LE(test, struct_size_t(struct perf_bido_table, maps,
					    PERF_BIDO_TABLE_MAPS),
			PERF_BIDO_TABLE_BYTES);

	KUNIT_EXPECT_EQ(test, sizeof(struct perf_bido_record), 32);
	KUNIT_EXPECT_EQ(test, offsetof(struct perf_bido_record, pid), 8);
	KUNIT_EXPECT_EQ(test, offsetof(struct perf_bido_record, cookie), 16);
	KUNIT_EXPECT_EQ(test, offsetof(struct perf_bido_record, nr), 24);
	KUNIT_EXPECT_EQ(test, offsetof(struct perf_bido_record, flags), 28);

	KUNIT_EXPECT_EQ(test, PERF_SAMPLE_BUILD_ID_OFFSET, 1U << 25);
	KUNIT_EXPECT_EQ(test, PERF_RECORD_BUILD_ID_OFFSET, 23);

	/*
	 * Upstream's positions: right after sigtrap (bit 37).  By the
	 * byte order the compiler uses: x86 has no CPU_LITTLE_ENDIAN option.
	 */
#ifdef __BIG_ENDIAN
	kunit_skip(test, "bit positions checked on little-endian only");
#endif
	attr.sigtrap = 1;
	memcpy(&word, (u8 *)&attr + offsetofend(struct perf_event_attr,
						read_format), sizeof(word));
	KUNIT_EXPECT_EQ(test, word, BIT_ULL(37));
	attr.sigtrap = 0;
	attr.defer_callchain = 1;
	attr.defer_output = 1;
	memcpy(&word, (u8 *)&attr + offsetofend(struct perf_event_attr,
						read_format), sizeof(word));
	KUNIT_EXPECT_EQ(test, word, BIT_ULL(38) | BIT_ULL(39));
}

static void bido_check_attr(struct kunit *test)
{
	struct perf_event_attr attr = {
		.sample_type = PERF_SAMPLE_IP | PERF_SAMPLE_BUILD_ID_OFFSET,
		.exclude_kernel = 1,
	};

	KUNIT_EXPECT_EQ(test, 0, perf_bido_check_attr(&attr));

	attr.exclude_user = 1;
	KUNIT_EXPECT_EQ(test, -EINVAL, perf_bido_check_attr(&attr));

	/* Without the sample bit exclude_user is none of our business */
	attr.sample_type = PERF_SAMPLE_IP;
	KUNIT_EXPECT_EQ(test, 0, perf_bido_check_attr(&attr));

	attr = (struct perf_event_attr){ .defer_output = 1, .mmap = 1 };
	KUNIT_EXPECT_EQ(test, 0, perf_bido_check_attr(&attr));
	attr.inherit = 1;
	KUNIT_EXPECT_EQ(test, 0, perf_bido_check_attr(&attr));
	/* A receiver that excludes user space would get user records */
	attr.exclude_user = 1;
	KUNIT_EXPECT_EQ(test, -EINVAL, perf_bido_check_attr(&attr));

	/* Deferred callchains are implemented: the bit is valid */
	attr = (struct perf_event_attr){ .defer_callchain = 1 };
	KUNIT_EXPECT_EQ(test, 0, perf_bido_check_attr(&attr));
}

static void bido_sort_addrs(struct kunit *test)
{
	unsigned long addrs[] = {
		0x5000, 0, 0x3000, 0x5000, TASK_SIZE, ULONG_MAX, 0x1000,
		0x3000, TASK_SIZE - 1, BIDO_KERNEL_ADDR,
	};
	unsigned long want[] = { 0x1000, 0x3000, 0x5000, TASK_SIZE - 1 };
	unsigned int n;

	n = perf_bido_sort_addrs(addrs, ARRAY_SIZE(addrs));
	KUNIT_ASSERT_EQ(test, n, ARRAY_SIZE(want));
	KUNIT_EXPECT_MEMEQ(test, addrs, want, sizeof(want));

	KUNIT_EXPECT_EQ(test, 0, perf_bido_sort_addrs(addrs, 0));
}

static struct perf_branch_stack *bido_branches(struct kunit *test,
					       unsigned int nr)
{
	struct perf_branch_stack *bs;

	bs = kunit_kzalloc(test, struct_size(bs, entries, nr), GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, bs);
	bs->nr = nr;
	return bs;
}

static struct perf_bido_stash *bido_stash(struct kunit *test,
					  struct perf_bido_task *bt)
{
	bt->stash = kunit_kzalloc(test, sizeof(*bt->stash), GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, bt->stash);
	return bt->stash;
}

/* Room for what perf_bido_take_stash() moves out */
static unsigned long *bido_stash_buf(struct kunit *test)
{
	unsigned long *buf;

	buf = kunit_kcalloc(test, PERF_BIDO_STASH_ENTRIES, sizeof(*buf),
			    GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, buf);
	return buf;
}

static void bido_stash_kept(struct kunit *test)
{
	struct perf_branch_stack *bs = bido_branches(test, 3);
	unsigned long *addrs = bido_stash_buf(test);
	unsigned long want[] = { 0x4000, 0x1000, 0x2000, 0x1000, 0x3000 };
	struct perf_bido_task bt = {};
	u32 flags = 0;

	bido_stash(test, &bt);
	bs->entries[0].from = 0x1000;
	bs->entries[0].to = 0x2000;
	/* Kernel and empty addresses are not kept */
	bs->entries[1].from = BIDO_KERNEL_ADDR;
	bs->entries[1].to = 0;
	bs->entries[2].from = 0x1000;
	bs->entries[2].to = 0x3000;

	/* A precise IP, then the branches; a kernel IP is not kept */
	perf_bido_stash_sample(&bt, 7, 0x4000, bs);
	perf_bido_stash_sample(&bt, 7, BIDO_KERNEL_ADDR, NULL);
	KUNIT_ASSERT_EQ(test, ARRAY_SIZE(want),
			perf_bido_take_stash(&bt, 7, addrs, &flags));
	KUNIT_EXPECT_MEMEQ(test, addrs, want, sizeof(want));
	KUNIT_EXPECT_EQ(test, flags, 0);
	KUNIT_EXPECT_EQ(test, bt.done, 7);
	KUNIT_EXPECT_EQ(test, local_read(&bt.stash->nr), 0);
}

static void bido_stash_after_record(struct kunit *test)
{
	struct perf_branch_stack *bs = bido_branches(test, 1);
	unsigned long *addrs = bido_stash_buf(test);
	struct perf_bido_task bt = {};
	u32 flags = 0;

	bido_stash(test, &bt);
	bs->entries[0].from = 0x1000;
	bs->entries[0].to = 0x2000;

	KUNIT_EXPECT_EQ(test, 0, perf_bido_take_stash(&bt, 7, addrs, &flags));
	/* A sample of entry 7 after its record: nothing kept */
	perf_bido_stash_sample(&bt, 7, 0, bs);
	KUNIT_EXPECT_EQ(test, local_read(&bt.stash->nr), 0);

	/* The next entry is kept again */
	perf_bido_stash_sample(&bt, 9, 0, bs);
	KUNIT_EXPECT_EQ(test, 2, perf_bido_take_stash(&bt, 9, addrs, &flags));
	KUNIT_EXPECT_EQ(test, flags, 0);
}

static void bido_stash_missing(struct kunit *test)
{
	struct perf_branch_stack *bs = bido_branches(test, 1);
	unsigned long *addrs = bido_stash_buf(test);
	struct perf_bido_task bt = {};
	u32 flags = 0;

	bs->entries[0].from = 0x1000;
	perf_bido_stash_sample(&bt, 7, 0, bs);
	KUNIT_EXPECT_EQ(test, bt.missed, 7);
	KUNIT_EXPECT_EQ(test, 0, perf_bido_take_stash(&bt, 7, addrs, &flags));
	KUNIT_EXPECT_EQ(test, flags, PERF_BUILD_ID_OFFSET_F_ADDRS_DROPPED);

	/* Another entry did not miss anything */
	flags = 0;
	KUNIT_EXPECT_EQ(test, 0, perf_bido_take_stash(&bt, 9, addrs, &flags));
	KUNIT_EXPECT_EQ(test, flags, 0);
}

static void bido_stash_overflow(struct kunit *test)
{
	unsigned int i, nr = PERF_BIDO_STASH_ENTRIES / 2 + 7;
	struct perf_branch_stack *bs = bido_branches(test, nr);
	unsigned long *addrs = bido_stash_buf(test);
	struct perf_bido_task bt = {};
	u32 flags = 0;

	bido_stash(test, &bt);
	for (i = 0; i < nr; i++) {
		bs->entries[i].from = 0x10000 + i;
		bs->entries[i].to = 0x20000 + i;
	}
	perf_bido_stash_sample(&bt, 7, 0, bs);
	KUNIT_EXPECT_EQ(test, PERF_BIDO_STASH_ENTRIES,
			perf_bido_take_stash(&bt, 7, addrs, &flags));
	KUNIT_EXPECT_EQ(test, flags, PERF_BUILD_ID_OFFSET_F_ADDRS_DROPPED);
	KUNIT_EXPECT_EQ(test, addrs[0], 0x10000);
	KUNIT_EXPECT_EQ(test, addrs[1], 0x20000);
}

static void bido_stash_stale(struct kunit *test)
{
	struct perf_branch_stack *bs = bido_branches(test, 1);
	unsigned long *addrs = bido_stash_buf(test);
	struct perf_bido_task bt = {};
	u32 flags = 0;

	bido_stash(test, &bt);
	bs->entries[0].from = 0x1000;
	/* Entry 7's work never ran; entry 9 adds to its leftovers */
	perf_bido_stash_sample(&bt, 7, 0, bs);
	perf_bido_stash_sample(&bt, 9, 0, bs);
	KUNIT_EXPECT_EQ(test, 0, perf_bido_take_stash(&bt, 9, addrs, &flags));
	KUNIT_EXPECT_EQ(test, flags, PERF_BUILD_ID_OFFSET_F_ADDRS_DROPPED);
	KUNIT_EXPECT_EQ(test, local_read(&bt.stash->nr), 0);
}

/* Map the test layout into the test thread's mm */
static void bido_map_layout(struct kunit *test, struct file *file)
{
	struct vm_area_struct *vma;
	struct mm_struct *mm;
	unsigned long addr;

	/* Code: JIT-like anonymous memory, a file at two offsets */
	addr = kunit_vm_mmap(test, NULL, BIDO_ANON, 2 * BIDO_P,
			     PROT_READ | PROT_WRITE | PROT_EXEC,
			     MAP_ANONYMOUS | MAP_PRIVATE | MAP_FIXED, 0);
	KUNIT_ASSERT_EQ(test, addr, BIDO_ANON);
	addr = kunit_vm_mmap(test, file, BIDO_FILE0, BIDO_P, PROT_READ | PROT_EXEC,
			     MAP_PRIVATE | MAP_FIXED, 0);
	KUNIT_ASSERT_EQ(test, addr, BIDO_FILE0);
	addr = kunit_vm_mmap(test, file, BIDO_FILE2, 2 * BIDO_P,
			     PROT_READ | PROT_EXEC, MAP_PRIVATE | MAP_FIXED,
			     2 * BIDO_P);
	KUNIT_ASSERT_EQ(test, addr, BIDO_FILE2);
	/* Data: described by no record, its file never read */
	addr = kunit_vm_mmap(test, file, BIDO_DATA, BIDO_P, PROT_READ,
			     MAP_PRIVATE | MAP_FIXED, 0);
	KUNIT_ASSERT_EQ(test, addr, BIDO_DATA);

	mm = current->mm;
	KUNIT_ASSERT_NOT_NULL(test, mm);
	mmap_write_lock(mm);
	vma = _install_special_mapping(mm, BIDO_VDSO, BIDO_P,
				       VM_READ | VM_EXEC | VM_MAYREAD |
				       VM_MAYEXEC, &bido_vdso_mapping);
	mmap_write_unlock(mm);
	KUNIT_ASSERT_FALSE(test, IS_ERR(vma));
}

/*
 * What the deferred work would collect for one entry: an IP and a
 * callchain (with the kinds of junk an unwind can end on), then the
 * branch addresses of two samples.
 */
static const unsigned long bido_addrs[] = {
	BIDO_FILE0 + 0x10,		/* user IP */
	BIDO_FILE2 + 0x20,		/* callchain */
	BIDO_FILE2 + BIDO_P + 0x30,
	BIDO_VDSO + 0x40,
	BIDO_ANON + 8,
	BIDO_KERNEL_ADDR,
	0,
	BIDO_BASE + 3 * BIDO_P,		/* branches: in a hole */
	BIDO_DATA + 0x50,		/* into data */
	BIDO_FILE0 + 0x10,		/* again */
	BIDO_ANON + BIDO_P + 16,
	BIDO_BASE + 20 * BIDO_P,		/* above every VMA */
};

static void bido_resolve(struct kunit *test, struct perf_bido_resolve *res,
			 unsigned int max_maps)
{
	size_t maps_size = max_maps * sizeof(*res->maps);

	res->addrs = kunit_kmalloc(test, sizeof(bido_addrs), GFP_KERNEL);
	res->maps = kunit_kmalloc(test, maps_size, GFP_KERNEL);
	res->files = kunit_kcalloc(test, max_maps, sizeof(*res->files),
				   GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, res->addrs);
	KUNIT_ASSERT_NOT_NULL(test, res->maps);
	KUNIT_ASSERT_NOT_NULL(test, res->files);

	/* Whatever is not written must not leak: start from 0xff */
	memset(res->maps, 0xff, maps_size);
	memcpy(res->addrs, bido_addrs, sizeof(bido_addrs));
	res->nr_addrs = perf_bido_sort_addrs(res->addrs, ARRAY_SIZE(bido_addrs));
	res->max_maps = max_maps;

	perf_bido_find_vmas(current->mm, res);
	perf_bido_read_build_ids(res);
}

static void bido_expect_map(struct kunit *test, const struct perf_bido_map *m,
			    unsigned long start, unsigned long end, u64 pgoff,
			    u8 flags, const u8 *id)
{
	KUNIT_EXPECT_EQ(test, m->start, start);
	KUNIT_EXPECT_EQ(test, m->end, end);
	KUNIT_EXPECT_EQ(test, m->pgoff, pgoff);
	KUNIT_EXPECT_EQ(test, m->flags, flags);
	KUNIT_EXPECT_EQ(test, m->__reserved, 0);
	if (id) {
		KUNIT_EXPECT_EQ(test, m->build_id_size, BUILD_ID_SIZE_MAX);
		KUNIT_EXPECT_MEMEQ(test, m->build_id, id, BUILD_ID_SIZE_MAX);
	} else {
		KUNIT_EXPECT_EQ(test, m->build_id_size, 0);
		KUNIT_EXPECT_TRUE(test, bido_all_zero(m->build_id,
						      sizeof(m->build_id)));
	}
}

static void bido_table(struct kunit *test)
{
	struct file *file = bido_elf_file(test, 0x40);
	struct perf_bido_resolve res = {};
	u8 id[BUILD_ID_SIZE_MAX];
	unsigned int i;

	bido_fill_id(id, 0x40);
	bido_map_layout(test, file);
	bido_resolve(test, &res, 8);

	/* Sorted, unique, user only; hole, data and above-all stay in */
	KUNIT_EXPECT_EQ(test, res.nr_addrs, 9);
	KUNIT_EXPECT_EQ(test, res.flags, 0);
	KUNIT_ASSERT_EQ(test, res.nr_maps, 4);

	bido_expect_map(test, &res.maps[0], BIDO_ANON, BIDO_ANON + 2 * BIDO_P, 0,
			PERF_BUILD_ID_OFFSET_MAP_ANON, NULL);
	bido_expect_map(test, &res.maps[1], BIDO_FILE0, BIDO_FILE0 + BIDO_P, 0,
			PERF_BUILD_ID_OFFSET_MAP_ANON_FILE, id);
	bido_expect_map(test, &res.maps[2], BIDO_FILE2, BIDO_FILE2 + 2 * BIDO_P,
			2 * BIDO_P, PERF_BUILD_ID_OFFSET_MAP_ANON_FILE, id);
	bido_expect_map(test, &res.maps[3], BIDO_VDSO, BIDO_VDSO + BIDO_P, 0,
			PERF_BUILD_ID_OFFSET_MAP_VDSO, NULL);

	/* Every file reference was dropped */
	for (i = 0; i < res.max_maps; i++)
		KUNIT_EXPECT_NULL(test, res.files[i]);
}

static void bido_table_truncated(struct kunit *test)
{
	struct file *file = bido_elf_file(test, 0x40);
	struct perf_bido_resolve res = {};

	bido_map_layout(test, file);
	bido_resolve(test, &res, 2);

	KUNIT_EXPECT_EQ(test, res.flags, PERF_BUILD_ID_OFFSET_F_TRUNCATED);
	KUNIT_ASSERT_EQ(test, res.nr_maps, 2);
	KUNIT_EXPECT_EQ(test, res.maps[0].start, BIDO_ANON);
	KUNIT_EXPECT_EQ(test, res.maps[1].start, BIDO_FILE0);
}

/*
 * Build-IDs come from the page cache, as the file is now: a note
 * rewritten in place gives the new build-ID at once (nothing is cached
 * across records but the task's own last record)
 */
static void bido_build_id_now(struct kunit *test)
{
	struct file *file = bido_elf_file(test, 0x10);
	struct perf_bido_map map = {};
	u8 id[BUILD_ID_SIZE_MAX];
	struct bido_elf elf;
	loff_t pos = 0;

	KUNIT_EXPECT_EQ(test, perf_bido_file_flags(file), PERF_BUILD_ID_OFFSET_MAP_ANON_FILE);

	KUNIT_EXPECT_TRUE(test, perf_bido_build_id(file, &map));
	bido_fill_id(id, 0x10);
	KUNIT_EXPECT_EQ(test, map.flags, 0);
	KUNIT_EXPECT_EQ(test, map.build_id_size, BUILD_ID_SIZE_MAX);
	KUNIT_EXPECT_MEMEQ(test, map.build_id, id, sizeof(id));

	bido_elf_init(&elf, 0x80);
	KUNIT_ASSERT_EQ(test, (ssize_t)sizeof(elf),
			kernel_write(file, &elf, sizeof(elf), &pos));
	memset(&map, 0, sizeof(map));
	KUNIT_EXPECT_TRUE(test, perf_bido_build_id(file, &map));
	bido_fill_id(id, 0x80);
	KUNIT_EXPECT_MEMEQ(test, map.build_id, id, sizeof(id));
}

static void bido_no_build_id(struct kunit *test)
{
	static const char text[] = "#!/bin/sh\necho not an ELF file\n";
	struct file *file = bido_file(test, text, sizeof(text));
	struct perf_bido_map map = {};

	KUNIT_EXPECT_TRUE(test, perf_bido_build_id(file, &map));
	KUNIT_EXPECT_EQ(test, map.flags, PERF_BUILD_ID_OFFSET_MAP_NO_BUILD_ID);
	KUNIT_EXPECT_EQ(test, map.build_id_size, 0);
	KUNIT_EXPECT_TRUE(test, bido_all_zero(map.build_id, sizeof(map.build_id)));
}

/* read() of the file fails as it does for O_DIRECT at the wrong alignment */
static ssize_t bido_einval_read_iter(struct kiocb *iocb, struct iov_iter *to)
{
	return -EINVAL;
}

static const struct file_operations bido_einval_fops = {
	.read_iter	= bido_einval_read_iter,
};

/*
 * Only the page cache is read: a note there is found without read(); a
 * file whose pages are not there is UNREADABLE for now, whatever read()
 * would do, and not taken for a file without a build-ID
 */
static void bido_page_cache_only(struct kunit *test)
{
	struct file *cached = bido_elf_file(test, 0x60);
	struct file *holes = bido_file(test, NULL, 0);
	struct perf_bido_map map = {};
	u8 id[BUILD_ID_SIZE_MAX];

	replace_fops(cached, &bido_einval_fops);
	KUNIT_EXPECT_TRUE(test, perf_bido_build_id(cached, &map));
	bido_fill_id(id, 0x60);
	KUNIT_EXPECT_EQ(test, map.flags, 0);
	KUNIT_EXPECT_EQ(test, map.build_id_size, BUILD_ID_SIZE_MAX);
	KUNIT_EXPECT_MEMEQ(test, map.build_id, id, sizeof(id));

	/* A size and no page: what an evicted file looks like */
	KUNIT_ASSERT_EQ(test, 0, vfs_truncate(&holes->f_path, 4 * PAGE_SIZE));
	replace_fops(holes, &bido_einval_fops);
	memset(&map, 0, sizeof(map));
	KUNIT_EXPECT_FALSE(test, perf_bido_build_id(holes, &map));
	KUNIT_EXPECT_EQ(test, map.flags, PERF_BUILD_ID_OFFSET_MAP_UNREADABLE);
	KUNIT_EXPECT_EQ(test, map.build_id_size, 0);
	KUNIT_EXPECT_TRUE(test, bido_all_zero(map.build_id, sizeof(map.build_id)));
}

/* Each map of @res in @a, in order, sorted by start and 1 page long */
static void bido_fake_maps(struct perf_bido_resolve *res,
			   const unsigned long *a, unsigned int nr)
{
	unsigned int i;

	for (i = 0; i < nr; i++) {
		res->maps[i] = (struct perf_bido_map){
			.start	= a[i],
			.end	= a[i] + BIDO_P,
			.flags	= PERF_BUILD_ID_OFFSET_MAP_ANON_FILE,
		};
		bido_fill_id(res->maps[i].build_id, i);
		res->maps[i].build_id_size = BUILD_ID_SIZE_MAX;
	}
	res->nr_maps = nr;
}

/* The maps of bido_table_pick() and bido_reuse_table(): 1 page each */
static const unsigned long bido_pick_start[] = {
	BIDO_BASE, BIDO_BASE + 2 * BIDO_P, BIDO_BASE + 8 * BIDO_P,
	BIDO_BASE + 16 * BIDO_P, BIDO_BASE + 20 * BIDO_P,
	BIDO_BASE + 24 * BIDO_P, BIDO_BASE + 30 * BIDO_P,
};

/*
 * Sorted: 1 in map 0, 5 in map 1, 2 in map 2, 3 in map 3, none in map 4,
 * 4 in map 5, 1 in map 6, 3 in none
 */
static const unsigned long bido_pick_addrs[] = {
	BIDO_BASE - 8, BIDO_BASE + 8,
	BIDO_BASE + 2 * BIDO_P, BIDO_BASE + 2 * BIDO_P + 1,
	BIDO_BASE + 2 * BIDO_P + 2, BIDO_BASE + 2 * BIDO_P + 3,
	BIDO_BASE + 3 * BIDO_P - 1, BIDO_BASE + 3 * BIDO_P,
	BIDO_BASE + 8 * BIDO_P, BIDO_BASE + 9 * BIDO_P - 1,
	BIDO_BASE + 16 * BIDO_P, BIDO_BASE + 16 * BIDO_P + 64,
	BIDO_BASE + 16 * BIDO_P + 128,
	BIDO_BASE + 24 * BIDO_P, BIDO_BASE + 24 * BIDO_P + 1,
	BIDO_BASE + 24 * BIDO_P + 2, BIDO_BASE + 25 * BIDO_P - 1,
	BIDO_BASE + 25 * BIDO_P,
	BIDO_BASE + 30 * BIDO_P + 16,
};

/*
 * The table keeps the five maps that hold the most addresses, the first
 * of equals, in the order of start
 */
static void bido_table_pick(struct kunit *test)
{
	struct perf_bido_resolve res = {
		.addrs = (unsigned long *)bido_pick_addrs,
		.nr_addrs = ARRAY_SIZE(bido_pick_addrs),
	};
	unsigned int pick[PERF_BIDO_TABLE_MAPS];

	res.maps = kunit_kcalloc(test, ARRAY_SIZE(bido_pick_start),
				 sizeof(*res.maps), GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, res.maps);
	bido_fake_maps(&res, bido_pick_start, ARRAY_SIZE(bido_pick_start));

	/*
	 * Map 1 holds the most, then 5, 3, 2, and 0 and 6 one each: 0, the
	 * first of those; 4 holds none
	 */
	KUNIT_EXPECT_EQ(test, perf_bido_table_pick(&res, pick), 5);
	KUNIT_EXPECT_EQ(test, pick[0], 0);
	KUNIT_EXPECT_EQ(test, pick[1], 1);
	KUNIT_EXPECT_EQ(test, pick[2], 2);
	KUNIT_EXPECT_EQ(test, pick[3], 3);
	KUNIT_EXPECT_EQ(test, pick[4], 5);

	/* Map 0 loses its one address: map 6, with one, takes its place */
	res.addrs = (unsigned long *)bido_pick_addrs + 2;
	res.nr_addrs = ARRAY_SIZE(bido_pick_addrs) - 2;
	KUNIT_EXPECT_EQ(test, perf_bido_table_pick(&res, pick), 5);
	KUNIT_EXPECT_EQ(test, pick[0], 1);
	KUNIT_EXPECT_EQ(test, pick[1], 2);
	KUNIT_EXPECT_EQ(test, pick[2], 3);
	KUNIT_EXPECT_EQ(test, pick[3], 5);
	KUNIT_EXPECT_EQ(test, pick[4], 6);

	/* Equals: the first; a map without addresses still fills the room */
	res.addrs = (unsigned long *)bido_pick_addrs;
	res.nr_addrs = 2;
	KUNIT_EXPECT_EQ(test, perf_bido_table_pick(&res, pick), 5);
	KUNIT_EXPECT_EQ(test, pick[0], 0);
	KUNIT_EXPECT_EQ(test, pick[1], 1);
	KUNIT_EXPECT_EQ(test, pick[2], 2);
	KUNIT_EXPECT_EQ(test, pick[3], 3);
	KUNIT_EXPECT_EQ(test, pick[4], 4);
	/* Fewer maps than room: all of them */
	res.nr_maps = 3;
	KUNIT_EXPECT_EQ(test, perf_bido_table_pick(&res, pick), 3);
	KUNIT_EXPECT_EQ(test, pick[0], 0);
	KUNIT_EXPECT_EQ(test, pick[1], 1);
	KUNIT_EXPECT_EQ(test, pick[2], 2);
	res.nr_addrs = 0;
	res.nr_maps = 1;
	KUNIT_EXPECT_EQ(test, perf_bido_table_pick(&res, pick), 1);
	KUNIT_EXPECT_EQ(test, pick[0], 0);
	res.nr_maps = 0;
	KUNIT_EXPECT_EQ(test, perf_bido_table_pick(&res, pick), 0);
}

/* A table as the deferred work keeps it, from a resolved record */
static void bido_table_from(struct kunit *test, struct perf_bido_table *tab,
			    const struct perf_bido_resolve *res)
{
	unsigned int pick[PERF_BIDO_TABLE_MAPS], nr;

	memset(tab, 0, struct_size(tab, maps, PERF_BIDO_TABLE_MAPS));
	tab->room = PERF_BIDO_TABLE_MAPS;
	tab->cookie = 1;
	tab->mm_seq = res->mm_seq;
	nr = perf_bido_table_pick(res, pick);
	perf_bido_table_fill(tab, res, pick, nr);
	KUNIT_EXPECT_EQ(test, tab->nr, nr);
}

/*
 * Does @tab cover every byte of the maps of @res it keeps (@kept, a mask
 * of their indexes), and nothing else: not the byte before or after any
 * map of @res (unless another kept map starts there)?
 */
static void bido_expect_covers(struct kunit *test,
			       struct perf_bido_table *tab,
			       const struct perf_bido_resolve *res,
			       unsigned long kept)
{
	unsigned int i;

	for (i = 0; i < res->nr_maps; i++) {
		const struct perf_bido_map *m = &res->maps[i];
		bool in = kept & BIT(i);
		bool next_in = i + 1 < res->nr_maps && (kept & BIT(i + 1)) &&
			       res->maps[i + 1].start == m->end;
		bool prev_in = i > 0 && (kept & BIT(i - 1)) &&
			       res->maps[i - 1].end == m->start;

		KUNIT_EXPECT_EQ_MSG(test, perf_bido_table_covers(tab, m->start),
				    in, "map %u", i);
		KUNIT_EXPECT_EQ_MSG(test, perf_bido_table_covers(tab, m->start +
					(m->end - m->start) / 2), in, "map %u", i);
		KUNIT_EXPECT_EQ_MSG(test, perf_bido_table_covers(tab, m->end - 1),
				    in, "map %u", i);
		KUNIT_EXPECT_EQ_MSG(test, perf_bido_table_covers(tab, m->end),
				    next_in, "map %u", i);
		KUNIT_EXPECT_EQ_MSG(test, perf_bido_table_covers(tab, m->start - 1),
				    prev_in, "map %u", i);
	}
	KUNIT_EXPECT_FALSE(test, perf_bido_table_covers(tab, BIDO_KERNEL_ADDR));
	KUNIT_EXPECT_FALSE(test, perf_bido_table_covers(tab, 0));
	KUNIT_EXPECT_FALSE(test, perf_bido_table_covers(tab, ULONG_MAX));
}

static void bido_reuse_table(struct kunit *test)
{
	struct file *file = bido_elf_file(test, 0x40);
	struct perf_bido_resolve res = {}, fake = {
		.addrs = (unsigned long *)bido_pick_addrs,
		.nr_addrs = ARRAY_SIZE(bido_pick_addrs),
	};
	unsigned long carried[PERF_BIDO_TABLE_MAPS];
	struct perf_bido_table *tab;
	unsigned long __maybe_unused addr;
	unsigned int __maybe_unused seq;
	unsigned int i;

	if (!IS_ENABLED(CONFIG_PER_VMA_LOCK))
		kunit_skip(test, "no mm_lock_seq without CONFIG_PER_VMA_LOCK");

	tab = kunit_kzalloc(test, struct_size(tab, maps, PERF_BIDO_TABLE_MAPS),
			    GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, tab);
	bido_map_layout(test, file);
	bido_resolve(test, &res, 16);
	KUNIT_ASSERT_TRUE(test, res.looked_up);
	/* Read under mmap_lock: no writer, so even */
	KUNIT_EXPECT_EQ(test, res.mm_seq % 2, 0);
	KUNIT_ASSERT_EQ(test, res.nr_maps, 4);

	/*
	 * The anonymous map, the file at offsets 0 and 2 pages, the vDSO: a
	 * record of four maps keeps the four ranges, exactly
	 */
	bido_table_from(test, tab, &res);
	KUNIT_ASSERT_EQ(test, tab->nr, 4);
	for (i = 0; i < tab->nr; i++) {
		KUNIT_EXPECT_EQ(test, tab->maps[i].start, res.maps[i].start);
		KUNIT_EXPECT_EQ(test, tab->maps[i].end, res.maps[i].end);
	}
	KUNIT_EXPECT_EQ(test, tab->maps[0].start, BIDO_ANON);
	KUNIT_EXPECT_EQ(test, tab->maps[0].end, BIDO_ANON + 2 * BIDO_P);
	KUNIT_EXPECT_EQ(test, tab->maps[2].start, BIDO_FILE2);
	KUNIT_EXPECT_EQ(test, tab->maps[2].end, BIDO_FILE2 + 2 * BIDO_P);

	/*
	 * Every byte of the kept maps, nothing around them (the file at
	 * offset 0 ends where the one at 2 pages starts), nothing else
	 */
	bido_expect_covers(test, tab, &res, GENMASK(3, 0));
	KUNIT_EXPECT_FALSE(test, perf_bido_table_covers(tab, BIDO_ANON - 1));
	KUNIT_EXPECT_FALSE(test, perf_bido_table_covers(tab, BIDO_BASE + 3 * BIDO_P));
	KUNIT_EXPECT_FALSE(test, perf_bido_table_covers(tab, BIDO_DATA));

	/*
	 * A record of seven maps: the five picked ones (0, 1, 2, 3 and 5,
	 * see bido_table_pick()) are covered, maps 4 and 6 are not
	 */
	fake.maps = kunit_kcalloc(test, ARRAY_SIZE(bido_pick_start),
				  sizeof(*fake.maps), GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, fake.maps);
	bido_fake_maps(&fake, bido_pick_start, ARRAY_SIZE(bido_pick_start));
	bido_table_from(test, tab, &fake);
	KUNIT_ASSERT_EQ(test, tab->nr, PERF_BIDO_TABLE_MAPS);
	bido_expect_covers(test, tab, &fake, BIT(0) | BIT(1) | BIT(2) |
			   BIT(3) | BIT(5));
	/* Kept in the order of start */
	for (i = 1; i < tab->nr; i++)
		KUNIT_EXPECT_LT(test, tab->maps[i - 1].end, tab->maps[i].start);

	/* A table with fewer entries than room covers only those */
	tab->nr = 2;
	bido_expect_covers(test, tab, &fake, BIT(0) | BIT(1));
	tab->nr = 0;
	bido_expect_covers(test, tab, &fake, 0);

	/*
	 * The next record gets one address of each kept map that a later
	 * address fell in, and of no other
	 */
	bido_table_from(test, tab, &res);
	tab->mm = current->mm;
	tab->exec_id = current->self_exec_id;
	KUNIT_EXPECT_EQ(test, tab->used, 0);
	KUNIT_EXPECT_EQ(test, perf_bido_table_carried(tab, carried), 0);
	KUNIT_EXPECT_TRUE(test, perf_bido_table_covers(tab, res.maps[3].end - 1));
	KUNIT_EXPECT_TRUE(test, perf_bido_table_covers(tab, res.maps[1].start + 1));
	KUNIT_EXPECT_TRUE(test, perf_bido_table_covers(tab, res.maps[1].start));
	KUNIT_EXPECT_FALSE(test, perf_bido_table_covers(tab, BIDO_DATA));
	KUNIT_EXPECT_EQ(test, tab->used, BIT(1) | BIT(3));
	KUNIT_ASSERT_EQ(test, perf_bido_table_carried(tab, carried), 2);
	KUNIT_EXPECT_EQ(test, carried[0], res.maps[1].start);
	KUNIT_EXPECT_EQ(test, carried[1], res.maps[3].start);
	/* Not from a table of another address space */
	tab->mm = NULL;
	KUNIT_EXPECT_EQ(test, perf_bido_table_carried(tab, carried), 0);
	tab->mm = current->mm;

#ifdef CONFIG_PER_VMA_LOCK
	/* Any change to the address space moves the count */
	seq = raw_read_seqcount(&current->mm->mm_lock_seq);
	addr = kunit_vm_mmap(test, NULL, BIDO_BASE + 12 * BIDO_P, BIDO_P,
			     PROT_READ, MAP_ANONYMOUS | MAP_PRIVATE | MAP_FIXED, 0);
	KUNIT_ASSERT_EQ(test, addr, BIDO_BASE + 12 * BIDO_P);
	KUNIT_EXPECT_NE(test, raw_read_seqcount(&current->mm->mm_lock_seq), seq);
	KUNIT_EXPECT_EQ(test, raw_read_seqcount(&current->mm->mm_lock_seq) % 2, 0);
	/* Nor once the address space changed */
	KUNIT_EXPECT_EQ(test, perf_bido_table_carried(tab, carried), 0);
#endif
}

static void bido_table_room(struct kunit *test)
{
	struct perf_bido_task *bt;
	struct perf_bido_table *tab;

	bt = kunit_kzalloc(test, sizeof(*bt), GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, bt);

	/* The header and five ranges fill the 128-byte bucket exactly */
	KUNIT_EXPECT_EQ(test, struct_size(tab, maps, 5), 128);
	KUNIT_EXPECT_EQ(test, struct_size(tab, maps, 4), 112);
	KUNIT_EXPECT_EQ(test, struct_size(tab, maps, 3), 96);
	KUNIT_EXPECT_EQ(test, struct_size(tab, maps, 1), 64);

	tab = perf_bido_table_room(bt, 1);
	KUNIT_ASSERT_NOT_NULL(test, tab);
	KUNIT_EXPECT_PTR_EQ(test, bt->table, tab);
	KUNIT_EXPECT_EQ(test, tab->room, 1);
	KUNIT_EXPECT_LE(test, ksize(tab), 64);
	KUNIT_EXPECT_EQ(test, tab->cookie, 0);

	/* Room enough: the same table */
	KUNIT_EXPECT_PTR_EQ(test, perf_bido_table_room(bt, tab->room), tab);

	/* Two take the 96-byte bucket, which holds three */
	tab = perf_bido_table_room(bt, 2);
	KUNIT_ASSERT_NOT_NULL(test, tab);
	KUNIT_EXPECT_PTR_EQ(test, bt->table, tab);
	KUNIT_EXPECT_EQ(test, tab->room, 3);
	KUNIT_EXPECT_LE(test, ksize(tab), 96);
	KUNIT_EXPECT_PTR_EQ(test, perf_bido_table_room(bt, 3), tab);
	KUNIT_EXPECT_PTR_EQ(test, perf_bido_table_room(bt, 1), tab);

	/* Four take 128 bytes, which hold five */
	tab = perf_bido_table_room(bt, 4);
	KUNIT_ASSERT_NOT_NULL(test, tab);
	KUNIT_EXPECT_PTR_EQ(test, bt->table, tab);
	KUNIT_EXPECT_EQ(test, tab->room, PERF_BIDO_TABLE_MAPS);
	KUNIT_EXPECT_EQ(test, ksize(tab), PERF_BIDO_TABLE_BYTES);
	KUNIT_EXPECT_EQ(test, tab->cookie, 0);
	KUNIT_EXPECT_PTR_EQ(test, perf_bido_table_room(bt, 5), tab);
	KUNIT_EXPECT_PTR_EQ(test, perf_bido_table_room(bt, 1), tab);

	/* Never more than PERF_BIDO_TABLE_MAPS */
	KUNIT_EXPECT_NULL(test, perf_bido_table_room(bt, PERF_BIDO_TABLE_MAPS + 1));
	KUNIT_EXPECT_PTR_EQ(test, bt->table, tab);
	kfree(bt->table);
}

static struct kunit_case build_id_offset_test_cases[] = {
	KUNIT_CASE(bido_layout),
	KUNIT_CASE(bido_check_attr),
	KUNIT_CASE(bido_sort_addrs),
	KUNIT_CASE(bido_stash_kept),
	KUNIT_CASE(bido_stash_after_record),
	KUNIT_CASE(bido_stash_missing),
	KUNIT_CASE(bido_stash_overflow),
	KUNIT_CASE(bido_stash_stale),
	KUNIT_CASE(bido_table),
	KUNIT_CASE(bido_table_truncated),
	KUNIT_CASE(bido_build_id_now),
	KUNIT_CASE(bido_no_build_id),
	KUNIT_CASE(bido_page_cache_only),
	KUNIT_CASE(bido_table_pick),
	KUNIT_CASE(bido_reuse_table),
	KUNIT_CASE(bido_table_room),
	{}
};

static struct kunit_suite build_id_offset_test_suite = {
	.name = "perf_build_id_offset",
	.test_cases = build_id_offset_test_cases,
};

kunit_test_suite(build_id_offset_test_suite);
