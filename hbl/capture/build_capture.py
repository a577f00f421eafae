"""cffi build of the capture consumer (hbl._capture) and clang build of the BPF object.

Used at install by setup.py when the host has what it needs (clang and
libbpf's headers, which scripts/bootstrap.sh installs); otherwise hbl is
built without live capture and `hbl trace` says how to get it.  Importing
this module compiles nothing: setup.py's build step calls build_bpf_object().
"""
import os
import pathlib
import shutil
import subprocess
import sys

from cffi import FFI

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "ctypes_core"))
from build_core import cdef_text, ffibuilder as core_ffi  # noqa: E402

BPF_SRC = ROOT / "ebpf" / "hbl_capture.bpf.c"
BPF_OBJ = ROOT / "hbl" / "capture" / "hbl_capture.bpf.o"


def available():
    """(True, '') when clang and libbpf's headers are present, else (False, why)."""
    if not shutil.which("clang"):
        return False, "clang is not installed"
    if not os.path.exists("/usr/include/bpf/libbpf.h"):
        return False, "libbpf headers are not installed (Debian: libbpf-dev)"
    return True, ""


def build_bpf_object():
    cmd = ["clang", "-O2", "-g", "-target", "bpf", "-D__TARGET_ARCH_x86", "-I", str(ROOT / "ebpf"),
           "-c", str(BPF_SRC), "-o", str(BPF_OBJ)]
    subprocess.run(cmd, check=True)


ffibuilder = FFI()
ffibuilder.include(core_ffi)
ffibuilder.cdef(cdef_text(ROOT / "ebpf" / "hbl_event.h") + "\n" +
                cdef_text(ROOT / "hbl" / "capture" / "capture_api.h"))
ffibuilder.set_source(
    "hbl._capture",
    '#include "capture_api.h"\n',
    sources=[str((ROOT / "hbl" / "capture" / "consumer.c").relative_to(ROOT))],
    include_dirs=["ctypes_core", "ebpf", "hbl/capture"],
    extra_compile_args=["-O2", "-std=gnu11", "-Wall"],
    libraries=["bpf"],
)
