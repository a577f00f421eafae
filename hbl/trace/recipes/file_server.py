"""The file-server recipe (`hbl workloads capture file-server`): a source tree served as files.

What a file server or a build farm's source checkout sees, metadata-heavy: a Linux source tree
(about 80,000 files) is archived with tar, copied with cp -a, compared with rsync --checksum,
searched with grep and walked with du, with the page cache dropped between rounds, and the copy
removed again. Directory and inode blocks, journal commits and many small files.
"""
from hbl.trace.recipes.base import Recipe

ROUNDS = r"""set -eu
cd {mnt}
while :; do
    echo 3 > /proc/sys/vm/drop_caches
    tar -cf - src | wc -c >/dev/null
    cp -a src copy
    sync
    echo 3 > /proc/sys/vm/drop_caches
    rsync -a --checksum --delete src/ copy/
    grep -rl --include='*.c' -e 'spin_lock_irqsave' src >/dev/null || true
    du -s copy >/dev/null
    rm -rf copy
    sync
done
"""


class FileServer(Recipe):
    name, application, package = "file-server", "rsync + tar, cp, grep (Linux source tree)", "rsync"
    runs = ("rounds over Debian's linux-source tree (about 80,000 files, 1.3 GiB) with the page cache dropped: "
            "tar to a pipe, cp -a to a copy, rsync --checksum of the copy, grep -r over *.c, du, rm -rf the copy")
    expected = "1 M requests in about 10 minutes here, after about 2 minutes of unpacking"
    cache_bound = "memory cgroup of 256 MiB around the tools and page cache dropped each round: tree 5x the cache"
    memory_mib = 256
    fs_gib = 8
    binaries = (("/usr/src/linux-source-*.tar.xz", "linux-source"), ("/usr/bin/rsync", "rsync"),
                ("/usr/bin/xz", "xz-utils"))

    def prepare(self, sc):
        self.unpack_linux_source(sc)

    def steps(self, sc):
        return [self.shell(sc, "rounds", ROUNDS.format(mnt=sc.mnt), 1.0)]
