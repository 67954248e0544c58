#!/bin/bash
# perf record --buildid-offset
# SPDX-License-Identifier: GPL-2.0
#
# The samples of a task perf never saw map anything (--synth=no, the task
# older than perf) resolve through their PERF_RECORD_BUILD_ID_OFFSET: by
# build-ID and offset, in perf report and perf script, with the sampled IP
# and with user callchains read in the interrupt (fp) or on the way back
# to user space (fp,defer).  A malformed record is skipped with a warning.

set -e

# shellcheck source=lib/build_id_offset.sh
. "$(dirname "$0")"/lib/build_id_offset.sh

err=0
tmpdir=$(mktemp -d /tmp/__perf_test.bido.XXXXX)
perfdata="${tmpdir}/perf.data"
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

# The build-ID cache of this test only (HOME/.debug): files are found
# by build-ID there
export HOME="${tmpdir}"

rc=0
build_id_offset_supported "perf record --buildid-offset" || rc=$?
if [ "${rc}" != 0 ]
then
  [ "${rc}" = 2 ] && echo "Unsupported kernel gives a clear error [Success]"
  cleanup
  exit ${rc}
fi

# A task older than perf: perf test -w noploop, in perf's own binary.
if ! noploop_start wpid "perf record --buildid-offset"
then
  cleanup
  exit 1
fi
perf_bin=$(readlink -f "/proc/${wpid}/exe")
perf_bid=$(perf buildid-list -i "${perf_bin}")

# record NAME ARGS...: 2 s of the workload, whose mappings perf does not read
record() {
  local name=$1

  shift
  if ! perf record -o "${perfdata}" --synth=no -e cpu-clock:u -c 1000000 "$@" \
       -p "${wpid}" -- sleep 2 > "${tmpdir}/record.log" 2>&1
  then
    echo "${name} [Failed perf record $*]"
    cat "${tmpdir}/record.log"
    err=1
    return 1
  fi
}

# nr_samples: samples of the workload in the file
nr_samples() {
  perf script -i "${perfdata}" -F tid 2> /dev/null | grep -c "${wpid}" || true
}

# Without the option the workload's addresses resolve to nothing: what
# the other cases find comes from the records.
test_no_option() {
  local name="No build-ID offset, no mappings: nothing resolves"

  record "${name}" || return 0
  if perf script -i "${perfdata}" -F sym 2> /dev/null | grep -q noploop
  then
    echo "${name} [Failed noploop resolved without records]"
    err=1
    return
  fi
  echo "${name} [Success]"
}

