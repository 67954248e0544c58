# SPDX-License-Identifier: GPL-2.0
"""Checks a profile of perf data convert --to-pprof against ground truth.

usage: pprof_check.py PROFILE MAPS PID BUILD_ID FUNCTION COUNT

PROFILE is the gzipped profile.proto message, read here with a decoder of
its own (no perf code, no pprof).  MAPS is the task PID's /proc/PID/maps,
its file BUILD_ID's mappings among them.  Every location of PID's samples
in a mapping with BUILD_ID must be at the file offset MAPS gives for its
address, the leaf of every one of PID's samples must be FUNCTION, and
their counts must add up to COUNT (perf script's samples of PID).
"""

import gzip
import sys


def fields(buf):
    """(field number, value) of a protobuf message: ints and bytes"""
    pos = 0

    def varint():
        nonlocal pos
        val = shift = 0
        while True:
            byte = buf[pos]
            pos += 1
            val |= (byte & 0x7f) << shift
            shift += 7
            if not byte & 0x80:
                return val

    while pos < len(buf):
        key = varint()
        kind = key & 7
        if kind == 0:
            yield key >> 3, varint()
        elif kind == 2:
            size = varint()
            yield key >> 3, buf[pos:pos + size]
            pos += size
        elif kind == 1:
            yield key >> 3, int.from_bytes(buf[pos:pos + 8], "little")
            pos += 8
        else:
            raise ValueError(f"wire type {kind}")


def unpack(buf):
    """The varints of a packed field"""
    val = shift = 0
    for byte in buf:
        val |= (byte & 0x7f) << shift
        shift += 7
        if not byte & 0x80:
            yield val
            val = shift = 0


def main():
    profile_path, maps_path, pid, build_id, function, count = sys.argv[1:7]
    pid, count = int(pid), int(count)
    with gzip.open(profile_path, "rb") as f:
        profile = f.read()

    strings, samples, mappings, locations, functions = [], [], {}, {}, {}
    for num, val in fields(profile):
        if num == 6:
            strings.append(val.decode())
        elif num == 2:
            samples.append(val)
        elif num == 3:
            m = dict(fields(val))
            mappings[m[1]] = m
        elif num == 4:
            loc = {"lines": []}
            for n, v in fields(val):
                if n == 4:
                    loc["lines"].append(dict(fields(v)))
                else:
                    loc[n] = v
            locations[loc[1]] = loc
        elif num == 5:
            fn = dict(fields(val))
            functions[fn[1]] = fn

    truth = []
    with open(maps_path) as f:
        for line in f:
            cols = line.split()
            if len(cols) >= 6:
                start, end = (int(x, 16) for x in cols[0].split("-"))
                truth.append((start, end, int(cols[2], 16), cols[5]))

    def leaf_name(loc):
        if not loc["lines"]:
            return None
        fn = functions.get(loc["lines"][0].get(1))
        return strings[fn.get(2, 0)] if fn else None

    right = wrong = leaves = other_leaves = total = 0
    for sample in samples:
        ids, labels, values = [], {}, []
        for num, val in fields(sample):
            if num == 1:
                ids += list(unpack(val)) if isinstance(val, bytes) else [val]
            elif num == 2:
                values += list(unpack(val)) if isinstance(val, bytes) else [val]
            elif num == 3:
                label = dict(fields(val))
                labels[strings[label[1]]] = label.get(3, label.get(2))
        if labels.get("pid") != pid or not ids:
            continue
        leaves += 1
        total += values[0]
        if leaf_name(locations[ids[0]]) != function:
            other_leaves += 1
            print(f"leaf {leaf_name(locations[ids[0]])} at {locations[ids[0]].get(3, 0):#x}")
        for loc_id in ids:
            loc = locations[loc_id]
            m = mappings.get(loc.get(2))
            if not m or strings[m.get(6, 0)] != build_id:
                continue
            addr = loc.get(3, 0)
            offset = addr - m.get(2, 0) + m.get(4, 0)
            t = next((t for t in truth if t[0] <= addr < t[1]), None)
            if t and offset == addr - t[0] + t[2]:
                right += 1
            else:
                wrong += 1
                print(f"wrong: {addr:#x} at {offset:#x} of {strings[m.get(5, 0)]}: maps {t}")

    print(f"{total} samples of {pid} (perf script: {count}) in {leaves} stacks, "
          f"{other_leaves} with another leaf than {function}; "
          f"{right} locations in its file at the right offset, {wrong} wrong")
    sys.exit(0 if total == count and count and not other_leaves and right and not wrong
             else 1)


if __name__ == "__main__":
    main()
