"""hbl compare, plot, report and sweep: experiments over many runs, and what shows their results."""
import os
import sys

from hbl.cli.options import (EPILOG_TRACES, check_chart_path, check_distinct, check_output_dir, check_sim,
                             reader_options, sim_args, sim_options, trace_args)
from hbl.cmdline import print_json, whole, write_json
from hbl.errors import HblError

PLOT_FORMATS = "svg,png"
RESULT_HELP = ("hbl compare --out FILE or --output FILE, a sweep's DIR or its results table, hbl simulate "
               "--timeline FILE, scripts/learning_timeline.py --output FILE, or hbl status NAME --json")


def add_parsers(sub):
    _add_compare(sub)
    _add_plot(sub)
    _add_report(sub)
    _add_sweep(sub)


def _add_compare(sub):
    """hbl compare."""
    c = sub.add_parser("compare", help="policies x workloads x HSS configs, the papers' table",
                       description="Run every policy on every workload and HSS configuration (in parallel) "
                       "and print, per HSS, a summary (policies by the geomean of average latency normalized "
                       "to Fast-Only, against the best non-learning policy and the oracle) and the latency "
                       "per workload, within 100 columns; --wide prints the one wide table with p99 latency "
                       "and migrations, --out FILE every run as a table (hbl.results.load reads it).",
                       epilog=EPILOG_TRACES)
    c.add_argument("--hss", default="perf,cost", help="comma-separated HSS configs (default perf,cost)")
    c.add_argument("--policies", default="all", help="comma-separated policies, or all (default: every "
                   "C policy; harmonia-guard, a composite at about 1.5x harmonia's time beside lru, arc, lirs, "
                   "s3fifo and wtinylfu, whose runs it shares, only when named)")
    c.add_argument("--jobs", type=whole(1, 256), help="parallel simulations (default: number of cores)")
    c.add_argument("--synthetic-requests", type=whole(1, 1 << 40),
                   help="requests per synthetic workload of the default suite (default 1000000)")
    c.add_argument("--capture-requests", type=whole(0, 1 << 40), default=250_000,
                   help="the default suite takes the first N requests of each full capture (workload:NAME; "
                   "default 250000, 0 = whole)")
    c.add_argument("--json", action="store_true", help="print the full summary as JSON")
    c.add_argument("--wide", action="store_true",
                   help="print one wide table per HSS (policies x workloads, with p99 latency and migrations) "
                        "instead of the summary and the per-workload table, which fit 100 columns")
    c.add_argument("--out", metavar="FILE", help="also write every run, one row each with every metric, to FILE: "
                   ".csv, .parquet (needs pyarrow) or .json (hbl.results.load reads it)")
    c.add_argument("--output", metavar="FILE", help="also write the full summary as JSON to FILE")
    c.add_argument("--plot", metavar="PNG", help="write a bar chart like the papers' figures")
    c.add_argument("--seeds", type=whole(1, 100), default=3,
                   help="learning policies run with seeds --seed .. --seed+N-1; the table shows their mean "
                        "and the min-max of the geometric mean (default 3)")
    c.add_argument("--untrained", action="store_true",
                   help="learning policies start from untrained agents, not the shipped pretrained ones")
    c.add_argument("--agents", metavar="DIR",
                   help="learning policies start from the agents in DIR (hbl pretrain --out DIR), not the shipped "
                        "ones: DIR/POLICY-HSS.agent (--select's choice) for every seed, else seed N from "
                        "pretraining seed N's DIR/POLICY-HSS-sN.agent")
    c.add_argument("--quiet", action="store_true", help="no progress on stderr")
    c.add_argument("--from-json", metavar="FILE", help="re-print (and re-plot) a comparison saved with --output")
    trace_args(c, many=True, default="the default suite: the bundled MSR slices, the apps: slices, the "
               "full captures' first --capture-requests requests, four synthetic workloads")
    sim_args(c)
    c.set_defaults(func=cmd_compare)


