"""hbl devices: the device profiles and HSS configurations, and measuring a real device."""
import json
import sys

from hbl.cmdline import print_json
from hbl.errors import HblError


def add_parsers(sub):
    """hbl devices."""
    d = sub.add_parser("devices", help="list device profiles and HSS configurations, or measure one",
                       description="List the built-in device profiles (with their datasheet figures) and HSS "
                       "configurations, or measure a profile of a real device with fio (--measure): QD1 4 KiB "
                       "latency, random 4 KiB IOPS at depth 32, sequential bandwidth. Reads only unless --write, "
                       "which overwrites the device's data and is refused on a device that is mounted, held or "
                       "carries a signature (--force overrides the signature check only).")
    d.add_argument("--json", action="store_true",
                   help="print the profiles and HSS presets (or the measured profile) as JSON")
    d.add_argument("--measure", metavar="DEVICE", help="block device (or file of 64 MiB or more) to measure")
    d.add_argument("--seconds", type=float, default=5.0, help="per fio job (default 5; 4 jobs, 7 with --write)")
    d.add_argument("--write", action="store_true", help="also measure writes: DESTROYS the device's data")
    d.add_argument("--force", action="store_true", help="with --write: take a device that carries a signature")
    d.set_defaults(func=cmd_devices)


def _short_count(x):
    return "%gk" % (x / 1000) if x >= 10000 else "%g" % x


def cmd_devices(a):
    import dataclasses
    from hbl.devices import HSS_CONFIGS, PROFILES
    if a.measure:
        from hbl.devices.measure import measure
        if not a.seconds > 0 or a.seconds > 3600:
            raise HblError("--seconds must be > 0 and at most 3600")
        quiet = a.json or not sys.stderr.isatty()
        prof, info = measure(a.measure, seconds=a.seconds, write=a.write, force=a.force,
                             progress=None if quiet else lambda m: print(m, file=sys.stderr))
        fields = {k: v for k, v in dataclasses.asdict(prof).items() if k not in ("name", "description")}
        if a.json:
            print_json(dict(profile=fields, device=a.measure, **info))
        else:
            print("%s: modelled as %s%s" % (a.measure, "a disk (seeks)" if info["modelled_as"] == "hdd"
                                            else "a pipeline (no seeks)",
                                            "" if a.write else "; writes not measured (--write)"))
            print(json.dumps(fields))
            print("use it in an HSS file: {\"devices\": [{\"profile\": <the line above>, \"capacity\": \"10%\"}, ...]}")
        return 0
    if a.json:
        print_json({"profiles": {k: dataclasses.asdict(p) for k, p in PROFILES.items()},
                     "hss": {k: {"devices": d, "capacities": c} for k, (d, c) in HSS_CONFIGS.items()}})
        return 0
    for k, p in PROFILES.items():
        extra = ", seek %.1f ms (track %.1f), rotation %.2f ms" % (p.seek_ms, p.track_seek_ms, p.rotation_ms) \
            if p.seek_ms else ""
        iops = ", %s / %s IOPS" % (_short_count(p.read_iops), _short_count(p.write_iops)) if p.read_iops else ""
        print("%s  %-40s read %g us / write %g us, %g / %g MB/s%s%s" % (
            k, p.description, p.read_latency_us, p.write_latency_us, p.read_mb_s, p.write_mb_s, iops, extra))
    print()
    for k, (devs, caps) in HSS_CONFIGS.items():
        print("%-5s %s" % (k, " + ".join("%s (%s)" % (d, "%g%% of footprint" % (c * 100) if c else "unlimited")
                                         for d, c in zip(devs, caps))))
    return 0
