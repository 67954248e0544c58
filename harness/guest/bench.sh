#!/bin/bash
# `make bench`, inside the guest: every comparison side by side in one
# boot, printed as markdown between "===== BEGIN bench" and
# "===== END bench", with the plot data as "DATA ..." lines (the Makefile
# copies both out and plots).  BENCH_NS (comma-separated), BENCH_REPS and
# BENCH_PERIOD change the defaults: `make bench
# GUEST_APPEND="BENCH_NS=0,500 BENCH_REPS=3"` (kernel parameters reach
# init's environment).  BENCH_ONLY=startup,cost,churn,topload,daemon,memory,pprof,report runs only the
# sections named; BENCH_CHURN_SECS (default 30), BENCH_CHURN_FREQ
# (default 4000) and BENCH_CHURN_SPIN_MS (default 20: TCG runs the
# workload's exec and dlopen() 10-50 times slower than hardware, spins
# of a few ms would get few samples) set the churn section's run;
# BENCH_TOP_SECS (default 15) the length of each perf top run under load;
# BENCH_MEM_THREADS (default 10000) the threads of the memory section;
# BENCH_DAEMON_TASKS (4000) and BENCH_DAEMON_SECS (20) the daemon's;
# BENCH_PPROF_SECS (12) the recording that pprof converts;
# BENCH_REPORT_SECS (10) the recordings that perf report and perf script read.
# BENCH_POP_SPIN (default 5000; 0: idle) the rounds of work each task of
# the start-up population runs once a second.
# BENCH_ICOUNT=1 says that this is the instruction-count guest
# (harness/qemu.py, ACCEL=icount): one vCPU whose clocks count retired
# instructions, one nanosecond each, so that every "s" below is 10^9
# instructions, the same from run to run.
set -euo pipefail
: "${harness_build:?}"
# The workloads (make workloads), in the top build directory
workloads=${harness_workloads:-$harness_build/obj/workloads}
ns=${BENCH_NS:-0,500,1000,2000,4000}
ns=${ns//,/ }
reps=${BENCH_REPS:-3}
# Rounds of work each task of the start-up population runs once a second
# (0: an idle population, as before December 2026)
pop_spin=${BENCH_POP_SPIN:-5000}
w=/tmp/bench
mkdir -p "$w"
cd "$w"
: >data.txt

want() { [ -z "${BENCH_ONLY:-}" ] || [[ ",$BENCH_ONLY," == *",$1,"* ]]; }

# Local copies: 9p lookups are slow in the guest
if want cost; then
cp "$harness_build"/obj/bench/build_id_offset_cost "$harness_build"/obj/bench/libbuild_id_offset_cost.so "$w"/
fi
if want startup; then
cp -r "$workloads"/population* "$workloads"/pop "$w"/
fi

median() { sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }

pop_pids=()
# Start $1 tasks of the start-up population (four programs, or one for an
# idle or tiny population), their "ready" lines in $2; their PIDs in
# pop_pids.  Exits if they are not ready in 600 s.
pop_start() {
	local n=$1 out=$2 i k progs=(population population1 population2 population3)

	pop_pids=()
	[ "$pop_spin" -gt 0 ] && [ "$n" -ge 4 ] || progs=(population)
	: >"$out"
	for i in "${!progs[@]}"; do
		k=$(( n / ${#progs[@]} + (i < n % ${#progs[@]}) ))
		"./${progs[$i]}" -w "$pop_spin" "$k" >>"$out" &
		pop_pids+=($!)
	done
	for _ in $(seq 600); do
		[ "$(grep -c ready "$out")" -eq ${#progs[@]} ] && return 0
		sleep 1
	done
	echo "population $n: not ready"
	exit 1
}

pop_stop() {
	local pid

	for pid in "${pop_pids[@]}"; do
		kill -TERM "$pid"
		wait "$pid" 2>/dev/null || true
	done
	pop_pids=()
}

# One `perf record -a -- true`: all start-up (synthesis) and tear-down.
# Prints "wall cpu bytes".
startup_once() {
	local TIMEFORMAT='%R %U %S' t
	t=$( { time perf record -q -a -e cpu-clock -o s.data "$@" -- true \
		>/dev/null 2>&1; } 2>&1 )
	echo "$t" | awk -v b="$(stat -c %s s.data)" '{ print $1, $2 + $3, b }'
}

# perf top's stdin on fd 5: a FIFO nobody writes to, so that it reads no
# key; `exec 5>&-` closes it
top_keys() {
	rm -f top.keys
	mkfifo top.keys
	exec 5<>top.keys
}

# One `perf top -a` until its first screen (the first refresh comes 1 s
# after the counters start): its start-up, with the synthesis of every
# task's comm and maps or without.  Then on to its fifth screen: the
# samples it dropped by then, for being more than its delay (1 s) behind
# the newest, as the header counts them ("drop: N/TOTAL"), show how long
# it took to catch up.  Prints "wall cpu drop1 drop5".
top_once() {
	local t0 t1 pid cpu tck
	tck=$(getconf CLK_TCK)
	rm -f top.out
	top_keys
	t0=$(date +%s%N)
	perf top --stdio -a -e cpu-clock -d 1 "$@" <&5 >top.out 2>&1 &
	pid=$!
	for _ in $(seq 6000); do
		grep -q PerfTop top.out 2>/dev/null && break
		sleep 0.05
	done
	t1=$(date +%s%N)
	cpu=$(awk -v t="$tck" '{ printf "%.2f", ($14 + $15) / t }' "/proc/$pid/stat")
	for _ in $(seq 1200); do
		[ "$(grep -ac PerfTop top.out)" -ge 5 ] && break
		sleep 0.05
	done
	kill -INT "$pid"
	wait "$pid" 2>/dev/null || true
	exec 5>&-
	awk -v a="$t0" -v b="$t1" -v c="$cpu" 'BEGIN { printf "%.2f %s ", (b - a) / 1e9, c }'
	top_screens top.out | awk 'NR == 1 { first = $2 } NR <= 5 { last = $2 }
		END { print first + 0, last + 0 }'
}

# Of each screen of a perf top output, from its header: "SAMPLES/S
# DROPPED UNRESOLVED", DROPPED and UNRESOLVED (-: not counted, no
# --buildid-offset) the totals since the start
top_screens() {
	tr -d '\r' <"$1" | awk 'function num(re, skip) {
			if (!match($0, re)) return "-"
			v = substr($0, RSTART + skip, RLENGTH - skip); sub(/.*\//, "", v)
			return v }
		/PerfTop:/ { print num("PerfTop: *[0-9]+", 8) + 0,
				   num("drop: [0-9]+/[0-9]+", 6), num("unresolved: [0-9]+", 12) }'
}

# Wait up to 300 s for a file to have content
wait_for() {
	for _ in $(seq 600); do
		[ -s "$1" ] && return 0
		sleep 0.5
	done
	echo "$1 did not come"
	return 1
}

# Resolution under churn: harness/workloads/churn.c runs, and both modes
# record it system-wide at the same time; its workers are already there
# when perf starts, as on a busy host.  harness/bench/churn_check.py
# checks each mode's samples against the workload's own log.
churn_section() {
	local secs=${BENCH_CHURN_SECS:-30} freq=${BENCH_CHURN_FREQ:-4000}
	local ms=${BENCH_CHURN_SPIN_MS:-20}
	local d=$w/churn t0=$SECONDS t1 t2 t3 cpid rc=0 m opts
	local -A perf_pid
	rm -rf "$d"
	mkdir -p "$d/lib"
	cp "$workloads"/churn/churn "$d"/
	cp "$workloads"/churn/libchurn*.so "$d/lib"/
	"$d/churn" -p -t "$secs" -m "$ms" "$d/lib" "$d/log" \
		>"$d/churn.out" 2>"$d/churn.err" &
	cpid=$!
	wait_for "$d/churn.out"
	# perf's workload writes its PID when perf records, and sleeps until
	# killed at the end of the run
	for m in default ours; do
		opts=()
		[ $m = ours ] && opts=(--buildid-offset --synth=no)
		perf record -a -g --user-callchains -k CLOCK_MONOTONIC \
			-e cpu-clock -F "$freq" \
			"${opts[@]}" -o "$d/$m.data" -- \
			sh -c "echo \$\$ >$d/$m.pid; exec sleep 100000" \
			2>"$d/$m.err" &
		perf_pid[$m]=$!
	done
	wait_for "$d/default.pid"
	wait_for "$d/ours.pid"
	t1=$SECONDS
	kill -USR1 "$cpid"
	wait "$cpid" || rc=$?
	t2=$SECONDS
	for m in default ours; do
		kill "$(cat "$d/$m.pid")" || true
		wait "${perf_pid[$m]}" || rc=$?
	done
	echo "## Resolution under churn"
	echo
	echo "\`harness/workloads/churn\` for $secs s: four workers, there with an object mapped when perf starts, fork, exec, dlopen, dlclose, mmap and munmap 16 objects with distinct build-IDs, from a path of their own or from one of four more paths, over which a copy of one of them is renamed every 200 ms; spins last $ms ms on average. Two \`perf record -a -g --user-callchains -k CLOCK_MONOTONIC -e cpu-clock -F $freq\`, one of them with \`--buildid-offset --synth=no\`, record it at the same time, from before its start to its end. A sample counts when the workload logged its thread spinning in \`churn_spin()\` at the sample's time and its user IP (the IP, or for a sample taken in the kernel the first user address of its call chain) is in that function."
	echo
	for m in churn default ours; do
		sed "s/^/    $m: /" "$d/$m.err"
	done
	echo
	# perf's workload is killed: 143
	if [ "$rc" != 0 ] && [ "$rc" != 143 ]; then
		echo "churn: a run failed (exit status $rc)"
		return 1
	fi
	t3=$SECONDS
	python3 "$harness_repo/harness/bench/churn_check.py" \
		"$d/log" "$d/default.data" "$d/ours.data"
	echo "perf.data bytes: default $(stat -c %s "$d/default.data"), ours $(stat -c %s "$d/ours.data"). The section took $((SECONDS - t0)) s: $((t1 - t0)) s to start, $((t2 - t1)) s of churn, $((t3 - t2)) s for perf record to finish, $((SECONDS - t3)) s of analysis."
	echo
}

# perf daemon's always-on session with per-second rotation, at
# BENCH_DAEMON_TASKS (4000) tasks of the start-up population, for
# BENCH_DAEMON_SECS (60) s per mode after BENCH_DAEMON_WARM (10) s, the two modes one after the other
# on the same population: the CPU time of the session's perf record
# (utime + stime of /proc/PID/stat) over the window, after a warm-up.
# With default synthesis every new file starts with a walk of /proc.
daemon_cpu() {
	awk -v hz="$(getconf CLK_TCK)" '{ sub(/.*\) /, ""); print ($12 + $13) / hz }' \
		"/proc/$1/stat"
}

daemon_section() {
	local n=${BENCH_DAEMON_TASKS:-4000} secs=${BENCH_DAEMON_SECS:-60}
	local warm=${BENCH_DAEMON_WARM:-10}
	local d=$w/daemon mode opts pid c0 c1 t0 t1 f0 f1 b0 b1 i k first
	rm -rf "$d"
	mkdir -p "$d"
	[ -x ./population ] ||
		cp -r "$workloads"/population* \
			"$workloads"/pop "$w"/
	pop_start "$n" "$d/pop.out"
	echo "## perf daemon with per-second rotation"
	echo
	echo "\`perf daemon\` with one session, \`record -a -e cpu-clock -F 99 --switch-output=1s\`, alone or with \`--buildid-offset --synth=no\`, for $secs s after a $warm s warm-up, beside $n tasks of the start-up population ($(ls /proc | grep -c '^[0-9]') tasks in the guest). CPU: the session's perf record, utime + stime; share: of one CPU over the window; files and bytes: written in the window; first file: seconds from the start to the first rotated file."
	echo
	echo "| mode | window s | CPU s | CPU share | files written | bytes written | first file s |"
	echo "|---|---|---|---|---|---|---|"
	for mode in default buildid-offset; do
		opts=
		[ $mode = buildid-offset ] && opts="--buildid-offset --synth=no"
		mkdir -p "$d/$mode"
		printf '[daemon]\nbase=%s\n\n[session-bench]\nrun = %s %s\n' \
			"$d/$mode" "-a -e cpu-clock -F 99 --switch-output=1s" \
			"$opts" >"$d/$mode.config"
		if ! perf daemon start --config "$d/$mode.config" >/dev/null 2>&1; then
			echo "daemon: perf daemon did not start"
			break
		fi
		pid=
		for _ in $(seq 600); do
			pid=$(perf daemon --config "$d/$mode.config" 2>/dev/null |
			      sed -n 's/^\[\([0-9]*\):bench\].*/\1/p')
			[ -n "$pid" ] && [ -e "/proc/$pid/stat" ] && break
			sleep 0.2
		done
		# Each second: the first file's time; the window's start
		first=-
		for ((i = 1; i <= warm + secs; i++)); do
			sleep 1
			k=$(find "$d/$mode" -name 'perf.data.*' | wc -l)
			[ "$first" = - ] && [ "$k" -gt 0 ] && first=$i
			if [ "$i" = "$warm" ]; then
				c0=$(daemon_cpu "$pid")
				f0=$k
				b0=$(du -sb "$d/$mode" | cut -f1)
				t0=$(date +%s.%N)
			fi
		done
		c1=$(daemon_cpu "$pid")
		t1=$(date +%s.%N)
		f1=$k
		b1=$(du -sb "$d/$mode" | cut -f1)
		perf daemon stop --config "$d/$mode.config" >/dev/null 2>&1 || true
		awk -v m=$mode -v c0="$c0" -v c1="$c1" -v t0="$t0" -v t1="$t1" \
		    -v f=$((f1 - f0)) -v b=$((b1 - b0)) -v first="$first" 'BEGIN {
			printf "| %s | %.1f | %.2f | %.1f%% | %d | %d | %s |\n", m, t1 - t0,
			       c1 - c0, 100 * (c1 - c0) / (t1 - t0), f, b, first
			printf "DATA daemon %s %.3f %.3f %d %d\n", m, t1 - t0,
			       c1 - c0, f, b >> "data.txt"
		}'
		rm -rf "${d:?}/$mode"
	done
	echo
	awk '$2 == "daemon" { c[$3] = $5 / $4 }
	     END { if (c["buildid-offset"] > 0)
		printf "CPU share, default/ours: %.1fx.\n", c["default"] / c["buildid-offset"] }' data.txt
	echo
	pop_stop
}

# perf top -a under load, started while the load runs: three tasks that
# spin, and a fourth that loops in the shell (spin) or fork()s and
# exec()s /bin/true (exec).  From its last screen after BENCH_TOP_SECS
# (15) s: samples per second, the samples it dropped since the start for
# being more than its delay (2 s) behind the newest, and those it showed
# with no user address resolved (--buildid-offset).
topload_section() {
	local secs=${BENCH_TOP_SECS:-15} load mode line p
	local -a opts pids
	echo "## perf top under load"
	echo
	echo "\`perf top --stdio -a -e cpu-clock -d 2\` for $secs s over three spinning tasks and a fourth that loops in the shell (spin) or fork()s and exec()s /bin/true (exec), all there before perf top; from its last screen: samples/s, samples dropped since the start (more than 2 s behind), samples shown unresolved."
	echo
	echo "| load | mode | samples/s | dropped | unresolved |"
	echo "|---|---|---|---|---|"
	for load in spin exec; do
		for mode in default buildid-offset; do
			pids=()
			for _ in 1 2 3; do
				sh -c 'while :; do :; done' &
				pids+=($!)
			done
			if [ $load = exec ]; then
				sh -c 'while :; do /bin/true; done' &
			else
				sh -c 'while :; do echo x >/dev/null; done' &
			fi
			pids+=($!)
			sleep 1
			opts=()
			[ $mode = buildid-offset ] && opts=(--buildid-offset)
			rm -f top.out
			top_keys
			LINES=40 COLUMNS=300 timeout -s INT "$secs" perf top --stdio -a \
				-e cpu-clock -d 2 -E 5 "${opts[@]}" <&5 >top.out 2>&1 || true
			exec 5>&-
			for p in "${pids[@]}"; do
				kill "$p" 2>/dev/null || true
				wait "$p" 2>/dev/null || true
			done
			line=$(top_screens top.out | tail -1)
			echo "$line" | awk -v l=$load -v m=$mode '{
				printf "| %s | %s | %s | %s | %s |\n", l, m, $1, $2, $3
				printf "DATA topload %s %s %s %s %s\n", l, m, $1, $2, $3 >> "data.txt" }'
		done
	done
	echo
}

# Per mode, from the smallest population to the largest (DATA $1 lines:
# n, tasks, mode, wall, CPU): CPU per added task (ns, or instructions in
# the icount guest) and the CPU's growth
slopes() {
	echo "Growth of $2's CPU from the smallest population to the largest:"
	echo
	echo "| mode | tasks | CPU s | tasks | CPU s | CPU per added task | growth |"
	echo "|---|---|---|---|---|---|---|"
	awk -v what="$1" -v unit="${BENCH_ICOUNT:+instructions}" '
	$2 == what {
		if (!($5 in lo) || $4 < lo[$5]) { lo[$5] = $4; clo[$5] = $7 }
		if (!($5 in hi) || $4 > hi[$5]) { hi[$5] = $4; chi[$5] = $7 }
		if (!($5 in seen)) { order[++n] = $5; seen[$5] = 1 }
	}
	END {
		for (i = 1; i <= n; i++) {
			m = order[i]
			if (hi[m] == lo[m] || clo[m] <= 0)
				continue
			printf "| %s | %d | %.3f | %d | %.3f | %.0f %s | %+.0f%% |\n", m,
			       lo[m], clo[m], hi[m], chi[m],
			       (chi[m] - clo[m]) * 1e9 / (hi[m] - lo[m]),
			       unit ? unit : "ns", 100 * (chi[m] / clo[m] - 1)
		}
	}' data.txt
}

echo "===== BEGIN bench"
if [ -n "${BENCH_ICOUNT:-}" ]; then
	echo "_Instruction-count guest (one vCPU, \`-icount shift=0,sleep=off\`): every time below counts guest instructions, 1 s = 10^9 instructions; kernel $(uname -r), $(grep -c ^processor /proc/cpuinfo) CPU._"
	echo
fi
# Sections (not indented, to keep them as they were): startup
if want startup; then
echo "## Start-up against the number of tasks"
echo
if [ "$pop_spin" -gt 0 ]; then
	pop_what="wakes once a second, at a phase of its own, and runs $pop_spin rounds of a loop in one of 30 small shared objects that it maps (about 170 mappings), so that sampling sees it; the population is four programs with N/4 tasks each"
else
	pop_what="is idle and maps 30 small shared objects (about 170 mappings)"
fi
echo "\`perf record -a -e cpu-clock -- true\`, median of $reps; each task of the population $pop_what. buildid-offset: \`--buildid-offset --synth=no\`; buildid-offset-task: \`--buildid-offset --synth=task\`, which reads every task's comm (not its maps) at start."
echo
: >top.txt
echo "| tasks in the guest | mode | wall s | CPU s | perf.data bytes |"
echo "|---|---|---|---|---|"
for n in $ns; do
	[ "$n" -gt 0 ] && pop_start "$n" pop.out
	tasks=$(ls /proc | grep -c '^[0-9]')
	# buildid-offset-task: with the comm of every task read at start
	# (--synth=task), the alternative to comms read at first sample
	for mode in default buildid-offset buildid-offset-task; do
		case $mode in
		default) opts=() ;;
		buildid-offset) opts=(--buildid-offset --synth=no) ;;
		buildid-offset-task) opts=(--buildid-offset --synth=task) ;;
		esac
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
	for mode in default buildid-offset; do
		opts=()
		[ $mode = buildid-offset ] && opts=(--buildid-offset)
		: >runs.txt
		for _ in $(seq "$reps"); do
			top_once "${opts[@]}" >>runs.txt
		done
		wall=$(cut -d' ' -f1 runs.txt | median)
		cpu=$(cut -d' ' -f2 runs.txt | median)
		drop1=$(cut -d' ' -f3 runs.txt | median)
		drop5=$(cut -d' ' -f4 runs.txt | median)
		echo "| $tasks | $mode | $wall | $cpu | $drop1 | $drop5 |" >>top.txt
		echo "DATA topstartup $n $tasks $mode $wall $cpu $drop1 $drop5" >>data.txt
	done
	pop_stop
done
echo
awk '$2 == "startup" { c[$3 " " $5] = $7; b[$3 " " $5] = $8; if ($3 > m) m = $3 }
     END { if (c[m " buildid-offset"] > 0 && b[m " buildid-offset"] > 0)
		printf "At the largest population (%d): default/ours CPU %.1fx, perf.data %.1fx.\n",
		       m, c[m " default"] / c[m " buildid-offset"], b[m " default"] / b[m " buildid-offset"]
	    if (c[m " buildid-offset"] > 0 && b[m " buildid-offset"] > 0 && c[m " buildid-offset-task"] > 0)
		printf "--synth=task against --synth=no there: CPU %.1fx, perf.data %.1fx.\n",
		       c[m " buildid-offset-task"] / c[m " buildid-offset"], b[m " buildid-offset-task"] / b[m " buildid-offset"] }' data.txt
echo
slopes startup "perf record -a -- true"
echo
echo "## perf top start-up against the number of tasks"
echo
echo "\`perf top --stdio -a -e cpu-clock -d 1\` from its start to its first screen (which comes 1 s after the counters start), median of $reps; buildid-offset adds \`--buildid-offset\`, which reads no task's comm or maps in /proc. CPU s: perf top's own, at its first screen."
echo
echo "| tasks in the guest | mode | wall s to first screen | CPU s | samples dropped by the first screen | by the fifth |"
echo "|---|---|---|---|---|---|"
cat top.txt
echo
awk '$2 == "topstartup" { w[$3 " " $5] = $6; c[$3 " " $5] = $7; if ($3 > m) m = $3 }
     END { if (w[m " buildid-offset"] > 0 && c[m " buildid-offset"] > 0)
		printf "At the largest population (%d): default/ours wall %.1fx, CPU %.1fx.\n",
		       m, w[m " default"] / w[m " buildid-offset"], c[m " default"] / c[m " buildid-offset"] }' data.txt
echo
slopes topstartup "perf top's first screen"
echo
fi
# cost
if want cost; then
echo "## Per-sample cost (build_id_offset_cost)"
echo
echo "cpu-clock every ${BENCH_PERIOD:-100000} ns; a child does fixed work while the parent drains the ring buffer."
echo
./build_id_offset_cost ${BENCH_ICOUNT:+-i} -r "${BENCH_REPS:-5}" -p "${BENCH_PERIOD:-100000}" ./libbuild_id_offset_cost.so
echo
echo "## Overhead against the sampling frequency"
echo
echo "The warm workload of build_id_offset_cost, median of ${BENCH_REPS:-5} runs per point (plot: overhead.png)."
echo
echo "| samples/s | -g | -g --buildid-offset | --call-graph fp,defer --buildid-offset |"
echo "|---|---|---|---|"
for p in ${BENCH_PERIODS:-1000000 400000 200000 100000 50000}; do
	./build_id_offset_cost -d -r "${BENCH_REPS:-5}" -p "$p" ./libbuild_id_offset_cost.so | tee -a data.txt |
		awk '{ printf "| %s | %+.1f%% | %+.1f%% | %+.1f%% |\n", $3, $4, $5, $6 }'
done
echo
echo "## perf.data bytes per sample"
echo
echo "\`perf record -g -e cpu-clock -c 100000\` of \`multilib 2\` (a program and two shared objects), with the tasks of the guest around it: synthesis and MMAP records against build-ID offset records."
echo
echo "| mode | samples | perf.data bytes | bytes/sample |"
echo "|---|---|---|---|"
cp "$workloads"/{multilib,liba.so,libb.so} "$w"/
for mode in default buildid-offset; do
	opts=()
	[ $mode = buildid-offset ] && opts=(--buildid-offset --synth=no)
	perf record -q -g -e cpu-clock -c 100000 "${opts[@]}" -o b.data -- ./multilib 2 >/dev/null 2>&1
	n=$(perf report -i b.data --stats 2>/dev/null | awk '/ SAMPLE events:/ { print $3; exit }')
	b=$(stat -c %s b.data)
	echo "| $mode | $n | $b | $(( b / (n > 0 ? n : 1) )) |"
done
echo
fi
# pprof: `perf data convert --to-pprof` against `perf script` of the same
# file, a `--buildid-offset --synth=no -g` recording of the multilib
# workload for BENCH_PPROF_SECS (12) s at 10 kHz; the two alternate,
# BENCH_REPS times each.  Time (wall and user + sys, median) and output
# bytes, scaled to 100k samples; perf script's text also gzipped, for a
# like-for-like size.
pprof_once() {
	local TIMEFORMAT='%R %U %S' t
	t=$( { time "$@" >/dev/null 2>&1; } 2>&1 )
	echo "$t" | awk '{ print $1, $2 + $3 }'
}
# A row: LABEL, the times file, the output file; per 100k samples ($n)
pprof_row() {
	awk -v n="$n" -v w="$(cut -d' ' -f1 "$2" | median)" \
	    -v c="$(cut -d' ' -f2 "$2" | median)" -v b="$(stat -c %s "$3")" -v what="$1" \
	    'BEGIN { printf "| %s | %.2f | %.2f | %d |\n", what, w * 1e5 / n, c * 1e5 / n, b * 1e5 / n }'
}
pprof_section() {
	local secs=${BENCH_PPROF_SECS:-12} d=$w/pprof n i
	mkdir -p "$d"
	cp "$workloads"/{multilib,liba.so,libb.so} "$d"/
	cd "$d"
	perf record -q --buildid-offset --synth=no -g -e cpu-clock -c 100000 \
		-o p.data -- ./multilib "$secs" >/dev/null 2>&1
	n=$(perf report -i p.data --stats 2>/dev/null |
		awk '/SAMPLE events:/ { print $3; exit }')
	: >script.t
	: >pprof.t
	for i in $(seq "$reps"); do
		pprof_once sh -c 'perf script -i p.data >script.txt' >>script.t
		pprof_once perf data convert --force -i p.data --to-pprof p.pb.gz >>pprof.t
	done
	gzip -6 -c script.txt >script.txt.gz
	echo "## perf data convert --to-pprof against perf script"
	echo
	echo "The same \`--buildid-offset --synth=no -g\` recording of multilib ($n samples, $(stat -c %s p.data) bytes of perf.data), $reps runs of each alternating; medians, per 100k samples."
	echo
	echo "| | wall s | CPU s | output bytes |"
	echo "| --- | --- | --- | --- |"
	pprof_row "\`perf script\`" script.t script.txt
	pprof_row "\`perf data convert --to-pprof\`" pprof.t p.pb.gz
	echo "| \`perf script\` output gzipped (gzip -6) | | | $(( $(stat -c %s script.txt.gz) * 100000 / n )) |"
	echo
	awk -v ws="$(cut -d' ' -f1 script.t | median)" -v wp="$(cut -d' ' -f1 pprof.t | median)" \
	    -v bs="$(stat -c %s script.txt)" -v bp="$(stat -c %s p.pb.gz)" \
	    'BEGIN { printf "perf script / --to-pprof: %.1fx the wall time, %.0fx the bytes.\n", ws / wp, bs / bp }'
	echo
	cd "$w"
}

# report: the reading side.  One run of multilib, a task older than perf,
# recorded for BENCH_REPORT_SECS (10) s at 10 kHz by default `perf record
# -g` (which reads its maps from /proc) and with `-g --buildid-offset
# --synth=no`; then `perf report --stdio` and `perf script` of each file,
# BENCH_REPS times alternating.  Medians of the wall time (instructions
# in the icount guest) and of the peak resident memory, per 100k samples.
report_section() {
	local secs=${BENCH_REPORT_SECS:-10} d=$w/report mode reader i n wpid
	mkdir -p "$d"
	cp "$workloads"/{multilib,liba.so,libb.so} "$d"/
	cd "$d"
	./multilib $(( 2 * secs + 30 )) >/dev/null 2>&1 &
	wpid=$!
	sleep 1
	for mode in default buildid-offset; do
		opts=()
		[ $mode = buildid-offset ] && opts=(--buildid-offset --synth=no)
		perf record -q -g -e cpu-clock -c 100000 "${opts[@]}" -o $mode.data \
			-p $wpid -- sleep "$secs" >/dev/null 2>&1
		: >$mode.report.t
		: >$mode.script.t
	done
	kill $wpid
	wait $wpid 2>/dev/null || true
	for i in $(seq "$reps"); do
		for mode in default buildid-offset; do
			/usr/bin/time -a -f '%e %M' -o $mode.report.t \
				perf report --stdio -i $mode.data >/dev/null 2>&1
			/usr/bin/time -a -f '%e %M' -o $mode.script.t \
				perf script -i $mode.data >/dev/null 2>&1
		done
	done
	echo "## Report side: perf report and perf script"
	echo
	echo "\`multilib\`, started before perf, recorded for $secs s with \`perf record -g -e cpu-clock -c 100000 -p PID\` (default) and with \`--buildid-offset --synth=no\` added; \`perf report --stdio\` and \`perf script\` of each file, $reps runs alternating: medians, per 100k samples."
	echo
	echo "| recording | samples | perf.data KB | reader | wall s per 100k | peak RSS KB | peak RSS - perf.data KB |"
	echo "|---|---|---|---|---|---|---|"
	for mode in default buildid-offset; do
		n=$(perf report -i $mode.data --stats 2>/dev/null |
			awk '/SAMPLE events:/ { print $3; exit }')
		kb=$(( $(stat -c %s $mode.data) / 1024 ))
		for reader in report script; do
			t=$(cut -d' ' -f1 $mode.$reader.t | median)
			rss=$(cut -d' ' -f2 $mode.$reader.t | median)
			awk -v m="$mode" -v r="$reader" -v n="$n" -v t="$t" -v rss="$rss" -v kb="$kb" \
			    'BEGIN { printf "| %s | %d | %d | perf %s | %.3f | %d | %d |\n", m, n, kb, r, t * 1e5 / n, rss, rss - kb }'
			echo "DATA report $mode $reader $n $t $rss $kb" >>"$w"/data.txt
		done
	done
	echo
	awk '$1 == "DATA" && $2 == "report" { t[$3 " " $4] = $6 * 1e5 / $5; m[$3 " " $4] = $7; h[$3 " " $4] = $7 - $8 }
	     END {
		for (r = 1; r <= 2; r++) {
			x = r == 1 ? "report" : "script"
			printf "perf %s: --buildid-offset %.2fx the time, %.2fx the peak memory and %.2fx the peak memory besides the file (which perf maps) of default, per 100k samples.\n",
			       x, t["buildid-offset " x] / t["default " x], m["buildid-offset " x] / m["default " x],
			       h["buildid-offset " x] / h["default " x]
		}
	     }' "$w"/data.txt
	echo
	cd "$w"
}

# churn
if want churn; then
churn_section
fi
# topload
if want topload; then
topload_section
fi
# daemon: perf daemon's CPU with per-second rotation
if want daemon; then
daemon_section
fi
# pprof: conversion time and size against perf script
if want pprof; then
pprof_section
fi
# report: perf report and perf script, default against --buildid-offset
if want report; then
report_section
fi
# memory: kernel memory per sampled thread (slab counters)
if want memory; then
echo "## Kernel memory per sampled thread (build_id_offset_memory)"
echo
"$harness_build"/obj/bench/build_id_offset_memory -t "${BENCH_MEM_THREADS:-10000}"
echo
fi
echo "===== END bench"
cat data.txt
