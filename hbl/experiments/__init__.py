"""Experiments: grids of simulator runs, and the tables and figures made of them.

    engine.py        the one experiment engine: a grid of cells (traces x HSS x policies x
                     parameter sets x seeds), run on the process pool or on Dask
    compare.py       `hbl compare`: its preset grid, the default suite
    tables.py        the papers' tables, computed once (`hbl compare`, `hbl sweep report`)
    results.py       result files: read, write, load as a data frame
    figures.py       the papers' figures (matplotlib)
    plot.py          `hbl plot`: what a result file holds, as figures
    report.py        `hbl report`: one HTML page of tables and figures
    bench.py         `hbl bench`: the simulator against libCacheSim
    sweep.py         `hbl sweep` on Dask distributed
    sweep_report.py  `hbl sweep report`
    sweep_tune.py    `hbl sweep tune`: the agents' hyper-parameter search
    sweep_bench.py   what the sweep engine costs per cell
"""
