#!/bin/bash
# Run every `perf test` entry once, each under a timeout, and print one line
# per entry: SURVEY <num> <status> <seconds> <description>.  Used to decide
# what harness/tests/20-perf-test.list runs (see the comments there).
tmo=${1:-120}
mkdir -p /tmp/perf-test
ln -sfn "$harness_build/src/linux/tools/perf/tests" /tmp/perf-test/tests
cd /tmp/perf-test
perf test list 2>&1 | grep -E '^ *[0-9]+: ' | while IFS= read -r line; do
	num=${line%%:*}; num=${num// /}
	desc=${line#*: }
	start=$(date +%s.%N)
	timeout -k 5 "$tmo" perf test "$num" </dev/null >/tmp/survey.out 2>&1
	rc=$?
	secs=$(echo "$(date +%s.%N) - $start" | bc)
	if [ $rc = 124 ] || [ $rc = 137 ]; then st=TIMEOUT
	elif grep -q 'FAILED!' /tmp/survey.out; then st=FAIL
	elif grep -q ': Ok$' /tmp/survey.out; then st=OK
	elif grep -q ': Skip' /tmp/survey.out; then st=SKIP
	else st=NORESULT; fi
	printf 'SURVEY %s %s %.1f %s\n' "$num" "$st" "$secs" "$desc"
	# For the list's reasons: failing and skipping lines, then the tail
	[ $st = OK ] || { grep -E 'FAILED|Skip' /tmp/survey.out | head -n 5
			  tail -n 5 /tmp/survey.out; } | sed 's/^/    /' 
done
