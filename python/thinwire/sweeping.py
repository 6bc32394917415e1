"""Parameter sweeps: a base scenario, axes over any scenario field, replications;
run on Dask (a local cluster by default, or an existing scheduler).

Sweep file (TOML):

    scenario = "../scenarios/shared-link-sr.toml"   # relative to the sweep file
    replications = 30
    common_random_numbers = true   # replication r uses run index r at every point
    [set]                          # fixed overrides for every run
    "flow.0.bytes" = "1MB"
    [axes]                         # cartesian product
    "wireless.arq.timeout" = ["0.9s", "1.1s", "1.3s"]
    "wireless.channel.p" = [0.015, 0.025, 0.054]

Run indices: with common random numbers (the default) replication r runs with run
index r at every point, so points are compared on the same channel realisations
(paired comparison, lower variance of differences); with
`common_random_numbers = false`, every point x replication gets its own index
(point * replications + r). Each run is keyed by a hash of its resolved
configuration (base text, overrides, run index): runs already in runs.parquet are
not repeated, so an interrupted sweep resumes. Traces are off in sweeps.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import math
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

import tomllib

from . import _core
from .api import ScenarioError, _toml_value, path_overrides
from .fields import metrics
from .outputs import write_parquet, write_text

if TYPE_CHECKING:
    import polars as pl

# The metrics a sweep aggregates: every field the Rust core marks as a metric.
FLOW_METRICS = metrics("flow")
LINK_METRICS = metrics("link")


class SweepError(ScenarioError):
    """A sweep file that cannot be run, in one line (line breaks in names it quotes,
    e.g. a TOML key with an escaped newline, are shown escaped)."""

    def __init__(self, msg: str):
        super().__init__(msg.replace("\r", "\\r").replace("\n", "\\n"))


# The most runs one sweep may have (points x replications).
MAX_RUNS = 1_000_000


@dataclass
class Sweep:
    base_text: str
    base_name: str
    fixed: list[str]
    axes: dict[str, list]
    replications: int
    crn: bool

    def points(self) -> list[dict]:
        names = list(self.axes)
        return [dict(zip(names, combo)) for combo in itertools.product(*(self.axes[n] for n in names))] or [{}]

    def column_value(self, axis: str, v):
        """An axis value as stored in the table: numbers stay numbers when every
        value of the axis is a number, otherwise text."""
        numeric = all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in self.axes[axis])
        return float(v) if numeric else (v if isinstance(v, str) else _toml_value(v))

    def runs(self) -> list[dict]:
        out = []
        for pi, point in enumerate(self.points()):
            for r in range(self.replications):
                run_index = r if self.crn else pi * self.replications + r
                ov = (
                    self.fixed
                    + [f"{k}={_toml_value(v)}" for k, v in point.items()]
                    + [f"run={run_index}", "trace.layers=[]", "trace.pcap=false"]
                )
                key = hashlib.sha256(json.dumps([self.base_text, ov]).encode()).hexdigest()[:24]
                out.append(
                    {
                        "key": key,
                        "point": pi,
                        "replication": r,
                        "run": run_index,
                        "overrides": ov,
                        "axes": {k: self.column_value(k, v) for k, v in point.items()},
                    }
                )
        return out


def load_sweep(path: str | os.PathLike) -> Sweep:
    p = Path(path)
    if not p.is_file():
        raise SweepError(f"{p}: no such sweep file (give a path to a .toml file)")
    try:
        d = tomllib.loads(p.read_text(encoding="utf-8"))
    except UnicodeDecodeError:
        raise SweepError(f"{p}: not UTF-8 text (a sweep is a TOML file)") from None
    except tomllib.TOMLDecodeError as e:
        raise SweepError(f"{p}: malformed TOML ({str(e).splitlines()[0]})") from None
    except RecursionError:
        raise SweepError(f"{p}: malformed TOML (nested too deeply)") from None
    allowed = {"scenario", "replications", "common_random_numbers", "set", "axes"}
    extra = sorted(set(d) - allowed)
    if extra:
        raise SweepError(f"{p}: unknown key {extra[0]!r}; a sweep has {', '.join(sorted(allowed))}")
    if "scenario" not in d or not isinstance(d["scenario"], str):
        raise SweepError(f"{p}: scenario: give the base scenario's path (relative to the sweep file)")
    try:
        sc = (p.parent / d["scenario"]).resolve()
        found = sc.is_file()
    except (ValueError, OSError):  # a NUL byte (found by fuzzing), a name too long
        found = False
    if not found:
        raise SweepError(f"{p}: scenario: {d['scenario']!r} does not exist (paths are relative to the sweep file)")
    reps = d.get("replications", 1)
    crn = d.get("common_random_numbers", True)
    fixed = d.get("set", {})
    axes = d.get("axes", {})
    if not isinstance(fixed, dict) or not isinstance(axes, dict):
        raise SweepError(f"{p}: [set] and [axes] must be tables of field = value / field = [values]")
    for k, v in axes.items():
        if not isinstance(v, list) or not v:
            raise SweepError(f"{p}: axes.{k}: give a non-empty list of values")
    _check_size(str(p), axes, reps, crn)
    try:
        base_text = sc.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise SweepError(f"{p}: scenario: {d['scenario']!r} is not UTF-8 text (a scenario is a TOML file)") from None
    try:
        return _checked(p, sc, base_text, fixed, axes, reps, crn)
    except RecursionError:  # a dotted key hundreds of tables deep (found by fuzzing)
        raise SweepError(f"{p}: [set]/[axes]: a value is nested too deeply (no scenario field is)") from None


def _check_size(where: str, axes: dict, reps, crn) -> None:
    """The checks a sweep file and `sweep()` share: replications, common random
    numbers, and the number of runs — counted before anything is built (a billion
    runs once ran out of memory)."""
    if not isinstance(reps, int) or isinstance(reps, bool) or not 1 <= reps <= MAX_RUNS:
        raise SweepError(f"{where}: replications: {reps!r} is not an integer from 1 to {MAX_RUNS:,}")
    if not isinstance(crn, bool):
        raise SweepError(f"{where}: common_random_numbers: {crn!r} is not true or false")
    n_points = math.prod(len(v) for v in axes.values())
    if n_points * reps > MAX_RUNS:
        raise SweepError(
            f"{where}: {n_points:,} points x {reps:,} replications is {n_points * reps:,} runs; "
            f"a sweep has at most {MAX_RUNS:,}"
        )


def _checked(p: Path, sc: Path, base_text: str, fixed: dict, axes: dict, reps: int, crn: bool) -> Sweep:
    """The sweep, with every point validated before anything runs: errors name the
    axis value."""
    sw = Sweep(
        base_text,
        sc.stem,
        path_overrides(sc, base_text) + [f"{k}={_toml_value(v)}" for k, v in fixed.items()],
        axes,
        reps,
        crn,
    )
    return _validated(str(p), sw)


def _validated(where: str, sw: Sweep) -> Sweep:
    from .api import _warn

    found: list[str] = []
    for point in sw.points():
        ov = sw.fixed + [f"{k}={_toml_value(v)}" for k, v in point.items()]
        try:
            found += _core.check(sw.base_text, ov)
        except ScenarioError as e:
            at = ", ".join(f"{k}={v!r}" for k, v in point.items())
            raise SweepError(f"{where}: at point ({at}): {e}") from None
    _warn(found)
    return sw


def flatten(summary: dict) -> dict:
    row = {"sim_time_s": summary["sim_time_s"], "events": summary["events"], "wall_s": summary["wall_s"]}
    for f in summary["flows"]:
        for m in FLOW_METRICS:
            if f.get(m) is not None:
                row[f"flow{f['id']}.{m}"] = float(f[m])
    for d in ("down", "up"):
        for m in LINK_METRICS:
            row[f"{d}.{m}"] = float(summary["link"][d][m])
    return row


def run_batch(base_text: str, batch: list[dict]) -> list[dict]:
    """Runs a list of runs (executed on a Dask worker)."""
    from .api import RunResult

    out = []
    for r in batch:
        raw = _core.run(base_text, r["overrides"])
        res = RunResult(raw=raw)
        row = {"key": r["key"], "point": r["point"], "replication": r["replication"], "run": r["run"]}
        row.update({f"axis:{k}": v for k, v in r["axes"].items()})
        row.update(flatten(res.summary))
        out.append(row)
    return out


def summarize(runs, axes: list[str]):
    """Mean, standard deviation, n and 95 % CI half-width per point and metric."""
    import polars as pl

    from .stats import ci95_expr

    group = [f"axis:{a}" for a in axes] or ["point"]
    metrics = [c for c in runs.columns if c not in ("key", "point", "replication", "run") and not c.startswith("axis:")]
    aggs = []
    for m in metrics:
        aggs += [
            pl.col(m).mean().alias(f"{m}:mean"),
            pl.col(m).std().alias(f"{m}:sd"),
            pl.col(m).count().alias(f"{m}:n"),
        ]
    s = runs.group_by(group, maintain_order=True).agg(aggs)
    for m in metrics:
        s = s.with_columns(ci95_expr(f"{m}:sd", f"{m}:n").alias(f"{m}:ci95"))
    return s.sort(group)


class SweepResult(NamedTuple):
    """A sweep's results: `runs, summary = thinwire.sweep(...)`."""

    runs: "pl.DataFrame"  # one row per run: key, point, replication, run, axis:FIELD..., metrics
    summary: "pl.DataFrame"  # per point: axis:FIELD..., METRIC:mean / :sd / :n / :ci95


