"""The borg-backup recipe (`hbl workloads capture borg-backup`): nightly backups of a changing home directory to a
log-structured repository.

Borg cuts files into content-defined chunks and stores each chunk once (encrypted, lz4) in a
repository of numbered segment files that are only ever appended to: each backup appends its new
chunks and an archive and commits (a synced segment end and a rewritten hash index). Deleting data
only writes delete entries; `borg compact` later reads the segments that hold mostly deleted chunks,
appends what is still used to new segments and removes the old ones. Borg's own files cache (which
files are unchanged since the last backup) and chunks cache are read and written whole by every run.
Here: a backup a day of the tree of hbl/trace/recipes/backup_tree.py, changed between backups as a
day of use would; every third day `prune --keep-last 7` (borg's --keep-secondly: the last archive of
each of the last seven seconds that have one; a day here takes seconds, so the last seven days) and `compact`; every seventh `check
--repository-only` (every segment read back and its checksums verified). Log-structured storage
with a cleaner, which restic-backup's write-once pack files are not.
"""
from hbl.trace.recipes.backup_tree import PY, SHAPE, TREE
from hbl.trace.recipes.base import Recipe

BORG = "/usr/bin/borg"

ENV = "export BORG_REPO={repo} BORG_PASSPHRASE=hbl BORG_BASE_DIR={base}\n"

#: the repository and the first backup (not captured)
FIRST = "set -eu\n" + ENV + """{borg} init --encryption repokey
{borg} create ::day-0 {home}
"""

#: the days, until the capture stops them (argv: the last day, for a bounded run)
DAYS = "set -eu\n" + ENV + """day=1
while [ -z "${{1:-}}" ] || [ $day -le "${{1:-}}" ]; do
    {py} {tree} {home} change $day {shape}
    sync; echo 3 > /proc/sys/vm/drop_caches
    {borg} create ::day-$day {home}
    if [ $((day % 3)) = 0 ]; then {borg} prune --keep-last 7; {borg} compact; fi
    if [ $((day % 7)) = 0 ]; then {borg} check --repository-only; fi
    day=$((day + 1))
done
"""


class BorgBackup(Recipe):
    name, application, package = "borg-backup", "BorgBackup", "borgbackup"
    runs = ("borg backing up a changing home directory (restic-backup's tree: 120,000 files, median 4 KiB, and a "
            "64 MiB disk image; about 1.5 GiB) once a day, lz4 and repokey encryption: between backups about 4,600 "
            "files appended to or rewritten, 300 new, up to 300 deleted, 400 blocks of the image rewritten, then the "
            "page cache dropped; prune --keep-last 7 and compact every third day, check --repository-only every seventh")
    expected = ("1 M requests in about 12 minutes here (1.4 k/s at load 1-5), after about 2 minutes making the tree "
                "and the first backup (scratch file system 12 GiB: at 6 GiB borg ran out of space on day 15)")
    cache_bound = "memory cgroup of 256 MiB around borg and the tree's changes: tree and repository 10x it"
    memory_mib = 256
    fs_gib = 12
    binaries = ((PY, "python3"), (BORG, "borgbackup"))

    def _script(self, sc, template):
        return template.format(repo=sc.path("repo"), base=sc.path("borg"), borg=BORG, py=PY,
                               tree=sc.write_tmp("backup-tree.py", TREE), home=sc.path("home"), shape=" ".join(SHAPE))

    def prepare(self, sc):
        sc.run([PY, sc.write_tmp("backup-tree.py", TREE), sc.path("home"), "make", "0"] + SHAPE)
        sc.run(["/bin/sh", sc.write_tmp("borg-first.sh", self._script(sc, FIRST))])
        sc.cold_cache()

    def steps(self, sc):
        return [self.shell(sc, "days", self._script(sc, DAYS), 1.0)]
