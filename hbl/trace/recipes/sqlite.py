"""The sqlite recipe (`hbl workloads capture sqlite`)."""
from hbl.trace.recipes.base import Recipe, Step


class SqliteMix(Recipe):
    name, application, package = "sqlite", "SQLite", "sqlite3"
    runs = ("sqlite3 (WAL mode, 2 MiB page cache) on a 4 M-row table (about 1.1 GiB) with an index: "
            "transactions of 500 inserts and 500 random updates, 5,000 random point reads and an index range scan")
    expected = "1 M requests in about 10 minutes of capture here, after 2 minutes of loading"
    cache_bound = "memory cgroup of 128 MiB around sqlite3 and PRAGMA cache_size of 2 MiB: data about 9x the cache"
    memory_mib = 128
    fs_gib = 6
    binaries = (("/usr/bin/sqlite3", "sqlite3"),)
    ROWS = 4_000_000
    BLOCKS = 20_000

    @staticmethod
    def _rows(n):
        return "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < %d) " % n

    def _load(self):
        return ("PRAGMA journal_mode=WAL;\nCREATE TABLE t(id INTEGER PRIMARY KEY, k INTEGER, v BLOB);\n"
                "%sINSERT INTO t SELECT x, abs(random()) %% 1000000000, randomblob(200) FROM c;\n"
                "CREATE INDEX t_k ON t(k);\n" % self._rows(self.ROWS))

    def _block(self, lo):
        pick = "SELECT 1 + abs(random()) %% %d FROM c" % self.ROWS
        return ("BEGIN;\n%sINSERT INTO t(k, v) SELECT abs(random()) %% 1000000000, randomblob(200) FROM c;\n"
                "%sUPDATE t SET v = randomblob(200) WHERE id IN (%s);\nCOMMIT;\n"
                "%sSELECT sum(length(v)) FROM t WHERE id IN (%s);\n"
                "SELECT count(*) FROM t WHERE k BETWEEN %d AND %d;\n"
                % (self._rows(500), self._rows(500), pick, self._rows(5000), pick, lo, lo + 2_000_000))

    def prepare(self, sc):
        sc.run(["/usr/bin/sqlite3", sc.path("db.sqlite")], stdin=sc.write_tmp("load.sql", self._load()))

    def steps(self, sc):
        import random
        rnd = random.Random(1)
        blocks = [self._block(rnd.randrange(1_000_000_000)) for _ in range(self.BLOCKS)]
        script = sc.write_tmp("mix.sql", "PRAGMA cache_size=-2000;\n" + "".join(blocks))
        return [Step("mix", ["/usr/bin/sqlite3", sc.path("db.sqlite")], 1.0, stdin=script)]
