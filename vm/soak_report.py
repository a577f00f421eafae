"""A soak's figures so far (`hbl vm soak --report OUT`), from what it keeps in OUT: the guest's
plan and records (OUT/soak/state.json) and the host's counts (OUT/soak/host.json).  Read while
the soak runs, after it was paused, or after it ended; nothing is written and no guest boots.

Per kind: faults, seconds a fault (mean, median, min-max: a power cut's seconds include the wait
for the host, which is a session's pause when the soak was stopped at a cut), the writer's I/O
errors (the faults with any, the members marked failed), the faults injected at a protocol step
rather than at a random moment, and the blocks verified after each.
"""
import json
import os
import statistics

from hbl.errors import HblError


def load(out_dir):
    """(state, host) of the soak in out_dir; an HblError naming the file when there is none."""
    soak_dir = os.path.join(os.path.abspath(out_dir), "soak")
    got = []
    for name in ("host.json", "state.json"):
        path = os.path.join(soak_dir, name)
        try:
            with open(path) as f:
                got.append(json.load(f))
        except FileNotFoundError:
            if got:         # the host began it; the guest writes its state once it has set the device up
                raise HblError("--report %s: the soak has not begun its first fault yet (no %s)"
                               % (out_dir, path)) from None
            raise HblError("--report %s: no soak there (no %s)" % (out_dir, path)) from None
        except ValueError as exc:
            raise HblError("--report %s: %s is damaged: %s" % (out_dir, path, exc)) from None
    return got[1], got[0]


def figures(state, host):
    """The soak's figures as a dict (what --report --json prints)."""
    recs = state["records"]
    kinds = {}
    for k in state["kinds"]:
        rs = [r for r in recs if r["kind"] == k]
        secs = [r["seconds"] for r in rs]
        kinds[k] = {
            "faults": len(rs), "planned": state["plan"].count(k),
            "seconds_mean": round(statistics.fmean(secs), 1) if secs else None,
            "seconds_median": round(statistics.median(secs), 1) if secs else None,
            "seconds_min": min(secs, default=None), "seconds_max": max(secs, default=None),
            "io_errors": sum(r["io_errors"] for r in rs),
            "faults_with_io_errors": sum(1 for r in rs if r["io_errors"]),
            "members_marked_failed": sum(1 for r in rs if r["member_marked_failed"]),
            "at_a_protocol_step": sum(1 for r in rs if r["step"].startswith("step ")),
            "blocks_verified_mean": round(statistics.fmean(r["blocks_verified"] for r in rs)) if rs else None}
    done, planned = len(recs), len(state["plan"])
    mean = statistics.fmean(r["seconds"] for r in recs) if recs else None
    status = ("failed" if state.get("failure") else "ended" if done >= planned
              else "waiting for a power cut" if state.get("pending") else "in progress or paused")
    return {"seed": state["seed"], "faults_per_kind": state["faults_per_kind"], "done": done, "planned": planned,
            "status": status, "failure": state.get("failure"), "lost_writes": state["lost"],
            "unrecoverable": state["unrecoverable"], "guest_boots": host["boots"],
            "host_sessions": host["sessions"], "interruptions": len(state.get("interruptions", [])),
            "seconds_in_faults": round(sum(r["seconds"] for r in recs), 1),
            "to_go_seconds": round(mean * (planned - done)) if mean is not None else None,
            "kinds": kinds}


def text(f):
    """figures() as the table a person reads."""
    lines = ["soak, seed %d: %d of %d faults (%s); %d lost writes, %d unrecoverable; %d guest boots, "
             "%d host sessions, %d faults interrupted and run again" % (
                 f["seed"], f["done"], f["planned"], f["status"], f["lost_writes"], f["unrecoverable"],
                 f["guest_boots"], f["host_sessions"], f["interruptions"])]
    if f["failure"]:
        lines.append("failure: " + f["failure"])
    rows = [("kind", "faults", "s/fault: mean", "median", "min-max", "I/O errors", "faults with any",
             "member marked failed", "at a step", "blocks verified")]
    for k, d in f["kinds"].items():
        rows.append((k, str(d["faults"])) + (("-",) * 8 if not d["faults"] else (
            "%.1f" % d["seconds_mean"], "%.1f" % d["seconds_median"],
            "%.1f-%.1f" % (d["seconds_min"], d["seconds_max"]), str(d["io_errors"]), str(d["faults_with_io_errors"]),
            str(d["members_marked_failed"]), str(d["at_a_protocol_step"]), str(d["blocks_verified_mean"]))))
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    lines += ["  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths))).rstrip()
              for r in rows]
    if f["to_go_seconds"] and f["done"] < f["planned"]:
        lines.append("%d faults to go: about %.1f h at this soak's mean so far (%.1f s a fault)" % (
            f["planned"] - f["done"], f["to_go_seconds"] / 3600, f["seconds_in_faults"] / f["done"]))
    return "\n".join(lines)
