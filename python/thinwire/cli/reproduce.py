"""`thinwire reproduce`: a study's figures, tables and claims."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from .._core import ScenarioError
from .common import die


def add(sub) -> None:
    from ..studies import STUDIES

    rp = sub.add_parser("reproduce", help="regenerate a seed paper's figures and check its claims")
    rp.add_argument("study", help=f"the study: {', '.join(sorted(STUDIES))}")
    rp.add_argument(
        "--strict", action="store_true", help="exit 1 when a claim is not reproduced (default: report it, exit 0)"
    )
    rp.add_argument("--quick", action="store_true", help="fewer replications and shorter transfers (for CI)")
    rp.add_argument("--out", help="output directory (default studies/STUDY)")
    rp.add_argument("--json", action="store_true", help="print the claims as JSON")
    rp.add_argument("--scheduler", help="address of a running Dask scheduler")
    rp.add_argument("--workers", type=int, help="local cluster size (default: number of cores)")
    rp.add_argument(
        "--replications",
        type=int,
        metavar="N",
        help="shared-link-arq and is707-idle-frames: replications per point (default 30 and 10; --quick 3); "
        "the default's first N runs, so a later run with more into the same --out only adds the rest",
    )
    rp.add_argument(
        "--mux",
        help="shared-link-arq only: link-sharing structure(s) to run, shared-queue, pull or both (default both)",
    )
    rp.set_defaults(fn=cmd)


def cmd(a) -> int:
    import importlib

    from ..studies import STUDIES, replicates

    if a.study not in STUDIES:
        die(f"{a.study!r} is not a study; available: {', '.join(sorted(STUDIES))}")
    if a.workers is not None and a.workers < 1:
        die(f"--workers: {a.workers} is not a positive number of workers")
    mod = importlib.import_module(STUDIES[a.study])
    extra = {}
    if a.replications is not None:
        if not replicates(a.study):
            which = ", ".join(n for n in sorted(STUDIES) if replicates(n))
            die(f"--replications applies only to the studies that replicate runs ({which}), not {a.study}")
        if a.replications < 1:
            die(f"--replications: {a.replications} is not a positive number of replications")
        extra["replications"] = a.replications
    if a.mux is not None:
        if not hasattr(mod, "structures"):
            die(
                f"--mux applies only to shared-link-arq (the study that compares link-sharing structures), not {a.study}"
            )
        try:
            mod.structures(a.mux)
        except ValueError as e:
            die(str(e))
        extra["mux"] = a.mux
    out = Path(a.out or Path("studies") / a.study)
    if out.exists() and not out.is_dir():
        die(f"--out {out}: exists and is not a directory")
    import warnings

    from ..api import ScenarioWarning

    try:
        # A study runs the papers' settings on purpose (seed 002's RLC presets):
        # no warning about them.
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ScenarioWarning)
            claims = mod.reproduce(
                out, quick=a.quick, scheduler=a.scheduler, workers=a.workers, progress=not a.json, **extra
            )
    except ScenarioError as e:
        die(str(e))
    from ..studies.report import counts, verdict

    if a.json:
        json.dump(claims, sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        print(f"study {a.study}{' (quick)' if a.quick else ''}: figures, tables and claims in {out}/\n")
        for c in claims:
            where = f" ({c['structure']})" if "structure" in c else ""
            tie = (
                f" ({'PASS' if c['pass'] else 'FAIL'} by the means, which lie within each other's 95 % CIs)"
                if c.get("inconclusive")
                else ""
            )
            print(
                f"[{verdict(c)}]{where} §{c['section']} {c['claim']}\n       expected {c['expected']}; measured {c['measured']}{tie}"
            )
            if c.get("why") and not c.get("inconclusive"):
                print(f"       why: {c['why']}")
        groups = list(dict.fromkeys(c.get("structure") for c in claims))
        for g in groups:
            ok, inc, _ = counts([c for c in claims if c.get("structure") == g])
            n = sum(c.get("structure") == g for c in claims)
            print(
                f"\n{ok} of {n} claims reproduced"
                + (f", {inc} inconclusive (more replications decide)" if inc else "")
                + (f" with {g}" if g else ""),
                end="",
            )
        print()
    _, inc, failed = counts(claims)
    if a.strict and failed:
        print(
            f"thinwire: {failed} of {len(claims)} claims not reproduced (--strict; {inc} inconclusive not counted)",
            file=sys.stderr,
        )
        return 1
    return 0
