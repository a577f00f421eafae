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
