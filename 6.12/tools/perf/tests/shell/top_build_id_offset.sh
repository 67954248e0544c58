#!/bin/bash
# perf top and record --buildid-offset show comms and JIT code
# SPDX-License-Identifier: GPL-2.0

# With --buildid-offset (and --synth=no for perf record) perf reads no
# task's maps or comm in /proc at start.  A task that was running before
# perf started must still show its comm (read at its first sample), its
# program (named from /proc/PID/map_files at its first record) and its
# JIT code (anonymous executable memory, through /tmp/perf-PID.map).
# perf record --synth=task reads the comms at start instead, and its maps
# must still come from the records.  perf top joins its samples with
# their records through its ordered queue.

set -e

shelldir=$(dirname "$0")
# shellcheck source=lib/build_id_offset.sh
. "${shelldir}"/lib/build_id_offset.sh
# perf record's pid, from bido_record_start
bido_rpid=

err=0
tmpdir=$(mktemp -d /tmp/__perf_test.bido_top.XXXXX)
export HOME="${tmpdir}/home"
mkdir -p "${HOME}"
wpids=()

cleanup() {
  local p

  for p in "${wpids[@]}" ${tpid}; do
    kill "${p}" 2> /dev/null && wait "${p}" 2> /dev/null
  done
  exec 3>&- 8>&- 9>&- 2> /dev/null || true
  rm -f /tmp/perf-"${jitpid}".map
  rm -rf "${tmpdir}"
  trap - EXIT TERM INT
}

trap_cleanup() {
  cleanup
  exit 1
}
trap trap_cleanup EXIT TERM INT

skip() {
  echo "perf top --buildid-offset [Skipped $1]"
  cleanup
  exit 2
}

fail() {
  echo "perf top --buildid-offset [Failed $1]"
  err=1
}

