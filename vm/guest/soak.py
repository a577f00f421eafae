"""The soak, guest side: a verifying writer on a live device while faults are injected at random
moments and at random protocol steps, every acknowledged write checked after each fault.

    python3 /hbl/vm/guest/soak.py --dir /out/soak --seed S --faults N [--kinds K,K...]
    python3 /hbl/vm/guest/soak.py --dir /out/soak --resume        (after a power cut or the host's end)

The device: /dev/mapper/hs over two members, each a dm-linear device over a disk (soak0 over the
NVMe, soak1 over the HDD-like one), so that a member fault is a table swapped under a member
while the live device runs on.  The writer is blockcheck.py (soak_writer.py: 4 threads, every acknowledged
write logged in DIR/ck.log, reads checked while it runs).  The faults, KINDS:

  kill      the controller SIGKILLed at a random protocol step (HBL_CRASH_FILE) or moment
  power     the guest powered off (QEMU SIGKILLed by the host, which sees DIR/cut) with the
            controller frozen at a random step (SIGSTOP there) or at a random moment; the
            next boot rebuilds the members and brings the device up from its metadata
  errors    a member's table swapped for dm-flakey (1 s up, 1 s down), dm-error or dm-error
            on a random span, for 0.5-4 s
  stall     a member's table swapped for dm-delay (20-800 ms) for 1-5 s
  removal   a member's dm device force-removed while in use (its I/O fails at once; gone when
            the live device lets go of it), then put back

After each: the device comes up (hbl up again where the fault took the controller or left a
member marked failed), the metadata loads at a generation no older than before, the writer gets
AFTER more writes acknowledged through it and saw no bad read, and every write acknowledged
since the soak began reads back (blockcheck verify).  A member marked failed is readmitted by
clearing the mark in the metadata with the device down: hbl has no command for it.

The state (plan, counts, records) is DIR/state.json, so that a power cut loses none of it.
Progress goes to DIR/progress.log, the summary to DIR/summary.json.  Exit status 0 when every
fault was survived, 1 at the first bad outcome (the message names the fault, step and seed).
"""
import argparse
import json
import os
import random
import signal
import subprocess
import sys
import time

sys.path.insert(0, "/hbl")

from dmsetup import Delay, Device, Error, Flakey, Linear, Table, backend  # noqa: E402
from soak_writer import DEADLINE, Bad, Writer, wait  # noqa: E402

KINDS = ("kill", "power", "errors", "stall", "removal")
DISKS = ("/dev/nvme0n1", "/dev/vda")
NAME = "hs"
CRASH_FILE = "/run/hbl-soak-crash"
AREA = 180_000 / 131_072  # the writer's area over the NVMe's size (700 MiB over 512 MiB): more than the
                          # NVMe holds, so extents keep moving; from offset 0, in 4 KiB blocks
BEFORE = 30               # writes acknowledged in a fault's writer before the fault is injected
AFTER = 30                # writes acknowledged through the device after the fault
POINTS = ("after_copy", "after_hold", "after_drain", "after_recopy", "after_meta", "after_release",
          "after_switch", "after_reload")


