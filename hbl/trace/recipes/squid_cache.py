"""The squid-cache recipe (`hbl workloads capture squid-cache`): a caching proxy's disk cache.

A forward proxy in front of an origin web server (nginx): wrk asks squid for objects of web-like sizes
by a Zipf popularity over many more bytes than squid's disk cache holds. A hit is read back
from the cache directory (one file per object, aufs), a miss is fetched from the origin and
written there, and squid removes the least recently used objects to stay within the cache's
size: reads, appends of new files and unlinks together, the write-and-read mix of a CDN edge or
a web proxy. The origin serves one file per size class, from outside the captured file
system, under a URL of its own for each object.
"""
import os
import pwd
import random

from hbl.trace.recipes.base import Recipe, Step
from hbl.trace.recipes.nginx_static import NGINX_CONF, free_port

OBJECTS = 100_000
ZIPF_S = 0.6
SEQUENCE = 400_000       # requests wrk cycles through (a fixed sample of the popularity)
CLASSES = 32             # the origin's object sizes: one file per size class
CACHE_MIB = 600          # squid's cache directory (the objects asked for are about 2x it)

SQUID_CONF = """http_port 127.0.0.1:{port}
http_access allow localhost
http_access deny all
cache_effective_user proxy
pid_filename {tmp}/squid/squid.pid
cache_log {tmp}/squid/cache.log
access_log none
cache_store_log none
logfile_rotate 0
cache_mem 8 MB
maximum_object_size_in_memory 64 KB
maximum_object_size 16 MB
cache_dir aufs {cache} {cache_mib} 16 256
cache_swap_low 90
cache_swap_high 95
shutdown_lifetime 1 seconds
"""

#: wrk through the proxy: absolute URLs of the origin, a fixed sample of the popularity in turn
WRK_LUA = """local origin, paths = "http://127.0.0.1:%d/c/", {}
for line in io.lines("%s") do paths[#paths + 1] = line end
local i = math.random(#paths)
request = function()
    i = i %% #paths + 1
    return wrk.format("GET", origin .. paths[i])
end
"""


def sizes(n, rnd):
    """Web-object sizes of a cache's traffic: lognormal around 8 KiB, 512 B to 1 MiB."""
    return [max(512, min(1 << 20, int(rnd.lognormvariate(9.0, 1.0)))) for _ in range(n)]


def size_classes():
    """CLASSES sizes spaced evenly on a log scale from 512 B to 1 MiB."""
    return [int(512 * (2048 ** (k / (CLASSES - 1)))) for k in range(CLASSES)]


class SquidCache(Recipe):
    name, application, package = "squid-cache", "Squid", "squid"
    runs = ("squid (aufs cache directory of %d MiB, 8 MiB of memory cache) as the proxy between wrk (2 threads, "
            "32 connections) and an nginx origin; %s objects of web sizes (lognormal around 8 KiB, 512 B to 1 MiB; "
            "about 1.3 GiB) asked for by Zipf(%.1f) popularity: hits read from the cache, misses written to it, the "
            "least recently used removed" % (CACHE_MIB, format(OBJECTS, ","), ZIPF_S))
    expected = ("1 M requests in about 27 minutes here at load 7-11 (squid short of CPU; near the 30-minute default: "
                "--duration 60m), after a few seconds of set-up")
    cache_bound = ("memory cgroup of 256 MiB around squid, the origin and wrk, squid's memory cache 8 MiB: the disk "
                   "cache is 2.3x the page cache, the objects asked for 2.2x the disk cache")
    memory_mib = 256
    fs_gib = 4
    binaries = (("/usr/sbin/squid", "squid"), ("/usr/sbin/nginx", "nginx-light"), ("/usr/bin/wrk", "wrk"))

    def prepare(self, sc):
        rnd = random.Random(1)
        classes = size_classes()
        root = os.path.join(sc.tmp, "origin")    # not on the captured file system
        os.makedirs(os.path.join(root, "c"))
        chunk = os.urandom(1 << 20)
        for k, size in enumerate(classes):
            with open(os.path.join(root, "c", str(k)), "wb") as f:
                for off in range(0, size, len(chunk)):
                    f.write(chunk[:min(len(chunk), size - off)])
        os.system("chmod -R a+rX %s" % root)
        for name in os.listdir(os.path.join(root, "c")):    # old files: squid's heuristic keeps them fresh
            os.utime(os.path.join(root, "c", name), (1.5e9, 1.5e9))
        # each object a size class near a web-object size; popularity independent of size
        cls = [min(range(CLASSES), key=lambda k: abs(classes[k] - s)) for s in sizes(OBJECTS, rnd)]
        weights = [1.0 / (k + 1) ** ZIPF_S for k in range(OBJECTS)]
        ids = list(range(OBJECTS))
        rnd.shuffle(ids)
        seq = rnd.choices(ids, weights, k=SEQUENCE)
        # an object is its size class's file with its number as the query: its own URL, so its own entry
        self.paths = sc.write_tmp("wrk-paths.txt", "".join("%d?%d\n" % (cls[i], i) for i in seq))
        self.origin = origin = free_port()
        self.origin_conf = sc.write_tmp("origin.conf", NGINX_CONF.format(tmp=sc.tmp, port=origin, root=root))
        sc.service("origin", ["/usr/sbin/nginx", "-c", self.origin_conf, "-p", sc.tmp],
                   ready=["/usr/bin/wrk", "-t1", "-c1", "-d1s", "http://127.0.0.1:%d/c/0" % origin])
        proxy = pwd.getpwnam("proxy")
        logs = os.path.join(sc.tmp, "squid")
        os.mkdir(logs)
        os.chown(logs, proxy.pw_uid, proxy.pw_gid)
        self.port = free_port()
        self.conf = sc.write_tmp("squid.conf", SQUID_CONF.format(port=self.port, tmp=sc.tmp, cache_mib=CACHE_MIB,
                                                                 cache=sc.mkdir("squid-cache", "proxy")))
        sc.run(["/usr/sbin/squid", "-f", self.conf, "-z", "-N"])     # the cache directory's tree
        sc.service("squid", ["/usr/sbin/squid", "-f", self.conf, "-N"],
                   ready=["/usr/bin/wrk", "-t1", "-c1", "-d1s", "http://127.0.0.1:%d/" % self.port])

    def steps(self, sc):
        lua = sc.write_tmp("wrk.lua", WRK_LUA % (self.origin, self.paths))
        return [Step("wrk", ["/usr/bin/wrk", "-t2", "-c32", "-d86400s", "-s", lua,
                             "http://127.0.0.1:%d" % self.port], 1.0)]

    def stop(self, sc):
        sc.run(["/usr/sbin/squid", "-f", self.conf, "-k", "shutdown"], check=False)
        sc.run(["/usr/sbin/nginx", "-c", self.origin_conf, "-p", sc.tmp, "-s", "quit"], check=False)
