#!/usr/bin/env python3
"""Why harmonia is behind: for every (HSS, workload) of a saved comparison where harmonia is more
than 3% slower than the best non-learning policy (issue 26's second target, on the workloads of
100k+ requests: the list scripts/quality_targets.py prints), harmonia (its shipped agents, online
seeds 1-3) and that best policy run again as the comparison ran them (the same trace, the full
captures cut to the comparison's first N requests, the same fast capacity), and the gap in average
latency is taken apart into what the simulator counts (results/quality/behind.txt):

  us/req     average latency, its read and write parts (each request's latency over all requests),
             and of it the waits: for evictions a full background queue made synchronous (sync) and
             behind background I/O a device had started (bg);
  reads      share of page reads served by the fastest device (hit) and by the slowest (slow);
  writes     share of written pages placed on the fastest device (fw) and on the slowest (wslow);
  moves      per 1,000 requests: promotions, evictions (of which forced by a full device), the policy's own
             moves (promotions + evictions not forced: for harmonia, its migration agent's), synchronous
             evictions; wasted: share of promotions whose page moved down again before it was read,
             unread: share still not read at the end; copy: background I/O device time, us/request
             over all devices (slowest device's in brackets).

Each workload then gets one cause, by the first rule that holds (RULES, fixed before the table was
read; printed with it). Harmonia's figures are the mean over the 3 seeds (min-max beside the gap).

    .venv/bin/python scripts/behind.py results/quality/default-suite.json:perf,cost \\
        results/quality/quality.json:tri,quad > results/quality/behind.txt

FILE:HSS,... reads those HSS from that comparison (hbl compare --output FILE); --only W,...
keeps those workloads.  Diagnosis on evaluation workloads: it changes no agent.
"""
import argparse
import sys
import tempfile

from hbl.errors import HblError
from hbl.sim import simulate
from hbl.sim.model import DEFAULTS
from hbl.sim.registry import policy_names, policy_params
from migration_diag import cut
from quality_targets import load, targets

SEEDS = (1, 2, 3)
HIT, PROMOTE, WASTE, FW, WAIT = 0.01, 1.5, 0.30, 0.05, 0.5   # the rules' thresholds (RULES)
RULES = """\
rules (first that holds; D = harmonia's latency - the best policy's, us/request, split into its read
part Dr and write part Dw; 'fewer hits': read hit ratio 1 point lower, or 1 point more of the page
reads served by the slowest device):
  R0 not behind here        D <= 0 in these runs
  R1 stalls                 the waits (sync + bg) grew by >= 50% of D
  R2 pollution              Dr >= Dw, fewer hits, >= 1.5x the promotions and >= 30% of them wasted
  R3 promotes too little    Dr >= Dw, fewer hits, <= 1/1.5 of the promotions
  R4 keeps the wrong ones   Dr >= Dw, fewer hits (otherwise)
  R5 slower reads, same hits Dr >= Dw, hits as good: reads slowed by the device time of copies
  R6 bypasses writes        Dw > Dr, fw 5 points lower
  R7 absorbs writes         Dw > Dr, fw 5 points higher: the write-backs and evictions they force
  R8 slower writes          Dw > Dr, fw within 5 points"""


def figures(r, base):
    """The measured parts of one run (simulate's result), base: Fast-Only's average latency."""
    n, k = r["requests"], 1000.0 / r["requests"]
    read = r["read_latency_us"] * r["reads"] / n
    rp, wp = r["read_pages"], r["write_pages"]
    prom, share = r["promotions"], lambda x, xs: x / max(1, sum(xs))
    return dict(norm=r["avg_latency_us"] / base, lat=r["avg_latency_us"], read=read, write=r["avg_latency_us"] - read,
                wait=r["sync_wait_us"] + r["background_wait_us"], sync=r["sync_wait_us"], bg=r["background_wait_us"],
                hit=share(rp[0], rp), slow=share(rp[-1], rp), fw=r["fast_write_share"], wslow=share(wp[-1], wp),
                prom=prom * k, ev=r["evictions"] * k, forced=r["fallback_evictions"] * k,
                own=(prom + r["evictions"] - r["fallback_evictions"]) * k,
                syncev=r["sync_evictions"] * k, wasted=r["promotions_wasted"] / prom if prom else 0.0,
                unread=r["promoted_unread"] / prom if prom else 0.0,
                copy=sum(r["background_busy_us"]), copy_slow=r["background_busy_us"][-1])


