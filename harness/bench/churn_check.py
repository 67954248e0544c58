#!/usr/bin/env python3
"""Resolution under churn: check two recordings of one churn run against
the workload's own log.

usage: churn_check.py [--perf PERF] [--examples N] LOG DEFAULT.data OURS.data

LOG is what harness/workloads/churn.c wrote: one line per spin,
  PID TID START END PATH BUILD_ID FN_START FN_END FN_OFFSET
DEFAULT.data is `perf record -a -g --user-callchains -k CLOCK_MONOTONIC
-e cpu-clock` (synthesis and MMAP2 records), OURS.data the same with
`--buildid-offset --synth=no`, both recorded at the same time on the same
run.

A sample counts when its TID spun at its time (START <= time <= END) and
its user IP is in the logged churn_spin(); the truth is then (BUILD_ID,
FN_OFFSET + IP - FN_START).  The user IP is the sample's IP, or for a
sample taken in the kernel the first address of its user call chain,
where the task returns to.  What perf says:
  default  `perf script -F ...,dsoff`: the DSO's path and the file offset
           (perf's map-relative address, address - start + pgoff: a file
           offset); the build-ID is the one the perf.data header gives
           for that path (`perf buildid-list`), the only one perf has.
  ours     `perf script -F ...,buildid_off`: "buildid_off:BUILD_ID+0xOFFSET" after
           the address, the build-ID and file offset perf resolved it to.
A sample is correct if both match, unresolved if perf gave no DSO (or, for
ours, no build-ID and offset), wrong otherwise.  The table splits objects
loaded from a path of their own from those loaded from a path that the
workload replaced during the run (slotN.so), and gives with each share
correct the lower end of its 95% (Wilson score) interval: with few
samples, 100% says little.
"""

import argparse
import bisect
import collections
import math
import re
import subprocess
import sys

FIELDS = "pid,tid,misc,time,ip,dso,dsoff"
# A sample: "  PID/TID  MISC SECS.NSECS:" (MISC: K for a sample taken in
# the kernel, U in user space) and, on the same line without a call
# chain or on one line per frame with one, "ADDR (DSO+0xOFF)" followed, for
# ours, by "buildid_off:BUILD_ID+0xOFF" if resolved; ours end with the cookie,
# "buildid_off:0xCOOKIE".
HEAD = re.compile(r"^\s*(\d+)/(\d+)\s+([A-Za-z]*)\s+(\d+)\.(\d+):(.*)$")
FRAME = re.compile(r"^\s*([0-9a-f]+)\s+\((.*?)\)(.*)$")
USER_END = 1 << 47
WARNINGS = []
BUILDID_OFF = re.compile(r"buildid_off:([0-9a-f]{2,})\+0x([0-9a-f]+)")
COOKIE = re.compile(r"buildid_off:0x([0-9a-f]+)\s*$")
DSOFF = re.compile(r"^(.*)\+0x([0-9a-f]+)$")


class Spin:
    __slots__ = ("pid", "start", "end", "path", "bid", "fn_start", "fn_end",
                 "fn_off")

    def __init__(self, f):
        self.pid = int(f[0])
        self.start, self.end = int(f[2]), int(f[3])
        self.path, self.bid = f[4], f[5]
        self.fn_start, self.fn_end = int(f[6], 16), int(f[7], 16)
        self.fn_off = int(f[8], 16)

    @property
    def replaced(self):
        return "/slot" in self.path


def read_log(path):
    """tid -> spins sorted by start (a thread's spins do not overlap)"""
    spins = collections.defaultdict(list)
    n = 0
    with open(path) as f:
        for line in f:
            fields = line.split()
            if len(fields) != 9:
                sys.exit(f"churn_check: {path}: bad line: {line!r}")
            spins[int(fields[1])].append(Spin(fields))
            n += 1
    starts = {}
    for tid, lst in spins.items():
        lst.sort(key=lambda s: s.start)
        starts[tid] = [s.start for s in lst]
    return spins, starts, n


def truth_of(spins, starts, tid, t, ip):
    lst = spins.get(tid)
    if not lst:
        return None
    i = bisect.bisect_right(starts[tid], t) - 1
    if i < 0:
        return None
    s = lst[i]
    if t > s.end or not s.fn_start <= ip < s.fn_end:
        return None
    return s