def _add_plot(sub):
    """hbl plot."""
    pl = sub.add_parser("plot", help="the papers' figures from a result, SVG and PNG at one column's width",
                        description="Draw the papers' figures from a result, at the width of one column of a paper "
                        "(3.3 in, text at 7 pt or more), each policy in the same colour and marker in every "
                        "figure (Okabe-Ito colours; marker: reference, heuristic or learning policy). From compare "
                        "or sweep runs: latency-HSS, the average latency / Fast-Only per workload, a figure per HSS, "
                        "and geomean, the geomean summary, a panel per HSS with the best non-learning policy marked; "
                        "learning policies are their mean over the seeds with a min-max bar. From a simulate "
                        "timeline: the latency and hit ratio per window; from a learning study: its curves per "
                        "workload and HSS; from a live device's status: IOPS and hit ratio over time. "
                        "Prints the files written.")
    pl.add_argument("result", metavar="RESULT", help=RESULT_HELP)
    pl.add_argument("-o", "--out", metavar="DIR|FILE",
                    help="a directory (made if missing) for NAME.FORMAT, or one file (.svg, .png, .pdf; "
                         "FILE-NAME.EXT when there are several figures); default: beside RESULT")
    pl.add_argument("--format", default=PLOT_FORMATS,
                    help="comma-separated formats into a directory: svg, png, pdf (default %s)" % PLOT_FORMATS)
    pl.add_argument("--json", action="store_true", help="print the files written as JSON")
    pl.set_defaults(func=cmd_plot)


def _add_report(sub):
    """hbl report."""
    rp = sub.add_parser("report", help="one self-contained HTML page of a result: summary, sortable table, figures",
                        description="Write one HTML file that needs nothing else (no network: style, script and "
                        "figures inline) to send or to open from a remote host: per HSS the summary `hbl compare` "
                        "prints, the per-workload table (click a header to sort by it, again to reverse; a learning "
                        "policy's min-max over seeds in the cell's tooltip) and the figures of `hbl plot`.")
    rp.add_argument("result", metavar="RESULT", help=RESULT_HELP)
    rp.add_argument("-o", "--out", metavar="FILE", required=True, help="the HTML file to write, e.g. report.html")
    rp.add_argument("--json", action="store_true", help="print the file written as JSON")
    rp.set_defaults(func=cmd_report)


def _add_sweep(sub):
    """hbl sweep (and sweep report, sweep tune)."""
    sw = sub.add_parser("sweep", help="traces x HSS x policies x parameters x seeds on a Dask cluster",
                        description="Run a grid of simulations on Dask distributed: a local cluster on "
                        "loopback by default, or an existing one (--address). Results go to DIR as they "
                        "finish (cells.jsonl, results.csv, results.parquet); a rerun computes only the "
                        "missing cells. `hbl sweep SPEC.toml` reads the grid from a file; "
                        "`hbl sweep report DIR [--plot PNG]` prints the papers' tables; `hbl sweep tune` searches "
                        "a policy's parameters with Optuna on training workloads (--trace) only.", epilog=EPILOG_TRACES)
    sw.add_argument("target", nargs="*", metavar="SPEC.toml | report DIR | tune",
                    help="a spec file, `report DIR`, or `tune`")
    sw.add_argument("--hss", help="comma-separated HSS configs (default cost)")
    sw.add_argument("--policies", help="comma-separated policies")
    sw.add_argument("--param-grid", action="append", metavar="NAME=V1,V2",
                    help="a parameter axis (repeatable); POLICY.NAME varies it for that policy only")
    sw.add_argument("--seeds", type=int, help="seeds per cell: --seed, --seed+1, ... (default 1)")
    sw.add_argument("--out", metavar="DIR", help="results directory (resumable)")
    sw.add_argument("--workers", type=int, help="local cluster size (default: the cores)")
    sw.add_argument("--address", help="scheduler of an existing Dask cluster, e.g. tcp://10.0.0.5:8786")
    sw.add_argument("--json", action="store_true", help="print a JSON summary (report: the full report)")
    sw.add_argument("--quiet", action="store_true", help="no progress on stderr")
    sw.add_argument("--plot", metavar="PNG", help="report: bar chart with min-max over seeds")
    sw.add_argument("--space", action="append", metavar="NAME=LOW:HIGH[:log|:int]",
                    help="tune: a parameter's search range (repeatable)")
    sw.add_argument("--trials", type=int, default=20, help="tune: trials (default 20)")
    sw.add_argument("--sampler-seed", type=int, default=1, metavar="N",
                    help="tune: the seed of Optuna's TPE sampler, which decides the trials' parameters (default 1; "
                         "--seed is the simulations' first seed)")
    sw.add_argument("--test", action="append", metavar="TRACE",
                    help="tune: a held-out workload (repeatable), simulated with the best and the default parameters")
    trace_args(sw, many=True, default="none: here or as traces in SPEC.toml")
    sim_args(sw)
    sw.set_defaults(func=cmd_sweep)


