"""scripts/migration_diag.py (results/diagnosis/migration.txt): the swapped agent files carry the
network they claim to, and a training capture's parts are consecutive and do not overlap."""
import importlib
import itertools
import os
import sys

import numpy as np
import pytest

from hbl import record
from hbl import trace as tracemod
from hbl.devices import load_hss
from hbl.sim import Simulator
from hbl.sim.agent_files import selected_file

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# probe states of the 7-feature placement state: type, size, interval, count, free, device, since migration
STATES = [[w, sz, iv, c, fr, dv, 63] for w, sz, iv, c, fr, dv in
          itertools.product((0, 1), (0, 2, 5), (0, 20, 63), (0, 8), (0, 7), (0, 1))]


@pytest.fixture
def md(monkeypatch):
    """scripts/migration_diag.py as a module, fresh for each test."""
    monkeypatch.syspath_prepend(os.path.join(ROOT, "scripts"))
    sys.modules.pop("migration_diag", None)
    return importlib.import_module("migration_diag")


def agents_of(policy, path, hss):
    cfg = load_hss(hss)
    sim = Simulator(cfg, policy, cfg.capacity_pages(10_000, 4096))
    sim.load_agents(path)
    return sim.agents()


def decisions(agent):
    return [agent.greedy(s) for s in STATES]


def test_swapped_files_carry_the_other_policys_placement_network(md, tmp_path):
    # on tri: the shipped perf and cost harmonia agents have 8 placement features (issue 26), placement-only's 7
    files = md.swapped_agents("tri", str(tmp_path))
    h = agents_of("harmonia", selected_file("harmonia", "tri"), "tri")
    po = agents_of("harmonia-placement-only", selected_file("harmonia-placement-only", "tri"), "tri")
    assert decisions(h[0]) != decisions(po[0])          # else the test could not tell them apart
    po_hp = agents_of("harmonia-placement-only", files["PO.hP"], "tri")
    h_pop = agents_of("harmonia", files["H.poP"], "tri")
    assert decisions(po_hp[0]) == decisions(h[0])
    assert decisions(h_pop[0]) == decisions(po[0])
    # the migration agent stays harmonia's own
    assert [h_pop[1].greedy(s[:7]) for s in STATES] == [h[1].greedy(s[:7]) for s in STATES]


def test_capture_parts_are_consecutive(md, tmp_path, monkeypatch):
    read = tracemod.open_trace            # the script's own open_trace is replaced below
    r = record.empty(1000)
    r["offset"] = np.arange(1000) * 4096
    r["length"] = 4096
    monkeypatch.setattr(md, "CAPTURES", ("x",))
    monkeypatch.setattr(md, "PARTS", (("train", 0, 500), ("val", 500, 750), ("check", 750, 1000)))
    monkeypatch.setattr(md.tracemod, "open_trace", lambda name: iter([r[:300], r[300:620], r[620:]]))
    md.write_parts(str(tmp_path))
    got = {p: np.concatenate(list(read(str(tmp_path / ("x-%s.hbltrace" % p)))))["offset"] // 4096
           for p in ("train", "val", "check")}
    assert got["train"].tolist() == list(range(0, 500))
    assert got["val"].tolist() == list(range(500, 750))
    assert got["check"].tolist() == list(range(750, 1000))
