#!/bin/bash
# perf.data with build-ID offset records, both byte orders
# SPDX-License-Identifier: GPL-2.0

# Reading side of PERF_SAMPLE_BUILD_ID_OFFSET, on any kernel: a made-up
# pipe-mode perf.data with a sample cookie and a PERF_RECORD_BUILD_ID_OFFSET,
# written little and big endian, must read the same (swap), show in
# 'perf report -D' and 'perf script', pass 'perf inject' unchanged, and
# become MMAP2 records with 'perf inject --buildid-offset-mmap2'.

set -e

err=0
fail=0
# the build-ID of the made-up maps, and the head of their dumped records
bid=0102030405060708090a0b0c0d0e0f1011121314
bido="PERF_RECORD_BUILD_ID_OFFSET 4242/4242"
data=$(mktemp /tmp/__perf_test.bido.XXXXX)
injected=$(mktemp /tmp/__perf_test.bido.XXXXX)
dump=$(mktemp /tmp/__perf_test.bido.XXXXX)
# what make_data wrote, by its arguments and environment
made=$(mktemp -d /tmp/__perf_test.bido.XXXXX)

cleanup() {
  # perf inject keeps an output file that exists as <name>.old
  rm -f "${data}" "${injected}" "${injected}.old" "${dump}"
  rm -rf "${made}"
  trap - EXIT TERM INT
}

trap_cleanup() {
  cleanup
  exit 1
}
trap trap_cleanup EXIT TERM INT

if ! command -v python3 > /dev/null
then
  echo "Build-ID offset data [Skipped no python3]"
  cleanup
  exit 2
fi

# One software event sampling IP, TID, TIME and the cookie, sample_id_all;
# four samples and one record with two maps.  $1: le or be; $2: extra to
# add to the record's nr (a record that claims more maps than it holds);
# $3: "mm" adds a sample whose record says MM_CHANGED, "bad" malformed
# records (one too short for its fixed part, one with a build-ID size of
# 200 and a map that ends before it starts), "cut" a sample cut short,
# "br" branch stacks on every sample, "many" 2000 more samples, each with
# a record of a build-ID of its own, "late" the header build-ID of
# BIDO_NAME only after an MMAP2 of it and a record of another build-ID,
# "order" another task's samples, records and COMM between a sample and
# its record, and kernel samples, "entry" BIDO_N samples of one kernel
# entry, then its record, "same" records flagged SAME_MAPS: a chain of
# two naming the first record, then a chain naming a cookie never seen,
# "samebad" malformed SAME_MAPS records (one with a map, one too short
# for its same_as).  BIDO_BID and BIDO_NAME
# (environment): the first map's build-ID (hex), and a
# PERF_RECORD_HEADER_BUILD_ID ahead that names it BIDO_NAME; BIDO_BR: two
# file offsets in the first map, the branches' sources and targets.
# The same arguments and environment give the same bytes: each file is
# written once (python starts slowly in an emulated guest).
make_data() {
  local key

  key=$(printf '%s_' "$@" "${BIDO_N:-}" "${BIDO_BID:-}" "${BIDO_NAME:-}" \
    "${BIDO_BR:-}" | tr -c 'A-Za-z0-9_.-' '_')
  if [ ! -f "${made}/${key}" ]
  then
    write_data "$@" > "${made}/${key}.new"
    mv "${made}/${key}.new" "${made}/${key}"
  fi
  cat "${made}/${key}"
}

