import pathlib

import pytest

DATA = pathlib.Path(__file__).resolve().parent.parent / "hbl" / "data" / "traces" / "msr"


@pytest.fixture
def msr():
    """Path of a bundled MSR Cambridge slice by name."""
    return lambda name: str(DATA / (name + ".csv"))
