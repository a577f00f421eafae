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
from the same judged decisions attribute the gap (VARIANTS): push-off term dropped or charged only
for a dirty page, accesses only until the next decision on the page, copies free or at full device
time, horizon x0.5 and x2 (judged again).

    .venv/bin/python scripts/credit_check.py --policy hps --hss perf,cost,tri --reps 3 \\
        --trace synth:phases:requests=200000,seed=2 --trace workload:lmdb-kv@500000-750000 --out hps.jsonl
    .venv/bin/python scripts/credit_check.py --report hps.jsonl
"""
import argparse
import collections
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
    if a.report_singles:
        return report(a.report_singles)
    if a.report:
        return report_sets(a.report)
    if a.report_predict:
        return report_predict(a.report_predict)
    if a.report_step1:
        return report_step1(a.report_step1)
    if a.report_waits:
        return report_waits(a.report_waits)
    if not a.trace:
        ap.error("--trace is required (or --report)")
    out = sys.stdout if a.out == "-" else open(a.out, "w")
    try:
        for hss in a.hss.split(","):
            for t in a.trace:
                if a.singles:
                    check(a.policy, hss, t, a.singles, a.seed, out)
                else:
                    check_sets(a.policy, hss, t, a.reps, a.frac or {"hps": 0.25, "lru": 0.02}[a.policy], a.seed,
                               out)
    except HblError as e:
        sys.exit("credit_check: %s" % e)


if __name__ == "__main__":
    main()
