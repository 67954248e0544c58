#!/bin/bash
# perf record --overwrite --switch-output writes no sample twice
# SPDX-License-Identifier: GPL-2.0

# In overwrite mode perf reads each backward ring buffer from its head
# down to where the last read started, at every switch.  If the next read
# does not start at that head, the next file holds the samples of the
# previous one again.  No (tid, time, ip) may be in two files.

set -e

dir=$(mktemp -d /tmp/__perf_test.overwrite.XXXXX)
list=$(mktemp /tmp/__perf_test.list.XXXXX)

cleanup() {
  rm -rf "${dir}" "${list}"
  trap - EXIT TERM INT
}

trap_cleanup() {
  cleanup
  exit 1
}
trap trap_cleanup EXIT TERM INT

# 1 kHz per CPU: a second of samples stays far below the buffer's size,
# so that a read that starts too early finds old samples still there.
# Switched by SIGUSR2, three times, once perf has made its output file
# (it handles the signal by then).
perf record --overwrite --switch-output -e cpu-clock -c 1000000 \
  -o "${dir}/perf.data" -- perf test -w noploop 8 2> "${dir}/err" &
pid=$!
for _ in $(seq 100)
do
  [ -e "${dir}/perf.data" ] && break
  sleep 0.1
done
for _ in 1 2 3
do
  sleep 1
  kill -USR2 "${pid}" 2> /dev/null || true
done
if ! wait "${pid}"
then
  echo "perf record --overwrite --switch-output [Failed: $(tail -n 3 "${dir}/err")]"
  cleanup
  exit 1
fi

files=0
with_samples=0
for f in "${dir}"/perf.data.*
do
  [ -e "${f}" ] || continue
  files=$((files + 1))
  n=$(perf script -i "${f}" -F tid,time,ip 2> /dev/null | tee -a "${list}" | wc -l)
  [ "${n}" -gt 0 ] && with_samples=$((with_samples + 1))
done
total=$(wc -l < "${list}")
dups=$(sort "${list}" | uniq -d | wc -l)

echo "${files} files, ${with_samples} with samples, ${total} samples, ${dups} in more than one"
if [ "${with_samples}" -lt 2 ]
then
  echo "perf record --overwrite --switch-output [Failed: fewer than two files with samples]"
  cleanup
  exit 1
fi
if [ "${dups}" -ne 0 ]
then
  echo "perf record --overwrite --switch-output [Failed: ${dups} samples written twice]"
  cleanup
  exit 1
fi
echo "perf record --overwrite --switch-output [Success]"
cleanup
exit 0
