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


@pytest.mark.skipif(WHY is not None, reason=WHY or "")
def test_live_device_survives_qemu_kill(tmp_path):
    """A three-device live device (NVMe, SATA-SSD-like, HDD-like) under a logged
    writer; QEMU is killed mid-run (the guest loses everything in flight); a
    second boot on the same disks re-assembles it and every acknowledged write
    verifies."""
    from hbl.errors import HblError
    from hbl.vm import build, run as vmrun
    images = build.build()
    disks = vmrun.default_disks(extra=1)
    disk_dir, out = tmp_path / "disks", tmp_path / "out"
    disk_dir.mkdir()
    out.mkdir()
    env = "export HBL_STATE_DIR=/out/state; "
    ck = "python3 vm/guest/tests/blockcheck.py %s /dev/mapper/hq /out/ck.log --blocks 180000"
    first = env + ("python3 -m hbl.cli up hq --dev /dev/nvme0n1 --dev /dev/vdb --dev /dev/vda --policy lru "
                   "--interval 0.3 && touch /out/up && " + ck % "run" + " --seconds 900")
    try:
        vmrun.run(first, images, disks=disks, disk_dir=str(disk_dir), out_dir=str(out), timeout=75)
        raise AssertionError("the first guest finished: it should have been killed")
    except HblError as exc:
        assert "did not finish within" in str(exc), exc
    assert (out / "up").exists(), (out / "stderr").read_text()[-2000:] if (out / "stderr").exists() else ""
    acked = sum(1 for _ in open(out / "ck.log"))
    assert acked > 500
    second = env + ("python3 -m hbl.cli up hq && " + ck % "verify" +
                    " > /out/verify.json && python3 -m hbl.cli status hq --json > /out/status.json && "
                    "python3 -m hbl.cli down hq")
    r = vmrun.run(second, images, disks=disks, disk_dir=str(disk_dir), out_dir=str(out), timeout=600)
    assert r.rc == 0, r.stderr[-3000:]
    import json
    v = json.loads((out / "verify.json").read_text())
    st = json.loads((out / "status.json").read_text())
    print("QEMU kill: %d acknowledged writes logged, %d blocks verified, %d bad; generation %d, "
          "%d promotions, %d evictions before the kill" % (acked, v["checked"], v["bad"], st["generation"],
                                                           st["promotions"], st["evictions"]))
    assert v["bad"] == 0 and v["checked"] > 100
    assert st["unsure_after_crash"] is True                  # it knew it had not been shut down
    assert [d["path"] for d in st["devices"]] == ["/dev/nvme0n1", "/dev/vdb", "/dev/vda"]
    assert st["generation"] > 0                              # migrations had been committed before the kill
