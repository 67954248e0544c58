#!/usr/bin/env python3
"""The perf.data fuzzer: mutations of real recordings around
PERF_RECORD_CALLCHAIN_DEFERRED (22) and PERF_RECORD_BUILD_ID_OFFSET (23),
read by perf report, perf script, perf inject (plain and
--buildid-offset-mmap2) and perf data convert.

  perf_data_fuzz.py OUTPUT_LOG PERF [--cases N] [--seed S] [--jobs J]
                    [--keep DIR]

The seeds come from the guest's output (harness/guest/perf-data-seeds.sh
prints each recording in base64 between "SEED-BEGIN NAME" and
"SEED-END").  Each case takes one seed, mutates its records 22 and 23
(their nr, size, cookie, tid, maps, flags, type; or the samples' cookies,
among them one naming another record, earlier or later), in
the file's byte order or in the other one (the whole file swapped), and
has one of the six readers read it.  A reader may refuse a file (exit
1, a warning); it must never crash, hang, or make AddressSanitizer or
UndefinedBehaviorSanitizer report (PERF built with them: `make
mainline-perf-asan`).  Failing inputs go to DIR for replay; the seed and
case number replay a run.
"""

import argparse
import base64
import concurrent.futures
import os
import random
import re
import shutil
import struct
import subprocess
import sys
import tempfile

HEADER = struct.Struct("<8sQQQQQQQQ")   # magic, size, attr_size, attrs, data
SAMPLE, CALLCHAIN_DEFERRED, BUILD_ID_OFFSET = 9, 22, 23
# PERF_BUILD_ID_OFFSET_F_*: MM_CHANGED, UNCHANGED (the previous record covers)
F_MM_CHANGED, F_UNCHANGED = 1 << 1, 1 << 3
FEAT_HOSTNAME = 3
READERS = ("report", "script", "inject", "inject-mmap2", "convert", "pprof")
SANITIZER = re.compile(r"ERROR: AddressSanitizer|runtime error:|"
                       r"ERROR: LeakSanitizer|UndefinedBehaviorSanitizer")


def seeds_from(log):
    """{name: bytes} of the seeds in the guest's output."""
    seeds, name, buf = {}, None, []
    with open(log, errors="replace") as f:
        for line in f:
            line = line.strip("\r\n")
            if line.startswith("SEED-BEGIN "):
                name, buf = line.split(" ", 1)[1], []
            elif line == "SEED-END" and name:
                seeds[name] = base64.b64decode("".join(buf))
                name = None
            elif name:
                buf.append(line.strip())
    return seeds


class Layout:
    """Where a native-endian perf.data keeps its data and records."""

    def __init__(self, data):
        (magic, _size, self.attr_size, self.attrs_off, self.attrs_size,
         self.data_off, self.data_size, _, _) = HEADER.unpack_from(data, 0)
        if magic != b"PERFILE2":
            raise ValueError("not a native-endian perf.data (PERFILE2)")
        self.records = []   # (offset, type, size)
        off, end = self.data_off, self.data_off + self.data_size
        while off + 8 <= end:
            typ, _misc, size = struct.unpack_from("<IHH", data, off)
            if size < 8:
                break
            self.records.append((off, typ, size))
            off += size

    def of(self, *types):
        return [r for r in self.records if r[1] in types]


# The fields of perf_event_attr that perf swaps when it reads a file of
# the other byte order (perf_event__attr_swap()): (offset, size); the
# bit-field word at 40 has the bits of each byte reversed instead
ATTR_SWAPPED = ((0, 4), (4, 4), (8, 8), (16, 8), (24, 8), (32, 8),
                (48, 4), (52, 4), (56, 8), (64, 8), (72, 8), (80, 8),
                (88, 4), (104, 4), (108, 2), (112, 4))