write_data() {
  python3 -S - "$1" "$2" "${3:-}" <<'EOF'
import os, struct, sys

big = sys.argv[1] == "be"
extra_nr = int(sys.argv[2])
mm = sys.argv[3] == "mm"
bad = sys.argv[3] == "bad"
cut = sys.argv[3] == "cut"
br = sys.argv[3] == "br"
many = sys.argv[3] == "many"
late = sys.argv[3] == "late"
order = sys.argv[3] == "order"
same = sys.argv[3] == "same"
samebad = sys.argv[3] == "samebad"
entry = int(os.environ.get("BIDO_N", "0")) if sys.argv[3] == "entry" else 0
E = ">" if big else "<"
bid1 = bytes.fromhex(os.environ.get("BIDO_BID", "")) or bytes(range(1, 21))
name = os.environ.get("BIDO_NAME", "").encode()

def rec(type_, misc, body):
    return struct.pack(E + "IHH", type_, misc, 8 + len(body)) + body

# attr flags are a bitfield: a big-endian writer has bit 0 at the top of
# byte 0; perf reverses the bits of each byte.
# sample_id_all, defer_output, and mmap as on perf record's tracking event
flags = ((1 << 8) | (1 << 18) | (1 << 39)).to_bytes(8, "little")
if big:
    flags = bytes(int(f"{b:08b}"[::-1], 2) for b in flags)
sample_type = 1 | 2 | 4 | (1 << 25)  # IP, TID, TIME, BUILD_ID_OFFSET
if br:
    sample_type |= 1 << 11           # BRANCH_STACK
attr = struct.pack(E + "IIQQQQ", 1, 136, 0, 1, sample_type, 0) + flags
attr += b"\0" * (72 - len(attr))
# branch_sample_type: user, any branch (no hw_idx in the sample)
attr += struct.pack(E + "Q", (1 << 0) | (1 << 3))
attr += b"\0" * (136 - len(attr))

pid = tid = 4242
# Each sample's branch stack: from the first offset to the second, and
# back 4 bytes further on
br_off = [int(x, 0) for x in os.environ.get("BIDO_BR", "0x1000 0x1100").split()]
branches = [(0x400000 + br_off[0], 0x400000 + br_off[1]),
            (0x400000 + br_off[1] + 4, 0x400000 + br_off[0] + 4)]
def sample(ip, time, cookie):
    body = struct.pack(E + "QIIQ", ip, pid, tid, time)
    if br:
        body += struct.pack(E + "Q", len(branches))
        for from_, to in branches:
            body += struct.pack(E + "QQQ", from_, to, 0)
    return rec(9, 2, body + struct.pack(E + "Q", cookie))

def bid_size(bid):
    return 200 if bid == b"long" else len(bid)

def bido(time, cookie, flags, maps):
    body = struct.pack(E + "IIQII", pid, tid, cookie, len(maps) + extra_nr, flags)
    for start, end, pgoff, bid, mflags in maps:
        body += struct.pack(E + "QQQBBH", start, end, pgoff, bid_size(bid), mflags, 0)
        body += bid[:20] + b"\0" * (20 - len(bid[:20]))
    return rec(23, 2, body + struct.pack(E + "IIQ", pid, tid, time))

# A record flagged SAME_MAPS (1 << 4): no maps, then same_as (None: none
# at all, a record too short for it); nr and maps make a malformed one
def bido_same(time, cookie, same_as, nr=0, maps=b""):
    body = struct.pack(E + "IIQII", pid, tid, cookie, nr, 1 << 4) + maps
    if same_as is not None:
        body += struct.pack(E + "Q", same_as)
    return rec(23, 2, body + struct.pack(E + "IIQ", pid, tid, time))

def sample_id(pid_, time):
    return struct.pack(E + "IIQ", pid_, pid_, time)

out = (b"PERFILE2"[::-1] if big else b"PERFILE2") + struct.pack(E + "Q", 16)
out += rec(64, 0, attr)
if late:
    # Another process maps the file first (a DSO without build-ID yet), and
    # a record of another build-ID makes perf look at the DSOs then
    fn = name + b"\0" * (8 - len(name) % 8)
    out += rec(10, 2, struct.pack(E + "IIQQQIIQQII", 100, 100, 0x500000, 0x2000, 0,
                                  8, 1, 1234, 0, 5, 2) + fn + sample_id(100, 100))
    out += rec(9, 2, struct.pack(E + "QIIQQ", 0x601000, 4343, 4343, 101, 0x77))
    body = struct.pack(E + "IIQII", 4343, 4343, 0x77, 1, 0)
    body += struct.pack(E + "QQQBBH", 0x600000, 0x602000, 0, 20, 0, 0) + bytes(range(101, 121))
    out += rec(23, 2, body + sample_id(4343, 102))
    # Two rounds, so that the first is delivered before the header event
    # (which is processed as it is read)
    out += rec(68, 0, b"")
    out += rec(9, 2, struct.pack(E + "QIIQQ", 0x1000, 4344, 4344, 150, 0))
    out += rec(68, 0, b"")
if name:
    fn = name + b"\0" * (8 - len(name) % 8)
    # pid -1 (the host), build_id[20], its size, then the file name
    out += rec(67, 2 | (1 << 15), struct.pack(E + "i", -1) + bid1 +
               b"\0" * (20 - len(bid1)) + bytes([len(bid1)]) + b"\0" * 3 + fn)
out += sample(0x401234, 1000, 0x1111)
out += sample(0x7f0000001000, 1001, 0x1111)
out += bido(1002, 0x1111, 1, [(0x400000, 0x402000, 0, bid1, 0),
                             (0x7f0000000000, 0x7f0000004000, 0x2000, b"", 1 | 4)])
out += sample(0x401300, 2000, 0)
out += sample(0x401400, 3000, 0x2222)   # its record never comes
if mm:
    # An exec came between this sample and its record
    out += sample(0x401500, 4000, 0x3333)
    out += bido(4001, 0x3333, 2, [])
if bad:
    # Only the header and the sample_id
    out += rec(23, 2, struct.pack(E + "IIQ", pid, tid, 5000))
    out += sample(0x401600, 5001, 0x4444)
    out += sample(0x600100, 5001, 0x4444)
    out += bido(5002, 0x4444, 0, [(0x400000, 0x402000, 0, b"long", 0),
                                  (0x500000, 0x400000, 0, bid1, 0),
                                  (0x600000, 0x602000, 0, bid1, 0)])
if order:
    # Task 4242 samples at 6000 in an entry whose record comes at 6010;
    # meanwhile task 4343 is sampled, gets its records, is renamed and is
    # sampled without a cookie; kernel samples (misc 1) of both
    def sample_of(tid_, ip, time, cookie, misc=2):
        body = struct.pack(E + "QIIQ", ip, tid_, tid_, time) + struct.pack(E + "Q", cookie)
        return rec(9, misc, body)
    def bido_of(tid_, time, cookie, start, bid):
        body = struct.pack(E + "IIQII", tid_, tid_, cookie, 1, 0)
        body += struct.pack(E + "QQQBBH", start, start + 0x2000, 0, 20, 0, 0) + bid
        return rec(23, 2, body + struct.pack(E + "IIQ", tid_, tid_, time))
    bid2 = bytes(range(41, 61))
    out += sample_of(4242, 0x401800, 6000, 0x5555)
    out += sample_of(4343, 0x601100, 6001, 0x6666)
    out += sample_of(4242, 0xffffffff81001000, 6002, 0x5555, 1)
    out += bido_of(4343, 6003, 0x6666, 0x600000, bid2)
    out += sample_of(4343, 0x601200, 6004, 0x6666)
    comm = b"bido_order\0\0\0\0\0\0"
    out += rec(3, 0, struct.pack(E + "II", 4343, 4343) + comm + sample_id(4343, 6005))
    out += sample_of(4343, 0x601300, 6006, 0)
    out += sample_of(4343, 0x601400, 6007, 0x7777)
    out += sample_of(4343, 0xffffffff81002000, 6008, 0x7777, 1)
    out += bido_of(4343, 6009, 0x7777, 0x600000, bid2)
    out += bido_of(4242, 6010, 0x5555, 0x400000, bid1)
    out += sample_of(4242, 0x401900, 6011, 0x5555)
    # A kernel sample whose record never comes: nothing to wait for
    out += sample_of(4343, 0xffffffff81003000, 6012, 0x8888, 1)
if same:
    # The first record's maps, named by a chain of two: samples before
    # each record and one after
    out += sample(0x401a00, 7000, 0x5151)
    out += bido_same(7001, 0x5151, 0x1111)
    out += sample(0x401b00, 7002, 0x5151)
    out += sample(0x401c00, 7003, 0x5252)
    out += bido_same(7004, 0x5252, 0x5151)
    # A chain naming a record the reader never saw: nothing resolves
    out += sample(0x401d00, 7005, 0x5353)
    out += bido_same(7006, 0x5353, 0xdead)
    out += sample(0x401e00, 7007, 0x5353)
    out += sample(0x401f00, 7008, 0x5454)
    out += bido_same(7009, 0x5454, 0x5353)
if samebad:
    # SAME_MAPS with a map, and too short for its same_as: malformed, and
    # their samples resolve nothing (not by that map, not by the first
    # record's maps)
    m = struct.pack(E + "QQQBBH", 0x400000, 0x402000, 0, 20, 0, 0) + bid1
    out += sample(0x401a00, 7000, 0x6161)
    out += bido_same(7001, 0x6161, 0x1111, 1, m)
    out += sample(0x401b00, 7002, 0x6262)
    out += bido_same(7003, 0x6262, None)
if entry:
    out += b"".join(sample(0x401000 + i % 0x1000, 20000 + i, 0x9999) for i in range(entry))
    out += bido(20000 + entry, 0x9999, 0, [(0x400000, 0x402000, 0, bid1, 0)])
if cut:
    out += rec(9, 2, struct.pack(E + "Q", 0x401700))
for i in range(2000 if many else 0):
    bid = struct.pack(">IQQ", 0xb1d0, i, i * 7)
    out += sample(0x10001000 + i * 0x10000, 10000 + 2 * i, 0x100000 + i)
    out += bido(10001 + 2 * i, 0x100000 + i, 0,
                [(0x10000000 + i * 0x10000, 0x10002000 + i * 0x10000, 0, bid, 0)])
sys.stdout.buffer.write(out)
EOF
}

