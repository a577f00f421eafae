#!/usr/bin/env python3
"""Issue 26's targets, read off saved comparisons (hbl compare --output FILE), per HSS:

  1. harmonia's mean speed-up over the papers' prior set (CDE, HPS, Archivist, RNN-HSS, Sibyl);
  2. the workloads where harmonia is more than 3% slower than the best non-learning policy;
  3. the share of the gap from the best non-learning policy to the oracle that harmonia closes:
     between geomeans (as hbl compare gives it), and the median over the workloads (a mean is
     ruled by the workloads whose gap is a hair wide), each against its
     own best non-learning policy, where there is a gap and the oracle is a bound.

Each on the workloads of 100,000+ requests (the targets' set: compare's long_workloads) and, apart,
on every workload. The held-out protocol is the run given first (the shipped pretrained agents);
with --untrained FILE, a run of `hbl compare --untrained` (the papers' protocol: every workload
learned online from scratch), its harmonia is read against the first run's baselines and oracle,
which do not learn.  With --guard FILE..., the guard of results/diagnosis/guard.txt (harmonia with
baselines as shadows: scripts/guard_study.py's JSON lines, or a comparison's harmonia-guard runs) is
read the same way, in harmonia's place, on the workloads its runs cover.  With --explain FILE, each
target the held-out protocol misses on the 100k+ workloads is taken apart per workload into FILE
(explain(): no new run, the figures of the same files; --behind FILE joins behind.py's cause of
each workload where harmonia is more than 3% behind).

    scripts/quality_targets.py results/quality/quality.json \\
        --untrained results/quality/untrained.json > results/quality/targets.txt
    scripts/quality_targets.py results/quality/quality.json --untrained results/quality/untrained.json \\
        --explain results/quality/misses.txt --behind results/quality/behind.txt
"""
import argparse
import json
import math
import sys
from statistics import median

from hbl.experiments.tables import LEARNING, REFERENCES, geomean, normalized, seed_geomeans

PRIOR = ("cde", "hps", "archivist", "rnn-hss", "sibyl")         # the papers' prior set
TARGET_PRIOR, TARGET_BEHIND, TARGET_GAP = 0.29, 0.03, 0.50


def load(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError) as e:
        sys.exit("quality_targets: cannot read %s: %s" % (path, e))


def speedup(slower, faster):
    """How much faster `faster` is than `slower` (latencies): +0.29 is 29% faster."""
    return slower / faster - 1


def non_learning(policies):
    """The contenders that do not learn (the bounds and Fast-Only are no contenders)."""
    return [p for p in policies if p not in LEARNING | REFERENCES]


def targets(norm, workloads, policies, harmonia, beaten):
    """The three figures on `workloads`: harmonia's latencies from `harmonia` (workload -> value),
    the rest from `norm` (workload -> policy -> value)."""
    heuristics = non_learning(policies)
    prior_set = [p for p in PRIOR if p in policies]
    geo = {p: geomean([norm[w][p] for w in workloads]) for p in set(heuristics + prior_set + ["oracle"])}
    h_geo = geomean([harmonia[w] for w in workloads])
    prior = {p: speedup(geo[p], h_geo) for p in prior_set}
    behind, gaps = [], []
    for w in workloads:
        best = min(heuristics, key=lambda p: norm[w][p])
        b, h, o = norm[w][best], harmonia[w], norm[w]["oracle"]
        if h / b - 1 > TARGET_BEHIND:
            behind.append((w, h / b - 1, best))
        if o < b and w not in beaten:
            gaps.append((b - h) / (b - o))
    best = min(heuristics, key=geo.get)
    geo_gap = (geo[best] - h_geo) / (geo[best] - geo["oracle"]) if geo["oracle"] < geo[best] else None
    return {"harmonia": h_geo, "prior": prior, "behind": behind, "gaps": gaps, "best": best,
            "geo_gap": geo_gap, "geo": geo}


def span(values, fmt):
    """' [each seed: lo to hi]' of per-seed figures in fmt (one value where they print alike), '' for one seed."""
    if len(values) < 2:
        return ""
    lo, hi = fmt % min(values), fmt % max(values)
    return " [each seed: %s]" % (lo if lo == hi else lo + " to " + hi)


