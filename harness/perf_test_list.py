#!/usr/bin/env python3
"""Turn a `perf test` survey (harness/guest/perf-test-survey.sh, run in the
guest by `make perf-test-survey`) into harness/tests/20-perf-test.list.

An entry runs in `make check` when it passed or skipped by itself on the
base within BUDGET seconds; an entry that failed on the base or took
longer is listed as not run, with the reason.  Run the survey on the
unpatched base (an empty series) so that "fails on the base" means what it
says; the list is then kept by hand as the series grows.

usage: perf_test_list.py SURVEY_OUTPUT > harness/tests/20-perf-test.list
"""

import re
import sys

BUDGET = 45.0       # seconds under TCG with the debug kernel
HEADER = """\
# `perf test` entries of the base's perf, run in the guest by `make check`.
# NAME <tab> TIMEOUT <tab> KIND <tab> ARG; see harness/guest/run-tests.
#
# Made by harness/perf_test_list.py from a survey of every entry on the
# unpatched base (empty series), debug guest kernel under TCG, one entry at
# a time with a 60 s limit.  Entries that passed or skipped by themselves
# in under {budget:.0f} s run.  The others do not, and say why:
#   "fails on the unpatched base": broken without our series, mostly for
#     lack of a hardware PMU, kernel features the tiny guest leaves out
#     (kprobes, uprobes, BPF, ftrace syscalls) or tools we do not install;
#     a regression we cause shows as a failure of an entry that runs
#   "too slow under emulation": over the budget (or the 60 s limit) here.
# Timeouts are six times the surveyed time, at least 120 s: timings under
# TCG vary with the load on the host, and slowness must not read as failure.
"""


def main():
    entries = []
    fail_lines = {}
    last = None
    with open(sys.argv[1], errors="replace") as f:
        for line in f:
            line = line.rstrip("\r\n")
            m = re.search(r"SURVEY (\d+) (\S+) ([\d.]+) (.*)$", line)
            if m:
                num, status, secs, desc = m.groups()
                last = [int(num), status, float(secs), desc]
                entries.append(last)
                continue
            # The reason: the first FAILED line, else the first Skip line
            if last and last[1] != "OK" and line.startswith("    "):
                if "FAILED" in line and "FAILED" not in \
                        fail_lines.get(last[0], ""):
                    fail_lines[last[0]] = line.strip()
                elif "Skip" in line:
                    fail_lines.setdefault(last[0], line.strip())
    print(HEADER.format(budget=BUDGET), end="")
    run = [e for e in entries
           if e[1] in ("OK", "SKIP") and e[2] <= BUDGET]
    notrun = [e for e in entries if e not in run]
    total = sum(e[2] for e in run)
    print(f"# {len(run)} entries run (about {total:.0f} s surveyed), "
          f"{len(notrun)} do not.\n")
    for num, status, secs, desc in entries:
        name = "perf-test/" + re.sub(r"[^A-Za-z0-9_.+-]+", "-",
                                     desc).strip("-")
        if [num, status, secs, desc] in run:
            tmo = max(120, int(secs * 6))
            print(f"{name}\t{tmo}\tperftest\t{desc}")
        elif status in ("TIMEOUT",) or secs > BUDGET:
            print(f"{name}\t-\tskip\ttoo slow under emulation "
                  f"({status.lower()}, {secs:.0f} s surveyed)")
        else:
            why = fail_lines.get(num, status.lower())
            if status == "FAIL" and "FAILED" not in why:
                why = "a subtest FAILED"
            why = re.sub(r"\s+", " ", why)[:120]
            print(f"{name}\t-\tskip\tfails on the unpatched base: {why}")


if __name__ == "__main__":
    main()
