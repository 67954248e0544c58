#!/usr/bin/env python3
"""perf inject --buildid-offset-mmap2 against the samples it must leave
unresolved: recordings of a task older than perf (--synth=no), altered so
that samples lose their record (its maps dropped, its cookie changed, an
exec flagged, the sample's cookie 0), are read by this perf, converted,
and read by perf 7.3 without the series.  Every sample must show the same
time, address, symbol and file both ways; an address shown [unknown] here
may come out as 0 there (cleared: a reader would have mapped it through
another record's map).

  inject-equivalence.py PERF PERF_BASE
"""

import os
import re
import struct
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from perf_data_fuzz import Layout, SAMPLE, BUILD_ID_OFFSET  # noqa: E402

MM_CHANGED = 1 << 1
UNKNOWN = re.compile(rb"^\s*[0-9a-f]+ (\[unknown\] \(\[unknown\]\))$", re.M)
# The cookie of a deferred callchain that never came is not an address:
# perf names it so while the attribute asks for deferred callchains, which
# the converted file's does not (its samples have their user entries)
COOKIE = re.compile(rb"^\s*[0-9a-f]+ \(cookie\) \(\[unknown\]\)$", re.M)


def every_third(recs):
    return recs[::3]


def no_maps(data, lay):
    for off, _, _ in every_third(lay.of(BUILD_ID_OFFSET)):
        struct.pack_into("<I", data, off + 24, 0)


def lost(data, lay):
    for off, _, _ in every_third(lay.of(BUILD_ID_OFFSET)):
        cookie = struct.unpack_from("<Q", data, off + 16)[0]
        struct.pack_into("<Q", data, off + 16, cookie ^ (1 << 62))


def exec_flag(data, lay):
    for off, _, _ in every_third(lay.of(BUILD_ID_OFFSET)):
        flags = struct.unpack_from("<I", data, off + 28)[0]
        struct.pack_into("<I", data, off + 28, flags | MM_CHANGED)


def cookie_zero(data, lay):
    # The first sample, whose entry's maps no earlier record gave, and
    # every third; the cookie is a sample's last u64
    samples = lay.of(SAMPLE)
    for off, _, size in samples[:1] + every_third(samples):
        struct.pack_into("<Q", data, off + size - 8, 0)


DUMP = re.compile(rb"^(\d+) (0x[0-9a-f]+) \[(0x[0-9a-f]+)\]: PERF_RECORD_(SAMPLE|BUILD_ID_OFFSET)"
                  rb"(?:\([^)]*\):)? (\d+)/(\d+):", re.M)


def thread_ahead(data, lay, dump):
    """The second sample as of a new thread of the process, without a
    cookie, and the first sample's record after it: this perf delivers it
    before any map is in, while the converted file has the first record's
    maps from the first sample on, so its addresses must be cleared."""
    recs = [(int(t), int(o, 16), int(z, 16), k, int(p), int(i))
            for t, o, z, k, p, i in DUMP.findall(dump)]
    s0 = next(r for r in recs if r[3] == b"SAMPLE")
    r0 = next(r for r in recs if r[3] == b"BUILD_ID_OFFSET" and r[1] > s0[1])
    s1 = next(r for r in recs if r[3] == b"SAMPLE" and r[1] > r0[1])
    _, off, size, _, pid, tid = s1
    ids = struct.pack("<II", pid, tid)
    at = data.find(ids, off, off + size)
    struct.pack_into("<II", data, at, pid, tid + 100000)
    struct.pack_into("<Q", data, off + size - 8, 0)
    t0 = struct.pack("<Q", r0[0])
    at = data.find(t0, r0[1], r0[1] + r0[2])
    struct.pack_into("<Q", data, at, s1[0] + 1)


MUTATIONS = {
    "as recorded": [],
    "maps dropped": [no_maps],
    "records lost": [lost],
    "exec flagged": [exec_flag],
    "cookies 0": [cookie_zero],
    "all of them": [no_maps, lost, exec_flag, cookie_zero],
    "thread ahead": [thread_ahead],
}


