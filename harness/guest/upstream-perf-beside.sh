#!/bin/bash
# Upstream perf 7.3, without the series, records a task with deferred
# callchains (`perf record --call-graph fp,defer`) while a system-wide
# PERF_SAMPLE_BUILD_ID_OFFSET session (bido_sampler, as a profiling
# daemon) samples the same task.  Upstream perf must get no record type
# it does not know: its own `perf report` reads its file, and that file
# holds deferred callchains; the other session got build-ID records.
#
# usage: upstream-perf-beside.sh PERF_BASE SAMPLER WORKLOAD
set -u
perf=$1 sampler=$2 workload=$3
dir=$(mktemp -d /tmp/beside.XXXXXX)
trap 'kill $spid 2>/dev/null; rm -rf "$dir"' EXIT

"$sampler" 60 >"$dir/sampler.out" 2>&1 &
spid=$!
# sampling has begun once it says so
for _ in $(seq 100); do
	grep -q ready "$dir/sampler.out" && break
	kill -0 $spid 2>/dev/null || break
	sleep 0.1
done
grep -q ready "$dir/sampler.out" || { cat "$dir/sampler.out"; echo "FAIL: the sampler did not start"; exit 1; }

"$perf" record -q --call-graph fp,defer -e cpu-clock -c 1000000 -o "$dir/perf.data" \
	-- "$workload" 1 >"$dir/record.out" 2>&1 || { cat "$dir/record.out"; echo "FAIL: perf record"; exit 1; }
kill -TERM $spid
wait $spid
cat "$dir/sampler.out"

"$perf" report -i "$dir/perf.data" --stdio >"$dir/report.out" 2>"$dir/report.err"
rc=$?
head -n 5 "$dir/report.err"
[ $rc -eq 0 ] || { echo "FAIL: perf report exited $rc"; exit 1; }
if grep -qiE "failed to process|unknown|unsupported" "$dir/report.err"; then
	echo "FAIL: perf report met a record it does not know"; exit 1
fi
# upstream perf's own file has deferred callchains and nothing of type 23
"$perf" report -i "$dir/perf.data" --stats >"$dir/stats.out" 2>&1
grep -E "CALLCHAIN_DEFERRED|SAMPLE events" "$dir/stats.out"
grep -qE "CALLCHAIN_DEFERRED events: +[1-9]" "$dir/stats.out" ||
	{ echo "FAIL: no deferred callchain in upstream perf's file"; exit 1; }
if grep -qE "UNKNOWN|unknown events: +[1-9]" "$dir/stats.out"; then
	echo "FAIL: upstream perf's file holds records it does not know"; exit 1
fi
# the other session sampled the same task and got its records
set -- $(tail -n 1 "$dir/sampler.out")
[ "$6" -gt 0 ] || { echo "FAIL: the build-ID session got no record"; exit 1; }
[ "${10}" -eq 0 ] || { echo "FAIL: the build-ID session got records of other types"; exit 1; }
echo "PASS: upstream perf read its own file; the build-ID session got $6 records"
