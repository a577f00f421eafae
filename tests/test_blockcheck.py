"""blockcheck.py (the crash tests' and the soak's verifying writer) on a plain file, no guest:
what it logs reads back, and a block that lost its last acknowledged version is caught."""
import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BLOCKCHECK = os.path.join(ROOT, "vm", "guest", "tests", "blockcheck.py")


def _run(*args):
    r = subprocess.run([sys.executable, BLOCKCHECK] + [str(a) for a in args], capture_output=True, text=True,
                       timeout=120)
    return r.returncode, json.loads(r.stdout.strip().splitlines()[-1])


def test_verify_catches_a_lost_acknowledged_write(tmp_path):
    dev, log = tmp_path / "dev", tmp_path / "ck.log"
    with open(dev, "wb") as f:
        f.truncate(1024 * 4096)
    rc, run = _run("run", dev, log, "--blocks", 1024, "--seconds", 1, "--threads", 2, "--tolerate-errors")
    assert rc == 0 and run["writes"] > 0 and run["bad_reads"] == 0 and run["io_errors"] == 0, run
    rc, v = _run("verify", dev, log, "--blocks", 1024)
    assert rc == 0 and v["bad"] == 0 and v["checked"] > 0, v
    # the last acknowledged version of one block replaced by an older one: a lost write
    last = {}
    for line in open(log):
        b, s = map(int, line.split())
        last[b] = s
    b = next(b for b, s in last.items() if s > 1)
    sys.path.insert(0, os.path.dirname(BLOCKCHECK))
    try:
        import blockcheck
    finally:
        sys.path.pop(0)
    with open(dev, "r+b") as f:
        f.seek(b * 4096)
        f.write(blockcheck.content(b, last[b] - 1))
    rc, v = _run("verify", dev, log, "--blocks", 1024)
    assert rc == 1 and v["bad"] == 1, v
    assert "block %d: version %d, acknowledged %d" % (b, last[b] - 1, last[b]) in v["errors"][0]


def test_compacting_verify_keeps_every_last_version_and_the_count(tmp_path):
    """verify --compact (the long soak): the log becomes one line per block, each block's last
    acknowledged version, after a clean verify only; what a later verify catches and the soak's
    count of acknowledged writes (Writer.acknowledged, read on incrementally) are unchanged."""
    sys.path.insert(0, os.path.dirname(os.path.dirname(BLOCKCHECK)))
    try:
        from soak_writer import Writer
    finally:
        sys.path.pop(0)
    dev, log = tmp_path / "dev", tmp_path / "ck.log"
    with open(dev, "wb") as f:
        f.truncate(512 * 4096)
    w = Writer(str(dev), str(log), 512)
    total = 0
    for seed in (1, 2):
        rc, run = _run("run", dev, log, "--blocks", 512, "--seconds", 0.5, "--threads", 2, "--seed", seed)
        assert rc == 0 and run["writes"] > 0, run
        total += run["writes"]
        assert w.acknowledged() == total
    last = {}
    for line in open(log):
        b, s = map(int, line.split())
        last[b] = max(last.get(b, -1), s)
    assert total > len(last), "some block written twice, or compaction has nothing to drop"
    # a lost write is not compacted away: the verify fails and the log stays whole
    b = next(b for b, s in last.items() if s > 1)
    with open(dev, "r+b") as f:
        f.seek(b * 4096)
        good = f.read(4096)
        f.seek(b * 4096)
        f.write(bytes(4096))
    rc, v = _run("verify", dev, log, "--blocks", 512, "--compact")
    assert rc == 1 and v["bad"] == 1 and "compacted_from" not in v, v
    assert sum(1 for _ in open(log)) == total
    with open(dev, "r+b") as f:
        f.seek(b * 4096)
        f.write(good)
    rc, v = _run("verify", dev, log, "--blocks", 512, "--compact")
    assert rc == 0 and v["compacted_from"] == total and v["checked"] == len(last), v
    lines = open(log).read().splitlines()
    assert lines[0] == "#before=%d" % (total - len(last))
    assert {int(x.split()[0]): int(x.split()[1]) for x in lines[1:]} == last
    assert w.acknowledged() == total                    # the log was replaced: counted again from its start
    rc, run = _run("run", dev, log, "--blocks", 512, "--seconds", 0.5, "--threads", 2, "--seed", 3)
    assert rc == 0 and run["bad_reads"] == 0, run       # a writer after a compaction reads what it names
    assert w.acknowledged() == total + run["writes"]
    rc, v = _run("verify", dev, log, "--blocks", 512)
    assert rc == 0 and v["bad"] == 0, v
    # and a block set back to an older version after a compaction is still caught
    b, s = next((b, s) for b, s in sorted(last.items()) if s > 1 and b % 2 == 0)
    now = {}
    for x in open(log).read().splitlines()[1:]:
        bb, ss = map(int, x.split())
        now[bb] = max(now.get(bb, -1), ss)
    import importlib.util
    spec = importlib.util.spec_from_file_location("blockcheck", BLOCKCHECK)
    bc = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bc)
    with open(dev, "r+b") as f:
        f.seek(b * 4096)
        f.write(bc.content(b, now[b] - 1))
    rc, v = _run("verify", dev, log, "--blocks", 512, "--compact")
    assert rc == 1 and v["bad"] == 1, v


