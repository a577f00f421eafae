"""The pgbench recipe (`hbl workloads capture pgbench`)."""
import os
import subprocess

from hbl.trace.recipes.base import Recipe, Step


class Pgbench(Recipe):
    name, application, package = "pgbench", "PostgreSQL", "postgresql"
    runs = ("pgbench TPC-B-like, scale 60 (about 900 MiB), 4 clients, 2 threads, "
            "shared_buffers 64 MiB, fsync on")
    expected = "1 M requests in about 10 minutes of capture here, after 1-2 minutes of loading"
    cache_bound = "memory cgroup of 256 MiB around the server (shared buffers included): data about 4x the cache"
    memory_mib = 256
    binaries = (("/usr/lib/postgresql/*/bin/postgres", "postgresql"),
                ("/usr/lib/postgresql/*/bin/pgbench", "postgresql"))
    SCALE = 60

    def version(self):    # the metapackage's version says little: ask the server
        try:
            return subprocess.run([self._bin("postgres"), "--version"], capture_output=True, text=True
                                  ).stdout.split()[2]
        except (OSError, KeyError, IndexError):
            return None

    def _bin(self, prog):
        return os.path.join(os.path.dirname(self.tool("/usr/lib/postgresql/*/bin/postgres")), prog)

    def _client(self, *args):
        return [self._bin("pgbench"), "-h", "{sock}", "-U", "postgres"] + list(args) + ["postgres"]

    def prepare(self, sc):
        data, sock = sc.mkdir("pg", "postgres"), sc.mkdir("pgsock", "postgres")
        sc.run([self._bin("initdb"), "-D", data, "-U", "postgres", "--auth=trust", "--no-sync"], user="postgres")
        sc.service("postgres", [self._bin("postgres"), "-D", data, "-k", sock, "-c", "listen_addresses=",
                                "-c", "shared_buffers=64MB", "-c", "max_wal_size=1GB"], user="postgres",
                   ready=[self._bin("pg_isready"), "-h", sock, "-U", "postgres"])
        sc.run([a.format(sock=sock) for a in self._client("-i", "-s", str(self.SCALE), "-I", "dtGvp", "-q")])

    def steps(self, sc):
        return [Step("tpcb", [a.format(sock=os.path.join(sc.mnt, "pgsock"))
                              for a in self._client("-c", "4", "-j", "2", "-T", "86400")], 1.0)]

    def stop(self, sc):
        sc.run([self._bin("pg_ctl"), "-D", os.path.join(sc.mnt, "pg"), "stop", "-m", "fast"], user="postgres",
               check=False)
