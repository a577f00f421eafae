"""cffi build script (API mode, out-of-line): compiles the agent core into hbl._core.

Run by setuptools at install (setup.py: cffi_modules).  The cdef is read from
hbl_api.h, the one header that defines every type crossing the boundary.
"""
import pathlib
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
    extra_compile_args=["-O3", "-march=native", "-ffast-math", "-std=gnu11", "-Wall", "-Wextra", "-Wno-unused-parameter"],
    libraries=["m", "pthread"],
)

if __name__ == "__main__":
    ffibuilder.compile(verbose=False)
