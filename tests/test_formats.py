import gzip

import numpy as np
import pytest

from hbl import record
from hbl import trace as T
from hbl.errors import TraceError

# counts from the traces' README (../shared/traces/README.md)
MSR = {"hm_0": (7016, 5820, 1196), "rsrch_1": (13780, 42, 13738), "hm_1": (1000, 0, 1000),
       "mds_0": (1000, 0, 1000), "proj_0": (1000, 1, 999), "rsrch_2": (1000, 0, 1000),
       "wdev_1": (1055, 0, 1055)}


@pytest.mark.parametrize("name", sorted(MSR))
def test_bundled_msr_slices(name):
    data, reader = T.load("bundled:" + name)
    n, reads, writes = MSR[name]
    assert len(data) == n
    assert int((data["op"] == record.READ).sum()) == reads
    assert int((data["op"] == record.WRITE).sum()) == writes
    assert reader.name == "msrc"


def test_msrc_fields_exact(msr, tmp_path):
    data, _ = T.load(msr("hm_0"))
    # first line: 128166386783630075,hm,0,Write,3164164096,40960,2896
    assert data["offset"][0] == 3164164096 and data["length"][0] == 40960
    assert data["op"][0] == record.WRITE and data["latency_ns"][0] == 289600
    assert data["time_ns"][0] == (128166386783630075 - 116444736000000000) * 100
    # the file has no trailing newline; its last record is still read
    last = open(msr("hm_0"), "rb").read().rsplit(b"\n", 1)[1].split(b",")
    assert not open(msr("hm_0"), "rb").read().endswith(b"\n")
    assert data["offset"][-1] == int(last[4]) and data["length"][-1] == int(last[5])


def write(tmp_path, name, text, gz=False):
    p = tmp_path / name
    if gz:
        with gzip.open(p, "wt") as f:
            f.write(text)
    else:
        p.write_text(text)
    return str(p)


def test_gzip(tmp_path, msr):
    text = open(msr("mds_0")).read()
    data, _ = T.load(write(tmp_path, "x.csv.gz", text, gz=True))
    plain, _ = T.load(msr("mds_0"))
    assert np.array_equal(data, plain)


def test_bad_line_names_file_and_line(tmp_path):
    p = write(tmp_path, "bad.csv", "128166386783630075,hm,0,Write,4096,4096,10\n"
                                  "128166386783630076,hm,0,Write,4096,4096,10\n"
                                  "128166386783630077,hm,0,Erase,4096,4096,10\n")
    with pytest.raises(TraceError) as e:
        T.load(p, fmt="msrc")
    assert "bad.csv:3" in str(e.value) and "Erase" in str(e.value)
    data, reader = T.load(p, fmt="msrc", lenient=True)
    assert len(data) == 2 and reader.skipped == 1


def test_huge_offsets_exact_or_rejected(tmp_path):
    big = 2 ** 53 + 1
    p = write(tmp_path, "big.csv", "128166386783630075,hm,0,Read,%d,4096,10\n" % big)
    data, _ = T.load(p)
    assert int(data["offset"][0]) == big
    p = write(tmp_path, "huge.csv", "128166386783630075,hm,0,Read,%d,4096,10\n" % 2 ** 64)
    with pytest.raises(TraceError, match="out of range"):
        T.load(p, fmt="msrc")


def test_zero_length_requests_are_read_and_not_simulated(tmp_path):
    from hbl.sim import simulate
    p = write(tmp_path, "z.csv", "128166386783630075,hm,0,Read,0,0,10\n"
                                "128166386783630076,hm,0,Read,0,4096,10\n")
    data, _ = T.load(p)
    assert len(data) == 2 and data["length"][0] == 0
    r = simulate(p, policy="lru")
    assert r["requests"] == 1 and r["skipped"] == 1


