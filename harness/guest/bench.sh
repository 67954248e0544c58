#!/bin/bash
# `make bench`, inside the guest: every comparison side by side in one
# boot, printed as markdown between "===== BEGIN bench" and
# "===== END bench" (the Makefile copies that part out).
set -euo pipefail
: "${bio_build:?}"
w=/tmp/bench
mkdir -p "$w"
cd "$w"
# Local copies: 9p lookups are slow in the guest
cp "$bio_build"/obj/bench/bio_cost "$bio_build"/obj/selftests/perf_events/libbio_dl.so "$w"/

echo "===== BEGIN bench"
echo "## Per-sample cost (bio_cost)"
echo
echo "cpu-clock every ${BENCH_PERIOD:-100000} ns; a child does fixed work while the parent drains the ring buffer."
echo
./bio_cost -r "${BENCH_REPS:-5}" -p "${BENCH_PERIOD:-100000}" ./libbio_dl.so
echo
echo "===== END bench"
