#!/usr/bin/env python3
"""Why Harmonia loses on the write-only MSR slices: where writes go, what the evictions
they force cost, and whether the loss is in the first part of the trace or steady.
--reads and --rounds do the same for reads: read hits, promotions, and the migration agent's
rounds (its candidates, values and moves) (results/diagnosis/missdiag.txt).  --learning takes apart why the
first tenth of a long workload is slower than the agents a run ends with (results/learning/learndiag.txt).

    .venv/bin/python scripts/writeonly_diag.py [--hss perf,cost,tri,quad] [--trace bundled:hm_1 ...]
        [--seeds 3] [--head 0.1] [--agents DIR]

Each run is one simulation fed in two parts (the first --head of the requests, then the
rest), so the figures of both parts come from the same run as the whole.  Learning
policies run from their shipped pretrained agents (harmonia, its two ablations) and,
as `harmonia/untrained`, from random weights (`--agent none`); --agents DIR loads
harmonia's from DIR/harmonia-HSS-sK.agent instead (a candidate recipe).
Figures: average latency / Fast-Only's on the same trace and HSS (lower is better),
min-max over seeds for learning policies.
"""
import argparse
import sys
from pathlib import Path

from hbl.sim import pretrained
from hbl import record
from hbl.devices import load_hss
from hbl.sim import Simulator, footprint_pages
from hbl.trace import open_trace

WORKLOADS = ("bundled:wdev_1", "bundled:hm_1", "bundled:rsrch_1", "bundled:rsrch_2", "bundled:mds_0",
             "bundled:proj_0")
BASELINES = ("lru", "nhit", "smq", "seqcutoff")
SIM = {}   # simulator options of every run (--migrate-every)
LEARNING = ("harmonia", "harmonia/untrained", "harmonia-placement-only", "harmonia-migration-only")


def counters(sim):
    st = sim.stats()
    return dict(requests=st.requests, lat=st.latency_sum_ns, wpages=st.write_page_accesses,
                fast_w=st.fast_page_writes, fallback=st.fallback_evictions, evictions=st.evictions,
                promotions=st.promotions, sync=st.sync_evictions, sync_wait=st.sync_wait_ns,
                bg_wait=st.foreground_wait_ns, rpages=st.read_page_accesses, rhits=st.fast_read_hits,
                moves=st.promotions + st.evictions - st.fallback_evictions, refused=st.moves_refused,
                served_fast=st.served_requests[0])


def delta(a, b):
    return {k: b[k] - a[k] for k in a}


def loaded(config, name, caps, seed, params, path, **options):
    """A Simulator of `name` started from the agents in `path` (Simulator.with_agents)."""
    return Simulator.with_agents(config, name, caps, path, params=params, seed=seed, **options)


def started(config, hss, policy, caps, seed, agents_dir=None, params=None):
    """A run's Simulator, built once: POLICY from the shipped agents (harmonia's from agents_dir's
    pretraining seed when given), POLICY/untrained from none; params for the harmonia policies only."""
    name, _, variant = policy.partition("/")
    params = params if "harmonia" in name else None
    if variant == "untrained":
        path = None
    elif agents_dir and name == "harmonia":
        path = pretrained.agent_file(name, hss, seed, agents_dir)
    else:
        path = pretrained.shipped(name, hss, seed)
    return loaded(config, name, caps, seed, params, path, **SIM)


def run(data, hss, policy, seed, head, agents_dir=None, params=None):
    config = load_hss(hss)
    sim = started(config, hss, policy, config.capacity_pages(footprint_pages([data]), 4096), seed, agents_dir, params)
    cut = max(1, int(len(data) * head))
    z = counters(sim)
    sim.feed(data[:cut])
    a = counters(sim)
    sim.feed(data[cut:])
    b = counters(sim)
    res = sim.result()
    return dict(res=res, head=delta(z, a), tail=delta(a, b), all=delta(z, b))


