"""A crash-consistency workload for a block device: skewed 4 KiB writes and reads,
each block self-describing, every acknowledged write logged.

    blockcheck.py run DEVICE LOG --blocks N --offset BYTES --seconds S [--seed K] [--threads T]
    blockcheck.py verify DEVICE LOG --blocks N --offset BYTES [--compact]

A block holds (magic, block number, sequence number, CRC32 of the rest) and
filler derived from them.  `run` writes with O_DIRECT and appends "block seq"
to LOG after the write returned (it was acknowledged), and reads blocks back
while it runs, checking them against what was acknowledged.  `verify` reads
every block named in LOG: each must be intact and hold the last acknowledged
version or a later one (a write in flight at a crash may or may not have
landed).  Exit status 0 when everything checks; the report is one JSON line.
With --threads T, T writers run at once (T writes in flight on a slow device),
thread i on the blocks b with b % T == i, so that each block's versions are
still written one after the other.  `run` stops at --seconds or at SIGTERM,
whichever comes first (a test that waits for events gives a long --seconds as
its deadline and ends the run when it has them), and reports either way.
With --tolerate-errors (the soak, which makes members fail under the device), an
I/O error is counted and the run goes on; a write that erred is not logged.

With --compact (the soak, whose log would grow by every write of a thousand
faults), a verify that found every write rewrites LOG as one line per block,
its last acknowledged version, after a first line "#before=N": N acknowledged
writes are summed up by those lines beyond their own count.  The new log
replaces the old by a rename, so a power cut leaves one or the other; both
name the same last versions, which is all a verify reads.
"""
import argparse
import json
import mmap
import os
import random
import signal
import struct
import sys
import threading
import time
import zlib

BS = 4096
HEAD = struct.Struct("<QQQI")     # magic, block, seq, crc
MAGIC = 0x68626c2d636b3031        # "hbl-ck01"


def content(block, seq):
    rng = random.Random(block * 1_000_003 + seq)
    body = rng.randbytes(BS - HEAD.size)
    crc = zlib.crc32(struct.pack("<QQ", block, seq) + body)
    return HEAD.pack(MAGIC, block, seq, crc) + body


def parse(buf, block):
    magic, b, seq, crc = HEAD.unpack_from(buf)
    if magic != MAGIC:
        return None, "no block written here"
    if b != block:
        return None, "holds block %d" % b
    if zlib.crc32(struct.pack("<QQ", b, seq) + bytes(buf[HEAD.size:BS])) != crc:
        return None, "damaged (checksum)"
    return seq, None


class Dev:
    def __init__(self, path, offset):
        self.fd = os.open(path, os.O_RDWR | os.O_DIRECT)
        self.buf = mmap.mmap(-1, BS)
        self.offset = offset

    def write(self, block, seq):
        self.buf.seek(0)
        self.buf.write(content(block, seq))
        if os.pwritev(self.fd, [self.buf], self.offset + block * BS) != BS:
            raise OSError("short write")

    def read(self, block):
        if os.preadv(self.fd, [self.buf], self.offset + block * BS) != BS:
            raise OSError("short read")
        return self.buf


HEADER = "#before="            # a compacted log's first line: acknowledged writes its lines stand for


def read_log(path):
    """(each block's last acknowledged version, the acknowledged writes the log stands for, its lines
    of writes): the second is N of a compacted log's "#before=N" line plus its lines of writes, a torn
    last line counted (it was a write, cut short) though it names no version; (acked, None, None)
    when there is no log."""
    acked = {}
    before = lines = 0
    try:
        with open(path) as f:
            for line in f:
                if line.startswith(HEADER):
                    before = int(line[len(HEADER):])
                    continue
                lines += 1
                parts = line.split()
                if len(parts) == 2 and not line.startswith("#"):    # a torn last line is ignored
                    b, s = int(parts[0]), int(parts[1])
                    acked[b] = max(acked.get(b, -1), s)
    except FileNotFoundError:
        return acked, None, None
    return acked, before + lines, lines


def load_log(path):
    return read_log(path)[0]


