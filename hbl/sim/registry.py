"""The policies the C core registers and their parameters: names, capabilities, defaults, and
the NAME=NUMBER / POLICY.NAME=NUMBER parameters a run is given (parsed, scoped, checked)."""
from hbl.core import ffi, lib
from hbl.errors import HblError

# what a policy can do (enum hbl_policy_flag): ask the registry, never a list of names
CAPABILITIES = {"learns": lib.HBL_POLICY_LEARNS, "needs_future": lib.HBL_POLICY_NEEDS_FUTURE,
                "live": lib.HBL_POLICY_LIVE}


def policies():
    """Every registered C policy: {name, description, capabilities (names of CAPABILITIES)}."""
    out, i = [], 0
    while True:
        name = lib.hbl_policy_name(i)
        if name == ffi.NULL:
            return out
        flags = lib.hbl_policy_flags(i)
        out.append(dict(name=ffi.string(name).decode(), description=ffi.string(lib.hbl_policy_doc(i)).decode(),
                        capabilities=[c for c, bit in CAPABILITIES.items() if flags & bit]))
        i += 1


def policy_names(capability=None):
    """Names of the registered policies, only those with `capability` (a CAPABILITIES key) if given."""
    return [p["name"] for p in policies() if capability is None or capability in p["capabilities"]]


#: Policies written in Python over the C ones (hbl/sim/guard.py), not registered in the C core: not in
#: policies() or policy_names(), so never in a run's "all" (hbl compare, bench, sweep) unless named; see
#: all_policy_names().  name -> description, capabilities (as policies()'), parameters (as policy_params()).
COMPOSITES = {
    "harmonia-guard": dict(
        description="harmonia guarded by lru, arc, lirs, s3fifo and wtinylfu run alongside, switching to the "
                    "cumulative leader (rule H, results/diagnosis/guard.txt); a composite in Python, 8-9x "
                    "harmonia's simulation time alone (more on some workloads); in hbl compare about 1.5x, its "
                    "baselines' runs shared with their own cells and between seeds; no live device",
        capabilities=["learns", "composite"],
        params={"window": dict(default=10000.0, description="requests per window: it may switch after each full one"),
                "margin": dict(default=0.02, description="switch when the cumulative leader beats the active "
                                                         "member by more than this share")}),
}


def refuse_live(policy):
    """A clear HblError for a composite policy asked to drive a live device (it has no live decider)."""
    if policy in COMPOSITES:
        raise HblError("policy %s cannot drive a live device: it is a composite of several simulators in Python "
                       "(hbl/sim/guard.py), not a C policy with a live decider; run it in the simulator "
                       "(hbl simulate --policy %s, hbl compare --policies ...,%s)" % (policy, policy, policy))


def refuse_plugin(policy, where, context=""):
    """A clear HblError for a Python plugin (python:FILE.py:CLASS) named in a run of several cells (it
    runs in hbl simulate only); `where` ends the message ("a comparison"), `context` starts it ("sweep: ")."""
    if policy == "python" or policy.startswith("python:"):
        raise HblError("%spolicy %s: a Python plugin runs in hbl simulate --policy python:FILE.py:CLASS only, "
                       "not in %s" % (context, policy, where))


def all_policy_names(capability=None):
    """policy_names(capability) and the composite policies (COMPOSITES) with that capability."""
    return policy_names(capability) + [n for n, c in COMPOSITES.items()
                                       if capability is None or capability in c["capabilities"]]


def params_of(policy):
    """The parameters a policy takes, C or composite: {name: {default, description, ...}} ({} if unknown)."""
    if policy in COMPOSITES:
        return COMPOSITES[policy]["params"]
    names = policy_names()
    return policy_params(names.index(policy)) if policy in names else {}


