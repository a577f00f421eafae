"""scripts/fingerprint.py, the check that a change meant to keep behaviour kept the simulator's
figures: the same code gives the same fingerprint, a moved figure is named with its field and
fails the comparison, and a parameter that changes behaviour changes the fingerprint."""
import json

from helpers import script

TRACE = "synth:mixed:requests=3000,seed=3"


def fingerprint():
    return script("fingerprint")


def test_same_code_same_fingerprint_and_a_moved_figure_is_named(tmp_path, capsys):
    fp = fingerprint()
    out = tmp_path / "before.json"
    args = ["--set", "all", "--trace", TRACE, "--policy", "lru", "--policy", "harmonia", "--quiet"]
    assert fp.main(args + ["--out", str(out)]) == 0
    before = json.loads(out.read_text())
    assert len(before) == 2 * 2 * 2          # 2 policies x 2 HSS x live_batches off and on
    assert all("requests_per_second" not in r for r in before.values())
    capsys.readouterr()
    assert fp.main(args + ["--against", str(out)]) == 0
    assert "identical" in capsys.readouterr().out

    k = next(k for k in before if "|lru|" in k and "live=0" in k)
    before[k]["avg_latency_us"] = before[k]["avg_latency_us"] * 1.001
    out.write_text(json.dumps(before))
    assert fp.main(args + ["--against", str(out)]) == 1
    printed = capsys.readouterr().out
    assert "MOVED %s: avg_latency_us" % k in printed
    assert "1 of 8 moved" in printed


def test_a_behaviour_change_moves_the_fingerprint():
    fp = fingerprint()
    cfg = [(TRACE, "cost", False, "harmonia-migration-only", {})]
    a = fp.run(cfg)
    b = fp.run([(TRACE, "cost", False, "harmonia-migration-only", {"read_admit": 1})])
    assert fp.digest(a) == fp.digest(fp.run(cfg))
    assert fp.differences(a, {list(a)[0]: list(b.values())[0]})


def test_an_unreadable_baseline_is_a_clear_error(tmp_path):
    fp = fingerprint()
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    try:
        fp.main(["--trace", TRACE, "--policy", "lru", "--quiet", "--against", str(bad)])
    except SystemExit as e:
        assert "bad.json" in str(e) and "cannot read" in str(e)
    else:
        raise AssertionError("no error for an unreadable file")


def test_the_live_set_runs_the_decider_and_a_parameter_that_changes_it_moves_it():
    """The live set drives hbl up's decider (the C core in live mode), which simulate() never runs:
    the same code gives the same figures, and a live policy told to act otherwise moves them."""
    fp = fingerprint()
    cfgs = fp.configs("live", policies=["lru"])
    assert [c[0] for c in cfgs] == ["live:16/400", "live:8/32/400"]
    a = fp.run(cfgs)
    assert all(r.get("stats", {}).get("requests") for r in a.values()), a
    assert fp.digest(a) == fp.digest(fp.run(cfgs))
    moved = fp.run([("live:16/400", "-", True, "harmonia-migration-only", {"read_admit": 1})])
    same = fp.run([("live:16/400", "-", True, "harmonia-migration-only", {})])
    assert fp.differences({"k": list(same.values())[0]}, {"k": list(moved.values())[0]})


def test_the_live_queue_set_tells_the_decider_which_moves_wait(monkeypatch):
    """The live-queue set's controller keeps moves waiting in its queue and tells the decider which
    (Decider.waiting): with read admission's list (read_admit 7) that moves the figures, against a
    decider told nothing (as before it could be told); lru, which reads no undo, is unmoved."""
    from hbl.live.decider import Decider
    fp = fingerprint()
    cfgs = [("live-queue:16/400", "-", True, "harmonia", {"read_admit": 7}),
            ("live-queue:16/400", "-", True, "lru", {})]
    told = fp.run(cfgs)
    assert all(r.get("stats", {}).get("requests") for r in told.values()), told
    monkeypatch.delattr(Decider, "waiting")
    untold = fp.run(cfgs)
    assert [k for k, _ in fp.differences(untold, told)] == [fp.key(*cfgs[0])]
