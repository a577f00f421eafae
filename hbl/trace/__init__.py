"""Block traces: readers for every supported format, writers, synthetic workloads; captures of
real applications (workloads.py, their recipes in recipes/), the train/evaluation split
(split.py) and a trace's statistics (info.py).

    from hbl.trace import open_trace
    for chunk in open_trace("hm_0.csv"):   # NumPy arrays of hbl.record.REQUEST
        ...

A trace name may also be `synth:PRESET[:key=value,...]` for a generated workload
(see hbl.trace.synthetic), `bundled:NAME` for one of the MSR slices shipped
with hbl, `workload:NAME` for a real application's capture or `apps:NAME` for
its shipped first 20,000 requests (see hbl.trace.workloads), and `workload:A+B` for captures replayed
together as tenants of one host (see hbl.trace.mix), and `workload:NAME@START-END` for requests
START..END of a capture (see hbl.trace.part).
"""
import pathlib

from hbl.errors import TraceError
# the files under the names: hbl.trace offers them too
from hbl.trace.files import BINARY_READERS, READERS, detect, format_for_path, open_file, writer  # noqa: F401
from hbl.trace import part
from hbl.trace.mix import MixReader, is_mix, tenants

BUNDLED_DIR = pathlib.Path(__file__).resolve().parent.parent / "data" / "traces" / "msr"


def bundled_traces():
    """Names of the bundled MSR Cambridge slices (bundled:NAME)."""
    return sorted(p.stem for p in BUNDLED_DIR.glob("*.csv"))


def resolve(name):
    """A path for bundled:NAME, workload:NAME or apps:NAME, the capture's for a part of it
    (workload:NAME@START-END), otherwise the name unchanged (a mix, workload:A+B, is no one file)."""
    p = part.parse(name)
    if p:
        return resolve(p[0])
    if is_mix(name):
        return name
    if name.startswith(("workload:", "apps:")):
        from hbl.trace import workloads
        return workloads.resolve(name)
    if name.startswith("bundled:"):
        stem = name.split(":", 1)[1]
        path = BUNDLED_DIR / (stem + ".csv")
        if not path.exists():
            raise TraceError(name, "no bundled trace %r (have: %s)" % (stem, ", ".join(bundled_traces())))
        return str(path)
    return name


def input_files(name):
    """The files trace `name` reads, each once: resolve(name)'s, each tenant's for a mix, none for synth:SPEC."""
    if name.startswith("synth:"):
        return []
    return list(dict.fromkeys(resolve(t) for t in (tenants(name) if is_mix(name) else [name])))


def open_trace(name, fmt=None, lenient=False, chunk=1 << 16, **options):
    """A reader (iterable of REQUEST chunks) for a file, bundled:NAME or synth:SPEC."""
    if name.startswith("synth:"):
        from hbl.trace.synthetic import SyntheticTrace
        return SyntheticTrace(name, chunk=chunk)
    p = part.parse(name)
    if p:
        capture, start, end = p
        return part.PartReader(name, open_trace(capture, fmt=fmt, lenient=lenient, chunk=chunk, **options),
                               start, end)
    if is_mix(name):
        if fmt:
            raise TraceError(name, "a mix takes no --format: its tenants' formats are detected")
        return MixReader(name, lambda t: open_trace(t, lenient=lenient, chunk=chunk, **options), chunk=chunk)
    return open_file(resolve(name), fmt=fmt, lenient=lenient, chunk=chunk, **options)


def write_parts(name, parts, source=None):
    """Requests start..end (from 0, end excluded) of trace `name` for each (path, start, end) of
    parts, written in one pass over it as native traces whose header names `source` (by default
    NAME@START-END).  Returns the requests each part got, in parts' order: fewer than end - start
    if the trace is shorter."""
    writers = [(writer(path, "native", source=source or "%s@%d-%d" % (name, start, end)), start, end)
               for path, start, end in parts]
    last = max((end for _, _, end in parts), default=0)
    seen = 0
    for chunk in open_trace(name):
        for w, start, end in writers:
            lo, hi = max(start - seen, 0), min(end - seen, len(chunk))
            if lo < hi:
                w.write(chunk[lo:hi])
        seen += len(chunk)
        if seen >= last:
            break
    for w, _, _ in writers:
        w.close()
    return [w.count for w, _, _ in writers]


def load(name, **kw):
    """The whole trace in memory (small traces, Oracle's future knowledge)."""
    reader = open_trace(name, **kw)
    chunks = list(reader)
    from hbl import record
    return record.concat(chunks), reader
