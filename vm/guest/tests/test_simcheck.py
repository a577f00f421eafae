"""The simulator check's pipeline (scripts/simcheck.py), short, inside the VM: measured
profiles that look like the emulated devices, one live run, a capture, and the simulator's
figures beside the live ones.  The targets themselves are in results/simcheck/simcheck.*, not here.
Needs a scratch disk spanning the live device's fio region (/dev/vdb of 1400 MiB or more,
as scripts/simcheck.py adds): `hbl vm test --extra 1 --slow-mb 1536 -k simcheck` (7 minutes
under TCG); skipped in the default testbed, which has none."""
import importlib.util
import os
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
GUEST = os.path.dirname(HERE)
SCRATCH = "/dev/vdb"

pytest.importorskip("hbl.capture")


def _size(path):
    with open(path, "rb") as f:
        return f.seek(0, 2)


def test_simcheck_pipeline():
    if not os.path.exists(SCRATCH) or _size(SCRATCH) < 1400 << 20:
        pytest.skip("needs a scratch disk of 1400 MiB or more at %s (the simcheck testbed)" % SCRATCH)
    env = dict(os.environ, HBL_BENCH_WARM="10", HBL_BENCH_SECONDS="5", HBL_SIMCHECK_MEASURE_S="1",
               HBL_SIMCHECK_POLICIES="lru")
    subprocess.run([sys.executable, os.path.join(GUEST, "simcheck.py")], env=env, check=True, timeout=900)
    spec = importlib.util.spec_from_file_location("simcheck", "/hbl/scripts/simcheck.py")
    sc = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(sc)
    s = sc.check("/out", ["lru"])
    fast, slow = (d["profile"] for d in s["hss"]["devices"])
    # the NVMe is a pipeline with no seeks, the throttled disk answers at about its 100 IOPS
    assert s["measured"]["fast"]["modelled_as"] == "pipeline"
    assert fast["read_latency_us"] < slow["read_latency_us"]
    assert 50 <= 1e6 / slow["read_latency_us"] <= 200 or 50 <= slow["read_iops"] <= 200
    assert s["capture"]["warm"]["capture"]["lost"] == 0
    assert s["captures_same_sequence"] > 0.9
    r = s["results"]["lru"]
    for side in ("live", "sim"):
        assert 0 < r[side]["read_hit_ratio"] <= 1 and r[side]["mean_latency_us"] > 0
    if not r["short_trace"]:
        assert r["sim"]["requests"] == r["live"]["warm_requests"] + r["live"]["measure_requests"]
