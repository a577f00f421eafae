"""harmonia-guard (hbl/sim/guard.py): rule H of the guard study as a policy, a composite of Simulators."""
import numpy as np
import pytest

from hbl import record
from hbl.devices import load_hss
from hbl.errors import HblError
from hbl.sim import Simulator, footprint_pages, simulate
from hbl.sim import guard
from hbl.sim.agent_files import shipped
from hbl.sim.registry import all_policy_names, policy_names
from hbl.trace import open_trace
from helpers import script

T = "synth:log:requests=8000,seed=2"      # on perf with windows of 1,000: rule H switches twice
W = 1000
TIMES = ("requests_per_second",)


def _data(trace=T):
    data = record.concat(list(open_trace(trace)))
    return data, footprint_pages([data])


def _guard(data, fp, hss="perf", seed=1, **kw):
    cfg = load_hss(hss)
    return guard.Guard(cfg, cfg.capacity_pages(fp, 4096), params=dict(window=W), seed=seed,
                       agents={"harmonia": shipped("harmonia", hss, seed)}, **kw)


def _member(p, cfg, caps, hss, seed):
    if p == "harmonia":
        return Simulator.with_agents(cfg, p, caps, shipped(p, hss, seed), seed=seed)
    return Simulator(cfg, p, caps, seed=seed)


def _rule_h_by_hand(data, fp, hss, seed, window, margin=0.02):
    """Rule H written out again from its description (not hbl/sim/guard.py's code): the members alone,
    the cumulative leader by the margin, a copy fed the prefix and told the live layout; the live path's
    mean latency and its switches."""
    cfg = load_hss(hss)
    caps = cfg.capacity_pages(fp, 4096)
    port = guard.PORTFOLIO
    alone = {p: _member(p, cfg, caps, hss, seed) for p in port}
    active, live, base, total, switches = port[0], None, 0.0, 0.0, []
    starts = list(range(0, len(data), window))
    for k, lo in enumerate(starts):
        w = data[lo:lo + window]
        for s in alone.values():
            s.feed(w)
        sim = live or alone[active]
        if live is not None:
            live.feed(w)
        if k == len(starts) - 1:
            break
        cum = {p: alone[p].stats().latency_sum_ns / alone[p].stats().requests for p in port}
        best = min(port, key=lambda p: (cum[p], port.index(p)))
        if best != active and cum[best] < (1 - margin) * cum[active]:
            total += sim.stats().latency_sum_ns - base
            new = _member(best, cfg, caps, hss, seed)
            for lo2 in starts[:k + 1]:
                new.feed(data[lo2:lo2 + window])
            src_p, src_d = guard.layout(sim)
            _, dst_d = guard.layout(new)
            order = np.argsort(-src_d, kind="stable")
            moved = order[src_d[order] != dst_d[order]]
            new.set_devices(src_p[moved], src_d[moved])
            live, active, base = new, best, new.stats().latency_sum_ns
            switches.append((lo + window, best))
    total += (live or alone[active]).stats().latency_sum_ns - base
    return total / len(data) / 1e3, switches


def test_the_policy_is_rule_h_as_written_out_by_hand_and_as_guard_hybrid_runs_it():
    data, fp = _data()
    r = simulate(T, hss="perf", policy="harmonia-guard", params={"window": W}, seed=1, check=True, timeline=True)
    by_hand, switches = _rule_h_by_hand(data, fp, "perf", 1, W)
    assert len(switches) == 2 and r["guard"]["switches"] == 2
    assert [(s["after"], s["to"]) for s in r["guard"]["switch_log"]] == switches
    assert r["avg_latency_us"] == pytest.approx(by_hand, rel=1e-12)
    h = script("guard_hybrid").hybrid(data, fp, "perf", 1, window=W)
    assert r["avg_latency_us"] == h["guard_us"]
    assert r["guard"]["switch_log"] == h["switch_log"] and r["guard"]["alone_us"] == h["alone_us"]
    assert r["requests"] == len(data) == r["reads"] + r["writes"] + r["skipped"]
    assert r["policy"] == "harmonia-guard" and r["agents_from"] == "pretrained:harmonia-perf"
    # the live path's figures are its segments': its windows' means weigh up to its mean
    assert np.mean(r["guard"]["live_us"]) == pytest.approx(r["avg_latency_us"], rel=1e-3)
    assert sum(r["served_requests"]) == r["requests"]
    assert r["p50_latency_us"] <= r["p99_latency_us"] <= r["p999_latency_us"]
    assert len(r["guard"]["active"]) == len(data) // W and r["guard"]["simulator_wall_s"] > 0
    assert set(r["guard"]["guard_wall_s"]) == set(guard.PORTFOLIO) | {"live", "copies"}


