#!/usr/bin/env python3
"""`make check`: static checks on the host, then every test list in one
guest boot.  The closing line is 'N passed, N failed, N skipped'; the exit
status is non-zero on any failure.

  host/checkpatch/<file>  scripts/checkpatch.pl --strict: no ERROR and no
                          WARNING on each patch and each new file
  host/series             the series applies to the base with zero fuzz
  host/harness-selftest   the runner's judgement on made-up guest logs
  guest/...               see harness/qemu.py and harness/tests/*.list

--only NAME (repeatable) runs just the named guest tests; --repeat N
with it runs each of them N times in a row in one boot (NAME#1..NAME#N),
to show that a test does not fail now and then.
"""

import argparse
import glob
import os
import re
import subprocess
import sys
import threading

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import qemu  # noqa: E402
import tree   # noqa: E402

REPO = qemu.REPO
BUILD = qemu.BUILD
SRC = os.path.join(BUILD, "src", "linux")
LISTS = sorted(glob.glob(os.path.join(REPO, "harness", "tests", "*.list")))
# The lists the second guest runs (see main()): about as long as the rest
SECOND_GUEST = [os.path.join(REPO, "harness", "tests", name)
                for name in ("40-perf-test-long.list",
                             "45-second-guest-selftests.list")]

# Types that are not errors for an out-of-tree series: new files need no
# MAINTAINERS entry until the series is posted.
CHECKPATCH_IGNORE = "FILE_PATH_CHANGES"
# perf's user-space code keeps its long option help strings split across
# lines (e.g. perf script -F's list of fields); a patch that only touches
# tools/perf may extend one
CHECKPATCH_IGNORE_PERF = CHECKPATCH_IGNORE + ",SPLIT_STRING"
CHECKPATCH_FILES = re.compile(r"(\.[ch]|\.rst|/Kconfig[^/]*|/Makefile|/Build)$")


def checkpatch(args, label, ignore=CHECKPATCH_IGNORE):
    r = subprocess.run(
        ["perl", "scripts/checkpatch.pl", "--strict", "--no-summary",
         "--terse", "--show-types", "--ignore", ignore, *args],
        cwd=SRC, capture_output=True, text=True, check=False)
    lines = [ln for ln in r.stdout.splitlines() if ln.strip()]
    bad = [ln for ln in lines if re.search(r": (ERROR|WARNING):", ln)]
    checks = [ln for ln in lines if ": CHECK:" in ln]
    for ln in bad + checks:
        print(f"    {ln}")
    if bad:
        return qemu.Result(label, "FAIL", f"{len(bad)} errors/warnings")
    return qemu.Result(label, "PASS",
                        f"{len(checks)} CHECK notes" if checks else "")


def host_checks():
    results = []
    for name in tree.read_series():
        perf_only = all(f.startswith("tools/perf/")
                        for f in tree.patch_files(name))
        results.append(checkpatch([os.path.join(REPO, "patches", name)],
                                  f"host/checkpatch/patches/{name}",
                                  CHECKPATCH_IGNORE_PERF if perf_only
                                  else CHECKPATCH_IGNORE))
    blobs = tree.base_blobs()
    for path in sorted(tree.new_files(blobs)):
        if CHECKPATCH_FILES.search("/" + path):
            results.append(checkpatch(["-f", path],
                                      f"host/checkpatch/{path}"))
    r = subprocess.run([sys.executable, os.path.join(REPO, "harness",
                                                     "tree.py"), "check"],
                       capture_output=True, text=True, check=False)
    results.append(qemu.Result("host/series",
                                "PASS" if r.returncode == 0 else "FAIL",
                                r.stderr.strip().splitlines()[-1]
                                if r.returncode else ""))
    r = subprocess.run([sys.executable, os.path.join(REPO, "harness",
                                                     "selftest.py")],
                       capture_output=True, text=True, check=False)
    last = (r.stdout.strip().splitlines() or [""])[-1]
    if r.returncode:
        print(r.stdout)
    results.append(qemu.Result("host/harness-selftest",
                                "PASS" if r.returncode == 0 else "FAIL",
                                last))
    for r in results:
        print(f"  {r}")
    return results


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--only", action="append", default=[])
    ap.add_argument("--mem", default=os.environ.get("GUEST_MEM", "4G"))
    ap.add_argument("--repeat", type=int, default=1)
    args = ap.parse_args()
    if args.repeat > 1 and not args.only:
        sys.exit("check: --repeat goes with --only")

    results = []
    if not args.only:
        print("check: host checks")
        results += host_checks()

    tests = qemu.read_list(LISTS, args.only)
    if args.repeat > 1:
        tests = [[f"{t[0]}#{i}", *t[1:]]
                 for t in tests for i in range(1, args.repeat + 1)]
    skipped = [t for t in tests if t[2] == "skip"]
    tests = [t for t in tests if t[2] != "skip"]
    for name, _, _, reason in skipped:
        results.append(qemu.Result(name, "SKIP", reason))

    # Two guests at once, for hosts with cores to spare (on 2 cores they
    # slow each other about as much as they gain): the first runs every
    # list but SECOND_GUEST's, and its boot's KUnit suites; the second,
    # SECOND_GUEST's: the long perf tests and the longest selftest.
    second = [t for t in tests if t[0] in second_guest_names()]
    first = [t for t in tests if t not in second]
    runs = {}

    def run(key, lane, subdir):
        run_dir = os.path.join(BUILD, "guest", subdir)
        lines, acc, timed_out, secs = qemu.boot(
            lane, run_dir, qemu.run_timeout(lane), args.mem)
        gres, splats, stray = qemu.judge(lane, lines, run_dir, timed_out)
        print(f"check: guest {subdir} ran on {acc} in {secs:.0f}s",
              flush=True)
        if args.only or key == 2:
            gres = [r for r in gres if not r.name.startswith("kunit/")]
        if key == 2:
            for r in gres:
                r.name = r.name.replace("guest/", "guest2/", 1)
        runs[key] = (gres, run_dir, splats, stray)

    lanes = [(1, first, "check"), (2, second, "check2")]
    threads = [threading.Thread(target=run, args=lane)
               for lane in lanes if lane[1]]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for key, lane, _ in lanes:
        if key in runs:
            results += runs[key][0]
        else:
            # The runner itself failed (its traceback is above): no
            # test of that guest may pass unseen
            results += [qemu.Result(t[0], "FAIL", "the guest runner failed")
                        for t in lane]
    main_run = runs.get(1) or runs.get(2) or ([], None, {}, [])
    more = [runs[2]] if 1 in runs and 2 in runs else []

    print("\ncheck: results")
    return qemu.summarize(results, *main_run[1:], more_runs=more)


def second_guest_names():
    """The tests of SECOND_GUEST's lists."""
    return {t[0] for t in qemu.read_list(SECOND_GUEST, [])}


if __name__ == "__main__":
    sys.exit(main())