def report(name, t, n, seeds=()):
    """The three figures of one run; seeds: the same figures with each seed's harmonia alone (targets() of
    each), their range in brackets."""
    prior = t["prior"]
    mean = sum(prior.values()) / len(prior) if prior else float("nan")
    each = lambda f, fmt: span([f(x) for x in seeds], fmt)
    print("  %s, %d workloads: harmonia %.3f%s (geomean of latency / Fast-Only)" % (
        name, n, t["harmonia"], each(lambda x: x["harmonia"], "%.3f")))
    print("    1. over the prior set: mean %+.1f%%%s (target %+.0f%%): %s" % (
        100 * mean, each(lambda x: 100 * sum(x["prior"].values()) / len(x["prior"]), "%+.1f%%"), 100 * TARGET_PRIOR,
        ", ".join("%s %+.1f%%" % (p, 100 * x) for p, x in prior.items())))
    worst = sorted(t["behind"], key=lambda x: -x[1])
    print("    2. more than %.0f%% behind the best non-learning policy on %d of %d workloads%s%s" % (
        100 * TARGET_BEHIND, len(worst), n, each(lambda x: len(x["behind"]), "%d"),
        (": " + ", ".join("%s %+.0f%% (%s)" % (w, 100 * x, b) for w, x, b in worst)) if worst else ""))
    g = t["gaps"]
    print("    3. gap to the oracle closed (target %.0f%%): of the geomeans' gap from %s, %s%s; median over %d "
          "workloads of each one's gap from its best, %s%s" % (
              100 * TARGET_GAP, t["best"], "-" if t["geo_gap"] is None else "%.0f%%" % (100 * t["geo_gap"]),
              each(lambda x: 100 * x["geo_gap"], "%.0f%%") if t["geo_gap"] is not None else "",
              len(g), "%.0f%%" % (100 * median(g)) if g else "-", each(lambda x: 100 * median(x["gaps"]), "%.0f%%")
              if g else ""))


def guard_lines(path):
    """(trace, hss, the guard's mean latency in us, seed) of each run in a file: scripts/guard_study.py's JSON
    lines, or a comparison's --output (hbl compare --policies ...,harmonia-guard: its harmonia-guard runs)."""
    try:
        with open(path) as f:
            text = f.read()
        try:
            whole = json.loads(text)
        except ValueError:
            whole = None
        if isinstance(whole, dict) and "results" in whole:
            rows = [(r["trace"], r["hss"], r["avg_latency_us"], r.get("seed", 1)) for r in whole["results"]
                    if r["policy"] == "harmonia-guard"]
            if not rows:
                sys.exit("quality_targets: %s: a comparison without harmonia-guard runs" % path)
            return rows
        return [(r["trace"], r["hss"], r["guard_us"], r.get("seed", 1))
                for r in (json.loads(x) for x in text.splitlines() if x.strip())]
    except (OSError, ValueError, KeyError, TypeError) as e:
        sys.exit("quality_targets: cannot read %s: %s" % (path, e))


def guard_runs(paths, s):
    """HSS -> workload -> {seed: the guard's latency / Fast-Only} (the mean of a seed's runs), from
    guard_lines(); a run's trace names the workload as the comparison's runs do (less a request range)."""
    label = {(r["hss"], r["trace"]): r["workload"] for r in s["results"]}
    fast = {(r["hss"], r["workload"]): r["avg_latency_us"] for r in s["results"] if r["policy"] == "fast-only"}
    runs = {}
    for path in paths:
        for trace, hss, us, seed in guard_lines(path):
            w = label.get((hss, trace.split("@")[0]))
            if w is None:
                sys.exit("quality_targets: %s: %s on %s is not a workload of the comparison" % (path, trace, hss))
            runs.setdefault(hss, {}).setdefault(w, {}).setdefault(seed, []).append(us / fast[(hss, w)])
    return {h: {w: {s: sum(v) / len(v) for s, v in by_seed.items()} for w, by_seed in ws.items()}
            for h, ws in runs.items()}


