"""hbl workloads: the recipes, workload:/apps: names, and a real capture checked against the kernel's counters."""
import gzip
import json
import os
import pathlib
import subprocess
import sys

import numpy as np
import pytest

from hbl import record
from hbl.trace import workloads
from hbl.errors import HblError, TraceError
from hbl.trace import load, open_trace

from helpers import capture_why_not, hbl

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def run(*args, check=True):
    return hbl(*args, check=check, timeout=None, cwd=ROOT)


def test_list_json_has_the_recipes():
    rows = json.loads(run("workloads", "list", "--json").stdout)
    names = {r["name"] for r in rows}
    assert {"pgbench", "sysbench-mariadb", "rocksdb", "sqlite", "build-linux", "fio-zipf", "redis-aof",
            "nginx-static", "file-server", "pg-analytics", "git-checkout", "squid-cache", "beanstalkd", "lmdb-kv",
            "rrd-metrics", "kyoto-hash", "maildir-lda", "restic-backup", "borg-backup"} <= names
    for r in rows:
        assert r["application"] and r["runs"] and r["page_cache_bound"] and r["expected"]
        assert r["synthetic"] == (r["name"] == "fio-zipf")
        assert r["installed"] == (not r["missing_packages"])


def test_missing_capture_names_the_command(tmp_path, monkeypatch):
    monkeypatch.setattr(workloads, "CACHE_DIR", tmp_path)
    monkeypatch.setattr(workloads, "SHIPPED_DIR", tmp_path)
    with pytest.raises(TraceError, match="capture it with: sudo hbl workloads capture pgbench"):
        open_trace("workload:pgbench")
    with pytest.raises(TraceError, match="no workload recipe 'nope'"):
        open_trace("workload:nope")
    r = run("trace-info", "workload:nope", check=False)
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "have: pgbench" in r.stderr


def _three(path, fmt, first):
    from hbl.trace import writer
    data = record.empty(3)
    data["offset"] = [first, first + 4096, first + 8192]
    data["length"] = 4096
    data["op"] = record.READ
    with writer(str(path), fmt) as w:
        w.write(data)


def test_cached_capture_overrides_the_shipped_one(tmp_path, monkeypatch):
    cache, ship = tmp_path / "cache", tmp_path / "ship"
    cache.mkdir(), ship.mkdir()
    monkeypatch.setattr(workloads, "CACHE_DIR", cache)
    monkeypatch.setattr(workloads, "SHIPPED_DIR", ship)
    _three(ship / "sqlite.hblz", "packed", 1 << 20)
    assert workloads.shipped() == ["sqlite"]
    assert list(load("workload:sqlite")[0]["offset"]) == [1 << 20, (1 << 20) + 4096, (1 << 20) + 8192]
    _three(cache / "sqlite.hbltrace", "native", 0)
    assert list(load("workload:sqlite")[0]["offset"]) == [0, 4096, 8192]


@pytest.mark.parametrize("name", workloads.shipped())
def test_shipped_captures_read_on_any_machine(name, monkeypatch, tmp_path):
    """workload:NAME without a capture here: the shipped file, whole and checked (its checksums)."""
    monkeypatch.setattr(workloads, "CACHE_DIR", tmp_path)
    assert name in workloads.RECIPES
    reader = open_trace("workload:" + name)
    # 1 M a capture; maildir-lda's capture ended at its time limit with 719,304, and the short ones of the
    # fresh validation set (hbl/sim/pretrained.py SHORT_CAPTURES) at theirs
    from hbl.sim.pretrained import SHORT_CAPTURES
    least = 700_000 if name == "maildir-lda" else SHORT_CAPTURES.get(name, 1_000_000)
    assert reader.name == "packed" and reader.count >= least
    n = last = 0
    for chunk in reader:
        n += len(chunk)
        assert last <= chunk["time_ns"][0] and (np.diff(chunk["time_ns"].astype(np.int64)) >= 0).all()
        last = chunk["time_ns"][-1]
    assert n == reader.count


def test_the_shipped_corpus_fits_its_budget():
    """At most 56 MB in git for the whole corpus, at most 4 bytes a request on average (50 MB until the two
    fresh backup captures, results/workloads/shipped.txt)."""
    names = workloads.shipped()
    sizes = [os.path.getsize(workloads.shipped_path(n)) for n in names]
    counts = [open_trace(str(workloads.shipped_path(n))).count for n in names]
    assert sum(sizes) <= 56e6
    assert not names or sum(sizes) / sum(counts) <= 4.0


