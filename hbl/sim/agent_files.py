"""The pretrained agents' files: where the shipped ones are, how a pretraining names them, and
which a run starts from.  Below both the simulator (a run of a learning policy starts from the
shipped agents, hbl/sim/__init__.py) and the pretraining that makes them (hbl/sim/pretrained.py)."""
from pathlib import Path

from hbl.errors import HblError

AGENTS_DIR = Path(__file__).resolve().parent.parent / "data" / "agents"
#: The HSS presets the shipped agents are trained for.
HSS = ("perf", "cost", "tri", "quad")


def agent_file(policy, hss, seed, directory=AGENTS_DIR):
    """The agents of one pretraining seed, as `hbl pretrain` writes them."""
    return Path(directory) / ("%s-%s-s%d.agent" % (policy, hss, int(seed)))


def selected_file(policy, hss, directory=AGENTS_DIR):
    """The agents chosen among the pretraining seeds, as `hbl pretrain --select` writes them."""
    return Path(directory) / ("%s-%s.agent" % (policy, hss))


def shipped(policy, hss, seed=None):
    """The shipped agents for a run of `policy` on HSS preset `hss` (any seed), or None."""
    if not isinstance(hss, str) or hss not in HSS:
        return None
    path = selected_file(policy, hss)
    return path if path.is_file() else None


def in_directory(directory, policy, hss, seed):
    """The agents a run of `policy` on HSS preset `hss` with `seed` starts from in a directory
    `hbl pretrain --out` wrote, as it would from the shipped ones: the chosen POLICY-HSS.agent (made
    by --select) for every seed, else pretraining seed `seed`'s own POLICY-HSS-sSEED.agent.  False
    for a policy that has no shipped agents to stand in for; an error if it has and DIR has neither."""
    for path in (selected_file(policy, hss, directory), agent_file(policy, hss, seed, directory)):
        if path.is_file():
            return path
    if shipped(policy, hss) is None:
        return False
    raise HblError("%s: no agents for %s on %s, seed %d (neither %s nor %s; `hbl pretrain --out %s` writes them)"
                   % (directory, policy, hss, seed, selected_file(policy, hss, directory).name,
                      agent_file(policy, hss, seed, directory).name, directory))


#: The policies whose first agent is the placement agent that harmonia's queue_feature=1 widens from
#: Harmonia's 7 state features to 8, and reuse_feature=1 (with it) to 9 (ctypes_core/policies/harmonia.c;
#: tests/test_agent.py checks the list).
QUEUE_FEATURE_POLICIES = ("harmonia", "harmonia-placement-only")
QUEUE_FEATURES = 8
REUSE_FEATURES = 9


class ContradictingParams(HblError):
    """A parameter asked for explicitly that the agent file cannot run with (run_params)."""


def run_params(path, policy, params):
    """The parameters (a dict, as hbl.sim.registry.parse_params gives) a run of `policy` needs to load the
    agents in `path`: an agent file carries its placement agent's width, so one of 9 features runs with
    queue_feature=1 and reuse_feature=1, one of 8 with queue_feature=1 alone and one of 7 with neither,
    whatever the caller passed; an explicit queue_feature or reuse_feature that contradicts the file is an
    error naming it (ContradictingParams; a file it cannot read, an HblError).  Other policies' parameters
    are returned as given."""
    from hbl.core import ffi, lib
    params = dict(params or {})
    if policy not in QUEUE_FEATURE_POLICIES:
        return params
    err = ffi.new("char[512]")
    n = lib.hbl_agents_file_features(str(path).encode(), err, 512)
    if n < 0:
        raise HblError(ffi.string(err).decode())
    for name, width in (("queue_feature", QUEUE_FEATURES), ("reuse_feature", REUSE_FEATURES)):
        wants = 1 if n >= width else 0
        given = params.get(name)
        if given is not None and bool(given) != bool(wants):
            raise ContradictingParams("%s: its placement agent has %d state features, so it runs with "
                                      "%s=%d, not the %s=%g asked for" % (path, n, name, wants, name, given))
        if wants:
            params[name] = 1.0
    return params
