#!/usr/bin/env python3
"""Boot the built kernel under QEMU, run a test list inside, and judge it.

The guest's root is the host's, read-only over virtio 9p, so it runs the
perf and the tests built on the host at the same paths.  Three UARTs:
  ttyS0  the kernel console: kernel messages only (console.log)
  ttyS1  results: BEGIN/RESULT/DONE lines (results.log); a serial port
         is written synchronously, so what a test reported survives a
         guest crash
  ttyS2  the tests' own output (output.log)
QEMU's exit status says nothing about the tests: a run without a DONE
line has failed.  A test fails if it says so, times out, or if the kernel
log shows a splat while it ran; a splat outside every test fails the
pseudo-test guest/kernel-log.

usage: qemu.py [--only NAME]... [--timeout S] [--run-dir DIR] LIST...
"""

import argparse
import os
import re
import shlex
import shutil
import subprocess
import sys
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BUILD = os.path.abspath(os.environ.get("BUILD", os.path.join(REPO, "build")))
# GUEST_KERNEL: another bzImage (`make bench` boots the one without the
# debug options); GUEST_APPEND: more kernel parameters (kmemleak=on)
KERNEL = os.environ.get("GUEST_KERNEL") or \
    os.path.join(BUILD, "obj", "kernel", "arch", "x86", "boot", "bzImage")
APPEND = os.environ.get("GUEST_APPEND", "").split()
KVM_PROBE = 30         # seconds a KVM guest gets to print its first line
BOOT_ALLOWANCE = 180   # seconds for boot, KUnit and shutdown, above tests

TS = r"^\[\s*\d+\.\d+\] "
SPLAT = re.compile(TS + r"(?:.*\b(BUG:|WARNING:|Oops|general protection "
                   r"fault|Kernel panic|kernel BUG at|UBSAN:|KASAN:|KFENCE:|"
                   r"blocked for more than|possible recursive locking|"
                   r"possible circular locking|inconsistent lock state|"
                   r"suspicious RCU usage|detected stalls? on|soft lockup|"
                   r"turning off the locking correctness validator))")
MARK = re.compile(TS + r"guest-test: (begin|end) (\S+)")
KTAP_TOP = re.compile(TS + r"(not ok|ok) \d+ (\S+)(.*)$")
KTAP_CASE = re.compile(TS + r"    (not ok|ok) \d+ (\S+)(.*)$")


class Result:
    def __init__(self, name, status, reason=""):
        self.name, self.status, self.reason = name, status, reason.strip()

    def __str__(self):
        tail = f" ({self.reason})" if self.reason else ""
        return f"{self.status:4} {self.name}{tail}"


KINDS = ("exec", "perftest", "skip")
# A KIND with this suffix (exec:noskip): a skip of the test is a failure,
# as where the guest has what the test needs (the series' kernel, perf
# and tools) a skip can only mean that something is missing
NOSKIP = ":noskip"


def no_skip(test):
    """Whether a list line says that a skip of its test is a failure."""
    return test[2].endswith(NOSKIP)


def read_list(paths, only):
    """Test list lines: NAME TIMEOUT KIND ARG (tab-separated); KIND is
    exec, perftest or skip, the first two with an optional :noskip."""
    tests = []
    for path in paths:
        with open(path) as f:
            for line in f:
                line = line.rstrip("\n")
                if not line.strip() or line.lstrip().startswith("#"):
                    continue
                fields = line.split("\t")
                kind = fields[2] if len(fields) == 4 else ""
                if kind.endswith(NOSKIP) and kind != "skip" + NOSKIP:
                    kind = kind[:-len(NOSKIP)]
                if len(fields) != 4 or kind not in KINDS:
                    sys.exit(f"guest: {path}: bad line: {line!r}")
                tests.append(fields)
    if only:
        tests = [t for t in tests if any(o == t[0] or
                                          t[0].endswith("/" + o)
                                          for o in only)]
        missing = [o for o in only if not any(o == t[0] or
                                              t[0].endswith("/" + o)
                                              for t in tests)]
        if missing:
            sys.exit(f"guest: no test named {', '.join(missing)}")
    return tests


def run_timeout(tests):
    """The host's limit for one boot: every test's own limit plus slack."""
    return BOOT_ALLOWANCE + sum(int(t[1]) + 15 for t in tests)


def expand(text):
    return text.replace("@BUILD@", BUILD).replace("@REPO@", REPO)


