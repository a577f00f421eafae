"""hbl's live device against the kernel's dm-cache, on the same emulated devices
and the same workload (inside the VM; run by `hbl vm bench --live`).

Each configuration starts cold on wiped devices and runs the same fio job: 4
KiB random reads and writes (70% reads), Zipf(1.2) over an 800 MiB region that
starts on the HDD, queue depth 4, first a warm-up and then the measured phase.

    hbl-harmonia, hbl-smq, hbl-lru   hbl up NAME --dev NVMe --dev HDD --policy P
    dm-cache-smq                     cache target: metadata + cache on the NVMe,
                                     origin the HDD, 1 MiB blocks, writeback, smq
Results: /out/live-bench.json and a table on stdout.  HBL_BENCH_ONLY picks
configurations (comma-separated), HBL_BENCH_UP_ARGS adds `hbl up` options (e.g.
"--copy-limit 4M"), HBL_BENCH_WARM and HBL_BENCH_SECONDS set the phases, HBL_BENCH_JOB another
fio job of fio_jobs.py (its offset for hbl's configurations; dm-cache's origin starts at 100 MiB).
"""
import json
import os
import subprocess
import sys

sys.path.insert(0, "/hbl")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fio_jobs  # noqa: E402
from dmsetup import Cache, Device, Linear, Table, backend  # noqa: E402

FAST, SLOW = "/dev/nvme0n1", "/dev/vda"
MIB = 1 << 20
STATE = "/run/hbl-bench"
WARM = int(os.environ.get("HBL_BENCH_WARM", "90"))
MEASURE = int(os.environ.get("HBL_BENCH_SECONDS", "60"))
HBL = [sys.executable, "-m", "hbl.cli"]
ONLY = os.environ.get("HBL_BENCH_ONLY", "hbl-harmonia,hbl-smq,hbl-lru,dm-cache-smq").split(",")
UP_ARGS = os.environ.get("HBL_BENCH_UP_ARGS", "").split()     # more `hbl up` options for every hbl config
JOB = os.environ.get("HBL_BENCH_JOB", fio_jobs.DEFAULT)        # the fio job (vm/guest/fio_jobs.py)
if JOB not in fio_jobs.JOBS:
    raise SystemExit("HBL_BENCH_JOB=%s: no such fio job (%s)" % (JOB, ", ".join(fio_jobs.JOBS)))
HBL_OFFSET = fio_jobs.JOBS[JOB]["offset_mib"] * MIB           # where the job starts on the live device


def wipe():
    for p in (FAST, SLOW):
        with open(p, "r+b", buffering=0) as f:
            f.write(bytes(MIB))
            os.fsync(f.fileno())
    subprocess.run(["rm", "-rf", STATE])


def fio(path, offset, seconds, name):
    out = "/out/live-%s.json" % name
    subprocess.run(["fio", "--name=" + name, "--filename=" + path, "--direct=1", "--ioengine=libaio",
                    "--offset=%d" % offset, "--time_based", "--runtime=%d" % seconds, "--output-format=json",
                    "--output=" + out] + fio_jobs.fio_args(JOB), check=True)
    j = json.load(open(out))["jobs"][0]
    r, w = j["read"], j["write"]
    n = r["total_ios"] + w["total_ios"]
    mean = (r["clat_ns"]["mean"] * r["total_ios"] + w["clat_ns"]["mean"] * w["total_ios"]) / max(n, 1)
    return {"iops": r["iops"] + w["iops"], "mean_latency_us": mean / 1e3,
            "read_mean_us": r["clat_ns"]["mean"] / 1e3, "write_mean_us": w["clat_ns"]["mean"] / 1e3,
            "read_p99_us": r["clat_ns"]["percentile"]["99.000000"] / 1e3,
            "write_p99_us": w["clat_ns"]["percentile"]["99.000000"] / 1e3, "ios": n}


def cpu_ledger(st0, st):
    """The controller thread's CPU between two statuses, by span (status's controller_cpu_ledger),
    with the batches and the requests read meanwhile; None from a controller that keeps no ledger."""
    if "controller_cpu_ledger" not in st:
        return None
    d = lambda a, b: [x - y for x, y in zip(a, b)]
    spans = {k: d(v, st0["controller_cpu_ledger"].get(k, [0, 0])) for k, v in st["controller_cpu_ledger"].items()}
    return {"thread": d(st["controller_thread_times"], st0["controller_thread_times"]), "spans": spans,
            "seconds": st["uptime_s"] - st0["uptime_s"], "batches": st["batches"] - st0["batches"],
            "requests": st["reads"] + st["writes"] - st0["reads"] - st0["writes"]}


