"""Devices: create, reload, suspend, remove, with resources always released.

    with device("hbl-test", table) as d:       # removed on exit, whatever happens
        with d.suspended():                      # resumed on exit, whatever happens
            ...
        d.reload(new_table)                      # load + suspend + resume
"""
import contextlib
import errno
import os
import stat
import time

from dmsetup.targets import Table


class DmError(RuntimeError):
    """A failed operation: says which device, which operation, which table."""

    def __init__(self, op, name, cause, table=None):
        self.op, self.name, self.cause, self.table = op, name, cause, table
        msg = "dm %s %s: %s" % (op, name, cause)
        if table is not None:
            lines = table.text().splitlines()
            shown = lines[:5] + (["... (%d lines)" % len(lines)] if len(lines) > 5 else [])
            msg += "\n  table:\n    " + "\n    ".join(shown)
        super().__init__(msg)


def backend(kind="ioctl"):
    """The dm interface: 'ioctl' (default; /dev/mapper/control) or 'command' (the dmsetup binary)."""
    if kind == "ioctl":
        from dmsetup.ioctl import Control
        return Control()
    if kind == "command":
        from dmsetup.command import Command
        return Command()
    raise ValueError("backend is 'ioctl' or 'command', not %r" % kind)


def _udev_running():
    return os.path.exists("/run/udev/control")


def ensure_node(name, major, minor, timeout=5.0):
    """/dev/mapper/NAME: wait for udev where it runs (pyudev), make the node where it does not."""
    path = "/dev/mapper/" + name
    if _udev_running():
        try:
            import pyudev
            ctx = pyudev.Context()
            mon = pyudev.Monitor.from_netlink(ctx)
            mon.filter_by("block")
            mon.start()
            deadline = time.time() + timeout
            while not os.path.exists(path) and time.time() < deadline:
                mon.poll(timeout=0.1)
        except ImportError:
            deadline = time.time() + timeout
            while not os.path.exists(path) and time.time() < deadline:
                time.sleep(0.02)
    if not os.path.exists(path):
        os.makedirs("/dev/mapper", exist_ok=True)
        os.mknod(path, 0o600 | stat.S_IFBLK, os.makedev(major, minor))
    return path


def _remove_node(name):
    path = "/dev/mapper/" + name
    if not _udev_running() and os.path.exists(path):
        os.unlink(path)


class Device:
    def __init__(self, name, dm, table=None):
        self.name, self.dm, self.table = name, dm, table
        self.path = "/dev/mapper/" + name
        self.major = self.minor = None

    def _do(self, op, fn, *args, table=None):
        try:
            return fn(*args)
        except OSError as exc:
            raise DmError(op, self.name, exc.strerror or str(exc), table) from None

    def create(self, table):
        table.validate()
        self.major, self.minor = self._do("create", self.dm.create, self.name)
        try:
            self._do("load", self.dm.load, self.name, table, table=table)
            self._do("resume", self.dm.resume, self.name)
        except DmError:
            self.remove()
            raise
        self.table = table
        self.path = ensure_node(self.name, self.major, self.minor)
        return self

    def load(self, table):
        """Load a Table (validated first) or what dm.prepare() made of one."""
        if isinstance(table, Table):
            table.validate()
            self._do("load", self.dm.load, self.name, table, table=table)
        else:
            self._do("load", self.dm.load, self.name, table)

    def suspend(self, flush=True):
        self._do("suspend", self.dm.suspend, self.name, flush)

    def resume(self):
        self._do("resume", self.dm.resume, self.name)

    @contextlib.contextmanager
    def suspended(self, flush=True):
        """I/O held (after a flush unless flush=False) inside; always resumed."""
        self.suspend(flush)
        try:
            yield self
        finally:
            self.resume()

    def reload(self, table, flush=True):
        """Make `table` live: load it, then suspend and resume (one stall)."""
        self.load(table)
        with self.suspended(flush):
            pass
        self.table = table

    def info(self):
        return self._do("info", self.dm.info, self.name)

    def status(self):
        return self._do("status", self.dm.status, self.name)

    def live_table(self):
        rows = self._do("table", self.dm.table, self.name)
        return Table.parse("".join("%d %d %s %s\n" % r for r in rows))

    def message(self, text, sector=0):
        return self._do("message", self.dm.message, self.name, text, sector)

    def remove(self, retries=20):
        """Remove, retrying while something still has it open (EBUSY)."""
        for i in range(retries):
            try:
                self.dm.remove(self.name)
                break
            except OSError as exc:
                if exc.errno == errno.ENXIO or "No such device" in str(exc):
                    break
                if (exc.errno == errno.EBUSY or "busy" in str(exc).lower()) and i + 1 < retries:
                    time.sleep(0.05)
                    continue
                raise DmError("remove", self.name, exc.strerror or str(exc)) from None
        _remove_node(self.name)


@contextlib.contextmanager
def device(name, table, dm=None):
    """A live device for the duration of the block; removed on exit."""
    dm = dm or backend()
    d = Device(name, dm).create(table)
    try:
        yield d
    finally:
        d.remove()
