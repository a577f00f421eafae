"""scripts/simcheck.py's host half on a made-up guest output (the guest half needs the
testbed: vm/guest/tests/test_simcheck.py): it compares the read hit ratio, the figure the
simulator and `hbl status` share, and names an output too old to carry it."""
import json
import os

import numpy as np
import pytest

from hbl import record
from hbl.errors import HblError
from hbl.trace import files
from helpers import script

MiB = 1 << 20
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PROFILE = {"read_latency_us": 985.5, "write_latency_us": 1698.5, "read_mb_s": 312.4, "write_mb_s": 511.1,
           "read_iops": 947, "write_iops": 3136}
SLOW = {"read_latency_us": 9660.4, "write_latency_us": 9524.7, "read_mb_s": 108.9, "write_mb_s": 112.9,
        "read_iops": 103, "write_iops": 103}


def simcheck():
    return script("simcheck")


def guest_output(d, live):
    rng = np.random.default_rng(1)
    n = 3000
    r = record.empty(n)
    r["time_ns"] = np.arange(n) * 1_000_000
    r["offset"] = 600 * MiB + rng.zipf(1.3, n).clip(1, 200) * MiB - MiB + rng.integers(0, 256, n) * 4096
    r["length"] = 4096
    r["op"] = np.where(rng.random(n) < 0.3, record.WRITE, record.READ)
    for phase in ("warm", "measure"):
        with files.writer(str(d / ("%s.trace" % phase)), "native") as w:
            w.write(r)
    guest = {"warm_s": 10, "measure_s": 5,
             "layout": {"extent_bytes": MiB, "fast_extents": 32, "slow_extents": 1013},
             "profiles": {"fast": {"profile": PROFILE, "modelled_as": "pipeline", "fio": {}},
                          "slow": {"profile": SLOW, "modelled_as": "pipeline", "fio": {}}},
             "capture": {ph: {"trace": "%s.trace" % ph} for ph in ("warm", "measure")},
             "live": {"lru": dict({"warm_ios": 1000, "ios": 2000, "mean_latency_us": 5000.0, "promotions": 10,
                                   "evictions": 5, "migrated_mib": 10.0, "iops": 700.0, "read_mean_us": 5000.0,
                                   "write_mean_us": 5000.0, "stall_ms": {"count": 0, "p50": None, "p99": None},
                                   "decision_to_remap_ms": {"p50": None, "p99": None},
                                   "copy_bandwidth_mib_s": 30.0}, **live)}}
    (d / "simcheck-guest.json").write_text(json.dumps(guest))


def test_simcheck_compares_the_read_hit_ratio(tmp_path):
    guest_output(tmp_path, {"read_hit_ratio": 0.4, "fast_request_share": 0.9})
    sc = simcheck()
    s = sc.check(str(tmp_path), ["lru"])
    r = s["results"]["lru"]
    sim = r["sim"]["read_hit_ratio"]
    assert 0 < sim < 1 and r["sim"]["warm_read_hit_ratio"] > 0
    assert r["live"]["read_hit_ratio"] == 0.4 and r["live"]["fast_request_share"] == 0.9
    assert r["read_hit_ratio_diff"] == pytest.approx(sim - 0.4)          # not against the 0.9 of reads and writes
    assert r["read_hit_ratio_ok"] == (abs(sim - 0.4) <= sc.HIT_TARGET)
    text = sc.format_table(s)
    assert "live rhit" in text and ("%.3f" % sim) in text


def test_simcheck_names_a_guest_output_from_before_the_read_hit_ratio(tmp_path):
    guest_output(tmp_path, {"fast_hit_ratio": 0.8})
    with pytest.raises(HblError, match="simcheck-guest.json predates .* run the guest again"):
        simcheck().check(str(tmp_path), ["lru"])


