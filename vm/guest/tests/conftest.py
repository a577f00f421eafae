import os
import sys
import time

import pytest

FAST, SLOW = "/dev/nvme0n1", "/dev/vda"

if not os.environ.get("HBL_IN_VM"):
    pytest.skip("guest tests run inside the testbed: hbl vm test", allow_module_level=True)
sys.path.insert(0, "/hbl")


def wait_for(what, probe, done, timeout, every=1.0):
    """probe() until done(what it returned); fail after timeout seconds, saying what was awaited
    and what the last probe got.  The guest tests wait for the events they need, never for a
    fixed time, so that a slow or loaded host makes them longer, not failing: timeout is a
    deadline for a test that is stuck, far beyond what a slow run takes."""
    t0 = time.time()
    while True:
        got = probe()
        if done(got):
            return got
        if time.time() - t0 > timeout:
            raise AssertionError("waited %.0f s for %s; got %s" % (time.time() - t0, what, got))
        time.sleep(every)


def wait_for_counts(need, probe, timeout, every=1.0):
    """wait_for every count named in need (name -> minimum) in the dict probe() returns."""
    what = ", ".join("%s >= %d" % kv for kv in need.items())
    return wait_for(what, probe, lambda got: all(got[k] >= v for k, v in need.items()), timeout, every)


@pytest.fixture(params=["ioctl", "command"])
def dm(request):
    from dmsetup import backend
    return backend(request.param)


@pytest.fixture
def ioctl_dm():
    from dmsetup import backend
    return backend("ioctl")
