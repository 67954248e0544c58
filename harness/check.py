#!/usr/bin/env python3
"""`make check`: static checks on the host, then every test list in one
guest boot.  The closing line is 'N passed, N failed, N skipped'; the exit
status is non-zero on any failure.

  host/series             the series applies to the base with zero fuzz
  host/export             `make format-patch` exports it as mails, and `git
                          am` of them onto a pristine base gives the tree
                          `make tree` composes (harness/export.py)
  host/checkpatch/<mail>  scripts/checkpatch.pl --strict: no ERROR and no
                          WARNING in each exported mail (its new files
                          included)
  host/same-lines/<patch> a backport patch marked "same lines as" in its
                          series adds and removes what the mainline one does
  host/harness-selftest   the runner's judgement on made-up guest logs
                          (--harness-selftest: once per make check)
  guest/...               see harness/qemu.py and harness/tests/*.list

--only NAME (repeatable) runs just the named guest tests; --repeat N
with it runs each of them N times in a row in one boot (NAME#1..NAME#N),
to show that a test does not fail now and then.
"""

import argparse
import difflib
import glob
import os
import re
import subprocess
import sys
import traceback

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import qemu  # noqa: E402
import tree   # noqa: E402

REPO = qemu.REPO
BUILD = qemu.BUILD
SRC = os.path.join(BUILD, "src", "linux")
# TEST_LISTS: the folder of the line's test lists (harness/tests/6.12 for the
# 6.12 backport, harness/tests/mainline for the mainline series)
LISTS_DIR = os.path.join(REPO, os.environ.get("TEST_LISTS", "harness/tests/6.12"))
LISTS = sorted(glob.glob(os.path.join(LISTS_DIR, "*.list")))
# The lists the second guest runs (see main()): about as long as the rest
# Types that are not errors in this series:
# FILE_PATH_CHANGES: its last patch adds the MAINTAINERS entries of every
# new file, so each earlier patch that adds one is told to.
# UNKNOWN_COMMIT_ID: the composed tree's git holds the Debian base only,
# no upstream history, so checkpatch cannot look up the commits the
# Fixes: tags of patches 0001-0005 name (checked against upstream's own
# sources and later Fixes: tags instead).
CHECKPATCH_IGNORE = "FILE_PATH_CHANGES,UNKNOWN_COMMIT_ID"
# perf's user-space code keeps its long option help strings split across
# lines (e.g. perf script -F's list of fields); a patch that only touches
# tools/ may extend one
CHECKPATCH_IGNORE_PERF = CHECKPATCH_IGNORE + ",SPLIT_STRING"
# perf test reads a shell test's description from its second line, so
# every perf shell test has its SPDX tag on the third.
CHECKPATCH_SKIP = (("SPDX_LICENSE_TAG",
                    re.compile(r"^tools/perf/tests/shell/.*\.sh$")),)


def checkpatch(mail, label, ignore=CHECKPATCH_IGNORE):
    r = subprocess.run(
        ["perl", "scripts/checkpatch.pl", "--strict", "--no-summary",
         "--show-types", "--ignore", ignore, mail],
        cwd=SRC, capture_output=True, text=True, check=False)
    bad, checks = [], []
    for block in re.split(r"\n\s*\n", r.stdout):
        m = re.match(r"(ERROR|WARNING|CHECK):(\w+): (.*)", block.strip())
        if not m:
            continue
        level, kind, msg = m.groups()
        f = re.search(r"FILE: (\S+?):(\d+):", block)
        where = f"{f.group(1)}:{f.group(2)}" if f else "commit message"
        if f and any(kind == k and rx.search(f.group(1))
                     for k, rx in CHECKPATCH_SKIP):
            continue
        line = f"{where}: {level}:{kind}: {msg}"
        (checks if level == "CHECK" else bad).append(line)
    for ln in bad + checks:
        print(f"    {ln}")
    if bad:
        return qemu.Result(label, "FAIL", f"{len(bad)} errors/warnings")
    return qemu.Result(label, "PASS",
                        f"{len(checks)} CHECK notes" if checks else "")


def export_checks():
    """Export the series, git am it onto a pristine base, checkpatch each
    mail."""
    results = []
    for step in ("format-patch", "am-check"):
        r = subprocess.run([sys.executable, os.path.join(
            REPO, "harness", "export.py"), step],
            capture_output=True, text=True, check=False)
        if r.returncode:
            print(r.stdout + r.stderr)
            return [qemu.Result("host/export", "FAIL",
                                (r.stderr.strip().splitlines() or
                                 ["?"])[-1])]
    results.append(qemu.Result("host/export", "PASS",
                               r.stdout.strip().splitlines()[-1]))
    out = os.path.join(BUILD, "export")
    for mail in sorted(os.listdir(out)):
        if not mail.endswith(".patch") or mail.startswith("0000-"):
            continue
        path = os.path.join(out, mail)
        with open(path, errors="replace") as f:
            touched = re.findall(r"^\+\+\+ b/(\S+)", f.read(), re.M)
        tools_only = all(t.startswith("tools/") for t in touched)
        results.append(checkpatch(path, f"host/checkpatch/{mail}",
                                  CHECKPATCH_IGNORE_PERF if tools_only
                                  else CHECKPATCH_IGNORE))
    return results


