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

echo "# start-up, perf record -a -- true, $(ls /proc | grep -c '^[0-9]') tasks:"
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
	echo "# perf.data: $(stat -c %s $mode.data) bytes"
	echo "# perf report --stdio --no-children --sort dso,sym"
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
echo "# demo: user symbols of the program and both libraries resolved, both ways"
