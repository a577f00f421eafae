"""Pretrained agents: trained on training workloads, shipped with hbl, loaded by default.

A learning policy that starts from random weights spends its first thousand decisions
exploring at random, which on a short trace is the whole trace.  So the learning
policies whose agents can be saved (Harmonia, its two ablations, Sibyl) start from
agents trained beforehand on the training suite below, and go on learning online.

The training suite is the synthetic families of hbl/trace/split.py's TRAINING list, which
shares no workload with the evaluation (its four synthetic families, the MSR slices and
every real application).  The training recipe (suite, passes, the reward in device
time) was chosen on these families' seed-2 traces, never on the evaluation's
(results/pretrain/pretrain.txt); the shipped agents' recipe is hbl/data/agents/recipe.json,
and `hbl pretrain --out DIR` writes DIR/recipe.json beside the agents it makes.

Pretraining is seeded, and agents from different seeds decide differently (the
write-bypass cut-off of the placement agent moved with the seed).  So the shipped
agents of a policy and HSS are the best of SELECT_SEEDS pretraining seeds on the
validation traces (the training families with another generator seed: still no
evaluation workload), chosen by select(); every run starts from them, whatever its
seed, and a learned figure over seeds spans online runs only.  The per-seed files a
pretraining writes (POLICY-HSS-sK.agent) load with `--agent FILE`, and a directory of
them is what `hbl pretrain --select` chooses from.
"""
import json
import os
from pathlib import Path

from hbl.trace import split
from hbl.sim.agent_files import AGENTS_DIR, HSS, agent_file, selected_file, shipped  # noqa: F401 (hbl.sim.pretrained's API)
from hbl.errors import HblError

#: The training workloads: the split's synthetic training families, less those used only when named.
TRAINING_SUITE = tuple(w for w in split.TRAINING if w.startswith("synth:") and w not in split.NAMED_ONLY)
RECIPE = "recipe.json"
TRAINING_REQUESTS = 300_000
PASSES = 3
SEEDS = 3
#: Pretraining seeds the shipped agents are chosen from, and the validation traces' length.
SELECT_SEEDS = 5
VALIDATION_REQUESTS = 200_000
#: The policies with shipped agents (HSS: the presets they are trained for).
POLICIES = ("harmonia", "harmonia-placement-only", "harmonia-migration-only", "sibyl")


def training_traces(requests=TRAINING_REQUESTS):
    return [t + ":requests=%d" % requests for t in TRAINING_SUITE]


def validation_traces(requests=None, families=TRAINING_SUITE, seed=2):
    """The training families with generator seed 2: not the traces the agents were trained on, and
    not workloads of the evaluation either.  A family may carry keys of its own (synth:uniform:read=0.0)."""
    n = requests or VALIDATION_REQUESTS
    return [t + ("," if t.count(":") > 1 else ":") + "requests=%d,seed=%d" % (n, seed) for t in families]


#: The named validation sets a choice between pretrained agents is made on (hbl pretrain --select
#: --validation NAME, scripts/validate_agents.py --set NAME): training workloads only (split.py).
#:   families  the five training families (the shipped agents were chosen on it)
#:   regimes   those, the two named-only families (synth:burst: small writes that saturate the
#:             background queue; synth:log: an fsynced write-once log) and the two training captures'
#:             later parts, the regimes where harmonia loses on the evaluation
#:             (results/diagnosis/migration.txt, results/pretrain/valset.txt)
#:   apps      regimes and the later parts of the three other training captures (lmdb-kv, rrd-metrics,
#:             kyoto-hash): five real applications beside the seven families, so that a choice is also
#:             made on real I/O (results/pretrain/apps-set.txt)
#:   fresh     the later parts of the training captures no decision had touched when they were made
#:             (restic-backup, borg-backup: results/workloads/), alone: no family, so a change tuned on
#:             the others is judged on workloads it was not tuned on
VALIDATION_SETS = {
    "families": dict(families=TRAINING_SUITE, captures=()),
    "regimes": dict(families=TRAINING_SUITE + split.NAMED_ONLY, captures=("redis-aof", "file-server")),
    "apps": dict(families=TRAINING_SUITE + split.NAMED_ONLY,
                 captures=("redis-aof", "file-server", "lmdb-kv", "rrd-metrics", "kyoto-hash")),
    "fresh": dict(families=(), captures=("restic-backup", "borg-backup")),
}
#: A capture has no generator seed: the part of it that stands for the families' seed-2 (validation)
#: and seed-3 (check) traces; requests 0-500,000 are left for training (scripts/migration_diag.py --cut).
CAPTURE_PARTS = {2: (500_000, 750_000), 3: (750_000, 1_000_000)}
#: Captures a time limit stopped short of 1 M requests, with the records they hold: their parts are the
#: same shares of what they hold (the first half for training, the next quarter to choose, the last to
#: check), each bound rounded down to a thousand.
SHORT_CAPTURES = {"restic-backup": 611_151}


