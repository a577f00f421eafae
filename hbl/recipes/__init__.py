"""The workload recipes, one file each; RECIPES is their table, in `hbl workloads list` order."""
from hbl.recipes.beanstalkd_queue import BeanstalkdQueue
from hbl.recipes.build_linux import LinuxBuild
from hbl.recipes.file_server import FileServer
from hbl.recipes.fio_zipf import FioZipf
from hbl.recipes.git_checkout import GitCheckout
from hbl.recipes.nginx_static import NginxStatic
from hbl.recipes.pg_analytics import PgAnalytics
from hbl.recipes.pgbench import Pgbench
from hbl.recipes.redis_aof import RedisAof
from hbl.recipes.rocksdb import RocksdbBench
from hbl.recipes.sqlite import SqliteMix
from hbl.recipes.squid_cache import SquidCache
from hbl.recipes.sysbench_mariadb import SysbenchMariadb

RECIPES = {r.name: r for r in (Pgbench(), SysbenchMariadb(), RocksdbBench(), SqliteMix(), LinuxBuild(), FioZipf(),
                               RedisAof(), NginxStatic(), FileServer(), PgAnalytics(), GitCheckout(),
                               SquidCache(), BeanstalkdQueue())}
