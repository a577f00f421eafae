"""`hbl trace-info`: what a trace looks like, in one streaming pass."""
import numpy as np

from hbl import record
from hbl.core import ffi, lib

REUSE_BINS = 40


def trace_info(reader, page_size=4096, sample=100_000, seed=1, source=None, skipped=None):
    source = source or getattr(reader, "source", getattr(reader, "path", ""))
    t = lib.hbl_tstats_new(page_size, 1)
    if t == ffi.NULL:
        raise MemoryError("hbl_tstats_new")
    rng = np.random.default_rng(seed)
    n = reads = writes = discards = flushes = rbytes = wbytes = seq = 0
    size_hist = np.zeros(33, dtype=np.int64)
    first_t = last_t = prev_end = None
    gap_sum, gap_n, gaps = 0, 0, np.empty(0, dtype=np.float64)
    try:
        for chunk in reader:
            if not len(chunk):
                continue
            ptr, keep = record.as_cdata(chunk)
            if lib.hbl_tstats_feed(t, ptr, len(keep)):
                raise MemoryError("hbl_tstats_feed")
            op = chunk["op"]
            n += len(chunk)
            rmask, wmask = op == record.READ, op == record.WRITE
            reads += int(rmask.sum())
            writes += int(wmask.sum())
            discards += int((op == record.DISCARD).sum())
            flushes += int((op == record.FLUSH).sum())
            rbytes += int(chunk["length"][rmask].sum(dtype=np.uint64))
            wbytes += int(chunk["length"][wmask].sum(dtype=np.uint64))
            length = chunk["length"].astype(np.uint64)
            io = rmask | wmask
            sizes = length[io & (length > 0)]
            if len(sizes):
                np.add.at(size_hist, np.floor(np.log2(sizes.astype(np.float64))).astype(int), 1)
            ends = chunk["offset"] + length
            starts = chunk["offset"]
            seq += int((starts[1:] == ends[:-1]).sum())
            if prev_end is not None and starts[0] == prev_end:
                seq += 1
            prev_end = ends[-1]
            times = chunk["time_ns"].astype(np.int64)
            if first_t is None:
                first_t = int(times[0])
                d = np.diff(times)
            else:
                d = np.diff(np.concatenate(([last_t], times)))
            last_t = int(times[-1])
            gap_sum += int(d.sum())
            gap_n += len(d)
            if len(d):
                gaps = _sampled(gaps, d, sample, rng)
        bins = ffi.new("uint64_t[]", REUSE_BINS)
        cold = ffi.new("uint64_t *")
        lib.hbl_tstats_reuse(t, bins, REUSE_BINS, cold)
        pages = int(lib.hbl_tstats_pages(t))
    finally:
        lib.hbl_tstats_free(t)
    reuse = [int(bins[i]) for i in range(REUSE_BINS)]
    reused = sum(reuse)
    # "requests" counts reads and writes, as `hbl simulate` does; discards and flushes
    # are not simulated and are counted apart.
    return {
        "trace": source,
        "requests": reads + writes, "reads": reads, "writes": writes, "discards": discards, "flushes": flushes,
        "read_bytes": rbytes, "write_bytes": wbytes,
        "page_size": page_size, "footprint_pages": pages, "footprint_bytes": pages * page_size,
        "sequential_fraction": seq / n if n else 0.0,
        "size_histogram": {"%d" % (1 << i): int(c) for i, c in enumerate(size_hist) if c},
        "duration_s": (last_t - first_t) / 1e9 if n else 0.0,
        "interarrival_us": {
            "mean": gap_sum / gap_n / 1e3 if gap_n else 0.0,
            "p50": float(np.percentile(gaps, 50)) / 1e3 if len(gaps) else 0.0,
            "p99": float(np.percentile(gaps, 99)) / 1e3 if len(gaps) else 0.0,
        },
        "reuse_distance": {
            "first_accesses": int(cold[0]), "reuses": reused, "median_pages": _median_bin(reuse),
            "histogram": {"%d-%d" % (2 ** i - 1, 2 ** (i + 1) - 2): c for i, c in enumerate(reuse) if c},
        },
        "bad_lines_skipped": getattr(reader, "skipped", 0) if skipped is None else skipped(),
    }


def _sampled(gaps, d, sample, rng):
    """gaps with the new inter-arrival gaps d, kept to at most `sample` (reservoir-ish, bounded,
    for the percentiles)."""
    keep_n = min(len(d), sample)
    pick = d if keep_n == len(d) else rng.choice(d, keep_n, replace=False)
    gaps = np.concatenate((gaps, pick.astype(np.float64)))
    if len(gaps) > sample:
        gaps = rng.choice(gaps, sample, replace=False)
    return gaps


def _median_bin(reuse):
    """The reuse-distance bin ("LO-HI" pages) that holds the median reuse, None with no reuse."""
    reused, acc = sum(reuse), 0
    for i, c in enumerate(reuse):
        acc += c
        if reused and acc * 2 >= reused:
            return "%d-%d" % (2 ** i - 1, 2 ** (i + 1) - 2)
    return None


def format_info(info):
    gib = lambda b: "%.2f GiB" % (b / 2 ** 30) if b >= 2 ** 30 else "%.1f MiB" % (b / 2 ** 20)
    lines = [
        "trace            %s" % info["trace"],
        "requests         %d (%d reads, %d writes); %d discards, %d flushes not counted" % (
            info["requests"], info["reads"], info["writes"], info["discards"], info["flushes"]),
        "bytes            %s read, %s written" % (gib(info["read_bytes"]), gib(info["write_bytes"])),
        "footprint        %d pages of %d B (%s)" % (info["footprint_pages"], info["page_size"],
                                                    gib(info["footprint_bytes"])),
        "sequential       %.1f%% of requests start where the previous one ended" % (
            100 * info["sequential_fraction"]),
        "duration         %.3f s" % info["duration_s"],
        "inter-arrival    mean %.1f us, p50 %.1f us, p99 %.1f us" % (
            info["interarrival_us"]["mean"], info["interarrival_us"]["p50"], info["interarrival_us"]["p99"]),
        "reuse distance   %d first accesses, %d reuses, median %s distinct pages" % (
            info["reuse_distance"]["first_accesses"], info["reuse_distance"]["reuses"],
            info["reuse_distance"]["median_pages"] or "-"),
        "request sizes    " + ", ".join("%s: %d" % (_size(int(k)), v) for k, v in info["size_histogram"].items()),
    ]
    if info["reuse_distance"]["histogram"]:
        lines.append("reuse histogram  " + ", ".join(
            "%s: %d" % (k, v) for k, v in info["reuse_distance"]["histogram"].items()))
    if info["bad_lines_skipped"]:
        lines.append("skipped          %d bad lines (--lenient)" % info["bad_lines_skipped"])
    return "\n".join(lines)


def _size(b):
    for unit, div in (("M", 1 << 20), ("K", 1 << 10)):
        if b >= div:
            return "%d%s+" % (b // div, unit)
    return "%d+" % b
