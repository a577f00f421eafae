import numpy as np
import pytest

from hbl import record
from hbl.devices import load_hss
from hbl.errors import HblError
from hbl.sim.plugin import Policy
from hbl.sim import Simulator, footprint_pages, simulate
from hbl.sim.registry import policy_names
from hbl.trace import load

POLICIES = [p for p in policy_names() if p != "python"]
WORKLOADS = ["bundled:hm_0", "bundled:rsrch_1", "synth:mixed:requests=30000,pages=20000"]


@pytest.mark.parametrize("hss", ["perf", "cost", "tri", "quad"])
@pytest.mark.parametrize("policy", POLICIES)
def test_invariants_every_policy_every_hss(policy, hss):
    # check=True walks the page table: one home per page, no device over
    # capacity, LRU lists consistent, migrated bytes = moves x page size
    r = simulate("synth:mixed:requests=20000,pages=8000", hss=hss, policy=policy, check=True,
                 migrate_every=500)
    assert r["requests"] == 20000
    caps = r["capacity_pages"]
    for used, cap in zip(r["used_pages"], caps):
        assert cap < 0 or used <= cap
    assert sum(r["used_pages"]) == r["pages"]          # every page seen has a home
    assert r["avg_latency_us"] > 0


@pytest.mark.parametrize("trace", WORKLOADS)
@pytest.mark.parametrize("cap", ["2%", "10%", "30%"])
def test_oracle_read_hits_never_below_lru(trace, cap):
    o = simulate(trace, hss="perf", policy="oracle", fast_capacity=cap, check=True)
    lru = simulate(trace, hss="perf", policy="lru", fast_capacity=cap)
    assert o["read_hit_ratio"] >= lru["read_hit_ratio"]


def test_fast_only_and_slow_only_bound_the_rest():
    res = {p: simulate("bundled:hm_0", hss="perf", policy=p) for p in POLICIES}
    assert res["fast-only"]["read_hit_ratio"] == 1.0 and res["slow-only"]["read_hit_ratio"] == 0.0
    assert res["fast-only"]["fast_write_share"] == 1.0 and res["slow-only"]["fast_write_share"] == 0.0
    for p, r in res.items():
        assert r["avg_latency_us"] >= res["fast-only"]["avg_latency_us"] * 0.999, p


def test_deterministic():
    a = simulate("bundled:hm_0", hss="tri", policy="smq", seed=5)
    b = simulate("bundled:hm_0", hss="tri", policy="smq", seed=5)
    for k in ("avg_latency_us", "p99_latency_us", "promotions", "evictions", "read_hit_ratio"):
        assert a[k] == b[k]


def one_request_sim(hss="cost", policy="slow-only", **kw):
    config = load_hss(hss)
    return Simulator(config, policy, [None] * len(config.devices) if policy == "fast-only"
                     else [1000] + [None] * (len(config.devices) - 1), **kw)


def reqs(offsets, length=4096, op=record.READ, gap_ns=10 ** 9):
    a = record.empty(len(offsets))
    a["offset"] = offsets
    a["length"] = length
    a["op"] = op
    a["time_ns"] = np.arange(len(offsets)) * gap_ns
    return a


def test_hdd_sequential_cheaper_than_random():
    seq, rnd = one_request_sim(), one_request_sim()
    seq.feed(reqs([i * 4096 for i in range(100)]))
    rnd.feed(reqs([(i * 7919 % 100000) * 4096 * 50 for i in range(100)]))
    s, r = seq.result(), rnd.result()
    assert s["avg_latency_us"] * 20 < r["avg_latency_us"]


def test_queueing_open_vs_closed_loop():
    burst = reqs([(i * 7919 % 100000) * 4096 * 50 for i in range(200)], gap_ns=0)
    open_loop, qd1 = one_request_sim(open_loop=True), one_request_sim()
    open_loop.feed(burst)
    qd1.feed(burst)
    # all 200 arrive at once in open loop: they queue behind each other on one HDD head
    assert open_loop.result()["avg_latency_us"] > 50 * qd1.result()["avg_latency_us"]


