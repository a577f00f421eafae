"""`hbl bench`: simulator throughput per policy on a synthetic trace, on this machine.

The trace is generated once (outside the timing); each policy then runs over
it with the same configuration, and requests/s counts only time in the
simulator (C), as a user replaying a converted trace would see it.
"""
import os
import platform
import tempfile
import time

import numpy as np

from hbl.sim import pretrained
from hbl import record
from hbl.sim import Simulator, footprint_pages
from hbl.sim.model import replay_label
from hbl.sim.registry import COMPOSITES, policy_names
from hbl.devices import load_hss
from hbl.trace.synthetic import SyntheticTrace

BENCH_TRACE = "synth:zipf:requests=%d,pages=262144,alpha=0.9,read=0.6,seed=42"


def libcachesim_lru(data, capacity_pages, page_size=4096):
    """The baseline: libCacheSim's LRU (C, through its Python bindings) on the same
    page-access sequence.  Returns (requests/s, hit ratio), or None without libcachesim."""
    try:
        import libcachesim as lcs
    except ImportError:
        return None
    first = data["offset"] // page_size
    last = (data["offset"] + np.maximum(data["length"], 1) - 1) // page_size
    pages = np.concatenate([np.arange(a, b + 1) for a, b in zip(first.tolist(), last.tolist())]) \
        if (last != first).any() else first
    rec = np.zeros(len(pages), dtype=[("t", "<u4"), ("id", "<u8"), ("size", "<u4"), ("next", "<i8")])
    rec["id"], rec["size"], rec["next"] = pages, page_size, -1
    with tempfile.NamedTemporaryFile(suffix=".oracleGeneral") as f:
        rec.tofile(f.name)
        reader = lcs.TraceReader(f.name, lcs.TraceType.ORACLE_GENERAL_TRACE)
        cache = lcs.LRU(cache_size=capacity_pages * page_size)
        t = time.perf_counter()
        miss = cache.process_trace(reader)[0]
        return len(data) / (time.perf_counter() - t), 1.0 - miss


def agent_figures(sim):
    """Inference cost of Harmonia's placement agent on the states of its last real
    decisions (from its experience buffer), and the memory of both agents."""
    agents = sim.agents()
    states, pa = agents[0].buffer_states(), agents[0]
    timed = {"placement_inference_ns": pa.bench_forward_ns, "placement_decision_ns": pa.bench_decision_ns,
             "placement_inference_fp32_ns": pa.bench_fp32_ns,
             "placement_linear_fp32_ns": lambda s, n: pa.bench_fp32_ns(s, n, linear=True)}
    # best of 5 runs of 200k calls each, the four interleaved so that the int16 and FP32 figures
    # see the same host: a shared host's noise only ever adds time
    out = {k: float("inf") for k in timed}
    for _ in range(5):
        for k, f in timed.items():
            out[k] = min(out[k], f(states, n=200_000))
    out["agents_memory_bytes"] = sum(a.memory_bytes() for a in agents)
    return out


def bench(requests=1_000_000, policies=None, hss="cost", repeat=3):
    spec = BENCH_TRACE % requests
    data = record.concat(SyntheticTrace(spec, chunk=1 << 20))
    footprint = footprint_pages([data])
    config = load_hss(hss)
    caps = config.capacity_pages(footprint, 4096)
    rates, agents, loaded = {}, None, False
    future = set(policy_names("needs_future"))
    for p in policies or [n for n in policy_names() if n != "python"]:
        best = 0.0
        shipped = pretrained.shipped(p, hss, 1)
        for _ in range(repeat):
            # as simulate runs it: from the pretrained agents, no random warm-up
            if p in COMPOSITES:                 # as simulate builds it: harmonia from its shipped agents
                from hbl.sim.guard import build
                sim = build(config, caps, agents_from=pretrained.shipped("harmonia", hss, 1))
            else:
                sim = Simulator.with_agents(config, p, caps, shipped)
            loaded = loaded or bool(shipped)
            if p in future:
                sim.set_future(data)
            t = time.perf_counter()
            sim.feed(data)
            if p in COMPOSITES:
                sim.finish()                    # its last, partial window
            best = max(best, len(data) / (time.perf_counter() - t))
        rates[p] = best
        if p == "harmonia":
            agents = agent_figures(sim)
    baseline = libcachesim_lru(data, caps[0])
    return {
        "trace": spec, "trace_requests": len(data), "hss": hss, "footprint_pages": footprint, "replay": sim.replay,
        "repeat": repeat, "sim_requests_per_second": rates,
        "agents_from": "pretrained" if loaded else "untrained",
        "baseline_libcachesim_lru_requests_per_second": baseline[0] if baseline else None,
        **(agents or {}),
        "machine": {"cpu": _cpu(), "cores": os.cpu_count(), "python": platform.python_version()},
    }


def _cpu():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor()