expect() {
  local what=$1 pattern=$2

  if ! grep -qF -- "${pattern}" "${dump}"
  then
    echo "${what} [Failed no '${pattern}']"
    fail=1
  fi
}

expect_line() {
  local what=$1 line=$2

  if ! grep -qxF -- "${line}" "${dump}"
  then
    echo "${what} [Failed no line '${line}']"
    fail=1
  fi
}

test_dump() {
  local order=$1

  echo "perf report -D, ${order}"
  make_data "${order}" 0 > "${data}"
  perf report -D -i - < "${data}" > "${dump}" 2> /dev/null
  expect "Dump ${order}" \
    "1002 0xe0 [0x90]: PERF_RECORD_BUILD_ID_OFFSET 4242/4242: cookie 0x1111 nr 2 flags TRUNCATED"
  expect "Dump ${order}" \
    " ... map 0: [0x400000-0x402000) pgoff 0 build_id ${bid} flags -"
  expect "Dump ${order}" \
    " ... map 1: [0x7f0000000000-0x7f0000004000) pgoff 0x2000 build_id - flags anon|no_build_id"
  expect "Dump ${order}" " .. build-ID offset cookie: 0x1111"
  expect_line "Dump ${order}" " .. build-ID offset cookie: 0"
  expect "Dump ${order}" "BUILD_ID_OFFSET events:          1"
}

