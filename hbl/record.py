"""The request record: one NumPy structured dtype, derived from `struct hbl_request`.

The C header ctypes_core/hbl_api.h is the only definition of the layout; this
module reads the field names, offsets and types from the compiled core, so the
Python and C views of a request cannot drift apart.
"""
import numpy as np

from hbl.core import ffi

READ, WRITE, DISCARD, FLUSH = 0, 1, 2, 3
OP_NAMES = {READ: "read", WRITE: "write", DISCARD: "discard", FLUSH: "flush"}

_C_TO_NUMPY = {
    "uint64_t": "<u8", "uint32_t": "<u4", "uint16_t": "<u2", "uint8_t": "u1",
    "int64_t": "<i8", "int32_t": "<i4",
}


def _dtype_from_struct(cname: str) -> np.dtype:
    ctype = ffi.typeof(cname)
    names, formats, offsets = [], [], []
    for name, field in ctype.fields:
        if name.startswith("_"):
            continue  # padding
        names.append(name)
        formats.append(_C_TO_NUMPY[field.type.cname])
        offsets.append(field.offset)
    return np.dtype({"names": names, "formats": formats, "offsets": offsets,
                     "itemsize": ffi.sizeof(cname)})


REQUEST = _dtype_from_struct("struct hbl_request")
"""time_ns, offset (bytes), latency_ns (0 = unknown), length (bytes), pid, device, op."""


def empty(n: int = 0) -> np.ndarray:
    """A zeroed array of n requests."""
    return np.zeros(n, dtype=REQUEST)


def concat(chunks) -> np.ndarray:
    """One array of the chunks, keeping the record layout (np.concatenate would repack it)."""
    chunks = list(chunks)
    out = empty(sum(len(c) for c in chunks))
    i = 0
    for c in chunks:
        out[i:i + len(c)] = c
        i += len(c)
    return out


def joined(chunks):
    """The non-empty chunks as one array (the chunk itself when there is one, not a copy); None
    when every chunk is empty."""
    chunks = [c for c in chunks if len(c)]
    if not chunks:
        return None
    return chunks[0] if len(chunks) == 1 else concat(chunks)


def as_cdata(requests: np.ndarray):
    """A `struct hbl_request *` over the array's memory (no copy)."""
    if requests.dtype != REQUEST:
        if requests.dtype.names != REQUEST.names:
            raise TypeError("expected an array of hbl.record.REQUEST, got %s" % requests.dtype)
        requests = requests.astype(REQUEST)
    if not requests.flags.c_contiguous:
        requests = np.ascontiguousarray(requests)
    return ffi.cast("struct hbl_request *", ffi.from_buffer(requests)), requests
