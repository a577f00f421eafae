#!/usr/bin/env python3
"""The simulator checked against the live device (issue 11, item 6), in one command.

One guest boot (vm/guest/simcheck.py) measures the emulated NVMe and HDD-like disk with
`hbl devices --measure --write`, runs hbl-lru and hbl-smq on the live device as
`hbl vm bench --live` does, and captures the same fio job (warm-up, then the measured
phase) on a raw scratch disk with `hbl trace`.  Then, on the host, each policy's trace
(the first N requests of each phase, N what the live device completed in it) is
replayed closed loop at fio's depth (4) through an HSS of the two measured profiles,
with the live device's extent as the page and its fast slots as the fast capacity, and the
simulator as the live device runs (LIVE_MODEL: its copies, its controller's batches, its
initial mapping).
Side by side: the read hit ratio over both phases (page reads served by the fast device,
as both the simulator and `hbl status` count it; writes are not hits) and the measured
phase's mean latency (live: fio's submission + completion, the span the simulator charges),
against the targets (0.05, 25%); then where each side's time goes, the live hit ratio by
phase (from the status timeline) and counterfactuals that locate a miss.

    sudo .venv/bin/python scripts/simcheck.py [--job NAME] [--warm 90] [--seconds 60] [--out DIR]
    .venv/bin/python scripts/simcheck.py --from DIR      # re-simulate a kept guest output
Writes results/simcheck/simcheck.json and results/simcheck/simcheck.txt, or simcheck-NAME.* for a
--job other than the live bench's own (vm/guest/fio_jobs.py; a kept output names its job).
"""
import argparse
import datetime
import json
import os
import shlex
import subprocess
import sys

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from hbl.devices import load_hss  # noqa: E402
from hbl.errors import HblError  # noqa: E402
from hbl.live import layout  # noqa: E402
from hbl.sim import Simulator  # noqa: E402
from hbl.sim.model import LIVE_COPY  # noqa: E402
from hbl.trace import native  # noqa: E402

sys.path.insert(0, os.path.join(ROOT, "vm", "guest"))
import fio_jobs  # noqa: E402    the guest's fio jobs by name, plain data
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import simcheck_report  # noqa: E402

HIT_TARGET, LATENCY_TARGET = 0.05, 0.25
QUEUE_DEPTH = 4                       # fio's iodepth in bench_live.py
MAX_BATCH = 8                         # hbl up's --max-batch: extents moved by one batch at most
# The simulator's copies as the live device makes them (hbl.sim.model.LIVE_COPY): a page read in part is
# copied whole, served from where it was until its copy completes, by a copier that takes its turn
# with the application's I/O.  The simulator as `hbl compare` runs it (none of them) is shown beside.
LIVE_COPIES = {k: True for k in LIVE_COPY}
# The simulator as the live device runs, the row compared: its copies, its controller's batches
# (hbl.sim live_batches: the migration queue's discipline, evictions carried like promotions, a free
# slot for each move, no copy for an extent never written, the write frontier), and its initial
# mapping (initial_mapping: every extent on a member from the start, the first ones on the NVMe,
# hbl/live/layout.py).
LIVE_MODEL = dict(LIVE_COPIES, live_batches=True, initial_mapping=True)