test_bad_nr() {
  local order=$1

  echo "A record claiming more maps than it holds, ${order}"
  make_data "${order}" 1000 > "${data}"
  perf report -D -i - < "${data}" > "${dump}" 2> /dev/null
  expect "Bad nr ${order}" \
    "1002 0xe0 [0x90]: ${bido}: cookie 0x1111 nr 1002 flags TRUNCATED (only 2 maps fit in"
  expect "Bad nr ${order}" " ... map 1: [0x7f0000000000-0x7f0000004000)"
}

test_script() {
  echo "perf script"
  make_data be 0 > "${data}"
  perf script -i - -F tid,ip,buildid_off < "${data}" > "${dump}" 2> /dev/null
  # The IP's build-ID and offset (the sample is joined), then the cookie
  expect "Script" \
    "401234 buildid_off:0102030405060708090a0b0c0d0e0f1011121314+0x1234 buildid_off:0x1111"
  # A sample without a cookie: no record was promised for it, so none of
  # its user addresses resolves (the thread's maps are other records')
  expect "Script" "401300 buildid_off:0"
  if grep -q "+0x1300" "${dump}"
  then
    echo "Script [Failed a sample without a cookie resolved]"
    fail=1
  fi
  perf script -i - --show-build-id-offset-events < "${data}" > "${dump}" 2> /dev/null
  expect "Script records" \
    "PERF_RECORD_BUILD_ID_OFFSET 4242/4242: cookie 0x1111 nr 2 flags TRUNCATED"
}

test_inject() {
  echo "perf inject"
  make_data be 0 > "${data}"
  perf inject -i - -o "${injected}" < "${data}" 2> /dev/null
  perf report -D -i "${injected}" > "${dump}" 2> /dev/null
  expect "Inject" "PERF_RECORD_BUILD_ID_OFFSET 4242/4242: cookie 0x1111 nr 2 flags TRUNCATED"
  expect "Inject" \
    " ... map 0: [0x400000-0x402000) pgoff 0 build_id ${bid} flags -"
}

# perf inject -b and --buildid-all take the records' maps as they take
# MMAP records': the DSO of the build-ID the joined sample hits, or every
# DSO of the records, gets a PERF_RECORD_BUILD_ID.
test_inject_build_ids() {
  local opt

  echo "perf inject -b and --buildid-all"
  make_data le 0 > "${data}"
  for opt in -b --buildid-all
  do
    perf inject "${opt}" -i - -o "${injected}" < "${data}" 2> /dev/null
    perf report -D -i "${injected}" > "${dump}" 2> /dev/null
    expect "Inject ${opt}" "BUILD_ID events:          1"
    expect "Inject ${opt}" "[build-id:0102030405060708090a0b0c0d0e0f1011121314]"
  done
}

# perf inject --buildid-offset-mmap2: the mapping the first sample hits
# becomes an MMAP2 with its build-ID, at that sample's time and before
# it; no record, cookie or sample bit is left; the sample resolves as
# before, also for a perf without the series (PERF_BASE, where set).
test_inject_mmap2() {
  local order=$1 reader

  echo "perf inject --buildid-offset-mmap2, ${order}"
  make_data "${order}" 0 > "${data}"
  if ! perf inject --buildid-offset-mmap2 -i - -o "${injected}" < "${data}" 2> "${dump}"
  then
    echo "Inject mmap2 ${order} [Failed perf inject: $(head -n 1 "${dump}")]"
    fail=1
    return
  fi
  perf report -D -i "${injected}" > "${dump}" 2> /dev/null
  local mmap2="1000 0x68 [0x90]: PERF_RECORD_MMAP2 4242/4242: [0x400000(0x2000) @ 0 <${bid}>]:"
  expect_line "Inject mmap2 ${order}" "${mmap2} ---p [build-id:${bid}]"
  expect "Inject mmap2 ${order}" \
    "1000 0xf8 [0x20]: PERF_RECORD_SAMPLE(IP, 0x2): 4242/4242: 0x401234 period: 1 addr: 0"
  if grep -q "BUILD_ID_OFFSET\|build-ID offset cookie" "${dump}"
  then
    echo "Inject mmap2 ${order} [Failed build-ID offset record or cookie left]"
    fail=1
  fi
  for reader in perf ${PERF_BASE}
  do
    "${reader}" script -i "${injected}" -F tid,ip,dso > "${dump}" 2> /dev/null
    expect "Inject mmap2 ${order}, ${reader} script" \
      "401234 ([build-id:0102030405060708090a0b0c0d0e0f1011121314])"
  done
}

