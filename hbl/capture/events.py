"""What both loaders share (the libbpf one in hbl/capture/__init__.py, the bcc one in
bcc_loader.py): the record they hand over, struct hbl_event as NumPy sees it, and the error
that says why a capture cannot start."""
import numpy as np

from hbl.errors import HblError


class CaptureError(HblError):
    """Capture cannot start: the message says why and what to do."""


def event_dtype(ffi):
    """NumPy view of struct hbl_event, derived from the header (as hbl.record does for requests)."""
    conv = {"unsigned long long": "<u8", "unsigned int": "<u4", "unsigned char": "u1"}
    names, formats, offsets = [], [], []
    for name, f in ffi.typeof("struct hbl_event").fields:
        if name.startswith("_"):
            continue
        t = f.type
        if t.kind == "array":
            formats.append("S%d" % t.length if t.item.cname == "char" else (conv[t.item.cname], t.length))
        else:
            formats.append(conv[t.cname])
        names.append(name)
        offsets.append(f.offset)
    return np.dtype({"names": names, "formats": formats, "offsets": offsets,
                     "itemsize": ffi.sizeof("struct hbl_event")})
