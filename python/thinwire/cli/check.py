"""`thinwire check`: a scenario validated without running it."""

from __future__ import annotations

from pathlib import Path

from .._core import ScenarioError
from ..fields import plural as _n
from .common import die, print_warnings, with_path


def add(sub) -> None:
    c = sub.add_parser("check", help="validate a scenario without running it")
    c.add_argument("scenario", type=Path)
    c.add_argument("--set", action="append", default=[], metavar="KEY=VALUE")
    c.set_defaults(fn=cmd)


def cmd(a) -> int:
    from ..api import check

    try:
        ws = check(a.scenario, set=a.set)
    except ScenarioError as e:
        die(with_path(a.scenario, e))
    print_warnings(ws)
    print(f"{a.scenario}: ok" + (f" ({_n(len(ws), 'warning')})" if ws else ""))
    return 0