def sweep(
    scenario: "str | os.PathLike[str]",
    axes: "Mapping[str, Sequence[Any]] | None" = None,
    *,
    set: "Mapping[str, Any] | None" = None,
    replications: int = 1,
    common_random_numbers: bool = True,
    workers: int | None = None,
    scheduler: str | None = None,
    progress: bool = True,
    out: "str | os.PathLike[str] | None" = None,
) -> SweepResult:
    """Runs a base scenario at every point of `axes` (the cartesian product of each
    field's values) `replications` times, on Dask (a local cluster of `workers`
    processes, or `scheduler`), and returns (runs, summary) DataFrames.

        runs, summary = thinwire.sweep(
            thinwire.examples.path("shared-link-sr"),
            axes={"wireless.channel.p": [0.01, 0.03], "wireless.arq.timeout": ["0.9s", "1.3s"]},
            set={"flow.0.bytes": "200KB", "wireless.channel": {"model": "uniform", "p": 0.0}},
            replications=5,
        )

    `scenario` is a path or TOML text (as for `thinwire.run`); `set` holds fixed
    overrides for every run. Works from a plain script (no `if __name__ ==
    "__main__":` guard needed) and from a notebook. Nothing is written unless `out`
    is given: then runs.parquet, summary.parquet and sweep.json go there and an
    interrupted sweep resumes (as `thinwire sweep --out`). Bad arguments raise
    ScenarioError (SweepError) naming the field and, for a value, the point."""
    from .api import load_scenario_text

    base_text, name = load_scenario_text(scenario)
    axes = dict(axes or {})
    fixed = dict(set or {})
    where = "sweep"
    if workers is not None and (not isinstance(workers, int) or workers < 1):
        raise SweepError(f"{where}: workers: {workers!r} is not a positive number of workers")
    for k, v in axes.items():
        if not isinstance(k, str):
            raise SweepError(f"{where}: axes: {k!r} is not a field name such as 'wireless.channel.p'")
        if isinstance(v, (str, bytes, Mapping)) or not isinstance(v, Iterable):
            raise SweepError(f"{where}: axes[{k!r}]: give a list of values, e.g. [0.01, 0.05]")
        axes[k] = list(v)
        if not axes[k]:
            raise SweepError(f"{where}: axes[{k!r}]: give a non-empty list of values")
    _check_size(where, axes, replications, common_random_numbers)
    sw = Sweep(
        base_text,
        name,
        path_overrides(scenario, base_text) + [f"{k}={_toml_value(v)}" for k, v in fixed.items()],
        axes,
        replications,
        common_random_numbers,
    )
    _validated(where, sw)
    runs, summary = execute_sweep(sw, None if out is None else Path(out), scheduler, workers, progress)
    return SweepResult(runs, summary)


