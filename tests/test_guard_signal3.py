"""Switching signals for the guard, round 3 (scripts/guard_signal3.py): the handover priced from the layouts
before the switch (E1, E2) on hand-made figures with a stand-in guard and on a small real trace."""
from types import SimpleNamespace

import numpy as np
import pytest

from helpers import script
from hbl.devices import PROFILES

P = ("harmonia", "lru", "arc")
# lru better by about 10% in every window (us per window; cum in ns per request)
STEADY = {"harmonia": [33.0, 34.0, 32.5, 33.5, 33.0], "lru": [30.0, 30.5, 29.5, 30.2, 30.0], "arc": [40.0] * 5}


def _cum(trail):
    return {p: 1e3 * sum(xs) / len(xs) for p, xs in trail.items()}


def _upto(trail, n):
    return {p: xs[:n] for p, xs in trail.items()}


def _signal(name, price_ns, window=10_000):
    """A signal bound to a stand-in guard (full windows, window) with a fixed price (pages, ns)."""
    mod = script("guard_signal3")
    horizon = {"E1": "window", "E2": "fed", "HX": None}[name]
    sig = mod.Priced(horizon, price=lambda g, a, b: (7, price_ns))
    guard = SimpleNamespace(window=window, full=0)
    sig.bind(guard)
    return sig, guard


def _decisions(sig, guard, trail, active="harmonia"):
    out = []
    for n in range(1, len(trail["lru"]) + 1):
        guard.full = n
        t = _upto(trail, n)
        out.append(sig(cum=_cum(t), trail=t, active=active, portfolio=P, margin=0.02))
    return out


def _rule_h(trail, active="harmonia"):
    gh = script("guard_hybrid")
    return [gh.rule_h(cum=_cum(_upto(trail, n)), trail=_upto(trail, n), active=active, portfolio=P, margin=0.02)
            for n in range(1, len(trail["lru"]) + 1)]


def test_a_zero_price_decides_as_rule_h():
    for name in ("E1", "E2", "HX"):
        sig, guard = _signal(name, 0.0)
        got = _decisions(sig, guard, STEADY)
        assert got == _rule_h(STEADY) and got[0] == "lru"
        assert all(e["switched"] for e in sig.events) and len(sig.events) == len(got)


def test_e_never_switches_when_the_price_exceeds_the_gain():
    # lru leads harmonia's cumulative mean by 3.0-3.25 us: 30,000-32,500 us over one window of 10,000
    sig, guard = _signal("E1", 32_500e3 + 1.0)
    got = _decisions(sig, guard, STEADY)
    assert got == [None] * 5 and _rule_h(STEADY)[0] == "lru"
    assert not any(e["switched"] for e in sig.events) and sig.events[0]["gain_window_us"] == pytest.approx(30_000.0)
    sig, guard = _signal("E1", 30_000e3 - 1.0)       # just under the gain: it switches
    assert _decisions(sig, guard, STEADY)[0] == "lru"


def test_e2_grows_its_horizon_with_the_requests_fed():
    price = 50_000e3                                  # above one window's gain, below two windows'
    sig, guard = _signal("E2", price)
    got = _decisions(sig, guard, STEADY)
    assert got[0] is None and got[1] == "lru"
    e1, g1 = _signal("E1", price)
    assert _decisions(e1, g1, STEADY) == [None] * 5
    hx, gx = _signal("HX", 1e18)                       # the probe never blocks, it records
    assert _decisions(hx, gx, STEADY) == _rule_h(STEADY) and hx.events[0]["price_us"] == 1e15


