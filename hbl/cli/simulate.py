"""hbl simulate: one trace, one policy."""
import os
import sys

from hbl.cli.options import (EPILOG_TRACES, check_distinct, check_output_dir, check_sim, reader_options, sim_args,
                             sim_options, trace_args)
from hbl.cmdline import print_json, write_json
from hbl.errors import HblError


def add_parsers(sub):
    """hbl simulate."""
    s = sub.add_parser("simulate", help="replay one trace with one policy",
                       description="Replay a trace through a simulated HSS with one policy and report "
                       "latency, fast-device hits and migrations.", epilog=EPILOG_TRACES)
    s.add_argument("--trace", default="bundled:hm_0", help="trace to replay (default bundled:hm_0)")
    s.add_argument("--hss", default="cost", help="perf (H+M), cost (H+L), tri, quad, or a .json file "
                   "(default cost)")
    s.add_argument("--policy", default="smq", help="policy name (`hbl policies`) or python:FILE.py:CLASS "
                   "(default smq)")
    s.add_argument("--json", action="store_true", help="print the result as JSON")
    s.add_argument("--timeline", metavar="FILE", help="write a JSON timeline (latency, hits per window)")
    s.add_argument("--agent", metavar="FILE", help="learning policies: start from the agents saved in FILE, or "
                   "'none' for untrained agents (default: the shipped pretrained agents of the policy, HSS preset "
                   "and seed, where there are some; `hbl pretrain`)")
    s.add_argument("--save-agent", metavar="FILE", help="learning policies: save the trained agents to FILE")
    s.add_argument("--quiet", action="store_true", help="no progress on stderr")
    trace_args(s)
    sim_args(s)
    s.set_defaults(func=cmd_simulate)


def cmd_simulate(a):
    from hbl.devices import load_hss
    from hbl.sim import Simulator, simulate
    from hbl.sim.guard import guard_params
    from hbl.sim.registry import COMPOSITES, parse_params
    plugin, policy = None, a.policy
    if policy == "python":
        raise HblError("--policy python needs a plugin class: --policy python:FILE.py:CLASS")
    check_sim(a, [a.hss])
    if policy in COMPOSITES:                # a composite checks its own parameters (hbl/sim/guard.py)
        guard_params(parse_params(a.param, policy))
        load_hss(a.hss, a.fast_capacity)
    elif not policy.startswith("python:"):   # the policy checks its parameters when built: build it now
        # (on a fast device of 1024 pages: the cache policies with queues of their own need several)
        hss = load_hss(a.hss, a.fast_capacity)
        Simulator(hss, policy, [1024] * (len(hss.devices) - 1) + [None], params=a.param, seed=a.seed,
                  **sim_options(a))
    check_output_dir(a.timeline, a.save_agent)
    from hbl.trace import input_files   # the files read, not the trace's name (workload:X: a file in a cache)
    check_distinct(*[("", f) for f in input_files(a.trace)], ("--timeline", a.timeline),
                   ("--save-agent", a.save_agent))
    if a.agent == "none":
        a.agent = False
    elif a.agent and not os.path.isfile(a.agent):
        raise HblError("%s: %s" % (a.agent, "is a directory, not an agent file (hbl compare --agents takes "
                                   "a directory)" if os.path.isdir(a.agent) else "no such file"))
    from hbl import progress as prog
    if policy.startswith("python:"):
        from hbl.sim.plugin import check, load_policy
        plugin = load_policy(policy)

    def progress(chunks, what):   # a plugin's failure stops the run at the next chunk
        for c in prog.chunks(chunks, what, quiet=a.quiet):
            yield c
            if plugin is not None:
                check(plugin)
    r = simulate(a.trace, hss=a.hss, policy=policy, fast_capacity=a.fast_capacity, params=a.param,
                 plugin=plugin, seed=a.seed, fmt=a.fmt, lenient=a.lenient, reader_options=reader_options(a),
                 timeline=bool(a.timeline), load_agents=a.agent, save_agents=a.save_agent,
                 progress=progress, **sim_options(a))
    if plugin is not None:
        check(plugin)
    if r.get("agents_not_loaded"):
        print("hbl: warning: " + r["agents_not_loaded"], file=sys.stderr)
    if a.timeline:
        write_json(a.timeline, r["timeline"])
        if not r["timeline"] and r["requests"]:
            from hbl.sim.model import DEFAULTS     # here: hbl.sim loads the C core and numpy
            every = int(DEFAULTS["timeline_every"])     # no option sets it
            print("hbl: warning: %s holds no rows: a row is written every %d requests, and the trace has %d"
                  % (a.timeline, every, r["requests"]), file=sys.stderr)
        if not a.json:
            del r["timeline"]
    if a.json:
        print_json(r)
        return 0
    print_result(r)
    if a.save_agent:
        print("  agents saved to %s" % a.save_agent)
    return 0


