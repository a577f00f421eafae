"""The command line end to end, as a user runs it (a subprocess, real files)."""
import json
import os

import pytest

from helpers import hbl

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def run(*args, ok=True):
    return hbl(*args, check=ok, cwd=ROOT)


def test_simulate_json_keys():
    r = json.loads(run("simulate", "--trace", "bundled:hm_0", "--hss", "cost", "--policy", "smq",
                       "--fast-capacity", "0.1", "--seed", "3", "--json").stdout)
    for k in ("policy", "hss", "trace", "requests", "avg_latency_us", "p99_latency_us", "read_hit_ratio",
              "fast_write_share", "replay", "sync_evictions", "sync_wait_us", "served_requests",
              "promotions", "evictions", "migrated_bytes", "requests_per_second"):
        assert k in r
    assert r["policy"] == "smq" and r["requests"] == 7016 and r["hss"] == "cost"


@pytest.mark.parametrize("policy", ["arc", "lirs", "s3fifo", "wtinylfu"])
def test_simulate_runs_every_cache_policy(policy):
    """hbl simulate checks a policy's parameters before the run on a small fast device; the cache
    policies with queues of their own once refused it ("needs a fast device of at least 2 pages")."""
    r = json.loads(run("simulate", "--trace", "bundled:hm_0", "--hss", "perf", "--policy", policy,
                       "--quiet", "--json").stdout)
    assert r["policy"] == policy and r["requests"] == 7016 and 0 < r["read_hit_ratio"] < 1


def test_simulate_human_output_and_timeline(tmp_path):
    out = run("simulate", "--policy", "lru", "--hss", "tri", "--timeline", str(tmp_path / "t.json")).stdout
    assert "avg latency" in out and "H+M+L" in out
    tl = json.loads((tmp_path / "t.json").read_text())
    assert isinstance(tl, list)


def test_an_empty_timeline_is_said_on_stderr(tmp_path):
    """A trace shorter than one timeline row (10,000 requests) gives an empty timeline: said, not silent."""
    r = run("simulate", "--trace", "bundled:hm_0", "--policy", "lru", "--quiet", "--timeline", str(tmp_path / "t.json"))
    assert json.loads((tmp_path / "t.json").read_text()) == []
    assert "holds no rows: a row is written every 10000 requests, and the trace has 7016" in r.stderr
    r = run("simulate", "--trace", "synth:zipf:requests=20000", "--policy", "lru", "--quiet",
            "--timeline", str(tmp_path / "u.json"))
    assert len(json.loads((tmp_path / "u.json").read_text())) == 2 and "no rows" not in r.stderr


def test_compare_json_and_table(tmp_path):
    args = ["compare", "--trace", "bundled:mds_0", "--trace", "synth:zipf:requests=20000,pages=5000",
            "--hss", "perf,cost", "--policies", "lru,smq,oracle", "--quiet"]
    s = json.loads(run(*args, "--json").stdout)
    assert s["policies"] == ["fast-only", "lru", "smq", "oracle"]
    assert s["workloads"] == ["mds_0", "zipf*"]
    assert len(s["results"]) == 2 * 2 * 4
    for h in ("perf", "cost"):
        for w in s["workloads"]:
            assert s["normalized_avg_latency"][h][w]["fast-only"] == 1.0
            assert s["normalized_avg_latency"][h][w]["lru"] >= 1.0
        assert s["normalized_avg_latency"][h]["zipf*"]["lru"] > 1.0
    table = run(*args).stdout
    assert "HSS perf" in table and "mean" in table and "mds_0" in table


def test_compare_plot(tmp_path):
    pytest.importorskip("matplotlib")
    png = tmp_path / "c.png"
    run("compare", "--trace", "bundled:mds_0", "--hss", "perf", "--policies", "lru", "--quiet", "--plot", str(png))
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_trace_info_json():
    info = json.loads(run("trace-info", "bundled:hm_0", "--json").stdout)
    assert info["requests"] == 7016 and info["reads"] == 5820 and info["writes"] == 1196
    assert info["footprint_pages"] > 0 and 0 <= info["sequential_fraction"] <= 1
    assert sum(info["size_histogram"].values()) == 7016
    assert info["reuse_distance"]["first_accesses"] == info["footprint_pages"]


