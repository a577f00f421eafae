#!/usr/bin/env python3
"""Is the hindsight credit right?  Each migration decision's credit (ctypes_core/hindsight.c,
hbl_evalq_benefit: what the migration agent's m_reward=2 learns from) set beside its true value,
measured by replaying the trace with that one decision flipped (results/diagnosis/credit.txt).

A non-learning policy's replay is deterministic, so for one decision D of a replay
    truth(D) = total latency without D - total latency with D     (ns; > 0: D paid back)
where the replay "without" drops a promotion the policy made, and the replay "with" makes one it
did not (hbl_sim_diag_flip).  Everything the decision changes is in it: the page's hits, the copy's
interference with foreground I/O, the page it pushed off and that page's later misses, and what the
policy did differently afterwards.  truth_h is the same difference over the requests from D to the
end of its credit's horizon only.  The credit is hbl_evalq_benefit(to = 0) of the decision queued as
the agent queues its candidates (hbl_sim_diag_judge), in the replay where the decision was as the
policy made it, and with `space` (the agent's value of a page of the full fastest device: the mean
over its coldest pages of what staying there saved, their credit as judged the same way) as the
agent computes it.

The policy is HPS (ctypes_core/policies/hps.c): its only promotions are the moves its migrate()
asks for at the end of each round, as harmonia's migration agent's are (harmonia runs with
place_reads=0: nothing promotes a page that the migration agent leaves), it promotes hundreds per
1,000 requests (lru's promote-on-read would be the read admission's credit, HBL_JUDGE_READ, not the
migration agent's), and a page it leaves stays where it is until a later round moves it.

Decisions sampled (--samples per kind, after the first 10% of the trace): "promoted", moves to
the fastest device HPS made; "left", pages of a slower device read or written in the round before,
that HPS did not move.  Variants recomputed from the same judged decisions, to attribute the gap:
copy charged at bg (the credit), at 1 (all of a copy's device time is foreground time) and at 0;
the push-off term (copy down + space) dropped; horizon x0.5 and x2 (judged again).

    .venv/bin/python scripts/credit_check.py --hss perf,cost --samples 60 \\
        --trace synth:phases:requests=200000,seed=2 --trace workload:lmdb-kv@500000-750000
"""
import argparse
import json
import random
import sys

import numpy as np

from hbl import record
from hbl.core import ffi, lib
from hbl.devices import load_hss
from hbl.errors import HblError
from hbl.sim import Simulator, footprint_pages
from hbl.trace import open_trace
from hbl.trace import split

COLD = 2 ** 64 - 1          # hbl_api.h HBL_DIAG_COLD
NCOLD = 32                  # cold pages judged per sampled round: the agent's m_candidates 64, half cold
POLICIES = ("hps", "lru")
SCALES = (0.5, 1.0, 2.0)    # horizon x characteristic time
WINDOW = 10                 # requests per timeline row: truth_h's resolution


def load(trace):
    """A training workload's requests, in memory, and its footprint in pages."""
    if not any(f in split.TRAINING for f in split.families(trace)):
        raise HblError("%s: not a training workload (hbl/trace/split.py TRAINING); this diagnosis decides "
                       "nothing on evaluation workloads" % trace)
    data = record.concat(list(open_trace(trace)))
    return data, footprint_pages([data])


