#!/bin/bash
# perf top --buildid-offset
# SPDX-License-Identifier: GPL-2.0
#
# perf top --buildid-offset reads no task's maps or comm at start: the
# samples of a task that ran before perf top must still show its comm
# (read at its first sample) and its function in its file, named while it
# runs, not by build-ID.

set -e

# shellcheck source=lib/build_id_offset.sh
. "$(dirname "$0")"/lib/build_id_offset.sh
build_id_offset_supported "perf top --buildid-offset" || exit $?

err=0
tmpdir=$(mktemp -d /tmp/__perf_test.bido_top.XXXXX)
wpid=
tpid=

cleanup() {
  local p

  for p in ${tpid} ${wpid}; do
    kill "${p}" 2> /dev/null || true
    wait "${p}" 2> /dev/null || true
  done
  exec 3>&- 2> /dev/null || true
  rm -rf "${tmpdir}"
  trap - EXIT TERM INT
}

trap_cleanup() {
  cleanup
  exit 1
}
trap trap_cleanup EXIT TERM INT

# A build-ID cache of its own, empty: the file is not named from there
export HOME="${tmpdir}"

# The workload: a copy of perf named topload, so that its file is its
# own, running before perf top starts (it names itself perf-noploop)
cp "$(readlink -f "$(command -v perf)")" "${tmpdir}/topload"
if ! noploop_start wpid "perf top --buildid-offset" "${tmpdir}/topload"
then
  cleanup
  exit 1
fi

# stdin: a FIFO nobody writes to, so that perf top reads no key.  Not a
# terminal: the width comes from COLUMNS, wide enough for a build-ID.
mkfifo "${tmpdir}/keys"
exec 3<> "${tmpdir}/keys"
LINES=40 COLUMNS=300 perf top --stdio --buildid-offset -e cpu-clock:u -d 1 \
  -p "${wpid}" --sort comm,dso,sym <&3 > "${tmpdir}/top.txt" 2> "${tmpdir}/top.err" &
tpid=$!

# "PERCENT perf-noploop topload [.] noploop": comm, file by name, function
line='^ *[0-9.]+% +perf-noploop +topload +\[\.\] noploop *$'
# perf top shows a screen a second once it has the symbols; 120 s at most
end=$((SECONDS + 120))
while [ "${SECONDS}" -lt "${end}" ] && kill -0 "${tpid}" 2> /dev/null; do
  grep -qaE "${line}" "${tmpdir}/top.txt" && break
  sleep 0.5
done

kill -INT "${tpid}" 2> /dev/null || true
wait "${tpid}" || true
tpid=

if grep -qaE "${line}" "${tmpdir}/top.txt"
then
  echo "perf top --buildid-offset [Success]"
else
  echo "perf top --buildid-offset [Failed no 'perf-noploop topload [.] noploop' line]"
  grep -a "%" "${tmpdir}/top.txt" | tail -5
  tail -5 "${tmpdir}/top.err"
  err=1
fi

cleanup
exit ${err}
