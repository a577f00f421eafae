"""The workload recipes, one file each; RECIPES is their table, in `hbl workloads list` order."""
from hbl.recipes.build_linux import LinuxBuild
from hbl.recipes.fio_zipf import FioZipf
from hbl.recipes.pgbench import Pgbench
from hbl.recipes.rocksdb import RocksdbBench
from hbl.recipes.sqlite import SqliteMix
from hbl.recipes.sysbench_mariadb import SysbenchMariadb

RECIPES = {r.name: r for r in (Pgbench(), SysbenchMariadb(), RocksdbBench(), SqliteMix(), LinuxBuild(), FioZipf())}
