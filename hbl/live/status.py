"""What hbl status and hbl top show of a running live device: the controller's counters
and timings, summed up in its status file."""
import os
import resource
import time

import numpy as np

from hbl.live import layout


def cpu_s(who=resource.RUSAGE_SELF):
    r = resource.getrusage(who)
    return r.ru_utime + r.ru_stime


def thread_times():
    """(user, kernel) CPU seconds of the calling thread."""
    r = resource.getrusage(getattr(resource, "RUSAGE_THREAD", resource.RUSAGE_SELF))
    return r.ru_utime, r.ru_stime


def thread_cpu_s():
    """CPU seconds of the calling thread (the controller's; the agents train on another)."""
    user, kernel = thread_times()
    return user + kernel


class CpuLedger:
    """The controller thread's CPU by what it was doing: name -> [user s, kernel s], summed over
    the spans measured (the steps of the batches, the tick's planning and observing); what is
    not in a span is the rest of the loop (polls, notes, the status).  Two getrusage calls a
    span: a few dozen a second."""

    def __init__(self):
        self.spent = {}

    def add(self, name, since):
        """The span from `since` (a thread_times()) to now, counted to `name`; returns now."""
        now = thread_times()
        acc = self.spent.setdefault(name, [0.0, 0.0])
        acc[0] += now[0] - since[0]
        acc[1] += now[1] - since[1]
        return now


def pct(a, q):
    """The q-quantile of the sorted list `a` (None if empty)."""
    return a[min(len(a) - 1, int(q * len(a)))] if a else None


def settle_summary(steps):
    """How many batches' settle ran out of time (SETTLE_S), and the hold p99 of those beside
    the others' (None where there is none)."""
    split = lambda to: sorted(b["hold_ms"] for b in steps if bool(b["settle_timed_out"]) == to)
    return {"settle_timeouts": sum(bool(b["settle_timed_out"]) for b in steps),
            "hold_ms_by_settle": {"timed_out_p99": pct(split(True), 0.99), "settled_p99": pct(split(False), 0.99)}}


def step_keys(step):
    """The keys of a batch's step times (Batch.finish's dict) that hold numbers (not its lists and flags)."""
    return [k for k, v in step.items() if not isinstance(v, (list, bool))]


def step_row(step):
    """A batch's step times as the row steps_p50 takes: its numbers, in step_keys' order."""
    return [step[k] for k in step_keys(step)]


class StepRows:
    """The last `size` batches' step_row()s, in a ring of one numpy array: the status's
    medians read it as it is (converting 2000 rows of Python numbers to an array, each time
    the status was written, was most of its cost)."""

    def __init__(self, size):
        self.size, self.n, self.a = size, 0, None

    def append(self, row):
        if self.a is None:
            self.a = np.zeros((self.size, len(row)), np.float64)
        self.a[self.n % self.size] = row
        self.n += 1

    def array(self):
        return self.a[:min(self.n, self.size)] if self.a is not None else np.zeros((0, 0))


def steps_p50(steps, rows):
    """Each step's median over the batches: `steps` their dicts (alike), `rows` their
    step_row()s, kept as each batch finished (a StepRows, or a list of them)."""
    if not steps:
        return {}
    rows = rows.array() if isinstance(rows, StepRows) else np.array(rows, np.float64)
    return dict(zip(step_keys(steps[0]), np.median(rows, axis=0).tolist()))


def hit_figures(count):
    """The hit figures of the controller's counters, by the simulator's names and meaning:
    read_hit_ratio, the page reads the fast device served (reads only: a write is never a
    hit), fast_write_share, the page writes it took; and fast_request_share, the requests,
    reads and writes together, that went to it (the figure `hbl status` called fast_hit_ratio
    before 2026-12-02)."""
    ratio = lambda a, b: count[a] / count[b] if count[b] else 0.0
    total = count["reads"] + count["writes"]
    return {"read_hit_ratio": ratio("fast_read_pages", "read_pages"),
            "fast_write_share": ratio("fast_write_pages", "write_pages"),
            "fast_request_share": count["fast_hits"] / total if total else 0.0}


def move_figures(count):
    """The moves asked for (by the decider, or remaps of the write frontier) and what became
    of them: done, given back stale, refused at once (the queue full); the shares of those
    asked."""
    asked = count["asked_moves"]
    share = lambda k: count[k] / asked if asked else 0.0
    return {"asked_moves": asked, "moves_done": count["promotions"] + count["evictions"],
            "stale_moves": count["stale_moves"], "refused_moves": count["refused_moves"],
            "stale_share": share("stale_moves"), "refused_share": share("refused_moves")}


