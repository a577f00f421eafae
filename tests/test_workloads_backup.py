"""The backup recipes (restic-backup, borg-backup): their changing tree, and a few days of each, bounded (no capture)."""
import hashlib
import json
import os
import pathlib
import subprocess

import pytest

from hbl.trace import workloads
from hbl.trace.recipes import backup_tree

SMALL = ["400", "20", "4"]      # files, directories, MiB of the image


def _tree(tmp_path, *args):
    script = tmp_path / "tree.py"
    script.write_text(backup_tree.TREE)
    return subprocess.run([backup_tree.PY, str(script), str(tmp_path / "home")] + [str(a) for a in args],
                          capture_output=True, text=True, timeout=300)


def _files(home):
    return {str(p.relative_to(home)): (p.stat().st_size, hashlib.sha1(p.read_bytes()).hexdigest())
            for p in home.rglob("*") if p.is_file()}


def test_the_tree_changes_a_few_files_a_day(tmp_path):
    """make: every file and the image; a day: a few files changed (more of the hot ones), a few new and gone,
    the image the same size with blocks rewritten; another day changes other files."""
    assert _tree(tmp_path, "make", 0, *SMALL).returncode == 0
    home = tmp_path / "home"
    before = _files(home)
    assert len(before) == 401 and before["disk.img"][0] == 4 << 20
    sizes = sorted(s for n, (s, _) in before.items() if n != "disk.img")
    assert 1000 < sizes[len(sizes) // 2] < 20_000 and sizes[-1] > 50_000      # log-normal, median some KiB
    r = _tree(tmp_path, "change", 1, *SMALL)
    assert r.returncode == 0, r.stderr
    after = _files(home)
    changed = {n for n in before.keys() & after.keys() if before[n] != after[n]}
    assert 1 <= len(changed) <= 40 and "disk.img" in changed and after["disk.img"][0] == 4 << 20
    assert 0 < len(after.keys() - before.keys()) <= 1
    assert _tree(tmp_path, "change", 2, *SMALL).returncode == 0
    day2 = _files(home)
    assert {n for n in after.keys() & day2.keys() if after[n] != day2[n]} != changed


class _Scratch:
    """What a recipe's scripts need of hbl/trace/scratch.py's Scratch: paths on the file system, files beside it."""

    def __init__(self, root):
        self.root = root
        (root / "mnt").mkdir()

    def path(self, *parts):
        return str(self.root.joinpath("mnt", *parts))

    def write_tmp(self, name, text):
        (self.root / name).write_text(text)
        return str(self.root / name)


@pytest.mark.parametrize("name", ["restic-backup", "borg-backup"])
def test_a_backup_recipe_backs_up_prunes_and_checks(name, tmp_path, monkeypatch):
    """The first backup, then seven days (changes, backups, a prune on days 3 and 6, a check on day 5 or 7) of a
    small tree: every script ends well and the repository holds the backups the prunes kept."""
    recipe = workloads.get(name)
    if recipe.tools()[1]:
        pytest.skip("%s is not installed (scripts/bootstrap.sh --workloads installs it)" % recipe.package)
    if os.geteuid():
        pytest.skip("the days drop the page cache (root only)")
    module = __import__(type(recipe).__module__, fromlist=["FIRST", "DAYS"])
    monkeypatch.setattr(backup_tree, "SHAPE", SMALL)
    monkeypatch.setattr(module, "SHAPE", SMALL)
    sc = _Scratch(tmp_path)
    assert subprocess.run([backup_tree.PY, sc.write_tmp("tree.py", backup_tree.TREE), sc.path("home"), "make", "0"]
                          + SMALL, capture_output=True).returncode == 0
    for label, template, args in (("first", module.FIRST, []), ("days", module.DAYS, ["7"])):
        r = subprocess.run(["/bin/sh", sc.write_tmp(label + ".sh", recipe._script(sc, template))] + args,
                           capture_output=True, text=True, timeout=600)
        assert r.returncode == 0, "%s %s: %s" % (name, label, r.stderr[-2000:])
    env = dict(os.environ, RESTIC_REPOSITORY=sc.path("repo"), RESTIC_PASSWORD="hbl", RESTIC_CACHE_DIR=sc.path("cache"),
               BORG_REPO=sc.path("repo"), BORG_PASSPHRASE="hbl", BORG_BASE_DIR=sc.path("borg"))
    listing = (["/usr/bin/restic", "snapshots", "--json"] if name == "restic-backup"
               else ["/usr/bin/borg", "list", "--short"])
    r = subprocess.run(listing, capture_output=True, text=True, env=env, timeout=120)
    assert r.returncode == 0, r.stderr
    # days 0-6 kept by day 6's prune (the last seven), and day 7's; borg's --keep-last is --keep-secondly, so of
    # archives made within one second (this small tree's days take less) it keeps the last
    if name == "borg-backup":
        kept = r.stdout.split()
        assert kept[-1] == "day-7" and 2 <= len(kept) <= 8 and kept == [d for d in ["day-%d" % d for d in range(8)]
                                                                         if d in kept], kept
    else:
        assert len(json.loads(r.stdout)) == 8
    assert pathlib.Path(sc.path("home", "disk.img")).stat().st_size == 4 << 20