def swap_file(data, lay):
    """The recording in the other byte order, as far as the readers care:
    what perf's readers swap back (the header, each attr as
    perf_event__attr_swap() reads it, the ids, records 22 and samples in
    u64s, record 23 field by field) is swapped, the features but the
    hostname are left out, and other records are swapped in u64s (right
    for most; a wrong one is one more malformed input)."""
    out = bytearray(data)

    def sw(off, n):
        out[off:off + n] = out[off:off + n][::-1]

    def sw64(off, n):
        for i in range(off, off + n - n % 8, 8):
            sw(i, 8)

    out[0:8] = b"2ELIFREP"
    sw64(8, HEADER.size - 8)
    # Of the features only the hostname stays (without it perf takes the
    # file for one of before features and expects a build-ID table): its
    # bit, its entry in the table after the data, its string's length
    bits = int.from_bytes(data[HEADER.size:HEADER.size + 32], "little")
    table = lay.data_off + lay.data_size
    out[HEADER.size:HEADER.size + 32] = bytes(32)
    if bits & (1 << FEAT_HOSTNAME):
        nth = bin(bits & ((1 << FEAT_HOSTNAME) - 1)).count("1")
        hoff, hsize = struct.unpack_from("<QQ", data, table + 16 * nth)
        out[HEADER.size:HEADER.size + 8] = (1 << FEAT_HOSTNAME).to_bytes(8, "big")
        out[table:table + 16] = struct.pack(">QQ", hoff, hsize)
        sw(hoff, 4)
    for a in range(lay.attrs_off, lay.attrs_off + lay.attrs_size,
                   lay.attr_size):
        size = struct.unpack_from("<I", data, a + 4)[0]
        for at, n in ATTR_SWAPPED:
            if at + n <= size:
                sw(a + at, n)
        if size >= 48:
            for i in range(a + 40, a + 48):
                out[i] = int(f"{out[i]:08b}"[::-1], 2)
        ids_off, ids_size = struct.unpack_from(
            "<QQ", data, a + lay.attr_size - 16)
        sw64(a + lay.attr_size - 16, 16)
        sw64(ids_off, ids_size)
    for off, typ, size in lay.records:
        sw(off, 4)
        sw(off + 4, 2)
        sw(off + 6, 2)
        if typ == BUILD_ID_OFFSET and size >= 32:
            sw(off + 8, 4)                      # pid
            sw(off + 12, 4)                     # tid
            sw(off + 16, 8)                     # cookie
            sw(off + 24, 4)                     # nr
            sw(off + 28, 4)                     # flags
            nr = struct.unpack_from("<I", data, off + 24)[0]
            nr = min(nr, (size - 32) // 48)
            for i in range(nr):
                m = off + 32 + 48 * i
                sw64(m, 24)                     # start, end, pgoff
                sw(m + 26, 2)                   # reserved
            tail = off + 32 + 48 * nr
            sw64(tail, off + size - tail)       # sample_id
        else:
            sw64(off + 8, size - 8)
    return bytes(out)


def mutate(rng, data, lay):
    """One mutation of the records 22 and 23 (or a sample's cookie)."""
    out = bytearray(data)
    # Within what is left of the file (an earlier mutation may cut it)
    recs = [r for r in lay.of(CALLCHAIN_DEFERRED, BUILD_ID_OFFSET)
            if r[0] + r[2] <= len(data)]
    samples = [r for r in lay.of(SAMPLE) if r[0] + r[2] <= len(data)]
    if not recs:
        return bytes(out), "none left"
    off, typ, size = rng.choice(recs)
    kind = rng.choice(("nr", "size", "bytes", "cookie", "tid", "map", "flags",
                       "type", "truncate", "sample_cookie", "several"))
    if kind == "several":
        for _ in range(rng.randint(2, 5)):
            out = bytearray(mutate(rng, bytes(out), lay)[0])
        return bytes(out), kind
    if kind == "nr":
        val = rng.choice((0, 1, 2, 0xffff, 0xffffffff, rng.getrandbits(32),
                          (size - 32) // 48 + 1, (size - 24) // 8 + 1))
        if typ == BUILD_ID_OFFSET:
            struct.pack_into("<I", out, off + 24, val & 0xffffffff)
        else:
            struct.pack_into("<Q", out, off + 16,
                             rng.choice((val, rng.getrandbits(64))))
    elif kind == "size":
        val = rng.choice((8, 16, 24, 32, size - 8, size + 8, size - 4,
                          size + 4, size - 48, 0xfff8, rng.randrange(8, 512)))
        struct.pack_into("<H", out, off + 6, max(8, min(val, 0xffff)))
    elif kind == "bytes":
        for _ in range(rng.randint(1, 8)):
            i = off + rng.randrange(8, size)
            out[i] = rng.getrandbits(8)
    elif kind == "cookie":
        struct.pack_into("<Q", out, off + (8 if typ == CALLCHAIN_DEFERRED
                                           else 16),
                         rng.choice((0, 1, rng.getrandbits(64))))
    elif kind == "tid":
        if typ == BUILD_ID_OFFSET:
            struct.pack_into("<I", out, off + 12,
                             rng.choice((0, 1, 0xffffffff)))
    elif kind == "map" and typ == BUILD_ID_OFFSET and size >= 80:
        nr = min(struct.unpack_from("<I", data, off + 24)[0], (size - 32) // 48)
        if nr:
            m = off + 32 + 48 * rng.randrange(nr)
            field = rng.choice(("start", "end", "pgoff", "bidsz", "flags"))
            if field == "bidsz":
                out[m + 24] = rng.choice((0, 1, 20, 21, 255))
            elif field == "flags":
                out[m + 25] = rng.getrandbits(8)
            else:
                at = {"start": 0, "end": 8, "pgoff": 16}[field]
                struct.pack_into("<Q", out, m + at,
                                 rng.choice((0, 0xffffffffffffffff,
                                             rng.getrandbits(64))))
    elif kind == "flags" and typ == BUILD_ID_OFFSET:
        # UNCHANGED with maps or without (nr 0, the size kept), as a task's
        # first record, with the other flags, unknown bits
        struct.pack_into("<I", out, off + 28,
                         rng.choice((F_UNCHANGED, F_UNCHANGED | F_MM_CHANGED, 0xf,
                                     1 << 31, rng.getrandbits(32))))
        if rng.getrandbits(1):
            struct.pack_into("<I", out, off + 24, 0)
    elif kind == "type":
        struct.pack_into("<I", out, off,
                         CALLCHAIN_DEFERRED if typ == BUILD_ID_OFFSET
                         else BUILD_ID_OFFSET)
    elif kind == "truncate":
        out = out[:off + rng.randrange(1, size)]
    elif kind == "sample_cookie" and samples:
        s_off, _, s_size = rng.choice(samples)
        # the build-ID offset cookie is the sample's last u64; or another
        # record's cookie, of a record before the sample or after it
        cookies = [0, 1, rng.getrandbits(64)]
        bido = [r for r in recs if r[1] == BUILD_ID_OFFSET and r[2] >= 32]
        if bido:
            cookies.append(struct.unpack_from("<Q", data, rng.choice(bido)[0] + 16)[0])
        struct.pack_into("<Q", out, s_off + s_size - 8, rng.choice(cookies))
    return bytes(out), kind


def run_reader(perf, reader, path, work):
    env = dict(os.environ, HOME=work, PERF_PAGER="cat",
               ASAN_OPTIONS="detect_leaks=0:abort_on_error=0",
               UBSAN_OPTIONS="print_stacktrace=1")
    cmd = {
        "report": [perf, "report", "--stdio", "-i", path],
        "script": [perf, "script", "-i", path],
        "inject": [perf, "inject", "-i", path, "-o",
                   os.path.join(work, "inject.data")],
        "inject-mmap2": [perf, "inject", "--buildid-offset-mmap2", "-i", path,
                         "-o", os.path.join(work, "inject.data")],
        "convert": [perf, "data", "convert", "--to-json",
                    os.path.join(work, "out.json"), "--force", "-i", path],
        "pprof": [perf, "data", "convert", "--to-pprof",
                  os.path.join(work, "out.pb.gz"), "--force", "-i", path],
    }[reader]
    try:
        r = subprocess.run(cmd, env=env, capture_output=True, timeout=60,
                           stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        return "timeout", ""
    err = r.stderr.decode(errors="replace")
    if SANITIZER.search(err):
        return "sanitizer", err
    if r.returncode < 0:
        return f"signal {-r.returncode}", err
    return "ok" if r.returncode == 0 else "refused", ""


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("log")
    ap.add_argument("perf")
    ap.add_argument("--cases", type=int, default=2000)
    ap.add_argument("--seed", type=int, default=None)
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--keep", default=None)
    a = ap.parse_args()

    seeds = seeds_from(a.log)
    if not seeds:
        print(f"fuzz: no seeds in {a.log}")
        return 1
    seed = a.seed if a.seed is not None else random.SystemRandom().getrandbits(32)
    inputs = []
    for name in sorted(seeds):
        lay = Layout(seeds[name])
        inputs.append((name, seeds[name], lay))
        inputs.append((name + ":swapped", swap_file(seeds[name], lay), lay))
        print(f"fuzz: seed {name}: {len(seeds[name])} bytes, "
              f"{len(lay.of(SAMPLE))} samples, "
              f"{len(lay.of(CALLCHAIN_DEFERRED))} records 22, "
              f"{len(lay.of(BUILD_ID_OFFSET))} records 23")

    work = tempfile.mkdtemp(prefix="perf-data-fuzz.")
    tally, failures = {}, []

    # Unmutated, the other byte order must read as the file itself
    for name in sorted(seeds):
        outs = []
        for i, (n, data, _) in enumerate(inputs):
            if n.split(":")[0] != name:
                continue
            path = os.path.join(work, f"same-{i}.data")
            with open(path, "wb") as f:
                f.write(data)
            r = subprocess.run([a.perf, "script", "-F", "tid,time,ip,sym,dso",
                                "-i", path], env=dict(os.environ, HOME=work),
                               capture_output=True, check=False)
            outs.append(r.stdout)
        same = len(outs) == 2 and outs[0] == outs[1] and outs[0]
        print(f"fuzz: seed {name}: the other byte order reads "
              f"{'the same' if same else 'differently'} "
              f"({len(outs[0].splitlines())} lines of perf script)")
        if not same:
            failures.append((-1, name + ":swapped", "none", "script",
                             "differs from the native file", ""))

    # The unmutated seeds, both byte orders, read by every reader
    def one(i):
        rng = random.Random(seed * 1000003 + i)
        name, data, lay = inputs[i % len(inputs)]
        swapped = name.endswith(":swapped")
        if i < len(inputs) * len(READERS):
            case, kind = data, "none"
            reader = READERS[i // len(inputs)]
        else:
            native = seeds[name.split(":")[0]]
            case, kind = mutate(rng, native, lay)
            if swapped:
                # swap what the mutation left; a mutation that broke the
                # record chain leaves the rest native, also a fine input
                try:
                    case = swap_file(case, Layout(case))
                except (ValueError, struct.error, IndexError):
                    pass
            reader = READERS[i % len(READERS)]
        d = os.path.join(work, str(i))
        os.makedirs(d, exist_ok=True)
        path = os.path.join(d, "perf.data")
        with open(path, "wb") as f:
            f.write(case)
        verdict, err = run_reader(a.perf, reader, path, d)
        bad = verdict not in ("ok", "refused")
        if bad and a.keep:
            os.makedirs(a.keep, exist_ok=True)
            shutil.copy(path, os.path.join(a.keep, f"case-{i}-{reader}.data"))
        shutil.rmtree(d, ignore_errors=True)
        return i, name, kind, reader, verdict, err

    with concurrent.futures.ThreadPoolExecutor(a.jobs) as ex:
        for i, name, kind, reader, verdict, err in ex.map(one, range(a.cases)):
            tally[(reader, verdict)] = tally.get((reader, verdict), 0) + 1
            if verdict not in ("ok", "refused"):
                failures.append((i, name, kind, reader, verdict, err))
    shutil.rmtree(work, ignore_errors=True)

    for reader in READERS:
        parts = [f"{v} {n}" for (r, v), n in sorted(tally.items()) if r == reader]
        print(f"fuzz: {reader}: {', '.join(parts)}")
    for i, name, kind, reader, verdict, err in failures[:10]:
        print(f"fuzz: case {i} ({name}, mutation {kind}) perf {reader}: {verdict}")
        for line in err.strip().splitlines()[-15:]:
            print(f"    {line}")
    print(f"fuzz: {a.cases} cases (seed {seed}), {len(failures)} crashes, "
          "hangs or sanitizer reports")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