# The first sample comes before its record: it must be held until the
# record's maps are in, then resolve to the build-ID and file offset; the
# last one's record never comes: counted.
test_join() {
  echo "Samples joined with their record"
  make_data le 0 > "${data}"
  perf script -i - -F tid,ip,dso,buildid_off < "${data}" > "${dump}" 2> /dev/null
  expect "Join" \
    "401234 ([build-id:${bid}]) buildid_off:${bid}+0x1234 buildid_off:0x1111"
  perf report -i - --stdio < "${data}" > /dev/null 2> "${dump}"
  expect "Join" "1 of 4 samples with a build-ID offset cookie came without"
}

# A sample whose record never came, one without a cookie, and one whose
# record says that the task exec()ed in between, resolve nothing in user
# space: the thread's maps (here the first record's, which covers their
# IPs) are not what they saw.
test_unresolved() {
  echo "Samples without their record, or after an exec, unresolved"
  make_data le 0 mm > "${data}"
  perf script -i - -F tid,ip,dso < "${data}" > "${dump}" 2> /dev/null
  expect "Unresolved" "401234 ([build-id:0102030405060708090a0b0c0d0e0f1011121314])"
  expect "Unresolved" "401300 ([unknown])"
  expect "Unresolved" "401400 ([unknown])"
  expect "Unresolved" "401500 ([unknown])"
  perf report -i - --stdio < "${data}" > /dev/null 2> "${dump}"
  expect "Unresolved" "1 of 5 samples with a build-ID offset cookie came without"
  expect "Unresolved" "1 samples with a build-ID offset cookie were taken before an exec"
}

# The commands a scenario needs; says which is missing
have() {
  local cmd

  for cmd in "$@"
  do
    if ! command -v "${cmd}" > /dev/null
    then
      echo "no ${cmd}: not run"
      return 1
    fi
  done
}

# A DSO whose file is a debug-only one (objcopy --only-keep-debug: its
# .plt holds no bytes): perf report read that .plt and died with SIGSEGV.
test_debug_only_dso() {
  local dir bid rc=0 cc=${CC:-cc}

  echo "A DSO named after a .debug file"
  have "${cc}" objcopy || return 0
  dir=$(mktemp -d /tmp/__perf_test.bido.XXXXX)
  printf '#include <stdio.h>\nint main(void) { puts("x"); return 0; }\n' > "${dir}/p.c"
  if ! "${cc}" -g -Wl,--build-id -o "${dir}/p" "${dir}/p.c" ||
     ! objcopy --only-keep-debug "${dir}/p" "${dir}/p.debug"
  then
    echo "cannot build the program: not run"
    rm -rf "${dir}"
    return
  fi
  bid=$(perf buildid-list -i "${dir}/p.debug")
  BIDO_BID=${bid} BIDO_NAME="${dir}/p.debug" make_data le 0 > "${data}"
  perf report -i - --stdio --sort dso,sym < "${data}" > "${dump}" 2>&1 || rc=$?
  if [ "${rc}" != 0 ]
  then
    echo "Debug-only DSO [Failed perf report exit status ${rc}]"
    fail=1
  fi
  expect "Debug-only DSO" "p.debug"
  rm -rf "${dir}"
}

# File offsets of the symbols $2... in the ELF file $1, from their
# addresses and the file's program headers
file_offsets() {
  python3 - "$@" <<'EOF'
import struct, subprocess, sys

path, names = sys.argv[1], sys.argv[2:]
data = open(path, "rb").read()
if data[4] != 2:
    sys.exit("not an ELF64 file")
E = "<" if data[5] == 1 else ">"
phoff, = struct.unpack_from(E + "Q", data, 0x20)
phentsize, phnum = struct.unpack_from(E + "HH", data, 0x36)
loads = []
for i in range(phnum):
    p_type, _, p_offset, p_vaddr, _, p_filesz = struct.unpack_from(
        E + "IIQQQQ", data, phoff + i * phentsize)
    if p_type == 1:
        loads.append((p_vaddr, p_offset, p_filesz))
syms = {}
for line in subprocess.run(["nm", path], capture_output=True, text=True).stdout.splitlines():
    f = line.split()
    if len(f) == 3:
        syms[f[2]] = int(f[0], 16)
for name in names:
    addr = syms[name]
    print(hex(next(addr - v + o for v, o, sz in loads if v <= addr < v + sz)))
EOF
}

