"""`thinwire` command line: run | sweep | reproduce | analyze | plot | emulate | proxy |
examples | check | version (and the trace tools).

Bad input (scenario, command line) exits with status 2 and one line naming what is
wrong and what is accepted.
"""

from __future__ import annotations

import argparse
import errno
import json
import os
import re
import signal
import sys
from pathlib import Path

from . import __version__
from ._core import TRACE_LAYERS, ScenarioError
from .fields import plural as _n

# Every trace layer (the core's list); an output folder records all of them but
# `sojourn` (a row per packet per queue: asked for by name).
LAYERS = tuple(TRACE_LAYERS)
DEFAULT_LAYERS = tuple(layer for layer in LAYERS if layer != "sojourn")


class _Parser(argparse.ArgumentParser):
    def error(self, message: str):  # one line, exit 2
        message = one_line(message)
        self.exit(
            2,
            f"thinwire: error: {message} (see 'thinwire {self.prog.split()[-1]} --help')\n"
            if " " in self.prog
            else f"thinwire: error: {message} (see 'thinwire --help')\n",
        )


# Longest error line printed; the rest is cut and counted.
MAX_MESSAGE = 400


def one_line(msg: str) -> str:
    """A message as one line of at most MAX_MESSAGE characters: line breaks (a key
    or file name may hold one) shown as \\n, the rest of a long message cut with a
    count of what was cut."""
    msg = msg.replace("\r", "\\r").replace("\n", "\\n")
    if len(msg) > MAX_MESSAGE:
        msg = f"{msg[:MAX_MESSAGE]}... ({len(msg) - MAX_MESSAGE:,} more characters cut)"
    return msg


def _die(msg: str) -> "NoReturn":  # noqa: F821
    print(f"thinwire: error: {one_line(msg)}", file=sys.stderr)
    sys.exit(2)


def _with_path(path: str, e: Exception) -> str:
    """The error prefixed with the scenario's path, unless it already names it."""
    msg = str(e)
    return msg if msg.startswith(str(path)) else f"{path}: {msg}"


def print_summary(s: dict, out=sys.stdout) -> None:
    from .fields import columns, table

    w = out.write
    w(
        f"scenario {s['scenario']}: simulated {s['sim_time_s']:.3f} s in {s['wall_s'] * 1e3:.1f} ms wall "
        f"({s['events']:,} events, {s['events_per_s'] / 1e6:.2f} M events/s)\n\n"
    )
    # Columns come from the result descriptions (label and group of each field).
    tcp_flows = [f for f in s["flows"] if f["app"] not in ("media", "probe")]
    if tcp_flows:
        w("\n".join(table(tcp_flows, columns("flow", "tcp"))) + "\n")
    # Media packets and interactive messages: delivery and one-way latency.
    media = [f for f in s["flows"] if f["packets_sent"] is not None]
    if media:
        w("\n" + "\n".join(table(media, columns("flow", "media"))) + "\n")
    px = s.get("proxy")
    if px:
        w(
            f"\nproxy: {_n(px['connections'], 'connection')}, {_n(px['segments_sent'], 'segment')} sent to the mobile, {px['retransmits']:,} retransmitted, "
            f"{_n(px['timeouts'], 'timeout')} in {_n(px['stalls'], 'stall')}, at most {px['max_buffered']:,} B held; window {px['clamp']:,} B, "
            "wireless-leg RTT "
            + (f"{px['rtt_avg_s'] * 1e3:.0f} ms" if px["rtt_avg_s"] is not None else "-")
            + " (the flows' RTT column is the wired leg's)\n"
        )
    links = [dict(s["link"][d], link=d) for d in ("down", "up")]
    w("\n" + "\n".join(table(links, columns("link"), first=("link", "link"))) + "\n")


def _cmd_run(a) -> int:
    layers = None
    if a.trace is not None:
        layers = [] if a.trace in ("", "none") else [x.strip() for x in a.trace.split(",")]
        bad = [x for x in layers if x not in LAYERS]
        if bad:
            _die(f"--trace: {bad[0]!r} is not a layer; use a comma-separated list of {', '.join(LAYERS)}, or 'none'")
    elif a.out or a.plot:
        layers = list(DEFAULT_LAYERS)
    out = Path(a.out) if a.out else None
    if (a.pcap or a.plot or a.mm_log) and out is None:
        out = Path("thinwire-out") / Path(a.scenario).stem
    try:
        from .api import run

        # With --out the core streams traces and captures into the folder as the run
        # goes (bounded memory whatever the run's length).
        res = run(
            a.scenario, seed=a.seed, run_index=a.run, set=a.set, trace=layers, pcap=a.pcap, mm_log=a.mm_log, out=out
        )
    except ScenarioError as e:
        _die(_with_path(a.scenario, e))
    except OSError as e:
        _die(f"--out {out}: cannot write there ({e.strerror or e})")
    written = list(res.written)
    if a.plot:
        from .analysis import SimRun
        from .analysis.plots import plot

        run_ = SimRun.from_result(res)
        try:
            written += [plot(run_, "tsq", out / "tsq.png"), plot(run_, "tsq", out / "tsq.html")]
        except ValueError as e:
            _die(f"--plot: {e}")
    _warn_unfinished(res.summary)
    if a.json:
        s = res.summary
        if written:
            s = dict(s, written=[str(p) for p in written])
        json.dump(s, sys.stdout, indent=2, sort_keys=True)
        sys.stdout.write("\n")
    else:
        print_summary(res.summary)
        if written:
            print("\nwrote " + ", ".join(str(p) for p in written))
    return 0