class Run:
    """One replay of `policy`, one decision flipped (flip = (round, page, to)) and decisions judged
    (judge = [(round, page)], horizon `scale`): its total latency, per-window latency sums, counters,
    the moves it made and the credits of the judged decisions (cold: the fastest device's pages)."""

    def __init__(self, policy, cfg, caps, data, flip=None, judge=(), scale=1.0):
        sim = Simulator(cfg, policy, caps, timeline_every=WINDOW)
        if lib.hbl_sim_diag_start(sim.sim):
            raise HblError("hbl_sim_diag_start refused")
        if flip and lib.hbl_sim_diag_flip(sim.sim, flip[0], flip[1], flip[2]):
            raise HblError("hbl_sim_diag_flip refused")
        for rnd, page in judge:
            if lib.hbl_sim_diag_judge(sim.sim, rnd, page, scale):
                raise HblError("hbl_sim_diag_judge refused")
        sim.feed(data)
        cfg_n = len(cfg.devices)
        st = sim.stats()
        self.latency = st.latency_sum_ns
        self.counters = dict(fast_reads=st.fast_read_hits, promotions=st.promotions, evictions=st.evictions,
                             bg_wait=st.foreground_wait_ns, sync_wait=st.sync_wait_ns)
        n = lib.hbl_sim_timeline(sim.sim, ffi.NULL, 0)
        rows = ffi.new("struct hbl_timeline_row[]", max(n, 1))
        lib.hbl_sim_timeline(sim.sim, rows, n)
        self.cum = np.concatenate([[0.0], np.cumsum([rows[i].avg_latency_ns * WINDOW for i in range(n)])])
        n = lib.hbl_sim_diag_moves(sim.sim, ffi.NULL, 0)
        mv = ffi.new("struct hbl_diag_move[]", max(n, 1))
        lib.hbl_sim_diag_moves(sim.sim, mv, n)
        self.moves = [(mv[i].round, mv[i].page, getattr(mv[i], "from"), mv[i].to) for i in range(n)]
        n = lib.hbl_sim_diag_credits(sim.sim, ffi.NULL, 0)
        cr = ffi.new("struct hbl_diag_credit[]", max(n, 1))
        lib.hbl_sim_diag_credits(sim.sim, cr, n)
        self.credits, self.cold = {}, []
        for c in (cr[i] for i in range(n)):
            v = dict(src=getattr(c, "from"), kind=c.kind, full=c.full, horizon=c.horizon, accesses=c.accesses,
                     at=c.credited_at, ended=c.ended, cost=list(c.cost)[:cfg_n], bg=c.bg,
                     benefit=list(c.benefit)[:cfg_n], copy=list(c.copy)[:cfg_n], chain=list(c.chain)[:cfg_n])
            if c.cold:
                self.cold.append(v)
            else:
                self.credits[(c.round, c.page)] = v

    def upto(self, req):
        """Latency of the requests before request `req` (to WINDOW requests)."""
        return self.cum[min(req // WINDOW, len(self.cum) - 1)]


def benefit(c, to=0, space=0.0, bg=None, push=True):
    """hbl_evalq_benefit for kind MOVE, recomputed from its parts (checked against C's at space 0)."""
    bg = c["bg"] if bg is None else bg
    b = c["cost"][c["src"]] - c["cost"][to] - bg * c["copy"][to]
    if push and c["full"] & (1 << to) and to < len(c["cost"]) - 1:   # a page pushed off `to`, copied down
        b -= bg * c["chain"][to] + space
    return b


def sample(base, data, n_req, k, rng, migrates):
    """k promotions the policy made and, for a policy that migrates, 3k (round, page) candidates it
    left (pages touched the round before)."""
    every = 1000
    lo = n_req // 10
    prom = [(r, p) for r, p, f, t in base.moves if t == 0 and f > 0 and r >= lo]
    prom = rng.sample(prom, min(k, len(prom)))
    if not migrates:
        return prom, []
    moved = {(r, p) for r, p, f, t in base.moves}
    ps = 4096
    left = set()
    rounds = [r for r in range(lo, n_req, every) if r >= every]
    for _ in range(20 * k):
        if len(left) >= 3 * k or not rounds:
            break
        r = rng.choice(rounds)
        i = rng.randrange(r - every, r)
        first = int(data["offset"][i]) // ps
        if (r, first) not in moved:
            left.add((r, first))
    return prom, sorted(left)


def pages_of(data, ps=4096):
    """Each request's first and end page (end exclusive)."""
    first = data["offset"] // ps
    return first, np.maximum((data["offset"] + data["length"] + ps - 1) // ps, first + 1)


def next_access(first, end, page, after):
    """Index of the first request after `after` that touches `page`, or None."""
    hit = np.nonzero((first[after + 1:] <= page) & (end[after + 1:] > page))[0]
    return int(hit[0]) + after + 1 if len(hit) else None


def space_of(run):
    """The agent's space[0]: what staying saved its cold candidates, cost[1] - cost[0] (rl.c credit;
    the agent's is a running mean over the last 256, this the mean over the sampled rounds')."""
    v = [c["cost"][1] - c["cost"][0] for c in run.cold if not c["ended"]]
    return float(np.mean(v)) if v else 0.0, len(v)


def check(policy, hss, trace, k, seed, out):
    """Sample decisions of one replay, judge them, flip each: one JSON line of every decision to out."""
    cfg = load_hss(hss)
    data, fp = load(trace)
    caps = cfg.capacity_pages(fp, 4096)
    n_req = len(data)
    base = Run(policy, cfg, caps, data)
    rng = random.Random(seed)
    prom, left = sample(base, data, n_req, k, rng, policy == "hps")
    cold = [(r, COLD - j) for r in sorted({r for r, _ in prom + left}) for j in range(NCOLD)]
    judged = {s: Run(policy, cfg, caps, data, judge=prom + left + cold, scale=s) for s in SCALES}
    one = judged[1.0]
    if abs(one.latency - base.latency) > 1e-6 * base.latency:
        raise AssertionError("judging changed the replay: %.0f against %.0f ns" % (one.latency, base.latency))
    space, nspace = space_of(one)
    rows = []
    first, end_page = pages_of(data)
    left_ok = [d for d in left if d in one.credits and one.credits[d]["src"] > 0][:k]
    for kind, decisions in (("promoted", prom), ("left", left_ok)):
        for rnd, page in decisions:
            c = one.credits.get((rnd, page))
            if c is None:
                continue
            if abs(benefit(c) - c["benefit"][0]) > 1e-6 * (1 + abs(c["benefit"][0])):
                raise AssertionError("the recomputed credit is not hbl_evalq_benefit's: %r" % c)
            flip = Run(policy, cfg, caps, data, flip=(rnd, page, -1 if kind == "promoted" else 0))
            with_, without = (base, flip) if kind == "promoted" else (flip, base)
            made = any(m[0] == rnd and m[1] == page and m[3] == 0 for m in with_.moves)
            end = min(c["at"], n_req)
            nxt = next_access(first, end_page, page, rnd)
            row = dict(kind=kind, judged=("move", "read")[c["kind"]], round=rnd, page=page, ended=c["ended"],
                       horizon=c["horizon"], accesses=c["accesses"], full=c["full"] & 1, bg=c["bg"],
                       made=made, never=nxt is None, next=(nxt - rnd) if nxt is not None else None,
                       truth=without.latency - with_.latency,
                       truth_h=(without.upto(end) - without.upto(rnd)) - (with_.upto(end) - with_.upto(rnd)),
                       credit=benefit(c, space=space), credit_c=c["benefit"][0],
                       reads=c["cost"][c["src"]] - c["cost"][0], copy=c["bg"] * c["copy"][0],
                       push=(c["bg"] * c["chain"][0] + space) if c["full"] & 1 else 0.0,
                       bg1=benefit(c, space=space, bg=1.0), bg0=benefit(c, space=space, bg=0.0),
                       nopush=benefit(c, push=False))
            for s in SCALES:
                cs = judged[s].credits.get((rnd, page))
                row["h%g" % s] = benefit(cs, space=space) if cs else float("nan")
            row.update({"d_" + key: without.counters[key] - with_.counters[key] for key in with_.counters})
            rows.append(row)
    out.write(json.dumps(dict(policy=policy, hss=hss, trace=trace, requests=n_req, space=space, nspace=nspace,
                              base_latency=base.latency, promotions=base.counters["promotions"],
                              rows=rows)) + "\n")
    out.flush()
    return rows


GROUPS = (("all", lambda r: True), ("unread", lambda r: r["accesses"] == 0),
          ("read", lambda r: r["accesses"] > 0))
VARIANTS = (("credit", "the credit (space as the agent's)"), ("nopush", "no push-off term"),
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


def report(path, out=sys.stdout):
    """The tables of results/diagnosis/credit.txt from the JSON lines of a run (us per decision)."""
    runs = [json.loads(line) for line in open(path)]
    w = out.write
    w("per (policy, HSS, trace, decisions): n; true value mean (standard error); credit mean; bias = credit - truth,\n"
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


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--hss", default="perf,cost")
    ap.add_argument("--policy", default="hps", choices=POLICIES)
    ap.add_argument("--trace", action="append")
    ap.add_argument("--report", metavar="JSONL", help="print the tables of a run's --out file instead")
    ap.add_argument("--samples", type=int, default=40, help="decisions per kind per (HSS, trace)")
    ap.add_argument("--seed", type=int, default=1, help="which decisions are sampled")
    ap.add_argument("--out", default="-", help="JSON lines of every decision (default stdout)")
    a = ap.parse_args(argv)
    if a.report:
        return report(a.report)
    if not a.trace:
        ap.error("--trace is required (or --report)")
    out = sys.stdout if a.out == "-" else open(a.out, "w")
    try:
        for hss in a.hss.split(","):
            for t in a.trace:
                check(a.policy, hss, t, a.samples, a.seed, out)
    except HblError as e:
        sys.exit("credit_check: %s" % e)


if __name__ == "__main__":
    main()
