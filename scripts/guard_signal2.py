#!/usr/bin/env python3
"""Switching signals for the guard, round 2: harmonia's warm-up held out, the handover's price (issue 26).
(the rule and the figures: results/diagnosis/guard-signal2.txt; round 1: guard-signal.txt, scripts/guard_signal.py)

The same live path as rule H (guard_hybrid.hybrid); only the decision after each full window is replaced by
a signal that reads the guard itself (bind(guard): its members' simulators and its own switch records):
  W   harmonia (the portfolio's first member, active at the start, the learner) is WARM from the first
      decision at which its alone simulator's fast device holds min(its capacity, the pages seen so far)
      pages; until then no switch.  From then on rule H's comparison (guard_study.switch_to, the margin)
      on each member's mean over the windows AFTER the one in which harmonia was found warm.
  P   rule H's comparison on the cumulative means, the margin raised by the handover price this run has
      paid so far: the mean over its earlier switches of (the live copy's first window / the same member
      alone in that window - 1), floored at 0 (none measured yet: 0, rule H).
  WP  W's hold and figures with P's raised margin.
  H   rule H itself (to show the runs reproduce the stored figures).
  W1  (an addendum, fixed after W's figures: guard-signal2.txt) the brief's literal W with its first
      observable: while fewer requests have been fed than harmonia's fast device has pages, no switch;
      otherwise rule H (cumulative figures).

    .venv/bin/python scripts/guard_signal2.py --signal W --trace synth:src:requests=100000,seed=2 --hss perf
One JSON line per (trace, HSS, seed), guard_study's, with "signal" (and "warm_after", "price_at") added;
--report prints guard_signal.py's report (against rule H's rows) and this round's diagnostics.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import guard_hybrid as gh  # noqa: E402
import guard_report as gr  # noqa: E402
import guard_study as gs  # noqa: E402


def warm(sim):
    """True when a member's alone simulator holds min(fast capacity, pages seen so far) pages on its fast
    device (a fast device with no capacity limit: every page seen)."""
    st = sim.stats()
    cap = sim.capacities[0]
    need = st.pages if cap < 0 else min(cap, st.pages)
    return st.pages > 0 and st.used_pages[0] >= need


def handover_price(switch_log):
    """The mean over the measured switches (the window after them fed) of live copy / member alone - 1 in
    that window, floored at 0; 0 when none is measured yet."""
    r = [s["next_us"] / s["alone_next_us"] - 1.0 for s in switch_log
         if "next_us" in s and s.get("alone_next_us", 0) > 0]
    return max(0.0, sum(r) / len(r)) if r else 0.0


def mean_after(trail, k):
    """Each member's mean over its windows k+1..n (counted from 1); None when there are none."""
    if len(next(iter(trail.values()))) <= k:
        return None
    return {p: sum(xs[k:]) / len(xs[k:]) for p, xs in trail.items()}


def warm_by_requests(sim, requests):
    """True once a member has been fed as many requests as its fast device has pages (no capacity limit:
    at once)."""
    cap = sim.capacities[0]
    return cap < 0 or requests >= cap


class Signal:
    """A decide(cum=, trail=, active=, portfolio=, margin=) for one guard (one cell): hold (W) and/or
    priced (P); bind(guard) before the first window."""

    def __init__(self, hold, priced, by_requests=False):
        self.hold, self.priced, self.by_requests = hold, priced, by_requests
        self.guard, self.warm_after, self.price_at = None, None, []

    def bind(self, guard):
        self.guard, self.warm_after, self.price_at = guard, None, []

    def __call__(self, cum, trail, active, portfolio, margin):
        figures = cum
        if self.by_requests:            # W1: the hold only; rule H's figures after it
            lead = portfolio[0]
            if self.warm_after is None:
                if not warm_by_requests(self.guard.alone[lead], len(trail[lead]) * self.guard.window):
                    return None
                self.warm_after = len(trail[lead])
        elif self.hold:
            if self.warm_after is None:
                if not warm(self.guard.alone[portfolio[0]]):
                    return None
                self.warm_after = len(trail[portfolio[0]])      # found warm after this many windows
            figures = mean_after(trail, self.warm_after)
            if figures is None:
                return None
        price = handover_price(self.guard.switches) if self.priced else 0.0
        if margin + price >= 1.0:
            return None
        best = gs.switch_to(figures, active, portfolio, margin + price)
        if best and self.priced:
            self.price_at.append(round(price, 4))
        return best


SIGNALS = {"H": lambda: gh.rule_h, "W": lambda: Signal(True, False), "P": lambda: Signal(False, True),
           "WP": lambda: Signal(True, True), "W1": lambda: Signal(False, False, by_requests=True)}


def diagnostics(rows, out=sys.stdout):
    """Per signal and HSS: W's warm-up (after how many windows harmonia was found warm; cells never warm),
    the handover price paid (geomean of live copy's first window / member alone), the prices P added to the margin at its switches."""
    p = lambda *a: print(*a, file=out)
    groups = {}
    for r in rows:
        groups.setdefault((r.get("signal", "H"), r["hss"]), []).append(r)
    for (sig, h), rs in sorted(groups.items()):
        line = "%-2s %-5s %d cells" % (sig, h, len(rs))
        if any("warm_after" in r for r in rs):
            w = [r.get("warm_after") for r in rs]
            got = sorted(x for x in w if x is not None)
            line += "; warm after windows: %s; never warm: %d" % (
                " ".join(map(str, got)) if got else "-", sum(x is None for x in w))
        ratios = [s["next_us"] / s["alone_next_us"] for r in rs for s in r["switch_log"]
                  if "next_us" in s and s.get("alone_next_us", 0) > 0]
        if ratios:
            line += "; handover price paid: geomean %.3f over %d switches" % (gr.geomean(ratios), len(ratios))
        pa = [x for r in rs for x in r.get("price_at", [])]
        if any(x > 0 for x in pa):
            line += "; price added at its switches: %s" % " ".join("%.3f" % x for x in pa if x > 0)
        p(line)


def run_cell(signal, data, fp, h, s, portfolio):
    decide = SIGNALS[signal]()
    res = gh.hybrid(data, fp, h, s, portfolio, decide=decide)
    res["signal"] = signal
    if isinstance(decide, Signal):
        if decide.hold or decide.by_requests:
            res["warm_after"] = decide.warm_after
        if decide.priced:
            res["price_at"] = decide.price_at
    return res


@gs.study_main("guard_signal2")
def main(argv=None):
    return gs.signal_main(argv, __doc__, "results/diagnosis/guard-signal2.txt", SIGNALS, run_cell,
                          "warm-up and handover price per signal and HSS", diagnostics)


if __name__ == "__main__":
    sys.exit(main())
