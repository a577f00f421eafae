"""hbl policies and pretrain: the policies, and the agents the learning ones start from."""
from hbl.cmdline import print_json, whole
from hbl.errors import HblError


def add_parsers(sub):
    _add_policies(sub)
    _add_pretrain(sub)


def _add_policies(sub):
    """hbl policies."""
    po = sub.add_parser("policies", help="list policies")
    po.add_argument("--json", action="store_true", help="print the policies, their parameters and capabilities as JSON")
    po.set_defaults(func=cmd_policies)


def _add_pretrain(sub):
    """hbl pretrain."""
    pt = sub.add_parser("pretrain", help="train learning policies' agents on training workloads, to start from",
                        description="Train the agents of learning policies from scratch on training workloads "
                        "(by default the synthetic training families of hbl/trace/split.py, the train/evaluation split; "
                        "none is in `hbl compare`'s default suite, and an evaluation workload is refused) and save "
                        "one file per policy, HSS and seed. Simulations start from the shipped ones by default, the "
                        "best of 5 seeds on validation traces (--select); use yours with `simulate --agent FILE`.")
    pt.add_argument("--out", metavar="DIR", help="directory for the agent files (required to train)")
    pt.add_argument("--policies", help="comma-separated learning policies (default: those with shipped agents)")
    pt.add_argument("--hss", default="perf,cost,tri,quad", help="comma-separated HSS presets (default all four)")
    pt.add_argument("--seeds", type=whole(1, 100), default=3, help="pretraining seeds 1..N (default 3)")
    pt.add_argument("--passes", type=whole(1, 100), default=3, help="passes over the training traces (default 3)")
    pt.add_argument("--requests", type=whole(1, 1 << 40), default=300_000,
                    help="requests per training trace of the default suite (default 300000)")
    pt.add_argument("--jobs", type=whole(1, 256), help="parallel trainings (default: number of cores)")
    pt.add_argument("--select", action="store_true",
                    help="then run each seed's agents on the validation traces (the training families with "
                         "generator seed 2) and copy the best of each policy and HSS to DIR/POLICY-HSS.agent, "
                         "the form hbl ships (with DIR/selection.json: every seed's figure and the spread)")
    pt.add_argument("--validation", default="families", metavar="NAME",
                    help="the validation set --select chooses on (hbl/sim/pretrained.py VALIDATION_SETS): "
                         "families (default: the five training families), regimes (those, synth:burst, "
                         "synth:log and the redis-aof and file-server captures' later parts), apps (regimes "
                         "and the later parts of lmdb-kv, rrd-metrics and kyoto-hash), fresh (the later halves of "
                         "restic-backup and borg-backup alone, captures no decision had touched)")
    pt.add_argument("--list", action="store_true", help="list the shipped pretrained agents instead")
    pt.add_argument("--json", action="store_true", help="print the agents trained (or listed) as JSON")
    pt.add_argument("--quiet", action="store_true", help="no progress on stderr")
    pt.add_argument("--trace", action="append", metavar="TRACE",
                    help="training trace (repeatable; default: the training suite): a training workload of "
                         "hbl/trace/split.py or a file of yours; a capture a validation set uses only "
                         "by its first part, e.g. workload:lmdb-kv@0-500000 (a short one by its first half)")
    pt.add_argument("--param", action="append", metavar="NAME=VALUE",
                    help="policy parameter for the training runs (repeatable; see `hbl policies`)")
    pt.set_defaults(func=cmd_pretrain)


def cmd_policies(a):
    from hbl.sim.registry import COMPOSITES, policies, policy_params
    rows = [dict(p, params=policy_params(i)) for i, p in enumerate(policies())]
    rows += [dict(name=n, description=c["description"], capabilities=c["capabilities"], params=c["params"])
             for n, c in COMPOSITES.items()]
    if a.json:
        print_json(rows)
    else:
        for r in rows:
            print("%-11s %s%s" % (r["name"], r["description"],
                                  " [%s]" % ", ".join(r["capabilities"]) if r["capabilities"] else ""))
            for k, v in r["params"].items():
                live = v.get("live_default", v["default"])
                print("%-11s   %-18s %-8s %s%s" % ("", k, _default(v["default"]), v["description"],
                                                    "" if live == v["default"] else " (live: %s)" % _default(live)))
        print("\nparameters: --param NAME=VALUE (defaults shown, and where a live device's differs; ? = accepted, "
              "but its default depends on other parameters or it is unused by this variant);"
              "\ncapabilities: learns (its result depends on the seed), needs_future (reads the whole trace "
              "first), live (can drive a live device), composite (Python over the C policies, named to run: "
              "never in a run's `all`);"
              "\nPython plugins: --policy python:FILE.py:CLASS (see hbl/plugin.py)")
    return 0


def _default(d):
    return "?" if d is None else "%d" % d if d == int(d) else "%g" % d


def cmd_pretrain(a):
    from hbl.sim import pretrained
    if a.list:
        rows = pretrained.listing()
        if a.json:
            print_json(rows)
        else:
            for r in rows:
                print("%-26s %-5s %-7s recipe %-7s chosen on %-8s %s%s" % (
                    r["policy"], r["hss"], "seed %s" % r["seed"] if r["seed"] else "", r["recipe"], r["validation"],
                    r["file"], " (%s)" % ", ".join(r["params"]) if r["params"] else ""))
        return 0
    if not a.out:
        raise HblError("--out DIR is required (the shipped agents are in %s)" % pretrained.AGENTS_DIR)
    policies = [p.strip() for p in a.policies.split(",") if p.strip()] if a.policies else list(pretrained.POLICIES)
    hss = [h.strip() for h in a.hss.split(",") if h.strip()]
    traces = a.trace or pretrained.training_traces(a.requests)
    from hbl.devices import load_hss
    from hbl.sim.registry import parse_params
    if a.validation not in pretrained.VALIDATION_SETS:
        raise HblError("--validation %s: no such validation set (have: %s)"
                       % (a.validation, ", ".join(pretrained.VALIDATION_SETS)))
    for h in hss:
        load_hss(h)
    parse_params(a.param)
    rows = pretrained.pretrain_all(policies, hss, a.seeds, a.out, traces=traces, passes=a.passes,
                                   params=a.param, jobs=a.jobs, progress=not a.quiet)
    chosen = pretrained.select(a.out, policies, hss, a.seeds, params=a.param, jobs=a.jobs,
                               progress=not a.quiet, validation=a.validation) if a.select else []
    if a.json:
        print_json(dict(trained=rows, selected=chosen) if a.select else rows)
        return 0
    for r in rows:
        print("%-26s %-5s seed %d  %s  (last pass: %.1f us mean latency over the training traces)" % (
            r["policy"], r["hss"], r["seed"], r["file"], r["train_latency_us"]))
    if chosen:
        print("\nvalidation set %s (training workloads, generator seed 2): geomean of average latency / "
              "Fast-Only" % a.validation)
    for r in chosen:
        print("%-26s %-5s %s  spread %.1f%%  -> seed %d: %s" % (
            r["policy"], r["hss"], "  ".join("s%s %.3f" % kv for kv in sorted(r["validation"].items())),
            100 * r["spread"], r["seed"], r["file"]))
    return 0
