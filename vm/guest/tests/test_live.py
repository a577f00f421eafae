"""The live device end to end, inside the VM: `hbl up` over the emulated NVMe
and HDD, a verifying workload while the agents migrate, crashes of the
controller at every step of the migration protocol and at random moments,
and the refusals."""
import hashlib
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

from conftest import FAST, SLOW, wait_for, wait_for_counts

HERE = os.path.dirname(os.path.abspath(__file__))
HBL = [sys.executable, "-m", "hbl.cli"]
STATE = "/run/hbl-test"
MIB = 1 << 20
REGION = 600 * MIB            # the workload's region starts on the HDD part of the logical space
BLOCKS = 65536                # 256 MiB of 4 KiB blocks
# how long a test waits for the events it needs (batches, migrations, a crash point) before it
# fails: a stuck run, not a slow one (a loaded 2-core host takes a few times the unloaded time)
DEADLINE = 600

pytest.importorskip("hbl.capture")


def hbl(*args, env=None, check=True, timeout=300):
    e = dict(os.environ, HBL_STATE_DIR=STATE, **(env or {}))
    r = subprocess.run(HBL + list(args), capture_output=True, text=True, env=e, timeout=timeout, cwd="/hbl")
    if check and r.returncode != 0:
        raise AssertionError("hbl %s failed (%d):\n%s\n%s" % (" ".join(args), r.returncode, r.stdout, r.stderr))
    return r


def status(name):
    return json.loads(hbl("status", name, "--json").stdout)


def live_status(name):
    """What `hbl status NAME --json` prints, read in this process: polling it every second
    starts no interpreter in the guest, whose CPUs the controller and the workload need."""
    from hbl.live.cli import status_of
    from hbl.live.paths import Paths
    return status_of(Paths(name, STATE), name)


def running(proc, what):
    """Fails at once if the background workload ended before the test had its events."""
    if proc.poll() is not None:
        out, err = proc.communicate()
        raise AssertionError("%s ended (status %d) before the test had the events it waits for: %s %s" % (
            what, proc.returncode, out[-2000:], err[-2000:]))


def stop(writer):
    """Ends a background blockcheck run (on SIGTERM it stops and reports); its status and report."""
    if writer.poll() is None:
        writer.send_signal(signal.SIGTERM)
    out, err = writer.communicate(timeout=300)
    return writer.returncode, out, err


def acknowledged(log):
    """Writes acknowledged so far, by the blockcheck log (a line each)."""
    try:
        with open(log) as f:
            return sum(1 for _ in f)
    except FileNotFoundError:
        return 0


def heads():
    """Digests of the first MiB of both members (superblocks and the start of the data)."""
    out = []
    for p in (FAST, SLOW):
        with open(p, "rb", buffering=0) as f:
            out.append(hashlib.sha256(f.read(MIB)).hexdigest())
    return out


def wipe():
    names = os.listdir("/dev/mapper") if os.path.isdir("/dev/mapper") else []
    for name in sorted(names, key=lambda n: "." in n):     # a device before its views (NAME.0, NAME.hold)
        if name.startswith("h") and name != "control":
            subprocess.run(["dmsetup", "remove", "--force", name], capture_output=True)
    for p in (FAST, SLOW):
        with open(p, "r+b", buffering=0) as f:
            f.write(bytes(MIB))
            os.fsync(f.fileno())
    shutil.rmtree(STATE, ignore_errors=True)


WRITERS = []      # background workloads, ended by the fixture if a test fails while they run


def start_background(cmd):
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    WRITERS.append(p)
    return p


@pytest.fixture
def fresh():
    wipe()
    yield
    while WRITERS:
        p = WRITERS.pop()
        if p.poll() is None:
            p.kill()
        p.communicate()
    for name in ("h0", "h1", "h2"):
        if os.path.exists(os.path.join(STATE, name, "meta")):
            hbl("down", name, check=False)
    wipe()


