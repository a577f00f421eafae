"""A live device's records sorted out in C (ctypes_core/records.c), one call a poll: what the
controller's reading did with a numpy call per field, and per member (the requests noted, the
written flags, the member writes, the members' latency sums), then one call an observe (the
counters, the heat, each request's latency) and one a track (the parts of the records that the
requests in flight are tracked by).  Its arrays are numpy's, sized for what they hold and the
next call's records."""
import numpy as np

from hbl import record
from hbl.core import ffi, lib

NOTE, WRITES, HELD = lib.HBL_REC_NOTE, lib.HBL_REC_WRITES, lib.HBL_REC_HELD
PENDING = (("p_req", None), ("p_first", np.int64), ("p_last", np.int64), ("p_write", np.uint8),
           ("p_first_write", np.uint8))
PER_CALL = (("w_dev", np.int64), ("w_off", np.int64), ("w_len", np.int64), ("w_done", np.int64),
            ("w_pid", np.int64), ("h_first", np.int64), ("h_last", np.int64))
FIRST_CAP = 1024       # records the arrays are made for at first (grown to twice what a call needs)
COUNTS = ("reads", "writes", "fast_hits", "read_pages", "fast_read_pages", "write_pages", "fast_write_pages")


C_TYPES = {np.dtype(np.int64): "int64_t *", np.dtype(np.uint8): "uint8_t *", np.dtype(np.int8): "int8_t *",
           np.dtype(np.uint32): "uint32_t *", np.dtype(np.float32): "float *", np.dtype(np.float64): "double *",
           record.REQUEST: "struct hbl_request *"}


def _pointer(a):
    return ffi.cast(C_TYPES[a.dtype], ffi.from_buffer(a))


def _fits(a, dtype, n, name):
    """`a`, which the C core writes or reads at indices below `n` as `dtype`: a ValueError when it
    is not such an array (a wrong type or size there is memory overwritten, not an error)."""
    if not (isinstance(a, np.ndarray) and a.dtype == dtype and a.flags.c_contiguous and a.size >= n
            and a.flags.writeable):
        raise ValueError("Notes: %s must be a writable contiguous %s array of %d entries at least"
                         % (name, np.dtype(dtype).name, n))
    return a


class Notes:
    """The records read by a controller, between the calls that use them: `meta` the device's
    (its extents and members, which every mapping has alike), `log_device` the logical device's
    number, `member_devices` {device number: member index}."""

    def __init__(self, meta, log_device, member_devices):
        s = self.s = ffi.new("struct hbl_rec_notes *")
        nd = len(meta.members)
        s.log_device, s.nmembers = log_device, nd
        for i in range(nd):
            s.member_device[i] = log_device          # (a member not captured: no record is its)
        for dev, i in member_devices.items():
            s.member_device[i] = dev
        s.extent_bytes, s.nextents = meta.extent_bytes, meta.nextents
        self.lat_n, self.lat_sum = np.zeros(2 * nd, np.int64), np.zeros(2 * nd, np.int64)
        s.lat_n, s.lat_sum = _pointer(self.lat_n), _pointer(self.lat_sum)
        self.arrays = {}
        self.written = None
        self.p_cap = self.w_cap = 0
        self._grow_pending(FIRST_CAP)
        self._grow_per_call(FIRST_CAP)
        self.tn = ffi.new("uint64_t[2]")

    def _set(self, name, a):
        self.arrays[name] = a
        setattr(self.s, name, _pointer(a))

    def _grow_pending(self, cap):
        n = self.s.p_n
        for name, dtype in PENDING:
            a = record.empty(cap) if dtype is None else np.zeros(cap, dtype)
            if n:
                a[:n] = self.arrays[name][:n]
            self._set(name, a)
        self.p_cap = cap

    def _grow_per_call(self, cap):
        for name, dtype in PER_CALL:
            self._set(name, np.zeros(cap, dtype))
        self.w_cap = cap

    def note(self, b, what, written):
        """What `what` (NOTE, WRITES, HELD, or'ed) asks of the records `b` (hbl_rec_note);
        `written`: the written flags of the mapping in force (a batch's commit puts a new
        mapping, with flags of its own, in force: they are passed at every call)."""
        n, s = len(b), self.s
        if s.p_n + n > self.p_cap:
            self._grow_pending(max(2 * self.p_cap, s.p_n + n))
        if n > self.w_cap:
            self._grow_per_call(max(2 * self.w_cap, n))
        if self.written is not written:
            self.written = _fits(written, np.uint8, s.nextents, "written")
            s.written = _pointer(self.written)
        ptr, keep = record.as_cdata(b)
        lib.hbl_rec_note(s, ptr, n, what)

    def member_writes(self):
        """The last call's member writes (WRITES): member, offset, length, completed ns, pid."""
        n, a = self.s.w_n, self.arrays
        return a["w_dev"][:n], a["w_off"][:n], a["w_len"][:n], a["w_done"][:n], a["w_pid"][:n]

    def logical_writes(self):
        """The last call's logical writes' extents (HELD): first, last."""
        n = self.s.h_n
        return self.arrays["h_first"][:n], self.arrays["h_last"][:n]

    def pending(self):
        """The requests noted since the last clear(): records, first and last extent, writes, first
        writes (views, valid until the next note)."""
        n, a = self.s.p_n, self.arrays
        return (a["p_req"][:n], a["p_first"][:n], a["p_last"][:n], a["p_write"][:n].view(bool),
                a["p_first_write"][:n].view(bool))

    def observe(self, dev, lat, heat, rw):
        """The requests noted observed (hbl_rec_observe; lat: per member and op, C order): their
        counts, a dict, and the newest request's time."""
        c, ne = ffi.new("struct hbl_rec_counts *"), self.s.nextents
        lat, dev = np.ascontiguousarray(lat, np.float64), np.ascontiguousarray(dev, np.int8)
        if lat.size != 2 * self.s.nmembers or dev.size < ne:
            raise ValueError("Notes.observe: %d latencies for %d members, %d devices for %d extents"
                             % (lat.size, self.s.nmembers, dev.size, ne))
        heat, rw = _fits(heat, np.float32, ne, "heat"), _fits(rw, np.uint32, 2 * ne, "rw")
        lib.hbl_rec_observe(self.s, _pointer(dev), _pointer(lat), _pointer(heat), _pointer(rw), c)
        return {k: getattr(c, k) for k in COUNTS}, int(c.newest_ns)

    def clear(self):
        """Forget what was noted (after it was observed)."""
        s = self.s
        s.p_n = s.records = s.members = 0
        self.lat_n[:] = 0
        self.lat_sum[:] = 0

    def track_parts(self, chunks):
        """Of the record arrays `chunks`: the requests on the logical device
        (read or write, length > 0) as time, offset, first extent; the member completions as
        member, offset, length (int64 arrays); and how many records are not on the logical device."""
        n = sum(len(b) for b in chunks)
        q, c = [np.empty(n, np.int64) for _ in range(3)], [np.empty(n, np.int64) for _ in range(3)]
        qp, cp = [_pointer(x) for x in q], [_pointer(x) for x in c]
        tn = self.tn
        tn[0] = tn[1] = 0
        others = 0
        for b in chunks:
            ptr, keep = record.as_cdata(b)
            others += lib.hbl_rec_track(self.s, ptr, len(b), *qp, tn, *cp, tn + 1)
        return [x[:tn[0]] for x in q], [x[:tn[1]] for x in c], others
