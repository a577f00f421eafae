"""Build the QEMU testbed's images from Debian packages, into a cache.

    kernel    the package linux-image-amd64 depends on (vmlinuz + modules)
    initramfs busybox-static, the modules for virtio, 9p, NVMe and device-mapper,
              and vm/guest/init
    rootfs    debootstrap --variant=minbase with python3, pytest, numpy, cffi's backend,
              fio and dmsetup, and an `hbl` command that runs the project shared
              at /hbl; shared read-only into the guest over 9p

The cache directory is keyed by every input (kernel version, package list,
init script, this file), so a second build with the same inputs does nothing
and a changed input builds a fresh set beside the old one.
"""
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import time

from hbl.errors import HblError

HERE = os.path.dirname(os.path.abspath(__file__))
SUITE = "bookworm"
ROOTFS_PACKAGES = ["python3", "python3-pytest", "python3-numpy", "python3-cffi-backend", "fio", "dmsetup",
                   "util-linux", "e2fsprogs", "procps", "kmod", "coreutils", "libbpf1",
                   "python3-pyudev"]
MODULES = ["virtio_pci", "virtio_blk", "9pnet_virtio", "9p", "nvme", "dm_mod", "dm_delay", "dm_flakey",
           "dm_cache", "dm_cache_smq", "dm_log_writes", "dm_zero", "dm_switch", "ext4"]
HOST_TOOLS = {"apt-get": "apt", "dpkg": "dpkg", "debootstrap": "debootstrap", "busybox": "busybox-static",
              "depmod": "kmod", "cpio": "cpio", "qemu-system-x86_64": "qemu-system-x86"}


def cache_root():
    return os.environ.get("HBL_VM_CACHE") or os.path.join(os.path.expanduser("~"), ".cache", "hbl", "vm")


def _run(cmd, what, **kw):
    try:
        return subprocess.run(cmd, check=True, capture_output=True, text=True, **kw)
    except FileNotFoundError:
        raise HblError("%s: %s is not installed (scripts/bootstrap.sh installs it)" % (what, cmd[0])) from None
    except subprocess.CalledProcessError as exc:
        tail = (exc.stderr or exc.stdout or "").strip().splitlines()[-5:]
        hint = ""
        if any(w in " ".join(tail).lower() for w in ("could not resolve", "failed to fetch", "temporary failure",
                                                       "connection")):
            hint = " (is the Debian mirror reachable?)"
        raise HblError("%s failed%s: %s\n  %s" % (what, hint, " ".join(cmd[:3]), "\n  ".join(tail))) from None


def kernel_package():
    """(package, version) of the kernel linux-image-amd64 depends on."""
    out = _run(["apt-cache", "depends", "linux-image-amd64"], "looking up the kernel package").stdout
    pkg = next((l.split(":", 1)[1].strip() for l in out.splitlines() if l.strip().startswith("Depends:")
                and "linux-image-" in l), None)
    if not pkg:
        raise HblError("cannot find the kernel package of linux-image-amd64 (run apt-get update?)")
    ver = _run(["apt-cache", "show", "--no-all-versions", pkg], "looking up %s" % pkg).stdout
    version = next(l.split(":", 1)[1].strip() for l in ver.splitlines() if l.startswith("Version:"))
    return pkg, version


def mirror():
    """The Debian mirror this host's apt uses."""
    for path in ["/etc/apt/sources.list.d/debian.sources", "/etc/apt/sources.list"]:
        try:
            text = open(path).read()
        except OSError:
            continue
        for line in text.splitlines():
            line = line.strip()
            if line.startswith("URIs:") and "security" not in line:
                return line.split()[1]
            if line.startswith("deb ") and "security" not in line:
                parts = [p for p in line.split() if not p.startswith("[")]
                return parts[1]
    return "http://deb.debian.org/debian"


def inputs_key(pkg, version):
    h = hashlib.sha256()
    for part in (pkg, version, SUITE, " ".join(ROOTFS_PACKAGES), " ".join(MODULES)):
        h.update(part.encode() + b"\0")
    for f in ("build.py", os.path.join("guest", "init")):
        with open(os.path.join(HERE, f), "rb") as fh:
            h.update(fh.read())
    return h.hexdigest()[:16]


class Images:
    def __init__(self, path):
        self.path = path
        self.kernel = os.path.join(path, "vmlinuz")
        self.initrd = os.path.join(path, "initrd.img")
        self.rootfs = os.path.join(path, "rootfs")

    def complete(self):
        return os.path.exists(os.path.join(self.path, "DONE"))


def check_host():
    missing = sorted({pkg for tool, pkg in HOST_TOOLS.items() if not shutil.which(tool)})
    if missing:
        raise HblError("the VM build needs Debian packages %s: run scripts/bootstrap.sh" % ", ".join(missing))
    if os.geteuid() != 0:
        raise HblError("the VM build needs root (debootstrap and device nodes)")


