"""Switching signals for the guard, round 2 (scripts/guard_signal2.py): W, P and WP on hand-made trails
with a stand-in guard (its members' fast-device fill and its switch records)."""
from types import SimpleNamespace

from helpers import script

P = ("harmonia", "lru", "arc")


class Sim:
    """A member's simulator as warm() reads it: fast capacity, pages seen, pages on the fast device."""

    def __init__(self, cap, pages=0, used=0):
        self.capacities, self.pages, self.used = [cap, -1], pages, used

    def stats(self):
        return SimpleNamespace(pages=self.pages, used_pages=[self.used, self.pages - self.used])


def _guard(harmonia, switches=()):
    return SimpleNamespace(alone={"harmonia": harmonia, "lru": Sim(100, 500, 100), "arc": Sim(100, 500, 100)},
                           switches=list(switches))


def _cum(trail):
    return {p: 1e3 * sum(xs) / len(xs) for p, xs in trail.items()}


def _upto(trail, n):
    return {p: xs[:n] for p, xs in trail.items()}


def _call(sig, trail, active="harmonia"):
    return sig(cum=_cum(trail), trail=trail, active=active, portfolio=P, margin=0.02)


def _signal(name, guard):
    s = script("guard_signal2").SIGNALS[name]()
    if hasattr(s, "bind"):
        s.bind(guard)
    return s


# harmonia warms up: two slow windows, then better than lru; the cumulative mean still favours lru
WARM = {"harmonia": [60.0, 45.0, 30.0, 30.0, 30.0, 30.0],
        "lru": [32.0, 31.0, 30.5, 30.5, 30.5, 30.5], "arc": [40.0] * 6}
# lru better by about 10% in every window
STEADY = {"harmonia": [33.0, 34.0, 32.5, 33.5, 33.0], "lru": [30.0, 30.5, 29.5, 30.2, 30.0], "arc": [40.0] * 5}


def test_warm_is_the_fast_device_holding_its_capacity_or_every_page_seen():
    g = script("guard_signal2")
    assert not g.warm(Sim(100, 0, 0))                   # nothing seen yet
    assert not g.warm(Sim(100, 500, 99)) and g.warm(Sim(100, 500, 100))
    assert not g.warm(Sim(100, 40, 39)) and g.warm(Sim(100, 40, 40))   # fewer pages seen than its capacity
    assert g.warm(Sim(-1, 40, 40)) and not g.warm(Sim(-1, 40, 10))     # no capacity limit


def test_w_holds_harmonia_through_its_warm_up_where_rule_h_leaves_it():
    h = _guard(Sim(100, 500, 50))
    w = _signal("W", h)
    for n in (1, 2):
        assert _call(script("guard_signal2").gh.rule_h, _upto(WARM, n)) == "lru"
        assert _call(w, _upto(WARM, n)) is None              # not warm: no switch
    h.alone["harmonia"].used = 100                          # full at the end of window 3
    assert _call(w, _upto(WARM, 3)) is None and w.warm_after == 3   # no window after it yet
    for n in (4, 5, 6):                                      # windows 4..n: harmonia 30 against lru 30.5
        assert _call(script("guard_signal2").gh.rule_h, _upto(WARM, n)) == "lru"
        assert _call(w, _upto(WARM, n)) is None
    assert w.warm_after == 3                                 # once warm, always warm
    h.alone["harmonia"].used = 10
    assert _call(w, WARM) is None


def test_w_switches_on_a_lead_that_lasts_past_the_warm_up():
    w = _signal("W", _guard(Sim(100, 500, 100)))            # warm at the first decision
    assert _call(w, _upto(STEADY, 1)) is None and w.warm_after == 1
    assert _call(w, _upto(STEADY, 2)) == "lru"               # window 2: 30.5 against 34
    # and from lru, never back on the same figures
    assert _call(w, _upto(STEADY, 3), active="lru") is None


