// SPDX-License-Identifier: GPL-2.0
/*
 * PERF_SAMPLE_BUILD_ID_OFFSET on a corpus of ELF files, made up at run
 * time; build_id_offset.c has the end-to-end checks against
 * /proc/PID/maps.
 *
 * malformed_elf: files that the test writes to /tmp, each malformed in one
 *   way (truncated, more program headers than the kernel's parser reads,
 *   wrapping or negative offsets, oversized notes, empty, truncated after
 *   mmap()) or valid (ELF64, ELF32), are mapped executable and put into
 *   the user call chain of cpu-clock samples with made-up frames.  The
 *   record must give every mapping exactly, with the file's build-ID where
 *   the kernel can read one and none, with the flag that says why, where
 *   it cannot.  On a noexec /tmp they are mapped for reading only, and no
 *   record may describe them.
 */
#define _GNU_SOURCE
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <linux/perf_event.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include "../kselftest_harness.h"
#include "build_id_offset_common.h"

/* Emulated machines with debug kernels are slow */
#undef TEST_TIMEOUT_DEFAULT
#define TEST_TIMEOUT_DEFAULT 180

/* ---- ELF32, beside build_id_offset_common.c's ELF64 ---- */

/* The same as a 32-bit (i386) shared object */
static void elf32_image(uint8_t *img, size_t size, const uint8_t *bid)
{
	Elf32_Ehdr *eh = (void *)img;
	Elf32_Phdr *ph = (void *)(img + sizeof(*eh));

	memcpy(eh->e_ident, ELFMAG, SELFMAG);
	eh->e_ident[EI_CLASS] = ELFCLASS32;
	eh->e_ident[EI_DATA] = ELFDATA2LSB;
	eh->e_ident[EI_VERSION] = EV_CURRENT;
	eh->e_type = ET_DYN;
	eh->e_machine = EM_386;
	eh->e_version = EV_CURRENT;
	eh->e_phoff = sizeof(*eh);
	eh->e_ehsize = sizeof(*eh);
	eh->e_phentsize = sizeof(*ph);
	eh->e_phnum = 2;
	ph[0] = (Elf32_Phdr){
		.p_type = PT_LOAD, .p_flags = PF_R | PF_X,
		.p_filesz = size, .p_memsz = size, .p_align = PG,
	};
	ph[1] = (Elf32_Phdr){
		.p_type = PT_NOTE, .p_flags = PF_R, .p_offset = NOTE_OFF,
		.p_vaddr = NOTE_OFF, .p_filesz = sizeof(Elf32_Nhdr) + 4 +
		MAX_BUILD_ID, .p_align = 4,
	};
	ph[1].p_memsz = ph[1].p_filesz;
	put_note(img + NOTE_OFF, 4, MAX_BUILD_ID, bid);
}

/* ---- malformed_elf ---- */

enum corrupt {
	C_VALID64, C_VALID32, C_TRUNC_EHDR, C_TRUNC_PHDR, C_TRUNC_NOTE,
	C_PHNUM_OVER, C_PHNUM_XNUM, C_PHOFF_WRAP, C_PHOFF_NEG, C_PHOFF_EOF,
	C_DESCSZ_WRAP, C_DESCSZ_BIG, C_NAMESZ_WRAP, C_NOTE_EOF,
	C_NOTE_FILESZ_WRAP, C_EMPTY, C_NOT_ELF, C_ET_REL, C_TRUNC_MAPPED,
	C_TRUNC_MAPPED_TAIL,
};

/*
 * want_bid: the record carries the file's build-ID; else none, with
 * NO_BUILD_ID or UNREADABLE.  @how says what the kernel's parser
 * (lib/buildid.c, build_id_parse_file()) makes of the file.  Which of the
 * two flags is the kernel's choice: the parser turns a read that ends
 * early (the file is shorter than a header or offset says) into -EIO,
 * which the kernel reports as UNREADABLE, like an I/O error, and does not
 * cache; the test prints which flag each file got.
 */
