"""Progress goes to stderr only: a tqdm bar on a terminal, rate-limited plain lines in a pipe or a
log, nothing with --quiet; stdout holds the result alone."""
import io
import json
import subprocess
import sys

import pytest

from hbl import progress

from helpers import HBL, hbl

COMPARE = ["compare", "--trace", "bundled:mds_0", "--trace", "synth:zipf:requests=5000,pages=2000",
           "--hss", "perf", "--policies", "lru,harmonia", "--seeds", "2"]


class Clock:
    def __init__(self):
        self.t = 0.0

    def __call__(self):
        return self.t


class Terminal(io.StringIO):
    def isatty(self):
        return True


def test_a_pipe_gets_plain_lines_at_most_every_few_seconds():
    out, clock = io.StringIO(), Clock()
    bar = progress.Progress("simulate", total=1000, unit="runs", stream=out, clock=clock)
    for _ in range(1000):          # 100 s of work, a step every 0.1 s
        clock.t += 0.1
        bar.update(note="lru")
    bar.close()
    text = out.getvalue()
    lines = text.splitlines()
    assert "\r" not in text
    assert len(lines) <= 100 / progress.PLAIN_EVERY + 1
    assert len(lines) >= 100 / progress.PLAIN_EVERY - 1     # it does report while it runs
    assert lines[0].startswith("simulate: ") and "/1000 runs" in lines[0] and "ETA" in lines[0]
    assert lines[-1] == "simulate: 1000/1000 runs in 1m40s"


def test_a_short_pass_without_a_total_says_nothing_in_a_pipe():
    out = io.StringIO()
    bar = progress.Progress("reading", unit="requests", stream=out)
    bar.update(3)
    bar.close()
    assert out.getvalue() == ""


def test_a_terminal_gets_a_live_bar_and_quiet_gets_nothing():
    tty = Terminal()
    with progress.Progress("simulate", total=3, unit="runs", stream=tty) as bar:
        for _ in range(3):
            bar.update(note="smq")
    assert "\r" in tty.getvalue() and "3/3" in tty.getvalue()
    silent = Terminal()
    with progress.Progress("simulate", total=3, stream=silent, quiet=True) as bar:
        bar.update()
    assert silent.getvalue() == ""


def run(*args):
    return hbl(*args)


def test_compare_prints_the_result_on_stdout_and_progress_on_stderr():
    p = run(*COMPARE)
    assert p.stdout.startswith("replay: ") and "HSS perf" in p.stdout
    assert "prepare" not in p.stdout and "simulate" not in p.stdout and "\r" not in p.stdout
    lines = p.stderr.splitlines()
    assert "\r" not in p.stderr
    stages = [x.split(":")[0] for x in lines]     # a line per stage, and one per 5 s of a long one
    assert stages == sorted(stages) and set(stages) == {"prepare", "simulate"}
    assert lines[-1].startswith("simulate: 8/8 runs in ")
    assert json.loads(run(*COMPARE, "--json").stdout)["workloads"] == ["mds_0", "zipf*"]
    quiet = run(*COMPARE, "--quiet")
    assert quiet.stderr == "" and quiet.stdout == p.stdout


def test_sweep_prints_the_result_on_stdout_and_quiet_nothing_on_stderr(tmp_path):
    pytest.importorskip("distributed", reason="hbl sweep needs the sweep extra")
    grid = ["sweep", "--trace", "synth:zipf:requests=5000,pages=2000", "--hss", "cost", "--policies",
            "fast-only,lru", "--out", str(tmp_path), "--workers", "1", "--json"]
    p = run(*grid)
    assert json.loads(p.stdout)["computed"] == 2
    assert "\r" not in p.stderr
    lines = p.stderr.splitlines()
    assert lines[0].startswith("sweep: read: ") and lines[-1].startswith("sweep: 2/2 cells in ")
    again = run(*grid, "--quiet")
    assert json.loads(again.stdout)["skipped"] == 2 and again.stderr == ""
    report = subprocess.run(HBL + ["sweep", "report", str(tmp_path)], capture_output=True, text=True, timeout=60)
    assert report.returncode == 0 and report.stderr == "" and "HSS cost" in report.stdout


def test_simulate_on_a_long_pass_reports_in_a_pipe(monkeypatch):
    monkeypatch.setattr(progress, "PLAIN_EVERY", 0.0)      # every chunk is "a few seconds" later
    err = io.StringIO()
    monkeypatch.setattr(sys, "stderr", err)
    from hbl import cli
    out = io.StringIO()
    monkeypatch.setattr(sys, "stdout", out)
    assert cli.main(["simulate", "--trace", "bundled:hm_0", "--policy", "lru", "--json"]) == 0
    assert json.loads(out.getvalue())["requests"] == 7016
    lines = err.getvalue().splitlines()
    assert "\r" not in err.getvalue()
    assert {x.split(":")[0] for x in lines} <= {"reading", "footprint", "simulating"}
    assert lines[-1].startswith("simulating: 7016 requests in ")
    err.truncate(0)
    assert cli.main(["simulate", "--trace", "bundled:hm_0", "--policy", "lru", "--json", "--quiet"]) == 0
    assert err.getvalue() == ""

