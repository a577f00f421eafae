#!/usr/bin/env python3
"""The tables of the credit check (results/diagnosis/credit.txt, waits.txt) from the JSON lines a run
of scripts/credit_check.py wrote: what the measured decisions say, pooled and per trace.  Reads its
files only; nothing is simulated here.  Called through credit_check.py's --report* options.
"""
import collections
import json
import sys

import numpy as np

GROUPS = (("all", lambda r: True), ("unread", lambda r: r["accesses"] == 0),
          ("read", lambda r: r["accesses"] > 0))
VARIANTS = (("credit", "the credit (space as the agent's)"), ("nopush", "no push-off term"),
            ("clean", "the page pushed off copied down only if dirty"),
            ("tonext", "the accesses until the next decision on the page only"), ("both", "tonext and clean"),
            ("bg0", "copies free"), ("bg1", "copies at full device time"), ("h0.5", "horizon x0.5"),
            ("h2", "horizon x2"))


def summary(rows, key="credit"):
    est = np.array([r[key] for r in rows], dtype=float) / 1e3
    tru = np.array([r["truth"] for r in rows], dtype=float) / 1e3
    ok = np.isfinite(est)
    est, tru = est[ok], tru[ok]
    n = len(est)
    if n < 3:
        return None
    d = est - tru
    rank = lambda a: np.argsort(np.argsort(a, kind="stable"), kind="stable")
    r = float(np.corrcoef(est, tru)[0, 1]) if est.std() > 0 and tru.std() > 0 else float("nan")
    rho = float(np.corrcoef(rank(est), rank(tru))[0, 1]) if est.std() > 0 and tru.std() > 0 else float("nan")
    slope = float(np.polyfit(est, tru, 1)[0]) if est.std() > 0 else float("nan")
    return dict(n=n, truth=tru.mean(), se=tru.std(ddof=1) / np.sqrt(n), est=est.mean(), bias=d.mean(),
                median=float(np.median(d)), r=r, rho=rho, slope=slope, pays_true=(tru > 0).mean(),
                pays_est=(est > 0).mean())


def opened(path, out, legend):
    """A run's JSON lines, and a writer to out that has written the tables' legend."""
    out.write(legend)
    return [json.loads(line) for line in open(path)], out.write