def test_convert_and_replay(tmp_path):
    native = tmp_path / "hm.bin"
    run("convert", "bundled:hm_0", str(native))
    fio = tmp_path / "hm.iolog"
    run("convert", str(native), str(fio))
    assert fio.read_text().startswith("fio version 3 iolog\n")
    a = json.loads(run("simulate", "--trace", "bundled:hm_0", "--policy", "lru", "--json").stdout)
    b = json.loads(run("simulate", "--trace", str(native), "--policy", "lru", "--json").stdout)
    assert a["avg_latency_us"] == b["avg_latency_us"]


def test_synthetic_to_file(tmp_path):
    out = tmp_path / "s.csv"
    run("convert", "synth:hm:requests=500", str(out))
    assert len(out.read_text().splitlines()) == 500


@pytest.mark.parametrize("args,message", [
    (["simulate", "--trace", "/nonexistent.csv"], "/nonexistent.csv: no such file"),
    (["simulate", "--policy", "nope"], "unknown policy 'nope'"),
    (["simulate", "--hss", "huge"], "unknown HSS 'huge'"),
    (["simulate", "--hss", "huge"], "(fast device 10% of the footprint)"),   # once a literal 10%%
    (["simulate", "--fast-capacity", "lots"], "--fast-capacity 'lots'"),
    (["simulate", "--param", "promote"], "want NAME=NUMBER"),
    (["simulate", "--trace", "synth:zipf:alpha=x"], "not a finite number"),
    (["compare", "--policies", "lru,bogus"], "unknown policy 'bogus'"),
    (["compare", "--policies", "lru,python:p.py:C"], "a Python plugin runs in hbl simulate --policy python:FILE"),
    (["devices", "--measure", "tests"], "tests: is a directory"),
    (["convert", "bundled:hm_0", "bundled:hm_1"], "bundled:hm_1: a trace name, not a file name"),
    (["trace-info", "--columns", "time=0", "bundled:hm_0"], "takes no column mapping: --columns (and --delimiter"),
])
def test_errors_are_one_line_not_tracebacks(args, message):
    p = run(*args, ok=False)
    assert p.returncode == 2
    assert message in p.stderr and "Traceback" not in p.stderr


def test_bad_trace_line_reported(tmp_path):
    bad = tmp_path / "bad.csv"
    bad.write_text("128166386783630075,hm,0,Read,0,4096,1\n128166386783630075,hm,0,Read,x,4096,1\n")
    p = run("simulate", "--trace", str(bad), ok=False)
    assert "bad.csv:2" in p.stderr and "Traceback" not in p.stderr
    ok = json.loads(run("simulate", "--trace", str(bad), "--lenient", "--json").stdout)
    assert ok["requests"] == 1 and ok["bad_lines_skipped"] == 1


def test_convert_refuses_to_overwrite_input(tmp_path, msr):
    p = run("convert", msr("mds_0"), msr("mds_0"), ok=False)
    assert "refusing to overwrite" in p.stderr


def test_bench_json():
    b = json.loads(run("bench", "--requests", "20000", "--repeat", "1", "--policies", "lru,smq", "--json").stdout)
    assert b["trace_requests"] == 20000 and set(b["sim_requests_per_second"]) == {"lru", "smq"}
    assert all(v > 0 for v in b["sim_requests_per_second"].values())


def test_help_explains():
    out = run("--help").stdout
    for cmd in ("simulate", "compare", "trace-info", "convert", "bench", "policies", "devices"):
        assert cmd in out
    assert "synth:" in run("simulate", "--help").stdout


def test_the_command_line_loads_no_simulator_until_a_command_needs_it():
    """Every hbl command (hbl --version, status, down, vm ...) parses its arguments without the C core
    and numpy: a module-level import of hbl.sim in one command's module made each one 0.5 s slower."""
    import subprocess
    import sys
    code = "import sys, hbl.cli; print(sorted(m for m in ('hbl.core', 'hbl.sim', 'numpy') if m in sys.modules))"
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert p.returncode == 0 and p.stdout.strip() == "[]", p.stdout + p.stderr


def test_an_output_is_never_the_input_or_another_output(tmp_path):
    """hbl report R -o R wrote its page over the result R; compare --out F --output F kept one of the two."""
    runs = tmp_path / "runs.csv"
    runs.write_text("hss,workload,policy,trace\n")
    line = one_error_line(run("report", str(runs), "-o", str(runs), ok=False))
    assert "is also the input" in line and runs.read_text() == "hss,workload,policy,trace\n"
    f = str(tmp_path / "o.json")
    line = one_error_line(run("compare", "--trace", "/nonexistent.csv", "--out", f, "--output", f, ok=False))
    assert "--out %s is also --output %s" % (f, f) in line
    trace = tmp_path / "t.csv"
    trace.write_text("128166372003061629,hm,0,Write,3331072,4096,1331\n")
    line = one_error_line(run("simulate", "--trace", str(trace), "--timeline", str(trace), ok=False))
    assert "is also the input" in line and trace.read_text().startswith("128166372003061629,hm")



