#!/bin/bash
# perf data convert --to-pprof of a --buildid-offset recording
# SPDX-License-Identifier: GPL-2.0

# perf record --buildid-offset --synth=no -g of a program that spins in
# a dlopen()ed library, in itself and in short-lived children, converted
# with perf data convert --to-pprof and read back by Go's pprof, a reader
# independent of perf: 'go tool pprof -raw' must show the workload's
# files with their build-IDs and every user location of the workload at
# the file offset its /proc/PID/maps gives; 'go tool pprof -top' the
# workload's functions at perf report's shares.  And Google's standalone
# pprof (PPROF; 'go tool pprof' opens no local file by build-ID) must
# symbolise the profile from perf's build-ID cache alone, to the same
# shares.

set -e

shelldir=$(dirname "$0")
# shellcheck source=lib/build_id_offset.sh
. "${shelldir}"/lib/build_id_offset.sh

name="perf data convert --to-pprof"
err=0
tmpdir=$(mktemp -d /tmp/__perf_test.bido_pprof.XXXXX)
# A build-ID cache of its own ($HOME/.debug), which pprof symbolises from;
# go keeps its caches there too
export HOME="${tmpdir}/home"
mkdir -p "${HOME}"

cleanup() {
  rm -rf "${tmpdir}"
  trap - EXIT TERM INT
}

trap_cleanup() {
  cleanup
  exit 1
}
trap trap_cleanup EXIT TERM INT

# A missing tool skips the test, saying which
missing() {
  echo "${name} [Skipped $1]"
  cleanup
  exit 2
}

rc=0
bido_support "${name}" || rc=$?
[ "${rc}" = 0 ] || { cleanup; exit "${rc}"; }
command -v go > /dev/null || missing "no go (Debian: golang-go) for 'go tool pprof'"
command -v python3 > /dev/null || missing "no python3"

# The workload: argv[1] the library to dlopen(), argv[2] where to write
# its /proc/self/maps (its children fork() and share the layout), argv[3]
# the seconds of each of its three parts.  No inlining: pprof's own
# symbolisation would name an inlined helper where perf names its caller.
cat > "${tmpdir}/pprofwork.c" << 'EOF'
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

uint64_t pprofwork_main_spin(double secs)
{
	double end = now() + secs;
	uint64_t x = 7;
	unsigned int i;

	while (now() < end)
		for (i = 0; i < 20000; i++)
			x = x * 7 + i;
	return x;
}

uint64_t pprofwork_child_spin(double secs)
{
	double end = now() + secs;
	uint64_t x = 13;
	unsigned int i;

	while (now() < end)
		for (i = 0; i < 20000; i++)
			x = x * 13 + i;
	return x;
}

int main(int argc, char **argv)
{
	double secs = atof(argv[3]), end;
	volatile uint64_t sink = 0;
	uint64_t (*dl_spin)(double);
	char buf[4096];
	FILE *in, *out;
	size_t n;
	pid_t pid;
	void *h;

	h = dlopen(argv[1], RTLD_NOW);
	if (!h || !(dl_spin = (uint64_t (*)(double))dlsym(h, "pprofdl_spin")))
		return 1;
	in = fopen("/proc/self/maps", "r");
	out = fopen(argv[2], "w");
	if (!in || !out)
		return 1;
	while ((n = fread(buf, 1, sizeof(buf), in)) > 0)
		fwrite(buf, 1, n, out);
	fclose(in);
	fclose(out);

	sink += dl_spin(secs);
	sink += pprofwork_main_spin(secs);
	end = now() + secs;
	while (now() < end) {
		pid = fork();
		if (pid == 0) {
			sink += pprofwork_child_spin(0.02);
			_exit(0);
		}
		waitpid(pid, NULL, 0);
	}
	return 0;
}
EOF
cat > "${tmpdir}/pprofdl.c" << 'EOF'
#include <stdint.h>
#include <time.h>

uint64_t pprofdl_spin(double secs)
{
	struct timespec ts;
	uint64_t x = 1;
	double end;
	unsigned int i;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	end = ts.tv_sec + ts.tv_nsec / 1e9 + secs;
	do {
		for (i = 0; i < 20000; i++)
			x = x * 17 + i;
		clock_gettime(CLOCK_MONOTONIC, &ts);
	} while (ts.tv_sec + ts.tv_nsec / 1e9 < end);
	return x;
}
EOF
flags="-O1 -g -fno-inline -fno-omit-frame-pointer"
rc=0
bido_cc "${name}" "${tmpdir}/pprofwork" "${tmpdir}/pprofwork.c" ${flags} -ldl || rc=$?
[ "${rc}" = 0 ] || { cleanup; exit "${rc}"; }
bido_cc "${name}" "${tmpdir}/libpprofdl.so" "${tmpdir}/pprofdl.c" ${flags} -fPIC -shared || rc=$?
[ "${rc}" = 0 ] || { cleanup; exit "${rc}"; }

