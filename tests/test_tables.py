"""hbl.experiments.tables on runs made up by hand: the summary's figures, the oracle that is no bound, and text
that stays within 100 columns however many policies and workloads there are."""
import math
import re

import pytest

from hbl.experiments import tables

# average latency (us) per workload; Fast-Only is 10 everywhere
LAT = {
    "fast-only": {"a": [10], "b": [10], "c": [10]},
    "oracle": {"a": [12], "b": [15], "c": [11]},
    "lru": {"a": [20], "b": [30], "c": [12]},
    "smq": {"a": [18], "b": [40], "c": [13]},
    "harmonia": {"a": [16, 18], "b": [25, 29], "c": [14, 12]},
}


def runs(lat=LAT, hss="h"):
    return [dict(hss=hss, workload=w, policy=p, seed=s, avg_latency_us=x)
            for p, by_w in lat.items() for w, xs in by_w.items() for s, x in enumerate(xs, 1)]


def geo(xs):
    return math.exp(sum(math.log(x) for x in xs) / len(xs))


def test_summary_figures():
    (c,) = tables.summarize(runs())
    rows = {r["variant"]: r for r in c["rows"]}
    harmonia = [(16 + 18) / 20, (25 + 29) / 20, (14 + 12) / 20]
    lru, smq = [2.0, 3.0, 1.2], [1.8, 4.0, 1.3]
    assert rows["harmonia"]["geomean"] == pytest.approx(geo(harmonia))
    assert c["best"] == "lru" and geo(lru) < geo(smq)        # oracle and harmonia are no heuristics
    assert rows["harmonia"]["vs_best"] == pytest.approx(geo(harmonia) / geo(lru) - 1)
    oracle = geo([1.2, 1.5, 1.1])
    assert rows["harmonia"]["oracle_gap_closed"] == pytest.approx((geo(lru) - geo(harmonia)) / (geo(lru) - oracle))
    assert rows["harmonia"]["oracle_bound"]
    assert (rows["harmonia"]["wins"], rows["harmonia"]["losses"]) == (2, 1)      # a, b faster; c slower
    assert (rows["smq"]["wins"], rows["smq"]["losses"]) == (1, 2)
    assert "wins" not in rows["lru"]
    assert rows["harmonia"]["seeds"] == 2
    assert rows["harmonia"]["geomean_min"] == pytest.approx(geo([1.6, 2.5, 1.4]))     # seed 1
    assert rows["harmonia"]["geomean_max"] == pytest.approx(geo([1.8, 2.9, 1.2]))     # seed 2
    assert [r["variant"] for r in c["rows"]] == sorted(rows, key=lambda v: rows[v]["geomean"])
    assert c["beats"] == []


def test_an_oracle_beaten_is_no_bound_and_the_text_says_so():
    lat = dict(LAT, harmonia={"a": [11, 18], "b": [25, 29], "c": [14, 12]})   # seed 1 beats the oracle on a
    (c,) = tables.summarize(runs(lat))
    assert [(b["workload"], b["variant"], b["seed"]) for b in c["beats"]] == [("a", "harmonia", 1)]
    rows = {r["variant"]: r for r in c["rows"]}
    assert not rows["harmonia"]["oracle_bound"] and rows["smq"]["oracle_bound"]
    text = tables.format_summary(c, "HSS h")
    line = next(x for x in text if x.startswith("harmonia"))
    assert line.split()[-2] == "!"
    assert re.search(r"\s-?\d+%\s", next(x for x in text if x.startswith("smq")))
    table = "\n".join(tables.format_workloads(c, "HSS h"))
    assert re.search(r"^a\s.*1\.45!", table, re.M)     # harmonia's mean on a, marked


