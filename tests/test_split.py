"""The train/evaluation split (hbl/trace/split.py): one list, no workload on both sides, and no training on
an evaluation workload, by the shipped agents or by the commands that train or tune."""
import json
import os

import pytest

from hbl.sim import pretrained
from hbl.trace import split, workloads
from hbl.experiments.compare import default_traces
from hbl.errors import HblError
from hbl.trace import bundled_traces
from hbl.trace.synthetic import DEFAULT_SUITE, PRESETS

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_no_workload_is_on_both_sides():
    assert not set(split.TRAINING) & set(split.EVALUATION)
    assert len(set(split.TRAINING)) == len(split.TRAINING) and len(set(split.EVALUATION)) == len(split.EVALUATION)
    for name in split.TRAINING + split.EVALUATION:
        kind, _, rest = name.partition(":")
        assert kind in ("synth", "bundled", "app") and rest, name
        if kind == "synth":
            assert rest in PRESETS, name


def test_every_shipped_workload_has_a_side():
    shipped = (["bundled:" + n for n in bundled_traces()] + ["apps:" + n for n in workloads.app_slices()]
               + ["workload:" + n for n in list(workloads.RECIPES) + workloads.shipped()]
               + list(DEFAULT_SUITE) + list(pretrained.TRAINING_SUITE))
    assert all(split.side(t) for t in shipped), [t for t in shipped if not split.side(t)]


def test_a_family_stands_for_all_its_traces():
    assert split.side("synth:zipf:requests=200000,seed=2") == "training"
    assert split.side("apps:pgbench") == split.side("workload:pgbench") == "evaluation"
    assert split.side("workload:pgbench+sqlite") == "evaluation"
    assert split.side("synth:uniform") is None and split.side("/data/my.csv") is None
    assert split.side("workload:lmdb-kv") == split.side("workload:file-server") == "training"
    assert split.side("workload:rrd-metrics") == split.side("workload:kyoto-hash@500000-750000") == "training"
    assert split.side("apps:maildir-lda") == "training"
    assert split.side("workload:restic-backup") == split.side("workload:borg-backup@0-1000") == "training"


def test_the_evaluation_suite_is_evaluation_only():
    assert all(split.side(t) == "evaluation" for t in default_traces(1000))


def test_no_shipped_agent_was_trained_on_an_evaluation_workload():
    recipe = pretrained.recipe()
    assert recipe["traces"] and all(split.side(t) == "training" for t in recipe["traces"])
    assert recipe["traces"] == pretrained.training_traces()     # what `hbl pretrain` does by default
    assert set(recipe["policies"]) == set(pretrained.POLICIES) and set(recipe["hss"]) == set(pretrained.HSS)
    assert {(r["policy"], r["hss"]) for r in pretrained.listing()} <= {
        (p, h) for p in recipe["policies"] for h in recipe["hss"]}


def test_a_named_only_family_trains_only_when_named():
    """synth:burst is a training family (hbl pretrain --trace takes it) that no default run uses."""
    assert set(split.NAMED_ONLY) <= set(split.TRAINING) and {"synth:burst", "synth:log"} <= set(split.NAMED_ONLY)
    assert split.side("synth:burst:requests=300000") == "training"
    split.check_training(["synth:burst:requests=300000"], "test")
    defaults = pretrained.training_traces() + pretrained.validation_traces(1000)
    assert not [t for t in defaults if split.families(t)[0] in split.NAMED_ONLY]
    assert [split.families(t)[0] for t in pretrained.training_traces()] == [
        "synth:src", "synth:usr", "synth:mixed", "synth:phases", "synth:zipf"]