def ledger_line(k, led):
    """The measured phase's CPU ledger as one line: user+kernel % of a CPU in all and by span, ms a batch
    for the batch steps, ms per 1000 requests for the rest."""
    sec, nb, nr = led["seconds"], max(led["batches"], 1), max(led["requests"], 1)
    u, s = led["thread"]
    spans = dict(led["spans"])
    spans["rest"] = [u - sum(v[0] for v in spans.values()), s - sum(v[1] for v in spans.values())]
    batch = ("prepare", "copy", "settle_hold", "commit")
    parts = []
    for name, (su, ss) in sorted(spans.items(), key=lambda x: -sum(x[1])):
        per = ("%.1f ms/batch" % (1e3 * (su + ss) / nb) if name in batch else
               "%.1f ms/1k req" % (1e6 * (su + ss) / nr))
        parts.append("%s %.1f%% (kernel %.1f%%; %s)" % (name, 100 * (su + ss) / sec, 100 * ss / sec, per))
    return ("%s: controller thread over the measured phase %.1f%% of a CPU (user %.1f%%, kernel %.1f%%), %d batches, "
            "%d requests; by span: %s" % (k, 100 * (u + s) / sec, 100 * u / sec, 100 * s / sec, led["batches"],
                                          led["requests"], "; ".join(parts)))


def run_hbl(policy):
    wipe()
    env = dict(os.environ, HBL_STATE_DIR=STATE)
    subprocess.run(HBL + ["up", "hb", "--dev", FAST, "--dev", SLOW, "--policy", policy] + UP_ARGS, check=True, env=env)
    try:
        status = lambda: json.loads(subprocess.run(HBL + ["status", "hb", "--json"], capture_output=True,
                                                   text=True, env=env, check=True).stdout)
        fio("/dev/mapper/hb", HBL_OFFSET, WARM, "hbl-%s-warm" % policy)
        st0 = status()
        res = fio("/dev/mapper/hb", HBL_OFFSET, MEASURE, "hbl-%s" % policy)
        st = status()
        # the controller's CPU over the measured phase alone (the status gives it since the start)
        span = st["uptime_s"] - st0["uptime_s"]
        for k in ("controller_cpu", "controller_cpu_main"):
            res[k + "_measured"] = (st[k] * st["uptime_s"] - st0[k] * st0["uptime_s"]) / span if span > 0 else None
        res["cpu_ledger_measured"] = cpu_ledger(st0, st)
        res.update(promotions=st["promotions"], evictions=st["evictions"], migrated_mib=st["migrated_bytes"] / MIB,
                   read_hit_ratio=st["read_hit_ratio"], fast_request_share=st["fast_request_share"], stall_ms=st["stall_ms"], hold_ms=st["hold_ms"],
                   decision_to_remap_ms=st["decision_to_remap_ms"], decision_to_batch_ms=st["decision_to_batch_ms"],
                   controller_cpu=st["controller_cpu"],
                   controller_cpu_main=st["controller_cpu_main"],
                   batch_steps_ms_p50=st["batch_steps_ms_p50"], slowest_holds=st["slowest_holds"],
                   held_io_ms=st["held_io_ms"],
                   settle_timeouts=st["settle_timeouts"], hold_ms_by_settle=st["hold_ms_by_settle"],
                   copy_rate_limit_mib_s=st["copy_rate_limit_bytes_s"] / MIB,
                   copy_idle_read_latency_us=st["copy_idle_read_latency_us"],
                   stale_moves=st["stale_moves"], batches=st["batches"], uptime_s=st.get("uptime_s"),
                   agents=[{k: a.get(k) for k in ("decisions", "train_steps", "background_steps")}
                           for a in st.get("agents", [])],
                   **{k: st.get(k) for k in ("asked_moves", "moves_done", "refused_moves", "stale_share",
                                             "refused_share", "move_queue_capacity", "carried_moves_per_s")},
                   copy_bandwidth_mib_s=st["copy_bandwidth_bytes_s"] / MIB, ebpf_lost=st["ebpf"]["lost"],
                   timeline=st["timeline"])
    finally:
        subprocess.run(HBL + ["down", "hb"], env=env)
    return res