def budget():
    """What bounds harmonia's promotions, from the policy registry: its placement agent acts on writes only
    (place_reads 0), so its migration agent makes them, at most m_moves a round of migrate_every requests."""
    p = {k: v["default"] for k, v in policy_params(policy_names().index("harmonia")).items()}
    return ("harmonia: place_reads=%g (reads are promoted by the migration agent alone), m_candidates=%g pages "
            "scored and m_moves=%g moved at most a round of %d requests: its moves (promotions and evictions) at most "
            "%.0f per 1k requests" % (
                p["place_reads"], p["m_candidates"], p["m_moves"], DEFAULTS["migrate_every"],
                1000 * p["m_moves"] / DEFAULTS["migrate_every"]))


def mean(runs):
    return {key: sum(f[key] for f in runs) / len(runs) for key in runs[0]}


def ratio(a, b):
    """'2.0x' / '1/370 of' / 'none of': a against b."""
    if not b:
        return "%.1f vs 0 of" % a if a else "0 vs 0 of"
    if not a:
        return "none of"
    return "%.1fx" % (a / b) if a >= 0.1 * b else "1/%d of" % round(b / a)


def cause(h, b):
    """(rule, one line) for harmonia's mean figures h against the best policy's b (RULES)."""
    d, dr, dw = h["lat"] - b["lat"], h["read"] - b["read"], h["write"] - b["write"]
    fewer = h["hit"] < b["hit"] - HIT or h["slow"] > b["slow"] + HIT
    hits = "read hits %.1f%% vs %.1f%%, %.1f%% vs %.1f%% of page reads from the slowest device" % (
        100 * h["hit"], 100 * b["hit"], 100 * h["slow"], 100 * b["slow"])
    prom = "%s its promotions (%.1f vs %.1f per 1k req; own moves %.1f vs %.1f), %.0f%% of them moved down unread " \
           "(vs %.0f%%)" % (ratio(h["prom"], b["prom"]), h["prom"], b["prom"], h["own"], b["own"], 100 * h["wasted"],
                            100 * b["wasted"])
    if d <= 0:
        return "R0", "not behind in these runs (%+.2f us/req)" % d
    if h["wait"] - b["wait"] >= WAIT * d:
        per = lambda f: 1000 * f["sync"] / f["syncev"] if f["syncev"] else 0.0   # us waited per sync eviction
        return "R1", "stalls behind copies: waits +%.2f of +%.2f us/req (sync evictions %.2f vs %.2f per 1k req, " \
                     "%.1f vs %.1f us waited for each; copy time %.2f vs %.2f us/req)" % (
                         h["wait"] - b["wait"], d, h["syncev"], b["syncev"], per(h), per(b), h["copy"], b["copy"])
    if dr >= dw and fewer and h["prom"] >= PROMOTE * b["prom"] and h["wasted"] >= WASTE:
        return "R2", "pollution: admits extents not read again: %s; %s" % (prom, hits)
    if dr >= dw and fewer and h["prom"] * PROMOTE <= b["prom"]:
        return "R3", "promotes too little: %s; %s" % (prom, hits)
    if dr >= dw and fewer:
        return "R4", "keeps the wrong extents: %s; %s" % (prom, hits)
    if dr >= dw:
        return "R5", "reads slower at hits as good (%s): copy time %.2f vs %.2f us/req (slowest device %.2f vs " \
                     "%.2f)" % (hits, h["copy"], b["copy"], h["copy_slow"], b["copy_slow"])
    writes = "fw %.1f%% vs %.1f%%, evictions %.1f vs %.1f per 1k req (forced %.1f vs %.1f), copy time %.2f vs " \
             "%.2f us/req" % (100 * h["fw"], 100 * b["fw"], h["ev"], b["ev"], h["forced"], b["forced"],
                              h["copy"], b["copy"])
    if h["fw"] < b["fw"] - FW:
        return "R6", "bypasses writes to slower devices: " + writes
    if h["fw"] > b["fw"] + FW:
        return "R7", "absorbs writes and pays their evictions: " + writes
    return "R8", "writes slower at the same placement: " + writes


def misses(summary, hss):
    """[(workload, gap, best policy)] where harmonia is > 3% behind, 100k+ workloads (quality_targets)."""
    norm = summary["normalized_avg_latency"][hss]
    wl = summary.get("long_workloads") or summary["workloads"]
    beaten = {b["workload"] for b in summary.get("beats_oracle", []) if b["hss"] == hss}
    t = targets(norm, wl, summary["policies"], {w: norm[w]["harmonia"] for w in wl}, beaten)
    return sorted(t["behind"], key=lambda x: -x[1])


