"""`thinwire analyze`: per-connection statistics of a capture or a run directory."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from .common import IFACE_HELP, die


def add(sub) -> None:
    an = sub.add_parser("analyze", help="per-connection TCP statistics of a capture or a run directory")
    an.add_argument("path", help="a .pcap/.pcapng capture, or a run directory written by 'thinwire run --out'")
    an.add_argument("--json", action="store_true", help="print the statistics as JSON")
    an.add_argument("--interface", type=int, metavar="N", help=IFACE_HELP)
    an.set_defaults(fn=cmd)


def open_analysis(path: str, columns: bool = True, interface: int | None = None):
    """A SimRun or CaptureAnalysis for PATH; exits 2 with one line if it cannot be read."""
    from ..analysis import CaptureError, analyze_capture

    p = Path(path)
    try:
        if p.is_dir() or p.name == "trace.parquet":
            if interface is not None:
                die(f"--interface applies to a capture file, not to the run directory {path}")
            from ..analysis.simtrace import SimRun

            return SimRun.from_dir(p if p.is_dir() else p.parent)
        if interface is not None and interface < 0:
            die(f"--interface: {interface} is not an interface number (0, 1, ...)")
        return analyze_capture(p, columns=columns, interface=interface)
    except CaptureError as e:
        die(str(e))
    except ValueError as e:
        die(str(e))
    except OSError as e:
        die(f"{path}: cannot read it ({e.strerror or e})")


def cmd(a) -> int:
    from ..analysis import CaptureAnalysis, analyze_capture
    from ..analysis.report import print_capture, print_run

    src = open_analysis(a.path, columns=False, interface=a.interface)
    if isinstance(src, CaptureAnalysis):
        if a.json:
            # Compact (the C encoder; indenting is five times slower on big captures): pipe to `jq` to read it.
            json.dump(src.to_json(), sys.stdout, separators=(",", ":"))
            sys.stdout.write("\n")
        else:
            print_capture(src)
        return 0
    try:
        metrics = src.flow_metrics()
    except ValueError as e:
        die(f"{a.path}: {e}")
    caps = {k: analyze_capture(p, columns=False) for k, p in src.pcaps.items()}
    if a.json:
        json.dump(
            {"path": str(src.path), "flows": metrics.to_dicts(), "captures": {k: c.to_json() for k, c in caps.items()}},
            sys.stdout,
            indent=2,
        )
        sys.stdout.write("\n")
    else:
        print_run(src, metrics, caps)
    return 0
