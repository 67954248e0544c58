#!/usr/bin/env python3
"""perf record --buildid-offset while a file system does not answer.

A FUSE server of this script serves a copy of perf; a task runs the copy
(perf test -w noploop) with every page of it cached; then the server
stops answering.  perf record --buildid-offset --synth=no of that task
names the files of its records: opening the copy, its namer thread waits
for the server.  Asserted: the wait is on a thread of perf record (the
held request's tid), Ctrl-C (SIGINT) still ends the recording, perf
record warns that naming made no progress and writes its file, perf
report reads it (the copy shown by its build-ID, unnamed), and once the
server goes away perf record exits, with 0 or by re-raising the SIGINT
that stopped it (its usual way out).  Every wait has a bound far above
what it waits for; none is a measurement.

  namer-hang.py PERF
"""

import ctypes
import errno
import os
import select
import signal
import struct
import subprocess
import sys
import tempfile
import time

FUSE_LOOKUP, FUSE_FORGET, FUSE_GETATTR = 1, 2, 3
FUSE_OPEN, FUSE_READ, FUSE_RELEASE = 14, 15, 18
FUSE_FLUSH, FUSE_INIT, FUSE_INTERRUPT, FUSE_BATCH_FORGET = 25, 26, 36, 42
NO_REPLY = (FUSE_FORGET, FUSE_INTERRUPT, FUSE_BATCH_FORGET)
FOPEN_KEEP_CACHE = 1 << 1
ROOT, INO, NAME = 1, 2, b"perf"
MS_NOSUID, MS_NODEV = 2, 4
# Bounds of the waits below: what they wait for takes well under a second
WAIT = 120


class Server:
    """One file, NAME, with the bytes of image, served by a process of its
    own (this one's threads wait in subprocess while a child execs from
    the mount); hold() stops answering, and each request then held is
    reported as (opcode, tid)."""

    def __init__(self, image, mnt):
        self.image = image
        self.holding = False
        self.held = []
        rfd, wfd = os.pipe()
        self.pid = os.fork()
        if self.pid == 0:
            os.close(rfd)
            self.out = wfd
            try:
                self.child(mnt)
            finally:
                os._exit(0)
        os.close(wfd)
        self.pipe = os.fdopen(rfd, "r")
        line = self.pipe.readline().strip()
        if line != "ready":
            raise OSError(errno.EIO, f"the FUSE server: {line or 'died'}")

    def child(self, mnt):
        try:
            self.fd = os.open("/dev/fuse", os.O_RDWR | os.O_CLOEXEC)
            libc = ctypes.CDLL(None, use_errno=True)
            opts = f"fd={self.fd},rootmode=40000,user_id=0,group_id=0".encode()
            if libc.mount(b"namer_hang", mnt.encode(), b"fuse.namer_hang",
                          MS_NOSUID | MS_NODEV, opts):
                raise OSError(ctypes.get_errno(), "mount")
        except OSError as e:
            os.write(self.out, f"{e}\n".encode())
            return
        signal.signal(signal.SIGUSR1, self.on_hold)
        os.write(self.out, b"ready\n")
        self.serve()

    def on_hold(self, signum, frame):
        self.holding = True

    def attr(self, ino):
        size = 0 if ino == ROOT else len(self.image)
        mode = 0o40755 if ino == ROOT else 0o100755
        # struct fuse_attr
        return struct.pack("<6Q10I", ino, size, (size + 511) // 512, 0, 0, 0,
                           0, 0, 0, mode, 2 if ino == ROOT else 1, 0, 0, 0,
                           4096, 0)

    def reply(self, unique, err=0, data=b""):
        try:
            os.write(self.fd, struct.pack("<IiQ", 16 + len(data), -err, unique) + data)
        except OSError as e:
            # ENOENT: interrupted; ENODEV: unmounted
            if e.errno not in (errno.ENOENT, errno.ENODEV):
                raise

    def request(self, opcode, unique, nodeid, arg):
        if opcode == FUSE_INIT:
            _, minor, readahead = struct.unpack_from("<3I", arg)
            # struct fuse_init_out: major, minor, max_readahead, flags,
            # max_background, congestion_threshold, max_write, time_gran,
            # max_pages, then what this server leaves 0
            out = struct.pack("<4I2H2I2H", 7, min(minor, 31), readahead, 0,
                              16, 12, 1 << 17, 1, 32, 0)
            self.reply(unique, 0, out + bytes(64 - len(out)))
        elif opcode == FUSE_LOOKUP:
            if nodeid != ROOT or arg.split(b"\0")[0] != NAME:
                self.reply(unique, errno.ENOENT)
                return
            # struct fuse_entry_out: valid for an hour, as the attributes
            self.reply(unique, 0, struct.pack("<4Q2I", INO, 1, 3600, 3600, 0, 0) +
                       self.attr(INO))
        elif opcode == FUSE_GETATTR:
            self.reply(unique, 0, struct.pack("<Q2I", 3600, 0, 0) + self.attr(nodeid))
        elif opcode == FUSE_OPEN:
            self.reply(unique, 0, struct.pack("<Q2I", 1, FOPEN_KEEP_CACHE, 0))
        elif opcode == FUSE_READ:
            _, off, size = struct.unpack_from("<2QI", arg)
            self.reply(unique, 0, self.image[off:off + size])
        elif opcode in (FUSE_FLUSH, FUSE_RELEASE):
            self.reply(unique)
        else:
            self.reply(unique, errno.ENOSYS)

    def serve(self):
        while True:
            try:
                buf = os.read(self.fd, (1 << 17) + 4096)
            except OSError as e:
                if e.errno in (errno.EINTR, errno.EAGAIN, errno.ENOENT):
                    continue
                return  # ENODEV: the connection is gone
            length, opcode, unique, nodeid, _, _, tid = struct.unpack_from("<2I2Q3I", buf)
            if opcode in NO_REPLY:
                continue
            if self.holding:
                os.write(self.out, f"{opcode} {tid}\n".encode())
                continue
            self.request(opcode, unique, nodeid, buf[40:length])

    def hold(self):
        os.kill(self.pid, signal.SIGUSR1)

    def wait_held(self, pred, timeout):
        """The held requests that satisfy pred, once one does or at timeout"""
        end = time.monotonic() + timeout
        while not any(pred(o, t) for o, t in self.held):
            left = end - time.monotonic()
            if left <= 0 or not select.select([self.pipe], [], [], left)[0]:
                break
            line = self.pipe.readline()
            if not line:
                break
            op, tid = line.split()
            self.held.append((int(op), int(tid)))
        return [(o, t) for o, t in self.held if pred(o, t)]

    def close(self):
        # The server's end: its device closes and held requests fail
        os.kill(self.pid, signal.SIGKILL)
        os.waitpid(self.pid, 0)


