"""The shape every simulated study shares (after asv's benchmark protocol: a
study is its parameters, its runs and a reduction of them), and the one
`reproduce` skeleton that drives it.

A study module builds a `Study` from its own functions and exports its
`reproduce`:

    STUDY = Study(
        run=run_all,                          # (out, quick, scheduler, workers, progress, **params) -> runs
        reduce=summarize,                     # runs -> summary (default: the runs themselves)
        tables=lambda runs, s, out: ...,      # write the runs' and the summary's tables
        figures=lambda runs, s, out, quick, workers: plot(s, out),  # workers: processes it may draw in
        claims=lambda runs, s: claims(s),     # -> list of claim dicts (report.py's shape)
        count=len,                            # runs made, for timing.json (None: not counted)
        replications=(3, 30),                 # a replicating study: defaults (quick, full); `run` takes `reps`
    )
    reproduce = STUDY.reproduce

`Study.reproduce(out, quick, scheduler, workers, progress, replications,
**params)` creates `out`, times the runs (`timing.json`: `runs`,
`simulate_and_analyse_s`, the kind of build that ran them — `plain` or `make
pgo`'s `profile-guided` —, the replications per point of a replicating study,
and what `timing` adds), writes the tables and figures, checks the claims and
writes them (`claims.json`, `claims.md`), and returns them. Adding a study is a
module with these functions and one line in `STUDIES` (`studies/__init__.py`).
`sim-vs-real`, whose runs are real hosts' as well as the model's, keeps a
`reproduce` of its own.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable


def _same(runs: Any) -> Any:
    return runs


def _uncounted(runs: Any) -> int | None:
    return None


def _nothing(quick: bool) -> dict:
    return {}


@dataclass(frozen=True)
class Study:
    """A study's parts; see the module documentation."""

    run: Callable[..., Any]
    tables: Callable[[Any, Any, Path], None]
    figures: Callable[[Any, Any, Path, bool, int | None], None]
    claims: Callable[[Any, Any], list[dict]]
    reduce: Callable[[Any], Any] = _same
    count: Callable[[Any], int | None] = _uncounted
    timing: Callable[[bool], dict] = _nothing
    """Further entries of `timing.json` (the size of a histogram's own runs, …)."""
    timed: bool = True
    """Whether `timing.json` is written at all."""
    replications: tuple[int, int] | None = None
    """Replications per point by default, `(quick, full)`; `None`: the study does
    not replicate runs. A study that has them takes `reps` in `run`, and
    `reproduce(replications=N)` (`--replications N`) overrides the default: the
    same runs as the default's first N (each replication's seed is its index),
    so a folder run with fewer can be topped up later, resuming."""
    write_claims: Callable[[Path, list[dict]], None] | None = None
    """How the claims are written (default: report.py's `claims.json` and table)."""

    def reproduce(
        self,
        out: Path,
        quick: bool = False,
        scheduler=None,
        workers=None,
        progress=True,
        replications: int | None = None,
        **params,
    ) -> list[dict]:
        from ..outputs import write_text
        from .report import write_claims

        if replications is not None:
            if self.replications is None:
                raise ValueError("this study does not replicate its runs")
            if replications < 1:
                raise ValueError(f"replications: {replications} is not a positive number")
        out = Path(out)
        out.mkdir(parents=True, exist_ok=True)
        t0 = time.perf_counter()
        if self.replications is not None:
            params["reps"] = replications or self.replications[0 if quick else 1]
        runs = self.run(out, quick, scheduler, workers, progress, **params)
        t1 = time.perf_counter()
        summary = self.reduce(runs)
        self.tables(runs, summary, out)
        self.figures(runs, summary, out, quick, workers)
        claims = self.claims(runs, summary)
        (self.write_claims or write_claims)(out, claims)
        if self.timed:
            timing: dict = {}
            n = self.count(runs)
            if n is not None:
                timing["runs"] = n
            timing["simulate_and_analyse_s"] = t1 - t0
            # Which build timed it (`make pgo`'s is about a tenth faster).
            from .._core import BUILD

            timing["build"] = BUILD
            if "reps" in params:
                timing["replications"] = params["reps"]
            timing.update(self.timing(quick))
            write_text(out / "timing.json", json.dumps(timing, indent=2) + "\n")
        return claims
