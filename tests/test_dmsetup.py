"""The device-mapper library on the host: tables, parsing, ioctl layouts (no dm needed)."""

import pytest

from dmsetup import Cache, Delay, Error, Flakey, Linear, LogWrites, Table, TableError, Zero
from dmsetup import ioctl


def test_table_text_and_parse_round_trip():
    t = Table([Linear(2048, "/dev/nvme0n1", 0), Linear(4096, "/dev/vda", 8192), Zero(8), Error(8)])
    assert t.text() == ("0 2048 linear /dev/nvme0n1 0\n2048 4096 linear /dev/vda 8192\n"
                        "6144 8 zero \n6152 8 error \n")
    assert Table.parse(t.text()) == t and t.sectors == 6160


def test_target_arguments():
    assert Delay(8, "/dev/a", 0, ms=50).args() == "/dev/a 0 50"
    assert Delay(8, "/dev/a", 16, ms=5, write_ms=100).args() == "/dev/a 16 5 /dev/a 16 100"
    assert Flakey(8, "/dev/a", 0, 3, 1, ("drop_writes",)).args() == "/dev/a 0 3 1 1 drop_writes"
    assert LogWrites(8, "/dev/a", "/dev/b").args() == "/dev/a /dev/b"
    assert Cache(8, "/dev/m", "/dev/c", "/dev/o", 512).args() == "/dev/m /dev/c /dev/o 512 1 writeback smq 0 "


@pytest.mark.parametrize("text,msg", [
    ("0 10 linear /dev/x 0\n20 5 zero\n", "line 2: starts at 20"),
    ("0 0 zero\n", "positive number of sectors"),
    ("0 10\n", "want 'start length type"),
    ("0 ten zero\n", "must be integers"),
    ("0 8 linear /dev/x\n", "bad linear arguments"),
    ("", "at least one target"),
])
def test_bad_tables_name_the_line(text, msg):
    with pytest.raises(TableError, match=msg):
        Table.parse(text)


def test_missing_device_is_named(tmp_path):
    with pytest.raises(TableError, match="no such device /nonexistent"):
        Table([Linear(8, "/nonexistent", 0)]).validate(check_devices=True)


def test_cache_status_parse():
    line = ("8 27/2048 128 4/2048 10 22 0 5 1 4 0 1 writeback 2 migration_threshold 2048 smq 0 rw -")
    st = Cache.parse_status(line)
    assert st["used_blocks"] == 4 and st["total_blocks"] == 2048 and st["read_hits"] == 10
    assert st["promotions"] == 4 and st["demotions"] == 1 and st["policy"] == "smq"
    assert st["features"] == ["writeback"] and st["mode"] == "rw"
    with pytest.raises(TableError):
        Cache.parse_status("garbage")


def test_ioctl_layout_matches_the_kernel_header():
    # sizes from include/uapi/linux/dm-ioctl.h
    assert ioctl.IOCTL.size == 312 and ioctl.SPEC.size == 40
    assert ioctl._iowr(ioctl.DEV_CREATE) == 0xC138FD03
    assert ioctl.decode_dev((253 << 8) | 7) == (253, 7)
    assert ioctl.decode_dev((259 << 8) | 0x12 | (0x345 << 20)) == (259, 0x34512)


def test_switch_table_and_region_messages():
    from dmsetup import Switch, Table
    t = Table([Switch(8 * 2048, 2048, (("/dev/mapper/a.0", 0), ("/dev/mapper/a.1", 0), ("/dev/mapper/a.hold", 0)))])
    assert t.text() == "0 16384 switch 3 2048 0 /dev/mapper/a.0 0 /dev/mapper/a.1 0 /dev/mapper/a.hold 0\n"
    # runs of regions as 'first:path R1,rest', in hex as the kernel parses them
    assert Switch.mappings([5, 0, 1, 2, 3, 17, 18], 2) == "set_region_mappings 0:2 R1,3 5:2 11:2 R1,1"
    assert Switch.mappings(range(0x30), 1) == "set_region_mappings 0:1 R1,2f"
    assert Switch.mappings([], 0) == ""
    import numpy as np
    assert Switch.mappings(np.array([18, 17, 3, 2, 1, 0, 5, 3]), 2) == "set_region_mappings 0:2 R1,3 5:2 11:2 R1,1"