def wait_for(pred, timeout):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if pred():
            return True
        time.sleep(0.1)
    return pred()


def main():
    perf = os.path.abspath(sys.argv[1])
    tmp = tempfile.mkdtemp(prefix="namer-hang.")
    mnt = os.path.join(tmp, "mnt")
    data = os.path.join(tmp, "perf.data")
    log = os.path.join(tmp, "record.log")
    os.mkdir(mnt)
    env = dict(os.environ, HOME=tmp)  # an empty build-ID cache
    with open(perf, "rb") as f:
        image = f.read()
    try:
        server = Server(image, mnt)
    except OSError as e:
        print(f"FAIL: {e}")
        return 1
    copy = os.path.join(mnt, "perf")
    work = rec = None
    failed = []
    try:
        # Every page of the copy in the page cache, kept there (KEEP_CACHE):
        # the task never asks the server for a page once it holds
        with open(copy, "rb") as f:
            if f.read() != image:
                raise OSError("the copy reads back different")
        work = subprocess.Popen([copy, "test", "-w", "noploop", "600"])
        if not wait_for(lambda: os.readlink(f"/proc/{work.pid}/exe") == copy, WAIT):
            raise OSError("the task does not run the copy")
        with open(copy, "rb") as f:
            f.read()
        server.hold()

        rec = subprocess.Popen([perf, "record", "-o", data, "--buildid-offset",
                                "--synth=no", "-e", "cpu-clock:u", "-c", "1000000",
                                "-p", str(work.pid)],
                               stdout=subprocess.DEVNULL, stderr=open(log, "w"), env=env)

        def perf_thread(op, tid):
            return op == FUSE_OPEN and os.path.exists(f"/proc/{rec.pid}/task/{tid}")
        held = server.wait_held(perf_thread, WAIT)
        if not held:
            raise OSError(f"no open() of the copy by a thread of perf record held "
                          f"(held: {server.held})")
        print(f"held: open() of the copy by thread {held[0][1]} of perf record {rec.pid}")

        rec.send_signal(signal.SIGINT)

        def captured():
            with open(log) as f:
                return "Captured and wrote" in f.read()
        if not wait_for(captured, WAIT):
            failed.append("perf record wrote no file after SIGINT")
            for tid in os.listdir(f"/proc/{rec.pid}/task"):
                for what in ("wchan", "stack"):
                    try:
                        with open(f"/proc/{rec.pid}/task/{tid}/{what}") as f:
                            print(f"perf record thread {tid} {what}: {f.read()}")
                    except OSError:
                        pass
        with open(log) as f:
            out = f.read()
        if "naming files made no progress" not in out:
            failed.append("no warning of the files left unnamed")
        print("".join(line + "\n" for line in out.splitlines()
                      if "--buildid-offset" in line or "perf record" in line), end="")
        bid = subprocess.run([perf, "buildid-list", "-i", perf], capture_output=True,
                             text=True, env=env).stdout.strip()
        rep = subprocess.run([perf, "report", "-i", data, "--stdio", "--sort", "dso"],
                             capture_output=True, text=True, env=env)
        if rep.returncode or f"[build-id:{bid}]" not in rep.stdout:
            failed.append(f"perf report: exit {rep.returncode}, copy not shown as [build-id:{bid}]")
            print(rep.stdout[-2000:], rep.stderr[-2000:])
    except OSError as e:
        failed.append(str(e))
    finally:
        server.close()
        subprocess.run(["umount", "-l", mnt], check=False)
        if work:
            work.kill()
            work.wait()
        if rec:
            try:
                # perf record ends as the signal that stopped it would
                rc = rec.wait(WAIT)
                if rc not in (0, -signal.SIGINT):
                    failed.append(f"perf record exited {rc}")
            except subprocess.TimeoutExpired:
                rec.kill()
                failed.append("perf record did not exit once the server was gone")
        subprocess.run(["rm", "-rf", tmp], check=False)
    for f in failed:
        print(f"FAIL: {f}")
    if failed:
        return 1
    print("PASS: perf record names files on a thread of its own: Ctrl-C works "
          "while a file system holds it")
    return 0


if __name__ == "__main__":
    sys.exit(main())
