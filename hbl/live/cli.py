"""`hbl up`, `hbl down`, `hbl status`, `hbl top`: the live device from the command line."""
import json
import os
import re
import signal
import subprocess
import sys
import time

from hbl.cmdline import positive, print_json
from hbl.errors import HblError
from hbl.live.options import Options

EPILOG_UP = """examples:
  hbl up fast0 --dev /dev/nvme0n1 --dev /dev/sdb            create, start the controller (daemon)
  hbl up fast0                                                re-assemble after down, reboot or crash
  hbl up fast0 --dev /dev/nvme0n1 --dev /dev/sdb --policy smq --foreground
  hbl up fast0 --dev ... --agent trained.agent                agents trained with hbl simulate --save-agent

State (metadata, log, saved agents) lives in /var/lib/hbl/NAME (--state-dir
or HBL_STATE_DIR to change); the controller's lock and live status in
/run/hbl/NAME.  Writing a device destroys what it
holds: hbl refuses devices that are mounted, in use, or carry a file system,
partition table or other signature (--force overrides signatures only)."""


def _state_arg(p):
    p.add_argument("--state-dir", help="where device state lives (default /var/lib/hbl, or $HBL_STATE_DIR)")


def add_parsers(sub):
    up = sub.add_parser("up", help="create or re-assemble a live hybrid device and start its controller (root)",
                        description="Create /dev/mapper/NAME over 2-4 block devices (fastest first), or "
                        "re-assemble it from its metadata, and start the controller that places and migrates "
                        "its extents with a policy (harmonia by default) from live eBPF observations.",
                        epilog=EPILOG_UP, formatter_class=__import__("argparse").RawDescriptionHelpFormatter)
    up.add_argument("name", help="device name: /dev/mapper/NAME")
    up.add_argument("--dev", action="append", metavar="DEVICE",
                    help="member device, fastest first (2 to 4; only when creating)")
    up.add_argument("--extent", default="1M", help="extent size, the unit of placement (default 1M)")
    up.add_argument("--spares", type=int, help="spare extents held back per device (default 1%%, 4..64)")
    up.add_argument("--policy", help="placement/migration policy (default harmonia; hbl policies lists them)")
    up.add_argument("--param", action="append", metavar="K=V",
                    help="policy parameter (repeatable); the placement agents of sibyl and harmonia default to "
                         "reward=1, train_every=25, sync_every=250 here (see ctypes_core/rl.h)")
    up.add_argument("--agent", help="load the policy's agents from this file (hbl simulate --save-agent)")
    up.add_argument("--force", action="store_true", help="write devices that carry a signature")
    up.add_argument("--foreground", action="store_true", help="run the controller here, not as a daemon")
    up.add_argument("--interval", type=float, default=Options.interval,
                    help="seconds between migration batches (default %g)" % Options.interval)
    up.add_argument("--max-batch", type=int, default=Options.max_batch,
                    help="moves per batch at most (default %d)" % Options.max_batch)
    up.add_argument("--frontier", type=int, default=Options.frontier,
                    help="unwritten extents after a first write remapped to where new data goes (default %d)"
                    % Options.frontier)
    up.add_argument("--copy-limit", metavar="RATE",
                    help="migration copies at most RATE bytes per second (e.g. 8M); by default only the "
                         "adaptive limit, which backs off when the slowest member's reads are 1.5x slower than in "
                         "intervals with no copy (one is left idle every 5 s to measure that)")
    up.add_argument("--copy-rate", metavar="RATE",
                    help="migration copies at a fixed RATE bytes per second (e.g. 16M), the adaptive limit "
                         "off: every policy's copies then get the same share of the members")
    up.add_argument("--copy-depth", type=int, default=Options.copy_depth, metavar="N",
                    help="a batch's extent copies in flight at once (default %d): each waits behind the "
                         "members' queues, so one at a time a batch takes that wait per copy; more shortens a "
                         "batch and puts more of its requests ahead of the application's" % Options.copy_depth)
    up.add_argument("--train-budget", type=float, default=Options.train_budget, metavar="SHARE",
                    help="the most of one CPU the learning policies' online training takes, 0 to 1 (default "
                         "%g; 0: no limit, a step every train_every decisions as fast as it can)" % Options.train_budget)
    up.add_argument("--wait", type=float, default=120, help="daemon: seconds to wait for it to start")
    up.add_argument("--json", action="store_true", help="print the device's status as JSON once it is up")
    _state_arg(up)
    up.set_defaults(func=cmd_up)

    dn = sub.add_parser("down", help="stop the controller and remove the device; data and metadata are kept",
                        description="Finish or roll back the migration in progress, save the agents, flush, "
                        "persist the mapping and remove /dev/mapper/NAME.  hbl up NAME brings it back.")
    dn.add_argument("name", help="device name: /dev/mapper/NAME")
    dn.add_argument("--timeout", type=float, default=300, help="seconds to wait for the controller (default 300)")
    dn.add_argument("--json", action="store_true", help="print the device's last status as JSON")
    _state_arg(dn)
    dn.set_defaults(func=cmd_down)

    st = sub.add_parser("status", help="devices, fill, hits, migrations, holds, agents of a live device",
                        description="The state of a live device: per member fill and latency, reads and "
                        "writes, read hit ratio (page reads the fast device served), fast write and request "
                        "shares, promotions, evictions, bytes migrated, copy bandwidth, "
                        "time moving extents are held, agent state, lost eBPF records.  The controller "
                        "writes its status every 5 s, and at once when asked: this asks it (and waits up to "
                        "2 s), so the figures are current.")
    st.add_argument("name", help="device name: /dev/mapper/NAME")
    st.add_argument("--json", action="store_true", help="print the status as JSON")
    _state_arg(st)
    st.set_defaults(func=cmd_status)

    tp = sub.add_parser("top", help="live view of the hottest extents and the latest decisions")
    tp.add_argument("name", help="device name: /dev/mapper/NAME")
    tp.add_argument("--interval", type=positive(3600), default=1.0, help="refresh period in seconds (default 1)")
    tp.add_argument("--once", action="store_true", help="print one frame and exit")
    tp.add_argument("--json", action="store_true", help="print one frame as JSON and exit")
    _state_arg(tp)
    tp.set_defaults(func=cmd_top)