def run_windows(data, hss, policy, seed, windows, agents_dir=None, params=None):
    """The counters of each of `windows` equal parts of the trace, in one run."""
    config = load_hss(hss)
    sim = started(config, hss, policy, config.capacity_pages(footprint_pages([data]), 4096), seed, agents_dir, params)
    out, prev = [], counters(sim)
    for w in range(windows):
        sim.feed(data[len(data) * w // windows:len(data) * (w + 1) // windows])
        now = counters(sim)
        out.append(delta(prev, now))
        prev = now
    return out, sim.result()


def fmt_range(vals, f="%.2f"):
    lo, hi = min(vals), max(vals)
    m = sum(vals) / len(vals)
    return (f % m) if len(vals) == 1 else ("%s (%s-%s)" % (f % m, f % lo, f % hi))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--hss", default="perf,cost,tri,quad")
    ap.add_argument("--trace", action="append")
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--head", type=float, default=0.1)
    ap.add_argument("--policies", default=",".join(BASELINES + LEARNING))
    ap.add_argument("--agents", help="load harmonia's agents from this directory instead of the shipped ones")
    ap.add_argument("--param", action="append", metavar="NAME=VALUE",
                    help="parameter of the harmonia policies (repeatable; a diagnostic, e.g. train_every=25)")
    ap.add_argument("--windows", type=int, default=0,
                    help="instead: per window of the trace, latency / fast-only's and the fast write share")
    ap.add_argument("--probe", action="store_true",
                    help="instead: the placement agents' greedy action on typical write states")
    ap.add_argument("--decisions", action="store_true",
                    help="instead: harmonia's write requests by the state of their first page (new or written "
                         "before; the fastest device full or not) and how many did not land on the fastest device")
    ap.add_argument("--reads", action="store_true",
                    help="instead: the read side (read hit ratio, promotions, the migration agent's moves) per "
                         "workload and policy; with --windows, the read hit ratio per window")
    ap.add_argument("--rounds", action="store_true",
                    help="instead: harmonia's migration rounds: the candidates scored, their features and the "
                         "migration agent's values, the moves it made")
    ap.add_argument("--suite", action="store_true",
                    help="instead: harmonia from the shipped agents and from --agents (with --param) against the "
                         "production baselines on every workload of `hbl compare`'s default suite found here")
    ap.add_argument("--learning", action="store_true",
                    help="instead: why harmonia's first --head of a long workload is slower than the agents it ends "
                         "with (results/learning/learning.txt): the first --head from the shipped agents against the same "
                         "requests from the final agents, as is and with one agent frozen (results/learning/learndiag.txt)")
    ap.add_argument("--migrate-every", type=int, metavar="N",
                    help="simulator option: a migration round every N requests (default 1000; a diagnostic)")
    args = ap.parse_args()
    if args.migrate_every:
        SIM["migrate_every"] = args.migrate_every
    if args.suite:
        return suite(args)
    if args.learning:
        return learning(args)
    if args.decisions:
        return decisions(args)
    if args.probe:
        return probe(args)
    if args.windows:
        return windows(args)
    if args.reads:
        return reads(args)
    if args.rounds:
        return rounds(args)
    traces = args.trace or list(WORKLOADS)
    policies = args.policies.split(",")
    p = print
    p("# scripts/writeonly_diag.py --hss %s --seeds %d --head %g%s%s%s%s" % (
        args.hss, args.seeds, args.head, "".join(" --trace " + t for t in args.trace or []),
        " --agents " + args.agents if args.agents else "", "".join(" --param " + x for x in args.param or []),
        "" if args.policies == ",".join(BASELINES + LEARNING) else " --policies " + args.policies)
      + (" --migrate-every %d" % SIM["migrate_every"] if SIM else ""))
    p("# norm: avg latency / fast-only (whole run; head = first %d%% of requests, tail = the rest, each"
      % round(100 * args.head))
    p("#   over fast-only's same part); fw: share of written pages placed on the fastest device;")
    p("#   ev/req: evictions per request (of which sync: waited for, the background queue full);")
    p("#   sync%: share of the latency spent waiting for synchronous evictions; fast-served: share of")
    p("#   requests served from the fastest device alone, and their mean latency (us) against the rest's;")
    p("#   util: last device busy (fg+bg), of which background/drained synchronously.")
    p("#   Learning policies: mean (min-max) over seeds %s." % ",".join(str(s) for s in range(1, args.seeds + 1)))
    for hss in args.hss.split(","):
        for trace in traces:
            data = record.concat(list(open_trace(trace)))
            ref = run(data, hss, "fast-only", 1, args.head)
            rl = {k: ref[k]["lat"] / ref[k]["requests"] for k in ("head", "tail", "all")}
            p("\nHSS %s  %s  (%d requests)" % (hss, trace, len(data)))
            p("  %-26s %-20s %-20s %-20s %-17s %-9s %-7s %-6s %-20s %s" % (
                "policy", "norm", "norm head", "norm tail", "fw (head/tail)", "ev/req", "sync", "sync%",
                "fast-served lat", "util last (bg/sync)"))
            for pol in policies:
                seeds = range(1, args.seeds + 1) if "harmonia" in pol or pol == "sibyl" else [1]
                rs = [run(data, hss, pol, s, args.head, args.agents, args.param) for s in seeds]
                norm = lambda r, k: r[k]["lat"] / r[k]["requests"] / rl[k]
                fw = lambda r, k: r[k]["fast_w"] / r[k]["wpages"] if r[k]["wpages"] else 0.0
                last = len(rs[0]["res"]["devices"]) - 1
                sr = [r["res"]["served_requests"] for r in rs]
                fs = [s[0] / sum(s) for s in sr]
                flat = [r["res"]["served_latency_us"][0] for r in rs]
                slat = [sum(l * n for l, n in zip(r["res"]["served_latency_us"][1:], r["res"]["served_requests"][1:]))
                        / max(1, sum(r["res"]["served_requests"][1:])) for r in rs]
                p("  %-26s %-20s %-20s %-20s %-17s %-9s %-7s %-6s %-20s %s" % (
                    pol,
                    fmt_range([norm(r, "all") for r in rs]),
                    fmt_range([norm(r, "head") for r in rs]),
                    fmt_range([norm(r, "tail") for r in rs]),
                    "%.2f/%.2f" % (sum(fw(r, "head") for r in rs) / len(rs), sum(fw(r, "tail") for r in rs) / len(rs))
                    + ("" if len(rs) == 1 else " [%s]" % ",".join("%.2f" % fw(r, "all") for r in rs)),
                    "%.2f" % (sum(r["all"]["evictions"] for r in rs) / len(rs) / len(data)),
                    "%d" % round(sum(r["all"]["sync"] for r in rs) / len(rs)),
                    "%.0f%%" % (100 * sum(r["all"]["sync_wait"] / r["all"]["lat"] for r in rs) / len(rs)),
                    "%.0f%% %.0f/%.0f" % (100 * sum(fs) / len(fs), sum(flat) / len(flat), sum(slat) / len(slat)),
                    "%.2f (%.2f/%.2f)" % tuple(sum(r["res"][k][last] for r in rs) / len(rs) for k in
                                               ("device_utilization", "background_utilization",
                                                "sync_utilization"))))
            sys.stdout.flush()


FREEZE = 1_000_000_000   # train_every larger than any run's decisions: that agent never trains
VARIANTS = (("both learn", []), ("placement frozen", ["train_every=%d" % FREEZE]),
            ("migration frozen", ["m_train_every=%d" % FREEZE]))


def new_page_actions(agent, slow, free=0, queue=None):
    """The placement agent's greedy action for a write of 1, 2, 4 .. 64 pages to a page never accessed
    before (interval and since-migration bins at 'never', count 0, on device `slow`), the fastest
    device's free bin `free` (0: full): '0' = fastest device, else bypassed.  queue: the 8th feature's
    bin for an agent that has it (default 0, the queues empty)."""
    extra = [] if agent.nfeatures == 7 else [0 if queue is None else queue]
    return "".join(str(agent.greedy([1, sz, 63, 0, free, slow, 63] + extra)) for sz in range(7))


def new_page_cutoff(agent, ndev):
    """new_page_actions with the fastest device full (the --probe state)."""
    return new_page_actions(agent, ndev - 1)


def learning(args):
    """results/learning/learning.txt's ratio taken apart.  Per workload, HSS and seed: run 1 replays the whole
    trace from the shipped agents (as a user runs it) and saves its final agents; run 2 replays the
    first --head from those final agents.  ratio = run 1's latency over the head / run 2's (the
    learning.txt figure).  The same with the placement agent frozen (train_every huge: it never takes
    a training step, in either run) and with the migration agent frozen (m_train_every): the ratio
    left is what the other agent's online learning gives.  Counters are over the head of each run."""
    import tempfile
    from hbl.experiments.compare import LONG, default_traces
    traces = args.trace or [t for t in default_traces() if t.startswith("synth:")]
    p = print
    p("# scripts/writeonly_diag.py --learning --hss %s --seeds %d --head %g%s%s" % (
        args.hss, args.seeds, args.head, "".join(" --trace " + t for t in args.trace or []),
        "".join(" --param " + x for x in args.param or [])))
    p("# ratio: run 1 (shipped agents, learning) / run 2 (its final agents) average latency over the first %d%%"
      % round(100 * args.head))
    p("#   of the requests (results/learning/learning.txt's figure); fw: written pages placed on the fastest device")
    p("#   (1 - fw: bypassed); prom/1k: promotions per 1000 requests; rhit: page reads served by the fastest")
    p("#   device; sync%: latency share waiting for synchronous evictions; ev/req: evictions per request;")
    p("#   fast: requests served by the fastest device alone; each 'run 1 > run 2' over the head.")
    p("#   steps: training steps taken in run 1 (placement/migration; 0 = frozen, and its weights checked")
    p("#   unchanged); all us: run 1's mean latency over the whole trace; lat us: mean latency over the head;")
    p("#   new-page cut-off: the placement agent's greedy action for a new page of 1,2,4..64 pages, fastest")
    p("#   device full (0 = fastest): shipped > after the head of run 1 > final.")
    for hss in args.hss.split(","):
        config = load_hss(hss)
        for trace in traces:
            data = record.concat(list(open_trace(trace)))
            if len(data) < LONG:
                continue
            cut = max(1, int(len(data) * args.head))
            caps = config.capacity_pages(footprint_pages([data]), 4096)
            p("\nHSS %s  %s  (%d requests, head %d)" % (hss, trace, len(data), cut))
            p("  %-17s %-4s %6s  %-7s %-11s %-11s %-11s %-11s %-11s %-11s %-11s %-9s %s" % (
                "agents", "seed", "ratio", "all us", "lat us", "fw", "prom/1k", "rhit", "sync%", "ev/req", "fast", "steps",
                "new-page cut-off"))
            for label, extra in VARIANTS:
                params = list(args.param or []) + extra
                ratios = []
                for seed in range(1, args.seeds + 1):
                    with tempfile.TemporaryDirectory(prefix="hbl-learndiag-") as d:
                        final = Path(d) / "final.agent"
                        s1 = loaded(config, "harmonia", caps, seed, params, pretrained.shipped("harmonia", hss, seed),
                                    **SIM)
                        before = [a.params() for a in s1.agents()]
                        cut0 = new_page_cutoff(s1.agents()[0], len(config.devices))
                        z = counters(s1)
                        s1.feed(data[:cut])
                        h1 = delta(z, counters(s1))
                        cuth = new_page_cutoff(s1.agents()[0], len(config.devices))
                        s1.feed(data[cut:])
                        whole = s1.stats().latency_sum_ns / len(data) / 1e3
                        s1.save_agents(final)
                        steps = [a.stats()["train_steps"] for a in s1.agents()]
                        for a, w, n in zip(s1.agents(), before, steps):
                            if n == 0 and not (a.params() == w).all():
                                raise AssertionError("a frozen agent's weights changed")
                        s2 = loaded(config, "harmonia", caps, seed, params, final, **SIM)
                        cut1 = new_page_cutoff(s2.agents()[0], len(config.devices))
                        z = counters(s2)
                        s2.feed(data[:cut])
                        h2 = delta(z, counters(s2))
                    r = h1["lat"] / h2["lat"]
                    ratios.append(r)
                    both = lambda f, form: "%s>%s" % (form % f(h1), form % f(h2))
                    p("  %-17s s%-3d %6.3f  %-7.1f %-11s %-11s %-11s %-11s %-11s %-11s %-11s %-9s %s>%s>%s" % (
                        label, seed, r, whole, both(lambda h: h["lat"] / h["requests"] / 1e3, "%.1f"),
                        both(lambda h: h["fast_w"] / max(1, h["wpages"]), "%.3f"),
                        both(lambda h: 1000.0 * h["promotions"] / h["requests"], "%.1f"),
                        both(lambda h: h["rhits"] / max(1, h["rpages"]), "%.3f"),
                        both(lambda h: 100.0 * h["sync_wait"] / h["lat"], "%.1f"),
                        both(lambda h: h["evictions"] / h["requests"], "%.2f"),
                        both(lambda h: h["served_fast"] / h["requests"], "%.2f"),
                        "/".join(map(str, steps)), cut0, cuth, cut1))
                    sys.stdout.flush()
                p("  %-17s      %6s  (min-max %.3f-%.3f)" % (label, "", min(ratios), max(ratios)))


def probe(args):
    """What the pretrained placement agents do, before any online learning, with a write to a page
    never accessed before (interval and since-migration bins at their 'never' value, count 0, on
    the slowest device) and with a rewrite of a page on the fastest device (10 requests ago, 3
    accesses), for request sizes of 1, 2, 4 .. 64 pages, with the fastest device empty or full."""
    p = print
    p("# scripts/writeonly_diag.py --probe --hss %s --seeds %d%s%s" % (
        args.hss, args.seeds, " --agents " + args.agents if args.agents else "",
        "".join(" --param " + x for x in args.param or [])))
    p("# greedy action (0 = fastest device) per request size 1,2,4,8,16,32,64 pages")
    for hss in args.hss.split(","):
        for pol in ("harmonia", "harmonia-placement-only"):
            for seed in range(1, args.seeds + 1):
                config = load_hss(hss)
                sim = loaded(config, pol, config.capacity_pages(10_000, 4096), seed,
                             args.param if pol == "harmonia" else None,
                             pretrained.agent_file(pol, hss, seed, args.agents) if args.agents and pol == "harmonia"
                             else pretrained.shipped(pol, hss, seed))
                ag, slow = sim.agents()[0], len(config.devices) - 1
                # an 8-feature agent (queue_feature=1): with the background queues empty, then full
                for queue in ([None] if ag.nfeatures == 7 else [0, 3]):
                    cols = []
                    for free, label in ((7, "fast empty"), (0, "fast full")):
                        fresh = new_page_actions(ag, slow, free, queue)
                        again = "".join(str(ag.greedy([1, sz, 10, 6, free, 0, 63] + ([] if queue is None else [queue])))
                                        for sz in range(7))
                        cols.append("%s: new page %s, rewrite %s" % (label, fresh, again))
                    p("  %-4s %-24s s%d %s %s" % (hss, pol, seed, {0: "queues empty", 3: "queues full "}.get(
                        queue, ""), " | ".join(cols)))


def suite(args):
    import math
    from hbl.experiments.compare import default_traces
    from hbl.sim import simulate
    p = print
    p("# scripts/writeonly_diag.py --suite --hss %s --seeds %d%s%s" % (
        args.hss, args.seeds, " --agents " + args.agents if args.agents else "",
        "".join(" --param " + x for x in args.param or [])))
    p("# average latency / fast-only's; harmonia: mean over seeds (min-max); '!': > 3%% behind the best of %s"
      % ", ".join(BASELINES))
    traces = default_traces()
    for hss in args.hss.split(","):
        rows, gm = [], {"shipped": [], "candidate": [], "best": []}
        for t in traces:
            ref = simulate(t, hss=hss, policy="fast-only")["avg_latency_us"]
            base = {b: simulate(t, hss=hss, policy=b)["avg_latency_us"] / ref for b in BASELINES}
            best = min(base, key=base.get)
            shipped = [simulate(t, hss=hss, policy="harmonia", seed=s)["avg_latency_us"] / ref
                       for s in range(1, args.seeds + 1)]
            cand = None
            if args.agents:
                cand = [simulate(t, hss=hss, policy="harmonia", seed=s, params=args.param,
                                 load_agents=pretrained.agent_file("harmonia", hss, s, args.agents))["avg_latency_us"]
                        / ref for s in range(1, args.seeds + 1)]
            name = t.split(":", 1)[1].split(":")[0] if t.startswith(("bundled:", "apps:", "workload:")) else t
            cell = lambda v: "%8.2f%s (%.2f-%.2f)" % (sum(v) / len(v), "!" if sum(v) / len(v) > 1.03 * base[best]
                                                     else " ", min(v), max(v))
            rows.append("  %-28s %-6s %9.2f   %-26s %s" % (name[:28], best, base[best], cell(shipped),
                                                         cell(cand) if cand else ""))
            gm["best"].append(base[best])
            gm["shipped"].append(sum(shipped) / len(shipped))
            if cand:
                gm["candidate"].append(sum(cand) / len(cand))
            sys.stdout.flush()
        g = lambda v: math.exp(sum(map(math.log, v)) / len(v)) if v else float("nan")
        p("\nHSS %s (%d workloads)" % (hss, len(traces)))
        p("  %-28s %-6s %9s   %-26s %s" % ("workload", "best", "x", "harmonia shipped", "harmonia candidate"))
        for r in rows:
            p(r)
        p("  %-28s %-6s %9.2f   %8.2f %17s %8.2f" % ("geomean", "", g(gm["best"]), g(gm["shipped"]), "",
                                                 g(gm["candidate"])))
        p("  behind the best production baseline by > 3%%: shipped %d, candidate %d" % (
            sum(r.count("!") > 0 and r.split()[3].endswith("!") for r in rows),
            sum(len(r.split()) > 5 and r.split()[5].endswith("!") for r in rows)))


def decisions(args):
    from hbl.core import lib
    p = print
    p("# scripts/writeonly_diag.py --decisions --hss %s --seeds %d%s%s%s" % (
        args.hss, args.seeds, "".join(" --trace " + t for t in args.trace or []),
        " --agents " + args.agents if args.agents else "", "".join(" --param " + x for x in args.param or [])))
    p("# harmonia's write requests (one request at a time), by their first page: new (never written) or")
    p("# written before, and whether the fastest device was full when it was served; 'slow': requests")
    p("# not placed on the fastest device entirely, their share of all requests, their mean latency")
    for hss in args.hss.split(","):
        for trace in args.trace or list(WORKLOADS):
            data = record.concat(list(open_trace(trace)))
            config = load_hss(hss)
            caps = config.capacity_pages(footprint_pages([data]), 4096)
            for seed in range(1, args.seeds + 1):
                sim = loaded(config, "harmonia", caps, seed, args.param, pretrained.agent_file(
                    "harmonia", hss, seed, args.agents) if args.agents else pretrained.shipped("harmonia", hss, seed))
                seen, tot, slow, slow_lat = set(), {}, {}, {}
                for i in range(len(data)):
                    r = data[i:i + 1]
                    page = int(r["offset"][0]) // 4096
                    npages = (int(r["offset"][0]) + int(r["length"][0]) + 4095) // 4096 - page
                    full = lib.hbl_sim_free_pages(sim.sim, 0) <= 0
                    before = counters(sim)
                    sim.feed(r)
                    d = delta(before, counters(sim))
                    if not d["wpages"]:
                        continue
                    key = ("rewrite" if page in seen else "new page") + (", fast full" if full else ", fast has room")
                    seen.add(page)
                    tot[key] = tot.get(key, 0) + 1
                    if d["fast_w"] < npages:
                        slow[key] = slow.get(key, 0) + 1
                        slow_lat[key] = slow_lat.get(key, 0.0) + d["lat"]
                n = sum(tot.values())
                p("  %-4s %-16s s%d  %s" % (hss, trace, seed, "; ".join(
                    "%s %d, slow %d (%.1f%%, %.0f us)" % (k, tot[k], slow.get(k, 0), 100.0 * slow.get(k, 0) / n,
                                                        slow_lat.get(k, 0) / slow[k] / 1e3 if slow.get(k) else 0)
                    for k in sorted(tot))))
            sys.stdout.flush()


def windows(args):
    p = print
    p("# scripts/writeonly_diag.py --windows %d%s --hss %s --seeds %d%s --policies %s%s%s" % (
        args.windows, " --reads" if args.reads else "", args.hss, args.seeds,
        "".join(" --trace " + t for t in args.trace or []), args.policies,
        " --agents " + args.agents if args.agents else "", "".join(" --param " + x for x in args.param or []))
      + (" --migrate-every %d" % SIM["migrate_every"] if SIM else ""))
    p("# per window of the trace (in request order): latency / fast-only's in the same window, then the")
    p("# share of written pages placed on the fastest device; learning policies: each seed")
    for hss in args.hss.split(","):
        for trace in args.trace or list(WORKLOADS):
            data = record.concat(list(open_trace(trace)))
            ref, _ = run_windows(data, hss, "fast-only", 1, args.windows)
            p("\nHSS %s  %s  (%d requests, windows of %d)" % (hss, trace, len(data), len(data) // args.windows))
            for pol in args.policies.split(","):
                seeds = range(1, args.seeds + 1) if "harmonia" in pol or pol == "sibyl" else [1]
                for s in seeds:
                    ws, res = run_windows(data, hss, pol, s, args.windows, args.agents, args.param)
                    steps = [a["train_steps"] for a in res.get("agents", [])]
                    p("  %-26s %-3s norm %s" % (pol, "s%d" % s if len(seeds) > 1 else "",
                                                " ".join("%6.2f" % (w["lat"] / w["requests"] / (r["lat"] / r["requests"]))
                                                         for w, r in zip(ws, ref))))
                    if args.reads:
                        p("  %-26s %-3s rhit %s   (promotions %s)" % (
                            "", "", " ".join("%6.2f" % (w["rhits"] / w["rpages"] if w["rpages"] else 0) for w in ws),
                            "/".join(str(w["promotions"]) for w in ws)))
                        continue
                    p("  %-26s %-3s fw   %s%s" % ("", "", " ".join("%6.2f" % (w["fast_w"] / w["wpages"] if w["wpages"]
                                                                          else 0) for w in ws),
                                              "   (train steps %s)" % "/".join(map(str, steps)) if steps else ""))
            sys.stdout.flush()


def reads(args):
    """The read side: a read is a fast hit only if its page was put on the fastest device before, by a
    write or a move; with a migration agent, harmonia's placement agent does not act on reads."""
    traces = args.trace or list(WORKLOADS)
    policies = args.policies.split(",")
    p = print
    p("# scripts/writeonly_diag.py --reads --hss %s --seeds %d --head %g%s%s%s --policies %s" % (
        args.hss, args.seeds, args.head, "".join(" --trace " + t for t in args.trace or []),
        " --agents " + args.agents if args.agents else "", "".join(" --param " + x for x in args.param or []),
        args.policies) + (" --migrate-every %d" % SIM["migrate_every"] if SIM else ""))
    p("# norm: avg latency / fast-only (whole run, head = first %d%% of requests, tail = the rest);"
      % round(100 * args.head))
    p("#   rhit: page reads served by the fastest device (head/tail; [per seed] whole run); prom: promotions;")
    p("#   moves: moves the policy asked for and made (promotions + evictions other than the fallback's);")
    p("#   refused: optional moves refused (background queue full); sync%: latency share waiting for")
    p("#   synchronous evictions; served: share of requests served from the fastest device alone and the mean")
    p("#   latency (us) of those / of the rest; mig agent: the migration agent's decisions (candidates scored)")
    p("#   and the moves made, per seed.  Learning policies: mean (min-max) over seeds %s."
      % ",".join(str(s) for s in range(1, args.seeds + 1)))
    for hss in args.hss.split(","):
        for trace in traces:
            data = record.concat(list(open_trace(trace)))
            ref = run(data, hss, "fast-only", 1, args.head)
            rl = {k: ref[k]["lat"] / ref[k]["requests"] for k in ("head", "tail", "all")}
            p("\nHSS %s  %s  (%d requests, %.0f%% of pages accessed read)" % (
                hss, trace, len(data), 100.0 * ref["all"]["rpages"] / max(1, ref["all"]["rpages"] + ref["all"]["wpages"])))
            p("  %-26s %-22s %-22s %-22s %-24s %-7s %-6s %-7s %-6s %-18s %s" % (
                "policy", "norm", "norm head", "norm tail", "rhit (head/tail)", "prom", "moves", "refused", "sync%",
                "served fast lat", "mig agent"))
            for pol in policies:
                seeds = range(1, args.seeds + 1) if "harmonia" in pol or pol == "sibyl" else [1]
                rs = [run(data, hss, pol, s, args.head, args.agents, args.param) for s in seeds]
                norm = lambda r, k: r[k]["lat"] / r[k]["requests"] / rl[k]
                rh = lambda r, k: r[k]["rhits"] / r[k]["rpages"] if r[k]["rpages"] else 0.0
                avg = lambda f: sum(f(r) for r in rs) / len(rs)
                sr = [r["res"]["served_requests"] for r in rs]
                fs = [x[0] / sum(x) for x in sr]
                flat = [r["res"]["served_latency_us"][0] for r in rs]
                slat = [sum(l * n for l, n in zip(r["res"]["served_latency_us"][1:], r["res"]["served_requests"][1:]))
                        / max(1, sum(r["res"]["served_requests"][1:])) for r in rs]
                mig = ""
                if pol.startswith("harmonia") and pol != "harmonia-placement-only":
                    ms = [r["res"]["agents"][-1] for r in rs]
                    dec = [m["decisions"] for m in ms]
                    mig = "%s dec, moved %s" % ("/".join(map(str, dec)),
                                                "/".join(str(r["all"]["moves"]) for r in rs))
                p("  %-26s %-22s %-22s %-22s %-24s %-7s %-6s %-7s %-6s %-18s %s" % (
                    pol, fmt_range([norm(r, "all") for r in rs]), fmt_range([norm(r, "head") for r in rs]),
                    fmt_range([norm(r, "tail") for r in rs]),
                    "%.3f/%.3f" % (avg(lambda r: rh(r, "head")), avg(lambda r: rh(r, "tail")))
                    + ("" if len(rs) == 1 else " [%s]" % ",".join("%.3f" % rh(r, "all") for r in rs)),
                    "%d" % round(avg(lambda r: r["all"]["promotions"])), "%d" % round(avg(lambda r: r["all"]["moves"])),
                    "%d" % round(avg(lambda r: r["all"]["refused"])),
                    "%.0f%%" % (100 * avg(lambda r: r["all"]["sync_wait"] / r["all"]["lat"])),
                    "%.0f%% %.0f/%.0f" % (100 * sum(fs) / len(fs), sum(flat) / len(flat), sum(slat) / len(slat)),
                    mig))
            sys.stdout.flush()


def rounds(args):
    """Harmonia's migration rounds, one at a time (the trace fed migrate_every requests at a time):
    the candidates the migration agent scored, by kind (a recently read page below the fastest device:
    'hot', a page of a faster device from its LRU end: 'cold'), their features, the agent's values
    (expected return per target device; the agent as it is at the end of the round, trained online)
    and what it did."""
    import collections
    from hbl.sim.model import DEFAULTS
    every = SIM.get("migrate_every", DEFAULTS["migrate_every"])
    p = print
    pol = args.policies if args.policies in ("harmonia", "harmonia-migration-only") else "harmonia"
    p("# scripts/writeonly_diag.py --rounds --hss %s --seeds %d%s%s --policies %s" % (
        args.hss, args.seeds, "".join(" --trace " + t for t in args.trace or []),
        (" --agents " + args.agents if args.agents else "") + "".join(" --param " + x for x in args.param or []), pol)
      + (" --migrate-every %d" % SIM["migrate_every"] if SIM else ""))
    p("# per round (every %d requests): hot = recently read pages below the fastest device scored, of which" % every)
    p("#   promoted; cold = pages of the faster devices scored, of which demoted; free: the fastest device's")
    p("#   free-capacity bin seen (0 = full .. 7 = empty); int/cnt: median interval and count bins of the hot")
    p("#   candidates; Q hot: the agent's mean value of keeping a hot page where it is / of promoting it")
    p("#   (the best faster device), and how many it would promote greedily; prior: the same for the shipped")
    p("#   agent, before any online training; targets: the agent's chosen device per candidate (0 = fastest),")
    p("#   counted; moves: all moves made in the round (promotions include the copies of partly written pages)")
    for hss in args.hss.split(","):
        for trace in args.trace or ["bundled:hm_0"]:
            data = record.concat(list(open_trace(trace)))
            config = load_hss(hss)
            caps = config.capacity_pages(footprint_pages([data]), 4096)
            p("\nHSS %s  %s  (%d requests, fast device %d pages)" % (hss, trace, len(data), caps[0]))
            for seed in range(1, args.seeds + 1):
                path = (pretrained.agent_file(pol, hss, seed, args.agents) if args.agents and pol == "harmonia"
                        else pretrained.shipped(pol, hss, seed))
                sim = loaded(config, pol, caps, seed, args.param, path, **SIM)
                prior = loaded(config, pol, caps, seed, args.param, path, **SIM)
                ma, pa0 = sim.agents()[-1], prior.agents()[-1]
                tot = collections.Counter()
                buffered = 0
                for k in range(0, len(data), every):
                    before = counters(sim)
                    a0 = ma.stats()
                    sim.feed(data[k:k + every])
                    d = delta(before, counters(sim))
                    a1 = ma.stats()
                    # the candidates of the previous round are remembered 50 requests into this one
                    nb = a1["buffered"] - buffered
                    buffered = a1["buffered"]
                    states = ma.buffer_states()[-nb:] if nb > 0 else []
                    hot = [s for s in states if s[5] > 0 and k > 0]
                    cold = [s for s in states if s[5] == 0]
                    acts = [x - y for x, y in zip(a1["actions"], a0["actions"])]
                    line = "  s%d req %6d  targets %-9s moves %2d (promotions %2d), refused %d" % (
                        seed, min(k + every, len(data)), "/".join(map(str, acts)), d["moves"], d["promotions"],
                        d["refused"])
                    if hot:
                        qs = [ma.values(s) for s in hot]
                        keep = [q[s[5]] for q, s in zip(qs, hot)]
                        up = [max(q[:s[5]]) for q, s in zip(qs, hot)]
                        g = sum(1 for q, s in zip(qs, hot) if max(range(len(q)), key=q.__getitem__) < s[5])
                        g0 = sum(1 for s in hot if pa0.greedy(s) < s[5])
                        q0 = [pa0.values(s) for s in hot]
                        keep0 = sum(q[s[5]] for q, s in zip(q0, hot)) / len(hot)
                        up0 = sum(max(q[:s[5]]) for q, s in zip(q0, hot)) / len(hot)
                        med = lambda v: sorted(v)[len(v) // 2]
                        line += ("  | prev round: hot %2d free %s int %d cnt %d  Q keep/promote %.4f/%.4f, greedy "
                                 "promotes %d; prior %.4f/%.4f, %d; cold %d" % (
                                     len(hot), "".join(sorted(set(str(s[4]) for s in hot))),
                                     med([s[2] for s in hot]), med([s[3] for s in hot]),
                                     sum(keep) / len(keep), sum(up) / len(up), g, keep0, up0, g0, len(cold)))
                        tot["hot"] += len(hot)
                        tot["greedy"] += g
                        tot["prior"] += g0
                    tot["prom"] += d["promotions"]
                    tot["moves"] += d["moves"]
                    p(line)
                p("  s%d total: %d hot candidates scored, %d promoted (greedy now: %d, prior: %d); %d moves" % (
                    seed, tot["hot"], tot["prom"], tot["greedy"], tot["prior"], tot["moves"]))
                # the prior's map: a read page (count bin c) on device d, read `interval` requests ago
                # (bins 3 per doubling: bin 12 = 15 requests, 18 = 63, 21 = 127, 24 = 255, 27 = 511,
                # 30 = 1023), the fastest device with room (free bin 3), never migrated
                for d in range(1, len(config.devices)):
                    for c in (4, 8, 12, 16):
                        p("      prior, page on device %d, count bin %2d: target by interval bin 0,3..36: %s" % (
                            d, c, "".join(str(pa0.greedy([0, 0, i, c, 3, d, 63])) for i in range(0, 37, 3))))
            sys.stdout.flush()


if __name__ == "__main__":
    main()
