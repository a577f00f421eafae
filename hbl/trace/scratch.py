"""Where a workload recipe runs while it is captured (hbl.trace.workloads.capture): a temporary
directory, a sparse file, a loop device, ext4 on it, a memory cgroup bounding its page cache,
and the processes started there; all undone on exit."""
import os
import pwd
import shutil
import signal
import subprocess
import tempfile
import time

from hbl.errors import HblError

MiB = 1 << 20


class MemoryCgroup:
    """A memory cgroup (v2 memory.max, or v1 memory.limit_in_bytes) that processes join at exec."""

    def __init__(self, name, limit):
        root = "/sys/fs/cgroup"
        ctl = os.path.join(root, "cgroup.controllers")
        if os.path.exists(ctl) and "memory" in open(ctl).read().split():
            with open(os.path.join(root, "cgroup.subtree_control"), "w") as f:
                f.write("+memory")
            self.path, knob, self.version = os.path.join(root, name), "memory.max", 2
        elif os.path.exists(os.path.join(root, "memory", "memory.limit_in_bytes")):
            self.path, knob, self.version = os.path.join(root, "memory", name), "memory.limit_in_bytes", 1
        else:
            raise HblError("no memory cgroup controller (neither cgroup v2 with memory at %s nor v1 at %s/memory): "
                           "the page cache cannot be bounded" % (root, root))
        os.makedirs(self.path, exist_ok=True)
        with open(os.path.join(self.path, knob), "w") as f:
            f.write(str(limit))
        self.procs = os.path.join(self.path, "cgroup.procs")

    def join(self):
        """In a child between fork and exec: move it (and so its descendants) into the cgroup."""
        with open(self.procs, "w") as f:
            f.write(str(os.getpid()))

    def pids(self):
        try:
            return [int(p) for p in open(self.procs).read().split()]
        except OSError:
            return []

    def close(self):
        for sig in (signal.SIGTERM, signal.SIGKILL):
            for pid in self.pids():
                try:
                    os.kill(pid, sig)
                except ProcessLookupError:
                    pass
            for _ in range(50):
                if not self.pids():
                    break
                time.sleep(0.1)
        try:
            os.rmdir(self.path)
        except OSError:
            pass