@pytest.mark.parametrize("flag", ["--timeline", "--save-agent"])
def test_an_output_that_is_not_a_regular_file_is_refused_and_left_alone(flag, tmp_path):
    """--save-agent /dev/null (written whole, renamed into place) replaced the device node with a regular file:
    as root, the whole host's /dev/null, and every other user's writes to it failed (found by the CI). The
    test stands a socket in for the device: should the check go, it is the socket that is replaced."""
    import socket
    import stat
    node = tmp_path / "node"
    with socket.socket(socket.AF_UNIX) as sock:
        sock.bind(str(node))
        line = one_error_line(run("simulate", "--trace", "bundled:hm_0", "--policy", "sibyl", "--quiet", flag,
                                  str(node), ok=False))
        assert "%s: not a regular file" % node in line
        assert stat.S_ISSOCK(os.stat(node).st_mode)


def test_a_chart_may_be_any_format_matplotlib_writes():
    """--plot f.pgf (LaTeX), f.raw, f.rgba, f.gif: matplotlib writes them, the check's fixed list refused them."""
    from hbl.cli.options import check_chart_path
    from hbl.errors import HblError
    backend_bases = pytest.importorskip("matplotlib.backend_bases")
    for ext in backend_bases.FigureCanvasBase.get_supported_filetypes():
        check_chart_path("p." + ext)
        check_chart_path("p." + ext.upper())
    check_chart_path("p")       # no extension: PNG
    with pytest.raises(HblError, match=r"--plot p.xyz: give a file ending in .png, .svg, .*\.pgf"):
        check_chart_path("p.xyz")


def test_help_names_every_trace_kind_and_format():
    """The epilog of every trace-reading command lists the presets, the bundled slices and the
    formats the readers know (burst, log, workload:NAME@START-END and packed were missing)."""
    from hbl.cli.options import EPILOG_TRACES
    from hbl.trace import bundled_traces
    from hbl.trace.files import READERS
    from hbl.trace.synthetic import PRESETS
    words = set(EPILOG_TRACES.replace(",", " ").replace("(", " ").replace(")", " ").split())
    assert set(PRESETS) <= words and set(bundled_traces()) <= words and "workload:NAME@START-END" in words
    out = " ".join(run("trace-info", "--help").stdout.split())
    listed = out.split("input format: ")[1].split(" (default")[0].split(", ")
    assert set(listed) == set(READERS)


def test_trace_default_said_as_each_command_runs_it():
    """compare's --trace default is the whole suite (its help said MSR slices + synthetic); sweep has
    none (its help said the same, and it stops with 'no traces given')."""
    compare = " ".join(run("compare", "--help").stdout.split())
    assert "default: the default suite: the bundled MSR slices, the apps: slices" in compare
    sweep = " ".join(run("sweep", "--help").stdout.split())
    assert "trace to replay (repeatable; default: none" in sweep


def test_every_command_and_option_explains_itself():
    """--help of every command and action opens with what it does, and every argument says what it
    is (hbl top, workloads list, vm test and a dozen --json printed none)."""
    import argparse
    from hbl.cli import build_parser
    missing = []

    def walk(parser, name):
        missing.extend("%s: description" % name for _ in [0] if not parser.description)
        for act in parser._actions:
            if isinstance(act, argparse._SubParsersAction):
                for n, child in act.choices.items():
                    walk(child, name + " " + n)
            elif act.help is None:
                missing.append("%s %s" % (name, "/".join(act.option_strings) or act.dest))
    walk(build_parser(), "hbl")
    assert not missing, missing


def one_error_line(p):
    """The stderr of a failed run: exactly one line in hbl's style, exit status 2."""
    lines = p.stderr.strip().splitlines()
    assert p.returncode == 2 and len(lines) == 1 and lines[0].startswith("hbl: error: "), p.stderr[-2000:]
    return lines[0]


