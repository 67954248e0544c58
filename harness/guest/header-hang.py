#!/usr/bin/env python3
"""perf record's header while another task's file does not answer.

A task holds a file of a FUSE server of this script open (its stdin);
then the server stops answering, as a hung NFS server would.  perf
record -a --synth=no -- true reads nothing of the tasks in /proc, so
nothing in it has a reason to look at that file: asserted, it ends with
exit 0 within a bound far above its run time, and no request of perf
reached the server.  perf 7.3 without perf patch 0032 stats every file
descriptor of every process when it writes the header (to find the DRM
PMUs for the PMU mappings and caps), so it waits on the server, for as
long as the file system hangs.

  header-hang.py PERF
"""

import importlib.util
import os
import struct
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
spec = importlib.util.spec_from_file_location("namer_hang", os.path.join(HERE, "namer-hang.py"))
namer_hang = importlib.util.module_from_spec(spec)
spec.loader.exec_module(namer_hang)
WAIT = namer_hang.WAIT


class Server(namer_hang.Server):
    """The same file, with attributes valid for no time: each stat() of it
    asks the server"""

    def request(self, opcode, unique, nodeid, arg):
        if opcode == namer_hang.FUSE_LOOKUP and nodeid == namer_hang.ROOT and \
           arg.split(b"\0")[0] == namer_hang.NAME:
            self.reply(unique, 0, struct.pack("<4Q2I", namer_hang.INO, 1, 0, 0, 0, 0) +
                       self.attr(namer_hang.INO))
        elif opcode == namer_hang.FUSE_GETATTR:
            self.reply(unique, 0, struct.pack("<Q2I", 0, 0, 0) + self.attr(nodeid))
        else:
            super().request(opcode, unique, nodeid, arg)


def main():
    perf = os.path.abspath(sys.argv[1])
    tmp = tempfile.mkdtemp(prefix="header-hang.")
    mnt = os.path.join(tmp, "mnt")
    data = os.path.join(tmp, "perf.data")
    os.mkdir(mnt)
    try:
        server = Server(b"\0" * 4096, mnt)
    except OSError as e:
        print(f"FAIL: {e}")
        return 1
    held_file = os.path.join(mnt, "perf")
    task = rec = None
    failed = []
    try:
        with open(held_file, "rb") as f:
            task = subprocess.Popen(["sleep", "600"], stdin=f)
        server.hold()
        rec = subprocess.Popen([perf, "record", "-q", "-a", "--synth=no", "-e", "cpu-clock",
                                "-o", data, "--", "true"],
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        try:
            _, err = rec.communicate(timeout=WAIT)
            if rec.returncode:
                failed.append(f"perf record exited {rec.returncode}: {err[-2000:]}")
        except subprocess.TimeoutExpired:
            failed.append(f"perf record did not end within {WAIT} s")
            for tid in os.listdir(f"/proc/{rec.pid}/task"):
                try:
                    with open(f"/proc/{rec.pid}/task/{tid}/stack") as f:
                        print(f"perf record thread {tid} stack: {f.read()}")
                except OSError:
                    pass
        # What the server held meanwhile: nothing but perf runs, and the
        # task that holds the file asks nothing of it
        server.wait_held(lambda op, tid: False, 1)
        asked = [(o, t) for o, t in server.held if t != task.pid]
        print(f"requests held (opcode, tid): {asked[:10]}")
        if asked:
            failed.append(f"perf record (pid {rec.pid}) asked the server {len(asked)} times")
    except OSError as e:
        failed.append(str(e))
    finally:
        server.close()
        subprocess.run(["umount", "-l", mnt], check=False)
        if task:
            task.kill()
            task.wait()
        if rec and rec.poll() is None:
            rec.kill()
            rec.wait()
        subprocess.run(["rm", "-rf", tmp], check=False)
    for f in failed:
        print(f"FAIL: {f}")
    if failed:
        return 1
    print("PASS: perf record -a --synth=no asks nothing of another task's files")
    return 0


if __name__ == "__main__":
    sys.exit(main())