def policy_params(i):
    """{name: {default, live_default, description}} of the parameters policy i accepts; a default
    is None when its init does not read it with two devices (it depends on other parameters or the
    variant); live_default, on a live device, only for a policy that can run live."""
    names, docs = [], []
    while lib.hbl_policy_param(i, len(names)) != ffi.NULL:
        docs.append(ffi.string(lib.hbl_policy_param_doc(i, len(names))).decode())
        names.append(ffi.string(lib.hbl_policy_param(i, len(names))).decode())

    def read(defaults):
        values, known = ffi.new("double[]", max(len(names), 1)), ffi.new("uint8_t[]", max(len(names), 1))
        if defaults(i, values, known, len(names)) < 0:
            return None
        return [values[j] if known[j] else None for j in range(len(names))]

    sim, live = read(lib.hbl_policy_defaults), read(lib.hbl_policy_live_defaults)
    out = {k: dict(default=sim[j] if sim else None, description=docs[j]) for j, k in enumerate(names)}
    for j, k in enumerate(names if live else []):
        out[k]["live_default"] = live[j]
    return out


def param_items(items):
    """['smq.promote=8', 'promote=8'] -> [('smq', 'promote', 8.0), (None, 'promote', 8.0)]: each
    parameter with the policy it is scoped to (POLICY.NAME) or None; a dict's keys may be scoped too."""
    pairs = []
    if isinstance(items, dict):
        pairs = [(str(k), v, "%s=%s" % (k, v)) for k, v in items.items()]
    else:
        for item in items or []:
            for part in filter(None, item.split(",")):
                key, eq, value = part.partition("=")
                if not eq or not key.strip():
                    raise HblError("policy parameter %r: want NAME=NUMBER" % part)
                pairs.append((key, value, part))
    out, seen = [], {}
    for key, value, part in pairs:
        scope, _, name = key.strip().rpartition(".")
        try:
            if isinstance(value, str) and "_" in value:     # float() takes 1_0; the options do not
                raise ValueError(value)
            value = float(value)
        except (TypeError, ValueError):
            raise HblError("policy parameter %r: want NAME=NUMBER" % part) from None
        if not name:
            raise HblError("policy parameter %r: want NAME=NUMBER" % part)
        ident = (scope or None, name)
        if ident in seen and seen[ident] != value:  # the last one silently won
            raise HblError("policy parameter %s given twice (%g and %g): give it once"
                           % (key.strip(), seen[ident], value))
        seen[ident] = value
        out.append((scope or None, name, value))
    return out


def parse_params(items, policy=None):
    """['smq.promote=8', 'promote=8'] -> {'promote': 8.0}; also accepts a dict. With `policy`, a
    parameter scoped to another policy (lru.NAME for smq) is an error, not silently dropped."""
    out, scoped = {}, {}
    for scope, name, value in param_items(items):
        if policy is not None and scope is not None and scope != policy:
            raise HblError("policy parameter %s.%s is for policy %s, not %s" % (scope, name, scope, policy))
        (scoped if scope is not None else out)[name] = value
    return dict(out, **scoped)      # POLICY.NAME, the more specific, wins over NAME in any order


def params_for(items, policy):
    """The parameters of one policy in a run of several (hbl compare, hbl sweep): POLICY.NAME
    entries for this policy, and unscoped NAME entries when this policy takes NAME (a policy
    that does not, such as fast-only, runs without them)."""
    takes = set(params_of(policy))
    items = param_items(items)
    unscoped = {name: value for scope, name, value in items if scope is None and name in takes}
    return dict(unscoped, **{name: value for scope, name, value in items if scope == policy})   # the scoped wins


def check_params_for(items, names):
    """Refuse parameters no policy of a run would get: a scope that is not one of `names`, or an
    unscoped NAME that none of them takes (a typo would otherwise be dropped without a word)."""
    takes = set()
    for p in names:
        takes.update(params_of(p))
    for scope, name, _ in param_items(items):
        if scope is not None and scope not in names:
            raise HblError("--param %s.%s: policy %s is not in this run (have: %s)"
                           % (scope, name, scope, ", ".join(names)))
        if scope is None and name not in takes:
            raise HblError("--param %s: no policy in this run takes it (see `hbl policies`)" % name)


#: Parameters of the learning policies that teach their agents from the oracle's labels
#: (ctypes_core/demos.h): a run with any of them non-zero hands the policy the trace's future.
DEMO_PARAMS = ("demo", "m_demo", "demo_follow", "m_demo_follow")


def wants_future(policy, params=None):
    """Whether a run of `policy` reads the whole trace first: the oracle, or demonstrations asked for."""
    return policy in policy_names("needs_future") or any(parse_params(params).get(k) for k in DEMO_PARAMS)
