#!/bin/bash
# perf record --buildid-offset names the files of tasks older than perf
# SPDX-License-Identifier: GPL-2.0

# A process that was running before perf started has no MMAP record for
# its files.  perf record names them while the process lives, from
# /proc/PID/map_files: in the header's build-ID table, and in the data
# for pipe mode.  For a process gone by the time perf read its records,
# only a file can name them: never a /usr/lib/debug .debug file, which is
# not the program.  Without the capability map_files asks for, perf opens
# the mapped path only once it is known to be the mapped regular file.

set -e

shelldir=$(dirname "$0")
# shellcheck source=lib/build_id_offset.sh
. "${shelldir}"/lib/build_id_offset.sh
# perf record's pid, from bido_record_start
bido_rpid=
# a second workload's pid
wpid2=
# perf_event_paranoid as it was, while a case set it to -1
saved_paranoid=

err=0
tmpdir=$(mktemp -d /tmp/__perf_test.bido_names.XXXXX)
# A build-ID cache of its own ($HOME/.debug): no entry made before may
# name the workload
export HOME="${tmpdir}/home"
mkdir -p "${HOME}"

cleanup() {
  [ -n "${wpid}" ] && kill "${wpid}" 2> /dev/null && wait "${wpid}" 2> /dev/null
  [ -n "${wpid2}" ] && kill "${wpid2}" 2> /dev/null && wait "${wpid2}" 2> /dev/null
  [ -n "${saved_paranoid}" ] && echo "${saved_paranoid}" > /proc/sys/kernel/perf_event_paranoid
  [ -n "${ppid}" ] && kill -CONT "${ppid}" 2> /dev/null && kill "${ppid}" 2> /dev/null &&
    wait "${ppid}" 2> /dev/null
  rm -rf "${tmpdir}"
  trap - EXIT TERM INT
}

trap_cleanup() {
  cleanup
  exit 1
}

skip() {
  echo "Build-ID offset names [Skipped $1]"
  cleanup
  exit 2
}

fail() {
  echo "Build-ID offset names [Failed $*]"
  err=1
}

# Waits for a line on the FIFO argv[1] (blocked: no user samples before),
# spins in bidoname_spin() for argv[2] ms, then, given a FIFO argv[3],
# waits for a line there too, and exits.
build_workload() {
  local rc=0

  cat > "${tmpdir}/bidoname.c" << 'EOF'
#include <fcntl.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

__attribute__((noinline)) unsigned long bidoname_spin(double secs)
{
	double end = now() + secs;
	volatile unsigned long x = 0;

	while (now() < end)
		for (int i = 0; i < 100000; i++)
			x += i;
	return x;
}

int main(int argc, char **argv)
{
	char c;
	int fd = open(argv[1], O_RDONLY);

	if (fd < 0 || read(fd, &c, 1) != 1)
		return 1;
	bidoname_spin(atoi(argv[2]) / 1000.0);
	if (argc > 3) {
		close(fd);
		fd = open(argv[3], O_RDONLY);
		if (fd < 0 || read(fd, &c, 1) != 1)
			return 1;
	}
	return 0;
}
EOF
  bido_cc "Build-ID offset names" "${tmpdir}/bidoname" "${tmpdir}/bidoname.c" -O1 -g || rc=$?
  if [ "${rc}" != 0 ]; then
    cleanup
    exit "${rc}"
  fi
  bid=$(perf buildid-list -i "${tmpdir}/bidoname" 2> /dev/null)
  [ -n "${bid}" ] || skip "the workload has no build-ID"
}

test_support() {
  local rc=0

  bido_support "Build-ID offset names" || rc=$?
  [ "${rc}" = 0 ] && return 0
  cleanup
  exit "${rc}"
}

# Start the workload, blocked on its FIFO, before perf.  $1: how long it
# spins (ms); $2: if given, it then waits for exit_workload
start_workload() {
  rm -f "${tmpdir}/go" "${tmpdir}/exit"
  mkfifo "${tmpdir}/go" "${tmpdir}/exit"
  "${tmpdir}/bidoname" "${tmpdir}/go" "$1" ${2:+"${tmpdir}/exit"} &
  wpid=$!
}

go_workload() {
  echo > "${tmpdir}/go"
}

exit_workload() {
  echo > "${tmpdir}/exit"
}

# Wait until perf -v, writing to $1, said it read the workload's program
# from the workload's mappings (120 s at most); prints the seconds
# waited
wait_named() {
  bido_wait_line "$1" "build-ID offset: ${wpid} maps ${tmpdir}/bidoname " || true
}

