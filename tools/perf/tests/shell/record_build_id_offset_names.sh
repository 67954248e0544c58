#!/bin/bash
# perf record --buildid-offset names the files
# SPDX-License-Identifier: GPL-2.0
#
# perf record --buildid-offset --synth=no reads no task's mappings, yet
# the files its records know by build-ID end up in the build-ID cache by
# name, as the files of MMAP records do: perf report then resolves them
# without help.  Also for a task in a mount namespace of its own, whose
# file perf cannot see at that path; and not with --no-buildid-cache,
# where nothing is cached.

set -e

# shellcheck source=lib/build_id_offset.sh
. "$(dirname "$0")"/lib/build_id_offset.sh

err=0
tmpdir=$(mktemp -d /tmp/__perf_test.bido_names.XXXXX)
perfdata="${tmpdir}/perf.data"
wpid=
# The workload's pid, after it stopped
wtid=

stop_workload() {
  if [ -n "${wpid}" ]
  then
    kill "${wpid}" 2> /dev/null || true
    wait "${wpid}" 2> /dev/null || true
    wtid=${wpid}
    wpid=
  fi
}

# start_workload NAME: the workload, in its loop
start_workload() {
  noploop_start wpid "$1" && return 0
  err=1
  stop_workload
  return 1
}

cleanup() {
  stop_workload
  umount "${tmpdir}/ns" 2> /dev/null || true
  rm -rf "${tmpdir}"
  trap - EXIT TERM INT
}

trap_cleanup() {
  cleanup
  exit 1
}
trap trap_cleanup EXIT TERM INT

# The build-ID cache of this test only, empty at each case
export HOME="${tmpdir}"

rc=0
build_id_offset_supported "perf record --buildid-offset names the files" || rc=$?
if [ "${rc}" != 0 ]
then
  cleanup
  exit ${rc}
fi

perf_bin=$(readlink -f "$(command -v perf)")
perf_bid=$(perf buildid-list -i "${perf_bin}")

# record NAME ARGS...: 2 s of the workload wpid, whose mappings perf does
# not read, into an empty build-ID cache
record() {
  local name=$1

  shift
  rm -rf "${HOME}/.debug"
  if ! perf record -o "${perfdata}" --buildid-offset --synth=no -e cpu-clock:u \
       -c 1000000 "$@" -p "${wpid}" -- sleep 2 > "${tmpdir}/record.log" 2>&1
  then
    echo "${name} [Failed perf record $*]"
    cat "${tmpdir}/record.log"
    err=1
    return 1
  fi
}

# in_noploop: "HITS TOTAL", the workload's samples in noploop of a file
# named perf, and all its samples
in_noploop() {
  perf script -i "${perfdata}" -F tid,ip,sym,dso 2> /dev/null |
    awk -v pid="${wtid}" '$1 == pid { n++; if ($3 == "noploop" && $4 ~ /\/perf\)$/) h++ }
                          END { print h + 0, n + 0 }'
}

# cached BUILD_ID: the name under which the build-ID cache has a copy of
# the file of BUILD_ID, empty if none (perf buildid-cache -l would list
# only files found at that name in perf's own mount namespace)
cached() {
  local link="${HOME}/.debug/.build-id/${1:0:2}/${1:2}" target

  [ -f "${link}/elf" ] || return 0
  target=$(readlink "${link}")
  target=${target#../..}
  echo "${target%/"$1"}"
}

# named NAME PATH: the recording's perf binary is in the build-ID cache
# under PATH, and every sample of the workload resolves to noploop in it
named() {
  local name=$1 path=$2 hits total

  if [ "$(cached "${perf_bid}")" != "${path}" ]
  then
    echo "${name} [Failed ${path} (${perf_bid}) is not in the build-ID cache]"
    err=1
    return
  fi
  read -r hits total <<< "$(in_noploop)"
  if [ "${total}" -eq 0 ] || [ "${hits}" -ne "${total}" ] ||
     perf report -i "${perfdata}" --stdio --sort dso 2> /dev/null | grep -q '\[build-id:'
  then
    echo "${name} [Failed ${hits} of ${total} samples in noploop of perf, or files by build-ID]"
    err=1
    return
  fi
  echo "${name} [Success: ${hits} of ${total} samples]"
}

# A task older than perf: its binary gets into the build-ID cache by
# name, and every sample resolves to it by name.
test_named() {
  local name="Files of a task older than perf are named and cached"

  start_workload "${name}" || return 0
  record "${name}" || { stop_workload; return 0; }
  stop_workload
  named "${name}" "${perf_bin}"
}

# -N: no build-ID cache, nothing named; the file is shown by build-ID.
test_no_cache() {
  local name="With --no-buildid-cache nothing is named"

  start_workload "${name}" || return 0
  record "${name}" -N || { stop_workload; return 0; }
  stop_workload
  if [ -n "$(cached "${perf_bid}")" ] ||
     ! perf report -i "${perfdata}" --stdio --sort dso 2> /dev/null |
       grep -q "\[build-id:${perf_bid}\]"
  then
    echo "${name} [Failed a file was cached, or perf is not shown by build-ID]"
    err=1
    return
  fi
  echo "${name} [Success]"
}

# A task in a mount namespace of its own runs a copy of perf from a tmpfs
# that perf record does not see: the copy is read through the task's
# root, cached under the task's path, and resolves.
test_mount_namespace() {
  local name="A file only the task's mount namespace has is named"
  local ns_bin="${tmpdir}/ns/perf"

  if ! command -v unshare > /dev/null
  then
    echo "${name} [Skipped no unshare]"
    return
  fi
  mkdir -p "${tmpdir}/ns"
  unshare -m --propagation private sh -c \
    "mount -t tmpfs none '${tmpdir}/ns' && cp '${perf_bin}' '${ns_bin}' &&
     exec '${ns_bin}' test -w noploop 3600" &
  wpid=$!
  # The workload runs the copy once the namespace is set up
  while [ "$(readlink "/proc/${wpid}/exe" 2> /dev/null)" != "${ns_bin}" ]
  do
    if ! kill -0 "${wpid}" 2> /dev/null
    then
      echo "${name} [Skipped cannot mount a tmpfs in a new mount namespace]"
      wpid=
      return
    fi
    sleep 0.1
  done
  if [ -e "${ns_bin}" ]
  then
    echo "${name} [Failed ${ns_bin} is visible outside the namespace]"
    err=1
    stop_workload
    return
  fi
  if ! wait_noploop "${wpid}"
  then
    echo "${name} [Failed the workload did not start]"
    err=1
    stop_workload
    return
  fi
  record "${name}" || { stop_workload; return 0; }
  stop_workload
  named "${name}" "${ns_bin}"
}

test_named
test_no_cache
test_mount_namespace

cleanup
exit ${err}