def behind_causes(path):
    """(HSS, workload) -> behind.py's rule and cause, read off its summary lines ('perf  web*  +13% (+13..+13)
    wtinylfu  R6 bypasses writes to slower devices: ...')."""
    try:
        with open(path) as f:
            text = f.read()
    except OSError as e:
        sys.exit("quality_targets: cannot read %s: %s" % (path, e))
    _, found, rest = text.partition("\nsummary:")
    if not found:
        sys.exit("quality_targets: %s: no 'summary:' section (scripts/behind.py's output)" % path)
    causes = {}
    for line in rest.splitlines()[1:]:
        x = line.split()
        if len(x) < 7 or x[0] == "rules:" or not x[5].startswith("R"):
            break
        causes[(x[0], x[1])] = "%s %s" % (x[5], " ".join(x[6:]).split(":")[0].split(" (")[0])
    return causes


def pct(x):
    return "%+.1f%%" % (100 * x)


def explain_prior(h, norm, ws, harm, policies, t, cause):
    """Target 1 taken apart: each prior policy's share of the shortfall, and per workload harmonia against
    each one with the mean over the prior set left without that workload."""
    prior, n = t["prior"], len(t["prior"])
    mean = sum(prior.values()) / n
    out = ["", "HSS %s: mean %s over %s; %.1f points short of %+.0f%%, each policy's share (target - its "
               "figure) / %d: %s" % (h, pct(mean), ", ".join("%s %s" % (p, pct(x)) for p, x in prior.items()),
              100 * (TARGET_PRIOR - mean), 100 * TARGET_PRIOR, n,
              ", ".join("%s %.1f" % (p, 100 * (TARGET_PRIOR - x) / n) for p, x in prior.items()))]
    for p in prior:
        rest = [x for q, x in prior.items() if q != p]
        out.append("  without %s: the mean over the other %d %s" % (p, len(rest), pct(sum(rest) / len(rest))))
    out.append("  per workload: latency / Fast-Only, each prior policy's latency / harmonia's - 1 (+ = harmonia "
               "faster), their mean; 'without': the target's figure (mean over the prior set of the geomean "
               "ratios) on the other %d workloads; cause: behind.txt's where harmonia is > 3%% behind" % (len(ws) - 1))
    cols = list(prior)
    out.append("  %-18s %8s " % ("workload", "harmonia") + "".join("%10s" % p for p in cols) + "%10s %8s  %s" % (
        "mean", "without", "cause"))
    rows = []
    for w in ws:
        r = {p: norm[w][p] / harm[w] - 1 for p in cols}
        others = [x for x in ws if x != w]
        loo = targets(norm, others, policies, harm, set())["prior"]
        rows.append((sum(r.values()) / n, w, r, sum(loo.values()) / len(loo)))
    rows.sort(key=lambda x: -x[3])               # first the workloads whose absence raises the figure most
    for m, w, r, loo in rows:
        out.append("  %-18s %8.3f " % (w, harm[w]) + "".join("%10s" % pct(r[p]) for p in cols) + "%10s %8s  %s" % (
            pct(m), pct(loo), cause.get((h, w), "")))
    slower = {p: [w for _, w, r, _ in rows if r[p] < 0] for p in cols}
    out.append("  the mean of the five below %+.0f%% on %d of %d workloads; without one workload the target is met "
               "for: %s; harmonia slower than: %s" % (
                   100 * TARGET_PRIOR, sum(r[0] < TARGET_PRIOR for r in rows), len(ws),
                   ", ".join(r[1] for r in rows if r[3] >= TARGET_PRIOR) or "none",
                   "; ".join("%s on %d (%s)" % (p, len(v), ", ".join(v)) if v else "%s on none" % p
                             for p, v in slower.items())))
    return out


