#!/bin/bash
# perf inject --jit keeps the JIT symbols of a --buildid-offset recording
# SPDX-License-Identifier: GPL-2.0

# A JIT that writes a jitdump (jit-PID.dump, marked by an executable
# mapping of it, as perf's JVMTI agent does) runs under perf record
# --buildid-offset --synth=no -k mono; perf inject --jit turns the dump
# into jitted-PID-N.so files and MMAP2 records for the code.  The build-ID
# offset records describe the same code as anonymous memory: reading them
# must not replace the jitted maps, or the JIT function loses its name.

set -e

shelldir=$(dirname "$0")
# shellcheck source=lib/build_id_offset.sh
. "${shelldir}"/lib/build_id_offset.sh

what="perf inject --jit with --buildid-offset"
tmpdir=$(mktemp -d /tmp/__perf_test.bido_jit.XXXXX)

cleanup() {
  rm -rf "${tmpdir}"
  trap - EXIT TERM INT
}

trap_cleanup() {
  cleanup
  exit 1
}
trap trap_cleanup EXIT TERM INT

end() {
  echo "${what} [$1]"
  cleanup
  exit "$2"
}

rc=0
bido_support "${what}" || rc=$?
[ "${rc}" = 0 ] || end "Skipped kernel has no PERF_SAMPLE_BUILD_ID_OFFSET" "${rc}"
[ "$(uname -m)" = x86_64 ] || end "Skipped the JIT workload is x86-64 code" 2

# bidojitdump DIR MS: writes DIR/jit-PID.dump with one function,
# bidojit_fn, copied to anonymous executable memory, and runs it for MS ms
cat > "${tmpdir}/bidojitdump.c" << 'EOF'
#include <elf.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

/* mov %rdi,%rax; 1: dec %rax; jnz 1b; ret */
static const unsigned char code[] = {
	0x48, 0x89, 0xf8, 0x48, 0xff, 0xc8, 0x75, 0xfb, 0xc3,
};
static const char name[] = "bidojit_fn";

/* The jitdump format (tools/perf/util/jitdump.h), version 1 */
struct header {
	uint32_t magic, version, total_size, elf_mach, pad1, pid;
	uint64_t timestamp, flags;
};

struct code_load {
	uint32_t id, total_size;
	uint64_t timestamp;
	uint32_t pid, tid;
	uint64_t vma, code_addr, code_size, code_index;
};

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

int main(int argc, char **argv)
{
	struct header h = {
		.magic = 0x4A695444, .version = 1, .total_size = sizeof(h),
		.elf_mach = EM_X86_64, .pid = getpid(), .timestamp = now_ns(),
	};
	struct code_load cl = {
		.id = 0, .total_size = sizeof(cl) + sizeof(name) + sizeof(code),
		.pid = getpid(), .tid = syscall(SYS_gettid), .code_size = sizeof(code),
	};
	long (*fn)(long);
	char path[4096];
	uint64_t end;
	void *p, *mark;
	int fd;

	if (argc < 3)
		return 1;
	snprintf(path, sizeof(path), "%s/jit-%d.dump", argv[1], getpid());
	fd = open(path, O_CREAT | O_TRUNC | O_RDWR, 0644);
	if (fd < 0 || write(fd, &h, sizeof(h)) != sizeof(h))
		return 1;
	/* The marker perf looks for: an executable mapping of the dump */
	mark = mmap(NULL, sysconf(_SC_PAGESIZE), PROT_READ | PROT_EXEC, MAP_PRIVATE, fd, 0);
	if (mark == MAP_FAILED)
		return 1;

	p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return 1;
	memcpy(p, code, sizeof(code));
	if (mprotect(p, 4096, PROT_READ | PROT_EXEC))
		return 1;
	cl.vma = cl.code_addr = (uintptr_t)p;
	cl.timestamp = now_ns();
	if (write(fd, &cl, sizeof(cl)) != sizeof(cl) ||
	    write(fd, name, sizeof(name)) != sizeof(name) ||
	    write(fd, code, sizeof(code)) != sizeof(code))
		return 1;

	fn = (long (*)(long))p;
	end = now_ns() + atoi(argv[2]) * 1000000ULL;
	while (now_ns() < end)
		fn(1000000);
	return 0;
}
EOF
rc=0
bido_cc "${what}" "${tmpdir}/bidojitdump" "${tmpdir}/bidojitdump.c" -O1 || rc=$?
[ "${rc}" = 0 ] || end "Skipped cannot build the workload" "${rc}"

if ! perf record -k mono --buildid-offset --synth=no -e cpu-clock:u -c 500000 \
     -o "${tmpdir}/perf.data" -- "${tmpdir}/bidojitdump" "${tmpdir}" 1000 \
     > "${tmpdir}/record.log" 2>&1
then
  end "Failed record: $(tail -n 2 "${tmpdir}/record.log")" 1
fi
if ! perf inject --jit -i "${tmpdir}/perf.data" -o "${tmpdir}/jit.data" \
     > "${tmpdir}/inject.log" 2>&1
then
  end "Failed perf inject --jit: $(tail -n 2 "${tmpdir}/inject.log")" 1
fi
ls "${tmpdir}"/jitted-*.so > /dev/null 2>&1 || end "Failed perf inject --jit wrote no jitted-*.so" 1

# Nearly every sample is in bidojit_fn; some (the first entry's, when
# perf stops) may stay unresolved
share=$(perf report -i "${tmpdir}/jit.data" --stdio --sort sym -q 2> /dev/null |
  awk '$NF == "bidojit_fn" { sub(/%/, "", $1); s += $1 } END { print s + 0 }')
if ! awk -v s="${share}" 'BEGIN { exit !(s >= 50) }'
then
  perf report -i "${tmpdir}/jit.data" --stdio --sort dso,sym -q 2> /dev/null | head -n 5
  end "Failed bidojit_fn has ${share}% of the samples, want at least 50%" 1
fi
end "Success: bidojit_fn has ${share}% of the samples" 0
