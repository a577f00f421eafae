"""The diagnosis runs of scripts/writeonly_diag.py and scripts/writeonly_agents.py: a policy's
Simulator started from its shipped agents (or a candidate's, or none), fed a trace in parts, and the
counters of each part, so that the figures of the parts come from the same run as the whole."""
from hbl.devices import load_hss
from hbl.sim import Simulator, footprint_pages, pretrained

WORKLOADS = ("bundled:wdev_1", "bundled:hm_1", "bundled:rsrch_1", "bundled:rsrch_2", "bundled:mds_0",
             "bundled:proj_0")
SIM = {}   # simulator options of every run (--migrate-every), set once by writeonly_diag's main


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