def print_result(r):
    """A simulate() result as `hbl simulate` prints it without --json."""
    from hbl.sim.model import replay_label
    print("policy %s on %s, HSS %s (%s), fast capacity %d pages of %d footprint; %s" % (
        r["policy"], r["trace"], r["hss"], "+".join(r["devices"]), r["capacity_pages"][0], r["footprint_pages"],
        replay_label(r["replay"])))
    if "oracle_family" in r:
        print("  oracle          best of %s" % ", ".join("%s %.1f us" % (
            ",".join("%s=%g" % kv for kv in v["params"].items()), v["avg_latency_us"]) for v in r["oracle_family"]))
    print("  requests        %d (%d reads, %d writes; %d not simulated)" % (
        r["requests"], r["reads"], r["writes"], r["skipped"]))
    print("  avg latency     %.1f us   p50 %.1f  p95 %.1f  p99 %.1f  p99.9 %.1f us" % (
        r["avg_latency_us"], r["p50_latency_us"], r["p95_latency_us"], r["p99_latency_us"], r["p999_latency_us"]))
    print("  read hit ratio  %.3f of page reads served by %s; %.3f of page writes landed there" % (
        r["read_hit_ratio"], r["devices"][0], r["fast_write_share"]))
    print("  migrations      %d promotions, %d evictions (%d forced by a full device, %d free), %.1f MiB moved" % (
        r["promotions"], r["evictions"], r["fallback_evictions"], r["clean_evictions"], r["migrated_bytes"] / 2 ** 20))
    print("  background I/O  %d I/Os in idle time; %d evictions waited for (queue full), %d moves refused; "
          "%.1f us per request waiting behind it" % (r["background_ios"], r["sync_evictions"], r["moves_refused"],
                                                     r["background_wait_us"]))
    print("  utilization     " + ", ".join("%s %.0f%%" % (d, 100 * u) for d, u in
                                          zip(r["devices"], r["device_utilization"])))
    print("  throughput      %.0f IOPS simulated; simulator ran %.2f M requests/s" % (
        r["throughput_iops"], r["requests_per_second"] / 1e6))
    if "agents_from" in r:
        print("  agents from     %s" % r["agents_from"])
    if "guard" in r:
        g = r["guard"]
        print("  guard           %d switch%s (%s), %s active at the end; windows of %d, margin %g" % (
            g["switches"], "" if g["switches"] == 1 else "es", ", ".join("%s->%s after %d" % (s["frm"], s["to"], s["after"]) for s in g["switch_log"])
            or "none", g["final_active"], g["window"], g["margin"]))
        print("  members alone   " + ", ".join("%s %.1f" % kv for kv in g["alone_us"].items()) + " us")
        print("  guard's cost    %.2f s of simulator time (members, live copies with the trace read again to "
              "build them, diagnostic)" % g["simulator_wall_s"])
    for i, ag in enumerate(r.get("agents", [])):
        print("  agent %d         %d decisions (%d explored), %d training steps, epsilon %.3f, "
              "recent reward %.3f" % (i, ag["decisions"], ag["explorations"], ag["train_steps"], ag["epsilon"],
                                      ag["reward_ewma"]))
    if r.get("bad_lines_skipped"):
        print("  skipped         %d bad lines (--lenient)" % r["bad_lines_skipped"])
