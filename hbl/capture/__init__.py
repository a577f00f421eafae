"""Live block-request capture with eBPF (tracepoints, CO-RE).

    with Capture(["/dev/loop0"]) as cap:
        for batch in cap.batches(duration=10):     # arrays of hbl.record.REQUEST
            ...

Two loaders produce the same records: "libbpf" (default; a C consumer built
with cffi drains the ring buffer into NumPy arrays) and "bcc" (Debian's
python3-bpfcc, for hosts where that is what researchers have).
"""
import errno
import os
import stat
import time

import numpy as np

from hbl import record
from hbl.capture.events import CaptureError, event_dtype

HERE = os.path.dirname(os.path.abspath(__file__))
BPF_OBJECT = os.path.join(HERE, "hbl_capture.bpf.o")
MODE_RQ, MODE_BIO, MODE_BIO_DONE = 1, 2, 3   # enum hbl_dev_mode of ebpf/hbl_event.h (a test checks they agree)
TRACEFS = "/sys/kernel/tracing"


def kernel_dev(major, minor):
    """The kernel's internal dev_t encoding, as block tracepoints report it."""
    return (major << 20) | minor


def resolve_device(path, completion=False):
    """(dev_t, mode, name) of a block device path; mode says which events describe it.

    completion: the device's I/O wanted with its completion where the kernel traces it.  The
    kernel traces a bio's completion only if no request carried the bio (blk-mq marks a
    completed request's bios as traced), so only for a driver that ends the bio it was given
    itself.  Device-mapper always does (its targets get clones, and the bio queued to the dm
    device ends once they all did): a bio-based dm device is then captured at its bios'
    completion (MODE_BIO_DONE), and a request-based one (dm-multipath) through its requests
    (MODE_RQ).  Other bio-based drivers may hand the very bio on to a request-based device (md's
    linear personality did until 2023, without I/O accounting), whose completion then goes
    untraced: they stay MODE_BIO, at queue, and the caller knows their completion is not seen."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        raise CaptureError("%s: no such device" % path) from None
    except OSError as exc:
        raise CaptureError("%s: %s" % (path, exc.strerror)) from None
    if not stat.S_ISBLK(st.st_mode):
        raise CaptureError("%s: not a block device" % path)
    major, minor = os.major(st.st_rdev), os.minor(st.st_rdev)
    sysdir = "/sys/dev/block/%d:%d" % (major, minor)
    name = os.path.basename(os.path.realpath(sysdir)) if os.path.exists(sysdir) else os.path.basename(path)
    # device-mapper (and other bio-based drivers) have no blk-mq queue: their
    # requests are only seen as bios, with logical addresses
    blk_mq, dm = os.path.isdir(os.path.join(sysdir, "mq")), os.path.isdir(os.path.join(sysdir, "dm"))
    bio_based = dm or not blk_mq
    if os.path.exists(os.path.join(sysdir, "partition")):
        raise CaptureError("%s: a partition; trace the whole disk (%s) and filter by offset"
                           % (path, os.path.basename(os.path.dirname(os.path.realpath(sysdir)))))
    if not bio_based or (completion and blk_mq):
        mode = MODE_RQ
    else:
        mode = MODE_BIO_DONE if completion and dm else MODE_BIO
    return kernel_dev(major, minor), mode, name


def check_environment(mount_tracefs=True):
    """Clear errors for the usual reasons capture cannot work; mounts tracefs when missing."""
    if os.geteuid() != 0:
        raise CaptureError("capture needs root (CAP_BPF and CAP_PERFMON): run with sudo")
    if not os.path.exists("/sys/kernel/btf/vmlinux"):
        raise CaptureError("the kernel has no BTF (/sys/kernel/btf/vmlinux): CO-RE programs cannot load; "
                           "a kernel with CONFIG_DEBUG_INFO_BTF=y is needed")
    if not os.path.isdir(os.path.join(TRACEFS, "events", "block")) and \
            not os.path.isdir("/sys/kernel/debug/tracing/events/block"):
        if not mount_tracefs:
            raise CaptureError("tracefs is not mounted: mount -t tracefs tracefs %s" % TRACEFS)
        rc = os.system("mount -t tracefs tracefs %s 2>/dev/null" % TRACEFS)
        if rc != 0 or not os.path.isdir(os.path.join(TRACEFS, "events", "block")):
            raise CaptureError("tracefs is not mounted and mounting it failed: "
                               "mount -t tracefs tracefs %s" % TRACEFS)


#: The most batches read without waiting once a capture is told to end (64 x 65,536 records: more
#: than the default ring holds).
DRAIN_POLLS = 64


class Capture:
    """A running capture on some devices; iterate batches, read stats(), close().

    A bio-based device's bios are recorded as they are queued, with no latency, unless its
    path is in `completion` and the kernel traces their completion (resolve_device: a
    device-mapper device): then each is recorded once it completed, with its latency, as a
    request-based device's requests always are (its time is still when it was queued).
    self.devices says how each device is captured."""

    def __init__(self, devices, backend="libbpf", remaps=False, extent_shift=0, batch=65536, ringbuf_bytes=0,
                 fast=False, completion=()):
        if not devices:
            raise CaptureError("give at least one device to trace")
        stray = [p for p in completion if p not in devices]
        if stray:
            raise CaptureError("%s: not among the devices traced" % ", ".join(stray))
        check_environment()
        self.devices = [resolve_device(d, completion=d in completion) for d in devices]
        self.paths = list(devices)
        self.batch = batch
        self.backend = backend
        if backend == "libbpf":
            self._impl = LibbpfLoader(self.devices, remaps, extent_shift, ringbuf_bytes, fast)
        elif backend == "bcc":
            from hbl.capture.bcc_loader import BccLoader
            if ringbuf_bytes or fast:
                raise CaptureError("the bcc loader has a fixed ring buffer and no fast mode")
            self._impl = BccLoader(self.devices, remaps, extent_shift)
        else:
            raise CaptureError("unknown backend %r (libbpf or bcc)" % backend)
        self.started = time.time()

    def poll(self, timeout_ms=50):
        """One batch (possibly empty) of REQUEST records."""
        return self._impl.poll(timeout_ms, self.batch)

    def remaps(self):
        """Remap events collected so far (libbpf backend with remaps=True), as a structured array."""
        return self._impl.take_remaps()

    def stats(self):
        return self._impl.stats()

    def heat(self):
        """In-kernel per-extent counters: {(dev, extent): (count, last_ns, reads, writes)}."""
        return self._impl.heat()

    def close(self):
        if getattr(self, "_impl", None) is not None:
            self._impl.close()
            self._impl = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        self.close()

    def batches(self, duration=None, count=None, timeout_ms=50, stop=None):
        """Yield batches until duration seconds pass, count records arrive, or stop() is true; then
        what the ring holds, without waiting (the records of I/O done before the end), at most
        DRAIN_POLLS batches of it: under a load that fills the ring as fast as it is read, the
        drain ends there instead of never."""
        t0, seen, ending, drained = time.time(), 0, False, 0
        while True:
            ending = ending or (duration is not None and time.time() - t0 >= duration) or \
                (stop is not None and stop())
            if ending:
                if drained >= DRAIN_POLLS:
                    return
                drained += 1
            b = self.poll(0 if ending else timeout_ms)
            if count is not None and seen + len(b) >= count:
                yield b[:count - seen]
                return
            seen += len(b)
            if len(b):
                yield b
            if ending and len(b) < self.batch:     # less than a batch: the ring is empty
                return


class LibbpfLoader:
    def __init__(self, devices, remaps, extent_shift, ringbuf_bytes, fast=False):
        try:
            from hbl._capture import ffi, lib
        except ImportError:
            raise CaptureError("hbl was built without the libbpf capture (clang or libbpf-dev was missing): "
                               "run scripts/bootstrap.sh, which installs them and rebuilds") from None
        if not os.path.exists(BPF_OBJECT):
            raise CaptureError("%s is missing: run scripts/bootstrap.sh to build it" % BPF_OBJECT)
        self.ffi, self.lib = ffi, lib
        devs = ffi.new("uint32_t[]", [d for d, _, _ in devices])
        modes = ffi.new("uint32_t[]", [m for _, m, _ in devices])
        err = ffi.new("char[1024]")
        self.cap = lib.hbl_capture_open(BPF_OBJECT.encode(), devs, modes, len(devices), int(remaps),
                                        int(extent_shift), int(ringbuf_bytes), int(fast), err, 1024)
        if self.cap == ffi.NULL:
            msg = ffi.string(err).decode(errors="replace")
            if "Operation not permitted" in msg:
                msg += " (root with CAP_BPF is needed; is the BPF syscall disabled?)"
            raise CaptureError(msg)
        self.want_remaps = remaps
        self._remap_parts = []
        self._remap_buf = np.zeros(4096, dtype=event_dtype(ffi)) if remaps else None
        self._nremap = ffi.new("int64_t *")
        self._buf = self._ptr = None

    def poll(self, timeout_ms, batch):
        if self._buf is None or len(self._buf) != batch:
            self._buf = record.empty(batch)      # read into, then only what came copied out
            self._ptr = self.ffi.cast("struct hbl_request *", self.ffi.from_buffer(self._buf))
        out, ptr = self._buf, self._ptr
        rptr = self.ffi.NULL
        if self._remap_buf is not None:
            rptr = self.ffi.cast("struct hbl_event *", self.ffi.from_buffer(self._remap_buf))
        n = self.lib.hbl_capture_poll(self.cap, timeout_ms, ptr, batch, rptr,
                                      len(self._remap_buf) if self._remap_buf is not None else 0, self._nremap)
        if n < 0:
            if -n == errno.EINTR:
                return record.empty(0)
            raise CaptureError("reading the ring buffer failed: %s" % os.strerror(-n))
        if self._remap_buf is not None and self._nremap[0]:
            self._remap_parts.append(self._remap_buf[:self._nremap[0]].copy())
        return out[:n].copy()

    def take_remaps(self):
        parts, self._remap_parts = self._remap_parts, []
        return np.concatenate(parts) if parts else np.zeros(0, dtype=event_dtype(self.ffi))

    def stats(self):
        st = self.ffi.new("struct hbl_capture_stats *")
        self.lib.hbl_capture_stats(self.cap, st)
        return {"events": st.events, "lost": st.lost_ringbuf + st.lost_inflight + st.lost_missed,
                "lost_ringbuf": st.lost_ringbuf, "lost_inflight": st.lost_inflight, "lost_missed": st.lost_missed,
                "remap_events": st.remap_events, "remaps_dropped": st.remaps_dropped}

    def heat(self):
        n = 1 << 18
        keys = self.ffi.new("struct hbl_extent_key[]", n)
        vals = self.ffi.new("struct hbl_extent_heat[]", n)
        k = self.lib.hbl_capture_heat(self.cap, keys, vals, n)
        return {(keys[i].dev, keys[i].extent): (vals[i].count, vals[i].last_ns, vals[i].reads, vals[i].writes)
                for i in range(k)}

    def close(self):
        if self.cap != self.ffi.NULL:
            self.lib.hbl_capture_close(self.cap)
            self.cap = self.ffi.NULL
