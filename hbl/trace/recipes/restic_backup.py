"""The restic-backup recipe (`hbl workloads capture restic-backup`): nightly backups of a changing home directory.

restic cuts files into content-defined chunks, stores each chunk once (encrypted, text compressed)
in pack files of a repository, and keeps an index of them and a snapshot of each backup. A backup
after the first reads every directory's metadata, and of the files only those whose size or time
changed (the parent snapshot's tree tells which), and writes new pack files, index and snapshot.
Every third day `forget --prune` drops the snapshots beyond the last seven and repacks what they
alone kept (reads pack files, writes new ones, deletes the old); every fifth day `check
--read-data-subset` reads a tenth of the repository back. The tree (hbl/trace/recipes/backup_tree.py)
changes between backups as a day of use would. The disk sees a whole-tree metadata walk, reads of
the changed files, write-once pack files, and the repository's older data read back by prune and
check: backup software's regime, which neither side has.
"""
from hbl.trace.recipes.backup_tree import PY, SHAPE, TREE
from hbl.trace.recipes.base import Recipe

RESTIC = "/usr/bin/restic"

ENV = "export RESTIC_REPOSITORY={repo} RESTIC_PASSWORD=hbl RESTIC_CACHE_DIR={cache}\n"

#: the repository and the first backup (not captured)
FIRST = "set -eu\n" + ENV + """{restic} init
{restic} backup --quiet --host home {home}
"""

#: the days, until the capture stops them (argv: the last day, for a bounded run)
DAYS = "set -eu\n" + ENV + """day=1
while [ -z "${{1:-}}" ] || [ $day -le "${{1:-}}" ]; do
    {py} {tree} {home} change $day {shape}
    sync; echo 3 > /proc/sys/vm/drop_caches
    {restic} backup --quiet --host home {home}
    if [ $((day % 3)) = 0 ]; then {restic} forget --quiet --keep-last 7 --prune; fi
    if [ $((day % 5)) = 0 ]; then {restic} check --quiet --read-data-subset $((day / 5 % 10 + 1))/10; fi
    day=$((day + 1))
done
"""


class ResticBackup(Recipe):
    name, application, package = "restic-backup", "restic", "restic"
    runs = ("restic backing up a changing home directory (120,000 files of log-normal sizes, median 4 KiB, 3 in 5 "
            "incompressible, and a 64 MiB disk image; about 1.5 GiB) once a day: between backups about 4,600 files "
            "(6,000 draws by a power law) appended to or rewritten, 300 new, up to 300 deleted, 400 blocks of the "
            "image rewritten, then the page cache dropped (the rest of the day's use); forget --keep-last 7 --prune "
            "every third day, check --read-data-subset of a tenth every fifth")
    expected = ("0.6 M requests in 15 minutes here (0.68 k/s at load 7-9; --duration 15m), after about 2.5 minutes "
                "making the tree and the first backup")
    cache_bound = "memory cgroup of 256 MiB around restic and the tree's changes: tree and repository 10x it"
    memory_mib = 256
    fs_gib = 6
    binaries = ((PY, "python3"), (RESTIC, "restic"))

    def _script(self, sc, template):
        return template.format(repo=sc.path("repo"), cache=sc.path("cache"), restic=RESTIC, py=PY,
                               tree=sc.write_tmp("backup-tree.py", TREE), home=sc.path("home"), shape=" ".join(SHAPE))

    def prepare(self, sc):
        sc.run([PY, sc.write_tmp("backup-tree.py", TREE), sc.path("home"), "make", "0"] + SHAPE)
        sc.run(["/bin/sh", sc.write_tmp("restic-first.sh", self._script(sc, FIRST))])
        sc.cold_cache()

    def steps(self, sc):
        return [self.shell(sc, "days", self._script(sc, DAYS), 1.0)]
