"""scripts/simcheck.py's report: the table and, per policy, where each side's time goes, from the
summary that simcheck.check() returns (or a simcheck*.json kept in results/simcheck)."""
from hbl.sim.model import LIVE_BATCH, LIVE_COPY, LIVE_INTERVAL_S


def format_table(s, max_batch):
    p = lambda prof: ", ".join("%s %g" % kv for kv in prof.items() if kv[0] not in ("name", "description"))
    lines = ["# %s (job %s); %d s warm-up + %d s measured (the latency: submission to completion, fio's lat, as "
             "the simulator charges it); read hit ratio (page reads served by the NVMe) over both phases" % (
                 s["workload"], s["job"], s["warm_s"], s["measure_s"]),
             "# simulator: closed loop at depth %d, page = extent = %d KiB, fast capacity %d extents, the live "
             "device as it runs (%s: its copies; its controller's batches, %d moves at most, one every %.2f s at "
             "most, evictions carried like promotions, no copy for an extent never written, the write frontier; its "
             "initial mapping, the first %d extents on the NVMe), profiles measured in the same boot:" % (
                 s["replay"]["queue_depth"], s["replay"]["page_size"] >> 10, s["layout"]["fast_extents"],
                 ", ".join(s["replay"].get("live_model", [])), LIVE_BATCH, LIVE_INTERVAL_S,
                 s["layout"]["fast_extents"]),
             "#   NVMe: " + p(s["hss"]["devices"][0]["profile"]),
             "#   HDD:  " + p(s["hss"]["devices"][1]["profile"]),
             "%-8s %9s %9s %7s  %10s %10s %7s  %s" % ("policy", "live rhit", "sim rhit", "diff", "live mean",
                                                    "sim mean", "diff", "within target (0.05, 25%)")]
    for k, r in s["results"].items():
        lv, sm = r["live"], r["sim"]
        lines.append("%-8s %9.3f %9.3f %+7.3f  %8.0f us %7.0f us %+6.0f%%  read hit %s, latency %s%s" % (
            "hbl-" + k, lv["read_hit_ratio"], sm["read_hit_ratio"], r["read_hit_ratio_diff"], lv["mean_latency_us"],
            sm["mean_latency_us"], 100 * r["mean_latency_diff"], "yes" if r["read_hit_ratio_ok"] else "NO",
            "yes" if r["mean_latency_ok"] else "NO", " (trace shorter than the live run)" if r["short_trace"] else ""))
    for k, r in s["results"].items():
        lv, sm = r["live"], r["sim"]
        lines.append("hbl-%s: requests %d + %d; promotions live %d sim %d, evictions live %d sim %d, moved live "
                     "%.0f MiB sim %.0f MiB; sim read hit ratio warm-up %.3f measured %.3f; live fast request share %.3f; "
                     "live read %.0f us write %.0f us" % (k, lv["warm_requests"], lv["measure_requests"],
                                                          lv["promotions"], sm["promotions"], lv["evictions"],
                                                          sm["evictions"], lv["migrated_mib"], sm["migrated_mib"],
                                                          sm["warm_read_hit_ratio"], sm["measure_read_hit_ratio"],
                                                          lv["fast_request_share"], lv["read_mean_us"], lv["write_mean_us"]))
        lines.append("hbl-%s: live %d stalls (p50 %.1f ms, p99 %.1f ms), request seen -> remap p50 %.1f s p99 %.1f s, "
                     "copies at %.1f MiB/s" % (k, lv["stall_ms"]["count"], lv["stall_ms"]["p50"] or 0,
                                               lv["stall_ms"]["p99"] or 0, (lv["decision_to_remap_ms"]["p50"] or 0) / 1e3,
                                               (lv["decision_to_remap_ms"]["p99"] or 0) / 1e3, lv["copy_bandwidth_mib_s"]))
        lines.append("hbl-%s: sim device busy NVMe %.0f%% HDD %.0f%%, %d evictions waited for; counterfactuals: "
                     "writes replayed as reads read hit %.3f mean %.0f us; 4 KiB pages read hit %.3f mean %.0f us" % (
                         k, 100 * sm["device_utilization"][0], 100 * sm["device_utilization"][1],
                         sm["sync_evictions"], r["diagnosis"]["writes_as_reads"]["read_hit_ratio"],
                         r["diagnosis"]["writes_as_reads"]["mean_latency_us"],
                         r["diagnosis"]["pages_of_4k"]["read_hit_ratio"], r["diagnosis"]["pages_of_4k"]["mean_latency_us"]))
        lines += breakdown(k, r, max_batch)
    cap = s["capture"].get("measure", {})
    if cap.get("fio_mean_latency_us"):
        lines.append("the same fio job on the guest's unthrottled virtio scratch disk (the capture), measured "
                     "phase: mean %.0f us at %.0f IOPS (the guest's own cost per I/O under TCG)" % (
                         cap["fio_mean_latency_us"], cap["fio_iops"]))
    h = s.get("host")
    if h:
        lines.append("host: %s, %d cores; load (1, 5, 15 min) %s at %s UTC, %s at the end; the guest ran %d s" % (
            h["start"]["cpu"], h["start"]["cores"], " ".join("%.1f" % x for x in h["start"]["load"]),
            h["start"]["utc"], " ".join("%.1f" % x for x in h["end"]["load"]), h["guest_seconds"]))
    return "\n".join(lines)


