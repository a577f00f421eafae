#!/usr/bin/env python3
"""Is the hindsight credit right?  Each migration decision's credit (ctypes_core/hindsight.c,
hbl_evalq_benefit: what m_reward=2 and read_admit 5-9 learn from) set beside its true value,
measured by replaying the trace with decisions flipped (results/diagnosis/credit.txt).

A non-learning policy's replay is deterministic, so for decisions D of a replay
    truth(D) = total latency without D - total latency with D     (ns; > 0: D paid back)
where the replay "without" drops promotions the policy made, and the replay "with" makes ones it
did not (hbl_sim_diag_flip).  Everything the decisions change is in it: the pages' hits, the
copies' interference with foreground I/O, the pages they pushed off, and what the policy did
differently afterwards.  The credit is hbl_evalq_benefit(to = 0) of each decision queued as the
agents queue theirs (hbl_sim_diag_judge), in the replay where it was as the policy made it, with
`space` (the value of a page of the full fastest device: the mean over its coldest pages of what
staying there saved, judged the same way) as the migration agent computes it.

Policies: hps (ctypes_core/policies/hps.c) promotes only at the end of a round, as harmonia's
migration agent does (place_reads=0), and a page it leaves stays where it is until a later round
moves it: its decisions are judged as the agent's moves (HBL_JUDGE_MOVE).  lru promotes every read
miss, as the best baselines do: its decisions are judged as the read admission's (HBL_JUDGE_READ).

One decision's true value in a busy replay is mostly chaos (a single skipped promotion moves the
schedule of background copies for the rest of the run: --singles shows it), and that noise does
not grow with the number of decisions flipped.  So by default (check_sets) each repetition takes a
random share of the promotions made after the first 10% of the trace (--frac; and for hps one
left page a round), splits them by what the credit says (unread in the horizon; read and credited
< 0; >= 0), flips each group at once and divides by its size.  Variants of the credit recomputed
from the same judged decisions attribute the gap (credit_report.py VARIANTS): push-off term dropped or charged only
for a dirty page, accesses only until the next decision on the page, copies free or at full device
time, horizon x0.5 and x2 (judged again).

    .venv/bin/python scripts/credit_check.py --policy hps --hss perf,cost,tri --reps 3 \\
        --trace synth:phases:requests=200000,seed=2 --trace workload:lmdb-kv@500000-750000 --out hps.jsonl
    .venv/bin/python scripts/credit_check.py --report hps.jsonl     (the tables: scripts/credit_report.py)
"""
import argparse
import json
import os
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
    if split.side(trace) != "training":
        raise HblError("%s: not a training workload (hbl/trace/split.py TRAINING); this diagnosis decides "
                       "nothing on evaluation workloads" % trace)
    data = record.concat(list(open_trace(trace)))
    return data, footprint_pages([data])


def waits_dict(w, ndev):
    """struct hbl_diag_waits as a dict: keys with "wait" in ns, the rest counts (results/diagnosis/waits.txt)."""
    out = {}
    for d in range(ndev):
        for j, rw in enumerate("rw"):
            out["wait_bg%d%s" % (d, rw)] = w.wait_bg[d][j]
            out["fgio%d%s" % (d, rw)] = w.fg_ios[d][j]
            out["bgio%d%s" % (d, rw)] = w.bg_ios[d][j]
            out["bgpg%d%s" % (d, rw)] = w.bg_pages[d][j]
            out["drainio%d%s" % (d, rw)] = w.drain_ios[d][j]
            out["drainpg%d%s" % (d, rw)] = w.drain_pages[d][j]
        out["wait_fg%d" % d] = w.wait_fg[d]
        out["wait_drainbg%d" % d] = w.drain_wait_bg[d]
    return out


def waits_split(sim, st, ndev):
    """The replay's waits split by device and by what they waited behind, its synchronous drains'
    device time, pages served per device (waits.txt)."""
    w = ffi.new("struct hbl_diag_waits *")
    if lib.hbl_sim_diag_waits(sim.sim, w):
        raise HblError("hbl_sim_diag_waits refused")
    out = waits_dict(w, ndev)
    for d in range(ndev):
        out["wait_syncbusy%d" % d] = st.sync_busy_ns[d]
        out["wait_served%d" % d] = st.served_latency_ns[d]   # latency of requests whose slowest device was d
        out["served%d" % d] = st.served_requests[d]
        out["rpages%d" % d] = st.read_pages[d]
        out["wpages%d" % d] = st.write_pages[d]
        out["wait_busy%d" % d] = st.busy_ns[d]
        out["wait_bgbusy%d" % d] = st.background_busy_ns[d]
    out["sync_evictions"] = st.sync_evictions
    out["clean_evictions"] = st.clean_evictions
    out["moves_refused"] = st.moves_refused
    return out


