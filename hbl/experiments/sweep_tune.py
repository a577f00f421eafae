"""Hyper-parameter search for a policy (the agents' learning rate, discount, batch, ...) with Optuna,
its trials run as sweep cells on the Dask cluster.

The search sees the training workloads only (an evaluation workload of hbl/trace/split.py is refused): a trial's value is the geometric mean of the policy's
average latency normalized to Fast-Only over the training traces, HSS and seeds. Held-out test
workloads (disjoint from the training ones) are simulated once at the end, with the best
parameters and with the policy's defaults, so the tuned figure is not the one that was tuned on.
Trials run in batches of as many as the cluster has workers (TPE with a constant liar keeps a
batch's trials apart). Every cell is journaled in DIR like a sweep's, and the sampler is
seeded, so a rerun replays the same trials and computes only the cells that are missing.
"""
import json
import math
import os

from hbl.experiments.tables import BASELINE
from hbl.errors import HblError
from hbl.sim.registry import all_policy_names, params_for, params_of
from hbl.trace.split import check_training
from hbl.experiments.engine import Grid, cell_key, prepare
from hbl.experiments.sweep import Session

TUNE_RESULT = "tune.json"


def parse_space(text):
    """'lr=1e-4:1e-2:log' -> ('lr', 1e-4, 1e-2, 'log'); kinds: float (default), log, int."""
    name, eq, rng = text.partition("=")
    parts = rng.split(":")
    try:
        lo, hi = float(parts[0]), float(parts[1])
        kind = parts[2] if len(parts) > 2 else "float"
    except (ValueError, IndexError):
        lo = hi = kind = None
    if not eq or not name.strip() or kind not in ("float", "log", "int") or len(parts) > 3 \
            or lo >= hi or (kind == "log" and lo <= 0):
        raise HblError("--space %r: want NAME=LOW:HIGH[:log|:int] with LOW < HIGH" % text)
    return name.strip(), lo, hi, kind


def _suggest(trial, space):
    out = {}
    for name, lo, hi, kind in space:
        if kind == "int":
            out[name] = float(trial.suggest_int(name, int(lo), int(hi)))
        else:
            out[name] = trial.suggest_float(name, lo, hi, log=kind == "log")
    return out


def _check(train, test, space, trials, policy=None):
    known = policy in all_policy_names()        # (an unknown one: the grid's own error)
    takes = params_of(policy) if known else {}
    for name, _, _, _ in space:
        scope, _, bare = name.rpartition(".")   # POLICY.NAME, as --param takes it, runs as NAME
        if known and scope and scope != policy:
            raise HblError("--space %s: a parameter of policy %s, not of %s, the policy tuned" % (name, scope, policy))
        if known and bare not in takes:    # else every trial fails on it
            raise HblError("--space %s: policy %s takes no parameter %r (it takes: %s)"
                           % (name, policy, bare, ", ".join(takes) or "none"))
    overlap = sorted(set(train) & set(test))
    if overlap:
        raise HblError("the test workloads must not be training workloads: %s" % ", ".join(overlap))
    check_training(train, "hbl sweep tune --trace")
    if not space:
        raise HblError("hbl sweep tune: give at least one --space NAME=LOW:HIGH")
    if trials < 1:
        raise HblError("--trials must be >= 1")


class _Cells:
    """The cells of one parameter set of the tuned policy over some traces, and their score."""

    def __init__(self, policy, fixed, hss, seeds, traces, options):
        self.policy, self.fixed, self.hss, self.seeds = policy, fixed, hss, seeds
        self.traces, self.options, self.base_latency = traces, options, {}

    def of(self, params, names):
        params = dict(self.fixed, **params)
        out = []
        for t in names:
            for h in self.hss:
                for s in self.seeds:
                    c = dict(trace=t, hss=h, policy=self.policy, params=params, seed=int(s))
                    c["key"] = cell_key(c, self.traces[t].digest, self.options)
                    out.append(c)
        return out

    def run_baselines(self, session, baselines):
        """Run the Fast-Only cells every score divides by."""
        base_cells = [c for c in baselines if c["policy"] == BASELINE]
        for _ in session.run(base_cells, self.traces, self.options):
            pass
        failed = [session.records[c["key"]]["error"] for c in base_cells if not session.done(c)]
        if failed:
            raise HblError("the %s cells failed: %s" % (BASELINE, failed[0]))
        self.base_latency = {(c["trace"], c["hss"], c["seed"]): session.records[c["key"]]["result"]["avg_latency_us"]
                             for c in base_cells}

    def score(self, session, cs):
        """Geometric mean of latency / Fast-Only over the cells (as the agents are chosen and validated,
        hbl/sim/pretrained.py: an arithmetic mean is the traces of the largest ratios alone, on cost
        7 to 415 over the regimes set), or the first error: a run whose parameters kept the shipped agents
        from loading (it started untrained) is one, not a trial of those parameters."""
        logs = []
        for c in cs:
            rec = session.records[c["key"]]
            if rec["status"] != "ok":
                return None, rec["error"]
            if rec["result"].get("agents_not_loaded"):  # a parameter that changes the agents' shape (gamma's vmax)
                return None, rec["result"]["agents_not_loaded"]
            logs.append(math.log(rec["result"]["avg_latency_us"] / self.base_latency[(c["trace"], c["hss"], c["seed"])]))
        return math.exp(sum(logs) / len(logs)), None