def controller_alive(name):
    from hbl.live.paths import Paths, controller_pid
    return controller_pid(Paths(name, STATE)) is not None


CRASH_BLOCKS = 180_000        # 700 MiB from offset 0: more than the NVMe holds, so extents keep moving


def blockcheck(action, log, seconds=10, seed=1, background=False):
    """A blockcheck run or verify over /dev/mapper/h1; in the background, seconds is the
    writer's deadline and the test stops it when it has what it waits for."""
    cmd = [sys.executable, os.path.join(HERE, "blockcheck.py"), action, "/dev/mapper/h1", log,
           "--blocks", str(CRASH_BLOCKS), "--offset", "0", "--seconds", str(seconds), "--seed", str(seed)]
    if background:
        return start_background(cmd)
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    return r.returncode, r.stdout + r.stderr


# ---- refusals ----

def test_refuses_ext4_signature_and_changes_nothing(fresh):
    subprocess.run(["mkfs.ext4", "-q", "-F", FAST], check=True)
    before = heads()
    r = hbl("up", "h0", "--dev", FAST, "--dev", SLOW, check=False)
    assert r.returncode == 2
    assert FAST in r.stderr and "ext2/3/4 file system" in r.stderr and "--force" in r.stderr
    assert "Traceback" not in r.stderr
    assert heads() == before
    assert not os.path.exists("/dev/mapper/h0") and not os.path.exists(os.path.join(STATE, "h0", "meta"))


def test_refuses_mounted_device_even_with_force(fresh):
    subprocess.run(["mkfs.ext4", "-q", "-F", FAST], check=True)
    os.makedirs("/run/hbl-mnt", exist_ok=True)
    subprocess.run(["mount", FAST, "/run/hbl-mnt"], check=True)
    try:
        from hbl.live.meta import parse_superblock, read_head
        before = heads()[1]            # (the mounted file system itself may touch its own first MiB)
        for extra in ([], ["--force"]):
            r = hbl("up", "h0", "--dev", FAST, "--dev", SLOW, *extra, check=False)
            assert r.returncode == 2
            assert "mounted on /run/hbl-mnt" in r.stderr and "Traceback" not in r.stderr
        assert heads()[1] == before
        assert parse_superblock(read_head(FAST)) is None and parse_superblock(read_head(SLOW)) is None
    finally:
        subprocess.run(["umount", "/run/hbl-mnt"], check=True)


