"""The fio-zipf recipe (`hbl workloads capture fio-zipf`)."""
from hbl.trace.recipes.base import Recipe, Step


class FioZipf(Recipe):
    name, application, package = "fio-zipf", "fio", "fio"
    runs = "fio 4 KiB random 70/30 read/write, zipf(1.1) over a 2 GiB file, iodepth 16 (SYNTHETIC control case)"
    expected = "1 M requests in about 1 minute here"
    cache_bound = "direct I/O (fio --direct=1): no page cache at all"
    synthetic = True
    fs_gib = 4
    binaries = (("/usr/bin/fio", "fio"),)
    FIO = ["--filename={mnt}/fio.dat", "--size=2G", "--direct=1", "--ioengine=libaio"]

    def _argv(self, sc, *extra):
        return [self.tool("/usr/bin/fio")] + [a.format(mnt=sc.mnt) for a in self.FIO] + list(extra)

    def prepare(self, sc):
        sc.run(self._argv(sc, "--name=layout", "--rw=write", "--bs=1M", "--iodepth=4"))

    def steps(self, sc):
        return [Step("zipf", self._argv(sc, "--name=zipf", "--rw=randrw", "--rwmixread=70", "--bs=4k",
                                        "--random_distribution=zipf:1.1", "--iodepth=16", "--time_based",
                                        "--runtime=86400", "--randseed=1"), 1.0)]
