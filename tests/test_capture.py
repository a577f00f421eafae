"""Live capture on real loop devices (root and BPF; skipped with the reason otherwise)."""
import importlib
import json
import mmap
import os
import subprocess
import sys
import threading
import time

import numpy as np
import pytest

from hbl import record

from helpers import capture_why_not

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


WHY = capture_why_not("BPF and loop devices")
if WHY:
    print("\ntests/test_capture.py skipped: " + WHY, file=sys.stderr)
pytestmark = pytest.mark.skipif(WHY is not None, reason=WHY or "")


def _bcc_why_not():
    try:
        from hbl.capture.bcc_loader import import_bcc
        import_bcc()
    except Exception as exc:  # CaptureError or a broken bcc install
        return str(exc)
    if not os.path.exists("/lib/modules/%s/build" % os.uname().release):
        return "no kernel headers for bcc"
    return None


@pytest.fixture
def loopdev(tmp_path):
    """A real loop device (direct I/O) over a sparse file, detached afterwards."""
    made = []

    def make(size=64 << 20):
        f = tmp_path / ("disk%d.img" % len(made))
        with open(f, "wb") as fh:
            fh.truncate(size)
        dev = subprocess.run(["losetup", "-f", "--show", "--direct-io=on", str(f)],
                             capture_output=True, text=True, check=True).stdout.strip()
        made.append(dev)
        return dev

    yield make
    for d in made:
        subprocess.run(["losetup", "-d", d])


def direct_io(dev, ops):
    """Run (op, offset, length) with O_DIRECT on dev, in order."""
    fd = os.open(dev, os.O_RDWR | os.O_DIRECT)
    try:
        for op, off, ln in ops:
            buf = mmap.mmap(-1, ln)   # page-aligned, as O_DIRECT wants
            if op == "w":
                buf.write(os.urandom(ln))
                os.pwritev(fd, [buf], off)
            else:
                os.preadv(fd, [buf], off)
            buf.close()
    finally:
        os.close(fd)


PATTERN = ([("w", 4096 * (7 * i + 3), 4096) for i in range(40)] +
           [("r", 8192 * (5 * i + 1), 8192) for i in range(16)] +
           [("w", (1 << 20) + 65536 * i, 65536) for i in range(4)])


def capture_while(devs, io, backend="libbpf", settle=0.3, **kw):
    from hbl.capture import Capture
    with Capture(devs, backend=backend, **kw) as cap:
        t = threading.Thread(target=io)
        time.sleep(settle)
        t.start()
        got = []
        deadline = time.time() + 5
        while time.time() < deadline:
            b = cap.poll(100)
            if len(b):
                got.append(b)
            if not t.is_alive() and not len(b) and time.time() > deadline - 4:
                break
        t.join()
        got.append(cap.poll(200))
        return record.concat(got), cap.stats()


def test_python_constants_match_the_event_header():
    from hbl._capture import lib
    from hbl.capture import MODE_BIO, MODE_BIO_DONE, MODE_RQ
    assert (lib.HBL_MODE_RQ, lib.HBL_MODE_BIO, lib.HBL_MODE_BIO_DONE) == (MODE_RQ, MODE_BIO, MODE_BIO_DONE)


def test_exact_records_with_latency(loopdev):
    dev = loopdev()
    d, st = capture_while([dev], lambda: direct_io(dev, PATTERN))
    assert len(d) == len(PATTERN)
    got = sorted(zip(d["op"].tolist(), d["offset"].tolist(), d["length"].tolist()))
    want = sorted((record.WRITE if op == "w" else record.READ, off, ln) for op, off, ln in PATTERN)
    assert got == want
    lat = d["latency_ns"]
    assert (lat > 1_000).all() and (lat < 2_000_000_000).all()          # 1 us .. 2 s
    assert (np.diff(d["time_ns"].astype(np.int64)) >= 0).all()
    assert abs(int(d["time_ns"][0]) - time.time_ns()) < 60 * 10 ** 9      # wall-clock times
    st_dev = os.stat(dev).st_rdev
    assert set(d["device"].tolist()) == {(os.major(st_dev) << 20) | os.minor(st_dev)}
    assert st["lost"] == 0 and st["events"] == len(PATTERN)


def test_filter_excludes_other_devices(loopdev):
    traced, other = loopdev(), loopdev()

    def io():
        direct_io(other, PATTERN)
        direct_io(traced, PATTERN[:10])
        direct_io(other, PATTERN)

    d, _ = capture_while([traced], io)
    assert len(d) == 10


