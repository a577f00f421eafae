"""The live device's commands without device-mapper: the safety checks on real loop devices (as
root) and the commands offline (status of a device that is down, errors that name what is wrong,
the controller's options)."""
import os
import subprocess
import sys

import pytest

from hbl.errors import HblError
from hbl.live.meta import parse_superblock

from helpers import MIB, live_meta as meta


def _loop_why():
    if os.geteuid() != 0:
        return "needs root (loop devices)"
    if subprocess.run(["losetup", "-f"], capture_output=True).returncode:
        return "no free loop device"
    return None


LOOP_WHY = _loop_why()


@pytest.fixture
def loops(tmp_path):
    if LOOP_WHY:
        pytest.skip(LOOP_WHY)
    devs = []
    for i, mb in enumerate((16, 32)):
        f = tmp_path / ("d%d.img" % i)
        with open(f, "wb") as fh:
            fh.truncate(mb * MIB)
        devs.append(subprocess.run(["losetup", "-f", "--show", str(f)], capture_output=True, text=True,
                                   check=True).stdout.strip())
    yield devs
    for d in devs:
        subprocess.run(["losetup", "-d", d])


def hbl(*args, state):
    return subprocess.run([sys.executable, "-m", "hbl.cli"] + list(args) + ["--state-dir", state],
                          capture_output=True, text=True)


def test_safety_signatures(loops):
    from hbl.live.safety import Refused, check_device, check_devices
    fast, slow = loops
    check_devices([fast, slow])                     # blank: fine
    subprocess.run(["mkfs.ext4", "-q", "-F", fast], check=True)
    with pytest.raises(Refused, match="ext2/3/4"):
        check_device(fast)
    check_device(fast, force=True)                  # --force overrides a signature
    with open(slow, "r+b") as f:                    # a GPT header, as a partitioning tool leaves it
        f.seek(510)
        f.write(b"\x55\xaa" + b"EFI PART")
    with pytest.raises(Refused, match="GPT partition table"):
        check_device(slow)
    with pytest.raises(Refused, match="same device"):
        check_devices([fast, fast], force=True)
    with pytest.raises(Refused, match="2 to 4"):
        check_devices([fast])


def test_safety_mounted_is_refused_even_with_force(loops, tmp_path):
    from hbl.live.safety import Refused, check_device
    fast, _ = loops
    subprocess.run(["mkfs.ext4", "-q", "-F", fast], check=True)
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    if subprocess.run(["mount", fast, str(mnt)], capture_output=True).returncode:
        pytest.skip("cannot mount ext4 here")
    try:
        with pytest.raises(Refused, match="mounted on %s" % mnt):
            check_device(fast, force=True)
    finally:
        subprocess.run(["umount", str(mnt)])


def test_up_refuses_before_writing_anything(loops, tmp_path):
    """On a host without device-mapper, hbl up says so and writes nothing: no superblock, no metadata."""
    fast, slow = loops
    state = str(tmp_path / "state")
    r = hbl("up", "t0", "--dev", fast, "--dev", slow, state=state)
    assert r.returncode == 2 and "Traceback" not in r.stderr
    if os.path.exists("/dev/mapper/control"):
        pytest.skip("device-mapper is available here: the VM suite covers hbl up")
    assert "device-mapper is not available" in r.stderr
    with open(fast, "rb") as f:
        assert parse_superblock(f.read(4096)) is None
    assert not os.path.exists(os.path.join(state, "t0", "meta"))


# ---- the commands, offline (no device-mapper needed) ----

def test_status_and_top_of_a_device_that_is_down(tmp_path):
    import json
    state = str(tmp_path)
    m = meta()
    os.makedirs(os.path.join(state, "t"))
    m.counters = {"reads": 10, "writes": 5, "promotions": 3, "evictions": 2, "migrated_bytes": 5 * MIB}
    m.save(os.path.join(state, "t", "meta"))
    env = dict(os.environ, HBL_RUN_DIR=str(tmp_path / "run"))
    r = subprocess.run([sys.executable, "-m", "hbl.cli", "status", "t", "--json", "--state-dir", state],
                       capture_output=True, text=True, env=env)
    assert r.returncode == 0, r.stderr
    st = json.loads(r.stdout)
    assert st["state"] == "down" and st["extents"] == 86 and st["promotions"] == 3
    assert [d["extents"] for d in st["devices"]] == [27, 59] and [d["free_slots"] for d in st["devices"]] == [4, 4]
    r = subprocess.run([sys.executable, "-m", "hbl.cli", "status", "t", "--state-dir", state],
                       capture_output=True, text=True, env=env)
    assert r.returncode == 0 and "t: down" in r.stdout and "/dev/b" in r.stdout
    r = subprocess.run([sys.executable, "-m", "hbl.cli", "top", "t", "--once", "--state-dir", state],
                       capture_output=True, text=True, env=env)
    assert r.returncode == 0 and "hbl top t" in r.stdout and "none yet" in r.stdout


