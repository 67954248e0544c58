#!/bin/bash
# perf inject --buildid-offset-mmap2
# SPDX-License-Identifier: GPL-2.0
#
# A file recorded with --buildid-offset, converted for a perf without the
# option, must read there as it reads here: each sample at the same
# address of the same file and symbol, with the same callchain, in time
# order with round marks, and without a record a perf without the option
# does not know.  PERF_BASE: such a perf (of the same version); without it
# the converted file is read by this perf only.

set -e

# shellcheck source=lib/build_id_offset.sh
. "$(dirname "$0")"/lib/build_id_offset.sh

err=0
tmpdir=$(mktemp -d /tmp/__perf_test.inject_bido.XXXXX)
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

# The build-ID cache of this test only: files are found by build-ID there
export HOME="${tmpdir}"

rc=0
build_id_offset_supported "perf inject --buildid-offset-mmap2" || rc=$?
if [ "${rc}" != 0 ]
then
  cleanup
  exit ${rc}
fi

# A task older than perf, whose samples resolve through their records only
if ! noploop_start wpid "perf inject --buildid-offset-mmap2"
then
  cleanup
  exit 1
fi
perf_bin=$(readlink -f "/proc/${wpid}/exe")
# Every file of its code, so that both readers name and read them from
# the build-ID cache (a perf without 'perf symbols: Take no PLT symbols
# from a debug-only file' crashes on a file it finds by build-ID in
# /usr/lib/debug only)
for f in $(awk '$2 ~ /x/ && $6 ~ /^\// { print $6 }' "/proc/${wpid}/maps" | sort -u)
do
  perf buildid-cache --add "${f}" 2> /dev/null || true
done

readers="perf"
if [ -n "${PERF_BASE}" ] && [ -x "${PERF_BASE}" ]
then
  readers="perf ${PERF_BASE}"
else
  echo "PERF_BASE is not set to a perf without the series: this perf reads the output"
fi

# count TYPE FILE: the records of TYPE in FILE
count() {
  perf report -D -i "$2" 2> /dev/null | grep -c "PERF_RECORD_$1" || true
}

# compare NAME IN OUT: OUT, converted from IN, reads as IN in every reader
compare() {
  local name=$1 in=$2 out=$3 reader lines hits rin rout

  # The cookie of a deferred callchain that never came (the last entry's)
  # is no address: perf names it so while the attribute asks for deferred
  # callchains, which the converted file's does not; a perf without
  # deferred callchains (6.12) does not show it.  Compared without it.
  perf script -i "${in}" -F tid,time,ip,sym,dso 2> /dev/null > "${tmpdir}/raw"
  sed -nE 's/^\s*([0-9a-f]+) \(cookie\) \(\[unknown\]\)$/\1/p' "${tmpdir}/raw" |
    sed 's/.*/^\\s*& \\[unknown\\] \\(\\[unknown\\]\\)$/' > "${tmpdir}/cookies"
  grep -v ' (cookie) (\[unknown\])$' "${tmpdir}/raw" > "${tmpdir}/ours" || true
  lines=$(wc -l < "${tmpdir}/ours")
  hits=$(grep -c "noploop.*$(basename "${perf_bin}")" "${tmpdir}/ours" || true)
  if [ "${hits}" -eq 0 ]
  then
    echo "${name} [Failed no sample resolved to noploop in the recording]"
    err=1
    return
  fi
  for reader in ${readers}
  do
    "${reader}" script -i "${out}" -F tid,time,ip,sym,dso > "${tmpdir}/theirs" 2> /dev/null || true
    if [ -s "${tmpdir}/cookies" ]
    then
      grep -Ev -f "${tmpdir}/cookies" "${tmpdir}/theirs" > "${tmpdir}/theirs.cut" || true
      mv "${tmpdir}/theirs.cut" "${tmpdir}/theirs"
    fi
    if ! cmp -s "${tmpdir}/ours" "${tmpdir}/theirs"
    then
      diff "${tmpdir}/ours" "${tmpdir}/theirs" | head -20
      echo "${name} [Failed ${reader} reads the converted file differently]"
      err=1
      return
    fi
  done
  if [ "$(count BUILD_ID_OFFSET "${out}")" -ne 0 ]
  then
    echo "${name} [Failed build-ID offset records left in the output]"
    err=1
    return
  fi
  # Round N of the input delivers what came before round N - 1, and the
  # output's round mark follows what it could write of that: nothing
  # while its oldest sample still waits for a record of the next round.
  # A first round of a few events, or a last one, may give none; with
  # four rounds in, at least one must come out.
  rin=$(count FINISHED_ROUND "${in}")
  rout=$(count FINISHED_ROUND "${out}")
  if [ "${rin}" -ge 4 ] && [ "${rout}" -eq 0 ]
  then
    echo "${name} [Failed no round marks in the output (${rin} in the input;" \
         "$(count SAMPLE "${in}") samples, $(count BUILD_ID_OFFSET "${in}") records," \
         "$(count LOST "${in}") lost records)]"
    err=1
    return
  fi
  echo "${name} [Success: ${lines} lines, ${hits} in noploop, the same in: ${readers}]"
}

# test_record NAME ARGS...: 2 s of the workload, converted
test_record() {
  local name=$1 in="${tmpdir}/perf.data" out="${tmpdir}/converted.data"

  shift
  # -m 16: 64 KB buffers, read (a round) each time half full, so the
  # input has rounds all along, not only at its end
  if ! perf record -o "${in}" --synth=no --buildid-offset -e cpu-clock:u -c 1000000 \
       -m 16 "$@" -p "${wpid}" -- sleep 2 > "${tmpdir}/record.log" 2>&1
  then
    cat "${tmpdir}/record.log"
    echo "${name} [Failed perf record $*]"
    err=1
    return
  fi
  if ! perf inject --buildid-offset-mmap2 -i "${in}" -o "${out}" 2> "${tmpdir}/inject.log"
  then
    cat "${tmpdir}/inject.log"
    echo "${name} [Failed perf inject]"
    err=1
    return
  fi
  compare "${name}" "${in}" "${out}"
}

# The same from a pipe, where the attributes come as events
test_pipe() {
  local name="Converted from a pipe" in="${tmpdir}/pipe.in" out="${tmpdir}/pipe.data"

  if ! perf record -o - --synth=no --buildid-offset -e cpu-clock:u -c 1000000 -g -m 16 \
       -p "${wpid}" -- sleep 2 2> "${tmpdir}/record.log" | tee "${in}" |
       perf inject --buildid-offset-mmap2 -o "${out}"
  then
    cat "${tmpdir}/record.log"
    echo "${name} [Failed perf record | perf inject]"
    err=1
    return
  fi
  compare "${name}" "${in}" "${out}"
}

test_refused() {
  local name="Other injections and a pipe out of a file are refused"

  if perf inject --buildid-offset-mmap2 -b -i "${tmpdir}/perf.data" -o /dev/null 2> /dev/null ||
     perf inject --buildid-offset-mmap2 -i "${tmpdir}/perf.data" -o - > /dev/null 2>&1
  then
    echo "${name} [Failed]"
    err=1
    return
  fi
  echo "${name} [Success]"
}

test_record "Sampled IPs"
test_record "In-interrupt callchains" --call-graph fp
test_record "Deferred callchains" --call-graph fp,defer
test_pipe
test_refused

cleanup
exit ${err}
