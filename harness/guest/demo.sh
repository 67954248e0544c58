#!/bin/bash
# `make demo`, inside the guest: profile the multi-library workload with
# `perf record -g` and show the report with user symbols resolved.
set -euo pipefail
w=/tmp/demo
mkdir -p "$w"
# Keep the workload local (tmpfs): 9p lookups are slow in the guest.
cp "$bio_build"/obj/workloads/{multilib,liba.so,libb.so} "$w"/
cd "$w"
echo "# perf record -g -e cpu-clock -- ./multilib 2"
perf record -q -g -e cpu-clock -o perf.data -- ./multilib 2
echo "# perf.data: $(stat -c %s perf.data) bytes"
echo "# perf report --stdio --no-children --sort dso,sym"
perf report -i perf.data --stdio --no-children --sort dso,sym \
	--percent-limit 2 2>/dev/null | grep -v '^$' | head -n 60
# The demo fails if user symbols of the workload were not resolved.
perf report -i perf.data --stdio --no-children --sort sym >report.txt 2>&1
for sym in liba_mix libb_scan main_fill; do
	grep -q "\] $sym" report.txt || { echo "demo: $sym not resolved"; exit 1; }
done
echo "# demo: user symbols of the program and both libraries resolved"
