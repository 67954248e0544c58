#!/bin/bash
# perf record --buildid-offset tests
# SPDX-License-Identifier: GPL-2.0

set -e

err=0
perfdata=$(mktemp /tmp/__perf_test.perf.data.XXXXX)
injected=$(mktemp /tmp/__perf_test.perf.data.XXXXX)
dump=$(mktemp /tmp/__perf_test.dump.XXXXX)
workload="perf test -w noploop 1"

cleanup() {
  rm -f "${perfdata}" "${perfdata}".old "${perfdata}".err "${injected}" "${injected}".old "${dump}"
  trap - EXIT TERM INT
}

trap_cleanup() {
  cleanup
  exit 1
}
trap trap_cleanup EXIT TERM INT

# A kernel without the feature: one clear line, a non-zero exit.  Exit 2
# (skip) for the rest then.
test_support() {
  local out

  if out=$(perf record --buildid-offset -e cpu-clock -o /dev/null -- true 2>&1)
  then
    return 0
  fi
  if echo "${out}" | grep -q "does not support PERF_SAMPLE_BUILD_ID_OFFSET"
  then
    echo "Unsupported kernel gives a clear error [Success]"
    echo "Build-ID offset tests [Skipped kernel has no PERF_SAMPLE_BUILD_ID_OFFSET]"
    cleanup
    exit 2
  fi
  echo "Build-ID offset support check [Failed unexpected error: ${out}]"
  cleanup
  exit 1
}