def report(path, out=sys.stdout):
    """The tables of [A] of results/diagnosis/credit.txt from the JSON lines of a --singles run."""
    runs, w = opened(path, out,
      "per (policy, HSS, trace, decisions): n; true value mean (standard error); credit mean; bias = credit - truth,\n"
      "mean and median; Pearson r and Spearman rho of credit and truth; slope of truth on credit (1 if right);\n"
      "share of decisions that pay back (value > 0), truly and by the credit.  us per decision; left out:\n"
      "decisions whose horizon the trace's end cut, and forced moves the full background queue refused.\n\n")
    fmt = "%-4s %-5s %-34s %-9s %-6s %4d %9.1f (%6.1f) %9.1f %9.1f %9.1f %6.2f %6.2f %6.2f   %4.2f %4.2f\n"
    w("%-4s %-5s %-34s %-9s %-6s %4s %9s %8s %9s %9s %9s %6s %6s %6s   %4s %4s\n" % (
        "pol", "hss", "trace", "decision", "group", "n", "truth", "(se)", "credit", "bias", "median", "r", "rho",
        "slope", "pays", "cred"))
    pooled = {}
    for run in runs:
        rows = [r for r in run["rows"] if not r["ended"] and r["made"]]
        for kind in ("promoted", "left"):
            for g, keep in GROUPS:
                sel = [r for r in rows if r["kind"] == kind and keep(r)]
                pooled.setdefault((run["policy"], run["hss"], kind, g), []).extend(sel)
                s = summary(sel)
                if s:
                    w(fmt % (run["policy"], run["hss"], run["trace"][:34], kind, g, s["n"], s["truth"], s["se"],
                             s["est"], s["bias"], s["median"], s["r"], s["rho"], s["slope"], s["pays_true"],
                             s["pays_est"]))
    w("\npooled over traces\n")
    for (pol, hss, kind, g), sel in sorted(pooled.items()):
        s = summary(sel)
        if s:
            w(fmt % (pol, hss, "(all traces)", kind, g, s["n"], s["truth"], s["se"], s["est"], s["bias"],
                     s["median"], s["r"], s["rho"], s["slope"], s["pays_true"], s["pays_est"]))
    w("\nattribution, pooled over traces: bias (mean of estimate - truth, us) of the credit with one term changed\n")
    w("%-4s %-5s %-9s %-6s %s\n" % ("pol", "hss", "decision", "group", " ".join("%12s" % v for v, _ in VARIANTS)))
    for (pol, hss, kind, g), sel in sorted(pooled.items()):
        cells = [summary(sel, v) for v, _ in VARIANTS]
        if cells[0]:
            w("%-4s %-5s %-9s %-6s %s\n" % (pol, hss, kind, g, " ".join("%12.1f" % c["bias"] if c else "%12s" % "-"
                                                                         for c in cells)))
    w("  variants: %s\n" % "; ".join("%s = %s" % v for v in VARIANTS))
    w("\nthe true weight of each term of the credit, pooled over traces: least squares of truth on the credit's\n"
      "terms, truth = a + w_reads * reads - w_copy * copy - w_push * push (a right credit: 1, 1, 1, a = 0);\n"
      "(standard errors); reads = cost[from] - cost[0] over the horizon, copy = bg * the copy's device time,\n"
      "push = bg * the copy down of the page pushed off + space, when the fastest device was full\n")
    w("%-4s %-5s %-9s %5s %16s %16s %16s %16s\n" % ("pol", "hss", "decision", "n", "a (us)", "w_reads", "w_copy",
                                                  "w_push"))
    for (pol, hss, kind, g), sel in sorted(pooled.items()):
        if g != "all" or len(sel) < 8:
            continue
        fit = weights(sel)
        w("%-4s %-5s %-9s %5d %s\n" % (pol, hss, kind, len(sel), " ".join(
            "%16s" % ("%.2f (%.2f)" % (v, e) if np.isfinite(v) else "-") for v, e in fit)))


SET_VARIANTS = ("credit", "nopush", "clean", "tonext", "both", "bg0", "bg1", "h0.5", "h2")


def per_decision(lines):
    """Σ over the sets of (truth, credit terms, counters) / Σ n: us (counters as they are) per
    decision, and the standard error of the truth over the repetitions."""
    n = sum(x["n"] for x in lines)
    v = dict(n=n, truth=sum(x["truth"] for x in lines) / n / 1e3)
    for k in set().union(*(x["sums"] for x in lines)):
        v[k] = sum(x["sums"].get(k, float("nan")) for x in lines) / n / (
            1 if k in ("accesses", "acc_next", "full", "bg", "victim_clean") else 1e3)
    for k in lines[0]["d"]:
        v["d_" + k] = sum(x["d"][k] for x in lines) / n / (1e3 if "wait" in k else 1)
    reps = {}
    for x in lines:
        a = reps.setdefault(x["rep"], [0.0, 0])
        a[0] += x["truth"] / 1e3
        a[1] += x["n"]
    per = np.array([s / k for s, k in reps.values()])
    v["se"] = per.std(ddof=1) / np.sqrt(len(per)) if len(per) > 1 else float("nan")
    return v


