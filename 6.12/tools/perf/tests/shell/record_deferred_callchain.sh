#!/bin/bash
# perf record --call-graph fp,defer
# SPDX-License-Identifier: GPL-2.0

set -e

err=0
perfdata=$(mktemp /tmp/__perf_test.perf.data.XXXXX)
dump=$(mktemp /tmp/__perf_test.dump.XXXXX)
# leaf() called by parent() called by leafloop(), with frame pointers
workload="perf test -w leafloop 1"

cleanup() {
  rm -f "${perfdata}" "${perfdata}".old "${perfdata}".inj "${dump}"
  trap - EXIT TERM INT
}

trap_cleanup() {
  cleanup
  exit 1
}
trap trap_cleanup EXIT TERM INT

# A kernel without deferred callchains: perf says so and records fp
# callchains.  Skip the rest then.
test_support() {
  local out

  if ! out=$(perf record --call-graph fp,defer -e cpu-clock -o "${perfdata}" \
	     -- true 2>&1)
  then
    echo "Deferred callchain support check [Failed: ${out}]"
    cleanup
    exit 1
  fi
  if echo "${out}" | grep -q "no deferred callchains"
  then
    echo "Deferred callchain tests [Skipped kernel has no deferred callchains]"
    cleanup
    exit 2
  fi
}

# Of the samples in leaf() (of $1, default the recording), those whose
# next frames are parent() and leafloop(); prints "full leaf".
chain_share() {
  perf script -i "${1:-${perfdata}}" -F ip,sym 2> /dev/null | awk '
    NF == 0 { if (n) { nleaf += s[1] == "leaf"
                       full += s[1] == "leaf" && s[2] == "parent" && s[3] == "leafloop" }
              n = 0; next }
    { s[++n] = $2 }
    END { if (n) { nleaf += s[1] == "leaf"
                   full += s[1] == "leaf" && s[2] == "parent" && s[3] == "leafloop" }
          print full + 0, nleaf + 0 }'
}

# $1: what; $2: perf record options.  The samples carry the deferred
# marker and their records come; merged, at least 90% of the samples in
# leaf() show parent() and leafloop() above it, and no more than two
# samples and 1% of those in leaf() (the entries perf stopped in; a
# fresh-clone make check once saw four with --buildid-offset) lack their
# record, besides those taken in the entry that exec()ed the workload
# (their record describes the new program: perf counts them, as
# "BUILD_ID_OFFSET mm_changed" with --buildid-offset), unless records
# were lost (PERF_RECORD_LOST, counted and shown).  A merge that fails
# loses far more.
test_chains() {
  local what=$1 opts=$2 full nleaf nrec unmerged lost exec_entry

  echo "${what}"
  # shellcheck disable=SC2086
  if ! perf record ${opts} -e cpu-clock -c 500000 -o "${perfdata}" \
       -- ${workload} > /dev/null 2>&1
  then
    echo "${what} [Failed record]"
    err=1
    return
  fi
  perf report -D -i "${perfdata}" > "${dump}" 2> /dev/null || true
  nrec=$(grep -c "PERF_RECORD_CALLCHAIN_DEFERRED" "${dump}" || true)
  if [ "${nrec}" -eq 0 ]
  then
    echo "${what} [Failed no PERF_RECORD_CALLCHAIN_DEFERRED]"
    err=1
    return
  fi
  if ! perf evlist -v -i "${perfdata}" 2> /dev/null | grep -q "defer_callchain: 1"
  then
    echo "${what} [Failed no event with defer_callchain]"
    err=1
    return
  fi
  # shellcheck disable=SC2046
  set -- $(chain_share)
  full=$1 nleaf=$2
  perf report --stats -i "${perfdata}" > "${dump}" 2> /dev/null || true
  unmerged=$(awk '/CALLCHAIN_DEFERRED unmerged/ { print $NF }' "${dump}")
  lost=$(awk '/^ *LOST events:/ { print $3 }' "${dump}")
  exec_entry=$(awk '/BUILD_ID_OFFSET mm_changed/ { print $NF }' "${dump}")
  echo "${what}: ${nrec} records, ${full} of ${nleaf} samples in leaf() with parent()" \
       "and leafloop(), ${unmerged:-0} unmerged, ${exec_entry:-0} in the exec entry," \
       "${lost:-0} LOST records"
  if [ "${nleaf}" -lt 10 ] || [ $((full * 10)) -lt $((nleaf * 9)) ]
  then
    echo "${what} [Failed callchains without their user frames]"
    err=1
    return
  fi
  if [ "${unmerged:-0}" -gt $((2 + nleaf / 100 + ${exec_entry:-0})) ] &&
     [ "${lost:-0}" -eq 0 ]
  then
    echo "${what} [Failed ${unmerged} samples without their record]"
    err=1
    return
  fi
  # perf inject without options passes the records on with the samples
  # that name them: the same chains come out of its output
  if ! perf inject -i "${perfdata}" -o "${perfdata}.inj" > /dev/null 2>&1
  then
    echo "${what} [Failed perf inject]"
    err=1
    return
  fi
  # shellcheck disable=SC2046
  set -- $(chain_share "${perfdata}.inj")
  if [ "$1" != "${full}" ] || [ "$2" != "${nleaf}" ]
  then
    echo "${what} [Failed after perf inject: $1 of $2 samples in leaf()" \
         "with parent() and leafloop()]"
    err=1
    return
  fi
  echo "${what} [Success]"
}

# The same workload with in-interrupt fp callchains: the reference
test_fp() {
  local full nleaf

  if ! perf record --call-graph fp -e cpu-clock -c 500000 -o "${perfdata}" \
       -- ${workload} > /dev/null 2>&1
  then
    echo "fp reference [Failed record]"
    err=1
    return
  fi
  # shellcheck disable=SC2046
  set -- $(chain_share)
  full=$1 nleaf=$2
  echo "fp reference: ${full} of ${nleaf} samples in leaf() with parent() and leafloop()"
}

test_support
test_fp
test_chains "fp,defer" "--call-graph fp,defer"
test_chains "fp,defer with the depth first" "--call-graph fp,64,defer"
# No mmap synthesis: the frames resolve through the build-ID offset records
# of the same cookies, which cover them (one walk)
if perf record --buildid-offset -e cpu-clock -o /dev/null -- true > /dev/null 2>&1
then
  test_chains "fp,defer --buildid-offset --synth=no" \
	      "--call-graph fp,defer --buildid-offset --synth=no"
fi

cleanup
exit ${err}
