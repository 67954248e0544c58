#!/usr/bin/env python3
"""`make check`: static checks on the host, then every test list in one
guest boot.  The closing line is 'N passed, N failed, N skipped'; the exit
status is non-zero on any failure.

  host/checkpatch/<file>  scripts/checkpatch.pl --strict: no ERROR and no
                          WARNING on each patch and each new file
  host/series             the series applies to the base with zero fuzz
  host/harness-selftest   the runner's judgement on made-up guest logs
  guest/...               see harness/guest.py and harness/tests/*.list

--only NAME (repeatable) runs just the named guest tests.
"""

import argparse
import glob
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import guest  # noqa: E402
import tree   # noqa: E402

REPO = guest.REPO
BUILD = guest.BUILD
SRC = os.path.join(BUILD, "src", "linux")
LISTS = sorted(glob.glob(os.path.join(REPO, "harness", "tests", "*.list")))

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
        return guest.Result(label, "FAIL", f"{len(bad)} errors/warnings")
    return guest.Result(label, "PASS",
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
    results.append(guest.Result("host/series",
                                "PASS" if r.returncode == 0 else "FAIL",
                                r.stderr.strip().splitlines()[-1]
                                if r.returncode else ""))
    r = subprocess.run([sys.executable, os.path.join(REPO, "harness",
                                                     "selftest.py")],
                       capture_output=True, text=True, check=False)
    last = (r.stdout.strip().splitlines() or [""])[-1]
    if r.returncode:
        print(r.stdout)
    results.append(guest.Result("host/harness-selftest",
                                "PASS" if r.returncode == 0 else "FAIL",
                                last))
    for r in results:
        print(f"  {r}")
    return results


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--only", action="append", default=[])
    ap.add_argument("--mem", default=os.environ.get("GUEST_MEM", "4G"))
    args = ap.parse_args()

    results = []
    if not args.only:
        print("check: host checks")
        results += host_checks()

    tests = guest.read_list(LISTS, args.only)
    skipped = [t for t in tests if t[2] == "skip"]
    tests = [t for t in tests if t[2] != "skip"]
    for name, _, _, reason in skipped:
        results.append(guest.Result(name, "SKIP", reason))

    if tests:
        run_dir = os.path.join(BUILD, "guest", "check")
        timeout = guest.run_timeout(tests)
        lines, acc, timed_out, secs = guest.boot(tests, run_dir, timeout,
                                                 args.mem)
        gres, splats, stray = guest.judge(tests, lines, run_dir, timed_out)
        print(f"check: guest ran on {acc} in {secs:.0f}s")
        if args.only:
            gres = [r for r in gres if not r.name.startswith("kunit/")]
        results += gres
    else:
        splats, stray, run_dir = {}, [], None

    print("\ncheck: results")
    return guest.summarize(results, run_dir, splats, stray)


if __name__ == "__main__":
    sys.exit(main())
