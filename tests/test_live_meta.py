"""The live device's metadata (the mapping, its file and superblock, damage refused) and layout
(capacity, spares, the tables built from a mapping)."""
import os

import pytest

from hbl.errors import HblError
from hbl.live import layout
from hbl.live.meta import Meta, MetaError, new_uuid, parse_superblock, superblock

from helpers import MIB, live_meta as meta


def test_meta_round_trip_and_atomic_replace(tmp_path):
    m = meta()
    m.written[3] = 1
    m.generation = 7
    p = str(tmp_path / "meta")
    m.save(p)
    got = Meta.load(p)
    assert (got.dev == m.dev).all() and (got.slot == m.slot).all() and (got.written == m.written).all()
    assert got.generation == 7 and got.uuid == m.uuid and got.members == m.members
    assert os.listdir(tmp_path) == ["meta"]          # no temporary file left behind
    assert oct(os.stat(p).st_mode & 0o777) == "0o600"


@pytest.mark.parametrize("damage", ["flip", "truncate", "magic", "header", "empty"])
def test_meta_damage_is_refused_with_the_file_named(tmp_path, damage):
    p = str(tmp_path / "meta")
    meta().save(p)
    data = bytearray(open(p, "rb").read())
    if damage == "flip":
        data[-10] ^= 1
    elif damage == "truncate":
        data = data[:-5]
    elif damage == "magic":
        data[0] ^= 0xff
    elif damage == "header":
        data[20] ^= 1
    else:
        data = b""
    open(p, "wb").write(data)
    with pytest.raises(MetaError) as exc:
        Meta.load(p)
    assert p in str(exc.value)


def test_meta_refuses_a_mapping_that_uses_a_slot_twice(tmp_path):
    m = meta()
    m.slot[1] = m.slot[0]
    with pytest.raises(MetaError, match="same slot"):
        m.save(str(tmp_path / "meta"))
    assert not os.path.exists(tmp_path / "meta")


def test_superblock_round_trip_and_damage():
    u = new_uuid()
    b = superblock(u, 1, 2, MIB, 64 * MIB, MIB)
    assert len(b) == 4096
    sb = parse_superblock(b)
    assert sb["uuid"] == u and sb["index"] == 1 and sb["extent_bytes"] == MIB
    bad = bytearray(b)
    bad[20] ^= 1
    assert parse_superblock(bytes(bad)) == {"damaged": True}
    assert parse_superblock(bytes(4096)) is None


# ---- layout ----

def test_layout_capacity_spares_and_merged_table():
    m = meta()
    caps = layout.capacities(m.members)
    assert caps == [27, 59] and m.nextents == 86
    t = layout.table(m)
    assert len(t) == 2 and t.sectors == 86 * 2048
    # move extent 5 to the HDD's first spare slot: the table splits around it
    free = layout.free_slots(m)
    assert free[0] == [27, 28, 29, 30] and free[1] == [59, 60, 61, 62]
    m.dev[5], m.slot[5] = 1, free[1][0]
    t = layout.table(m)
    segs = [(s, x.sectors, x.dev, x.offset) for s, x in t.segments()]
    assert segs[1] == (5 * 2048, 2048, "/dev/b", (1 + 59) * 2048)
    assert sum(x.sectors for _, x in t.segments()) == 86 * 2048
    assert layout.free_slots(m)[0][0] == 5


def test_tables_name_block_members_by_number(tmp_path):
    """A table names a member MAJOR:MINOR (no path lookup per target in the kernel); a path
    that is not a block device stays a path, for the load to name it."""
    import glob
    import stat as st_
    f = tmp_path / "img"
    f.write_bytes(b"")
    blk = [p for p in sorted(glob.glob("/dev/loop*") + glob.glob("/dev/[sv]d?") + glob.glob("/dev/nvme?n?"))
           if st_.S_ISBLK(os.stat(p).st_mode)][:1]
    names = layout.kernel_names([{"path": str(f)}, {"path": "/nonexistent"}] + [{"path": p} for p in blk])
    assert names[:2] == [str(f), "/nonexistent"]
    if blk:
        r = os.stat(blk[0]).st_rdev
        assert names[2] == "%d:%d" % (os.major(r), os.minor(r))
        m = meta()
        m.members[1]["path"] = blk[0]
        t = layout.table(m)
        assert t.text().splitlines()[-1].split()[3] == names[2]


def test_partial_table_maps_only_the_given_extents():
    """The hold's table: the extents given, each where the mapping puts it, and an error
    target everywhere else (no other extent is routed to the hold)."""
    m = meta()
    m.dev[5], m.slot[5] = 1, 59
    t = layout.partial_table(m, [5, 0, 85, 5])
    segs = [(s, x.sectors, x.type, getattr(x, "dev", None), getattr(x, "offset", None)) for s, x in t.segments()]
    assert segs == [(0, 2048, "linear", "/dev/a", 2048), (2048, 4 * 2048, "error", None, None),
                    (5 * 2048, 2048, "linear", "/dev/b", (1 + 59) * 2048), (6 * 2048, 79 * 2048, "error", None, None),
                    (85 * 2048, 2048, "linear", "/dev/b", (1 + 58) * 2048)]
    assert t.sectors == layout.table(m).sectors == 86 * 2048


def test_a_gone_members_extents_are_an_error_target_in_every_table(tmp_path):
    """A member removed under the device cannot be named by a table (the load fails): its
    extents map to an error target, as its I/O would fail, and the others stay where they are."""
    m = meta()
    m.dev[5], m.slot[5] = 1, 59
    t = layout.table(m, gone={1})
    segs = [(s, x.sectors, x.type, getattr(x, "dev", None)) for s, x in t.segments()]
    assert segs[0] == (0, 5 * 2048, "linear", "/dev/a") and segs[1] == (5 * 2048, 2048, "error", None)
    assert all(x.type == "error" for s, x in t.segments() if s >= 27 * 2048)        # the HDD's extents
    assert not any(getattr(x, "dev", None) == "/dev/b" for _, x in t.segments())
    assert t.sectors == layout.table(m).sectors
    assert next(layout.table(m, gone={0}).segments())[1].type == "error"
    hold = layout.partial_table(m, [0, 5], gone={1})
    assert [x.type for _, x in hold.segments()][:3] == ["linear", "error", "error"]
    f = tmp_path / "img"
    f.write_bytes(b"")
    assert layout.gone_members([{"path": str(f)}, {"path": str(tmp_path / "removed")}]) == {1}


def test_sizes_parse():
    assert layout.parse_size("1M") == MIB and layout.parse_size("256K") == 256 << 10
    assert layout.parse_size("4194304") == 4 * MIB
    with pytest.raises(HblError):
        layout.parse_size("lots")