def test_missing_application_names_the_bootstrap(monkeypatch):
    r = workloads.get("rocksdb")
    monkeypatch.setattr(type(r), "binaries", (("/nonexistent/db_bench", "rocksdb-tools"),))
    with pytest.raises(HblError, match=r"scripts/bootstrap.sh --workloads \(it installs rocksdb-tools\)"):
        workloads.check(r)


@pytest.mark.parametrize("name", workloads.app_slices())
def test_app_slices_load(name):
    data, _ = load("apps:" + name)
    assert 0 < len(data) <= 20_000   # the first 20,000 requests, less the flushes msrc cannot spell
    assert np.all(data["length"] > 0) and np.all(np.diff(data["time_ns"].astype(np.int64)) >= 0)
    with gzip.open(workloads.APPS_DIR / (name + ".csv.gz"), "rt") as f:
        assert f.readline().count(",") == 6


def test_slice_only_from_a_capture_of_this_machine(tmp_path, monkeypatch):
    """hbl workloads slice NAME once cut the shipped, packed workload:NAME when NAME was not captured
    here, and overwrote the shipped apps:NAME with its rounded times and latencies."""
    monkeypatch.setattr(workloads, "CACHE_DIR", tmp_path / "cache")
    with pytest.raises(HblError, match="no capture of pg-analytics on this machine"):
        workloads.make_slice("pg-analytics", out_dir=tmp_path)
    assert not list(tmp_path.glob("*.csv.gz"))
    (tmp_path / "cache").mkdir()
    data, _ = load("apps:pg-analytics")
    from hbl.trace.files import writer
    with writer(str(workloads.trace_path("pg-analytics")), "native") as w:
        w.write(data[:300])
    r = workloads.make_slice("pg-analytics", requests=100, out_dir=tmp_path)
    assert r["requests"] == 100 and (tmp_path / "pg-analytics.csv.gz").exists()


LMDB = workloads.get("lmdb-kv")


def _script(tmp_path, recipe, name, *args):
    """Run the Python script `name` (LOAD, MIX) of the recipe module `recipe` with its interpreter."""
    script = tmp_path / (name + ".py")
    script.write_text(getattr(recipe, name))
    return subprocess.run([recipe.PY, str(script)] + [str(a) for a in args], capture_output=True, text=True,
                          timeout=300)


def _lmdb_script(tmp_path, name, *args):
    from hbl.trace.recipes import lmdb_kv
    return _script(tmp_path, lmdb_kv, name, *args)


