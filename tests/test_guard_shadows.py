"""Shadows shared between runs of harmonia-guard (hbl/sim/shadows.py): a run that replays the alone members
another run stored has that run's figures, and `hbl compare`'s later seeds replay its first seed's."""
import json

import pytest

from hbl import record
from hbl.devices import load_hss
from hbl.errors import HblError
from hbl.experiments.compare import compare
from hbl.sim import footprint_pages, guard, simulate
from hbl.sim.agent_files import shipped
from hbl.sim.shadows import Replayed, ShadowStore, window_digest
from hbl.trace import open_trace

T = "synth:log:requests=8000,seed=2"      # on perf with windows of 1,000: rule H switches twice
W = 1000
WALL = ("guard_wall_s", "alone_wall_s", "simulator_wall_s", "diagnostic_wall_s", "shared_members")


def _no_times(r):
    r = json.loads(json.dumps(r, default=str))
    r.pop("requests_per_second")
    return r


def _figures(r):
    """A result less its times (and the list of shared members)."""
    r = json.loads(json.dumps(r, default=str))
    r.pop("requests_per_second")
    for k in WALL:
        r["guard"].pop(k, None)
    return r


def test_members_that_learn_and_the_first_member_are_never_shared():
    assert guard.shareable(guard.PORTFOLIO) == ["lru", "arc", "lirs", "s3fifo", "wtinylfu"]
    assert guard.shareable(("harmonia", "sibyl", "lru")) == ["lru"]
    assert guard.shareable(("lru", "arc")) == ["arc"]       # the first is the live path until a switch


@pytest.mark.parametrize("seed", [1, 2])
def test_a_run_replaying_stored_shadows_has_the_figures_of_one_that_simulates_them(tmp_path, seed):
    """Seed 1 stores the five baselines; seed `seed` then replays them (seed 2: another harmonia, the same
    baselines) and every figure, switches included, is that of the same seed run without a store."""
    kw = dict(hss="perf", policy="harmonia-guard", params={"window": W}, check=True)
    first = simulate(T, seed=1, shadow_dir=str(tmp_path), **kw)
    assert first["guard"]["shared_members"] == [] and len(list(tmp_path.iterdir())) == 5
    again = simulate(T, seed=seed, shadow_dir=str(tmp_path), **kw)
    alone = simulate(T, seed=seed, **kw)
    assert again["guard"]["shared_members"] == ["lru", "arc", "lirs", "s3fifo", "wtinylfu"]
    assert alone["guard"]["switches"] == 2 and "shared_members" not in alone["guard"]
    assert _figures(again) == _figures(alone)
    # the time spent is this run's: nothing for the replayed members, their own time kept apart
    assert all(again["guard"]["guard_wall_s"][m] == 0.0 for m in again["guard"]["shared_members"])
    assert again["guard"]["alone_wall_s"]["lru"] == first["guard"]["alone_wall_s"]["lru"] > 0


def test_another_hss_or_window_does_not_replay_the_stored_runs(tmp_path):
    simulate(T, hss="perf", policy="harmonia-guard", params={"window": W}, shadow_dir=str(tmp_path))
    cost = simulate(T, hss="cost", policy="harmonia-guard", params={"window": W}, shadow_dir=str(tmp_path))
    other = simulate(T, hss="perf", policy="harmonia-guard", params={"window": 2 * W}, shadow_dir=str(tmp_path))
    assert cost["guard"]["shared_members"] == [] and other["guard"]["shared_members"] == []
    assert len(list(tmp_path.iterdir())) == 15


def test_requests_the_simulator_skips_count_in_a_replayed_window(tmp_path):
    """A request of no page is fed but not counted in the member's requests: a replayed window still has
    the length of the window fed (a real trace has such requests)."""
    data = record.concat(list(open_trace(T)))
    data["length"][::7] = 0
    cfg = load_hss("perf")
    caps = cfg.capacity_pages(footprint_pages([data]), 4096)

    def run():
        g = guard.Guard(cfg, caps, params=dict(window=W), agents={"harmonia": shipped("harmonia", "perf", 1)},
                        shadows=ShadowStore(str(tmp_path)), shadow_key="t")
        g.feed(data)
        return g.result()
    first, again = run(), run()
    assert first["skipped"] > 0 and again["guard"]["shared_members"] == list(guard.PORTFOLIO[1:])
    assert _figures(first) == _figures(again)


def test_a_replayed_member_refuses_a_window_of_another_length_and_one_too_many():
    d = window_digest(record.empty(4))
    r = Replayed("lru", [(10.0, 3, 4, d), (30.0, 7, 8, d)], 0.1)     # one request of the first window skipped
    r.feed(record.empty(4))
    assert (r.stats().latency_sum_ns, r.stats().requests) == (10.0, 3)
    with pytest.raises(HblError, match="window 2 has 3 requests, 4 were stored"):
        r.feed(record.empty(3))
    r.feed(record.empty(4))
    with pytest.raises(HblError, match="more windows than were stored"):
        r.feed(record.empty(4))


