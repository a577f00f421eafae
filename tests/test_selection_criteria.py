"""scripts/selection_criteria.py: which seed each criterion picks and the rule's verdict, from
scripts/seed_scores.py's JSON (made up here: no simulation)."""
import importlib
import json
import os
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.fixture
def sc(monkeypatch):
    monkeypatch.syspath_prepend(os.path.join(ROOT, "scripts"))
    sys.modules.pop("selection_criteria", None)
    return importlib.import_module("selection_criteria")


def scores(path, table, traces=("synth:src", "workload:x@0-10")):
    """A seed_scores file whose every trace of pretraining seed k, online seed s has latency table[k][s-1]
    (Fast-Only 1), so each geomean is that figure."""
    lat = [[t, k, s + 1, v] for k, row in table.items() for s, v in enumerate(row) for t in traces]
    path.write_text(json.dumps(dict(traces=list(traces), fast_only={t: 1.0 for t in traces}, seeds=len(table),
                                    online=3, latency=lat)))
    return str(path)


def run(sc, monkeypatch, capsys, val, real, check, group=None):
    argv = ["selection_criteria.py", "--hss", "cost", "--val", val, "--real", real, "--check", check]
    monkeypatch.setattr(sys, "argv", argv + (["--group", group] if group else []))
    assert sc.main() == 0
    return capsys.readouterr().out


def test_s1_sees_a_seed_that_turns_bad_on_other_online_seeds(sc, monkeypatch, capsys, tmp_path):
    # seed 1 is best on online seed 1 only (S0's pick); seed 2 is best on the mean (S1's)
    val = scores(tmp_path / "v.json", {1: [1.0, 3.0, 3.0], 2: [1.1, 1.1, 1.1]})
    real = scores(tmp_path / "r.json", {1: [2.0, 2.0, 2.0], 2: [2.5, 2.5, 2.5]})
    check = scores(tmp_path / "c.json", {1: [2.0, 2.2, 2.1], 2: [1.5, 1.6, 1.7]})
    out = run(sc, monkeypatch, capsys, val, real, check)
    assert "S1 picks seed 2: check 1.6000 vs S0's 2.1000" in out and "qualifies" in out
    assert "S2 picks seed 1 (the same as S0)" in out
    assert "RULE: propose S1" in out


def test_the_same_pick_is_not_proposed_and_group_limits_the_choice(sc, monkeypatch, capsys, tmp_path):
    val = scores(tmp_path / "v.json", {1: [1.0, 1.0, 1.0], 2: [2.0, 2.0, 2.0], 3: [3.0, 3.0, 3.0]})
    check = scores(tmp_path / "c.json", {1: [1.0, 1.0, 1.0], 2: [1.0, 1.0, 1.0], 3: [2.0, 2.0, 2.0]})
    out = run(sc, monkeypatch, capsys, val, val, check)
    assert "RULE: no criterion proposed" in out and "S1 picks seed 1 (the same as S0)" in out
    out = run(sc, monkeypatch, capsys, val, val, check, group="2-3")
    assert "s1 " not in out and "S1 picks seed 2 (the same as S0)" in out
    assert "spread on the check (max-min)/min: 100.0%" in out
