#!/usr/bin/env python3
"""A guard: harmonia live, baselines as shadows on the same requests, switching by recent latency.
(issue 26; the rule and the figures: results/diagnosis/guard.txt)

Every member of the portfolio is one hbl.sim.Simulator built as `hbl compare` builds it (HSS preset,
fast capacity from the footprint, closed loop QD1, defaults; harmonia from its shipped pretrained
agents, learning online).  The trace is fed to every member in windows of W requests; at QD1 in a
closed loop each member's latencies are its own.  After each full window, when another member's mean
latency over that window is below (1 - margin) x the active member's, the best one becomes active:
it is told, through Simulator.set_devices (the live mode's path, hbl_live_set_devices), that every
page whose device differs is where the member it takes over from has it, and its check() must pass.
The guarded latency is the active member's, window by window.

A member's result alone (no switching) is its simulator up to the first handover into it; at that
moment the process forks and the child, waited for, finishes that member alone and hands back its
result, so the alone figures are exactly the member's without the guard.

Rule F (--rule F, guard.txt [C]) is another guard: every member on its own trajectory, never touched;
the member with the lowest cumulative mean latency becomes active (its simulator adopted as it is) when
it beats the active member's own cumulative figure by more than the margin; each page whose device
differs between the two layouts is charged a copy at the device model's QD1 times, as foreground.
Rule H (--rule H, guard.txt [D]; scripts/guard_hybrid.py): F's signal with G's handover: members alone
on their own trajectories give the signal; the live path is one simulator, a fresh copy of the new
leader's alone one told the live layout at each switch, paying its later moves in its own device model.

    .venv/bin/python scripts/guard_study.py --trace synth:src:requests=100000,seed=2 --hss perf --seeds 1,2,3
One JSON line per (trace, HSS, seed): the guard's and each member's alone latency, the switches.
"""
import argparse
import functools
import json
import os
import pickle
import sys
import time

import numpy as np

from hbl import record
from hbl.devices import load_hss
from hbl.errors import HblError
from hbl.sim import Simulator, footprint_pages
from hbl.sim.guard import MARGIN, PORTFOLIO, WINDOW, handover, layout, switch_to
from hbl.trace import open_trace, split

PAGE_SIZE = 4096


def load(trace, allow_evaluation=False):
    """A workload's requests in memory and its footprint in pages; training workloads only unless asked."""
    if not allow_evaluation and split.side(trace) != "training":
        raise HblError("%s: not a training workload (hbl/trace/split.py TRAINING); pass --allow-evaluation "
                       "only for a report after the decision" % trace)
    data = record.concat(list(open_trace(trace)))
    return data, footprint_pages([data])


def member(policy, cfg, caps, hss, seed):
    """One member as `hbl compare` runs it (hbl.sim.simulate): harmonia from the shipped agents."""
    if policy in ("harmonia",) or policy.startswith("harmonia"):
        from hbl.sim.agent_files import shipped
        agents = shipped(policy, hss, seed)
        if not agents:
            raise HblError("no shipped agents for %s on %s" % (policy, hss))
        return Simulator.with_agents(cfg, policy, caps, agents, seed=seed)
    return Simulator(cfg, policy, caps, seed=seed)