def fio_job(read_ios, read_clat_us, read_slat_us, write_ios, write_clat_us, write_slat_us):
    side = lambda n, c, s: {"total_ios": n, "clat_ns": {"mean": c * 1e3, "percentile": {"50.000000": c * 1e3}},
                            "slat_ns": {"mean": s * 1e3}}
    return {"jobs": [{"read": side(read_ios, read_clat_us, read_slat_us),
                      "write": side(write_ios, write_clat_us, write_slat_us)}]}


def test_simcheck_compares_the_live_latency_from_submission(tmp_path):
    """The simulator charges a request from its arrival; fio's clat starts after submission, so the
    live mean compared is slat + clat (from the guest's fio output), not the clat the bench reports."""
    guest_output(tmp_path, {"read_hit_ratio": 0.4, "fast_request_share": 0.5})
    (tmp_path / "live-hbl-lru.json").write_text(json.dumps(fio_job(3, 1000, 500, 1, 2000, 100)))
    r = simcheck().check(str(tmp_path), ["lru"])["results"]["lru"]
    assert r["live"]["mean_latency_us"] == pytest.approx((3 * 1500 + 2100) / 4)
    assert r["live"]["completion_mean_us"] == 5000.0
    assert r["mean_latency_diff"] == pytest.approx(r["sim"]["mean_latency_us"] / 1650 - 1)


def test_simcheck_splits_the_live_hit_ratio_by_phase(tmp_path):
    """The status timeline's rows up to the warm-up's request count are the warm-up."""
    timeline = [{"requests": 600, "read_hit_ratio": 0.1}, {"requests": 400, "read_hit_ratio": 0.2},
                {"requests": 1000, "read_hit_ratio": 0.8}, {"requests": 1000, "read_hit_ratio": None}]
    guest_output(tmp_path, {"read_hit_ratio": 0.4, "fast_request_share": 0.5, "timeline": timeline})
    ph = simcheck().check(str(tmp_path), ["lru"])["results"]["lru"]["live"]["phase_read_hit_ratio"]
    assert ph["warm"] == pytest.approx((600 * 0.1 + 400 * 0.2) / 1000) and ph["measure"] == pytest.approx(0.8)


def test_simcheck_simulates_the_live_devices_copies_and_shows_the_compare_model_beside(tmp_path):
    """The row compared runs the simulator with the live device's copies (hbl.sim.model.LIVE_COPY) and its
    controller's batches; the simulator as hbl compare runs it, the live copies alone and less each
    part, and the live model less its batches or its initial mapping, are kept as diagnoses."""
    from hbl.sim.model import LIVE_COPY
    guest_output(tmp_path, {"read_hit_ratio": 0.4, "fast_request_share": 0.5})
    sc = simcheck()
    s = sc.check(str(tmp_path), ["lru"])
    r = s["results"]["lru"]
    d = r["diagnosis"]
    assert r["sim"]["live_copy"] == list(LIVE_COPY) and r["sim"]["live_batches"] and r["sim"]["batches"] > 0
    assert s["replay"]["live_model"] == sorted(LIVE_COPY + ("initial_mapping", "live_batches"))
    assert d["compare_model"]["live_copy"] == [] and not d["compare_model"]["live_batches"]
    assert d["live_copies"]["live_copy"] == list(LIVE_COPY) and not d["live_copies"]["live_batches"]
    assert not d["without_live_batches"]["live_batches"] and d["without_live_batches"]["initial_mapping"]
    for k in LIVE_COPY:
        assert k not in d["without_" + k]["live_copy"]
    text = sc.format_table(s)
    assert "as hbl compare runs it" in text and "less one part" in text and "less its initial mapping" in text


