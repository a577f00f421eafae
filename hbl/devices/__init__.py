"""Device profiles and hybrid storage (HSS) configurations (here); measure.py measures a real
device's profile with fio.

Each profile is the service model of one device in the simulator
(struct hbl_device_params in ctypes_core/hbl_api.h):
  - an SSD is a pipeline: a 4 KiB I/O at queue depth 1 completes after the
    datasheet's read or write latency (a larger one adds the transfer of the
    rest at the sequential rate), and holds the device for 1 / (random 4 KiB
    IOPS), or its transfer time if longer, so that a saturated device delivers
    its rated IOPS and bandwidth, separately for reads and writes;
  - an HDD serves one I/O at a time: a fixed command overhead, positioning
    (rotation + a seek that grows with the square root of the distance) unless
    the I/O continues where the head is, or a read continues one of the
    streams its read-ahead cache follows, and the transfer.

Sources (vendor datasheets; headline figures):
  H  Intel Optane SSD DC P4800X 375 GB (the papers' fast device): latency
     < 10 us read and write (QD1), sequential 2400 / 2000 MB/s read / write,
     random 4 KiB 550,000 / 500,000 IOPS read / write.
  N  Intel SSD DC P4510 2 TB (NVMe, TLC): latency 77 us read, 18 us write,
     sequential 3200 / 2000 MB/s, random 4 KiB 637,000 / 81,500 IOPS.
  M  Intel SSD D3-S4510 1.92 TB (SATA, TLC; the papers' 1.92 TB SATA SSD):
     latency 36 / 37 us, sequential 560 / 510 MB/s, random 4 KiB 97,000 /
     35,500 IOPS.
  L  Seagate BarraCuda ST1000DM010 1 TB, 7200 rpm (the papers' HDD): sustained
     210 MB/s, average rotational latency 4.16 ms.  Seek: 8.5 ms average and
     1 ms track-to-track are the usual figures for a 7200 rpm desktop drive
     (ours: the datasheet gives none); 0.1 ms command overhead and 4 read-ahead
     streams (ours).  A seek grows with the square root of the distance
     (Ruemmler & Wilkes, "An introduction to disk drive modeling", IEEE
     Computer 1994), so a small footprint sees short seeks, as it would.
     Write cache off (the papers replay with O_SYNC).
A profile of your own hardware: `hbl devices --measure /dev/X`.
"""
import dataclasses
import json
import math
import re

from hbl.errors import HblError

MB = 1_000_000


@dataclasses.dataclass
class Profile:
    name: str
    description: str
    read_latency_us: float        # QD1 4 KiB read (HDD: command overhead, positioning comes on top)
    write_latency_us: float
    read_mb_s: float              # sequential
    write_mb_s: float
    read_iops: float = 0.0        # random 4 KiB at depth: the ceiling (0 = one I/O at a time)
    write_iops: float = 0.0
    seek_ms: float = 0.0          # HDD: average seek (at a third of the span)
    track_seek_ms: float = 0.0    # HDD: shortest seek
    rotation_ms: float = 0.0      # HDD: average rotational latency (half a turn)
    size_gb: float = 0.0          # HDD: span the seek model spreads over
    streams: int = 1              # HDD: sequential read streams its read-ahead follows

    def is_hdd(self):
        return self.seek_ms > 0 or self.rotation_ms > 0

    def to_c(self, dev, capacity_pages):
        dev.read_latency_ns = self.read_latency_us * 1000
        dev.write_latency_ns = self.write_latency_us * 1000
        dev.read_bytes_per_ns = self.read_mb_s * MB / 1e9
        dev.write_bytes_per_ns = self.write_mb_s * MB / 1e9
        dev.read_iops = self.read_iops
        dev.write_iops = self.write_iops
        dev.seek_ns = self.seek_ms * 1e6
        dev.track_seek_ns = self.track_seek_ms * 1e6
        dev.rotation_ns = self.rotation_ms * 1e6
        dev.span_pages = self.size_gb * 1e9 / 4096
        dev.capacity_pages = -1 if capacity_pages is None else int(capacity_pages)
        dev.streams = self.streams


PROFILES = {
    "H": Profile("H", "Optane-class NVMe SSD (Intel P4800X)", 10, 10, 2400, 2000,
                 read_iops=550_000, write_iops=500_000),
    "N": Profile("N", "NVMe TLC SSD (Intel P4510 2 TB)", 77, 18, 3200, 2000,
                 read_iops=637_000, write_iops=81_500),
    "M": Profile("M", "SATA TLC SSD (Intel D3-S4510 1.92 TB)", 36, 37, 560, 510,
                 read_iops=97_000, write_iops=35_500),
    "L": Profile("L", "7200 rpm HDD (Seagate ST1000DM010)", 100, 100, 210, 210, seek_ms=8.5,
                 track_seek_ms=1.0, rotation_ms=4.16, size_gb=1000, streams=4),
}