# Branch stacks (no PMU under TCG gives them, so a made-up file): each
# sample's branches go between two functions of a program that only the
# record's map covers.  Joined, 'perf script -F brstacksym' and 'perf
# report -b' name both ends; the samples without their record or without
# a cookie show bare addresses, and are counted.
test_branch_stack() {
  local dir bid offs named cc=${CC:-cc}

  echo "Branch stacks resolved through the record"
  have "${cc}" nm || return 0
  dir=$(mktemp -d /tmp/__perf_test.bido.XXXXX)
  cat > "${dir}/p.c" <<'EOF'
__attribute__((noinline)) int bido_br_to(int x) { return x * 3 + 1; }
__attribute__((noinline)) int bido_br_from(int x) { return bido_br_to(x) + 2; }
int main(int argc, char **argv) { (void)argv; return bido_br_from(argc); }
EOF
  if ! "${cc}" -O1 -Wl,--build-id -o "${dir}/p" "${dir}/p.c" ||
     ! offs=$(file_offsets "${dir}/p" bido_br_from bido_br_to)
  then
    echo "Branch stack [Failed cannot build the program]"
    fail=1
    rm -rf "${dir}"
    return
  fi
  bid=$(perf buildid-list -i "${dir}/p")
  # shellcheck disable=SC2086 # two offsets on one line
  BIDO_BID=${bid} BIDO_NAME="${dir}/p" BIDO_BR=$(echo ${offs}) make_data le 0 br > "${data}"
  perf script -i - -F tid,ip,brstacksym < "${data}" > "${dump}" 2> /dev/null
  # The first two samples are joined with their record: both branches
  # of each named at both ends
  named=$(grep -o 'bido_br_from+0x0/bido_br_to+0x0\|bido_br_to+0x4/bido_br_from+0x4' "${dump}" |
          wc -l)
  if [ "${named}" != 4 ]
  then
    echo "Branch stack [Failed ${named} branches named, not 4: $(cat "${dump}")]"
    fail=1
  fi
  # The sample without a cookie, and the one whose record never came:
  # their branches resolve nothing, although the thread's maps hold the
  # first record's map of that program
  if [ "$(grep -c 'bido_br' "${dump}")" != 2 ] ||
     [ "$(grep -c '\[unknown\]/\[unknown\]/.*\[unknown\]/\[unknown\]/' "${dump}")" != 2 ]
  then
    echo "Branch stack [Failed: $(cat "${dump}")]"
    fail=1
  fi
  perf report -b -i - --stdio --sort symbol_from,symbol_to < "${data}" > "${dump}" 2> /dev/null
  expect "Branch stack report" "[.] bido_br_from"
  expect "Branch stack report" "[.] bido_br_to"
  perf report --stats -i - < "${data}" > "${dump}" 2> /dev/null
  expect "Branch stack stats" "BUILD_ID_OFFSET no_cookie samples:          1"
  expect "Branch stack stats" "BUILD_ID_OFFSET unjoined samples:          1"
  rm -rf "${dir}"
}

# A build-ID never seen before is looked up in an index of the DSOs, not
# by a scan of them all: perf report scans them when others added some
# (here only at the start), not for each of 2000 new build-IDs.
test_many_build_ids() {
  local scans

  echo "Many build-IDs, one scan"
  make_data le 0 many > "${data}"
  perf report -v -i - --stdio --sort dso < "${data}" > "${dump}" 2>&1
  scans=$(sed -n 's/.*build-IDs indexed, \([0-9]*\) scans of the DSOs.*/\1/p' "${dump}")
  if [ -z "${scans}" ] || [ "${scans}" -gt 2 ]
  then
    echo "Many build-IDs [Failed '${scans}' scans of the DSOs for 2000 build-IDs]"
    fail=1
  fi
  expect "Many build-IDs" "[build-id:0000b1d000000000000007cf00000000000036a9]"
}

# A DSO that gets its build-ID after perf indexed the DSOs (a pipe's
# header build-ID for a file an MMAP2 mapped before) must still be found
# by the records of that build-ID: by name, not as a placeholder.
test_named_late() {
  echo "A DSO given its build-ID late"
  BIDO_NAME=/tmp/__perf_test.bido.late BIDO_BID=0102030405060708090a0b0c0d0e0f1011121314 \
    make_data le 0 late > "${data}"
  perf script -i - -F pid,ip,dso < "${data}" > "${dump}" 2> /dev/null
  expect "Named late" "401234 (/tmp/__perf_test.bido.late)"
}

