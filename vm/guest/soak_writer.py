"""The soak's verifying writer: blockcheck.py writing to the live device with 4 threads, every
acknowledged write logged (one line each), reads checked while it runs, and the whole log read
back by a verify after each fault.  vm/guest/soak.py drives it; so does bio_members.py.
"""
import importlib.util
import json
import os
import signal
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
BLOCKCHECK = os.path.join(HERE, "tests", "blockcheck.py")


def _blockcheck():
    spec = importlib.util.spec_from_file_location("blockcheck", BLOCKCHECK)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


HEADER = _blockcheck().HEADER.encode()      # a compacted log's first line: the writes its lines stand for
DEADLINE = 300            # seconds any wait may take: stuck, not slow


class Bad(Exception):
    """A bad outcome: a lost write, a device that does not come up, metadata that does not load."""


def wait(what, probe, deadline=DEADLINE, every=0.2):
    """probe()'s first true value, asked every `every` s; Bad after `deadline` s (stuck, not slow)."""
    t0 = time.time()
    while True:
        got = probe()
        if got:
            return got
        if time.time() - t0 > deadline:
            raise Bad("waited %.0f s for %s" % (time.time() - t0, what))
        time.sleep(every)


class Writer:
    """blockcheck on `device` over its first `blocks` 4 KiB blocks, acknowledged writes in `log`."""

    def __init__(self, device, log, blocks):
        self.device, self.log, self.blocks = device, log, blocks
        self.proc = None
        self.seen = None          # (the log's inode, bytes read, writes counted in them)

    @property
    def active(self):
        return self.proc is not None

    def acknowledged(self):
        """Writes acknowledged since the log began (across writers, boots and compactions): read
        on from where the last call stopped, from the start when the log was replaced (a
        compacting verify) or cut short, so that a wait that asks every 0.2 s reads only the new
        lines, not a log of a thousand faults."""
        try:
            f = open(self.log, "rb")
        except FileNotFoundError:
            self.seen = None
            return 0
        with f:
            st = os.fstat(f.fileno())
            ino, pos, n = self.seen if self.seen and self.seen[0] == st.st_ino and self.seen[1] <= st.st_size \
                else (st.st_ino, 0, 0)
            f.seek(pos)
            new = f.read()
        done = new.rfind(b"\n") + 1            # whole lines only: the rest is read again next time
        for line in new[:done].splitlines():
            n += int(line[len(HEADER):]) if line.startswith(HEADER) else 1
        self.seen = (ino, pos + done, n)
        return n

    def start(self, seed):
        self.proc = subprocess.Popen(
            [sys.executable, BLOCKCHECK, "run", self.device, self.log, "--blocks", str(self.blocks),
             "--offset", "0", "--seconds", str(4 * DEADLINE), "--seed", str(seed), "--threads", "4",
             "--tolerate-errors"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    def running(self):
        """True while it runs; Bad when it ended before it was stopped."""
        if self.proc.poll() is not None:
            out, err = self.proc.communicate()
            raise Bad("the writer ended (status %d) before the soak stopped it: %s %s" % (
                self.proc.returncode, out[-1000:], err[-1000:]))
        return True

    def stop(self):
        """The writer's report (a dict); a bad read during the run is a lost write."""
        w, self.proc = self.proc, None
        if w.poll() is None:
            w.send_signal(signal.SIGTERM)
        try:
            out, err = w.communicate(timeout=DEADLINE)
        except subprocess.TimeoutExpired:
            w.kill()
            out, err = w.communicate()
            raise Bad("the writer did not stop within %d s of SIGTERM (I/O stuck): %s" % (DEADLINE, err[-1000:]))
        try:
            rep = json.loads(out.strip().splitlines()[-1])
        except (ValueError, IndexError):
            raise Bad("the writer gave no report (status %d): %s" % (w.returncode, err[-1000:])) from None
        if rep["bad_reads"]:
            raise Bad("%d reads during the run returned less than was acknowledged: %s" % (
                rep["bad_reads"], rep["errors"][:3]))
        return rep

    def through(self, n):
        """Until n more writes are acknowledged through the device (it serves again)."""
        before = self.acknowledged()
        wait("%d writes acknowledged after the fault" % n,
             lambda: self.running() and self.acknowledged() - before >= n)

    def verify(self, compact=False):
        """Every acknowledged write read back: blockcheck verify's report ("bad": how many did not);
        with compact, a clean verify leaves the log as each block's last version (blockcheck
        --compact)."""
        r = subprocess.run([sys.executable, BLOCKCHECK, "verify", self.device, self.log,
                            "--blocks", str(self.blocks), "--offset", "0"] + (["--compact"] if compact else []),
                           capture_output=True, text=True, timeout=4 * DEADLINE)
        if compact:
            self.seen = None        # the log may be new: counted from its start (its inode may be an old one's)
        try:
            return json.loads(r.stdout.strip().splitlines()[-1])
        except (ValueError, IndexError):
            raise Bad("the verify could not read the device: %s" % (r.stderr.strip()[-800:])) from None

    def end_log(self):
        """Ends a line of the log that a power loss cut short, so that the next writer's first
        line is not joined to it (load_log skips a line that is not two numbers; a torn one that
        still is names a version no newer than the one acknowledged)."""
        try:
            with open(self.log, "rb+") as f:
                if f.seek(0, 2) and (f.seek(-1, 2), f.read(1))[1] != b"\n":
                    f.write(b"\n")
        except FileNotFoundError:
            pass
