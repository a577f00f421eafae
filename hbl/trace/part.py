"""A part of a capture: `workload:NAME@START-END` is requests START..END (from 0, END excluded) of
workload:NAME, read in order.  It is how the training and validation sides of one capture are named
(hbl/trace/split.py puts a part on its capture's side; hbl/sim/pretrained.py cuts the validation
parts), so any command that takes a trace takes a part: `hbl pretrain --trace
workload:lmdb-kv@0-500000`, `hbl simulate --trace workload:kyoto-hash@500000-750000`."""
import re

from hbl.errors import TraceError

PART = re.compile(r"^(workload:[^@+]+)@(\d+)-(\d+)$")


def parse(name):
    """(capture, start, end) of workload:NAME@START-END, None for any other name; a part whose end
    is not after its start is an error naming it."""
    m = PART.match(name)
    if not m:
        if name.startswith("workload:") and "@" in name and "+" not in name:     # a mix's tenants are parsed alone
            raise TraceError(name, "a part of a capture is workload:NAME@START-END (requests from 0, END "
                                   "excluded), e.g. workload:lmdb-kv@0-500000")
        return None
    capture, start, end = m.group(1), int(m.group(2)), int(m.group(3))
    if end <= start:
        raise TraceError(name, "the part ends (%d) before it starts (%d)" % (end, start))
    return capture, start, end


class PartReader:
    """Chunks of requests start..end of a reader.  It has no file of its own (path None) and counts
    its own requests; what the reader skipped or found wrong is the reader's."""

    name = "part"
    description = "a part of a capture (workload:NAME@START-END)"
    path = None

    def __init__(self, spec, reader, start, end):
        self.spec, self.reader, self.start, self.end = spec, reader, start, end
        self.count = end - start
        self.source = "%s (requests %d-%d)" % (getattr(reader, "source", spec) or spec, start, end)

    @property
    def skipped(self):
        return getattr(self.reader, "skipped", 0)

    @property
    def problems(self):
        return getattr(self.reader, "problems", [])

    def __iter__(self):
        seen = 0
        for chunk in self.reader:
            lo, hi = max(self.start - seen, 0), min(self.end - seen, len(chunk))
            seen += len(chunk)
            if lo < hi:
                yield chunk[lo:hi]
            if seen >= self.end:
                return
        raise TraceError(self.spec, "%s has %d requests: no part %d-%d" % (self.spec.split("@")[0], seen,
                                                                          self.start, self.end))
