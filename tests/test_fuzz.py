"""Fuzzing the trace readers and the option parser: bad input is a clean one-line error or a
valid result, never a traceback, a hang or unbounded memory.

Seeded (derandomize) and bounded to about a minute of CPU in all.  Every input the fuzzer ever broke
hbl with is kept in tests/data/fuzz/ and replayed by test_corpus as an ordinary test; name a
new file FORMAT--what.EXT (FORMAT as --format takes it, or "auto" for detection).
"""
import json
import os
import pathlib
import signal
import struct
import subprocess
import sys
import tracemalloc

import pytest

hypothesis = pytest.importorskip("hypothesis", reason="hypothesis is in the dev extra: pip install -e .[dev]")
from hypothesis import HealthCheck, given, settings, strategies as st  # noqa: E402

from hbl.cli import main  # noqa: E402

# Not ours: Hypothesis (6.131 on) reads the constants of every module imported from outside
# site-packages and the stdlib, parsing its source with ast.parse (no file name: "<unknown>"), and
# Debian's python3-bpfcc, which test_capture's bcc tests import from /usr/lib/python3/dist-packages
# (hbl.capture.bcc_loader), has b'^.*\.cold(\.\d+)?$' at bcc/__init__.py:749: "<unknown>:749
# invalid escape sequence '\.'" in the first test here after them (only with no .hypothesis/
# cache: a fresh clone).  Ignored from source compiled with no file name, and only that warning.
pytestmark = pytest.mark.filterwarnings("ignore:invalid escape sequence:DeprecationWarning:<unknown>")

ROOT = pathlib.Path(__file__).resolve().parent.parent
CORPUS = ROOT / "tests" / "data" / "fuzz"
SECONDS_PER_INPUT = 5
PEAK_BYTES = 64 << 20
# HBL_FUZZ_EXAMPLES=500 explores further, with a fresh random seed; the suite's runs are seeded.
EXPLORE = int(os.environ.get("HBL_FUZZ_EXAMPLES", 0))
FUZZ = settings(derandomize=not EXPLORE, max_examples=EXPLORE or 20, deadline=None, database=None,
                suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])

# One valid line per format, with its fields as slots the fuzzer fills.
TEMPLATES = {
    "msrc": ["128166372003061629", "hm", "0", "Read", "3031040", "4096", "50"],
    "spc": ["0", "20941264", "8192", "W", "0.551706"],
    "alibaba": ["1", "R", "4096", "4096", "1577808000000001"],
    "tencent": ["1538323199", "4096", "8", "1", "1063"],
    "csv": ["0.5", "4096", "8192", "R"],
}
BLKPARSE = "  8,0    1        {seq}     {ts}  {pid}  D   {rwbs} {sector} + {count} [fio]"
NASTY = ["", " ", "-1", "+1", "1_000", "\uff11\uff10", "1e999999999", "1e-999999999", "nan", "inf",
         "18446744073709551615", "18446744073709551616", "4294967296", "99999999999999999999999999",
         "0x10", "1.5", ".", "e5", "1" * 5000, "x" * 300, "\x00", "\u00e9", "R", "W", "Read", "write", "0"]
field = st.one_of(st.sampled_from(NASTY), st.text(max_size=12), st.integers(0, 1 << 70).map(str))


def _line(fmt, data):
    if fmt == "blkparse":
        return BLKPARSE.format(seq=data.draw(field), ts=data.draw(field), pid=data.draw(field),
                               rwbs=data.draw(st.sampled_from(["R", "W", "WS", "D", "FWS", "N", "?"])),
                               sector=data.draw(field), count=data.draw(field))
    if fmt == "fio":
        return " ".join([data.draw(field), "/dev/x", data.draw(st.sampled_from(["read", "write", "trim", "sync",
                                                                                 "wait", "open", "?"])),
                         data.draw(field), data.draw(field)])
    slots = list(TEMPLATES[fmt])
    for i in data.draw(st.sets(st.integers(0, len(slots) - 1), max_size=3)):
        slots[i] = data.draw(field)
    sep = data.draw(st.sampled_from([",", ",", ",", ";", ", "]))
    return sep.join(slots[:data.draw(st.integers(max(len(slots) - 2, 0), len(slots) + 1))] if
                    data.draw(st.booleans()) else slots)