def test_harmonia_standing_gives_a_share_of_the_oracle_gap_only_where_the_oracle_holds():
    from hbl.experiments.compare import summarize

    def standing(lat):
        s = summarize([dict(r, requests=1000, trace=r["workload"]) for r in runs(lat)], ["a", "b", "c"], ["h"], list(lat))
        return s["harmonia_summary"]["h"]["all"]

    held = standing(LAT)
    assert held["oracle_bound"] and held["oracle_gap_closed"] == pytest.approx(
        (geo([2.0, 3.0, 1.2]) - held["harmonia"]) / (geo([2.0, 3.0, 1.2]) - geo([1.2, 1.5, 1.1])))
    beaten = standing(dict(LAT, harmonia={"a": [11, 18], "b": [25, 29], "c": [14, 12]}))
    assert beaten["oracle_bound"] is False and beaten["oracle_gap_closed"] is None
    by_lru = standing(dict(LAT, lru={"a": [20], "b": [30], "c": [10.5]}))    # the best baseline beats it on c
    assert by_lru["best_heuristic"] == "lru" and by_lru["oracle_gap_closed"] is None


def test_harmonia_standing_says_faster_or_slower_as_the_summary_table_means_it():
    from hbl.experiments.compare import format_text, summarize

    def text(harmonia):
        lat = dict(LAT, harmonia=harmonia)
        s = summarize([dict(r, requests=200000, trace=r["workload"]) for r in runs(lat, "perf")], ["a", "b", "c"],
                      ["perf"], list(lat))
        return " ".join(format_text(s).split())

    # harmonia at half lru's latency everywhere (lru is the best by geomean): faster, where the table's
    # "vs lru" column reads -50.0%; at twice it, slower
    half = text({"a": [10], "b": [15], "c": [6]})
    assert "-50.0%" in half and "50.0% faster than the best non-learning policy (lru" in half
    assert "100.0% slower than the best non-learning policy (lru" in text({"a": [40], "b": [60], "c": [24]})


def test_no_oracle_no_gap_and_a_missing_baseline_is_named():
    lat = {p: v for p, v in LAT.items() if p != "oracle"}
    lat["lru"] = dict(lat["lru"], d=[5])                 # no Fast-Only run on d
    (c,) = tables.summarize(runs(lat))
    assert c["no_baseline"] == ["d"] and c["workloads"] == ["a", "b", "c"]
    assert all("oracle_gap_closed" not in r for r in c["rows"])


def test_many_long_policies_and_workloads_fit_100_columns():
    names = ["fast-only", "slow-only", "oracle", "lru", "cde", "hps", "smq", "nhit", "seqcutoff", "sibyl",
             "harmonia", "harmonia-placement-only", "archivist", "rnn-hss", "harmonia-migration-only"]
    workloads = ["sysbench-mariadb+", "build-linux", "fio-zipf+*"] + ["w%d" % i for i in range(20)]
    lat = {p: {w: [10 * (1 + i) + 100 * (w == "w3") + j] * (2 if p.startswith("harmonia") else 1)
               for j, w in enumerate(workloads)} for i, p in enumerate(names)}
    (c,) = tables.summarize(runs(lat, hss="cost"))
    lines = tables.format_summary(c, "HSS cost (H+L)") + tables.format_workloads(c, "HSS cost (H+L)")
    lines += tables.wrap(tables.SUMMARY_NOTE) + tables.wrap(tables.WORKLOADS_NOTE)
    assert max(len(x) for x in lines) <= 100
    table = tables.format_workloads(c, "HSS cost (H+L)")
    blocks = "\n".join(table).split("\n\n")[1:]
    assert len(blocks) >= 2
    # every policy but Fast-Only is a column of one block (its name folded at hyphens), every
    # workload a row of each, in the order of the summary
    shown = []
    for b in blocks:
        lines = b.splitlines()
        ends = [m.end() for m in re.finditer(r"\S+", lines[-1])][1:]    # the geomean row's cells
        starts = [0] + ends[:-1]
        for lo, hi in zip(starts, ends):
            shown.append("".join("".join(x[lo:hi].split()) for x in lines[:-len(workloads) - 1]))
        shown[-len(ends)] = shown[-len(ends)].replace("workload", "")
    assert shown == [r["variant"] for r in c["rows"]][1:]
    for b in blocks:
        assert [x.split()[0] for x in b.splitlines()[-len(workloads) - 1:]] == sorted(workloads) + ["geomean"]