# joined NAME REUSE: in time order (perf report -D), each sample's cookie
# is its tid's latest record before it (the kernel saw at sample time that
# this record covers the sample, and wrote none for its entry) or a record
# of its tid after it (its entry's); any other cookie fails NAME.  An
# UNCHANGED record (nr 0: the record before it still covers its entry) is
# a record like the others.  The workload never sleeps: only its last
# entry may still be in the kernel when perf stops, so one cookie may have
# no record, if no record of its tid came after its samples (not so a
# cookie of a record that is not in the file, another session's, say).
# REUSE 1: without a callchain or with one read in the interrupt the
# kernel decides at sample time, so in this steady loop some samples name
# an earlier record, and there are fewer records than samples.  The counts
# go to joined_info.
joined() {
  local name=$1 reuse=$2 counts nmiss npassed nsamp nrec nearlier nstale nunch stale

  perf report -D -i "${perfdata}" > "${tmpdir}/dump" 2> /dev/null
  counts=$(awk '
    /PERF_RECORD_SAMPLE/ { tid = $0; sub(/.*: [0-9]+\//, "", tid); sub(/:.*/, "", tid) }
    /build-ID offset cookie:/ {
      c = $NF
      if (c == "0")
        next
      nsamp++
      if (latest[tid] == c)
        nearlier++
      else if ((tid " " c) in seen) {
        nstale++
        if (stale == "")
          stale = tid "/" c
      } else
        pending[tid " " c] = 1
    }
    /PERF_RECORD_BUILD_ID_OFFSET/ {
      t = $0; sub(/.*PERF_RECORD_BUILD_ID_OFFSET [0-9]+\//, "", t); sub(/:.*/, "", t)
      c = $0; sub(/.*cookie /, "", c); sub(/ .*/, "", c)
      nr = $0; sub(/.* nr /, "", nr); sub(/ .*/, "", nr)
      f = $0; sub(/.* flags /, "", f)
      seen[t " " c] = 1; latest[t] = c; nrec++
      delete pending[t " " c]
      for (k in pending)
        if (index(k, t " ") == 1)
          passed[k] = 1
      if (nr == "0" && (f ~ /UNCHANGED/ || f == "0x8"))
        nunch++
    }
    END {
      for (k in pending) {
        nmiss++
        if (k in passed)
          npassed++
      }
      print nmiss + 0, npassed + 0, nsamp + 0, nrec + 0, nearlier + 0, nstale + 0,
        nunch + 0, stale "-"
    }' "${tmpdir}/dump")
  read -r nmiss npassed nsamp nrec nearlier nstale nunch stale <<< "${counts}"
  joined_info="${nsamp} samples with a cookie, ${nrec} records (${nunch} UNCHANGED),"
  joined_info="${joined_info} ${nearlier} samples name an earlier record"
  if [ "${nsamp}" -eq 0 ] || [ "${nrec}" -eq 0 ]
  then
    echo "${name} [Failed ${joined_info}]"
    return 1
  fi
  if [ "${nstale}" -ne 0 ]
  then
    echo "${name} [Failed ${nstale} samples name a record that is not their tid's" \
         "latest before them, first tid/cookie ${stale%-}: ${joined_info}]"
    return 1
  fi
  if [ "${nmiss}" -gt 1 ] || [ "${npassed}" -ne 0 ]
  then
    echo "${name} [Failed ${nmiss} cookies are neither their tid's latest record" \
         "before the sample nor a record after it (expected 1 at most, of the last" \
         "entry), ${npassed} of them before another record of their tid: ${joined_info}]"
    return 1
  fi
  if [ "${reuse}" = 1 ] && { [ "${nearlier}" -eq 0 ] || [ "${nrec}" -ge "${nsamp}" ]; }
  then
    echo "${name} [Failed expected samples that name an earlier record, and fewer" \
         "records than samples: ${joined_info}]"
    return 1
  fi
}

# Every sample with a cookie names a record of its tid, and the samples of
# the file are the workload's.
test_join() {
  local name="Each sample's cookie has its record"

  record "${name}" --buildid-offset || return 0
  if ! joined "${name}" 1
  then
    err=1
    return
  fi
  echo "${name} [Success: ${joined_info}]"
}

# resolved NAME MIN: at least MIN% of the workload's samples are in
# noploop, of perf's binary
resolved() {
  local name=$1 min=$2 total hits

  total=$(nr_samples)
  hits=$(perf script -G -i "${perfdata}" -F tid,ip,sym,dso 2> /dev/null |
         grep "${wpid}" | grep -c "noploop.*$(basename "${perf_bin}")" || true)
  if [ "${total}" -eq 0 ] || [ $((hits * 100)) -lt $((total * min)) ]
  then
    echo "${name} [Failed ${hits} of ${total} samples in noploop]"
    err=1
    return 1
  fi
}

# A file known by build-ID only is shown by its build-ID until it is in
# the build-ID cache; then its symbols resolve.
test_build_id_cache() {
  local name="Unnamed file shown by build-ID, resolved from the build-ID cache"

  # -N: perf record caches nothing, so it names no file either
  rm -rf "${HOME}/.debug"
  record "${name}" --buildid-offset -N || return 0
  if ! perf report -i "${perfdata}" --stdio --sort dso 2> /dev/null |
       grep -q "\[build-id:${perf_bid}\]"
  then
    echo "${name} [Failed no [build-id:${perf_bid}] in perf report]"
    err=1
    return
  fi
  perf buildid-cache --add "${perf_bin}"
  # The workload spends all its time in noploop (cpu-clock:u samples user
  # time only), and each sample waits for its record or names one perf
  # has already: every one resolves, the first of the recording too,
  # which no earlier record mapped.
  resolved "${name}" 100 || return 0
  echo "${name} [Success]"
}

# callchain NAME ARGS...: each sample's cookie names a record (and with
# callchains read in the interrupt, some name an earlier one), and the
# user callchains of noploop's samples reach main() of perf, resolved
test_callchain() {
  local name=$1 with_main total reuse=1

  shift
  case "$*" in
  *defer*) reuse=0 ;;
  esac
  record "${name}" --buildid-offset "$@" || return 0
  if ! joined "${name}" "${reuse}"
  then
    err=1
    return
  fi
  resolved "${name}" 100 || return 0
  total=$(nr_samples)
  with_main=$(perf script -i "${perfdata}" -F tid,ip,sym 2> /dev/null |
              awk -v pid="${wpid}" '
                /^ *[^ ]+ +[0-9]+ *$/ || /^ *[0-9]+ *$/ { in_s = ($1 == pid); next }
                in_s && $2 == "main" { n++; in_s = 0 }
                END { print n + 0 }')
  if [ $((with_main * 100)) -lt $((total * 90)) ]
  then
    echo "${name} [Failed ${with_main} of ${total} callchains reach main]"
    perf script -i "${perfdata}" -F tid,ip,sym 2>&1 | head -40
    err=1
    return
  fi
  echo "${name} [Success: ${with_main} of ${total} callchains reach main;" \
       "${joined_info}]"
}

# crashed STATUS: whether an exit status is a death by a signal (perf
# exits 255 for an error of its own)
crashed() {
  [ "$1" -gt 128 ] && [ "$1" -lt 255 ]
}

# corrupt_nr NAME TYPE AT [NTH]: set the nr field at offset AT of the
# NTH (default: first) record of TYPE in the file (found by perf report
# -D's "OFFSET [0xSIZE]: TYPE" lines) to 0xffff; fails the test NAME if
# there is no such record
corrupt_nr() {
  local name=$1 type=$2 at=$3 nth=${4:-1} off

  off=$(perf report -D -i "${perfdata}" 2> /dev/null |
        awk -v type="${type}" -v nth="${nth}" '$0 ~ type {
          for (i = 1; i < NF; i++)
            if ($i ~ /^0x/ && $(i + 1) ~ /^\[0x/ && ++n == nth) { print $i; exit }
        }')
  if [ -z "${off}" ]
  then
    echo "${name} [Failed no ${type} in the file]"
    err=1
    return 1
  fi
  printf '\xff\xff\x00\x00' |
    dd of="${perfdata}" bs=1 seek=$((off + at)) conv=notrunc status=none
}

# A record whose nr does not fit in it is skipped, with a warning; the
# reader neither crashes nor reads past it, prints the rest, and exits
# non-zero: its output misses what the record held.
test_malformed() {
  local name="Record with a bad nr is skipped with a warning"
  local rc

  # A record per entry (deferred callchains): the samples of the second
  # one's entry resolve with the first one's maps all the same, which the
  # samples of the entries after it name
  record "${name}" --buildid-offset --call-graph fp,defer || return 0
  # nr is the u32 at offset 24 of the record
  corrupt_nr "${name}" PERF_RECORD_BUILD_ID_OFFSET 24 2 || return 0
  rc=0
  perf report -i "${perfdata}" --stdio > "${tmpdir}/report.out" \
    2> "${tmpdir}/report.err" || rc=$?
  if [ "${rc}" -eq 0 ] || crashed "${rc}" || ! grep -q noploop "${tmpdir}/report.out"
  then
    echo "${name} [Failed perf report: exit ${rc}, or no report]"
    cat "${tmpdir}/report.err"
    err=1
    return
  fi
  if ! grep -q "PERF_RECORD_BUILD_ID_OFFSET: size .* does not hold nr 65535 maps" \
       "${tmpdir}/report.err"
  then
    echo "${name} [Failed no warning]"
    cat "${tmpdir}/report.err"
    err=1
    return
  fi
  rc=0
  perf script -i "${perfdata}" > "${tmpdir}/script.out" 2> /dev/null || rc=$?
  if [ "${rc}" -eq 0 ] || crashed "${rc}" || ! grep -q noploop "${tmpdir}/script.out"
  then
    echo "${name} [Failed perf script: exit ${rc}, or no output]"
    err=1
    return
  fi
  echo "${name} [Success]"
}

# A deferred callchain whose nr runs past its record is refused: perf
# report says it cannot parse it rather than read beyond the record.
test_malformed_callchain() {
  local name="Deferred callchain with a bad nr is refused"
  local rc=0

  record "${name}" --call-graph fp,defer || return 0
  # nr is the u64 at offset 16 of the record
  corrupt_nr "${name}" PERF_RECORD_CALLCHAIN_DEFERRED 16 || return 0
  perf report -i "${perfdata}" --stdio > /dev/null 2> "${tmpdir}/report.err" || rc=$?
  if crashed "${rc}" || ! grep -q "can't parse CALLCHAIN_DEFERRED" "${tmpdir}/report.err"
  then
    echo "${name} [Failed exit ${rc}, no parse error]"
    cat "${tmpdir}/report.err"
    err=1
    return
  fi
  echo "${name} [Success]"
}

# A file without build-ID offset records reads as upstream perf reads it:
# the samples held for their deferred callchains are delivered the same
# way.  PERF_BASE: a perf of the same version without this series.
test_same_as_base() {
  local name="fp,defer file: perf script prints what perf without the series prints"

  if [ -z "${PERF_BASE}" ] || [ ! -x "${PERF_BASE}" ]
  then
    echo "${name} [Skipped PERF_BASE is not set to a perf without the series]"
    return
  fi
  # With the workload's mappings (no --synth=no), so that frames resolve
  if ! perf record -o "${perfdata}" -e cpu-clock:u -c 1000000 --call-graph fp,defer \
       -p "${wpid}" -- sleep 2 > "${tmpdir}/record.log" 2>&1
  then
    echo "${name} [Failed perf record]"
    cat "${tmpdir}/record.log"
    err=1
    return
  fi
  perf script -i "${perfdata}" -F tid,time,ip,sym,dso > "${tmpdir}/ours" 2> /dev/null
  "${PERF_BASE}" script -i "${perfdata}" -F tid,time,ip,sym,dso > "${tmpdir}/base" 2> /dev/null
  if [ ! -s "${tmpdir}/base" ] || ! cmp -s "${tmpdir}/ours" "${tmpdir}/base"
  then
    echo "${name} [Failed outputs differ]"
    diff "${tmpdir}/base" "${tmpdir}/ours" | head -20
    err=1
    return
  fi
  echo "${name} [Success: $(grep -c . "${tmpdir}/ours") lines]"
}

test_no_option
test_join
test_build_id_cache
test_callchain "In-interrupt callchains resolve by build-ID" --call-graph fp
test_callchain "Deferred callchains resolve by build-ID" --call-graph fp,defer
test_malformed
test_same_as_base
test_malformed_callchain

cleanup
exit ${err}