def build(progress=print, force=False):
    """Images for the current inputs, built if not cached; returns Images."""
    check_host()
    pkg, version = kernel_package()
    key = inputs_key(pkg, version)
    images = Images(os.path.join(cache_root(), key))
    if images.complete() and not force:
        return images
    os.makedirs(cache_root(), exist_ok=True)
    free = shutil.disk_usage(cache_root()).free
    if free < 2 << 30:
        raise HblError("%s: only %d MiB free, the VM images need about 2 GiB" % (cache_root(), free >> 20))
    t0 = time.time()
    work = tempfile.mkdtemp(prefix="build-", dir=cache_root())
    try:
        progress("[1/3] kernel %s (%s)" % (pkg, version))
        kdir = os.path.join(work, "kernel")
        os.makedirs(kdir)
        _run(["apt-get", "download", "%s=%s" % (pkg, version)], "downloading %s" % pkg, cwd=kdir)
        deb = next(f for f in os.listdir(kdir) if f.endswith(".deb"))
        _run(["dpkg", "-x", os.path.join(kdir, deb), os.path.join(kdir, "x")], "unpacking %s" % deb)
        kver = pkg.replace("linux-image-", "")
        _run(["depmod", "-b", os.path.join(kdir, "x"), kver], "depmod")
        shutil.copy(os.path.join(kdir, "x", "boot", "vmlinuz-" + kver), os.path.join(work, "vmlinuz"))

        progress("[2/3] initramfs (busybox, %d modules)" % len(MODULES))
        _build_initramfs(work, os.path.join(kdir, "x"), kver)

        progress("[3/3] root file system (debootstrap %s, about a minute)" % SUITE)
        rootfs = os.path.join(work, "rootfs")
        _run(["debootstrap", "--variant=minbase", "--include=" + ",".join(ROOTFS_PACKAGES), SUITE, rootfs,
              mirror()], "debootstrap")
        shutil.rmtree(kdir)
        for d in ("hbl", "out", "lib/modules", "var/lib/hbl"):
            os.makedirs(os.path.join(rootfs, d), exist_ok=True)
        _write_hbl_command(rootfs)
        with open(os.path.join(work, "DONE"), "w") as f:
            f.write("%s %s built in %.0f s\n" % (pkg, version, time.time() - t0))
        if os.path.exists(images.path):
            shutil.rmtree(images.path)
        os.rename(work, images.path)
    except BaseException:
        shutil.rmtree(work, ignore_errors=True)
        raise
    progress("built in %.0f s: %s" % (time.time() - t0, images.path))
    return images


def _write_hbl_command(rootfs):
    """`hbl` on the guest's PATH: the project shared at /hbl, run by the guest's python3."""
    path = os.path.join(rootfs, "usr", "local", "bin", "hbl")
    with open(path, "w") as f:
        f.write('#!/bin/sh\nPYTHONPATH=/hbl${PYTHONPATH:+:$PYTHONPATH} exec python3 -m hbl.cli "$@"\n')
    os.chmod(path, 0o755)


def _build_initramfs(work, kroot, kver):
    root = os.path.join(work, "initramfs")
    for d in ("bin", "sbin", "proc", "sys", "dev", "newroot", "modules"):
        os.makedirs(os.path.join(root, d), exist_ok=True)
    shutil.copy(shutil.which("busybox"), os.path.join(root, "bin", "busybox"))
    order = []
    for m in MODULES:
        out = _run(["modprobe", "-d", kroot, "-S", kver, "--show-depends", m], "resolving module %s" % m).stdout
        for line in out.splitlines():
            parts = line.split()
            if parts and parts[0] == "insmod" and parts[1] not in order:
                order.append(parts[1])
    with open(os.path.join(root, "modules", "order"), "w") as f:
        for path in order:
            name = os.path.basename(path)
            shutil.copy(path, os.path.join(root, "modules", name))
            f.write(name + "\n")
    shutil.copy(os.path.join(HERE, "guest", "init"), os.path.join(root, "init"))
    os.chmod(os.path.join(root, "init"), 0o755)
    files = subprocess.run(["find", "."], cwd=root, capture_output=True, text=True, check=True).stdout
    cpio = subprocess.run(["cpio", "-o", "-H", "newc", "--quiet"], cwd=root, input=files.encode(),
                          capture_output=True, check=True).stdout
    import gzip
    with gzip.open(os.path.join(work, "initrd.img"), "wb", compresslevel=6) as f:
        f.write(cpio)
    shutil.rmtree(root)


if __name__ == "__main__":
    try:
        build()
    except HblError as exc:
        sys.exit("hbl vm build: %s" % exc)
