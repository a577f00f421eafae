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