def test_both_backends_agree(loopdev):
    why = _bcc_why_not()
    if why:
        pytest.skip("bcc unavailable: " + why)
    from hbl.capture import Capture
    dev = loopdev()
    with Capture([dev], backend="bcc") as bcc_cap:
        d_lib, _ = capture_while([dev], lambda: direct_io(dev, PATTERN))
        time.sleep(0.3)
        d_bcc = record.concat([bcc_cap.poll(200) for _ in range(5)])
    key = lambda d: sorted(zip(d["op"].tolist(), d["offset"].tolist(), d["length"].tolist(),
                               d["device"].tolist()))
    assert len(d_lib) == len(PATTERN)
    assert key(d_lib) == key(d_bcc)
    assert (d_bcc["latency_ns"] > 0).all()


def test_lost_records_are_reported_not_hidden(loopdev):
    from hbl.capture import Capture
    dev = loopdev()
    with Capture([dev], ringbuf_bytes=64 << 10) as cap:   # about 900 records fit
        direct_io(dev, [("w", 4096 * i, 4096) for i in range(3000)])   # consumer stopped on purpose
        time.sleep(0.2)
        st = cap.stats()
        got = sum(len(cap.poll(100)) for _ in range(10))
    assert st["lost_ringbuf"] > 0
    assert got + st["lost_ringbuf"] == 3000


