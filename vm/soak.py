"""The soak, host side (`hbl vm soak`): boots the guest that runs vm/guest/soak.py, cuts its
power when it asks (QEMU SIGKILLed, the disks kept), boots it again on the same disks to go
on, until the guest has been through every fault or one went wrong.

The guest asks for a power cut by writing /out/soak/cut; run()'s cut callback sees it within
0.1 s.  The guest's progress (/out/soak/progress.log, on the 9p share) is printed as it grows.

Everything a soak needs to go on lives in its out directory: the disks (OUT/disks), the guest's
plan and records (OUT/soak/state.json) and the host's own counts (OUT/soak/host.json), so that
a soak whose host process ended (a signal, a reboot, a timeout) goes on with
`hbl vm soak --resume OUT`: the guest, which lost its power with it, brings the device up from
its metadata, checks every acknowledged write and runs the interrupted fault again.
"""
import json
import os
import shutil
import tempfile
import time

from hbl.errors import HblError
from hbl.live.paths import write_json_atomic
from hbl.vm import run as vmrun, tree

KINDS = ("kill", "power", "errors", "stall", "removal")


class Progress:
    """Prints the lines the guest appends to its progress log (from byte `pos` on)."""

    def __init__(self, path, say, pos=0):
        self.path, self.say, self.pos = path, say, pos

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


def begin(out_dir, seed, faults, kinds, disks):
    """A new soak in out_dir (a new temporary directory if None): what an earlier one left there
    removed, the host's state written; (out_dir, host state)."""
    bad = [k for k in kinds if k not in KINDS]
    if bad:
        raise HblError("--kinds: %s unknown (kinds: %s)" % (", ".join(bad), ", ".join(KINDS)))
    out_dir = os.path.abspath(out_dir or tempfile.mkdtemp(prefix="hbl-soak-"))
    for d in ("soak", "disks"):
        shutil.rmtree(os.path.join(out_dir, d), ignore_errors=True)
    os.makedirs(os.path.join(out_dir, "soak"))
    os.makedirs(os.path.join(out_dir, "disks"))
    host = {"seed": seed, "faults": faults, "kinds": list(kinds), "disks": [vars(d) for d in disks],
            "boots": 0, "power_cuts": [], "boot_seconds": [], "host_seconds": 0.0, "sessions": 0}
    return out_dir, host


def reopen(out_dir):
    """The host state of the soak in out_dir, to go on with it; an HblError when there is none
    to go on with."""
    out_dir = os.path.abspath(out_dir)
    path = os.path.join(out_dir, "soak", "host.json")
    try:
        host = json.load(open(path))
    except FileNotFoundError:
        raise HblError("--resume %s: no soak there (no %s)" % (out_dir, path)) from None
    except ValueError as exc:
        raise HblError("--resume %s: %s is damaged: %s" % (out_dir, path, exc)) from None
    if os.path.exists(os.path.join(out_dir, "soak", "summary.json")):
        raise HblError("--resume %s: that soak has ended (its summary is %s/soak/summary.json)" % (out_dir, out_dir))
    if not os.path.exists(os.path.join(out_dir, "soak", "state.json")):
        raise HblError("--resume %s: the soak ended before its first fault (no soak/state.json): start a new one"
                       % out_dir)
    missing = [p for p in (os.path.join(out_dir, "disks", d["name"] + ".img") for d in host["disks"])
               if not os.path.exists(p)]
    if missing:
        raise HblError("--resume %s: its disks are gone (%s): the soak cannot go on" % (out_dir, ", ".join(missing)))
    return out_dir, host


def soak(images, seed, faults, kinds=KINDS, out_dir=None, disks=None, timeout=3600, say=print, resume=False):
    """Runs the soak, or with resume goes on with the one in out_dir (seed, faults, kinds and
    disks are then its own); returns its summary (the guest's summary.json, with the host's
    figures over every session).  A bad outcome is in the summary's "failure"; a guest that did
    not finish raises HblError (saying how to go on)."""
    if resume:
        out_dir, host = reopen(out_dir)
        disks = [vmrun.Disk(**d) for d in host["disks"]]
    else:
        out_dir, host = begin(out_dir, seed, faults, kinds, vmrun.default_disks() if disks is None else disks)
    soak_dir, disk_dir = os.path.join(out_dir, "soak"), os.path.join(out_dir, "disks")
    host_path = os.path.join(soak_dir, "host.json")
    marker = os.path.join(soak_dir, "cut")
    log = os.path.join(soak_dir, "progress.log")
    progress = Progress(log, say, os.path.getsize(log) if resume and os.path.exists(log) else 0)
    script = tree.guest_path("vm", "guest", "soak.py")
    resume_cmd = "python3 %s --dir /out/soak --resume" % script
    cmd = resume_cmd if resume else "python3 %s --dir /out/soak --seed %d --faults %d --kinds %s" % (
        script, host["seed"], host["faults"], ",".join(host["kinds"]))
    t0, spent = time.time(), host["host_seconds"]
    host["sessions"] += 1

    def save_host():
        host["host_seconds"] = round(spent + time.time() - t0, 1)
        write_json_atomic(host_path, host)

    def note_cut():
        host["power_cuts"].append(open(marker).read().strip())
        os.unlink(marker)

    def cut():
        progress()
        return os.path.exists(marker)
    if resume and os.path.exists(marker):       # asked for, and the host ended before or after cutting
        note_cut()
    while True:
        host["boots"] += 1
        save_host()
        try:
            r = vmrun.run(cmd, images, disks=disks, disk_dir=disk_dir, out_dir=out_dir, timeout=timeout, cut=cut)
        except HblError as exc:
            save_host()
            raise HblError("%s; the soak can go on: hbl vm soak --resume %s" % (exc, out_dir)) from None
        progress()
        host["boot_seconds"].append(r.boot_seconds)
        if not r.cut:
            break
        note_cut()
        cmd = resume_cmd
    save_host()
    path = os.path.join(soak_dir, "summary.json")
    if not os.path.exists(path):
        raise HblError("the soak's guest ended (exit status %s) without a summary: %s; its output is in %s" % (
            r.rc, (r.stderr.strip().splitlines() or ["no message"])[-1][-500:], out_dir))
    s = json.load(open(path))
    bs = host["boot_seconds"]
    s.update({"host_seconds": host["host_seconds"], "host_sessions": host["sessions"], "guest_boots": host["boots"],
              "power_cuts": host["power_cuts"], "boot_seconds_mean": round(sum(bs) / len(bs), 1),
              "exit_status": r.rc, "out_dir": out_dir,
              "replay": "hbl vm soak --seed %d --faults %d --kinds %s" % (host["seed"], host["faults"],
                                                                       ",".join(host["kinds"]))})
    if r.rc != 0 and not s.get("failure"):
        s["failure"] = "the soak's guest exited with status %d: %s" % (r.rc, r.stderr.strip()[-500:])
    if not s.get("failure"):
        shutil.rmtree(disk_dir, ignore_errors=True)     # kept after a failure: what the device held
    return s
