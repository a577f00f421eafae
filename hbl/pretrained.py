"""Pretrained agents: trained on training workloads, shipped with hbl, loaded by default.

A learning policy that starts from random weights spends its first thousand decisions
exploring at random, which on a short trace is the whole trace.  So the learning
policies whose agents can be saved (Harmonia, its two ablations, Sibyl) start from
agents trained beforehand on the training suite below, and go on learning online.

The training suite is the synthetic families of hbl/split.py's TRAINING list, which
shares no workload with the evaluation (its four synthetic families, the MSR slices and
every real application).  The training recipe (suite, passes, the reward in device
time) was chosen on these families' seed-2 traces, never on the evaluation's
(results/pretrain.txt); the shipped agents' recipe is hbl/data/agents/recipe.json, and
`hbl pretrain --out DIR` writes DIR/recipe.json beside the agents it makes.

Agents are stored per policy, HSS preset and pretraining seed; a run with seed k
starts from the agents of pretraining seed (k - 1) % SEEDS + 1, so a learned figure
over 3 seeds spans 3 pretrained agents as well as 3 online runs.
"""
import json
import os
from pathlib import Path

from hbl import split
from hbl.errors import HblError

AGENTS_DIR = Path(__file__).resolve().parent / "data" / "agents"
#: The training workloads: the split's synthetic training families.
TRAINING_SUITE = tuple(w for w in split.TRAINING if w.startswith("synth:"))
RECIPE = "recipe.json"
TRAINING_REQUESTS = 300_000
PASSES = 3
SEEDS = 3
#: The policies with shipped agents, and the HSS presets they are trained for.
POLICIES = ("harmonia", "harmonia-placement-only", "harmonia-migration-only", "sibyl")
HSS = ("perf", "cost", "tri", "quad")


def training_traces(requests=TRAINING_REQUESTS):
    return [t + ":requests=%d" % requests for t in TRAINING_SUITE]


def agent_file(policy, hss, seed, directory=AGENTS_DIR):
    return Path(directory) / ("%s-%s-s%d.agent" % (policy, hss, (int(seed) - 1) % SEEDS + 1))


def shipped(policy, hss, seed):
    """The shipped agents for a run of `policy` on HSS preset `hss` with `seed`, or None."""
    if not isinstance(hss, str) or hss not in HSS:
        return None
    path = agent_file(policy, hss, seed)
    return path if path.is_file() else None


def pretrain(policy, hss, seed, out, traces=None, passes=PASSES, params=None, progress=None):
    """Train `policy`'s agents from scratch over `traces` (`passes` times) and save them to `out`.
    Returns the last pass's results (one per trace)."""
    from hbl.sim import simulate
    traces = list(traces or training_traces())
    split.check_training(traces, "pretrain")
    if passes < 1:
        raise HblError("passes must be at least 1")
    out = Path(out)
    tmp = out.with_name(out.name + ".part")
    agents, results = False, []
    try:
        for p in range(passes):
            results = []
            for i, t in enumerate(traces):
                if progress:
                    progress(p, i, t)
                results.append(simulate(t, hss=hss, policy=policy, params=params, seed=seed,
                                        load_agents=agents, save_agents=tmp))
                agents = tmp
        os.replace(tmp, out)
    finally:
        if tmp.exists():
            tmp.unlink()
    return results


def _train(job):
    policy, hss, seed, path, traces, passes, params = job
    results = pretrain(policy, hss, seed, path, traces=traces, passes=passes, params=params)
    lat = sum(r["avg_latency_us"] for r in results) / len(results)
    return dict(policy=policy, hss=hss, seed=seed, file=str(path), train_latency_us=lat)


def pretrain_all(policies, hss_list, seeds, out, traces=None, passes=PASSES, params=None, jobs=None,
                 progress=True):
    """pretrain() for every policy x HSS x seed 1..seeds, in parallel; one file each in `out`."""
    from hbl.pool import run_all
    from hbl.sim import policy_names
    known = policy_names()
    for p in policies:
        if p not in known:
            raise HblError("unknown policy %r (have: %s)" % (p, ", ".join(known)))
    out = Path(out)
    traces = list(traces or training_traces())
    split.check_training(traces, "hbl pretrain --trace")
    out.mkdir(parents=True, exist_ok=True)
    with open(out / RECIPE, "w") as f:
        json.dump(dict(policies=list(policies), hss=list(hss_list), seeds=seeds, traces=traces, passes=passes,
                       params=params), f, indent=1)
    work = [(p, h, s, agent_file(p, h, s, out), traces, passes, params)
            for p in policies for h in hss_list for s in range(1, seeds + 1)]
    rows = run_all(_train, work, jobs, progress and (
        lambda r: "pretrain %-24s %-5s seed %d" % (r["policy"], r["hss"], r["seed"])))
    return sorted(rows, key=lambda r: (r["policy"], r["hss"], r["seed"]))


def recipe(directory=AGENTS_DIR):
    """How the agents in directory were made (its recipe.json)."""
    try:
        with open(Path(directory) / RECIPE) as f:
            return json.load(f)
    except (OSError, ValueError) as exc:
        raise HblError("%s: no readable agent recipe (%s)" % (Path(directory) / RECIPE, exc)) from None


def listing():
    """The shipped agent files: policy, HSS, seed, file."""
    rows = []
    for p in POLICIES:
        for h in HSS:
            for s in range(1, SEEDS + 1):
                f = agent_file(p, h, s)
                if f.is_file():
                    rows.append(dict(policy=p, hss=h, seed=s, file=str(f)))
    return rows
