"""hbl vm: the QEMU testbed."""
import argparse
import os
import shlex
import sys

from hbl.cmdline import print_json, whole
from hbl.errors import HblError

SOAK_FAST_MB, SOAK_SLOW_MB = 128, 256      # the soak's disks: its writer's area, and each verify, scale with the NVMe


def add_parsers(sub):
    """hbl vm build, run, test, shell and bench."""
    vm = sub.add_parser("vm", help="the QEMU testbed: emulated NVMe + HDD, device-mapper (root)",
                        description="Build (once, cached) and run a QEMU guest with an emulated NVMe drive "
                        "(/dev/nvme0n1, fast), a throttled HDD-like virtio disk (/dev/vda, 100 IOPS) and "
                        "optionally SATA-SSD-like ones (/dev/vdb, /dev/vdc); the project is at /hbl (read-only) and "
                        "/out comes back to the host.")
    vsub = vm.add_subparsers(dest="vm_command", metavar="ACTION", required=True)
    vb = vsub.add_parser("build", help="build the kernel, initramfs and root file system (cached)")
    vb.add_argument("--force", action="store_true", help="rebuild even if cached")
    vb.add_argument("--json", action="store_true",
                    help="print the images' folder, the seconds taken and whether cached as JSON")
    vr = vsub.add_parser("run", help="run a command in a fresh guest: hbl vm run -- CMD ARG... "
                         "(one argument: a shell line); it runs in /root, writable")
    vr.add_argument("cmd", nargs=argparse.REMAINDER, help="the command to run in the guest, after --")
    vt = vsub.add_parser("test", help="run the guest test suite (device-mapper mechanics)")
    vt.add_argument("pytest_args", nargs=argparse.REMAINDER, help="arguments for pytest in the guest, e.g. -k live")
    vsub.add_parser("shell", help="an interactive shell in the guest (poweroff -f to leave)")
    vbe = vsub.add_parser("bench", help="table-reload stalls and emulated device latency, inside the guest; "
                          "--live: hbl's live device against dm-cache")
    vbe.add_argument("--live", action="store_true",
                     help="hbl up with harmonia, smq and lru against the kernel's dm-cache smq, same devices and "
                          "fio workload (about 12 minutes under TCG)")
    vs = vsub.add_parser("soak", help="a verifying writer on the live device while controller kills, power cuts, "
                         "member errors, stalls and removals are injected; every acknowledged write checked after each",
                         description="Boot the guest, bring up a live device over two members (each a dm-linear "
                         "device over the NVMe and the HDD-like disk) and run a verifying writer on it while faults "
                         "are injected at random moments and random protocol steps: the controller SIGKILLed, the "
                         "power cut (QEMU killed from the host, the guest booted again on the same disks), a member "
                         "returning I/O errors (dm-flakey, dm-error) or stalling (dm-delay), a member removed. After "
                         "each: the device comes up, its metadata loads, and every acknowledged write reads back. "
                         "The first bad outcome stops the soak with a message naming the fault, its step and the "
                         "seed (--seed replays the same plan). Everything the soak needs to go on is kept in "
                         "--out (the disks, the plan, the records): a soak whose hbl process ended goes on with "
                         "--resume OUT, one soak over as many sessions as it takes.")
    vs.add_argument("--faults", type=whole(1, 100000), help="faults of each kind (default 5)")
    vs.add_argument("--seed", type=whole(0, 1 << 31), help="the plan's seed (default: from the clock, printed)")
    vs.add_argument("--kinds", help="fault kinds, comma-separated (default kill,power,errors,stall,removal)")
    vs.add_argument("--resume", metavar="OUT", help="go on with the soak in OUT (its --out) after its hbl process "
                    "ended: the guest brings the device up, checks every acknowledged write and runs the "
                    "interrupted fault again; the summary counts every fault of the soak")
    vs.add_argument("--report", metavar="OUT", help="print the figures so far of the soak in OUT (its --out) "
                    "and exit, while it runs, paused or ended: per kind the faults, seconds a fault, I/O errors, "
                    "faults at a protocol step and blocks verified; no guest boots")
    vs.add_argument("--json", action="store_true", help="print the summary (with --report: the figures) as JSON")
    vs.add_argument("--timeout", type=whole(1, 1 << 20), default=86400,
                    help="seconds a boot may run before QEMU is killed (default 86400: a boot lasts until the "
                         "next power cut, all of the soak without one)")
    for vp in (vr, vt, vsub.choices["shell"], vsub.choices["bench"], vs):
        if vp is not vs:
            vp.add_argument("--timeout", type=whole(1, 1 << 20), default=1200,
                            help="seconds before QEMU is killed (default 1200)")
        fast, slow = (SOAK_FAST_MB, SOAK_SLOW_MB) if vp is vs else (512, 1024)
        vp.add_argument("--fast-mb", type=whole(16, 1 << 20), default=fast, help="NVMe size (default %d)" % fast)
        vp.add_argument("--slow-mb", type=whole(16, 1 << 20), default=slow, help="HDD size (default %d)" % slow)
        vp.add_argument("--extra", type=whole(0, 2), default=0,
                        help="SATA-SSD-like virtio disks to add (/dev/vdb, /dev/vdc; default 0)")
        vp.add_argument("--out", help="keep the guest's /out here (default: a new temporary folder)")
        vp.add_argument("--quiet", action="store_true", help="no closing status line (soak: no progress) on stderr")
    vm.set_defaults(func=cmd_vm)


