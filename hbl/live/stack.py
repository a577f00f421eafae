"""The dm devices of a live device, and the steps that remap extents without suspending it.

    /dev/mapper/NAME        dm-switch, one region per extent, over three paths:
      NAME.0, NAME.1        linear views of the whole logical space, each extent at its
                            slot; one of them serves (the live path), the other is
                            loaded with the next mapping while idle
      NAME.hold             a view of the moving extents alone (the rest an error target;
                            at assembly the whole mapping), suspended while a batch of
                            moving extents is switched: it alone holds their I/O

A region is sent to another path by a message, without suspend, so I/O to extents
that are not moving never waits on a migration.  Both live paths map every extent
to the slot the mapping in force gives it (the next mapping differs only in the
extents being moved, and those go through the hold), so whichever of them a region
uses, at any moment, it reaches the right data; only moving extents are routed to the
hold, which maps them (loading it whole, a target per run of extents, would cost a
batch a third table of thousands of targets).
"""
from dmsetup import Device, Switch, Table
from dmsetup.device import ensure_node
from hbl.live import layout

HOLD = 2


def names(name):
    """The dm names of a live device's views: the two live paths and the hold."""
    return [name + ".0", name + ".1", name + ".hold"]


class Stack:
    def __init__(self, meta, dm):
        self.dm = dm
        self.top = Device(meta.name, dm)
        self.paths = [Device(n, dm) for n in names(meta.name)]
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
        What a dead controller left (suspended views, a half-done batch) is overwritten: with
        every view alike, the switch's round-robin start and any routing left over are harmless."""
        table = layout.table(meta, gone=self.gone)
        for d in self.paths:
            self._make(d, table)
        top = Table([Switch(self.nregions * self.ext, self.ext, tuple((d.path, 0) for d in self.paths))])
        self._make(self.top, top)
        self.route(range(self.nregions), 0)
        self.live = 0
        return self

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
        for d in self.paths:        # a view left suspended by a batch is resumed first: nothing waits in it
            d.resume()
            d.remove()
