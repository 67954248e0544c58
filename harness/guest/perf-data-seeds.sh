#!/bin/bash
# The seeds of the perf.data fuzzer (harness/perf_data_fuzz.py): real
# recordings of perf with the series on the guest's kernel, printed in
# base64 between "SEED-BEGIN NAME" and "SEED-END" lines for the host to
# take from the guest's output.  A task older than perf (--synth=no, so
# its samples resolve only through their build-ID offset records), with
# deferred callchains (records 22 and 23 of each entry) and with
# callchains read in the interrupt (record 23 only).
#
# usage: perf-data-seeds.sh PERF
set -u
perf=$1
dir=$(mktemp -d /tmp/seeds.XXXXXX)
"$perf" test -w noploop 60 &
wpid=$!
trap 'kill $wpid 2>/dev/null; rm -rf "$dir"' EXIT

seed() {
	local name=$1
	shift
	if ! "$perf" record -q -o "$dir/$name" --synth=no --buildid-offset \
		-e cpu-clock:u -c 1000000 "$@" -p "$wpid" -- sleep 0.5 \
		>"$dir/$name.log" 2>&1; then
		cat "$dir/$name.log"
		echo "FAIL: perf record $*"
		exit 1
	fi
	# A seed without both kinds of records it should have fuzzes less
	"$perf" report -D -i "$dir/$name" 2>/dev/null |
		grep -c 'PERF_RECORD_BUILD_ID_OFFSET\|PERF_RECORD_CALLCHAIN_DEFERRED' |
		sed "s/^/$name: records 22 and 23: /"
	echo "SEED-BEGIN $name"
	base64 -w 76 "$dir/$name"
	echo "SEED-END"
}

seed fp-defer.data --call-graph fp,defer
seed fp.data --call-graph fp
echo "PASS: two seeds"
