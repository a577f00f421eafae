"""The rocksdb recipe (`hbl workloads capture rocksdb`)."""
from hbl.trace.recipes.base import Recipe, Step


class RocksdbBench(Recipe):
    name, application, package = "rocksdb", "RocksDB", "rocksdb-tools"
    runs = ("db_bench fillrandom of 2 M keys x 400 B (about 850 MiB), then readrandom (4 threads), then readwhilewriting "
            "(3 readers + 1 writer), block cache 16 MiB, no compression")
    expected = "1 M requests in about 12 minutes here (the fill, then the two read phases share what is left)"
    cache_bound = "direct I/O for reads, flushes and compactions (use_direct_reads, " \
                  "use_direct_io_for_flush_and_compaction), and a 256 MiB memory cgroup (the WAL is buffered)"
    fs_gib = 10
    binaries = (("/usr/bin/db_bench", "rocksdb-tools"),)

    def _argv(self, sc, *args):
        return ["/usr/bin/db_bench", "--db=" + sc.path("rocksdb"), "--num=2000000", "--value_size=400",
                "--compression_type=none", "--use_direct_reads=true",
                "--use_direct_io_for_flush_and_compaction=true", "--cache_size=16777216", "--seed=1"] + list(args)

    def steps(self, sc):
        return [Step("fillrandom", self._argv(sc, "--benchmarks=fillrandom")),
                Step("readrandom", self._argv(sc, "--benchmarks=readrandom", "--use_existing_db=1",
                                              "--threads=4", "--duration=86400"), 0.5),
                Step("readwhilewriting", self._argv(sc, "--benchmarks=readwhilewriting", "--use_existing_db=1",
                                                    "--threads=3", "--duration=86400"), 1.0)]
