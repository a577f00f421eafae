#!/usr/bin/env python3
"""Is the placement agent's hindsight credit of a write right?  (issue 26; results/diagnosis/write-credit.txt)

The placement agent with reward=2 (ctypes_core/rl.c credit, hindsight.c hbl_evalq_benefit, kind
HBL_JUDGE_WRITE) credits a write placed on device d with the device time its page's accesses in the
horizon (the write itself among them) would have taken on the slowest device less on d, less, when d
was full, bg x the copy down of the page it pushes off (bg = hbl_background_share) and `space[d]`
(set only with m_reward=2: the migration agent's value of a page of the full fast device).  A
write's credit on the slowest device is 0.

Truth, as scripts/credit_check.py measures it for promotions: a non-learning policy that places
every write on the fastest device (lru) is replayed deterministically; per repetition a random share
`frac` of the writes made after the first 10% of the trace is judged as the agent's queue judges
them (hbl_sim_diag_judge_write: first page, queued before the write lands, horizon the
characteristic time as the agent's horizon 0), grouped by what followed in the horizon (unread: no
later access; rewritten: later writes only; reread: a later read), and each group is flipped at
once to the slowest device (hbl_sim_diag_flip_write: every page of those writes).
    truth = latency with the writes on the slowest device - latency with them on the fastest
(> 0: writing fast paid), set beside the sum of the credits of the fast writes (credit to = 0)
and its terms: own (the write itself, slowest less fastest), rewrite, reread, push (bg x the
copy down, charged always; push_c: only for a dirty victim, credit_clean), space (the agent's, from
the fastest device's coldest pages judged as the migration agent's cold candidates: credit_check.py
space_of).  The agent credits a write's first page only; x npages scales the credit to the
write's pages (a variant, not the agent's).

    .venv/bin/python scripts/write_credit.py --hss cost,perf --trace synth:log:requests=100000,seed=2 \\
        --out w.jsonl
    .venv/bin/python scripts/write_credit.py --report w.jsonl
"""
import argparse
import json
import os
import random
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from credit_check import COLD, NCOLD, each_run, load  # noqa: E402

from hbl.core import ffi, lib  # noqa: E402
from hbl.devices import load_hss  # noqa: E402
from hbl.errors import HblError  # noqa: E402
from hbl.sim import Simulator  # noqa: E402

GROUPS = ("unread", "rewritten", "reread")
PS = 4096


class Run:
    """One replay of `policy`: writes flipped to device `to` (flips: [(index, page)]), writes judged
    (judge: [(index, page)]) and cold pages judged (cold: [(index, COLD - k)]): its latency, counters
    and the credits of the judged decisions."""

    def __init__(self, policy, cfg, caps, data, flips=(), to=None, judge=(), cold=(), opts=None):
        sim = Simulator(cfg, policy, caps)
        if lib.hbl_sim_diag_start(sim.sim):
            raise HblError("hbl_sim_diag_start refused")
        if opts and lib.hbl_sim_diag_credit_opts(sim.sim, *opts):   # (measured_copy, end_next)
            raise HblError("hbl_sim_diag_credit_opts refused")
        for r, p in flips:
            if lib.hbl_sim_diag_flip_write(sim.sim, r, p, to):
                raise HblError("hbl_sim_diag_flip_write refused")
        for r, p in judge:
            if lib.hbl_sim_diag_judge_write(sim.sim, r, p, 1.0):
                raise HblError("hbl_sim_diag_judge_write refused")
        for r, p in cold:
            if lib.hbl_sim_diag_judge(sim.sim, r, p, 1.0):
                raise HblError("hbl_sim_diag_judge refused")
        sim.feed(data)
        st = sim.stats()
        nd = len(cfg.devices)
        self.latency = st.latency_sum_ns
        self.counters = dict(evictions=st.evictions, promotions=st.promotions, bg_wait=st.foreground_wait_ns,
                             sync_wait=st.sync_wait_ns, clean_evictions=st.clean_evictions,
                             wpages_slow=st.write_pages[nd - 1], rpages_slow=st.read_pages[nd - 1])
        n = lib.hbl_sim_diag_credits(sim.sim, ffi.NULL, 0)
        cr = ffi.new("struct hbl_diag_credit[]", max(n, 1))
        lib.hbl_sim_diag_credits(sim.sim, cr, n)
        self.credits, self.cold = {}, []
        for c in (cr[i] for i in range(n)):
            v = dict(kind=c.kind, full=c.full, clean=c.clean, horizon=c.horizon, accesses=c.accesses,
                     ended=c.ended, bg=c.bg, cost=list(c.cost)[:nd], benefit=list(c.benefit)[:nd],
                     benefit_clean=list(c.benefit_clean)[:nd], chain=list(c.chain)[:nd], own=list(c.own)[:nd],
                     rewrite=list(c.rewrite)[:nd], reread=list(c.reread)[:nd], nrewrite=c.nrewrite,
                     nreread=c.nreread, npages=c.npages,
                     chain_m=list(c.chain_measured)[:nd])
            if c.cold:
                self.cold.append(v)
            else:
                self.credits[(c.round, c.page)] = v


