"""Multi-tenant mixes (workload:A+B): interleaved by time, each tenant on its own address range."""
import numpy as np
import pytest

from hbl import record
from hbl.trace import workloads
from hbl.errors import TraceError
from hbl.trace import load, mix, open_trace, writer


def tenant(n, start, step, first_offset, seed):
    rng = np.random.default_rng(seed)
    d = record.empty(n)
    d["time_ns"] = start + np.cumsum(rng.integers(0, 3, n) * step)    # ties within and across tenants
    d["offset"] = first_offset + rng.integers(0, 5000, n) * 4096
    d["length"] = rng.choice([4096, 65536], n)
    d["latency_ns"] = rng.integers(1, 10 ** 6, n)
    d["op"] = rng.integers(0, 2, n)
    d["device"] = 99
    return d


@pytest.fixture
def captures(tmp_path, monkeypatch):
    """Three tenants as workload captures: native, packed and native, of different lengths."""
    monkeypatch.setattr(workloads, "CACHE_DIR", tmp_path)
    monkeypatch.setattr(workloads, "SHIPPED_DIR", tmp_path)
    data = {"pgbench": tenant(500, 10 ** 12, 1000, 7 << 30, 1), "sqlite": tenant(300, 5, 3000, 0, 2),
            "rocksdb": tenant(40, 777, 10 ** 5, 12345 * 512, 3)}
    for name, d in data.items():
        path = tmp_path / (name + (".hblz" if name == "sqlite" else ".hbltrace"))
        with writer(str(path), "packed" if name == "sqlite" else "native") as w:
            w.write(d)
    return data


@pytest.mark.parametrize("chunk", [1 << 16, 7])
def test_tenants_interleave_by_time_on_their_own_ranges(captures, chunk):
    names = ["pgbench", "sqlite", "rocksdb"]
    reader = open_trace("workload:" + "+".join(names), chunk=chunk)
    chunks = list(reader)
    assert all(0 < len(c) <= chunk for c in chunks)
    got = record.concat(chunks)
    assert len(got) == sum(len(captures[n]) for n in names)
    t = got["time_ns"].astype(np.int64)
    assert (np.diff(t) >= 0).all() and t[0] == 0       # every tenant starts at 0
    ends = []
    for i, name in enumerate(names):
        mine, own = got[got["device"] == i], captures[name]
        base = reader.bases[i]
        assert base % mix.ALIGN == 0
        assert (mine["time_ns"] == own["time_ns"] - own["time_ns"].min()).all()   # its order and timing kept
        assert (mine["offset"] == own["offset"] + np.uint64(base)).all()
        for f in ("length", "latency_ns", "op"):
            assert (mine[f] == own[f]).all()
        ends.append((base, int((mine["offset"] + mine["length"]).max())))
    for (_, e0), (b1, _) in zip(ends, ends[1:]):
        assert b1 == -(-e0 // mix.ALIGN) * mix.ALIGN     # the next range starts at the first boundary past it


def test_a_tie_goes_to_the_tenant_named_first(captures):
    got = load("workload:sqlite+pgbench")[0]
    at_zero = got[got["time_ns"] == 0]["device"].astype(int)
    assert set(at_zero) == {0, 1} and (np.diff(at_zero) >= 0).all()
    same = got["time_ns"][1:] == got["time_ns"][:-1]
    assert (got["device"][1:][same] >= got["device"][:-1][same]).all()


def test_bad_mixes_are_named(captures):
    with pytest.raises(TraceError, match=r"a mix is workload:A\+B"):
        open_trace("workload:pgbench+")
    with pytest.raises(TraceError, match="no workload recipe 'nope'"):
        open_trace("workload:pgbench+nope")
    with pytest.raises(TraceError, match="takes no --format"):
        open_trace("workload:pgbench+sqlite", fmt="native")


def test_a_mix_converts_to_a_file(captures, tmp_path):
    from hbl.cli import main
    out = tmp_path / "mix.hblz"
    assert main(["convert", "workload:sqlite+rocksdb", str(out)]) == 0
    a, b = load("workload:sqlite+rocksdb")[0], load(str(out))[0]
    assert (a == b).all() and len(a) == 340


def test_a_mix_is_not_converted_over_a_tenants_file(captures, tmp_path, capsys):
    from hbl.cli import main
    tenant_file = tmp_path / "rocksdb.hbltrace"
    before = tenant_file.read_bytes()
    assert main(["convert", "workload:sqlite+rocksdb", str(tenant_file)]) == 2
    assert "refusing to overwrite the input" in capsys.readouterr().err
    assert tenant_file.read_bytes() == before


def test_compare_reports_full_captures_apart(captures):
    from hbl.experiments.compare import compare, format_text
    s = compare(traces=["bundled:mds_0", "synth:zipf:requests=2000,pages=500", "workload:sqlite",
                        "workload:pgbench+rocksdb"], hss_list=("perf",), policies="lru", progress=False, seeds=1)
    kinds = s["geomean_by_kind"]["perf"]
    assert set(kinds) == {"full captures", "real slices", "synthetic"}
    norm = s["normalized_avg_latency"]["perf"]
    assert kinds["full captures"]["lru"] == pytest.approx((norm["sqlite+"]["lru"] *
                                                           norm["pgbench+rocksdb+"]["lru"]) ** 0.5)
    assert kinds["real slices"]["lru"] == pytest.approx(norm["mds_0"]["lru"])
    text = format_text(s).splitlines()
    at = text.index("by kind of workload (geomean): full captures 2, real slices 1, synthetic 1")
    assert text[at + 1].split() == ["policy", "full", "captures", "real", "slices", "synthetic"]
    assert ["lru"] in [line.split()[:1] for line in text[at + 2:at + 5]] and max(len(line) for line in text) <= 100


def test_the_default_suite_cuts_full_captures(captures, monkeypatch):
    from hbl.experiments import compare as cmp
    monkeypatch.setattr(cmp, "default_traces", lambda n=None: ["workload:sqlite", "bundled:mds_0"])
    s = cmp.compare(hss_list=("perf",), policies="lru", progress=False, seeds=1, capture_requests=120)
    requests = {r["workload"]: r["requests"] for r in s["results"] if r["policy"] == "lru"}
    assert s["capture_requests"] == 120 and requests["sqlite+"] == 120 and requests["mds_0"] > 120
    whole = cmp.compare(traces=["workload:sqlite"], hss_list=("perf",), policies="lru", progress=False, seeds=1)
    assert whole["capture_requests"] is None and whole["results"][0]["requests"] == 300
