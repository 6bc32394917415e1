"""`thinwire sweep`: a parameter sweep on Dask."""

from __future__ import annotations

from pathlib import Path

from .._core import ScenarioError
from .common import die


def add(sub) -> None:
    sw = sub.add_parser("sweep", help="run a parameter sweep on Dask (local cluster or --scheduler)")
    sw.add_argument("sweep", help="sweep TOML file")
    sw.add_argument("--out", help="output directory (default thinwire-out/NAME)")
    sw.add_argument("--scheduler", help="address of a running Dask scheduler, e.g. tcp://host:8786")
    sw.add_argument("--workers", type=int, help="local cluster size (default: number of cores)")
    sw.add_argument("--quiet", action="store_true", help="no progress bar")
    sw.set_defaults(fn=cmd)


def cmd(a) -> int:
    from ..sweeping import run_sweep

    if a.workers is not None and a.workers < 1:
        die(f"--workers: {a.workers} is not a positive number of workers")
    try:
        runs, summary = run_sweep(a.sweep, out=a.out, scheduler=a.scheduler, workers=a.workers, progress=not a.quiet)
    except ScenarioError as e:
        die(str(e))
    out = a.out or str(Path("thinwire-out") / Path(a.sweep).stem)
    axes = [c for c in summary.columns if c.startswith("axis:")]
    shown = [c for c in summary.columns if c.endswith(":mean") and ("throughput_bps" in c or "delay_mean_s" in c)][:4]
    print(f"{runs.height} runs, {summary.height} points -> {out}/runs.parquet, {out}/summary.parquet")
    import polars as pl

    cols = axes + [x for c in shown for x in (c, c.replace(":mean", ":ci95"))]
    with pl.Config(tbl_rows=50, tbl_cols=20, tbl_width_chars=200, float_precision=4):
        print(summary.select(cols))
    return 0
