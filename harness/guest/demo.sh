#!/bin/bash
# `make demo`, inside the guest: profile the multi-library workload with
# `perf record -g` twice, the default way (start-up synthesis of every
# task's mappings from /proc) and with `--buildid-offset --synth=no`
# (no /proc walk: samples resolve through the kernel's build-ID + offset
# records), and show start-up time, perf.data size and the two reports.
set -euo pipefail
w=/tmp/demo
mkdir -p "$w"
# Keep the workload local (tmpfs): 9p lookups are slow in the guest.
# The workloads (make workloads), in the top build directory
workloads=${harness_workloads:-$harness_build/obj/workloads}
cp "$workloads"/{multilib,liba.so,libb.so} "$w"/
cd "$w"

# Time from perf's start to its first sample: perf record -a of a
# workload that does nothing, which is all start-up (synthesis) and
# tear-down.
startup() {
	local t0 t1
	t0=$(date +%s.%N)
	perf record -q -a -e cpu-clock -o startup.data "$@" -- true 2>/dev/null
	t1=$(date +%s.%N)
	printf '%.2f s, %s bytes' "$(echo "$t1 - $t0" | bc)" \
		"$(stat -c %s startup.data)"
}

echo "# Start-up: how long perf record -a takes before it can sample, and"
echo "# what it writes for that, on this guest's $(ls /proc | grep -c '^[0-9]') tasks"
echo "# (perf record -a -- true: all start-up and tear-down).  Default perf"
echo "# reads every mapping of every task from /proc; --synth=no reads none."
echo "#   default:                          $(startup)"
echo "#   --buildid-offset --synth=no:     $(startup --buildid-offset --synth=no)"

for mode in default buildid-offset; do
	if [ $mode = default ]; then
		opts=() label="perf record -g"
	else
		opts=(--buildid-offset --synth=no) label="perf record -g --buildid-offset --synth=no"
	fi
	echo
	echo "# $label -e cpu-clock -- ./multilib 2"
	perf record -q -g -e cpu-clock "${opts[@]}" -o $mode.data -- ./multilib 2
	samples=$(perf report --stats -i $mode.data 2>/dev/null |
		  awk '/SAMPLE events:/ { print $3; exit }')
	bytes=$(stat -c %s $mode.data)
	echo "# perf.data: $bytes bytes, ${samples:-0} samples," \
	     "$((bytes / (${samples:-0} > 0 ? samples : 1))) bytes per sample"
	echo "# perf report --stdio --no-children --sort dso,sym (the workload's functions,"
	echo "# resolved by file; the same functions on top both ways)"
	perf report -i $mode.data --stdio --no-children --sort dso,sym \
		--percent-limit 2 2>/dev/null | grep -v '^$' | grep -v '^#' |
		head -n 20
	# The demo fails if user symbols of the workload were not resolved.
	perf report -i $mode.data --stdio --no-children --sort sym \
		>report-$mode.txt 2>&1
	for sym in liba_mix libb_scan main_fill; do
		grep -q "\] $sym" report-$mode.txt ||
			{ echo "demo: $sym not resolved ($mode)"; exit 1; }
	done
done
echo
echo "# multilib's loops: the work it did in its 2 s; fewer loops with an option"
echo "# are what that option's profiling cost the workload (this guest emulates"
echo "# the CPU: the ratio transfers to hardware, not the times)."
echo "# demo: user symbols of the program and both libraries resolved, both ways"