def cmd_compare(a):
    from hbl.experiments import compare as cmp, results
    hss = [h.strip() for h in a.hss.split(",") if h.strip()]
    check_output_dir(a.output, a.plot, a.out)
    check_chart_path(a.plot)
    check_distinct(("", a.from_json), ("--output", a.output), ("--out", a.out), ("--plot", a.plot))
    if a.out:
        fmt = os.path.splitext(a.out)[1].lstrip(".").lower()
        if fmt not in results.FORMATS:
            raise HblError("--out %s: give a file ending in .csv, .parquet or .json" % a.out)
        if fmt == "parquet" and not results.parquet_available():
            raise HblError("--out %s: Parquet needs pyarrow: pip install pyarrow (or hbl[sweep]); "
                           ".csv and .json need nothing" % a.out)
    if a.from_json:
        summary = cmp.from_results(a.from_json)
    else:
        check_sim(a, hss)
        if a.agents and (a.untrained or not os.path.isdir(a.agents)):
            raise HblError("--agents %s: %s" % (a.agents, "give it or --untrained, not both" if a.untrained
                                                else "a file, not a directory of agent files (hbl pretrain --out)"
                                                if os.path.exists(a.agents) else "no such directory"))
        agents = dict(load_agents=a.agents) if a.agents else {}
        summary = cmp.compare(traces=a.trace, hss_list=hss, policies=a.policies, jobs=a.jobs, fmt=a.fmt,
                          lenient=a.lenient, reader_options=reader_options(a), progress=not a.quiet,
                          synthetic_requests=a.synthetic_requests, capture_requests=a.capture_requests,
                          fast_capacity=a.fast_capacity,
                          params=a.param, seed=a.seed, seeds=a.seeds, untrained=a.untrained,
                          **agents, **sim_options(a))
    if not summary.get("workloads"):   # every trace was left out: nothing to normalize or average
        raise HblError("no trace with reads or writes to compare")
    for note in summary.get("agents_not_loaded") or []:
        print("hbl: warning: " + note, file=sys.stderr)
    if a.output:
        write_json(a.output, summary)
    if a.out:
        results.write(a.out, results.from_compare(summary))
    return _show(a, summary, cmp.format_wide if a.wide else cmp.format_text, cmp.plot)


def _show(a, report, format_text, plot):
    """A report as JSON (--json) or text, and its chart when --plot names a file."""
    if a.plot:
        plot(report, a.plot)
    if a.json:
        print_json(report)
    else:
        print(format_text(report))
        if a.plot:
            print("plot written to %s" % a.plot)
    return 0