def run_sweep(
    path,
    out=None,
    scheduler: str | None = None,
    workers: int | None = None,
    progress: bool = True,
    batch: int | None = None,
):
    """Runs (or resumes) a sweep file; returns (runs DataFrame, summary DataFrame)."""
    sw = load_sweep(path)
    return execute_sweep(
        sw, Path(out) if out else Path("thinwire-out") / Path(path).stem, scheduler, workers, progress, batch
    )


def execute_sweep(
    sw: "Sweep",
    out: Path | None,
    scheduler: str | None = None,
    workers: int | None = None,
    progress: bool = True,
    batch: int | None = None,
):
    """Runs (or resumes) a sweep given as a `Sweep`; writes runs/summary Parquet in
    `out` (None: in memory only)."""
    return execute_sweeps([(sw, out)], scheduler, workers, progress, batch)[0]


def execute_sweeps(
    jobs: list,
    scheduler: str | None = None,
    workers: int | None = None,
    progress: bool = True,
    batch: int | None = None,
    desc: str = "sweep",
    extra: list | None = None,
    keep_foreign: bool = False,
) -> list:
    """Runs (or resumes) several sweeps on one Dask client with one progress bar;
    each `(Sweep, out_dir)` gets its own runs/summary Parquet. `extra`: more runner
    groups (a study's own tasks) to run on the same client under the same bar.
    Returns `(runs, summary)` per job.

    Runs already in an out_dir's runs.parquet that are not this sweep's are never
    deleted: a user's sweep is refused (SweepError), and with `keep_foreign` (a
    study's cache, which holds its quick and full runs side by side) they are kept
    in runs.parquet and left out of the results."""
    import functools

    import polars as pl

    from .runner import Group, execute

    states = []
    for sw, out in jobs:
        # out None: in memory (the API without `out`): nothing read, nothing written.
        runs_path = None if out is None else out / "runs.parquet"
        if out is not None:
            out.mkdir(parents=True, exist_ok=True)
        done_rows: list[dict] = []
        if runs_path is not None and runs_path.exists():
            try:
                done_rows = pl.read_parquet(runs_path).to_dicts()
            except Exception as e:  # a damaged table is not silently replaced
                raise SweepError(
                    f"{runs_path}: cannot read the existing results ({e.__class__.__name__}); move it away to start afresh"
                ) from None
        all_runs = sw.runs()
        wanted = {r["key"] for r in all_runs}
        foreign = [r for r in done_rows if r["key"] not in wanted]
        if foreign and not keep_foreign:
            # Never delete a user's results: these runs are not this sweep's.
            raise SweepError(
                f"{runs_path}: holds {len(foreign):,} runs of another sweep (or of this one with other settings); "
                "give another --out, or move that folder away to replace them"
            )
        done = {r["key"] for r in done_rows if r["key"] in wanted}
        states.append(
            {
                "sw": sw,
                "out": out,
                "runs_path": runs_path,
                "all_runs": all_runs,
                "todo": [r for r in all_runs if r["key"] not in done],
                "rows": [r for r in done_rows if r["key"] in wanted],
                "foreign": foreign,
                "new": [],
            }
        )

    def group(st) -> Group:
        def save(_keys, rows):
            st["new"] += rows
            st["dirty"] = True

        return Group(
            [(r["key"], r) for r in st["todo"]],
            functools.partial(run_batch, st["sw"].base_text),
            save,
            lambda: _save([st], True),
        )

    execute([group(st) for st in states] + list(extra or []), scheduler, workers, progress, batch, desc)
    results = []
    for st in states:
        rows = st["rows"] + st["new"]
        order = {r["key"]: i for i, r in enumerate(st["all_runs"])}
        rows.sort(key=lambda r: order[r["key"]])
        df = pl.DataFrame(infer_schema_length=None, data=rows)
        sw = st["sw"]
        summary = summarize(df, list(sw.axes))
        if st["out"] is None:
            results.append((df, summary))
            continue
        write_parquet(pl.DataFrame(infer_schema_length=None, data=rows + st["foreign"]), st["runs_path"])
        write_parquet(summary, st["out"] / "summary.parquet")
        write_text(
            st["out"] / "sweep.json",
            json.dumps(
                {
                    "scenario": sw.base_name,
                    "axes": sw.axes,
                    "fixed": sw.fixed,
                    "replications": sw.replications,
                    "runs": len(rows),
                    "new_runs": len(st["todo"]),
                },
                indent=2,
                default=str,
            )
            + "\n",
        )
        results.append((df, summary))
    return results


def _save(states, only_dirty: bool):
    import polars as pl

    for st in states:
        if st["runs_path"] is not None and st["new"] and (st.get("dirty") or not only_dirty):
            rows = st["rows"] + st["new"] + st["foreign"]
            write_parquet(pl.DataFrame(infer_schema_length=None, data=rows), st["runs_path"])
            st["dirty"] = False
