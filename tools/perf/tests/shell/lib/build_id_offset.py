# SPDX-License-Identifier: GPL-2.0
"""Reads a task's build-ID offset records and deferred callchains through
perf's python binding, and checks them against the task's own maps.  In
time order, a sample's cookie is its tid's latest record before it or a
record of its tid after it; an UNCHANGED record (no maps) says that the
record before it still covers its entry.

usage: build_id_offset.py PERF BUILD_ID
PERF runs the workload (perf test -w noploop); BUILD_ID is its file's.
"""

import subprocess
import sys
import time

import perf

# PERF_BUILD_ID_OFFSET_F_UNCHANGED: nr 0, the tid's previous record covers
UNCHANGED = 1 << 3


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
    # Samples and records as (time, kind, tid, cookie, ip or (maps, flags))
    events, callchains = [], {}

    def drain():
        for cpu in cpus:
            while True:
                event = evlist.read_on_cpu(cpu, sample_id_all=1)
                if not event:
                    break
                if event.type == perf.RECORD_SAMPLE:
                    events.append((event.sample_time, 1, event.sample_tid,
                                   event.sample_build_id_offset_cookie, event.sample_ip))
                elif event.type == perf.RECORD_BUILD_ID_OFFSET:
                    events.append((event.sample_time, 0, event.tid, event.cookie,
                                   (event.maps, event.flags)))
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

    # In time order: the maps that cover each record's entry (an UNCHANGED
    # record's are those of the record before it), each tid's latest record,
    # the samples that wait for a record after them
    records, latest, waiting = {}, {}, {}
    samples, joined, stale, unchanged, first_unchanged = 0, [], 0, 0, 0
    for _, kind, tid, cookie, what in sorted(events, key=lambda e: e[0]):
        if kind == 0:
            maps, flags = what
            if flags & UNCHANGED:
                unchanged += 1
                if maps or tid not in latest:
                    first_unchanged += 1
                    continue
                maps = records[(tid, latest[tid])]
            records[(tid, cookie)] = maps
            latest[tid] = cookie
            joined += [(ip, maps) for ip in waiting.pop((tid, cookie), [])]
            continue
        samples += 1
        if not cookie:
            continue
        if latest.get(tid) == cookie:
            joined.append((what, records[(tid, cookie)]))
        elif (tid, cookie) in records:
            stale += 1
        else:
            waiting.setdefault((tid, cookie), []).append(what)
    with_cookie = len(joined) + stale + sum(len(w) for w in waiting.values())
    good = [s for s in joined if mapped(s[0], s[1]) == build_id]
    covers = {c: maps for (_, c), maps in records.items()}
    frames = [(ip, c) for c, ips in callchains.items() if c in covers for ip in ips]
    good_frames = [f for f in frames if mapped(f[0], covers[f[1]]) is not None]
    print(f"{samples} samples, {with_cookie} with a cookie, {len(joined)} "
          f"with their record, {len(good)} in the workload's file with its build-ID, "
          f"{stale} naming a record older than their tid's latest; {len(records)} "
          f"records, {unchanged} UNCHANGED, {first_unchanged} of them with maps or "
          f"the tid's first; {len(frames)} deferred user frames, {len(good_frames)} "
          f"in a map of their record")
    # The workload never sleeps: only its last entry (its samples share one
    # cookie) may be cut off by the kill
    if not with_cookie or len(waiting) > 1 or stale or first_unchanged or \
       len(good) != len(joined) or not frames or len(good_frames) != len(frames):
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