def cmd_sweep(a):
    """hbl sweep (grid from flags or SPEC.toml) and hbl sweep report DIR."""
    from hbl.experiments import sweep
    if a.target[:1] == ["report"]:
        if len(a.target) != 2:
            raise HblError("usage: hbl sweep report DIR [--plot PNG] [--json]")
        from hbl.experiments import sweep_report
        check_output_dir(a.plot)
        check_chart_path(a.plot)
        return _show(a, sweep_report.report(a.target[1]), sweep_report.format_report, sweep_report.plot)
    if a.target[:1] == ["tune"]:
        from hbl.experiments import sweep_tune
        policies = [p.strip() for p in (a.policies or "").split(",") if p.strip()]
        if len(a.target) != 1 or len(policies) != 1 or not a.trace or not a.out:
            raise HblError("usage: hbl sweep tune --trace TRAIN... --policies ONE --space NAME=LOW:HIGH[:log|:int]... "
                           "--trials N --out DIR [--test TRACE...]")
        options = dict(sim_options(a), fast_capacity=a.fast_capacity, params=a.param)
        r = sweep_tune.tune(a.trace, policies[0], [sweep_tune.parse_space(s) for s in a.space or []], a.trials,
                            a.out, hss=[h.strip() for h in (a.hss or "cost").split(",") if h.strip()],
                            seeds=list(range(a.seed, a.seed + (a.seeds or 1))), test=a.test or [],
                            options={k: v for k, v in options.items() if v is not None}, workers=a.workers,
                            address=a.address, sampler_seed=a.sampler_seed, progress=None if a.quiet else
                            lambda line: print(line, file=sys.stderr, flush=True))
        if a.json:
            print_json(r)
        else:
            print(sweep_tune.format_tune(r))
        return 0
    if len(a.target) > 1:
        raise HblError("hbl sweep takes one spec file (or `report DIR`), got: %s" % " ".join(a.target))
    if a.target:
        if a.trace or a.policies or a.param_grid or a.seeds or a.hss:
            raise HblError("give the grid in %s or on the command line, not both" % a.target[0])
        grid, where = sweep.load_spec(a.target[0])
    else:
        seeds = range(a.seed, a.seed + (a.seeds or 1))
        options = dict(sim_options(a), fast_capacity=a.fast_capacity, params=a.param)
        grid = sweep.Grid(traces=a.trace or [], hss=[h.strip() for h in (a.hss or "cost").split(",") if h.strip()],
                          policies=[p.strip() for p in (a.policies or "").split(",") if p.strip()],
                          param_grid=dict(sweep.parse_grid_item(g) for g in a.param_grid or []), seeds=list(seeds),
                          options={k: v for k, v in options.items() if v is not None}, fmt=a.fmt,
                          lenient=a.lenient, reader_options=reader_options(a))
        where = {}
    where.update({k: v for k, v in (("out", a.out), ("workers", a.workers), ("address", a.address)) if v})
    if not where.get("out"):
        raise HblError("hbl sweep: give --out DIR (or out = \"DIR\" in the spec)")
    if where.get("workers") and where.get("address"):
        raise HblError("--workers sizes the embedded cluster; with --address the cluster has its own workers")
    summary = sweep.run(grid, where["out"], workers=where.get("workers"), address=where.get("address"),
                        progress=not a.quiet)
    if a.json:
        print_json(summary)
    else:
        print("%d cells: %d computed, %d skipped (already in %s), %d failed; results in %s" % (
            summary["cells"], summary["computed"], summary["skipped"], summary["out"], summary["failed"],
            os.path.join(summary["out"], sweep.CSV_TABLE)))
    if summary["failed"]:
        print("hbl: error: %d cells failed (in %s); the first: %s" % (
            summary["failed"], os.path.join(summary["out"], sweep.JOURNAL), summary["first_error"]), file=sys.stderr)
    return 2 if summary["failed"] else 0


def cmd_plot(a):
    from hbl.experiments import plot
    formats = plot.parse_formats(a.format)
    if a.out and os.path.splitext(a.out)[1] and a.format != PLOT_FORMATS:
        raise HblError("-o %s names one format by its extension: leave --format out, or give a directory" % a.out)
    written = plot.plot(a.result, a.out, formats)
    if a.json:
        print_json(dict(result=a.result, figures=written))
    else:
        print("\n".join(written))
    return 0


def cmd_report(a):
    from hbl.experiments import report
    check_distinct(("", a.result), ("-o", a.out))     # it wrote the page over the result
    check_output_dir(a.out)                            # written whole and renamed into place
    out = report.write(a.result, a.out)
    if a.json:
        print_json(dict(result=a.result, report=out))
    else:
        print("report written to %s" % out)
    return 0
