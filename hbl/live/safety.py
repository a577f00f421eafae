"""Before hbl writes a block device: is it really free to take?

A device is refused when it is mounted (itself or a partition of it), held by
another device (a dm, md or LVM holder), open exclusively by someone else, or
when it carries a signature: a file system, a partition table, swap, LVM,
LUKS, RAID, or an hbl member superblock.  --force overrides signatures only:
a mounted or held device is never taken.
"""
import errno
import os
import stat
import struct

from hbl.errors import HblError
from hbl.live import meta as metamod


class Refused(HblError):
    """hbl will not write this device; the message says which one and why."""


def _sysdir(path):
    st = os.stat(path)
    return "/sys/dev/block/%d:%d" % (os.major(st.st_rdev), os.minor(st.st_rdev)), st.st_rdev


def _partitions(sysdir):
    """dev numbers of the partitions of a disk."""
    out = []
    real = os.path.realpath(sysdir)
    if os.path.isdir(real):
        for e in os.listdir(real):
            dev = os.path.join(real, e, "dev")
            if os.path.exists(os.path.join(real, e, "partition")) and os.path.exists(dev):
                ma, mi = open(dev).read().strip().split(":")
                out.append(os.makedev(int(ma), int(mi)))
    return out


def mounts_of(devs):
    """Mount points of any of the dev numbers (from /proc/self/mountinfo)."""
    out = []
    try:
        lines = open("/proc/self/mountinfo").read().splitlines()
    except OSError:
        return out
    for line in lines:
        f = line.split()
        if len(f) > 4 and ":" in f[2]:
            ma, mi = f[2].split(":")
            if os.makedev(int(ma), int(mi)) in devs:
                out.append(f[4])
    # swap areas are "in use" too
    try:
        for line in open("/proc/swaps").read().splitlines()[1:]:
            p = line.split()[0]
            if os.path.exists(p) and os.stat(p).st_rdev in devs:
                out.append("swap")
    except OSError:
        pass
    return out


def signatures(data):
    """Names of the on-disk formats recognised in the first 68 KiB of a device."""
    found = []
    at = lambda off, magic: data[off:off + len(magic)] == magic
    if len(data) >= 1082 and struct.unpack_from("<H", data, 1080)[0] == 0xEF53:
        found.append("ext2/3/4 file system")
    if at(0, b"XFSB"):
        found.append("XFS file system")
    if at(65600, b"_BHRfS_M"):
        found.append("Btrfs file system")
    if at(4086, b"SWAPSPACE2") or at(4086, b"SWAP-SPACE"):
        found.append("swap area")
    if at(512, b"LABELONE") or at(0, b"LABELONE"):
        found.append("LVM physical volume")
    if at(0, b"LUKS\xba\xbe"):
        found.append("LUKS encrypted volume")
    if at(512, b"EFI PART"):
        found.append("GPT partition table")
    elif len(data) >= 512 and data[510:512] == b"\x55\xaa":
        parts = [data[446 + 16 * i:462 + 16 * i] for i in range(4)]
        if any(p[4] != 0 for p in parts):
            found.append("MBR partition table")
        elif at(54, b"FAT") or at(82, b"FAT32"):
            found.append("FAT file system")
    if len(data) >= 4096 + 4 and struct.unpack_from("<I", data, 4096)[0] == 0xa92b4efc:
        found.append("Linux RAID member")
    if at(4096 + 24, bytes.fromhex("c68573f64e1a45ca8265f57f48ba6d81")):
        found.append("bcache device")
    if at(32769, b"CD001"):
        found.append("ISO 9660 image")
    sb = metamod.parse_superblock(data)
    if sb is not None:
        found.append("hbl member superblock" + (" (damaged)" if sb.get("damaged") else " of device %s" % sb["uuid"][:8]))
    return found


def check_device(path, force=False):
    """Raise Refused with the reason if `path` must not be written; else return its dev number."""
    try:
        st = os.stat(path)
    except OSError as exc:
        raise Refused("%s: %s" % (path, exc.strerror)) from None
    if not stat.S_ISBLK(st.st_mode):
        raise Refused("%s: not a block device" % path)
    sysdir, dev = _sysdir(path)
    devs = [dev] + _partitions(sysdir)
    mnt = mounts_of(devs)
    if mnt:
        raise Refused("%s is mounted on %s: unmount it first (--force does not override this)"
                      % (path, ", ".join(mnt)))
    holders = os.path.join(sysdir, "holders")
    if os.path.isdir(holders) and os.listdir(holders):
        raise Refused("%s is in use by %s (a device-mapper, md or LVM device built on it): "
                      "remove that first (--force does not override this)" % (path, ", ".join(os.listdir(holders))))
    try:
        fd = os.open(path, os.O_RDONLY | os.O_EXCL)
    except OSError as exc:
        if exc.errno == errno.EBUSY:
            raise Refused("%s is in use: another program holds it open exclusively "
                          "(--force does not override this)" % path) from None
        raise Refused("%s: %s" % (path, exc.strerror)) from None
    try:
        data = os.pread(fd, 68 << 10, 0)
    finally:
        os.close(fd)
    sig = signatures(data)
    if sig and not force:
        raise Refused("%s carries: %s; hbl up would destroy it.  Wipe it (wipefs -a %s) or pass --force "
                      "if you are sure" % (path, ", ".join(sig), path))
    if len(_partitions(sysdir)) and not force:
        raise Refused("%s has partitions: hbl uses whole devices.  Pass --force if you are sure" % path)
    return dev


def check_devices(paths, force=False):
    if not 2 <= len(paths) <= 4:
        raise Refused("give 2 to 4 devices, fastest first (got %d)" % len(paths))
    seen = {}
    for p in paths:
        dev = check_device(p, force)
        if dev in seen:
            raise Refused("%s and %s are the same device" % (seen[dev], p))
        seen[dev] = p
