"""The pretrained agents' files: where the shipped ones are, how a pretraining names them, and
which a run starts from.  Below both the simulator (a run of a learning policy starts from the
shipped agents, hbl/sim/__init__.py) and the pretraining that makes them (hbl/sim/pretrained.py)."""
from pathlib import Path

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
    from hbl.errors import HblError
    for path in (selected_file(policy, hss, directory), agent_file(policy, hss, seed, directory)):
        if path.is_file():
            return path
    if shipped(policy, hss) is None:
        return False
    raise HblError("%s: no agents for %s on %s, seed %d (neither %s nor %s; `hbl pretrain --out %s` writes them)"
                   % (directory, policy, hss, seed, selected_file(policy, hss, directory).name,
                      agent_file(policy, hss, seed, directory).name, directory))
