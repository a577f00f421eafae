"""scripts/ablation.py on comparisons made up by hand: a row's geomean against the best non-learning
policy and the oracle, and --hss keeping the HSS asked for and refusing one the run lacks."""
import json
import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "ablation.py"


def comparison(tmp_path, name, lat, hss=("perf", "cost")):
    """A saved comparison: one 100k+ capture, Fast-Only at 10 us, the policies at lat[policy] x Fast-Only."""
    runs = []
    for h in hss:
        for p, x in dict(lat, **{"fast-only": 1}).items():
            runs.append(dict(hss=h, workload="app+", policy=p, seed=1, avg_latency_us=10.0 * x,
                             trace="workload:app", requests=250_000))
    path = tmp_path / name
    path.write_text(json.dumps(dict(results=runs)))
    return str(path)


def run(*args):
    return subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True)


def test_row_against_the_best_baseline_and_the_oracle(tmp_path):
    base = comparison(tmp_path, "base.json", {"oracle": 2, "lru": 4, "smq": 5, "harmonia": 3})
    out = run("shipped=" + base)
    assert out.returncode == 0, out.stderr
    # harmonia 3 against lru 4: -25%, half the gap from lru to the oracle (2) closed
    assert "-25.0%" in out.stdout and "+50%" in out.stdout and "vs lru" in out.stdout


def test_hss_keeps_only_those_asked_for(tmp_path):
    base = comparison(tmp_path, "base.json", {"oracle": 2, "lru": 4, "harmonia": 3})
    both = run("shipped=" + base)
    one = run("shipped=" + base, "--hss", "perf")
    assert "HSS cost" in both.stdout and "HSS perf" in one.stdout and "HSS cost" not in one.stdout


def test_hss_not_in_the_run_is_a_clear_error(tmp_path):
    base = comparison(tmp_path, "base.json", {"oracle": 2, "lru": 4, "harmonia": 3}, hss=("perf",))
    out = run("shipped=" + base, "--hss", "perf,quad")
    assert out.returncode != 0 and "Traceback" not in out.stderr
    assert "--hss perf,quad: not in the baselines' run (it has perf)" in out.stderr
