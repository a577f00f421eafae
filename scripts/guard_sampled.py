#!/usr/bin/env python3
"""Sampled shadows for the guard: do members run on a SHARDS-style spatial sample take rule H's decisions?
(a measurement; results/diagnosis/guard-sampled.txt, the guard: results/diagnosis/guard.txt [D])

A request is kept when its first page (offset // 4096) hashes into a fixed 1/R of the hash space
(splitmix64's finalizer; kept iff (h >> 32) < 2^32 // R; multi-page requests kept whole), as SHARDS
(Waldspurger et al., FAST'15) samples references.  Each sampled member is built as guard_study.member
builds it on the kept requests, its capacities from the SAMPLED stream's footprint the way `hbl compare`
sizes them (an absolute capacity divided by R).  The full members run alone on the whole trace; both are
fed window by window (W requests of the full stream; the sampled ones get that window's kept requests).
After each window but the last (rule H's decision points) the cumulative means are compared: relative
error, the same leader, rule H's switch decision given the full run's active member, rank correlation.

    .venv/bin/python scripts/guard_sampled.py --decide-set --hss perf,cost --seeds 1 --rates 8,32 --out X.jsonl
    .venv/bin/python scripts/guard_sampled.py --report X.jsonl
"""
import argparse
import json
import math
import os
import sys
import time

import numpy as np

from hbl.devices import load_hss
from hbl.errors import HblError
from hbl.sim import footprint_pages

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import guard_study as gs  # noqa: E402

RATES = (8, 32)
DECIDE_SET = ["synth:src:requests=100000,seed=2", "workload:redis-aof@500000-600000",
              "synth:usr:requests=100000,seed=2", "workload:file-server@500000-600000",
              "synth:mixed:requests=100000,seed=2", "workload:lmdb-kv@500000-600000",
              "synth:phases:requests=100000,seed=2", "workload:rrd-metrics@500000-600000",
              "synth:zipf:requests=100000,seed=2", "workload:kyoto-hash@500000-600000",
              "synth:burst:requests=100000,seed=2", "workload:maildir-lda@500000-600000",
              "synth:log:requests=100000,seed=2"]
STORED = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "results", "diagnosis",
                      "guard-hybrid-decide.jsonl")
_M64 = np.uint64(0xFFFFFFFFFFFFFFFF)


def page_hash(pages):
    """splitmix64's finalizer of each page number (uint64, wrapping): a fixed hash, no salt."""
    z = np.asarray(pages, dtype=np.uint64).copy()
    with np.errstate(over="ignore"):
        z = (z + np.uint64(0x9E3779B97F4A7C15)) & _M64
        z = ((z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)) & _M64
        z = ((z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)) & _M64
        z = z ^ (z >> np.uint64(31))
    return z


