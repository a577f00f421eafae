"""Where a live device's files live: its state directory (metadata, saved agents, log)
and its run directory (the controller's lock and live status)."""
import fcntl
import json
import os
import time

from hbl.errors import HblError

STATE_DIR = "/var/lib/hbl"
RUN_DIR = "/run/hbl"


class Paths:
    """Persistent state (metadata, saved agents, log) in the state directory; the
    controller's lock and live status under /run (a dm name is unique per host, and
    locks need a local file system)."""

    def __init__(self, name, state_dir=None):
        self.name = name
        self.dir = os.path.join(state_dir or os.environ.get("HBL_STATE_DIR") or STATE_DIR, name)
        self.run = os.path.join(os.environ.get("HBL_RUN_DIR") or RUN_DIR, name)
        self.meta = os.path.join(self.dir, "meta")
        self.log = os.path.join(self.dir, "controller.log")
        self.agents = os.path.join(self.dir, "agents.hbl")
        self.lock = os.path.join(self.run, "lock")
        self.status = os.path.join(self.run, "status.json")
        self.status_asked = os.path.join(self.run, "status.asked")    # a reader wants it now (ask_status)

    def make(self):
        """Create the state and run directories, or say in one line why they cannot be."""
        for d, what, hint in ((self.dir, "state", "give another with --state-dir DIR or HBL_STATE_DIR"),
                              (self.run, "run", "give another with HBL_RUN_DIR")):
            try:
                os.makedirs(d, mode=0o700, exist_ok=True)
                if not os.access(d, os.W_OK):
                    raise PermissionError(13, "not writable")
            except OSError as exc:
                raise HblError("cannot use %s as the %s directory of %s (%s): %s" % (
                    d, what, self.name, exc.strerror or exc, hint)) from None


def controller_pid(paths):
    """Pid of the running controller, or None (it holds an exclusive lock for its lifetime)."""
    if not os.path.exists(paths.lock):
        return None
    fd = os.open(paths.lock, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        return None
    except BlockingIOError:
        try:
            return int(os.pread(fd, 32, 0).decode().strip() or 0) or None
        except ValueError:
            return None
    finally:
        os.close(fd)


def ask_status(paths, wait_s=2.0):
    """Ask the running controller for its status now, and wait (wait_s at most) until it has
    written it: it writes its status file every STATUS_EVERY_S seconds, and at once (within
    its next loop, tens of ms; longer while a batch runs) when this request file exists,
    which it then removes.  False if the request could not be made or was not answered in
    time (the file then holds figures up to STATUS_EVERY_S old)."""
    try:
        with open(paths.status_asked, "w"):
            pass
    except OSError:             # (not the controller's user: the run directory is its own)
        return False
    deadline = time.monotonic() + wait_s
    while os.path.exists(paths.status_asked):
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.02)
    return True


def write_json_atomic(path, obj):
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        f.write(json.dumps(obj))       # (json.dump encodes in Python, chunk by chunk: several times slower)
    os.rename(tmp, path)

