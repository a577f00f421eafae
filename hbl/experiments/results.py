"""Results as tidy rows, and as a pandas DataFrame: one row per run (policy x workload x HSS x
seed, and parameter set in a sweep), every metric a column.

    import hbl.results
    df = hbl.results.load("out.parquet")    # hbl compare --out/--output/--json, or a sweep's DIR

The same rows from every source: `hbl compare --out FILE` (csv, parquet or json),
`hbl compare --output FILE` (its JSON summary), a sweep's directory (its journal, cells.jsonl)
or its results.csv / results.parquet. Nested metrics are dotted columns (used_pages.0,
agents.1.epsilon), a sweep's parameters param.NAME; every row has hss, workload (the tables'
short name), policy, variant (the policy and its sweep parameters), seed, trace and
normalized_avg_latency (average latency over Fast-Only's on the same HSS and workload).
"""
import csv
import json
import math
import os

from hbl.experiments import tables
from hbl.errors import HblError

JOURNAL = "cells.jsonl"
CELL_COLUMNS = ("key", "status", "error", "trace", "hss", "policy", "seed", "params", "options",
                "wall_s", "worker")
FIRST = ("hss", "workload", "policy", "variant", "seed", "trace", "params", "normalized_avg_latency")
FORMATS = ("csv", "parquet", "json")


def flatten(value, prefix, into):
    """Nested dicts and lists as dotted columns: used_pages.0, agents.1.epsilon."""
    if isinstance(value, dict):
        for k, v in value.items():
            flatten(v, "%s.%s" % (prefix, k) if prefix else str(k), into)
    elif isinstance(value, (list, tuple)):
        for i, v in enumerate(value):
            flatten(v, "%s.%d" % (prefix, i), into)
    else:
        into[prefix] = value


def _metrics(result, into):
    """Every metric of a simulate result, but its trace (a sweep worker's copy) and its params
    (the row's own columns)."""
    flat = {}
    flatten(result or {}, "", flat)
    for k, v in flat.items():
        if k != "trace" and not k.startswith("params."):
            into.setdefault(k, v)
    return into


def tidy_row(record):
    """One sweep journal record as a flat row: the cell's inputs, then every metric of its result."""
    cell = {c: record.get(c) for c in CELL_COLUMNS}
    cell["params"] = json.dumps(record.get("params") or {}, sort_keys=True)
    cell["options"] = json.dumps(record.get("options") or {}, sort_keys=True, default=str)
    for k, v in (record.get("params") or {}).items():
        cell["param." + k] = v
    return _metrics(record.get("result"), cell)


def read_journal(out_dir):
    """The latest record of every cell in a sweep's DIR (a rerun of a failed cell supersedes it)."""
    path = os.path.join(out_dir, JOURNAL)
    records = {}
    if not os.path.exists(path):
        return records
    with open(path) as f:
        for lineno, line in enumerate(f, 1):
            try:
                r = json.loads(line)
            except ValueError:
                if line.endswith("\n"):
                    raise HblError("%s:%d: not a JSON record" % (path, lineno)) from None
                break      # the last line, cut by a crash mid-write: that cell reruns
            records[r["key"]] = r
    return records


def from_compare(summary):
    """The rows of a comparison (what compare() returns, or its --output / --json file)."""
    rows = []
    for r in summary["results"]:
        params = r.get("params") or {}
        row = dict(hss=r["hss"], workload=r.get("workload", r["trace"]), policy=r["policy"],
                   variant=r["policy"], seed=r.get("seed", 1), trace=r["trace"],
                   params=json.dumps(params, sort_keys=True))
        row.update(("param." + k, v) for k, v in params.items())
        rows.append(_metrics({k: v for k, v in r.items() if k != "workload"}, row))
    return enrich(rows)


def from_journal(records):
    """The rows of a sweep, its finished and its failed cells alike (status says which)."""
    return enrich([tidy_row(r) for r in records.values()])


def _variant(row):
    params = row.get("params") or "{}"
    params = json.loads(params) if isinstance(params, str) else params
    return row["policy"] + "".join(" %s=%g" % kv for kv in sorted(params.items()))


def enrich(rows):
    """The columns every row has, filled where a source lacks them: workload, variant,
    normalized_avg_latency (over Fast-Only's run of the same HSS, workload, simulator options and
    seed, else of its first seed)."""
    names = tables.labels(sorted({r["trace"] for r in rows if r.get("workload") is None}))
    for r in rows:
        if r.get("workload") is None:
            r["workload"] = names[r["trace"]]
        if r.get("variant") is None:
            r["variant"] = _variant(r)
    todo = [r for r in rows if r.get("normalized_avg_latency") is None]
    groups = {}
    for r in todo:
        groups.setdefault(r.get("options"), []).append(r)
    for group in groups.values():
        ok = [r for r in group if r.get("status", "ok") == "ok" and _finite(r.get("avg_latency_us"))]
        for r, x in zip(ok, tables.normalized(ok)):
            r["normalized_avg_latency"] = x
    return [dict({k: r.get(k) for k in FIRST}, **r) for r in rows]


