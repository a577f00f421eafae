"""The compiled agent core (ctypes_core/, built by cffi at install)."""
import sys

try:
    from hbl._core import ffi, lib
except ImportError as exc:  # pragma: no cover - only on a broken install
    raise SystemExit(
        "hbl: the C agent core is not built (%s).\n"
        "Run scripts/bootstrap.sh, or `pip install -e .` in the project's venv." % exc
    ) from None

# the compiled core's file: hbl sweep hashes it, so that cells simulated by other code do not count as done
LIBRARY = sys.modules["hbl._core"].__file__

__all__ = ["LIBRARY", "ffi", "lib"]