def test_a_store_of_another_trace_of_the_same_length_is_refused(tmp_path):
    """The same key (a trace file rewritten at the same path, a store kept past its comparison): the
    windows' lengths agree, their requests do not; replaying would give figures of the other trace."""
    data = record.concat(list(open_trace(T)))
    other = data.copy()
    other["op"] = 1 - other["op"]                       # reads <-> writes: same length, same pages
    cfg = load_hss("perf")
    caps = cfg.capacity_pages(footprint_pages([data]), 4096)

    def run(d):
        g = guard.Guard(cfg, caps, params=dict(window=W), agents={"harmonia": shipped("harmonia", "perf", 1)},
                        shadows=ShadowStore(str(tmp_path)), shadow_key="t")
        g.feed(d)
        return g.result()
    run(data)
    with pytest.raises(HblError, match="window 1 is not the one stored"):
        run(other)


def test_a_store_that_cannot_be_written_leaves_the_run_alone(tmp_path, monkeypatch):
    import tempfile

    def full(*a, **k):
        raise OSError(28, "No space left on device")
    monkeypatch.setattr(tempfile, "mkstemp", full)
    r = simulate(T, hss="perf", policy="harmonia-guard", params={"window": W}, shadow_dir=str(tmp_path))
    assert r["guard"]["shared_members"] == [] and list(tmp_path.iterdir()) == []


def test_a_store_names_a_file_it_cannot_read_or_of_another_member(tmp_path):
    store = ShadowStore(str(tmp_path))
    store.put("k", "lru", [(1.0, 2, 2)], 0.5)
    assert store.get("k", "lru").cum == [(1.0, 2, 2)] and store.get("none", "lru") is None
    with pytest.raises(HblError, match="a shared shadow of lru, not arc"):
        store.get("k", "arc")
    (tmp_path / "bad.json").write_text("{")
    with pytest.raises(HblError, match="bad.json: a shared shadow that cannot be read"):
        store.get("bad", "lru")


def test_compare_runs_the_later_seeds_on_the_first_seeds_shadows():
    """One process: the later seeds run after the first has finished (with two, a later seed that starts
    while the first runs simulates its members itself: the same figures, more time)."""
    s = compare(traces=[T], hss_list=("perf",), policies="lru,harmonia-guard", seeds=3, jobs=1, progress=False)
    runs = {r["seed"]: r for r in s["results"] if r["policy"] == "harmonia-guard"}
    assert runs[1]["guard"]["shared_members"] == ["lru"]      # from compare's own lru cell
    assert runs[2]["guard"]["shared_members"] == runs[3]["guard"]["shared_members"] == list(guard.PORTFOLIO[1:])
    for seed, r in runs.items():
        alone = simulate(T, hss="perf", policy="harmonia-guard", seed=seed)
        assert r["avg_latency_us"] == alone["avg_latency_us"]
        assert r["guard"]["switch_log"] == alone["guard"]["switch_log"]
        assert r["guard"]["alone_us"] == alone["guard"]["alone_us"]


@pytest.mark.parametrize("policy", ["lru", "arc", "lirs", "s3fifo", "wtinylfu", "smq"])
def test_a_cell_recorded_for_the_guards_has_the_figures_of_one_that_is_not(tmp_path, policy):
    """A policy's own run, fed in pieces that end at every window boundary of two window sizes and stored,
    gives the same result as the plain run; a guard then replays it (the five baselines) with its figures."""
    kw = dict(hss="cost", policy=policy, seed=1)
    plain = simulate(T, **kw)
    recorded = simulate(T, shadow_dir=str(tmp_path), shadow_windows=[W, 3 * W], **kw)
    assert _no_times(recorded) == _no_times(plain)
    assert len(list(tmp_path.iterdir())) == 2
    if policy in guard.PORTFOLIO:
        g = simulate(T, hss="cost", policy="harmonia-guard", params={"window": W}, shadow_dir=str(tmp_path))
        assert policy in g["guard"]["shared_members"]
        assert _figures(g) == _figures(simulate(T, hss="cost", policy="harmonia-guard", params={"window": W}))


def test_learning_policies_and_other_parameters_are_not_recorded(tmp_path):
    simulate(T, hss="perf", policy="harmonia", shadow_dir=str(tmp_path), shadow_windows=[W])
    simulate(T, hss="perf", policy="lirs", params={"hir_share": 0.05}, shadow_dir=str(tmp_path), shadow_windows=[W])
    assert list(tmp_path.iterdir()) == []


def test_compare_runs_every_seed_of_the_guard_on_its_members_cells():
    s = compare(traces=[T], hss_list=("perf",), policies="lru,arc,lirs,s3fifo,wtinylfu,harmonia-guard", seeds=2,
                jobs=1, progress=False)
    runs = {r["seed"]: r for r in s["results"] if r["policy"] == "harmonia-guard"}
    assert all(r["guard"]["shared_members"] == list(guard.PORTFOLIO[1:]) for r in runs.values())
    for seed, r in runs.items():
        assert _figures(r) == _figures(dict(simulate(T, hss="perf", policy="harmonia-guard", seed=seed),
                                            trace=r["trace"], workload=r["workload"], seed=seed))
