"""A small device-mapper library: targets, tables, devices; knows nothing of hbl.

    from dmsetup import Table, Linear, device
    with device("demo", Table([Linear(2048, "/dev/loop0", 0)])) as d:
        print(d.path, d.status())

Operations go through the dm ioctl interface (/dev/mapper/control) by default,
or the dmsetup command (backend("command")).
"""
from dmsetup.targets import (Cache, Delay, Error, Flakey, Linear, LinearRuns, LogWrites, Raw, Switch, Table,
                             TableError, Target, Zero)
from dmsetup.device import Device, DmError, backend, device

__all__ = ["Cache", "Delay", "Error", "Flakey", "Linear", "LinearRuns", "LogWrites", "Raw", "Switch", "Table", "TableError", "Target",
           "Zero", "Device", "DmError", "backend", "device"]