def report_sets(path, out=sys.stdout):
    """The tables of results/diagnosis/credit.txt from the JSON lines of a sets run."""
    lines, w = opened(path, out,
      "us per decision, sets of decisions flipped together (Σ over repetitions / Σ decisions); truth: what the\n"
      "decisions saved (> 0: they paid back), se its standard error over the repetitions; credit: the mean\n"
      "credit; bias = credit - truth; acc: accesses in the horizon the credit counted; hits: page reads on the\n"
      "fastest device the decisions truly bought; waits: background and synchronous waits they truly cost;\n"
      "groups: unread (no access in the horizon), read- / read+ (accessed, credit < 0 / >= 0).\n\n")
    head = "%-4s %-5s %-30s %-8s %-6s %5s %8s %7s %8s %8s %6s %6s %7s %7s %7s %7s\n"
    fmt = "%-4s %-5s %-30s %-8s %-6s %5d %8.1f %7.1f %8.1f %8.1f %6.2f %6.2f %7.1f %7.1f %7.1f %7.1f\n"
    w(head % ("pol", "hss", "trace", "decision", "group", "n", "truth", "se", "credit", "bias", "acc", "hits",
              "reads", "copy", "push", "waits"))
    keys = sorted({(x["policy"], x["hss"], x["trace"], x["kind"], x["group"]) for x in lines})
    pooled = {}
    for k in keys:
        sel = [x for x in lines if (x["policy"], x["hss"], x["trace"], x["kind"], x["group"]) == k]
        for g in (k[4], "all"):
            pooled.setdefault((k[0], k[1], k[3], g), []).extend(sel)
        pooled.setdefault((k[0], k[1], k[2], k[3], "all"), []).extend(sel)
        v = per_decision(sel)
        w(fmt % (k[0], k[1], k[2][:30], k[3], k[4], v["n"], v["truth"], v["se"], v["credit"], v["credit"] - v["truth"],
                 v["accesses"], -v["d_fast_reads"] if k[3] == "promoted" else -v["d_fast_reads"], v["reads"], v["copy"],
                 v["push"], v["d_bg_wait"] + v["d_sync_wait"]))
    w("\nall groups of a trace together\n")
    for k, sel in sorted(pooled.items()):
        if len(k) == 5:
            v = per_decision(sel)
            w(fmt % (k[0], k[1], k[2][:30], k[3], "all", v["n"], v["truth"], v["se"], v["credit"],
                     v["credit"] - v["truth"], v["accesses"], -v["d_fast_reads"], v["reads"], v["copy"], v["push"],
                     v["d_bg_wait"] + v["d_sync_wait"]))
    w("\npooled over traces (every decision one weight)\n")
    for k, sel in sorted(pooled.items()):
        if len(k) == 4:
            v = per_decision(sel)
            w(fmt % (k[0], k[1], "(all traces)", k[2], k[3], v["n"], v["truth"], v["se"], v["credit"],
                     v["credit"] - v["truth"], v["accesses"], -v["d_fast_reads"], v["reads"], v["copy"], v["push"],
                     v["d_bg_wait"] + v["d_sync_wait"]))
    w("\nattribution, pooled over traces: bias (credit - truth, us per decision) of the credit with one term changed\n")
    w("%-4s %-5s %-8s %-6s %s\n" % ("pol", "hss", "decision", "group", " ".join("%9s" % v for v in SET_VARIANTS)))
    for k, sel in sorted(pooled.items()):
        if len(k) == 4:
            v = per_decision(sel)
            w("%-4s %-5s %-8s %-6s %s\n" % (k + (" ".join("%9.1f" % (v.get(x, float("nan")) - v["truth"])
                                                          for x in SET_VARIANTS),)))
    w("  %s\n" % "; ".join("%s = %s" % x for x in VARIANTS))
    w("\nthe true weight of each term, pooled over traces and groups: least squares over the sets of\n"
      "truth = w_reads Σreads - w_copy Σcopy - w_push Σpush (a right credit: each w = 1; the copy's charge is\n"
      "about the same for every decision, so w_copy is also what a decision costs whatever it is)\n")
    for pk in sorted({(x["policy"], x["hss"]) for x in lines}):
        for kind in ("promoted", "left"):
            sel = [x for x in lines if (x["policy"], x["hss"], x["kind"]) == pk + (kind,)]
            if len(sel) < 6:
                continue
            fit = set_weights(sel)
            w("%-4s %-5s %-8s sets %3d  w_reads %s  w_copy %s  w_push %s\n" % (
                pk + (kind, len(sel)) + tuple("%.2f (%.2f)" % f if np.isfinite(f[0]) else "-" for f in fit[1:])))