# "PERCENT DSO SYMBOL" of bidoname_spin's samples (a file, or the data of
# a pipe on stdin: "-")
spin_line() {
  perf report -i "$1" --stdio --sort dso,sym -q 2> /dev/null |
    awk '/bidoname_spin/ { print $1, $2, $NF; exit }'
}

# Every sampled process: a pipe that perf report reads at once must carry
# the names itself (there is no header at the end).  The workload spins
# after perf started, and exits once perf named its program.
test_pipe() {
  local line wpid_pipe i

  start_workload 500 hold
  # -v: on a failure, what the namer did shows
  bido_record_start "${tmpdir}/pipe.data" "${tmpdir}/pipe.err" -v -o - -a --synth=no \
    --buildid-offset -e cpu-clock:u -F 999 || fail "pipe: perf record did not start"
  ppid=${bido_rpid}
  go_workload
  wpid_pipe=${wpid}
  i=$(wait_named "${tmpdir}/pipe.err")
  exit_workload
  wait "${wpid}"; wpid=
  bido_record_stop || fail "perf record hung"
  ppid=
  line=$(spin_line - < "${tmpdir}/pipe.data")
  if [ "$(echo "${line}" | awk '{ print $2 }')" != bidoname ]
  then
    fail "pipe: bidoname_spin's samples are not in bidoname: '${line}' (waited ${i} s)"
    grep -a "build-ID offset" "${tmpdir}/pipe.err"
    # What perf report made of the pipe, and the workload's records in it
    perf report -i - --stdio --sort comm,dso,sym -q < "${tmpdir}/pipe.data" \
      > "${tmpdir}/pipe.rep" 2>&1 || echo "perf report: exit $?"
    head -n 6 "${tmpdir}/pipe.rep"
    perf report -D -i - < "${tmpdir}/pipe.data" 2> /dev/null |
      grep -ac "PERF_RECORD_BUILD_ID_OFFSET ${wpid_pipe}/" || true
  fi
}

# A process that is gone at the end: named while it lived.  It exits
# once perf -v said it named the program (perf may take seconds to get to
# it when the host is busy), or after 120 s.  $1: the case's name; $2...:
# more perf record options.  -B (no build-ID pass at the end; -z and
# --buildid-mmap imply it): the files named while recording must stay
# named; -B turns the build-ID cache off, so nothing else could name them.
# --threads: a file per thread, and the namer on one of them; the samples
# must get the workload's comm as without it.
test_exited() {
  local what=$1 data="${tmpdir}/exited_${1//-/}.data" line comm i

  shift
  # The case must name the program itself, not find it in the cache
  rm -rf "${HOME}/.debug"
  start_workload 500 hold
  bido_record_start /dev/null "${tmpdir}/exited.err" -v -o "${data}" -a \
    --synth=no --buildid-offset -e cpu-clock:u -F 999 "$@" ||
    fail "${what}: perf record did not start"
  ppid=${bido_rpid}
  go_workload
  i=$(wait_named "${tmpdir}/exited.err")
  exit_workload
  wait "${wpid}"; wpid=
  # The EXIT record is read before the end
  sleep 0.5
  bido_record_stop || fail "perf record hung"
  ppid=
  line=$(spin_line "${data}")
  comm=$(perf report -i "${data}" --stdio --sort comm,sym -q 2> /dev/null |
         awk '/bidoname_spin/ { print $2; exit }')
  if [ "$(echo "${line}" | awk '{ print $2 }')" != bidoname ] || [ "${comm}" != bidoname ]
  then
    fail "${what}: bidoname_spin's samples are not in bidoname:" \
         "'${line}', comm '${comm}' (waited ${i} s)"
    grep -a "build-ID offset" "${tmpdir}/exited.err"
  else
    echo "Build-ID offset names, ${what} [Success]"
  fi
}

