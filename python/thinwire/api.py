"""The Python API: a thin layer over the Rust core (`thinwire._core`)."""

from __future__ import annotations

import contextlib
import json
import os
import re
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable, Mapping, Sequence, TypedDict

import tomllib

from . import _core
from .traces import read_trace, scan_trace, trace_frame

if TYPE_CHECKING:
    import polars as pl

ScenarioError = _core.ScenarioError


class ScenarioWarning(UserWarning):
    """A scenario's setting that runs but may not do what was meant (e.g. an RLC
    link that never polls its last PDU); `thinwire.run` and sweeps warn with it once
    per message, `thinwire.check` returns the messages."""


def _warn(messages: Iterable[str]) -> None:
    import warnings

    for m in dict.fromkeys(messages):
        warnings.warn(m, ScenarioWarning, stacklevel=3)


class Summary(TypedDict):
    """`RunResult.summary` (what `thinwire run --json` prints and summary.json holds).
    The keys of each flow and link entry are described, with units, by
    `thinwire.fields` (RESULT_FIELDS of the core)."""

    scenario: str  # the scenario's own `name`, else its file's stem
    wall_s: float  # wall-clock time of the run
    events: int  # simulator events handled
    events_per_s: float
    sim_time_s: float  # simulated time at the end
    end: str  # why the run ended: finished, stop, max_time, idle
    unfinished_flows: list[int]  # ids of flows that end by themselves but did not
    flows: list[dict[str, Any]]  # one per flow: thinwire.fields, group "flow"
    link: dict[str, dict[str, Any]]  # "down", "up": thinwire.fields, group "link"
    wired_queue_drops: list[int]  # [down, up]: drops at the wired queues
    wired_queue_aqm_drops: list[int]  # of those, the discipline's own decisions
    wired_queue_marks: list[int]  # ECN CE marks at the wired queues
    proxy: dict[str, Any] | None  # the proxy's counters, None without [proxy]


# One line of TOML: a key (bare, quoted or dotted) assigned, or a table header.
_TOML_LINE = re.compile(
    r"""^\s*(\[|(?:[A-Za-z0-9_-]+|"[^"\n]*"|'[^'\n]*')(?:\s*\.\s*(?:[A-Za-z0-9_-]+|"[^"\n]*"|'[^'\n]*'))*\s*=)"""
)


def _is_file(scenario: str | os.PathLike) -> bool:
    """A scenario is a path to a file unless it is TOML text: a string with a line
    break, or one line that names no existing file and is TOML — it parses as
    TOML (`seed = 3`), or it starts as a TOML assignment or table header and has
    no `/` (`seed = "3`, a typo reported as TOML). So a path with an `=` in it
    (`runs/loss=0.1.toml`, `p=0.02/x`) that is missing is reported as missing,
    never parsed as TOML; `run_text` never guesses."""
    if isinstance(scenario, os.PathLike):
        return True
    s = str(scenario)
    if "\n" in s:
        return False
    if not _TOML_LINE.match(s) or os.path.isfile(s):
        return True
    try:
        tomllib.loads(s)
        return False
    except tomllib.TOMLDecodeError:
        return "/" in s


_NAME = re.compile(r"""^\s*name\s*=\s*(?:"([^"\\\n]*)"|'([^'\n]*)')\s*(?:#.*)?$""")


def _declared_name(text: str) -> str | None:
    """The scenario's top-level `name = "..."`, if it has one (before any table)."""
    for line in text.splitlines():
        if line.lstrip().startswith("["):
            return None
        m = _NAME.match(line)
        if m:
            return m.group(1) if m.group(1) is not None else m.group(2)
    return None


def load_scenario_text(scenario: str | os.PathLike) -> tuple[str, str]:
    """Returns (text, name) for a path or for TOML text given directly; the name
    is the scenario's own `name` if it has one, else the file's stem (or
    "scenario" for text)."""
    text, name, _ = _load(scenario)
    return text, name


def _load(scenario: str | os.PathLike) -> tuple[str, str, str | None]:
    """(text, name, absolute path of the file or None for TOML text): what `run`
    needs, with the file looked at once (a run in a sweep's loop pays for each
    `stat`)."""
    if not _is_file(scenario):
        return str(scenario), _declared_name(str(scenario)) or "scenario", None
    path = os.fspath(scenario)
    p = Path(path)
    try:
        # Opened without waiting (a FIFO with no writer would block the open) and
        # read only if it is a regular file (a FIFO or a device could block the
        # read, or never end).
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except OSError as e:
        if not p.exists():
            raise ScenarioError(f"{p}: no such scenario file ({_missing_hint(p)})") from None
        raise ScenarioError(f"{p}: cannot open it ({e.strerror})") from None
    try:
        mode = os.fstat(fd).st_mode
        if stat.S_ISDIR(mode):
            raise ScenarioError(f"{p}: a directory, not a scenario file (give a path to a .toml file)")
        if not stat.S_ISREG(mode):
            raise ScenarioError(f"{p}: not a regular file (a FIFO or device could block); give a .toml file")
        with open(fd, encoding="utf-8", closefd=False) as f:
            text = f.read()
    except (OSError, UnicodeDecodeError) as e:
        raise ScenarioError(f"{p}: cannot read it as UTF-8 text ({e.__class__.__name__})") from None
    finally:
        os.close(fd)
    return text, _declared_name(text) or p.stem, os.path.abspath(path)


