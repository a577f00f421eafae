"""Switching signals for the guard, round 4 (scripts/guard_signal4.py): a switch confirmed by a probe on the
live layout (C, C0), on hand-made figures with a stand-in guard and on a small real trace."""
from types import SimpleNamespace

from helpers import script

P = ("harmonia", "lru", "arc")


def _guard(named, probe_ns, live_ns, confirm=0.02, to="lru"):
    """A stand-in guard whose probe of `to` was fed its window (probe_ns, live_ns) and whose decision now
    names `named`; install and start_probe recorded, not run."""
    g = SimpleNamespace(cum={p: 1.0 for p in P}, trail={}, active="harmonia", portfolio=P, margin=0.02,
                        confirm=confirm, installed=[], started=[], named=None)
    g.decide = lambda **kw: named
    g.install = g.installed.append
    g.start_probe = g.started.append
    g.probe = dict(sim=object(), rec=dict(after=10_000, frm="harmonia", to=to, pages=7),
                   probe_ns=probe_ns, live_ns=live_ns)
    return g


def _decide(g):
    script("guard_signal4").ProbeGuard.decide_c(g)
    return g


def test_a_probe_that_loses_is_dropped_and_a_new_one_starts_if_rule_h_still_names_it():
    for probe_ns in (100.0, 99.0, 98.0, 120.0):      # not below 0.98 x 100: lost (a tie of the margin loses)
        g = _guard("lru", probe_ns, 100.0)
        pr = g.probe
        _decide(g)
        assert g.installed == [] and g.probe is None and pr["rec"]["outcome"] == "lost"
        assert g.started == ["lru"]                    # a new probe, from the live layout now
    g = _decide(_guard(None, 120.0, 100.0))
    assert g.installed == [] and g.started == []


def test_a_probe_that_wins_becomes_live_only_if_rule_h_still_names_it():
    g = _guard("lru", 97.9, 100.0)
    pr = g.probe
    _decide(g)
    assert g.installed == [pr] and g.started == [] and pr["rec"]["outcome"] == "switched"
    g = _guard("arc", 90.0, 100.0)                     # won, but rule H now names arc: a probe of arc instead
    pr = g.probe
    _decide(g)
    assert g.installed == [] and g.started == ["arc"] and pr["rec"]["outcome"] == "renamed"


def test_c0_confirms_on_any_strict_gain():
    g = _decide(_guard("lru", 99.0, 100.0, confirm=0.0))
    assert len(g.installed) == 1
    g = _decide(_guard("lru", 100.0, 100.0, confirm=0.0))
    assert g.installed == [] and g.started == ["lru"]


def test_on_a_real_trace_a_won_probe_is_live_without_a_second_handover(monkeypatch):
    from hbl import record
    from hbl.devices import load_hss
    from hbl.sim import footprint_pages
    from hbl.sim import guard as policy
    from hbl.trace import open_trace
    g4 = script("guard_signal4")
    data = record.concat(list(open_trace("synth:log:requests=30000,seed=2")))
    fp = footprint_pages([data])
    load_hss("perf")
    h = g4.run_cell("H", data, fp, "perf", 1, window=3000)
    calls = []
    real = policy.handover
    monkeypatch.setattr(policy, "handover", lambda *a, **k: calls.append(1) or real(*a, **k))
    rows = {s: g4.run_cell(s, data, fp, "perf", 1, window=3000) for s in ("C", "C0")}
    assert h["switches"] > 0
    for sig, r in rows.items():
        pr = r["probes"]
        assert pr, sig
        # the paths are rule H's until its first switch: the first probe is that switch, and its window is
        # exactly what rule H's live copy did in its first window
        s0 = h["switch_log"][0]
        assert (pr[0]["after"], pr[0]["frm"], pr[0]["to"]) == (s0["after"], s0["frm"], s0["to"])
        assert pr[0]["probe_us"] == s0["next_us"] and pr[0]["live_us"] == s0["stay_us"]
        # every switch is a won probe of the window before, with that probe's handover and no other
        won = [e for e in pr if e["outcome"] == "switched"]
        assert r["switches"] == len(won) > 0
        for s, e in zip(r["switch_log"], won):
            assert s["after"] == e["after"] + 3000 and s["pages_moved"] == e["pages"] and s["to"] == e["to"]
        assert r["pages_moved"] == sum(e["pages"] for e in won)
        assert all(e["outcome"] in ("switched", "lost", "renamed", "end") for e in pr)
        assert r["window_us"] == h["window_us"]        # the members alone are untouched
        assert r["guard_wall_s"]["probes"] > 0 and r["guard_wall_s"]["probe_copies"] > 0
    assert len(calls) == len(rows["C"]["probes"]) + len(rows["C0"]["probes"])   # one handover per probe


def test_rule_h_through_run_cell_is_guard_hybrids():
    from hbl import record
    from hbl.sim import footprint_pages
    from hbl.trace import open_trace
    gh, g4 = script("guard_hybrid"), script("guard_signal4")
    data = record.concat(list(open_trace("synth:log:requests=12000,seed=2")))
    fp = footprint_pages([data])
    a, b = g4.run_cell("H", data, fp, "perf", 1, window=3000), gh.hybrid(data, fp, "perf", 1, window=3000)
    assert a["guard_us"] == b["guard_us"] and a["switch_log"] == b["switch_log"]