def explain_gap(h, norm, ws, harm, t, heuristics, beaten, cause):
    """Target 3 taken apart: per workload its best non-learning policy's gap to the oracle and the share
    harmonia closes; the summed log gap (geomeans' terms) shared among the workloads."""
    g = t["geo"]
    best, need = t["best"], g[t["best"]] - TARGET_GAP * (g[t["best"]] - g["oracle"])
    out = ["", "HSS %s: geomeans: %s %.3f, the oracle %.3f, harmonia %.3f closes %.0f%%; half the gap would take "
               "harmonia at %.3f, %.1f%% faster than %s (it is %.1f%%); median over workloads %s" % (
                   h, best, g[best], g["oracle"], t["harmonia"], 100 * t["geo_gap"], need,
                   100 * (1 - need / g[best]), best, 100 * (1 - t["harmonia"] / g[best]),
                   "%.0f%%" % (100 * median(t["gaps"])) if t["gaps"] else "-")]
    rows = []
    for w in ws:
        b = min(heuristics, key=lambda p: norm[w][p])
        B, O, H = norm[w][b], norm[w]["oracle"], harm[w]
        if O < B and w not in beaten:
            rows.append((w, b, B, O, H, (B - H) / (B - O), math.log(B / O), math.log(B / H)))
    total = sum(r[6] for r in rows)
    out.append("  per workload against its own best non-learning policy (as the median): gap = best / oracle - 1; "
               "closed = (best - harmonia) / (best - oracle); log share: log(best / oracle) over the sum of the "
               "workloads' (%.2f); contribution: log(best / harmonia) over that sum, in points (they add up to "
               "%.1f: against each workload's own best, never slower there than the geomeans' best)" % (
                   total, 100 * sum(r[7] for r in rows) / total if total else 0))
    out.append("  %-18s %-9s %8s %8s %8s %7s %7s %6s %7s  %s" % (
        "workload", "best", "best", "oracle", "harmonia", "gap", "closed", "share", "contrib", "cause"))
    for w, b, B, O, H, c, lg, lh in sorted(rows, key=lambda r: r[5]):
        out.append("  %-18s %-9s %8.3f %8.3f %8.3f %6.0f%% %6.0f%% %5.1f%% %+7.1f  %s" % (
            w, b, B, O, H, 100 * (B / O - 1), 100 * c, 100 * lg / total, 100 * lh / total, cause.get((h, w), "")))
    big = sorted(rows, key=lambda r: -r[6])[:3]
    out.append("  closed >= %.0f%% on %d of %d; negative (harmonia behind its best) on %d; the largest gaps: %s" % (
        100 * TARGET_GAP, sum(r[5] >= TARGET_GAP for r in rows), len(rows), sum(r[5] < 0 for r in rows),
        ", ".join("%s %.0f%% of the log gap, closed %.0f%%" % (r[0], 100 * r[6] / total, 100 * r[5]) for r in big)))
    return out


def seed_range(values):
    """' (lo-hi, N seeds)' of per-seed figures, '' for one."""
    v = list(values)
    return " (%.3f-%.3f, %d seeds)" % (min(v), max(v), len(v)) if len(v) > 1 else ""


def explain_online(h, norm, ws, held, online, seeds, cause, policies, beaten):
    """The online protocol against the held-out one: what pretraining adds per workload, and the targets."""
    a, b = (targets(norm, ws, policies, x, beaten) for x in (held, online))
    out = ["", "HSS %s: harmonia %.3f%s held-out, %.3f%s online from scratch: pretraining %s" % (
        h, a["harmonia"], seed_range(seeds[0].values()), b["harmonia"], seed_range(seeds[1].values()),
        pct(a["harmonia"] / b["harmonia"] - 1))]
    for name, t in (("held-out", a), ("online", b)):
        prior = sum(t["prior"].values()) / len(t["prior"])
        out.append("  %-9s over the prior set %s, > 3%% behind on %d of %d, gap closed %s / median %s" % (
            name, pct(prior), len(t["behind"]), len(ws), "-" if t["geo_gap"] is None else "%.0f%%" % (
                100 * t["geo_gap"]), "%.0f%%" % (100 * median(t["gaps"])) if t["gaps"] else "-"))
    heur = non_learning(policies)
    out.append("  %-18s %9s %9s %11s %-9s %9s %9s  %s" % (
        "workload", "held-out", "online", "pretrained", "best", "held vs", "online vs", "cause (held-out)"))
    rows = []
    for w in ws:
        bp = min(heur, key=lambda p: norm[w][p])
        rows.append((held[w] / online[w] - 1, w, bp, held[w] / norm[w][bp] - 1, online[w] / norm[w][bp] - 1))
    for d, w, bp, hv, ov in sorted(rows):
        out.append("  %-18s %9.3f %9.3f %11s %-9s %9s %9s  %s" % (
            w, held[w], online[w], pct(d), bp, pct(hv), pct(ov), cause.get((h, w), "")))
    out.append("  pretraining faster on %d of %d, slower on %d; > 3%% behind the best online only: %s" % (
        sum(r[0] < 0 for r in rows), len(rows), sum(r[0] > 0 for r in rows),
        ", ".join(r[1] for r in rows if r[4] > TARGET_BEHIND >= r[3]) or "none"))
    return out


