"""The sysbench-mariadb recipe (`hbl workloads capture sysbench-mariadb`)."""
import os

from hbl.trace.recipes.base import Recipe, Step


class SysbenchMariadb(Recipe):
    name, application, package = "sysbench-mariadb", "MariaDB", "mariadb-server"
    runs = "sysbench oltp_read_write, 8 tables x 400,000 rows (about 800 MiB), 4 threads, InnoDB buffer pool 64 MiB"
    expected = "1 M requests in about 10 minutes of capture here, after about 2 minutes of loading"
    cache_bound = "InnoDB O_DIRECT (innodb_flush_method) with a 64 MiB buffer pool, and a 256 MiB memory cgroup"
    binaries = (("/usr/sbin/mariadbd", "mariadb-server"), ("/usr/bin/mariadb-install-db", "mariadb-server"),
                ("/usr/bin/mariadb-admin", "mariadb-client"), ("/usr/bin/sysbench", "sysbench"))

    def _sysbench(self, sc, *args):
        return ["/usr/bin/sysbench", "oltp_read_write", "--db-driver=mysql", "--mysql-socket=" + sc.path("mysqlsock", "mysqld.sock"),
                "--mysql-user=root", "--mysql-db=sbtest", "--tables=8", "--table-size=400000"] + list(args)

    def prepare(self, sc):
        data = sc.mkdir("mysql", "mysql")
        sock = os.path.join(sc.mkdir("mysqlsock", "mysql"), "mysqld.sock")
        sc.run(["/usr/bin/mariadb-install-db", "--no-defaults", "--datadir=" + data, "--user=mysql",
                "--skip-test-db", "--auth-root-authentication-method=socket"])
        sc.service("mariadbd", ["/usr/sbin/mariadbd", "--no-defaults", "--datadir=" + data, "--socket=" + sock,
                                "--pid-file=" + sc.path("mysqlsock", "mariadbd.pid"), "--skip-networking",
                                "--user=mysql", "--innodb-buffer-pool-size=64M", "--innodb-flush-method=O_DIRECT",
                                "--innodb-log-file-size=128M"],
                   ready=["/usr/bin/mariadb-admin", "--no-defaults", "--socket=" + sock, "ping"])
        sc.run(["/usr/bin/mariadb", "--no-defaults", "--socket=" + sock, "-e", "CREATE DATABASE sbtest"])
        sc.run(self._sysbench(sc, "--threads=2", "prepare"))

    def steps(self, sc):
        return [Step("oltp_read_write", self._sysbench(sc, "--threads=4", "--time=86400", "--report-interval=0",
                                                       "run"), 1.0)]

    def stop(self, sc):
        sc.run(["/usr/bin/mariadb-admin", "--no-defaults", "--socket=" + sc.path("mysqlsock", "mysqld.sock"), "shutdown"],
               check=False)
