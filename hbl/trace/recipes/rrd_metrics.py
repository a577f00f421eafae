"""The rrd-metrics recipe (`hbl workloads capture rrd-metrics`): a monitoring server's round-robin files.

RRDtool's round-robin databases are the time-series store of collectd, Munin and Cacti: one
fixed-size file a metric, each update a small write in place at the row the time has reached
(and in the header, which keeps the last value and the consolidation state). A collector updates
every metric of 200 hosts (100 each, 20,000 files) once a sweep, in the same order each time:
the disk sees a cycle over the files' header and current-row pages that is larger than the
page cache, written back as it goes, the regime where recency alone keeps nothing of the cycle.
A dashboard process reads hosts' recent history (a fetch of the last 8 hours, 12 pages a
metric, or of the last week from the coarse archive), hosts chosen by a power law, so a few
hosts' history is read again and again. Time in the files runs ahead of the clock (10 s a
sweep), so the archives fill and the rows advance as they would over days.
"""
from hbl.trace.recipes.base import Recipe

PY = "/usr/bin/python3"
HOSTS, METRICS = 200, 100
T0 = 1_700_000_000

#: the files created (not captured): 2 data sources, 10 s step, 8 hours at 10 s, a week of 2-minute
#: averages and maxima (79,552 bytes a file)
LOAD = r'''import os, sys
import rrdtool
root, hosts, metrics, t0 = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
for h in range(hosts):
    os.mkdir(os.path.join(root, "host%03d" % h))
    for m in range(metrics):
        rrdtool.create(os.path.join(root, "host%03d" % h, "m%03d.rrd" % m), "--start", str(t0), "--step", "10",
                       "DS:value:GAUGE:30:U:U", "DS:count:COUNTER:30:U:U", "RRA:AVERAGE:0.5:1:2880",
                       "RRA:AVERAGE:0.5:12:1000", "RRA:MAX:0.5:12:1000")
print("created", hosts * metrics, "files")
'''

#: argv: root, role (collector or dashboard), hosts, metrics, start time, random seed, sweeps or views
#: (-1: until stopped)
MIX = r'''import fcntl, os, random, sys, time
import rrdtool
root, role, hosts, metrics, t0, seed = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5]), int(sys.argv[6])
rounds = int(sys.argv[7]) if len(sys.argv) > 7 else -1
rnd = random.Random(seed)


def path(h, m):
    return os.path.join(root, "host%03d" % h, "m%03d.rrd" % m)


def locked(call, *args):
    """call(*args), again after a millisecond while the dashboard holds the file's lock (RRDtool's update
    fails at once rather than wait)."""
    for _ in range(1000):
        try:
            return call(*args)
        except rrdtool.OperationalError as exc:
            if "lock" not in str(exc):
                raise
            time.sleep(0.001)
    return call(*args)


def shared(call, path, *args):
    """call(path, *args) with a read lock on the file taken first, waiting for an update to end: RRDtool's
    own lock in fetch and last fails at once, and its fetch then crashes (python3-rrdtool 1.7.2); the
    lock taken here is this process's own, so theirs succeeds."""
    with open(path, "rb") as f:
        fcntl.lockf(f, fcntl.LOCK_SH)
        return call(path, *args)


if role == "collector":         # every metric once a sweep, in the same order, time 10 s ahead each sweep
    t, count = t0, 0
    while rounds:
        rounds -= 1
        t += 10
        count += 1000
        for h in range(hosts):
            for m in range(metrics):
                v = 50 + 40 * rnd.random()
                locked(rrdtool.update, path(h, m), "%d:%.3f:%d" % (t, v, count + h * m))
else:                           # a host's page of graphs: its metrics' recent history, hosts by a power law
    while rounds:
        rounds -= 1
        h = min(int(hosts * rnd.random() ** 3), hosts - 1)
        end = shared(rrdtool.last, path(h, 0))
        week = rnd.random() < 0.2
        for m in range(metrics):
            if week:
                shared(rrdtool.fetch, path(h, m), "AVERAGE", "-r", "120", "-s", str(end - 7 * 86400), "-e", str(end))
            else:
                shared(rrdtool.fetch, path(h, m), "AVERAGE", "-s", str(end - 28800), "-e", str(end))
        time.sleep(0.5)
'''

#: the step: the collector and the dashboard until the capture stops them (Recipe.together)
ROUNDS = r"""{py} {mix} {root} collector {hosts} {metrics} {t0} 1 &
{py} {mix} {root} dashboard {hosts} {metrics} {t0} 2 &
"""


class RrdMetrics(Recipe):
    name, application, package = "rrd-metrics", "RRDtool (python3-rrdtool)", "librrd8"
    runs = ("RRDtool with 20,000 round-robin files (200 hosts x 100 metrics, 2 data sources, 10 s step; "
            "8 hours at 10 s and a week of 2-minute averages and maxima, 78 KiB a file, 1.5 GiB): a collector "
            "updating every file once a sweep in the same order (time 10 s ahead a sweep), and a dashboard "
            "fetching one host's 100 metrics (the last 8 hours, or a week in 1 of 5) by a power law over hosts, "
            "a 0.5 s pause after each")
    expected = "1 M requests in about 6 minutes here (3 k/s at load 8), after about 15 s creating the files"
    cache_bound = ("memory cgroup of 128 MiB around the collector and the dashboard: a sweep's header and "
                   "current-row pages (40,000, 156 MiB) do not fit")
    memory_mib = 128
    fs_gib = 4
    binaries = ((PY, "python3"), ("/usr/lib/python3/dist-packages/rrdtool.cpython-3*.so", "python3-rrdtool"))

    def prepare(self, sc):
        sc.mkdir("rrd", "root")
        sc.run([PY, sc.write_tmp("rrd-load.py", LOAD), sc.path("rrd"), str(HOSTS), str(METRICS), str(T0)])
        sc.cold_cache()

    def steps(self, sc):
        mix = sc.write_tmp("rrd-mix.py", MIX)
        script = ROUNDS.format(py=PY, mix=mix, root=sc.path("rrd"), hosts=HOSTS, metrics=METRICS, t0=T0)
        return [self.together(sc, "sweeps", script, 1.0)]