# --switch-output: a task that spins across the switches names its last
# record, which went into the first file; each file must name the task's
# samples on its own (perf carries the task's last record, and its comm,
# into each new file).
test_switch() {
  local dir=${tmpdir}/switch f n files=0 i wpid_switch

  mkdir -p "${dir}"
  # Each file must name the program itself: the cases before put it in
  # the build-ID cache, which would name it for any file
  rm -rf "${HOME}/.debug"
  start_workload 600000 hold
  bido_record_start /dev/null "${dir}/err" -v -o "${dir}/perf.data" -a --synth=no \
    --buildid-offset --switch-output=signal -e cpu-clock:u -F 999 ||
    fail "switch: perf record did not start"
  ppid=${bido_rpid}
  go_workload
  wpid_switch=${wpid}
  i=$(wait_named "${dir}/err")
  for _ in 1 2
  do
    sleep 1
    kill -USR2 "${ppid}"
  done
  sleep 1
  kill "${wpid}"
  wait "${wpid}" 2> /dev/null || true; wpid=
  bido_record_stop || fail "perf record hung"
  ppid=
  for f in "${dir}"/perf.data.*
  do
    [ -e "${f}" ] || continue
    # "COMM TID IP (DSO)" of the workload's samples: all of comm
    # bidoname, in a DSO known by name (bidoname mostly, the vDSO and
    # libc at times)
    n=$(perf script -i "${f}" -F comm,tid,ip,dso 2> /dev/null |
        awk -v t="${wpid_switch}" '$2 == t { n++
               if ($1 != "bidoname" || $NF == "([unknown])" || $NF ~ /build-id/) bad++
               if ($NF ~ /\/bidoname\)$/) in_prog++ }
             END { print (in_prog ? n : 0) + 0, bad + 0 }')
    files=$((files + 1))
    if [ "${n% *}" = 0 ] || [ "${n#* }" != 0 ]
    then
      fail "switch: file ${files}: ${n% *} samples of the workload in bidoname," \
           "${n#* } without comm or DSO name (waited ${i} s)"
      perf script -i "${f}" -F comm,tid,dso,ip 2> /dev/null |
        awk -v t="${wpid_switch}" '$2 == t { print $1, $2, $NF }' | sort | uniq -c | head -3
    fi
  done
  if [ "${files}" -lt 3 ]
  then
    fail "switch: ${files} files, not 3"
    ls -l "${dir}"
  fi
}

# perf record is stopped while the workload runs and exits: when perf
# reads the records, no task maps the file.  $1: the name expected.
record_gone() {
  local out=$1

  # The build-ID cache would name it: the runs before added it there
  rm -rf "${HOME}/.debug"
  start_workload 500
  bido_record_start /dev/null "${out}.err" -o "${out}" -a --synth=no --buildid-offset \
    -e cpu-clock:u -F 999 || fail "debug: perf record did not start"
  ppid=${bido_rpid}
  kill -STOP "${ppid}"
  go_workload
  wait "${wpid}"; wpid=
  kill -CONT "${ppid}"
  kill -INT "${ppid}"
  # A rename under the DSO list's lock hung here once
  if ! timeout 120 tail --pid="${ppid}" -f /dev/null
  then
    fail "debug: perf record did not finish"
    kill -9 "${ppid}"
  fi
  bido_record_stop || fail "perf record hung"
  ppid=
}

# Inside a mount namespace with a tmpfs on /usr/lib/debug holding the
# workload's .debug file only: it is not the name, the build-ID shows.
# With the link Fedora adds (.build-id/NN/REST to the program), the
# program's path is the name.
test_debug_ns() {
  local dir=/usr/lib/debug/.build-id/${bid:0:2} line

  mount -t tmpfs none /usr/lib/debug || skip "cannot mount a tmpfs on /usr/lib/debug"
  mkdir -p "${dir}"
  objcopy --only-keep-debug "${tmpdir}/bidoname" "${dir}/${bid:2}.debug" ||
    skip "objcopy --only-keep-debug failed"

  record_gone "${tmpdir}/debug.data"
  # perf report died with SIGSEGV on a DSO named after the .debug file
  perf report -i "${tmpdir}/debug.data" --stdio --sort dso -q 2> /dev/null \
    > "${tmpdir}/debug.dsos" || fail "debug: perf report exit status $?"
  if ! grep -qF "[build-id:${bid}]" "${tmpdir}/debug.dsos" ||
     grep -q '\.debug *$' "${tmpdir}/debug.dsos"
  then
    fail "debug: want [build-id:${bid}], no .debug"
    cat "${tmpdir}/debug.dsos" "${tmpdir}/debug.data.err"
  fi

  ln -s "${tmpdir}/bidoname" "${dir}/${bid:2}"
  record_gone "${tmpdir}/link.data"
  line=$(spin_line "${tmpdir}/link.data")
  if [ "$(echo "${line}" | awk '{ print $2 }')" != bidoname ]
  then
    fail "debug link: bidoname_spin's samples are not in bidoname: '${line}'"
    cat "${tmpdir}/link.data.err"
  fi
  return "${err}"
}

if [ "$1" = debug_ns ]
then
  # Re-run by test_debug(), in its own mount namespace: the directory is
  # the caller's to remove
  tmpdir=$2
  bid=$3
  skip() {
    echo "debug: $1"
    exit 2
  }
  test_debug_ns
  exit $?
