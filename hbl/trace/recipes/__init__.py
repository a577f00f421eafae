"""The workload recipes, one file each; RECIPES is their table, in `hbl workloads list` order."""
from hbl.trace.recipes.beanstalkd_queue import BeanstalkdQueue
from hbl.trace.recipes.borg_backup import BorgBackup
from hbl.trace.recipes.build_linux import LinuxBuild
from hbl.trace.recipes.file_server import FileServer
from hbl.trace.recipes.fio_zipf import FioZipf
from hbl.trace.recipes.git_checkout import GitCheckout
from hbl.trace.recipes.kyoto_hash import KyotoHash
from hbl.trace.recipes.lmdb_kv import LmdbKv
from hbl.trace.recipes.maildir_lda import MaildirLda
from hbl.trace.recipes.nginx_static import NginxStatic
from hbl.trace.recipes.pg_analytics import PgAnalytics
from hbl.trace.recipes.pgbench import Pgbench
from hbl.trace.recipes.redis_aof import RedisAof
from hbl.trace.recipes.restic_backup import ResticBackup
from hbl.trace.recipes.rocksdb import RocksdbBench
from hbl.trace.recipes.rrd_metrics import RrdMetrics
from hbl.trace.recipes.sqlite import SqliteMix
from hbl.trace.recipes.squid_cache import SquidCache
from hbl.trace.recipes.sysbench_mariadb import SysbenchMariadb

RECIPES = {r.name: r for r in (Pgbench(), SysbenchMariadb(), RocksdbBench(), SqliteMix(), LinuxBuild(), FioZipf(),
                               RedisAof(), NginxStatic(), FileServer(), PgAnalytics(), GitCheckout(),
                               SquidCache(), BeanstalkdQueue(), LmdbKv(), RrdMetrics(), KyotoHash(),
                               MaildirLda(), ResticBackup(), BorgBackup())}