def running_status(c):
    """The status of the running Controller `c`, as its status file carries it."""
    m = c.meta
    written = np.bincount(m.dev[m.written == 1], minlength=len(m.members))
    st = sorted(c.stalls)
    ho = sorted(c.holds)
    hw = sorted(c.held_waits)
    dec = sorted(c.decision_ns)
    pl = sorted(c.plan_ns)
    wall = time.time() - c.t0
    hot = np.argsort(-c.heat)[:20]
    cs = c.cap.stats()
    out = layout.describe(m, c.free)
    for i, d in enumerate(out["devices"]):
        # completion_seen: its records carry their completion (False: a bio-based member other
        # than a dm device, whose writes count as in flight until a batch drained them)
        d.update(written_extents=int(written[i]), read_latency_us=c.lat[i, 0] / 1e3,
                 write_latency_us=c.lat[i, 1] / 1e3, completion_seen=not bool(c.open_writes.bio[i]))
    return {
        **out, "state": "running", "pid": os.getpid(), "path": c.dev.path, "policy": c.policy,
        "uptime_s": wall,
        "reads": c.count["reads"], "writes": c.count["writes"],
        **hit_figures(c.count),
        "promotions": c.count["promotions"], "evictions": c.count["evictions"],
        "remaps_without_copy": c.count["remaps_without_copy"],
        "migrated_bytes": c.count["migrated_bytes"], "recopied_bytes": c.count["recopied_bytes"],
        "batches": c.count["batches"], "rollbacks": c.count["rollbacks"],
        **move_figures(c.count),
        "pending_moves": len(c.queue),
        # the most moves the queue holds (what the controller carries out before one goes
        # stale, at the rate its recent full batches carried; None: none measured yet)
        "move_queue_capacity": c.queue.capacity(c.options.max_batch, c.options.interval),
        "carried_moves_per_s": c.queue.rate(),
        "copy_bandwidth_bytes_s": c.copier.bandwidth(), "copy_rate_limit_bytes_s": c.copier.throttle.rate,
        "copy_depth": c.copier.depth,
        "copy_idle_read_latency_us": c.copier.throttle.baseline and c.copier.throttle.baseline / 1e3,
        "stall_ms": {"last": st and c.stalls[-1], "p50": pct(st, 0.5), "p99": pct(st, 0.99),
                     "max": st[-1] if st else None, "count": len(st)},
        "hold_ms": {"last": ho and c.holds[-1], "p50": pct(ho, 0.5), "p99": pct(ho, 0.99),
                    "max": ho[-1] if ho else None, "count": len(ho), "last_breakdown": c.last_stall},
        "batch_steps_ms_p50": steps_p50(c.steps, c.step_rows),
        "slowest_holds": sorted(c.steps, key=lambda b: b["hold_ms"])[-5:],
        **settle_summary(c.steps),
        "held_io_ms": {"p50": pct(hw, 0.5), "p99": pct(hw, 0.99), "max": hw[-1] if hw else None,
                       "count": len(hw)},
        "decision_to_remap_ms": {"p50": pct(dec, 0.5) and pct(dec, 0.5) / 1e6,
                                 "p99": pct(dec, 0.99) and pct(dec, 0.99) / 1e6},
        # of which the wait for a batch to begin (the rest: the batch, up to the switch)
        "decision_to_batch_ms": {"p50": pct(pl, 0.5) and pct(pl, 0.5) / 1e6,
                                 "p99": pct(pl, 0.99) and pct(pl, 0.99) / 1e6},
        "controller_cpu": (cpu_s() - c.cpu0) / wall if wall > 0 else 0.0,
        # of which the controller's thread (the rest: the agents' training thread, the uevent watch)
        "controller_cpu_main": (thread_cpu_s() - c.cpu0_main) / wall if wall > 0 else 0.0,
        # the controller thread's CPU seconds since its start, user and kernel, and by span (CpuLedger)
        "controller_thread_times": [a - b for a, b in zip(thread_times(), c.times0)],
        "controller_cpu_ledger": c.cpu_ledger.spent,
        "agents": c.decider.stats().get("agents", []),
        "ebpf": {"events": cs["events"], "lost": cs["lost"]},
        "unsure_after_crash": c.unsure,
        "degraded": {m.members[d]["path"]: why for d, why in sorted(c.failed.items())},
        "hot_extents": [{"extent": int(e), "device": int(m.dev[e]), "heat": float(c.heat[e]),
                         "reads": int(c.rw[e, 0]), "writes": int(c.rw[e, 1])}
                        for e in hot.tolist() if c.heat[e] > 0],
        "decisions": list(c.decisions)[-20:],
        "timeline": list(c.timeline),
    }