def accel():
    """kvm, tcg, or icount: TCG on one vCPU in which every guest clock
    counts retired instructions (the cost figures of `make bench`)."""
    want = os.environ.get("ACCEL", "auto")
    if want == "auto":
        want = "kvm" if os.access("/dev/kvm", os.R_OK | os.W_OK) else "tcg"
    return want


def host_tsc_khz():
    """The host's TSC rate in kHz, or None when unknown or not constant.

    Under TCG the guest's RDTSC returns the host's TSC, but the guest
    cannot calibrate it: the PIT loop is at the mercy of emulation speed,
    and tinyconfig has no HPET or ACPI PM timer to refine against.  An
    uncalibrated TSC leaves the guest on the jiffies clocksource, which
    makes cpu-clock and every CPU time tick-granular.  So tell the guest.
    """
    try:
        with open("/proc/cpuinfo") as f:
            info = f.read()
    except OSError:
        return None
    flags = re.search(r"^flags\s*:(.*)$", info, re.M)
    if not flags or not {"constant_tsc", "nonstop_tsc"} <= \
            set(flags.group(1).split()):
        return None
    try:
        log = subprocess.run(["dmesg"], capture_output=True, text=True,
                             timeout=10).stdout
    except (OSError, subprocess.SubprocessError):
        log = ""
    # The refined figure, when the host printed one, comes last.
    found = re.findall(r"tsc: (?:Refined TSC clocksource calibration: |"
                       r"Detected )(\d+\.\d+) MHz", log)
    m = re.match(r"(\d+\.\d+)", found[-1]) if found else None
    if not m:
        m = re.search(r"^cpu MHz\s*:\s*(\d+\.\d+)", info, re.M)
    return int(float(m.group(1)) * 1000) if m else None


def qemu_cmd(acc, run_dir, list_path, mem):
    share = "security_model=none,readonly=on,multidevs=remap"
    append = " ".join([
        "console=ttyS0", "root=hostroot", "rootfstype=9p",
        "rootflags=trans=virtio,version=9p2000.L,cache=loose,msize=512000",
        "ro", f"init={REPO}/harness/guest/init", "panic=-1",
        f"harness_repo={REPO}", f"harness_build={BUILD}", f"harness_list={list_path}",
        *APPEND,
    ])
    # Under icount the TSC advances one tick per retired instruction:
    # at a declared 1 GHz every guest clock (sched_clock, CPU times,
    # cpu-clock periods) reads instructions as nanoseconds.  icount
    # needs single-threaded TCG; one vCPU keeps the count per task.
    khz = host_tsc_khz() if acc == "tcg" else \
        1000000 if acc == "icount" else None
    if khz and "tsc_early_khz=" not in append:
        append += f" tsc_early_khz={khz} tsc=reliable"
    smp = "2"
    if acc == "kvm":
        cpu = ["-accel", "kvm", "-cpu", "host"]
    elif acc == "icount":
        cpu = ["-accel", "tcg,thread=single", "-icount",
               "shift=0,sleep=off", "-cpu", "max"]
        smp = "1"
    else:
        cpu = ["-accel", "tcg,thread=multi", "-cpu", "max"]
    cmd = ["qemu-system-x86_64", "-M", "pc", *cpu, "-smp", smp, "-m", mem,
           "-nodefaults", "-display", "none", "-no-reboot",
           "-kernel", KERNEL, "-append", append,
           "-virtfs", f"local,path=/,mount_tag=hostroot,{share}",
           "-virtfs", f"local,path={REPO},mount_tag=repo,{share}",
           "-virtfs", f"local,path={BUILD},mount_tag=build,{share}"]
    for name in ("console", "results", "output"):
        cmd += ["-serial", f"file:{os.path.join(run_dir, name + '.log')}"]
    if os.path.exists("/usr/share/qemu/qboot.rom"):
        cmd += ["-bios", "/usr/share/qemu/qboot.rom"]
    return cmd


