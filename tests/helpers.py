"""Helpers several test files share (tests/ is on sys.path under pytest: `from helpers import ...`)."""
import importlib.util
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HBL = [sys.executable, "-m", "hbl.cli"]


def script(name):
    """scripts/NAME.py loaded as a module (a fresh one each call), so a test calls its functions."""
    spec = importlib.util.spec_from_file_location(name, os.path.join(ROOT, "scripts", name + ".py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def hbl(*args, check=True, timeout=300, **kw):
    """`hbl ARGS` in a subprocess, its output captured; with check, a failure is an assertion
    showing its stderr."""
    p = subprocess.run(HBL + list(args), capture_output=True, text=True, timeout=timeout, **kw)
    if check:
        assert p.returncode == 0, "hbl %s failed (%d):\n%s" % (" ".join(map(str, args)), p.returncode, p.stderr)
    return p


def capture_why_not(needs):
    """Why the libbpf capture on a loop device cannot run here (needs: what needs root, for the
    skip message), or None."""
    if os.geteuid() != 0:
        return "needs root (%s)" % needs
    if not os.path.exists("/sys/kernel/btf/vmlinux"):
        return "kernel has no BTF"
    try:
        from hbl import _capture  # noqa: F401
    except ImportError:
        return "hbl built without the libbpf capture (clang/libbpf-dev missing at install)"
    if subprocess.run(["losetup", "-f"], capture_output=True).returncode != 0:
        return "no free loop device"
    return None


# ---- the live device's tests (tests/test_live_*.py) ----

MIB = 1 << 20


def live_requests(extents, ops, t0=0):
    """Records of 4 KiB requests, one to the start of each of `extents` (1 MiB extents), ops as given."""
    import numpy as np
    from hbl import record
    r = record.empty(len(extents))
    r["offset"] = np.asarray(extents) * MIB
    r["length"] = 4096
    r["op"] = ops
    r["latency_ns"] = 100_000
    r["time_ns"] = t0 + np.arange(len(extents)) * 1000
    return r


def live_meta():
    """The metadata of a new live device over two small members (32 and 64 MiB, 1 MiB extents), as
    layout.initial_mapping lays it out."""
    from hbl.live import layout
    from hbl.live.meta import Meta, new_uuid
    members = [{"path": "/dev/a", "size": 32 * MIB, "slots": 31, "spares": 4, "data_start": MIB},
               {"path": "/dev/b", "size": 64 * MIB, "slots": 63, "spares": 4, "data_start": MIB}]
    dev, slot, written = layout.initial_mapping(members)
    return Meta("t", new_uuid(), MIB, members, dev, slot, written)