@pytest.mark.parametrize("args, message", [
    (["status", "nope"], "no live device nope"),
    (["top", "nope", "--once"], "no live device nope"),
    (["status", "bad/name"], "not a usable device name"),
    (["up", "x", "--copy-limit", "fast"], "'fast' is not a size"),
    (["up", "x", "--copy-limit", "100K"], "--copy-limit 100K: at least 1M a second"),
    (["up", "x", "--copy-rate", "512K"], "--copy-rate 512K: at least 1M a second"),
    (["up", "x", "--copy-rate", "8M", "--copy-limit", "8M"], "one or the other"),
    (["up", "x", "--copy-depth", "0"], "--copy-depth 0: from 1 to 16"),
])
def test_commands_name_what_is_wrong(tmp_path, args, message):
    r = subprocess.run([sys.executable, "-m", "hbl.cli"] + args + ["--state-dir", str(tmp_path)],
                       capture_output=True, text=True)
    assert r.returncode == 2 and message in r.stderr and "Traceback" not in r.stderr


def test_up_without_devices_needs_metadata_and_no_creation_flags(tmp_path):
    if os.geteuid() != 0:
        pytest.skip("hbl up checks for root first")
    r = hbl("up", "nope", state=str(tmp_path))
    assert r.returncode == 2 and "no live device nope" in r.stderr and "--dev FAST --dev SLOW" in r.stderr
    os.makedirs(tmp_path / "t")
    meta().save(str(tmp_path / "t" / "meta"))
    r = hbl("up", "t", "--force", state=str(tmp_path))
    assert r.returncode == 2 and "go with --dev" in r.stderr


def test_controller_pid_is_none_without_a_running_controller(tmp_path, monkeypatch):
    from hbl.live.paths import Paths, controller_pid
    monkeypatch.setenv("HBL_RUN_DIR", str(tmp_path / "run"))
    p = Paths("x", str(tmp_path))
    assert controller_pid(p) is None
    os.makedirs(os.path.dirname(p.lock), exist_ok=True)
    open(p.lock, "w").write("12345")
    assert controller_pid(p) is None           # a stale pid file without the lock held means nothing


def test_state_directory_that_cannot_be_made_is_one_line(tmp_path, monkeypatch):
    from hbl.live.paths import Paths
    monkeypatch.setenv("HBL_RUN_DIR", str(tmp_path / "run"))
    ro = tmp_path / "ro"
    ro.write_text("a file, not a directory")
    with pytest.raises(HblError) as e:
        Paths("x", str(ro)).make()
    assert str(ro / "x") in str(e.value) and "--state-dir" in str(e.value) and "\n" not in str(e.value)
    ok = Paths("y", str(tmp_path / "state"))
    ok.make()
    assert os.path.isdir(ok.dir) and os.path.isdir(ok.run)


def test_the_controller_takes_its_options_and_the_metadata_for_the_rest(tmp_path, monkeypatch):
    """hbl up's flags reach the controller as one Options; what they leave out comes from the
    metadata (the policy) or the environment (the rate the adaptive copy limit starts at)."""
    from hbl.live.controller import Controller
    from hbl.live.options import Options
    from hbl.live.paths import Paths
    monkeypatch.setenv("HBL_RUN_DIR", str(tmp_path / "run"))
    monkeypatch.setenv("HBL_COPY_RATE", str(8 * MIB))
    p = Paths("t", str(tmp_path))
    p.make()
    m = meta()
    m.policy = "lru"
    m.save(p.meta)
    c = Controller(p, Options(max_batch=3), log=lambda msg: None)
    assert c.policy == "lru" and c.options.max_batch == 3 and c.options.copy_rate == 8 * MIB
    assert c.options.interval == Options.interval
    c = Controller(p, Options(policy="smq", copy_rate=16 * MIB), log=lambda msg: None)
    assert c.policy == "smq" and c.options.copy_rate == 16 * MIB and c.options.max_batch == Options.max_batch


def test_up_of_damaged_metadata_is_one_line_from_the_controller(tmp_path):
    """The parent of a daemon no longer loads the metadata itself (it would load NumPy for it,
    seconds under TCG on every hbl up): the controller it starts does, and its one-line error
    comes back as the parent's, once prefixed."""
    if os.geteuid() != 0:
        pytest.skip("hbl up checks for root first")
    os.makedirs(tmp_path / "t")
    with open(tmp_path / "t" / "meta", "wb") as f:
        f.write(b"not metadata at all" * 200)
    r = hbl("up", "t", state=str(tmp_path))
    assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr
    assert "the controller of t did not start: " in r.stderr and "not hbl metadata" in r.stderr, r.stderr
    assert r.stderr.count("hbl: error:") == 1, r.stderr


def test_up_parent_loads_neither_numpy_nor_the_core(tmp_path):
    """`hbl up NAME` (a daemon) imports only what starting the controller needs, up to the moment
    it starts it: the controller loads NumPy and the C core itself (under TCG they cost seconds
    a start, paid twice before)."""
    if os.geteuid() != 0:
        pytest.skip("hbl up checks for root first")
    os.makedirs(tmp_path / "t")
    (tmp_path / "t" / "meta").write_bytes(b"x")
    code = ("import sys, subprocess\n"
            "def spawn(*a, **k):\n"
            "    print('numpy' in sys.modules, 'hbl._core' in sys.modules, flush=True)\n"
            "    raise SystemExit(0)\n"
            "subprocess.Popen = spawn\n"
            "from hbl.cli import main\n"
            "main(['up', 't', '--state-dir', %r])\n" % str(tmp_path))
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       env=dict(os.environ, HBL_RUN_DIR=str(tmp_path / "run")))
    assert r.returncode == 0 and r.stdout.split() == ["False", "False"], r.stdout + r.stderr