def test_refuses_corrupt_metadata_and_changes_nothing(fresh):
    hbl("up", "h0", "--dev", FAST, "--dev", SLOW, "--policy", "lru")
    hbl("down", "h0")
    meta = os.path.join(STATE, "h0", "meta")
    data = bytearray(open(meta, "rb").read())
    data[len(data) // 2] ^= 0x40          # one flipped bit in the mapping
    open(meta, "wb").write(data)
    before = heads()
    r = hbl("up", "h0", check=False)
    assert r.returncode == 2
    assert meta in r.stderr and "checksum" in r.stderr and "Traceback" not in r.stderr
    assert not os.path.exists("/dev/mapper/h0")
    assert open(meta, "rb").read() == bytes(data) and heads() == before


def test_refuses_a_member_of_another_device(fresh):
    hbl("up", "h0", "--dev", FAST, "--dev", SLOW, "--policy", "lru")
    hbl("down", "h0")
    r = hbl("up", "h2", "--dev", FAST, "--dev", SLOW, check=False)
    assert r.returncode == 2 and "hbl member superblock" in r.stderr
    # and re-assembly checks the members are the ones it was built on
    r = hbl("up", "h0", check=True)
    assert status("h0")["state"] == "running"


# ---- end to end with fio ----

def test_fio_verify_while_agents_migrate(fresh):
    hbl("up", "h0", "--dev", FAST, "--dev", SLOW)          # harmonia
    st0 = status("h0")
    assert st0["state"] == "running" and st0["policy"] == "harmonia"
    # fio verifies until the run has what the assertions below are about (migrations, a trained
    # agent, the copy throttle's idle level, four timeline windows and the hot extents on the
    # NVMe), then it is stopped; its runtime is only the deadline
    fio = subprocess.Popen(["fio", "--name=zipf", "--filename=/dev/mapper/h0", "--direct=1", "--ioengine=libaio",
                            "--iodepth=4", "--rw=randrw", "--rwmixread=70", "--bs=4k", "--offset=%d" % REGION,
                            "--size=%d" % (BLOCKS * 4096), "--random_distribution=zipf:1.2", "--verify=crc32c",
                            "--verify_backlog=256", "--verify_fatal=1", "--time_based", "--runtime=%d" % DEADLINE,
                            "--output-format=json"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    t0 = time.time()
    try:
        def progress():
            running(fio, "fio")
            st = live_status("h0")
            hits = window_hits(st)
            return {"batches": st["batches"], "promotions": st["promotions"],
                    "train_steps": st["agents"][0]["train_steps"],
                    "idle level measured": int(bool(st["copy_idle_read_latency_us"])),
                    "timeline windows": len(hits),
                    "fast request share rise (%)": int(100 * (max(hits[-3:]) - hits[0])) if hits else 0}
        got = wait_for_counts({"batches": 1, "promotions": 1, "train_steps": 1, "idle level measured": 1,
                               "timeline windows": 4, "fast request share rise (%)": 21}, progress, DEADLINE, every=2)
    finally:
        stopped = fio.poll() is None
        if stopped:
            fio.send_signal(signal.SIGTERM)
        out, err = fio.communicate(timeout=300)
    print("fio ran %.0f s: %s" % (time.time() - t0, got))
    assert fio.returncode == (128 if stopped else 0), err[-2000:]        # (128: fio's status when signalled)
    job = json.loads(out[out.index("{"):])["jobs"][0]
    assert job["error"] == 0
    time.sleep(2)
    st = status("h0")
    print(json.dumps({k: st[k] for k in ("reads", "writes", "read_hit_ratio", "fast_request_share", "promotions", "evictions",
                                          "migrated_bytes", "stall_ms", "hold_ms", "timeline", "controller_cpu")}))
    assert st["promotions"] > 0 and st["migrated_bytes"] > 0
    assert st["ebpf"]["lost"] == 0 and st["rollbacks"] == 0
    assert st["hold_ms"]["count"] == st["batches"] > 0     # every batch held only its moving extents
    assert st["stall_ms"]["count"] == 2 * st["batches"]     # two routing messages a batch, nothing else
    assert set(st["batch_steps_ms_p50"]) >= {"prepare", "copy", "drain", "records", "recopy", "metadata", "release"}
    placement = st["agents"][0]              # trained, and only off the request path
    assert placement["train_steps"] > 0 and placement["background_steps"] == placement["train_steps"]
    text = hbl("status", "h0").stdout
    assert "on the training thread" in text
    # the copy throttle's idle level, measured under the workload (intervals without copies)
    assert st["copy_idle_read_latency_us"] > 0 and "read latency with no copy" in text
    assert 0 < st["controller_cpu_main"] < st["controller_cpu"]     # the training thread's share is apart
    # seen -> remap, and the part of it spent waiting for a batch
    assert 0 < st["decision_to_batch_ms"]["p50"] < st["decision_to_remap_ms"]["p50"]
    assert st["copy_depth"] == 2            # the default, through the daemon's command line
    assert "request seen -> remap done" in text
    hits = window_hits(st)
    assert len(hits) >= 4
    assert max(hits[-3:]) > hits[0] + 0.2, hits          # the hot extents came to the NVMe
    # down and up: same mapping, the data still verifies
    down = json.loads(hbl("down", "h0", "--json").stdout)       # the final status, after the last batch
    assert down["state"] == "stopped" and down["generation"] >= st["generation"]
    assert not os.path.exists("/dev/mapper/h0")
    hbl("up", "h0")
    assert status("h0")["generation"] == down["generation"]
    top = hbl("top", "h0", "--once").stdout
    assert "hbl top h0" in top and "latest decisions" in top


def window_hits(st):
    """The share of requests the fast device served in each timeline window (5 s) with enough
    requests to tell."""
    return [w["fast_request_share"] for w in st["timeline"]
            if w["fast_request_share"] is not None and w["requests"] > 50]


# ---- crashes ----

def wait_dead(name, writer, what):
    """Until the controller is gone, the writer still writing (its I/O drives the batches that
    reach a crash point)."""
    wait_for(what, lambda: (running(writer, "the writer"), controller_alive(name))[1], lambda alive: not alive,
             DEADLINE, every=0.2)


AFTER_UP = 100        # writes acknowledged through the re-assembled device before the writer stops


def write_on_after_up(name, writer, log):
    """`hbl up` again, then the writer goes on until AFTER_UP more writes were acknowledged (the
    held I/O resumed and new I/O flows), and stops; its status and report."""
    before = acknowledged(log)
    t0 = time.time()
    hbl("up", name)                                    # re-assembles: reload + resume the held I/O
    t1 = time.time()
    wait_for_counts({"writes acknowledged after the up": AFTER_UP},
                    lambda: (running(writer, "the writer"),
                             {"writes acknowledged after the up": acknowledged(log) - before})[1],
                    DEADLINE, every=0.5)
    print("  up in %.1f s, %d writes after it in %.1f s" % (t1 - t0, AFTER_UP, time.time() - t1), flush=True)
    return stop(writer)


def test_crash_at_every_protocol_step_and_at_random(fresh):
    from hbl.live.batch import CRASH_POINTS
    log = "/run/hbl-test-ck.log"
    if os.path.exists(log):
        os.unlink(log)
    hbl("up", "h1", "--dev", FAST, "--dev", SLOW, "--policy", "lru", "--interval", "0.3")
    rc, out = blockcheck("run", log, seconds=8, seed=100)
    assert rc == 0, out
    report = []
    for i, point in enumerate(CRASH_POINTS):
        print("crash point %s" % point, flush=True)
        hbl("down", "h1")
        hbl("up", "h1", "--interval", "0.3", env={"HBL_CRASH_AT": point})
        writer = blockcheck("run", log, seconds=2 * DEADLINE, seed=200 + i, background=True)
        t0 = time.time()
        wait_dead("h1", writer, "the controller to reach crash point %s and die" % point)
        print("  the controller died %.1f s after the writer started" % (time.time() - t0), flush=True)
        rc, out, err = write_on_after_up("h1", writer, log)
        assert rc == 0, "%s: %s %s" % (point, out, err)
        rc, vout = blockcheck("verify", log)
        assert rc == 0, "after a crash at %s: %s" % (point, vout)
        logtext = open(os.path.join(STATE, "h1", "controller.log")).read()
        assert "crash point %s reached" % point in logtext
        report.append({"point": point, "writer": json.loads(out), "verify": json.loads(vout)})
    rng = random.Random(7)
    for k in range(3):
        pid = status("h1")["pid"]
        writer = blockcheck("run", log, seconds=2 * DEADLINE, seed=300 + k, background=True)
        time.sleep(rng.uniform(1.0, 6.0))
        running(writer, "the writer")                    # the kill comes while it writes
        os.kill(pid, signal.SIGKILL)
        wait_dead("h1", writer, "the controller to die of SIGKILL")
        rc, out, err = write_on_after_up("h1", writer, log)
        assert rc == 0, out + err
        rc, vout = blockcheck("verify", log)
        assert rc == 0, "after a random kill: %s" % vout
        report.append({"point": "random", "writer": json.loads(out), "verify": json.loads(vout)})
    st = status("h1")
    assert st["promotions"] + st["evictions"] > 0
    with open("/out/crash-report.json", "w") as f:
        json.dump({"runs": report, "crash_points": list(CRASH_POINTS), "random_kills": 3,
                   "final_status": {k: st[k] for k in ("generation", "promotions", "evictions", "batches")}}, f,
                  indent=1)


# ---- member faults ----

def test_a_member_that_fails_mid_run_is_isolated(fresh):
    """The HDD member behind a dm device that is switched to the error target mid-run:
    the controller marks it failed (persisted, one log line, DEGRADED in status), stops
    migrating, and keeps serving the NVMe's extents; the failed member's extents
    return errors, not data."""
    import mmap
    from dmsetup import Device, Error, Linear, Table, backend
    from hbl.live.meta import Meta
    dm = backend()
    size = os.path.getsize(SLOW) if os.path.isfile(SLOW) else int(open("/sys/block/vda/size").read()) * 512
    member = Device("fm", dm).create(Table([Linear(size // 512, SLOW, 0)]))
    log = "/run/hbl-test-fault.log"
    try:
        hbl("up", "h1", "--dev", FAST, "--dev", member.path, "--policy", "lru", "--interval", "0.3")
        writer = blockcheck("run", log, seconds=2 * DEADLINE, seed=500, background=True)
        wait_for_counts({"promotions before the fault": 4},
                        lambda: (running(writer, "the writer"),
                                 {"promotions before the fault": live_status("h1")["promotions"]})[1], DEADLINE)
        member.load(Table([Error(size // 512)]))          # the member fails: every I/O to it errs
        member.resume()
        # (the writer ends at its first write to the failed member, an I/O error; its report is not the point)
        wait_for("the controller to mark %s failed" % member.path, lambda: live_status("h1").get("degraded"),
                 bool, DEADLINE)
        st = status("h1")
        stop(writer)
        assert st["degraded"] and member.path in st["degraded"], st.get("degraded")
        assert "DEGRADED: %s failed" % member.path in hbl("status", "h1").stdout
        moves = st["promotions"] + st["evictions"]
        time.sleep(5)
        assert status("h1")["promotions"] + status("h1")["evictions"] == moves      # no migration since
        logtext = open(os.path.join(STATE, "h1", "controller.log")).read()
        assert sum(1 for line in logtext.splitlines() if "(%s) failed:" % member.path in line) == 1
        assert Meta.load(os.path.join(STATE, "h1", "meta")).members[1].get("failed")   # persisted
        m = Meta.load(os.path.join(STATE, "h1", "meta"))
        buf = mmap.mmap(-1, 4096)
        fd = os.open("/dev/mapper/h1", os.O_RDONLY | os.O_DIRECT)
        try:
            healthy = int(np.flatnonzero(m.dev == 0)[0])
            assert os.preadv(fd, [buf], healthy * m.extent_bytes) == 4096          # the NVMe's extents serve
            failed = int(np.flatnonzero(m.dev == 1)[0])
            with pytest.raises(OSError):
                os.preadv(fd, [buf], failed * m.extent_bytes)                     # an error, not data
        finally:
            os.close(fd)
        print(json.dumps({"degraded": st["degraded"], "moves_before": moves, "rollbacks": st["rollbacks"]}))
    finally:
        hbl("down", "h1", check=False)
        member.remove()


# ---- slow member writes while the same extents move every batch ----

FLIP = list(range(600, 606))      # 6 extents of 1 MiB, on the HDD at first (the first batch moves them)


def test_no_acknowledged_write_lost_while_member_writes_are_slow(fresh):
    """The HDD member is a dm-delay that holds every write 300 ms, so that writes issued
    through the live view are still in flight while a batch copies, holds and drains;
    16 writers (16 writes in flight) on 6 extents that the controller moves to the other
    member in every batch (HBL_TEST_FLIP), back and forth, batch after batch, until the run
    made the races it is after (8 batches, every extent moved 4 times each way, 300 slow
    writes acknowledged; as long as that takes).  Every acknowledged write must read back,
    during the run and after it."""
    from dmsetup import Delay, Device, Table, backend
    from hbl.live.meta import Meta
    dm = backend()
    sectors = int(open("/sys/block/vda/size").read())
    member = Device("hdl", dm).create(Table([Delay(sectors, SLOW, 0, ms=0, write_ms=300)]))
    log = "/run/hbl-test-slow.log"
    if os.path.exists(log):
        os.unlink(log)
    try:
        # (copies at a fixed rate, so that the batches the races need come whatever the adaptive
        # throttle makes of the members' latencies under 16 writers: it once backed off to its
        # floor here and left too few)
        hbl("up", "h1", "--dev", FAST, "--dev", member.path, "--policy", "lru", "--interval", "0.3",
            "--copy-rate", "256M", env={"HBL_TEST_FLIP": ",".join(map(str, FLIP))})
        assert Meta.load(os.path.join(STATE, "h1", "meta")).extent_bytes == MIB     # (FLIP counts in MiB)
        cmd = [sys.executable, os.path.join(HERE, "blockcheck.py"), "run", "/dev/mapper/h1", log,
               "--blocks", str(len(FLIP) * 256), "--offset", str(FLIP[0] * MIB), "--seconds", str(2 * DEADLINE),
               "--threads", "16", "--write-fraction", "0.8", "--seed", "700"]
        writer = start_background(cmd)
        # the test is only as good as the races it made: many batches moved the extents,
        # while hundreds of slow writes were acknowledged
        need = {"batches": 8, "promotions": 4 * len(FLIP), "evictions": 4 * len(FLIP), "writes": 300}

        def progress():
            running(writer, "the writer")
            st = live_status("h1")
            return dict({k: st[k] for k in ("batches", "promotions", "evictions")}, writes=acknowledged(log))
        t0 = time.time()
        got = wait_for_counts(need, progress, DEADLINE)
        rc, out, err = stop(writer)
        run = json.loads(out)
        assert rc == 0, "reads during the run: %s %s" % (out, err[-2000:])
        st = status("h1")
        rc, vout = blockcheck_at(log, FLIP[0] * MIB, len(FLIP) * 256)
        assert rc == 0, "after the run: %s" % vout
        print(json.dumps({"seconds": round(time.time() - t0), "at the stop": got, "writer": run,
                          "verify": json.loads(vout),
                          "batches": st["batches"],
                          "promotions": st["promotions"], "evictions": st["evictions"],
                          "recopied_bytes": st["recopied_bytes"], "rollbacks": st["rollbacks"],
                          "copy_rate_limit": st["copy_rate_limit_bytes_s"], "steps_p50": st["batch_steps_ms_p50"],
                          "hold_ms": st["hold_ms"], "settle_timeouts": st["settle_timeouts"],
                          "hold_ms_by_settle": st["hold_ms_by_settle"], "slowest_holds": st["slowest_holds"],
                          "members": [{k: d.get(k) for k in ("path", "read_latency_us", "write_latency_us",
                                                             "completion_seen")} for d in st["devices"]]},
                         default=str))
        assert st["rollbacks"] == 0
        # the dm-delay member's writes are seen at their completion: after the delay
        assert all(d["completion_seen"] for d in st["devices"]), st["devices"]
        assert st["devices"][1]["write_latency_us"] >= 0.8 * 300_000, st["devices"]
        assert all(st[k] >= v for k, v in need.items() if k != "writes") and run["writes"] >= need["writes"], st
        # and down + up: the persisted mapping holds them too
        hbl("down", "h1")
        hbl("up", "h1")
        rc, vout = blockcheck_at(log, FLIP[0] * MIB, len(FLIP) * 256)
        assert rc == 0, "after down and up: %s" % vout
    finally:
        hbl("down", "h1", check=False)
        member.remove()


def blockcheck_at(log, offset, blocks):
    r = subprocess.run([sys.executable, os.path.join(HERE, "blockcheck.py"), "verify", "/dev/mapper/h1", log,
                        "--blocks", str(blocks), "--offset", str(offset)], capture_output=True, text=True,
                       timeout=600)
    return r.returncode, r.stdout + r.stderr
