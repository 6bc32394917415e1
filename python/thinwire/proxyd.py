"""`thinwire proxy`: the split-TCP proxy as a Linux daemon (crates/thinwire-emu/src/proxyd,
docs/proxy.md), and its run directory.

With `out`, the daemon writes while it runs `capture.pcapng` (interface 0: the
wireless leg at the TUN device; interface 1: the wired leg), `trace.rows` (trace
rows as they happen, proxyd/record.rs) and `daemon.log` (its JSON-lines log).
When it stops, `finish` turns them into what a simulation directory holds —
`trace.parquet` (layers `proxy` and `tcp`), `flows.parquet`, `summary.json` — so
`thinwire plot DIR --flow N` shows the proxy's decisions (PxySnd_*) over real
traffic. If the daemon was killed before it could do so, `finish(DIR)` (or any
`thinwire analyze`/`plot` of the directory) does it later from `trace.rows`.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from . import _core

# One row of trace.rows (proxyd/record.rs): 48 bytes, little-endian.
ROW_FIELDS = [
    ("time_ns", "<i8"),
    ("value", "<i8"),
    ("seq", "<i8"),
    ("ack", "<i8"),
    ("len", "<i8"),
    ("flow", "<i4"),
    ("layer", "u1"),
    ("event", "u1"),
    ("node", "u1"),
    ("dir", "u1"),
]


def read_rows(path: str | os.PathLike) -> dict:
    """trace.rows as the core's trace columns (a partial last row, from a daemon
    killed while writing, is left out)."""
    import numpy as np

    dt = np.dtype(ROW_FIELDS)
    raw = Path(path).read_bytes()
    a = np.frombuffer(raw[: len(raw) - len(raw) % dt.itemsize], dtype=dt)
    cols = {}
    for name, _ in ROW_FIELDS:
        col = a[name]
        cols[name] = (col.astype("<i8") if col.dtype.kind == "i" else col).tobytes()
    return cols


def _log_events(d: Path) -> list[dict]:
    p = d / "daemon.log"
    out = []
    for line in p.read_text().splitlines() if p.is_file() else []:
        try:
            out.append(json.loads(line))
        except ValueError:
            pass  # a line cut short by a kill
    return out


def finish(out: str | os.PathLike) -> dict:
    """Writes trace.parquet, flows.parquet and summary.json of a daemon's --out
    directory from what the daemon wrote; returns the summary."""
    from .emulate import connection_table
    from .traces import trace_frame

    d = Path(out)
    rows = d / "trace.rows"
    if not rows.is_file():
        raise ValueError(f"{d}: no trace.rows (not the --out directory of 'thinwire proxy')")
    trace = trace_frame(read_rows(rows))
    events = _log_events(d)
    started = next((e for e in events if e.get("event") == "started"), {})
    end = next((e for e in reversed(events) if e.get("event") in ("stopped", "stats")), {})
    duration = float(trace["time_s"].max() or 0.0) if trace.height else 0.0
    flows = connection_table(trace, duration)
    summary = {
        "kind": "proxy",
        "scenario": "thinwire proxy",
        "duration_s": duration,
        "started": {k: v for k, v in started.items() if k not in ("event",)},
        "daemon": {k: v for k, v in end.items() if k not in ("event", "mobiles")},
        "observed_at": "proxy (tcp rows: node mobile = wireless leg, node server = wired leg)",
        "flows": flows.to_dicts(),
    }
    # The mobiles the daemon still served at its last report (none once every
    # connection closed: the key is then left out). The daemon runs no link model:
    # there is no "link" section (an emulation's summary has one).
    if end.get("mobiles"):
        summary["mobiles"] = end["mobiles"]
    from .outputs import write_parquet, write_text

    write_parquet(trace, d / "trace.parquet")
    write_parquet(flows, d / "flows.parquet")
    write_text(d / "summary.json", json.dumps(summary, indent=2, sort_keys=True) + "\n")
    rows.unlink()
    return summary


def run(
    config: str | os.PathLike,
    set: list[str] | None = None,
    duration: float | None = None,
    out: str | os.PathLike | None = None,
) -> dict | None:
    """Runs the daemon until SIGTERM/SIGINT (or `duration` seconds); with `out`,
    returns the run directory's summary."""
    if out is not None:
        from .outputs import PROXY_OUTPUTS, clear_outputs

        clear_outputs(out, PROXY_OUTPUTS)
    _core.proxy_daemon(str(config), list(set or []), duration, str(out) if out is not None else None)
    return finish(out) if out is not None else None