def terms(c, space, nxt=None):
    """The credit of writing fast (to = 0) against the slowest device, and its parts (ns); nxt: the same
    decision judged with credit_copy=1 credit_next=1 (its evaluation ended at the page's next write)."""
    s = len(c["cost"]) - 1
    full = bool(c["full"] & 1)
    dirty = not (c["clean"] & 1)
    push = c["bg"] * c["chain"][0] if full else 0.0
    t = dict(own=c["own"][s] - c["own"][0], rewrite=c["rewrite"][s] - c["rewrite"][0],
             reread=c["reread"][s] - c["reread"][0], push=push, push_c=push if dirty else 0.0,
             push1=c["chain"][0] if full else 0.0, space=space if full else 0.0,
             credit=c["benefit"][0], credit_clean=c["benefit_clean"][0], full=int(full), dirty=int(full and dirty),
             npages=c["npages"], nrewrite=c["nrewrite"], nreread=c["nreread"], bg=c["bg"])
    acc = t["own"] + t["rewrite"] + t["reread"]
    if abs(acc - push - c["benefit"][0]) > 1e-6 * (1 + abs(acc) + push):
        raise AssertionError("the credit's parts do not add up to hbl_evalq_benefit's: %r" % c)
    t["push_m"] = c["bg"] * c["chain_m"][0] if full else 0.0
    t["credit_m"] = acc - t["push_m"]      # harmonia's credit_copy=1
    t["credit_space"] = t["credit"] - t["space"]
    t["credit_n"] = t["credit"] * c["npages"]
    if nxt is not None:
        full_n = bool(nxt["full"] & 1)
        t["next_m"] = nxt["benefit"][0]                                           # credit_copy=1 credit_next=1
        t["next"] = t["next_m"] + (nxt["bg"] * (nxt["chain_m"][0] - nxt["chain"][0]) if full_n else 0.0)
    return t


def group_of(c):
    return "unread" if c["accesses"] <= 1 else "reread" if c["nreread"] else "rewritten"