def finish_alone(sim, data, start, window):
    """Fork; the child feeds sim the rest of the trace alone and sends back (latency_sum_ns, requests,
    wall); the parent waits for it (one process at a time)."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        try:
            for lo in range(start, len(data), window):
                sim.feed(data[lo:lo + window])
            st = sim.stats()
            out = (float(st.latency_sum_ns), int(st.requests), sim.wall)
        except BaseException as exc:          # noqa: BLE001 (sent to the parent, raised there)
            out = exc
        with os.fdopen(w, "wb") as f:
            pickle.dump(out, f)
        os._exit(0)
    os.close(w)
    with os.fdopen(r, "rb") as f:
        out = pickle.load(f)
    os.waitpid(pid, 0)
    if isinstance(out, BaseException):
        raise out
    return out


def feed_all(sims, chunk, prev):
    """One window fed to every member: per member (the window's latency sum in ns, its requests, its mean,
    the cumulative mean since the start), prev (member -> (latency sum, requests) so far) moved on."""
    out = {}
    for p, sim in sims.items():
        sim.feed(chunk)
        st = sim.stats()
        d_sum, d_n = st.latency_sum_ns - prev[p][0], st.requests - prev[p][1]
        prev[p] = (st.latency_sum_ns, st.requests)
        out[p] = (d_sum, d_n, d_sum / d_n if d_n else 0.0, st.latency_sum_ns / st.requests if st.requests else 0.0)
    return out


def note_window(trail, actives, means, active, sims, check):
    """A window's record: each member's mean (us) on its trail, the active member; check() every sim if asked."""
    for p in trail:
        trail[p].append(round(means[p] / 1e3, 3))
    actives.append(active)
    if check:
        for sim in sims:
            sim.check()


def alone_figures(sims):
    """Each member's mean latency (us) and simulator time, from simulators never handed a layout."""
    lat, wall = {}, {}
    for p, sim in sims.items():
        st = sim.stats()
        lat[p] = st.latency_sum_ns / st.requests / 1e3 if st.requests else 0.0
        wall[p] = sim.wall
    return lat, wall


def guard(data, fp, hss, seed, portfolio=PORTFOLIO, window=WINDOW, margin=MARGIN, check=False, resync=False):
    """The guard on one trace: a dict of the guard's latency, its switches and each member alone.
    resync (variant R): at the start of every window each shadow is told the active member's layout;
    the members alone are then pristine copies fed alongside."""
    cfg = load_hss(hss)
    caps = cfg.capacity_pages(fp, PAGE_SIZE)
    sims = {p: member(p, cfg, caps, hss, seed) for p in portfolio}
    pristine = {p: member(p, cfg, caps, hss, seed) for p in portfolio} if resync else {}
    alone = {}                    # policy -> (latency_sum_ns, requests, wall) once it was handed over to
    active = portfolio[0]
    prev = {p: (0.0, 0) for p in portfolio}
    g_sum, g_n, switches, moved = 0.0, 0, [], 0
    trail = {p: [] for p in portfolio}       # each window's mean latency (us) per member, and the active one
    actives = []
    resynced = 0
    for lo in range(0, len(data), window):
        chunk = data[lo:lo + window]
        if resync and lo:
            live = layout(sims[active])
            resynced += sum(handover(sims[active], sims[p], live) for p in portfolio if p != active)
        for sim in pristine.values():
            sim.feed(chunk)
        fed = feed_all(sims, chunk, prev)
        means = {p: f[2] for p, f in fed.items()}
        g_sum, g_n = g_sum + fed[active][0], g_n + fed[active][1]
        note_window(trail, actives, means, active, sims.values(), check)
        if len(chunk) < window or lo + window >= len(data):
            continue                          # no decision after the last window
        best = switch_to(means, active, portfolio, margin)
        if best:
            if best not in alone and not resync:
                alone[best] = finish_alone(sims[best], data, lo + window, window)
            n = handover(sims[active], sims[best])
            moved += n
            switches.append(dict(after=lo + window, frm=active, to=best, pages_moved=n,
                                 mean_us={k: round(v / 1e3, 2) for k, v in means.items()}))
            active = best
    out = dict(hss=hss, seed=seed, requests=len(data), footprint_pages=fp, window=window, margin=margin,
               portfolio=list(portfolio), guard_us=g_sum / g_n / 1e3 if g_n else 0.0,
               switches=len(switches), pages_moved=moved, switch_log=switches, final_active=active,
               resync=bool(resync), pages_resynced=resynced)
    lat, wall = {}, {}
    for p, sim in sims.items():
        if resync:
            st = pristine[p].stats()
            s, n, w = st.latency_sum_ns, st.requests, pristine[p].wall
        elif p in alone:
            s, n, w = alone[p]
        else:
            st = sim.stats()
            s, n, w = st.latency_sum_ns, st.requests, sim.wall
        lat[p] = s / n / 1e3 if n else 0.0
        wall[p] = w
    out["window_us"], out["active"] = trail, actives
    out["alone_us"] = lat
    out["alone_wall_s"] = wall                        # each member's simulator time alone
    out["guard_wall_s"] = {p: sim.wall for p, sim in sims.items()}   # in the guard (with handovers)
    out["best_member"] = min(lat, key=lat.get)
    return out


