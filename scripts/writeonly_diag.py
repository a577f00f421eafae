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

from hbl import record
from hbl.sim import pretrained
from hbl.trace import open_trace

from diag_runs import SIM, WORKLOADS, fmt_range, run, run_windows
from writeonly_agents import decisions, learning, probe, rounds

BASELINES = ("lru", "nhit", "smq", "seqcutoff")
LEARNING = ("harmonia", "harmonia/untrained", "harmonia-placement-only", "harmonia-migration-only")


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
    return writes(args)


def writes(args):
    """The write side (the default study): where writes go, the evictions they force, head against tail."""
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


if __name__ == "__main__":
    main()