# Held samples go to the tool in time order: task 4242's sample at 6000
# waits for its record (6010) while task 4343's samples, records and COMM
# come and go; perf script must print every time in order ('--deltatime'
# no negative delta), with each task's samples resolved by its own
# records.  Kernel samples are not held: the one whose record never comes
# is not counted as without it.
test_order() {
  local times

  echo "Samples in time order"
  make_data le 0 order > "${data}"
  perf script -i - --ns --show-task-events -F tid,time,ip,buildid_off \
    < "${data}" > "${dump}" 2> /dev/null
  times=$(grep -o ' [0-9]*\.[0-9]*: ' "${dump}" | tr -d ' :')
  if [ "$(echo "${times}" | wc -l)" != 14 ] || [ "${times}" != "$(echo "${times}" | sort -n)" ]
  then
    echo "Order [Failed times out of order: $(echo "${times}" | tr '\n' ' ')]"
    fail=1
  fi
  expect "Order" "401800 buildid_off:0102030405060708090a0b0c0d0e0f1011121314+0x1800"
  expect "Order" "601100 buildid_off:292a2b2c2d2e2f303132333435363738393a3b3c+0x1100"
  expect "Order" "601400 buildid_off:292a2b2c2d2e2f303132333435363738393a3b3c+0x1400"
  expect "Order" "401900 buildid_off:0102030405060708090a0b0c0d0e0f1011121314+0x1900"
  # The COMM at 6005 between the samples at 6004 and 6006
  if ! grep -A1 ' 0\.000006004: ' "${dump}" | grep -q 'PERF_RECORD_COMM'
  then
    echo "Order [Failed COMM not after the sample at 6004: $(cat "${dump}")]"
    fail=1
  fi
  perf script -i - --ns --deltatime -F time < "${data}" > "${dump}" 2> /dev/null
  # A negative delta prints as some 18446744073 seconds
  if [ "$(wc -l < "${dump}")" != 13 ] || grep -qv '^ *0\.[0-9]*: *$' "${dump}"
  then
    echo "Order [Failed --deltatime: $(tr '\n' ' ' < "${dump}")]"
    fail=1
  fi
  perf report --stats -i - < "${data}" > "${dump}" 2> /dev/null
  expect "Order stats" "BUILD_ID_OFFSET unjoined samples:          1"
  expect "Order stats" "BUILD_ID_OFFSET no_cookie samples:          2"
  expect "Order stats" "BUILD_ID_OFFSET unordered events:          0"
}

# perf report's time in milliseconds for $1 samples of one kernel entry,
# all of which must be joined
report_entry() {
  local start

  BIDO_N=$1 make_data le 0 entry > "${data}"
  start=$(date +%s%N)
  perf report -i - --stdio --sort dso < "${data}" > "${dump}" 2> /dev/null
  echo $((($(date +%s%N) - start) / 1000000))
  if [ "$(grep -c 'build-id:0102030405060708090a0b0c0d0e0f1011121314' "${dump}")" != 1 ]
  then
    echo "One entry [Failed $1 samples not joined: $(cat "${dump}")]" >&2
  fi
}

# The samples of one kernel entry wait together for its record: each
# new one must not walk those before it.  8 times the samples may take
# 8 times as long (24 allowed), not 64 times.
test_one_entry() {
  local t1 t8

  echo "Many samples of one kernel entry"
  t1=$(report_entry 10000 2>&1)
  t8=$(report_entry 80000 2>&1)
  if ! [ "${t1}" -ge 0 ] 2> /dev/null || ! [ "${t8}" -ge 0 ] 2> /dev/null
  then
    echo "One entry [Failed ${t1} ${t8}]"
    fail=1
  elif [ "${t8}" -gt 3000 ] && [ "${t8}" -gt $((24 * t1)) ]
  then
    echo "One entry [Failed 10,000 samples in ${t1} ms, 80,000 in ${t8} ms]"
    fail=1
  else
    echo "10,000 samples in ${t1} ms, 80,000 in ${t8} ms"
  fi
}

# Records that are too short, claim a 200-byte build-ID or a map that
# ends before it starts: counted and said, the rest of the file read, the
# good map of a bad record used
test_malformed() {
  local order=$1

  echo "Malformed records, ${order}"
  make_data "${order}" 0 bad > "${data}"
  perf report -D -i - < "${data}" > "${dump}" 2> /dev/null
  expect "Malformed ${order}" "PERF_RECORD_BUILD_ID_OFFSET malformed: shorter than its fixed part"
  expect "Malformed ${order}" \
    "cookie 0x4444 nr 3 flags - malformed: a build-ID longer than 20 bytes"
  expect "Malformed ${order}" " ... map 0: [0x400000-0x402000) pgoff 0 build_id (200 bytes) flags -"
  perf report --stats -i - < "${data}" > "${dump}" 2> /dev/null
  expect "Malformed ${order}" "BUILD_ID_OFFSET malformed records:          2"
  perf script -i - -F tid,ip,buildid_off < "${data}" > "${dump}" 2> /dev/null
  expect "Malformed ${order}" "401234 buildid_off:0102030405060708090a0b0c0d0e0f1011121314+0x1234"
  # The bad record's good map resolves its sample
  expect "Malformed ${order}" "600100 buildid_off:0102030405060708090a0b0c0d0e0f1011121314+0x100"
  perf report -i - --stdio < "${data}" > /dev/null 2> "${dump}"
  expect "Malformed ${order}" "2 of 3 PERF_RECORD_BUILD_ID_OFFSET records are malformed"
}