def _root(what):
    if os.geteuid() != 0:
        raise HblError("%s needs root (it writes block devices and loads eBPF programs): run with sudo" % what)


def _paths(a):
    from hbl.live.paths import Paths
    if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_.+-]{0,63}", a.name):
        raise HblError("%r is not a usable device name (letters, digits, _ . + -; at most 64)" % a.name)
    return Paths(a.name, a.state_dir)


def _load_meta(paths, name, whole=True):
    """The device's metadata; with whole=False only whether there is any (the controller loads it)."""
    if not os.path.exists(paths.meta):
        raise HblError("no live device %s (no metadata at %s); create one with hbl up %s --dev FAST --dev SLOW"
                       % (name, paths.meta, name))
    if whole:
        from hbl.live.meta import Meta
        return Meta.load(paths.meta)


def create(a, paths):
    """Check the devices, write the superblocks and the first metadata."""
    from hbl.live import layout, meta as metamod, safety
    from hbl.live.host import preflight
    from hbl.live.decider import Decider
    from hbl.sim.registry import parse_params, policy_names, refuse_live
    if os.path.exists(paths.meta):
        raise HblError("%s already exists (metadata at %s): hbl up %s re-assembles it without --dev" % (
            a.name, paths.meta, a.name))
    if os.path.exists("/dev/mapper/" + a.name):
        raise HblError("/dev/mapper/%s already exists and is not an hbl device known here" % a.name)
    policy = a.policy or "harmonia"
    refuse_live(policy)
    if policy not in policy_names("live"):
        raise HblError("policy %r cannot drive a live device (hbl policies marks those that can: live)" % policy)
    params = parse_params(a.param)
    safety.check_devices(a.dev, a.force)
    preflight()
    ext = layout.parse_size(a.extent)
    members = layout.plan_members(a.dev, ext, a.spares)
    Decider(policy, ext, layout.capacities(members), params=params, agents=a.agent)   # bad params or agents fail
    dev, slot, written = layout.initial_mapping(members)
    m = metamod.Meta(a.name, metamod.new_uuid(), ext, members, dev, slot, written, clean=True, policy=policy,
                     params=params)
    for i, mem in enumerate(members):
        metamod.write_superblock(mem["path"], metamod.superblock(m.uuid, i, len(members), ext, mem["size"],
                                                                 mem["data_start"]))
    m.save(paths.meta)
    print("hbl: created %s: %.1f GiB in %d extents of %s over %s" % (
        a.name, m.size_bytes / 2**30, m.nextents, a.extent, ", ".join(
            "%s (%d extents)" % (x["path"], x["slots"]) for x in members)), file=sys.stderr)
    return m