def _valid(fmt):
    if fmt == "blkparse":
        return BLKPARSE.format(seq=1, ts="0.000000100", pid=7, rwbs="R", sector=8, count=8)
    if fmt == "fio":
        return "0 /dev/x read 0 4096"
    return ",".join(TEMPLATES[fmt])


def _text_trace(fmt, data):
    lines = [_valid(fmt) for _ in range(data.draw(st.integers(0, 3)))]
    lines += [_line(fmt, data) for _ in range(data.draw(st.integers(0, 6)))]
    order = data.draw(st.permutations(lines))
    head = ["fio version %s iolog" % data.draw(st.sampled_from(["2", "3", "3", "9"]))] if fmt == "fio" else []
    text = "\n".join(head + list(order)) + data.draw(st.sampled_from(["\n", "", "\r\n", "\n\n"]))
    return text.encode("utf-8", "surrogatepass") if data.draw(st.booleans()) else \
        text.encode("utf-8", "replace")


def _native_trace(data):
    """A native header with fuzzed fields and records of random bytes."""
    n = data.draw(st.integers(0, 4))
    count = data.draw(st.sampled_from([n, n, n + 1, 0, (1 << 64) - 1]))
    version = data.draw(st.sampled_from([1, 1, 2]))
    size = data.draw(st.sampled_from([40, 40, 32]))
    head = struct.pack("<8sIIQQ", b"HBLTRACE", version, size, count, 0).ljust(256, b"\0")
    return head + data.draw(st.binary(min_size=40 * n, max_size=40 * n))


class Hang(Exception):
    pass


def _alarm(*_):
    raise Hang("more than %d s on one input" % SECONDS_PER_INPUT)


def run_cli(argv, capsys):
    """hbl's exit status, after checking it ended cleanly: 0 with valid JSON (no NaN) on stdout,
    or 2 with one line on stderr; within the time and memory bounds."""
    old = signal.signal(signal.SIGALRM, _alarm)
    signal.alarm(SECONDS_PER_INPUT)
    tracemalloc.start()
    try:
        rc = main(argv)      # an exception here is the traceback a user would see: the test fails
    except SystemExit as exc:   # argparse usage errors
        rc = exc.code
    finally:
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)
    out, err = capsys.readouterr()
    assert peak < PEAK_BYTES, "%s: %d MB of Python memory" % (argv, peak >> 20)
    assert rc in (0, 2), (argv, rc, err)
    if rc == 0:
        if "--json" in argv:
            json.loads(out, parse_constant=lambda c: pytest.fail("%s in JSON output" % c))
    else:
        lines = err.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("hbl: error: ") and len(lines[0]) < 600, err[:2000]
    return rc


def check_trace(path, fmt, capsys):
    argv = ["trace-info", str(path), "--json"]
    if fmt == "csv":
        argv += ["--format", "csv", "--columns", "time=0,offset=1,length=2,op=3", "--time-unit", "s"]
    elif fmt != "auto":
        argv += ["--format", fmt]
    run_cli(argv, capsys)
    run_cli(argv + ["--lenient"], capsys)


@pytest.mark.parametrize("fmt", sorted(TEMPLATES) + ["blkparse", "fio"])
def test_fuzz_text_formats(fmt, tmp_path, capsys):
    @FUZZ
    @given(st.data())
    def one(data):
        path = tmp_path / "t.txt"
        path.write_bytes(_text_trace(fmt, data))
        check_trace(path, data.draw(st.sampled_from([fmt, "auto"])), capsys)
    one()


