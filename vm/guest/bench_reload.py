"""What a batch's reload costs the guest kernel, whole against small (inside the VM):

    hbl vm run -- python3 /hbl/vm/guest/bench_reload.py [TARGETS [REPEATS]]

Two scratch dm devices, LIVE and DRAINED, over the NVMe and the HDD: LIVE holds a linear table of
TARGETS targets (default 1518, the live bench's fragmented mapping).  Measured REPEATS times
(default 15), as the controller's thread CPU (user + kernel, time.thread_time) and the wall
time of a load and resume each:
  old reload   DRAINED loaded with the whole table (what a batch's reload does)
  new reload   DRAINED loaded with a small table: 8 extents on the members, the rest onto LIVE
               at the same sector (17 targets); tried for issue 29 and reverted by the rule of
               results/live/ctlcpu.txt, kept here to measure it apart
  old prepare  DRAINED loaded whole, from the whole table (the next batch's prepare)
  new prepare  DRAINED loaded whole, from the small table (the prepare that would follow it)
Prints the medians.  Writes no block device: the scratch devices are created, loaded and
removed, never opened for I/O.
"""
import sys
import time

sys.path.insert(0, "/hbl")
sys.path.insert(0, "/hbl/vm/guest")
import numpy as np  # noqa: E402
from bench_table_load import fragmented  # noqa: E402
from dmsetup import Linear, LinearRuns, Table  # noqa: E402

LIVE, DRAINED = "hbl-reload-bench-live", "hbl-reload-bench-drained"
EXT = 2048           # sectors in a 1 MiB extent


def main(argv):
    n, repeats, ctl, numbers, dev, off, rng = fragmented(argv)
    whole = ctl.prepare(LinearRuns(np.full(n, EXT), dev, off, numbers).validate())
    for name in (DRAINED, LIVE):
        if name in ctl.list():
            ctl.remove(name)
    live_dev = ctl.create(LIVE)
    ctl.load(LIVE, whole)
    ctl.resume(LIVE)
    ctl.create(DRAINED)
    moving = np.sort(rng.choice(n, 8, replace=False))
    targets, at = [], 0
    for e in moving.tolist():
        if e > at:
            targets.append(Linear((e - at) * EXT, "%d:%d" % live_dev, at * EXT))
        targets.append(Linear(EXT, numbers[int(dev[e])], int(off[e])))
        at = e + 1
    if at < n:
        targets.append(Linear((n - at) * EXT, "%d:%d" % live_dev, at * EXT))
    small = ctl.prepare(Table(targets).validate())

    def one(table):
        c0, w0 = time.thread_time(), time.perf_counter()
        ctl.load(DRAINED, table)
        ctl.resume(DRAINED)
        return time.thread_time() - c0, time.perf_counter() - w0

    try:
        one(whole)
        out = {k: [] for k in ("old reload", "new reload", "old prepare", "new prepare")}
        for _ in range(repeats):
            out["old reload"].append(one(whole))        # from the whole table
            out["old prepare"].append(one(whole))       # from the whole table again
            out["new reload"].append(one(small))        # from the whole table
            out["new prepare"].append(one(whole))       # from the small table
        for k, v in out.items():
            cpu, wall = np.median(np.array(v) * 1e3, 0)
            print("%-12s load + resume: thread CPU %6.2f ms, wall %6.2f ms (median of %d; %d targets, %s)" % (
                k, cpu, wall, repeats, len(targets) if k == "new reload" else n,
                "the drained device held the small table before" if k == "new prepare" else "it held the whole one"))
    finally:
        for name in (DRAINED, LIVE):
            ctl.remove(name)


if __name__ == "__main__":
    main(sys.argv[1:])
