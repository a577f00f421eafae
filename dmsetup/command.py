"""The `dmsetup` command as a fallback backend: the same methods as ioctl.Control,
one process per operation (slower; for hosts where the ioctl path is refused)."""
import os
import subprocess


class DmCommandError(OSError):
    pass


class Command:
    def __init__(self, binary="dmsetup"):
        self.binary = binary
        self.env = dict(os.environ)
        if not os.path.exists("/run/udev/control"):
            self.env["DM_DISABLE_UDEV"] = "1"   # no udev: dmsetup must not wait for it

    def _run(self, *args, stdin=None):
        try:
            p = subprocess.run([self.binary, *args], input=stdin, capture_output=True, text=True, env=self.env)
        except FileNotFoundError:
            raise DmCommandError(2, "%s is not installed (Debian: dmsetup)" % self.binary) from None
        if p.returncode:
            raise DmCommandError(0, (p.stderr or p.stdout).strip() or "exit status %d" % p.returncode)
        return p.stdout

    def version(self):
        return {"text": self._run("version")}

    def create(self, name, uuid=""):
        self._run("create", name, "--notable", *(["-u", uuid] if uuid else []))
        info = self.info(name)
        return info["major"], info["minor"]

    def prepare(self, table):
        """Nothing to build ahead for the command: the table itself."""
        return table

    def load(self, name, table):
        self._run("load", name, stdin=table.text())

    def suspend(self, name, flush=True):
        self._run("suspend", name, *([] if flush else ["--noflush"]))

    def resume(self, name):
        self._run("resume", name)

    def remove(self, name):
        self._run("remove", name)

    def info(self, name):
        out = self._run("info", "-c", "--noheadings", "--separator", ":", "-o",
                        "name,major,minor,attr,open,segments,events", name)
        f = out.strip().split(":")
        attr = f[3]
        return {"name": f[0], "major": int(f[1]), "minor": int(f[2]), "open_count": int(f[4]),
                "target_count": int(f[5]), "event_nr": int(f[6]), "suspended": "s" in attr,
                "live_table": "L" in attr, "inactive_table": "I" in attr}

    def _lines(self, *args):
        out = []
        for line in self._run(*args).splitlines():
            f = line.split(None, 3)
            if len(f) >= 3:
                out.append((int(f[0]), int(f[1]), f[2], f[3] if len(f) > 3 else ""))
        return out

    def status(self, name):
        return self._lines("status", name)

    def table(self, name):
        return self._lines("table", name)

    def message(self, name, message, sector=0):
        return self._run("message", name, str(sector), *message.split()).strip()

    def list(self):
        out = self._run("ls")
        return [] if "No devices found" in out else [l.split()[0] for l in out.splitlines() if l.strip()]

    def close(self):
        pass