def _size(text):
    """A size option's bytes, None when not given (the layout module, and NumPy, only then)."""
    if not text:
        return None
    from hbl.live.layout import parse_size
    return parse_size(text)


def _params(items):
    """--param's dict, None when not given (the policy registry, and the C core, only then)."""
    if not items:
        return None
    from hbl.sim.registry import parse_params
    return parse_params(items)


def cmd_up(a):
    # (imports where they are needed: the parent of a daemon, which only starts the controller and
    # waits for its status, loads neither NumPy nor the C core, seconds under TCG)
    from hbl.live.paths import controller_pid
    copy_limit = _size(a.copy_limit)        # before anything is written
    if copy_limit is not None and copy_limit < 1 << 20:
        raise HblError("--copy-limit %s: at least 1M a second (one extent copy is up to 1 MiB)" % a.copy_limit)
    copy_rate = _size(a.copy_rate)
    if copy_rate is not None and copy_rate < 1 << 20:
        raise HblError("--copy-rate %s: at least 1M a second (one extent copy is up to 1 MiB)" % a.copy_rate)
    if copy_rate and copy_limit:
        raise HblError("--copy-rate and --copy-limit: one or the other (a fixed rate, or a cap on the adaptive one)")
    if not 1 <= a.copy_depth <= 16:
        raise HblError("--copy-depth %d: from 1 to 16 copies at once" % a.copy_depth)
    if not 0 <= a.train_budget <= 1:
        raise HblError("--train-budget %g: a share of one CPU, from 0 (no limit) to 1" % a.train_budget)
    _root("hbl up")
    paths = _paths(a)
    paths.make()            # before anything is written to a device
    if a.dev:
        create(a, paths)
    else:
        if a.force or a.spares is not None:
            raise HblError("--force and --spares go with --dev (creating a device)")
        _load_meta(paths, a.name, whole=a.foreground)
    pid = controller_pid(paths)
    if pid:
        raise HblError("%s is already up (controller pid %d)" % (a.name, pid))
    params = _params(a.param)
    if a.foreground:
        from hbl.live.controller import Controller
        c = Controller(paths, Options(policy=a.policy, params=params, agent=a.agent, interval=a.interval,
                                      max_batch=a.max_batch, frontier=a.frontier, copy_limit=copy_limit,
                                      copy_fixed=copy_rate, copy_depth=a.copy_depth,
                                      train_budget=a.train_budget))
        c.start()
        c.run()
        return 0
    cmd = [sys.executable, "-m", "hbl.cli", "up", a.name, "--foreground", "--state-dir",
           os.path.dirname(paths.dir), "--interval", str(a.interval), "--max-batch", str(a.max_batch),
           "--frontier", str(a.frontier), "--copy-depth", str(a.copy_depth), "--train-budget", str(a.train_budget)]
    if a.policy:
        cmd += ["--policy", a.policy]
    for p in a.param or []:
        cmd += ["--param", p]
    if a.agent:
        cmd += ["--agent", os.path.abspath(a.agent)]
    if copy_limit:
        cmd += ["--copy-limit", str(copy_limit)]
    if copy_rate:
        cmd += ["--copy-rate", str(copy_rate)]
    if os.path.exists(paths.status):
        os.unlink(paths.status)
    log = open(paths.log, "ab")
    start = log.tell()
    child = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=log, stderr=log, start_new_session=True,
                             env=dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path)))
    deadline = time.time() + a.wait
    while time.time() < deadline:
        if child.poll() is not None:
            with open(paths.log, "rb") as f:
                f.seek(start)
                tail = f.read().decode(errors="replace").strip().splitlines()
            msg = next((l for l in reversed(tail) if "error" in l.lower()), tail[-1] if tail else "no output")
            msg = re.sub(r"^hbl: error: ", "", msg.strip())       # the controller's own one-line error
            raise HblError("the controller of %s did not start: %s (log: %s)" % (a.name, msg, paths.log))
        st = _read_status(paths)
        if st and st.get("pid") == child.pid:
            if a.json:
                print_json(st)
            else:
                print("hbl: %s is up at %s (controller pid %d, policy %s; log %s)" % (
                    a.name, st["path"], child.pid, st["policy"], paths.log))
            return 0
        time.sleep(0.2)
    child.send_signal(signal.SIGTERM)
    raise HblError("the controller of %s did not report within %.0f s (log: %s)" % (a.name, a.wait, paths.log))