fi

test_debug() {
  local rc=0

  command -v unshare > /dev/null || { echo "debug: no unshare, not run"; return; }
  unshare -m --propagation private bash "$0" debug_ns "${tmpdir}" "${bid}" || rc=$?
  case ${rc} in
    0) ;;
    2) echo "debug: skipped, see above";;
    *) err=1;;
  esac
}

trap trap_cleanup EXIT TERM INT
# An unprivileged perf cannot open /proc/PID/map_files and opens the path
# /proc/PID/maps shows instead.  A user who deleted the mapped file can
# put a FIFO where that path points ("NAME (deleted)"): opened for
# reading it would wait for a writer forever, and perf record with it.
# perf must not open anything but a regular file, the mapped one, there.
# perf records system wide (-p of a task of its own user failed now and
# then in the guest with "No such process", not understood yet).
test_fifo() {
  local dir="${tmpdir}/fifo" rc=0

  if ! command -v setpriv > /dev/null
  then
    echo "Build-ID offset names, FIFO at a mapped path [Skipped no setpriv]"
    return
  fi
  mkdir -p "${dir}/home"
  chmod 755 "${tmpdir}"
  chmod 777 "${dir}" "${dir}/home"
  cp "${tmpdir}/bidoname" "${dir}/bidoname"
  rm -f "${tmpdir}/go"
  mkfifo -m 666 "${tmpdir}/go"
  # Spins until killed below: perf may take seconds to start
  setpriv --reuid=65534 --regid=65534 --clear-groups \
    "${dir}/bidoname" "${tmpdir}/go" 600000 &
  wpid=$!
  # Once it runs the program (setpriv execs it), its path names a FIFO
  for _ in $(seq 300); do
    grep -q "${dir}/bidoname" "/proc/${wpid}/maps" 2> /dev/null && break
    sleep 0.1
  done
  rm -f "${dir}/bidoname"
  mkfifo "${dir}/bidoname (deleted)"
  # System wide as nobody: -1
  saved_paranoid=$(cat /proc/sys/kernel/perf_event_paranoid)
  echo -1 > /proc/sys/kernel/perf_event_paranoid
  go_workload
  timeout 90 setpriv --reuid=65534 --regid=65534 --clear-groups \
    env HOME="${dir}/home" perf record --buildid-offset --synth=no -e cpu-clock:u \
    -c 1000000 -a -o "${dir}/fifo.data" -- sleep 1 \
    > "${dir}/record.log" 2>&1 || rc=$?
  echo "${saved_paranoid}" > /proc/sys/kernel/perf_event_paranoid
  saved_paranoid=
  kill "${wpid}" 2> /dev/null || true
  wait "${wpid}" 2> /dev/null || true
  wpid=
  # A hang or no samples fail; its exit status is shown, not checked
  # (perf report -f: the file is nobody's)
  if [ "${rc}" = 124 ]
  then
    fail "FIFO: perf record as nobody did not finish in 90 s"
  elif [ -z "$(perf report -f -i "${dir}/fifo.data" --stdio -q 2> /dev/null | head -n 1)" ]
  then
    fail "FIFO: no samples (perf record exited with ${rc}: $(tail -n 2 "${dir}/record.log"))"
  else
    echo "Build-ID offset names, FIFO at a mapped path [Success]"
  fi
}

