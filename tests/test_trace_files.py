"""The file behind a trace name (hbl.trace.resolve): a part of a capture (workload:NAME@START-END)
reads its capture's, and the commands that take a name take a part; hbl simulate compares its outputs
with the files its trace reads, not with the trace's name."""
import numpy as np
import pytest

from hbl import record
from hbl.cli import main
from hbl.trace import load, resolve, workloads, writer


@pytest.fixture
def capture(tmp_path, monkeypatch):
    """workload:sqlite as a capture of a temporary cache (never this machine's), none shipped."""
    cache = tmp_path / "cache"
    cache.mkdir()
    monkeypatch.setattr(workloads, "CACHE_DIR", cache)
    monkeypatch.setattr(workloads, "SHIPPED_DIR", tmp_path / "shipped")
    rng = np.random.default_rng(1)
    d = record.empty(300)
    d["time_ns"] = np.cumsum(rng.integers(1, 1000, len(d)))
    d["offset"] = rng.integers(0, 5000, len(d)) * 4096
    d["length"] = 4096
    d["op"] = rng.integers(0, 2, len(d))
    path = cache / "sqlite.hbltrace"
    with writer(str(path), "native") as w:
        w.write(d)
    return path


def test_a_part_resolves_to_its_captures_file(capture):
    assert resolve("workload:sqlite@10-50") == resolve("workload:sqlite") == str(capture)


def test_a_part_converts_to_a_file(capture, tmp_path):
    out = tmp_path / "part.hbltrace"
    assert main(["convert", "workload:sqlite@10-50", str(out)]) == 0
    assert (load(str(out))[0] == load("workload:sqlite")[0][10:50]).all()


def test_convert_refuses_to_write_a_part_over_its_capture(capture, capsys):
    before = capture.read_bytes()
    assert main(["convert", "workload:sqlite@10-50", str(capture)]) == 2
    assert "refusing to overwrite the input" in capsys.readouterr().err
    assert capture.read_bytes() == before


def test_input_files_leaves_the_files_module_its_name():
    """A function named files in hbl.trace hid the module hbl.trace.files (workloads capture imports it)."""
    from hbl.trace import files, input_files
    assert callable(files.writer) and callable(input_files)


@pytest.mark.parametrize("trace", ["workload:sqlite", "workload:sqlite@10-50", "workload:sqlite+sqlite"])
def test_simulate_refuses_an_output_over_the_file_its_trace_name_reads(capture, capsys, trace):
    """The check compared the name (workload:sqlite) with the output's path: the timeline replaced the capture."""
    before = capture.read_bytes()
    spelled = str(capture.parent / ".." / capture.parent.name / capture.name)
    assert main(["simulate", "--trace", trace, "--policy", "lru", "--timeline", spelled, "--quiet"]) == 2
    assert "--timeline %s is also the input" % spelled in capsys.readouterr().err
    assert capture.read_bytes() == before