def report_waits(path, out=sys.stdout):
    """results/diagnosis/waits.txt: the waits column of the sets split by device and by what the
    foreground waited behind, pooled over traces (and per trace for the groups whose waits are 2 se
    from 0)."""
    lines, w = opened(path, out,
      "us (counts: per decision) per flipped decision, without the group - with it (> 0: the decisions saved\n"
      "it); waits = bg + sync as credit.txt's column, se over the repetitions; bgR d / bgW d: foreground\n"
      "waits on device d behind a background read / write (two devices: bgW0 a promotion's copy, bgR1 a\n"
      "move's copy read, bgR0 + bgW1 an eviction's copy); sync: requests behind a full queue drained; drW d:\n"
      "writes drained on d (count); sbusy: device time of the drains; fgq: foreground waits behind foreground\n"
      "I/O; fgR1: foreground reads on device 1 (drains excluded); bgio d: background I/Os started on d;\n"
      "wbS / drS: write-back pages on the slowest device written in the background / drained (wbS+drS: all\n"
      "of them); served0: requests served by the fastest device alone; evict: evictions.\n\n")
    ndev = max(int(k[7]) for x in lines for k in x["d"] if k[:7] == "wait_bg" and k[7].isdigit()) + 1
    cols = [("waits", lambda v: v["d_bg_wait"] + v["d_sync_wait"]), ("se", None)]
    for d in range(ndev):
        cols += [("bgR%d" % d, lambda v, d=d: v["d_wait_bg%dr" % d]), ("bgW%d" % d, lambda v, d=d: v["d_wait_bg%dw" % d])]
    cols += [("sync", lambda v: v["d_sync_wait"])]
    for d in range(1, ndev):
        cols += [("drW%d" % d, lambda v, d=d: v["d_drainio%dw" % d]), ("sbusy%d" % d, lambda v, d=d: v["d_wait_syncbusy%d" % d])]
    cols += [("fgq", lambda v: sum(v["d_wait_fg%d" % d] for d in range(ndev)))]
    cols += [("fgR1", lambda v: v["d_fgio1r"] - v["d_drainio1r"])]
    for d in range(ndev):
        cols += [("bgio%d" % d, lambda v, d=d: v["d_bgio%dr" % d] + v["d_bgio%dw" % d])]
    slowest = lambda v: 2 if "d_bgpg2w" in v else 1
    cols += [("wbS", lambda v: v["d_bgpg%dw" % slowest(v)]), ("drS", lambda v: v["d_drainpg%dw" % slowest(v)]),
             ("wbS+drS", lambda v: v["d_bgpg%dw" % slowest(v)] + v["d_drainpg%dw" % slowest(v)]),
             ("served0", lambda v: v["d_served0"]), ("evict", lambda v: v["d_evictions"])]
    head = "%-4s %-5s %-22s %-8s %-6s %5s %8s %7s " % ("pol", "hss", "trace", "decision", "group", "n", "truth", "se")
    w(head + " ".join("%8s" % c for c, _ in cols) + "\n")

    def row(key, sel):
        v = collections.defaultdict(float, per_decision(sel))
        cells = []
        for c, f in cols:
            if c == "se":
                cells.append("%8.1f" % waits_se(sel))
            else:
                cells.append("%8.1f" % f(v))
        w("%-4s %-5s %-22s %-8s %-6s %5d %8.1f %7.1f " % (key + (v["n"], v["truth"], v["se"])) + " ".join(cells) + "\n")
        return v

    pooled, per = {}, {}
    for x in lines:
        for g in (x["group"], "all"):
            pooled.setdefault((x["policy"], x["hss"], "(all traces)", x["kind"], g), []).append(x)
        per.setdefault((x["policy"], x["hss"], x["trace"][:22], x["kind"], x["group"]), []).append(x)
    w("pooled over traces\n")
    for k, sel in sorted(pooled.items()):
        row(k, sel)
    w("\nper trace, groups whose waits are 2 se from 0\n")
    for k, sel in sorted(per.items()):
        v = per_decision(sel)
        se = waits_se(sel)
        if np.isfinite(se) and abs(v["d_bg_wait"] + v["d_sync_wait"]) > 2 * se:
            row(k, sel)


