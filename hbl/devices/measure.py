"""A device profile measured with fio: `hbl devices --measure /dev/X`.

Runs short fio jobs with O_DIRECT on a block device (or a file) and turns them into a
hbl.devices.Profile: QD1 4 KiB latency, 4 KiB random IOPS at depth 32, sequential
bandwidth with 1 MiB I/Os, for reads and (with write=True, which destroys the data) writes.
A device whose QD1 random reads cost clearly more than its QD1 sequential reads is modelled
as a disk: the difference is its positioning, split evenly between rotation and an average
seek (fio's random offsets span the whole device, as the model's average seek does).
"""
import json
import os
import shutil
import stat
import subprocess

from hbl.devices import Profile
from hbl.errors import HblError

POSITIONING_MS = 0.5   # below this difference a device is modelled as a pipeline (no seeks)


def _fio(target, rw, bs, depth, seconds, size=None):
    cmd = ["fio", "--name=hbl-measure", "--filename=" + target, "--rw=" + rw, "--bs=" + bs,
           "--iodepth=%d" % depth, "--ioengine=libaio", "--direct=1", "--time_based",
           "--runtime=%g" % seconds, "--ramp_time=0.5", "--norandommap", "--randrepeat=0",
           "--output-format=json"]
    if size:
        cmd.append("--size=%d" % size)
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode:
        last = (p.stderr.strip().splitlines() or ["fio failed"])[-1]
        raise HblError("%s: fio %s %s: %s" % (target, rw, bs, last))
    try:
        job = json.loads(p.stdout[p.stdout.index("{"):])["jobs"][0]
    except (ValueError, KeyError, IndexError):
        raise HblError("%s: could not read fio's output" % target) from None
    side = job["write" if "write" in rw else "read"]
    if not side["total_ios"]:
        raise HblError("%s: fio %s %s completed no I/O" % (target, rw, bs))
    return {"iops": side["iops"], "mb_s": side["bw_bytes"] / 1e6, "lat_us": side["lat_ns"]["mean"] / 1e3}


def _rotational(path):
    try:
        st = os.stat(path)
        if stat.S_ISBLK(st.st_mode):
            with open("/sys/dev/block/%d:%d/queue/rotational" % (os.major(st.st_rdev), os.minor(st.st_rdev))) as f:
                return f.read().strip() == "1"
    except OSError:
        pass
    return False


def _size_bytes(path):
    try:
        with open(path, "rb") as f:
            return f.seek(0, os.SEEK_END)
    except OSError as exc:
        raise HblError("%s: cannot read it: %s" % (path, exc.strerror or exc)) from None


def measure(path, seconds=5.0, write=False, force=False, name=None, progress=None):
    """Profile of the device (or file) at path; with write=True also its writes, which
    overwrite its data (refused when the device is mounted, held, or carries a signature,
    unless force; a mounted or held device is always refused)."""
    say = progress or (lambda msg: None)
    if not os.path.exists(path):
        raise HblError("%s: no such device or file" % path)
    if os.path.isdir(path):
        raise HblError("%s: is a directory; give a block device or a file of 64 MiB or more" % path)
    if not shutil.which("fio"):
        raise HblError("fio is not installed (scripts/bootstrap.sh installs it: apt-get install fio)")
    is_block = stat.S_ISBLK(os.stat(path).st_mode)
    if write and is_block:
        from hbl.live.safety import check_device
        check_device(path, force=force)
    size = None if is_block else _size_bytes(path)
    if size is not None and size < 64 << 20:
        raise HblError("%s: a file to measure needs at least 64 MiB" % path)
    runs = {}
    jobs = [("randread", "4k", 1), ("read", "4k", 1), ("randread", "4k", 32), ("read", "1M", 8)]
    if write:
        jobs += [("randwrite", "4k", 1), ("randwrite", "4k", 32), ("write", "1M", 8)]
    for i, (rw, bs, depth) in enumerate(jobs, 1):
        say("[%d/%d] %s %s at queue depth %d, %g s" % (i, len(jobs), rw, bs, depth, seconds))
        runs[rw, bs, depth] = _fio(path, rw, bs, depth, seconds, size)
    rnd, seq = runs["randread", "4k", 1]["lat_us"], runs["read", "4k", 1]["lat_us"]
    positioning_ms = (rnd - seq) / 1e3
    hdd = positioning_ms > POSITIONING_MS
    read_mb_s = runs["read", "1M", 8]["mb_s"]
    p = dict(read_latency_us=round(seq if hdd else rnd, 2), read_mb_s=round(read_mb_s, 1),
             read_iops=0.0 if hdd else round(runs["randread", "4k", 32]["iops"]))
    if write:
        p.update(write_latency_us=round(runs["randwrite", "4k", 1]["lat_us"] - (positioning_ms * 1e3 if hdd else 0), 2),
                 write_mb_s=round(runs["write", "1M", 8]["mb_s"], 1),
                 write_iops=0.0 if hdd else round(runs["randwrite", "4k", 32]["iops"]))
        if p["write_latency_us"] <= 0:
            p["write_latency_us"] = p["read_latency_us"]
    else:   # not measured: assume writes cost what reads do
        p.update(write_latency_us=p["read_latency_us"], write_mb_s=p["read_mb_s"], write_iops=p["read_iops"])
    if hdd:
        span = size if size is not None else _size_bytes(path)
        p.update(rotation_ms=round(positioning_ms / 2, 3), seek_ms=round(positioning_ms / 2, 3),
                 track_seek_ms=round(min(1.0, positioning_ms / 8), 3), size_gb=span / 1e9, streams=4)
    prof = Profile(name=name or os.path.basename(path), description="measured by hbl devices --measure on %s%s" % (
        path, "" if write else " (reads only)"), **p)
    raw = {"%s %s qd%d" % k: v for k, v in runs.items()}
    return prof, {"rotational": _rotational(path), "modelled_as": "hdd" if hdd else "pipeline",
                  "writes_measured": write, "fio": raw}
