"""Run a command in the QEMU testbed and bring back its exit status and output.

The guest gets an emulated NVMe drive (the fast device, /dev/nvme0n1), a
throttled virtio disk with a fixed IOPS ceiling (the HDD-like slow device,
/dev/vda; data kept), optionally one or two SATA-SSD-like virtio disks
(/dev/vdb, /dev/vdc; 5000 IOPS), the
project read-only at /hbl (a checkout, or a tree staged from an install: tree.py) and a result folder at /out, both over 9p.  QEMU
runs under TCG unless KVM is probed and works; a hard timeout always kills it,
and so does the end of the process that started it, however it ends (SIGTERM and
SIGINT unwind through run(); SIGKILL reaches QEMU through PR_SET_PDEATHSIG).
"""
import ctypes
import dataclasses
import os
import shutil
import signal
import subprocess
import tempfile
import threading
import time

from hbl.errors import HblError
from hbl.vm import build, tree


@dataclasses.dataclass
class Disk:
    name: str
    size_mb: int
    kind: str              # "nvme" or "virtio"
    iops: int = 0          # throttling.iops-total (0 = none)
    bps: int = 0           # throttling.bps-total, bytes/s (0 = none)


def default_disks(fast_mb=512, slow_mb=1024, extra=0):
    """NVMe (fast), HDD-like (slow), and up to two SATA-SSD-like disks (/dev/vdb, /dev/vdc)."""
    disks = [Disk("fast", fast_mb, "nvme"),
             Disk("slow", slow_mb, "virtio", iops=100, bps=150 << 20)]   # 7200 rpm-like ceiling
    for i in range(extra):
        disks.append(Disk("ssd%d" % (i + 1), slow_mb, "virtio", iops=5000, bps=500 << 20))
    return disks


@dataclasses.dataclass
class Result:
    rc: int
    stdout: str
    stderr: str
    out_dir: str
    log: str
    seconds: float
    boot_seconds: float
    cut: bool = False      # QEMU was killed when cut() asked (a power cut): rc is None

    @property
    def ok(self):
        return self.rc == 0


def kvm_works(images):
    """Whether -accel kvm boots this kernel here (probed once, remembered)."""
    if not os.access("/dev/kvm", os.R_OK | os.W_OK):
        return False
    marker = os.path.join(images.path, "kvm-probe")
    if os.path.exists(marker):
        return open(marker).read().strip() == "yes"
    try:
        r = run("true", images, accel="kvm", timeout=30, disks=[])
        ok = r.rc == 0
    except HblError:
        ok = False
    with open(marker, "w") as f:
        f.write("yes\n" if ok else "no\n")
    return ok


def qemu_command(images, out_dir, disks, disk_dir, accel, memory_mb, cpus, interactive, project=None):
    # the agent core is built for x86-64-v3 on AVX2 hosts (ctypes_core/build_core.py):
    # under TCG the guest CPU must offer the same instructions (QEMU >= 7.2 emulates AVX2)
    cpu = "host" if accel == "kvm" else "max"
    cmd = ["qemu-system-x86_64", "-machine", "q35", "-accel", accel, "-cpu", cpu, "-m", str(memory_mb), "-smp", str(cpus),
           "-kernel", images.kernel, "-initrd", images.initrd, "-no-reboot",
           "-append", "console=ttyS0 panic=-1 quiet loglevel=5 softlockup_panic=1",
           "-fsdev", "local,id=r,path=%s,security_model=none,readonly=on" % images.rootfs,
           "-device", "virtio-9p-pci,fsdev=r,mount_tag=rootfs",
           "-fsdev", "local,id=h,path=%s,security_model=none,readonly=on" % (project or tree.project_tree(build.cache_root())),
           "-device", "virtio-9p-pci,fsdev=h,mount_tag=hbl",
           "-fsdev", "local,id=o,path=%s,security_model=none" % out_dir,
           "-device", "virtio-9p-pci,fsdev=o,mount_tag=out"]
    for d in disks:
        path = os.path.join(disk_dir, d.name + ".img")
        if not os.path.exists(path):
            with open(path, "wb") as f:
                f.truncate(d.size_mb << 20)
        drive = "file=%s,if=none,id=%s,format=raw,cache=none,aio=threads" % (path, d.name)
        if d.iops:
            drive += ",throttling.iops-total=%d" % d.iops
        if d.bps:
            drive += ",throttling.bps-total=%d" % d.bps
        cmd += ["-drive", drive]
        if d.kind == "nvme":
            cmd += ["-device", "nvme,drive=%s,serial=hbl-%s" % (d.name, d.name)]
        else:
            cmd += ["-device", "virtio-blk-pci,drive=%s" % d.name]
    if interactive:
        cmd += ["-nographic"]
    else:
        cmd += ["-display", "none", "-serial", "file:%s" % os.path.join(out_dir, "serial.log"),
                "-monitor", "none"]
    return cmd


_LIBC = ctypes.CDLL(None, use_errno=True)    # loaded here: the child between fork and exec only calls it


def _die_with_parent():
    """In the child, before exec: SIGKILL when the parent dies, even by SIGKILL (which no handler sees)."""
    _LIBC.prctl(ctypes.c_int(1), ctypes.c_ulong(int(signal.SIGKILL)))      # PR_SET_PDEATHSIG


