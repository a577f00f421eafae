"""hbl vm soak --report (vm/soak_report.py), no guest: the figures read from a soak's folder; a folder the
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


def test_soak_report_reads_a_soak_in_progress_without_booting(tmp_path, capsys):
    """`hbl vm soak --report OUT`: the figures so far from OUT's state and host files (per kind the
    faults, seconds, I/O errors, steps), a soak's failure in them and exit status 1, and a folder
    without a soak or a run option beside --report refused in one line."""
    import json
    from hbl.cli import main
    soak_dir = tmp_path / "out" / "soak"
    soak_dir.mkdir(parents=True)

    def rec(i, kind, seconds, step="t+0.50s", io=0, marked=False):
        return {"index": i, "kind": kind, "step": step, "seconds": seconds, "blocks_verified": 100 * (i + 1),
                "io_errors": io, "member_marked_failed": marked, "up_seconds": 1.0, "generation": i, "phases": {}}
    state = {"seed": 5, "faults_per_kind": 2, "kinds": ["kill", "power", "removal"],
             "plan": ["kill", "power", "removal", "kill", "power", "removal"], "next": 3, "blocks": 1000,
             "counts": {"kill": 1, "power": 1, "removal": 1}, "lost": 0, "unrecoverable": 0,
             "records": [rec(0, "kill", 10.0, "step after_meta"), rec(1, "power", 30.0),
                         rec(2, "removal", 20.0, io=7, marked=True)],
             "boots": 2, "pending": None, "started": 0, "failure": None, "interruptions": [{"during": 1}]}
    host = {"seed": 5, "faults": 2, "kinds": state["kinds"], "disks": [], "boots": 2, "power_cuts": ["1 t+0.50s"],
            "boot_seconds": [5.0], "host_seconds": 70.0, "sessions": 2}
    (soak_dir / "state.json").write_text(json.dumps(state))
    (soak_dir / "host.json").write_text(json.dumps(host))
    out = str(tmp_path / "out")
    assert main(["vm", "soak", "--report", out, "--json"]) == 0
    f = json.loads(capsys.readouterr().out)
    assert (f["done"], f["planned"], f["interruptions"], f["host_sessions"]) == (3, 6, 1, 2)
    assert f["kinds"]["kill"] == dict(f["kinds"]["kill"], faults=1, planned=2, at_a_protocol_step=1, seconds_mean=10.0)
    assert f["kinds"]["removal"]["io_errors"] == 7 and f["kinds"]["removal"]["members_marked_failed"] == 1
    assert f["to_go_seconds"] == 60                     # 3 to go at the mean of 20 s
    assert main(["vm", "soak", "--report", out]) == 0
    text = capsys.readouterr().out
    assert "3 of 6 faults" in text and "about 0.0 h" in text
    assert [line.split()[:2] for line in text.splitlines()[2:5]] == [["kill", "1"], ["power", "1"], ["removal", "1"]]
    state["failure"] = "SOAK FAILED: fault #3 (kill at step after_copy), seed 5: 2 acknowledged writes ..."
    (soak_dir / "state.json").write_text(json.dumps(state))
    assert main(["vm", "soak", "--report", out]) == 1
    assert "failure: SOAK FAILED: fault #3" in capsys.readouterr().out
    assert main(["vm", "soak", "--report", str(tmp_path / "none")]) == 2
    assert "no soak there" in capsys.readouterr().err
    assert main(["vm", "soak", "--report", out, "--faults", "3"]) == 2
    assert "--faults cannot go with it" in capsys.readouterr().err