def test_split_request_completes_with_its_slowest_part():
    sim = one_request_sim(policy="lru")
    sim.feed(reqs([0], length=4096))          # page 0 promoted to fast
    sim.feed(reqs([0], length=8192))          # page 0 fast, page 1 on HDD: one request, two devices
    r = sim.result()
    assert r["requests"] == 2 and r["p99_latency_us"] > 1000  # bounded by the HDD part


def test_migrations_compete_with_foreground():
    a = simulate("bundled:hm_0", hss="cost", policy="lru", fast_capacity="1%")
    b = simulate("bundled:hm_0", hss="cost", policy="lru", fast_capacity="50%")
    assert a["evictions"] > b["evictions"]


class PyLRU(Policy):
    def place(self, view, request, slots):
        return 0


class PyDemote(Policy):
    def migrate(self, view, max_moves):
        return [(s, 1) for s in view.lru(0, max_moves)]

    def place(self, view, request, slots):
        return [0 if view.count(s) >= 1 else None for s in slots]


def test_python_plugin_matches_c_policy():
    c = simulate("bundled:mds_0", hss="perf", policy="lru", check=True)
    py = simulate("bundled:mds_0", hss="perf", policy="lru", plugin=PyLRU(), check=True)
    for k in ("avg_latency_us", "promotions", "evictions", "read_hit_ratio", "fast_write_share"):
        assert c[k] == py[k]
    assert py["policy"] == "python"


def test_python_plugin_migrations():
    r = simulate("bundled:hm_0", hss="perf", policy="x", plugin=PyDemote(), check=True, migrate_every=100)
    assert r["evictions"] > 0 and r["promotions"] > 0


def test_bad_policy_and_params():
    with pytest.raises(HblError, match="unknown policy"):
        simulate("bundled:mds_0", policy="nope")
    with pytest.raises(HblError, match="unknown parameter 'promte'.*promote"):
        simulate("bundled:mds_0", policy="smq", params=["promte=3"])
    # a list too long for the message is pointed to, never cut inside a name ("m_hidden1, m_)")
    with pytest.raises(HblError, match=r"unknown parameter 'lrr' \(this policy takes \d+ parameters: `hbl policies`"):
        simulate("bundled:mds_0", policy="harmonia", params=["lrr=3"])
    with pytest.raises(HblError, match=r"policy parameter hits given twice \(1 and 8\): give it once"):
        simulate("bundled:mds_0", policy="nhit", params=["hits=1", "hits=8"])    # the last one silently won
    with pytest.raises(HblError, match="'hits=1_0': want NAME=NUMBER"):
        simulate("bundled:mds_0", policy="nhit", params=["hits=1_0"])            # float() takes it; options do not
    r1 = simulate("bundled:hm_0", policy="nhit", params=["hits=1"])
    r3 = simulate("bundled:hm_0", policy="nhit", params=["hits=8"])
    assert r1["promotions"] > r3["promotions"]


@pytest.mark.parametrize("policy, name", [("sibyl", "batch"), ("harmonia", "m_batch"), ("harmonia", "hidden1"),
                                           ("archivist", "hidden"), ("rnn-hss", "batch"), ("sibyl", "reward"),
                                           ("harmonia", "m_moves"), ("harmonia", "m_horizon")])
def test_a_fraction_of_a_whole_parameter_is_refused(policy, name):
    """The policy keeps it in an integer: 2.5 was cut to 2 without a word."""
    hss = load_hss("perf")
    build = lambda value: Simulator(hss, policy, [1024, None], params=["%s=%s" % (name, value)], seed=1)  # noqa: E731
    with pytest.raises(HblError, match=r"parameter '%s' must be a whole number \(got 2.5\)" % name):
        build(2.5)
    build(1.0)          # a whole number written as a float is one