def breakdown(k, r, max_batch):
    """Where the measured phase's time goes, live (fio's percentiles) and simulated (by device)."""
    lv, sm, out = r["live"], r["sim"], []
    f = (lv.get("fio") or {}).get("measure")
    if f:
        out.append("hbl-%s: live measured phase, fio: reads submission %.0f us + completion mean %.0f us (p10 %.0f "
                   "p50 %.0f p90 %.0f p99 %.0f); writes %.0f + %.0f us (p10 %.0f p50 %.0f p90 %.0f p99 %.0f)" % (
                       (k,) + tuple(f[side][x] for side in ("read", "write")
                                    for x in ("submit_mean_us", "mean_us", "p10_us", "p50_us", "p90_us", "p99_us"))))
    ph = lv.get("phase_read_hit_ratio")
    if ph:
        out.append("hbl-%s: read hit ratio by phase, warm-up / measured: live %s / %s (the status timeline, rows "
                   "weighted by requests), sim %.3f / %.3f" % (
                       k, *("%.3f" % ph[x] if ph[x] is not None else "-" for x in ("warm", "measure")),
                       sm["warm_read_hit_ratio"], sm["measure_read_hit_ratio"]))
    sv = sm["measure_served"]
    out.append("hbl-%s: sim measured phase: %.1f%% of requests served by the NVMe alone, mean %.0f us; the "
               "others mean %.0f us; waits behind background copies %.0f us and evictions made synchronous "
               "%.0f us per request" % (k, 100 * sv["nvme_only_share"], sv["nvme_only_mean_us"], sv["hdd_mean_us"],
                                        sm["measure_background_wait_us"], sm["measure_sync_wait_us"]))
    share = (lv.get("phase_fast_request_share") or {}).get("measure")
    if share is not None:
        mix = share * sv["nvme_only_mean_us"] + (1 - share) * sv["hdd_mean_us"]
        out.append("hbl-%s: the simulator's means by device at the live share of requests served by the NVMe "
                   "in the measured phase (%.3f, the timeline): %.0f us, live %.0f us (%+.0f%%)" % (
                       k, share, mix, lv["mean_latency_us"], 100 * (mix / lv["mean_latency_us"] - 1)))
    if lv.get("hold_ms"):
        hw = lv.get("held_io_ms") or {}
        out.append("hbl-%s: live %d batches (sim %s), %d moves given back stale, hold p50 %.0f ms p99 %.0f ms, %d "
                   "requests held (p99 %.0f ms), controller CPU %.0f%%" % (
                       k, lv.get("batches", 0), sm.get("batches") or "-", lv.get("stale_moves", 0),
                       lv["hold_ms"].get("p50") or 0, lv["hold_ms"].get("p99") or 0, hw.get("count") or 0,
                       hw.get("p99") or 0, 100 * lv.get("controller_cpu", 0)))
    if lv.get("asked_moves") is not None:
        out.append("hbl-%s: live moves %d asked, %d done, %d given back stale (%.1f%%), %d refused (%.1f%%); queue "
                   "capacity %s, %.1f moves/s carried by full batches" % (
                       k, lv["asked_moves"], lv.get("moves_done") or 0, lv.get("stale_moves", 0),
                       100 * (lv.get("stale_share") or 0), lv.get("refused_moves") or 0,
                       100 * (lv.get("refused_share") or 0), lv.get("move_queue_capacity") or "-",
                       lv.get("carried_moves_per_s") or 0))
    d = r["diagnosis"]
    c = d["compare_model"]
    out.append("hbl-%s: the simulator as hbl compare runs it (copies in idle time only, a page served from its new "
               "device once its copy is queued, a page read in part not read): read hit %.3f (warm-up %.3f, "
               "measured %.3f), mean %.0f us, moved %.0f MiB" % (
                   k, c["read_hit_ratio"], c["warm_read_hit_ratio"], c["measure_read_hit_ratio"],
                   c["mean_latency_us"], c["migrated_mib"]))
    out.append("hbl-%s: the live copies less one part: %s" % (k, "; ".join(
        "%s off read hit %.3f mean %.0f us" % (o, d["without_" + o]["read_hit_ratio"], d["without_" + o]["mean_latency_us"])
        for o in LIVE_COPY if "without_" + o in d)))
    q = d["live_queue"]
    out.append("hbl-%s: counterfactual, the live device's queue (%d pages per device at most, its capacity at the "
               "end of the run): read hit %.3f (warm-up %.3f, measured %.3f), mean %.0f us, promotions %d, moves "
               "refused %d" % (k, q["backlog"], q["read_hit_ratio"], q["warm_read_hit_ratio"],
                               q["measure_read_hit_ratio"], q["mean_latency_us"], q["promotions"], q["moves_refused"]))
    for key, what in (("live_copies", "the live copies alone (this table's model until 2026-12-05: a copier beside "
                                      "the application, every move queued at once, the fast device empty at first)"),
                      ("without_live_batches", "the live model less its batches (every move queued at once)"),
                      ("without_initial_mapping", "the live model less its initial mapping (the fast device empty "
                                                  "at first, a page never placed on the HDD until a batch moves it)")):
        if key in d:
            q = d[key]
            out.append("hbl-%s: %s: read hit %.3f (warm-up %.3f, measured %.3f), mean %.0f us, promotions %d, "
                       "evictions %d, moves refused %d, moved %.0f MiB, waits behind copies %.0f us per request" % (
                           k, what, q["read_hit_ratio"], q["warm_read_hit_ratio"], q["measure_read_hit_ratio"],
                           q["mean_latency_us"], q["promotions"], q["evictions"], q["moves_refused"],
                           q["migrated_mib"], q["measure_background_wait_us"]))
    if "controller_time" in d:
        q = d["controller_time"]
        out.append("hbl-%s: counterfactual, the live model with the controller's own time per batch (this run's "
                   "p50s: %.0f ms before the copies, %.0f ms after them; a cost of this host, not a model): read hit "
                   "%.3f (warm-up %.3f, measured %.3f), mean %.0f us, %d batches, promotions %d, moved %.0f MiB" % (
                       k, *q["overhead_ms"], q["read_hit_ratio"], q["warm_read_hit_ratio"],
                       q["measure_read_hit_ratio"], q["mean_latency_us"], q["batches"], q["promotions"],
                       q["migrated_mib"]))
    b = d["live_pace"]
    out.append("hbl-%s: counterfactual, copies at the live device's pace (queues of %d pages, %.1f MB/s, the "
               "live moves of this run): read hit %.3f (warm-up %.3f, measured %.3f), mean %.0f us, promotions %d, "
               "moves refused %d" % (k, max_batch, b["rate_mb_s"], b["read_hit_ratio"], b["warm_read_hit_ratio"],
                                     b["measure_read_hit_ratio"], b["mean_latency_us"], b["promotions"],
                                     b["moves_refused"]))
    return out
