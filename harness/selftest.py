#!/usr/bin/env python3
"""Self-test of the guest runner's judgement, run by `make check` as
host/harness-selftest: feed qemu.judge() made-up channels and check that
every kind of kernel splat fails the test it happened in (or
guest/kernel-log outside any test), that a missing DONE or RESULT fails,
that a skip fails a test whose list line says :noskip (and only such a
test), and that KUnit's KTAP is read right.  No guest needed.
"""

import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import qemu  # noqa: E402

TESTS = [["a", "60", "exec", "true"], ["b", "60", "exec", "true"]]
KTAP = """\
[    1.000000] KTAP version 1
[    1.000001] 1..2
[    1.000002]     KTAP version 1
[    1.000003]     # Subtest: good
[    1.000004]     ok 1 one
[    1.000005] ok 1 good
[    1.000006]     KTAP version 1
[    1.000007]     # Subtest: bad
[    1.000008]     not ok 1 broken_case
[    1.000009]     ok 2 fine_case
[    1.000010] not ok 2 bad
"""
SPLATS = [
    "WARNING: CPU: 1 PID: 99 at kernel/events/core.c:100 foo+0x1/0x2",
    "BUG: KASAN: slab-use-after-free in bar+0x10/0x20",
    "BUG: sleeping function called from invalid context at mm/x.c:1",
    "UBSAN: array-index-out-of-bounds in kernel/x.c:3:4",
    "WARNING: possible circular locking dependency detected",
    "INFO: task perf:123 blocked for more than 60 seconds.",
    "rcu: INFO: rcu_sched detected stalls on CPUs/tasks:",
    "BUG: KFENCE: out-of-bounds read in baz+0x0/0x8",
    "Oops: general protection fault, probably for non-canonical address",
    "watchdog: BUG: soft lockup - CPU#0 stuck for 26s! [x:1]",
]
BENIGN = [
    "rcu: 	RCU lockdep checking is enabled.",
    "Lock dependency validator: Copyright (c) 2006 Red Hat, Inc.",
    "kasan: KernelAddressSanitizer initialized",
]


def run(results, console, tests=TESTS):
    with tempfile.TemporaryDirectory() as d:
        with open(os.path.join(d, "console.log"), "w") as f:
            f.write(console)
        res, _, _ = qemu.judge(tests, results.splitlines(), d, False)
    return {r.name: r.status for r in res}


def marked(inside_a="", outside=""):
    lines = [KTAP.rstrip("\n")]
    lines += [f"[    2.000000] {b}" for b in BENIGN]
    lines.append("[    3.000000] guest-test: begin a")
    if inside_a:
        lines.append(f"[    3.500000] {inside_a}")
    lines.append("[    4.000000] guest-test: end a")
    if outside:
        lines.append(f"[    4.500000] {outside}")
    lines.append("[    5.000000] guest-test: begin b")
    lines.append("[    6.000000] guest-test: end b")
    return "\n".join(lines) + "\n"


OK = "BEGIN a\nRESULT a PASS\nBEGIN b\nRESULT b PASS\nDONE 2\n"


def main():
    failures = 0

    def expect(what, got, name, status):
        nonlocal failures
        if got.get(name) != status:
            failures += 1
            print(f"FAIL {what}: {name} is {got.get(name)}, want {status}")

    clean = run(OK, marked())
    for name, status in (("guest/boot", "PASS"), ("a", "PASS"),
                         ("b", "PASS"), ("guest/kernel-log", "PASS"),
                         ("kunit/good", "PASS"), ("kunit/bad", "FAIL")):
        expect("clean run", clean, name, status)
    for splat in SPLATS:
        got = run(OK, marked(inside_a=splat))
        expect(f"splat in a: {splat}", got, "a", "FAIL")
        expect(f"splat in a: {splat}", got, "b", "PASS")
        got = run(OK, marked(outside=splat))
        expect(f"splat outside: {splat}", got, "guest/kernel-log", "FAIL")
    got = run("BEGIN a\nRESULT a PASS\nBEGIN b\n", marked())
    expect("no DONE", got, "guest/boot", "FAIL")
    expect("no RESULT", got, "b", "FAIL")
    got = run(OK, "[    1.0] no ktap here\n")
    expect("no KTAP", got, "kunit/boot-log", "FAIL")
    # A skip: a failure where the list line says :noskip, else a skip
    skips = "BEGIN a\nRESULT a SKIP no feature\nBEGIN b\nRESULT b SKIP x\n" \
        "DONE 2\n"
    got = run(skips, marked(), [["a", "60", "exec:noskip", "true"],
                                ["b", "60", "perftest", "x"]])
    expect("skip of a :noskip test", got, "a", "FAIL")
    expect("skip of a test without :noskip", got, "b", "SKIP")
    got = run(OK, marked(), [["a", "60", "perftest:noskip", "x"], TESTS[1]])
    expect("pass of a :noskip test", got, "a", "PASS")
    checks = 6 + 3 * len(SPLATS) + 3 + 3
    print(f"harness selftest: {checks - failures} of {checks} checks passed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
