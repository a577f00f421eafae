"""Rule H of the guard (results/diagnosis/guard.txt [D]): F's signal with G's handover.
(scripts/guard_study.py --rule H runs it.)  The rule itself is the policy harmonia-guard, hbl/sim/guard.py
(`hbl simulate --policy harmonia-guard`): this file runs it on a study's portfolio and returns a study's
JSON line.

Every member runs ALONE on its own trajectory from the start, never touched (as rule F): its cumulative
mean latency is the unbiased "had we run it from the start" figure.  Apart from them, one LIVE simulator
is the guarded system.  Until the first switch the live path is the first member's alone simulator itself
(the two would be identical).  After a window, when the member with the lowest cumulative alone mean
beats the ACTIVE member's own cumulative alone mean by more than the margin, it becomes active: a fresh
copy of its alone simulator (rebuilt and fed the same prefix in the same windows: the simulator has no
clone; the copy is checked equal to the alone one, figures and layout) is told the live layout through
Simulator.set_devices (check() must pass and the layouts then agree) and is the live simulator from the
next window on; every move it then makes is served by its own device model.  The old live simulator is
kept for one more window only, for the diagnostic (did the switch pay?), and then dropped.  The guard's
latency is the live simulator's, window by window.
"""
import os
import sys

from hbl.devices import load_hss
from hbl.errors import HblError
from hbl.sim import guard as policy
from hbl.sim.agent_files import shipped

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import guard_study as gs  # noqa: E402

rule_h = policy.rule_h    # rule H's switching decision: decide(cum=, trail=, active=, portfolio=, margin=)


def fresh_copy(p, alone, cfg, caps, hss, seed, data, upto, window):
    """A new simulator of member p fed data[:upto] in the windows its alone simulator was fed; asserted
    equal to alone (latency, requests, layout): the runs are deterministic."""
    return policy.fresh_copy(gs.member(p, cfg, caps, hss, seed), alone, policy.windows_of([data], window, upto))


def hybrid(data, fp, hss, seed, portfolio=None, window=None, margin=None, check=False, decide=rule_h, guard_cls=None):
    """Rule H on one trace: a dict as guard_study.guard's, with the live path's window trail.
    decide(cum=, trail=, active=, portfolio=, margin=) -> the member to switch to or None, after each full
    window but the last (cum: each member's cumulative alone mean, ns; trail: each member's window means
    so far, us); rule_h by default, another switching signal for a study (one with a bind(guard) method
    is given the policy.Guard before the first window, to read its members and switch records).
    guard_cls: the guard's class (policy.Guard by default; a study's subclass, called as policy.Guard)."""
    portfolio = tuple(portfolio or gs.PORTFOLIO)
    window = window or gs.WINDOW
    margin = gs.MARGIN if margin is None else margin
    cfg = load_hss(hss)
    caps = cfg.capacity_pages(fp, gs.PAGE_SIZE)
    agents = {}
    for p in portfolio:                 # as guard_study.member: a harmonia member from its shipped agents
        if p.startswith("harmonia"):
            agents[p] = shipped(p, hss, seed)
            if not agents[p]:
                raise HblError("no shipped agents for %s on %s" % (p, hss))
    g = (guard_cls or policy.Guard)(cfg, caps, params=dict(window=window, margin=margin), seed=seed,
                                    agents=agents, decide=decide, portfolio=portfolio, check_windows=check)
    if hasattr(decide, "bind"):         # a signal that reads the guard itself (scripts/guard_signal2.py)
        decide.bind(g)
    g.feed(data)
    g.finish()
    s = g.summary()
    return dict(hss=hss, seed=seed, requests=len(data), footprint_pages=fp, window=window, margin=margin,
                portfolio=list(portfolio), rule="H", guard_us=s["guard_us"], switches=s["switches"],
                pages_moved=s["pages_moved"], switch_log=s["switch_log"], final_active=s["final_active"],
                resync=False, pages_resynced=0, window_us=s["window_us"], live_us=s["live_us"], active=s["active"],
                alone_us=s["alone_us"], alone_wall_s=s["alone_wall_s"],
                # the guard's simulator time: the alone members, the live copies (their windows and the
                # prefix each was fed to become a copy); the diagnostic's extra window is not counted
                guard_wall_s=s["guard_wall_s"], diagnostic_wall_s=s["diagnostic_wall_s"],
                best_member=s["best_member"])
