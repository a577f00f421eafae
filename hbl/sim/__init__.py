"""The trace-driven simulator, driven from Python in batches.

    from hbl.sim import simulate
    result = simulate("bundled:hm_0", hss="cost", policy="smq")

The request loop, the page table, the device model and the policies are C
(ctypes_core/); Python only moves chunks of requests and reads the results.

The package holds the simulator's driver (here; one simulation, Simulator, in simulator.py; the
composite policy harmonia-guard in guard.py), its model (model.py: default options, the live
device's model, the oracle's variants), the policy registry and parameters (registry.py) and its
agents: agent.py (the agents' view), plugin.py (policies written in Python), pretrained.py (trains
the shipped agents) and agent_files.py (finds them).
"""
import os

from hbl import record
from hbl.core import ffi, lib
from hbl.devices import load_hss
from hbl.errors import HblError
from hbl.trace import open_trace
from hbl.sim.model import DEFAULTS, ORACLE_FAMILY
from hbl.sim.registry import COMPOSITES, parse_params, wants_future
from hbl.sim.shadows import recorder
from hbl.sim.simulator import Simulator  # noqa: F401 (hbl.sim.Simulator, as everyone imports it)


def footprint_pages(chunks, page_size=4096):
    """Distinct pages a trace touches (one streaming pass in C)."""
    t = lib.hbl_tstats_new(page_size, 0)
    if t == ffi.NULL:
        raise MemoryError("hbl_tstats_new")
    try:
        for chunk in chunks:
            ptr, keep = record.as_cdata(chunk)
            if lib.hbl_tstats_feed(t, ptr, len(keep)):
                raise MemoryError("hbl_tstats_feed")
        return int(lib.hbl_tstats_pages(t))
    finally:
        lib.hbl_tstats_free(t)


def resolve_agents(policy, hss, seed, params, plugin, load_agents):
    """Which agents a run starts from, as simulate() documents load_agents: (load_agents with a directory
    resolved to its file, agents_from: the file or None, the run's params: the agents' own where the file
    fixes them, not_loaded: why the shipped agents were not loaded, when parameters kept them out)."""
    composite = policy in COMPOSITES
    agent_policy = "harmonia" if composite else policy   # whose agents it starts from
    if load_agents and os.path.isdir(load_agents) and plugin is None:
        from hbl.sim.agent_files import in_directory
        load_agents = in_directory(load_agents, agent_policy, hss, seed)
    agents_from = load_agents or None
    not_loaded = None
    if load_agents is None and plugin is None:
        from hbl.sim.agent_files import shipped
        agents_from = shipped(agent_policy, hss, seed)
    if agents_from and not composite:
        from hbl.sim.agent_files import ContradictingParams, run_params
        try:
            params = run_params(agents_from, policy, parse_params(params, policy))
        except ContradictingParams as e:
            if load_agents:
                raise
            # shipped agents of another queue_feature (reuse_feature) than asked for: it starts untrained
            agents_from, not_loaded = None, str(e)
    return load_agents, agents_from, params, not_loaded


def oracle_best(run):
    """The oracle's run: the best of its family.  No single future-aware construction is optimal for
    latency in this model (absorbing writes on the fast device wins when the slow device has idle time
    for the write-backs, bypassing wins when it has none), so the oracle is the best of its family per
    run.  run(params) -> (result, reader), as simulate's."""
    tried = [run(dict(v)) + (v,) for v in ORACLE_FAMILY]
    out, reader, _ = min(tried, key=lambda t: t[0]["avg_latency_us"])
    out["oracle_family"] = [dict(params=dict(v), avg_latency_us=r["avg_latency_us"]) for r, _, v in tried]
    return out, reader


def agents_label(policy, hss, agents_from, load_agents, not_loaded):
    """A learning run's result keys saying which agents it started from (and why not the shipped ones)."""
    out = {"agents_from": ("untrained" if not agents_from else str(agents_from) if load_agents
                           else "pretrained:" + agents_from.stem)}
    if not_loaded:
        out["agents_not_loaded"] = ("the shipped agents of %s on %s could not be loaded with these parameters, "
                                    "so it started untrained: %s" % (policy, hss, not_loaded))
    return out