def test_a_real_parameter_still_takes_a_fraction():
    Simulator(load_hss("perf"), "sibyl", [1024, None], params=["lr=0.0005", "gamma=0.85"], seed=1)
    Simulator(load_hss("perf"), "smq", [1024, None], params=["promote=2.5"], seed=1)     # a threshold, kept a double


def test_footprint():
    d, _ = load("bundled:hm_0")
    pages = set()
    for off, ln in zip(d["offset"].tolist(), d["length"].tolist()):
        if ln:
            pages.update(range(off // 4096, (off + ln - 1) // 4096 + 1))
    assert footprint_pages([d]) == len(pages)


def test_reuse_distance_matches_naive():
    from hbl.trace.info import trace_info
    d, _ = load("synth:zipf:requests=3000,pages=500,seed=9")
    info = trace_info([d])
    stack, hist = [], {}
    for off in (d["offset"] // 4096).tolist():
        if off in stack:
            dist = len(stack) - 1 - stack.index(off)
            b = dist.bit_length() if dist else 0
            b = int(np.floor(np.log2(dist + 1)))
            key = "%d-%d" % (2 ** b - 1, 2 ** (b + 1) - 2)
            hist[key] = hist.get(key, 0) + 1
            stack.remove(off)
        stack.append(off)
    assert info["reuse_distance"]["histogram"] == hist
    assert info["footprint_pages"] == len(set((d["offset"] // 4096).tolist()))


def test_lru_agrees_with_libcachesim():
    """Cross-check against an independent implementation: hbl's LRU hit ratio
    equals libCacheSim's LRU on the same page sequence and capacity (reads only)."""
    pytest.importorskip("libcachesim")
    from hbl.experiments.bench import libcachesim_lru
    d, _ = load("synth:zipf:requests=100000,pages=20000,alpha=0.9,read=1,seed=4")
    r = simulate("synth:zipf:requests=100000,pages=20000,alpha=0.9,read=1,seed=4", hss="perf", policy="lru")
    _, hit = libcachesim_lru(d, r["capacity_pages"][0])
    assert abs(r["read_hit_ratio"] - hit) < 1e-6


def test_wasted_promotions_and_pages_per_device():
    # lru, 2 fast pages: reads of pages 0, 1, 2 promote each (the read that misses does not count as
    # the copy's read); page 0 leaves unread when 2 comes in; page 1 is read again; then a write
    # placed on fast pushes out page 2, never read since its promotion
    config = load_hss("perf")
    sim = Simulator(config, "lru", [2, None])
    sim.feed(reqs([0, 4096, 8192, 4096]))
    r = sim.result()
    assert (r["promotions"], r["promotions_wasted"], r["promoted_unread"]) == (3, 1, 1)
    assert r["read_pages"] == [1, 3] and r["write_pages"] == [0, 0]
    sim.feed(reqs([5 * 4096], op=record.WRITE))
    sim.check()   # the page table's unread marks add up to promoted_unread
    r = sim.result()
    assert (r["promotions"], r["promotions_wasted"], r["promoted_unread"]) == (3, 2, 0)
    assert r["write_pages"] == [1, 0]
    # the read part of the latency: every request but the write
    assert r["read_latency_us"] * r["reads"] < r["avg_latency_us"] * r["requests"]


class ReadsUpWritesDown(Policy):
    def place(self, view, request, slots):
        return 1 if request["op"] == record.WRITE else 0


def test_promotion_counted_wasted_when_a_write_moves_it_down():
    # a promoted page written over on the slow device before a read: its copy was never read
    config = load_hss("perf")
    for placement, wasted, unread in ((PyLRU(), 0, 1), (ReadsUpWritesDown(), 1, 0)):
        sim = Simulator(config, "lru", [2, None], plugin=placement)
        sim.feed(reqs([0]))
        assert sim.result()["promoted_unread"] == 1
        sim.feed(reqs([0], op=record.WRITE))   # lru keeps it on fast; the other sends it down
        sim.check()
        r = sim.result()
        assert (r["promotions"], r["promotions_wasted"], r["promoted_unread"]) == (1, wasted, unread), placement