class _Terminated(BaseException):
    """SIGTERM, raised in the main thread so that run()'s clean-up kills QEMU."""


def _raise_terminated(*_):
    raise _Terminated()


def _last_words(out_dir, serial):
    """What a guest that died or hung said last: the kernel's first panic or lockup lines (the
    guest panics on a soft lockup) with the kernel code it was in, and the command's last line of
    output (the test running)."""
    lines = serial.splitlines()
    kernel = [line.strip() for line in lines
              if "Kernel panic" in line or "BUG:" in line or "blocked for more than" in line][:2]
    kernel += [line.strip() for line in lines if "RIP: 0010:" in line][:1]     # where the kernel was
    path = os.path.join(out_dir, "stdout")
    last = [line.strip() for line in open(path, errors="replace").read().splitlines()
            if line.strip()][-1:] if os.path.exists(path) else []
    return "%s%s" % ("; kernel: " + " / ".join(kernel) if kernel else "",
                     "; the command's last line: " + last[0][-200:] if last else "")


def run(command, images, disks=None, timeout=900, accel=None, memory_mb=1536, cpus=2, out_dir=None,
        disk_dir=None, interactive=False, cut=None):
    """Run `command` (a shell command line, in a writable scratch directory, /root) in a fresh guest.
    cut, if given, is called every 0.1 s while the guest runs: when it returns true, QEMU is
    SIGKILLed there and then (a power cut: the disks keep what QEMU wrote, the guest loses the
    rest) and the Result says so (cut, rc None)."""
    if shutil.which("qemu-system-x86_64") is None:
        raise HblError("qemu-system-x86_64 is not installed (scripts/bootstrap.sh installs it)")
    disks = default_disks() if disks is None else disks
    accel = accel or ("kvm" if kvm_works(images) else "tcg")
    own_out = out_dir is None
    out_dir = out_dir or tempfile.mkdtemp(prefix="hbl-vm-out-")
    os.makedirs(out_dir, exist_ok=True)
    own_disks = disk_dir is None
    disk_dir = disk_dir or tempfile.mkdtemp(prefix="hbl-vm-disks-")
    for f in ("rc", "stdout", "stderr", "serial.log"):
        if os.path.exists(os.path.join(out_dir, f)):
            os.unlink(os.path.join(out_dir, f))
    if not interactive:
        with open(os.path.join(out_dir, "cmd.sh"), "w") as f:
            f.write(command + "\n")
    elif os.path.exists(os.path.join(out_dir, "cmd.sh")):
        os.unlink(os.path.join(out_dir, "cmd.sh"))
    cmd = qemu_command(images, out_dir, disks, disk_dir, accel, memory_mb, cpus, interactive)
    t0 = time.time()
    boot = 0.0
    old_term = signal.signal(signal.SIGTERM, _raise_terminated) \
        if threading.current_thread() is threading.main_thread() else None
    try:
        if interactive:     # call() kills QEMU if the wait is interrupted
            return Result(subprocess.call(cmd, preexec_fn=_die_with_parent), "", "", out_dir, "",
                          time.time() - t0, 0.0)
        p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                             start_new_session=True, preexec_fn=_die_with_parent)
        log = os.path.join(out_dir, "serial.log")
        try:
            while p.poll() is None:
                if not boot and os.path.exists(log) and "HBL-GUEST-READY" in open(log, errors="replace").read():
                    boot = time.time() - t0
                if cut is not None and cut():
                    os.killpg(p.pid, signal.SIGKILL)
                    p.wait()
                    text = open(log, errors="replace").read() if os.path.exists(log) else ""
                    return Result(None, "", "", out_dir, text, time.time() - t0, boot, cut=True)
                if time.time() - t0 > timeout:
                    raise HblError("the guest did not finish within %d s (serial log: %s)%s" % (
                        timeout, log, _last_words(out_dir, open(log, errors="replace").read()
                                                  if os.path.exists(log) else "")))
                time.sleep(0.1)
        finally:
            if p.poll() is None:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait()
        qemu_err = p.stderr.read()
        text = open(log, errors="replace").read() if os.path.exists(log) else ""
        rc_file = os.path.join(out_dir, "rc")
        if not os.path.exists(rc_file):
            why = "HBL-GUEST-FAILED" in text and text.split("HBL-GUEST-FAILED:", 1)[1].splitlines()[0]
            raise HblError("the guest did not run the command (%s); serial log: %s%s%s" % (
                why or "no exit status", log, _last_words(out_dir, text),
                "; qemu: " + qemu_err.strip()[-300:] if qemu_err.strip() else ""))
        read = lambda n: open(os.path.join(out_dir, n), errors="replace").read() \
            if os.path.exists(os.path.join(out_dir, n)) else ""
        return Result(int(read("rc").strip() or 255), read("stdout"), read("stderr"), out_dir, text,
                      time.time() - t0, boot)
    except _Terminated:
        raise HblError("terminated (SIGTERM): QEMU was stopped") from None
    finally:
        if old_term is not None:
            signal.signal(signal.SIGTERM, old_term)
        if own_disks:
            shutil.rmtree(disk_dir, ignore_errors=True)
        if own_out and interactive:
            shutil.rmtree(out_dir, ignore_errors=True)