_END = {
    "max_time": "max_time was reached first",
    "idle": "nothing more could happen (they wait for ever: a window that never opens, a start after max_time?)",
    "stop": "the stop time came first",
}


def _one_line_warnings() -> None:
    """A scenario's warnings (ScenarioWarning, from the API) as one line each on
    stderr, each message once; other warnings as Python shows them."""
    import warnings

    from .api import ScenarioWarning

    warnings.simplefilter("once", ScenarioWarning)
    shown = warnings.showwarning

    def show(message, category, filename, lineno, file=None, line=None):
        if issubclass(category, ScenarioWarning):
            print(f"thinwire: warning: {one_line(str(message))}", file=sys.stderr)
        else:
            shown(message, category, filename, lineno, file, line)

    warnings.showwarning = show


def _print_warnings(ws) -> None:
    """The scenario's warnings (settings that may not do what was meant), one line each on stderr."""
    for w in dict.fromkeys(ws):
        print(f"thinwire: warning: {one_line(w)}", file=sys.stderr)


def _warn_unfinished(s: dict) -> None:
    """One line on stderr when flows that end by themselves did not finish."""
    left = s.get("unfinished_flows") or []
    if left:
        which = ", ".join(str(i) for i in left)
        why = _END.get(s.get("end"), s.get("end"))
        print(
            f"thinwire: warning: flow{'s' if len(left) > 1 else ''} {which} did not finish at {s['sim_time_s']:.3f} s: {why}",
            file=sys.stderr,
        )


def _cmd_sweep(a) -> int:
    from .sweeping import run_sweep

    if a.workers is not None and a.workers < 1:
        _die(f"--workers: {a.workers} is not a positive number of workers")
    try:
        runs, summary = run_sweep(a.sweep, out=a.out, scheduler=a.scheduler, workers=a.workers, progress=not a.quiet)
    except ScenarioError as e:
        _die(str(e))
    out = a.out or str(Path("thinwire-out") / Path(a.sweep).stem)
    axes = [c for c in summary.columns if c.startswith("axis:")]
    shown = [c for c in summary.columns if c.endswith(":mean") and ("throughput_bps" in c or "delay_mean_s" in c)][:4]
    print(f"{runs.height} runs, {summary.height} points -> {out}/runs.parquet, {out}/summary.parquet")
    import polars as pl

    cols = axes + [x for c in shown for x in (c, c.replace(":mean", ":ci95"))]
    with pl.Config(tbl_rows=50, tbl_cols=20, tbl_width_chars=200, float_precision=4):
        print(summary.select(cols))
    return 0


def _cmd_reproduce(a) -> int:
    import importlib

    from .studies import STUDIES

    if a.study not in STUDIES:
        _die(f"{a.study!r} is not a study; available: {', '.join(sorted(STUDIES))}")
    if a.workers is not None and a.workers < 1:
        _die(f"--workers: {a.workers} is not a positive number of workers")
    mod = importlib.import_module(STUDIES[a.study])
    extra = {}
    if a.mux is not None:
        if not hasattr(mod, "structures"):
            _die(
                f"--mux applies only to shared-link-arq (the study that compares link-sharing structures), not {a.study}"
            )
        try:
            mod.structures(a.mux)
        except ValueError as e:
            _die(str(e))
        extra["mux"] = a.mux
    out = Path(a.out or Path("studies") / a.study)
    import warnings

    from .api import ScenarioWarning

    try:
        # A study runs the papers' settings on purpose (seed 002's RLC presets):
        # no warning about them.
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ScenarioWarning)
            claims = mod.reproduce(
                out, quick=a.quick, scheduler=a.scheduler, workers=a.workers, progress=not a.json, **extra
            )
    except ScenarioError as e:
        _die(str(e))
    from .studies.report import counts, verdict

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


def _open_analysis(path: str, columns: bool = True, interface: int | None = None):
    """A SimRun or CaptureAnalysis for PATH; exits 2 with one line if it cannot be read."""
    from .analysis import CaptureError, analyze_capture

    p = Path(path)
    try:
        if p.is_dir() or p.name == "trace.parquet":
            if interface is not None:
                _die(f"--interface applies to a capture file, not to the run directory {path}")
            from .analysis.simtrace import SimRun

            return SimRun.from_dir(p if p.is_dir() else p.parent)
        if interface is not None and interface < 0:
            _die(f"--interface: {interface} is not an interface number (0, 1, ...)")
        return analyze_capture(p, columns=columns, interface=interface)
    except CaptureError as e:
        _die(str(e))
    except ValueError as e:
        _die(str(e))
    except OSError as e:
        _die(f"{path}: cannot read it ({e.strerror or e})")