@pytest.mark.parametrize("args, message", [
    (["simulate", "--seed", "-1"], "--seed"),
    (["simulate", "--page-size", "4294967296"], "--page-size"),
    (["simulate", "--page-size", "3000"], "power of two"),
    (["simulate", "--queue-depth", "1_000"], "--queue-depth"),
    (["simulate", "--speed", "nan"], "--speed"),
    (["simulate", "--fast-capacity", "2"], "less than one page"),
    (["simulate", "--policy", "python"], "needs a plugin"),
    (["simulate", "--policy", "nhit", "--param", "occupancy=-5"], "occupancy"),
    (["simulate", "--policy", "harmonia", "--param", "gamma=nan"], "finite"),
    (["simulate", "--policy", "sibyl", "--param", "batch=2.5"], "parameter 'batch' must be a whole number (got 2.5)"),
    (["simulate", "--policy", "sibyl", "--param", "reward=32"], "reward must be 0, 1 or 2"),   # ran as reward=1
    (["simulate", "--policy", "harmonia", "--param", "m_reward=-1"], "m_reward must be 0, 1 or 2"),
    (["simulate", "--timeline", "/nonexistent/t.json"], "no such directory"),
    (["simulate", "--policy", "harmonia", "--agent", "tests"], "tests: is a directory, not an agent file"),
    (["compare", "--agents", "README.md"], "--agents README.md: a file, not a directory of agent files"),
    (["compare", "--jobs", "0"], "--jobs"),
    (["compare", "--plot", "/nonexistent/p.png"], "no such directory"),
    (["compare", "--plot", "p.xyz"], "--plot p.xyz: give a file ending in .png, .svg"),   # was a ValueError, after the run
    (["sweep", "report", "/nonexistent", "--plot", "p.xyz"], "--plot p.xyz: give a file ending in .png"),
    (["compare", "--hss", ","], "hbl: error: no HSS given (--hss)"),     # was 'sweep: no hss given
    (["trace-info", "bundled:hm_0", "--page-size", "0"], "--page-size"),
    (["bench", "--requests", "0"], "--requests"),
    (["bench", "--trace", "x"], "unrecognized arguments: --trace x (see hbl bench --help)"),   # was hbl --help
    (["vm", "build", "--x"], "unrecognized arguments: --x (see hbl vm build --help)"),   # was hbl vm --help
    (["workloads", "list", "--x"], "unrecognized arguments: --x (see hbl workloads list --help)"),
    (["bench", "--agreement", "--policies", "lru"], "policy lru has no agents"),   # it ran the whole suite
    (["bench", "--agreement", "--policies", "harmonia-guard"], "no agents of its own"),
])
def test_options_refused_before_any_work(args, message):
    """The trace is never read: the same run with a missing trace fails on the option, not on the file."""
    args = [a if a != "bundled:hm_0" else "/nonexistent.csv" for a in args]
    if args[0] in ("simulate", "compare"):
        args += ["--trace", "/nonexistent.csv"]
    assert message in one_error_line(run(*args, ok=False))


def test_hss_json_bad_values(tmp_path):
    for bad in ('"fast"', "NaN", "2.5"):
        key = "channels" if bad == "2.5" else "read_latency_us"
        prof = {"name": "X", "description": "x", "read_latency_us": 10, "write_latency_us": 10,
                "read_mb_s": 100, "write_mb_s": 100}
        text = json.dumps({"devices": [{"profile": prof, "capacity": "10%"}, {"profile": "L", "capacity": None}]})
        text = text.replace('"read_latency_us": 10', '"%s": %s' % (key, bad), 1) if key == "read_latency_us" \
            else text.replace('"write_mb_s": 100', '"write_mb_s": 100, "channels": 2.5')
        (tmp_path / "h.json").write_text(text)
        line = one_error_line(run("simulate", "--hss", str(tmp_path / "h.json"), ok=False))
        assert "h.json: device 0" in line or "unknown profile keys" in line, line


def test_plugin_exception_stops_the_run(tmp_path):
    (tmp_path / "p.py").write_text("from hbl.plugin import Policy\nclass P(Policy):\n"
                                   "    def place(self, view, request, slots):\n"
                                   "        if view.now() >= 10:\n            raise RuntimeError('boom')\n")
    line = one_error_line(run("simulate", "--policy", "python:%s:P" % (tmp_path / "p.py"), ok=False))
    assert "plugin P: place() failed at request 11: RuntimeError: boom" in line


