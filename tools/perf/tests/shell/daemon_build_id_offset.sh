#!/bin/bash
# perf daemon rotates --buildid-offset files that resolve on their own
# SPDX-License-Identifier: GPL-2.0
#
# An always-on session of perf daemon: perf record -a --synth=no
# --buildid-offset --switch-output, rotated by 'perf daemon signal'.  Each
# rotated file must resolve the samples of a task that runs across every
# rotation, and of a task started and gone within one period, to their
# function in their file, from its own records alone.  perf record
# --switch-output keeps no build-ID cache by default: the files of tasks
# older than perf are named by the cache a user filled (here: perf).

set -e

# shellcheck source=lib/build_id_offset.sh
. "$(dirname "$0")"/lib/build_id_offset.sh
build_id_offset_supported "perf daemon --buildid-offset" || exit $?

err=0
tmpdir=$(mktemp -d /tmp/__perf_test.bido_daemon.XXXXX)
config="${tmpdir}/config"
base="${tmpdir}/base"
daemon_up=
long=

cleanup() {
  if [ -n "${long}" ]
  then
    kill "${long}" 2> /dev/null || true
    wait "${long}" 2> /dev/null || true
  fi
  if [ -n "${daemon_up}" ]
  then
    perf daemon stop --config "${config}" > /dev/null 2>&1 || true
  fi
  rm -rf "${tmpdir}"
  trap - EXIT TERM INT
}

trap_cleanup() {
  cleanup
  exit 1
}
trap trap_cleanup EXIT TERM INT

# A build-ID cache of its own, with perf in it
export HOME="${tmpdir}"
mkdir -p "${base}"
perf buildid-cache --add "$(readlink -f "$(command -v perf)")"

# The number of rotated files so far
nr_files() {
  find "${base}/session-bido" -name 'perf.data.*' 2> /dev/null | wc -l
}

# Wait (120 s at most) until there are $1 rotated files
wait_files() {
  local end=$((SECONDS + 120))

  while [ "${SECONDS}" -lt "${end}" ]; do
    [ "$(nr_files)" -ge "$1" ] && return 0
    sleep 0.2
  done
  return 1
}

cat > "${config}" << EOF
[daemon]
base=${base}

[session-bido]
run = -a --synth=no --buildid-offset -e cpu-clock:u -F 499 --switch-output
EOF

# The long task runs before perf record starts, across every rotation
if ! noploop_start long "perf daemon --buildid-offset"
then
  cleanup
  exit 1
fi

perf daemon start --config "${config}"
daemon_up=1
end=$((SECONDS + 120))
while [ "${SECONDS}" -lt "${end}" ]; do
  state=$(perf daemon ping --config "${config}" --session bido 2> /dev/null | awk '{ print $1 }')
  [ "${state}" = OK ] && break
  sleep 0.2
done
if [ "${state}" != OK ]
then
  echo "perf daemon --buildid-offset [Failed the session did not answer a ping in 120 s]"
  cat "${base}/output" 2> /dev/null
  cleanup
  exit 1
fi

# Three periods, each with a short task of its own; rotated after each
shorts=()
for i in 1 2 3
do
  perf test -w noploop 1 &
  shorts+=($!)
  wait $! || true
  # Some samples of the long task after the short one
  sleep 1
  perf daemon signal --config "${config}" --session bido > /dev/null
  if ! wait_files "${i}"
  then
    echo "perf daemon --buildid-offset [Failed no rotated file ${i} in 120 s]"
    err=1
    break
  fi
done
perf daemon stop --config "${config}" > /dev/null
daemon_up=

# In each file, "SAMPLES NOPLOOP UNRESOLVED" of task $1 with a comm that
# matches $2: all its samples, those in noploop of a file named perf, those
# in neither a named file nor the vDSO.  The long task is in noploop all
# along; the short one, once it runs perf (before, it is this script's
# shell, older than perf: by build-ID), also runs its start-up (ld.so,
# libc: files of its MMAP2 records, where a symbol may be unknown; the
# vDSO's clock_gettime()).
counts() {
  awk -v t="$1" -v c="$2" '$2 == t && $1 ~ c {
      n++
      if ($4 == "noploop" && $NF ~ /\/perf\)$/) hits++
      if ($NF !~ /^\(\// && $NF != "([vdso])") bad++
    }
    END { print n + 0, hits + 0, bad + 0 }' "${tmpdir}/script"
}

# The first three files: the period of each short task
files=0
for f in $(find "${base}/session-bido" -name 'perf.data.*' | sort | head -n 3)
do
  short=${shorts[${files}]}
  files=$((files + 1))
  perf script -i "${f}" -F comm,tid,ip,sym,dso 2> /dev/null > "${tmpdir}/script"
  read -r n hits _ <<< "$(counts "${long}" .)"
  read -r sn shits sbad <<< "$(counts "${short}" ^perf)"
  if [ "${n}" = 0 ] || [ "${hits}" != "${n}" ] ||
     [ "${sn}" = 0 ] || [ "${shits}" = 0 ] || [ "${sbad}" != 0 ]
  then
    echo "perf daemon --buildid-offset [Failed file ${files}:" \
         "long task ${hits} of ${n} samples in noploop of perf;" \
         "short task ${shits} of ${sn}, ${sbad} unresolved]"
    awk -v l="${long}" -v s="${short}" '$2 == l || $2 == s { print $1, $2, $4, $NF }' \
      "${tmpdir}/script" | sort | uniq -c | head -8
    err=1
  fi
done
if [ "${files}" -lt 3 ]
then
  echo "perf daemon --buildid-offset [Failed ${files} rotated files, not 3]"
  err=1
fi
[ "${err}" = 0 ] && echo "perf daemon --buildid-offset [Success: ${files} files]"
cleanup
exit ${err}