data="${tmpdir}/perf.data"
prof="${tmpdir}/profile.pb.gz"
if ! perf record --buildid-offset --synth=no -g -e cpu-clock -c 1000000 -o "${data}" \
     -- "${tmpdir}/pprofwork" "${tmpdir}/libpprofdl.so" "${tmpdir}/maps" 1 \
     > /dev/null 2> "${tmpdir}/record.err"
then
  echo "${name} [Failed perf record: $(tail -n 1 "${tmpdir}/record.err")]"
  cleanup
  exit 1
fi
if ! perf data convert -i "${data}" --to-pprof "${prof}" 2> "${tmpdir}/convert.err"
then
  echo "${name} [Failed perf data convert: $(tail -n 1 "${tmpdir}/convert.err")]"
  cleanup
  exit 1
fi
tail -n 1 "${tmpdir}/convert.err"

# The workload's files and their build-IDs, as perf reads them
for f in pprofwork libpprofdl.so
do
  echo "${tmpdir}/${f} $(perf buildid-list -i "${tmpdir}/${f}")"
done > "${tmpdir}/ids"

# pprof's -raw and -top output, perf report's shares ("PERCENT SYMBOL")
if ! go tool pprof -symbolize=none -raw "${prof}" > "${tmpdir}/raw" 2> "${tmpdir}/pprof.err" ||
   ! go tool pprof -symbolize=none -top -nodecount=100 "${prof}" > "${tmpdir}/top" \
     2>> "${tmpdir}/pprof.err"
then
  echo "${name} [Failed go tool pprof cannot read the profile: $(tail -n 1 "${tmpdir}/pprof.err")]"
  cleanup
  exit 1
fi
perf report -i "${data}" --stdio --no-children --sort sym -g none -q 2> /dev/null |
  awk '$1 ~ /%$/ { p = $1; sub(/%/, "", p); print p, $NF }' > "${tmpdir}/report"

# check.py RAW TOP: the mappings and user locations of the workload in
# pprof's -raw output against the maps and build-IDs (ground truth), the
# shares of its functions in pprof's -top output against perf report's
cat > "${tmpdir}/check.py" << 'EOF'
import re
import sys

raw, top, report, maps, ids = sys.argv[1:6]
FUNCS = ("pprofdl_spin", "pprofwork_main_spin", "pprofwork_child_spin")
USER_END = 1 << 47

# ground truth: the workload's file mappings, by path
truth = []
for line in open(maps):
    f = line.split()
    if len(f) >= 6 and f[5].startswith("/"):
        start, end = (int(x, 16) for x in f[0].split("-"))
        truth.append((start, end, int(f[2], 16), f[5]))
bid = dict(line.split() for line in open(ids))

# -raw: samples (their location ids and comm), locations, mappings
section, samples, locs, mappings = None, [], {}, {}
for line in open(raw):
    if line.rstrip() in ("Samples:", "Locations", "Mappings"):
        section = line.strip().rstrip(":")
        continue
    if section == "Samples" and ":" in line and "[" not in line and "/" not in line:
        samples.append([int(x) for x in line.split(":")[1].split()])
    elif section == "Samples" and "comm:[" in line:
        samples[-1] = (samples[-1], re.search(r"comm:\[([^]]*)\]", line).group(1))
    elif section == "Locations":
        m = re.match(r"\s*(\d+): (0x[0-9a-f]+) (?:M=(\d+))?", line)
        if m:
            locs[int(m.group(1))] = (int(m.group(2), 16), int(m.group(3) or 0))
    elif section == "Mappings":
        m = re.match(r"(\d+): (0x[0-9a-f]+)/(0x[0-9a-f]+)/(0x[0-9a-f]+) (\S+) ?([0-9a-f]*)", line)
        if m:
            mappings[int(m.group(1))] = (int(m.group(2), 16), int(m.group(3), 16),
                                         int(m.group(4), 16), m.group(5), m.group(6))

bad = 0
# Every file of the workload has a mapping with its build-ID
for path, want in bid.items():
    got = {mp[4] for mp in mappings.values() if mp[3] == path}
    if got != {want}:
        print(f"mapping of {path}: build-IDs {got or 'none'}, want {want}")
        bad = 1