def vm_command_line(args):
    """`hbl vm run -- CMD ARG...` runs the arguments as given; a single argument is a shell line."""
    args = args[1:] if args[:1] == ["--"] else list(args)
    if not args or not "".join(args).strip():
        raise HblError("give a command: hbl vm run -- CMD [ARG...] (or one shell line in quotes)")
    return args[0] if len(args) == 1 else shlex.join(args)


def cmd_vm(a):
    import time
    from hbl.vm import build as vmbuild, run as vmrun
    if getattr(a, "report", None):
        return soak_report(a)
    for flag, path in (("--out", getattr(a, "out", None)), ("--resume", getattr(a, "resume", None))):
        if path and os.path.exists(path) and not os.path.isdir(path):    # before a build and a boot
            raise HblError("%s %s: a file, not a directory (the guest's /out comes back there)" % (flag, path))
    say = (lambda m: None) if getattr(a, "json", False) else (lambda m: print("hbl vm: " + m, file=sys.stderr))
    t0 = time.time()
    images = vmbuild.build(progress=say, force=getattr(a, "force", False))
    build_s = time.time() - t0
    if a.vm_command == "build":
        info = {"images": images.path, "seconds": build_s, "cached": build_s < 5}
        if a.json:
            print_json(info)
        else:
            print("%s (%s, %.1f s)" % (images.path, "cached" if info["cached"] else "built", build_s))
        return 0
    disks = vmrun.default_disks(a.fast_mb, a.slow_mb, a.extra)
    if a.vm_command == "soak":
        return soak(a, images, disks)
    if a.vm_command == "shell":
        return vmrun.run("", images, disks=disks, interactive=True).rc
    if a.vm_command == "run":
        cmd = vm_command_line(a.cmd)
    elif a.vm_command == "test":
        cmd = shlex.join(["python3", "-m", "pytest", "-p", "no:cacheprovider", "-rs", "/hbl/vm/guest/tests"] +
                         [x for x in a.pytest_args if x != "--"])
    elif getattr(a, "live", False):
        cmd = "python3 /hbl/vm/guest/bench_live.py"
    else:   # bench
        cmd = "python3 /hbl/vm/guest/tests/bench_stall.py && sh /hbl/vm/guest/bench_fio.sh"
    r = vmrun.run(cmd, images, disks=disks, timeout=a.timeout, out_dir=a.out)
    sys.stdout.write(r.stdout)
    sys.stderr.write(r.stderr)
    if not a.quiet:
        print("hbl vm: exit status %d, booted in %.1f s, %.1f s in all; results in %s" % (
            r.rc, r.boot_seconds, r.seconds, r.out_dir), file=sys.stderr)
    return r.rc


def soak_options_given(a):
    """The options that begin a new soak given on this command line (--resume and --report take none)."""
    return [o for o, v in (("--faults", a.faults), ("--seed", a.seed), ("--kinds", a.kinds), ("--out", a.out),
                           ("--fast-mb", a.fast_mb != SOAK_FAST_MB), ("--slow-mb", a.slow_mb != SOAK_SLOW_MB),
                           ("--extra", a.extra)) if v]


def soak_report(a):
    """hbl vm soak --report OUT: the figures so far, read from OUT; nothing else may be given."""
    from hbl.vm import soak_report as report
    given = soak_options_given(a) + (["--resume"] if a.resume else [])
    if given:
        raise HblError("--report reads a soak's figures and runs nothing: %s cannot go with it" % ", ".join(given))
    f = report.figures(*report.load(a.report))
    if a.json:
        print_json(f)
    else:
        print(report.text(f))
    return 1 if f["failure"] else 0


def soak(a, images, disks):
    import time
    from hbl.vm import soak as vmsoak
    say = (lambda m: None) if a.quiet or a.json else (lambda m: print("hbl vm soak: " + m, file=sys.stderr))
    if a.resume:
        given = soak_options_given(a)
        if given:
            raise HblError("--resume goes on with the soak as it began: %s cannot change it" % ", ".join(given))
        say("going on with the soak in %s" % a.resume)
        s = vmsoak.soak(images, None, None, out_dir=a.resume, timeout=a.timeout, say=say, resume=True)
    else:
        seed = a.seed if a.seed is not None else int(time.time()) % 100000
        faults = a.faults or 5
        kinds = [k.strip() for k in (a.kinds or ",".join(vmsoak.KINDS)).split(",") if k.strip()]
        say("seed %d (replay: hbl vm soak --seed %d --faults %d --kinds %s)" % (seed, seed, faults, ",".join(kinds)))
        s = vmsoak.soak(images, seed, faults, kinds, out_dir=a.out, disks=disks, timeout=a.timeout, say=say)
    if a.json:
        print_json(s)
    else:
        print("soak, seed %d: %s injected; %d lost writes, %d unrecoverable states; %d acknowledged writes; "
              "%d guest boots; %.0f s" % (s["seed"], ", ".join("%d %s" % (n, k) for k, n in s["faults"].items()),
                                          s["lost_writes"], s["unrecoverable"], s["acknowledged_writes"],
                                          s["guest_boots"], s["host_seconds"]))
        print("seconds per fault: " + ", ".join("%s %.1f" % kv for kv in s["seconds_per_fault"].items()))
        if s["host_sessions"] > 1:
            print("over %d sessions of hbl vm soak (--resume); %d faults interrupted by a session's end and run "
                  "again, after the device came up and every acknowledged write read back" % (
                      s["host_sessions"], len(s.get("interruptions", []))))
        print("results in " + s["out_dir"])
    if s.get("failure"):
        print("hbl vm soak: " + s["failure"], file=sys.stderr)
        return 1
    return 0
