#!/bin/bash
# perf daemon rotates --buildid-offset files that report on their own
# SPDX-License-Identifier: GPL-2.0

# An always-on session of 'perf daemon': perf record -a --synth=no
# --buildid-offset --switch-output, rotated by 'perf daemon signal' while
# tasks come and go.  Each rotated file must name the comm and the
# program of every sample of those tasks by itself: a task that runs
# across a rotation has its COMM and its build-ID offset records in an
# earlier file only, unless perf carries them into the new one.

set -e

shelldir=$(dirname "$0")
# shellcheck source=lib/build_id_offset.sh
. "${shelldir}"/lib/build_id_offset.sh

err=0
tmpdir=$(mktemp -d /tmp/__perf_test.bido_daemon.XXXXX)
config=${tmpdir}/config
base=${tmpdir}/base
# A build-ID cache of its own
export HOME="${tmpdir}/home"
mkdir -p "${HOME}" "${base}"
tids=()
daemon_up=

cleanup() {
  local t

  for t in "${tids[@]}"; do
    kill "${t}" 2> /dev/null && wait "${t}" 2> /dev/null
  done
  [ -n "${daemon_up}" ] && perf daemon stop --config "${config}" > /dev/null 2>&1
  rm -rf "${tmpdir}"
  trap - EXIT TERM INT
}

trap_cleanup() {
  cleanup
  exit 1
}
trap trap_cleanup EXIT TERM INT

skip() {
  echo "perf daemon --buildid-offset [Skipped $1]"
  cleanup
  exit 2
}

fail() {
  echo "perf daemon --buildid-offset [Failed $1]"
  err=1
}

# bidod MS: spins in bidod_spin() for MS ms, then exits
build_workload() {
  local rc=0

  cat > "${tmpdir}/bidod.c" << 'EOF'
#include <stdlib.h>
#include <time.h>

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

__attribute__((noinline)) unsigned long bidod_spin(double secs)
{
	double end = now() + secs;
	volatile unsigned long x = 0;

	while (now() < end)
		for (int i = 0; i < 100000; i++)
			x += i;
	return x;
}

int main(int argc, char **argv)
{
	bidod_spin(argc > 1 ? atoi(argv[1]) / 1000.0 : 1);
	return 0;
}
EOF
  bido_cc "perf daemon --buildid-offset" "${tmpdir}/bidod" "${tmpdir}/bidod.c" -O1 || rc=$?
  if [ "${rc}" != 0 ]; then
    cleanup
    exit "${rc}"
  fi
}

# The number of rotated files so far
nr_files() {
  find "${base}/session-bido" -name 'perf.data.*' 2> /dev/null | wc -l
}

# Wait (120 s at most) until there are $1 rotated files
wait_files() {
  for _ in $(seq 1200); do
    [ "$(nr_files)" -ge "$1" ] && return 0
    sleep 0.1
  done
  return 1
}

start_daemon() {
  local state=

  cat > "${config}" << EOF
[daemon]
base=${base}

[session-bido]
run = -a --synth=no --buildid-offset -e cpu-clock:u -F 499 --switch-output
EOF
  perf daemon start --config "${config}" || skip "perf daemon did not start"
  daemon_up=1
  for _ in $(seq 1200); do
    state=$(perf daemon ping --config "${config}" --session bido 2> /dev/null | awk '{ print $1 }')
    [ "${state}" = OK ] && return 0
    # It needs inotify and a signalfd, which a small kernel may leave out
    if grep -q "daemon exited" "${base}/output" 2> /dev/null
    then
      daemon_up=
      skip "perf daemon exited: $(grep -m1 failed "${base}/output")"
    fi
    sleep 0.1
  done
  fail "the session did not answer a ping in 120 s"
  cleanup
  exit 1
}

# A long task across every rotation; a short one in each period, gone
# before the rotation
test_rotate() {
  local long short f n nr bad nl files=0 long_files=0 i

  "${tmpdir}/bidod" 600000 &
  long=$!
  tids+=("${long}")
  for i in 1 2 3
  do
    "${tmpdir}/bidod" 500 &
    short=$!
    tids+=("${short}")
    wait "${short}" || true
    sleep 0.5
    if [ "${i}" -lt 3 ]
    then
      perf daemon signal --config "${config}" --session bido > /dev/null
      wait_files "${i}" || fail "no rotated file ${i} in 120 s"
    fi
  done
  perf daemon stop --config "${config}" > /dev/null
  daemon_up=
  wait_files 3 || fail "no third file after the stop"
  kill "${long}" 2> /dev/null || true
  wait "${long}" 2> /dev/null || true

  for f in $(find "${base}/session-bido" -name 'perf.data.*' | sort)
  do
    files=$((files + 1))
    # "COMM TID IP (DSO)" of the samples of the tasks started here: all
    # in DSOs known by name (bidod mostly; the vDSO and libc at times),
    # the long task's all of comm bidod after the first file (any task's
    # first samples, before its exec, are the shell's)
    n=$(perf script -i "${f}" -F comm,tid,ip,dso 2> /dev/null |
        awk -v tids=" ${tids[*]} " -v long="${long}" -v first=$((files == 1)) '
          index(tids, " " $2 " ") {
            n++
            if ($2 == long) l++
            if (($2 == long && $1 != "bidod" && !first) || $NF == "([unknown])" ||
                $NF ~ /build-id/)
              bad++
            if ($NF !~ /\/bidod\)$/) other++
          }
          END { print (n > other ? n : 0) + 0, bad + 0, l + 0 }')
    read -r nr bad nl <<< "${n}"
    [ "${nl}" -gt 0 ] && long_files=$((long_files + 1))
    if [ "${nr}" = 0 ] || [ "${bad}" != 0 ]
    then
      fail "file ${files}: ${nr} samples of the tasks, ${bad} without their comm or program"
      perf script -i "${f}" -F comm,tid,ip,dso 2> /dev/null |
        awk -v tids=" ${tids[*]} " 'index(tids, " " $2 " ") { print $1, $2, $NF }' |
        sort | uniq -c | head -5
    fi
  done
  if [ "${files}" -lt 3 ] || [ "${long_files}" -lt 3 ]
  then
    fail "${files} files, ${long_files} with the long task's samples: not 3"
  fi
  [ "${err}" = 0 ] && echo "perf daemon --buildid-offset [Success: ${files} files]"
  return 0
}

test_support() {
  local rc=0

  bido_support "perf daemon --buildid-offset" || rc=$?
  [ "${rc}" = 0 ] && return 0
  cleanup
  exit "${rc}"
}

test_support
build_workload
start_daemon
test_rotate
cleanup
exit ${err}
