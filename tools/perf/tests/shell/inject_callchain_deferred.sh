#!/bin/bash
# perf inject keeps deferred callchains
# SPDX-License-Identifier: GPL-2.0
#
# The user frames of 'perf record --call-graph fp,defer' come in
# PERF_RECORD_CALLCHAIN_DEFERRED records after their samples.  perf inject
# must pass them on, with or without ordering the events (-b orders them),
# or the samples of its output lose their user frames.

set -e

tmpdir=$(mktemp -d /tmp/__perf_test.inject_defer.XXXXX)
in="${tmpdir}/perf.data"

cleanup() {
  rm -rf "${tmpdir}"
  trap - EXIT TERM INT
}

trap_cleanup() {
  cleanup
  exit 1
}
trap trap_cleanup EXIT TERM INT

if ! perf record -o "${in}" -e cpu-clock:u -c 1000000 --call-graph fp,defer \
	-- perf test -w noploop 1 > "${tmpdir}/record.log" 2>&1
then
  if grep -q -i "defer" "${tmpdir}/record.log"
  then
    echo "perf inject keeps deferred callchains [Skipped no deferred callchains]"
    cleanup
    exit 2
  fi
  cat "${tmpdir}/record.log"
  echo "perf inject keeps deferred callchains [Failed to record]"
  exit 1
fi

# records FILE: the number of PERF_RECORD_CALLCHAIN_DEFERRED in FILE
records() {
  perf report -D -i "$1" 2> /dev/null | grep -c "PERF_RECORD_CALLCHAIN_DEFERRED" || true
}

# frames FILE: the user frames of FILE's samples, as perf script shows them
frames() {
  perf script -i "$1" -F ip,sym 2> /dev/null
}

n=$(records "${in}")
if [ "${n}" -eq 0 ]
then
  echo "perf inject keeps deferred callchains [Failed: no deferred callchain recorded]"
  exit 1
fi
frames "${in}" > "${tmpdir}/in.txt"
if ! grep -q noploop "${tmpdir}/in.txt"
then
  echo "perf inject keeps deferred callchains [Failed: no user frame in noploop recorded]"
  exit 1
fi

err=0
for opt in "" "-b"
do
  out="${tmpdir}/inject${opt}.data"
  perf inject ${opt} -i "${in}" -o "${out}"
  m=$(records "${out}")
  frames "${out}" > "${tmpdir}/out.txt"
  if [ "${m}" -ne "${n}" ]
  then
    echo "perf inject ${opt}: ${m} of ${n} deferred callchains [Failed]"
    err=1
  elif ! cmp -s "${tmpdir}/in.txt" "${tmpdir}/out.txt"
  then
    diff "${tmpdir}/in.txt" "${tmpdir}/out.txt" | head
    echo "perf inject ${opt}: the frames differ [Failed]"
    err=1
  else
    lines=$(wc -l < "${tmpdir}/out.txt")
    echo "perf inject ${opt}: ${m} deferred callchains, ${lines} lines as recorded [Success]"
  fi
done

cleanup
exit ${err}