def io_ns(profile, write):
    """A 4 KiB page I/O at QD1 on a device, in ns, from the device model's figures (hbl/devices): an
    SSD its datasheet latency; an HDD its command overhead + the average seek + the average rotation +
    the transfer (pessimistic: no shorter seek over a small footprint, no sorting)."""
    lat = profile.write_latency_us if write else profile.read_latency_us
    if not profile.is_hdd():
        return lat * 1e3
    rate = profile.write_mb_s if write else profile.read_mb_s
    return lat * 1e3 + profile.seek_ms * 1e6 + profile.rotation_ms * 1e6 + PAGE_SIZE / (rate * 1e6) * 1e9


def copy_costs(cfg):
    """cost[s][d]: ns to copy one page from device s to device d (read there, write here; 0 if s == d)."""
    n = len(cfg.devices)
    return [[0.0 if s == d else io_ns(cfg.devices[s], False) + io_ns(cfg.devices[d], True) for d in range(n)]
            for s in range(n)]


def follow(data, fp, hss, seed, portfolio=PORTFOLIO, window=WINDOW, margin=MARGIN, check=False):
    """Variant F (results/diagnosis/guard.txt [C]): every member on its own trajectory from the start,
    never touched; after each window the member with the lowest cumulative mean latency (its own) becomes
    active when it beats the active member's own cumulative figure by more than margin. The handover
    adopts the leader's simulator as it is; every page whose device differs between the two layouts is
    charged a copy (copy_costs) as foreground latency."""
    cfg = load_hss(hss)
    caps = cfg.capacity_pages(fp, PAGE_SIZE)
    cost = copy_costs(cfg)
    sims = {p: member(p, cfg, caps, hss, seed) for p in portfolio}
    active = portfolio[0]
    prev = {p: (0.0, 0) for p in portfolio}
    g_sum, g_n, charge, moved, switches = 0.0, 0, 0.0, 0, []
    trail = {p: [] for p in portfolio}
    actives = []
    for lo in range(0, len(data), window):
        chunk = data[lo:lo + window]
        fed = feed_all(sims, chunk, prev)
        means, cum = {p: f[2] for p, f in fed.items()}, {p: f[3] for p, f in fed.items()}
        g_sum, g_n = g_sum + fed[active][0], g_n + fed[active][1]
        note_window(trail, actives, means, active, sims.values(), check)
        if len(chunk) < window or lo + window >= len(data):
            continue                          # no decision after the last window
        best = switch_to(cum, active, portfolio, margin)
        if best:
            sp, sd = layout(sims[active])
            dp, dd = layout(sims[best])
            if len(sp) != len(dp) or not np.array_equal(sp, dp):
                raise AssertionError("the members have not seen the same pages (%d, %d)" % (len(sp), len(dp)))
            diff = np.nonzero(sd != dd)[0]
            c = float(sum(cost[int(a)][int(b)] for a, b in zip(sd[diff], dd[diff])))
            charge += c
            moved += int(len(diff))
            switches.append(dict(after=lo + window, frm=active, to=best, pages_moved=int(len(diff)),
                                 charge_us=round(c / 1e3, 1), mean_us={k: round(v / 1e3, 2) for k, v in means.items()},
                                 cum_us={k: round(v / 1e3, 3) for k, v in cum.items()}))
            active = best
    lat, wall = alone_figures(sims)
    return dict(hss=hss, seed=seed, requests=len(data), footprint_pages=fp, window=window, margin=margin,
                portfolio=list(portfolio), rule="F", guard_us=(g_sum + charge) / g_n / 1e3 if g_n else 0.0,
                guard_uncharged_us=g_sum / g_n / 1e3 if g_n else 0.0, charge_us=charge / 1e3,
                switches=len(switches), pages_moved=moved, switch_log=switches, final_active=active,
                resync=False, pages_resynced=0, window_us=trail, active=actives, alone_us=lat,
                alone_wall_s=wall, guard_wall_s=dict(wall), best_member=min(lat, key=lat.get))


