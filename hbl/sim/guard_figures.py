"""The figures of harmonia-guard's live path (hbl/sim/guard.py): the path is one simulator for a while, then
another (a fresh copy after each switch), so its counters are kept as segments, each one a simulator's
snapshot where it became live less its snapshot where it stopped, summed; and a result with
Simulator.result's keys made from that sum."""
import numpy as np

from hbl.core import ffi, lib

#: The live path's counters that add up over its segments (a copy's counters include the prefix it was
#: fed, so each segment counts from where it became live); per-device ones are lists.
ADDITIVE = ("requests", "skipped", "reads", "writes", "read_page_accesses", "fast_read_hits",
            "write_page_accesses", "fast_page_writes", "promotions", "evictions", "fallback_evictions",
            "clean_evictions", "sync_evictions", "moves_refused", "background_ios", "migrated_bytes",
            "latency_sum_ns", "foreground_wait_ns", "sync_wait_ns", "read_latency_ns", "promotions_wasted",
            "batches")
PER_DEVICE = ("busy_ns", "background_busy_ns", "served_requests", "served_latency_ns", "sync_busy_ns",
              "read_pages", "write_pages")



def snapshot(sim, hist=False):
    """A simulator's additive counters now (and its latency histogram: n, min, max, buckets)."""
    st = sim.stats()
    out = {k: getattr(st, k) for k in ADDITIVE}
    out.update({k: list(getattr(st, k))[:sim.ndev] for k in PER_DEVICE})
    out["first_arrival_ns"], out["last_completion_ns"] = st.first_arrival_ns, st.last_completion_ns
    if hist:
        n = lib.hbl_sim_latency_hist(sim.sim, ffi.NULL, 0)
        buf = np.zeros(n, dtype=np.uint64)
        lib.hbl_sim_latency_hist(sim.sim, ffi.cast("uint64_t *", ffi.from_buffer(buf)), n)
        out["hist"] = buf
    return out


def segment(start, end, hist=False):
    """A live segment's figures: end's snapshot less start's (None: the simulator was live from its start),
    with its simulated time span (and its latency histogram's buckets)."""
    out = {k: end[k] - (start[k] if start else 0) for k in ADDITIVE}
    for k in PER_DEVICE:
        out[k] = [e - s for e, s in zip(end[k], start[k] if start else [0] * len(end[k]))]
    out["span_ns"] = end["last_completion_ns"] - (start["last_completion_ns"] if start else end["first_arrival_ns"])
    if hist:
        out["hist"] = end["hist"][3:] - (start["hist"][3:] if start else 0)
    return out


def added(a, b):
    """Two segments' figures summed (the histogram only when both carry one)."""
    out = {k: a[k] + b[k] for k in ADDITIVE + ("span_ns",)}
    out.update({k: [x + y for x, y in zip(a[k], b[k])] for k in PER_DEVICE})
    if "hist" in a and "hist" in b:
        out["hist"] = a["hist"] + b["hist"]
    return out


def live_result(t, final, hss, params, wall, avg_latency_us):
    """Simulator.result's keys (but "policy") for a live path whose summed segments are t (Guard.totals(hist=True):
    with its merged latency buckets and their range), final the simulator live at the end, wall the whole guard's
    simulator time (s), avg_latency_us the path's mean as the guard summed it window by window."""
    n, span, nd = t["requests"], t["span_ns"], range(final.ndev)
    hist, (lo, hi) = t["hist"], t["hist_range"]
    hp = ffi.cast("uint64_t *", ffi.from_buffer(hist))
    pct = lambda q: lib.hbl_hist_buckets_percentile(hp, len(hist), lo, hi, q) / 1e3
    st = final.stats()
    out = {
        "hss": hss.name, "devices": [p.name for p in hss.devices],
        "capacity_pages": [lib.hbl_sim_capacity(final.sim, i) for i in nd], "replay": final.replay,
        "requests": n, "skipped": t["skipped"], "reads": t["reads"], "writes": t["writes"],
        "avg_latency_us": avg_latency_us,    # window by window (the segments' sum differs in the last digit)
        "p50_latency_us": pct(0.5), "p95_latency_us": pct(0.95), "p99_latency_us": pct(0.99),
        "p999_latency_us": pct(0.999),
        "throughput_iops": n / (span / 1e9) if n else 0.0,
        "read_hit_ratio": t["fast_read_hits"] / t["read_page_accesses"] if t["read_page_accesses"] else 0.0,
        "fast_write_share": t["fast_page_writes"] / t["write_page_accesses"] if t["write_page_accesses"] else 0.0,
    }
    for k in ("promotions", "evictions", "fallback_evictions", "clean_evictions", "sync_evictions",
              "moves_refused", "background_ios"):
        out[k] = t[k]
    out.update({
        "background_wait_us": t["foreground_wait_ns"] / n / 1e3 if n else 0.0,
        "background": final.background, "migrated_bytes": t["migrated_bytes"],
        "pages": st.pages, "used_pages": [st.used_pages[i] for i in nd],
        "device_utilization": [min(1.0, t["busy_ns"][i] / span) for i in nd],
        "background_utilization": [min(1.0, t["background_busy_ns"][i] / span) for i in nd],
        "served_requests": t["served_requests"],
        "served_latency_us": [t["served_latency_ns"][i] / t["served_requests"][i] / 1e3
                              if t["served_requests"][i] else 0.0 for i in nd],
        "sync_wait_us": t["sync_wait_ns"] / n / 1e3 if n else 0.0,
        "sync_utilization": [min(1.0, t["sync_busy_ns"][i] / span) for i in nd],
        "read_pages": t["read_pages"], "write_pages": t["write_pages"],
        "read_latency_us": t["read_latency_ns"] / t["reads"] / 1e3 if t["reads"] else 0.0,
        "background_busy_us": [t["background_busy_ns"][i] / n / 1e3 if n else 0.0 for i in nd],
        "promotions_wasted": t["promotions_wasted"], "promoted_unread": st.promoted_unread,
        "params": params,
        # the whole guard's simulator time: members, copies, the live path and the diagnostic window
        "requests_per_second": n / wall if wall > 0 else 0.0,
    })
    if final.background.get("live_batches"):
        out["batches"] = t["batches"]
    return out