def test_compacting_verify_at_the_log_s_edges(tmp_path):
    """No log (a verify before any writer): nothing to compact, no traceback, no log made; a log of
    its header alone keeps its count; a torn last line is a write, counted and kept as a whole line."""
    dev = tmp_path / "dev"
    with open(dev, "wb") as f:
        f.truncate(64 * 4096)
    rc, v = _run("verify", dev, tmp_path / "none.log", "--blocks", 64, "--compact")
    assert rc == 0 and v["checked"] == 0 and v["compacted_from"] == 0, v
    assert not (tmp_path / "none.log").exists()
    header = tmp_path / "header.log"
    header.write_text("#before=7\n")
    rc, v = _run("verify", dev, header, "--blocks", 64, "--compact")
    assert rc == 0 and header.read_text() == "#before=7\n", v
    torn = tmp_path / "torn.log"
    rc, run = _run("run", dev, torn, "--blocks", 64, "--seconds", 0.3)
    assert rc == 0 and run["writes"] > 64, run
    with open(torn, "a") as f:
        f.write("3 1")                      # a line a power cut ended early: block 3, an old version
    rc, v = _run("verify", dev, torn, "--blocks", 64, "--compact")
    assert rc == 0 and v["compacted_from"] == run["writes"] + 1, v
    lines = torn.read_text().splitlines()
    assert lines[0] == "#before=%d" % (run["writes"] + 1 - (len(lines) - 1)) and torn.read_text().endswith("\n")


def test_the_count_after_a_compaction_whose_log_reuses_an_inode(tmp_path, monkeypatch):
    """Writer.acknowledged reads on from where it stopped while the log's inode is the same; a
    compacted log is a new file, but its inode may be one freed by an earlier log (every inode the
    same here): the compacting Writer counts the new log from its start, not from the old one's
    end (a log of distinct blocks compacts to a longer file, so the old offset fell inside it)."""
    sys.path.insert(0, os.path.dirname(os.path.dirname(BLOCKCHECK)))
    sys.path.insert(0, os.path.dirname(BLOCKCHECK))
    try:
        import blockcheck
        import soak_writer
    finally:
        del sys.path[:2]
    dev, log = tmp_path / "dev", tmp_path / "ck.log"
    with open(dev, "wb") as f:
        for b in range(50):
            f.write(blockcheck.content(b, b + 1))
    log.write_text("".join("%d %d\n" % (b, b + 1) for b in range(50)))
    real = os.fstat
    monkeypatch.setattr(soak_writer.os, "fstat", lambda fd: os.stat_result((0, 7) + tuple(real(fd))[2:]))
    w = soak_writer.Writer(str(dev), str(log), 50)
    assert w.acknowledged() == 50
    size = log.stat().st_size
    v = w.verify(compact=True)
    assert v["bad"] == 0 and v["compacted_from"] == 50 and log.stat().st_size > size, v
    assert w.acknowledged() == 50
