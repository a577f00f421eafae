"""The pg-analytics recipe (`hbl workloads capture pg-analytics`): PostgreSQL's scans and index builds.

The other face of a database server: not TPC-B's short transactions (the pgbench recipe) but a
reporting load on the same kind of data. Rounds of full-table aggregates (sequential scans), an
index build and drop, a sort larger than work_mem (spilled to temporary files), a bulk update
of a key range and its VACUUM, and a batch of random point look-ups by the primary key.
"""
import os

from hbl.trace.recipes.base import Step
from hbl.trace.recipes.pgbench import Pgbench

ROUND = """SET work_mem = '4MB';
SET max_parallel_workers_per_gather = 0;
SELECT bid, count(*), sum(abalance), avg(length(filler)) FROM pgbench_accounts GROUP BY bid;
CREATE INDEX acc_abalance ON pgbench_accounts (abalance, bid);
SELECT aid, abalance FROM pgbench_accounts ORDER BY filler DESC, abalance LIMIT 20;
DROP INDEX acc_abalance;
UPDATE pgbench_accounts SET abalance = abalance + 1 WHERE aid BETWEEN {lo} AND {lo} + 200000;
VACUUM pgbench_accounts;
SELECT count(*), sum(a.abalance) FROM pgbench_accounts a
    JOIN (SELECT 1 + (random() * {rows})::int AS aid FROM generate_series(1, 30000)) r USING (aid);
SELECT t.tid, count(*) FROM pgbench_history h JOIN pgbench_tellers t USING (tid) GROUP BY t.tid;
INSERT INTO pgbench_history (tid, bid, aid, delta, mtime)
    SELECT 1 + aid % 1000, 1 + aid % 100, aid, 1, now() FROM pgbench_accounts WHERE aid % 97 = {k};
"""


class PgAnalytics(Pgbench):
    name, application, package = "pg-analytics", "PostgreSQL", "postgresql"
    runs = ("PostgreSQL reporting rounds on pgbench's data at scale 100 (about 1.5 GiB), shared_buffers 64 MiB: "
            "full-table aggregates, an index build and drop, a sort spilling past a 4 MiB work_mem, a bulk update "
            "of 200,000 rows and VACUUM, 30,000 random primary-key look-ups")
    expected = "1 M requests in about 12 minutes of capture here, after about 3 minutes of loading"
    cache_bound = "memory cgroup of 256 MiB around the server (shared buffers included): data about 6x the cache"
    memory_mib = 256
    fs_gib = 10
    binaries = Pgbench.binaries + (("/usr/lib/postgresql/*/bin/psql", "postgresql-client"),)
    SCALE = 100
    ROUNDS = 200

    def steps(self, sc):
        import random
        rnd = random.Random(1)
        rows = self.SCALE * 100_000
        script = "".join(ROUND.format(lo=rnd.randrange(rows - 200_000), rows=rows - 1, k=rnd.randrange(97))
                         for _ in range(self.ROUNDS))
        path = sc.write_tmp("rounds.sql", script)
        return [Step("rounds", [self._bin("psql"), "-h", os.path.join(sc.mnt, "pgsock"), "-U", "postgres", "-q",
                                "-v", "ON_ERROR_STOP=1", "-o", "/dev/null", "-f", path, "postgres"], 1.0)]