def test_page_io_is_the_device_models_qd1_time():
    g = script("guard_signal3")
    h, m, hdd = PROFILES["H"], PROFILES["M"], PROFILES["L"]
    assert g.page_io_ns(h, False, 1e6) == 10e3 and g.page_io_ns(m, True, 1e6) == 37e3
    span = hdd.size_gb * 1e9 / 4096
    # the whole span: the mean distance is a third of it, the model's average seek
    assert g.page_io_ns(hdd, False, span) == pytest.approx((0.1 + 4.16 + 8.5) * 1e6)
    # a small footprint: a short seek, near the track-to-track one
    small = g.page_io_ns(hdd, True, 100_000)
    assert (0.1 + 4.16 + 1.0) * 1e6 < small < (0.1 + 4.16 + 1.2) * 1e6


def test_the_price_counts_each_differing_page_at_a_read_where_live_and_a_write_where_it_goes():
    g = script("guard_signal3")
    devs = [PROFILES["H"], PROFILES["M"]]
    pages = np.array([1, 2, 3, 4], dtype=np.uint64)
    live = (pages, np.array([0, 0, 1, 1], dtype=np.int8))
    assert g.handover_price(devs, live, live) == (0, 0.0)
    n, ns = g.handover_price(devs, live, (pages, np.array([1, 0, 0, 0], dtype=np.int8)))
    assert n == 3 and ns == pytest.approx((10 + 37) * 1e3 + 2 * (36 + 10) * 1e3)
    with pytest.raises(AssertionError):
        g.handover_price(devs, live, (pages[:3], np.zeros(3, dtype=np.int8)))


def test_on_a_real_trace_the_events_are_rule_hs_would_be_switches():
    from hbl.devices import load_hss
    from hbl.sim import footprint_pages
    from hbl import record
    from hbl.trace import open_trace
    gh, g3 = script("guard_hybrid"), script("guard_signal3")
    data = record.concat(list(open_trace("synth:phases:requests=30000,seed=2")))
    fp = footprint_pages([data])
    load_hss("perf")
    rows = {}
    for name in ("H", "HX", "E1"):
        d = g3.SIGNALS[name]()
        rows[name] = (gh.hybrid(data, fp, "perf", 1, window=3000, decide=d), getattr(d, "events", None))
    h, (hx, ev) = rows["H"][0], rows["HX"]
    assert hx["guard_us"] == h["guard_us"] and hx["switch_log"] == h["switch_log"]
    assert [(e["after"], e["frm"], e["to"]) for e in ev] == [(s["after"], s["frm"], s["to"]) for s in h["switch_log"]]
    assert all(e["price_us"] > 0 and e["pages"] > 0 for e in ev)
    e1, ev1 = rows["E1"]
    assert e1["switches"] == sum(e["switched"] for e in ev1) <= h["switches"]


def test_against_suite_divides_by_the_best_non_learning_policy_by_geomean(tmp_path):
    import io
    import json
    g = script("guard_signal3")
    runs = [dict(hss="cost", trace=t, policy=p, seed=s, avg_latency_us=v)
            for t, vals in (("a", dict(lru=10.0, arc=20.0, harmonia=15.0, oracle=1.0)),
                            ("b", dict(lru=40.0, arc=10.0, harmonia=30.0, oracle=1.0)))
            for p, v in vals.items() for s in (1, 2)]
    suite = tmp_path / "suite.json"
    suite.write_text(json.dumps(dict(results=runs)))
    rows = [dict(hss="cost", trace=t, seed=s, signal=sig, guard_us=v, switches=0, requests=5, window=10)
            for sig, vals in (("H", dict(a=10.0, b=20.0)), ("E1", dict(a=20.0, b=20.0)))
            for t, v in vals.items() for s in (1, 2)]
    out = io.StringIO()
    g.against_suite(rows, str(suite), out)
    text = out.getvalue()
    # arc: geomean(20, 10) = 14.1 < lru's 20: the oracle, a reference, is never the best
    assert "by geomean: arc" in text
    assert "H  guard / arc per seed: 1.0000 1.0000" in text           # (10/20 x 20/10) ** 0.5
    assert "E1 guard / arc per seed: 1.4142 1.4142" in text           # (20/20 x 20/10) ** 0.5
