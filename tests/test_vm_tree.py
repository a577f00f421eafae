"""The tree the guest sees at /hbl when hbl is installed rather than run from a checkout (vm/tree.py),
and hbl vm from a real non-editable install: a wheel built from the tracked files."""
import glob
import os
import shutil
import subprocess
import sys
import zipfile

import pytest

from hbl.vm import run as vmrun, tree
from test_vm import WHY

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_staged_tree_has_the_checkout_layout_the_guest_imports_from(tmp_path):
    t = tree.stage(str(tmp_path))
    for part in ("hbl/__init__.py", "hbl/_core.abi3.so", "dmsetup/__init__.py", "vm/guest/init",
                 "vm/guest/bench_live.py", "vm/guest/tests/conftest.py", "vm/guest/tests/test_live.py"):
        assert os.path.isfile(os.path.join(t, part)), part
    for d, dirs, names in os.walk(t):
        assert "__pycache__" not in dirs and not any(n.endswith(".pyc") for n in names), d
    assert tree.stage(str(tmp_path)) == t            # staged once per content
    assert [n for n in os.listdir(tmp_path) if n.startswith("tree-")] == [os.path.basename(t)]


def test_a_changed_install_is_staged_again_and_the_old_tree_removed(tmp_path):
    pkg = tmp_path / "install" / "hbl"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    cache = tmp_path / "cache"
    cache.mkdir()
    first = tree.stage(str(cache), [("hbl", str(pkg))])
    (pkg / "sim.py").write_text("x = 1\n")                       # the install changed
    second = tree.stage(str(cache), [("hbl", str(pkg))])
    assert second != first and not os.path.exists(first)
    assert (open(os.path.join(second, "hbl", "sim.py")).read() == "x = 1\n")


def test_the_guest_gets_the_tree_it_is_given(tmp_path):
    class Images:
        kernel, initrd, rootfs, path = "k", "i", "r", str(tmp_path)
    cmd = vmrun.qemu_command(Images, str(tmp_path), [], str(tmp_path), "tcg", 512, 1, False, project="/some/tree")
    assert "local,id=h,path=/some/tree,security_model=none,readonly=on" in cmd


def tracked(under=""):
    """The files git tracks under `under` (relative paths), as a clean clone has them."""
    r = shutil.which("git") and subprocess.run(["git", "-C", ROOT, "ls-files", "-z", "--", under or "."],
                                               capture_output=True, text=True)
    if not r or r.returncode:
        pytest.skip("needs a git checkout to know which files a clone has (%s)" % (r.stderr.strip() if r else "no git"))
    return [f for f in r.stdout.split("\0") if f and os.path.exists(os.path.join(ROOT, f))]


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """hbl as `pip install .` from a clone leaves it, apart from the checkout: a wheel built
    from a copy of the tracked files (no build/ left over from an earlier build can reach it),
    unpacked as site-packages would hold it.  About 25 s: the C core is compiled."""
    top = tmp_path_factory.mktemp("install")
    src = top / "src"
    for f in tracked():
        os.makedirs(src / os.path.dirname(f), exist_ok=True)
        shutil.copy2(os.path.join(ROOT, f), src / f)
    r = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(top / "wheel"), str(src)],
                       capture_output=True, text=True, timeout=1200, cwd=str(top))
    if r.returncode and ("No matching distribution" in r.stderr or "Could not find a version" in r.stderr):
        pytest.skip("pip cannot get the build requirements here: %s" % r.stderr.strip()[-300:])
    assert r.returncode == 0, "pip wheel failed:\n" + r.stderr[-3000:]
    site = top / "site"
    zipfile.ZipFile(glob.glob(str(top / "wheel" / "hbl-*.whl"))[0]).extractall(site)
    return site


def in_install(site, code, cwd, timeout=600):
    """Python code run with the install first on the path, from a directory outside the checkout."""
    env = dict(os.environ, PYTHONPATH=str(site))
    return subprocess.run([sys.executable, "-c", code], cwd=str(cwd), env=env, capture_output=True, text=True,
                          timeout=timeout)


def test_an_install_carries_what_the_guest_sees_at_hbl(installed, tmp_path):
    """Every file of the testbed and of dmsetup a clone has is in the wheel, and the tree staged
    from the install has the checkout's layout: the guest's scripts, its suite, hbl's modules."""
    missing = [f for f in tracked("vm") if not (installed / "hbl" / f).is_file()]
    missing += [f for f in tracked("dmsetup") if not (installed / f).is_file()]
    assert not missing, "left out of the wheel (pyproject.toml package-data?): %s" % missing
    r = in_install(installed, "import hbl; from hbl.vm import tree\n"
                   "print(hbl.__file__, tree.checkout())\n"
                   "print(tree.project_tree(%r))" % str(tmp_path), tmp_path)
    assert r.returncode == 0, r.stderr
    where, staged = r.stdout.splitlines()
    assert where == "%s None" % (installed / "hbl" / "__init__.py")     # the install, not the checkout
    want = [f for f in tracked("vm") + tracked("dmsetup") + tracked("hbl") if f.endswith(".py") or "/guest/" in f]
    assert not [f for f in want if not os.path.isfile(os.path.join(staged, f))]
    assert glob.glob(os.path.join(staged, "hbl", "_core*.so"))


@pytest.mark.skipif(WHY is not None, reason=WHY or "")
def test_hbl_vm_runs_a_guest_from_an_install(installed, tmp_path):
    """hbl vm from the install boots a guest whose /hbl is the staged tree: the guest imports
    hbl (its C core too) and dmsetup from it and finds its suite where the checkout has it."""
    code = ("import sys; from hbl.cli import main\n"
            "sys.exit(main(['vm', 'run', '--quiet', '--timeout', '900', '--', "
            "'python3 -c \"import hbl.core, dmsetup; print(hbl.__file__, dmsetup.__file__)\" && "
            "test -f /hbl/vm/guest/tests/conftest.py && hbl --help > /dev/null && echo guest-ok']))\n")
    r = in_install(installed, code, tmp_path, timeout=1200)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-3000:]
    assert "/hbl/hbl/__init__.py /hbl/dmsetup/__init__.py" in r.stdout and "guest-ok" in r.stdout, r.stdout
