"""The credit check's tools (scripts/credit_check.py, ctypes_core/sim_diag.c): one decision of a
deterministic replay flipped, and the hindsight credit of a decision, set side by side."""
import pytest

from hbl import record
from hbl.core import lib
from hbl.devices import load_hss
from hbl.errors import HblError
from hbl.sim import Simulator, footprint_pages
from hbl.trace import open_trace
from helpers import script

HOT, COLD_FROM = 1, 1000


def _trace(path, hot_reads=100):
    """Requests 0-999 read cold pages once each and the hot page twice (HPS promotes it at round
    1000); requests 1000-1999 read it every 10th request (hot_reads times), then never again; cold
    reads to 40,000 requests, past the credit's horizon (32,768 requests while the fast device
    holds nothing else)."""
    pages, cold = [], COLD_FROM
    for i in range(40000):
        hot = i in (10, 20) or (1000 <= i < 2000 and i % 10 == 0 and (i - 1000) // 10 < hot_reads)
        pages.append(HOT if hot else cold)
        cold += not hot
    with open(path, "w") as f:
        for i, p in enumerate(pages):
            f.write("%d,t,0,Read,%d,4096,100\n" % (128166625932151588 + i * 1000, p * 4096))
    data = record.concat(list(open_trace(str(path))))
    cfg = load_hss("perf")
    return cfg, cfg.capacity_pages(footprint_pages([data]), 4096), data


def test_a_promotion_that_pays_is_worth_what_its_credit_says(tmp_path):
    cc = script("credit_check")
    cfg, caps, data = _trace(tmp_path / "hot.csv")
    base = cc.Run("hps", cfg, caps, data, judge=[(1000, HOT)])
    assert (1000, HOT, 1, 0) in base.moves
    c = base.credits[(1000, HOT)]
    assert c["accesses"] == 100 and not c["ended"]
    # its credit is hbl_evalq_benefit's, and the script's recomputation of it is the same
    assert cc.benefit(c) == pytest.approx(c["benefit"][0])
    without = cc.Run("hps", cfg, caps, data, flip=(1000, HOT, -1))
    assert (1000, HOT, 1, 0) not in without.moves            # the flip dropped that one move
    assert without.counters["fast_reads"] < base.counters["fast_reads"] - 90
    truth = without.latency - base.latency
    # a hundred reads saved from the slower device, less a copy: the credit and the truth agree
    assert truth > 0 and c["benefit"][0] == pytest.approx(truth, rel=0.2)


def test_judging_and_a_flip_of_nothing_change_nothing(tmp_path):
    cc = script("credit_check")
    cfg, caps, data = _trace(tmp_path / "hot.csv")
    plain = cc.Run("hps", cfg, caps, data)
    judged = cc.Run("hps", cfg, caps, data, judge=[(1000, HOT), (1000, COLD_FROM), (1000, cc.COLD)])
    assert judged.latency == plain.latency and judged.moves == plain.moves
    nothing = cc.Run("hps", cfg, caps, data, flip=(1500, HOT, -1))     # no move asked there
    assert nothing.latency == plain.latency


def test_a_forced_move_is_made_where_the_policy_made_none(tmp_path):
    cc = script("credit_check")
    cfg, caps, data = _trace(tmp_path / "hot.csv")
    page = COLD_FROM + 5                                                # read once: HPS leaves it
    plain = cc.Run("hps", cfg, caps, data)
    assert all(p != page for _, p, _, _ in plain.moves)
    forced = cc.Run("hps", cfg, caps, data, flip=(1000, page, 0))
    assert (1000, page, 1, 0) in forced.moves
    assert forced.counters["promotions"] == plain.counters["promotions"] + 1


def test_diagnostics_refuse_a_learning_policy_and_evaluation_workloads(tmp_path):
    cfg, caps, _ = _trace(tmp_path / "hot.csv")
    sim = Simulator(cfg, "harmonia", caps)
    assert lib.hbl_sim_diag_start(sim.sim) == -1
    cc = script("credit_check")
    with pytest.raises(HblError, match="not a training workload"):
        cc.load("synth:hm:requests=1000")


def test_a_set_of_flips_drops_each_of_its_moves_and_no_other(tmp_path):
    cc = script("credit_check")
    cfg, caps, data = _trace(tmp_path / "hot.csv")
    plain = cc.Run("lru", cfg, caps, data)
    promotions = [m for m in plain.moves if m[3] == 0]
    dropped = promotions[100:105]
    flipped = cc.Run("lru", cfg, caps, data, flips=[(r, p, -1) for r, p, _, _ in dropped])
    assert not set(dropped) & set(flipped.moves)
    assert flipped.counters["promotions"] == plain.counters["promotions"] - len(dropped)


def test_a_read_promotion_is_also_credited_until_the_next_decision_on_its_page(tmp_path):
    """lru promotes the hot page at its first read (request 10); without that promotion it would
    promote it at its next read (request 20): the decision decided that one read, not the 101."""
    cc = script("credit_check")
    cfg, caps, data = _trace(tmp_path / "hot.csv")
    run = cc.Run("lru", cfg, caps, data, judge=[(10, HOT)])
    c = run.credits[(10, HOT)]
    assert c["kind"] == 1 and c["accesses"] == 101
    assert c["accesses_next"] == 1
    gap = c["cost_next"][1] - c["cost_next"][0]
    assert 0 < gap < (c["cost"][1] - c["cost"][0]) / 50


def _stream(path):
    """20,000 writes of new pages (the fast device fills with dirty pages; evicting them copies,
    so requests wait: the background share bg > 0), then 20,000 reads of new pages: lru promotes
    each, pushing off written pages (dirty) first and, once they are gone, pages it promoted (clean:
    their data still on the slow device)."""
    with open(path, "w") as f:
        for i in range(40000):
            op = "Write" if i < 20000 else "Read"
            f.write("%d,t,0,%s,%d,4096,100\n" % (128166625932151588 + i * 1000, op, (i + 1) * 4096))
    data = record.concat(list(open_trace(str(path))))
    cfg = load_hss("perf")
    return cfg, cfg.capacity_pages(footprint_pages([data]), 4096), data


@pytest.mark.parametrize("rnd,clean", [(20500, 0), (30000, 1)])
def test_credit_clean_spares_the_copy_down_of_a_clean_page_pushed_off(tmp_path, rnd, clean):
    """F2 of results/diagnosis/credit.txt (harmonia's credit_clean=1): a promotion into the full
    fastest device that pushes off a clean page is credited more, by exactly the copy down the
    simulator does not make; one that pushes off a dirty page, the same."""
    cc = script("credit_check")
    cfg, caps, data = _stream(tmp_path / "s.csv")
    run = cc.Run("lru", cfg, caps, data, judge=[(rnd, rnd + 1)])
    c = run.credits[(rnd, rnd + 1)]
    assert c["kind"] == 1 and c["full"] & 1 and c["victim_clean"] == clean
    charge = c["bg"] * c["chain"][0]
    assert charge > 0
    assert c["benefit_clean"][0] - c["benefit"][0] == pytest.approx(charge if clean else 0, abs=1e-6)
    assert c["benefit_clean"][0] == pytest.approx(cc.benefit(c, clean=True))


def test_the_waits_split_adds_up_to_the_replays_waits():
    """hbl_sim_diag_waits (results/diagnosis/waits.txt): its background waits are the replay's
    foreground_wait_ns, its background I/Os the replay's, and turning it on changes nothing."""
    cc = script("credit_check")
    data = record.concat(list(open_trace("synth:src:requests=20000,seed=2")))
    for hss in ("perf", "tri"):
        cfg = load_hss(hss)
        caps = cfg.capacity_pages(footprint_pages([data]), 4096)
        run = cc.Run("hps", cfg, caps, data)
        sim = Simulator(cfg, "hps", caps)
        sim.feed(data)
        st = sim.stats()
        assert run.latency == st.latency_sum_ns
        k, n = run.counters, len(cfg.devices)
        assert sum(k["wait_bg%d%s" % (d, rw)] for d in range(n) for rw in "rw") == pytest.approx(st.foreground_wait_ns)
        assert sum(k["bgio%d%s" % (d, rw)] for d in range(n) for rw in "rw") == st.background_ios
        if hss == "perf":   # src fills the slow device's queue there
            assert sum(k["drainio%d%s" % (d, rw)] for d in range(n) for rw in "rw") > 0


@pytest.mark.parametrize("args, rc", [(["--help"], 0), ([], 2)])
def test_drain_lag_without_its_arguments_prints_its_usage(args, rc):
    """scripts/drain_lag.py --help (or no argument) was a ValueError traceback from unpacking sys.argv."""
    import os
    import subprocess
    import sys
    from helpers import ROOT
    p = subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "drain_lag.py")] + args,
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == rc and "Traceback" not in p.stderr
    assert "scripts/drain_lag.py hps perf" in p.stdout + p.stderr