def _read_status(paths):
    try:
        with open(paths.status) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def cmd_down(a):
    from dmsetup import backend
    from hbl.live.paths import controller_pid
    from hbl.live.safety import mounts_of
    _root("hbl down")
    paths = _paths(a)
    m = _load_meta(paths, a.name)
    node = "/dev/mapper/" + a.name
    if os.path.exists(node):
        mnt = mounts_of([os.stat(node).st_rdev])
        if mnt:
            raise HblError("%s is mounted on %s: unmount it first; nothing was changed" % (node, ", ".join(mnt)))
    pid = controller_pid(paths)
    if pid:
        os.kill(pid, signal.SIGTERM)
        deadline = time.time() + a.timeout
        while controller_pid(paths) and time.time() < deadline:
            time.sleep(0.1)
        if controller_pid(paths):
            raise HblError("the controller (pid %d) did not stop within %.0f s" % (pid, a.timeout))
        st = _read_status(paths) or {}
        if a.json:
            print_json(st)
        else:
            print("hbl: %s is down (%s); its data and mapping are kept: hbl up %s brings it back" % (
                a.name, st.get("state", "stopped"), a.name))
        return 0 if st.get("state") != "stopped-device-busy" else 1
    dm = backend()
    try:
        dm.info(a.name)
    except OSError:
        print("hbl: %s is not up" % a.name, file=sys.stderr)
        return 0
    # The controller died and left the device, perhaps suspended or with a table
    # the metadata does not describe yet: make the metadata's table live first
    # (as hbl up would), so that nothing written before the removal is misplaced.
    from hbl.live.host import assemble, check_members
    check_members(m)
    assemble(m, dm).remove()
    print("hbl: %s had no controller (it died?); its table was rebuilt from the metadata (generation %d) "
          "and the device removed" % (a.name, m.generation))
    return 0


def _offline_status(paths, m):
    from hbl.live import layout
    up = os.path.exists("/dev/mapper/" + m.name)
    return {**layout.describe(m, layout.free_slots(m)), "state": "up without controller" if up else "down",
            "clean": m.clean, "degraded": {x["path"]: x["failed"] for x in m.members if x.get("failed")},
            **{k: m.counters.get(k, 0) for k in ("reads", "writes", "promotions", "evictions", "migrated_bytes")}}


def status_of(paths, name):
    """The running controller's status, asked for now (it writes it every few seconds
    otherwise), or the metadata's when none runs."""
    from hbl.live.paths import ask_status, controller_pid
    m = _load_meta(paths, name)
    pid = controller_pid(paths)
    if pid:
        ask_status(paths)
    st = _read_status(paths) if pid else None
    if st and st.get("pid") == pid:
        return st
    return _offline_status(paths, m)


def _fmt_bytes(n):
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(n) < 1024 or unit == "TiB":
            return "%.1f %s" % (n, unit) if unit != "B" else "%d B" % n
        n /= 1024


