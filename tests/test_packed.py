"""The packed trace format (.hblz): exact round trips, quanta, detection, and damaged files."""
import os
import subprocess
import sys

import numpy as np
import pytest

from hbl import record
from hbl.errors import TraceError
from hbl.trace import detect, format_for_path, load, open_trace, packed, writer

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def requests(n, seed=1):
    """Every field busy: unsorted times, unaligned and huge offsets, all four ops, pids."""
    rng = np.random.default_rng(seed)
    d = record.empty(n)
    d["time_ns"] = np.cumsum(rng.integers(0, 50_000, n)).astype(np.uint64) + np.uint64(1 << 60)
    d["time_ns"][n // 3] -= np.uint64(7)        # one step back: times need not be sorted
    d["offset"] = rng.integers(0, 1 << 40, n).astype(np.uint64) * np.uint64(512)
    d["length"] = rng.choice([0, 4096, 8192, 1 << 20], n)
    d["offset"][n // 2], d["length"][n // 2] = np.uint64((1 << 64) - 8192), 4096   # near the top
    d["offset"][n // 4] += np.uint64(3)          # not a sector multiple
    d["latency_ns"] = rng.integers(0, 5_000_000, n)
    d["pid"] = rng.integers(0, 1 << 32, n, dtype=np.uint64)
    d["device"] = 7 << 20 | 3
    d["op"] = rng.integers(0, 4, n)
    return d


def write(path, data, **options):
    with writer(str(path), "packed", source="test", **options) as w:
        w.write(data)
    return str(path)


@pytest.mark.parametrize("block", [packed.BLOCK, 1000])
def test_lossless_round_trip(tmp_path, monkeypatch, block):
    monkeypatch.setattr(packed, "BLOCK", block)
    data = requests(5000)
    got, reader = load(write(tmp_path / "t.hblz", data))
    assert reader.name == "packed" and reader.source == "test" and reader.count == len(data)
    assert got.dtype == record.REQUEST and (got == data).all()
    assert len(packed.read_footer(str(tmp_path / "t.hblz"))["blocks"]) == -(-5000 // block)


def test_every_offset_form_round_trips(tmp_path, monkeypatch):
    """Each form the writer may choose decodes to the same offsets (the writer picks by size)."""
    data = requests(3000)
    data["offset"] = np.arange(3000, dtype=np.uint64) * np.uint64(8192) + np.uint64(1 << 40)   # past 2**32 bytes
    data["offset"][::10] = np.uint64(1 << 30)                                 # and a hot offset
    for form in ("raw", "zdelta", "gap", "rank"):
        monkeypatch.setattr(packed.PackedWriter, "_trial_size", lambda self, v, f=form: 0)
        real = packed._offset_forms
        monkeypatch.setattr(packed, "_offset_forms", lambda o, n, f=form: {f: real(o, n)[f]})
        path = write(tmp_path / (form + ".hblz"), data)
        assert packed.read_footer(path)["blocks"][0]["columns"][1]["form"] == form
        assert (load(path)[0] == data).all()
        monkeypatch.undo()


def test_quanta_round_times_down_and_latencies_up(tmp_path):
    data = requests(2000)
    data["latency_ns"][:5] = [0, 1, 9_999, 10_000, 10_001]
    got, _ = load(write(tmp_path / "q.hblz", data, time_quantum_ns=1000, latency_quantum_ns=10_000))
    assert (got["time_ns"] == data["time_ns"] // 1000 * 1000).all()
    assert (got["latency_ns"] == (data["latency_ns"] + 9_999) // 10_000 * 10_000).all()
    assert list(got["latency_ns"][:5]) == [0, 10_000, 10_000, 10_000, 20_000]   # 0 stays unknown
    for f in ("offset", "length", "pid", "device", "op"):
        assert (got[f] == data[f]).all()


def test_detected_by_content_and_named_by_extension(tmp_path):
    path = write(tmp_path / "no-extension", requests(100))
    assert detect(path) == "packed" and format_for_path("x.hblz") == "packed"
    assert open_trace(path).name == "packed"


def test_convert_writes_packed(tmp_path):
    out = tmp_path / "hm.hblz"
    subprocess.run([sys.executable, "-m", "hbl.cli", "convert", "bundled:hm_0", str(out), "--quantum-ns", "100"],
                   check=True, capture_output=True, cwd=ROOT)
    a, b = load("bundled:hm_0")[0], load(str(out))[0]
    assert (a == b).all()    # MSRC times and latencies are in 100 ns already


def test_smaller_than_gzip_csv(tmp_path):
    """The point of the format: a real trace in a fraction of its gzipped CSV (hm_0: MSR Cambridge)."""
    path = tmp_path / "hm.hblz"
    data = load("bundled:hm_0")[0]
    write(path, data, time_quantum_ns=100, latency_quantum_ns=100)
    gz = tmp_path / "hm.csv.gz"
    with writer(str(gz), "msrc", compress=True) as w:
        w.write(data)
    assert os.path.getsize(path) < 0.6 * os.path.getsize(gz)


def damaged(tmp_path, how):
    path = write(tmp_path / "d.hblz", requests(4000))
    raw = bytearray(open(path, "rb").read())
    if how == "truncated":
        raw = raw[:len(raw) // 2]
    elif how == "block byte":
        raw[len(packed.MAGIC) + 10] ^= 0x40
    elif how == "footer byte":
        raw[-packed.TAIL.size - len(packed.END) - 5] ^= 0x01
    elif how == "extra bytes":
        raw[len(packed.MAGIC):len(packed.MAGIC)] = b"\0" * 3
    elif how == "magic":
        raw[0] ^= 0xff
    open(path, "wb").write(raw)
    return path


@pytest.mark.parametrize("how, message", [
    ("truncated", "truncated"),
    ("block byte", "block 0 column time_ns: checksum mismatch"),
    ("footer byte", "footer checksum mismatch"),
    ("extra bytes", "corrupt"),
])
def test_damaged_file_names_itself(tmp_path, how, message):
    path = damaged(tmp_path, how)
    with pytest.raises(TraceError, match=message) as e:
        load(path, fmt="packed")
    assert str(e.value).startswith(path + ": ")
    r = subprocess.run([sys.executable, "-m", "hbl.cli", "trace-info", path], capture_output=True, text=True,
                       cwd=ROOT)
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and path in r.stderr and message in r.stderr


def test_bad_magic_is_not_packed(tmp_path):
    path = damaged(tmp_path, "magic")
    assert not packed.is_packed(path)
    with pytest.raises(TraceError, match="bad magic"):
        open_trace(path, fmt="packed")


def test_bad_record_is_an_error_or_skipped(tmp_path):
    data = requests(300)
    data["op"][17] = 9
    path = write(tmp_path / "r.hblz", data)
    with pytest.raises(TraceError, match="record 17: op 9 is not read"):
        load(path)
    got, reader = load(path, lenient=True)
    assert len(got) == 299 and reader.skipped == 1


def test_empty_trace_is_an_error(tmp_path):
    path = write(tmp_path / "e.hblz", record.empty(0))
    with pytest.raises(TraceError, match="empty"):
        open_trace(path)


def test_interrupted_write_leaves_nothing(tmp_path):
    path = tmp_path / "i.hblz"
    with pytest.raises(RuntimeError):
        with writer(str(path), "packed") as w:
            w.write(requests(10))
            raise RuntimeError
    assert not path.exists()


@pytest.mark.parametrize("field, value", [("unit", "x"), ("requests", -1), ("width", 3), ("size", None),
                                          ("time_quantum_ns", 0), ("blocks", 7)])
def test_a_footer_of_wrong_types_is_an_error_not_a_crash(tmp_path, field, value):
    """A footer whose checksum holds but which hbl did not write (a hand-made or buggy file)."""
    import json
    import zlib
    path = write(tmp_path / "f.hblz", requests(100))
    raw = open(path, "rb").read()
    length, _ = packed.TAIL.unpack_from(raw, len(raw) - packed.TAIL.size - len(packed.END))
    start = len(raw) - packed.TAIL.size - len(packed.END) - length
    meta = json.loads(raw[start:start + length])
    block, col = meta["blocks"][0], meta["blocks"][0]["columns"][0]
    target = block if field in ("unit", "requests") else col if field in ("width", "size") else meta
    target[field] = value
    footer = json.dumps(meta).encode()
    open(path, "wb").write(raw[:start] + footer + packed.TAIL.pack(len(footer), zlib.crc32(footer)) + packed.END)
    with pytest.raises(TraceError, match="footer is malformed|corrupt"):
        load(path)