def boot(tests, run_dir, timeout, mem):
    """Run the tests in one guest boot; return (results lines, accel)."""
    run_dir = os.path.abspath(run_dir)
    os.makedirs(run_dir, exist_ok=True)
    list_path = os.path.join(run_dir, "list.tsv")
    with open(list_path, "w") as f:
        for name, tmo, kind, arg in tests:
            f.write(f"{name}\t{tmo}\t{kind}\t{expand(arg)}\n")
    acc = accel()
    for attempt in (acc, "tcg"):
        for name in ("console", "results", "output"):
            open(os.path.join(run_dir, name + ".log"), "w").close()
        cmd = qemu_cmd(attempt, run_dir, list_path, mem)
        with open(os.path.join(run_dir, "qemu.cmd"), "w") as f:
            f.write(shlex.join(cmd) + "\n")
        print(f"guest: booting ({attempt}, {len(tests)} tests, "
              f"timeout {timeout}s, logs in {os.path.relpath(run_dir)})",
              flush=True)
        start = time.monotonic()
        with open(os.path.join(run_dir, "qemu.err"), "w") as err:
            proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL,
                                    stdout=err, stderr=err)
        res_path = os.path.join(run_dir, "results.log")
        seen = 0
        timed_out = False
        console = os.path.join(run_dir, "console.log")
        kvm_dead = False
        while proc.poll() is None:
            time.sleep(1)
            seen = follow(res_path, seen)
            elapsed = time.monotonic() - start
            if attempt == "kvm" and elapsed > KVM_PROBE and \
                    os.path.getsize(console) == 0:
                # Some nested setups accept KVM and never run the guest.
                proc.kill()
                kvm_dead = True
            elif elapsed > timeout:
                proc.kill()
                timed_out = True
        proc.wait()
        follow(res_path, seen)
        with open(os.path.join(run_dir, "qemu.err")) as f:
            qerr = f.read().strip()
        if attempt == "kvm" and os.path.getsize(console) == 0 and \
                (kvm_dead or proc.returncode):
            why = qerr.splitlines()[0] if qerr else \
                f"no console output in {KVM_PROBE}s"
            print(f"guest: KVM unusable ({why}); falling back to TCG")
            continue
        break
    with open(res_path, errors="replace") as f:
        lines = f.read().splitlines()
    return lines, attempt, timed_out, time.monotonic() - start


def follow(path, seen):
    """Print result lines as they arrive."""
    try:
        with open(path, errors="replace") as f:
            f.seek(seen)
            chunk = f.read()
    except FileNotFoundError:
        return seen
    end = chunk.rfind("\n") + 1
    for line in chunk[:end].splitlines():
        if line.startswith("RESULT "):
            _, name, rest = (line.split(" ", 2) + [""])[:3]
            print(f"  {rest.split(' ', 1)[0]:4} {name}", flush=True)
    return seen + len(chunk[:end].encode())


def judge(tests, lines, run_dir, timed_out):
    """Combine the results channel and the kernel log into Results."""
    results = {}
    begun = None
    done = False
    for line in lines:
        parts = line.rstrip("\r").split(" ", 3)
        if parts[0] == "BEGIN" and len(parts) > 1:
            begun = parts[1]
        elif parts[0] == "RESULT" and len(parts) > 2:
            results[parts[1]] = Result(parts[1], parts[2],
                                       parts[3] if len(parts) > 3 else "")
            begun = None
        elif parts[0] == "DONE":
            done = True

    with open(os.path.join(run_dir, "console.log"), errors="replace") as f:
        console = f.read().splitlines()
    current = None
    stray = []
    splats = {}
    for i, line in enumerate(console):
        line = line.rstrip("\r")
        m = MARK.match(line)
        if m:
            current = m.group(2) if m.group(1) == "begin" else None
            continue
        if SPLAT.match(line):
            where = splats.setdefault(current, []) if current else stray
            # The first splat with its report: a CI log is all there is
            # of a rare one
            where += [line] if where else splat_report(console, i)

    out = [Result("guest/boot", "PASS" if done else "FAIL",
                  "" if done else
                  ("timed out" if timed_out else "guest died") +
                  (f" while running {begun}" if begun else
                   " before the tests ended"))]
    out += kunit(console)
    for test in tests:
        name = test[0]
        r = results.get(name)
        if r is None:
            r = Result(name, "FAIL", "guest crashed or timed out during it"
                       if name == begun else "never ran")
        if r.status == "SKIP" and no_skip(test):
            r = Result(name, "FAIL", "skipped, and its list line says "
                       f"{test[2]} (a skip is a failure): {r.reason}")
        if name in splats:
            r = Result(name, "FAIL", "kernel splat: " +
                       splats[name][0].split("] ", 1)[-1])
        out.append(r)
    out.append(Result("guest/kernel-log", "FAIL" if stray else "PASS",
                      ("splat outside any test: " +
                       stray[0].split("] ", 1)[-1]) if stray else ""))
    return out, splats, stray


