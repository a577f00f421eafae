"""The guest half of the simulator check against the live device (scripts/simcheck.py).

In one boot:
  1. profiles of the emulated NVMe and the HDD-like disk: hbl devices --measure --write
     (both are scratch devices here; they are measured before anything is laid on them);
  2. hbl-lru and hbl-smq on the live device, exactly as bench_live.py runs them (its code; its fio
     job HBL_BENCH_JOB, vm/guest/fio_jobs.py, the bench's own by default);
  3. the same fio job, same phases and durations, on a scratch disk (/dev/vdb, no throttle)
     whose offsets are the live device's logical ones, captured with hbl trace: one
     native trace per phase.  fio's offsets come from its seed, not from the device's
     speed, so the first N requests of a phase are the N the live device saw.
Writes /out/simcheck-guest.json (profiles, live results, layout, capture summaries) and
/out/simcheck-warm.trace, /out/simcheck-measure.trace; the host simulates them.
"""
import json
import os
import signal
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_live as live  # noqa: E402
from hbl.live import layout  # noqa: E402

SCRATCH = "/dev/vdb"
OFFSET = live.HBL_OFFSET                   # where bench_live's fio job starts on the live device
EXTENT = 1 << 20                           # hbl up's default extent size
MEASURE_S = os.environ.get("HBL_SIMCHECK_MEASURE_S", "3")
POLICIES = os.environ.get("HBL_SIMCHECK_POLICIES", "lru,smq").split(",")


def say(msg):
    print("simcheck: " + msg, file=sys.stderr, flush=True)


def measure(dev):
    r = subprocess.run(live.HBL + ["devices", "--measure", dev, "--write", "--json", "--seconds", MEASURE_S],
                       capture_output=True, text=True)
    if r.returncode:
        raise SystemExit("hbl devices --measure %s: %s" % (dev, r.stderr.strip()))
    return json.loads(r.stdout)


def capture(phase, seconds):
    """fio's phase on the scratch disk while hbl trace records it."""
    out = "/out/simcheck-%s.trace" % phase
    p = subprocess.Popen(live.HBL + ["trace", "--dev", SCRATCH, "--duration", "1h", "--out", out, "--json"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    line = p.stderr.readline()              # "tracing ..." once the probes are attached
    if not line.startswith("tracing"):
        p.kill()
        raise SystemExit("hbl trace %s: %s%s" % (SCRATCH, line, p.stderr.read()))
    fio = live.fio(SCRATCH, OFFSET, seconds, "simcheck-%s" % phase)
    p.send_signal(signal.SIGINT)
    stdout, stderr = p.communicate(timeout=300)
    if p.returncode:
        raise SystemExit("hbl trace %s: %s" % (SCRATCH, stderr.strip()))
    return {"trace": os.path.basename(out), "fio_ios": fio["ios"], "fio_iops": fio["iops"],
            "fio_mean_latency_us": fio["mean_latency_us"], "capture": json.loads(stdout)}


def main():
    members = layout.plan_members([live.FAST, live.SLOW], EXTENT)
    caps = layout.capacities(members)
    out = {"job": live.JOB, "warm_s": live.WARM, "measure_s": live.MEASURE,
           "measure_seconds_per_job": float(MEASURE_S),
           "hbl_up_args": live.UP_ARGS,
           "layout": {"extent_bytes": EXTENT, "fast_extents": caps[0], "slow_extents": caps[1],
                      "logical_bytes": sum(caps) * EXTENT, "fio_offset": OFFSET},
           "profiles": {}, "live": {}, "capture": {}}
    for name, dev in (("fast", live.FAST), ("slow", live.SLOW)):
        say("measuring %s" % dev)
        out["profiles"][name] = measure(dev)
    for policy in POLICIES:
        say("live hbl-%s" % policy)
        res = live.run_hbl(policy)
        warm = json.load(open("/out/live-hbl-%s-warm.json" % policy))["jobs"][0]
        res["warm_ios"] = warm["read"]["total_ios"] + warm["write"]["total_ios"]
        out["live"][policy] = res
    for phase, seconds in (("warm", live.WARM), ("measure", live.MEASURE)):
        say("capturing the %s phase on %s" % (phase, SCRATCH))
        out["capture"][phase] = capture(phase, seconds)
    json.dump(out, open("/out/simcheck-guest.json", "w"), indent=1)
    say("done")


if __name__ == "__main__":
    main()
