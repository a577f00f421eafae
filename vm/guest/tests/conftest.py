import os
import sys

import pytest

FAST, SLOW = "/dev/nvme0n1", "/dev/vda"

if not os.environ.get("HBL_IN_VM"):
    pytest.skip("guest tests run inside the testbed: hbl vm test", allow_module_level=True)
sys.path.insert(0, "/hbl")


@pytest.fixture(params=["ioctl", "command"])
def dm(request):
    from dmsetup import backend
    return backend(request.param)


@pytest.fixture
def ioctl_dm():
    from dmsetup import backend
    return backend("ioctl")
