"""How fast the live device's read hit ratio rises in simcheck's warm-up (inside the VM).

hbl-lru as scripts/simcheck.py and bench_live.py run it (fresh devices, the same fio job), the
warm-up only, with `hbl status` read every 5 s: counts, free slots, pending and stale moves, the
latest timeline row and the latest moves.  HBL_PROBE_UP_ARGS adds `hbl up` options (e.g.
"--frontier 0").  Writes /out/warmup-probe.json; one line per status read on stdout.

    hbl vm run -- "HBL_PROBE_UP_ARGS='--frontier 0' python3 /hbl/vm/guest/warmup_probe.py"
"""
import json
import os
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_live as live  # noqa: E402

KEEP = ("reads", "writes", "read_hit_ratio", "promotions", "evictions", "remaps_without_copy", "migrated_bytes",
        "batches", "stale_moves", "pending_moves", "copy_rate_limit_bytes_s", "copy_bandwidth_bytes_s")
SHOW = ("t", "read_hit_ratio", "promotions", "evictions", "remaps_without_copy", "batches", "stale_moves",
        "pending_moves", "free_slots")


def main():
    live.wipe()
    env = dict(os.environ, HBL_STATE_DIR=live.STATE)
    up = ["up", "hb", "--dev", live.FAST, "--dev", live.SLOW, "--policy", "lru"] + \
        os.environ.get("HBL_PROBE_UP_ARGS", "").split()
    subprocess.run(live.HBL + up, check=True, env=env)
    rows = []
    fio = threading.Thread(target=live.fio, args=("/dev/mapper/hb", 600 * live.MIB, live.WARM, "probe-warm"))
    t0 = time.time()
    fio.start()
    try:
        while fio.is_alive():
            time.sleep(5)
            st = json.loads(subprocess.run(live.HBL + ["status", "hb", "--json"], capture_output=True, text=True,
                                           env=env, check=True).stdout)
            rows.append(dict({k: st[k] for k in KEEP}, t=round(time.time() - t0, 1),
                             free_slots=[d["free_slots"] for d in st["devices"]],
                             last_timeline=st["timeline"][-1] if st["timeline"] else None,
                             decisions=st["decisions"][-8:]))
            print(json.dumps({k: rows[-1][k] for k in SHOW}), flush=True)
        fio.join()
    finally:
        subprocess.run(live.HBL + ["down", "hb"], env=env)
    with open("/out/warmup-probe.json", "w") as f:
        json.dump({"up": up, "warm_s": live.WARM, "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