def test_w_reads_only_the_windows_after_the_warm_up():
    g = script("guard_signal2")
    assert g.mean_after({"a": [9.0, 1.0, 3.0]}, 1) == {"a": 2.0}
    assert g.mean_after({"a": [9.0, 1.0, 3.0]}, 3) is None
    # harmonia was worse in the warm-up only: lru's cumulative lead, none after
    w = _signal("W", _guard(Sim(100, 500, 100)))
    early = {"harmonia": [50.0, 30.0, 30.0], "lru": [30.0, 30.0, 30.0], "arc": [40.0] * 3}
    assert _call(w, _upto(early, 1)) is None
    assert _call(w, early) is None
    assert _call(script("guard_signal2").gh.rule_h, early) == "lru"


def test_p_prices_the_handover_it_has_paid_in_this_run():
    g = script("guard_signal2")
    paid = [dict(next_us=33.0, alone_next_us=30.0), dict(next_us=31.5, alone_next_us=30.0),
            dict(frm="x")]                                   # the last switch not yet measured
    assert abs(g.handover_price(paid) - 0.075) < 1e-12       # (10% + 5%) / 2
    assert g.handover_price([dict(next_us=27.0, alone_next_us=30.0)]) == 0.0   # floored at 0
    assert g.handover_price([]) == 0.0
    # lru leads by 5% (cumulative 31.5 against 33.2): beyond rule H's 2%, not beyond 2% + 7.5%
    five = {"harmonia": [33.2] * 4, "lru": [31.5] * 4, "arc": [40.0] * 4}
    assert _call(script("guard_signal2").gh.rule_h, five) == "lru"
    assert _call(_signal("P", _guard(Sim(100, 500, 100), paid)), five) is None
    # nothing paid yet: rule H's decision
    assert _call(_signal("P", _guard(Sim(100, 500, 100))), five) == "lru"
    # a lead of 15% pays for it
    fifteen = {"harmonia": [35.0] * 4, "lru": [29.75] * 4, "arc": [40.0] * 4}
    p = _signal("P", _guard(Sim(100, 500, 100), paid))
    assert _call(p, fifteen) == "lru" and p.price_at == [0.075]


def test_wp_holds_the_warm_up_and_prices_the_handover():
    paid = [dict(next_us=33.0, alone_next_us=30.0)]          # 10% paid
    wp = _signal("WP", _guard(Sim(100, 500, 50), paid))
    assert _call(wp, _upto(STEADY, 2)) is None               # not warm
    wp.guard.alone["harmonia"].used = 100
    assert _call(wp, _upto(STEADY, 2)) is None and wp.warm_after == 2
    # windows 3..5: lru 29.9 against 33.0, a lead of 9.4%: beyond 2%, not beyond 2% + 10%
    assert _call(wp, STEADY) is None
    w = _signal("W", _guard(Sim(100, 500, 100)))
    _call(w, _upto(STEADY, 2))
    assert w.warm_after == 2 and _call(w, STEADY) == "lru"


def test_w1_holds_harmonia_until_it_has_seen_its_fast_capacity_in_requests_then_is_rule_h():
    g = script("guard_signal2")
    assert not g.warm_by_requests(Sim(25000), 20000) and g.warm_by_requests(Sim(25000), 30000)
    assert g.warm_by_requests(Sim(-1), 0)
    guard = _guard(Sim(25000, 500, 0))                       # 25,000 fast pages: warm after window 3
    guard.window = 10000
    w1 = _signal("W1", guard)
    for n in (1, 2):
        assert _call(script("guard_signal2").gh.rule_h, _upto(WARM, n)) == "lru"
        assert _call(w1, _upto(WARM, n)) is None
    assert _call(w1, _upto(WARM, 3)) == "lru" and w1.warm_after == 3    # then rule H: cumulative figures
    small = _guard(Sim(5000, 500, 0))
    small.window = 10000
    assert _call(_signal("W1", small), _upto(WARM, 1)) == "lru"          # a fast device smaller than a window