def _missing_hint(p: Path) -> str:
    """What to do about a scenario file that is not there: a shipped example of that
    name is pointed to, otherwise the list of examples."""
    from . import examples

    try:
        e = examples.get(p.name)
    except ValueError:
        return "give a path to a .toml file; 'thinwire examples' lists the shipped ones"
    return f"{e.name} is a shipped example: 'thinwire examples --copy .' writes the examples here, or run {e.path}"


def scenario_file(scenario: str | os.PathLike) -> str | None:
    """The absolute path of a scenario given as a file (None for TOML text): the
    core makes relative file paths in the file (delivery traces) relative to its
    directory; in --set overrides and in TOML text they are relative to the working
    directory."""
    if _is_file(scenario):
        return os.path.abspath(scenario)
    return None


def path_overrides(scenario: str | os.PathLike, text: str) -> list[str]:
    """Overrides that make the relative file paths of a scenario file absolute
    (relative to the file's directory; the core's rule); [] for TOML text given
    directly. For what keeps a scenario's text and overrides to run them elsewhere
    (a sweep's runs, an emulation's replay)."""
    file = scenario_file(scenario)
    return [] if file is None else _core.path_overrides(text, file)


def _toml_value(v) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return repr(v)
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(_toml_value(x) for x in v) + "]"
    if isinstance(v, dict):
        return "{ " + ", ".join(f"{json.dumps(str(k))} = {_toml_value(x)}" for k, x in v.items()) + " }"
    return json.dumps(str(v))


def _u64(v) -> str:
    v = int(v)
    return str(v) if v < 2**63 else f'"{v}"'


def _overrides(
    set: Mapping[str, object] | Iterable[str] | None, seed, run_index, trace, pcap, mm_log: bool = False
) -> list[str]:
    out: list[str] = []
    if set:
        if isinstance(set, Mapping):
            out += [f"{k}={_toml_value(v)}" for k, v in set.items()]
        else:
            out += list(set)
    # Seeds and run indices are u64: past TOML's i64 they go as strings of digits.
    if seed is not None:
        out.append(f"seed={_u64(seed)}")
    if run_index is not None:
        out.append(f"run={_u64(run_index)}")
    if trace is not None:
        out.append(f"trace.layers={_toml_value(layer_list(trace))}")
    if pcap:
        out.append("trace.pcap=true")
    if mm_log:
        out.append("trace.mahimahi=true")
    return out


def layer_list(trace: str | Iterable[str]) -> list[str]:
    """The layers a `trace` argument names: a list of names, or one string as
    the CLI's `--trace` takes it (comma-separated; "none" or "" for none). The
    core rejects a name that is not a layer."""
    if isinstance(trace, str):
        return [] if trace.strip() in ("", "none") else [x.strip() for x in trace.split(",")]
    return list(trace)