def script(perf, path, env):
    """perf script's samples, in time order: this perf delivers a sample
    that waits for its record after later ones that do not wait"""
    r = subprocess.run([perf, "script", "-F", "tid,time,ip,sym,dso", "-i", path],
                       env=env, capture_output=True, check=False, timeout=300)
    out = COOKIE.sub(rb"\t? [unknown] ([unknown])", r.stdout)
    blocks = UNKNOWN.sub(rb"\t? \1", out).split(b"\n\n")
    blocks.sort(key=lambda b: (b.split(b":", 1)[0].split()[-1:], b))
    if r.returncode < 0:
        bt = subprocess.run(["gdb", "-batch", "-ex", "run", "-ex", "bt", "--args",
                             perf, "script", "-F", "tid,time,ip,sym,dso", "-i", path],
                            env=env, capture_output=True, text=True, check=False)
        print("\n".join(bt.stdout.splitlines()[-20:]))
    return r.returncode, b"\n\n".join(blocks)


def main():
    perf, base = sys.argv[1:3]
    tmp = tempfile.mkdtemp(prefix="inject-eq.")
    env = dict(os.environ, HOME=tmp, PERF_PAGER="cat")
    work = subprocess.Popen([perf, "test", "-w", "noploop", "600"])
    failed = 0
    try:
        # Its code's files, once the dynamic loader mapped them all
        for _ in range(100):
            with open(f"/proc/{work.pid}/maps") as f:
                files = {ln.split()[5] for ln in f
                         if len(ln.split()) > 5 and "x" in ln.split()[1]
                         and ln.split()[5].startswith("/")}
            if any("/libc" in path for path in files):
                break
            time.sleep(0.05)
        for path in sorted(files):
            subprocess.run([perf, "buildid-cache", "--add", path], env=env,
                           capture_output=True, check=False)
        for mode in ("fp", "fp,defer"):
            rec = os.path.join(tmp, "perf.data")
            r = subprocess.run([perf, "record", "-q", "-o", rec, "--synth=no",
                                "--buildid-offset", "-e", "cpu-clock:u", "-c",
                                "1000000", "--call-graph", mode, "-p",
                                str(work.pid), "--", "sleep", "1"],
                               env=env, capture_output=True, check=False)
            if r.returncode:
                print(r.stderr.decode(errors="replace"))
                print(f"FAIL: perf record --call-graph {mode}")
                return 1
            with open(rec, "rb") as f:
                native = f.read()
            lay = Layout(native)
            dump = subprocess.run([perf, "report", "-D", "-i", rec], env=env,
                                  capture_output=True, check=False).stdout
            for name, steps in MUTATIONS.items():
                data = bytearray(native)
                for step in steps:
                    if step is thread_ahead:
                        step(data, lay, dump)
                    else:
                        step(data, lay)
                path = os.path.join(tmp, "case.data")
                out = os.path.join(tmp, "case.conv")
                with open(path, "wb") as f:
                    f.write(data)
                _, ours = script(perf, path, env)
                r = subprocess.run([perf, "inject", "--buildid-offset-mmap2", "-i",
                                    path, "-o", out], env=env,
                                   capture_output=True, check=False)
                cleared = re.search(rb"(\d+) user addresses", r.stderr)
                cleared = int(cleared.group(1)) if cleared else 0
                verdict = "ok"
                if r.returncode:
                    verdict = "perf inject failed: " + r.stderr.decode(errors="replace")
                for reader in (perf, base):
                    if verdict != "ok":
                        break
                    rc, theirs = script(reader, out, env)
                    if rc or theirs != ours:
                        a, b = ours.splitlines(), theirs.splitlines()
                        diff = next((i for i in range(min(len(a), len(b)))
                                     if a[i] != b[i]), min(len(a), len(b)))
                        verdict = (f"{reader} (exit {rc}) differs at line "
                                   f"{diff + 1} of {len(a)}: "
                                   f"{a[diff] if diff < len(a) else b''!r} / "
                                   f"{b[diff] if diff < len(b) else b''!r}")
                unknown = ours.count(b"\t? [unknown] ([unknown])")
                lines = len(ours.splitlines())
                ok = verdict == "ok" and lines > 0
                failed += not ok
                print(f"{'ok  ' if ok else 'FAIL'} {mode:8} {name:13} {lines} lines, "
                      f"{unknown} unknown, {cleared} cleared"
                      f"{'' if ok else ': ' + verdict}")
    finally:
        work.kill()
        work.wait()
        subprocess.run(["rm", "-rf", tmp], check=False)
    print(f"{'FAIL' if failed else 'PASS'}: {failed} cases read differently")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