def run_dmcache():
    wipe()
    dm = backend()
    meta, data = 16 * MIB // 512, 496 * MIB // 512
    md = Device("hbl-cmeta", dm).create(Table([Linear(meta, FAST, 0)]))
    cd = Device("hbl-cdata", dm).create(Table([Linear(data, FAST, meta)]))
    with open(md.path, "r+b", buffering=0) as f:         # a new cache needs zeroed metadata
        f.write(bytes(MIB))
    with open(SLOW, "rb") as f:
        size = f.seek(0, 2)
    c = Device("hbl-cache", dm).create(Table([Cache(size // 512, md.path, cd.path, SLOW, block_sectors=2048)]))
    try:
        fio(c.path, 100 * MIB, WARM, "dm-cache-smq-warm")
        res = fio(c.path, 100 * MIB, MEASURE, "dm-cache-smq")
        st = Cache.parse_status(c.status()[0][3])
        res.update(promotions=st["promotions"], evictions=st["demotions"],
                   read_hit_ratio=st["read_hits"] / max(1, st["read_hits"] + st["read_misses"]),
                   fast_request_share=(st["read_hits"] + st["write_hits"]) / max(1, st["read_hits"] + st["read_misses"]
                                                                               + st["write_hits"] + st["write_misses"]),
                   migrated_mib=st["promotions"] * 1.0)
    finally:
        for d in (c, cd, md):
            d.remove()
    return res


def raw_copy():
    """The copy job's bandwidth HDD -> NVMe with no limit, against fio reading the HDD and writing the NVMe."""
    from hbl.live.copier import Copier
    out = {}
    for dev, rw in ((SLOW, "read"), (FAST, "write")):
        r = subprocess.run(["fio", "--name=raw", "--filename=" + dev, "--rw=" + rw, "--bs=256k", "--direct=1",
                            "--ioengine=psync", "--size=64M", "--offset=%d" % (256 * MIB), "--output-format=json"],
                           capture_output=True, text=True, check=True)
        j = json.loads(r.stdout)["jobs"][0][rw]
        out["fio_%s_%s_mib_s" % (os.path.basename(dev), rw)] = j["bw_bytes"] / MIB
    c = Copier([FAST, SLOW])
    for i in range(64):
        c.copy(1, (256 + i) * MIB, 0, (256 + i) * MIB, MIB, limit=False)
    c.flush([0])
    out["copier_hdd_to_nvme_mib_s"] = c.bandwidth() / MIB
    c.close()
    return out


def main():
    rows = {}
    raw = raw_copy()
    print("raw: %s" % json.dumps(raw), file=sys.stderr, flush=True)
    for policy in ("harmonia", "smq", "lru"):
        if "hbl-" + policy in ONLY:
            rows["hbl-" + policy] = run_hbl(policy)
            print("done hbl-%s" % policy, file=sys.stderr, flush=True)
    if "dm-cache-smq" in ONLY:
        rows["dm-cache-smq"] = run_dmcache()
    out = {"warm_s": WARM, "measure_s": MEASURE, "job": JOB,
           "workload": fio_jobs.describe(JOB) + ", libaio, direct", "devices": "QEMU NVMe 512 MiB + virtio disk 1 GiB at 100 IOPS (TCG)",
           "raw_copy": raw, "hbl_up_args": UP_ARGS, "results": rows}
    json.dump(out, open("/out/live-bench.json", "w"), indent=1)
    print("%-14s %9s %11s %11s %11s %11s %8s %8s %9s %9s" % ("config", "IOPS", "mean (us)", "read p99", "write p99",
                                                             "read hits", "promote", "evict", "stall p99", "hold p99"))
    for k, r in rows.items():
        ms = lambda key: "%.1f ms" % r[key]["p99"] if r.get(key, {}).get("p99") is not None else "-"
        print("%-14s %9.0f %11.0f %11.0f %11.0f %11.3f %8d %8d %9s %9s" % (
            k, r["iops"], r["mean_latency_us"], r["read_p99_us"], r["write_p99_us"], r["read_hit_ratio"],
            r["promotions"], r["evictions"], ms("stall_ms"), ms("hold_ms")))
    print("stall: what I/O to extents not being moved waited on a migration (hbl never suspends the device; "
          "the figure is the routing messages' duration, an upper bound); hold: how long I/O to a moving "
          "extent waited, per batch")
    print("copy bandwidth (64 extents HDD -> NVMe, no limit): %.1f MiB/s; fio on the raw devices: HDD read "
          "%.1f MiB/s, NVMe write %.1f MiB/s" % (raw["copier_hdd_to_nvme_mib_s"], raw["fio_vda_read_mib_s"],
                                                 raw["fio_nvme0n1_write_mib_s"]))
    for k, r in rows.items():
        if "stall_ms" in r:
            print("%s: stall p50 %.1f ms p99 %.1f ms; hold p50 %.0f ms p99 %.0f ms max %.0f ms; request seen -> "
                  "remap done p50 %.0f ms p99 %.0f ms (batch begun p50 %.0f ms); controller CPU %.0f%% (its thread %.0f%%); copies at %.1f MiB/s "
                  "(idle read latency %.1f ms)" % (
                      k, r["stall_ms"]["p50"] or 0, r["stall_ms"]["p99"] or 0, r["hold_ms"]["p50"] or 0,
                      r["hold_ms"]["p99"] or 0, r["hold_ms"]["max"] or 0,
                      r["decision_to_remap_ms"]["p50"] or 0, r["decision_to_remap_ms"]["p99"] or 0,
                      (r.get("decision_to_batch_ms") or {}).get("p50") or 0,
                      100 * r["controller_cpu"], 100 * r.get("controller_cpu_main", 0), r["copy_bandwidth_mib_s"],
                      (r.get("copy_idle_read_latency_us") or 0) / 1e3))
            if r.get("controller_cpu_measured") is not None:
                print("%s: controller CPU over the measured phase %.0f%% (its thread %.0f%%), since its start %.0f%% "
                      "(%.0f%%)" % (k, 100 * r["controller_cpu_measured"], 100 * r["controller_cpu_main_measured"],
                                    100 * r["controller_cpu"], 100 * r["controller_cpu_main"]))
            if r.get("cpu_ledger_measured"):
                print(ledger_line(k, r["cpu_ledger_measured"]))
            if r.get("asked_moves") is not None:
                print("%s: moves %d asked, %d done, %d given back stale (%.1f%% of those asked), %d refused, the "
                      "queue full (%.1f%%); the queue held at most %s at the end (%s moves/s carried)" % (
                          k, r["asked_moves"], r["moves_done"], r["stale_moves"], 100 * r["stale_share"],
                          r["refused_moves"], 100 * r["refused_share"], r["move_queue_capacity"] or "-",
                          "%.1f" % r["carried_moves_per_s"] if r.get("carried_moves_per_s") else "-"))
            print("%s: %d batches, %d moves given back stale; per batch, median ms: %s" % (
                k, r["batches"], r["stale_moves"], ", ".join("%s %.1f" % (s, v) for s, v in r["batch_steps_ms_p50"].items()
                                                             if s not in ("moves", "recopied_bytes",
                                                                          "copied_whole_in_hold"))))
            for i, a in enumerate(r.get("agents") or []):
                print("%s: agent %d: %d decisions, %d training steps (%d on the training thread) in %.0f s; the "
                      "threads but the controller's (training, copies) %.0f%% of a CPU" % (
                          k, i, a["decisions"], a["train_steps"], a["background_steps"] or 0, r.get("uptime_s") or 0,
                          100 * (r["controller_cpu"] - r.get("controller_cpu_main", 0))))
            hw = r.get("held_io_ms") or {}
            print("%s: requests that arrived in a hold waited p50 %.1f ms p99 %.1f ms max %.1f ms (%d requests)" % (
                k, hw.get("p50") or 0, hw.get("p99") or 0, hw.get("max") or 0, hw.get("count") or 0))
            hs = r.get("hold_ms_by_settle") or {}
            print("%s: settle ran out of time in %d of %d batches; hold p99 %.0f ms in those, %.0f ms in the others" % (
                k, r.get("settle_timeouts", 0), r["batches"], hs.get("timed_out_p99") or 0, hs.get("settled_p99") or 0))
            print("%s: slowest holds (ms): %s" % (k, "; ".join(
                "%.0f = drain %.0f + records %.0f + recopy %.0f (%d whole, %d KiB) + metadata %.0f + release %.0f"
                " [settle %.0f, in flight %d; %d requests in the %.1f ms from its last look to the hold; moving from %s;"
                " re-copied writes done at %s ms]" % (
                    b["hold_ms"], b["drain"], b["records"], b["recopy"], b.get("copied_whole_in_hold", 0),
                    b["recopied_bytes"] // 1024, b["metadata"], b["release"], b["settle"], b["settle_in_flight"],
                    b.get("window_requests", 0), b.get("window_ms", 0), b.get("moving_from"),
                    " ".join("?" if t is None else "%+.1f" % t for _, t in b.get("late_writes", [])) or "-")
                for b in reversed(r.get("slowest_holds", [])))))


if __name__ == "__main__":
    main()