class Soak:
    def __init__(self, d):
        self.dir = d
        self.state_path = os.path.join(d, "state.json")
        self.log = os.path.join(d, "ck.log")
        # hbl's bytecode cached in the guest's /run (the shared tree is read-only and the guest
        # writes none by default): each hbl up and down after the first imports without compiling
        self.env = dict(os.environ, HBL_STATE_DIR=os.path.join(d, "state"), HBL_CRASH_FILE=CRASH_FILE,
                        PYTHONPYCACHEPREFIX="/run/hbl-soak-pycache")
        self.env.pop("PYTHONDONTWRITEBYTECODE", None)
        self.dm = backend()
        self.writer = None        # a Writer once the state (the writer's area) is known
        self.step = "setting up"
        self.phases = {}          # the current fault's phases: name -> seconds (where its time goes)
        self.mark = time.time()

    def phase(self, name):
        """Ends the current phase of a fault's time, named name."""
        now = time.time()
        self.phases[name] = round(self.phases.get(name, 0) + now - self.mark, 2)
        self.mark = now

    # ---- plumbing ----

    def say(self, msg):
        line = "%s %s" % (time.strftime("%H:%M:%S"), msg)
        print(line, flush=True)
        with open(os.path.join(self.dir, "progress.log"), "a") as f:
            f.write(line + "\n")
            f.flush()
            os.fsync(f.fileno())

    def save(self):
        tmp = self.state_path + ".tmp"
        with open(tmp, "w") as f:
            json.dump(self.st, f, indent=1)
            f.flush()
            os.fsync(f.fileno())
        os.rename(tmp, self.state_path)

    def hbl(self, *args, env=None, check=True):
        r = subprocess.run([sys.executable, "-m", "hbl.cli"] + list(args), capture_output=True, text=True,
                           env=dict(self.env, **(env or {})), timeout=DEADLINE, cwd="/hbl")
        if check and r.returncode != 0:
            raise Bad("hbl %s failed (%d): %s" % (" ".join(args), r.returncode, (r.stderr or r.stdout).strip()[-800:]))
        return r

    def status(self):
        from hbl.live.cli import status_of
        from hbl.live.paths import Paths
        return status_of(Paths(NAME, self.env["HBL_STATE_DIR"]), NAME)

    def pid(self):
        from hbl.live.paths import Paths, controller_pid
        return controller_pid(Paths(NAME, self.env["HBL_STATE_DIR"]))

    def meta(self):
        from hbl.live.meta import Meta
        try:
            return Meta.load(os.path.join(self.env["HBL_STATE_DIR"], NAME, "meta"))
        except Exception as exc:
            raise Bad("the metadata does not load: %s" % exc) from None

    # ---- the members ----

    def member(self, d):
        return Device("soak%d" % d, self.dm)

    def sectors(self, d):
        return int(open("/sys/block/%s/size" % os.path.basename(DISKS[d])).read())

    def linear(self, d):
        return Table([Linear(self.sectors(d), DISKS[d], 0)])

    def make_members(self):
        for d in range(2):
            node = "/dev/mapper/soak%d" % d
            try:
                self.dm.info("soak%d" % d)
                continue
            except OSError:
                pass
            if os.path.exists(node):            # left by a removal: a stale node
                os.unlink(node)
            self.member(d).create(self.linear(d))

    def swap(self, d, table):
        m = self.member(d)
        m.load(table)
        m.resume()

    def verify(self):
        """Every acknowledged write read back; one that does not is a lost write (counted)."""
        v = self.writer.verify(compact=True)
        if v["bad"]:
            self.st["lost"] += v["bad"]
            raise Bad("%d acknowledged writes of %d did not read back: %s" % (v["bad"], v["checked"], v["errors"][:3]))
        return v

    # ---- the soak ----

    def setup(self, a):
        for name in sorted(os.listdir("/dev/mapper"), key=lambda n: "." in n):
            if name != "control":
                subprocess.run(["dmsetup", "remove", "--force", name], capture_output=True)
        for p in DISKS:
            with open(p, "r+b", buffering=0) as f:
                f.write(bytes(1 << 20))
                os.fsync(f.fileno())
        subprocess.run(["rm", "-rf", self.env["HBL_STATE_DIR"], self.log], check=True)
        kinds = a.kinds.split(",")
        plan = [k for k in kinds for _ in range(a.faults)]
        random.Random(a.seed).shuffle(plan)
        blocks = int(self.sectors(0) // 8 * AREA)
        if blocks * 4096 > (self.sectors(0) + self.sectors(1)) * 512 * 0.9:
            raise Bad("the writer's area (%d MiB, %.2f times the NVMe) needs a larger HDD-like disk" % (
                blocks >> 8, AREA))
        self.st = {"seed": a.seed, "faults_per_kind": a.faults, "kinds": kinds, "plan": plan, "next": 0,
                   "blocks": blocks,
                   "counts": {k: 0 for k in kinds}, "lost": 0, "unrecoverable": 0, "records": [],
                   "boots": 1, "pending": None, "started": time.time(), "failure": None}
        self.writer = Writer("/dev/mapper/" + NAME, self.log, blocks)
        self.make_members()
        self.hbl("up", NAME, "--dev", "/dev/mapper/soak0", "--dev", "/dev/mapper/soak1", "--policy", "lru",
                 "--interval", "0.3", "--copy-rate", "64M")
        self.save()
        self.say("soak: seed %d, %d faults of each of %s (%d in all)" % (a.seed, a.faults, ", ".join(kinds), len(plan)))

    def resume(self):
        """A boot after the last one's power went: a cut asked for (a power fault) or the host's
        soak ended (QEMU with it) in the middle of a fault."""
        try:
            self.st = json.load(open(self.state_path))
        except FileNotFoundError:
            raise Bad("no %s: the soak ended before its first fault; start a new one" % self.state_path) from None
        self.st["boots"] += 1
        self.writer = Writer("/dev/mapper/" + NAME, self.log, self.st["blocks"])
        self.writer.end_log()
        p = self.st["pending"]
        self.make_members()
        if p:
            self.say("boot %d after the power cut of fault #%d (%s)" % (self.st["boots"], p["index"], p["step"]))
            t0 = self.mark = time.time()
            self.phases = dict(p.get("phases", {}), reboot=round(t0 - p.get("cut_asked", t0), 2))
            try:
                self.recover(p["index"], "power", p["step"], p["generation"], p["t0"], restart=True)
            except Bad as exc:
                self.fail(p["index"], "power", p["step"], exc)
            self.say("  up and verified %.1f s after the boot's start" % (time.time() - t0))
            self.st["pending"] = None
            self.save()
        elif self.st["next"] < len(self.st["plan"]) and not self.st["failure"]:
            try:
                self.interrupted(self.st["next"])
            except Bad as exc:
                self.fail(self.st["next"], "interruption", "boot %d" % self.st["boots"], exc)

    def interrupted(self, i):
        """The host's soak ended during fault #i, and the guest's power with it (a power loss at
        a moment nobody chose): the device brought up from its metadata (a member a member fault
        left marked failed readmitted first) and checked as after a power fault; fault #i then
        runs from its start, and this goes in the state's "interruptions", not in any kind's count."""
        t0 = self.mark = time.time()
        self.phases = {}
        self.say("boot %d: the host's soak ended during fault #%d (%s); bringing the device up from its metadata" % (
            self.st["boots"], i, self.st["plan"][i]))
        marked = self.readmit()
        gen0 = max([r["generation"] for r in self.st["records"]], default=0)
        m, v, _, _, up_s = self.back_up("interrupted", gen0, True, self.st["seed"] * 1000 + 900 + i)
        self.st.setdefault("interruptions", []).append(
            {"during": i, "seconds": round(time.time() - t0, 1), "blocks_verified": v["checked"],
             "member_marked_failed": marked, "generation": m.generation, "phases": self.phases})
        self.save()
        self.say("  up and verified: %d blocks, generation %d, %.1f s; fault #%d runs again" % (
            v["checked"], m.generation, time.time() - t0, i))

    def run(self):
        while self.st["next"] < len(self.st["plan"]):
            i = self.st["next"]
            kind = self.st["plan"][i]
            self.step = "before the fault"
            try:
                self.fault(i, kind)
            except Bad as exc:
                self.fail(i, kind, self.step, exc)
        self.hbl("down", NAME)
        self.summary()

    def fail(self, i, kind, step, exc):
        self.st["unrecoverable"] += 0 if "did not read back" in str(exc) else 1
        msg = "SOAK FAILED: fault #%d (%s at %s), seed %d: %s" % (i, kind, step, self.st["seed"], exc)
        self.st["failure"] = msg
        self.save()
        self.say(msg)
        print(msg, file=sys.stderr)
        self.summary()
        sys.exit(1)

    def summary(self):
        recs = self.st["records"]
        by = {}
        for r in recs:
            by.setdefault(r["kind"], []).append(r["seconds"])
        out = {"seed": self.st["seed"], "faults": self.st["counts"], "lost_writes": self.st["lost"],
               "unrecoverable": self.st["unrecoverable"], "boots": self.st["boots"],
               "acknowledged_writes": self.writer.acknowledged(),
               "seconds_per_fault": {k: round(sum(v) / len(v), 1) for k, v in by.items()},
               "seconds": round(time.time() - self.st["started"], 1), "failure": self.st["failure"],
               "interruptions": self.st.get("interruptions", []), "records": recs}
        with open(os.path.join(self.dir, "summary.json"), "w") as f:
            json.dump(out, f, indent=1)
        self.say("soak: %s; %d lost writes, %d unrecoverable, %d acknowledged writes, %d boots, %.0f s" % (
            ", ".join("%d %s" % (n, k) for k, n in self.st["counts"].items()), out["lost_writes"],
            out["unrecoverable"], out["acknowledged_writes"], out["boots"], out["seconds"]))

    def fault(self, i, kind):
        """Fault #i: a writer, the fault injected while it writes and the controller migrates,
        then recover() checks what must hold (self.step: where it was injected)."""
        rng = random.Random(self.st["seed"] * 1_000_003 + i)
        t0 = self.mark = time.time()
        self.phases = {}
        if not self.pid():
            raise Bad("the controller is not running before the fault")
        gen0 = self.meta().generation
        b0 = self.status().get("batches", 0)
        self.writer.start(self.st["seed"] * 1000 + i)
        n0 = self.writer.acknowledged()
        wait("%d writes and a migration batch before the fault" % BEFORE,
             lambda: self.writer.running() and self.writer.acknowledged() - n0 >= BEFORE and
             self.status().get("batches", 0) > b0)
        self.phase("before")
        d = rng.randrange(2)
        inject = {"kill": self.inject_kill, "power": self.inject_power, "errors": self.inject_member,
                  "stall": self.inject_member, "removal": self.inject_removal}[kind]
        step, restart = inject(rng, i, kind, d, gen0, t0)
        self.step = step
        self.phase("inject")
        self.recover(i, kind, step, gen0, t0, restart)

    def inject_kill(self, rng, i, kind, d, gen0, t0):
        """The controller SIGKILLed at a protocol step or a random moment: (step, restart)."""
        pid = self.pid()
        if rng.random() < 0.5:
            point = rng.choice(POINTS)
            step = "step %s" % point
            self.step = step
            with open(CRASH_FILE, "w") as f:
                f.write(point + " kill\n")
            wait("the controller to reach %s" % point, lambda: self.writer.running() and not self.pid())
        else:
            delay = rng.uniform(0, 3)
            step = self.step = "t+%.2fs" % delay
            time.sleep(delay)
            os.kill(pid, signal.SIGKILL)
            wait("the controller to die", lambda: not self.pid())
        return step, True

    def inject_power(self, rng, i, kind, d, gen0, t0):
        """The power cut: the controller stopped at a protocol step or left running, the host
        asked to kill QEMU; never returns (the next boot's resume() recovers the fault)."""
        if rng.random() < 0.5:
            point = rng.choice(POINTS)
            step = "step %s" % point
            self.step = step
            pid = self.pid()
            with open(CRASH_FILE, "w") as f:
                f.write(point + " stop\n")
            wait("the controller to stop at %s" % point,
                 lambda: self.writer.running() and stopped(pid))
        else:
            delay = rng.uniform(0, 3)
            step = self.step = "t+%.2fs" % delay
            time.sleep(delay)
        self.phase("inject")
        self.st["pending"] = {"index": i, "step": step, "generation": gen0, "t0": t0,
                              "phases": self.phases, "cut_asked": time.time()}
        self.save()
        self.say("fault #%d %s at %s: asking the host to cut the power" % (i, kind, step))
        with open(os.path.join(self.dir, "cut.tmp"), "w") as f:      # whole when the host sees it
            f.write("%d %s\n" % (i, step))
        os.rename(os.path.join(self.dir, "cut.tmp"), os.path.join(self.dir, "cut"))
        time.sleep(4 * DEADLINE)
        raise Bad("the host did not cut the power within %d s" % (4 * DEADLINE))

    def inject_member(self, rng, i, kind, d, gen0, t0):
        """Member d returning I/O errors (dm-flakey, dm-error, an error span) or stalling (dm-delay)
        for a while: (step, restart)."""
        size = self.sectors(d)
        dev = DISKS[d]
        dur = rng.uniform(0.5, 4) if kind == "errors" else rng.uniform(1, 5)
        if kind == "stall":
            ms = rng.choice([20, 100, 300, 800])
            how = rng.choice(["all", "writes"])
            table = Table([Delay(size, dev, 0, ms=ms if how == "all" else 0, write_ms=ms if how == "writes" else None)])
            what = "dm-delay %d ms (%s)" % (ms, how)
        else:
            how = rng.choice(["flakey", "error", "span"])
            if how == "flakey":
                table = Table([Flakey(size, dev, 0, up_s=1, down_s=1)])
                what = "dm-flakey 1 s up / 1 s down"
            elif how == "error":
                table = Table([Error(size)])
                what = "dm-error"
            else:
                # a span (4 KiB to 8 MiB) from the start of a slot of the writer's region on this
                # member, so that the errors hit data being written, read and moved
                from hbl.live.layout import slot_offset
                m = self.meta()
                ext = [e for e in range(self.st["blocks"] * 4096 // m.extent_bytes) if m.dev[e] == d]
                e = rng.choice(ext) if ext else 0
                start = slot_offset(m, d, m.slot[e]) // 512 if ext else rng.randrange(2048, size - 2048) // 8 * 8
                n = min(size - start, rng.randrange(1, 2048) * 8)
                parts = [Linear(start, dev, 0), Error(n)] + (
                    [Linear(size - start - n, dev, start + n)] if start + n < size else [])
                table = Table(parts)
                what = "dm-error on sectors %d-%d" % (start, start + n)
        delay = rng.uniform(0, 2)
        step = "t+%.2fs, member %d, %s for %.1f s" % (delay, d, what, dur)
        time.sleep(delay)
        self.swap(d, table)
        time.sleep(dur)
        self.writer.running()
        self.swap(d, self.linear(d))
        # (errors: the device is brought down and up again even when nothing was marked
        # failed yet: a health read may still catch the fault after it is over)
        return step, kind == "errors"

    def inject_removal(self, rng, i, kind, d, gen0, t0):
        """Member d removed for a while (put back by back_up()): (step, restart)."""
        delay = rng.uniform(0, 2)
        dur = rng.uniform(0.5, 3)
        step = "t+%.2fs, member %d removed for %.1f s" % (delay, d, dur)
        time.sleep(delay)
        r = subprocess.run(["dmsetup", "remove", "--force", "--deferred", "soak%d" % d], capture_output=True,
                           text=True)
        if r.returncode != 0:
            raise Bad("dmsetup remove --force --deferred soak%d: %s" % (d, r.stderr.strip()))
        time.sleep(dur)
        return step, True

    def recover(self, i, kind, step, gen0, t0, restart):
        """After fault #i: the device up again, its metadata recovered, writes acknowledged
        through it, every acknowledged write read back; counts and a record."""
        m, v, io_errors, marked, up_s = self.back_up(kind, gen0, restart, self.st["seed"] * 1000 + 500 + i)
        self.st["counts"][kind] += 1
        self.st["next"] = i + 1
        rec = {"index": i, "kind": kind, "step": step, "seconds": round(time.time() - t0, 1),
               "blocks_verified": v["checked"], "io_errors": io_errors, "member_marked_failed": marked,
               "up_seconds": round(up_s, 1), "generation": m.generation, "phases": self.phases}
        self.st["records"].append(rec)
        self.save()
        self.say("fault #%d %-7s at %s: %d blocks verified, %d I/O errors%s, generation %d, %.1f s (%s)" % (
            i, kind, step, v["checked"], io_errors, ", member marked failed (readmitted)" if marked else "",
            m.generation, rec["seconds"], ", ".join("%s %.1f" % kv for kv in self.phases.items())))

    def back_up(self, kind, gen0, restart, seed):
        """The device brought up again where the fault took it down, then checked: running, not
        degraded, metadata no older than generation gen0, AFTER writes acknowledged through it
        (writer seed `seed` if none runs), no I/O error unless the fault makes them, every
        acknowledged write read back.  (metadata, verify report, I/O errors, whether a member
        was marked failed, seconds the hbl up took)"""
        rep, marked, up_s = {}, False, 0.0
        if restart and kind in ("errors", "removal"):
            rep = self.writer.stop()
            self.hbl("down", NAME)
            self.make_members()                         # a removed member put back
            marked = self.readmit()
            self.phase("down")
        if restart:
            if self.pid() is None:
                t = time.time()
                self.hbl("up", NAME)
                up_s = time.time() - t
                self.phase("up")
        if self.pid() is None:
            raise Bad("the controller is not running after the fault")
        st = self.status()
        if st.get("state") != "running":
            raise Bad("the device is %s, not running" % st.get("state"))
        if st.get("degraded"):
            raise Bad("the device is degraded after the fault: %s" % st["degraded"])
        m = self.meta()
        if m.generation < gen0:
            raise Bad("the metadata went back from generation %d to %d" % (gen0, m.generation))
        if not self.writer.active:
            self.writer.start(seed)
        self.writer.through(AFTER)
        rep2 = self.writer.stop()
        self.phase("after")
        io_errors = rep.get("io_errors", 0) + rep2["io_errors"]
        if io_errors and kind not in ("errors", "removal"):
            raise Bad("%d I/O errors through the device after a fault that should cause none" % io_errors)
        v = self.verify()
        self.phase("verify")
        return m, v, io_errors, marked, up_s

    def readmit(self):
        """Members marked failed are readmitted with the device down (the fault is over); whether
        one was."""
        from hbl.live.meta import Meta
        path = os.path.join(self.env["HBL_STATE_DIR"], NAME, "meta")
        m = Meta.load(path)
        marked = any(x.get("failed") for x in m.members)
        if marked:
            for x in m.members:
                x.pop("failed", None)
            m.save(path)
        return marked


def stopped(pid):
    try:
        return open("/proc/%d/stat" % pid).read().rsplit(")", 1)[1].split()[0] == "T"
    except (OSError, IndexError):
        return False


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--dir", required=True)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--faults", type=int, default=5, help="faults of each kind")
    p.add_argument("--kinds", default=",".join(KINDS))
    p.add_argument("--resume", action="store_true",
                   help="after a power cut or the host's end: go on from DIR/state.json")
    a = p.parse_args()
    os.makedirs(a.dir, exist_ok=True)
    s = Soak(a.dir)
    try:
        s.resume() if a.resume else s.setup(a)
    except Bad as exc:
        print("SOAK FAILED: %s: %s" % ("resuming" if a.resume else "setting up, seed %d" % a.seed, exc),
              file=sys.stderr)
        return 1
    s.run()
    return 0


if __name__ == "__main__":
    sys.exit(main())
