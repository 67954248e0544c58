#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# What the perf tests of --buildid-offset share.

# build_id_offset_supported NAME: 0 if this kernel takes perf record
# --buildid-offset.  Otherwise NAME's result line and its status: skipped
# (2) on a kernel without PERF_SAMPLE_BUILD_ID_OFFSET, failed (1) on any
# other error.
build_id_offset_supported() {
  local out

  if out=$(perf record --buildid-offset -N -e cpu-clock -o /dev/null -- true 2>&1)
  then
    return 0
  fi
  if echo "${out}" | grep -q "does not support PERF_SAMPLE_BUILD_ID_OFFSET"
  then
    echo "$1 [Skipped kernel has no PERF_SAMPLE_BUILD_ID_OFFSET]"
    return 2
  fi
  echo "$1 [Failed unexpected error: ${out}]"
  return 1
}

# wait_noploop PID: wait until task PID, started as 'perf test -w noploop',
# is in its loop (it names itself perf-noploop first; before, it runs the
# shell, then ld.so and perf's start-up).  1 if it exited, or is not there
# in 120 s.
wait_noploop() {
  local end=$((SECONDS + 120))

  while [ "$(cat "/proc/$1/comm" 2> /dev/null)" != perf-noploop ]; do
    if [ ! -d "/proc/$1" ] || [ "${SECONDS}" -ge "${end}" ]
    then
      return 1
    fi
    sleep 0.05
  done
}

# noploop_start VAR NAME [PERF]: start 'PERF test -w noploop' (PERF: perf)
# in the background, its pid in the variable VAR (for the caller to kill),
# and wait until it is in its loop; 1, after NAME's result line, if it is
# not.  It is asked for an hour: the tests kill it when done, and a busy
# machine takes minutes over a test that a quiet one runs in one.
noploop_start() {
  "${3:-perf}" test -w noploop 3600 &
  printf -v "$1" %s $!
  wait_noploop $! && return 0
  echo "$2 [Failed the workload did not start]"
  return 1
}
