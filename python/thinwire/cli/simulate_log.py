"""`thinwire simulate-log`: an emulation's inputs replayed through the same link models."""

from __future__ import annotations

import json
import sys

from .._core import ScenarioError
from .common import die


def add(sub) -> None:
    sl = sub.add_parser(
        "simulate-log", help="replay an emulation's inputs through the same link models and compare decisions"
    )
    sl.add_argument("dir", help="directory written by 'thinwire emulate --out'")
    sl.add_argument("--json", action="store_true", help="print the result as JSON")
    sl.set_defaults(fn=cmd)


def cmd(a) -> int:
    from ..emulate import simulate_log

    try:
        r = simulate_log(a.dir)
    except ScenarioError as e:
        die(str(e))
    if a.json:
        json.dump(r, sys.stdout, indent=2)
        sys.stdout.write("\n")
    elif r["identical"]:
        print(f"{a.dir}: the replay made the same {r['decisions']:,} decisions as the emulation")
    else:
        d = r["first_difference"]
        print(
            f"{a.dir}: the replay differs at decision {d['line']}: emulated {d['emulated']!r}, replayed {d['replayed']!r}"
        )
    return 0 if r["identical"] else 1