def test_fuzz_native(tmp_path, capsys):
    @FUZZ
    @given(st.data())
    def one(data):
        path = tmp_path / "t.hbl"
        path.write_bytes(_native_trace(data))
        check_trace(path, "native", capsys)
    one()


def test_fuzz_bytes(tmp_path, capsys):
    """Arbitrary bytes, gzip magic included, through format detection."""
    @FUZZ
    @given(st.binary(max_size=400), st.sampled_from([b"", b"\x1f\x8b", b"\x1f\x8b\x08\x00"]))
    def one(body, magic):
        path = tmp_path / "t.bin"
        path.write_bytes(magic + body)
        check_trace(path, "auto", capsys)
    one()


OPTIONS = {
    "simulate": ["--seed", "--speed", "--queue-depth", "--page-size", "--migrate-every", "--migrate-max",
                 "--fast-capacity", "--param", "--hss", "--policy", "--format", "--time-unit"],
    "trace-info": ["--page-size", "--format", "--columns", "--blk-action"],
    "compare": ["--jobs", "--synthetic-requests", "--policies", "--hss", "--seed", "--page-size"],
}
VALUES = NASTY[:20] + ["0", "1", "2", "512", "4096", "10%", "0.1", "2G", "lru", "smq", "promote=-1", "lr=nan",
                       "x=1", "perf", "cost", "msrc", "/nonexistent/x.json", "python", "D", "-5", "1e3", "64"]


def test_fuzz_options(capsys):
    """Random option values on a small synthetic trace: a clean error or a run that ends."""
    @FUZZ
    @given(st.sampled_from(sorted(OPTIONS)), st.data())
    def one(command, data):
        argv = [command]
        for opt in data.draw(st.lists(st.sampled_from(OPTIONS[command]), max_size=3, unique=True)):
            argv += [opt, data.draw(st.sampled_from(VALUES) | st.text(max_size=8))]
        trace = "synth:zipf:requests=300,pages=500"
        argv += [trace] if command == "trace-info" else ["--trace", trace]
        if command == "compare":
            argv += ["--quiet", "--policies", "lru", "--jobs", "1"] if "--policies" not in argv else ["--quiet"]
        run_cli(argv + ["--json"], capsys)
    one()


def _corpus():
    return sorted(CORPUS.glob("*")) if CORPUS.is_dir() else []


@pytest.mark.parametrize("path", _corpus(), ids=lambda p: p.name)
def test_corpus(path, capsys):
    """Inputs that once broke hbl (a hang, a traceback, a silent 0-request result)."""
    fmt = path.name.split("--", 1)[0]
    check_trace(path, fmt, capsys)


def test_hypothesis_reading_bcc_shows_no_warning(tmp_path):
    """pytestmark above at work: this file's first test run after bcc was imported, with a fresh
    .hypothesis/ store, reads bcc's constants (its file in the store says so) and shows no warning;
    with no filter it showed "<unknown>:749: DeprecationWarning: invalid escape sequence '\\.'"."""
    code = ("import sys, pytest\n"
            "from hbl.capture.bcc_loader import import_bcc\n"
            "try:\n    import_bcc()\nexcept Exception:\n    sys.exit(77)\n"
            "sys.exit(pytest.main(sys.argv[1:]))")
    p = subprocess.run([sys.executable, "-c", code, "tests/test_fuzz.py::test_fuzz_text_formats[alibaba]",
                        "-q", "-rw", "-p", "no:cacheprovider"], cwd=ROOT, capture_output=True, text=True,
                       env=dict(os.environ, HYPOTHESIS_STORAGE_DIRECTORY=str(tmp_path)), timeout=600)
    if p.returncode == 77:
        pytest.skip("bcc is not installed")
    out = p.stdout + p.stderr
    assert p.returncode == 0, out
    read = [f.read_text().splitlines()[0] for f in (tmp_path / "constants").glob("*")]
    assert any(line.endswith("/bcc/__init__.py") for line in read), read
    assert "warning" not in out.lower(), out