def in_sample(pages, rate):
    """True for the pages whose hash falls in the fixed 1/rate of the hash space."""
    if rate < 1:
        raise HblError("a sampling rate R must be >= 1 (got %r)" % rate)
    return (page_hash(pages) >> np.uint64(32)) < np.uint64((1 << 32) // rate)


def keep(chunk, rate):
    """The mask of the requests of chunk whose first page is in the sample."""
    return in_sample(chunk["offset"] // np.uint64(gs.PAGE_SIZE), rate)


def scaled_caps(cfg, fp_sampled, rate):
    """Capacities for the sampled stream: a share of the footprint from the sampled footprint (as `hbl
    compare` sizes them), an absolute capacity divided by R, unlimited stays unlimited."""
    out = []
    for cap in cfg.capacities:
        if cap is None or isinstance(cap, float):
            out.append(cfg.capacity_pages(fp_sampled, gs.PAGE_SIZE)[len(out)])
        else:
            out.append(max(1, cap // gs.PAGE_SIZE // rate))
    return out


def run(data, hss, seed, portfolio, window, rate):
    """Every member alone on the (sampled) stream: per member its cumulative mean (us) after each window of
    the full stream (None while it has had no request), its simulator time; and the filter's time."""
    cfg = load_hss(hss)
    t0 = time.perf_counter()
    mask = np.concatenate([keep(data[lo:lo + window], rate) for lo in range(0, len(data), window)]) \
        if rate > 1 else np.ones(len(data), dtype=bool)
    filter_s = time.perf_counter() - t0
    fp = footprint_pages([data[mask]])
    caps = scaled_caps(cfg, fp, rate)
    sims = {p: gs.member(p, cfg, caps, hss, seed) for p in portfolio}
    cum, cum_n = {p: [] for p in portfolio}, {p: [] for p in portfolio}
    for lo in range(0, len(data), window):
        sub = data[lo:lo + window][mask[lo:lo + window]]
        for p, sim in sims.items():
            if len(sub):
                sim.feed(sub)
            st = sim.stats()
            cum[p].append(st.latency_sum_ns / st.requests / 1e3 if st.requests else None)
            cum_n[p].append(int(st.requests))
    return dict(rate=rate, kept=int(mask.sum()), footprint_pages=fp, caps=caps, cum_us=cum, cum_requests=cum_n,
                wall_s={p: s.wall for p, s in sims.items()}, filter_s=filter_s)


def leader(cum, portfolio):
    return min(portfolio, key=lambda p: (cum[p], portfolio.index(p)))


def ranks(xs):
    order = sorted(range(len(xs)), key=lambda i: xs[i])
    r = [0.0] * len(xs)
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and xs[order[j + 1]] == xs[order[i]]:
            j += 1
        for k in range(i, j + 1):
            r[order[k]] = (i + j) / 2.0
        i = j + 1
    return r


def spearman(a, b):
    ra, rb = np.array(ranks(a)), np.array(ranks(b))
    if ra.std() == 0 or rb.std() == 0:
        return None
    return float(np.corrcoef(ra, rb)[0, 1])


def active_trail(full, portfolio, margin):
    """Rule H's active member during each window, from the full members' cumulative means (the signal
    alone decides: the members are never touched)."""
    n = len(full[portfolio[0]])
    active, out = portfolio[0], []
    for k in range(n):
        out.append(active)
        if k < n - 1:
            to = gs.switch_to({p: full[p][k] for p in portfolio}, active, portfolio, margin)
            active = to or active
    return out


def compare(full, samp, actives, portfolio, margin, variant):
    """Agreement of the sampled cumulative means with the full ones at each decision point.
    variant "all": every member sampled; "mixed": harmonia's figure the full one."""
    n = len(full[portfolio[0]])
    errs, lead, sw, exact, rho, f_sw, s_sw, hit = [], 0, 0, 0, [], 0, 0, 0
    points = 0
    for k in range(n - 1):
        f = {p: full[p][k] for p in portfolio}
        s = {p: (full[p][k] if variant == "mixed" and p.startswith("harmonia") else samp[p][k]) for p in portfolio}
        if any(v is None for v in s.values()):
            continue
        points += 1
        errs += [abs(s[p] - f[p]) / f[p] for p in portfolio if variant == "all" or not p.startswith("harmonia")]
        lead += leader(f, portfolio) == leader(s, portfolio)
        df, ds = gs.switch_to(f, actives[k], portfolio, margin), gs.switch_to(s, actives[k], portfolio, margin)
        sw += (df is None) == (ds is None)
        exact += df == ds
        f_sw += df is not None
        s_sw += ds is not None
        hit += df is not None and df == ds
        r = spearman([f[p] for p in portfolio], [s[p] for p in portfolio])
        if r is not None:
            rho.append(r)
    end = {p: (samp[p][-1] - full[p][-1]) / full[p][-1] for p in portfolio if samp[p][-1] is not None}
    return dict(points=points, rel_err=errs, leader=lead, switch=sw, exact=exact, rho=rho,
                full_switches=f_sw, sampled_switches=s_sw, switches_matched=hit, end_err=end)


def cell(data, hss, seed, portfolio, window, margin, rates, stored=None):
    """One (trace, HSS, seed): the full members, then each rate's sampled ones and their agreement.
    stored: rule H's JSON line of the same cell, if any: its active trail must be this run's, and its
    per-window means are compared (the largest difference, us, is recorded)."""
    full = run(data, hss, seed, portfolio, window, 1)
    actives = active_trail(full["cum_us"], portfolio, margin)
    if stored is not None and stored["active"] != actives:
        raise AssertionError("the full members' active trail differs from the stored one: %r / %r" % (
            actives, stored["active"]))
    out = dict(hss=hss, seed=seed, requests=len(data), window=window, margin=margin, portfolio=list(portfolio),
               full=dict(full, cum_us={p: [round(v, 4) for v in c] for p, c in full["cum_us"].items()}),
               active=actives, active_checked=stored is not None, sampled={})
    if stored is not None:
        out["stored_window_us_maxdiff"] = check_windows(full, stored)
    for r in rates:
        s = run(data, hss, seed, portfolio, window, r)
        agree = {v: compare(full["cum_us"], s["cum_us"], actives, portfolio, margin, v) for v in ("all", "mixed")}
        out["sampled"][str(r)] = dict(s, cum_us={p: [None if v is None else round(v, 4) for v in c]
                                                 for p, c in s["cum_us"].items()}, agree=agree)
    return out


def load_stored(path):
    rows = {}
    if path and os.path.exists(path):
        with open(path) as f:
            for line in f:
                if line.strip():
                    r = json.loads(line)
                    rows[(r["trace"], r["hss"], r["seed"])] = r
    return rows


def check_windows(full, stored_row):
    """The stored per-window means (us, 3 decimals) against this run's, from its cumulative figures and
    the simulator's request counts (a request without pages, a flush, is not counted by it)."""
    worst = 0.0
    for p, ws in stored_row["window_us"].items():
        c, n = full["cum_us"][p], full["cum_requests"][p]
        for k, w in enumerate(ws):
            prev, prev_n = (c[k - 1] * n[k - 1], n[k - 1]) if k else (0.0, 0)
            mine = (c[k] * n[k] - prev) / (n[k] - prev_n) if n[k] > prev_n else 0.0
            worst = max(worst, abs(mine - w))
    return worst


def pct(a, b):
    return 100.0 * a / b if b else float("nan")


def report(rows, out=sys.stdout):
    by = {}
    for row in rows:
        for r, s in row["sampled"].items():
            for v, a in s["agree"].items():
                by.setdefault((row["hss"], int(r), v), []).append((row, s, a))
    seeds = sorted({row["seed"] for row in rows})
    print("cells: %d (traces %d, seeds %s)" % (len(rows), len({r["trace"] for r in rows}), seeds), file=out)
    print("%-5s %3s %-5s %6s %7s %7s %7s %7s %8s %8s %8s %6s %12s" % (
        "hss", "R", "var", "points", "err_med", "err_p90", "err_max", "end_max", "leader%", "switch%", "exact%",
        "rho", "sw f/s/both"), file=out)
    for key in sorted(by):
        cells = by[key]
        errs = [e for _, _, a in cells for e in a["rel_err"]]
        ends = [abs(e) for row, _, a in cells for p, e in a["end_err"].items()
                if key[2] == "all" or not p.startswith("harmonia")]
        pts = sum(a["points"] for _, _, a in cells)
        rho = [x for _, _, a in cells for x in a["rho"]]
        print("%-5s %3d %-5s %6d %6.1f%% %6.1f%% %6.1f%% %6.1f%% %7.1f%% %7.1f%% %7.1f%% %6.3f %4d/%d/%d" % (
            key[0], key[1], key[2], pts, 100 * np.median(errs), 100 * np.percentile(errs, 90), 100 * max(errs),
            100 * max(ends), pct(sum(a["leader"] for _, _, a in cells), pts),
            pct(sum(a["switch"] for _, _, a in cells), pts), pct(sum(a["exact"] for _, _, a in cells), pts),
            float(np.mean(rho)) if rho else float("nan"), sum(a["full_switches"] for _, _, a in cells),
            sum(a["sampled_switches"] for _, _, a in cells), sum(a["switches_matched"] for _, _, a in cells)),
            file=out)
    print("\nper seed (min-max over seeds of the pooled-over-traces figure)", file=out)
    print("%-5s %3s %-5s %14s %14s %14s" % ("hss", "R", "var", "leader%", "switch%", "exact%"), file=out)
    for key in sorted(by):
        per = {}
        for row, _, a in by[key]:
            t = per.setdefault(row["seed"], [0, 0, 0, 0])
            t[0] += a["points"]
            t[1] += a["leader"]
            t[2] += a["switch"]
            t[3] += a["exact"]
        cols = []
        for i in (1, 2, 3):
            v = [pct(t[i], t[0]) for t in per.values()]
            cols.append("%5.1f-%5.1f" % (min(v), max(v)))
        print("%-5s %3d %-5s %14s %14s %14s" % (key + tuple(cols)), file=out)
    print("\nper trace (variant all; seeds pooled): leader% / switch% agreement, median |end error| of the members",
          file=out)
    rates = sorted({int(k) for r in rows for k in r["sampled"]})
    print("%-44s %-5s " % ("trace", "hss") + " ".join("%22s" % ("R=%d" % r) for r in rates), file=out)
    for tr in sorted({r["trace"] for r in rows}):
        for h in sorted({r["hss"] for r in rows}):
            cells = [r for r in rows if r["trace"] == tr and r["hss"] == h]
            if not cells:
                continue
            parts = []
            for rate in rates:
                ag = [r["sampled"][str(rate)]["agree"]["all"] for r in cells]
                pts = sum(a["points"] for a in ag)
                ends = [abs(e) for a in ag for e in a["end_err"].values()]
                parts.append("%5.0f%% %5.0f%% %8.1f%%" % (pct(sum(a["leader"] for a in ag), pts),
                                                       pct(sum(a["switch"] for a in ag), pts), 100 * np.median(ends)))
            print("%-44s %-5s " % (tr[:44], h) + " ".join(parts), file=out)
    print("\ntime (simulator wall, s, summed over cells; baselines = the five shadows)", file=out)
    print("%-5s %3s %10s %10s %8s %10s %10s %8s %9s" % ("hss", "R", "full_base", "samp_base", "ratio", "full_all",
                                                      "samp_all", "ratio", "filter_s"), file=out)
    for h in sorted({r["hss"] for r in rows}):
        hr = [r for r in rows if r["hss"] == h]
        for rate in sorted({int(k) for r in hr for k in r["sampled"]}):
            fb = sum(w for r in hr for p, w in r["full"]["wall_s"].items() if not p.startswith("harmonia"))
            fa = sum(w for r in hr for w in r["full"]["wall_s"].values())
            sb = sum(w for r in hr for p, w in r["sampled"][str(rate)]["wall_s"].items() if not p.startswith("harmonia"))
            sa = sum(w for r in hr for w in r["sampled"][str(rate)]["wall_s"].values())
            fl = sum(r["sampled"][str(rate)]["filter_s"] for r in hr)
            print("%-5s %3d %10.2f %10.3f %8.1f %10.2f %10.3f %8.1f %9.3f" % (h, rate, fb, sb, fb / sb, fa, sa, fa / sa, fl),
                  file=out)


@gs.study_main("guard_sampled")
def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0], epilog="Figures: results/diagnosis/guard-sampled.txt")
    ap.add_argument("--trace", action="append", help="a training workload (repeatable)")
    ap.add_argument("--decide-set", action="store_true", help="the 13 decide traces of results/diagnosis/guard.txt")
    ap.add_argument("--report", nargs="+", metavar="JSONL", help="print the agreement tables from these JSON lines")
    ap.add_argument("--hss", default="perf,cost", help="HSS presets, comma-separated (default perf,cost)")
    ap.add_argument("--seeds", default="1", help="online seeds, comma-separated (default 1)")
    ap.add_argument("--rates", default=",".join(map(str, RATES)), help="sampling rates R (keep 1/R), default 8,32")
    ap.add_argument("--portfolio", default=",".join(gs.PORTFOLIO), help="members, the first active at the start")
    ap.add_argument("--window", type=int, default=gs.WINDOW, help="requests of the full stream per window")
    ap.add_argument("--margin", type=float, default=gs.MARGIN, help="rule H's margin (default %.2f)" % gs.MARGIN)
    ap.add_argument("--stored", default=STORED, help="rule H's JSON lines whose active trails and window "
                    "means the full run is checked against (default results/diagnosis/guard-hybrid-decide.jsonl)")
    ap.add_argument("--out", help="append JSON lines here (default stdout)")
    a = ap.parse_args(argv)
    traces = (a.trace or []) + (DECIDE_SET if a.decide_set else [])
    if not traces and not a.report:
        ap.error("give --trace / --decide-set (to run) or --report (to read results)")
    if a.report:
        report(gs.read_rows(a.report))
        return 0
    rates = [int(r) for r in a.rates.split(",")]
    if any(r < 1 for r in rates) or a.window <= 0 or not 0 <= a.margin < 1:
        raise HblError("--rates must be >= 1, --window > 0, --margin in [0, 1)")
    seeds, hss_list, portfolio = gs.grid(a.seeds, a.hss, a.portfolio)
    stored = load_stored(a.stored)

    def run(trace, data, _, h, s):
        st = stored.get((trace, h, s))
        same = st is not None and tuple(st["portfolio"]) == portfolio and st["window"] == a.window \
            and st["margin"] == a.margin
        return cell(data, h, s, portfolio, a.window, a.margin, rates, st if same else None)
    gs.write_cells(a.out, traces, hss_list, seeds, run)     # training workloads only
    return 0


if __name__ == "__main__":
    sys.exit(main())