static const struct corpus_case {
	const char *name;
	enum corrupt kind;
	bool want_bid;
	uint64_t map_off;	/* file offset of the mapping */
	const char *how;
} corpus[] = {
	{ "valid64", C_VALID64, true, 0, "the control" },
	{ "valid32", C_VALID32, true, PG, "ELFCLASS32: read as such" },
	{ "truncated_ehdr", C_TRUNC_EHDR, false, 0,
	  "40 bytes: the magic and e_type pass, Elf64_Ehdr is a short read" },
	{ "truncated_phdr", C_TRUNC_PHDR, false, PG,
	  "ends inside the PT_NOTE program header" },
	{ "truncated_note", C_TRUNC_NOTE, false, 0,
	  "ends inside the build-ID descriptor" },
	{ "phnum_over_limit", C_PHNUM_OVER, false, PG,
	  "e_phnum 300, the note in the last one: the parser reads 256" },
	{ "phnum_xnum_note_first", C_PHNUM_XNUM, true, 0,
	  "e_phnum 0xffff (PN_XNUM), the note first: found before the limit" },
	{ "phoff_wrap", C_PHOFF_WRAP, false, 0,
	  "e_phoff U64_MAX - 8: phoff + phnum * size wraps" },
	{ "phoff_negative", C_PHOFF_NEG, false, PG,
	  "e_phoff 1 << 63: a negative file position" },
	{ "phoff_past_eof", C_PHOFF_EOF, false, 0, "e_phoff 1 GiB" },
	{ "descsz_wrap", C_DESCSZ_WRAP, false, PG,
	  "n_descsz 0xfffffff0: the note end wraps" },
	{ "descsz_oversized", C_DESCSZ_BIG, false, 0,
	  "n_descsz 64, inside p_filesz: above the 20-byte maximum" },
	{ "namesz_wrap", C_NAMESZ_WRAP, false, 0,
	  "n_namesz and n_descsz 0xfffffffe: align to 0 in 32 bits" },
	{ "note_past_eof", C_NOTE_EOF, false, PG, "p_offset 1 MiB" },
	{ "note_filesz_wrap", C_NOTE_FILESZ_WRAP, false, 0,
	  "p_filesz 0xffffffff: the note end wraps" },
	{ "empty", C_EMPTY, false, PG, "0 bytes" },
	{ "not_elf", C_NOT_ELF, false, 0, "random bytes" },
	{ "et_rel", C_ET_REL, false, PG,
	  "ET_REL: only executables and shared objects are read" },
	{ "truncated_after_mmap", C_TRUNC_MAPPED, false, PG,
	  "ftruncate(0) after mmap(): the mapping outlives the bytes" },
	{ "truncated_after_mmap_tail", C_TRUNC_MAPPED_TAIL, true, PG,
	  "ftruncate(4096) after mmap(): the note page stays" },
};

#define CORPUS_N	(ARRAY_SIZE(corpus))
#define IMG_SIZE	(5 * PG)

/* Write case @c to @path; returns the fd, and the file's build-ID */
static int corpus_write(const struct corpus_case *c, const char *path,
			uint8_t *img, uint8_t *bid, size_t *len)
{
	Elf64_Ehdr *eh = (void *)img;
	Elf64_Phdr *ph = (void *)(img + sizeof(*eh));
	Elf64_Nhdr *nh = (void *)(img + NOTE_OFF);
	int i;

	memset(img, 0, IMG_SIZE);
	*len = 3 * PG;
	elf64_image(img, *len, bid);

	switch (c->kind) {
	case C_VALID64:
	case C_TRUNC_MAPPED:
	case C_TRUNC_MAPPED_TAIL:
		break;
	case C_VALID32:
		memset(img, 0, IMG_SIZE);
		elf32_image(img, *len, bid);
		break;
	case C_TRUNC_EHDR:
		*len = 40;
		break;
	case C_TRUNC_PHDR:
		*len = sizeof(*eh) + sizeof(*ph) + 20;
		break;
	case C_TRUNC_NOTE:
		*len = DESC_OFF + 10;
		break;
	case C_PHNUM_OVER:
		/* 299 PT_NULL headers, then the note's: 16.8 KiB of them */
		eh->e_phnum = 300;
		ph[299] = ph[1];
		ph[299].p_offset = 4 * PG + NOTE_OFF;
		put_note(img + 4 * PG + NOTE_OFF, 4, MAX_BUILD_ID, bid);
		/* The table runs over the old note: zero, like the rest */
		memset(ph, 0, 2 * sizeof(*ph));
		memset(img + NOTE_OFF, 0, 64);
		*len = IMG_SIZE;
		break;
	case C_PHNUM_XNUM: {
		Elf64_Phdr load = ph[0];

		eh->e_phnum = PN_XNUM;
		ph[0] = ph[1];
		ph[1] = load;
		break;
	}
	case C_PHOFF_WRAP:
		eh->e_phoff = UINT64_MAX - 8;
		break;
	case C_PHOFF_NEG:
		eh->e_phoff = 1ULL << 63;
		break;
	case C_PHOFF_EOF:
		eh->e_phoff = 1ULL << 30;
		break;
	case C_DESCSZ_WRAP:
		nh->n_descsz = 0xfffffff0;
		break;
	case C_DESCSZ_BIG:
		nh->n_descsz = 64;
		ph[1].p_filesz = sizeof(*nh) + 4 + 64;
		break;
	case C_NAMESZ_WRAP:
		nh->n_namesz = 0xfffffffe;
		nh->n_descsz = 0xfffffffe;
		ph[1].p_filesz = 1024;
		break;
	case C_NOTE_EOF:
		ph[1].p_offset = 1ULL << 20;
		break;
	case C_NOTE_FILESZ_WRAP:
		ph[1].p_filesz = 0xffffffff;
		break;
	case C_EMPTY:
		*len = 0;
		break;
	case C_NOT_ELF:
		for (i = 0; i < (int)*len; i++)
			img[i] = rand();
		img[0] = 0x7e;
		break;
	case C_ET_REL:
		eh->e_type = ET_REL;
		break;
	}
	return write_file(path, img, *len);
}