def test_trace_info_counts_like_simulate(tmp_path):
    """One vocabulary: the same trace name and request count in both commands' JSON."""
    trace = tmp_path / "t.csv"
    trace.write_text("0,R,0,4096,1\n0,W,8192,4096,2\n0,D,0,4096,3\n0,R,4096,4096,4\n")
    info = json.loads(run("trace-info", str(trace), "--json").stdout)
    sim = json.loads(run("simulate", "--trace", str(trace), "--policy", "lru", "--json").stdout)
    assert info["trace"] == sim["trace"] == str(trace)
    assert info["requests"] == sim["requests"] == 3 and info["discards"] == 1 and info["flushes"] == 0
    assert info["bad_lines_skipped"] == 0


def test_convert_gz_and_json(tmp_path, msr):
    import gzip
    s = json.loads(run("convert", msr("hm_0"), str(tmp_path / "o.csv.gz"), "--json").stdout)
    assert s["format"] == "msrc" and s["compressed"] and s["requests"] == 7016
    with gzip.open(tmp_path / "o.csv.gz", "rt") as f:
        assert f.readline().count(",") == 6
    info = json.loads(run("trace-info", str(tmp_path / "o.csv.gz"), "--json").stdout)
    assert info["requests"] == 7016
    assert "cannot be compressed" in one_error_line(run("convert", msr("hm_0"), str(tmp_path / "o.hbl.gz"), ok=False))
    assert not (tmp_path / "o.hbl.gz").exists() and not (tmp_path / "o.hbl.gz.part").exists()


def test_policies_json_lists_parameters_defaults_descriptions_and_capabilities():
    listed = json.loads(run("policies", "--json").stdout)
    rows = {r["name"]: r["params"] for r in listed}
    defaults = {n: {k: v["default"] for k, v in p.items()} for n, p in rows.items()}
    assert defaults["smq"]["promote"] == 4 and defaults["nhit"] == {"hits": 3, "occupancy": 0.8}
    assert defaults["harmonia"]["m_lr"] == 0.01 and rows["lru"] == {}
    # harmonia's own defaults, not the placement agent's shared ones it changes (policies/harmonia.c)
    h, s = defaults["harmonia"], defaults["sibyl"]
    assert (h["penalty"], h["place_reads"], h["device_time"], s["penalty"]) == (0, 0, 1, 0.1)
    for name, params in rows.items():
        for k, v in params.items():
            assert len(v["description"]) > 10 and "\n" not in v["description"], (name, k)
    assert "live_default" not in rows["oracle"]["writes"] and rows["sibyl"]["reward"]["live_default"] == 1
    caps = {r["name"]: set(r["capabilities"]) for r in listed}
    assert caps["oracle"] == {"needs_future"} and caps["harmonia"] == {"learns", "live"} and caps["lru"] == {"live"}
    assert {n for n, c in caps.items() if "learns" in c} == {
        "sibyl", "harmonia", "harmonia-placement-only", "harmonia-migration-only", "archivist", "rnn-hss",
        "harmonia-guard"}
    assert caps["harmonia-guard"] == {"learns", "composite"} and set(rows["harmonia-guard"]) == {"window", "margin"}
    text = run("policies").stdout
    assert "m_pingpong" in text and "[learns, live]" in text


@pytest.mark.parametrize("live", [False, True])
def test_agent_defaults_listed_are_the_agents_configuration(live):
    """The agent table's defaults as listed are what the agents are built with (hidden1/2: hidden[0/1]),
    in the simulator and on a live device."""
    from hbl.core import ffi, lib
    from hbl.live.decider import Decider
    from hbl.sim import Simulator, load_hss
    from hbl.sim.registry import policy_names, policy_params
    listed = {k: v["live_default" if live else "default"]
              for k, v in policy_params(policy_names().index("harmonia")).items()}
    sim = Decider("harmonia", 1 << 20, [100, 1000]).sim if live else Simulator(load_hss("cost"), "harmonia",
                                                                              [100, None])
    assert listed["train_every"] == (25 if live else 1000)
    for agent, prefix in ((0, ""), (1, "m_")):
        c = ffi.new("struct hbl_agent_config *")
        lib.hbl_agent_get_config(lib.hbl_sim_agent(sim.sim, agent), c)
        for field, _ in ffi.typeof("struct hbl_agent_config").fields:
            if field == "hidden":
                assert [listed[prefix + "hidden1"], listed[prefix + "hidden2"]] == list(c.hidden)[:2]
            elif prefix + field in listed:
                assert listed[prefix + field] == getattr(c, field), prefix + field


