#!/bin/bash
# libperf example resolves samples by build-ID and file offset
# SPDX-License-Identifier: GPL-2.0
#
# tools/lib/perf/Documentation/examples/build_id_offset.c opens a CPU-wide
# session with libperf, runs a workload and joins its samples with their
# build-ID offset records.  Each answer must be what the workload's
# /proc/PID/maps (read while it runs) and the mapped files' build-IDs say.
# LIBPERF_EXAMPLES: the directory of the built example.

name="libperf example, build-ID offset"
example=${LIBPERF_EXAMPLES}/build_id_offset
if [ ! -x "${example}" ]
then
  echo "${name} [Skipped the example is not built (LIBPERF_EXAMPLES=${LIBPERF_EXAMPLES})]"
  exit 2
fi

tmpdir=$(mktemp -d /tmp/__perf_test.libperf_bido.XXXXX)
trap 'rm -rf "${tmpdir}"' EXIT

"${example}" perf test -w noploop 2 > "${tmpdir}/out" 2> "${tmpdir}/err" &
epid=$!
# The workload's pid comes first; its maps, once it runs perf, again and
# again while it lives: their union is the truth
wpid=
while [ -z "${wpid}" ] && kill -0 "${epid}" 2> /dev/null
do
  wpid=$(awk '/^workload / { print $2; exit }' "${tmpdir}/out")
  sleep 0.1
done
while [ -n "${wpid}" ] && cat "/proc/${wpid}/maps" >> "${tmpdir}/maps" 2> /dev/null
do
  sleep 0.2
done
rc=0
wait "${epid}" || rc=$?
if [ "${rc}" != 0 ]
then
  if grep -q "no PERF_SAMPLE_BUILD_ID_OFFSET" "${tmpdir}/err"
  then
    echo "${name} [Skipped kernel has no PERF_SAMPLE_BUILD_ID_OFFSET]"
    exit 2
  fi
  echo "${name} [Failed the example exited with ${rc}: $(tail -n 2 "${tmpdir}/err")]"
  exit 1
fi

# The build-ID of each file the workload mapped
awk 'NF >= 6 && $6 ~ /^\// { print $6 }' "${tmpdir}/maps" | sort -u |
  while read -r path
  do
    echo "${path} $(perf buildid-list -i "${path}" 2> /dev/null)"
  done > "${tmpdir}/ids"

# "IP START PGOFF PATH BUILD-ID ANSWER" for each sample: the file mapping
# of its IP in the maps (hex compared as 16 digits), its answer
awk -v ids="${tmpdir}/ids" '
  function pad(x) { sub(/^0x/, "", x); x = sprintf("%16s", x); gsub(/ /, "0", x); return x }
  BEGIN { while ((getline l < ids) > 0) { split(l, f, " "); bid[f[1]] = f[2] } }
  FNR == NR {
    if (NF >= 6 && $6 ~ /^\//) {
      split($1, r, "-"); n++; st[n] = r[1]; s[n] = pad(r[1]); e[n] = pad(r[2])
      o[n] = $3; p[n] = $6
    }
    next
  }
  $1 == "sample" {
    ip = pad($4); m = 0
    for (i = 1; i <= n && !m; i++)
      if (s[i] <= ip && ip < e[i])
        m = i
    if (m)
      print $4, st[m], o[m], p[m], bid[p[m]], $5, $6
    else
      print $4, "-", "-", "-", "-", $5, $6
  }' "${tmpdir}/maps" "${tmpdir}/out" > "${tmpdir}/joined"

right=0 wrong=0 unresolved=0 other=0
while read -r ip start pgoff path id answer why
do
  if [ "${path}" = "-" ] || [ "${why}" = "no-cookie" ]
  then
    # Not in a file (the vDSO), or the kernel promised no record
    other=$((other + 1))
  elif [ "${answer}" = "-" ]
  then
    unresolved=$((unresolved + 1))
    echo "unresolved: ${ip} ${why} (${path})"
  elif [ "${answer}" = "${id}+$(printf '%#x' $((16#${ip#0x} - 16#${start} + 16#${pgoff})))" ]
  then
    right=$((right + 1))
  else
    wrong=$((wrong + 1))
    echo "wrong: ${ip} ${answer}: ${path} ${id} at ${start} + ${pgoff}"
  fi
done < "${tmpdir}/joined"

summary="${right} right, ${wrong} wrong, ${unresolved} unresolved,"
summary="${summary} ${other} in no file or without cookie"
if [ "${wrong}" != 0 ] || [ "${unresolved}" != 0 ] || [ "${right}" -lt 20 ]
then
  echo "${name} [Failed ${summary}]"
  tail -n 1 "${tmpdir}/out"
  exit 1
fi
echo "${name} [Success: ${summary}]"
exit 0
