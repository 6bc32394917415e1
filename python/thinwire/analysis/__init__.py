"""MultiTracer: multi-layer trace analysis for simulated runs and real captures.

- `analyze_capture(path)`: a pcap/pcapng file (tcptrace-like statistics, packets,
  RTT samples, TCP events) — `CaptureAnalysis`;
- `SimRun.from_dir(dir)` / `SimRun.from_result(res)`: a thinwire run with its
  multi-layer trace (utilization, competing retransmissions, spurious timeouts,
  sender variables, delivery, queueing delay, outstanding data);
- `window_goodput`, `goodput_histograms`: short-time goodput at several time scales;
- `open_path(path)`: a run directory or a capture, whichever `path` is.
"""

from __future__ import annotations

import os
from pathlib import Path

from .capture import CaptureAnalysis, CaptureError, analyze_capture

__all__ = [
    "CaptureAnalysis",
    "CaptureError",
    "SimRun",
    "analyze_capture",
    "goodput_histograms",
    "open_path",
    "window_goodput",
]
_LAZY = {"SimRun": "simtrace", "goodput_histograms": "goodput", "window_goodput": "goodput"}


def __getattr__(name: str):
    # Imported on first use: `thinwire analyze CAPTURE` needs none of them.
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(f".{_LAZY[name]}", __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def open_path(path: str | os.PathLike):
    """A `SimRun` for a run directory (or its trace.parquet), else a `CaptureAnalysis`."""
    from .simtrace import SimRun

    p = Path(path)
    if p.is_dir():
        return SimRun.from_dir(p)
    if p.name == "trace.parquet":
        return SimRun.from_dir(p.parent)
    return analyze_capture(p)
