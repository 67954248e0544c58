#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""A profiling daemon's view of PERF_SAMPLE_BUILD_ID_OFFSET, through perf's
python binding: CPU-wide sampling events and a receiver (defer_output), the
samples of a workload joined with their build-ID offset records by tid and
cookie, each user IP checked against the workload's /proc/PID/maps and the
build-ID of the mapped file; the deferred callchains (defer_callchain) read
too.  argv: the workload's command.  Prints one line of figures; exits 1 on
a wrong or missing answer."""

import subprocess
import sys
import time

import perf  # pylint: disable=import-error

USER_END = 1 << 47


def build_id(path):
    """The build-ID of a file, as perf reads it"""
    out = subprocess.run(["perf", "buildid-list", "-i", path],
                         capture_output=True, text=True, check=False)
    return out.stdout.strip()


def read_maps(pid):
    """The file mappings of pid: (start, end, pgoff, path)"""
    maps = []
    with open(f"/proc/{pid}/maps", encoding="utf-8") as f:
        for line in f:
            fields = line.split()
            if len(fields) < 6 or not fields[5].startswith("/"):
                continue
            start, end = (int(x, 16) for x in fields[0].split("-"))
            maps.append((start, end, int(fields[2], 16), fields[5]))
    return maps


def find(maps, addr):
    """The map of maps (start, end, ...) that holds addr"""
    for m in maps:
        if m[0] <= addr < m[1]:
            return m
    return None


def main():
    cpus = perf.cpu_map()
    threads = perf.thread_map(-1)
    # Two events in one buffer: the binding tells them apart by sample ID
    sampler = perf.evsel(type=perf.TYPE_SOFTWARE, config=perf.COUNT_SW_CPU_CLOCK,
                         sample_period=1000000, freq=0, read_format=perf.FORMAT_ID,
                         sample_type=perf.SAMPLE_IP | perf.SAMPLE_TID | perf.SAMPLE_TIME |
                         perf.SAMPLE_ID | perf.SAMPLE_CPU | perf.SAMPLE_CALLCHAIN |
                         perf.SAMPLE_BUILD_ID_OFFSET,
                         defer_callchain=1)
    receiver = perf.evsel(type=perf.TYPE_SOFTWARE, config=perf.COUNT_SW_DUMMY,
                          sample_period=1, freq=0, defer_output=1,
                          read_format=perf.FORMAT_ID,
                          sample_type=perf.SAMPLE_TID | perf.SAMPLE_TIME | perf.SAMPLE_ID |
                          perf.SAMPLE_CPU)
    evlist = perf.evlist(cpus, threads)
    evlist.add(sampler)
    evlist.add(receiver)
    # On from here: the binding has no enable()
    evlist.open()
    evlist.mmap()

    # Popen returns once the workload exec()ed
    with subprocess.Popen(sys.argv[1:]) as child:
        truth, samples, records, deferred = read_session(evlist, cpus, child)
    return check(child, truth, samples, records, deferred)


def read_session(evlist, cpus, child):
    """Read the events until a second after the workload exited; the
    workload's maps as seen while it ran (all of them: it maps libraries
    as it goes)"""
    truth = set()
    samples, records, deferred = [], {}, []
    end = None
    while end is None or time.monotonic() < end:
        if child.poll() is None:
            try:
                truth.update(read_maps(child.pid))
            except OSError:
                pass
        elif end is None:
            end = time.monotonic() + 1
        evlist.poll(timeout=100)
        for cpu in cpus:
            while True:
                event = evlist.read_on_cpu(cpu)
                if not event:
                    break
                if event.type == perf.RECORD_SAMPLE:
                    if event.sample_pid == child.pid and event.sample_ip < USER_END:
                        samples.append((event.sample_time, event.sample_tid,
                                        event.sample_ip, event.sample_bido_cookie))
                elif event.type == perf.RECORD_BUILD_ID_OFFSET:
                    if event.pid == child.pid:
                        # same_as: a record flagged SAME_MAPS has the
                        # maps of the task's record of that cookie
                        records[(event.tid, event.cookie)] = (event.maps, event.same_as)
                elif event.type == perf.RECORD_CALLCHAIN_DEFERRED:
                    if event.sample_pid == child.pid:
                        deferred.append(event.ips)
    return list(truth), samples, records, deferred


def check(child, truth, samples, records, deferred):
    """Join the samples with their records and check each against the
    truth; 0 if all is right"""
    ids = {path: build_id(path) for path in {m[3] for m in truth}}
    last = {}
    for when, tid, _, cookie in samples:
        if cookie and when >= last.get(tid, (0, 0))[0]:
            last[tid] = (when, cookie)
    right = wrong = unjoined = at_end = no_cookie = no_file = 0
    for when, tid, ip, cookie in samples:
        if not cookie:
            no_cookie += 1
            continue
        rec, hops = records.get((tid, cookie)), 0
        while rec and rec[1] and hops < len(records):
            rec, hops = records.get((tid, rec[1])), hops + 1
        maps = rec[0] if rec and not rec[1] else None
        if maps is None:
            # The entry sampling stopped in: its task was still in the
            # kernel; else the record is missing
            if last[tid][1] == cookie:
                at_end += 1
            else:
                unjoined += 1
            continue
        m, t = find(maps, ip), find(truth, ip)
        if not t:
            # The vDSO, anonymous memory: no file to check against
            no_file += 1
        elif m and m[3].hex() == ids[t[3]] and ip - m[0] + m[2] == ip - t[0] + t[2]:
            right += 1
        else:
            wrong += 1
            print(f"wrong: {ip:#x}: record {m}, truth {t}")
    user_frames = [ips for ips in deferred if ips and find(truth, ips[0])]
    print(f"{len(samples)} user samples: {right} resolved right, {wrong} wrong, "
          f"{unjoined} without their record, {at_end} in the last entry, "
          f"{no_cookie} without cookie, {no_file} in no file; {len(records)} records; "
          f"{len(deferred)} deferred callchains, {len(user_frames)} starting in the workload")
    if child.returncode or wrong or unjoined or right < 20 or not user_frames:
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