class Tracing:
    """`hbl trace ARGS` started, returned once it says it is tracing: it prints that line only
    after its capture is attached (cmd_trace), so I/O made then is captured however slow the
    machine is to start it (a fixed sleep of 1.5 s was not, at load 9).  Its stderr is read to
    the end meanwhile; `timeout` only keeps a broken run from hanging the suite."""

    def __init__(self, *args, timeout=120):
        self.p = subprocess.Popen([sys.executable, "-m", "hbl.cli", "trace", *args], cwd=ROOT,
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.lines, self.timeout, ready = [], timeout, threading.Event()

        def read():
            for line in self.p.stderr:
                self.lines.append(line)
                if line.startswith("tracing "):
                    ready.set()
            ready.set()   # it ended without saying so: the wait below sees why

        self.reader = threading.Thread(target=read, daemon=True)
        self.reader.start()
        if not ready.wait(timeout) or not any(x.startswith("tracing ") for x in self.lines):
            self.p.kill()
            self.p.wait()
            raise AssertionError("hbl trace did not start tracing:\n" + "".join(self.lines))

    def stderr(self):
        return "".join(self.lines)

    def finish(self):
        """Wait for its end; its stdout (a summary, written at the end: no pipe to keep empty)."""
        try:
            self.p.wait(timeout=self.timeout)
        except subprocess.TimeoutExpired:
            self.p.kill()
            self.p.wait()
            raise AssertionError("hbl trace did not end:\n" + self.stderr()) from None
        self.reader.join()
        stdout = self.p.stdout.read()
        self.p.stdout.close()
        self.p.stderr.close()
        assert self.p.returncode == 0, self.stderr()
        return stdout


def test_hbl_trace_writes_a_replayable_trace(loopdev, tmp_path):
    dev = loopdev()
    out = tmp_path / "cap.csv"
    t = Tracing("--dev", dev, "--count", str(len(PATTERN)), "--out", str(out), "--json")
    direct_io(dev, PATTERN)
    summary = json.loads(t.finish())
    assert summary["requests"] == len(PATTERN) and summary["lost"] == 0
    from hbl.trace import load
    d, reader = load(str(out))
    assert reader.name == "msrc" and len(d) == len(PATTERN)
    sim = subprocess.run([sys.executable, "-m", "hbl.cli", "simulate", "--trace", str(out), "--policy", "lru",
                          "--json"], cwd=ROOT, capture_output=True, text=True)
    assert json.loads(sim.stdout)["requests"] == len(PATTERN)


def test_ctrl_c_keeps_what_was_captured(loopdev, tmp_path):
    # signalled as soon as the I/O is done: the capture reads what its ring holds before it stops
    # (Capture.batches drains it; it stopped at once before, and a sleep of 0.5 s stood in)
    import signal
    dev = loopdev()
    out = tmp_path / "int.bin"
    t = Tracing("--dev", dev, "--duration", "60s", "--out", str(out))
    direct_io(dev, PATTERN)
    t.p.send_signal(signal.SIGINT)
    t.finish()
    from hbl.trace import load
    d, _ = load(str(out))
    assert len(d) == len(PATTERN)


def test_clear_errors(tmp_path):
    for args, msg in ((["--dev", "/dev/nonexistent-hbl"], "no such device"),
                      (["--dev", str(tmp_path)], "not a block device")):
        p = subprocess.run([sys.executable, "-m", "hbl.cli", "trace", *args, "--count", "1", "--out",
                            str(tmp_path / "x.bin")], cwd=ROOT, capture_output=True, text=True)
        assert p.returncode == 2 and msg in p.stderr and "Traceback" not in p.stderr


def test_remaps_and_heat(loopdev):
    """Heat per extent in the kernel; (remaps need device-mapper: the VM suite covers them)."""
    dev = loopdev()
    d, _ = capture_while([dev], lambda: direct_io(dev, PATTERN), extent_shift=11)  # 1 MiB extents
    from hbl.capture import Capture
    with Capture([dev], extent_shift=11) as cap:
        direct_io(dev, PATTERN)
        time.sleep(0.2)
        cap.poll(100)
        heat = cap.heat()
    counts = {}
    for op, off, ln in PATTERN:
        counts[off >> 20] = counts.get(off >> 20, 0) + 1
    assert {ext: h[0] for (_, ext), h in heat.items()} == counts


def test_bio_mode_as_for_device_mapper(loopdev):
    """The path used for device-mapper devices (block_bio_queue, logical addresses, no latency),
    exercised on a loop device by asking for bio mode; all four programs load and verify."""
    from hbl.capture import MODE_BIO, LibbpfLoader, resolve_device
    dev = loopdev()
    devt, _, name = resolve_device(dev)
    loader = LibbpfLoader([(devt, MODE_BIO, name)], remaps=True, extent_shift=0, ringbuf_bytes=0)
    try:
        t = threading.Thread(target=lambda: direct_io(dev, PATTERN))
        t.start()
        t.join()
        time.sleep(0.2)
        d = record.concat([loader.poll(100, 4096) for _ in range(5)])
    finally:
        loader.close()
    got = sorted(zip(d["op"].tolist(), d["offset"].tolist(), d["length"].tolist()))
    want = sorted((record.WRITE if op == "w" else record.READ, off, ln) for op, off, ln in PATTERN)
    assert got == want
    assert (d["latency_ns"] == 0).all() and (d["pid"] > 0).all()


@pytest.fixture
def zram(monkeypatch):
    """A zram device of our own (scripts/bench_capture.py's, removed afterwards)."""
    if not os.path.isdir("/sys/class/zram-control"):
        pytest.skip("no zram on this kernel: bio-based completion is left to the guest suite")
    monkeypatch.syspath_prepend(os.path.join(ROOT, "scripts"))
    bench = importlib.import_module("bench_capture")
    n, dev = bench.zram_device(64 << 20)
    try:
        yield dev
    finally:
        bench.zram_remove(n)


def bio_done_capture(dev, io, backend="libbpf", fast=False):
    """Records of io() on `dev` captured in MODE_BIO_DONE (as Capture(completion=) captures a
    device-mapper device), and the capture's stats."""
    from hbl.capture import MODE_BIO_DONE, LibbpfLoader, resolve_device
    devt, _, name = resolve_device(dev)
    if backend == "bcc":
        from hbl.capture.bcc_loader import BccLoader
        loader = BccLoader([(devt, MODE_BIO_DONE, name)], False, 0)
    else:
        loader = LibbpfLoader([(devt, MODE_BIO_DONE, name)], remaps=False, extent_shift=0, ringbuf_bytes=0,
                               fast=fast)
    try:
        io()
        time.sleep(0.2)
        return record.concat([loader.poll(100, 8192) for _ in range(5)]), loader.stats()
    finally:
        loader.close()


@pytest.mark.parametrize("fast", [False, True])
def test_bio_completion_mode_records_each_bio_once_when_it_completed(zram, fast):
    """MODE_BIO_DONE (what the live controller asks for a member that is a dm device), on the
    host's one bio-based driver: a bio is kept from block_bio_queue, under its address, until
    block_bio_complete of that bio, then recorded once with its queue-to-completion latency,
    in completion order."""
    t0 = time.time_ns()
    d, st = bio_done_capture(zram, lambda: direct_io(zram, PATTERN), fast=fast)
    t1 = time.time_ns()
    got = sorted(zip(d["op"].tolist(), d["offset"].tolist(), d["length"].tolist()))
    want = sorted((record.WRITE if op == "w" else record.READ, off, ln) for op, off, ln in PATTERN)
    assert got == want and st["lost"] == 0
    lat = d["latency_ns"].astype(np.int64)
    assert (lat > 0).all() and (lat < 2_000_000_000).all()
    ends = d["time_ns"].astype(np.int64) + lat
    assert (d["time_ns"].astype(np.int64) >= t0).all() and (ends <= t1).all()
    assert (np.diff(ends) >= 0).all()     # in the ring in completion order
    assert (d["pid"] > 0).all()


def test_bio_completion_keeps_bios_to_one_sector_apart(zram):
    """Bios in flight together to the same sector are distinct bios (the in-flight table is keyed
    by the bio's address): each is recorded once, with its own latency, nothing counted lost."""
    io, n = _same_sector_readers(zram)
    d, st = bio_done_capture(zram, io)
    assert st["lost"] == 0
    assert len(d) == n and (d["offset"] == 0).all() and (d["op"] == record.READ).all()
    assert (d["latency_ns"] > 0).all()


def test_completion_is_asked_for_only_where_the_kernel_traces_it(zram, loopdev):
    """Capture(completion=): a request-based device keeps its request programs; a bio-based one
    that is not device-mapper stays at queue with no latency (its driver may hand the bio itself
    to a request-based device, whose bios' completion the kernel leaves untraced, as it does a
    loop device's: asked to, MODE_BIO_DONE would record nothing there)."""
    from hbl.capture import MODE_BIO, MODE_RQ, Capture, resolve_device
    loop = loopdev()
    assert resolve_device(zram, completion=True)[1] == MODE_BIO
    assert resolve_device(loop, completion=True)[1] == MODE_RQ
    with Capture([zram, loop], completion=[zram, loop]) as cap:
        assert [m for _, m, _ in cap.devices] == [MODE_BIO, MODE_RQ]
    d, _ = capture_while([zram], lambda: direct_io(zram, PATTERN[:10]), completion=[zram])
    assert len(d) == 10 and (d["latency_ns"] == 0).all()
    d, st = bio_done_capture(loop, lambda: direct_io(loop, PATTERN[:10]))
    assert len(d) == 0 and st["lost"] == 0


def test_bcc_records_bio_completions_as_libbpf_does(zram):
    """bcc's tracepoints pass no bio: its in-flight bios are keyed by the sector after their last
    (which a driver's partial completions and splits leave as it was), and give the same records."""
    why = _bcc_why_not()
    if why:
        pytest.skip("bcc unavailable: " + why)
    d_lib, _ = bio_done_capture(zram, lambda: direct_io(zram, PATTERN))
    d_bcc, st = bio_done_capture(zram, lambda: direct_io(zram, PATTERN), backend="bcc")
    key = lambda d: sorted(zip(d["op"].tolist(), d["offset"].tolist(), d["length"].tolist(),
                               d["device"].tolist()))
    assert len(d_lib) == len(PATTERN) and key(d_lib) == key(d_bcc) and st["lost"] == 0
    assert (d_bcc["latency_ns"] > 0).all()


def test_completion_names_only_devices_traced(loopdev):
    from hbl.capture import Capture, CaptureError
    dev = loopdev()
    with pytest.raises(CaptureError, match="/dev/nothing: not among the devices traced"):
        Capture([dev], completion=["/dev/nothing"])


def test_fast_mode_records(loopdev):
    """One BTF tracepoint at completion: the same requests, latency from the request's start time."""
    dev = loopdev()
    d, st = capture_while([dev], lambda: direct_io(dev, PATTERN), fast=True)
    got = sorted(zip(d["op"].tolist(), d["offset"].tolist(), d["length"].tolist()))
    want = sorted((record.WRITE if op == "w" else record.READ, off, ln) for op, off, ln in PATTERN)
    assert got == want and st["lost"] == 0
    assert (d["latency_ns"] > 1_000).all() and (d["latency_ns"] < 2_000_000_000).all()
    assert (d["pid"] == 0).all()


def test_fast_mode_records_a_device_whose_queue_keeps_no_io_statistics(loopdev):
    """With queue/iostats off the kernel leaves a request's partition (rq->part) unset: fast mode
    takes the device from the request's disk, as at issue, and records every request (it recorded
    none, and counted none lost, while it read rq->part)."""
    dev = loopdev()
    knob = "/sys/block/%s/queue/iostats" % os.path.basename(dev)
    with open(knob, "w") as f:
        f.write("0")
    try:
        d, st = capture_while([dev], lambda: direct_io(dev, PATTERN), fast=True)
    finally:               # the loop device is reused after this test: its statistics back on
        with open(knob, "w") as f:
            f.write("1")
    got = sorted(zip(d["op"].tolist(), d["offset"].tolist(), d["length"].tolist()))
    want = sorted((record.WRITE if op == "w" else record.READ, off, ln) for op, off, ln in PATTERN)
    assert got == want and st["lost"] == 0


def _same_sector_readers(dev, threads=8, each=300):
    """`threads` threads reading the same 4 KiB with O_DIRECT, `each` reads each: many requests
    to one sector in flight at once."""
    def reader():
        fd = os.open(dev, os.O_RDONLY | os.O_DIRECT)
        buf = mmap.mmap(-1, 4096)
        try:
            for _ in range(each):
                os.preadv(fd, [buf], 0)
        finally:
            buf.close()
            os.close(fd)

    def io():
        ts = [threading.Thread(target=reader) for _ in range(threads)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
    return io, threads * each


@pytest.mark.parametrize("fast", [False, True])
def test_concurrent_requests_to_one_sector_are_each_recorded(loopdev, fast):
    """Requests in flight together to the same sector are distinct requests: each is recorded once,
    with its own latency (the default mode's in-flight table is keyed by the request, not its sector)."""
    dev = loopdev()
    io, n = _same_sector_readers(dev)
    d, st = capture_while([dev], io, fast=fast)
    # none lost to the in-flight table (a sector-keyed one loses most); a run the kernel skipped
    # (a completion's program hit while one ran on that CPU, rare: 2 of 2,400 once in CI) is counted
    assert st["lost_inflight"] == 0 and st["lost_ringbuf"] == 0 and st["lost_missed"] <= n // 100
    assert len(d) + st["lost_missed"] == n, st
    assert (d["offset"] == 0).all() and (d["op"] == record.READ).all()
    assert (d["latency_ns"] > 1_000).all() and (d["latency_ns"] < 2_000_000_000).all()


def test_bcc_counts_what_its_sector_keyed_table_cannot_hold(loopdev):
    """bcc's block tracepoints do not pass the request, so its in-flight table is keyed by sector:
    a second request to a sector in flight cannot be recorded, and is counted lost, never hidden."""
    why = _bcc_why_not()
    if why:
        pytest.skip(why)
    dev = loopdev()
    io, n = _same_sector_readers(dev)
    d, st = capture_while([dev], io, backend="bcc", settle=1.0)
    assert len(d) + st["lost"] >= n and len(d) <= n
    assert (d["offset"] == 0).all() and (d["op"] == record.READ).all()


def test_the_drain_after_a_stop_ends_under_a_ring_that_never_empties():
    """A load that fills the ring as fast as it is read: the drain reads DRAIN_POLLS batches, not forever
    (a unit test of batches() over a ring that is always full; needs no BPF)."""
    import hbl.capture as cap
    from hbl import record

    class FullRing:
        polls = 0

        def poll(self, timeout_ms, batch):
            FullRing.polls += 1
            assert FullRing.polls <= 10 * cap.DRAIN_POLLS, "the drain does not end"
            return record.empty(batch)

        def close(self):
            pass
    c = object.__new__(cap.Capture)
    c._impl, c.batch = FullRing(), 8
    got = sum(len(b) for b in c.batches(duration=0))
    assert FullRing.polls == cap.DRAIN_POLLS and got == cap.DRAIN_POLLS * 8


def test_skipped_program_runs_are_read_from_the_kernel(loopdev):
    """lost_missed is the kernel's own count (bpf_prog_info.recursion_misses) of the capture's
    programs, as bpftool reads it; a descriptor that is no program counts 0."""
    from hbl._capture import lib
    from hbl.capture import Capture
    import json
    import subprocess
    assert lib.hbl_prog_misses(-1) == 0
    dev = loopdev()
    with Capture([dev], fast=True) as cap:
        direct_io(dev, PATTERN[:10])
        out = subprocess.run(["bpftool", "-j", "prog", "show"], capture_output=True, text=True)
        if out.returncode:
            pytest.skip("bpftool cannot list programs: " + out.stderr.strip())
        ours = [p for p in json.loads(out.stdout) if p.get("name") == "hbl_rq_done"]
        assert ours, "the fast program is not loaded"
        assert cap.stats()["lost_missed"] == sum(p.get("recursion_misses", 0) for p in ours)