@pytest.mark.parametrize("name", sorted(pretrained.VALIDATION_SETS))
def test_every_validation_set_is_training_workloads(name, tmp_path):
    """The named validation sets (hbl pretrain --select --validation, validate_agents.py --set), the
    choice's (seed 2) and the check's (seed 3): no evaluation workload; regimes holds the regimes."""
    for seed in (2, 3):
        names = [label for label, _ in pretrained.validation_set(name, 1000, seed, tmp_path)]
        assert names and all(split.side(t) == "training" for t in names), names
        assert all("seed=%d" % seed in t for t in names if t.startswith("synth:"))
    assert pretrained.validation_set("families", 1000) == [(t, t) for t in pretrained.validation_traces(1000)]
    fams = [split.families(t)[0] for t, _ in pretrained.validation_set("regimes", 1000, 2, tmp_path)]
    assert fams[-4:] == ["synth:burst", "synth:log", "app:redis-aof", "app:file-server"]
    with pytest.raises(HblError, match="no validation set"):
        pretrained.validation_set("nope")
    assert split.side("workload:squid-cache@0-250000") == "evaluation"     # a part is its capture's side


def test_the_capture_parts_of_choice_and_check_do_not_overlap(tmp_path):
    from hbl.trace import load
    parts = [dict(pretrained.validation_set("regimes", 1000, s, tmp_path))["workload:redis-aof@%d-%d"
                                                                          % pretrained.CAPTURE_PARTS[s]]
             for s in (2, 3)]
    whole, _ = load("workload:redis-aof")
    for s, path in zip((2, 3), parts):
        lo, hi = pretrained.CAPTURE_PARTS[s]
        assert (load(path)[0] == whole[lo:hi]).all() and hi - lo == 250_000


def test_the_apps_set_is_regimes_and_the_training_captures_parts(tmp_path):
    """apps: regimes' traces, then a part of each other training capture long enough to hold both parts
    (choice and check) after the 500,000 requests left for training, so no part is short."""
    from hbl.trace import open_trace, workloads
    apps = [label for label, _ in pretrained.validation_set("apps", 1000, 2, tmp_path)]
    regimes = [label for label, _ in pretrained.validation_set("regimes", 1000, 2, tmp_path)]
    assert apps[:len(regimes)] == regimes and [split.families(t)[0] for t in apps[len(regimes):]] == [
        "app:lmdb-kv", "app:rrd-metrics", "app:kyoto-hash"]
    assert pretrained.CAPTURE_PARTS[2][0] >= 500_000 and pretrained.CAPTURE_PARTS[2][1] <= pretrained.CAPTURE_PARTS[3][0]
    fresh = ["app:" + c for c in pretrained.VALIDATION_SETS["fresh"]["captures"]]
    long = sorted(t for t in split.TRAINING if t.startswith("app:") and t not in fresh
                  and open_trace(workloads.resolve("workload:" + t[4:])).count >= pretrained.CAPTURE_PARTS[3][1])
    assert sorted("app:" + c for c in pretrained.VALIDATION_SETS["apps"]["captures"]) == long   # every one long enough
    assert "app:maildir-lda" in split.TRAINING and "app:maildir-lda" not in long           # 719,304 records


def test_validation_traces_are_training_workloads():
    """What scripts/validate_agents.py and `hbl pretrain --select` choose on."""
    assert all(split.side(t) == "training" for t in pretrained.validation_traces(1000))
    sel = json.loads((pretrained.AGENTS_DIR / "selection.json").read_text())
    assert all(split.side(t) == "training" for t in sel["traces"])


def test_training_on_an_evaluation_workload_is_refused(tmp_path):
    with pytest.raises(HblError, match="bundled:hm_0 is an evaluation workload"):
        pretrained.pretrain_all(["harmonia"], ["perf"], 1, tmp_path, traces=["bundled:hm_0"])
    with pytest.raises(HblError, match="apps:sqlite is an evaluation workload"):
        pretrained.pretrain("harmonia", "perf", 1, tmp_path / "x.agent", traces=["synth:src", "apps:sqlite"])
    assert not list(tmp_path.iterdir())


def test_the_refusal_names_training_workloads_as_a_user_types_them():
    """The error listed the split's families (app:redis-aof), which no trace name spells."""
    with pytest.raises(HblError) as e:
        split.check_training(["bundled:hm_0"], "hbl sweep tune --trace")
    listed = str(e.value).split("the training workloads are ")[1].split(" (")[0].split(", ")
    assert "workload:redis-aof" in listed and "synth:src" in listed
    assert all(split.side(t) == "training" for t in listed)