def _search(optuna, study, session, cells, space, trials, train, progress):
    """Ask, run and tell trials in batches of as many as the cluster has workers: their history."""
    history = []
    parallel = max(1, len(session.connect().scheduler_info()["workers"]))
    while len(history) < trials:
        batch = [study.ask() for _ in range(min(parallel, trials - len(history)))]
        asked = [(t, _suggest(t, space)) for t in batch]
        todo = [c for _, params in asked for c in cells.of(params, train)]
        for _ in session.run(todo, cells.traces, cells.options):
            pass
        for t, params in asked:
            value, error = cells.score(session, cells.of(params, train))
            if error:
                study.tell(t, state=optuna.trial.TrialState.FAIL)
            else:
                study.tell(t, value)
            history.append(dict(trial=t.number, params=params, value=value, error=error))
            if progress:
                progress("trial %d/%d: %s -> %s" % (
                    len(history), trials, " ".join("%s=%g" % kv for kv in params.items()),
                    "%.4g" % value if error is None else "failed: " + error))
    return history


def tune(train, policy, space, trials, out_dir, hss=("cost",), seeds=(1,), test=(), options=None,
         workers=None, address=None, sampler_seed=1, progress=print):
    try:
        import optuna
    except ImportError:
        raise HblError("hbl sweep tune needs Optuna: pip install 'hbl[tune]' "
                       "(scripts/bootstrap.sh installs it)") from None
    _check(train, test, space, trials, policy)
    options = dict(options or {})
    grid = Grid(traces=list(train) + list(test), hss=list(hss), policies=[BASELINE, policy], seeds=list(seeds),
                options=options)
    grid.check()
    traces, baselines = prepare(grid, options, progress=False)    # the Fast-Only cells of every trace
    cells = _Cells(policy, params_for(options.get("params"), policy), hss, seeds, traces, options)
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    study = optuna.create_study(direction="minimize",
                                sampler=optuna.samplers.TPESampler(seed=sampler_seed, constant_liar=True))
    with Session(out_dir, workers, address) as session:
        cells.run_baselines(session, baselines)
        history = _search(optuna, study, session, cells, space, trials, train, progress)
        done = [h for h in history if h["error"] is None]
        if not done:
            raise HblError("every trial failed; the first: %s" % history[0]["error"])
        best = min(done, key=lambda h: h["value"])
        result = dict(policy=policy, train=list(train), test=list(test), hss=list(hss), seeds=list(seeds),
                      sampler_seed=sampler_seed,
                      space=[dict(name=n, low=lo, high=hi, kind=k) for n, lo, hi, k in space],
                      trials=history, best_params=best["params"], best_train_value=best["value"])
        if test:
            tuned, default = cells.of(best["params"], test), cells.of({}, test)
            for _ in session.run(tuned + default, traces, options):
                pass
            result["test_value"], err = cells.score(session, tuned)
            result["test_default_value"], err_default = cells.score(session, default)
            if err or err_default:
                raise HblError("the test cells failed: %s" % (err or err_default))
    with open(os.path.join(out_dir, TUNE_RESULT), "w") as f:
        json.dump(result, f, indent=1)
    return result


def format_tune(r):
    lines = ["%s tuned on %s (HSS %s, seeds %s): %d trials, %d failed" % (
        r["policy"], ", ".join(r["train"]), ",".join(r["hss"]), ",".join(map(str, r["seeds"])), len(r["trials"]),
        sum(t["error"] is not None for t in r["trials"])),
        "best: %s, training workloads %.4g (geomean of average latency / Fast-Only)" % (
            " ".join("--param %s=%g" % kv for kv in r["best_params"].items()), r["best_train_value"])]
    if r["test"]:
        lines.append("held-out workloads (%s): tuned %.4g, defaults %.4g (%+.1f%%)" % (
            ", ".join(r["test"]), r["test_value"], r["test_default_value"],
            100 * (1 - r["test_value"] / r["test_default_value"])))
    return "\n".join(lines)