def cmd_status(a):
    paths = _paths(a)
    st = status_of(paths, a.name)
    if a.json:
        print_json(st)
        return 0
    print("%s: %s, %s in %d extents of %s, policy %s, mapping generation %d" % (
        st["name"], st["state"], _fmt_bytes(st["size_bytes"]), st["extents"], _fmt_bytes(st["extent_bytes"]),
        st["policy"], st["generation"]))
    for path, why in st.get("degraded", {}).items():
        print("  DEGRADED: %s failed (%s): no migration touches it; its extents return errors" % (path, why))
    print("  %-22s %8s %8s %7s %6s %12s %12s" % ("device", "slots", "extents", "fill", "free", "read lat", "write lat"))
    for d in st["devices"]:
        lat = lambda k: "%.0f us" % d[k] if d.get(k) else "-"
        print("  %-22s %8d %8d %6.1f%% %6d %12s %12s" % (d["path"], d["slots"], d["extents"], 100 * d["fill"],
                                                         d["free_slots"], lat("read_latency_us"),
                                                         lat("write_latency_us")))
    print("  requests: %d reads, %d writes" % (st["reads"], st["writes"]) +
          ("; read hit ratio %.3f, fast write share %.3f, fast request share %.3f" % (
              st["read_hit_ratio"], st["fast_write_share"], st["fast_request_share"])
           if "fast_request_share" in st else ""))
    print("  migrations: %d promotions, %d evictions, %s copied" % (st["promotions"], st["evictions"],
                                                                    _fmt_bytes(st["migrated_bytes"])) +
          (", %d remaps without copy, %s re-copied in the hold, %d batches, %d rolled back" % (
              st["remaps_without_copy"], _fmt_bytes(st["recopied_bytes"]), st["batches"], st["rollbacks"])
           if "batches" in st else ""))
    if "stall_ms" in st:
        s = st["stall_ms"]
        f = lambda v: "%.1f ms" % v if v is not None else "-"
        h = st["hold_ms"]
        print("  moving extents held: last %s, p50 %s, p99 %s, max %s (%d batches); other I/O never held "
              "(routing messages p99 %s)" % (f(h["last"] or None), f(h["p50"]), f(h["p99"]), f(h["max"]), h["count"],
                                             f(s["p99"])))
        if "asked_moves" in st:
            rate = st.get("carried_moves_per_s")
            print("  moves: %d asked, %d done, %d given back stale (%.1f%%), %d refused, the queue full (%.1f%%); "
                  "%d queued, at most %d%s" % (
                      st["asked_moves"], st["moves_done"], st["stale_moves"], 100 * st["stale_share"],
                      st["refused_moves"], 100 * st["refused_share"], st["pending_moves"], st["move_queue_capacity"],
                      " (%.1f moves/s carried)" % rate if rate else ""))
        dr, db = st.get("decision_to_remap_ms") or {}, st.get("decision_to_batch_ms") or {}
        if dr.get("p50") is not None:
            print("  request seen -> remap done: p50 %s, p99 %s (of which waiting for a batch: p50 %s)" % (
                f(dr["p50"]), f(dr["p99"]), f(db.get("p50"))))
        idle = st.get("copy_idle_read_latency_us")
        print("  copy: %s/s measured, limit %s/s%s; controller CPU %.1f%%; eBPF %d records, %d lost" % (
            _fmt_bytes(st["copy_bandwidth_bytes_s"]), _fmt_bytes(st["copy_rate_limit_bytes_s"]),
            " (read latency with no copy: %.1f ms)" % (idle / 1e3) if idle else "",
            100 * st["controller_cpu"], st["ebpf"]["events"], st["ebpf"]["lost"]))
        for i, ag in enumerate(st.get("agents", [])):
            print("  agent %d (%s): %d decisions, %d training steps (%d on the training thread), epsilon %.3f, "
                  "reward (EWMA) %.3f" % (i, "placement" if i == 0 else "migration", ag["decisions"],
                                          ag["train_steps"], ag.get("background_steps", 0), ag["epsilon"],
                                          ag["reward_ewma"]))
    return 0


def cmd_top(a):
    paths = _paths(a)
    while True:
        st = status_of(paths, a.name)
        if a.json:
            print_json({k: st.get(k) for k in ("name", "state", "policy", "reads", "writes", "read_hit_ratio",
                                                 "fast_write_share", "fast_request_share",
                                                 "promotions", "evictions", "stall_ms", "devices", "hot_extents",
                                                 "decisions")})
            return 0
        lines = ["hbl top %s  %s  policy %s  %s" % (st["name"], st["state"], st["policy"], time.strftime("%H:%M:%S")),
                 "requests %d r / %d w   read hits %.3f   promotions %d   evictions %d   hold p99 %s" % (
                     st["reads"], st["writes"], st.get("read_hit_ratio", 0.0), st["promotions"], st["evictions"],
                     "%.1f ms" % st["hold_ms"]["p99"] if st.get("hold_ms", {}).get("p99") is not None else "-"),
                 "", "%-10s %-8s %10s %8s %8s" % ("extent", "device", "heat", "reads", "writes")]
        names = [os.path.basename(d["path"]) for d in st["devices"]]
        for h in st.get("hot_extents", [])[:15]:
            lines.append("%-10d %-8s %10.1f %8d %8d" % (h["extent"], names[h["device"]], h["heat"], h["reads"],
                                                        h["writes"]))
        lines += ["", "latest decisions"]
        for d in reversed(st.get("decisions", [])[-10:]):
            lines.append("  %s extent %-8d %s -> %s %s" % (
                time.strftime("%H:%M:%S", time.localtime(d["time"])), d["extent"], names[d["from"]], names[d["to"]],
                "(copy)" if d["copy"] else "(remap, no data)"))
        if not st.get("decisions"):
            lines.append("  none yet")
        if a.once:
            print("\n".join(lines))
            return 0
        sys.stdout.write("\x1b[H\x1b[2J" + "\n".join(lines) + "\n")
        sys.stdout.flush()
        try:
            time.sleep(a.interval)
        except KeyboardInterrupt:
            return 0
