"""The live device over members that are dm devices, as the soak sets it up (soak0, a dm-linear
over the NVMe; soak1, one over the HDD-like disk; lru, --interval 0.3, --copy-rate 64M), with
the soak's writer (4 threads) and no fault, until BATCHES batches have run: what the batches
re-copied in the hold and how long they held, and whether the members' records carried their
completion.  Every acknowledged write is verified at the end.  Run twice, from scratch: with
the members captured at queue (HBL_TEST_QUEUED_MEMBERS=1: their writes of unknown completion,
re-copied in the hold, as an md member's are) and at their bios' completion.

    hbl vm run -- python3 /hbl/vm/guest/bio_members.py [--batches 40] [--seed 1] [--rounds 1]

Prints a JSON line per run (results/live/bio_members.txt has the runs)."""
import argparse
import json
import os
import sys
import time

from soak import NAME, Soak
from soak_writer import Bad, wait

DEADLINE = 900


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--batches", type=int, default=40)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--rounds", type=int, default=1, help="pairs of runs, in turn")
    ap.add_argument("--dir", default="/run/hbl-bio-members")
    a = ap.parse_args()
    for _ in range(a.rounds):
        for queued in (True, False):
            run(a, queued)


def run(a, queued):
    os.makedirs(a.dir, exist_ok=True)
    s = Soak(a.dir)
    if queued:
        s.env["HBL_TEST_QUEUED_MEMBERS"] = "1"
    s.setup(argparse.Namespace(kinds="kill", faults=0, seed=a.seed))     # members up, the device up, no fault
    t0 = time.time()
    s.writer.start(a.seed)
    wait("%d batches" % a.batches, lambda: s.writer.running() and s.status().get("batches", 0) >= a.batches,
         deadline=DEADLINE, every=1.0)
    seconds = time.time() - t0
    rep = s.writer.stop()
    st = s.status()
    v = s.verify()
    s.hbl("down", NAME)
    for d in range(2):              # the members too: the guest suite wants the disks free
        s.member(d).remove()
    n = st["batches"]
    print(json.dumps({
        "members_captured": "at queue" if queued else "at completion", "batches": n, "seconds": round(seconds, 1), "writes_acknowledged": rep["writes"],
        "bad_reads": rep["bad_reads"], "verified": v["checked"], "lost": v["bad"],
        "moves": st["promotions"] + st["evictions"], "migrated_bytes": st["migrated_bytes"],
        "recopied_bytes": st["recopied_bytes"], "recopied_kib_per_batch": round(st["recopied_bytes"] / 1024 / n, 1),
        "hold_ms": {k: st["hold_ms"][k] for k in ("p50", "p99", "max")},
        "settle_timeouts": st["settle_timeouts"], "hold_ms_by_settle": st["hold_ms_by_settle"],
        "steps_p50": st["batch_steps_ms_p50"],
        "members": [{k: d.get(k) for k in ("path", "read_latency_us", "write_latency_us", "completion_seen")}
                    for d in st["devices"]]}), flush=True)


if __name__ == "__main__":
    try:
        main()
    except Bad as exc:
        sys.exit("bio_members: %s" % exc)