@dataclass
class RunResult:
    """Results of one run: summary numbers, per-flow table and trace events."""

    raw: dict[str, Any] = field(repr=False)
    name: str = "scenario"
    _trace: "pl.DataFrame | None" = field(default=None, repr=False)
    # The folder holding the files the core streamed (raw["files"]): a temporary
    # folder during `run(out=...)`, then the output folder.
    _files_dir: Path | None = field(default=None, repr=False)
    # Paths `run(out=...)` wrote.
    written: list[Path] = field(default_factory=list, repr=False)

    def __repr__(self) -> str:
        r = self.raw
        flows = r["flows"]
        done = sum(1 for f in flows if f.get("completion_s") is not None)
        return (
            f"<RunResult {self.name!r}: {r['sim_time_s']:.3f} s simulated, {len(flows)} "
            f"flow{'' if len(flows) == 1 else 's'} ({done} completed), end={r['end']}; "
            ".flows .summary .trace .layer(name)>"
        )

    def _repr_html_(self) -> str:
        import html

        head = html.escape(repr(self))
        try:
            table = self.flows._repr_html_()
        except Exception:  # a flows table polars cannot show: the line alone
            table = ""
        return f"<p><code>{head}</code></p>{table}"

    @property
    def warnings(self) -> list[str]:
        """Settings of the scenario that ran but may not do what was meant (as
        `thinwire.check` returns them; the command line prints them)."""
        return list(self.raw.get("warnings", []))

    @property
    def summary(self) -> Summary:
        """JSON-ready summary: wall_s, events, events_per_s, sim_time_s, flows, link, proxy (None without one)."""
        r = self.raw
        return {
            "scenario": self.name,
            "wall_s": r["wall_s"],
            "events": r["events"],
            "events_per_s": r["events_per_s"],
            "sim_time_s": r["sim_time_s"],
            # Why the run ended: finished, stop, max_time (flows still running),
            # idle (flows waiting for ever); and the flows that did not finish.
            "end": r["end"],
            "unfinished_flows": r["unfinished"],
            "flows": r["flows"],
            "link": r["link"],
            # [down, up]: drops at the wired queues (full, or the discipline's
            # decision), of those the discipline's own, and ECN marks.
            "wired_queue_drops": r["wired_queue_drops"],
            "wired_queue_aqm_drops": r["wired_queue_aqm_drops"],
            "wired_queue_marks": r["wired_queue_marks"],
            "proxy": r.get("proxy"),
        }

    @property
    def flows(self) -> "pl.DataFrame":
        """One row per flow; columns described in `thinwire.fields` (group "flow")."""
        import polars as pl

        return pl.DataFrame(self.raw["flows"], infer_schema_length=None)

    @property
    def trace(self) -> "pl.DataFrame":
        """All recorded trace events as a polars DataFrame (empty if none were asked for)."""
        if self._trace is None:
            if self._streamed("trace.parquet"):
                self._trace = read_trace(self._files_dir / "trace.parquet")
            else:
                self._trace = trace_frame(self.raw["trace"])
        return self._trace

    def scan_trace(self) -> "pl.LazyFrame":
        """The trace as a polars LazyFrame (read from trace.parquet when the run streamed it)."""
        if self._streamed("trace.parquet"):
            return scan_trace(self._files_dir / "trace.parquet")
        return self.trace.lazy()

    def _streamed(self, name: str) -> bool:
        return self._files_dir is not None and name in self.raw.get("files", ())

    def _bytes(self, key: str, name: str) -> bytes | None:
        if self._streamed(name):
            return (self._files_dir / name).read_bytes()
        return self.raw.get(key)

    def media_delays(self, flow: int | None = None) -> "pl.DataFrame":
        """One-way delays of received media packets: DataFrame (flow, delay_s), in arrival order."""
        import numpy as np
        import polars as pl

        parts = []
        for fid, b in sorted(self.raw["media_delays"].items()):
            if flow is None or fid == flow:
                d = np.frombuffer(b, dtype="<i8")
                parts.append(pl.DataFrame({"flow": np.full(len(d), fid, dtype=np.int64), "delay_s": d / 1e9}))
        return pl.concat(parts) if parts else pl.DataFrame(schema={"flow": pl.Int64, "delay_s": pl.Float64})

    def layer(self, name: str) -> "pl.DataFrame":
        """The trace events of one layer ("tcp", "link", "queue", ...)."""
        import polars as pl

        return self.trace.filter(pl.col("layer") == name)

    @property
    def pcap_server(self) -> bytes | None:
        return self._bytes("pcap_server", "server.pcap")

    @property
    def pcap_mobile(self) -> bytes | None:
        return self._bytes("pcap_mobile", "mobile.pcap")

    def write(self, out: str | os.PathLike) -> list[Path]:
        """Writes summary.json, flows.parquet, trace.parquet (if any events) and the
        pcap taps and mm-link logs (if recorded) into `out`; returns the paths written.

        Atomic as a set: the files are written into a temporary folder inside `out`
        and moved into place only when all are complete, and outputs of an earlier
        run that this one does not write (a trace, pcaps, plots) are removed, so a
        directory never mixes two runs. On failure (a full disk) nothing is left
        half-written and the error is raised."""
        import shutil
        import tempfile

        d = Path(out)
        d.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=".thinwire-", dir=d))
        try:
            return self._write_from(d, tmp)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)

    def _write_from(self, d: Path, tmp: Path) -> list[Path]:
        """Completes the set of outputs in `tmp` (the streamed files may already be
        there) and moves it into `d`."""
        import shutil

        from .outputs import RUN_OUTPUTS, clear_outputs, write_parquet

        names = []
        (tmp / "summary.json").write_text(json.dumps(self.summary, indent=2, sort_keys=True) + "\n")
        names.append("summary.json")
        write_parquet(self.flows, tmp / "flows.parquet")
        names.append("flows.parquet")
        for key, fname in (
            ("trace", "trace.parquet"),
            ("pcap_server", "server.pcap"),
            ("pcap_mobile", "mobile.pcap"),
            ("mm_down", "mm-down.log"),
            ("mm_up", "mm-up.log"),
        ):
            if self._streamed(fname):
                if self._files_dir != tmp:
                    shutil.copyfile(self._files_dir / fname, tmp / fname)
            elif key == "trace":
                if not self.raw["trace"]["rows"]:
                    continue
                # The core's writer, as for a streamed run: one trace.parquet format.
                _core.write_trace(self.raw["trace"], tmp / fname)
            elif self.raw.get(key) is not None:
                (tmp / fname).write_bytes(self.raw[key])
            else:
                continue
            names.append(fname)
        clear_outputs(d, tuple(n for n in RUN_OUTPUTS if n not in names))
        for n in names:
            os.replace(tmp / n, d / n)
        if self._files_dir == tmp:
            self._files_dir = d
        return [d / n for n in names]