SAMPLES = {
    "blkparse": ("  8,0    3        1     0.000000000   697  Q  WS 223490 + 8 [kjournald]\n"
                 "  8,0    3        2     0.000001500   697  D  WS 223490 + 8 [kjournald]\n"
                 "  8,0    1        3     0.000510000     0  C  WS 223490 + 8 [0]\n"
                 "  8,0    3        4     1.250000000   700  D   R 1000 + 16 [cat]\n"
                 "  8,0    3        5     1.250000001   700  D   D 5000 + 2048 [fstrim]\n"
                 "CPU3 (8,0):\n Reads Queued:           1,        8KiB\n",
                 [(1500, 223490 * 512, 4096, record.WRITE), (1_250_000_000, 512000, 8192, record.READ),
                  (1_250_000_001, 5000 * 512, 2048 * 512, record.DISCARD)]),
    "spc": ("0,20941264,8192,W,0.551706\n1,20939840,512,r,0.554041\n",
            [(551706000, 20941264 * 512, 8192, record.WRITE), (554041000, 20939840 * 512, 512, record.READ)]),
    "alibaba": ("419,W,8849686528,4096,1577808000000095\n419,R,8849690624,8192,1577808000000195\n",
                [(1577808000000095000, 8849686528, 4096, record.WRITE),
                 (1577808000000195000, 8849690624, 8192, record.READ)]),
    "tencent": ("1538323200,1199648,16,1,1283\n1538323201,2000,8,0,1283\n",
                [(1538323200 * 10 ** 9, 1199648 * 512, 16 * 512, record.WRITE),
                 (1538323201 * 10 ** 9, 2000 * 512, 8 * 512, record.READ)]),
    "fio": ("fio version 3 iolog\n0 /dev/sdb add\n0 /dev/sdb open\n5 /dev/sdb write 4096 8192\n"
            "7 /dev/sdb read 0 4096\n9 /dev/sdb trim 65536 65536\n9 /dev/sdb close\n",
            [(5_000_000, 4096, 8192, record.WRITE), (7_000_000, 0, 4096, record.READ),
             (9_000_000, 65536, 65536, record.DISCARD)]),
}


@pytest.mark.parametrize("fmt", sorted(SAMPLES))
def test_each_format_detected_and_parsed(tmp_path, fmt):
    text, expected = SAMPLES[fmt]
    p = write(tmp_path, "t." + fmt, text)
    assert T.detect(p) == fmt
    data, _ = T.load(p)
    got = [(int(r["time_ns"]), int(r["offset"]), int(r["length"]), int(r["op"])) for r in data]
    assert got == expected


def test_blkparse_complete_actions(tmp_path):
    p = write(tmp_path, "b.txt", SAMPLES["blkparse"][0])
    data, _ = T.load(p, action="C")
    assert len(data) == 1 and data["time_ns"][0] == 510000


def test_fio_v2(tmp_path):
    p = write(tmp_path, "v2.log", "fio version 2 iolog\n/dev/sda add\n/dev/sda open\n"
                                 "/dev/sda read 0 4096\n/dev/sda wait 1500\n/dev/sda write 8192 4096\n")
    data, _ = T.load(p)
    assert [int(x) for x in data["time_ns"]] == [0, 1_500_000]
    assert list(data["op"]) == [record.READ, record.WRITE]


def test_generic_csv(tmp_path):
    p = write(tmp_path, "g.tsv", "ts\top\tlba\tblocks\n10\tR\t8\t8\n20\tW\t16\t1\n")
    data, _ = T.load(p, fmt="csv", columns="time=0,op=1,offset=2,length=3", delimiter="\t",
                     time_unit="us", offset_unit="sectors", length_unit="sectors", header=True)
    assert [(int(r["time_ns"]), int(r["offset"]), int(r["length"]), int(r["op"])) for r in data] == \
        [(10_000, 4096, 4096, record.READ), (20_000, 8192, 512, record.WRITE)]
    with pytest.raises(TraceError, match="column mapping"):
        T.load(p, fmt="csv")


def test_unknown_and_ambiguous_formats(tmp_path):
    with pytest.raises(TraceError, match="unknown trace format"):
        T.detect(write(tmp_path, "u.txt", "hello world\n"))
    with pytest.raises(TraceError, match="empty"):
        T.detect(write(tmp_path, "e.txt", "\n\n"))
    with pytest.raises(TraceError, match="no such file"):
        T.open_trace(str(tmp_path / "missing.csv"))


