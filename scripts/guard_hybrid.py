"""Rule H of the guard (results/diagnosis/guard.txt [D]): F's signal with G's handover.
(scripts/guard_study.py --rule H runs it; its helpers member(), layout(), handover() are used here.)

Every member runs ALONE on its own trajectory from the start, never touched (as rule F): its cumulative
mean latency is the unbiased "had we run it from the start" figure.  Apart from them, one LIVE simulator
is the guarded system.  Until the first switch the live path is the first member's alone simulator itself
(the two would be identical).  After a window, when the member with the lowest cumulative alone mean
beats the ACTIVE member's own cumulative alone mean by more than the margin, it becomes active: a fresh
copy of its alone simulator (rebuilt and fed the same prefix in the same windows: the simulator has no
clone; the copy is checked equal to the alone one, figures and layout) is told the live layout through
Simulator.set_devices (guard_study.handover: check() must pass and the layouts then agree) and is the
live simulator from the next window on; every move it then makes is served by its own device model.
The old live simulator is kept for one more window only, for the diagnostic (did the switch pay?), and
then dropped.  The guard's latency is the live simulator's, window by window.
"""
import os
import sys
import time

from hbl.devices import load_hss

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import guard_study as gs  # noqa: E402


def fresh_copy(p, alone, cfg, caps, hss, seed, data, upto, window):
    """A new simulator of member p fed data[:upto] in the windows its alone simulator was fed; asserted
    equal to alone (latency, requests, layout): the runs are deterministic."""
    sim = gs.member(p, cfg, caps, hss, seed)
    for lo in range(0, upto, window):
        sim.feed(data[lo:min(lo + window, upto)])
    a, b = alone.stats(), sim.stats()
    if (a.latency_sum_ns, a.requests) != (b.latency_sum_ns, b.requests):
        raise AssertionError("the copy of %s is not its alone simulator (%r, %r)" % (
            p, (a.latency_sum_ns, a.requests), (b.latency_sum_ns, b.requests)))
    (ap, ad), (bp, bd) = gs.layout(alone), gs.layout(sim)
    if not (len(ap) == len(bp) and (ap == bp).all() and (ad == bd).all()):
        raise AssertionError("the copy of %s has another layout than its alone simulator" % p)
    return sim


def rule_h(cum, trail, active, portfolio, margin):
    """Rule H's switching decision: the cumulative leader, when it beats the active member by the margin."""
    return gs.switch_to(cum, active, portfolio, margin)


def hybrid(data, fp, hss, seed, portfolio=None, window=None, margin=None, check=False, decide=rule_h):
    """Rule H on one trace: a dict as guard_study.guard's, with the live path's window trail.
    decide(cum=, trail=, active=, portfolio=, margin=) -> the member to switch to or None, after each full
    window but the last (cum: each member's cumulative alone mean, ns; trail: each member's window means
    so far, us); rule_h by default, another switching signal for a study."""
    portfolio = tuple(portfolio or gs.PORTFOLIO)
    window = window or gs.WINDOW
    margin = gs.MARGIN if margin is None else margin
    cfg = load_hss(hss)
    caps = cfg.capacity_pages(fp, gs.PAGE_SIZE)
    alone = {p: gs.member(p, cfg, caps, hss, seed) for p in portfolio}
    active = portfolio[0]
    live, live_prev = None, (0.0, 0)        # None: the live path is alone[active] itself (before any switch)
    stay = None                             # (old live simulator or None, its prev, the switch record)
    prev = {p: (0.0, 0) for p in portfolio}
    g_sum, g_n, moved, switches = 0.0, 0, 0, []
    trail = {p: [] for p in portfolio}
    live_trail, actives = [], []
    live_wall, copy_wall, stay_wall = 0.0, 0.0, 0.0
    for lo in range(0, len(data), window):
        chunk = data[lo:lo + window]
        fed = gs.feed_all(alone, chunk, prev)
        means, cum = {p: f[2] for p, f in fed.items()}, {p: f[3] for p, f in fed.items()}
        if live is None:
            d_sum, d_n = fed[active][:2]
        else:
            w0 = live.wall
            live.feed(chunk)
            live_wall += live.wall - w0
            st = live.stats()
            d_sum, d_n = st.latency_sum_ns - live_prev[0], st.requests - live_prev[1]
            live_prev = (st.latency_sum_ns, st.requests)
        g_sum, g_n = g_sum + d_sum, g_n + d_n
        live_trail.append(round(d_sum / d_n / 1e3, 3) if d_n else 0.0)
        if stay is not None:                # what the old live simulator did in this window
            old, old_prev, rec = stay
            if old is None:
                s_us = means[rec["frm"]]
            else:
                w0 = old.wall
                old.feed(chunk)
                stay_wall += old.wall - w0
                st = old.stats()
                s_us = (st.latency_sum_ns - old_prev[0]) / (st.requests - old_prev[1])
            rec["stay_us"], rec["next_us"] = round(s_us / 1e3, 3), live_trail[-1]
            rec["alone_next_us"] = round(means[rec["to"]] / 1e3, 3)
            stay = None
        gs.note_window(trail, actives, means, active, list(alone.values()) + ([live] if live is not None else []), check)
        if len(chunk) < window or lo + window >= len(data):
            continue                          # no decision after the last window
        best = decide(cum=cum, trail=trail, active=active, portfolio=portfolio, margin=margin)
        if best:
            t0 = time.perf_counter()
            new = fresh_copy(best, alone[best], cfg, caps, hss, seed, data, lo + window, window)
            copy_wall += time.perf_counter() - t0
            src = live if live is not None else alone[active]
            n = gs.handover(src, new)         # set_devices, check(), the layouts then equal (asserted)
            moved += n
            rec = dict(after=lo + window, frm=active, to=best, pages_moved=n,
                       mean_us={k: round(v / 1e3, 2) for k, v in means.items()},
                       cum_us={k: round(v / 1e3, 3) for k, v in cum.items()})
            switches.append(rec)
            stay = (live, live_prev, rec)
            st = new.stats()
            live, live_prev, active = new, (st.latency_sum_ns, st.requests), best
    lat, wall = gs.alone_figures(alone)
    return dict(hss=hss, seed=seed, requests=len(data), footprint_pages=fp, window=window, margin=margin,
                portfolio=list(portfolio), rule="H", guard_us=g_sum / g_n / 1e3 if g_n else 0.0,
                switches=len(switches), pages_moved=moved, switch_log=switches, final_active=active,
                resync=False, pages_resynced=0, window_us=trail, live_us=live_trail, active=actives,
                alone_us=lat, alone_wall_s=wall,
                # the guard's simulator time: the alone members, the live copies (their windows and the
                # prefix each was fed to become a copy); the diagnostic's extra window is not counted
                guard_wall_s=dict(wall, live=live_wall, copies=copy_wall), diagnostic_wall_s=stay_wall,
                best_member=min(lat, key=lat.get))