def test_fold_cuts_after_hyphens_and_at_spaces():
    assert tables._fold("harmonia-placement-only", 10) == ["harmonia-", "placement-", "only"]
    assert tables._fold("harmonia-placement-only", 14) == ["harmonia-", "placement-only"]
    assert tables._fold("smq promote=2", 9) == ["smq", "promote=2"]
    assert tables._fold("lru", 9) == ["lru"]


def test_labels_are_unique_in_order():
    assert tables.labels(["synth:zipf:requests=10", "synth:zipf:requests=20", "bundled:hm_0"]) == {
        "synth:zipf:requests=10": "zipf*", "synth:zipf:requests=20": "zipf*'", "bundled:hm_0": "hm_0"}


def test_the_summary_counts_its_workloads_in_words():
    one = {p: {"a": xs["a"]} for p, xs in LAT.items()}
    (c,) = tables.summarize(runs(one))
    assert "h, 1 workload: geomean" in tables.format_summary(c, "h")[0]
    (c,) = tables.summarize(runs())
    assert "h, 3 workloads: geomean" in tables.format_summary(c, "h")[0]


def test_learning_policies_min_max_per_workload():
    (c,) = tables.summarize(runs())
    text = tables.format_seed_spread(c, "HSS h")
    rows = {x.split()[0]: x.split()[1:] for x in text if x.split() and x.split()[0] in ("a", "b", "c", "geomean")}
    # harmonia's two seeds: a 16 and 18 us, b 25 and 29, c 14 and 12, over Fast-Only's 10; the foot: each
    # seed's geomean, as the summary's min-max; the policies of one run (lru, smq) have no column
    assert rows == {"a": ["1.60-1.80"], "b": ["2.50-2.90"], "c": ["1.20-1.40"],
                    "geomean": ["%.2f-%.2f" % (geo([1.6, 2.5, 1.4]), geo([1.8, 2.9, 1.2]))]}
    assert "harmonia" in text[-5] and "lru" not in " ".join(text)
    # in the tables hbl compare prints, after the per-workload table; none where no policy has two seeds
    assert "\n".join(text) in "\n".join(tables.format_tables([c], lambda c: "HSS h"))
    (one,) = tables.summarize(runs(dict(LAT, harmonia={"a": [16], "b": [25], "c": [14]})))
    assert tables.format_seed_spread(one, "HSS h") == []


def test_harmonias_seeds_beside_its_geomean_on_the_long_workloads():
    from hbl.experiments.compare import format_text, summarize
    s = summarize([dict(r, requests=200000, trace=r["workload"]) for r in runs(LAT, "perf")], ["a", "b", "c"],
                  ["perf"], list(LAT))
    e = s["harmonia_summary"]["perf"]["long"]
    assert (e["seeds"], e["harmonia_min"], e["harmonia_max"]) == (
        2, pytest.approx(geo([1.6, 2.5, 1.4])), pytest.approx(geo([1.8, 2.9, 1.2])))
    assert "harmonia 1.81 (geomean; 1.78-1.84 over 2 seeds)" in " ".join(format_text(s).split())


def test_a_saved_comparison_reprinted_keeps_its_capture_cut(tmp_path):
    import json
    from hbl.experiments.compare import format_text, from_results
    saved = {"results": [dict(r, requests=200000, trace=r["workload"]) for r in runs(LAT, "perf")],
             "workloads": ["a", "b", "c"], "hss": ["perf"], "policies": list(LAT), "capture_requests": 250000}
    (tmp_path / "s.json").write_text(json.dumps(saved))
    s = from_results(str(tmp_path / "s.json"))
    assert s["capture_requests"] == 250000 and "its first 250000 requests" in format_text(s)
