"""harmonia-guard: harmonia guarded by five shadows, rule H of results/diagnosis/guard.txt ([D], [E]).

    from hbl.sim import simulate
    result = simulate("synth:log:requests=100000,seed=2", hss="perf", policy="harmonia-guard")

A composite in Python over hbl.sim.Simulator members, not a C policy.  The portfolio is fixed to
rule H's: harmonia (from its shipped pretrained agents for the HSS and seed, as simulate(policy=
"harmonia") starts it), lru, arc, lirs, s3fifo, wtinylfu.  Every member runs ALONE on the whole trace,
never touched: its cumulative mean latency is the "had we run it from the start" figure.  The trace is
fed to them in windows of `window` requests, whatever the caller's chunks.  After each full window but
the last, decide(cum=, trail=, active=, portfolio=, margin=) names the member to switch to or None
(rule_h: the member with the lowest cumulative alone mean, when it beats the active member's by more
than `margin`).  On a switch a fresh copy of that member is rebuilt by feeding it the windows so far
(the simulator has no clone; the copy is asserted equal to its alone simulator, figures and layout;
the windows are read again from the trace when the guard is given `reread`, as simulate() gives it,
else kept in memory),
told the live layout through Simulator.set_devices (check() must pass, the layouts then agree) and is
the live path from the next window on.  Until the first switch the live path is harmonia's alone
simulator itself.  The guard's figures are the live path's, segment by segment.

Its cost: six simulators plus the copies, 8-9x harmonia's simulation time on the guard study's held-out
workloads (4-24x per cell, results/diagnosis/guard-policy.txt), and a switch reads the trace so far
again.  Runs that share a trace, an HSS and options (`hbl compare`'s seeds) share the alone runs of the
members that do not learn through a store (hbl/sim/shadows.py, `shadows=`), which `hbl compare`'s cells of
those policies fill as they run: there the guard costs about 1.5x harmonia's time (without those cells its
first seed runs them, 3.8x over three seeds).
It cannot drive a live device.  Its live path's figures (segments summed, the result) are in guard_figures.py.
"""
import math
import time

import numpy as np

from hbl import record
from hbl.core import ffi, lib
from hbl.errors import HblError
from hbl.sim.guard_figures import added, live_result, segment, snapshot
from hbl.sim.registry import COMPOSITES, refuse_live
from hbl.sim.shadows import ShadowStore, shareable, window_digest
from hbl.sim.simulator import Simulator

NAME = "harmonia-guard"
PORTFOLIO = ("harmonia", "lru", "arc", "lirs", "s3fifo", "wtinylfu")
WINDOW = int(COMPOSITES[NAME]["params"]["window"]["default"])
MARGIN = COMPOSITES[NAME]["params"]["margin"]["default"]

def switch_to(figures, active, portfolio, margin):
    """The lowest figure's member (ties to the earlier member) when it beats the active member's by more
    than margin, else None."""
    best = min(portfolio, key=lambda p: (figures[p], portfolio.index(p)))
    return best if best != active and figures[best] < (1.0 - margin) * figures[active] else None


def rule_h(cum, trail, active, portfolio, margin):
    """Rule H's switching decision: the cumulative leader, when it beats the active member by the margin."""
    return switch_to(cum, active, portfolio, margin)


def guard_params(params):
    """{'window': int, 'margin': float} from a run's parameters (a dict, as parse_params gives); a clear
    HblError on an unknown name or a bad value."""
    known = COMPOSITES[NAME]["params"]
    out = {k: v["default"] for k, v in known.items()}
    for k, v in (params or {}).items():
        if k not in known:
            raise HblError("policy %s takes no parameter %r (it takes: %s; its members run with their defaults)"
                           % (NAME, k, ", ".join(known)))
        try:
            out[k] = float(v)
        except (TypeError, ValueError):
            raise HblError("policy %s: %s=%r, want a number" % (NAME, k, v)) from None
        if not math.isfinite(out[k]):
            raise HblError("policy %s: %s=%g, want a finite number" % (NAME, k, out[k]))
    if not (out["window"] >= 1 and out["window"] == int(out["window"])):
        raise HblError("policy %s: window=%g, want a whole number of requests >= 1" % (NAME, out["window"]))
    if not 0 <= out["margin"] < 1:
        raise HblError("policy %s: margin=%g, want a share in [0, 1)" % (NAME, out["margin"]))
    out["window"] = int(out["window"])
    return out


