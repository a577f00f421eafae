"""Where a live controller's CPU goes (inside the VM): the live bench's devices and fio job
(bench_live.py) for one policy, with py-spy sampling the controller, every thread and the
native frames, through the measured phase.

    HBL_PROFILE_POLICY=harmonia python3 /hbl/vm/guest/profile_live.py

HBL_PYSPY_ARGS: py-spy's sampling options (default --native).  py-spy is taken from $HBL_PYSPY, else /hbl/.venv/bin/py-spy (`pip install py-spy` into the
checkout's venv on the host: the guest has no network).  Writes /out/profile-POLICY.txt (py-spy's
raw format: one folded stack and its sample count a line) and prints, per thread, the share of
the samples and the frames most often on top or on the stack.
"""
import collections
import json
import os
import subprocess
import sys
import time

sys.path.insert(0, "/hbl/vm/guest")
import bench_live  # noqa: E402

POLICY = os.environ.get("HBL_PROFILE_POLICY", "harmonia")
PYSPY = os.environ.get("HBL_PYSPY", "/hbl/.venv/bin/py-spy")
RATE = int(os.environ.get("HBL_PROFILE_RATE", "25"))
# py-spy's sampling mode: --native pauses the process at each sample (its C frames too; the controller then
# does less, so its CPU is not the bench's); "--nonblocking" reads the Python frames without pausing it
SPY_ARGS = os.environ.get("HBL_PYSPY_ARGS", "--native").split()


def thread_cpu(pid, part=(11, 12)):
    """{tid: CPU seconds} of every thread of process pid (part: the stat fields summed, after
    the command: 11 utime, 12 stime)."""
    tick = os.sysconf("SC_CLK_TCK")
    out = {}
    for tid in os.listdir("/proc/%d/task" % pid):
        try:
            f = open("/proc/%d/task/%s/stat" % (pid, tid)).read().rpartition(")")[2].split()
        except OSError:
            continue
        out[int(tid)] = sum(int(f[i]) for i in part) / tick
    return out


def summarize(path, top=25):
    """Per thread: samples, and the frames most often innermost (self) and anywhere (inclusive)."""
    threads = collections.Counter()
    own = collections.defaultdict(collections.Counter)
    incl = collections.defaultdict(collections.Counter)
    for line in open(path):
        stack, _, n = line.rstrip("\n").rpartition(" ")
        if not stack:
            continue
        frames = stack.split(";")
        th, frames, n = frames[0], frames[1:], int(n)
        threads[th] += n
        if frames:
            own[th][frames[-1]] += n
        for f in set(frames):
            incl[th][f] += n
    total = sum(threads.values())
    for th, n in threads.most_common():
        print("%s: %d samples (%.0f%%)" % (th, n, 100.0 * n / total))
        for name, c in (("self", own[th]), ("inclusive", incl[th])):
            print("  %s:" % name)
            for f, k in c.most_common(top):
                print("    %5.1f%%  %s" % (100.0 * k / n, f))


def main():
    bench_live.wipe()
    env = dict(os.environ, HBL_STATE_DIR=bench_live.STATE)
    subprocess.run(bench_live.HBL + ["up", "hb", "--dev", bench_live.FAST, "--dev", bench_live.SLOW, "--policy",
                                     POLICY] + bench_live.UP_ARGS, check=True, env=env)
    out = "/out/profile-%s.txt" % POLICY
    status = lambda: json.loads(subprocess.run(bench_live.HBL + ["status", "hb", "--json"], capture_output=True,
                                               text=True, env=env, check=True).stdout)
    res = {}
    try:
        pid = status()["pid"]
        res["warm"] = bench_live.fio("/dev/mapper/hb", 600 * bench_live.MIB, bench_live.WARM, "prof-warm")
        # no --idle: a thread is sampled only while it runs, so the samples share out its CPU time
        spy = subprocess.Popen([PYSPY, "record", "--pid", str(pid), "--threads"] + SPY_ARGS +
                               ["--rate", str(RATE), "--format", "raw", "--output", out,
                                "--duration", str(bench_live.MEASURE)])
        t0 = time.time()
        cpu0, sys0 = thread_cpu(pid), thread_cpu(pid, (12,))
        res["measured"] = bench_live.fio("/dev/mapper/hb", 600 * bench_live.MIB, bench_live.MEASURE, "prof")
        cpu1, sys1, wall = thread_cpu(pid), thread_cpu(pid, (12,)), time.time() - t0
        spy.wait(timeout=bench_live.MEASURE + 120)
        st = status()
        print("%s: IOPS %.0f; controller CPU %.0f%% (its thread %.0f%%) over %.0f s; py-spy ran %.0f s" % (
            POLICY, res["measured"]["iops"], 100 * st["controller_cpu"], 100 * st["controller_cpu_main"],
            st["uptime_s"], time.time() - t0))
        print("%s: CPU of each thread over the measured phase (%.0f s; the main one is tid %d, the rest as py-spy "
              "names them below, the one it does not name the agents' training thread): %s" % (
                  POLICY, wall, pid, ", ".join("%d %.0f%%" % (t, 100 * (c - cpu0.get(t, 0)) / wall)
                                              for t, c in sorted(cpu1.items()))))
        print("%s: of which in the kernel (stime): %s" % (POLICY, ", ".join(
            "%d %.0f%%" % (t, 100 * (c - sys0.get(t, 0)) / wall) for t, c in sorted(sys1.items()))))
    finally:
        subprocess.run(bench_live.HBL + ["down", "hb"], env=env)
    summarize(out)


if __name__ == "__main__":
    main()
