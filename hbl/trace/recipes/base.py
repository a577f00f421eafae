"""What a workload recipe is: the steps it captures, what it needs, how it prepares and stops.

hbl/trace/workloads.py runs a recipe and captures it, on hbl/trace/scratch.py's scratch file system
in its memory cgroup; a recipe only says what to run there."""
import dataclasses
import glob
import subprocess


#: The end of a step of processes side by side (Recipe.together): bash's wait -n returns when the first ends,
#: and any of them ending is a failure the capture reports.
TOGETHER = """wait -n
echo "%s: a process of the mix ended (exit status $?)" >&2
exit 1
"""


@dataclasses.dataclass
class Step:
    """One captured phase: a command, and the share of the remaining budget (time and
    requests) it may use before it is stopped (None: until it ends by itself)."""
    label: str
    argv: list
    share: float = None
    stdin: str = None


class Recipe:
    name = application = package = runs = expected = cache_bound = ""
    synthetic = False
    fs_gib = 8              # scratch file system size (sparse)
    memory_mib = 256        # memory cgroup limit: the page cache the application may keep
    binaries = ()           # (path or glob, Debian package)

    def tools(self):
        """({pattern: path found}, [(pattern, Debian package) missing]) for what the recipe runs."""
        found, missing = {}, []
        for pattern, pkg in self.binaries:
            hits = sorted(glob.glob(pattern))
            if hits:
                found[pattern] = hits[-1]
            else:
                missing.append((pattern, pkg))
        return found, missing

    def tool(self, pattern):
        return self.tools()[0][pattern]

    def version(self):
        try:
            return subprocess.run(["dpkg-query", "-W", "-f", "${Version}", self.package], capture_output=True,
                                  text=True).stdout.strip() or None
        except OSError:
            return None

    def prepare(self, sc):
        """Set up the data (not captured) and start services."""

    def steps(self, sc):
        raise NotImplementedError

    def stop(self, sc):
        """Stop the services prepare() started."""

    def unpack_linux_source(self, sc):
        """Debian's linux-source tree (the tarball among the recipe's tools) unpacked as src/."""
        sc.run(["tar", "-xf", self.tool("/usr/src/linux-source-*.tar.xz"), "-C", sc.mnt])
        sc.run(["/bin/sh", "-c", "mv %s/linux-source-* %s/src" % (sc.mnt, sc.mnt)])

    def shell(self, sc, label, script, share=None, sh="/bin/sh"):
        """A step that runs `script` with /bin/sh (or `sh`), written beside the scratch file system."""
        return Step(label, [sh, sc.write_tmp("%s-%s.sh" % (self.name, label), script)], share)

    def together(self, sc, label, script, share=None):
        """A step of the processes `script` starts in the background (lines ending in &), until the capture
        stops them; one of them ending by itself is a failure."""
        return self.shell(sc, label, script + TOGETHER % self.name, share, sh="/bin/bash")