def _cmd_analyze(a) -> int:
    from .analysis import CaptureAnalysis, analyze_capture
    from .analysis.report import print_capture, print_run

    src = _open_analysis(a.path, columns=False, interface=a.interface)
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
        _die(f"{a.path}: {e}")
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


def _plot_out(a, path: Path, kind: str) -> Path:
    if a.out:
        return Path(a.out)
    base = path if path.is_dir() else path.with_suffix("")
    return (base / f"{kind}.png") if path.is_dir() else Path(f"{base}-{kind}.png")


def _cmd_plot(a) -> int:
    from .analysis.plots import FORMATS, plot

    out = _plot_out(a, Path(a.path), a.kind)
    if out.suffix.lower() not in FORMATS:
        _die(f"--out {out}: unknown format {out.suffix or '(none)'!r}; use one of {', '.join(FORMATS)}")
    src = _open_analysis(a.path, interface=a.interface)
    layers = [x.strip() for x in a.layers.split(",")] if a.layers else None
    windows = tuple(a.windows) if a.windows else (10.0, 100.0, 1000.0)
    kw = {"windows": windows, "max_rate_Bps": a.max_rate}
    if a.flow is not None:
        kw["flow"] = a.flow
    if a.conn is not None:
        kw["conn"] = a.conn
    if a.dir is not None:
        kw["direction"] = {"a2b": 0, "b2a": 1}[a.dir]
    if a.sender_state:
        if not Path(a.sender_state).is_file():
            _die(f"--sender-state {a.sender_state}: no such file (give an 'ss -tin' log or tcp_probe trace output)")
        kw["sender_state"] = a.sender_state
    from .analysis.sender_state import SenderStateError

    try:
        written = plot(src, a.kind, out, layers=layers, **kw)
    except SenderStateError as e:
        _die(f"--sender-state: {e}")
    except ValueError as e:
        _die(f"{a.path}: {e}")
    except OSError as e:
        _die(f"--out {out}: cannot write there ({e.strerror or e})")
    print(f"wrote {written}")
    return 0


def _seconds(text: str, what: str) -> float:
    """A duration such as "30s", "500ms", "2min" or plain seconds."""
    import re

    m = re.fullmatch(r"\s*([0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?)\s*(ns|us|ms|s|min|h)?\s*", text)
    if not m:
        _die(f"{what} {text!r}: not a duration; use e.g. 30s, 500ms or 2min")
    scale = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0, "min": 60.0, "h": 3600.0}[m.group(2) or "s"]
    v = float(m.group(1)) * scale
    if not (0 < v < 1e9):
        _die(f"{what} {text!r}: must be a positive duration")
    return v


def _check_command(cmd: str, what: str) -> None:
    """The command's first word must be something the shell can run."""
    import shlex
    import shutil

    builtins = {
        "exec",
        "sleep",
        "cd",
        "true",
        "false",
        "echo",
        "for",
        "while",
        "if",
        "test",
        "[",
        "{",
        "(",
        "read",
        "export",
        "set",
        "env",
        "time",
        "exit",
        "kill",
        "trap",
        "wait",
        "ulimit",
        "umask",
        "until",
        "case",
        ".",
        ":",
    }
    try:
        words = shlex.split(cmd)
    except ValueError as e:
        _die(f"{what} {cmd!r}: cannot parse it as a shell command ({e})")
    if not words:
        _die(f"{what}: empty command")
    first = words[0]
    if "=" in first and not first.startswith("="):
        return  # VAR=value cmd ...
    if first not in builtins and shutil.which(first) is None and not Path(first).is_file():
        _die(f"{what} {cmd!r}: {first!r} is not a command found on PATH")


def _cmd_proxy(a) -> int:
    from . import _core

    if not hasattr(_core, "proxy_daemon"):
        _die("thinwire proxy runs on Linux only")
    duration = _seconds(a.duration, "--duration") if a.duration else None
    if not os.path.isfile(a.config):
        _die(f"--config {a.config}: no such file (a TOML file with [proxy] and [daemon] tables; see docs/proxy.md)")
    if a.out:
        out = Path(a.out)
        if out.exists() and not out.is_dir():
            _die(f"--out {a.out}: exists and is not a directory")
        from .outputs import PROXY_OUTPUTS, clear_outputs

        try:
            clear_outputs(out, PROXY_OUTPUTS)  # an earlier run's files are replaced, never mixed
        except OSError as e:
            _die(f"--out {a.out}: cannot create it ({e.strerror or e})")
    try:
        _core.proxy_daemon(a.config, a.set or [], duration, a.out)
        if a.out:
            from .proxyd import finish

            s = finish(a.out)
            print(
                f"wrote {a.out}/ (capture.pcapng, trace.parquet, flows.parquet, summary.json, daemon.log): "
                f"{_n(len(s['flows']), 'connection')}",
                file=sys.stderr,
            )
    except _core.EmulateError as e:
        _die(str(e))
    except RuntimeError as e:
        print(f"thinwire: {e}", file=sys.stderr)
        return 1
    return 0