def format_bench(b):
    lines = ["simulator throughput, %s (%d requests, HSS %s, %s, best of %d; learning policies start from %s "
             "agents and train online)" % (b["trace"], b["trace_requests"], b["hss"], replay_label(b["replay"]),
                                           b["repeat"], b.get("agents_from", "untrained")),
        "machine: %s, %d cores" % (b["machine"]["cpu"], b["machine"]["cores"])]
    for p, r in b["sim_requests_per_second"].items():
        lines.append("  %-24s %7.2f M requests/s" % (p, r / 1e6))
    if "placement_inference_ns" in b:
        lines.append("harmonia placement agent: %.0f ns per forward pass (int16), %.0f ns per decision with the "
                     "decision cache (states of its last 1000 real decisions; best of 5)" % (
                         b["placement_inference_ns"], b["placement_decision_ns"]))
        lines.append("  the same network in FP32: %.0f ns per forward pass, of which the layers' multiply-adds "
                     "alone (no activations, no C51 expectation) %.0f ns" % (
                         b["placement_inference_fp32_ns"], b["placement_linear_fp32_ns"]))
        lines.append("harmonia agents' memory: %d bytes (%.1f KiB)" % (
            b["agents_memory_bytes"], b["agents_memory_bytes"] / 1024))
    base = b.get("baseline_libcachesim_lru_requests_per_second")
    lines.append("baseline, same trace and machine: libCacheSim LRU (cache model only, no devices) %s" % (
        "%.2f M requests/s" % (base / 1e6) if base else "not measured (pip install libcachesim)"))
    return "\n".join(lines)


AGREEMENT_POLICIES = ("harmonia", "sibyl")
AGENT_ROLES = ("placement", "migration")    # the agents' order (ctypes_core/policies/harmonia.c agents())
ROLES_OF = {"harmonia-migration-only": ("migration",)}


def agreement_run(job):
    """One simulation with every greedy decision also taken by the FP32 network."""
    from hbl.sim import pretrained
    from hbl.trace import open_trace
    policy, hss, trace, seed = job
    config = load_hss(hss)
    caps = config.capacity_pages(footprint_pages(open_trace(trace)), 4096)
    shipped = pretrained.shipped(policy, hss, seed)
    # the shadow set before loading: a file of version 1 gives the FP32 copy at once
    sim = Simulator.with_agents(config, policy, caps, shipped, seed=seed,
                                before_load=lambda s: [a.set_shadow(True) for a in s.agents()])
    for chunk in open_trace(trace):
        sim.feed(chunk)
    return [dict(policy=policy, hss=hss, trace=trace, agent=ROLES_OF.get(policy, AGENT_ROLES)[i], compared=c, agreed=g,
                 pretrained=bool(shipped)) for i, (c, g) in enumerate(a.agreement() for a in sim.agents())]


def agreement(policies=AGREEMENT_POLICIES, hss=("perf", "cost"), traces=None, synthetic_requests=200_000, seed=1,
              jobs=None):
    """Share of greedy decisions where the int16 inference network picks the FP32 network's
    action, measured during real runs (shipped agents loaded, training online) of every policy
    on the default compare suite (bundled MSR slices, apps: slices, the cached full captures,
    synthetic suite)."""
    import multiprocessing
    from hbl.experiments.compare import default_traces
    pretrained.check_agent_policies(policies, "hbl bench --agreement --policies")
    traces = traces or default_traces(synthetic_requests)
    work = [(p, h, t, seed) for p in policies for h in hss for t in traces]
    with multiprocessing.get_context("fork").Pool(jobs or os.cpu_count()) as pool:
        runs = [r for rs in pool.imap(agreement_run, work) for r in rs]
    return {"seed": seed, "synthetic_requests": synthetic_requests, "runs": runs}


def format_agreement(a):
    """Per policy, agent and trace family (bundled, apps, workload, synth): decisions compared and agreeing."""
    groups = {}
    for r in a["runs"]:
        fam = r["trace"].split(":")[0]
        for key in ((r["policy"], r["agent"], fam), (r["policy"], r["agent"], "all")):
            g = groups.setdefault(key, [0, 0, 1.0])
            g[0] += r["compared"]
            g[1] += r["agreed"]
            if r["compared"]:
                g[2] = min(g[2], r["agreed"] / r["compared"])
    lines = ["int16 inference against the FP32 network: greedy decisions with the same action "
             "(seed %d, synthetic workloads of %d requests)" % (a["seed"], a["synthetic_requests"]),
             "  %-9s %-10s %-8s %12s %10s %16s" % ("policy", "agent", "traces", "decisions", "identical",
                                                  "worst run")]
    for (p, ag, fam), (c, g, worst) in sorted(groups.items(), key=lambda kv: (kv[0][0], kv[0][1], kv[0][2] == "all")):
        lines.append("  %-9s %-10s %-8s %12d %9.3f%% %15.3f%%" % (p, ag, fam, c, 100.0 * g / max(c, 1), 100 * worst))
    return "\n".join(lines)
