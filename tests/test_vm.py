"""The device-mapper suite in the QEMU testbed (root, QEMU, Debian mirror; skipped with the reason otherwise).

Builds the images the first time (about a minute; cached after), boots the
guest (TCG) and runs vm/guest/tests there: linear tables over NVMe + HDD,
copy + remap, 100 remaps under a verifying fio, fault targets, dm-cache smq.
"""
import os
import shutil
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _why_not():
    if os.geteuid() != 0:
        return "needs root"
    for tool in ("qemu-system-x86_64", "debootstrap", "busybox"):
        if not shutil.which(tool):
            return "%s is not installed (scripts/bootstrap.sh installs it)" % tool
    return None


WHY = _why_not()
if WHY:
    print("\ntests/test_vm.py skipped: " + WHY, file=sys.stderr)


@pytest.mark.skipif(WHY is not None, reason=WHY or "")
def test_guest_device_mapper_suite():
    p = subprocess.run([sys.executable, "-m", "hbl.cli", "vm", "test", "-v", "--timeout", "1500"],
                       cwd=ROOT, capture_output=True, text=True, timeout=1800)
    print(p.stdout[-6000:])
    print(p.stderr[-3000:], file=sys.stderr)
    assert p.returncode == 0, "guest suite failed (see output above)"
    # every guest test ran and passed: none skipped, none deselected
    assert " passed" in p.stdout and "failed" not in p.stdout and "skipped" not in p.stdout
    assert "test_100_remaps_under_verifying_fio PASSED" in p.stdout


@pytest.mark.skipif(WHY is not None, reason=WHY or "")
def test_guest_with_four_devices():
    """NVMe, HDD-like and two SATA-SSD-like disks, for 3- and 4-device hybrid systems."""
    p = subprocess.run([sys.executable, "-m", "hbl.cli", "vm", "run", "--extra", "2", "--quiet", "--",
                        "for d in nvme0n1 vda vdb vdc; do cat /sys/block/$d/size; done"],
                       cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stderr
    sizes = [int(x) for x in p.stdout.split()]
    assert sizes == [512 << 11, 1024 << 11, 1024 << 11, 1024 << 11]   # sectors, from the default sizes
