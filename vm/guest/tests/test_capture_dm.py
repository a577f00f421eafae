"""eBPF capture of a device-mapper device and its members (inside the VM):
logical requests on the dm device, device requests with latency on the
members, and the remaps between them; a member that is itself a dm device
recorded at its bios' completion."""
import time

import numpy as np
import pytest

from conftest import FAST, SLOW, wait_for
from dmsetup import Delay, Linear, Table, device
from test_dm import EXT, MIB, write_random, read_digests

capture = pytest.importorskip("hbl.capture")


@pytest.mark.parametrize("fast", [False, True])
def test_dm_device_and_members_with_remaps(ioctl_dm, fast):
    from hbl import record
    from hbl.capture import Capture
    t = Table([Linear(4 * EXT, FAST, 64 * EXT), Linear(4 * EXT, SLOW, 32 * EXT)])
    with device("hbl-cap", t, ioctl_dm) as d:
        with Capture([d.path, FAST, SLOW], remaps=True, fast=fast) as cap:
            time.sleep(0.3)
            write_random(d.path, 0, 8 * MIB, seed=11)      # 8 x 1 MiB: 4 land on NVMe, 4 on the HDD
            read_digests(d.path, 0, 8 * MIB)
            dm_dev, _, _ = capture.resolve_device(d.path)
            fast_dev, _, _ = capture.resolve_device(FAST)
            slow_dev, _, _ = capture.resolve_device(SLOW)
            # every request completed before its call returned, so its record is in the ring
            # buffer or on its way: read until the 16 logical requests and 8 MiB written to the
            # members are in (a busy host's reader is late, not short), then a last look
            parts = []

            def seen():
                parts.append(cap.poll(200))
                got = record.concat(parts)
                member_writes = got[(got["device"] != dm_dev) & (got["op"] == record.WRITE)]
                return {"logical": int((got["device"] == dm_dev).sum()),
                        "member MiB written": int(member_writes["length"].sum()) // MIB}
            wait_for("16 logical requests and 8 MiB written to the members", seen,
                     lambda n: n["logical"] >= 16 and n["member MiB written"] >= 8, 120, every=0)
            parts.append(cap.poll(200))
            got = record.concat(parts)
            remaps = cap.remaps()
            st = cap.stats()
    logical = got[got["device"] == dm_dev]
    # the dm device: logical offsets, as the application issued them, no latency
    for op in (record.WRITE, record.READ):   # 8 writes then 8 reads of 1 MiB, as issued
        mine = logical[logical["op"] == op]
        assert sorted(mine["offset"].tolist()) == [i * MIB for i in range(8)]
        assert set(mine["length"].tolist()) == {MIB}
    assert (logical["latency_ns"] == 0).all()
    # the members: physical offsets, each request with its latency
    fast = got[got["device"] == fast_dev]
    slow = got[got["device"] == slow_dev]
    assert len(fast) and len(slow)
    assert (fast["latency_ns"] > 0).all() and (slow["latency_ns"] > 0).all()
    assert fast["offset"].min() >= 64 * MIB and slow["offset"].min() >= 32 * MIB
    assert int(fast["length"][fast["op"] == record.WRITE].sum()) == 4 * MIB
    assert int(slow["length"][slow["op"] == record.WRITE].sum()) == 4 * MIB
    # the remaps tell where each logical range went
    assert len(remaps) > 0
    assert set(remaps["old_dev"].tolist()) == {dm_dev}
    assert set(remaps["dev"].tolist()) <= {fast_dev, slow_dev}
    assert st["lost"] == 0


WRITE_MS = 100


@pytest.mark.parametrize("fast", [False, True])
def test_a_member_that_is_a_dm_device_is_recorded_when_its_bios_complete(ioctl_dm, fast):
    """A dm device over a member that is itself a dm device (a dm-delay holding every write
    WRITE_MS, over the NVMe), traced as the live controller traces its members (completion=):
    each bio the upper device queued to the member is recorded once, at the member's
    addresses, when it completed: a write's latency covers its delay (the kernel traces the
    completion of the bio queued to the member, after the clone the member made of it for the
    NVMe completed, not of that clone), and the bytes written are the bytes the upper device
    wrote, none twice."""
    from hbl import record
    from hbl.capture import MODE_BIO_DONE, Capture
    with device("hbl-capm", Table([Delay(8 * EXT, FAST, 64 * EXT, ms=0, write_ms=WRITE_MS)]), ioctl_dm) as m, \
            device("hbl-capt", Table([Linear(4 * EXT, m.path, 2 * EXT)]), ioctl_dm) as d:
        with Capture([d.path, m.path], fast=fast, completion=[m.path]) as cap:
            (top_dev, _, _), (m_dev, m_mode, _) = cap.devices
            assert m_mode == MODE_BIO_DONE
            time.sleep(0.3)
            t0 = time.time_ns()
            write_random(d.path, 0, 4 * MIB, seed=12)
            read_digests(d.path, 0, 4 * MIB)
            parts = []

            def seen():
                parts.append(cap.poll(200))
                got = record.concat(parts)
                mine = got[got["device"] == m_dev]
                return {"member MiB written": int(mine["length"][mine["op"] == record.WRITE].sum()) // MIB,
                        "member MiB read": int(mine["length"][mine["op"] == record.READ].sum()) // MIB}
            wait_for("4 MiB written and read on the member", seen,
                     lambda n: n["member MiB written"] >= 4 and n["member MiB read"] >= 4, 120, every=0)
            parts.append(cap.poll(200))
            got = record.concat(parts)
            st = cap.stats()
    top = got[got["device"] == top_dev]
    assert len(top) == 8 and (top["latency_ns"] == 0).all()       # the upper device: at queue, as before
    mine = got[got["device"] == m_dev]
    w, r = mine[mine["op"] == record.WRITE], mine[mine["op"] == record.READ]
    assert int(w["length"].sum()) == 4 * MIB and int(r["length"].sum()) == 4 * MIB      # each bio once
    assert w["offset"].min() >= 2 * MIB and (w["offset"] + w["length"]).max() <= 6 * MIB  # the member's addresses
    # (dm-delay counts its delay in timer ticks, 4 ms in the guest: a write may wait a tick less)
    assert (w["latency_ns"] >= 0.9 * WRITE_MS * 1_000_000).all(), sorted(w["latency_ns"].tolist())[:4]
    assert (r["latency_ns"] > 0).all() and (r["latency_ns"] < WRITE_MS * 1_000_000).all()
    assert (mine["time_ns"].astype(np.int64) >= t0).all()
    assert st["lost"] == 0


def test_the_capture_tracepoints_are_pinned_by_the_guest_init():
    """Each tracepoint the capture attaches to already has two probes (the guest init's idle
    ftrace events, in the top trace array and an instance), so attaching or detaching a
    capture patches no kernel code: under TCG a vCPU running through a call site as it is
    patched can livelock (vm/guest/stress_tracepoints.py).  Recording stays off in both."""
    t = "/sys/kernel/tracing"
    for base in (t, t + "/instances/hbl-pin"):
        assert open(base + "/tracing_on").read().strip() == "0", base
        for ev in ("block_rq_issue", "block_rq_complete", "block_bio_queue", "block_bio_complete", "block_bio_remap"):
            assert open("%s/events/block/%s/enable" % (base, ev)).read().strip() == "1", (base, ev)