def _walk(payload, count):
    """The targets of a TABLE_LOAD payload, read the way the kernel reads it (dm-ioctl.c:
    populate_table): each record found at the previous one plus its `next`, a multiple of 8,
    its parameters a NUL-terminated string before the end."""
    out, off = [], 0
    for i in range(count):
        start, length, _, nxt, ttype = ioctl.SPEC.unpack_from(payload, off)
        params = payload[off + ioctl.SPEC.size:]
        assert b"\0" in params, "target %d: parameters not terminated" % i
        out.append("%d %d %s %s\n" % (start, length, ttype.rstrip(b"\0").decode(), params.split(b"\0", 1)[0].decode()))
        assert nxt % 8 == 0 and nxt >= ioctl.SPEC.size
        off += nxt
    assert off == len(payload)
    return "".join(out)


def test_ioctl_payload_holds_the_table_as_the_kernel_reads_it():
    from dmsetup import LinearRuns
    ctl = ioctl.Control.__new__(ioctl.Control)          # packing opens nothing
    t = Table([Linear(2048, "/dev/nvme0n1", 0), Linear(4096, "/dev/vda", 8192), Zero(8), Error(8)])
    p = ctl.prepare(t)
    assert p.count == 4 and _walk(p.payload, p.count) == t.text()
    runs = LinearRuns([2048, 6144, 2048], [0, 1, 0], [2048, 12345678, 4096], ["/dev/nvme0n1", "/dev/vda"])
    p = ctl.prepare(runs.validate())
    assert _walk(p.payload, p.count) == runs.text() == Table(runs.targets).text()
    assert runs.text() == ("0 2048 linear /dev/nvme0n1 2048\n2048 6144 linear /dev/vda 12345678\n"
                           "8192 2048 linear /dev/nvme0n1 4096\n")
    assert runs.sectors == 10240 and len(runs) == 3 and runs == Table(runs.targets)


def test_linear_runs_params_made_with_numpy_are_the_formatted_ones():
    """params_array() gives each target's "PATH OFFSET" byte for byte as params() formats it,
    offsets of every number of digits (0, 9, 10, 10**17) and paths of every length, some unused;
    the payload packed from it is the same bytes."""
    import numpy as np
    from dmsetup import LinearRuns
    ctl = ioctl.Control.__new__(ioctl.Control)
    rng = np.random.default_rng(7)
    paths = ["259:0", "/dev/vda", "/dev/mapper/a-rather-long-member-name", "8:16"]
    for n in (1, 3, 900):
        dev = rng.integers(0, 3, n)                    # the last path unused
        off = rng.integers(0, 10 ** rng.integers(1, 16, n))
        off[:min(n, 3)] = [0, 9, 10 ** 17][:min(n, 3)]
        runs = LinearRuns(rng.integers(1, 100, n) * 8, dev, off, paths)
        arr, longest = runs.params_array()
        assert arr.tolist() == runs.params() and longest == max(len(p) for p in runs.params())
        assert ioctl.pack(runs.starts(), runs.n, b"linear", arr, longest) == \
            ioctl.pack(runs.starts(), runs.n, b"linear", runs.params())
        assert _walk(ctl.prepare(runs).payload, n) == runs.text()


@pytest.mark.parametrize("n,d,o,msg", [
    ([8, 0], [0, 0], [0, 8], "line 2 \\(linear at sector 8\\): length must be a positive"),
    ([8, 8], [0, 0], [0, -8], "line 2 .*offset must be >= 0"),
    ([8, 8], [0, 2], [0, 8], "line 2 .*device number 2 of 2"),
    ([], [], [], "at least one target"),
])
def test_linear_runs_bad_targets_name_the_line(n, d, o, msg):
    from dmsetup import LinearRuns
    with pytest.raises(TableError, match=msg):
        LinearRuns(n, d, o, ["/dev/a", "/dev/b"]).validate()


def test_linear_runs_missing_device_is_named():
    from dmsetup import LinearRuns
    with pytest.raises(TableError, match="line 2 .*no such device /nonexistent"):
        LinearRuns([8, 8], [0, 1], [0, 0], ["/dev/null", "/nonexistent"]).validate(check_devices=True)
