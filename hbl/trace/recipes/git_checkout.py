"""The git-checkout recipe (`hbl workloads capture git-checkout`): a version-control server's reads.

A git repository of a Linux source tree (one commit, its objects packed without deltas) is
cloned, its working tree checked out, searched with git grep (random reads into the pack) and
compared with git status, with the page cache dropped between rounds, then removed: what a
git server, a CI runner's checkout or a developer's clone asks of the disk.
"""
from hbl.trace.recipes.base import Recipe

PREPARE = r"""set -eu
cd {mnt}/src
git init -q
git add -A -f    # Debian's tree ignores everything (its .gitignore has /*)
git -c user.name=hbl -c user.email=hbl@localhost commit -q -m import
git repack -a -d -q --window=0
git prune-packed
"""

ROUNDS = r"""set -eu
cd {mnt}
while :; do
    echo 3 > /proc/sys/vm/drop_caches
    git clone -q --no-local --no-hardlinks src clone
    echo 3 > /proc/sys/vm/drop_caches
    git -C clone status --porcelain >/dev/null
    git -C clone grep -q -e 'spin_lock_irqsave' -- '*.c' || true
    git -C src grep -q -e 'EXPORT_SYMBOL_GPL' HEAD -- '*.h' || true
    rm -rf clone
    sync
done
"""


class GitCheckout(Recipe):
    name, application, package = "git-checkout", "git", "git"
    runs = ("rounds over a git repository of Debian's linux-source tree (one commit, about 80,000 files, packed "
            "without deltas) with the page cache dropped: git clone --no-local, git status, git grep over the "
            "clone's *.c and over the pack's *.h, rm -rf the clone")
    expected = "1 M requests in about 10 minutes here, after about 3 minutes of unpacking and committing"
    cache_bound = "memory cgroup of 256 MiB around git and page cache dropped twice a round: repository 5x the cache"
    memory_mib = 256
    fs_gib = 10
    binaries = (("/usr/src/linux-source-*.tar.xz", "linux-source"), ("/usr/bin/git", "git"),
                ("/usr/bin/xz", "xz-utils"))

    def prepare(self, sc):
        self.unpack_linux_source(sc)
        sc.run(self.shell(sc, "prepare", PREPARE.format(mnt=sc.mnt)).argv)

    def steps(self, sc):
        return [self.shell(sc, "rounds", ROUNDS.format(mnt=sc.mnt), 1.0)]
