#!/bin/bash
# libperf example resolves samples by build-ID and file offset
# SPDX-License-Identifier: GPL-2.0

# tools/lib/perf/Documentation/examples/build_id_offset.c opens a CPU-wide
# session with libperf, runs a workload and joins its samples with their
# build-ID offset records.  Each answer must be what the workload's
# /proc/PID/maps (read while it runs) and the mapped files' build-IDs
# say.  LIBPERF_EXAMPLES: the directory of the built example.

shelldir=$(dirname "$0")
# shellcheck source=lib/build_id_offset.sh
. "${shelldir}"/lib/build_id_offset.sh

name="libperf example, build-ID offset"
rc=0
bido_support "${name}" || rc=$?
[ "${rc}" = 0 ] || exit "${rc}"
bido_cpu_wide "${name}" || exit 2
example=${LIBPERF_EXAMPLES}/build_id_offset
if [ ! -x "${example}" ]
then
  if [ -n "${LIBPERF_EXAMPLES}" ]
  then
    echo "${name} [Skipped no ${example}]"
  else
    echo "${name} [Skipped the example is not built (LIBPERF_EXAMPLES)]"
  fi
  exit 2
fi
if ! command -v python3 > /dev/null
then
  echo "${name} [Skipped no python3]"
  exit 2
fi

tmpdir=$(mktemp -d /tmp/__perf_test.libperf_bido.XXXXX)
trap 'rm -rf "${tmpdir}"' EXIT

"${example}" perf test -w noploop 2 > "${tmpdir}/out" 2> "${tmpdir}/err" &
epid=$!
bido_wait_line "${tmpdir}/out" "workload " > /dev/null || true
wpid=$(awk '/^workload / { print $2; exit }' "${tmpdir}/out")
# The maps, once the workload spins (it exec()ed perf); again and again
# while it lives: the union is the truth
for _ in $(seq 20)
do
  sleep 0.2
  cat "/proc/${wpid}/maps" >> "${tmpdir}/maps" 2> /dev/null || break
done
rc=0
wait "${epid}" || rc=$?
if [ "${rc}" != 0 ] || [ -z "${wpid}" ]
then
  echo "${name} [Failed the example exited with ${rc}: $(tail -n 2 "${tmpdir}/err")]"
  exit 1
fi

if ! python3 - "${tmpdir}/out" "${tmpdir}/maps" <<'EOF'
import subprocess, sys

truth = set()
for line in open(sys.argv[2]):
    f = line.split()
    if len(f) >= 6:
        start, end = (int(x, 16) for x in f[0].split("-"))
        truth.add((start, end, int(f[2], 16), f[5]))
ids = {}
def build_id(path):
    if path not in ids:
        ids[path] = subprocess.run(["perf", "buildid-list", "-i", path],
                                   capture_output=True, text=True).stdout.strip()
    return ids[path]

right = wrong = unresolved = no_cookie = no_file = 0
for line in open(sys.argv[1]):
    f = line.split()
    if f[0] != "sample":
        continue
    ip = int(f[3], 16)
    t = next((m for m in truth if m[0] <= ip < m[1]), None)
    if not t or not t[3].startswith("/"):
        no_file += 1          # the vDSO, anonymous memory
        continue
    if f[4] == "-" and f[5] == "no-cookie":
        no_cookie += 1        # the kernel promised no record
        continue
    if f[4] == "-":
        unresolved += 1
        print("unresolved:", line.strip())
        continue
    bid, off = f[4].split("+")
    if bid == build_id(t[3]) and int(off, 16) == ip - t[0] + t[2]:
        right += 1
    else:
        wrong += 1
        print(f"wrong: {line.strip()}: truth {t[3]} at {ip - t[0] + t[2]:#x}")
print(f"{right} right, {wrong} wrong, {unresolved} unresolved, {no_cookie} without cookie, "
      f"{no_file} in no file")
sys.exit(1 if wrong or unresolved or right < 20 else 0)
EOF
then
  echo "${name} [Failed]"
  tail -n 1 "${tmpdir}/out"
  exit 1
fi
tail -n 1 "${tmpdir}/out"
echo "${name} [Success]"
exit 0