def check(policy, hss, trace, reps, frac, seed, out, with_next=False):
    cfg = load_hss(hss)
    data, fp = load(trace)
    caps = cfg.capacity_pages(fp, PS)
    n_req = len(data)
    slow = len(cfg.devices) - 1
    base = Run(policy, cfg, caps, data)
    idx = np.nonzero((data["op"] == lib.HBL_OP_WRITE) & (data["length"] > 0))[0]
    writes = [(int(i), int(data["offset"][i]) // PS) for i in idx if i >= n_req // 10]
    head = dict(policy=policy, hss=hss, trace=trace, requests=n_req, base_latency=base.latency,
                writes=len(writes), base=base.counters)
    for rep in range(reps):
        rng = random.Random(seed * 1000 + rep)
        judged = rng.sample(writes, min(len(writes), max(1, int(frac * len(writes))), 2000))
        rounds = sorted({r for r, _ in judged})
        cold = [(r, COLD - j) for r in rng.sample(rounds, min(len(rounds), 200)) for j in range(NCOLD)]
        one = Run(policy, cfg, caps, data, judge=judged, cold=cold)
        if abs(one.latency - base.latency) > 1e-6 * base.latency:
            raise AssertionError("judging changed the replay")
        nx = Run(policy, cfg, caps, data, judge=judged, opts=(1, 1)) if with_next else None
        if nx and abs(nx.latency - base.latency) > 1e-6 * base.latency:
            raise AssertionError("judging changed the replay")
        v = [c["cost"][1] - c["cost"][0] for c in one.cold if not c["ended"]]
        space = float(np.mean(v)) if v else 0.0
        groups = {}
        for d in judged:
            c = one.credits.get(d)
            if c and not c["ended"] and c["kind"] == 2:
                groups.setdefault(group_of(c), []).append(d)
        for g, ds in sorted(groups.items()):
            flip = Run(policy, cfg, caps, data, flips=ds, to=slow)
            sums = {}
            for d in ds:
                for k, x in terms(one.credits[d], space, nx.credits.get(d) if nx else None).items():
                    sums[k] = sums.get(k, 0.0) + x
            out.write(json.dumps(dict(head, rep=rep, group=g, n=len(ds), space=space, nspace=len(v),
                                      truth=flip.latency - base.latency, sums=sums,
                                      d={k: flip.counters[k] - base.counters[k] for k in base.counters})) + "\n")
            out.flush()


COLS = (("truth", "truth"), ("credit", "credit"), ("own", "own"), ("rewrite", "rewrite"), ("reread", "reread"),
        ("push", "-push"), ("push_c", "-push_c"), ("space", "-space"), ("credit_clean", "clean"),
        ("credit_n", "x npages"), ("push_m", "-push_m"), ("credit_m", "copy_m"), ("next", "next"),
        ("next_m", "next_m"))


def report(path, out=sys.stdout):
    """Per (HSS, trace, group) pooled over repetitions, and per HSS pooled over traces: us per flipped
    write (sums over the groups' writes / their number): truth, the credit and its terms."""
    rows = [json.loads(line) for line in open(path)]
    w = out.write
    w("us per flipped write, mean over repetitions' sets (truth = latency slow - fast; credit = hbl_evalq_benefit\n"
      "to 0 as reward=2 alone computes it; credit = own + rewrite + reread - push; -space: what m_reward=2's\n"
      "space[0] would subtract more; clean: the credit with credit_clean; x npages: credit x the write's pages;\n"
      "-push_m, copy_m: the push-off copy and the credit with harmonia's credit_copy=1, the copy at the run's\n"
      "measured background device time per page; next_m: the credit with credit_copy=1 and credit_next=1, the\n"
      "evaluation ended at the page's next write, which is not counted; next: the same without credit_copy)\n")
    w("%-5s %-38s %-9s %5s %4s %4s %4s " % ("hss", "trace", "group", "n", "full", "dirt", "bg")
      + " ".join("%8s" % h for _, h in COLS) + "\n")

    def line(hss, trace, g, rs):
        n = sum(r["n"] for r in rs)
        if not n:
            return
        val = lambda k: (sum(r["truth"] for r in rs) if k == "truth"
                         else sum(r["sums"].get(k, float("nan")) for r in rs)) / n / 1e3
        sign = lambda k: -1 if k in ("push", "push_c", "space", "push_m") else 1
        w("%-5s %-38s %-9s %5d %4.2f %4.2f %4.2f " % (hss, trace[:38], g, n, val("full") * 1e3, val("dirty") * 1e3,
                                                    val("bg") * 1e3)
          + " ".join("%8.1f" % (sign(k) * val(k)) for k, _ in COLS) + "\n")

    keys = sorted({(r["hss"], r["trace"]) for r in rows})
    for hss, trace in keys:
        sel = [r for r in rows if r["hss"] == hss and r["trace"] == trace]
        for g in GROUPS:
            line(hss, trace, g, [r for r in sel if r["group"] == g])
        line(hss, trace, "all", sel)
    for hss in sorted({k[0] for k in keys}):
        for g in GROUPS + ("all",):
            line(hss, "POOLED", g, [r for r in rows if r["hss"] == hss and (g == "all" or r["group"] == g)])
    w("\nsign agreement (sets): credit > 0 where truth > 0, per HSS\n")
    for hss in sorted({k[0] for k in keys}):
        sel = [r for r in rows if r["hss"] == hss]
        for k in ("credit", "credit_clean", "credit_space", "credit_n", "credit_m", "next", "next_m"):
            if not all(k in r["sums"] for r in sel):
                continue
            agree = sum((r["sums"][k] > 0) == (r["truth"] > 0) for r in sel)
            w("  %-5s %-13s %d/%d sets\n" % (hss, k, agree, len(sel)))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--hss", default="cost,perf")
    ap.add_argument("--policy", default="lru", choices=("lru",))
    ap.add_argument("--trace", action="append")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--frac", type=float, default=0.02, help="share of the writes judged per repetition")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--out", default="-")
    ap.add_argument("--report", metavar="JSONL")
    ap.add_argument("--next", action="store_true", help="also judge the writes with credit_copy=1 credit_next=1 "
                    "(columns next_m, and next: without credit_copy)")
    a = ap.parse_args(argv)
    if a.report:
        return report(a.report)
    if not a.trace:
        ap.error("--trace is required (or --report)")
    out = sys.stdout if a.out == "-" else open(a.out, "w")
    each_run("write_credit", a.hss, a.trace, lambda hss, t: check(a.policy, hss, t, a.reps, a.frac, a.seed, out, a.next))


if __name__ == "__main__":
    main()
