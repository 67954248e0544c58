# SPDX-License-Identifier: GPL-2.0
"""Reads a task's build-ID offset records and deferred callchains through
perf's python binding, and checks them against the task's own maps.

usage: build_id_offset.py PERF BUILD_ID
PERF runs the workload (perf test -w noploop); BUILD_ID is its file's.
"""

import subprocess
import sys
import time

import perf


def proc_maps(pid):
    """(start, end, pgoff, path) of each file mapping of pid"""
    maps = []
    with open(f"/proc/{pid}/maps") as f:
        for line in f:
            fields = line.split()
            if len(fields) < 6 or not fields[5].startswith("/"):
                continue
            start, end = (int(x, 16) for x in fields[0].split("-"))
            maps.append((start, end, int(fields[2], 16), fields[5]))
    return maps


def comm(pid):
    """pid's comm, "" once it is gone"""
    try:
        with open(f"/proc/{pid}/comm") as f:
            return f.read().strip()
    except OSError:
        return ""


def main():
    perf_bin, build_id = sys.argv[1], bytes.fromhex(sys.argv[2])
    work = subprocess.Popen([perf_bin, "test", "-w", "noploop", "3"])
    # Its maps once it spins: the workload names itself then (60 s at most)
    end = time.time() + 60
    while comm(work.pid) != "perf-noploop" and time.time() < end:
        time.sleep(0.05)
    truth = proc_maps(work.pid)
    cpus = perf.cpu_map()
    threads = perf.thread_map(work.pid)
    evsel = perf.evsel(type=perf.TYPE_SOFTWARE, config=perf.COUNT_SW_CPU_CLOCK,
                       freq=0, sample_period=1000000, exclude_kernel=1,
                       wakeup_events=1, sample_id_all=1,
                       defer_callchain=1, defer_output=1,
                       sample_type=perf.SAMPLE_IP | perf.SAMPLE_TID |
                       perf.SAMPLE_TIME | perf.SAMPLE_CALLCHAIN |
                       perf.SAMPLE_BUILD_ID_OFFSET)
    evsel.open(cpus=cpus, threads=threads)
    evlist = perf.evlist(cpus, threads)
    evlist.add(evsel)
    evlist.mmap()
    samples, records, callchains = [], {}, {}

    def drain():
        for cpu in cpus:
            while True:
                event = evlist.read_on_cpu(cpu, sample_id_all=1)
                if not event:
                    break
                if event.type == perf.RECORD_SAMPLE:
                    samples.append((event.sample_ip, event.sample_build_id_offset_cookie))
                elif event.type == perf.RECORD_BUILD_ID_OFFSET:
                    records[event.cookie] = event.maps
                    repr(event)
                elif event.type == perf.RECORD_CALLCHAIN_DEFERRED:
                    callchains[event.cookie] = [ip for ip in event.ips
                                                if ip < 2**64 - 4095]
                    repr(event)

    end = time.time() + 2
    while time.time() < end:
        evlist.poll(timeout=100)
        drain()
    # What it wrote until it was gone
    work.kill()
    work.wait()
    drain()

    def mapped(ip, maps):
        """the map of maps that holds ip, checked against /proc/PID/maps"""
        for start, end, pgoff, bid, _ in maps:
            if start <= ip < end:
                for t_start, t_end, t_pgoff, _ in truth:
                    if t_start <= start and end <= t_end and \
                       t_pgoff + start - t_start == pgoff:
                        return bid
                return None
        return None

    with_cookie = [s for s in samples if s[1]]
    joined = [s for s in with_cookie if s[1] in records]
    good = [s for s in joined if mapped(s[0], records[s[1]]) == build_id]
    frames = [(ip, c) for c, ips in callchains.items() if c in records for ip in ips]
    good_frames = [f for f in frames if mapped(f[0], records[f[1]]) is not None]
    print(f"{len(samples)} samples, {len(with_cookie)} with a cookie, {len(joined)} "
          f"with their record, {len(good)} in the workload's file with its build-ID; "
          f"{len(frames)} deferred user frames, {len(good_frames)} in a map of their record")
    # The workload never sleeps: only its last entry (its samples share one
    # cookie) may be cut off by the kill
    if not with_cookie or len({s[1] for s in with_cookie if s[1] not in records}) > 1 or \
       len(good) != len(joined) or not frames or len(good_frames) != len(frames):
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