def test_a_last_partial_window_follows_the_decision_after_the_last_full_one():
    """8,500 requests in windows of 1,000: a decision after the eighth full window too (a partial one
    follows it), none after the partial one; the per-window trails only with the timeline."""
    data, fp = _data("synth:log:requests=8500,seed=2")
    r = simulate("synth:log:requests=8500,seed=2", hss="perf", policy="harmonia-guard", params={"window": W},
                 seed=1, check=True)
    by_hand, switches = _rule_h_by_hand(data, fp, "perf", 1, W)
    assert [(s["after"], s["to"]) for s in r["guard"]["switch_log"]] == switches
    assert r["avg_latency_us"] == pytest.approx(by_hand, rel=1e-12) and r["requests"] == len(data)
    assert "window_us" not in r["guard"] and "active" not in r["guard"]


def test_percentiles_of_merged_buckets_are_nearest_rank_values():
    """hbl_hist_buckets_percentile on hand-made buckets: below 128 ns a bucket is one nanosecond, so the
    nearest-rank percentile is exact; clamped to the range given."""
    from hbl.core import ffi, lib
    sim = Simulator(load_hss("perf"), "lru", [100, None])
    size = lib.hbl_sim_latency_hist(sim.sim, ffi.NULL, 0) - 3
    b = np.zeros(size, dtype=np.uint64)
    b[10], b[20], b[30] = 5, 4, 1                    # ten latencies: 10 ns x5, 20 ns x4, 30 ns x1
    p = ffi.cast("uint64_t *", ffi.from_buffer(b))
    q = lambda x, lo=0, hi=2 ** 64 - 1: lib.hbl_hist_buckets_percentile(p, size, lo, hi, x)
    assert (q(0.5), q(0.6), q(0.9), q(0.95), q(1.0)) == (10, 20, 20, 30, 30)
    assert q(0.5, lo=15, hi=25) == 15 and q(1.0, lo=15, hi=25) == 25


def test_a_dropped_copy_is_freed_and_the_figures_still_add_up():
    """A guard that switches after every window keeps its alone members and the live copy, not every
    copy it made (nor their snapshots); the per-device figures are the segments' sums."""
    import gc
    import weakref
    data, fp = _data()
    flip = _guard(data, fp, decide=lambda active, **kw: "lru" if active != "lru" else "arc")
    flip.feed(data[:2 * W])                      # window 2 fed after the decision of window 1: a copy is live
    assert flip.active == "lru"
    first_copy = weakref.ref(flip.live)
    flip.feed(data[2 * W:])
    flip.finish()
    gc.collect()
    assert flip.switches[-1]["after"] == len(data) - W and len(flip.switches) == len(data) // W - 1
    assert first_copy() is None, "a copy no longer live is still held"
    r = flip.result()
    assert sum(r["served_requests"]) == r["requests"] == len(data)
    assert sum(r["read_pages"]) + sum(r["write_pages"]) > 0 and all(x >= 0 for x in r["device_utilization"])
    assert r["p50_latency_us"] <= r["p99_latency_us"]


def test_without_a_switch_the_guard_is_harmonia_alone_figure_for_figure():
    data, fp = _data()
    g = _guard(data, fp, decide=lambda **kw: None)
    g.feed(data)
    r = g.result()
    h = simulate(T, hss="perf", policy="harmonia", seed=1)
    assert r["guard"]["switches"] == 0 and r["guard"]["final_active"] == "harmonia"
    for k, v in h.items():
        if k in ("policy", "params", "trace", "agents", "agents_memory_bytes", "agents_from", "footprint_pages",
                 "bad_lines_skipped") + TIMES:
            continue
        assert r[k] == (pytest.approx(v, rel=1e-12) if isinstance(v, float) else v), k


