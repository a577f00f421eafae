"""The guard study's report (results/diagnosis/guard.txt): its tables and its rule's verdict from the JSON
lines that scripts/guard_study.py (and the signal and sampled studies after it) write.  Reads rows only;
nothing is simulated."""
import sys

import numpy as np


def short(trace):
    t = trace.split(":", 1)[1] if ":" in trace else trace
    return t.split(":")[0].split("@")[0]


def geomean(xs):
    return float(np.exp(np.mean(np.log(xs))))


def report(rows, out=sys.stdout, tolerance=0.03):
    """The tables and the rule's verdict (results/diagnosis/guard.txt) from the JSON lines: decided on
    the traces with every (HSS, seed) cell present."""
    seeds = sorted({r["seed"] for r in rows})
    hss_list = [h for h in ("perf", "cost", "tri", "quad") if any(r["hss"] == h for r in rows)]
    cell = {(r["trace"], r["hss"], r["seed"]): r for r in rows}
    order = list(dict.fromkeys(r["trace"] for r in rows))
    done = [t for t in order if all((t, h, s) in cell for h in hss_list for s in seeds)]
    p = lambda *a: print(*a, file=out)
    p("seeds %s; traces with every cell: %d of %d (%s)" % (seeds, len(done), len(order), ", ".join(short(t) for t in done)))
    verdict = {}
    for h in hss_list:
        p("\n== %s: avg latency us, min-max over seeds; ideal = per-trace best member alone (no switching)" % h)
        p("%-16s %-17s %-17s %-17s %-9s %-10s %s" % ("trace", "harmonia alone", "guard", "ideal", "best",
                                                       "g/ideal", "switches (per seed) -> final"))
        within, cells = 0, 0
        for t in done:
            rs = [cell[(t, h, s)] for s in seeds]
            hm = [r["alone_us"]["harmonia"] for r in rs]
            g = [r["guard_us"] for r in rs]
            ideal = [min(r["alone_us"].values()) for r in rs]
            best = sorted({r["best_member"] for r in rs})
            ratio = [a / b for a, b in zip(g, ideal)]
            within += sum(x <= 1 + tolerance for x in ratio)
            cells += len(ratio)
            mm = lambda v: "%7.1f-%-7.1f" % (min(v), max(v))
            p("%-16s %-17s %-17s %-17s %-9s %-10s %s" % (short(t), mm(hm), mm(g), mm(ideal), "/".join(best),
                                                         "%.3f-%.3f" % (min(ratio), max(ratio)),
                                                         " ".join("%d" % r["switches"] for r in rs) + " -> " +
                                                         "/".join(sorted({r["final_active"] for r in rs}))))
        if not done:
            continue
        geo = {k: [geomean([f(cell[(t, h, s)]) for t in done]) for s in seeds]
               for k, f in (("harmonia", lambda r: r["alone_us"]["harmonia"]), ("guard", lambda r: r["guard_us"]),
                            ("ideal", lambda r: min(r["alone_us"].values())))}
        share = [(hm - g) / (hm - i) if hm != i else float("nan")
                 for hm, g, i in zip(geo["harmonia"], geo["guard"], geo["ideal"])]
        a = max(geo["guard"]) < min(geo["harmonia"])
        b = within > cells / 2
        verdict[h] = a and b
        p("geomean over %d traces per seed: harmonia %s, guard %s, ideal %s" % (
            len(done), *[" ".join("%.2f" % x for x in geo[k]) for k in ("harmonia", "guard", "ideal")]))
        p("guard / harmonia per seed: %s; share of the ideal's gain reached per seed: %s" % (
            " ".join("%.4f" % (g / hm) for g, hm in zip(geo["guard"], geo["harmonia"])),
            " ".join("%.2f" % x for x in share)))
        p("(a) max geo(guard) %.2f < min geo(harmonia) %.2f: %s" % (max(geo["guard"]), min(geo["harmonia"]), a))
        p("(b) guard within %.0f%% of the ideal on %d of %d (trace, seed) cells (> half: %s)" % (
            100 * tolerance, within, cells, b))
        sw = switch_check([cell[(t, h, s)] for t in done for s in seeds])
        if sw:
            p("switches: %d; in the next window the new active beat the member it replaced in %d (%.0f%%); "
              "geomean new/replaced %.3f; new active's first window after the handover / its own window "
              "that won the switch %.3f" % sw)
        fr = [cell[(t, h, s)] for t in done for s in seeds if "guard_uncharged_us" in cell[(t, h, s)]]
        if fr:
            un = [geomean([cell[(t, h, s)]["guard_uncharged_us"] for t in done]) for s in seeds]
            p("rule F: pages copied %d in %d switches, charge %.1f s of foreground latency in all; uncharged guard "
              "geomean per seed %s (/ harmonia %s)" % (
                  sum(r["pages_moved"] for r in fr), sum(r["switches"] for r in fr),
                  sum(r["charge_us"] for r in fr) / 1e6, " ".join("%.2f" % x for x in un),
                  " ".join("%.4f" % (u / hm) for u, hm in zip(un, geo["harmonia"]))))
            p("rule F uncharged: within %.0f%% of the ideal on %d of %d cells; the charge F could afford and still "
              "tie harmonia alone's geomean, as a share of the charge paid, per seed: %s" % (
                  100 * tolerance, sum(r["guard_uncharged_us"] <= (1 + tolerance) * min(r["alone_us"].values())
                                       for r in fr), len(fr),
                  " ".join("%.3f" % affordable([cell[(t, h, s)] for t in done], hm)
                           for s, hm in zip(seeds, geo["harmonia"]))))
        hr = [cell[(t, h, s)] for t in done for s in seeds if cell[(t, h, s)].get("rule") == "H"]
        hs = [s for r in hr for s in r["switch_log"] if "stay_us" in s]
        if hs:
            p("rule H: pages told at handovers %d in %d switches; the live copy's first window / the same member "
              "alone in that window: geomean %.3f (%d of %d above 1)" % (
                  sum(r["pages_moved"] for r in hr), len(hs), geomean([s["next_us"] / s["alone_next_us"] for s in hs]),
                  sum(s["next_us"] > s["alone_next_us"] for s in hs), len(hs)))
        hw = [cell[(t, h, s)]["guard_wall_s"] for t in done for s in seeds]
        p("shadow cost: simulator time of all members in the guard / harmonia's there: %.2f "
          "(sum over cells; the forked alone runs not counted)" % (
              sum(sum(w.values()) for w in hw) / sum(w["harmonia"] for w in hw)))
    decided = [h for h in ("perf", "cost") if h in verdict]
    if decided:
        p("\nVERDICT (perf and cost both needed): %s -> %s" % (
            ", ".join("%s %s" % (h, "pass" if verdict[h] else "fail") for h in decided),
            "BUILD (stage 2)" if len(decided) == 2 and all(verdict[h] for h in decided) else "not built"))
    return verdict