def check(scenario: str | os.PathLike[str], set: Mapping[str, object] | Sequence[str] | None = None) -> list[str]:
    """Validates a scenario; raises ScenarioError naming the field that is wrong.
    Returns its warnings: settings that run but may not do what was meant (e.g. an
    RLC link that never polls its last PDU), each one line; [] for none."""
    text, _, file = _load(scenario)
    return _core.check(text, _overrides(set, None, None, None, False), scenario_file=file)


def run(
    scenario: str | os.PathLike[str],
    seed: int | None = None,
    *,
    run_index: int | None = None,
    set: Mapping[str, object] | Sequence[str] | None = None,
    trace: str | Sequence[str] | None = None,
    pcap: bool = False,
    mm_log: bool = False,
    out: str | os.PathLike[str] | None = None,
) -> RunResult:
    """Runs a scenario: a path to a TOML file, or TOML text (a string with a line
    break, or one line of TOML that names no file); `run_text` says which without
    the guess.

    seed, run_index: override the scenario's root seed and run index.
    set: field overrides, {"flow.0.bytes": "1MB"} or ["flow.0.bytes=1MB"].
    trace: layers to record, a list ("tcp", "link", "queue", "channel", "proxy", "sojourn") or a
      string as --trace takes it ("tcp,link", "none"); default: the scenario's [trace].
    pcap: record pcap taps at the server and the mobile host.
    mm_log: record mm-link-format logs of the wireless link (RunResult.raw["mm_down"], ["mm_up"]).
    out: write the run's outputs into this folder (as RunResult.write does); the
      trace, pcaps and mm-link logs are streamed there by the core while the run goes,
      never held in memory, and RunResult.trace reads them back (scan_trace lazily)
      from `out`: another run into the same folder replaces what it reads.
      Atomic as a set: a failed or interrupted run leaves the folder as it was.
    """
    text, name, file = _load(scenario)
    return _run(text, name, file, seed, run_index, set, trace, pcap, mm_log, out)


def run_text(
    text: str,
    seed: int | None = None,
    *,
    run_index: int | None = None,
    set: Mapping[str, object] | Sequence[str] | None = None,
    trace: str | Sequence[str] | None = None,
    pcap: bool = False,
    mm_log: bool = False,
    out: str | os.PathLike[str] | None = None,
) -> RunResult:
    """Runs a scenario given as TOML text, never read as a path (`run` guesses
    between the two for a string). Relative file paths in it (delivery traces) are
    relative to the working directory. The other arguments are `run`'s."""
    if not isinstance(text, str):
        raise TypeError(f"run_text takes the scenario's TOML text as a str, not {type(text).__name__}")
    return _run(text, _declared_name(text) or "scenario", None, seed, run_index, set, trace, pcap, mm_log, out)


def _run(text, name, file, seed, run_index, set, trace, pcap, mm_log, out) -> RunResult:
    overrides = _overrides(set, seed, run_index, trace, pcap, mm_log)
    if out is None:
        res = RunResult(raw=_core.run(text, overrides, scenario_file=file), name=name)
        _warn(res.warnings)
        return res
    import shutil
    import tempfile

    d = Path(out)
    created = not d.exists()
    d.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=".thinwire-", dir=d))
    ok = False
    try:
        try:
            raw = _core.run(text, overrides, str(tmp), file)
        except OSError as e:
            raise _os_error(str(e), tmp, d) from None
        res = RunResult(raw=raw, name=name, _files_dir=tmp)
        res.written = res._write_from(d, tmp)
        ok = True
        _warn(res.warnings)
        return res
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
        if created and not ok:
            # A bad scenario or a failed run leaves no empty folder behind.
            with contextlib.suppress(OSError):
                d.rmdir()


def _os_error(msg: str, tmp: Path, d: Path) -> OSError:
    """The core's write error ("PATH: reason (os error N)") as an OSError with its
    errno, naming the output folder rather than its temporary one."""
    import re

    msg = msg.replace(str(tmp), str(d))
    m = re.search(r" \(os error (\d+)\)$", msg)
    if m is None:
        return OSError(msg)
    return OSError(int(m.group(1)), msg[: m.start()])