# bidojit FIFO MS spin|jit [DONE]: waits for a line on the FIFO, then
# spins for MS ms in bidojit_spin(), or in jit_spin(): code copied to
# anonymous memory, listed in /tmp/perf-PID.map.  With DONE, it then
# writes that file and waits for a second line before it exits.
build_workload() {
  local rc=0

  [ "$(uname -m)" = x86_64 ] || skip "the JIT workload is x86-64 code"
  cat > "${tmpdir}/bidojit.c" << 'EOF'
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

/* mov %rdi,%rax; 1: dec %rax; jnz 1b; ret */
static const unsigned char jit_code[] = {
	0x48, 0x89, 0xf8, 0x48, 0xff, 0xc8, 0x75, 0xfb, 0xc3,
};

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

__attribute__((noinline)) long bidojit_spin(long n)
{
	volatile long x = 0;

	while (n--)
		x += n;
	return x;
}

int main(int argc, char **argv)
{
	long (*spin)(long) = bidojit_spin;
	double end;
	char c, path[64];
	FILE *fp;
	int fd;

	if (argc < 4)
		return 1;
	if (!strcmp(argv[3], "jit")) {
		void *p = mmap(NULL, 4096, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

		if (p == MAP_FAILED)
			return 1;
		memcpy(p, jit_code, sizeof(jit_code));
		if (mprotect(p, 4096, PROT_READ | PROT_EXEC))
			return 1;
		snprintf(path, sizeof(path), "/tmp/perf-%d.map", getpid());
		fp = fopen(path, "w");
		if (!fp)
			return 1;
		fprintf(fp, "%lx %zx jit_spin\n", (unsigned long)p, sizeof(jit_code));
		fclose(fp);
		spin = (long (*)(long))p;
	}
	/* Read and write: no end of file, a second read waits for a line */
	fd = open(argv[1], argc > 4 ? O_RDWR : O_RDONLY);
	if (fd < 0 || read(fd, &c, 1) != 1)
		return 1;
	end = now() + atoi(argv[2]) / 1000.0;
	while (now() < end)
		spin(1000000);
	if (argc > 4) {
		int done = open(argv[4], O_WRONLY | O_CREAT | O_TRUNC, 0644);

		if (done < 0 || write(done, "1", 1) != 1 || read(fd, &c, 1) != 1)
			return 1;
	}
	return 0;
}
EOF
  bido_cc "perf top --buildid-offset" "${tmpdir}/bidojit" "${tmpdir}/bidojit.c" -O1 -g || rc=$?
  if [ "${rc}" != 0 ]; then
    cleanup
    exit "${rc}"
  fi
}

test_support() {
  local rc=0

  bido_support "perf top --buildid-offset" || rc=$?
  [ "${rc}" = 0 ] && return 0
  cleanup
  exit "${rc}"
}

# Start a workload, blocked on FIFO $1, before perf: $2 ms, mode $3,
# and with $4, the file it writes when done spinning (then it waits)
start_workload() {
  rm -f "$1"
  mkfifo "$1"
  "${tmpdir}/bidojit" "$@" &
  wpids+=($!)
}

# Wait (90 s at most) for a file to have content, or a line matching $2,
# while process $3 (if given) lives
wait_for() {
  local end=$((SECONDS + 90))

  while [ "${SECONDS}" -lt "${end}" ]; do
    if [ -z "$2" ]; then
      [ -s "$1" ] && return 0
    else
      grep -q "$2" "$1" 2> /dev/null && return 0
    fi
    [ -z "$3" ] || kill -0 "$3" 2> /dev/null || return 1
    sleep 0.1
  done
  return 1
}

# Whether "PERCENT COMM DSO [.] SYM" is a line of a report or of perf
# top (DSO: a regular expression, "[JIT] tid PID" has spaces)
has_line() {
  grep -qaE "^ *[0-9.]+% +$2 +$3 +\[\.\] $4 *\$" "$1"
}

# Stop perf top ($tpid) with SIGINT.  It must exit: if it has not after
# 120 s, say where its threads wait, and kill it.
stop_top() {
  local end=$((SECONDS + 120))

  kill -INT "${tpid}"
  while [ "${SECONDS}" -lt "${end}" ]; do
    kill -0 "${tpid}" 2> /dev/null || break
    sleep 0.1
  done
  if kill -0 "${tpid}" 2> /dev/null
  then
    fail "$1: perf top did not exit within 120 s of SIGINT"
    bido_task_stacks "${tpid}"
    kill -9 "${tpid}"
  fi
  wait "${tpid}" || true
  tpid=
}

# Wait (90 s at most) for perf top's output $1 to have a line matching
# the extended regular expression $2, while perf top lives: its screens
# lag behind the samples by as long as it takes to load the symbols
wait_line() {
  local end=$((SECONDS + 90))

  while [ "${SECONDS}" -lt "${end}" ]; do
    grep -qaE "$2" "$1" && return 0
    kill -0 "${tpid}" 2> /dev/null || return 1
    sleep 0.1
  done
  return 1
}

# perf record --synth=$1 (no: comms read at first sample; task: all
# read at start, maps still from the records): the comm of a task older
# than perf, and its JIT code.  The task lives until perf has stopped.
test_record() {
  rm -f "${tmpdir}/spun"
  start_workload "${tmpdir}/go1" 1500 jit "${tmpdir}/spun"
  jitpid=${wpids[-1]}
  # -v: on a failure, the namer's count of COMMs it gave shows
  if ! bido_record_start /dev/null "${tmpdir}/rec.err" -v -o "${tmpdir}/rec.data" -a \
       --synth="$1" --buildid-offset -e cpu-clock:u -F 999
  then
    fail "record --synth=$1: perf record did not start"
    cat "${tmpdir}/rec.err"
  fi
  tpid=${bido_rpid}
  echo > "${tmpdir}/go1"
  wait_for "${tmpdir}/spun" "" "${jitpid}" || fail "record --synth=$1: the workload failed"
  bido_record_stop || fail "record --synth=$1: perf record hung"
  tpid=
  echo > "${tmpdir}/go1"
  wait "${jitpid}" || true
  perf report -i "${tmpdir}/rec.data" --stdio --sort comm,dso,sym -q 2> /dev/null \
    > "${tmpdir}/rec.txt"
  if ! has_line "${tmpdir}/rec.txt" bidojit "\[JIT\] tid ${jitpid}" jit_spin
  then
    fail "record --synth=$1: no 'bidojit [JIT] tid ${jitpid} jit_spin' line"
    head -5 "${tmpdir}/rec.txt"
    grep -a "build-ID offset" "${tmpdir}/rec.err"
    # The task's own records, and its first samples
    perf script -i "${tmpdir}/rec.data" --show-task-events -F comm,tid,cpu,time,event \
      2> /dev/null | grep -a " ${jitpid} " | grep -av cpu-clock | head -5
    perf script -i "${tmpdir}/rec.data" -F comm,tid,cpu,time 2> /dev/null |
      grep -a " ${jitpid} " | head -3
  fi
}

# A task older than perf that is gone before perf reads its first
# sample: no COMM record names it and /proc has nothing left, so its
# samples show ':TID', never another task's comm.  Made on purpose: perf
# record is stopped while the task runs and exits.
test_comm_gone() {
  local gpid

  start_workload "${tmpdir}/go4" 500 spin
  gpid=${wpids[-1]}
  bido_record_start /dev/null "${tmpdir}/gone.err" -v -o "${tmpdir}/gone.data" -a \
    --synth=no --buildid-offset -e cpu-clock:u -F 999 ||
    fail "comm gone: perf record did not start"
  tpid=${bido_rpid}
  kill -STOP "${tpid}"
  echo > "${tmpdir}/go4"
  wait "${gpid}" || true
  kill -CONT "${tpid}"
  bido_record_stop || fail "comm gone: perf record hung"
  tpid=
  # "COMM TID" of each sample: the task's all ':TID'
  perf script -i "${tmpdir}/gone.data" -F comm,tid 2> /dev/null > "${tmpdir}/gone.txt"
  if ! awk -v t="${gpid}" '$NF == t { n++; if ($1 != ":" t) bad++ }
       END { exit !(n > 0 && !bad) }' "${tmpdir}/gone.txt"
  then
    fail "comm gone: the samples of ${gpid} are not all ':${gpid}'"
    awk -v t="${gpid}" '$NF == t' "${tmpdir}/gone.txt" | sort | uniq -c | head -5
  fi
  if ! grep -qaE "COMMs \([1-9][0-9]* tasks gone first\)" "${tmpdir}/gone.err"
  then
    fail "comm gone: the namer did not count the task gone"
    grep -a "build-ID offset" "${tmpdir}/gone.err"
  fi
}

# perf top: a program and JIT code of tasks older than perf top
test_top() {
  local tpidw

  start_workload "${tmpdir}/go2" 3000 spin
  tpidw=${wpids[-1]}
  start_workload "${tmpdir}/go3" 3000 jit
  jitpid=${wpids[-1]}
  # stdin: a FIFO nobody writes to, so that perf top reads no key
  mkfifo "${tmpdir}/keys"
  exec 3<> "${tmpdir}/keys"
  # Not a terminal: perf top takes its width from COLUMNS (with LINES),
  # else 80, and the widest DSO name on the screen (a '[build-id:HEX]'
  # of some other task is 51) would cut the symbols short
  LINES=60 COLUMNS=400 perf top --stdio --buildid-offset -e cpu-clock:u -d 1 -E 40 \
       --sort comm,dso,sym <&3 > "${tmpdir}/top.txt" 2> "${tmpdir}/top.err" &
  tpid=$!
  if ! wait_for "${tmpdir}/top.txt" PerfTop "${tpid}"
  then
    fail "top: no output"
    cat "${tmpdir}/top.err"
    return
  fi
  echo > "${tmpdir}/go2"
  echo > "${tmpdir}/go3"
  wait "${tpidw}" "${jitpid}" || true
  wait_line "${tmpdir}/top.txt" "bidojit_spin *\$" || true
  wait_line "${tmpdir}/top.txt" "jit_spin *\$" || true
  stop_top top
  if ! has_line "${tmpdir}/top.txt" bidojit "bidojit" bidojit_spin
  then
    fail "top: no 'bidojit bidojit bidojit_spin' line"
    grep -a "%" "${tmpdir}/top.txt" | tail -8
    grep -a "bidojit" "${tmpdir}/top.txt" | tail -4
    cat "${tmpdir}/top.err"
  fi
  if ! has_line "${tmpdir}/top.txt" bidojit "\[JIT\] tid ${jitpid}" jit_spin
  then
    fail "top: no 'bidojit [JIT] tid ${jitpid} jit_spin' line"
  fi
  # The header counts the samples shown unresolved
  if ! grep -qaE "PerfTop:.* unresolved: [0-9]+" "${tmpdir}/top.txt"
  then
    fail "top: no 'unresolved: N' in the header"
    grep -a -m1 PerfTop "${tmpdir}/top.txt"
  fi
}

# perf top -U: the kernel samples of a task wait for its record like all
# its samples; the record must reach them though user samples are hidden
test_hide_user() {
  local dpid

  # Most of dd's time is in the kernel (clearing and copying pages)
  dd if=/dev/zero of=/dev/null bs=1M count=100000000 2> /dev/null &
  dpid=$!
  wpids+=("${dpid}")
  mkfifo "${tmpdir}/keys-u"
  exec 3<> "${tmpdir}/keys-u"
  # -v: the namer says at the end how many processes' records it saw
  LINES=60 COLUMNS=400 perf top -v --stdio --buildid-offset -U -e cpu-clock -d 1 -E 40 \
       --sort comm,dso \
       <&3 > "${tmpdir}/top-u.txt" 2> "${tmpdir}/top-u.err" &
  tpid=$!
  if ! wait_for "${tmpdir}/top-u.txt" PerfTop "${tpid}"
  then
    fail "top -U: no output"
    cat "${tmpdir}/top-u.err"
    return
  fi
  # Until dd's kernel samples show: the first kernel sample makes perf
  # top load the kernel's symbols, which takes a while under emulation
  wait_line "${tmpdir}/top-u.txt" "^ *[0-9.]+% +dd +\[kernel" || true
  stop_top "top -U"
  kill "${dpid}" 2> /dev/null || true
  if ! grep -qaE "^ *[0-9.]+% +dd +\[kernel(\.kallsyms)?\] *\$" "${tmpdir}/top-u.txt"
  then
    fail "top -U: no 'dd [kernel]' line"
    grep -a "%" "${tmpdir}/top-u.txt" | head -8
  fi
  # Before the fix, -U dropped the records with the user samples: the
  # kernel samples held for them went out unjoined, and the namer saw
  # no process ("of 0 processes")
  if ! grep -qaE "files of [1-9][0-9]* processes" "${tmpdir}/top-u.err"
  then
    fail "top -U: the records did not reach the join"
    grep -a "build-ID offset" "${tmpdir}/top-u.err"
  fi
}

test_support
build_workload
test_record no
rm -f /tmp/perf-"${jitpid}".map
test_record task
rm -f /tmp/perf-"${jitpid}".map
test_comm_gone
test_top
test_hide_user
cleanup
exit ${err}
