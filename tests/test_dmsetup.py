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