def layout(sim):
    """(pages, devices) of every page the simulator has placed, sorted by page."""
    n = int(lib.hbl_sim_layout(sim.sim, ffi.NULL, ffi.NULL, 0))
    pages, devs = np.empty(n, dtype=np.uint64), np.empty(n, dtype=np.int8)
    if n:
        lib.hbl_sim_layout(sim.sim, ffi.cast("uint64_t *", ffi.from_buffer(pages)),
                           ffi.cast("int8_t *", ffi.from_buffer(devs)), n)
    order = np.argsort(pages, kind="stable")
    return pages[order], devs[order]


def handover(src, dst, src_layout=None):
    """dst takes over from src: its pages told to be where src has them (src_layout: layout(src), if
    known); returns how many were moved."""
    sp, sd = src_layout or layout(src)
    dp, dd = layout(dst)
    if len(sp) != len(dp) or not np.array_equal(sp, dp):
        raise AssertionError("the members have not seen the same pages (%d, %d)" % (len(sp), len(dp)))
    diff = np.nonzero(sd != dd)[0]
    diff = diff[np.argsort(-sd[diff], kind="stable")]      # moves down first (the table never over-full)
    if len(diff):
        dst.set_devices(sp[diff], sd[diff])
    dst.check()
    after = layout(dst)[1]
    if not np.array_equal(after, sd):
        raise AssertionError("after the handover the layouts differ on %d pages" % int((after != sd).sum()))
    return int(len(diff))


def windows_of(chunks, window, upto):
    """The first `upto` requests of an iterable of chunks, in windows of `window` requests."""
    buf, n = [], 0
    for chunk in chunks:
        while len(chunk) and upto:
            take = min(window - n, len(chunk), upto)
            buf.append(np.array(chunk[:take]))
            n, upto, chunk = n + take, upto - take, chunk[take:]
            if n == window:
                yield record.concat(buf)
                buf, n = [], 0
        if not upto:
            break
    if upto:
        raise HblError("%s: the trace read again ended %d requests short of what was fed" % (NAME, upto))


def fresh_copy(sim, alone, windows):
    """sim, a new simulator of alone's member, fed the windows alone was fed; asserted equal to alone
    (latency, requests, layout): the runs are deterministic, and the simulator has no clone."""
    for w in windows:
        sim.feed(w)
    a, b = alone.stats(), sim.stats()
    if (a.latency_sum_ns, a.requests) != (b.latency_sum_ns, b.requests):
        raise AssertionError("the copy of %s is not its alone simulator (%r, %r)" % (
            sim.policy, (a.latency_sum_ns, a.requests), (b.latency_sum_ns, b.requests)))
    if getattr(alone, "replayed", False):   # a shared shadow (hbl/sim/shadows.py): its figures only
        return sim
    (ap, ad), (bp, bd) = layout(alone), layout(sim)
    if not (len(ap) == len(bp) and (ap == bp).all() and (ad == bd).all()):
        raise AssertionError("the copy of %s has another layout than its alone simulator" % sim.policy)
    return sim


def build(config, capacities_pages, seed=1, params=None, agents_from=None, shadow_dir=None, **kw):
    """The guard as simulate() and hbl bench run it: its harmonia member from agents_from (a saved agents
    file, as simulate resolves harmonia's: the shipped ones for the HSS preset and seed; None: untrained);
    with shadow_dir, its shareable members shared through a ShadowStore there (kw's shadow_key says whose)."""
    if shadow_dir:
        kw["shadows"] = ShadowStore(shadow_dir)
    else:
        kw.pop("shadow_key", None)
    return Guard(config, capacities_pages, params=params, seed=seed,
                 agents={"harmonia": agents_from} if agents_from else None, **kw)