def skewed(rng, n, theta=1.2):
    """A block number, Zipf-like; ranks are grouped by 1 MiB and the groups scattered over the range."""
    r = int(n * (rng.random() ** (theta * 3))) % n
    groups = max(1, n // 256)
    g = (r // 256 * 2654435761) % groups if groups & (groups - 1) == 0 else (r // 256 * 7919) % groups
    return min(n - 1, g * 256 + r % 256)


def cmd_run(a):
    acked = load_log(a.log)
    seq0 = max(acked.values(), default=0) + 1
    log = open(a.log, "a", buffering=1)
    lock = threading.Lock()
    t0 = time.time()
    totals = {"writes": 0, "reads": 0, "bad_reads": 0, "io_errors": 0}
    errors = []
    failed = []
    T = max(1, a.threads)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())

    def worker(i):
        dev = Dev(a.device, a.offset)
        rng = random.Random(a.seed if T == 1 else a.seed * 1000 + i)
        seq = seq0 + i                      # thread i's sequence numbers: seq0 + i + k*T, increasing
        writes = reads = bad = io_errors = 0
        while time.time() - t0 < a.seconds and not stop.is_set():
            b = skewed(rng, a.blocks)
            if T > 1:
                b = b - b % T + i
                if b >= a.blocks:
                    continue
            if rng.random() < a.write_fraction or b not in acked:
                try:
                    dev.write(b, seq)
                except OSError as exc:
                    if not a.tolerate_errors:
                        raise
                    # not acknowledged, so not logged: the block holds the last acknowledged
                    # version or this one, which verify accepts (a later sequence number)
                    seq += T
                    io_errors += 1
                    time.sleep(0.01)
                    continue
                with lock:
                    log.write("%d %d\n" % (b, seq))
                acked[b] = seq
                seq += T
                writes += 1
            else:
                try:
                    buf = dev.read(b)
                except OSError:
                    if not a.tolerate_errors:
                        raise
                    io_errors += 1
                    time.sleep(0.01)
                    continue
                got, why = parse(buf, b)
                reads += 1
                if got is None or got < acked[b]:
                    bad += 1
                    with lock:
                        errors.append("block %d: %s" % (b, why or "version %d, acknowledged %d" % (got, acked[b])))
        with lock:
            totals["writes"] += writes
            totals["reads"] += reads
            totals["bad_reads"] += bad
            totals["io_errors"] += io_errors

    def guarded(i):
        try:
            worker(i)
        except BaseException as exc:        # an I/O error ends the run with status 1
            with lock:
                failed.append("thread %d: %s" % (i, exc))

    if T == 1:
        worker(0)
    else:
        threads = [threading.Thread(target=guarded, args=(i,)) for i in range(T)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    log.close()
    print(json.dumps(dict(totals, errors=(failed + errors)[:10], seconds=time.time() - t0,
                          stopped=stop.is_set())))
    return 1 if totals["bad_reads"] or failed else 0


def cmd_verify(a):
    """Reads 1 MiB at a time (an HDD at 100 IOPS makes block-by-block reads slow)."""
    acked, total, lines = read_log(a.log)
    fd = os.open(a.device, os.O_RDONLY | os.O_DIRECT)
    chunk = 256
    buf = mmap.mmap(-1, chunk * BS)
    bad = []
    by_chunk = {}
    for b in acked:
        by_chunk.setdefault(b // chunk, []).append(b)
    for c in sorted(by_chunk):
        n = min(chunk, a.blocks - c * chunk)
        if os.preadv(fd, [memoryview(buf)[:n * BS]], a.offset + c * chunk * BS) != n * BS:
            raise OSError("short read")
        for b in by_chunk[c]:
            got, why = parse(memoryview(buf)[(b - c * chunk) * BS:(b - c * chunk + 1) * BS], b)
            if got is None or got < acked[b]:
                bad.append("block %d: %s" % (b, why or "version %d, acknowledged %d" % (got, acked[b])))
    os.close(fd)
    report = {"checked": len(acked), "bad": len(bad), "errors": bad[:10]}
    if a.compact and not bad:
        report["compacted_from"] = compact(a.log, acked, total, lines)
    print(json.dumps(report))
    return 1 if bad else 0


def compact(path, acked, total, lines):
    """Rewrites the log at path as its last versions, whole or not at all (acked, total and lines as
    read_log gave them); the lines of writes the old one had (0, and no log written, when there was
    none: nothing was logged)."""
    if total is None:
        return 0
    tmp = path + ".compact"
    with open(tmp, "w") as f:
        f.write("%s%d\n" % (HEADER, total - len(acked)))
        f.writelines("%d %d\n" % (b, acked[b]) for b in sorted(acked))
        f.flush()
        os.fsync(f.fileno())
    os.rename(tmp, path)
    d = os.open(os.path.dirname(os.path.abspath(path)), os.O_RDONLY)
    try:
        os.fsync(d)
    finally:
        os.close(d)
    return lines


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("action", choices=["run", "verify"])
    p.add_argument("device")
    p.add_argument("log")
    p.add_argument("--blocks", type=int, default=65536)
    p.add_argument("--offset", type=int, default=0)
    p.add_argument("--seconds", type=float, default=10)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--write-fraction", type=float, default=0.5)
    p.add_argument("--threads", type=int, default=1, help="writers at once (run)")
    p.add_argument("--compact", action="store_true",
                   help="verify: when every write read back, rewrite LOG as each block's last acknowledged "
                        "version (a long soak's log stays the size of its blocks)")
    p.add_argument("--tolerate-errors", action="store_true",
                   help="run: an I/O error is counted (io_errors) and the run goes on (a member fault "
                        "injected under the device); a write that erred is not acknowledged")
    a = p.parse_args(argv)
    return cmd_run(a) if a.action == "run" else cmd_verify(a)


if __name__ == "__main__":
    sys.exit(main())
