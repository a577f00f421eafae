#!/usr/bin/env python3
"""Switching signals for the guard, round 4: a switch confirmed by a probe on the live layout (issue 26).
(the rule and the figures: results/diagnosis/guard-signal4.txt; rounds 1-3: guard-signal{,2,3}.txt)

The same live path as rule H (guard_hybrid.hybrid), with a Guard subclass (ProbeGuard) given through its
guard_cls argument.  When rule H would switch from the active member a to b after window k, the guard does
not switch yet: it builds b's fresh copy told the live layout, exactly as the switch would (a probe), and
feeds it window k+1 beside the live path, which stays a.  At the decision after window k+1 the probe becomes
the live path as it stands (no second handover) only if its mean over window k+1 beat the live path's by the
confirmation margin and rule H still names b; else it is dropped, and a probe of rule H's choice then (if
any) starts.
  C   confirmation margin = rule H's (2%);
  C0  confirmation margin 0 (strictly lower);
  H   rule H itself (to show the runs reproduce the stored figures).

    .venv/bin/python scripts/guard_signal4.py --signal C --trace synth:src:requests=100000,seed=2 --hss perf
One JSON line per (trace, HSS, seed), guard_study's, with "signal" and (C, C0) "probes": every probe, its
window's figures and outcome; --report prints guard_signal.py's report (against rule H's rows) and this
round's diagnostics (rule H's switches confirmed or declined, and whether they had paid).
"""
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import guard_hybrid as gh  # noqa: E402
import guard_signal3 as gs3  # noqa: E402
import guard_study as gs  # noqa: E402
from hbl.sim import guard as policy  # noqa: E402
from hbl.sim.guard_figures import added, segment, snapshot  # noqa: E402


class ProbeGuard(policy.Guard):
    """Rule H's guard with rule C's decision (guard-signal4.txt): a switch named by rule H (self.decide) is
    first a probe, fed one window beside the live path, and made (the probe kept as the live simulator) only
    if the probe's window mean beat the live path's by `confirm` (a share; None: the guard's margin) and the
    decision still names it.  self.probes: every probe's record."""

    def __init__(self, *args, confirm=None, **kw):
        super().__init__(*args, **kw)
        self.confirm = self.margin if confirm is None else float(confirm)
        self.probe = None           # dict(sim=, rec=, prev=(latency_sum_ns, requests)) or None
        self.probes = []
        self.probe_wall = self.probe_copy_wall = 0.0
        self.named = None           # the decision's choice at the last decision

    def step(self, chunk):
        if self.pending:            # the decision after the previous full window, made here (not Guard's)
            self.pending = False
            self.decide_c()
        live = self.open_sim        # the live path for this window (no switch inside Guard.step now)
        st = live.stats()
        l0 = (st.latency_sum_ns, st.requests)
        super().step(chunk)
        st = live.stats()
        live_d = (st.latency_sum_ns - l0[0], st.requests - l0[1])
        pr = self.probe
        if pr is not None and "live_ns" not in pr:      # its window: fed beside the live path
            w0 = pr["sim"].wall
            pr["sim"].feed(chunk)
            self.probe_wall += pr["sim"].wall - w0
            st = pr["sim"].stats()
            d = (st.latency_sum_ns - pr["prev"][0], st.requests - pr["prev"][1])
            pr["probe_ns"] = d[0] / d[1] if d[1] else 0.0
            pr["live_ns"] = live_d[0] / live_d[1] if live_d[1] else 0.0
            rec = pr["rec"]
            rec["probe_us"], rec["live_us"] = round(pr["probe_ns"] / 1e3, 3), round(pr["live_ns"] / 1e3, 3)
            rec["alone_us"] = round(self.means[rec["to"]] / 1e3, 3)

    def decide_c(self):
        """Step 1 (a probe fed its window: confirmed and made live, or dropped), then step 2 (a new probe of
        the decision's choice when no switch was made)."""
        best = self.decide(cum=self.cum, trail=self.trail, active=self.active, portfolio=self.portfolio,
                           margin=self.margin)
        self.named = best
        pr, self.probe = self.probe, None
        if pr is not None:
            rec = pr["rec"]
            won = pr["probe_ns"] < (1.0 - self.confirm) * pr["live_ns"]
            rec["named"] = best
            if won and best == rec["to"]:
                rec["outcome"] = "switched"
                self.install(pr)
                return
            rec["outcome"] = "lost" if not won else "renamed"
        if best:
            self.start_probe(best)

    def start_probe(self, best):
        """A fresh copy of best fed the windows so far, told the live layout (as Guard.switch builds it)."""
        if best not in self.alone:
            raise ValueError("the decision named %r, not a member (%s)" % (best, ", ".join(self.portfolio)))
        t0 = time.perf_counter()
        sim = self.fresh_copy(best)
        self.probe_copy_wall += time.perf_counter() - t0
        n = policy.handover(self.open_sim, sim)
        rec = dict(after=self.full * self.window, frm=self.active, to=best, pages=n)
        self.probes.append(rec)
        st = sim.stats()
        self.probe = dict(sim=sim, rec=rec, prev=(st.latency_sum_ns, st.requests))

    def install(self, pr):
        """The probe becomes the live simulator as it stands (Guard.switch without its copy and handover)."""
        src, rec = self.open_sim, pr["rec"]
        seg = segment(self.open_start, snapshot(src, hist=True), hist=True)
        self.closed = seg if self.closed is None else added(self.closed, seg)
        self.moved += rec["pages"]
        sw = dict(after=self.full * self.window, frm=self.active, to=rec["to"], pages_moved=rec["pages"],
                  probe_after=rec["after"], mean_us={k: round(v / 1e3, 2) for k, v in self.means.items()},
                  cum_us={k: round(v / 1e3, 3) for k, v in self.cum.items()})
        self.switches.append(sw)
        self.stay = (self.live, self.live_prev, sw)
        new = pr["sim"]
        st = new.stats()
        self.live, self.live_prev, self.active = new, (st.latency_sum_ns, st.requests), rec["to"]
        self.open_sim, self.open_start = new, snapshot(new, hist=True)

    def finish(self):
        ended = self.ended
        super().finish()
        if not ended and self.probe is not None:    # a probe of the last decision: never live
            self.probe["rec"]["outcome"] = "end"
            self.probe = None

    def summary(self):
        s = super().summary()
        s["guard_wall_s"] = dict(s["guard_wall_s"], probes=self.probe_wall, probe_copies=self.probe_copy_wall)
        s["probes"] = self.probes
        return s


