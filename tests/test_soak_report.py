"""hbl vm soak --report's reading of a soak's folder (vm/soak_report.py), no guest: a folder the
host has begun a soak in but whose guest has not yet written its state is said to be that, not
"no soak there"."""
import json

import pytest

from hbl.errors import HblError
from hbl.vm import soak_report


def test_a_soak_begun_by_the_host_only_is_not_called_no_soak(tmp_path):
    with pytest.raises(HblError, match="no soak there"):
        soak_report.load(str(tmp_path))
    (tmp_path / "soak").mkdir()
    (tmp_path / "soak" / "host.json").write_text(json.dumps({"boots": 1, "sessions": 1}))
    with pytest.raises(HblError, match="has not begun its first fault yet .no .*state.json"):
        soak_report.load(str(tmp_path))
    (tmp_path / "soak" / "state.json").write_text(json.dumps({"seed": 3}))
    assert soak_report.load(str(tmp_path)) == ({"seed": 3}, {"boots": 1, "sessions": 1})