def _finite(x):
    return isinstance(x, (int, float)) and math.isfinite(x)


# ---- files ----

def write(path, rows):
    """rows as a table in path, its format from the extension (.csv, .parquet, .json), atomically."""
    fmt = os.path.splitext(path)[1].lstrip(".").lower()
    if fmt not in FORMATS:
        raise HblError("%s: give a file ending in .csv, .parquet or .json" % path)
    columns = list(dict.fromkeys(c for row in rows for c in row))
    tmp = path + ".tmp"
    if fmt == "csv":
        with open(tmp, "w", newline="") as f:
            w = csv.DictWriter(f, columns)
            w.writeheader()
            w.writerows(rows)
    elif fmt == "json":
        with open(tmp, "w") as f:
            json.dump([{c: _json_value(row.get(c)) for c in columns} for row in rows], f, indent=1,
                      allow_nan=False)
            f.write("\n")
    else:
        _write_parquet(tmp, rows, columns)
    os.replace(tmp, path)


def parquet_available():
    try:
        import pyarrow.parquet  # noqa: F401
    except ImportError:
        return False
    return True


def _write_parquet(path, rows, columns):
    if not parquet_available():
        raise HblError("%s: Parquet needs pyarrow: pip install pyarrow (or hbl[sweep]); "
                       ".csv and .json need nothing" % path[:-len(".tmp")])
    import pyarrow
    import pyarrow.parquet as pq
    cols = {}
    for c in columns:    # one type a column: ints among floats as floats, anything else mixed as text
        vals = [row.get(c) for row in rows]
        kinds = {type(v) for v in vals if v is not None}
        if kinds == {int, float}:
            vals = [None if v is None else float(v) for v in vals]
        elif len(kinds) > 1:
            vals = [None if v is None else str(v) for v in vals]
        cols[c] = vals
    pq.write_table(pyarrow.table(cols), path)


def _json_value(v):
    if isinstance(v, float) and not math.isfinite(v):
        return None
    return v.item() if hasattr(v, "item") else v


def read(path):
    """The rows of any result hbl writes (see the module's docstring)."""
    if os.path.isdir(path) or os.path.basename(path) == JOURNAL:
        out_dir = path if os.path.isdir(path) else os.path.dirname(path) or "."
        if not os.path.exists(os.path.join(out_dir, JOURNAL)):
            raise HblError("%s: not a sweep directory (no %s)" % (out_dir, JOURNAL))
        return from_journal(read_journal(out_dir))
    fmt = os.path.splitext(path)[1].lstrip(".").lower()
    if fmt not in FORMATS:
        raise HblError("%s: not a result hbl writes (.csv, .parquet, .json, or a sweep's directory)" % path)
    try:
        if fmt == "json":
            with open(path) as f:
                data = json.load(f)
            if isinstance(data, dict) and "results" in data:
                return from_compare(data)
            if not isinstance(data, list) or not all(isinstance(r, dict) for r in data) \
                    or not all({"trace", "hss", "policy"} <= set(r) for r in data):
                raise HblError("%s: neither hbl compare's --output nor a table of runs (--out)" % path)
            return enrich(data)
        pd = _pandas()
        frame = pd.read_csv(path) if fmt == "csv" else pd.read_parquet(path)
    except OSError as exc:
        raise HblError("%s: %s" % (path, exc.strerror or exc)) from None
    except ValueError as exc:
        raise HblError("%s: not a table of runs (%s)" % (path, exc)) from None
    rows = [{k: None if _missing(v) else v for k, v in r.items()} for r in frame.to_dict("records")]
    for r in rows:
        if not {"trace", "hss", "policy"} <= set(r):
            raise HblError("%s: not a table of runs (no trace, hss and policy columns)" % path)
    return enrich(rows)


def _missing(v):
    return v is None or (isinstance(v, float) and math.isnan(v))


def _pandas():
    try:
        import pandas
    except ImportError:
        raise HblError("hbl.results.load needs pandas: pip install pandas (scripts/bootstrap.sh installs it)") from None
    return pandas


def load(path, failed=False):
    """A pandas DataFrame of the runs in path, one row each; a sweep's failed cells only with
    failed=True (their metrics are then missing, their error says why)."""
    pd = _pandas()
    rows = read(path)
    if not failed:
        rows = [r for r in rows if r.get("status", "ok") == "ok"]
    return pd.DataFrame(rows)
