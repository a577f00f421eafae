"""The dm devices of a live device, and the steps that remap extents without suspending it.

    /dev/mapper/NAME        dm-switch, one region per extent, over four paths:
      NAME.0, NAME.1        linear views of the whole logical space, each extent at its
                            slot; one of them serves (the live path), the other is
                            loaded with the next mapping while idle
      NAME.hold0, .hold1    the whole of view 0, of view 1 (one linear target, loaded at
                            assembly): a batch suspends the one over its next view, and
                            routes its moving extents there; it alone holds their I/O
      NAME.base0, .base1    the whole mapping as it stood when the base was loaded; a
                            view maps onto the current base every extent not moved since,
                            and onto the members only the few that moved

A region is sent to another path by a message, without suspend, so I/O to extents
that are not moving never waits on a migration.  Both live paths map every extent
to the slot the mapping in force gives it (the next mapping differs only in the
extents being moved, and those go through the hold), so whichever of them a region
uses, at any moment, it reaches the right data.  A view's table is small (the extents
moved since its base, the runs between them onto the base): a batch loads no whole
table but when more than REBASE extents differ from the base, and then the other base,
idle, takes the whole new mapping.  No view ever maps onto the other view (the live
one is drained while the next serves, and they swap every batch).
"""
import numpy as np

from dmsetup import Device, Switch, Table
from dmsetup.device import ensure_node
from hbl.live import layout

HOLD = 2            # the switch's paths: view 0, view 1, then their holds
REBASE = 64         # extents a view maps onto the members at most before a new base


def kernel_name(d):
    """A dm device as a table names it: MAJOR:MINOR (a path costs the kernel a lookup per target)."""
    return d.path if d.major is None else "%d:%d" % (d.major, d.minor)


def names(name):
    """The dm names of a live device's paths (the views, then their holds) and its bases."""
    return [name + ".0", name + ".1", name + ".hold0", name + ".hold1"], [name + ".base0", name + ".base1"]


class Stack:
    def __init__(self, meta, dm):
        self.dm = dm
        self.top = Device(meta.name, dm)
        paths, bases = names(meta.name)
        self.paths = [Device(n, dm) for n in paths]
        self.bases = [Device(n, dm) for n in bases]
        self.base = 0                       # the base the views map onto
        self.base_map = None                # (dev, slot) as the base maps them
        self.view_base = [None, None]       # the base each view maps onto (None: onto the members)
        self.base_gone = set()              # the members gone when the base was loaded
        self.ext = meta.extent_bytes // layout.SECTOR
        self.nregions = meta.nextents
        self.live = 0
        self.gone = set()       # members removed under the device: every table maps their extents to errors

    @property
    def path(self):
        return self.top.path

    def _make(self, d, table):
        """Create d with `table`, or load it into what is left of d (maybe suspended) and resume."""
        try:
            info = self.dm.info(d.name)
        except OSError:
            info = None
        if info is None:
            d.create(table)
            return
        d.load(table)
        d.resume()
        d.major, d.minor = info["major"], info["minor"]
        d.path = ensure_node(d.name, info["major"], info["minor"])
        d.table = table

    def assemble(self, meta):
        """Every view with the mapping in `meta`, then the switch over them, every region on path 0.
        What a dead controller left (suspended views or holds, a view onto a base, a half-done
        batch) is overwritten, in this order: the views onto the members (then nothing maps onto
        a base), the bases, the holds over the views.  With every view alike, the switch's
        round-robin start and any routing left over are harmless."""
        table = layout.table(meta, gone=self.gone)
        for d in self.paths[:HOLD] + self.bases:
            self._make(d, table)
        sectors = self.nregions * self.ext
        for view, hold in zip(self.paths[:HOLD], self.paths[HOLD:]):
            self._make(hold, layout.whole_onto(kernel_name(view), sectors))
        self.base, self.base_map, self.view_base = 0, (meta.dev.copy(), meta.slot.copy()), [None, None]
        self.base_gone = set(self.gone)
        top = Table([Switch(sectors, self.ext, tuple((d.path, 0) for d in self.paths))])
        self._make(self.top, top)
        self.route(range(self.nregions), 0)
        self.live = 0
        return self

    def next_table(self, meta):
        """The next view's table for the mapping `meta` (packed for the kernel): onto the current
        base but the extents that differ from it; when more than REBASE differ (or a member has
        gone since), the other base is loaded first with the whole mapping, if the live view does
        not map onto it (after a failed batch it may: the rebase then waits a batch)."""
        dev, slot = self.base_map
        differ = (meta.dev != dev) | (meta.slot != slot)
        if self.gone - self.base_gone:
            differ |= np.isin(meta.dev, sorted(self.gone - self.base_gone))
        other = 1 - self.base
        if differ.sum() > REBASE and self.view_base[self.live] != other:
            whole = self.dm.prepare(layout.table(meta, gone=self.gone).validate())
            self.bases[other].load(whole)        # nothing maps onto it: no one waits on the swap
            self.bases[other].resume()
            self.base, self.base_map, self.base_gone = other, (meta.dev.copy(), meta.slot.copy()), set(self.gone)
            differ[:] = False
        return self.dm.prepare(layout.over_base(meta, differ, kernel_name(self.bases[self.base]), gone=self.gone).validate())

    def load_view(self, v, table):
        """View v (idle) loaded with a table next_table() made, and resumed."""
        self.paths[v].load(table)
        self.paths[v].resume()
        self.view_base[v] = self.base

    def hold_of(self, v):
        """The switch's path number of the hold over view v."""
        return HOLD + v

    def route(self, regions, path):
        """Send `regions` to path number `path` (a message: no suspend)."""
        self.send(Switch.mappings(regions, path))

    def send(self, msg):
        """A routing message built ahead with Switch.mappings (one ioctl; nothing to do if empty)."""
        if msg:
            self.top.message(msg)

    @property
    def next(self):
        return 1 - self.live

    def remove(self):
        self.top.remove()
        for d in self.paths[HOLD:] + self.paths[:HOLD] + self.bases:   # each before what it maps onto
            d.resume()              # (one left suspended by a batch: nothing waits in it)
            d.remove()