def test_a_part_of_a_capture_is_its_requests_in_order():
    import numpy as np
    from hbl.errors import TraceError
    from hbl.trace import load, open_trace
    whole, _ = load("workload:redis-aof")
    got = np.concatenate(list(open_trace("workload:redis-aof@1000-71000")))
    assert len(got) == 70_000 and (got == whole[1000:71000]).all()
    assert open_trace("workload:redis-aof@1000-71000").count == 70_000
    assert sum(len(c) for c in open_trace("workload:redis-aof@0-1000+lmdb-kv@0-2000")) == 3000   # tenants
    with pytest.raises(TraceError, match="has %d requests: no part" % len(whole)):
        list(open_trace("workload:redis-aof@0-%d" % (len(whole) + 1)))
    with pytest.raises(TraceError, match="ends .* before it starts"):
        open_trace("workload:redis-aof@9-3")
    with pytest.raises(TraceError, match="workload:NAME@START-END"):
        open_trace("workload:redis-aof@first-half")


def test_pretraining_on_a_validation_part_is_refused(tmp_path):
    for t in ("workload:lmdb-kv", "workload:kyoto-hash@400000-600000", "workload:redis-aof@750000-800000",
              "workload:maildir-lda+rrd-metrics"):
        with pytest.raises(HblError, match="train on workload:[a-z-]+@0-500000"):
            pretrained.pretrain_all(["harmonia"], ["perf"], 1, tmp_path, traces=["synth:src", t])
    assert not list(tmp_path.iterdir())
    pretrained.check_not_validation(["workload:lmdb-kv@0-500000", "workload:maildir-lda", "synth:src"], "x")


def test_the_fresh_set_is_the_untouched_captures_parts(tmp_path):
    """fresh: the later parts of the captures no decision had touched, no family and no capture another set uses;
    a short capture's parts are the same shares of what it holds (half to train, a quarter to choose, a quarter
    to check), inside it and apart."""
    from hbl.trace import open_trace, workloads
    fresh = pretrained.VALIDATION_SETS["fresh"]
    assert not fresh["families"] and fresh["captures"]
    others = {c for n, v in pretrained.VALIDATION_SETS.items() if n != "fresh" for c in v["captures"]}
    assert not set(fresh["captures"]) & others
    for c in fresh["captures"]:
        assert split.side("workload:" + c) == "training" and c in workloads.shipped()
        n = open_trace(workloads.resolve("workload:" + c)).count
        parts = pretrained.capture_parts(c)
        (a, b), (b2, e) = parts[2], parts[3]
        assert n >= e and b <= b2 and a >= n // 2 - 1000 and e >= n - 1000, (c, n, parts)
        assert pretrained.SHORT_CAPTURES.get(c, 1_000_000) <= n
    assert pretrained.capture_parts("lmdb-kv") == pretrained.CAPTURE_PARTS      # the other sets' parts as they were
    pretrained.SHORT_CAPTURES["x"] = 719_304
    try:
        assert pretrained.capture_parts("x") == {2: (359_000, 539_000), 3: (539_000, 719_000)}
    finally:
        del pretrained.SHORT_CAPTURES["x"]
    for seed in (2, 3):
        labels = [lb for lb, _ in pretrained.validation_set("fresh", 1000, seed, tmp_path)]
        assert labels == ["workload:%s@%d-%d" % ((c,) + pretrained.capture_parts(c)[seed]) for c in fresh["captures"]]


def test_training_on_a_fresh_capture_past_its_first_half_is_refused():
    for c in pretrained.VALIDATION_SETS["fresh"]["captures"]:
        first = pretrained.capture_parts(c)[2][0]
        for t in ("workload:" + c, "workload:%s@0-%d" % (c, first + 1), "workload:lmdb-kv@0-1000+%s" % c):
            with pytest.raises(HblError, match="train on workload:%s@0-%d" % (c, first)):
                pretrained.check_not_validation(["synth:src", t], "x")
        pretrained.check_not_validation(["workload:%s@0-%d" % (c, first)], "x")