def simulate(trace, hss="cost", policy="lru", fast_capacity=None, params=None, plugin=None, seed=1,
             fmt=None, lenient=False, reader_options=None, footprint=None, timeline=False,
             check=False, load_agents=None, save_agents=None, progress=None, shadow_dir=None, shadow_windows=(),
             **options):
    """Simulate one policy on one trace; returns the result dict (see Simulator.result).
    progress, if given, wraps each pass over the trace: progress(chunks, what) -> chunks.
    load_agents: a file of saved agents, or a directory of them (hbl.sim.agent_files.in_directory:
    the file this policy, HSS and seed start from there); None, the shipped pretrained agents of the
    policy for this HSS preset and seed where there are some (hbl.sim.agent_files); False, untrained agents.
    policy "harmonia-guard" (hbl/sim/guard.py) is a composite of Simulators: its harmonia member starts from
    the agents harmonia would; no plugin, no save_agents; its timeline has one row per window.  shadow_dir: a
    directory where runs of harmonia-guard on the same trace, HSS (by name) and options share the alone runs
    of its members that do not learn (hbl/sim/shadows.py; `hbl compare` gives one to its seeds); with
    shadow_windows (the guards' window sizes), a run of such a policy with its default parameters is stored
    there for them as they would run it alone."""
    composite = policy in COMPOSITES
    if composite and (plugin is not None or save_agents):
        raise HblError("policy %s cannot save agents (--save-agent) or take a Python plugin: it runs several "
                       "simulators" % policy)
    watch = progress or (lambda chunks, what: chunks)
    page_size = int(options.get("page_size") or DEFAULTS["page_size"])
    config = load_hss(hss, fast_capacity) if isinstance(hss, str) else hss
    reader_options = reader_options or {}
    reopen = lambda: open_trace(trace, fmt=fmt, lenient=lenient, **reader_options)
    if wants_future(policy, params):
        first = reopen()
        data = record.concat(list(watch(first, "reading")))
        source = [data]
    else:
        data, source = None, None
    if footprint is None:
        footprint = footprint_pages(source if source else watch(reopen(), "footprint"), page_size)
    caps = config.capacity_pages(footprint, page_size)
    load_agents, agents_from, params, not_loaded = resolve_agents(policy, hss, seed, params, plugin, load_agents)

    # the identity of this run's alone members for a store of shared shadows (a named HSS only)
    run_key = shadow_dir and isinstance(hss, str) and dict(
        trace=str(trace), fmt=fmt, lenient=lenient, reader_options=reader_options, hss=hss, capacities=caps,
        footprint=footprint, options=options)

    def run(params):
        nonlocal agents_from, not_loaded
        if composite:
            from hbl.sim.guard import build     # its harmonia member loads the agents
            sim = build(config, caps, seed=seed, params=parse_params(params, policy), agents_from=agents_from,
                        reread=lambda: watch(reopen(), "rebuilding a copy"), shadow_dir=run_key and shadow_dir,
                        shadow_key=run_key, **options)
        else:
            sim = Simulator(config, policy, caps, params=params, plugin=plugin, seed=seed, **options)
        if agents_from and load_agents and not composite:
            sim.load_agents(agents_from)
        elif agents_from and not composite:
            try:
                sim.load_agents(agents_from)
            except HblError as e:   # parameters that change the agents' shape: they start untrained
                agents_from, not_loaded = None, str(e)
        if data is not None:
            sim.set_future(data)
        reader = source if source else reopen()
        rec = not composite and plugin is None and recorder(sim, parse_params(params), shadow_dir, shadow_windows,
                                                             run_key)
        for chunk in watch(reader, "simulating"):
            (rec or sim).feed(chunk)
        if rec:
            rec.finish()
        if check:
            sim.check()
        if save_agents:
            sim.save_agents(save_agents)
        return sim.result(timeline=timeline), reader

    out, reader = oracle_best(run) if policy == "oracle" and not parse_params(params) else run(params)
    out["trace"] = trace
    if "agents" in out or composite:
        out.update(agents_label(policy, hss, agents_from, load_agents, not_loaded))
    out["footprint_pages"] = footprint
    out["bad_lines_skipped"] = getattr(first if source else reader, "skipped", 0)
    return out
