"""The live device's stack of dm devices, over a fake device-mapper that keeps the tables
and follows a sector through them: every view maps every extent where the mapping in force
puts it, batch after batch, with a whole table loaded only at a new base."""
import sys

import numpy as np
import pytest

import dmsetup.device  # noqa: F401  (the module, whose name the package's function shadows)
from dmsetup import Linear
from hbl.live import layout, stack as stack_mod
from hbl.live.meta import Meta, new_uuid
from hbl.live.stack import HOLD, REBASE, Stack

MIB = 1 << 20
device_mod = sys.modules["dmsetup.device"]


class FakeDm:
    """Device-mapper as far as a Stack uses it: tables loaded and made live at resume."""

    def __init__(self):
        self.live, self.inactive, self.suspended, self.ops = {}, {}, set(), []
        self.numbers = {}          # "253:N" -> name, as a table names a dm device

    def info(self, name):
        if name not in self.live:
            raise OSError("no such device")
        return {"major": 253, "minor": sorted(self.live).index(name)}

    def create(self, name):
        self.live[name] = None
        self.numbers["253:%d" % len(self.numbers)] = name
        return 253, len(self.numbers) - 1

    def prepare(self, table):
        return table

    def load(self, name, table):
        self.ops.append(("load", name, len(table.targets)))
        self.inactive[name] = table

    def resume(self, name):
        self.ops.append(("resume", name))
        if name in self.inactive:
            self.live[name] = self.inactive.pop(name)
        self.suspended.discard(name)

    def suspend(self, name, flush):
        self.ops.append(("suspend", name))
        self.suspended.add(name)

    def message(self, name, text, sector):
        self.ops.append(("message", name))

    def remove(self, name):
        del self.live[name]

    def resolve(self, name, sector):
        """Where `sector` of device `name` lands: (member path, sector), following linear targets."""
        for start, t in self.live[name].segments():
            if start <= sector < start + t.sectors:
                if not isinstance(t, Linear):
                    return ("error", None)
                under = self.numbers.get(t.dev)
                if under is not None:
                    return self.resolve(under, t.offset + sector - start)
                return (t.dev, t.offset + sector - start)
        raise AssertionError("sector %d beyond %s" % (sector, name))


@pytest.fixture
def dm(monkeypatch):
    monkeypatch.setattr(stack_mod, "ensure_node", lambda name, major, minor: "/dev/mapper/" + name)
    monkeypatch.setattr(device_mod, "ensure_node", lambda name, major, minor: "/dev/mapper/" + name)
    return FakeDm()


def meta():
    members = [{"path": "/dev/a", "size": 128 * MIB, "slots": 127, "spares": 4, "data_start": MIB},
               {"path": "/dev/b", "size": 256 * MIB, "slots": 255, "spares": 4, "data_start": MIB}]
    dev, slot, written = layout.initial_mapping(members)
    return Meta("t", new_uuid(), MIB, members, dev, slot, written)


def expect(m, e):
    d = int(m.dev[e])
    return (m.members[d]["path"], layout.slot_offset(m, d, m.slot[e]) // layout.SECTOR)


def check_view(dm, s, v, m):
    ext = s.ext
    for e in range(m.nextents):
        assert dm.resolve(s.paths[v].name, e * ext + 7) == (expect(m, e)[0], expect(m, e)[1] + 7), (v, e)


def batch(s, m, moves):
    """A batch's dm operations as Batch makes them: the next view and its hold, the drain,
    the release, the switch, the reload; the new mapping."""
    new = m.copy()
    for e, d, slot in moves:
        new.dev[e], new.slot[e] = d, slot
    table = s.next_table(new)
    s.load_view(s.next, table)
    s.paths[s.hold_of(s.next)].suspend()
    s.paths[s.live].suspend()
    s.paths[s.hold_of(s.next)].resume()
    s.live = s.next
    s.load_view(s.next, table)
    return new


def test_every_view_maps_the_mapping_in_force_and_whole_tables_are_rare(dm):
    m = meta()
    s = Stack(m, dm).assemble(m)
    check_view(dm, s, 0, m)
    hold = s.paths[s.hold_of(1)].name
    assert dm.resolve(hold, 5) == dm.resolve(s.paths[1].name, 5)     # a hold is the whole of its view
    rng = np.random.default_rng(3)
    whole = 0
    for k in range(40):
        moves = []          # 8 moves: 4 extents of each member trade places
        for a, b in zip(rng.choice(np.flatnonzero(m.dev == 0), 4, replace=False),
                        rng.choice(np.flatnonzero(m.dev == 1), 4, replace=False)):
            moves += [(int(a), 1, int(m.slot[b])), (int(b), 0, int(m.slot[a]))]
        dm.ops.clear()
        m = batch(s, m, moves)
        check_view(dm, s, 0, m)
        check_view(dm, s, 1, m)
        loads = [n for op, name, *n in dm.ops if op == "load" for n in n]
        whole += sum(1 for n in loads if n > 2 * REBASE + 1)
        assert all(op != "load" or ".hold" not in name for op, name, *_ in dm.ops)   # no hold table a batch
        assert max(loads) <= 2 * REBASE + 1 or any(op == "load" and ".base" in name for op, name, *_ in dm.ops)
    assert 0 < whole <= 40 * 8 // REBASE + 1          # a whole table at a new base only, not twice a batch


def test_no_new_base_under_the_live_view(dm):
    """A batch that failed after prepare leaves the live view on the old base and the next one
    on a new base: the next batch does not load the old base again (the live view maps onto
    it), however many extents differ; it maps them onto the members."""
    m = meta()
    s = Stack(m, dm).assemble(m)
    m = batch(s, m, [(0, 1, 200)])                        # both views onto base 0, view 1 live
    assert s.view_base == [0, 0] and s.live == 1 and s.base == 0
    many = m.copy()
    for e in range(1, REBASE + 2):
        many.dev[e], many.slot[e] = 1, 250 - e
    s.load_view(s.next, s.next_table(many))               # a new base; then the batch fails
    assert s.base == 1 and s.view_base == [1, 0]
    more = many.copy()
    for e in range(REBASE + 2, 2 * REBASE + 4):
        more.dev[e], more.slot[e] = 1, 250 - e
    dm.ops.clear()
    table = s.next_table(more)                            # vs base 1: > REBASE differ, base 0 under view 1
    assert not any(".base" in name for _, name, *_ in dm.ops) and s.base == 1
    s.load_view(s.next, table)
    check_view(dm, s, 0, more)
    check_view(dm, s, 1, m)


def test_assembly_puts_every_view_back_on_the_members(dm):
    m = meta()
    s = Stack(m, dm).assemble(m)
    new = m.copy()
    new.dev[3], new.slot[3] = 1, 250
    s.load_view(1, s.next_table(new))
    s.paths[s.hold_of(1)].suspend()
    s.assemble(new)                      # a dead controller's leftovers overwritten
    assert s.view_base == [None, None] and not dm.suspended
    for v in range(HOLD):
        check_view(dm, s, v, new)
        assert all(dm.numbers.get(t.dev) is None for t in dm.live[s.paths[v].name].targets)
    s.remove()
    assert not dm.live