# A mapping the namer cannot open (its path names no file any more, and
# map_files is closed to an unprivileged perf) must not keep the file from
# being named through another process that maps it.  The program runs
# twice as nobody, from a path deleted then (its hard link stays) and
# from the link, both started before perf (else an MMAP2 would name it);
# the second spins (and is seen) only once perf failed on the first.
test_open_failed() {
  local dir="${tmpdir}/again" line

  if ! command -v setpriv > /dev/null
  then
    echo "Build-ID offset names, a mapping that cannot be opened [Skipped no setpriv]"
    return
  fi
  mkdir -p "${dir}/home"
  chmod 755 "${tmpdir}"
  chmod 777 "${dir}" "${dir}/home"
  cp "${tmpdir}/bidoname" "${dir}/bidoname"
  ln "${dir}/bidoname" "${dir}/link"
  mkfifo -m 666 "${dir}/go_a" "${dir}/go_b"
  setpriv --reuid=65534 --regid=65534 --clear-groups \
    "${dir}/bidoname" "${dir}/go_a" 600000 &
  wpid=$!
  setpriv --reuid=65534 --regid=65534 --clear-groups \
    "${dir}/link" "${dir}/go_b" 600000 &
  wpid2=$!
  for _ in $(seq 300); do
    grep -q "${dir}/bidoname" "/proc/${wpid}/maps" 2> /dev/null &&
      grep -q "${dir}/link" "/proc/${wpid2}/maps" 2> /dev/null && break
    sleep 0.1
  done
  # Its maps say "bidoname (deleted)" now
  rm -f "${dir}/bidoname"
  saved_paranoid=$(cat /proc/sys/kernel/perf_event_paranoid)
  echo -1 > /proc/sys/kernel/perf_event_paranoid
  setpriv --reuid=65534 --regid=65534 --clear-groups \
    env HOME="${dir}/home" perf record -v --buildid-offset --synth=no -e cpu-clock:u \
    -c 1000000 -a -o "${dir}/perf.data" > /dev/null 2> "${dir}/record.log" &
  ppid=$!
  # (not forever if the workload died)
  timeout 10 sh -c "echo > '${dir}/go_a'" || true
  if bido_wait_line "${dir}/record.log" \
       "build-ID offset: ${wpid} maps ${dir}/bidoname (deleted), which cannot be opened" \
       > /dev/null
  then
    timeout 10 sh -c "echo > '${dir}/go_b'" || true
    bido_wait_line "${dir}/record.log" "build-ID offset: ${wpid2} maps ${dir}/link " \
      > /dev/null || true
  fi
  kill -INT "${ppid}" 2> /dev/null || true
  wait "${ppid}" 2> /dev/null || true
  ppid=
  echo "${saved_paranoid}" > /proc/sys/kernel/perf_event_paranoid
  saved_paranoid=
  kill "${wpid}" "${wpid2}" 2> /dev/null || true
  wait "${wpid}" "${wpid2}" 2> /dev/null || true
  line=$(perf report -f -i "${dir}/perf.data" --stdio --sort dso,sym -q 2> /dev/null |
         awk '/bidoname_spin/ { print $1, $2, $NF; exit }')
  if ! grep -qa "build-ID offset: ${wpid2} maps ${dir}/link " "${dir}/record.log" ||
     [ "$(echo "${line}" | awk '{ print $2 }')" != link ]
  then
    fail "open failed: the program was not named through its other mapping: '${line}'"
    grep -a -e "build-ID offset: ${wpid} " -e "build-ID offset: ${wpid2} " "${dir}/record.log" ||
      true
  else
    echo "Build-ID offset names, a mapping that cannot be opened [Success]"
  fi
  wpid=
  wpid2=
}

# The build-ID cache gets the file the task maps, by its build-ID, when
# perf names it: here the program's path holds another program by the
# end (an upgrade), which perf must not cache, and which was all perf
# record could cache at the end before.
test_upgrade() {
  local dir="${tmpdir}/upgrade" cached

  rm -rf "${HOME}/.debug"
  mkdir -p "${dir}"
  cp "${tmpdir}/bidoname" "${dir}/bidoname"
  rm -f "${tmpdir}/go" "${tmpdir}/exit"
  mkfifo "${tmpdir}/go" "${tmpdir}/exit"
  "${dir}/bidoname" "${tmpdir}/go" 500 "${tmpdir}/exit" &
  wpid=$!
  bido_record_start /dev/null "${dir}/err" -v -o "${dir}/perf.data" -a \
    --synth=no --buildid-offset -e cpu-clock:u -F 999 ||
    fail "upgrade: perf record did not start"
  ppid=${bido_rpid}
  go_workload
  bido_wait_line "${dir}/err" "build-ID offset: ${wpid} maps ${dir}/bidoname " > /dev/null ||
    true
  # The upgrade: another program (another build-ID) at the same path
  rm -f "${dir}/bidoname"
  cp "$(command -v sleep)" "${dir}/bidoname"
  exit_workload
  wait "${wpid}"; wpid=
  bido_record_stop || fail "perf record hung"
  ppid=
  cached="${HOME}/.debug/.build-id/${bid:0:2}/${bid:2}/elf"
  if [ "$(perf buildid-list -i "${cached}" 2> /dev/null)" != "${bid}" ]
  then
    fail "upgrade: the build-ID cache has no ${bid} (the program perf named)"
    ls -la "${HOME}/.debug/.build-id/${bid:0:2}" 2> /dev/null || true
  else
    echo "Build-ID offset names cached by build-ID [Success]"
  fi
}

test_support
build_workload
test_pipe
test_exited exited
test_switch
test_debug
test_fifo
test_open_failed
test_exited "-B" -B
test_exited "--threads" --threads
test_upgrade
cleanup
exit ${err}
