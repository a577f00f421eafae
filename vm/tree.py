"""The tree the guest sees at /hbl: a source checkout as it is, or one staged from an install.

The guest imports hbl and dmsetup from /hbl and runs its scripts from /hbl/vm/guest, the
layout of a source checkout.  An installed hbl (a wheel, `pip install .`) has neither that
layout nor a tree worth sharing whole (site-packages holds the host's numpy, which would
shadow the guest's own), so its packages are copied once into a staged tree under the
testbed's cache, keyed by what was copied, in the checkout's layout.
"""
import hashlib
import os
import shutil

import hbl
import dmsetup

GUEST_ROOT = "/hbl"          # where vm/guest/init mounts the tree


def checkout():
    """The source checkout hbl is imported from, or None for an install."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(hbl.__file__)))
    guest = os.path.join(root, "vm", "guest")
    return root if os.path.isfile(os.path.join(guest, "init")) else None


def sources():
    """(name in the staged tree, directory) of what an installed hbl brings to the guest."""
    here = os.path.dirname(os.path.abspath(__file__))       # hbl/vm when installed
    return [("hbl", os.path.dirname(os.path.abspath(hbl.__file__))),
            ("dmsetup", os.path.dirname(os.path.abspath(dmsetup.__file__))),
            ("vm", here)]


def _files(top):
    for d, dirs, names in os.walk(top):
        dirs[:] = sorted(x for x in dirs if x != "__pycache__")
        for n in sorted(names):
            if not n.endswith(".pyc"):
                yield os.path.join(d, n)


def _key(parts):
    h = hashlib.sha256()
    for name, top in parts:
        for path in _files(top):
            st = os.stat(path)
            h.update(("%s\0%s\0%d\0%d\n" % (name, os.path.relpath(path, top), st.st_size, st.st_mtime_ns)).encode())
    return h.hexdigest()[:16]


def project_tree(cache_root):
    """The host directory to share as /hbl: the checkout, or a staged copy of the install."""
    return checkout() or stage(cache_root)


def stage(cache_root, parts=None):
    """Copy `parts` (default: the imported hbl, dmsetup and testbed) into a tree under cache_root,
    once per content."""
    parts = parts or sources()
    tree = os.path.join(cache_root, "tree-" + _key(parts))
    if os.path.isdir(tree):
        return tree
    part = tree + ".part"
    shutil.rmtree(part, ignore_errors=True)
    for name, top in parts:
        shutil.copytree(top, os.path.join(part, name), ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    for old in os.listdir(cache_root):      # one staged tree at a time: the install it was copied from is gone
        if old.startswith("tree-") and old != os.path.basename(part):
            shutil.rmtree(os.path.join(cache_root, old), ignore_errors=True)
    os.rename(part, tree)
    return tree


def guest_path(*parts):
    """A path under the shared tree as the guest sees it, e.g. guest_path("vm", "guest", "tests")."""
    return "/".join((GUEST_ROOT,) + parts)