def capture_parts(capture):
    """{generator seed: (start, end)} of the capture NAME's validation parts (CAPTURE_PARTS, scaled for a
    SHORT_CAPTURES one)."""
    n = SHORT_CAPTURES.get(capture)
    if n is None:
        return CAPTURE_PARTS
    return {s: (lo * n // 1_000_000 // 1000 * 1000, hi * n // 1_000_000 // 1000 * 1000)
            for s, (lo, hi) in CAPTURE_PARTS.items()}


def validation_set(name="families", requests=None, seed=2, workdir=None):
    """The traces of validation set `name` at generator seed `seed` (2 to choose, 3 to check): the
    families' specs, and each capture's part (CAPTURE_PARTS) written to workdir as a native trace
    named workload:NAME@START-END.hbltrace.  Returns (label, trace) pairs."""
    if name not in VALIDATION_SETS:
        raise HblError("no validation set %r (have: %s)" % (name, ", ".join(VALIDATION_SETS)))
    v = VALIDATION_SETS[name]
    out = [(t, t) for t in validation_traces(requests, v["families"], seed)]
    if v["captures"]:
        if seed not in CAPTURE_PARTS:
            raise HblError("validation set %s: its captures have parts for generator seeds %s only"
                           % (name, ", ".join(map(str, CAPTURE_PARTS))))
        if workdir is None:
            raise HblError("validation set %s: its capture parts need a directory to be written to" % name)
        for c in v["captures"]:
            start, end = capture_parts(c)[seed]
            label = "workload:%s@%d-%d" % (c, start, end)
            out.append((label, _capture_part("workload:" + c, start, end, Path(workdir) / (label.replace(":", "_")
                                                                                            + ".hbltrace"))))
    return out


def check_not_validation(traces, what):
    """HblError naming the first trace that holds requests of a validation set's capture parts
    (capture_parts): a capture a validation set uses is trained on by its first part only,
    workload:NAME@0-500000 (of a short capture, its first half), never whole."""
    from hbl.trace import mix, part
    held = {c for v in VALIDATION_SETS.values() for c in v["captures"]}
    for t in traces:
        for one in mix.tenants(t) if mix.is_mix(t) else [t]:
            p = part.parse(one)
            capture = p[0] if p else one
            name = capture[len("workload:"):]
            if not capture.startswith("workload:") or name not in held:
                continue
            parts = capture_parts(name)
            first = min(start for start, _ in parts.values())
            if p is None or p[2] > first:
                raise HblError("%s: %s holds requests that validation sets choose and check on (requests %s of "
                               "%s, hbl/sim/pretrained.py CAPTURE_PARTS); train on %s@0-%d" % (
                                   what, t, ", ".join("%d-%d" % r for r in parts.values()), capture,
                                   capture, first))


def _capture_part(spec, start, end, path):
    """Requests start..end of a training capture, written once to path (a native trace)."""
    from hbl import trace as tracemod
    split.check_training([spec], "validation set")
    if not path.exists():
        [count] = tracemod.write_parts(spec, [(str(path) + ".part", start, end)])
        if count < end - start:
            raise HblError("%s has fewer than %d requests: no part %d-%d" % (spec, end, start, end))
        os.replace(str(path) + ".part", path)
    return str(path)


#: Parameters of pretraining itself, not of the policy: the warm start from demonstrations, the
#: number of first passes in which the placement (demo_warm) or migration (m_demo_warm) agent
#: decides as the oracle's labels say (demo_follow=1, m_demo_follow=1; ctypes_core/demos.h).
WARM = {"demo_warm": "demo_follow", "m_demo_warm": "m_demo_follow"}

#: Parameters that hand the agents the oracle's labels, read off the trace's future: pretraining's
#: to use, never a validation run's (it would choose agents on labels no real run has).
FUTURE = frozenset(x + y for x in ("", "m_") for y in ("demo", "demo_margin", "demo_follow"))


def pass_params(params, p):
    """The policy parameters of pass p (from 0): params without WARM's, plus their follow for warm passes."""
    from hbl.sim.registry import parse_params
    if not params:
        return params
    out = parse_params(params)
    for warm, follow in WARM.items():
        if p < out.pop(warm, 0):
            out[follow] = 1.0
    return out


def validation_params(params):
    """The policy parameters a validation run of agents trained with `params` takes: those without
    pretraining's own (WARM), which no policy knows, and without the demonstrations (FUTURE), which
    read the validation trace's future."""
    from hbl.sim.registry import parse_params
    if not params:
        return params
    return {k: v for k, v in parse_params(params).items() if k not in WARM and k not in FUTURE}


#: How an untrained network starts in pretraining when params do not say: Glorot everywhere (init_out=0),
#: as every shipped agent was pretrained; the online default (init_out=1, results/learning/scratch.txt)
#: was chosen for runs that learn from scratch, and as pretraining's start it loses to the shipped
#: agents and leaves the seed spread as wide (results/pretrain/zero-start.txt).
PRETRAIN_START = {"init_out": 0.0, "m_init_out": 0.0}


def pretrain_params(policy, params):
    """params with PRETRAIN_START's entries the policy takes and params do not set."""
    from hbl.sim.registry import params_for, parse_params
    out = parse_params(params, policy)
    for k, v in params_for(PRETRAIN_START, policy).items():
        out.setdefault(k, v)
    return out or params


def pretrain(policy, hss, seed, out, traces=None, passes=PASSES, params=None, progress=None):
    """Train `policy`'s agents from scratch over `traces` (`passes` times) and save them to `out`.
    Returns the last pass's results (one per trace)."""
    from hbl.sim import simulate
    traces = list(traces or training_traces())
    split.check_training(traces, "pretrain")
    check_not_validation(traces, "pretrain")
    if passes < 1:
        raise HblError("passes must be at least 1")
    out = Path(out)
    tmp = out.with_name(out.name + ".part")
    agents, results = False, []
    params = pretrain_params(policy, params)
    try:
        for p in range(passes):
            results = []
            for i, t in enumerate(traces):
                if progress:
                    progress(p, i, t)
                results.append(simulate(t, hss=hss, policy=policy, params=pass_params(params, p), seed=seed,
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


def agent_policies():
    """The C policies that have agents (networks to train, save and load), asked of a simulator of each
    learning policy: archivist and rnn-hss learn without any."""
    from hbl.devices import load_hss
    from hbl.sim.registry import policy_names
    from hbl.sim.simulator import Simulator
    return [p for p in policy_names("learns") if Simulator(load_hss("cost"), p, [64, None]).agents()]


def check_agent_policies(policies, what):
    """HblError, before any work, for a policy in `policies` that has no agents of its own."""
    from hbl.sim.registry import COMPOSITES, all_policy_names
    with_agents = agent_policies()
    for p in policies:
        if p in COMPOSITES:
            raise HblError("%s: %s has no agents of its own (a composite: its harmonia starts from harmonia's; "
                           "policies with agents: %s)" % (what, p, ", ".join(with_agents)))
        if p not in all_policy_names():
            raise HblError("%s: unknown policy %r (have: %s)"
                           % (what, p, ", ".join(n for n in all_policy_names() if n != "python")))
        if p not in with_agents:
            raise HblError("%s: policy %s has no agents (policies with agents: %s)"
                           % (what, p, ", ".join(with_agents)))


def pretrain_all(policies, hss_list, seeds, out, traces=None, passes=PASSES, params=None, jobs=None,
                 progress=True):
    """pretrain() for every policy x HSS x seed 1..seeds, in parallel; one file each in `out`."""
    from hbl.pool import run_all
    check_agent_policies(policies, "hbl pretrain --policies")
    out = Path(out)
    traces = list(traces or training_traces())
    split.check_training(traces, "hbl pretrain --trace")
    check_not_validation(traces, "hbl pretrain --trace")
    if out.exists() and not out.is_dir():
        raise HblError("--out %s: a file, not a directory (one agent file per policy, HSS and seed goes there)" % out)
    out.mkdir(parents=True, exist_ok=True)
    with open(out / RECIPE, "w") as f:
        json.dump(dict(policies=list(policies), hss=list(hss_list), seeds=seeds, traces=traces, passes=passes,
                       params=params), f, indent=1)
    work = [(p, h, s, agent_file(p, h, s, out), traces, passes, params)
            for p in policies for h in hss_list for s in range(1, seeds + 1)]
    rows = run_all(_train, work, jobs, progress and (
        lambda r: "%s %s seed %d" % (r["policy"], r["hss"], r["seed"])), what="pretrain")
    return sorted(rows, key=lambda r: (r["policy"], r["hss"], r["seed"]))


def _validate(job):
    policy, hss, seed, path, trace, params = job
    from hbl.sim import simulate
    r = simulate(trace, hss=hss, policy=policy, params=params, seed=1, load_agents=path)
    return policy, hss, seed, trace, r["avg_latency_us"]


def _fast_only(job):
    hss, trace = job
    from hbl.sim import simulate
    return hss, trace, simulate(trace, hss=hss, policy="fast-only")["avg_latency_us"]


def validation_geomean(path, policy, hss, traces, params=None, jobs=None):
    """What select() chooses a seed by, for one agent file: the geomean of its average latency /
    Fast-Only over `traces` (online seed 1, validation_params(params))."""
    import math
    from hbl.pool import run_all
    base = {t: lat for _, t, lat in run_all(_fast_only, [(hss, t) for t in traces], jobs)}
    runs = run_all(_validate, [(policy, hss, 0, str(path), t, validation_params(params)) for t in traces], jobs)
    return math.exp(sum(math.log(lat / base[t]) for _, _, _, t, lat in runs) / len(traces))


def select(directory, policies, hss_list, seeds, params=None, requests=None, jobs=None,
           progress=True, validation="families"):
    """Validate the agents of pretraining seeds 1..seeds in `directory` and copy each policy and
    HSS's best (lowest geomean of average latency / Fast-Only over the validation set `validation`,
    VALIDATION_SETS) to selected_file(); returns one row per policy and HSS with every seed's figure,
    the spread ((max - min) / min) and the chosen seed, also written to selection.json there."""
    import tempfile
    with tempfile.TemporaryDirectory(prefix="hbl-validation-") as work:
        named = validation_set(validation, requests, 2, work)
        return _select(directory, policies, hss_list, seeds, params, jobs, progress, validation, named)


def _select(directory, policies, hss_list, seeds, params, jobs, progress, validation, named):
    import json
    import math
    import shutil
    from hbl.pool import run_all
    directory = Path(directory)
    traces = [t for _, t in named]
    missing = [str(agent_file(p, h, s, directory)) for p in policies for h in hss_list
               for s in range(1, seeds + 1) if not agent_file(p, h, s, directory).is_file()]
    if missing:
        raise HblError("no agents to choose from: %s (train them with `hbl pretrain --out %s`)"
                       % (", ".join(missing[:3]) + (" ..." if len(missing) > 3 else ""), directory))
    base = {(h, t): lat for h, t, lat in run_all(_fast_only, [(h, t) for h in hss_list for t in traces], jobs)}
    work = [(p, h, s, agent_file(p, h, s, directory), t, validation_params(params))
            for p in policies for h in hss_list for s in range(1, seeds + 1) for t in traces]
    lat = {}
    for p, h, s, t, v in run_all(_validate, work, jobs, progress and (lambda r: "validate %s %s seed %d" % r[:3])):
        lat[(p, h, s, t)] = v
    rows = []
    for p in policies:
        for h in hss_list:
            g = {s: math.exp(sum(math.log(lat[(p, h, s, t)] / base[(h, t)]) for t in traces) / len(traces))
                 for s in range(1, seeds + 1)}
            best = min(g, key=g.get)
            shutil.copyfile(agent_file(p, h, best, directory), selected_file(p, h, directory))
            rows.append(dict(policy=p, hss=h, seed=best, validation=g, spread=max(g.values()) / min(g.values()) - 1,
                             file=str(selected_file(p, h, directory))))
    (directory / "selection.json").write_text(json.dumps(dict(
        validation=validation, traces=[label for label, _ in named], params=params, rows=rows), indent=1))
    return rows


def recipe(directory=AGENTS_DIR):
    """How the agents in directory were made (its recipe.json)."""
    try:
        with open(Path(directory) / RECIPE) as f:
            return json.load(f)
    except (OSError, ValueError) as exc:
        raise HblError("%s: no readable agent recipe (%s)" % (Path(directory) / RECIPE, exc)) from None


def listing():
    """The shipped agent files: policy, HSS, the pretraining seed chosen, the validation set it was
    chosen on, its recipe (its own, from recipe.json's "agents", or "default") and parameters, file."""
    import json
    chosen, validation = {}, "families"
    sel = AGENTS_DIR / "selection.json"
    if sel.is_file():
        sel = json.loads(sel.read_text())
        validation = sel.get("validation", validation)
        chosen = {(r["policy"], r["hss"]): r for r in sel["rows"]}
    own = recipe().get("agents", {}) if (AGENTS_DIR / RECIPE).is_file() else {}
    rows = []
    for p in POLICIES:
        for h in HSS:
            f = selected_file(p, h)
            if f.is_file():
                r, mine = chosen.get((p, h), {}), own.get(f.name, {})
                rows.append(dict(policy=p, hss=h, seed=r.get("seed"), validation=r.get("validation_set", validation),
                                 recipe=mine.get("recipe", "default"), params=mine.get("params") or [], file=str(f)))
    return rows