def host_load():
    """This host's CPU and load, for the record (the guest's timing depends on both)."""
    cpu = "?"
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next((ln.split(":", 1)[1].strip() for ln in f if ln.startswith("model name")), "?")
    except OSError:
        pass
    return {"cpu": cpu, "cores": os.cpu_count(), "load": [round(x, 2) for x in os.getloadavg()],
            "utc": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M:%S")}


def run_guest(a):
    from hbl.vm import build as vmbuild, run as vmrun
    start = host_load()
    images = vmbuild.build(progress=lambda m: print("simcheck: " + m, file=sys.stderr))
    # the scratch disk spans the live device's logical space (1519 MiB), so fio's offsets are the same
    disks = vmrun.default_disks() + [vmrun.Disk("scratch", 1536, "virtio")]
    r = vmrun.run(guest_command(a), images, disks=disks, timeout=a.timeout, out_dir=a.out)
    sys.stderr.write(r.stderr)
    if not r.ok:
        raise HblError("the guest failed (exit status %d); its output is in %s" % (r.rc, r.out_dir))
    print("simcheck: guest done in %.0f s; output in %s" % (r.seconds, r.out_dir), file=sys.stderr)
    with open(os.path.join(r.out_dir, "host.json"), "w") as f:
        json.dump({"start": start, "end": host_load(), "guest_seconds": round(r.seconds)}, f, indent=1)
    return r.out_dir


def guest_command(a):
    """The guest's command line for the options of this run."""
    return "HBL_BENCH_WARM=%d HBL_BENCH_SECONDS=%d HBL_SIMCHECK_MEASURE_S=%g HBL_SIMCHECK_POLICIES=%s " \
           "HBL_BENCH_UP_ARGS=%s HBL_BENCH_JOB=%s python3 /hbl/vm/guest/simcheck.py" % (
               a.warm, a.seconds, a.measure_seconds, a.policies, shlex.quote(a.up_args), shlex.quote(a.job))


def results_name(job):
    """The results' file name, less its suffix: the live bench's own job keeps today's simcheck.*."""
    return "simcheck" if job == fio_jobs.DEFAULT else "simcheck-" + job


def hss_file(guest, out_dir):
    """The HSS of the two measured profiles, fast capacity = the live device's fast slots."""
    lay = guest["layout"]
    spec = {"devices": [
        {"profile": dict(guest["profiles"]["fast"]["profile"], name="vm-nvme",
                         description="QEMU NVMe, measured by hbl devices --measure --write"),
         "capacity": "%dM" % (lay["fast_extents"] * lay["extent_bytes"] >> 20)},
        {"profile": dict(guest["profiles"]["slow"]["profile"], name="vm-hdd",
                         description="QEMU virtio disk at 100 IOPS, measured by hbl devices --measure --write"),
         "capacity": None}]}
    path = os.path.join(out_dir, "simcheck-hss.json")
    with open(path, "w") as f:
        json.dump(spec, f, indent=1)
    return path, spec


def counters(sim):
    st = sim.stats()
    c = {k: getattr(st, k) for k in ("requests", "reads", "writes", "latency_sum_ns", "read_page_accesses",
                                      "fast_read_hits", "write_page_accesses", "fast_page_writes",
                                      "promotions", "evictions", "migrated_bytes", "sync_evictions",
                                      "background_ios", "foreground_wait_ns", "sync_wait_ns", "moves_refused")}
    # each request under the slowest device it was served from (0 the NVMe alone, 1 the HDD)
    c["served"] = [(st.served_requests[d], st.served_latency_ns[d]) for d in range(2)]
    return c


def served(t, w):
    """The measured phase's requests by the slowest device they were served from: share, mean."""
    n = [t["served"][d][0] - w["served"][d][0] for d in range(2)]
    ns = [t["served"][d][1] - w["served"][d][1] for d in range(2)]
    return {"nvme_only_share": n[0] / max(1, sum(n)), "nvme_only_mean_us": ns[0] / max(1, n[0]) / 1e3,
            "hdd_mean_us": ns[1] / max(1, n[1]) / 1e3}


def live_mapping(guest):
    """Where a new live device has each extent (hbl/live/layout.py initial_mapping): laid out over
    the members in order, fastest first, none written."""
    lay = guest["layout"]
    dev, _, _ = layout.initial_mapping([{"slots": lay["fast_extents"], "spares": 0},
                                        {"slots": lay["slow_extents"], "spares": 0}])
    return dev


def simulate(policy, hss_path, guest, seq, n_warm, n_measure, page_size=None, initial_mapping=False, **background):
    page_size = page_size or guest["layout"]["extent_bytes"]
    config = load_hss(hss_path)
    caps = config.capacity_pages(0, page_size)
    sim = Simulator(config, policy, caps, queue_depth=QUEUE_DEPTH, page_size=page_size, **background)
    if initial_mapping:
        if page_size != guest["layout"]["extent_bytes"]:
            raise HblError("the live device's initial mapping is of its extents: pages of %d bytes" %
                           guest["layout"]["extent_bytes"])
        dev = live_mapping(guest)
        sim.set_devices(np.arange(len(dev)), dev)
    sim.feed(seq[:n_warm])
    w = counters(sim)
    sim.feed(seq[:n_measure])
    t = counters(sim)
    read_hits = lambda hits, pages: hits / max(1, pages)      # page reads the fast device served
    whole = sim.result()
    m_req = t["requests"] - w["requests"]
    return {"requests": t["requests"], "warm_requests": w["requests"], "measure_requests": m_req,
            "read_hit_ratio": read_hits(t["fast_read_hits"], t["read_page_accesses"]),
            "warm_read_hit_ratio": read_hits(w["fast_read_hits"], w["read_page_accesses"]),
            "measure_read_hit_ratio": read_hits(t["fast_read_hits"] - w["fast_read_hits"],
                                                t["read_page_accesses"] - w["read_page_accesses"]),
            "fast_write_share": t["fast_page_writes"] / max(1, t["write_page_accesses"]),
            "mean_latency_us": (t["latency_sum_ns"] - w["latency_sum_ns"]) / max(1, m_req) / 1e3,
            "measure_served": served(t, w), "moves_refused": t["moves_refused"],
            "live_copy": [k for k in LIVE_COPY if background.get(k)],
            "live_batches": bool(background.get("live_batches")), "initial_mapping": initial_mapping,
            "batches": whole.get("batches"),
            "measure_background_wait_us": (t["foreground_wait_ns"] - w["foreground_wait_ns"]) / max(1, m_req) / 1e3,
            "measure_sync_wait_us": (t["sync_wait_ns"] - w["sync_wait_ns"]) / max(1, m_req) / 1e3,
            "warm_mean_latency_us": w["latency_sum_ns"] / max(1, w["requests"]) / 1e3,
            "promotions": t["promotions"], "evictions": t["evictions"], "sync_evictions": t["sync_evictions"],
            "migrated_mib": t["migrated_bytes"] / 2 ** 20, "capacity_pages": caps[0],
            "iops": whole["throughput_iops"], "device_utilization": whole["device_utilization"],
            "background_utilization": whole["background_utilization"],
            "background_wait_us": whole["background_wait_us"]}


def fio_latency(guest_dir, name):
    """fio's completion latency, reads and writes, of one live phase (the guest's live-NAME.json;
    None if it is not there): mean and percentiles, in us."""
    try:
        with open(os.path.join(guest_dir, "live-%s.json" % name)) as f:
            job = json.load(f)["jobs"][0]
    except (OSError, ValueError, KeyError, IndexError):
        return None
    out = {}
    for side in ("read", "write"):
        c = job[side]["clat_ns"]
        pct = c.get("percentile", {})
        out[side] = dict({"ios": job[side]["total_ios"], "mean_us": c["mean"] / 1e3,
                          "submit_mean_us": job[side]["slat_ns"]["mean"] / 1e3},
                         **{"p%d_us" % q: pct.get("%.6f" % q, 0) / 1e3 for q in (10, 50, 90, 99)})
    return out


def live_total_latency(fio):
    """The measured phase's mean from submission to completion (fio's lat: slat + clat), the span
    the simulator charges a request; hbl vm bench --live reports clat alone."""
    r, w = fio["read"], fio["write"]
    n = r["ios"] + w["ios"]
    return sum(x["ios"] * (x["mean_us"] + x["submit_mean_us"]) for x in (r, w)) / max(1, n)


def live_phase_hits(lv, key="read_hit_ratio"):
    """The live read hit ratio (or another figure of the timeline) of each phase, from the status
    timeline (a row per 5 s): the rows up to the warm-up's request count are the warm-up; each row
    weighted by its requests, so approximate (a row's page reads are not kept).  None without a
    timeline."""
    rows = [r for r in lv.get("timeline") or [] if r.get(key) is not None and r["requests"]]
    if not rows:
        return None
    done, acc = 0, {"warm": [0.0, 0], "measure": [0.0, 0]}
    for r in rows:
        phase = "warm" if done + r["requests"] / 2 <= lv["warm_ios"] else "measure"
        done += r["requests"]
        acc[phase][0] += r[key] * r["requests"]
        acc[phase][1] += r["requests"]
    return {ph: a[0] / a[1] if a[1] else None for ph, a in acc.items()}


def check(guest_dir, policies):
    with open(os.path.join(guest_dir, "simcheck-guest.json")) as f:
        guest = json.load(f)
    hss_path, spec = hss_file(guest, guest_dir)
    traces = {ph: native.load(os.path.join(guest_dir, guest["capture"][ph]["trace"])) for ph in ("warm", "measure")}
    # Each fio phase restarts from the same seed, so both captures are prefixes of one request
    # sequence (up to the order of requests in flight together): the longer one serves both phases.
    seq = max(traces.values(), key=len)
    n = min(len(t) for t in traces.values())
    same = lambda t: set(zip(t["offset"][:n].tolist(), t["op"][:n].tolist()))
    overlap = len(same(traces["warm"]) & same(traces["measure"])) / max(1, len(same(traces["measure"])))
    rows = {}
    for policy in policies:
        lv = guest["live"][policy]
        if "read_hit_ratio" not in lv:
            raise HblError("%s/simcheck-guest.json predates the live device's read hit ratio (it has only "
                           "fast_hit_ratio, reads and writes together): run the guest again" % guest_dir)
        n_warm, n_measure = lv["warm_ios"], lv["ios"]
        sim = simulate(policy, hss_path, guest, seq, n_warm, n_measure, **LIVE_MODEL)
        less = lambda k: {o: v for o, v in LIVE_MODEL.items() if o != k}
        st = lv.get("batch_steps_ms_p50") or {}
        steps = (st["prepare"], st["settle"] + st["hold_ms"] + st["reload"]) if all(
            st.get(x) is not None for x in ("prepare", "settle", "hold_ms", "reload")) else None
        # Counterfactuals that locate a miss (not fits: no constant changes): writes replayed as
        # reads, so a page reaches the fast device only by a copy, as on the live device; and
        # 4 KiB pages over the same fast bytes, so a request moves its own 4 KiB, not a page.
        reads = seq.copy()
        reads["op"] = 0
        # And the live device's pace of migration: copies queued one batch deep (hbl up's
        # --max-batch extents, where the simulator queues up to 256 pages per device) at the rate
        # the live device moved extents in this run (a diagnosis from the run's own figure, not a model).
        pace = (lv["promotions"] + lv["evictions"]) * guest["layout"]["extent_bytes"] / 1e6 / \
            (guest["warm_s"] + guest["measure_s"])
        queue = int(lv.get("move_queue_capacity") or MAX_BATCH)
        diagnosis = {"writes_as_reads": simulate(policy, hss_path, guest, reads, n_warm, n_measure, **LIVE_COPIES),
                     "pages_of_4k": simulate(policy, hss_path, guest, seq, n_warm, n_measure, page_size=4096,
                                             **LIVE_COPIES),
                     "live_pace": dict(simulate(policy, hss_path, guest, seq, n_warm, n_measure,
                                                background_backlog=MAX_BATCH, background_rate_mb_s=pace,
                                                **LIVE_COPIES), rate_mb_s=pace),
                     # the live device's queue: no more moves waiting than its queue held at the end of the
                     # run (its capacity: what its batches carried in 2 s), where the simulator queues 256 pages
                     "live_queue": dict(simulate(policy, hss_path, guest, seq, n_warm, n_measure,
                                                 background_backlog=queue, **LIVE_COPIES), backlog=queue),
                     # the live model less its batches or its initial mapping, and its copies alone (the
                     # model of this table until 2026-12-05)
                     **{"without_" + k: simulate(policy, hss_path, guest, seq, n_warm, n_measure, **less(k))
                        for k in ("live_batches", "initial_mapping")},
                     "live_copies": simulate(policy, hss_path, guest, seq, n_warm, n_measure, **LIVE_COPIES),
                     # the live model with the controller's own time per batch, the p50 of this run's steps
                     # before the copies (prepare) and after them (settle, hold, reload): a diagnosis from
                     # the run, a cost of its host and TCG, not a model
                     **({"controller_time": dict(simulate(policy, hss_path, guest, seq, n_warm, n_measure,
                                                          batch_overhead_ms=steps, **LIVE_MODEL), overhead_ms=steps)}
                        if steps else {}),
                     # the simulator as hbl compare runs it, and the live copies less one of their parts
                     "compare_model": simulate(policy, hss_path, guest, seq, n_warm, n_measure),
                     **{"without_" + k: simulate(policy, hss_path, guest, seq, n_warm, n_measure,
                                                 **dict(LIVE_COPIES, **{k: False})) for k in LIVE_COPY}}
        fio = {ph: fio_latency(guest_dir, "hbl-%s%s" % (policy, sfx)) for ph, sfx in (("warm", "-warm"), ("measure", ""))}
        live_mean = live_total_latency(fio["measure"]) if fio["measure"] else lv["mean_latency_us"]
        hit_diff = sim["read_hit_ratio"] - lv["read_hit_ratio"]
        lat_diff = sim["mean_latency_us"] / live_mean - 1
        rows[policy] = {
            "live": {"read_hit_ratio": lv["read_hit_ratio"], "fast_request_share": lv["fast_request_share"],
                     "mean_latency_us": live_mean, "completion_mean_us": lv["mean_latency_us"],
                     "phase_read_hit_ratio": live_phase_hits(lv),
                     "phase_fast_request_share": live_phase_hits(lv, "fast_request_share"),
                     "warm_requests": n_warm, "measure_requests": n_measure, "promotions": lv["promotions"],
                     "evictions": lv["evictions"], "migrated_mib": lv["migrated_mib"], "iops": lv["iops"],
                     "read_mean_us": lv["read_mean_us"], "write_mean_us": lv["write_mean_us"],
                     "stall_ms": lv["stall_ms"], "decision_to_remap_ms": lv["decision_to_remap_ms"],
                     "copy_bandwidth_mib_s": lv["copy_bandwidth_mib_s"],
                     "fio": fio,
                     **{k: lv[k] for k in ("hold_ms", "held_io_ms", "batches", "stale_moves", "controller_cpu",
                                           "controller_cpu_measured", "asked_moves", "moves_done", "refused_moves",
                                           "stale_share", "refused_share", "move_queue_capacity",
                                           "carried_moves_per_s", "batch_steps_ms_p50")
                        if k in lv}},
            "sim": sim, "diagnosis": diagnosis,
            "read_hit_ratio_diff": hit_diff, "mean_latency_diff": lat_diff,
            "short_trace": len(seq) < max(n_warm, n_measure),
            "read_hit_ratio_ok": abs(hit_diff) <= HIT_TARGET, "mean_latency_ok": abs(lat_diff) <= LATENCY_TARGET}
    try:
        with open(os.path.join(guest_dir, "host.json")) as f:
            host = json.load(f)
    except (OSError, ValueError):
        host = None             # a guest output kept from before the host was recorded
    job = guest.get("job", fio_jobs.DEFAULT)         # an output kept from before the jobs ran the bench's own
    if job not in fio_jobs.JOBS:
        raise HblError("%s/simcheck-guest.json: fio job %r is not one of vm/guest/fio_jobs.py's (%s)" % (
            guest_dir, job, ", ".join(fio_jobs.JOBS)))
    return {"date": datetime.date.today().isoformat(), "job": job, "workload": fio_jobs.describe(job),
            "warm_s": guest["warm_s"], "measure_s": guest["measure_s"],
            "host": host, "hbl_up_args": [x for x in guest.get("hbl_up_args", []) if x],
            "targets": {"read_hit_ratio_abs": HIT_TARGET, "mean_latency_rel": LATENCY_TARGET},
            "replay": {"mode": "closed", "queue_depth": QUEUE_DEPTH, "page_size": guest["layout"]["extent_bytes"],
                       "live_model": sorted(LIVE_MODEL)},
            "layout": guest["layout"], "hss": spec,
            "measured": {k: {"modelled_as": v["modelled_as"], "fio": v["fio"]} for k, v in guest["profiles"].items()},
            "capture": {ph: {k: v for k, v in c.items() if k != "trace"} | {"records": len(traces[ph])}
                        for ph, c in guest["capture"].items()},
            "captures_same_sequence": overlap,
            "results": rows}


def format_table(s):
    """The report of a summary (simcheck_report.py), with this check's batch size."""
    return simcheck_report.format_table(s, MAX_BATCH)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--warm", type=int, default=90, help="warm-up seconds (default 90, as hbl vm bench --live)")
    ap.add_argument("--seconds", type=int, default=60, help="measured seconds (default 60)")
    ap.add_argument("--measure-seconds", type=float, default=3, help="per fio job of hbl devices --measure (3)")
    ap.add_argument("--policies", default="lru,smq")
    ap.add_argument("--job", default=fio_jobs.DEFAULT, choices=sorted(fio_jobs.JOBS),
                    help="the fio job (vm/guest/fio_jobs.py; default %s, the live bench's own)" % fio_jobs.DEFAULT)
    ap.add_argument("--up-args", default="", help="more `hbl up` options for the live runs (e.g. \"--frontier 0\")")
    ap.add_argument("--timeout", type=int, default=2400, help="seconds before QEMU is killed (default 2400)")
    ap.add_argument("--out", help="keep the guest's output (traces, profiles) here")
    ap.add_argument("--from", dest="from_dir", metavar="DIR", help="simulate a kept guest output, no VM")
    ap.add_argument("--results", default=os.path.join(ROOT, "results", "simcheck"),
                    help="where simcheck.json/.txt go (default results/simcheck)")
    a = ap.parse_args()
    try:
        os.makedirs(a.results, exist_ok=True)     # before the guest's minutes, not after them
        guest_dir = a.from_dir or run_guest(a)
        s = check(guest_dir, a.policies.split(","))
    except (HblError, OSError, KeyError) as exc:
        sys.exit("simcheck: %s" % exc)
    s["command"] = "sudo .venv/bin/python scripts/simcheck.py" + (
        "" if (s["warm_s"], s["measure_s"]) == (90, 60) else " --warm %d --seconds %d" % (s["warm_s"], s["measure_s"])) + (
        " --up-args %s" % shlex.quote(" ".join(s["hbl_up_args"])) if s["hbl_up_args"] else "") + (
        "" if s["job"] == fio_jobs.DEFAULT else " --job " + s["job"])
    head = "# %s   (%s)" % (s["command"], s["date"])
    if a.from_dir:
        # the live side is a kept guest output: say which run, and where and at which commit it was simulated
        git = subprocess.run(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
        h, now = s.get("host") or {}, host_load()
        s["resimulated"] = {"command": ".venv/bin/python scripts/simcheck.py --from DIR", "host": now,
                            "commit": git.stdout.strip() or "?"}
        head = ("# .venv/bin/python scripts/simcheck.py --from DIR   (%s UTC, %s, %d cores, load %s, commit %s)\n"
                "# the live side: the kept guest output DIR of the run of %s UTC (%s)" % (
                    now["utc"], now["cpu"], now["cores"], " ".join("%.1f" % x for x in now["load"]),
                    s["resimulated"]["commit"], (h.get("start") or {}).get("utc", "?"), s["command"]))
    text = "%s\n%s" % (head, format_table(s))
    print(text)
    name = os.path.join(a.results, results_name(s["job"]))
    with open(name + ".json", "w") as f:
        json.dump(s, f, indent=1)
    with open(name + ".txt", "w") as f:
        f.write(text + "\n")


if __name__ == "__main__":
    main()