@dataclasses.dataclass
class HSS:
    """Devices fastest first, with a capacity each: a fraction of the trace's
    footprint (float in (0, 1]), a size in bytes (int), or None (unlimited)."""
    name: str
    devices: list
    capacities: list

    def capacity_pages(self, footprint_pages, page_size):
        out = []
        for cap in self.capacities:
            if cap is None:
                out.append(None)
            elif isinstance(cap, float):
                out.append(max(1, math.ceil(cap * footprint_pages)))
            else:
                out.append(max(1, cap // page_size))
        return out


HSS_CONFIGS = {
    "perf": (["H", "M"], [0.1, None]),
    "cost": (["H", "L"], [0.1, None]),
    "tri": (["H", "M", "L"], [0.1, 0.3, None]),
    "quad": (["H", "N", "M", "L"], [0.1, 0.2, 0.3, None]),
}
HSS_HELP = "perf = H+M, cost = H+L, tri = H+M+L, quad = H+N+M+L (fast device 10% of the footprint)"


def parse_capacity(text, where="capacity"):
    """'10%' or '0.1' -> fraction of the footprint; '512M', '2G', '4096' -> bytes; None -> unlimited."""
    if text is None:
        return None
    if isinstance(text, (int, float)) and not isinstance(text, bool):
        text = str(text)
    t = str(text).strip()
    if t.lower() in ("unlimited", "none", "-1"):
        return None
    m = re.fullmatch(r"(\d+(?:\.\d+)?)\s*%", t)
    if m:
        frac = float(m.group(1)) / 100
    else:
        m = re.fullmatch(r"(\d+(?:\.\d+)?)\s*([KMGT]i?B?)?", t, re.I)
        if not m:
            raise HblError("%s %r: give a fraction (0.1), a percentage (10%%) or a size (512M, 2G)"
                           % (where, text))
        value, unit = m.group(1), (m.group(2) or "").upper()
        if not unit and "." in value:
            frac = float(value)
        else:
            mult = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}[unit[:1]]
            return int(float(value) * mult)
    if not 0 < frac <= 1:
        raise HblError("%s %r: a fraction must be in (0, 1]" % (where, text))
    return frac


def _profile_from(obj, where):
    if isinstance(obj, str):
        if obj not in PROFILES:
            raise HblError("%s: unknown device profile %r (have: %s)" % (where, obj, ", ".join(PROFILES)))
        return PROFILES[obj]
    if isinstance(obj, dict):
        fields = {f.name for f in dataclasses.fields(Profile)}
        unknown = set(obj) - fields
        if unknown:
            raise HblError("%s: unknown profile keys %s (allowed: %s)"
                           % (where, ", ".join(sorted(unknown)), ", ".join(sorted(fields))))
        try:
            p = Profile(**{"name": "custom", "description": "user-defined", **obj})
        except TypeError as exc:
            raise HblError("%s: %s" % (where, exc)) from None
        numbers = [getattr(p, f.name) for f in dataclasses.fields(Profile) if f.name not in ("name", "description")]
        if not all(isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) for v in numbers):
            raise HblError("%s: every profile value must be a finite number" % where)
        if min(p.read_mb_s, p.write_mb_s) <= 0 or min(p.read_latency_us, p.write_latency_us, p.seek_ms,
                                                      p.track_seek_ms, p.rotation_ms, p.read_iops, p.write_iops) < 0:
            raise HblError("%s: bandwidths must be > 0, latencies and IOPS >= 0" % where)
        if not isinstance(p.streams, int) or not 1 <= p.streams <= 16:
            raise HblError("%s: streams must be a whole number from 1 to 16" % where)
        if p.seek_ms > 0 and (p.size_gb <= 0 or p.track_seek_ms > p.seek_ms):
            raise HblError("%s: an HDD profile needs size_gb > 0 and track_seek_ms <= seek_ms" % where)
        return p
    raise HblError("%s: a device is a profile name or an object" % where)


def load_hss(name, fast_capacity=None):
    """An HSS by name (perf, cost, tri, quad) or from a JSON file:
    {"devices": [{"profile": "H", "capacity": "10%"}, {"profile": {...}, "capacity": null}]}"""
    if name in HSS_CONFIGS:
        names, caps = HSS_CONFIGS[name]
        devices, capacities = [PROFILES[n] for n in names], list(caps)
    elif name.endswith(".json"):
        try:
            with open(name) as f:
                spec = json.load(f)
        except OSError as exc:
            raise HblError("%s: %s" % (name, exc.strerror or exc)) from None
        except json.JSONDecodeError as exc:
            raise HblError("%s:%d: invalid JSON: %s" % (name, exc.lineno, exc.msg)) from None
        devs = spec.get("devices") if isinstance(spec, dict) else None
        if not isinstance(devs, list) or not 2 <= len(devs) <= 4:
            raise HblError("%s: expected {\"devices\": [2 to 4 devices, fastest first]}" % name)
        devices, capacities = [], []
        for i, d in enumerate(devs):
            where = "%s: device %d" % (name, i)
            if not isinstance(d, dict) or "profile" not in d:
                raise HblError("%s: expected {\"profile\": ..., \"capacity\": ...}" % where)
            devices.append(_profile_from(d["profile"], where))
            capacities.append(parse_capacity(d.get("capacity"), where + " capacity"))
        if capacities[-1] is not None:
            raise HblError("%s: the slowest device must have unlimited capacity (null)" % name)
    else:
        raise HblError("unknown HSS %r: %s, or a .json file" % (name, HSS_HELP))
    if fast_capacity is not None:
        capacities[0] = parse_capacity(fast_capacity, "--fast-capacity")
        if capacities[0] is None:
            raise HblError("--fast-capacity: the fast device needs a limit (use policy fast-only instead)")
    return HSS(name, devices, capacities)