MEAS = (("meas", "credit", "pushbg", "wpush", "q_h", "s_h"), ("meas+tonext", "tonext", "pushbg", "wpush", "q_n", "s_n"),
        ("meas+both", "both", "pushbg_c", "wpush_c", "q_n", "s_n"))


def meas_variants(v):
    """The credit with the waits term (results/diagnosis/waits.txt), from a set's per-decision means:
    the copy's and the push-off's charges (bg x device time) replaced by what background I/O of their
    kind has cost the foreground so far (wcopy, wpush), and the accesses' queueing and synchronous
    waits on the page's device less the fastest's added (q + s); alone, with tonext (F1), with tonext
    and clean (F2)."""
    out = {}
    for name, base, pushbg, wpush, q, sy in MEAS:
        if all(k in v for k in (base, pushbg, wpush, q, sy, "wcopy")):
            out[name] = v[base] + v["copy"] - v["wcopy"] + v[pushbg] - v[wpush] + v[q] + v[sy]
    return out


STEP1 = ("credit", "clean", "tonext", "both", "meas", "meas+tonext", "meas+both")


def report_step1(paths, out=sys.stdout):
    """Step (i) of credit.txt's rule for the waits term: pooled bias (all groups) per policy and HSS,
    and the groups (pooled over traces, and per trace) whose truth is 2 se from 0 and whose sign a
    variant gets wrong where the credit got it right."""
    lines = [json.loads(line) for p in paths for line in open(p)]
    w = out.write
    w("pooled bias (credit - truth, us per decision, all groups of a kind: credit.txt's step (i) figures are\n"
      "the promoted rows); |bias| against the credit's\n")
    w("%-4s %-5s %-8s %6s %9s %s\n" % ("pol", "hss", "decision", "n", "truth", " ".join("%12s" % v for v in STEP1)))
    flips = {v: [] for v in STEP1}
    groups = {}
    for x in lines:
        groups.setdefault((x["policy"], x["hss"], x["kind"]), []).append(x)
        groups.setdefault((x["policy"], x["hss"], "(all)", x["kind"], x["group"]), []).append(x)
        groups.setdefault((x["policy"], x["hss"], x["trace"][:30], x["kind"], x["group"]), []).append(x)
    for k, sel in sorted(groups.items()):
        v = per_decision(sel)
        v.update(meas_variants(v))
        if len(k) == 3:
            w("%-4s %-5s %-8s %6d %9.1f %s\n" % (k[0], k[1], k[2], v["n"], v["truth"], " ".join(
                "%12.1f" % (v[x] - v["truth"]) if x in v else "%12s" % "-" for x in STEP1)))
            continue
        if not (np.isfinite(v["se"]) and abs(v["truth"]) > 2 * v["se"]):
            continue
        right = np.sign(v["credit"]) == np.sign(v["truth"])
        for x in STEP1:
            if x in v and right and np.sign(v[x]) != np.sign(v["truth"]):
                flips[x].append("%s %s %s %s %s (truth %.1f, se %.1f, credit %.1f, %s %.1f)" % (k + (v["truth"], v["se"], v["credit"], x, v[x])))
    w("\ngroups whose truth is 2 se from 0 (pooled over traces: trace '(all)'; and per trace) whose sign a variant gets\n"
      "wrong where the credit got it right\n")
    for x in STEP1[1:]:
        w("  %-12s %d%s\n" % (x, len(flips[x]), "".join("\n      " + f for f in flips[x])))


