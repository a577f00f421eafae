#!/usr/bin/env python3
"""Switching signals for the guard, round 3: the handover priced from the layouts BEFORE the switch (issue 26).
(the rule and the figures: results/diagnosis/guard-signal3.txt; rounds 1-2: guard-signal.txt, guard-signal2.txt)

The same live path as rule H (guard_hybrid.hybrid); only the decision after each full window is replaced by a
signal bound to the guard (bind(guard): its live simulator and its members' alone simulators).  When rule H
would switch from the active member a to b, the price of the handover is estimated first: every page whose
device differs between the live layout and b's alone layout, priced at a 4 KiB read where it is live plus a
4 KiB write where b has it, at the simulator's device model (page_io_ns):
  E1  switch only if (cum[a] - cum[b]) x one window's requests > the price;
  E2  the same with the requests fed so far as the horizon;
  HX  rule H, recording E's price and gains at each of its switches (a probe of the estimate);
  H   rule H itself (to show the runs reproduce the stored figures).

    .venv/bin/python scripts/guard_signal3.py --signal E1 --trace synth:src:requests=100000,seed=2 --hss perf
One JSON line per (trace, HSS, seed), guard_study's, with "signal" and (E1, E2, HX) "events": every decision
where rule H would switch; --report prints guard_signal.py's report (against rule H's rows) and this round's
diagnostics (blocked switches, the estimate against the price paid); --report ROWS --suite JSON sets the rows'
guard against an `hbl compare` JSON's best non-learning policy on the same traces (the default suite's short
slices, a report only).
"""
import math
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import guard_hybrid as gh  # noqa: E402
import guard_report as gr  # noqa: E402
import guard_study as gs  # noqa: E402

PAGE = 4096


def page_io_ns(profile, write, span_seen_pages):
    """A random 4 KiB I/O at QD1 on an idle device, in ns, as ctypes_core/sim_device.c's dev_start charges it:
    an SSD its latency (a transfer only beyond 4 KiB); an HDD its latency + rotation + the seek at the mean
    distance between two random pages of a span of span_seen_pages (a third of it), capped at two average
    seeks (positioning(); no credit for a continuing head or a followed stream)."""
    lat = (profile.write_latency_us if write else profile.read_latency_us) * 1e3
    if not profile.is_hdd():
        return lat
    span = profile.size_gb * 1e9 / PAGE
    dist = span_seen_pages / 3.0
    seek = profile.track_seek_ms * 1e6 + (profile.seek_ms - profile.track_seek_ms) * 1e6 * math.sqrt(3.0 * dist / span)
    return lat + profile.rotation_ms * 1e6 + min(seek, 2 * profile.seek_ms * 1e6)


def handover_price(devices, live, target):
    """(pages whose device differs, price in ns) of moving from layout live to layout target ((pages, devices)
    each, as hbl.sim.guard.layout): each such page read on its live device and written on its target device."""
    (lp, ld), (tp, td) = live, target
    if len(lp) != len(tp) or not np.array_equal(lp, tp):
        raise AssertionError("the layouts are not of the same pages (%d, %d)" % (len(lp), len(tp)))
    diff = np.nonzero(ld != td)[0]
    if not len(diff):
        return 0, 0.0
    span = float(lp[-1] - lp[0]) if len(lp) else 0.0
    n = len(devices)
    rd = [page_io_ns(devices[d], False, span) for d in range(n)]
    wr = [page_io_ns(devices[d], True, span) for d in range(n)]
    src, dst = ld[diff].astype(np.int64), td[diff].astype(np.int64)
    return int(len(diff)), float(np.take(rd, src).sum() + np.take(wr, dst).sum())


class Priced:
    """A decide(cum=, trail=, active=, portfolio=, margin=) for one guard (one cell): rule H's choice, kept
    only when its gain over `horizon` ("window": one window's requests; "fed": the requests fed so far;
    None: never blocked, the estimate only recorded) exceeds the handover's estimated price.  price(guard,
    active, best) -> (pages, ns) may be given (a test's); default: the layouts' (handover_price)."""

    def __init__(self, horizon, price=None):
        if horizon not in ("window", "fed", None):
            raise ValueError("horizon: 'window', 'fed' or None")
        self.horizon, self.price_fn = horizon, price or self.layout_price
        self.guard, self.events = None, []

    def bind(self, guard):
        self.guard, self.events = guard, []

    @staticmethod
    def layout_price(guard, active, best):
        from hbl.sim import guard as policy
        return handover_price(guard.hss.devices, policy.layout(guard.open_sim), policy.layout(guard.alone[best]))

    def __call__(self, cum, trail, active, portfolio, margin):
        best = gh.rule_h(cum=cum, trail=trail, active=active, portfolio=portfolio, margin=margin)
        if not best:
            return None
        g = self.guard
        fed = g.full * g.window                  # at a decision: every window fed was full
        pages, price = self.price_fn(g, active, best)
        lead = cum[active] - cum[best]           # ns per request
        gain_window, gain_fed = lead * g.window, lead * fed
        gain = {"window": gain_window, "fed": gain_fed, None: None}[self.horizon]
        switch = gain is None or gain > price
        self.events.append(dict(after=fed, frm=active, to=best, pages=pages, price_us=round(price / 1e3, 3),
                                gain_window_us=round(gain_window / 1e3, 3), gain_fed_us=round(gain_fed / 1e3, 3),
                                switched=switch))
        return best if switch else None