# Records flagged SAME_MAPS: a chain of two naming the first record has
# its maps (samples before and after the records resolve as that
# record's); a chain naming a cookie the task never had resolves nothing,
# counted.  Both byte orders; --buildid-offset-mmap2 gives the chain's
# samples the first record's MMAP2.
test_same_maps() {
  local order=$1 ip

  echo "Records with the maps of the previous one (SAME_MAPS), ${order}"
  make_data "${order}" 0 same > "${data}"
  perf report -D -i - < "${data}" > "${dump}" 2> /dev/null
  expect "Same maps ${order}" \
    "[0x38]: ${bido}: cookie 0x5151 nr 0 flags SAME_MAPS same_as 0x1111"
  expect "Same maps ${order}" "${bido}: cookie 0x5252 nr 0 flags SAME_MAPS same_as 0x5151"
  expect "Same maps ${order}" "${bido}: cookie 0x5353 nr 0 flags SAME_MAPS same_as 0xdead"
  expect "Same maps ${order}" "BUILD_ID_OFFSET events:          5"
  perf script -i - -F tid,ip,buildid_off < "${data}" > "${dump}" 2> /dev/null
  for ip in 401a00 401b00 401c00
  do
    expect "Same maps ${order}" "${ip} buildid_off:${bid}+0x${ip#40}"
  done
  for ip in 401d00 401e00 401f00
  do
    if grep -q "^ *4242 *${ip} buildid_off:${bid}" "${dump}"
    then
      echo "Same maps ${order} [Failed ${ip} resolved by maps not known]"
      fail=1
    fi
  done
  perf script -i - -F tid,ip,dso < "${data}" > "${dump}" 2> /dev/null
  expect "Same maps ${order}" "401c00 ([build-id:${bid}])"
  expect "Same maps ${order}" "401d00 ([unknown])"
  expect "Same maps ${order}" "401e00 ([unknown])"
  expect "Same maps ${order}" "401f00 ([unknown])"
  perf report --stats -i - < "${data}" > "${dump}" 2> /dev/null
  expect "Same maps ${order}" "BUILD_ID_OFFSET same_unknown samples:          3"
  expect "Same maps ${order}" "BUILD_ID_OFFSET malformed records:          0"
  perf report -i - --stdio < "${data}" > /dev/null 2> "${dump}"
  expect "Same maps ${order}" "3 samples with a build-ID offset cookie got a record saying"
  perf inject --buildid-offset-mmap2 -i - -o "${injected}" < "${data}" 2> /dev/null
  perf script -i "${injected}" -F tid,ip,dso > "${dump}" 2> /dev/null
  expect "Same maps ${order}, injected" "401c00 ([build-id:${bid}])"
}

# Malformed SAME_MAPS records: counted and said; their samples resolve
# nothing, neither by the map one holds nor by the task's last maps
test_same_maps_malformed() {
  local order=$1

  echo "Malformed SAME_MAPS records, ${order}"
  make_data "${order}" 0 samebad > "${data}"
  perf report -D -i - < "${data}" > "${dump}" 2> /dev/null
  expect "Same maps malformed ${order}" \
    "${bido}: cookie 0x6161 nr 1 flags SAME_MAPS malformed: SAME_MAPS with maps"
  expect "Same maps malformed ${order}" \
    "${bido}: cookie 0x6262 nr 0 flags SAME_MAPS malformed: SAME_MAPS too short for its same_as"
  perf report --stats -i - < "${data}" > "${dump}" 2> /dev/null
  expect "Same maps malformed ${order}" "BUILD_ID_OFFSET malformed records:          2"
  expect "Same maps malformed ${order}" "BUILD_ID_OFFSET same_unknown samples:          2"
  perf script -i - -F tid,ip,dso < "${data}" > "${dump}" 2> /dev/null
  expect "Same maps malformed ${order}" "401234 ([build-id:${bid}])"
  expect "Same maps malformed ${order}" "401a00 ([unknown])"
  expect "Same maps malformed ${order}" "401b00 ([unknown])"
}

# perf report stops at a sample it cannot parse: it says so, and exits
# non-zero
test_stop() {
  local rc=0

  echo "perf report stops on an error"
  make_data le 0 cut > "${data}"
  perf report -i - --stdio < "${data}" > /dev/null 2> "${dump}" || rc=$?
  expect "Stop" "failed to process sample"
  if [ "${rc}" = 0 ]
  then
    echo "Stop [Failed perf report exit status 0]"
    fail=1
  fi
}

# Run a scenario, then say how it went.
run() {
  fail=0
  "$@"
  if [ ${fail} = 0 ]
  then
    echo "$* [Success]"
  else
    err=1
  fi
}

run test_dump le
run test_dump be
run test_bad_nr le
run test_bad_nr be
run test_script
run test_inject
run test_inject_build_ids
run test_inject_mmap2 le
run test_inject_mmap2 be
run test_join
run test_unresolved
run test_debug_only_dso
run test_branch_stack
run test_many_build_ids
run test_named_late
run test_order
run test_one_entry
run test_malformed le
run test_malformed be
run test_same_maps le
run test_same_maps be
run test_same_maps_malformed le
run test_same_maps_malformed be
run test_stop

cleanup
exit $err