def _cmd_emulate(a) -> int:
    from .api import load_scenario_text, path_overrides
    from .emulate import EmulateError, available, emulate

    try:
        text, _ = load_scenario_text(a.scenario)
        from . import _core

        ws = _core.check(text, path_overrides(a.scenario, text) + (a.set or []), links_only=True)
    except ScenarioError as e:
        _die(_with_path(a.scenario, e))
    _print_warnings(ws)
    if re.search(r"^\s*\[\[\s*flow\s*\]\]", text, re.M):
        print(
            "note: the scenario's [[flow]] sections are not run: the --mobile and --server commands are the traffic",
            file=sys.stderr,
        )
    duration = _seconds(a.duration, "--duration") if a.duration else None
    for cmd, what in ((a.mobile, "--mobile"), (a.server, "--server"), (a.gateway or None, "--gateway")):
        if cmd is not None:
            _check_command(cmd, what)
    if a.server_ready is not None:
        if not a.server:
            _die("--server-ready: give the --server command whose port to wait for")
        if not 1 <= a.server_ready <= 65535:
            _die(f"--server-ready: {a.server_ready} is not a TCP port (1 to 65535)")
    if not 1 <= a.mobiles <= 250:
        _die(f"--mobiles: {a.mobiles} is not a number of mobile hosts (1 to 250)")
    if a.mobiles > 1 and a.mobile is None:
        _die(
            f"--mobiles {a.mobiles}: give the mobiles a command (--mobile CMD, run on each with "
            "$THINWIRE_MOBILE = 0, 1, …); an interactive shell opens with one mobile only"
        )
    why = available()
    if why:
        _die(why)
    try:
        s = emulate(
            a.scenario,
            seed=a.seed,
            set=a.set,
            mobile=a.mobile,
            server=a.server,
            duration=duration,
            out=a.out,
            commands_to_stderr=a.json,
            gateway=a.gateway,
            server_ready=a.server_ready,
            mobiles=a.mobiles,
            cell=a.cell,
            udp_bypass=a.udp_bypass,
        )
    except EmulateError as e:
        _die(str(e))
    except ScenarioError as e:
        _die(_with_path(a.scenario, e))
    except (RuntimeError, OSError) as e:
        # A failure on the way (a full disk for --out, a device that vanished):
        # one line, what was written so far stays.
        _die(f"the emulation failed: {e}")
    if a.json:
        json.dump(s, sys.stdout, indent=2, sort_keys=True)
        sys.stdout.write("\n")
    else:
        print_emulation(s)
        if a.out:
            per = ""
            if a.mobiles > 1:
                own = "mobile.pcap, server.pcap" + (
                    ", trace.parquet, flows.parquet, summary.json, schedule.log, mm-down.log, mm-up.log"
                    if a.cell == "separate"
                    else ""
                )
                per = f"; mobile-0/ to mobile-{a.mobiles - 1}/ ({own})"
            top = (
                "summary.json, flows.parquet, mobile.pcap, server.pcap, capture.pcapng, inputs.pcapng"
                if a.mobiles > 1 and a.cell == "separate"
                else "summary.json, trace.parquet, mobile.pcap, server.pcap, capture.pcapng, inputs.pcapng, schedule.log, mm-down.log, mm-up.log"
            )
            print(f"\nwrote {a.out}/ ({top}{per})")
    if s.get("server_status") == 127:
        _die(f"--server {a.server!r}: the command was not found in the server's namespace")
    status = s.get("mobile_status")
    if status == 127:
        _die(f"--mobile {a.mobile!r}: the command was not found in the mobile host's namespace")
    if s["ended"].startswith("server command"):
        print(f"thinwire: --server {a.server!r}: {s['ended']}; the emulation ended early", file=sys.stderr)
        return 1
    if s["ended"].startswith("signal "):
        return 128 + int(s["ended"].split()[1])
    return 0 if status is None else int(status)


