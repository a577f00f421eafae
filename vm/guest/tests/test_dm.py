"""Device-mapper mechanics on emulated NVMe + HDD-like devices (inside the VM)."""
import hashlib
import json
import mmap
import os
import subprocess
import time

import pytest

from conftest import FAST, SLOW, wait_for, wait_for_counts
from dmsetup import Cache, Delay, Flakey, Linear, LogWrites, Table, device

MIB = 1 << 20
EXT = MIB // 512          # one extent = 1 MiB = 2048 sectors
DEADLINE = 600            # seconds a test waits for the events it needs before it fails (stuck, not slow)


def write_random(path, offset, length, seed):
    """Write deterministic pseudo-random data with O_DIRECT; returns per-MiB digests."""
    import random
    rng = random.Random(seed)
    fd = os.open(path, os.O_WRONLY | os.O_DIRECT)
    digests = []
    try:
        for off in range(offset, offset + length, MIB):
            buf = mmap.mmap(-1, MIB)
            data = rng.randbytes(MIB)
            buf.write(data)
            os.pwritev(fd, [buf], off)
            digests.append(hashlib.sha256(data).hexdigest())
            buf.close()
    finally:
        os.close(fd)
    return digests


def read_digests(path, offset, length):
    fd = os.open(path, os.O_RDONLY | os.O_DIRECT)
    out = []
    try:
        for off in range(offset, offset + length, MIB):
            buf = mmap.mmap(-1, MIB)
            os.preadv(fd, [buf], off)
            out.append(hashlib.sha256(bytes(buf)).hexdigest())
            buf.close()
    finally:
        os.close(fd)
    return out


def copy_extent(src, src_sector, dst, dst_sector, sectors=EXT):
    """The copy job of a migration: O_DIRECT read from one device, write to the other."""
    buf = mmap.mmap(-1, sectors * 512)
    rfd, wfd = os.open(src, os.O_RDONLY | os.O_DIRECT), os.open(dst, os.O_WRONLY | os.O_DIRECT)
    try:
        os.preadv(rfd, [buf], src_sector * 512)
        os.pwritev(wfd, [buf], dst_sector * 512)
        os.fsync(wfd)
    finally:
        os.close(rfd)
        os.close(wfd)
        buf.close()


def test_linear_spanning_nvme_and_hdd(dm):
    t = Table([Linear(32 * EXT, FAST, 0), Linear(32 * EXT, SLOW, 0)])
    with device("hbl-span", t, dm) as d:
        assert d.info()["live_table"] and not d.info()["suspended"]
        assert d.live_table().same_as(t)
        want = write_random(d.path, 0, 64 * MIB, seed=1)
        assert read_digests(d.path, 0, 64 * MIB) == want
    # the data really is on both devices, where the table put it
    assert read_digests(FAST, 0, 32 * MIB) == want[:32]
    assert read_digests(SLOW, 0, 32 * MIB) == want[32:]


def test_copy_and_remap_then_scribble_old_copy(ioctl_dm):
    slots = [Linear(EXT, SLOW, (100 + i) * EXT) for i in range(8)]
    with device("hbl-remap", Table(slots), ioctl_dm) as d:
        want = write_random(d.path, 0, 8 * MIB, seed=2)
        copy_extent(SLOW, 103 * EXT, FAST, 50 * EXT)           # promote extent 3
        new = list(slots)
        new[3] = Linear(EXT, FAST, 50 * EXT)
        with d.suspended():
            copy_extent(SLOW, 103 * EXT, FAST, 50 * EXT)       # re-copy what may have changed
            d.load(Table(new))
        assert d.live_table().same_as(Table(new))
        write_random(SLOW, 103 * MIB, MIB, seed=99)             # scribble over the old copy
        assert read_digests(d.path, 0, 8 * MIB) == want


def completed_ios(path):
    """Reads and writes the kernel completed on a block device since it was created (its stat)."""
    rdev = os.stat(path).st_rdev            # (the guest's /dev/mapper holds nodes, not links to dm-N)
    f = open("/sys/dev/block/%d:%d/stat" % (os.major(rdev), os.minor(rdev))).read().split()
    return {"reads": int(f[0]), "writes": int(f[4])}


