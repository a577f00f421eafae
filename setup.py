# The C agent core (and, where the host can build it, the eBPF capture) are
# compiled by cffi at install; everything else is in pyproject.toml.
import os
import sys

from setuptools import find_packages, setup
from setuptools.command.build_ext import build_ext

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "hbl", "capture"))
from build_capture import available, build_bpf_object  # noqa: E402

modules = ["ctypes_core/build_core.py:ffibuilder"]
ok, why = available()
if ok:
    modules.append("hbl/capture/build_capture.py:ffibuilder")
else:
    print("hbl: building without live capture (%s); `hbl trace` will say how to get it" % why, file=sys.stderr)



class BuildExt(build_ext):
    """The C extensions, and the BPF object the capture consumer loads."""

    def run(self):
        if ok:
            build_bpf_object()
        super().run()


# every package under hbl/ and dmsetup/ is found, so a new subpackage cannot be left
# out of a wheel; the testbed lives in vm/ and installs as hbl.vm (package-dir in pyproject.toml)
packages = find_packages(include=["hbl", "hbl.*", "dmsetup", "dmsetup.*"]) + ["hbl.vm"]
setup(cffi_modules=modules, packages=packages, cmdclass={"build_ext": BuildExt})
