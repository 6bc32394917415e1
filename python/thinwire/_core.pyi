"""Type stubs for the Rust core (`crates/thinwire-py`), checked with mypy's stubtest."""

import os
from typing import Any

__all__ = [
    "run",
    "check",
    "analyze_capture",
    "CaptureError",
    "ScenarioError",
    "TRACE_LAYERS",
    "TRACE_EVENTS",
    "TRACE_NODES",
    "TRACE_DIRS",
    "RESULT_FIELDS",
]

class ScenarioError(ValueError):
    """A scenario field is wrong; the message names the field path and what is accepted."""

class CaptureError(ValueError):
    """A capture file cannot be read; the message says why."""

def run(toml_text: str, overrides: list[str] = ...) -> dict[str, Any]:
    """Runs a scenario given as TOML text with `KEY=VALUE` overrides.

    Keys: events, sim_time_s, flows (list of dicts, see RESULT_FIELDS["flow"]),
    link ({"down", "up"}: dicts, see RESULT_FIELDS["link"]), proxy (dict or None),
    wired_queue_drops, media_delays ({flow id: little-endian i64 ns bytes}), trace
    (column bytes), pcap_server / pcap_mobile (bytes, if recorded), wall_s,
    events_per_s."""

def check(toml_text: str, overrides: list[str] = ...) -> None:
    """Checks a scenario without running it; raises ScenarioError."""

def analyze_capture(path: str | os.PathLike[str], columns: bool = ...) -> dict[str, Any]:
    """Per-connection TCP statistics of a pcap/pcapng capture; raises CaptureError."""

TRACE_LAYERS: list[str]
TRACE_EVENTS: list[str]
TRACE_NODES: list[str]
TRACE_DIRS: list[str]
RESULT_FIELDS: dict[str, list[dict[str, str]]]