class Run:
    """One replay of `policy`, decisions flipped (flip or flips: (round, page, to)) and decisions judged
    (judge = [(round, page)], horizon `scale`): its total latency, per-window latency sums, counters,
    the moves it made and the credits of the judged decisions (cold: the fastest device's pages)."""

    def __init__(self, policy, cfg, caps, data, flip=None, judge=(), scale=1.0, flips=()):
        sim = Simulator(cfg, policy, caps, timeline_every=WINDOW)
        if lib.hbl_sim_diag_start(sim.sim):
            raise HblError("hbl_sim_diag_start refused")
        for f in ([flip] if flip else []) + list(flips):
            if lib.hbl_sim_diag_flip(sim.sim, f[0], f[1], f[2]):
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
        self.counters.update(waits_split(sim, st, cfg_n))
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
            v = dict(src=getattr(c, "from"), kind=c.kind, full=c.full, victim_clean=c.victim_clean,
                     horizon=c.horizon, accesses=c.accesses, at=c.credited_at, ended=c.ended,
                     cost=list(c.cost)[:cfg_n], bg=c.bg, benefit=list(c.benefit)[:cfg_n],
                     copy=list(c.copy)[:cfg_n], chain=list(c.chain)[:cfg_n],
                     cost_next=list(c.cost_next)[:cfg_n], accesses_next=c.accesses_next,
                     benefit_clean=list(c.benefit_clean)[:cfg_n],
                     qwait=list(c.qwait)[:cfg_n], qwait_next=list(c.qwait_next)[:cfg_n],
                     sync_wait_at=c.sync_wait_at, waits_at=waits_dict(c.waits_at, cfg_n))
            if c.cold:
                self.cold.append(v)
            else:
                self.credits[(c.round, c.page)] = v

    def upto(self, req):
        """Latency of the requests before request `req` (to WINDOW requests)."""
        return self.cum[min(req // WINDOW, len(self.cum) - 1)]


def benefit(c, to=0, space=0.0, bg=None, push=True, clean=False, nxt=False):
    """hbl_evalq_benefit, recomputed from its parts (checked against C's at space 0); diagnosis
    variants: clean, the page pushed off copied down only if it was dirty; nxt, the accesses until
    the next decision on the page only."""
    bg = c["bg"] if bg is None else bg
    cost = c["cost_next"] if nxt else c["cost"]
    b = cost[c["src"]] - cost[to] - bg * c["copy"][to]
    if push and c["full"] & (1 << to) and to < len(c["cost"]) - 1:   # a page pushed off `to`, copied down
        b -= bg * c["chain"][to] * (0 if clean and c.get("victim_clean") else 1) + space
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
                       nopush=benefit(c, push=False), clean=benefit(c, space=space, clean=True),
                       tonext=benefit(c, space=space, nxt=True), both=benefit(c, space=space, nxt=True, clean=True))
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


SET_GROUPS = ("unread", "read-", "read+")


def group_of(c, space):
    """A judged decision's group: its page not accessed in the horizon (unread), or accessed and
    credited below zero (read-) or at or above (read+)."""
    if c["accesses"] == 0:
        return "unread"
    return "read-" if benefit(c, space=space) < 0 else "read+"


def terms(c, space, judged, key):
    """What the credit is made of, and its variants, for one judged decision."""
    out = dict(credit=benefit(c, space=space), reads=c["cost"][c["src"]] - c["cost"][0],
               copy=c["bg"] * c["copy"][0], push=(c["bg"] * c["chain"][0] + space) if c["full"] & 1 else 0.0,
               bg1=benefit(c, space=space, bg=1.0), bg0=benefit(c, space=space, bg=0.0),
               nopush=benefit(c, push=False), clean=benefit(c, space=space, clean=True),
               tonext=benefit(c, space=space, nxt=True), both=benefit(c, space=space, nxt=True, clean=True),
               acc_next=c["accesses_next"], accesses=c["accesses"],
               full=c["full"] & 1, bg=c["bg"], victim_clean=c["victim_clean"] if c["full"] & 1 else 0)
    out.update(wait_terms(c))
    for s, run in judged.items():
        cs = run.credits.get(key)
        out["h%g" % s] = benefit(cs, space=space) if cs else out["credit"]
    return out


def wait_terms(c):
    """Raw parts of candidate waits terms of one judged decision (results/diagnosis/waits.txt), ns, from
    what the simulator knew at the decision (its running counters; nothing fitted):
      q_h / q_n   the accesses (over the horizon / until the next decision) x the mean background wait
                  per foreground I/O on the page's device, less on the fastest (at each access);
      s_h / s_n   the accesses x the synchronous waits so far per foreground I/O on the page's device,
                  less on the fastest (a device's share of the synchronous waits: its share of the
                  pages drained);
      wcopy       what the copy's background I/Os (a move: a read on its device and a write on the
                  fastest; a read's promotion: the write) cost the foreground so far on average: the
                  background waits per background I/O of that device and direction, plus the
                  synchronous waits per page queued on that device;
      wpush / wpush_c  the same of the copy down of the page pushed off the full fastest device
                  (always / only if it was dirty);
      pushbg / pushbg_c  the credit's own push charge without space: bg x the copy down (always / if
                  dirty)."""
    src, w, n = c["src"], c["waits_at"], len(c["cost"])
    pages = {d: sum(w["bgpg%d%s" % (d, rw)] + w["drainpg%d%s" % (d, rw)] for rw in "rw") for d in range(n)}
    drained = {d: w["drainpg%dr" % d] + w["drainpg%dw" % d] for d in range(n)}
    alld = sum(drained.values())
    sync = {d: c["sync_wait_at"] * drained[d] / alld if alld else 0.0 for d in range(n)}

    def per_bg(d, rw):
        k = w["bgio%d%s" % (d, rw)] + w["drainio%d%s" % (d, rw)]
        return (w["wait_bg%d%s" % (d, rw)] / k if k else 0.0) + (sync[d] / pages[d] if pages[d] else 0.0)

    def sync_per_fg(d):
        k = sum(w["fgio%d%s" % (d, rw)] - w["drainio%d%s" % (d, rw)] for rw in "rw")
        return sync[d] / k if k > 0 else 0.0

    wcopy = per_bg(0, "w") + (per_bg(src, "r") if c["kind"] == 0 else 0.0)
    full = bool(c["full"] & 1) and n > 1
    wpush = (per_bg(0, "r") + per_bg(1, "w")) if full else 0.0
    dirty = not c.get("victim_clean")
    pushbg = c["bg"] * c["chain"][0] if full else 0.0
    ds = sync_per_fg(src) - sync_per_fg(0)
    return dict(q_h=c["qwait"][src] - c["qwait"][0], q_n=c["qwait_next"][src] - c["qwait_next"][0],
                s_h=c["accesses"] * ds, s_n=c["accesses_next"] * ds,
                wcopy=wcopy, wpush=wpush, wpush_c=wpush if dirty else 0.0,
                pushbg=pushbg, pushbg_c=pushbg if dirty else 0.0)


def left_candidates(base, data, n_req, rng):
    """One (round, page) a round that the policy did not move: a page the round before touched."""
    every, lo, ps = 1000, n_req // 10, 4096
    moved = {(r, p) for r, p, f, t in base.moves}
    out = []
    for r in range(max(lo, every), n_req, every):
        for _ in range(5):
            page = int(data["offset"][rng.randrange(r - every, r)]) // ps
            if (r, page) not in moved:
                out.append((r, page))
                break
    return out


def check_sets(policy, hss, trace, reps, frac, seed, out):
    """Sets of decisions flipped together: per repetition, a random share `frac` of the promotions
    made (and for a policy that migrates, one left candidate a round), judged, split into
    SET_GROUPS, each group flipped at once: its true value is the latency difference, its credit the
    sum of its decisions'.  One JSON line per (repetition, kind, group) to out."""
    cfg = load_hss(hss)
    data, fp = load(trace)
    caps = cfg.capacity_pages(fp, 4096)
    n_req = len(data)
    base = Run(policy, cfg, caps, data)
    made = [(r, p) for r, p, f, t in base.moves if t == 0 and f > 0 and r >= n_req // 10]
    head = dict(policy=policy, hss=hss, trace=trace, requests=n_req, base_latency=base.latency,
                promotions=base.counters["promotions"], made=len(made))
    for rep in range(reps):
        rng = random.Random(seed * 1000 + rep)
        prom = rng.sample(made, min(len(made), max(1, int(frac * len(made))), 2000))
        left = left_candidates(base, data, n_req, rng) if policy == "hps" else []
        rounds = sorted({r for r, _ in prom + left})
        cold = [(r, COLD - j) for r in rng.sample(rounds, min(len(rounds), 200)) for j in range(NCOLD)]
        judged = {s: Run(policy, cfg, caps, data, judge=prom + left + cold, scale=s) for s in SCALES}
        one = judged[1.0]
        if abs(one.latency - base.latency) > 1e-6 * base.latency:
            raise AssertionError("judging changed the replay")
        space, nspace = space_of(one)
        for kind, decisions, to in (("promoted", prom, -1), ("left", left, 0)):
            groups = {}
            for d in decisions:
                c = one.credits.get(d)
                if c and not c["ended"] and c["src"] > 0:
                    groups.setdefault(group_of(c, space), []).append(d)
            for g, ds in sorted(groups.items()):
                flip = Run(policy, cfg, caps, data, flips=[(r, p, to) for r, p in ds])
                with_, without = (base, flip) if kind == "promoted" else (flip, base)
                done = {(m[0], m[1]) for m in with_.moves if m[3] == 0}
                ds = [d for d in ds if d in done]
                if not ds:
                    continue
                sums = {}
                for d in ds:
                    for k, v in terms(one.credits[d], space, judged, d).items():
                        sums[k] = sums.get(k, 0.0) + v
                out.write(json.dumps(dict(head, rep=rep, kind=kind, group=g, n=len(ds), space=space, nspace=nspace,
                                          truth=without.latency - with_.latency, sums=sums,
                                          d={k: without.counters[k] - with_.counters[k] for k in with_.counters}))
                          + "\n")
                out.flush()


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--hss", default="perf,cost")
    ap.add_argument("--policy", default="hps", choices=POLICIES)
    ap.add_argument("--trace", action="append")
    ap.add_argument("--report", metavar="JSONL", help="print the tables of a run's --out file instead")
    ap.add_argument("--report-waits", metavar="JSONL", help="the waits column split (results/diagnosis/waits.txt)")
    ap.add_argument("--report-step1", metavar="JSONL", nargs="+", help="step (i) of credit.txt's rule for the "
                    "waits term (results/diagnosis/waits.txt)")
    ap.add_argument("--report-predict", metavar="JSONL", nargs="+", help="rule (b) of results/diagnosis/waits.txt")
    ap.add_argument("--report-singles", metavar="JSONL", help="the same for a run with --singles")
    ap.add_argument("--singles", type=int, metavar="K", help="flip K decisions per kind one at a time "
                    "(one JSON line per (HSS, trace)) instead of sets")
    ap.add_argument("--reps", type=int, default=3, help="sets: repetitions, each a new random share")
    ap.add_argument("--frac", type=float, help="sets: share of the promotions made (hps 0.25, lru 0.02)")
    ap.add_argument("--seed", type=int, default=1, help="which decisions are sampled")
    ap.add_argument("--out", default="-", help="JSON lines of every decision (default stdout)")
    a = ap.parse_args(argv)
    if a.report_singles or a.report or a.report_predict or a.report_step1 or a.report_waits:
        sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
        import credit_report as cr
        if a.report_singles:
            return cr.report(a.report_singles)
        if a.report:
            return cr.report_sets(a.report)
        if a.report_predict:
            return cr.report_predict(a.report_predict)
        if a.report_step1:
            return cr.report_step1(a.report_step1)
        return cr.report_waits(a.report_waits)
    if not a.trace:
        ap.error("--trace is required (or --report)")
    out = sys.stdout if a.out == "-" else open(a.out, "w")
    if a.singles:
        one = lambda hss, t: check(a.policy, hss, t, a.singles, a.seed, out)
    else:
        one = lambda hss, t: check_sets(a.policy, hss, t, a.reps, a.frac or {"hps": 0.25, "lru": 0.02}[a.policy],
                                        a.seed, out)
    each_run("credit_check", a.hss, a.trace, one)


def each_run(prog, hss, traces, one):
    """one(hss, trace) for every HSS of the comma-separated `hss` and every trace; bad input (HblError)
    ends the program with a line naming `prog`, not a traceback (write_credit.py's loop too)."""
    try:
        for h in hss.split(","):
            for t in traces:
                one(h, t)
    except HblError as e:
        sys.exit("%s: %s" % (prog, e))


if __name__ == "__main__":
    main()