SIGNALS = {"H": lambda: gh.rule_h, "E1": lambda: Priced("window"), "E2": lambda: Priced("fed"),
           "HX": lambda: Priced(None)}


def paid_of(row):
    """{(after, frm, to): did the switch pay (the live copy's first window below the old live path's)} of a row."""
    return {(s["after"], s["frm"], s["to"]): s["next_us"] < s["stay_us"]
            for s in row["switch_log"] if "next_us" in s and "stay_us" in s}


def segment_paid(row, sw, against=None):
    """What the live copy of switch sw paid against member `against` alone (default: the same member, sw's
    "to") over the windows it was live (until the next switch or the trace's end): sum of (live window mean -
    that member's alone window mean) x the window's requests, us.  Against sw's "frm" and negated: what the
    switch gained over staying (the old member alone standing in for it)."""
    k = sw["after"] // row["window"]
    ends = [s["after"] // row["window"] for s in row["switch_log"] if s["after"] > sw["after"]]
    end = min(ends) if ends else len(row["live_us"])
    full = row["requests"] // row["window"]
    ref = row["window_us"][against or sw["to"]]
    return sum((row["live_us"][j] - ref[j]) * (row["window"] if j < full else row["requests"] - full * row["window"])
               for j in range(k, end))


def spearman(xs, ys):
    """Spearman's rank correlation (average ranks for ties); None under 3 pairs."""
    if len(xs) < 3:
        return None

    def ranks(v):
        order = sorted(range(len(v)), key=lambda i: v[i])
        r = [0.0] * len(v)
        i = 0
        while i < len(v):
            j = i
            while j + 1 < len(v) and v[order[j + 1]] == v[order[i]]:
                j += 1
            for k in range(i, j + 1):
                r[order[k]] = (i + j) / 2.0
            i = j + 1
        return r
    rx, ry = ranks(xs), ranks(ys)
    mx, my = sum(rx) / len(rx), sum(ry) / len(ry)
    cov = sum((a - mx) * (b - my) for a, b in zip(rx, ry))
    vx, vy = sum((a - mx) ** 2 for a in rx), sum((b - my) ** 2 for b in ry)
    return cov / math.sqrt(vx * vy) if vx and vy else None


def diagnostics(rows, out=sys.stdout):
    """Per signal and HSS: rule H's would-be switches E blocked and, matched to rule H's rows (the stored ones
    or H's here) of the same cell, whether they had paid; for rows with events and switch records (HX), the
    estimated price against the price the switch paid in its first window ((live copy - member alone) x its
    requests), and round 1's ratio live copy / alone."""
    p = lambda *a: print(*a, file=out)
    h_cells = {(r["trace"], r["hss"], r["seed"]): r for r in rows if r.get("signal", "H") == "H"}
    groups = {}
    for r in rows:
        if "events" in r:
            groups.setdefault((r["signal"], r["hss"]), []).append(r)
    for (sig, h), rs in sorted(groups.items()):
        ev = [e for r in rs for e in r["events"]]
        blocked = [(r, e) for r in rs for e in r["events"] if not e["switched"]]
        line = "%-2s %-5s %d cells: rule H would switch %d times, %s switched %d, blocked %d" % (
            sig, h, len(rs), len(ev), sig, len(ev) - len(blocked), len(blocked))
        known = paid = seg_paid = 0
        for r, e in blocked:
            hr = h_cells.get((r["trace"], r["hss"], r["seed"]))
            got = paid_of(hr).get((e["after"], e["frm"], e["to"])) if hr else None
            if got is not None:
                sw = [s for s in hr["switch_log"] if (s["after"], s["frm"], s["to"]) == (e["after"], e["frm"], e["to"])]
                known, paid = known + 1, paid + got
                seg_paid += segment_paid(hr, sw[0], sw[0]["frm"]) < 0
        line += "; of the blocked, %d are rule H's own switches (same cell, window, members): %d of them had " \
                "paid in H's run in their next window, %d over their live segment against the old member " \
                "alone" % (known, paid, seg_paid)
        est, act, ratio, seg, fits = [], [], [], [], [0] * 5
        for r in rs:
            logs = {(s["after"], s["frm"], s["to"]): s for s in r["switch_log"]}
            for e in r["events"]:
                s = logs.get((e["after"], e["frm"], e["to"])) if e["switched"] else None
                if s and "next_us" in s and s.get("alone_next_us", 0) > 0:
                    est.append(e["price_us"])
                    act.append((s["next_us"] - s["alone_next_us"]) * r["window"])
                    ratio.append(s["next_us"] / s["alone_next_us"])
                    seg.append(segment_paid(r, s))
                    fits[0] += e["gain_window_us"] > e["price_us"]
                    fits[1] += e["gain_fed_us"] > e["price_us"]
                    fits[2] += s["next_us"] < s["stay_us"]
                    fits[3] += e["pages"] == s["pages_moved"]
                    fits[4] += segment_paid(r, s, s["frm"]) < 0
        if est:
            rho = spearman(est, act)
            pos = [(e, a) for e, a in zip(est, act) if a > 0]
            line += ("\n    %d switches with a measured first window: estimated price median %.0f us, paid "
                     "(live copy - alone) x window median %.0f us (%d of %d positive); estimate / paid geomean "
                     "%s over the positive; Spearman(estimate, paid) %s; live copy / alone geomean %.3f" % (
                         len(est), sorted(est)[len(est) // 2], sorted(act)[len(act) // 2], len(pos), len(est),
                         "%.2f" % gr.geomean([e / a for e, a in pos if e > 0]) if any(e > 0 for e, _ in pos) else "-",
                         "%.2f" % rho if rho is not None else "-", gr.geomean(ratio)))
            rho = spearman(est, seg)
            line += ("\n    paid over the whole live segment ((live - the member alone) x window, summed until the "
                     "next switch or the end): median %.0f us (%d of %d positive); Spearman(estimate, it) %s; of these "
                     "switches the gain exceeded the estimate over one window in %d, over the requests fed in %d; "
                     "%d paid in their next window, %d over their live segment against the old member alone; pages "
                     "priced = pages the handover moved in %d" % (
                         sorted(seg)[len(seg) // 2], sum(x > 0 for x in seg), len(seg),
                         "%.2f" % rho if rho is not None else "-", fits[0], fits[1], fits[2], fits[4], fits[3]))
        p(line)


def against_suite(rows, suite, out=sys.stdout):
    """Per signal and HSS, the rows' guard against an `hbl compare` JSON (suite) on the same traces: per seed,
    the geomean over the traces of guard_us / the mean latency of the best non-learning policy by geomean there
    (as compare's summary picks it), and harmonia's from the suite the same way; switches."""
    import json
    from hbl.experiments.tables import LEARNING, REFERENCES
    p = lambda *a: print(*a, file=out)
    with open(suite) as f:
        runs = json.load(f)["results"]
    for h in sorted({r["hss"] for r in rows}):
        traces = sorted({r["trace"] for r in rows if r["hss"] == h})
        lat = {}
        for r in runs:
            if r["hss"] == h and r["trace"] in traces:
                lat.setdefault((r["trace"], r["policy"]), {})[r["seed"]] = r["avg_latency_us"]
        mean = lambda t, pol: sum(lat[(t, pol)].values()) / len(lat[(t, pol)])
        pols = {pol for _, pol in lat if pol not in LEARNING | REFERENCES
                and all((t, pol) in lat for t in traces)}
        if not pols:
            raise ValueError("%s: no non-learning policy on every trace of the rows (%s)" % (suite, h))
        best = min(sorted(pols), key=lambda pol: gr.geomean([mean(t, pol) for t in traces]))
        seeds = sorted({r["seed"] for r in rows if r["hss"] == h})
        p("%s, %d traces: the best non-learning policy of %s by geomean: %s" % (h, len(traces), suite, best))
        if all((t, "harmonia") in lat for t in traces):
            p("  harmonia (the suite's) / %s per seed: %s" % (best, " ".join(
                "%.4f" % gr.geomean([lat[(t, "harmonia")][s] / mean(t, best) for t in traces]) for s in seeds)))
        for sig in sorted({r.get("signal", "H") for r in rows if r["hss"] == h}):
            cell = {(r["trace"], r["seed"]): r for r in rows if r["hss"] == h and r.get("signal", "H") == sig}
            if not all((t, s) in cell for t in traces for s in seeds):
                continue
            p("  %-2s guard / %s per seed: %s; switches %d in %d cells (%d cells with a decision)" % (
                sig, best, " ".join("%.4f" % gr.geomean([cell[(t, s)]["guard_us"] / mean(t, best) for t in traces])
                                    for s in seeds), sum(c["switches"] for c in cell.values()), len(cell),
                sum(c["requests"] > c["window"] for c in cell.values())))


def run_cell(signal, data, fp, h, s, portfolio):
    decide = SIGNALS[signal]()
    res = gh.hybrid(data, fp, h, s, portfolio, decide=decide)
    res["signal"] = signal
    if isinstance(decide, Priced):
        res["events"] = decide.events
    return res


@gs.study_main("guard_signal3")
def main(argv=None):
    return gs.signal_main(argv, __doc__, "results/diagnosis/guard-signal3.txt", SIGNALS, run_cell,
                          "blocked switches and the handover price: estimated against paid", diagnostics,
                          suite=("with --report: the rows against an `hbl compare` JSON's best non-learning policy "
                                 "on the same traces instead (results/quality/guard-suite.json)", against_suite))


if __name__ == "__main__":
    sys.exit(main())
