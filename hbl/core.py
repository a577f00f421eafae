"""The compiled agent core (ctypes_core/, built by cffi at install)."""
try:
    from hbl._core import ffi, lib
except ImportError as exc:  # pragma: no cover - only on a broken install
    raise SystemExit(
        "hbl: the C agent core is not built (%s).\n"
        "Run scripts/bootstrap.sh, or `pip install -e .` in the project's venv." % exc
    ) from None

__all__ = ["ffi", "lib"]
