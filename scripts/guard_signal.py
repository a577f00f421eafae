#!/usr/bin/env python3
"""Switching signals for the guard's rule H that should not fire on noise or on harmonia's warm-up (issue 26).
(the rule and the figures: results/diagnosis/guard-signal.txt; rule H: results/diagnosis/guard.txt [D])

Rule H (scripts/guard_hybrid.py) switches to the member with the lowest CUMULATIVE alone mean when it beats
the active member's by more than the margin.  Here the same live path (guard_hybrid.hybrid) takes another
decision, passed as decide=:
  H  rule H itself (guard_hybrid.rule_h), to show the runs reproduce the stored figures;
  T  rule H's leader and margin, AND a paired test over the windows so far: the per-window differences
     (active alone minus leader alone, us) have mean / (sd / sqrt(n)) >= 2 with n >= 3 windows;
  S  rule H's comparison (guard_study.switch_to) on each member's mean over the LATER HALF of the
     windows so far (windows ceil(n/2)..n, counted from 1) instead of the cumulative mean.

    .venv/bin/python scripts/guard_signal.py --signal T --trace synth:src:requests=100000,seed=2 --hss perf
One JSON line per (trace, HSS, seed), guard_study's, with "signal" added; --report reads them.
"""
import argparse
import math
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import guard_hybrid as gh  # noqa: E402
import guard_report as gr  # noqa: E402
import guard_study as gs  # noqa: E402


T_MIN_WINDOWS = 3
T_MIN_STAT = 2.0
P9 = ("harmonia", "lru", "arc", "lirs", "s3fifo", "wtinylfu", "seqcutoff", "nhit", "smq", "cde")


def paired_t(diffs):
    """mean / (sd / sqrt(n)) of the differences (sample sd); +inf for a positive mean with no spread."""
    n = len(diffs)
    m = sum(diffs) / n
    var = sum((d - m) ** 2 for d in diffs) / (n - 1) if n > 1 else 0.0
    if var <= 0.0:
        return math.inf if m > 0 else (-math.inf if m < 0 else 0.0)
    return m / math.sqrt(var / n)


def signal_t(cum, trail, active, portfolio, margin):
    """T: rule H's leader, only when its per-window lead over the active member is beyond noise."""
    lead = gs.switch_to(cum, active, portfolio, margin)
    if lead is None:
        return None
    a, b = trail[active], trail[lead]
    if len(a) < T_MIN_WINDOWS:
        return None
    return lead if paired_t([x - y for x, y in zip(a, b)]) >= T_MIN_STAT else None


def later_half(trail):
    """Each member's mean over windows ceil(n/2)..n (counted from 1) of its trail."""
    out = {}
    for p, xs in trail.items():
        n = len(xs)
        tail = xs[(n + 1) // 2 - 1:] if n else []
        out[p] = sum(tail) / len(tail) if tail else 0.0
    return out


def signal_s(cum, trail, active, portfolio, margin):
    """S: rule H's comparison on the later half of the windows so far, the early windows dropped."""
    return gs.switch_to(later_half(trail), active, portfolio, margin)


SIGNALS = {"H": gh.rule_h, "T": signal_t, "S": signal_s}


def label(r):
    """A row's (signal, portfolio size): stored rule-H rows carry no signal."""
    return (r.get("signal", "H"), len(r["portfolio"]) - 1)


def normalized(rows, hss, seed, traces):
    """Geomean over traces of guard_us / harmonia alone_us on one (HSS, seed), None if a cell is missing."""
    cell = {(r["trace"], r["hss"], r["seed"]): r for r in rows}
    if not all((t, hss, seed) in cell for t in traces):
        return None
    return gr.geomean([cell[(t, hss, seed)]["guard_us"] / cell[(t, hss, seed)]["alone_us"]["harmonia"]
                       for t in traces])


def switch_backs(rows):
    """(switches into harmonia, after it was left; cells with at least one) over the rows."""
    n = [sum(s["to"] == "harmonia" for s in r["switch_log"]) for r in rows]
    return sum(n), sum(x > 0 for x in n)


def compare(groups, out=sys.stdout):
    """Per (signal, portfolio) group and HSS: the normalized geomean per seed, switches, switch-backs
    into harmonia, against the group (H, 5) on the same traces."""
    p = lambda *a: print(*a, file=out)
    base = groups.get(("H", 5))
    for key, rows in groups.items():
        for h in ("perf", "cost", "tri", "quad"):
            rs = [r for r in rows if r["hss"] == h]
            if not rs:
                continue
            seeds = sorted({r["seed"] for r in rs})
            traces = list(dict.fromkeys(r["trace"] for r in rs))
            mine = [normalized(rs, h, s, traces) for s in seeds]
            line = "%s P%d %-5s %d traces: guard/harmonia geomean per seed %s" % (
                key[0], key[1], h, len(traces), " ".join("%.4f" % x if x else "-" for x in mine))
            sw, (sb, sbc) = sum(r["switches"] for r in rs), switch_backs(rs)
            line += "; switches %d, switch-backs into harmonia %d in %d cells" % (sw, sb, sbc)
            if base and key != ("H", 5):
                bs = [r for r in base if r["hss"] == h and r["trace"] in traces]
                ref = [normalized(bs, h, s, traces) for s in seeds]
                if all(ref) and all(mine):
                    b_sb = switch_backs([r for r in bs if r["seed"] in seeds])
                    line += "\n    vs H P5 %s; better on every seed: %s; mean %.4f vs %.4f; switches %d vs %d, " \
                            "switch-backs %d vs %d (removed %d)" % (
                                " ".join("%.4f" % x for x in ref), all(m < r for m, r in zip(mine, ref)),
                                sum(mine) / len(mine), sum(ref) / len(ref), sw,
                                sum(r["switches"] for r in bs if r["seed"] in seeds), sb, b_sb[0], b_sb[0] - sb)
            wall = [r["guard_wall_s"] for r in rs]
            line += "\n    simulator time in the guard / harmonia's: %.2f" % (
                sum(sum(w.values()) for w in wall) / sum(w["harmonia"] for w in wall))
            p(line)


@gs.study_main("guard_signal")
def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0],
                                 epilog="Rule and figures: results/diagnosis/guard-signal.txt")
    gs.add_grid_args(ap, "guard_study's tables per (signal, portfolio) and the comparison with rule H (rows "
                     "without a signal) instead of running")
    ap.add_argument("--signal", choices=sorted(SIGNALS), default="H", help="the switching decision (default H)")
    ap.add_argument("--portfolio", default=",".join(gs.PORTFOLIO),
                    help="members, the first active at the start (p9: [F]'s nine non-learning members)")
    a = gs.parse_run_or_report(ap, argv)
    if a.report:
        groups = {}
        for r in gs.read_rows(a.report):
            groups.setdefault(label(r), []).append(r)
        for key, rs in groups.items():
            print("\n######## signal %s, portfolio harmonia + %d" % key)
            gr.report(rs)
        print("\n######## normalized: per seed, geomean over the traces of guard / harmonia alone (same cell)")
        compare(groups)
        return 0
    seeds, hss_list, portfolio = gs.grid(a.seeds, a.hss, ",".join(P9) if a.portfolio == "p9" else a.portfolio)

    def run(trace, data, fp, h, s):
        return dict(gh.hybrid(data, fp, h, s, portfolio, decide=SIGNALS[a.signal]), signal=a.signal)
    gs.write_cells(a.out, a.trace, hss_list, seeds, run, a.allow_evaluation)
    return 0


if __name__ == "__main__":
    sys.exit(main())
