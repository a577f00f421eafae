"""Switching signals for the guard (scripts/guard_signal.py): each one's decision on hand-made trails."""
import math

from helpers import script

P = ("harmonia", "lru", "arc")


def _cum(trail):
    """Cumulative means (the windows are equal-sized), in ns as hybrid passes them."""
    return {p: 1e3 * sum(xs) / len(xs) for p, xs in trail.items()}


def _decide(sig, trail, active="harmonia"):
    g = script("guard_signal")
    return g.SIGNALS[sig](cum=_cum(trail), trail=trail, active=active, portfolio=P, margin=0.02)


# harmonia warms up: two slow windows, then better than lru; the cumulative mean still favours lru
WARM = {"harmonia": [60.0, 45.0, 30.0, 30.0, 30.0, 30.0],
        "lru": [32.0, 31.0, 30.5, 30.5, 30.5, 30.5], "arc": [40.0] * 6}
# lru better by about 10% in every window, with noise
STEADY = {"harmonia": [33.0, 34.0, 32.5, 33.5], "lru": [30.0, 30.5, 29.5, 30.2], "arc": [40.0] * 4}


def test_rule_h_switches_on_the_warm_up_and_both_signals_do_not():
    assert _decide("H", WARM) == "lru"
    # T: differences 28, 14, -0.5 x 4: mean 6.67, sd 11.95, t = 1.37 < 2
    assert _decide("T", WARM) is None
    # S: windows 3..6: harmonia 30 against lru 30.5
    assert _decide("S", WARM) is None


def test_a_steady_lead_beyond_the_margin_switches_on_every_signal():
    for sig in ("H", "T", "S"):
        assert _decide(sig, STEADY) == "lru", sig
    # and never to the active member itself, nor from lru once it is active
    for sig in ("H", "T", "S"):
        assert _decide(sig, STEADY, active="lru") is None, sig


def test_t_needs_three_windows_and_h_does_not():
    two = {p: xs[:2] for p, xs in STEADY.items()}
    assert _decide("H", two) == "lru"
    assert _decide("T", two) is None
    assert _decide("T", {p: xs[:3] for p, xs in STEADY.items()}) == "lru"


def test_t_refuses_a_lead_inside_the_noise_and_takes_a_constant_one():
    g = script("guard_signal")
    # lru's cumulative lead beyond 2% (31.5 against 35), but the windows disagree
    noisy = {"harmonia": [40.0, 30.0, 40.0, 30.0], "lru": [30.0, 30.0, 30.0, 36.0], "arc": [50.0] * 4}
    assert _decide("H", noisy) == "lru"
    assert abs(g.paired_t([10.0, 0.0, 10.0, -6.0]) - 3.5 / math.sqrt(187.0 / 3 / 4)) < 1e-12   # 0.89
    assert _decide("T", noisy) is None
    const = {"harmonia": [33.0] * 3, "lru": [30.0] * 3, "arc": [50.0] * 3}
    assert g.paired_t([3.0, 3.0, 3.0]) == math.inf
    assert _decide("T", const) == "lru"


def test_s_reads_the_later_half_of_the_windows():
    g = script("guard_signal")
    assert g.later_half({"a": [9.0]}) == {"a": 9.0}                        # n = 1: window 1
    assert g.later_half({"a": [9.0, 3.0]}) == {"a": 6.0}                   # n = 2: windows 1..2
    assert g.later_half({"a": [9.0, 5.0, 1.0]}) == {"a": 3.0}              # n = 3: windows 2..3
    assert g.later_half({"a": [9.0, 9.0, 9.0, 1.0, 3.0]}) == {"a": 13.0 / 3}  # n = 5: windows 3..5
    # a member that turned worse late: S switches where the cumulative mean does not
    late = {"harmonia": [20.0, 20.0, 20.0, 40.0, 40.0], "lru": [30.0] * 5, "arc": [50.0] * 5}
    assert _decide("H", late) is None
    assert _decide("S", late) == "lru"