class Scratch:
    """Temporary directory, sparse file, loop device, ext4, mount, memory cgroup; all undone on exit."""

    def __init__(self, recipe, say):
        self.recipe, self.say = recipe, say
        self.services = []
        self.tmp = self.loop = self.cgroup = None
        self.mounted = False

    def __enter__(self):
        base = os.environ.get("HBL_WORKLOADS_TMP", "/var/tmp")
        need = self.recipe.fs_gib << 30
        free = shutil.disk_usage(base).free
        if free < need:
            raise HblError("%s has %.1f GiB free; the %s scratch file system may fill %d GiB: set HBL_WORKLOADS_TMP "
                           "to a directory with more space" % (base, free / 2 ** 30, self.recipe.name,
                                                              self.recipe.fs_gib))
        self.tmp = tempfile.mkdtemp(prefix="hbl-workload-%s-" % self.recipe.name, dir=base)
        try:
            os.chmod(self.tmp, 0o755)    # services run as their own users under it
            self.mnt = os.path.join(self.tmp, "mnt")
            os.mkdir(self.mnt)
            self.log = open(os.path.join(self.tmp, "app.log"), "w+")
            img = os.path.join(self.tmp, "disk.img")
            with open(img, "wb") as f:
                f.truncate(need)
            self.loop = _check(["losetup", "-f", "--show", "--direct-io=on", img]).strip()
            # lazy init would write inode tables in the background during the capture
            _check(["mkfs.ext4", "-q", "-F", "-E", "lazy_itable_init=0,lazy_journal_init=0", self.loop])
            _check(["mount", "-o", "noatime", self.loop, self.mnt])
            self.mounted = True
            os.chmod(self.mnt, 0o755)
            self.cgroup = MemoryCgroup("hbl-workload-%d" % os.getpid(), self.recipe.memory_mib * MiB)
        except BaseException:
            self.__exit__()
            raise
        self.say("%s: %d GiB ext4 on %s (sparse file in %s), memory cgroup %d MiB (cgroup v%d)" % (
            self.recipe.name, self.recipe.fs_gib, self.loop, self.tmp, self.recipe.memory_mib, self.cgroup.version))
        return self

    def __exit__(self, *exc):
        for name, proc in reversed(self.services):
            terminate(proc, timeout=60)
        if self.cgroup:
            self.cgroup.close()
        if self.mounted:
            if subprocess.run(["umount", self.mnt], capture_output=True).returncode:
                subprocess.run(["umount", "-l", self.mnt], capture_output=True)
        if self.loop:
            subprocess.run(["losetup", "-d", self.loop], capture_output=True)
        if self.tmp:
            shutil.rmtree(self.tmp, ignore_errors=True)

    def path(self, *parts):
        return os.path.join(self.mnt, *parts)

    def mkdir(self, name, owner):
        p = self.path(name)
        os.mkdir(p, 0o700)
        pw = pwd.getpwnam(owner)
        os.chown(p, pw.pw_uid, pw.pw_gid)
        return p

    def write_tmp(self, name, text):
        p = os.path.join(self.tmp, name)
        with open(p, "w") as f:
            f.write(text)
        return p

    def _preexec(self, user):
        pw = pwd.getpwnam(user) if user else None

        def child():
            self.cgroup.join()
            if pw:
                os.initgroups(pw.pw_name, pw.pw_gid)
                os.setgid(pw.pw_gid)
                os.setuid(pw.pw_uid)
        return child

    def spawn(self, argv, user=None, stdin=None):
        """Start argv in the cgroup, in its own session, output to the log."""
        self.log.write("$ %s\n" % " ".join(argv))
        self.log.flush()
        env = dict(os.environ, HOME=pwd.getpwnam(user).pw_dir if user else os.environ.get("HOME", "/root"))
        try:
            return subprocess.Popen(argv, stdin=open(stdin) if stdin else subprocess.DEVNULL, stdout=self.log,
                                    stderr=subprocess.STDOUT, cwd=self.tmp if user is None else "/",
                                    preexec_fn=self._preexec(user), start_new_session=True, env=env)
        except OSError as exc:
            raise HblError("%s: %s" % (argv[0], exc.strerror)) from None

    def run(self, argv, user=None, stdin=None, check=True):
        p = self.spawn(argv, user, stdin)
        rc = p.wait()
        if rc and check:
            raise HblError("%s failed (exit status %d):\n%s" % (" ".join(argv), rc, self.log_tail()))
        return rc

    def cold_cache(self):
        """Written data synced and the page cache dropped: a capture that starts next starts cold."""
        self.run(["sync"])
        with open("/proc/sys/vm/drop_caches", "w") as f:
            f.write("1")

    def service(self, name, argv, ready, user=None, timeout=120):
        proc = self.spawn(argv, user)
        self.services.append((name, proc))
        t0 = time.time()
        while subprocess.run(ready, capture_output=True).returncode:
            if proc.poll() is not None:
                raise HblError("%s exited at start (status %d):\n%s" % (name, proc.returncode, self.log_tail()))
            if time.time() - t0 > timeout:
                raise HblError("%s did not become ready in %d s:\n%s" % (name, timeout, self.log_tail()))
            time.sleep(0.5)
        self.say("%s: %s started (pid %d)" % (self.recipe.name, name, proc.pid))

    def stop_services(self):
        self.recipe.stop(self)
        for name, proc in self.services:
            try:
                proc.wait(60)
            except subprocess.TimeoutExpired:
                pass
            terminate(proc, timeout=30)
        self.services = []

    def log_tail(self, lines=15):
        self.log.flush()
        self.log.seek(0)
        text = self.log.read().splitlines()
        self.log.seek(0, os.SEEK_END)
        return "\n".join("  | " + t for t in text[-lines:])


def _check(argv):
    r = subprocess.run(argv, capture_output=True, text=True)
    if r.returncode:
        raise HblError("%s failed: %s" % (" ".join(argv), (r.stderr or r.stdout).strip()))
    return r.stdout


def terminate(proc, timeout=10):
    """SIGTERM the process's session, then SIGKILL after timeout seconds."""
    if proc.poll() is not None:
        return
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            return
        try:
            proc.wait(timeout)
            return
        except subprocess.TimeoutExpired:
            pass