def seed_values(summary):
    """HSS -> workload -> {seed: harmonia's latency / Fast-Only}: each seed's run over Fast-Only's, as
    hbl compare normalizes them (the summary's figure is their mean)."""
    runs = summary.get("results", [])
    out = {}
    for r, x in zip(runs, normalized(runs)):
        if r["policy"] == "harmonia" and x is not None:
            out.setdefault(r["hss"], {}).setdefault(r.get("workload", r["trace"]), {})[r.get("seed", 1)] = x
    return out


def explain(s, u, causes):
    """Each target the held-out protocol misses on the 100k+ workloads, taken apart per workload; with u
    (the online run) what pretraining adds. Lines of text."""
    ws = [w for w in s["workloads"] if w in set(s.get("long_workloads") or s["workloads"])]
    pol = s["policies"]
    figs = {}
    for h in s["hss"]:
        norm = s["normalized_avg_latency"][h]
        beaten = {b["workload"] for b in s.get("beats_oracle", []) if b["hss"] == h}
        harm = {w: norm[w]["harmonia"] for w in ws}
        figs[h] = (norm, harm, beaten, targets(norm, ws, pol, harm, beaten))
    mean = {h: sum(f[3]["prior"].values()) / len(f[3]["prior"]) for h, f in figs.items()}
    miss1 = [h for h in s["hss"] if mean[h] < TARGET_PRIOR]
    lines = ["issue 26's targets missed by the held-out protocol on the %d workloads of 100k+ requests, taken apart "
             "per workload from the same runs (no new run); latency / Fast-Only, harmonia the mean over its "
             "seeds" % len(ws), "",
             "1. mean over the prior set >= %+.0f%%: missed on %s; met on %s" % (
                 100 * TARGET_PRIOR, ", ".join("%s (%s)" % (h, pct(mean[h])) for h in miss1) or "none",
                 ", ".join("%s (%s)" % (h, pct(mean[h])) for h in s["hss"] if h not in miss1) or "none")]
    for h in miss1:
        norm, harm, beaten, t = figs[h]
        lines += explain_prior(h, norm, ws, harm, pol, t, causes)
    behind = {h: len(f[3]["behind"]) for h, f in figs.items()}
    lines += ["", "2. never more than %.0f%% behind the best non-learning policy: behind on %s of %d; each such "
              "workload's cause is measured in behind.txt (scripts/behind.py) and shown beside it below" % (
                  100 * TARGET_BEHIND, ", ".join("%d (%s)" % (n, h) for h, n in behind.items()), len(ws))]
    gap = {h: f[3]["gaps"] and median(f[3]["gaps"]) for h, f in figs.items()}
    miss3 = [h for h in s["hss"] if (figs[h][3]["geo_gap"] or 0) < TARGET_GAP or (gap[h] or 0) < TARGET_GAP]
    lines += ["", "3. oracle gap closed >= %.0f%%: missed on %s" % (100 * TARGET_GAP, ", ".join(
        "%s (geomeans %.0f%%, median %.0f%%)" % (h, 100 * (figs[h][3]["geo_gap"] or 0), 100 * (gap[h] or 0))
        for h in miss3) or "none")]
    for h in miss3:
        norm, harm, beaten, t = figs[h]
        lines += explain_gap(h, norm, ws, harm, t, non_learning(pol), beaten, causes)
    if u:
        lines += ["", "online from scratch (--untrained): what pretraining adds, per workload; + = the held-out "
                  "(pretrained) harmonia slower; held vs / online vs: harmonia against the workload's best "
                  "non-learning policy (the held-out run's, which does not learn)"]
        held_s, online_s = seed_values(s), seed_values(u)
        for h in s["hss"]:
            if h not in u["normalized_avg_latency"]:
                continue
            norm, harm, beaten, _ = figs[h]
            un = u["normalized_avg_latency"][h]
            online = {w: un[w]["harmonia"] for w in ws if w in un}
            if set(online) != set(ws):
                continue
            lines += explain_online(h, norm, ws, harm, online, (seed_geomeans(held_s.get(h, {}), ws),
                                    seed_geomeans(online_s.get(h, {}), ws)), causes, pol, beaten)
    return lines


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("held_out", help="hbl compare --output FILE of the held-out run (every policy)")
    ap.add_argument("--untrained", metavar="FILE", help="hbl compare --untrained --output FILE (harmonia)")
    ap.add_argument("--guard", metavar="FILE", nargs="+",
                    help="the guard on this comparison's workloads, in harmonia's place: scripts/guard_study.py's "
                         "JSON lines, or hbl compare --output FILE of a run with harmonia-guard")
    ap.add_argument("--explain", metavar="FILE", help="write there each target the held-out protocol misses on the "
                    "100k+ workloads, taken apart per workload (with --untrained: what pretraining adds)")
    ap.add_argument("--behind", metavar="FILE", help="scripts/behind.py's output: its cause per workload beside "
                    "--explain's figures")
    a = ap.parse_args(argv)
    s = load(a.held_out)
    guard = guard_runs(a.guard, s) if a.guard else {}
    u = load(a.untrained) if a.untrained else None
    if a.explain:
        text = "\n".join(explain(s, u, behind_causes(a.behind) if a.behind else {})) + "\n"
        try:
            with open(a.explain, "w") as f:
                f.write(text)
        except OSError as e:
            sys.exit("quality_targets: cannot write %s: %s" % (a.explain, e))
        return 0
    wl, long_wl = s["workloads"], [w for w in s["workloads"] if w in set(s.get("long_workloads", []))]
    print("issue 26's targets from %s%s (%s); latency / Fast-Only; the best non-learning policy is the best of "
          "%d per workload; [each seed: ...]: the figure with each seed's harmonia alone (the others as they are)" % (
              a.held_out, " and " + a.untrained if u else "", ", ".join(s["hss"]), len(non_learning(s["policies"]))))
    held_s, online_s = seed_values(s), seed_values(u) if u else {}
    for h in s["hss"]:
        norm = s["normalized_avg_latency"][h]
        beaten = {b["workload"] for b in s.get("beats_oracle", []) if b["hss"] == h}
        print("\nHSS %s%s" % (h, "  (the oracle is beaten on %s: no gap counted there)" % ", ".join(sorted(beaten))
                               if beaten else ""))
        runs = [("held-out", {w: norm[w]["harmonia"] for w in wl}, held_s.get(h, {}))]
        if u and h in u["normalized_avg_latency"]:
            un = u["normalized_avg_latency"][h]
            runs.append(("online from scratch", {w: un[w]["harmonia"] for w in wl if w in un}, online_s.get(h, {})))
        if h in guard:
            runs.append(("held-out, the guard (results/diagnosis/guard.txt)",
                         {w: sum(v.values()) / len(v) for w, v in guard[h].items()}, guard[h]))
        for proto, harm, by_seed in runs:
            done = None
            for name, ws in (("100k+ requests", long_wl), ("every workload", wl)):
                ws = [w for w in ws if w in harm]
                if ws and ws != done:   # a run of the long workloads alone (the guard's) is reported once
                    each = [targets(norm, ws, s["policies"], {w: by_seed[w][k] for w in ws}, beaten)
                            for k in seed_geomeans(by_seed, ws)]
                    report("%s, %s" % (proto, name), targets(norm, ws, s["policies"], harm, beaten), len(ws), each)
                done = ws
    return 0


if __name__ == "__main__":
    sys.exit(main())
