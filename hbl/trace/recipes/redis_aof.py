"""The redis-aof recipe (`hbl workloads capture redis-aof`): an append-only log with reloads.

Redis keeps its data in memory and logs every write to its append-only file (AOF), fsynced on
every write: the disk sees a stream of small appends and journal commits. The log is rewritten
when it doubles (a background rewrite: one large sequential write), and the server is stopped
and started again between rounds, with the page cache dropped, so each start reads the whole
log back (long sequential reads of the tail the rewrite left).
"""
from hbl.trace.recipes.base import Recipe

#: one round: writes of four kinds over 2 M keys, a few reads, then a restart from the log
ROUND = r"""set -u
S={sock}
start() {{
    redis-server --port 0 --unixsocket "$S" --dir {dir} --appendonly yes --appendfsync always \
        --save '' --auto-aof-rewrite-percentage 100 --auto-aof-rewrite-min-size 32mb \
        --maxmemory 0 --daemonize no --logfile {dir}/redis.log &
    # PING answers LOADING (exit status 0) while the log is read back: wait for PONG
    until [ "$(redis-cli -s "$S" ping 2>/dev/null)" = PONG ]; do sleep 0.2; done
}}
start
while :; do
    redis-benchmark -s "$S" -q -c 16 -r 2000000 -d 96 -n 300000 -t set,incr,lpush,hset
    redis-benchmark -s "$S" -q -c 8 -r 2000000 -n 50000 -t get,lrange_100
    redis-cli -s "$S" shutdown nosave >/dev/null 2>&1
    wait
    echo 1 > /proc/sys/vm/drop_caches
    start
done
"""


class RedisAof(Recipe):
    name, application, package = "redis-aof", "Redis", "redis-server"
    runs = ("redis-server, append-only file fsynced on every write (appendfsync always), rewritten when it doubles; "
            "redis-benchmark rounds of 300,000 writes (SET, INCR, LPUSH, HSET over 2 M keys, 96 B values, 16 "
            "clients) and 50,000 reads, then a restart from the log with the page cache dropped")
    expected = "1 M requests in about 10 minutes here (no loading)"
    cache_bound = ("the data lives in Redis's memory; the log and its reload go through a 512 MiB memory cgroup, "
                   "dropped before each reload")
    memory_mib = 512
    fs_gib = 8
    binaries = (("/usr/bin/redis-server", "redis-server"), ("/usr/bin/redis-benchmark", "redis-tools"),
                ("/usr/bin/redis-cli", "redis-tools"))

    def steps(self, sc):
        data = sc.path("redis")
        sc.mkdir("redis", "root")
        return [self.shell(sc, "rounds", ROUND.format(sock=sc.path("redis", "redis.sock"), dir=data), 1.0)]