def test_a_forced_switch_hands_the_live_layout_over_and_every_check_passes():
    data, fp = _data()
    g = _guard(data, fp, check_windows=True)
    g.feed(data[:W])
    g.switch("lru")                          # as a decision after the first window would
    assert g.active == "lru" and g.switches[0]["after"] == W and g.switches[0]["pages_moved"] > 0
    lp, ld = guard.layout(g.live)
    hp, hd = guard.layout(g.alone["harmonia"])
    assert np.array_equal(lp, hp) and np.array_equal(ld, hd)   # harmonia's layout, in lru's simulator
    g.check()
    forced = _guard(data, fp, check_windows=True, decide=lambda active, **kw: "lru" if active != "lru" else None)
    forced.feed(data)
    forced.check()
    r = forced.result(timeline=True)
    assert r["guard"]["switches"] == 1 and r["guard"]["final_active"] == "lru"
    assert r["guard"]["active"] == ["harmonia"] + ["lru"] * (len(data) // W - 1)
    # the live path: harmonia's first window, then the copy from where it became live (not its prefix)
    first = _member("harmonia", load_hss("perf"), load_hss("perf").capacity_pages(fp, 4096), "perf", 1)
    first.feed(data[:W])
    copy = forced.live.stats()
    at = forced.open_start
    assert r["requests"] == first.stats().requests + copy.requests - at["requests"] == len(data)
    assert r["promotions"] == first.stats().promotions + copy.promotions - at["promotions"]
    assert r["avg_latency_us"] == pytest.approx(
        (first.stats().latency_sum_ns + copy.latency_sum_ns - at["latency_sum_ns"]) / len(data) / 1e3, rel=1e-12)
    assert "merged" in r["guard"]["percentiles"]


def test_windows_do_not_depend_on_how_the_trace_is_chunked():
    data, fp = _data()
    out = []
    for size in (len(data), W, 333, 7):
        g = _guard(data, fp)
        for lo in range(0, len(data), size):
            g.feed(data[lo:lo + size])
        r = g.result(timeline=True)
        for k in TIMES:
            del r[k]
        for k in ("guard_wall_s", "alone_wall_s", "diagnostic_wall_s", "simulator_wall_s"):
            del r["guard"][k]
        out.append(r)
    assert out[0]["guard"]["switches"] == 2 and len(out[0]["timeline"]) == len(data) // W
    for r in out[1:]:
        assert r == out[0]
    with pytest.raises(HblError, match="trace ended"):
        g.feed(data[:10])


def test_a_switch_rebuilds_its_copy_from_the_trace_read_again_and_keeps_no_window():
    """With reread (as simulate gives it) the copy is fed the trace from its start again, in the same
    windows, and the guard holds no window; the figures are those of the guard that kept them."""
    data, fp = _data()
    reads = []

    def reread():
        reads.append(1)
        return (data[lo:lo + 777] for lo in range(0, len(data), 777))     # other chunks than fed

    kept, again = _guard(data, fp), _guard(data, fp, reread=reread)
    kept.feed(data)
    again.feed(data)
    a, b = kept.result(), again.result()
    for k in TIMES:
        del a[k], b[k]
    for k in ("guard_wall_s", "alone_wall_s", "diagnostic_wall_s", "simulator_wall_s"):
        del a["guard"][k], b["guard"][k]
    assert a["guard"]["switches"] == 2 and a == b
    assert len(reads) == 2 and again.windows == [] and len(kept.windows) == len(data) // W
    short = _guard(data, fp, reread=lambda: iter([data[:W]]))
    short.feed(data[:3 * W])
    with pytest.raises(HblError, match="ended 2000 requests short"):
        short.switch("lru")                   # three full windows fed, one read again


@pytest.mark.parametrize("params, match", [
    ({"window": 0}, "window=0"), ({"window": 2.5}, "whole number"), ({"margin": 1}, r"margin=1, want a share"),
    ({"margin": -0.1}, "margin"), ({"promote": 3}, "takes no parameter 'promote'"),
    ({"window": float("inf")}, "window=inf, want a finite number"), ({"window": "abc"}, "want NAME=NUMBER"),
    (["lru.promote=3"], "is for policy lru")])
def test_bad_parameters_are_refused_with_a_clear_error(params, match):
    with pytest.raises(HblError, match=match):
        simulate("synth:log:requests=500,seed=2", hss="perf", policy="harmonia-guard", params=params)


def test_a_member_that_cannot_run_is_named_as_the_guards():
    # a fast device of 2 pages: wtinylfu needs 3; the user named the guard, not the member
    with pytest.raises(HblError, match=r"^harmonia-guard cannot run its member wtinylfu here: .*at least 3 pages"):
        simulate("synth:zipf:requests=200,pages=16", hss="perf", policy="harmonia-guard")


def test_a_live_device_refuses_it():
    from hbl.live.decider import Decider
    data, fp = _data("synth:log:requests=500,seed=2")
    with pytest.raises(HblError, match="cannot drive a live device"):
        _guard(data, fp, live=True)
    with pytest.raises(HblError, match="cannot drive a live device"):
        Decider("harmonia-guard", 4096, [16, 400])
    with pytest.raises(HblError, match="cannot drive a live device"):
        simulate("synth:log:requests=500,seed=2", hss="perf", policy="harmonia-guard", live=True)
    assert "harmonia-guard" not in policy_names("live")


def test_compare_runs_it_when_named_as_a_learning_policy_and_never_by_default():
    from hbl.experiments.compare import compare, expand_policies
    from hbl.experiments.tables import LEARNING
    assert "harmonia-guard" not in expand_policies("all") and "harmonia-guard" in LEARNING
    assert "harmonia-guard" in all_policy_names("learns") and "harmonia-guard" not in policy_names()
    s = compare(traces=["synth:log:requests=3000,seed=2"], hss_list=("perf",), policies="lru,harmonia-guard",
                seeds=2, jobs=1, progress=False, params=["harmonia-guard.window=1000"])
    row = [r for r in s["summary"]["perf"] if r["policy"] == "harmonia-guard"][0]
    assert row["seeds"] == 2 and row["geomean_min"] <= row["geomean"] <= row["geomean_max"]
    runs = [r for r in s["results"] if r["policy"] == "harmonia-guard"]
    assert sorted(r["seed"] for r in runs) == [1, 2] and all(r["params"]["window"] == 1000 for r in runs)
