"""The bcc loader: Debian's python3-bpfcc compiles ebpf/hbl_capture_bcc.c at
start (it needs kernel headers: scripts/bootstrap.sh links Debian's headers
where the host has none) and hands each record to a Python callback, so it
costs far more CPU per event than the libbpf consumer.  Records are the same
struct hbl_event, collected as bytes and converted a batch at a time."""
import ctypes
import os
import sys
import time

import numpy as np

from hbl import record
from hbl.capture.events import CaptureError, event_dtype

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
EBPF = os.path.join(ROOT, "ebpf")
DEBIAN_DIST = "/usr/lib/python3/dist-packages"


def import_bcc():
    try:
        import bcc
        return bcc
    except ImportError:
        pass
    # Debian ships bcc for its own python3; a venv on another interpreter of the
    # same version can still import it (pure Python over libbcc.so)
    if os.path.isdir(os.path.join(DEBIAN_DIST, "bcc")) and DEBIAN_DIST not in sys.path:
        sys.path.append(DEBIAN_DIST)
        try:
            import bcc
            return bcc
        except ImportError:
            pass
    raise CaptureError("bcc is not installed: apt-get install python3-bpfcc (scripts/bootstrap.sh does)")


def _event_dtype():
    try:
        from hbl._capture import ffi
    except ImportError:
        import cffi
        sys.path.insert(0, os.path.join(ROOT, "ctypes_core"))
        from build_core import cdef_text
        ffi = cffi.FFI()
        ffi.cdef(cdef_text(os.path.join(EBPF, "hbl_event.h")))
    return event_dtype(ffi)


def _misses(fds):
    """The runs the kernel skipped of these programs (recursion_misses), through the libbpf
    consumer's helper; 0 where that is not built (the figure is then unknown, as before it)."""
    try:
        from hbl._capture import lib
    except ImportError:
        return 0
    return sum(int(lib.hbl_prog_misses(fd)) for fd in fds)


class BccLoader:
    def __init__(self, devices, remaps, extent_shift):
        if remaps or extent_shift:
            raise CaptureError("the bcc loader captures requests only; use --backend libbpf for remaps and heat")
        bcc = import_bcc()
        if not os.path.exists("/lib/modules/%s/build" % os.uname().release):
            raise CaptureError("bcc needs kernel headers at /lib/modules/%s/build: run scripts/bootstrap.sh "
                               "(it installs linux-headers and links them)" % os.uname().release)
        with open(os.path.join(EBPF, "hbl_capture_bcc.c")) as f:
            text = f.read()
        try:
            self.b = bcc.BPF(text=text.encode(), cflags=["-I" + EBPF, "-Wno-macro-redefined"])
        except Exception as exc:  # bcc raises plain Exception on compile failure
            raise CaptureError("bcc could not compile the capture program: %s" % exc) from None
        table = self.b[b"devices"]
        for dev, mode, _ in devices:
            table[ctypes.c_uint32(dev)] = ctypes.c_uint32(mode)
        self.dtype = _event_dtype()
        self.size = self.dtype.itemsize
        self.buf = bytearray()
        self.events = 0
        self.offset = time.clock_gettime_ns(time.CLOCK_REALTIME) - time.clock_gettime_ns(time.CLOCK_MONOTONIC)

        def on_event(ctx, data, size):
            self.buf += ctypes.string_at(data, self.size)

        self.b[b"events"].open_ring_buffer(on_event)

    def poll(self, timeout_ms, batch):
        self.b.ring_buffer_poll(timeout_ms)
        n = min(len(self.buf) // self.size, batch)
        if not n:
            return record.empty(0)
        ev = np.frombuffer(bytes(self.buf[:n * self.size]), dtype=self.dtype)
        del self.buf[:n * self.size]
        self.events += n
        out = record.empty(n)
        out["time_ns"] = ev["ts_ns"].astype(np.int64) + self.offset
        out["offset"] = ev["sector"] << np.uint64(9)
        out["latency_ns"] = ev["latency_ns"]
        out["length"] = ev["bytes"]
        out["pid"] = ev["pid"]
        out["device"] = ev["dev"]
        out["op"] = ev["op"]
        return out

    def take_remaps(self):
        return np.zeros(0, dtype=self.dtype)

    def stats(self):
        lost = [sum(v) for _, v in sorted(self.b[b"lost"].items(), key=lambda kv: kv[0].value)]
        ring, infl = (int(lost[0]), int(lost[1])) if len(lost) >= 2 else (0, 0)
        missed = _misses([f.fd for f in self.b.funcs.values()])
        return {"events": self.events, "lost": ring + infl + missed, "lost_ringbuf": ring, "lost_inflight": infl,
                "lost_missed": missed,
                "remap_events": 0, "remaps_dropped": 0}

    def heat(self):
        raise CaptureError("the bcc loader keeps no extent heat; use --backend libbpf")

    def close(self):
        if getattr(self, "b", None) is not None:
            self.b.cleanup()
            self.b = None