def changed_lines(path):
    """The lines a patch adds and removes, in order, without context."""
    with open(path, errors="replace") as f:
        _, body = re.split(r"^---\s*$", f.read(), maxsplit=1, flags=re.M)
    return [ln for ln in body.splitlines()
            if ln[:1] in "+-" and not ln.startswith(("+++ ", "--- "))]


def backport_same_lines():
    """A patch of the backport's series marked "# same lines as PATCH" (a
    mainline patch with the context of 6.12) adds and removes exactly
    what that patch does."""
    results = []
    with open(tree.SERIES) as f:
        for line in f:
            m = re.match(r"^(\S+)\s+#\s*same lines as\s+(\S+)", line)
            if not m:
                continue
            ours, theirs = (os.path.join(tree.PATCHES, p) for p in m.groups())
            a, b = changed_lines(ours), changed_lines(theirs)
            name = f"host/same-lines/{os.path.basename(ours)}"
            if a == b:
                results.append(qemu.Result(name, "PASS",
                                           f"{len(a)} lines as mainline's"))
            else:
                diff = [ln for ln in difflib.unified_diff(
                    b, a, "mainline", "6.12", lineterm="", n=0)][:20]
                print("\n".join(diff))
                results.append(qemu.Result(name, "FAIL",
                                           "adds or removes other lines than "
                                           + os.path.basename(theirs)))
    return results


def host_checks(harness_selftest=False):
    results = []
    r = subprocess.run([sys.executable, os.path.join(REPO, "harness",
                                                     "tree.py"), "check"],
                       capture_output=True, text=True, check=False)
    results.append(qemu.Result("host/series",
                                "PASS" if r.returncode == 0 else "FAIL",
                                r.stderr.strip().splitlines()[-1]
                                if r.returncode else ""))
    if r.returncode == 0:
        results += export_checks()
    results += backport_same_lines()
    if not harness_selftest:
        # the runner's own tests are the same for both lines: once is enough
        for r in results:
            print(f"  {r}")
        return results
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
    ap.add_argument("--harness-selftest", action="store_true",
                    help="also run the harness's own tests (once per "
                    "make check is enough)")
    ap.add_argument("--fuzz-perf", default=None,
                    help="after the guest, fuzz the perf.data seeds it "
                    "printed with this perf (harness/perf_data_fuzz.py)")
    ap.add_argument("--fuzz-cases", type=int,
                    default=int(os.environ.get("FUZZ_CASES", "2000")))
    args = ap.parse_args()
    if args.repeat > 1 and not args.only:
        sys.exit("check: --repeat goes with --only")

    results = []
    if not args.only:
        print("check: host checks")
        results += host_checks(args.harness_selftest)

    tests = qemu.read_list(LISTS, args.only)
    if args.repeat > 1:
        tests = [[f"{t[0]}#{i}", *t[1:]]
                 for t in tests for i in range(1, args.repeat + 1)]
    skipped = [t for t in tests if t[2] == "skip"]
    tests = [t for t in tests if t[2] != "skip"]
    for name, _, _, reason in skipped:
        results.append(qemu.Result(name, "SKIP", reason))

    run_dir = os.path.join(BUILD, "guest", "check")
    try:
        lines, acc, timed_out, secs = qemu.boot(
            tests, run_dir, qemu.run_timeout(tests), args.mem)
        gres, splats, stray = qemu.judge(tests, lines, run_dir, timed_out)
        print(f"check: guest ran on {acc} in {secs:.0f}s", flush=True)
        if args.only:
            gres = [r for r in gres if not r.name.startswith("kunit/")]
        results += gres
    except Exception:  # pylint: disable=broad-except
        # No test of the guest may pass unseen when the runner fails
        traceback.print_exc()
        results += [qemu.Result(t[0], "FAIL", "the guest runner failed")
                    for t in tests]
        run_dir, splats, stray = None, {}, []
    if args.fuzz_perf and run_dir:
        results += fuzz(args.fuzz_perf, run_dir, args.fuzz_cases)

    print(f"\ncheck: results ({tree.read_base()['package']})")
    return qemu.summarize(results, run_dir, splats, stray)


def fuzz(perf, run_dir, cases):
    """The perf.data fuzzer on the seeds the guest printed, if it did."""
    log = os.path.join(run_dir, "output.log")
    with open(log, errors="replace") as f:
        if "SEED-BEGIN " not in f.read():
            return []
    print(f"check: fuzzing the guest's perf.data seeds ({cases} cases)",
          flush=True)
    r = subprocess.run([sys.executable, os.path.join(
        REPO, "harness", "perf_data_fuzz.py"), log, perf,
        "--cases", str(cases), "--keep", os.path.join(BUILD, "fuzz")],
        capture_output=True, text=True, check=False)
    print("\n".join(f"  | {ln}" for ln in r.stdout.splitlines()))
    last = (r.stdout.strip().splitlines() or ["no output"])[-1]
    return [qemu.Result("host/perf-data-fuzz",
                        "PASS" if r.returncode == 0 else "FAIL",
                        last.replace("fuzz: ", ""))]


if __name__ == "__main__":
    sys.exit(main())