def perf_lines(perf, args):
    p = subprocess.Popen([perf] + args, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    for line in p.stdout:
        yield line
    err = p.stderr.read()
    if p.wait():
        sys.exit(f"churn_check: perf {' '.join(args)}: {err.strip()}")
    # Warnings (out of order events, lost records) go with the results
    if err.strip():
        WARNINGS.append(f"perf {args[0]} {args[-1]}: " +
                        " ".join(err.split()))


class Sample:
    __slots__ = ("pid", "tid", "kernel", "time", "frames", "cookie", "head")

    def __init__(self, m):
        self.pid, self.tid = int(m.group(1)), int(m.group(2))
        self.kernel = "K" in m.group(3)
        self.time = int(m.group(4)) * 1000000000 + \
            int(m.group(5).ljust(9, "0")[:9])
        self.frames = []
        self.cookie = None
        self.head = m.group(0).strip()
        self.add(m.group(6))

    def add(self, text):
        f = FRAME.match(text)
        if f:
            self.frames.append((int(f.group(1), 16), f.group(2), f.group(3),
                                text.strip()))
        c = COOKIE.search(text)
        if c:
            self.cookie = int(c.group(1), 16)

    def user_frame(self):
        """The IP, or where the task returns to for a sample in the kernel"""
        for f in self.frames:
            if f[0] < USER_END:
                return f
        return None


def samples(perf, args):
    s = None
    for line in perf_lines(perf, args):
        m = HEAD.match(line)
        if m:
            if s:
                yield s
            s = Sample(m)
        elif s:
            s.add(line)
    if s:
        yield s


def header_build_ids(perf, data):
    """path -> set of build-IDs in the perf.data header"""
    bids = collections.defaultdict(set)
    for line in perf_lines(perf, ["buildid-list", "-i", data]):
        f = line.split(None, 1)
        if len(f) == 2:
            bids[f[1].strip()].add(f[0])
    return bids


class Tally:
    def __init__(self):
        self.n = collections.Counter()
        self.examples = collections.defaultdict(list)

    def add(self, cls, verdict, example, keep):
        for c in (cls, "all"):
            self.n[c, "samples"] += 1
            self.n[c, verdict] += 1
        if verdict != "correct" and len(self.examples[verdict]) < keep:
            self.examples[verdict].append(example)


def check(mode, perf, data, spins, starts, keep):
    fields = FIELDS + (",buildid_off" if mode == "ours" else "")
    bids = header_build_ids(perf, data) if mode == "default" else None
    tally = Tally()
    total = cookie0 = in_kernel = 0
    # The first user frame is all that is checked
    args = ["script", "--ns", "--max-stack", "1", "-F", fields, "-i", data]
    for smp in samples(perf, args):
        total += 1
        frame = smp.user_frame()
        if frame is None:
            continue
        ip, dso, rest, raw = frame
        s = truth_of(spins, starts, smp.tid, smp.time, ip)
        if not s or s.pid != smp.pid:
            continue
        in_kernel += smp.kernel
        truth = (s.bid, s.fn_off + ip - s.fn_start)
        cls = "replaced in place" if s.replaced else "one path each"
        if mode == "ours":
            b = BUILDID_OFF.search(rest)
            got = (b.group(1), int(b.group(2), 16)) if b else None
            if not got and smp.cookie == 0:
                cookie0 += 1
        else:
            d = DSOFF.match(dso)
            got = None
            if d and bids.get(d.group(1)):
                got = ("|".join(sorted(bids[d.group(1)])), int(d.group(2), 16))
        if got is None:
            verdict = "unresolved"
        elif got == truth:
            verdict = "correct"
        else:
            verdict = "wrong"
        example = f"truth {s.bid}+{truth[1]:#x} ({s.path}); perf: {smp.head}"
        if raw not in smp.head:
            example += f" ... {raw}"
        if mode == "ours":
            example += f" (cookie {smp.cookie:#x})" if smp.cookie is not None \
                else " (no cookie)"
        tally.add(cls, verdict, example, keep)
    return tally, total, cookie0, in_kernel


def wilson_low(k, n, z=1.96):
    """The lower end of the 95% Wilson score interval of k successes in n"""
    p = k / n
    d = 1 + z * z / n
    return (p + z * z / (2 * n) -
            z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))) / d


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--perf", default="perf")
    ap.add_argument("--examples", type=int, default=3,
                    help="wrong and unresolved samples shown per mode")
    ap.add_argument("log")
    ap.add_argument("default")
    ap.add_argument("ours")
    a = ap.parse_args()

    spins, starts, nspins = read_log(a.log)
    nrepl = sum(s.replaced for lst in spins.values() for s in lst)
    tids = len(spins)
    pids = len({s.pid for lst in spins.values() for s in lst})
    results = []
    for mode, data in (("default", a.default), ("ours", a.ours)):
        results.append((mode,) + check(mode, a.perf, data, spins, starts,
                                       a.examples))

    print(f"The workload logged {nspins} spins ({nrepl} in replaced objects) "
          f"in {tids} threads of {pids} processes.")
    print()
    print("| mode | objects | samples in truth intervals | correct | "
          "unresolved | wrong | share correct | 95% lower bound |")
    print("|---|---|---|---|---|---|---|---|")
    names = {"default": "default (synthesis + MMAP2)",
             "ours": "--buildid-offset --synth=no"}
    for mode, tally, total, cookie0, in_kernel in results:
        for cls in ("one path each", "replaced in place", "all"):
            n = tally.n
            k = n[cls, "samples"]
            c = n[cls, "correct"]
            share = f"{100.0 * c / k:.2f}%" if k else "-"
            low = f"{100.0 * wilson_low(c, k):.2f}%" if k else "-"
            label = f"**{cls}**" if cls == "all" else cls
            print(f"| {names[mode]} | {label} | {k} | {c} | "
                  f"{n[cls, 'unresolved']} | {n[cls, 'wrong']} | {share} | "
                  f"{low} |")
    print()
    for mode, tally, total, cookie0, in_kernel in results:
        extra = (f"; {cookie0} of the unresolved had cookie 0"
                 if mode == "ours" else "")
        print(f"{names[mode]}: {total} samples in all; of those checked, "
              f"{in_kernel} were taken in the kernel (their user address is "
              f"where the task returns to){extra}.")
        for verdict in ("unresolved", "wrong"):
            for e in tally.examples[verdict]:
                print(f"- {verdict}: `{e}`")
    for w in WARNINGS:
        print(f"- {w}")
    print()


if __name__ == "__main__":
    main()
