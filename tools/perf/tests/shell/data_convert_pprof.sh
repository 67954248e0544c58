#!/bin/bash
# perf data convert --to-pprof
# SPDX-License-Identifier: GPL-2.0
#
# A -g recording of a task older than perf, with --buildid-offset
# --synth=no (its maps come from the records alone) and without, converted
# to a pprof profile and read back by a decoder of the test's own
# (lib/pprof_check.py): the task's samples add up to perf script's, each
# has noploop as its leaf, and every location in perf's file is at the
# file offset the task's /proc/PID/maps gives.

set -e

# shellcheck source=lib/build_id_offset.sh
. "$(dirname "$0")"/lib/build_id_offset.sh

err=0
tmpdir=$(mktemp -d /tmp/__perf_test.pprof.XXXXX)
wpid=

cleanup() {
  if [ -n "${wpid}" ]
  then
    kill "${wpid}" 2> /dev/null || true
    wait "${wpid}" 2> /dev/null || true
  fi
  rm -rf "${tmpdir}"
  trap - EXIT TERM INT
}

trap_cleanup() {
  cleanup
  exit 1
}
trap trap_cleanup EXIT TERM INT

if ! command -v python3 > /dev/null
then
  echo "perf data convert --to-pprof [Skipped no python3]"
  cleanup
  exit 2
fi

export HOME="${tmpdir}"
perf_bin=$(readlink -f "$(command -v perf)")
perf_bid=$(perf buildid-list -i "${perf_bin}")
if ! noploop_start wpid "perf data convert --to-pprof"
then
  cleanup
  exit 1
fi
cat "/proc/${wpid}/maps" > "${tmpdir}/maps"

# convert NAME ARGS...: record 2 s of the task with ARGS, convert, check
convert() {
  local name=$1

  shift
  if ! perf record -o "${tmpdir}/perf.data" -g -e cpu-clock:u -c 1000000 "$@" \
       -p "${wpid}" -- sleep 2 > "${tmpdir}/record.log" 2>&1
  then
    echo "${name} [Failed perf record $*]"
    cat "${tmpdir}/record.log"
    err=1
    return
  fi
  rm -f "${tmpdir}/profile.pb.gz"
  if ! perf data convert -i "${tmpdir}/perf.data" --to-pprof "${tmpdir}/profile.pb.gz" \
       > "${tmpdir}/convert.log" 2>&1
  then
    echo "${name} [Failed perf data convert --to-pprof]"
    cat "${tmpdir}/convert.log"
    err=1
    return
  fi
  count=$(perf script -i "${tmpdir}/perf.data" -F tid 2> /dev/null |
          awk -v t="${wpid}" '$1 == t { n++ } END { print n + 0 }')
  if ! python3 "$(dirname "$0")"/lib/pprof_check.py "${tmpdir}/profile.pb.gz" \
       "${tmpdir}/maps" "${wpid}" "${perf_bid}" noploop "${count}" > "${tmpdir}/check.log"
  then
    echo "${name} [Failed]"
    tail -n 5 "${tmpdir}/check.log"
    err=1
    return
  fi
  echo "${name} [Success: $(tail -n 1 "${tmpdir}/check.log")]"
}

convert "pprof of a recording with the task's MMAP records"
rc=0
build_id_offset_supported "pprof of a --buildid-offset --synth=no recording" || rc=$?
if [ "${rc}" = 0 ]
then
  convert "pprof of a --buildid-offset --synth=no recording" --buildid-offset --synth=no
elif [ "${rc}" = 1 ]
then
  err=1
fi

# A pipe has no size for the profile's header to come from the end: refused
if perf record -o - -e cpu-clock:u -c 1000000 -- true 2> /dev/null |
   perf data convert -i - --to-pprof "${tmpdir}/pipe.pb.gz" > /dev/null 2>&1
then
  echo "perf data convert --to-pprof of a pipe [Failed not refused]"
  err=1
fi

cleanup
exit ${err}