@pytest.mark.skipif(bool(LMDB.tools()[1]), reason="python3-lmdb is not installed (scripts/bootstrap.sh installs it)")
def test_lmdb_kv_popularity_is_skewed_and_spread(tmp_path):
    """The keys lmdb-kv's readers ask for: a few hot keys, asked for again and again, one to a page
    (nine keys of 400 B to a 4 KiB page, loaded in order), and other hot keys in the second phase."""
    import collections
    phases = []
    for s, spread in ((0.9, 0.618034), (1.1, 0.414214)):
        r = _lmdb_script(tmp_path, "MIX", tmp_path / "none", "keys", 3_000_000, s, spread, 1, 50_000)
        assert r.returncode == 0, r.stderr
        keys = [int(k) for k in r.stdout.split()]
        assert len(keys) == 50_000 and all(0 <= k < 3_000_000 for k in keys)
        count = collections.Counter(keys)
        hot = [k for k, _ in count.most_common(100)]
        assert sum(count[k] for k in hot) > 0.1 * len(keys)          # skewed: 100 keys of 3 M, > 10% of lookups
        assert len({k // 9 for k in hot}) == len(hot)                # spread: no two hot keys on one page
        assert max(hot) - min(hot) > 2_000_000                       # over the whole file
        phases.append(set(hot))
    assert len(phases[0] & phases[1]) <= 2                           # the second phase has other hot keys


@pytest.mark.skipif(bool(LMDB.tools()[1]), reason="python3-lmdb is not installed (scripts/bootstrap.sh installs it)")
def test_lmdb_kv_loads_and_runs_its_mix(tmp_path):
    """lmdb-kv's load and its readers and writer, bounded, on a small database (no capture)."""
    db = tmp_path / "db"
    db.mkdir()
    r = _lmdb_script(tmp_path, "LOAD", db, 20_000, 400)
    assert r.returncode == 0 and "'entries': 20000" in r.stdout, r.stdout + r.stderr
    assert "'leaf_pages': 2223" in r.stdout                          # 9 keys a page: 20,000 keys in order
    for role, seed in (("reader", 1), ("writer", 9)):
        r = _lmdb_script(tmp_path, "MIX", db, role, 20_000, 0.9, 0.618034, seed, 3)
        assert r.returncode == 0, r.stderr
    r = subprocess.run([LMDB.tool(LMDB.binaries[0][0]), "-c", "import lmdb, sys; e = lmdb.open(sys.argv[1], "
                        "readonly=True); print(e.stat()['entries'], e.info()['last_txnid'])", str(db)],
                       capture_output=True, text=True)
    entries, txnid = map(int, r.stdout.split())
    assert entries == 20_000 and txnid == 1 + 3      # one load transaction, three of updates, no key added


RRD = workloads.get("rrd-metrics")


@pytest.mark.skipif(bool(RRD.tools()[1]), reason="python3-rrdtool is not installed (scripts/bootstrap.sh installs it)")
def test_rrd_metrics_sweeps_every_file_and_reads_history(tmp_path):
    """rrd-metrics' files, five collector sweeps over all of them (time 10 s ahead a sweep) and two dashboard
    views, on 2 hosts x 3 metrics (no capture)."""
    from hbl.trace.recipes import rrd_metrics
    root = tmp_path / "rrd"
    root.mkdir()
    r = _script(tmp_path, rrd_metrics, "LOAD", root, 2, 3, rrd_metrics.T0)
    assert r.returncode == 0 and "created 6 files" in r.stdout, r.stdout + r.stderr
    files = sorted(root.glob("host*/m*.rrd"))
    assert len(files) == 6 and {f.stat().st_size for f in files} == {79552}
    assert _script(tmp_path, rrd_metrics, "MIX", root, "collector", 2, 3, rrd_metrics.T0, 1, 5).returncode == 0
    r = _script(tmp_path, rrd_metrics, "MIX", root, "dashboard", 2, 3, rrd_metrics.T0, 2, 2)
    assert r.returncode == 0, r.stderr
    r = subprocess.run([rrd_metrics.PY, "-c", "import rrdtool, sys\nfor f in sys.argv[1:]:\n"
                        "    print(rrdtool.last(f), rrdtool.fetch(f, 'AVERAGE', '-s', str(rrdtool.last(f) - 30), "
                        "'-e', str(rrdtool.last(f)))[2][1][0])"] + [str(f) for f in files], capture_output=True,
                       text=True)
    rows = [line.split() for line in r.stdout.splitlines()]
    assert len(rows) == 6, r.stderr
    assert all(int(last) == rrd_metrics.T0 + 50 for last, _ in rows)      # every file in every sweep
    assert all(50 <= float(v) <= 90 for _, v in rows)                      # the collector's gauge values


KYOTO = workloads.get("kyoto-hash")


@pytest.mark.skipif(bool(KYOTO.tools()[1]), reason="python3-kyotocabinet is not installed (scripts/bootstrap.sh installs it)")
def test_kyoto_hash_loads_and_commits_its_updates(tmp_path):
    """kyoto-hash's load and its mix (a reader thread, five writer transactions) on a small database:
    the updates replace records (no key added), and every transaction commits (no write-ahead log left)."""
    from hbl.trace.recipes import kyoto_hash
    db = tmp_path / "db.kch"
    r = _script(tmp_path, kyoto_hash, "LOAD", db, 20_000)
    assert r.returncode == 0 and "loaded 20000 records" in r.stdout, r.stdout + r.stderr
    before = db.stat().st_mtime_ns
    r = _script(tmp_path, kyoto_hash, "MIX", db, 20_000, 0.9, 0.618034, 1, 7, 5)
    assert r.returncode == 0 and r.stdout.startswith("records 20000 "), r.stdout + r.stderr
    assert db.stat().st_mtime_ns > before and not (tmp_path / "db.kch.wal").exists()


MAIL = workloads.get("maildir-lda")


@pytest.mark.skipif(bool(MAIL.tools()[1]), reason="dovecot-core is not installed (scripts/bootstrap.sh installs it)")
def test_maildir_lda_messages_and_dovecot_settings(tmp_path):
    """maildir-lda's messages (log-normal sizes, median a few KiB, a few large) and Dovecot's reading of its settings."""
    from hbl.trace.recipes import maildir_lda
    msgs = tmp_path / "messages"
    msgs.mkdir()
    assert _script(tmp_path, maildir_lda, "MESSAGES", msgs, 400).returncode == 0
    sizes = sorted(f.stat().st_size for f in msgs.iterdir())
    assert len(sizes) == 400 and 3000 < sizes[200] < 12000 and sizes[-1] > 100_000 and sizes[0] < 1000
    conf = tmp_path / "dovecot.conf"
    conf.write_text(maildir_lda.CONF)
    r = subprocess.run(["doveconf", "-c", str(conf), "-h", "mail_fsync", "mail_location"], capture_output=True, text=True)
    assert r.returncode == 0 and r.stdout.split() == ["always", "maildir:~/Maildir"], r.stderr


@pytest.mark.skipif(bool(MAIL.tools()[1]) or os.geteuid() != 0, reason="dovecot-core and root (the mix runs as mail)")
def test_maildir_lda_delivers_reads_and_expunges():
    """maildir-lda's deliverer and reader, bounded (no capture): 30 messages land in new/, the reader moves
    the ones it reads to cur/ or expunges them."""
    import shutil
    import tempfile
    from hbl.trace.recipes import maildir_lda
    work = pathlib.Path(tempfile.mkdtemp(dir="/var/tmp", prefix="hbl-test-maildir-"))
    try:
        os.chmod(work, 0o755)
        root, msgs = work / "mail", work / "messages"
        root.mkdir()
        shutil.chown(root, "mail", "mail")
        msgs.mkdir(mode=0o755)
        (work / "dovecot.conf").write_text(maildir_lda.CONF)
        assert _script(work, maildir_lda, "MESSAGES", msgs, 20).returncode == 0
        args = (root, work / "dovecot.conf", msgs, 20)
        r = _script(work, maildir_lda, "MIX", "deliver", *args, 1, 30)
        assert r.returncode == 0, r.stderr
        assert len(list(root.glob("u*/Maildir/new/*"))) == 30
        r = _script(work, maildir_lda, "MIX", "read", *args, 11, 30)
        assert r.returncode == 0, r.stderr
        assert len(list(root.glob("u*/Maildir/new/*"))) < 30 and len(list(root.glob("u*/Maildir/cur/*"))) < 30
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _why_not():
    why = capture_why_not("loop devices, mounts, cgroups, BPF")
    if why is None and workloads.get("sqlite").tools()[1]:
        return "sqlite3 is not installed (scripts/bootstrap.sh installs it)"
    return why


WHY = _why_not()


@pytest.mark.skipif(WHY is not None, reason=WHY or "")
def test_capture_matches_the_loop_device_counters(tmp_path):
    """A minute of the SQLite recipe: every request the kernel completed on the loop device is in the trace."""
    out = tmp_path / "sqlite.hbltrace"
    r = run("workloads", "capture", "sqlite", "--duration", "45s", "--out", str(out))
    assert "0 lost records" in r.stderr and "requests" in r.stdout
    meta = json.loads((tmp_path / "sqlite.json").read_text())
    assert meta["lost"] == 0 and meta["requests"] > 5000
    data, _ = load(str(out))
    st = meta["device_stat"]
    reads, writes = data[data["op"] == record.READ], data[data["op"] == record.WRITE]
    flushes = int((data["op"] == record.FLUSH).sum())
    assert np.all(writes["length"] > 0)
    # the kernel counts fsync's empty flush writes as writes (the trace has them as flushes), and the
    # flush requests the block layer makes of them as flushes
    assert len(writes) * 0.98 <= st["writes"] <= (len(writes) + flushes) * 1.02, \
        "writes: trace %d (+%d flushes), /sys/block/%s/stat %d" % (len(writes), flushes, meta["device"], st["writes"])
    for what, got, want in (("reads", len(reads), st["reads"]),
                            ("read sectors", int(reads["length"].sum()) // 512, st["read_sectors"]),
                            ("write sectors", int(writes["length"].sum()) // 512, st["write_sectors"])):
        assert want > 0, what
        assert abs(got - want) <= 0.02 * want, "%s: trace %d, /sys/block/%s/stat %d" % (
            what, got, meta["device"], want)
    assert not os.path.exists(str(out) + ".part")
    assert not os.path.exists(meta["scratch"])   # file system, loop device file and all removed