# No record comes twice (one receiving event per CPU or task), and every
# non-zero sample cookie of a task has a record with that tid and cookie.
# System wide (not $2), a task may still be in the kernel when perf
# stops (asleep in a syscall, say): the record of its last entry is then
# never written.  So there, and only for a task's last cookie in time,
# a missing record is allowed (and said); a cookie followed by a later
# one of the same task, which returned to user space in between, must
# have its record.
check_join() {
  local what=$1 strict=$2

  if ! perf report -D -i "${perfdata}" > "${dump}" 2> /dev/null
  then
    echo "${what} [Failed perf report -D]"
    err=1
    return
  fi
  if ! awk -v strict="${strict}" '
    / PERF_RECORD_SAMPLE\(/ {
      split($0, a, ": "); split(a[3], t, "/"); tid = t[2] + 0
      # TIME 0xOFFSET [0xSIZE]: the dump is in file order, not time order
      for (i = 2; i < NF; i++)
        if ($(i + 1) ~ /^\[0x/) { time = $(i - 1) + 0; break }
    }
    / \.\. build-ID offset cookie: / {
      c = $NF
      if (c != "0") {
        want[tid " " c] = 1
        if (!(tid in last) || time >= last[tid]) { last[tid] = time; lastc[tid] = c }
      }
    }
    / PERF_RECORD_BUILD_ID_OFFSET / {
      split($0, a, "BUILD_ID_OFFSET "); split(a[2], f, /[ \/:]+/)
      key = f[2] " " f[4]; seen[key]++; nrec++
    }
    END {
      if (nrec == 0) { print "no records"; exit 1 }
      for (k in seen) if (seen[k] > 1) { print "record twice: " k; bad = 1 }
      for (k in want) {
        nwant++
        if (k in seen)
          continue
        split(k, kc, " ")
        if (lastc[kc[1]] == kc[2]) { nlast++; last_miss = k }
        else { nmiss++; miss = k }
      }
      if (nmiss) {
        print nmiss " of " nwant " cookies without a record although their task ran on, e.g. " miss
        bad = 1
      }
      if (nlast) {
        msg = " cookies of a task'"'"'s last entry without a record, e.g. "
        print nlast " of " nwant msg last_miss
        if (strict) bad = 1
      }
      exit bad
    }' "${dump}"
  then
    echo "${what} [Failed samples and records do not join]"
    err=1
    return
  fi
  echo "${what} [Success]"
}

test_workload() {
  echo "Build-ID offset of a workload, -g, --synth=no"
  if ! perf record --buildid-offset -g -e cpu-clock -c 1000000 --synth=no \
       -o "${perfdata}" -- ${workload} > /dev/null 2>&1
  then
    echo "Workload [Failed record]"
    err=1
    return
  fi
  check_join "Workload" 1
  if ! grep -Eq ' build_id [0-9a-f]{40} ' "${dump}"
  then
    echo "Workload [Failed no map with a build-ID]"
    err=1
  fi
}

test_system_wide() {
  echo "Build-ID offset system wide"
  if ! perf record --buildid-offset -a -e cpu-clock -c 1000000 \
       -o "${perfdata}" -- ${workload} > /dev/null 2> "${dump}"
  then
    # Without privilege, perf_event_paranoid may forbid CPU-wide events
    if [ "$(id -u)" != 0 ] &&
       [ "$(cat /proc/sys/kernel/perf_event_paranoid)" -gt 0 ]
    then
      echo "System wide [Skipped not root, perf_event_paranoid > 0]"
      return
    fi
    echo "System wide [Failed record: $(tail -n 1 "${dump}")]"
    err=1
    return
  fi
  check_join "System wide" 0
}

# The kernel refuses the sample bit and defer_output on an event that
# excludes user space.  Such an event gets neither: kernel-only events
# record as without the option, and beside a user event that one gets
# the records.
test_exclude_user() {
  echo "Build-ID offset with kernel-only events"
  if ! perf record --buildid-offset -e cpu-clock:k -c 1000000 \
       -o "${perfdata}" -- ${workload} > /dev/null 2> "${dump}"
  then
    echo "Kernel only [Failed record: $(tail -n 1 "${dump}")]"
    err=1
    return
  fi
  echo "Kernel only [Success]"
  if ! perf record --buildid-offset -e cpu-clock:k,cpu-clock:u -c 1000000 \
       -o "${perfdata}" -- ${workload} > /dev/null 2> "${dump}"
  then
    echo "Kernel and user [Failed record: $(tail -n 1 "${dump}")]"
    err=1
    return
  fi
  check_join "Kernel and user" 1
}

# perf report --stats counts the samples that carry no cookie (no record
# will come for them) and those that name a record that came before them
# (the kernel reused the task's last record).  A task spinning in user
# space without -g gets one record and names it from then on.
test_stats() {
  local stats nocookie reused want records summary

  echo "Build-ID offset counts in perf report --stats"
  if ! perf record --buildid-offset -e cpu-clock -c 1000000 --synth=no \
       -o "${perfdata}" -- ${workload} > /dev/null 2> "${perfdata}.err"
  then
    echo "Stats [Failed record]"
    err=1
    return
  fi
  stats=$(perf report -i "${perfdata}" --stats 2> /dev/null)
  # perf record's summary counts the records that perf report reads
  records=$(echo "${stats}" | awk '/BUILD_ID_OFFSET events:/ { print $3 }')
  summary=$(sed -n 's/^\[ perf record: \([0-9]*\) build-ID offset records (.*/\1/p' \
            "${perfdata}.err")
  if [ -z "${records}" ] || [ "${summary}" != "${records}" ]
  then
    echo "Stats [Failed perf record summed up '${summary}' records, perf report read '${records}']"
    cat "${perfdata}.err"
    err=1
    return
  fi
  nocookie=$(echo "${stats}" | awk '/BUILD_ID_OFFSET no_cookie/ { print $NF }')
  reused=$(echo "${stats}" | awk '/BUILD_ID_OFFSET reused/ { print $NF }')
  if [ -z "${nocookie}" ] || [ -z "${reused}" ]
  then
    echo "Stats [Failed no no_cookie or reused line]"
    echo "${stats}" | grep -a BUILD_ID_OFFSET
    err=1
    return
  fi
  want=$(perf report -D -i "${perfdata}" 2> /dev/null |
         grep -c ' \.\. build-ID offset cookie: 0$' || true)
  if [ "${nocookie}" != "${want}" ] || [ "${reused}" -eq 0 ]
  then
    echo "Stats [Failed ${nocookie} samples without a cookie (the dump has ${want})," \
         "${reused} reused]"
    err=1
    return
  fi
  echo "Stats [Success: ${records} records, ${reused} samples named an earlier record," \
       "${nocookie} had no cookie]"
}

test_script() {
  echo "Build-ID offset in perf script"
  perf record --buildid-offset -e cpu-clock -c 1000000 \
       -o "${perfdata}" -- ${workload} > /dev/null 2>&1
  if ! perf script -i "${perfdata}" -F +buildid_off 2> /dev/null | grep -q 'buildid_off:0x'
  then
    echo "Script buildid_off field [Failed no cookie printed]"
    err=1
    return
  fi
  if ! perf script -i "${perfdata}" --show-build-id-offset-events 2> /dev/null | \
       grep -q 'PERF_RECORD_BUILD_ID_OFFSET'
  then
    echo "Script records [Failed no record printed]"
    err=1
    return
  fi
  echo "Script [Success]"
}

# perf inject must pass the records through, unchanged in number.
test_inject() {
  local before after

  echo "Build-ID offset through perf inject"
  perf record --buildid-offset -e cpu-clock -c 1000000 \
       -o "${perfdata}" -- ${workload} > /dev/null 2>&1
  if ! perf inject -i "${perfdata}" -o "${injected}" 2> /dev/null
  then
    echo "Inject [Failed perf inject]"
    err=1
    return
  fi
  before=$(perf report -D -i "${perfdata}" 2> /dev/null | grep -c ' PERF_RECORD_BUILD_ID_OFFSET ')
  after=$(perf report -D -i "${injected}" 2> /dev/null | grep -c ' PERF_RECORD_BUILD_ID_OFFSET ')
  if [ "${before}" -eq 0 ] || [ "${before}" -ne "${after}" ]
  then
    echo "Inject [Failed ${before} records before, ${after} after]"
    err=1
    return
  fi
  echo "Inject [Success]"
}

# --build-id-offset, the spelling of earlier versions, still records the
# same; the help lists only --buildid-offset.
test_alias() {
  local help

  echo "Build-ID offset under its old spelling"
  if ! perf record --build-id-offset -e cpu-clock -c 1000000 \
       -o "${perfdata}" -- ${workload} > /dev/null 2>&1
  then
    echo "Alias [Failed record with --build-id-offset]"
    err=1
    return
  fi
  check_join "Alias" 1
  help=$(perf record -h 2>&1 || true)
  if ! echo "${help}" | grep -q -- '--buildid-offset' ||
     echo "${help}" | grep -q -- '--build-id-offset'
  then
    echo "Alias [Failed help does not list --buildid-offset alone]"
    err=1
    return
  fi
  echo "Alias help [Success]"
}


test_support
test_workload
test_system_wide
test_exclude_user
test_stats
test_script
test_inject
test_alias

cleanup
exit $err
