#!/bin/bash
# `make stress`, inside the debug guest: long runs against the feature,
# each printing what it did.  A kernel splat fails the run (harness/qemu.py reads
# the kernel log); this script fails on anything it can count itself.
#   stress.sh PART SECONDS      PART: kmemleak-clear | perf | trinity | kmemleak
#
# perf: stress-ng fork/exec/mmap/mremap churn while `perf record -a -g
# --buildid-offset --synth=no` samples every CPU at a high rate.  In time
# order, every sample's cookie must be its thread's latest record before
# it (the kernel saw at sample time that it covers the sample) or a record
# of its thread after it, never an older record; one of neither is
# allowed for the last entry of each thread (perf stops while it is in
# the kernel) and as many as PERF_RECORD_LOST says were lost.
# trinity: trinity's perf_event_open fuzzing (random attrs, then ioctl,
# mmap, read and close on the fds it got) for SECONDS, as an unprivileged
# user with perf_event_paranoid at -1 so that it reaches the code.
# kmemleak-clear, kmemleak: forget what boot left, then scan after
# everything else ran; any report fails.
set -uo pipefail
part=$1 secs=$2
dbg=/sys/kernel/debug
w=/tmp/stress
mkdir -p "$w" && cd "$w" || exit 1
mountpoint -q $dbg || mount -t debugfs none $dbg

case $part in
perf)
	command -v stress-ng >/dev/null || { echo "SKIP: no stress-ng"; exit 4; }
	# One stressor of each kind per CPU; short-lived children
	stress-ng --fork 1 --exec 1 --mmap 1 --mmap-bytes 16M --mremap 1 \
		--mremap-bytes 16M --timeout "${secs}s" --metrics-brief \
		>stress-ng.out 2>&1 &
	sng=$!
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
	# "WANTED RECORDS MISSING LOST EARLIER STALE UNCHANGED": cookies of
	# samples, records, cookies with no record after the sample that are
	# not the thread's latest before it either (each thread's last left
	# out), lost events, samples that name their thread's latest record
	# before them, samples that name an older one, UNCHANGED records (nr 0).
	# perf report -D prints samples and records in time order.
	perf report -D -i s.data 2>/dev/null | awk '
		/PERF_RECORD_SAMPLE/ { tid = $0; sub(/.*: [0-9]+\//, "", tid); sub(/:.*/, "", tid) }
		/build-ID offset cookie:/ {
			c = $NF
			if (c == "0")
				next
			want[tid " " c] = 1; last[tid] = c
			if (latest[tid] == c)
				earlier++
			else if ((tid " " c) in have)
				stale++
			else
				pending[tid " " c] = 1
		}
		/PERF_RECORD_BUILD_ID_OFFSET/ {
			t = $0; sub(/.*PERF_RECORD_BUILD_ID_OFFSET [0-9]+\//, "", t); sub(/:.*/, "", t)
			c = $0; sub(/.*cookie /, "", c); sub(/ .*/, "", c); have[t " " c] = 1; nrec++
			nr = $0; sub(/.* nr /, "", nr); sub(/ .*/, "", nr)
			f = $0; sub(/.* flags /, "", f)
			latest[t] = c
			delete pending[t " " c]
			if (nr == "0" && (f ~ /UNCHANGED/ || f == "0x8"))
				unch++
		}
		/PERF_RECORD_LOST/ { for (i = 1; i <= NF; i++) if ($i == "lost" || $i == "lost:") lost += $(i + 1) }
		END {
			for (k in want)
				nwant++
			for (k in pending) {
				split(k, p, " ")
				if (last[p[1]] != p[2]) miss++
			}
			print nwant + 0, nrec + 0, miss + 0, lost + 0, earlier + 0, stale + 0, unch + 0
		}' >joined.txt
	read -r wanted records missing lost earlier stale unchanged <joined.txt
	echo "stress perf: $secs s, $wanted cookies of samples, $records records in perf.data ($unchanged UNCHANGED), $earlier samples name an earlier record, $stale name an older one, $missing cookies without their record (each thread's last left out), $lost events lost"
	if [ "$wanted" = 0 ] || [ "$records" = 0 ] || [ "$missing" -gt "$lost" ] || [ "$stale" != 0 ]; then
		echo "stress perf: samples naming a record older than their thread's latest ($stale, expected 0), more cookies without their record ($missing) than events lost ($lost), or nothing recorded"
		exit 1
	fi
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
	echo "stress trinity: $secs s, $(grep -c . trinity.out) lines of trinity output"
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