def splat_report(console, i, most=60):
    """The splat at console[i] and the lines of its report that follow."""
    out = []
    for line in console[i:i + most]:
        line = line.rstrip("\r")
        out.append(line)
        if out[1:] and ("---[ end trace" in line or
                        re.search(r"\] ={20,}$", line)):
            break
    return out


def kunit(console):
    """One Result per top-level KUnit suite in the boot log's KTAP."""
    out = []
    failed_cases = []
    for line in console:
        line = line.rstrip("\r")
        m = KTAP_CASE.match(line)
        if m and m.group(1) == "not ok":
            failed_cases.append(m.group(2))
            continue
        m = KTAP_TOP.match(line)
        if not m:
            continue
        status, name, rest = m.groups()
        if "# SKIP" in rest:
            out.append(Result(f"kunit/{name}", "SKIP",
                              rest.split("# SKIP", 1)[1]))
        elif status == "ok":
            out.append(Result(f"kunit/{name}", "PASS"))
        else:
            out.append(Result(f"kunit/{name}", "FAIL",
                              "cases failed: " + ", ".join(failed_cases)))
        failed_cases = []
    if not any("KTAP version" in line or "TAP version" in line
               for line in console):
        out.append(Result("kunit/boot-log", "FAIL", "no KTAP output at boot"))
    return out


def show_failures(results, run_dir, splats, stray):
    """For each failure, the test's own output and the kernel's splat."""
    try:
        with open(os.path.join(run_dir, "output.log"), errors="replace") as f:
            output = f.read()
    except FileNotFoundError:
        output = ""
    for r in results:
        if r.status != "FAIL":
            continue
        print(f"\n----- {r.name}: {r.reason}")
        m = re.search(rf"===== BEGIN {re.escape(r.name)}\n(.*?)"
                      rf"(?:===== END {re.escape(r.name)}.*|\Z)",
                      output.replace("\r", ""), re.S)
        if m:
            body = m.group(1).splitlines()
            for line in body[-40:]:
                print(f"  | {line}")
        for line in (splats.get(r.name) or
                     (stray if r.name == "guest/kernel-log" else []))[:80]:
            print(f"  ! {line}")
    if any(r.status == "FAIL" for r in results):
        print(f"\nfull logs: {os.path.relpath(run_dir)}/"
              "{console,output,results}.log")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("lists", nargs="+")
    ap.add_argument("--only", action="append", default=[])
    ap.add_argument("--timeout", type=int, default=0)
    ap.add_argument("--run-dir", default=os.path.join(BUILD, "guest", "run"))
    ap.add_argument("--mem", default=os.environ.get("GUEST_MEM", "4G"))
    args = ap.parse_args()
    tests = [t for t in read_list(args.lists, args.only) if t[2] != "skip"]
    timeout = args.timeout or run_timeout(tests)
    if os.path.isdir(args.run_dir):
        shutil.rmtree(args.run_dir)
    lines, acc, timed_out, secs = boot(tests, args.run_dir, timeout,
                                       args.mem)
    results, splats, stray = judge(tests, lines, args.run_dir, timed_out)
    print(f"guest: {acc}, {secs:.0f}s")
    return summarize(results, args.run_dir, splats, stray)


def summarize(results, run_dir, splats, stray, more_runs=()):
    """Print every result, the failures' details and the closing line;
    return the exit status.  more_runs: (results, run_dir, splats, stray)
    of further guests whose results are among @results."""
    for r in results:
        print(f"  {r}")
    runs = [(results, run_dir, splats, stray), *more_runs]
    others = {id(r) for run in more_runs for r in run[0]}
    for i, (res, rdir, spl, st) in enumerate(runs):
        if rdir:
            show_failures([r for r in res if i or id(r) not in others],
                          rdir, spl, st)
    npass = sum(r.status == "PASS" for r in results)
    nfail = sum(r.status == "FAIL" for r in results)
    nskip = sum(r.status == "SKIP" for r in results)
    print(f"\n{npass} passed, {nfail} failed, {nskip} skipped")
    return 1 if nfail else 0


if __name__ == "__main__":
    sys.exit(main())