def print_emulation(s: dict, out=sys.stdout) -> None:
    from .fields import columns, table

    w = out.write
    p, lat = s["packets"], s["lateness"]
    st = s.get("mobile_status")
    n = s.get("mobiles", 1)
    many = f"{n} mobiles ({s.get('cell')} {'links' if s.get('cell') == 'separate' else 'cell'}), " if n > 1 else ""
    w(
        f"emulation {s['scenario']}: {many}{s['duration_s']:.3f} s ({s['ended']}"
        + (f", status {st}" if st is not None else "")
        + (
            f"; the gateway command finished {s['gateway_wind_down_s']:.1f} s later, the link still running"
            if s.get("gateway_wind_down_s") is not None
            else ""
        )
        + f"); {p['from_mobile']:,} packets from the {'mobiles' if n > 1 else 'mobile'}, {p['from_server']:,} from the server; "
        f"dropped: {p['link_drops']:,} wireless queue, {p['wired_drops']:,} wired queue\n"
        f"lateness of {lat['packets']:,} packets written: p50 {lat['p50_ms']:.3f} ms, p99 {lat['p99_ms']:.3f} ms, "
        f"max {lat['max_ms']:.3f} ms ({lat['late']:,} later than {lat['late_after_ms']:g} ms)\n"
    )
    if lat.get("read_wait_packets"):
        w(
            f"waited in the TUN queues before being read, {lat['read_wait_packets']:,} packets: "
            f"p50 {lat['read_wait_p50_ms']:.3f} ms, p99 {lat['read_wait_p99_ms']:.3f} ms, max {lat['read_wait_max_ms']:.3f} ms\n"
        )
        if lat["read_wait_p99_ms"] > lat["late_after_ms"]:
            w(
                f"warning: p99 wait before reading {lat['read_wait_p99_ms']:.3f} ms exceeds {lat['late_after_ms']:g} ms: "
                "packets reached the link model late (the host is too busy for this rate)\n"
            )
    lost = [
        (n, who)
        for n, who in (
            (p.get("from_mobile_queue_drops", 0), "mobiles" if n > 1 else "mobile"),
            (p.get("from_server_queue_drops", 0), "far end"),
        )
        if n
    ]
    if lost or p.get("write_drops"):
        parts = [f"{n:,} from the {who} (its TUN queue full before the emulator read them)" for n, who in lost]
        if p.get("write_drops"):
            parts.append(f"{p['write_drops']:,} to the hosts (a TUN queue full when the emulator wrote)")
        w("warning: packets lost outside the model: " + "; ".join(parts) + "\n")
    if p.get("unroutable"):
        w(f"warning: {p['unroutable']:,} packets were addressed to no mobile host and dropped\n")
    if n > 1:
        st = s.get("mobile_statuses") or []
        bad = [f"mobile {k}: {v}" for k, v in enumerate(st) if v not in (0, None)]
        if bad:
            w("mobile commands that failed: " + ", ".join(bad) + "\n")
    # p99 over a handful of packets is their maximum: warn when late packets are
    # more than 1 % of at least 5.
    if lat["late"] >= 5 and lat["p99_ms"] > lat["late_after_ms"]:
        w(
            f"warning: p99 lateness {lat['p99_ms']:.3f} ms exceeds {lat['late_after_ms']:g} ms: the host is too busy for this rate\n"
        )
    flows = s.get("flows") or []
    if flows:
        first = ("mobile", "mobile") if n > 1 else None
        w("\n" + "\n".join(table(flows, columns("flow", "tcp"), first=first)) + "\n")
    per_link = s["link"] if isinstance(s["link"], list) else [s["link"]]
    if len(per_link) > 1:
        links = [dict(lk[d], link=f"{k} {d}") for k, lk in enumerate(per_link) for d in ("down", "up")]
        first = ("mobile link", "link")
    else:
        links = [dict(per_link[0][d], link=d) for d in ("down", "up")]
        first = ("link", "link")
    w("\n" + "\n".join(table(links, columns("link"), first=first)) + "\n")


def _cmd_simulate_log(a) -> int:
    from .emulate import simulate_log

    try:
        r = simulate_log(a.dir)
    except ScenarioError as e:
        _die(str(e))
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


def _cmd_channel_trace(a) -> int:
    from .channel_trace import TraceError, export

    try:
        text = export(a.dir)
    except TraceError as e:
        _die(str(e))
    if a.o:
        from .outputs import write_text

        write_text(a.o, text)
        print(f'{a.o}: {text.count(chr(10))} lines (replay: model = "trace", file = "{a.o}")')
    else:
        sys.stdout.write(text)
    return 0


def _cmd_fit_channel(a) -> int:
    from .channel_trace import TraceError, fit, plot, read, two_state_toml

    slot = None
    if a.slot:
        from .channel_trace import _duration_s

        try:
            slot = _duration_s(a.slot)
        except TraceError as e:
            _die(f"--slot: {e}")
        if slot <= 0:
            _die("--slot: must be a positive duration")
    try:
        fates, meta = read(a.file, a.direction, slot)
        res = fit(fates, meta)
    except TraceError as e:
        _die(str(e))
    if a.plot:
        plot(res, a.plot, title=f"{a.file} [{a.direction}]")
    if a.json:
        out = {k: v for k, v in res.items() if k not in ("trace", "model")}
        for k in ("trace", "model"):
            out[k] = {x: res[k][x] for x in ("mean_burst", "mean_gap", "loss_ratio")}
        json.dump(out, sys.stdout, indent=2)
        sys.stdout.write("\n")
        return 0
    f = res["fit"]
    print(f"{a.file} [{a.direction}]: {res['frames']:,} frames, {res['loss_ratio']:.4%} lost")
    print(
        f"Gilbert–Elliott fit (maximum likelihood, {f['iterations']} iterations, log-likelihood {f['loglik']:.1f}):\n"
        f"  p (good→bad) = {f['p']:.4g}, r (bad→good) = {f['r']:.4g}, "
        f"loss | good = {f['eg']:.4g}, loss | bad = {f['eb']:.4g}"
    )
    print(f"{'':14}{'trace':>10}{'fit':>10}")
    for k, label in (("loss_ratio", "loss ratio"), ("mean_burst", "mean burst"), ("mean_gap", "mean gap")):
        print(f"{label:<14}{res['trace'][k]:>10.4g}{res['model'][k]:>10.4g}")
    snippet = two_state_toml(res, a.direction)
    if snippet:
        print("\nAs thinwire's two-state channel (same means; exponential sojourns):\n" + snippet, end="")
    else:
        print("\n(no frame_time/frame_bits in the trace: give them to get a two-state channel)")
    if a.plot:
        print(f"\nburst and gap lengths, trace against fit: {a.plot}")
    return 0