struct corpus_file {
	int fd;
	char path[64];
	uint8_t bid[MAX_BUILD_ID];
	void *base;
	uint64_t addr;		/* the made-up return address in it */
	bool code;		/* PROT_EXEC; else no map may cover it */
	/* What the records said */
	int hits, ok, no_bid, unreadable;
	char first_wrong[160];
};

TEST(malformed_elf)
{
	struct corpus_file *cf = calloc(CORPUS_N, sizeof(*cf));
	char dir[] = "/tmp/bido_corpus_XXXXXX";
	uint8_t *img = malloc(IMG_SIZE), bid[MAX_BUILD_ID];
	uintptr_t rets[CORPUS_N];
	struct trace t = {};
	struct ring rb;
	unsigned int i, wrong = 0, missing = 0;
	bool *checked;
	int hits, s;

	if (bido_skip_missing(_metadata, NULL))
		return;
	ASSERT_NE(NULL, mkdtemp(dir));
	srand(getpid());

	for (i = 0; i < CORPUS_N; i++) {
		const struct corpus_case *c = &corpus[i];
		struct corpus_file *f = &cf[i];
		size_t len;
		int prot = PROT_READ | PROT_EXEC;

		fresh_build_id(f->bid, i);
		snprintf(f->path, sizeof(f->path), "%s/%s", dir, c->name);
		f->fd = corpus_write(c, f->path, img, f->bid, &len);
		ASSERT_LE(0, f->fd) TH_LOG("%s: %s", f->path, strerror(errno));
		/* Our own reader agrees where the kernel must find it */
		if (c->want_bid) {
			ASSERT_EQ(MAX_BUILD_ID, elf_build_id(f->fd, bid, NULL));
			ASSERT_EQ(0, memcmp(bid, f->bid, MAX_BUILD_ID));
		}
		f->base = mmap(NULL, 2 * PG, prot, MAP_PRIVATE, f->fd,
			       c->map_off);
		f->code = f->base != MAP_FAILED;
		if (!f->code && errno == EPERM)	/* noexec */
			f->base = mmap(NULL, 2 * PG, PROT_READ, MAP_PRIVATE,
				       f->fd, c->map_off);
		ASSERT_NE(MAP_FAILED, f->base) TH_LOG("mmap %s: %s", f->path,
						      strerror(errno));
		/* In the second page: the one truncation takes away */
		f->addr = (uintptr_t)f->base + PG + 0x100 + 8 * i;
		rets[i] = f->addr;
		if (c->kind == C_TRUNC_MAPPED)
			ASSERT_EQ(0, ftruncate(f->fd, 0));
		if (c->kind == C_TRUNC_MAPPED_TAIL)
			ASSERT_EQ(0, ftruncate(f->fd, PG));
	}

	if (!cf[0].code)
		ksft_print_msg("%s is noexec: the files are no code, and must stay unresolved\n",
			       dir);
	ASSERT_EQ(0, bido_open(&rb));
	/* No record covers rets[0] where it is no code: sample 3 s only */
	hits = sample_fake(&rb, &t, rets, CORPUS_N, 20,
			   cf[0].code ? 30.0 : 3.0);

	checked = calloc(t.nr_r + 1, sizeof(*checked));
	for (s = 0; s < t.nr_s; s++) {
		const struct sample *smp = &t.s[s];
		const struct record *r = record_once(&t, s, rets[0], checked);

		if (!r)
			continue;
		for (i = 0; i < CORPUS_N; i++) {
			const struct corpus_case *c = &corpus[i];
			struct corpus_file *f = &cf[i];
			const struct bido_map *m = rec_find(r, f->addr);
			const char *why = NULL;

			f->hits++;
			if (!sample_has(smp, f->addr))
				why = "address not in the sample's call chain";
			else if (!f->code)
				why = m ? "a map of a mapping that is no code" :
					  NULL;
			else if (!m)
				why = "no map covers the address";
			else if (m->start != (uintptr_t)f->base ||
				 m->end != (uintptr_t)f->base + 2 * PG)
				why = "map bounds differ from the mapping";
			else if (m->pgoff != c->map_off)
				why = "pgoff differs from the mapping's offset";
			else if (m->flags & ~BIDO_MAP_NONE)
				why = "flags other than NO_BUILD_ID/UNREADABLE";
			else if (c->want_bid &&
				 (m->build_id_size != MAX_BUILD_ID ||
				  memcmp(m->build_id, f->bid, MAX_BUILD_ID)))
				why = "not the file's build-ID";
			else if (!c->want_bid &&
				 (m->build_id_size || !(m->flags & BIDO_MAP_NONE)))
				why = "a build-ID, or no flag saying why not";
			if (why) {
				if (!f->first_wrong[0])
					snprintf(f->first_wrong,
						 sizeof(f->first_wrong),
						 "%s (size %d, flags %#x, pgoff %#llx)",
						 why, m ? m->build_id_size : -1,
						 m ? m->flags : 0,
						 m ? (unsigned long long)m->pgoff
						   : 0ULL);
				if (!m)
					missing++;
				else
					wrong++;
				continue;
			}
			f->ok++;
			if (!m)
				continue;
			f->no_bid += !!(m->flags & PERF_BUILD_ID_OFFSET_MAP_NO_BUILD_ID);
			f->unreadable += !!(m->flags & PERF_BUILD_ID_OFFSET_MAP_UNREADABLE);
		}
	}

	for (i = 0; i < CORPUS_N; i++) {
		struct corpus_file *f = &cf[i];

		ksft_print_msg(
			"%-26s %3d records, %3d as expected (%s; NO_BUILD_ID %d, UNREADABLE %d): %s\n",
			corpus[i].name, f->hits, f->ok,
			!f->code ? "no map" :
			corpus[i].want_bid ? "build-ID" : "none",
			f->no_bid, f->unreadable, corpus[i].how);
		if (f->first_wrong[0])
			ksft_print_msg("%-26s first wrong: %s\n",
				       corpus[i].name, f->first_wrong);
		EXPECT_EQ(f->hits, f->ok) TH_LOG("%s", corpus[i].name);
	}
	ksft_print_msg(
		"malformed_elf: %d files, %d samples, %d records, %d samples in the made-up frames with their record, %llu lost, %u wrong, %u unresolved, %d bad records%s%s\n",
		(int)CORPUS_N, t.nr_s, t.nr_r, hits,
		(unsigned long long)t.lost, wrong, missing, t.bad_records,
		t.bad_records ? ", first: " : "", t.why);
	EXPECT_EQ(0, t.bad_records);
	EXPECT_LT(0, hits);
	EXPECT_EQ(0, wrong);
	EXPECT_EQ(0, missing);

	ring_close(&rb);
	trace_free(&t);
	free(checked);
	for (i = 0; i < CORPUS_N; i++) {
		munmap(cf[i].base, 2 * PG);
		close(cf[i].fd);
		unlink(cf[i].path);
	}
	rmdir(dir);
	free(img);
	free(cf);
}

TEST_HARNESS_MAIN