def affordable(rows, target):
    """Rule F: the share k of the charge at which geomean(uncharged + k x charge per request) = target
    (inf when nothing was charged; 0 or less when even the uncharged guard misses it)."""
    f = lambda k: geomean([r["guard_uncharged_us"] + k * r["charge_us"] / r["requests"] for r in rows]) - target
    if f(0.0) >= 0:
        return 0.0
    if not any(r["charge_us"] for r in rows):
        return float("inf")
    lo, hi = 0.0, 1.0
    while f(hi) < 0:
        hi *= 2
    for _ in range(60):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if f(mid) < 0 else (lo, mid)
    return lo


def switch_check(rows):
    """Did the switches pay?  From the per-window trail: (switches, how many the new active beat the
    member it replaced in the next window, the geomean of that ratio, the geomean of the new active's
    first window after the handover over its own window that won the switch)."""
    ratios, after = [], []
    for r in rows:
        if "window_us" not in r:
            continue
        for s in r["switch_log"]:
            k = s["after"] // r["window"]
            if k >= len(r["active"]):
                continue
            if "stay_us" in s:          # rule H: the live copy's first window / the old live one's, kept a window
                ratios.append(s["next_us"] / s["stay_us"])
                after.append(s["next_us"] / r["window_us"][s["to"]][k - 1])
                continue
            new = r["window_us"][s["to"]]
            ratios.append(new[k] / r["window_us"][s["frm"]][k])
            after.append(new[k] / new[k - 1])
    if not ratios:
        return None
    return (len(ratios), sum(x < 1 for x in ratios), 100.0 * sum(x < 1 for x in ratios) / len(ratios),
            geomean(ratios), geomean(after))
