"""Type stubs for the Rust core (`crates/thinwire-py`), checked with mypy's stubtest."""

import os
from typing import Any

__all__ = [
    "run",
    "write_trace",
    "check",
    "path_overrides",
    "analyze_capture",
    "CaptureError",
    "ScenarioError",
    "BUILD",
    "TRACE_LAYERS",
    "TRACE_EVENTS",
    "TRACE_NODES",
    "TRACE_DIRS",
    "TRACE_EVENT_DOCS",
    "RESULT_FIELDS",
    "EmulateError",
    "emulate",
    "replay",
    "proxy_daemon",
    "fit_gilbert_elliott",
    "sample_gilbert_elliott",
]

class ScenarioError(ValueError):
    """A scenario field is wrong; the message names the field path and what is accepted."""

class CaptureError(ValueError):
    """A capture file cannot be read; the message says why."""

def fit_gilbert_elliott(fates: bytes, max_iter: int = ..., tol: float = ...) -> dict[str, float]:
    """Fits a Gilbert–Elliott model to frame fates (nonzero byte = lost) by maximum
    likelihood: {p, r, eg, eb, loglik, iterations}."""

def sample_gilbert_elliott(p: float, r: float, eg: float, eb: float, n: int, seed: int) -> bytes:
    """`n` frame fates (1 = lost) drawn from a Gilbert–Elliott model."""

def run(
    toml_text: str,
    overrides: list[str] = ...,
    out_dir: str | os.PathLike[str] | None = ...,
    scenario_file: str | os.PathLike[str] | None = ...,
) -> dict[str, Any]:
    """Runs a scenario given as TOML text with `KEY=VALUE` overrides.

    Keys: warnings (as `check` returns them), events, sim_time_s, flows (list of dicts, see RESULT_FIELDS["flow"]),
    link ({"down", "up"}: dicts, see RESULT_FIELDS["link"]), proxy (dict or None),
    wired_queue_drops, wired_queue_aqm_drops, wired_queue_marks ([down, up]), media_delays ({flow id: little-endian i64 ns bytes}), trace
    (column bytes and "rows"), pcap_server / pcap_mobile (bytes, if recorded), files
    (names streamed into `out_dir`: trace.parquet, server.pcap, mobile.pcap,
    mm-down.log, mm-up.log; their columns/bytes are then absent or empty), wall_s,
    events_per_s. With `out_dir`, a write error raises OSError. `scenario_file`: the
    file the text was read from (relative paths in the text are relative to its
    directory)."""

def write_trace(cols: dict[str, Any], path: str | os.PathLike[str]) -> int:
    """Writes trace columns (as `run` returns them under "trace") to a trace.parquet
    with the core's writer, rows sorted by time; returns the rows written."""

def check(
    toml_text: str,
    overrides: list[str] = ...,
    links_only: bool = ...,
    scenario_file: str | os.PathLike[str] | None = ...,
) -> list[str]:
    """Checks a scenario without running it; raises ScenarioError, else returns its
    warnings (settings that run but may not do what was meant). `links_only`: as
    the emulator reads it (flows are not run, so none is needed). `scenario_file`:
    as for `run`."""

def path_overrides(toml_text: str, scenario_file: str | os.PathLike[str]) -> list[str]:
    """The overrides that make the relative file paths of a scenario file's text
    absolute (relative to the file's directory), as `run` with `scenario_file` does."""

# Linux only: the real-time emulator (crates/thinwire-emu).
class EmulateError(ValueError):
    """The emulator cannot run; the message says why (a usage problem: exit 2)."""

def emulate(
    toml_text: str,
    overrides: list[str],
    mobile: str | None = ...,
    server: str | None = ...,
    duration_s: float | None = ...,
    out_dir: str | os.PathLike[str] | None = ...,
    late_after_ms: float = ...,
    commands_to_stderr: bool = ...,
    gateway: str | None = ...,
    server_ready: int | None = ...,
    mobiles: int = ...,
    cell: str = ...,
    udp_bypass: bool = ...,
    offload: bool = ...,
) -> dict[str, Any]:
    """Runs an emulation; returns its report (duration_s, ended, mobile_status,
    mobile_statuses, lateness, packets, link (a list with separate links for
    several mobiles), flow_mobiles, conns, trace). Raises EmulateError for what
    the user must fix (no root, no iproute2, an unwritable --out), RuntimeError
    otherwise."""

def replay(
    toml_text: str,
    overrides: list[str],
    inputs: str | os.PathLike[str],
    end_ns: int,
    gateway: bool = ...,
    mobiles: int = ...,
    cell: str = ...,
    udp_bypass: bool = ...,
) -> list[list[str]]:
    """Replays an emulation's inputs through the scenario's paths until `end_ns`:
    each path's schedule log, line by line."""

def proxy_daemon(
    config: str | os.PathLike[str],
    overrides: list[str],
    duration_s: float | None = ...,
    out: str | os.PathLike[str] | None = ...,
) -> None:
    """Runs the `thinwire proxy` daemon until a signal (or `duration_s`); with
    `out`, writes capture.pcapng, trace.rows and daemon.log there. Raises
    EmulateError for what the user must fix (a bad configuration file, no root),
    RuntimeError otherwise."""

def analyze_capture(
    path: str | os.PathLike[str], columns: bool = ..., fd: int | None = ..., interface: int | None = ...
) -> dict[str, Any]:
    """Per-connection TCP statistics of a pcap/pcapng capture; raises CaptureError."""

BUILD: str
"""How the library was compiled: "plain", "profile-guided" (`make pgo`) or "instrumented"."""
TRACE_LAYERS: list[str]
TRACE_EVENTS: list[str]
TRACE_NODES: list[str]
TRACE_DIRS: list[str]
TRACE_EVENT_DOCS: list[dict[str, str]]
"""What each (layer, event) of a trace means: layer, event, node, meaning, columns (what seq/ack/len hold), value, unit."""
RESULT_FIELDS: dict[str, list[dict[str, str]]]
