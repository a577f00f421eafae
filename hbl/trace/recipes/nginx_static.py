"""The nginx-static recipe (`hbl workloads capture nginx-static`): a static web server's reads.

A tree of files of web-like sizes (most small, a few large: the heavy tail of object sizes) is
served by nginx to wrk, which asks for them by a Zipf popularity over the files, 32 connections
at a time. The page cache is bounded well below the tree, so the server's reads reach the disk:
the large-object read mix of a static web or object server, with readahead on the large files.
"""
import os
import random
import socket

from hbl.trace.recipes.base import Recipe, Step

FILES = 30_000
ZIPF_S = 0.9
SEQUENCE = 300_000       # requests wrk cycles through (a fixed sample of the popularity)

NGINX_CONF = """daemon off;
worker_processes 2;
pid {tmp}/nginx.pid;
error_log {tmp}/nginx-error.log;
events {{ worker_connections 256; }}
http {{
    access_log off;
    sendfile on;
    open_file_cache off;
    client_body_temp_path {tmp}/nginx-body;
    proxy_temp_path {tmp}/nginx-proxy;
    fastcgi_temp_path {tmp}/nginx-fastcgi;
    uwsgi_temp_path {tmp}/nginx-uwsgi;
    scgi_temp_path {tmp}/nginx-scgi;
    server {{
        listen 127.0.0.1:{port};
        root {root};
    }}
}}
"""

WRK_LUA = """local paths = {}
for line in io.lines("%s") do paths[#paths + 1] = line end
local i = math.random(#paths)
request = function()
    i = i %% #paths + 1
    return wrk.format("GET", paths[i])
end
"""


def sizes(n, rnd):
    """Web-object sizes: lognormal around 16 KiB, one file in 200 from 1 to 8 MiB."""
    out = []
    for _ in range(n):
        if rnd.random() < 0.005:
            out.append(rnd.randrange(1 << 20, 8 << 20))
        else:
            out.append(max(512, min(1 << 20, int(rnd.lognormvariate(9.7, 1.2)))))
    return out


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class NginxStatic(Recipe):
    name, application, package = "nginx-static", "nginx", "nginx-light"
    runs = ("nginx (2 workers, sendfile) serving 30,000 files (lognormal sizes around 16 KiB, 0.5% of 1-8 MiB; "
            "about 1.6 GiB) to wrk (2 threads, 32 connections) asking by Zipf(0.9) popularity")
    expected = "1 M requests in about 10 minutes here, after about 1 minute of writing the files"
    cache_bound = "memory cgroup of 256 MiB around nginx and wrk: the tree is about 6x the cache"
    memory_mib = 256
    fs_gib = 4
    binaries = (("/usr/sbin/nginx", "nginx-light"), ("/usr/bin/wrk", "wrk"))

    def prepare(self, sc):
        rnd = random.Random(1)
        root = sc.path("www")
        os.mkdir(root)
        names = []
        chunk = os.urandom(1 << 20)
        for i, size in enumerate(sizes(FILES, rnd)):
            d = os.path.join(root, "%02x" % (i % 256))
            if i < 256:
                os.mkdir(d)
            name = "%02x/%06d.bin" % (i % 256, i)
            with open(os.path.join(root, name), "wb") as f:
                for off in range(0, size, len(chunk)):
                    f.write(chunk[:min(len(chunk), size - off)])
            names.append(name)
        os.system("chmod -R a+rX %s" % root)
        rnd.shuffle(names)     # popularity independent of size and of the layout on disk
        weights = [1.0 / (k + 1) ** ZIPF_S for k in range(len(names))]
        seq = rnd.choices(names, weights, k=SEQUENCE)
        self.paths = sc.write_tmp("wrk-paths.txt", "".join("/%s\n" % p for p in seq))
        self.port = free_port()
        conf = sc.write_tmp("nginx.conf", NGINX_CONF.format(tmp=sc.tmp, port=self.port, root=root))
        sc.cold_cache()
        self.conf = conf
        sc.service("nginx", ["/usr/sbin/nginx", "-c", conf, "-p", sc.tmp],
                   ready=["/usr/bin/wrk", "-t1", "-c1", "-d1s", "http://127.0.0.1:%d/00/000000.bin" % self.port])

    def steps(self, sc):
        lua = sc.write_tmp("wrk.lua", WRK_LUA % self.paths)
        return [Step("wrk", ["/usr/bin/wrk", "-t2", "-c32", "-d86400s", "-s", lua,
                             "http://127.0.0.1:%d" % self.port], 1.0)]

    def stop(self, sc):
        sc.run(["/usr/sbin/nginx", "-c", self.conf, "-p", sc.tmp, "-s", "quit"], check=False)