def test_100_remaps_under_verifying_fio(ioctl_dm):
    """Swap extents between devices while fio writes and verifies: no errors, no verify failures.
    fio runs until the 100 remaps are done and it has written and verified more than 100 blocks."""
    n = 16
    where = {i: ("fast" if i % 2 else "slow", i) for i in range(n)}     # extent -> (device, slot)
    free = {"fast": list(range(n, 2 * n)), "slow": list(range(n, 2 * n))}
    dev_of = {"fast": FAST, "slow": SLOW}
    table = lambda: Table([Linear(EXT, dev_of[where[i][0]], where[i][1] * EXT) for i in range(n)])
    with device("hbl-fio", table(), ioctl_dm) as d:
        fio = subprocess.Popen(
            ["fio", "--name=verify", "--filename=" + d.path, "--rw=randwrite", "--bs=4k", "--direct=1",
             "--ioengine=psync", "--size=%d" % (n * MIB), "--verify=crc32c", "--verify_backlog=16",
             "--verify_fatal=1", "--time_based", "--runtime=%d" % (2 * DEADLINE), "--output-format=json"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd="/tmp")
        time.sleep(2)
        stalls = []
        try:
            for k in range(100):
                assert fio.poll() is None, "fio stopped after %d of 100 remaps: %s" % (k, fio.stderr.read())
                e = (k * 7) % n
                src, slot = where[e]
                dst = "slow" if src == "fast" else "fast"
                to = free[dst].pop(0)
                t0 = time.time()
                with d.suspended():
                    copy_extent(dev_of[src], slot * EXT, dev_of[dst], to * EXT)
                    where[e] = (dst, to)
                    d.load(table())
                stalls.append(time.time() - t0)
                free[src].append(slot)      # the old slot is reused only after the new table is live
                time.sleep(0.05)            # let fio's I/O flow between suspends, as in real use

            def done_by_fio():              # the device's own counts: fio's come only at its end
                assert fio.poll() is None, "fio stopped after the remaps: " + fio.stderr.read()
                return completed_ios(d.path)
            wait_for_counts({"reads": 101, "writes": 101}, done_by_fio, DEADLINE)
        finally:
            fio.terminate()
            out, err = fio.communicate(timeout=120)
        # fio checks every block it wrote (verify_backlog) and stops at the first bad one (verify_fatal)
        assert "verify" not in err.lower() or "bad" not in err.lower(), err
        job = json.loads(out[out.index("{"):])["jobs"][0]
        assert job["error"] == 0
        assert job["write"]["total_ios"] > 100
        assert job["read"]["total_ios"] > 100       # the verification reads happened
    print("\nremap stall under fio: median %.1f ms, max %.1f ms over %d remaps" % (
        1000 * sorted(stalls)[len(stalls) // 2], 1000 * max(stalls), len(stalls)))


def test_delay_and_flakey_fault_helpers(ioctl_dm):
    t = Table([Linear(8 * EXT, FAST, 0), Delay(8 * EXT, FAST, 8 * EXT, ms=200)])
    with device("hbl-delay", t, ioctl_dm) as d:
        fd = os.open(d.path, os.O_RDONLY | os.O_DIRECT)
        buf = mmap.mmap(-1, 4096)

        def took(offset):
            t0 = time.time()
            os.preadv(fd, [buf], offset)
            return time.time() - t0
        # every read of the delayed range waits its 200 ms; the linear range's fastest of a few
        # reads is well under it (one read alone may wait for a busy host's CPU)
        slow = [took(8 * MIB + i * 4096) for i in range(3)]
        fast = [took(i * 4096) for i in range(5)]
        os.close(fd)
        assert min(slow) >= 0.2 and min(fast) < 0.1, (slow, fast)
    t = Table([Linear(8 * EXT, FAST, 0), Flakey(8 * EXT, FAST, 8 * EXT, up_s=0, down_s=60)])
    with device("hbl-flakey", t, ioctl_dm) as d:
        fd = os.open(d.path, os.O_RDONLY | os.O_DIRECT)
        buf = mmap.mmap(-1, 4096)
        os.preadv(fd, [buf], 0)                       # healthy range
        with pytest.raises(OSError):
            os.preadv(fd, [buf], 8 * MIB)              # the flakey range is down
        os.close(fd)


def test_log_writes_available(ioctl_dm):
    write_random(FAST, 200 * MIB, 8 * MIB, seed=5)     # old contents of the log region
    with device("hbl-logw-data", Table([Linear(8 * EXT, FAST, 100 * EXT)]), ioctl_dm) as data, \
            device("hbl-logw-log", Table([Linear(8 * EXT, FAST, 200 * EXT)]), ioctl_dm) as log:
        before = read_digests(log.path, 0, MIB)
        with device("hbl-logged", Table([LogWrites(8 * EXT, data.path, log.path)]), ioctl_dm) as d:
            assert d.status()[0][2] == "log-writes"
            write_random(d.path, 0, MIB, seed=6)
        assert read_digests(log.path, 0, MIB) != before   # the writes were logged


def test_dm_cache_smq_over_the_same_devices(ioctl_dm):
    zero = mmap.mmap(-1, MIB)
    fd = os.open(FAST, os.O_WRONLY | os.O_DIRECT)
    os.pwritev(fd, [zero], 300 * MIB)                  # fresh metadata
    os.close(fd)
    with device("hbl-cmeta", Table([Linear(8 * EXT, FAST, 300 * EXT)]), ioctl_dm) as meta, \
            device("hbl-cdata", Table([Linear(128 * EXT, FAST, 320 * EXT)]), ioctl_dm) as cache:
        origin_sectors = 256 * EXT
        t = Table([Cache(origin_sectors, meta.path, cache.path, SLOW, block_sectors=128)])
        with device("hbl-cache", t, ioctl_dm) as d:
            def reread():                               # a hot 4 MiB region, read again and again
                read_digests(d.path, 0, 4 * MIB)
                return Cache.parse_status(d.status()[0][3])
            # (smq promotes from its background worker)
            st = wait_for("dm-cache smq to promote and hit", reread, lambda st: st["promotions"] and st["read_hits"],
                          DEADLINE, every=0.2)
            assert st["policy"] == "smq"
            assert st["total_blocks"] == 128 * MIB // (128 * 512)
            assert st["read_hits"] + st["read_misses"] > 0
            assert st["promotions"] > 0 and st["read_hits"] > 0