SIGNALS = {"H": None, "C": None, "C0": 0.0}       # the confirmation margin (None: rule H's)


def run_cell(signal, data, fp, hss, seed, portfolio=None, window=None):
    """One cell: rule H (signal H) or C / C0 through guard_hybrid.hybrid; its row with "signal" and "probes"."""
    if signal == "H":
        res = gh.hybrid(data, fp, hss, seed, portfolio, window=window)
        res["signal"] = "H"
        return res
    made = []

    def cls(*a, **kw):
        made.append(ProbeGuard(*a, confirm=SIGNALS[signal], **kw))
        return made[-1]
    res = gh.hybrid(data, fp, hss, seed, portfolio, window=window, guard_cls=cls)
    res["signal"], res["probes"] = signal, made[0].probes
    return res


def diagnostics(rows, out=sys.stdout):
    """Per signal and HSS: probes by outcome; rule H's switches (stored rows, same cell, window and members)
    each matched to the probe C started in its place: confirmed or declined, and whether it had paid in H's
    run (next window below the old live path's; over its live segment against the old member alone)."""
    p = lambda *a: print(*a, file=out)
    h_cells = {(r["trace"], r["hss"], r["seed"]): r for r in rows if r.get("signal", "H") == "H"}
    groups = {}
    for r in rows:
        if "probes" in r:
            groups.setdefault((r["signal"], r["hss"]), []).append(r)
    for (sig, h), rs in sorted(groups.items()):
        outc = {}
        for r in rs:
            for e in r["probes"]:
                outc[e.get("outcome")] = outc.get(e.get("outcome"), 0) + 1
        tally = {k: [0, 0, 0] for k in ("confirmed", "declined")}     # count, paid next window, paid over segment
        n_h = later = 0
        for r in rs:
            hr = h_cells.get((r["trace"], r["hss"], r["seed"]))
            if not hr:
                continue
            probes = {(e["after"], e["frm"], e["to"]): e for e in r["probes"]}
            for s in hr["switch_log"]:
                n_h += 1
                e = probes.get((s["after"], s["frm"], s["to"]))
                if e is None:
                    later += 1      # the live paths had parted before it
                    continue
                k = "confirmed" if e.get("outcome") == "switched" else "declined"
                t = tally[k]
                t[0] += 1
                t[1] += "next_us" in s and s["next_us"] < s["stay_us"]
                t[2] += gs3.segment_paid(hr, s, s["frm"]) < 0
        p("%-2s %-5s %d cells: %d probes (%s); switches %d vs rule H's %d" % (
            sig, h, len(rs), sum(outc.values()), ", ".join("%s %d" % kv for kv in sorted(outc.items(), key=str)),
            sum(r["switches"] for r in rs), n_h))
        p("    of rule H's switches: %d confirmed (%d had paid in H's run in the next window, %d over their live "
          "segment against the old member alone), %d declined (%d, %d), %d not reached (the paths had parted)" % (
              tally["confirmed"][0], tally["confirmed"][1], tally["confirmed"][2], tally["declined"][0],
              tally["declined"][1], tally["declined"][2], later))


@gs.study_main("guard_signal4")
def main(argv=None):
    return gs.signal_main(argv, __doc__, "results/diagnosis/guard-signal4.txt", SIGNALS, run_cell,
                          "probes: rule H's switches confirmed or declined", diagnostics,
                          suite=("with --report: the rows against an `hbl compare` JSON's best non-learning policy "
                                 "on the same traces instead (as guard_signal3.py --suite)", gs3.against_suite))


if __name__ == "__main__":
    sys.exit(main())