# Every user location of the workload's processes (comm pprofwork: the
# parent and its fork()ed children) at the file offset the truth gives.
# A location in no mapping is unresolved, not wrong: a sample whose
# record never came (a child that exited in the kernel); fewer than 10%.
right = no_file = unresolved = 0
seen = set()
for ids_, comm in (s for s in samples if isinstance(s, tuple)):
    if comm != "pprofwork":
        continue
    for lid in ids_:
        addr, mid = locs[lid]
        if addr >= USER_END or lid in seen:
            continue
        seen.add(lid)
        t = next((t for t in truth if t[0] <= addr < t[1]), None)
        if not t:
            no_file += 1           # the vDSO, anonymous memory
            continue
        mp = mappings.get(mid)
        want = addr - t[0] + t[2]
        if not mp:
            unresolved += 1
        elif mp[4] == bid.get(t[3], mp[4]) and addr - mp[0] + mp[2] == want:
            right += 1
        else:
            print(f"location {lid} {addr:#x}: mapping {mp}, truth {t[3]} at {want:#x}")
            bad = 1
print(f"{len(mappings)} mappings, {len(locs)} locations: {right} user locations of the "
      f"workload at the right file offset, {unresolved} unresolved, {no_file} in no file")
if right < 10 or unresolved * 10 >= right + unresolved:
    print("too few user locations of the workload resolved")
    bad = 1

# The shares of the workload's functions: pprof -top's flat% against perf
# report's self %.  Both count the same samples, so they differ only by
# rounding and by an address that perf and the reader name differently
# (none in these functions): within 1 point.
def shares(path, pct_col, name_col):
    out = {}
    for line in open(path):
        f = line.split()
        if len(f) > name_col and f[pct_col].endswith("%") and f[name_col] in FUNCS:
            out[f[name_col]] = float(f[pct_col].rstrip("%"))
    return out

rep = {}
for line in open(report):
    p, sym = line.split()
    if sym in FUNCS:
        rep[sym] = float(p)
for path in top.split(","):
    got = shares(path, 1, 5)
    for fn in FUNCS:
        a, b = rep.get(fn, 0), got.get(fn, 0)
        print(f"{path.rsplit('/', 1)[-1]}: {fn} {b:.2f}%, perf report {a:.2f}%")
        if a < 3 or abs(a - b) > 1:
            print(f"  {fn}: want at least 3% and within 1 point")
            bad = 1
sys.exit(bad)
EOF
if ! python3 "${tmpdir}/check.py" "${tmpdir}/raw" "${tmpdir}/top" "${tmpdir}/report" \
     "${tmpdir}/maps" "${tmpdir}/ids"
then
  echo "${name}, pprof's view [Failed]"
  err=1
else
  echo "${name}, pprof's view [Success]"
fi

# Symbolisation by build-ID from perf's build-ID cache alone: PPROF_BINARY_PATH
# is searched for BUILD_ID/*, which links to the cache's entry (.build-id/xx/yyy
# is the directory with the 'elf'); ':force' drops perf's names.  The names
# must then come with the source file, which perf's do not have.
pprof=${PPROF:-pprof}
if ! command -v "${pprof}" > /dev/null
then
  missing "no standalone pprof (make pprof, PPROF) to symbolise by build-ID"
fi
mkdir -p "${tmpdir}/binaries"
for d in "${HOME}"/.debug/.build-id/*/*
do
  [ -e "${d}/elf" ] || continue
  ln -s "${d}" "${tmpdir}/binaries/$(basename "$(dirname "${d}")")$(basename "${d}")"
done
export PPROF_BINARY_PATH="${tmpdir}/binaries"
if ! "${pprof}" -symbolize=local:force -raw "${prof}" > "${tmpdir}/local.raw" \
     2> "${tmpdir}/pprof.err" ||
   ! "${pprof}" -symbolize=local:force -top -nodecount=100 "${prof}" \
     > "${tmpdir}/local.top" 2>> "${tmpdir}/pprof.err"
then
  echo "${name}, symbolised by build-ID [Failed pprof: $(tail -n 1 "${tmpdir}/pprof.err")]"
  cleanup
  exit 1
fi
unnamed=$(grep -cE ' (pprofdl_spin|pprofwork_main_spin|pprofwork_child_spin) :0 ' \
          "${tmpdir}/local.raw" || true)
named=$(grep -cE \
        ' (pprofdl_spin|pprofwork_main_spin|pprofwork_child_spin) /.*pprof(dl|work)\.c:[1-9]' \
        "${tmpdir}/local.raw" || true)
if [ "${unnamed}" != 0 ] || [ "${named}" -lt 3 ] ||
   ! python3 "${tmpdir}/check.py" "${tmpdir}/raw" "${tmpdir}/local.top" "${tmpdir}/report" \
     "${tmpdir}/maps" "${tmpdir}/ids" > "${tmpdir}/local.out"
then
  cat "${tmpdir}/local.out" "${tmpdir}/pprof.err"
  echo "${name}, symbolised by build-ID [Failed ${named} locations named from the cache," \
       "${unnamed} not]"
  err=1
else
  grep local.top "${tmpdir}/local.out"
  echo "${name}, symbolised by build-ID [Success: ${named} locations named from the cache]"
fi

cleanup
exit ${err}
