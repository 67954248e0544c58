#!/bin/bash
# `make bench`, inside the guest: every comparison side by side in one
# boot, printed as markdown between "===== BEGIN bench" and
# "===== END bench", with the plot data as "DATA ..." lines (the Makefile
# copies both out and plots).  BENCH_NS (comma-separated), BENCH_REPS and
# BENCH_PERIOD change the defaults: `make bench
# GUEST_APPEND="BENCH_NS=0,500 BENCH_REPS=3"` (kernel parameters reach
# init's environment).
set -euo pipefail
: "${bio_build:?}"
ns=${BENCH_NS:-0,500,1000,2000,4000}
ns=${ns//,/ }
reps=${BENCH_REPS:-3}
w=/tmp/bench
mkdir -p "$w"
# The kernel's own split of the cost (perf_build_id_offset/stats)
mountpoint -q /sys/kernel/debug || mount -t debugfs none /sys/kernel/debug || true
cd "$w"
# Local copies: 9p lookups are slow in the guest
cp "$bio_build"/obj/bench/bio_cost "$bio_build"/obj/selftests/perf_events/libbio_dl.so "$w"/
cp -r "$bio_build"/obj/workloads/population "$bio_build"/obj/workloads/pop "$w"/

median() { sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }

# One `perf record -a -- true`: all start-up (synthesis) and tear-down.
# Prints "wall cpu bytes".
startup_once() {
	local TIMEFORMAT='%R %U %S' t
	t=$( { time perf record -q -a -e cpu-clock -o s.data "$@" -- true \
		>/dev/null 2>&1; } 2>&1 )
	echo "$t" | awk -v b="$(stat -c %s s.data)" '{ print $1, $2 + $3, b }'
}

echo "===== BEGIN bench"
echo "## Start-up against the number of tasks"
echo
echo "\`perf record -a -e cpu-clock -- true\`, median of $reps; each task of the population is idle and maps 30 small shared objects (about 170 mappings)."
echo
echo "| tasks in the guest | mode | wall s | CPU s | perf.data bytes |"
echo "|---|---|---|---|---|"
for n in $ns; do
	pid=
	if [ "$n" -gt 0 ]; then
		./population "$n" >pop.out &
		pid=$!
		for _ in $(seq 600); do
			grep -q ready pop.out 2>/dev/null && break
			sleep 1
		done
		grep -q ready pop.out || { echo "population $n: not ready"; exit 1; }
	fi
	tasks=$(ls /proc | grep -c '^[0-9]')
	for mode in default bio; do
		opts=()
		[ $mode = bio ] && opts=(--build-id-offset --synth=no)
		: >runs.txt
		for _ in $(seq "$reps"); do
			startup_once "${opts[@]}" >>runs.txt
		done
		wall=$(cut -d' ' -f1 runs.txt | median)
		cpu=$(cut -d' ' -f2 runs.txt | median)
		bytes=$(cut -d' ' -f3 runs.txt | median)
		echo "| $tasks | $mode | $wall | $cpu | $bytes |"
		echo "DATA startup $n $tasks $mode $wall $cpu $bytes" >>data.txt
	done
	if [ -n "$pid" ]; then
		kill -TERM "$pid"
		wait "$pid" 2>/dev/null || true
	fi
done
echo
awk '{ c[$3 " " $5] = $7; b[$3 " " $5] = $8; if ($3 > m) m = $3 }
     END { if (c[m " bio"] > 0 && b[m " bio"] > 0)
		printf "At the largest population (%d): default/ours CPU %.1fx, perf.data %.1fx.\n",
		       m, c[m " default"] / c[m " bio"], b[m " default"] / b[m " bio"] }' data.txt
echo
echo "## Per-sample cost (bio_cost)"
echo
echo "cpu-clock every ${BENCH_PERIOD:-100000} ns; a child does fixed work while the parent drains the ring buffer."
echo
./bio_cost -r "${BENCH_REPS:-5}" -p "${BENCH_PERIOD:-100000}" ./libbio_dl.so
echo
echo "## Overhead against the sampling frequency"
echo
echo "The warm workload of bio_cost, median of ${BENCH_REPS:-5} runs per point (plot: overhead.png)."
echo
echo "| samples/s | -g | -g --build-id-offset | reuse off |"
echo "|---|---|---|---|"
for p in ${BENCH_PERIODS:-1000000 400000 200000 100000 50000}; do
	./bio_cost -d -r "${BENCH_REPS:-5}" -p "$p" ./libbio_dl.so | tee -a data.txt |
		awk '{ printf "| %s | %+.1f%% | %+.1f%% | %+.1f%% |\n", $3, $4, $5, $6 }'
done
echo
echo "## perf.data bytes per sample"
echo
echo "\`perf record -g -e cpu-clock -c 100000\` of \`multilib 2\` (a program and two shared objects), with the tasks of the guest around it: synthesis and MMAP records against build-ID offset records."
echo
echo "| mode | samples | perf.data bytes | bytes/sample |"
echo "|---|---|---|---|"
cp "$bio_build"/obj/workloads/{multilib,liba.so,libb.so} "$w"/
for mode in default bio; do
	opts=()
	[ $mode = bio ] && opts=(--build-id-offset --synth=no)
	perf record -q -g -e cpu-clock -c 100000 "${opts[@]}" -o b.data -- ./multilib 2 >/dev/null 2>&1
	n=$(perf report -i b.data --stats 2>/dev/null | awk '/ SAMPLE events:/ { print $3; exit }')
	b=$(stat -c %s b.data)
	echo "| $mode | $n | $b | $(( b / (n > 0 ? n : 1) )) |"
done
echo
echo "===== END bench"
cat data.txt