@pytest.mark.parametrize("fmt", ["native", "msrc", "fio"])
def test_writers_round_trip(tmp_path, msr, fmt):
    data, _ = T.load(msr("hm_0"))
    out = str(tmp_path / ("out." + fmt))
    w = T.writer(out, fmt, source="hm_0")
    for i in range(0, len(data), 1000):
        w.write(data[i:i + 1000])
    w.close()
    back, _ = T.load(out, fmt=fmt)
    assert len(back) == len(data)
    assert np.array_equal(back["offset"], data["offset"]) and np.array_equal(back["length"], data["length"])
    assert np.array_equal(back["op"], data["op"])
    if fmt == "native":
        assert np.array_equal(back, data)
        assert T.native.read_header(out) == (len(data), "hm_0")
    if fmt == "msrc":
        assert np.array_equal(back["time_ns"], data["time_ns"])
        assert np.array_equal(back["latency_ns"], data["latency_ns"])
    if fmt == "fio":
        rel_ms = (data["time_ns"] - data["time_ns"][0]) // 1_000_000
        assert np.array_equal(back["time_ns"] // 1_000_000, rel_ms)


def test_native_truncated_is_refused(tmp_path, msr):
    data, _ = T.load(msr("mds_0"))
    out = tmp_path / "t.bin"
    w = T.writer(str(out), "native")
    w.write(data)
    w.close()
    raw = out.read_bytes()
    out.write_bytes(raw[:-7])
    with pytest.raises(TraceError, match="truncated"):
        T.load(str(out))


def test_reader_streams_in_chunks(msr):
    chunks = list(T.open_trace(msr("hm_0"), chunk=1000))
    assert [len(c) for c in chunks] == [1000] * 7 + [16]


def test_gzip_reader_closes_its_file(tmp_path, msr):
    import os
    path = write(tmp_path, "x.csv.gz", open(msr("mds_0")).read(), gz=True)
    before = len(os.listdir("/proc/self/fd"))
    for _ in range(20):
        list(T.open_trace(path))
        T.detect(path)
    assert len(os.listdir("/proc/self/fd")) == before


def test_blkparse_malformed_events_counted_trailer_ignored(tmp_path):
    ok = "  8,0    1        1     0.000000100  7  D   R 8 + 8 [fio]"
    text = "\n".join([ok, "  8,0    1  garbage", ok, "CPU0 (8,0):", " Reads Queued: 1, 4KiB", "Total (8,0):",
                      " Writes Queued: 0"]) + "\n"
    path = write(tmp_path, "b.txt", text)
    with pytest.raises(TraceError, match=r"b.txt:2: not a blkparse event line"):
        list(T.open_trace(path, fmt="blkparse"))
    reader = T.open_trace(path, fmt="blkparse", lenient=True)
    assert sum(len(c) for c in reader) == 2 and reader.skipped == 1


@pytest.mark.parametrize("fmt, text, message", [
    ("msrc", "", "the trace is empty"),
    ("blkparse", "128166372003061629,hm,0,Read,0,4096,50\n", "not a blkparse event line"),
    ("fio", "fio version 3 iolog\n0 /dev/x add\n", "no request in 2 lines"),
])
def test_nothing_read_is_an_error(tmp_path, fmt, text, message):
    with pytest.raises(TraceError, match=message):
        list(T.open_trace(write(tmp_path, "t.txt", text), fmt=fmt))


def test_writer_context_manager_finishes_or_removes(tmp_path, msr):
    data, _ = T.load(msr("mds_0"))
    with T.writer(tmp_path / "ok.iolog", "fio") as w:
        w.write(data)
    assert (tmp_path / "ok.iolog").read_text().endswith("close\n")
    with pytest.raises(RuntimeError):
        with T.writer(tmp_path / "bad.hbl", "native") as w:
            w.write(data)
            raise RuntimeError("interrupted")
    assert not (tmp_path / "bad.hbl").exists()


def test_native_records_checked(tmp_path, msr):
    data, _ = T.load(msr("mds_0"))
    data = data.copy()
    data["op"][5] = 7
    data["length"][9] = 1 << 30
    with T.writer(tmp_path / "t.hbl", "native") as w:
        w.write(data)
    with pytest.raises(TraceError, match="record 5: op 7"):
        list(T.open_trace(str(tmp_path / "t.hbl")))
    reader = T.open_trace(str(tmp_path / "t.hbl"), lenient=True)
    assert sum(len(c) for c in reader) == len(data) - 2 and reader.skipped == 2
