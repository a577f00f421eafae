"""The train/evaluation split: the one list of which workloads agents may be pretrained and tuned
on, and which are kept for evaluation.

`hbl pretrain`, `hbl sweep tune`, scripts/validate_agents.py and the shipped agents' recipe
(hbl/data/agents/recipe.json) train on TRAINING workloads only and refuse an EVALUATION one;
`hbl compare`'s default suite is evaluation workloads only. A workload not listed (a trace file
of your own, a synthetic family in neither list) is yours to use either way.

Names are families: `synth:src` stands for every trace of that generator (any requests, seed
or other keys), and an application stands for both its shipped slice and its full capture
(`apps:pgbench` is the first 20,000 requests of `workload:pgbench`, so they cannot sit on
different sides). A mix (`workload:A+B`) is evaluation if any tenant is.

The MSR slices and eleven of the applications are for evaluation. Eight real applications are on
the training side (redis-aof, an fsync-per-write log; file-server, a metadata-heavy source tree;
lmdb-kv, a memory-mapped key-value store read by popularity, skewed re-reads of data 11x the cache;
rrd-metrics, RRDtool's round-robin files updated in place in a cycle larger than the cache;
kyoto-hash, a hash store of skewed in-place updates in synced transactions; maildir-lda, a mail
store's small files delivered with a sync, read once and deleted; restic-backup and borg-backup,
nightly backups of a changing home directory to a write-once and a log-structured repository, kept
as the validation set "fresh" of hbl/sim/pretrained.py):
real traces to pretrain and tune on, of kinds unlike the evaluation's databases and servers. The shipped agents were pretrained before they were captured, on five synthetic families
disjoint from the four of the evaluation (results/pretrain/ chose the recipe on these families'
seed-2 traces).
"""
from hbl.errors import HblError

TRAINING = ("synth:src", "synth:usr", "synth:mixed", "synth:phases", "synth:zipf", "synth:burst", "synth:log",
            # real applications for training (workload:NAME; never in hbl compare's default suite)
            "app:redis-aof", "app:file-server", "app:lmdb-kv", "app:rrd-metrics", "app:kyoto-hash",
            "app:maildir-lda",
            # captured for the validation set "fresh" (hbl/sim/pretrained.py): no decision had touched them
            "app:restic-backup", "app:borg-backup")
#: Training families that no default run uses: pretraining and validation take them only when named
#: (hbl pretrain --trace, scripts/validate_agents.py --family), so the shipped agents' recipe stays
#: the five families above (synth:burst: write bursts that fill the background queue,
#: results/diagnosis/migration.txt [H]; synth:log: an fsynced write-once log, results/pretrain/valset.txt).
#: The validation set "regimes" (hbl/sim/pretrained.py VALIDATION_SETS) names both.
NAMED_ONLY = ("synth:burst", "synth:log")
EVALUATION = (
    # synthetic families modelled on MSR Cambridge servers (hbl compare's synthetic suite)
    "synth:hm", "synth:prxy", "synth:web", "synth:proj",
    # the bundled MSR Cambridge slices (bundled:NAME)
    "bundled:hm_0", "bundled:hm_1", "bundled:mds_0", "bundled:proj_0", "bundled:rsrch_1", "bundled:rsrch_2",
    "bundled:wdev_1",
    # real applications: apps:NAME (slice) and workload:NAME (full capture) alike
    "app:pgbench", "app:sysbench-mariadb", "app:rocksdb", "app:sqlite", "app:build-linux", "app:fio-zipf",
    "app:nginx-static", "app:pg-analytics", "app:git-checkout", "app:squid-cache", "app:beanstalkd",
)


def families(trace):
    """The split's names a trace stands for: synth:zipf:requests=9 -> [synth:zipf], apps:X,
    workload:X and workload:X@500000-750000 -> [app:X], workload:A+B -> [app:A, app:B],
    bundled:X -> [bundled:X]; a file -> []."""
    kind, sep, rest = trace.partition(":")
    if not sep:
        return []
    if kind == "synth":
        return ["synth:" + rest.split(":")[0]]
    if kind in ("apps", "workload"):   # a part of a capture (workload:NAME@START-END) is the capture's
        return ["app:" + n.split("@")[0] for n in rest.split("+")]
    if kind == "bundled":
        return ["bundled:" + rest]
    return []


def side(trace):
    """'evaluation', 'training' or None (listed in neither)."""
    names = families(trace)
    if any(n in EVALUATION for n in names):
        return "evaluation"
    if names and all(n in TRAINING for n in names):
        return "training"
    return None


def check_training(traces, what):
    """HblError naming the first evaluation workload among traces meant for training or tuning."""
    bad = [t for t in traces if side(t) == "evaluation"]
    if bad:
        raise HblError("%s: %s is an evaluation workload (hbl/trace/split.py), not for training or tuning; "
                       "the training workloads are %s (a synth: family with any keys, an application as "
                       "workload:NAME or apps:NAME)"
                       % (what, bad[0], ", ".join(t.replace("app:", "workload:", 1) for t in TRAINING)))
