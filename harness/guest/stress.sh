#!/bin/bash
# `make stress`, inside the debug guest: long runs against the feature,
# each printing what it did.  A kernel splat fails the run (harness/qemu.py reads
# the kernel log); this script fails on anything it can count itself.
#   stress.sh PART SECONDS      PART: kmemleak-clear | perf | fuzz | trinity | kmemleak
#
# perf: stress-ng fork/exec/mmap/mremap churn while `perf record -a -g
# --buildid-offset --synth=no` samples every CPU at a high rate.  Every
# record the kernel wrote (debugfs: written) must be in perf.data, and
# every one that did not fit (no_room) counted in a PERF_RECORD_LOST.
# Samples whose record never came are counted by perf (BUILD_ID_OFFSET
# unjoined) and printed.
# trinity: trinity's perf_event_open fuzzing (random attrs, then ioctl,
# mmap, read and close on the fds it got) for SECONDS, as an unprivileged
# user with perf_event_paranoid at -1 so that it reaches the code.
# fuzz: build_id_offset_fuzz, the bounded fuzzer (random attributes around
# the new bits, random operations on the events), about 100 iterations
# a second alone under TCG: SECONDS * 60 iterations, seed printed for
# replay.
# kmemleak-clear, kmemleak: forget what boot left, then scan after
# everything else ran; any report fails.
set -uo pipefail
part=$1 secs=$2
dbg=/sys/kernel/debug
w=/tmp/stress
mkdir -p "$w" && cd "$w" || exit 1
mountpoint -q $dbg || mount -t debugfs none $dbg
mountpoint -q /sys/kernel/tracing || mount -t tracefs none /sys/kernel/tracing

case $part in
perf)
	command -v stress-ng >/dev/null || { echo "SKIP: no stress-ng"; exit 4; }
	# The kernel's records while perf record runs: all, those some
	# receiver got, those one had no room for (the tracepoint
	# perf_build_id_offset:perf_bido_record, counted by perf stat)
	tp=perf_build_id_offset:perf_bido_record
	# One stressor of each kind per CPU; short-lived children
	stress-ng --fork 1 --exec 1 --mmap 1 --mmap-bytes 16M --mremap 1 \
		--mremap-bytes 16M --timeout "${secs}s" --metrics-brief \
		>stress-ng.out 2>&1 &
	sng=$!
	perf stat -a -x, -o counts.csv -e $tp -e $tp --filter 'written > 0' \
		-e $tp --filter 'no_room > 0' -- \
		perf record -q -a -g -e cpu-clock -F 2000 --buildid-offset \
		--synth=no -o s.data -- sleep "$secs" 2>perf.err
	rc=$?
	wait $sng
	sng_rc=$?
	tail -n 8 stress-ng.out
	[ $rc = 0 ] || { echo "perf record failed ($rc):"; cat perf.err; exit 1; }
	# stress-ng exits 2 when a stressor failed, 3 when one ran out of
	# resources; neither is ours to judge, both are printed
	echo "stress-ng exit status $sng_rc"
	grep -v '^#' counts.csv
	# The three counts, in the order of the -e options
	read -r built written no_room <<<"$(awk -F, '$3 ~ /perf_bido_record/ { printf "%s ", $1 }' counts.csv)"
	perf report -i s.data --stats >stats.txt 2>&1
	grep -E 'SAMPLE|BUILD_ID_OFFSET|LOST|unjoined' stats.txt
	in_file=$(awk '/BUILD_ID_OFFSET events:/ { print $3; exit }' stats.txt)
	lost=$(awk '/^ *LOST events:/ { print $3; exit }' stats.txt)
	lost_n=0
	# Each PERF_RECORD_LOST says how many records it stands for
	[ "${lost:-0}" = 0 ] || lost_n=$(perf script -i s.data -F ip \
		--show-lost-events 2>/dev/null |
		awk '/PERF_RECORD_LOST/ { for (i = 1; i <= NF; i++) if ($i == "lost") n += $(i + 1) } END { print n + 0 }')
	samples=$(awk '/^ *SAMPLE events:/ { print $3; exit }' stats.txt)
	unjoined=$(awk '/BUILD_ID_OFFSET unjoined samples:/ { print $4; exit }' stats.txt)
	echo "stress perf: $secs s, ${samples:-0} samples, ${in_file:-0} records in perf.data; the kernel built $built records, wrote $written, found no room for $no_room (perf stat of the tracepoint); ${lost:-0} LOST records for $lost_n lost events; ${unjoined:-0} samples without their record"
	in_file=${in_file:-0} lost_n=${lost_n:-0}
	if [ "$in_file" != "$written" ] || [ "$no_room" -gt "$lost_n" ]; then
		echo "stress perf: records written ($written) not all in perf.data ($in_file), or more without room ($no_room) than counted lost ($lost_n)"
		exit 1
	fi
	;;
fuzz)
	BIDO_FUZZ_ITERS=$((secs * 60)) \
		"$harness_build"/obj/selftests/perf_events/build_id_offset_fuzz
	exit $?
	;;
trinity)
	command -v trinity >/dev/null || { echo "SKIP: no trinity"; exit 4; }
	old=$(cat /proc/sys/kernel/perf_event_paranoid)
	echo -1 >/proc/sys/kernel/perf_event_paranoid
	chown nobody "$w"
	# As nobody (trinity runs as root only with --dangerous); -c: only these
	# The timeout only stops a trinity that ignores SIGINT; the loop below
	# goes by the clock (SECONDS), not by counting its own sleeps, which
	# take longer than a second each under TCG
	timeout -s KILL $((secs + 300)) setpriv --reuid=65534 --regid=65534 \
		--clear-groups trinity -q -C 2 --disable-fds=sockets -c perf_event_open \
		-c ioctl -c mmap -c munmap -c read -c close -c fcntl \
		-c prctl -N 1000000000 >trinity.out 2>&1 &
	t=$!
	end=$((SECONDS + secs))
	while [ $SECONDS -lt $end ]; do
		sleep 1
		kill -0 $t 2>/dev/null || break
	done
	if ! kill -0 $t 2>/dev/null; then
		wait $t
		st=$?
		echo "$old" >/proc/sys/kernel/perf_event_paranoid
		echo "stress trinity: trinity ended before $secs s (status $st):"
		tail -n 20 trinity.out
		exit 1
	fi
	kill -INT $t 2>/dev/null
	wait $t
	echo "$old" >/proc/sys/kernel/perf_event_paranoid
	grep -iE 'iterations|syscalls|ran' trinity.out | tail -n 5
	echo "stress trinity: $secs s, $(grep -c . trinity.out) lines of trinity output; records built: $(stat_of records), samples: $(stat_of samples)"
	;;
kmemleak-clear)
	echo clear 2>/dev/null >$dbg/kmemleak ||
		{ echo "SKIP: kmemleak is off (kmemleak=on on the kernel command line)"; exit 4; }
	echo "stress kmemleak: boot's reports cleared"
	;;
kmemleak)
	echo scan 2>/dev/null >$dbg/kmemleak ||
		{ echo "SKIP: kmemleak is off (kmemleak=on on the kernel command line)"; exit 4; }
	sleep 5
	sleep 5
	echo scan >$dbg/kmemleak
	n=$(grep -c 'unreferenced object' $dbg/kmemleak)
	echo "stress kmemleak: $n unreferenced objects"
	if [ "$n" != 0 ]; then
		head -n 60 $dbg/kmemleak
		exit 1
	fi
	;;
*)
	echo "stress.sh: unknown part $part" >&2
	exit 1
	;;
esac