class Guard:
    """Rule H as one simulation: feed(chunk), check(), result(timeline=) as a Simulator's.
    agents: {member: saved agents file} for the learning members (harmonia's, as simulate resolves it;
    a member without one starts untrained); decide: the switching decision (rule_h); check_windows:
    check() every simulator after every window (a study's --check); reread: a callable giving the trace's
    chunks from its start again (simulate passes its reader), so that a switch rebuilds its copy from the
    trace and the guard keeps no window in memory; without it the full windows fed are kept.
    shadows: a hbl.sim.shadows.ShadowStore and shadow_key, the identity of this run's trace, HSS and
    options: the members shareable() names are replayed from the store where a run with the same identity
    stored them, else run and stored when the trace ends (their figures are the same either way)."""

    policy = NAME

    def __init__(self, hss, capacities_pages, params=None, seed=1, agents=None, decide=rule_h, portfolio=PORTFOLIO,
                 check_windows=False, live=False, plugin=None, reread=None, shadows=None, shadow_key=None,
                 **options):
        if live:
            refuse_live(NAME)
        if plugin is not None:
            raise HblError("policy %s takes no Python plugin" % NAME)
        p = guard_params(params)
        self.window, self.margin = p["window"], p["margin"]
        self.params = dict(window=float(self.window), margin=self.margin)
        self.hss, self.capacities, self.seed, self.options = hss, capacities_pages, seed, options
        self.agents, self.decide, self.check_windows = dict(agents or {}), decide, check_windows
        self.portfolio = tuple(portfolio)
        if len(set(self.portfolio)) != len(self.portfolio) or not self.portfolio:
            raise HblError("a guard's portfolio: members named once each, at least one")
        self.shadows, self.keys, self.to_store, self.shared = shadows, {}, {}, []
        if shadows is not None:
            for m in shareable(self.portfolio):
                self.keys[m] = shadows.key(shadow_key, m, self.window)
        self.alone = {m: self.alone_member(m) for m in self.portfolio}
        self.ndev = self.alone[self.portfolio[0]].ndev
        self.active = self.portfolio[0]
        self.live, self.live_prev = None, (0.0, 0)  # None: the live path is alone[active] itself
        self.stay = None                            # (old live simulator or None, its prev, the switch record)
        self.prev = {m: (0.0, 0) for m in self.portfolio}
        self.trail = {m: [] for m in self.portfolio}
        self.live_trail, self.actives, self.switches, self.moved = [], [], [], 0
        self.g_sum, self.g_n = 0.0, 0
        self.live_wall = self.copy_wall = self.stay_wall = 0.0
        self.reread = reread
        self.windows, self.buf, self.nbuf = [], [], 0   # the full windows fed (without reread); the requests waiting
        self.full = self.fed = 0                    # full windows fed; requests fed
        self.pending = False                        # a full window fed: decide before the next one
        self.ended = False
        # the live path in segments: the closed ones summed (figures, histogram), the open one's simulator and
        # its snapshot where it became live (None: live from its start); a closed copy is then dropped
        self.closed, self.open_sim, self.open_start = None, self.alone[self.active], None
        self.rows = []                              # the timeline: one row per window

    def alone_member(self, m):
        """Member m's alone run: replayed from the store where a run stored it, else simulated here."""
        if m in self.keys:
            got = self.shadows.get(self.keys[m], m)
            if got is not None:
                self.shared.append(m)
                return got
            self.to_store[m] = []           # run here, its figures stored when the trace ends
        return self.member(m)

    def member(self, m):
        """A new simulator of member m (an error it gives names the guard: the user named no member)."""
        try:
            if self.agents.get(m):
                return Simulator.with_agents(self.hss, m, self.capacities, self.agents[m], seed=self.seed,
                                             **self.options)
            return Simulator(self.hss, m, self.capacities, seed=self.seed, **self.options)
        except HblError as e:
            raise HblError("%s cannot run its member %s here: %s" % (NAME, m, e)) from None

    # ---- feeding ----

    def feed(self, chunk):
        """Requests in any chunks: they are fed to the members in windows of `window` requests."""
        if self.ended:
            raise HblError("%s: the trace ended (result() was read); a guard runs one trace" % NAME)
        while len(chunk):
            take = min(self.window - self.nbuf, len(chunk))
            self.buf.append(np.array(chunk[:take]))
            self.nbuf += take
            chunk = chunk[take:]
            if self.nbuf == self.window:
                self.step(record.concat(self.buf))
                self.buf, self.nbuf = [], 0

    def finish(self):
        """The last, partial window (no decision after it); the trace then ends."""
        if not self.ended and self.nbuf:
            self.step(record.concat(self.buf))
            self.buf, self.nbuf = [], 0
        if not self.ended:
            for m, cum in self.to_store.items():
                self.shadows.put(self.keys[m], m, cum, self.alone[m].wall)
        self.ended = True

    def step(self, chunk):
        if self.pending:                    # the decision after the previous full window: it was not the last
            self.pending = False
            self.switch(self.decide(cum=self.cum, trail=self.trail, active=self.active, portfolio=self.portfolio,
                                    margin=self.margin))
        self.fed += len(chunk)              # requests fed so far (a skipped one, of no page, too)
        digest = self.to_store and window_digest(chunk)
        means = self.means = {}             # each member's mean over this window, ns
        self.cum = {}                       # ... and since the start
        for m, sim in self.alone.items():
            sim.feed(chunk)
            st = sim.stats()
            d_sum, d_n = st.latency_sum_ns - self.prev[m][0], st.requests - self.prev[m][1]
            self.prev[m] = (st.latency_sum_ns, st.requests)
            means[m] = d_sum / d_n if d_n else 0.0
            self.cum[m] = st.latency_sum_ns / st.requests if st.requests else 0.0
            if m in self.to_store:
                self.to_store[m].append((st.latency_sum_ns, st.requests, self.fed, digest))
            if m == self.active and self.live is None:
                live_d = (d_sum, d_n)
        if self.live is not None:
            w0 = self.live.wall
            self.live.feed(chunk)
            self.live_wall += self.live.wall - w0
            st = self.live.stats()
            live_d = (st.latency_sum_ns - self.live_prev[0], st.requests - self.live_prev[1])
            self.live_prev = (st.latency_sum_ns, st.requests)
        self.g_sum, self.g_n = self.g_sum + live_d[0], self.g_n + live_d[1]
        self.live_trail.append(round(live_d[0] / live_d[1] / 1e3, 3) if live_d[1] else 0.0)
        if self.stay is not None:           # what the old live simulator did in this window (a diagnostic)
            old, old_prev, rec = self.stay
            if old is None:
                s_ns = means[rec["frm"]]
            else:
                w0 = old.wall
                old.feed(chunk)
                self.stay_wall += old.wall - w0
                st = old.stats()
                s_ns = (st.latency_sum_ns - old_prev[0]) / (st.requests - old_prev[1])
            rec["stay_us"], rec["next_us"] = round(s_ns / 1e3, 3), self.live_trail[-1]
            rec["alone_next_us"] = round(means[rec["to"]] / 1e3, 3)
            self.stay = None
        for m in self.trail:
            self.trail[m].append(round(means[m] / 1e3, 3))
        self.actives.append(self.active)
        if self.check_windows:
            self.check_all()
        self.row()
        if len(chunk) == self.window:
            self.full += 1
            if self.reread is None:
                self.windows.append(chunk)
            self.pending = True

    def switch(self, best):
        """best (or None) becomes the live path: a fresh copy fed the windows so far, told the live layout."""
        if not best:
            return
        if best not in self.alone:
            raise HblError("%s: the decision named %r, not a member (%s)" % (NAME, best, ", ".join(self.portfolio)))
        t0 = time.perf_counter()
        new = self.fresh_copy(best)
        self.copy_wall += time.perf_counter() - t0
        src = self.open_sim
        seg = segment(self.open_start, snapshot(src, hist=True), hist=True)
        self.closed = seg if self.closed is None else added(self.closed, seg)
        n = handover(src, new)
        self.moved += n
        upto = self.full * self.window
        rec = dict(after=upto, frm=self.active, to=best, pages_moved=n,
                   mean_us={k: round(v / 1e3, 2) for k, v in self.means.items()},
                   cum_us={k: round(v / 1e3, 3) for k, v in self.cum.items()})
        self.switches.append(rec)
        self.stay = (self.live, self.live_prev, rec)
        st = new.stats()
        self.live, self.live_prev, self.active = new, (st.latency_sum_ns, st.requests), best
        self.open_sim, self.open_start = new, snapshot(new, hist=True)

    def fresh_copy(self, m):
        """A new simulator of member m fed the windows so far, asserted equal to its alone simulator."""
        windows = (self.windows if self.reread is None
                   else windows_of(self.reread(), self.window, self.full * self.window))
        return fresh_copy(self.member(m), self.alone[m], windows)

    def check(self):
        """The trace ends (the requests waiting for a full window are fed, as the last window), then
        check() every member and the live path (AssertionError when an invariant is broken)."""
        self.finish()
        self.check_all()

    def check_all(self):
        for sim in list(self.alone.values()) + ([self.live] if self.live is not None else []):
            sim.check()

    # ---- figures ----

    @property
    def replay(self):
        return self.open_sim.replay

    def totals(self, hist=False):
        """The live path's figures summed over its segments (the open one up to now), its time span, and
        with hist its merged latency buckets and the range a percentile is clamped to (the exact minimum
        and maximum while the live path is one simulator from its start, else none)."""
        end = snapshot(self.open_sim, hist)
        out = segment(self.open_start, end, hist)
        if self.closed is not None:
            out = added(self.closed, out)
        out["span_ns"] = max(out["span_ns"], 1.0)
        if hist:
            exact = self.closed is None and self.open_start is None
            out["hist_range"] = (end["hist"][1], end["hist"][2]) if exact else (0, 2 ** 64 - 1)
        return out

    def row(self):
        """The timeline's row for the window just fed (the live path over it, as the C timeline's rows)."""
        t = self.totals()
        last = self.rows[-1]["_totals"] if self.rows else None
        d = lambda k: t[k] - (last[k] if last else 0)
        used = self.open_sim.stats().used_pages[0]
        self.rows.append(dict(requests=t["requests"], time_s=t["span_ns"] / 1e9,
                              avg_latency_us=d("latency_sum_ns") / d("requests") / 1e3 if d("requests") else 0.0,
                              read_hit_ratio=d("fast_read_hits") / d("read_page_accesses") if d("read_page_accesses")
                              else 0.0, promotions=t["promotions"], evictions=t["evictions"],
                              fast_used_pages=used, active=self.active, _totals=t))

    def summary(self):
        """The guard's own figures: the switches, the trails, each member alone, its simulator time."""
        lat = {m: (s.stats().latency_sum_ns / s.stats().requests / 1e3 if s.stats().requests else 0.0)
               for m, s in self.alone.items()}
        wall = {m: s.wall for m, s in self.alone.items()}
        spent = {m: 0.0 if m in self.shared else w for m, w in wall.items()}   # a shared one ran elsewhere
        more = {} if self.shadows is None else dict(shared_members=list(self.shared))
        return dict(window=self.window, margin=self.margin, portfolio=list(self.portfolio),
                    guard_us=self.g_sum / self.g_n / 1e3 if self.g_n else 0.0, switches=len(self.switches),
                    pages_moved=self.moved, switch_log=self.switches, final_active=self.active,
                    window_us=self.trail, live_us=self.live_trail, active=self.actives, alone_us=lat,
                    alone_wall_s=wall,
                    # the guard's simulator time: the alone members, the live copies (their windows and the
                    # prefix each was fed to become a copy); the diagnostic's extra window apart
                    guard_wall_s=dict(spent, live=self.live_wall, copies=self.copy_wall),
                    diagnostic_wall_s=self.stay_wall, best_member=min(lat, key=lat.get), **more)

    def result(self, timeline=False):
        """Simulator.result's keys for the live path (counters summed over its segments), and `guard`."""
        self.finish()
        g = self.summary()
        wall = sum(g["guard_wall_s"].values()) + g["diagnostic_wall_s"]
        out = dict(policy=NAME, **live_result(self.totals(hist=True), self.open_sim, self.hss, self.params, wall,
                                              avg_latency_us=g["guard_us"]))
        if not timeline:                    # per-window trails: with the timeline only (a results row stays narrow)
            for k in ("window_us", "live_us", "active"):
                del g[k]
        out["guard"] = dict(g, simulator_wall_s=wall, percentiles=(
            "exact (the live path is harmonia's simulator alone)" if not self.switches else
            "merged from each live segment's latency histogram delta: bucket resolution (about 1.5%), "
            "the extremes not clamped to the exact minimum and maximum"))
        if timeline:
            out["timeline"] = [{k: v for k, v in r.items() if k != "_totals"} for r in self.rows]
        return out