def _cmd_examples(a) -> int:
    import shutil

    from . import examples

    try:
        chosen = examples.all_examples() if a.name is None else [examples.get(a.name)]
    except ValueError as e:
        _die(str(e))
    if a.copy is not None:
        try:
            written = examples.copy(a.copy, a.name, overwrite=a.force)
        except FileExistsError as e:
            _die(f"--copy: {e} (--force replaces it)")
        except OSError as e:
            _die(f"--copy {a.copy}: cannot write there ({e.strerror or e})")
        print(
            f"wrote {_n(len(written), 'file')} into {a.copy}/: "
            + ", ".join(str(w.relative_to(a.copy)) for w in written)
        )
        first = next((w for w in written if w.parent.name == "scenarios"), None)
        if first is not None:
            print(f"try: thinwire run {first} --out out --plot")
        return 0
    if a.path:
        for e in chosen:
            print(e.path)
        return 0
    if a.name is not None:
        sys.stdout.write(chosen[0].path.read_text(encoding="utf-8"))
        return 0
    width = max(40, shutil.get_terminal_size((100, 24)).columns)
    name_w = max(len(e.name) for e in chosen)
    for kind in dict.fromkeys(e.kind for e in chosen):
        rows = [e for e in chosen if e.kind == kind]
        print(f"{kind}s:")
        for e in rows:
            room = width - name_w - 4
            d = e.description if len(e.description) <= room else e.description[: room - 3] + "..."
            print(f"  {e.name:<{name_w}}  {d}")
    print(
        "\nthinwire examples NAME prints one; thinwire examples --copy DIR writes them all (scenarios/, sweeps/, scripts/)"
        " into DIR to run and edit; from Python: thinwire.examples.path(NAME)"
    )
    return 0


def _cmd_check(a) -> int:
    from .api import check

    try:
        ws = check(a.scenario, set=a.set)
    except ScenarioError as e:
        _die(_with_path(a.scenario, e))
    _print_warnings(ws)
    print(f"{a.scenario}: ok" + (f" ({_n(len(ws), 'warning')})" if ws else ""))
    return 0


