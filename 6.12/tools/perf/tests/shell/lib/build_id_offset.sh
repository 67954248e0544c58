#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Helpers of the perf record/top --buildid-offset tests

# bido_support NAME: whether perf record --buildid-offset works here.
# Returns 0 if so; else prints the test's line and returns 2 (Skipped:
# the kernel lacks the feature) or 1 (Failed: another error).
bido_support() {
  local out

  if out=$(perf record --buildid-offset -e cpu-clock -o /dev/null -- true 2>&1)
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

# bido_cpu_wide NAME: whether CPU-wide events may be opened here (root,
# or perf_event_paranoid <= 0); else prints the Skipped line, returns 2
bido_cpu_wide() {
  if [ "$(id -u)" != 0 ] && [ "$(cat /proc/sys/kernel/perf_event_paranoid)" -gt 0 ]
  then
    echo "$1 [Skipped CPU-wide events need root or perf_event_paranoid <= 0]"
    return 2
  fi
}

# bido_cc NAME OUT SOURCE FLAGS...: build a workload with build-ID; prints
# the test's Skipped line and returns 2 if there is no compiler or the
# build fails
bido_cc() {
  local name=$1 out=$2 src=$3 cc=${CC:-cc}

  shift 3
  if ! command -v "${cc}" > /dev/null
  then
    echo "${name} [Skipped no C compiler]"
    return 2
  fi
  if ! "${cc}" -Wl,--build-id "$@" -o "${out}" "${src}"
  then
    echo "${name} [Skipped cannot build the workload]"
    return 2
  fi
}

# bido_record_start OUT ERR ARGS...: start 'perf record ARGS' in the
# background, stdout to OUT and stderr to ERR, with its events disabled;
# then enable them through its control fds and return once perf
# acknowledged, so that what runs from then on is recorded (a non-empty
# output file only says the header is written: under emulation the
# events can come up seconds later).  bido_rpid: perf's pid.  Returns 1
# if perf did not acknowledge within 120 s.  bido_record_stop ends it.
bido_record_start() {
  local out=$1 err=$2 dir ack=

  shift 2
  dir=$(mktemp -d /tmp/__perf_test.bido_ctl.XXXXX)
  mkfifo "${dir}/ctl" "${dir}/ack"
  exec 8<> "${dir}/ctl" 9<> "${dir}/ack"
  rm -rf "${dir}"
  perf record -D -1 --control=fd:8,9 "$@" > "${out}" 2> "${err}" &
  bido_rpid=$!
  echo enable >&8
  read -r -t 120 -u 9 ack || true
  [ "${ack}" = ack ]
}

# bido_wait_line FILE TEXT: wait, by the clock, until a line of FILE has
# TEXT, 120 s at most.  Prints the seconds waited; returns 1 on timeout.
bido_wait_line() {
  local start=${SECONDS}

  until grep -qaF -- "$2" "$1" 2> /dev/null
  do
    if [ $((SECONDS - start)) -ge 120 ]
    then
      echo 120
      return 1
    fi
    sleep 0.1
  done
  echo $((SECONDS - start))
}

# bido_task_stacks PID: where each thread of PID waits (for a failure)
bido_task_stacks() {
  local t

  for t in /proc/"$1"/task/*
  do
    echo "  $(cat "${t}/comm" 2> /dev/null): $(cat "${t}/wchan" 2> /dev/null)"
    head -n 8 "${t}/stack" 2> /dev/null | sed 's/^/    /'
  done
}

# bido_record_stop: stop the perf record of bido_record_start with SIGINT
# and wait for it.  Its exit status says nothing (perf ends by raising
# SIGINT again): the tests check what it wrote.  But perf must exit: if
# it has not 120 s after SIGINT, says where its threads wait, kills it
# and returns 1.
bido_record_stop() {
  local rc=0 end=$((SECONDS + 120))

  kill -INT "${bido_rpid}" 2> /dev/null || true
  while [ "${SECONDS}" -lt "${end}" ]
  do
    kill -0 "${bido_rpid}" 2> /dev/null || break
    sleep 0.1
  done
  if kill -0 "${bido_rpid}" 2> /dev/null
  then
    echo "perf record (pid ${bido_rpid}) did not exit within 120 s of SIGINT:"
    bido_task_stacks "${bido_rpid}"
    kill -9 "${bido_rpid}" 2> /dev/null || true
    rc=1
  fi
  wait "${bido_rpid}" 2> /dev/null || true
  bido_rpid=
  exec 8>&- 9>&-
  return ${rc}
}
