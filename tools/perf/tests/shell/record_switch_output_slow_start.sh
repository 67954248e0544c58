#!/bin/bash
# perf record --switch-output=1s switches when its start-up outlasts 1 s
# SPDX-License-Identifier: GPL-2.0

# perf record -a first reads the mappings of every task.  When that takes
# longer than the --switch-output period, the first alarm came before
# perf could switch, was dropped, and nothing armed the alarm again: one
# file to the end.  A process with 60,000 executable mappings makes the
# start-up long here; where it still takes less than the period, the
# test cannot tell and says so.  --proc-map-timeout: the default stops
# reading a process's mappings after 500 ms.

set -e

shelldir=$(dirname "$0")
. "${shelldir}"/lib/build_id_offset.sh

name="perf record --switch-output=1s with a slow start"
dir=$(mktemp -d /tmp/__perf_test.slow_start.XXXXX)
mapper=

cleanup() {
  if [ -n "${mapper}" ]
  then
    kill "${mapper}" 2> /dev/null || true
    wait "${mapper}" 2> /dev/null || true
  fi
  rm -rf "${dir}"
  trap - EXIT TERM INT
}

trap_cleanup() {
  cleanup
  exit 1
}
trap trap_cleanup EXIT TERM INT

if ! perf record -o "${dir}/probe.data" -a -e cpu-clock -- true > /dev/null 2>&1
then
  echo "${name} [Skipped cannot record system-wide]"
  cleanup
  exit 2
fi

cat > "${dir}/mapper.c" << 'EOF'
#include <stdio.h>
#include <sys/mman.h>
#include <unistd.h>

/*
 * Map the pages of a file executable, in reverse order so that no two
 * mappings merge, then wait to be killed
 */
int main(int argc, char **argv)
{
	long page = sysconf(_SC_PAGESIZE), n = 60000, i;
	FILE *f = fopen(argv[1], "w+");

	if (!f || ftruncate(fileno(f), n * page))
		return 1;
	for (i = n - 1; i >= 0; i--)
		if (mmap(NULL, page, PROT_READ | PROT_EXEC, MAP_PRIVATE,
			 fileno(f), i * page) == MAP_FAILED)
			return 1;
	printf("ready\n");
	fflush(stdout);
	pause();
	return 0;
}
EOF
rc=0
bido_cc "${name}" "${dir}/mapper" "${dir}/mapper.c" -O1 || rc=$?
if [ "${rc}" != 0 ]
then
  cleanup
  exit "${rc}"
fi

"${dir}/mapper" "${dir}/pages" > "${dir}/mapper.out" &
mapper=$!
for _ in $(seq 600)
do
  grep -q ready "${dir}/mapper.out" && break
  sleep 0.1
done
if ! grep -q ready "${dir}/mapper.out"
then
  echo "${name} [Failed the mapping process did not start]"
  cleanup
  exit 1
fi

# The workload starts once perf record has read every task
t0=$(date +%s%N)
perf record -o "${dir}/out.data" -a -e cpu-clock -F 99 --switch-output=1s \
  --proc-map-timeout=20000 -- \
  sh -c "date +%s%N > ${dir}/started; sleep 5" > "${dir}/record.out" 2>&1 || true
startup=$(( ($(cat "${dir}/started") - t0) / 1000000 ))
files=$(find "${dir}" -name 'out.data.*' | wc -l)
echo "start-up ${startup} ms, ${files} files"
err=0
if [ "${startup}" -lt 1200 ]
then
  echo "${name} [Skipped start-up took ${startup} ms, less than the period]"
  err=2
elif [ "${files}" -lt 3 ]
then
  echo "${name} [Failed ${files} files in 5 s of recording after ${startup} ms of start-up]"
  tail -5 "${dir}/record.out"
  err=1
fi
cleanup
exit "${err}"
