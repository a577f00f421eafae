"""writeonly_diag.py's studies of the agents themselves (--learning, --probe, --decisions, --rounds):
what the placement agent does with a new page, why a long workload's head is slower than its end,
harmonia's write decisions one request at a time, and the migration agent's rounds.  Run them through
scripts/writeonly_diag.py (its --help); the figures are in results/learning/learndiag.txt and
results/diagnosis/missdiag.txt."""
import sys
from pathlib import Path

from hbl import record
from hbl.devices import load_hss
from hbl.sim import footprint_pages, pretrained
from hbl.trace import open_trace

from diag_runs import SIM, WORKLOADS, counters, delta, loaded


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
