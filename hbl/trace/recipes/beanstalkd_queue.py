"""The beanstalkd recipe (`hbl workloads capture beanstalkd`): a durable message queue's binlog.

beanstalkd keeps its jobs in memory and every change to them (a job put, reserved, deleted) in
a binlog, a chain of preallocated files, fsynced after every write: a stream of small appends and
journal commits. A binlog file is unlinked once no live job is left in it. Producers put jobs of
message sizes on four tubes while consumers reserve and delete half as many, so a backlog builds
up; then the server is stopped and started again with the page cache dropped, and reads the
binlog back (the tail of the log that still holds live jobs); then the consumers drain the
backlog while producers go on more slowly. Rounds until the capture ends.
"""
import sys

from hbl.trace.recipes.base import Recipe, Step
from hbl.trace.recipes.nginx_static import free_port

#: the step: a client of beanstalkd's text protocol (standard library only) that runs the rounds
CLIENT = r'''import os, random, signal, socket, subprocess, sys, threading, time
PORT, DIR, BIN = int(sys.argv[1]), sys.argv[2], sys.argv[3]
FILL, PRODUCERS, CONSUMERS = 40000, 8, 4


class Conn:
    def __init__(self):
        self.s = socket.create_connection(("127.0.0.1", PORT))
        self.f = self.s.makefile("rb")

    def cmd(self, line, body=None):
        data = line.encode() + b"\r\n" + (body + b"\r\n" if body is not None else b"")
        self.s.sendall(data)
        reply = self.f.readline().split()
        if reply and reply[0] == b"RESERVED":
            self.f.read(int(reply[2]) + 2)
        return reply


def start():
    p = subprocess.Popen([BIN, "-l", "127.0.0.1", "-p", str(PORT), "-b", DIR, "-f", "0", "-s", "4194304",
                          "-z", "65536"])
    while True:
        try:
            Conn().cmd("stats")
            return p
        except OSError:
            if p.poll() is not None:
                sys.exit("beanstalkd exited (status %d)" % p.returncode)
            time.sleep(0.1)


def produce(n, seed):
    rnd, c = random.Random(seed), Conn()
    c.cmd("use t%d" % (seed % 4))
    for _ in range(n):
        size = max(64, min(65000, int(rnd.lognormvariate(6.5, 1.0))))
        c.cmd("put %d 0 60 %d" % (rnd.randrange(1024), size), os.urandom(size))


def consume(n, seed):
    c = Conn()
    for t in range(4):
        c.cmd("watch t%d" % t)
    done = 0
    while n is None or done < n:
        r = c.cmd("reserve-with-timeout 0")
        if r[0] != b"RESERVED":
            return
        c.cmd("delete " + r[1].decode())
        done += 1


def together(*jobs):
    ts = [threading.Thread(target=f, args=a) for f, a in jobs]
    for t in ts:
        t.start()
    for t in ts:
        t.join()


seed = 0
while True:
    p = start()
    # a backlog builds: FILL jobs put, half as many taken
    together(*[(produce, (FILL // PRODUCERS, seed + k)) for k in range(PRODUCERS)],
             *[(consume, (FILL // 2 // CONSUMERS, k)) for k in range(CONSUMERS)])
    p.send_signal(signal.SIGTERM)
    p.wait()
    with open("/proc/sys/vm/drop_caches", "w") as f:
        f.write("1")
    p = start()       # reads the binlog back
    # the backlog drained while a few producers go on
    together(*[(produce, (FILL // 8 // 2, seed + 100 + k)) for k in range(2)],
             *[(consume, (None, k)) for k in range(CONSUMERS)])
    p.send_signal(signal.SIGTERM)
    p.wait()
    seed += 1000
'''


class BeanstalkdQueue(Recipe):
    name, application, package = "beanstalkd", "beanstalkd", "beanstalkd"
    runs = ("beanstalkd with a binlog fsynced after every write (-f 0, 4 MiB binlog files); rounds of 8 producers "
            "putting 40,000 jobs (lognormal sizes around 660 B) on 4 tubes while 4 consumers reserve and delete "
            "20,000, a restart that reads the binlog back with the page cache dropped, then the backlog drained "
            "by 4 consumers while 2 producers put 5,000 more")
    expected = "1 M requests (40% of them cache flushes) in about 14 minutes here at load 9-10 (no loading)"
    cache_bound = ("the jobs live in beanstalkd's memory; the binlog and its reload go through a 256 MiB memory "
                   "cgroup, dropped before each reload")
    memory_mib = 256
    fs_gib = 4
    binaries = (("/usr/bin/beanstalkd", "beanstalkd"),)

    def steps(self, sc):
        client = sc.write_tmp("beanstalkd-client.py", CLIENT)
        return [Step("rounds", [sys.executable, client, str(free_port()), sc.mkdir("binlog", "root"),
                                self.tool("/usr/bin/beanstalkd")], 1.0)]