def test_simcheck_starts_the_simulator_from_the_live_devices_initial_mapping(tmp_path):
    """A new live device has every extent on a member from the start, the first ones on the NVMe
    (hbl/live/layout.py initial_mapping): the NVMe is full before the first request, so every
    promotion is made room for by an eviction (the spare slots aside), and a first write goes where
    its extent is.  Without the mapping the NVMe starts empty, and a page first written lands there."""
    from hbl.sim.model import live_spares
    guest_output(tmp_path, {"read_hit_ratio": 0.4, "fast_request_share": 0.5})
    r = simcheck().check(str(tmp_path), ["lru"])["results"]["lru"]
    sim, empty = r["sim"], r["diagnosis"]["without_initial_mapping"]
    assert sim["initial_mapping"] and not empty["initial_mapping"]
    assert sim["promotions"] > 32 and sim["promotions"] - sim["evictions"] <= live_spares(32)
    assert empty["fast_write_share"] > sim["fast_write_share"] + 0.1


def test_simcheck_writes_its_results_into_a_directory_it_makes(tmp_path):
    # a --results directory that does not exist yet is made at the start (it was a traceback at the
    # end of a 12-minute guest run); one it cannot make is a clear error, before any work
    import subprocess
    import sys
    guest = tmp_path / "guest"
    guest.mkdir()
    guest_output(guest, {"read_hit_ratio": 0.4, "fast_request_share": 0.9})
    path = os.path.join(ROOT, "scripts", "simcheck.py")
    out = tmp_path / "new" / "results"
    p = subprocess.run([sys.executable, path, "--from", str(guest), "--policies", "lru", "--results", str(out)],
                       capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    assert json.loads((out / "simcheck.json").read_text())["results"]["lru"]["live"]["read_hit_ratio"] == 0.4
    (tmp_path / "file").write_text("")
    p = subprocess.run([sys.executable, path, "--from", str(guest), "--results", str(tmp_path / "file" / "x")],
                       capture_output=True, text=True)
    assert p.returncode != 0 and p.stderr.startswith("simcheck: ") and "Traceback" not in p.stderr


def test_simcheck_runs_the_job_it_is_given_and_names_its_results_after_it(tmp_path):
    """--job picks the guest's fio job (vm/guest/fio_jobs.py) and a kept output names its job: the live
    bench's own keeps simcheck.*, another writes simcheck-NAME.*; an unknown name is a usage error."""
    import argparse
    import subprocess
    import sys
    sc = simcheck()
    a = argparse.Namespace(warm=90, seconds=60, measure_seconds=3, policies="lru,smq", up_args="", job="zipf90-wide")
    assert "HBL_BENCH_JOB=zipf90-wide " in sc.guest_command(a)
    assert "HBL_BENCH_JOB=zipf70 " in sc.guest_command(argparse.Namespace(**dict(vars(a), job=sc.fio_jobs.DEFAULT)))
    assert sc.results_name("zipf70") == "simcheck" and sc.results_name("zipf90-wide") == "simcheck-zipf90-wide"
    guest = tmp_path / "guest"
    guest.mkdir()
    guest_output(guest, {"read_hit_ratio": 0.4, "fast_request_share": 0.9})
    g = json.loads((guest / "simcheck-guest.json").read_text())
    (guest / "simcheck-guest.json").write_text(json.dumps(dict(g, job="zipf90-wide")))
    path = os.path.join(ROOT, "scripts", "simcheck.py")
    out = tmp_path / "res"
    p = subprocess.run([sys.executable, path, "--from", str(guest), "--policies", "lru", "--results", str(out)],
                       capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    assert sorted(os.listdir(out)) == ["simcheck-zipf90-wide.json", "simcheck-zipf90-wide.txt"]
    s = json.loads((out / "simcheck-zipf90-wide.json").read_text())
    assert s["job"] == "zipf90-wide" and s["command"].endswith("--job zipf90-wide")
    assert "90% reads" in (out / "simcheck-zipf90-wide.txt").read_text()
    p = subprocess.run([sys.executable, path, "--job", "nope", "--from", str(guest)], capture_output=True, text=True)
    assert p.returncode == 2 and "invalid choice: 'nope'" in p.stderr and "Traceback" not in p.stderr