def report_predict(paths, out=sys.stdout):
    """Rule (b) of results/diagnosis/waits.txt: the waits column of the groups (pooled over traces) whose
    waits are 2 se from 0, against what the term's parts predict from what the simulator knew: -wcopy
    - wpush + the accesses' queueing and synchronous waits (over the horizon: pred_h; until the next
    decision: pred_n; and with the push-off charged only for a dirty page: pred_n_c); "ok" when the sign
    is right and the size within a factor 2.  bg-charge: the credit's own -copy - push (bg x time)."""
    lines = [json.loads(line) for p in paths for line in open(p)]
    w = out.write
    pooled = collections.defaultdict(list)
    for x in lines:
        pooled[(x["policy"], x["hss"], x["kind"], x["group"])].append(x)
    w("%-24s %6s %9s %8s | %9s %9s %9s %9s %9s | %9s    %9s    %9s\n" % (
        "", "n", "waits", "se", "-wcopy", "-wpush", "q_h+s_h", "q_n+s_n", "bg-charge", "pred_h", "pred_n", "pred_n_c"))
    for k, sel in sorted(pooled.items()):
        v = collections.defaultdict(float, per_decision(sel))
        wt = v["d_bg_wait"] + v["d_sync_wait"]
        se = waits_se(sel)
        if not (np.isfinite(se) and abs(wt) > 2 * se):
            continue
        preds = [-v["wcopy"] - v["wpush"] + v["q_h"] + v["s_h"], -v["wcopy"] - v["wpush"] + v["q_n"] + v["s_n"],
                 -v["wcopy"] - v["wpush_c"] + v["q_n"] + v["s_n"]]
        ok = lambda p: "ok" if np.sign(p) == np.sign(wt) and 0.5 <= abs(p / wt) <= 2 else "no"
        w("%-24s %6d %9.1f %8.1f | %9.1f %9.1f %9.1f %9.1f %9.1f | %s\n" % (
            " ".join(k), v["n"], wt, se, -v["wcopy"], -v["wpush"], v["q_h"] + v["s_h"], v["q_n"] + v["s_n"],
            -v["copy"] - v["pushbg"], " ".join("%9.1f %2s" % (p, ok(p)) for p in preds)))


def waits_se(lines):
    """Standard error over the repetitions of the waits column (us per decision)."""
    reps = {}
    for x in lines:
        a = reps.setdefault(x["rep"], [0.0, 0])
        a[0] += (x["d"]["bg_wait"] + x["d"]["sync_wait"]) / 1e3
        a[1] += x["n"]
    per = np.array([s / k for s, k in reps.values()])
    return per.std(ddof=1) / np.sqrt(len(per)) if len(per) > 1 else float("nan")


def set_weights(lines):
    """Least squares of the sets' truth on (n, Σreads, -Σcopy, -Σpush), us."""
    rows = [dict(truth=x["truth"], reads=x["sums"]["reads"], copy=x["sums"]["copy"], push=x["sums"]["push"])
            for x in lines]
    return weights(rows, intercept=False)


def weights(rows, intercept=True):
    """Least squares of truth on (1, reads, -copy, -push), us: [(coefficient, standard error)]; a
    term that does not vary over the rows gets nan."""
    y = np.array([r["truth"] for r in rows]) / 1e3
    cols = [np.ones(len(rows)) if intercept else np.zeros(len(rows))] + [np.array([s * r[k] for r in rows]) / 1e3 for k, s in
                                   (("reads", 1), ("copy", -1), ("push", -1))]
    keep = ([0] if intercept else []) + [i for i in (1, 2, 3) if cols[i].std() > 1e-9 * (1 + abs(cols[i]).max())]
    x = np.stack([cols[i] for i in keep], axis=1)
    coef, *_ = np.linalg.lstsq(x, y, rcond=None)
    resid = y - x @ coef
    dof = max(len(y) - len(keep), 1)
    cov = np.linalg.pinv(x.T @ x) * (resid @ resid) / dof
    out = [(float("nan"), float("nan"))] * 4
    for j, i in enumerate(keep):
        out[i] = (float(coef[j]), float(np.sqrt(max(cov[j, j], 0))))
    return out
