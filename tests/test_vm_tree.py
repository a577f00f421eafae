"""The tree the guest sees at /hbl when hbl is installed rather than run from a checkout (vm/tree.py)."""
import os

from hbl.vm import run as vmrun, tree


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
