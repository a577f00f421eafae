"""cffi build script (API mode, out-of-line): compiles the agent core into hbl._core.

Run by setuptools at install (setup.py: cffi_modules).  The cdef is read from
hbl_api.h, the one header that defines every type crossing the boundary.
"""
import os
import pathlib
import platform
import re

from cffi import FFI

HERE = pathlib.Path(__file__).resolve().parent


def cdef_text(header: pathlib.Path) -> str:
    """The header without preprocessor lines; `#if HBL_CDEF` blocks keep their first branch."""
    out, skipping = [], False
    for line in header.read_text().splitlines():
        stripped = line.strip()
        if stripped.startswith("#if HBL_CDEF"):
            skipping = False
            continue
        if stripped.startswith("#else") and not skipping:
            skipping = True
            continue
        if stripped.startswith("#endif") and skipping:
            skipping = False
            continue
        if skipping or stripped.startswith("#"):
            continue
        out.append(line)
    text = "\n".join(out)
    return re.sub(r"/\*.*?\*/", "", text, flags=re.S)


# x86-64-v3's instructions (AVX2, FMA, BMI and the rest of that level)
X86_64_V3 = {"avx", "avx2", "bmi1", "bmi2", "f16c", "fma", "abm", "movbe", "xsave"}


def arch_flags() -> list[str]:
    """The target: on an x86-64 host with AVX2 and FMA, x86-64-v3 tuned for this CPU, not
    -march=native: the same build then runs in the QEMU testbed, whose TCG CPU has AVX2 but
    not AVX-512 (a native build on an AVX-512 host dies there of SIGILL), and it was as fast
    here (int16 forward pass 68 against 67 ns, simulator throughput within noise).  Elsewhere
    -march=native.  HBL_MARCH overrides (e.g. HBL_MARCH=native)."""
    want = os.environ.get("HBL_MARCH")
    if want:
        return ["-march=" + want]
    if platform.machine() in ("x86_64", "AMD64"):
        try:
            with open("/proc/cpuinfo") as f:
                flags = next((set(line.split(":", 1)[1].split()) for line in f if line.startswith("flags")), set())
        except OSError:
            flags = set()
        if X86_64_V3 <= flags:
            return ["-march=x86-64-v3", "-mtune=native"]
    return ["-march=native"]


def sources() -> list[str]:
    files = sorted(HERE.glob("*.c")) + sorted((HERE / "policies").glob("*.c"))
    return [str(p.relative_to(HERE.parent)) for p in files]


ffibuilder = FFI()
ffibuilder.cdef(cdef_text(HERE / "hbl_api.h"))
ffibuilder.set_source(
    "hbl._core",
    '#include "hbl_api.h"\n',
    sources=sources(),
    include_dirs=[str(HERE.relative_to(HERE.parent))],
    extra_compile_args=["-O3", *arch_flags(), "-ffast-math", "-std=gnu11", "-Wall", "-Wextra", "-Wno-unused-parameter",
                        "-Wno-missing-field-initializers"],
    libraries=["m", "pthread"],
)

if __name__ == "__main__":
    ffibuilder.compile(verbose=False)
