"""The soak, host side (`hbl vm soak`): boots the guest that runs vm/guest/soak.py, cuts its
power when it asks (QEMU SIGKILLed, the disks kept), boots it again on the same disks to go
on, until the guest has been through every fault or one went wrong.

The guest asks for a power cut by writing /out/soak/cut; run()'s cut callback sees it within
0.1 s.  The guest's progress (/out/soak/progress.log, on the 9p share) is printed as it grows.
"""
import json
import os
import shutil
import tempfile
import time

from hbl.errors import HblError
from hbl.vm import run as vmrun, tree

KINDS = ("kill", "power", "errors", "stall", "removal")


class Progress:
    """Prints the lines the guest appends to its progress log."""

    def __init__(self, path, say):
        self.path, self.say, self.pos = path, say, 0

    def __call__(self):
        try:
            with open(self.path) as f:
                f.seek(self.pos)
                text = f.read()
        except FileNotFoundError:
            return
        done = text.rfind("\n") + 1
        for line in text[:done].splitlines():
            self.say(line)
        self.pos += len(text[:done].encode())


def soak(images, seed, faults, kinds=KINDS, out_dir=None, disks=None, timeout=3600, say=print):
    """Runs the soak; returns its summary (the guest's summary.json, with the host's figures).
    A bad outcome is in the summary's "failure"; a guest that did not finish raises HblError."""
    bad = [k for k in kinds if k not in KINDS]
    if bad:
        raise HblError("--kinds: %s unknown (kinds: %s)" % (", ".join(bad), ", ".join(KINDS)))
    out_dir = out_dir or tempfile.mkdtemp(prefix="hbl-soak-")
    soak_dir = os.path.join(out_dir, "soak")
    shutil.rmtree(soak_dir, ignore_errors=True)
    os.makedirs(soak_dir)
    disk_dir = tempfile.mkdtemp(prefix="hbl-soak-disks-")
    marker = os.path.join(soak_dir, "cut")
    progress = Progress(os.path.join(soak_dir, "progress.log"), say)
    script = tree.guest_path("vm", "guest", "soak.py")
    cmd = "python3 %s --dir /out/soak --seed %d --faults %d --kinds %s" % (script, seed, faults, ",".join(kinds))
    t0 = time.time()
    boots, cuts, boot_s = 0, [], []

    def cut():
        progress()
        return os.path.exists(marker)
    try:
        while True:
            boots += 1
            r = vmrun.run(cmd, images, disks=disks, disk_dir=disk_dir, out_dir=out_dir, timeout=timeout, cut=cut)
            progress()
            boot_s.append(r.boot_seconds)
            if not r.cut:
                break
            cuts.append(open(marker).read().strip())
            os.unlink(marker)
            cmd = "python3 %s --dir /out/soak --resume" % script
    finally:
        shutil.rmtree(disk_dir, ignore_errors=True)
    path = os.path.join(soak_dir, "summary.json")
    if not os.path.exists(path):
        raise HblError("the soak's guest ended (exit status %s) without a summary: %s; its output is in %s" % (
            r.rc, (r.stderr.strip().splitlines() or ["no message"])[-1][-500:], out_dir))
    s = json.load(open(path))
    s.update({"host_seconds": round(time.time() - t0, 1), "guest_boots": boots, "power_cuts": cuts,
              "boot_seconds_mean": round(sum(boot_s) / len(boot_s), 1), "exit_status": r.rc, "out_dir": out_dir,
              "replay": "hbl vm soak --seed %d --faults %d --kinds %s" % (seed, faults, ",".join(kinds))})
    if r.rc != 0 and not s.get("failure"):
        s["failure"] = "the soak's guest exited with status %d: %s" % (r.rc, r.stderr.strip()[-500:])
    return s