def main(argv: list[str] | None = None) -> int:
    p = _Parser(
        prog="thinwire",
        description="TCP over slow, lossy wireless links with link-layer ARQ.",
        epilog="Start with the shipped examples: 'thinwire examples' lists them, "
        "'thinwire examples --copy DIR' writes them into DIR to run and edit.",
    )
    p.add_argument("--version", action="version", version=f"thinwire {__version__}")
    sub = p.add_subparsers(dest="cmd", parser_class=_Parser, metavar="COMMAND")
    r = sub.add_parser("run", help="run a scenario and print a summary")
    r.add_argument("scenario", type=Path, help="scenario TOML file")
    r.add_argument("--seed", type=int, help="root seed (overrides the scenario's)")
    r.add_argument("--run", type=int, help="run index (replication) within the seed")
    r.add_argument("--out", help="directory for summary.json, flows.parquet, trace.parquet and pcaps")
    r.add_argument(
        "--pcap", action="store_true", help="write server.pcap and mobile.pcap (IP packets seen at each host)"
    )
    r.add_argument(
        "--mm-log",
        action="store_true",
        help="write mm-down.log and mm-up.log: the wireless link in mm-link's log format (Mahimahi's graph scripts read them)",
    )
    r.add_argument(
        "--trace",
        help=f"layers to trace: comma list of {','.join(LAYERS)}, or 'none' (default: all but sojourn when --out is given)",
    )
    r.add_argument("--json", action="store_true", help="print the summary as JSON on stdout")
    r.add_argument(
        "--plot",
        action="store_true",
        help="also write the multi-layer time/sequence plot (tsq.png and tsq.html) into the output directory",
    )
    r.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="override a scenario field, e.g. flow.0.bytes=1MB (repeatable)",
    )
    r.set_defaults(fn=_cmd_run)
    sw = sub.add_parser("sweep", help="run a parameter sweep on Dask (local cluster or --scheduler)")
    sw.add_argument("sweep", help="sweep TOML file")
    sw.add_argument("--out", help="output directory (default thinwire-out/NAME)")
    sw.add_argument("--scheduler", help="address of a running Dask scheduler, e.g. tcp://host:8786")
    sw.add_argument("--workers", type=int, help="local cluster size (default: number of cores)")
    sw.add_argument("--quiet", action="store_true", help="no progress bar")
    sw.set_defaults(fn=_cmd_sweep)
    from .studies import STUDIES

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
        "--mux",
        help="shared-link-arq only: link-sharing structure(s) to run, shared-queue, pull or both (default both)",
    )
    rp.set_defaults(fn=_cmd_reproduce)
    an = sub.add_parser("analyze", help="per-connection TCP statistics of a capture or a run directory")
    an.add_argument("path", help="a .pcap/.pcapng capture, or a run directory written by 'thinwire run --out'")
    an.add_argument("--json", action="store_true", help="print the statistics as JSON")
    an.add_argument("--interface", type=int, metavar="N", help=_IFACE_HELP)
    an.set_defaults(fn=_cmd_analyze)
    pl_ = sub.add_parser("plot", help="multi-layer plots of a capture or a run directory")
    pl_.add_argument("path", help="a .pcap/.pcapng capture, or a run directory")
    pl_.add_argument(
        "--kind",
        choices=("tsq", "rtt", "cwnd", "goodput"),
        default="tsq",
        help="time/sequence, RTT/SRTT/RTO, congestion window, or goodput histograms",
    )
    pl_.add_argument(
        "--layers", help="comma list of series to draw, e.g. TcpSnd_data,TcpSnd_ack,RlpSnd_data (default: all)"
    )
    pl_.add_argument(
        "--out", help="output file: .png, .pdf, .svg, or .html for the interactive viewer (default: next to PATH)"
    )
    pl_.add_argument(
        "--flow",
        type=int,
        help="flow id (run directories; default: the first TCP flow; emulations: the connection that carried the most data)",
    )
    pl_.add_argument("--conn", type=int, help="connection number (captures; default 0)")
    pl_.add_argument("--interface", type=int, metavar="N", help=_IFACE_HELP)
    pl_.add_argument(
        "--dir",
        choices=("a2b", "b2a"),
        help="data direction of the connection (captures; default: the one with more data)",
    )
    pl_.add_argument("--windows", type=float, nargs="+", help="goodput window lengths in seconds (default 10 100 1000)")
    pl_.add_argument("--max-rate", type=float, help="normalise goodput to this rate in bytes/s")
    pl_.add_argument(
        "--sender-state",
        metavar="FILE",
        help="captures: TCP sender state from the sending host, either 'ss -tin' samples "
        "each preceded by a Unix-time line (date +%%s.%%N), or tcp_probe tracepoint output (aligned to the capture by matching ACKs)",
    )
    pl_.set_defaults(fn=_cmd_plot)
    em = sub.add_parser("emulate", help="real hosts over the scenario's links in real time (Linux, root)")
    em.add_argument(
        "scenario", type=Path, help="scenario TOML file (its [wired] and [wireless] links; flows are ignored)"
    )
    em.add_argument("--seed", type=int, help="root seed for the link models' randomness")
    em.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="override a scenario field")
    em.add_argument("--out", help="directory for captures, trace, schedule log and summary")
    em.add_argument(
        "--mobile",
        help="command to run on the mobile host (default: an interactive shell); the emulation ends when it exits",
    )
    em.add_argument("--server", help="command to run on the server for the whole emulation")
    em.add_argument(
        "--gateway",
        nargs="?",
        const="",
        metavar="CMD",
        help="a gateway namespace between the link and the server (joined to the server by a veth pair, which replaces [wired]), running CMD if given (e.g. a proxy)",
    )
    em.add_argument(
        "--server-ready",
        type=int,
        metavar="PORT",
        help="start the mobile command once the server listens on this TCP port (waits up to 30 s)",
    )
    em.add_argument(
        "--mobiles",
        type=int,
        default=1,
        metavar="N",
        help="N mobile hosts (10.0.1.2, 10.0.1.3, …), each in its own namespace running --mobile with $THINWIRE_MOBILE = 0..N-1; the emulation ends when all have exited",
    )
    em.add_argument(
        "--cell",
        choices=("separate", "shared"),
        default="separate",
        help="with --mobiles: each mobile over its own copy of the path (separate, the default) or all over one wireless link, each with its own link-layer session and queues on the one radio (shared; not GSM RLP or IS-707)",
    )
    em.add_argument(
        "--udp-bypass",
        action="store_true",
        help="UDP packets take the link's bypass session (no ARQ; seed 002's media), as the simulator's media flows do; by default every packet takes ARQ",
    )
    em.add_argument("--duration", help="end after this long (e.g. 60s)")
    em.add_argument(
        "--json", action="store_true", help="print the summary as JSON (the commands' own output then goes to stderr)"
    )
    em.set_defaults(fn=_cmd_emulate)
    px = sub.add_parser(
        "proxy", help="the split-TCP proxy as a daemon: mobiles' TCP split at this router (Linux, root)"
    )
    px.add_argument("--config", required=True, metavar="FILE", help="TOML file with [proxy] and [daemon] tables")
    px.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="override a key, e.g. daemon.mobile_interface=eth1",
    )
    px.add_argument("--duration", help="stop after this long (default: until SIGTERM/SIGINT)")
    px.add_argument(
        "--out",
        metavar="DIR",
        help="write capture.pcapng (wireless and wired legs), trace.parquet (proxy and tcp layers), flows.parquet, summary.json and daemon.log there, for 'thinwire plot DIR'",
    )
    px.set_defaults(fn=_cmd_proxy)
    sl = sub.add_parser(
        "simulate-log", help="replay an emulation's inputs through the same link models and compare decisions"
    )
    sl.add_argument("dir", help="directory written by 'thinwire emulate --out'")
    sl.add_argument("--json", action="store_true", help="print the result as JSON")
    sl.set_defaults(fn=_cmd_simulate_log)
    ct = sub.add_parser(
        "channel-trace", help='a run\'s channel decisions as a frame-error trace (replay: model = "trace")'
    )
    ct.add_argument("dir", help="run directory (thinwire run --out, thinwire emulate --out)")
    ct.add_argument("-o", metavar="FILE", help="write the trace here (default: standard output)")
    ct.set_defaults(fn=_cmd_channel_trace)
    fc = sub.add_parser("fit-channel", help="fit a two-state (Gilbert–Elliott) channel to a frame-error trace")
    fc.add_argument("file", help="frame-error trace (thinwire channel-trace, or your own measurement)")
    fc.add_argument("--direction", choices=("down", "up"), default="down", help="which table of the file")
    fc.add_argument("--slot", help="for a trace by time: the frame time that cuts it into frames (e.g. 20ms)")
    fc.add_argument("--plot", metavar="PNG", help="burst- and gap-length distributions of trace and fit")
    fc.add_argument("--json", action="store_true", help="print the fit as JSON")
    fc.set_defaults(fn=_cmd_fit_channel)
    ex = sub.add_parser(
        "examples",
        help="list the example scenarios and sweeps shipped with thinwire, print one, or copy them to edit",
    )
    ex.add_argument("name", nargs="?", help="an example's name (default: all); printed unless --copy or --path")
    ex.add_argument("--copy", metavar="DIR", help="write the example(s) into DIR/scenarios, DIR/sweeps and DIR/scripts")
    ex.add_argument("--force", action="store_true", help="with --copy: replace files that exist")
    ex.add_argument("--path", action="store_true", help="print the installed file's path instead")
    ex.set_defaults(fn=_cmd_examples)
    c = sub.add_parser("check", help="validate a scenario without running it")
    c.add_argument("scenario", type=Path)
    c.add_argument("--set", action="append", default=[], metavar="KEY=VALUE")
    c.set_defaults(fn=_cmd_check)
    v = sub.add_parser("version", help="print the version")
    v.set_defaults(fn=lambda a: print(f"thinwire {__version__}") or 0)
    a = p.parse_args(argv)
    if not a.cmd:
        p.print_help()
        return 2
    for kv in getattr(a, "set", []) or []:
        if "=" not in kv:
            _die(f"--set {kv!r}: expected KEY=VALUE, e.g. --set flow.0.bytes=1MB")
    _one_line_warnings()
    if a.cmd not in ("emulate", "proxy"):  # those two handle SIGTERM themselves
        signal.signal(signal.SIGTERM, _on_sigterm)
    try:
        rc = a.fn(a)
        sys.stdout.flush()  # a full disk or /dev/full shows here, not at exit
        return rc
    except BrokenPipeError:
        # The reader (e.g. `| head`) went away: not an error of ours.
        _quiet_stdout()
        return 0
    except KeyboardInterrupt as e:
        return _stopped(130, "interrupted", e)
    except _Terminated as e:
        return _stopped(143, "terminated", e)
    except OSError as e:
        # Writing (an output file, standard output) failed: one line, nothing half-written
        # (outputs are written to temporary names and renamed when complete).
        where = f"{e.filename}: " if e.filename else "standard output: " if e.errno in _WRITE_ERRNOS else ""
        _quiet_stdout()
        print(f"thinwire: error: {one_line(f'{where}{e.strerror or e}')}", file=sys.stderr)
        return 2
    except MemoryError:
        _quiet_stdout()
        print("thinwire: error: out of memory (a smaller run, sweep or window count?)", file=sys.stderr)
        return 2


_IFACE_HELP = (
    "pcapng captures: the interface to analyse (default: the first with packets); an emulation's capture.pcapng "
    "has 0 mobile, 1 server (with --gateway: 1 gateway) and 2 gateway, each packet once per capture point"
)


class _Terminated(BaseException):
    """SIGTERM, raised in the main thread so cleanup runs as for Ctrl-C."""


def _on_sigterm(signum, frame):
    raise _Terminated()


_WRITE_ERRNOS = (errno.ENOSPC, errno.EIO, errno.EDQUOT, errno.EFBIG)


def _quiet_stdout() -> None:
    """Standard output may be what failed: drop what is buffered, so that exiting
    does not fail again with a traceback."""
    try:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    except OSError:
        pass


def _stopped(code: int, what: str, e: BaseException) -> int:
    """Ctrl-C or SIGTERM: one line; what is complete was kept (sweeps save finished
    runs and say so in a note; a single run writes nothing partial)."""
    _quiet_stdout()
    notes = "; ".join(getattr(e, "__notes__", []))
    print(f"thinwire: {what}" + (f" ({notes})" if notes else ""), file=sys.stderr)
    return code


if __name__ == "__main__":
    sys.exit(main())