def _policies_with_parameters():
    from hbl.sim.registry import policy_names, policy_params
    return [n for i, n in enumerate(policy_names()) if n != "python" and policy_params(i)]


@pytest.mark.parametrize("policy", _policies_with_parameters())
def test_listed_defaults_are_what_init_reads(policy):
    """Passing every listed default explicitly changes nothing (against passing one, so that the oracle,
    which tries its family of variants when given no parameter, takes the same path both times)."""
    from hbl.sim import simulate
    from hbl.sim.registry import policy_names, policy_params
    listed = {k: v["default"] for k, v in policy_params(policy_names().index(policy)).items()
              if v["default"] is not None}
    items = list(listed.items())
    sets = [dict(items[:1])] + [dict(items[j:j + 32]) for j in range(0, len(items), 32)]   # 32 at most a run
    runs = [simulate("synth:zipf:requests=20000", hss="cost", policy=policy, params=p, load_agents=False)
            for p in sets]
    for r in runs:
        r.pop("requests_per_second", None)
        r.pop("params", None)
    assert all(r == runs[0] for r in runs[1:])


def test_compare_seeds_exactly_the_learning_policies():
    from hbl.experiments.compare import LEARNING, compare
    from hbl.sim.registry import all_policy_names
    assert LEARNING == set(all_policy_names("learns"))     # harmonia-guard, a composite, too
    s = compare(traces=["synth:zipf:requests=3000"], hss_list=["cost"], policies="lru,archivist,cde,sibyl",
                seeds=2, progress=False, jobs=1)
    runs = {}
    for r in s["results"]:
        runs[r["policy"]] = runs.get(r["policy"], 0) + 1
    assert runs == {"fast-only": 1, "lru": 1, "cde": 1, "archivist": 2, "sibyl": 2}


def test_trace_to_and_hidden_format_alias():
    from hbl.cli import build_parser
    for flag in ("--to", "--format"):
        a = build_parser().parse_args(["trace", "--dev", "/dev/x", "--out", "o", flag, "fio", "--count", "1"])
        assert a.to == "fio"
    assert "--format" not in build_parser()._subparsers._group_actions[0].choices["trace"].format_help()


def test_compare_names_traces_as_simulate_does_and_counts_skipped_lines(tmp_path):
    src = open(os.path.join(os.path.dirname(__file__), "..", "hbl", "data", "traces", "msr", "hm_1.csv")).read()
    f = tmp_path / "some.csv"
    f.write_text("".join(src.splitlines(True)[:50]) + "garbage,line\n")
    s = json.loads(run("compare", "--trace", str(f), "--policies", "lru", "--hss", "perf", "--lenient",
                       "--seeds", "1", "--quiet", "--json").stdout)
    one = json.loads(run("simulate", "--trace", str(f), "--policy", "lru", "--hss", "perf", "--lenient",
                         "--json").stdout)
    assert {r["trace"] for r in s["results"]} == {one["trace"]}
    assert {r["workload"] for r in s["results"]} == {"some"}
    assert s["bad_lines_skipped"] == {"some": 1} and one["bad_lines_skipped"] == 1
    assert s["replay"] == one["replay"] == {"mode": "closed", "queue_depth": 1}


@pytest.mark.parametrize("policy", ["oracle", "python"])
def test_live_device_refuses_policies_without_the_live_capability(policy, tmp_path):
    r = run("up", "t1", "--dev", str(tmp_path / "a"), "--dev", str(tmp_path / "b"), "--policy", policy,
            "--state-dir", str(tmp_path), ok=False)
    assert "policy %r cannot drive a live device" % policy in one_error_line(r)


@pytest.mark.parametrize("flag", ["--out", "--resume"])
def test_vm_out_naming_a_file_is_refused_before_the_build(monkeypatch, tmp_path, capsys, flag):
    """It was a FileExistsError traceback after the images were built and the guest booted."""
    from hbl.cli import main
    from hbl.vm import build
    monkeypatch.setattr(build, "build", lambda **kw: pytest.fail("built the images"))
    a_file = tmp_path / "a-file"
    a_file.write_text("x")
    args = ["vm", "soak", "--resume", str(a_file)] if flag == "--resume" else ["vm", "run", "--out", str(a_file),
                                                                                "--", "true"]
    assert main(args) == 2
    assert "a file, not a directory" in capsys.readouterr().err