def write_row(out, trace, res, t0):
    """A cell's JSON line: the trace, the result, its time (from t0, time.time()) and the UTC moment."""
    row = dict(trace=trace, **res)
    row["elapsed_s"] = round(time.time() - t0, 1)
    row["utc"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    print(json.dumps(row), file=out, flush=True)


def read_rows(paths):
    """The JSON lines of these files, a --report's input; an error naming the file and line of a bad one."""
    rows = []
    for path in paths:
        with open(path) as f:
            for n, line in enumerate(f, 1):
                try:
                    rows += [json.loads(line)] if line.strip() else []
                except ValueError:
                    raise HblError("%s line %d: not a JSON line" % (path, n)) from None
    if not rows:
        raise HblError("no rows in %s" % " ".join(paths))
    return rows


def grid(seeds, hss, portfolio):
    """(seeds, HSS presets, members) from a run's comma-separated arguments, checked: every HSS loads,
    the portfolio names at least one member and none twice (members are told apart by name)."""
    seeds = [int(s) for s in seeds.split(",")]
    hss_list = [h for h in hss.split(",") if h]
    members = tuple(p for p in portfolio.split(",") if p)
    if not members or len(set(members)) != len(members):
        raise HblError("--portfolio %s: empty or a member named twice (members are told apart by name)" % portfolio)
    for h in hss_list:
        load_hss(h)
    return seeds, hss_list, members


def add_grid_args(ap, report_help, allow_evaluation=True):
    """The arguments the guard scripts share: --trace (repeatable), --report, --hss, --seeds, --out and, for a
    script that may report on evaluation workloads, --allow-evaluation."""
    ap.add_argument("--trace", action="append", help="a training workload (repeatable)")
    ap.add_argument("--report", nargs="+", metavar="JSONL", help=report_help)
    ap.add_argument("--hss", default="perf,cost", help="HSS presets, comma-separated (default perf,cost)")
    ap.add_argument("--seeds", default="1,2,3", help="online seeds, comma-separated (default 1,2,3)")
    ap.add_argument("--out", help="append JSON lines here (default stdout)")
    if allow_evaluation:
        ap.add_argument("--allow-evaluation", action="store_true",
                        help="allow an evaluation workload (a report after the decision, never to decide)")


def parse_run_or_report(ap, argv):
    """The arguments, with --trace (to run) or --report (to read results) given."""
    a = ap.parse_args(argv)
    if not a.trace and not a.report:
        ap.error("give --trace (to run) or --report (to read results)")
    return a


def cells(traces, hss_list, seeds, allow_evaluation=False):
    """(trace, its requests, its footprint, HSS, seed) of every cell of a run, each trace loaded once."""
    for trace in traces:
        data, fp = load(trace, allow_evaluation)
        for h in hss_list:
            for s in seeds:
                yield trace, data, fp, h, s


def study_main(name):
    """A study script's main(argv): an error (bad input, a file) is one line naming the script, exit status 2."""
    def wrap(main):
        @functools.wraps(main)
        def run(argv=None):
            try:
                return main(argv)
            except (HblError, ValueError, OSError) as exc:
                print("%s: %s" % (name, exc), file=sys.stderr)
                return 2
        return run
    return wrap


def write_cells(out_path, traces, hss_list, seeds, fn, allow_evaluation=False):
    """fn(trace, data, footprint, hss, seed) -> a result for each cell (cells()), written as a JSON line
    (write_row) to out_path, appended, or to stdout."""
    out = open(out_path, "a") if out_path else sys.stdout
    for trace, data, fp, h, s in cells(traces, hss_list, seeds, allow_evaluation):
        t0 = time.time()
        write_row(out, trace, fn(trace, data, fp, h, s), t0)


def signal_main(argv, doc, results, signals, run_cell, heading, diagnostics, suite=None):
    """The main of a round of signals (guard_signal2.py, 3, 4): run signals[--signal] over the grid, each cell
    run_cell(signal, data, footprint, hss, seed, portfolio) -> a result; or report: guard_signal.py's per signal
    against rule H, then diagnostics(rows) under `heading`.  suite: (help, against_suite(rows, path)) for
    --suite JSON, a report against an `hbl compare` JSON's best non-learning policy instead."""
    ap = argparse.ArgumentParser(description=doc.split("\n")[0], epilog="Rule and figures: " + results)
    add_grid_args(ap, "guard_signal.py's report per signal against rule H (rows without a signal) and this "
                  "round's diagnostics instead of running")
    ap.add_argument("--signal", choices=sorted(signals), default="H", help="the switching decision (default H)")
    if suite:
        ap.add_argument("--suite", metavar="JSON", help=suite[0])
    a = parse_run_or_report(ap, argv)
    if a.report and suite and a.suite:
        suite[1](read_rows(a.report), a.suite)
        return 0
    if a.report:
        sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
        import guard_signal     # the report per signal against rule H (it imports this file)
        if guard_signal.main(["--report"] + list(a.report)):
            return 2
        print("\n######## " + heading)
        diagnostics(read_rows(a.report))
        return 0
    seeds, hss_list, portfolio = grid(a.seeds, a.hss, ",".join(PORTFOLIO))

    def run(trace, data, fp, h, s):
        return run_cell(a.signal, data, fp, h, s, portfolio)
    write_cells(a.out, a.trace, hss_list, seeds, run, a.allow_evaluation)
    return 0


@study_main("guard_study")
def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0],
                                 epilog="Rule and figures: results/diagnosis/guard.txt")
    add_grid_args(ap, "print the tables and the rule's verdict from these JSON lines instead of running")
    ap.add_argument("--portfolio", default=",".join(PORTFOLIO), help="members, the first active at the start")
    ap.add_argument("--window", type=int, default=WINDOW, help="requests per window (default %d)" % WINDOW)
    ap.add_argument("--margin", type=float, default=MARGIN, help="switch when better by more than this share")
    ap.add_argument("--check", action="store_true", help="check() every member after every window")
    ap.add_argument("--resync", action="store_true", help="variant R: each shadow told the active member's "
                    "layout at the start of every window (results/diagnosis/guard.txt [B])")
    ap.add_argument("--rule", choices=("G", "F", "H"), default="G", help="G: switch by last-window latency ([A]; "
                    "with --resync, variant R [B]); F: follow the cumulative leader, adopt its trajectory, "
                    "charge the copies ([C]); H: F's signal, G's handover into a live copy ([D])")
    a = parse_run_or_report(ap, argv)
    if a.report:
        sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
        import guard_report     # the tables and the verdict
        guard_report.report(read_rows(a.report))
        return 0
    if a.rule != "G" and a.resync:
        raise HblError("--resync is variant R of rule G; rules F and H never re-sync")
    if a.window <= 0 or not 0 <= a.margin < 1:
        raise HblError("--window must be > 0, --margin in [0, 1)")
    seeds, hss_list, portfolio = grid(a.seeds, a.hss, a.portfolio)

    def run(trace, data, fp, h, s):
        if a.rule == "H":
            sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
            import guard_hybrid   # rule H lives there (it imports this file)
            return guard_hybrid.hybrid(data, fp, h, s, portfolio, a.window, a.margin, a.check)
        if a.rule == "F":
            return follow(data, fp, h, s, portfolio, a.window, a.margin, a.check)
        return guard(data, fp, h, s, portfolio, a.window, a.margin, a.check, a.resync)
    write_cells(a.out, a.trace, hss_list, seeds, run, a.allow_evaluation)
    return 0


if __name__ == "__main__":
    sys.exit(main())