def trace_path(summary, workload, tmp):
    """The trace as the comparison ran it: a full capture cut to its first capture_requests."""
    trace = next(r["trace"] for r in summary["results"] if r["workload"] == workload)
    n = summary.get("capture_requests")
    return trace, cut("%s@%d" % (trace, n), tmp) if n and trace.startswith("workload:") else trace


def row(name, f):
    pct = tuple(100 * f[k] for k in ("hit", "slow", "fw", "wslow"))
    return ("  %-18s %6.3f %7.2f %6.2f %6.2f %5.2f %5.2f %6.1f%% %5.1f%% %5.1f%% %5.1f%% %7.1f %7.1f %6.1f %6.1f "
            "%6.2f %5.0f%% %5.0f%% %6.2f (%.2f)" % (
                (name, f["norm"], f["lat"], f["read"], f["write"], f["sync"], f["bg"]) + pct
                + (f["prom"], f["ev"], f["forced"], f["own"], f["syncev"], 100 * f["wasted"], 100 * f["unread"],
                   f["copy"], f["copy_slow"])))


HEAD = ("  %-18s %6s %7s %6s %6s %5s %5s %7s %6s %6s %6s %7s %7s %6s %6s %6s %6s %6s %s" % (
    "policy", "norm", "us/req", "read", "write", "sync", "bg", "hit", "slow", "fw", "wslow", "prom/k", "ev/k",
    "forced", "own", "syncev", "wasted", "unread", "copy us/req"))


def diagnose(summary, hss, workload, gap, best, tmp):
    """Run the pair again, print its rows, return its summary line."""
    trace, path = trace_path(summary, workload, tmp)
    base = simulate(path, hss=hss, policy="fast-only")["avg_latency_us"]
    b = figures(simulate(path, hss=hss, policy=best, seed=SEEDS[0]), base)
    hs = [figures(simulate(path, hss=hss, policy="harmonia", seed=s), base) for s in SEEDS]
    h = mean(hs)
    gaps = [x["norm"] / b["norm"] - 1 for x in hs]
    rule, text = cause(h, b)
    print("\n%s %s (%s%s): the table %+.1f%% behind %s; here %+.1f%% (seeds %+.1f%% to %+.1f%%)" % (
        hss, workload, trace, ", first %d requests" % summary["capture_requests"] if path != trace else "",
        100 * gap, best, 100 * (h["norm"] / b["norm"] - 1), 100 * min(gaps), 100 * max(gaps)))
    print(HEAD)
    for s, f in zip(SEEDS, hs):
        print(row("harmonia s%d" % s, f))
    print(row("harmonia mean", h))
    print(row(best, b))
    print("  gap %+.2f us/req = read %+.2f + write %+.2f; of it waits %+.2f (sync %+.2f, bg %+.2f)" % (
        h["lat"] - b["lat"], h["read"] - b["read"], h["write"] - b["write"], h["wait"] - b["wait"],
        h["sync"] - b["sync"], h["bg"] - b["bg"]))
    print("  cause %s: %s" % (rule, text), flush=True)
    return rule, "%-5s %-18s %+5.0f%% (%+.0f..%+.0f) %-9s %s %s" % (
        hss, workload, 100 * (h["norm"] / b["norm"] - 1), 100 * min(gaps), 100 * max(gaps), best, rule, text)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("runs", nargs="+", metavar="FILE:HSS,...", help="a saved comparison and the HSS to read from it")
    ap.add_argument("--only", help="these workloads only (comma-separated labels)")
    a = ap.parse_args(argv)
    only = set(a.only.split(",")) if a.only else None
    print(RULES)
    print(budget())
    lines = []
    with tempfile.TemporaryDirectory(prefix="hbl-behind-") as tmp:
        for spec in a.runs:
            path, _, hss_list = spec.partition(":")
            summary = load(path)
            for hss in hss_list.split(",") if hss_list else summary["hss"]:
                if hss not in summary["normalized_avg_latency"]:
                    sys.exit("behind: %s has no HSS %s" % (path, hss))
                for workload, gap, best in misses(summary, hss):
                    if only is None or workload in only:
                        try:
                            lines.append(diagnose(summary, hss, workload, gap, best, tmp))
                        except HblError as exc:
                            sys.exit("behind: %s %s: %s" % (hss, workload, exc))
    print("\nsummary: HSS, workload, harmonia behind its best (mean of seeds, their min..max), rule, cause")
    for _, line in lines:
        print(line)
    rules = [r for r, _ in lines]
    print("rules: " + ", ".join("%s %d" % (r, rules.count(r)) for r in sorted(set(rules))) + " of %d" % len(rules))
    return 0


if __name__ == "__main__":
    sys.exit(main())
